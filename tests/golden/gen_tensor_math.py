#!/usr/bin/python3
"""Golden data for TensorOps.Trig (tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh) and
TensorOps.BitShift.

Run:  /usr/bin/python3 tests/golden/gen_tensor_math.py   (NumPy)
Writes tests/golden/data/tensor_math.json.

Trig: inputs are f64 values; "want" is NumPy's float64 function of each input, stored as the f64
bit pattern (NaN, Inf and -0 exact); "x32"/"want32" the inputs rounded to f32 and the float64
function of those rounded to f32. Domain edges (+-1, 1 for acosh, +-0, +-Inf, NaN, values
outside the domain) are included. BitShift: Python integers (a << b mod 2^bits; a >> b as floor
division by 2^b, so -1 for a negative a shifted by the width or more), checked against NumPy's
left_shift / right_shift where NumPy defines them (b < bits).
"""

import json
import math
import os
import random
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tensor_math.json")

FUNCS = [("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
         ("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh), ("acosh", np.arccosh),
         ("atanh", np.arctanh)]
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.999, -0.999, 1.5, -1.5, 2.0, 10.0, -10.0, 100.0,
         -100.0, 700.0, -700.0, 720.0, 1e-8, -1e-8, 1e300, -1e300, math.inf, -math.inf, math.nan,
         1.5707963267948966, -1.5707963267948966, 3.141592653589793, 1e5]


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def bits32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def trig_cases():
    rng = random.Random(20261202)
    xs = EDGES + [rng.uniform(-1, 1) for _ in range(24)] + [rng.gauss(0, 4) for _ in range(24)] + \
        [1 + abs(rng.gauss(0, 5)) for _ in range(12)]
    out = []
    with np.errstate(all="ignore"):
        for name, fn in FUNCS:
            want = [float(fn(np.float64(x))) for x in xs]
            x32 = [np.float32(x) for x in xs]
            want32 = [np.float32(fn(np.float64(x))) for x in x32]
            out.append({"op": name, "x": [bits(x) for x in xs], "want": [bits(w) for w in want],
                        "x32": [bits32(x) for x in x32], "want32": [bits32(w) for w in want32]})
    return out


INTS = {"i64": (64, True), "i32": (32, True), "i16": (16, True), "i8": (8, True),
        "u64": (64, False), "u32": (32, False), "u16": (16, False), "u8": (8, False)}
NP = {"i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8,
      "u64": np.uint64, "u32": np.uint32, "u16": np.uint16, "u8": np.uint8}


def wrap(v, nbits, signed):
    v &= (1 << nbits) - 1
    if signed and v >= 1 << (nbits - 1):
        v -= 1 << nbits
    return v


def shift_cases():
    rng = random.Random(7)
    out = []
    for name, (nbits, signed) in INTS.items():
        lo, hi = (-(1 << (nbits - 1)), (1 << (nbits - 1)) - 1) if signed else (0, (1 << nbits) - 1)
        a = [lo, hi, 0, 1, -1 if signed else 2, 5, 16] + [rng.randint(lo, hi) for _ in range(25)]
        b = [rng.randint(0, nbits + 2) for _ in a]
        b[:7] = [1, 1, 3, nbits - 1, nbits, nbits + 1, 0]
        left = [wrap(x << s, nbits, signed) if s < nbits else 0 for x, s in zip(a, b)]
        right = [x >> s if s < nbits else (-1 if x < 0 else 0) for x, s in zip(a, b)]
        t = NP[name]
        for x, s, l, r in zip(a, b, left, right):
            if s < nbits:
                assert int(np.left_shift(t(x), t(s))) == l, (name, x, s)
                assert int(np.right_shift(t(x), t(s))) == r, (name, x, s)
        out.append({"dtype": name, "a": a, "b": b, "left": left, "right": right})
    return out


def main():
    data = {"trig": trig_cases(), "bitshift": shift_cases()}
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
