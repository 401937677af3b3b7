#!/usr/bin/python3
"""Golden data for the TensorOps elementwise reference kernels (Compare, Logical, Where, Cast, Pow,
Mod, Round).

Run:  /tmp/refvenv/bin/python tests/golden/gen_tensor_ops_elementwise.py  (NumPy and PyTorch)
Writes tests/golden/data/tensor_ops_elementwise.json.

Values are stored as raw storage: floats as the unsigned bit pattern of their format (so NaN, Inf
and -0 are exact), integers as themselves, bools as 0/1. Every expected value comes from Python
integers, exact rational rounding (fractions.Fraction) or NumPy/PyTorch float64, never from the
code under test. Where NumPy or PyTorch define the same result (in-range casts, comparisons,
fmod/remainder, pow, rounding) the script asserts agreement with them.
"""

import json
import math
import os
import random
from fractions import Fraction

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tensor_ops_elementwise.json")

FLOATS = ["f64", "f32", "f16", "bf16"]
INTS = {"i64": (64, True), "i32": (32, True), "i16": (16, True), "i8": (8, True),
        "u64": (64, False), "u32": (32, False), "u16": (16, False), "u8": (8, False)}
ALL = FLOATS + list(INTS) + ["bool"]
# precision p (with the implicit bit), minimum normal exponent, largest finite, storage bits
FMT = {"f64": (53, -1022, None, 64), "f32": (24, -126, None, 32), "f16": (11, -14, 65504.0, 16),
       "bf16": (8, -126, None, 16)}
FMT["f32"] = (24, -126, float(np.finfo(np.float32).max), 32)
FMT["bf16"] = (8, -126, float.fromhex("0x1.fep127"), 16)


def round_fmt(x, fmt):
    """x (a float or an int) rounded once to nearest even into a float format; returns a float."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    if x == 0:
        return x if isinstance(x, float) else 0.0
    p, emin, maxval, _ = FMT[fmt]
    if fmt == "f64":
        return float(x)  # Python's int -> float and float identity are correctly rounded
    a = abs(Fraction(x))
    sign = -1.0 if x < 0 else 1.0
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    q = Fraction(2) ** (e - p + 1)
    m = a / q
    n = math.floor(m)
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * q
    if r > Fraction(maxval):
        return sign * math.inf
    return sign * float(r)


def float_bits(v, fmt):
    """Bit pattern of v (exactly representable in fmt)."""
    if fmt == "f64":
        return int(np.array([v], dtype=np.float64).view(np.uint64)[0])
    if fmt == "f32":
        return int(np.array([v], dtype=np.float32).view(np.uint32)[0])
    if fmt == "f16":
        return int(np.array([v], dtype=np.float16).view(np.uint16)[0])
    t = torch.tensor([v], dtype=torch.float32).to(torch.bfloat16)
    return int(t.view(torch.int16).item()) & 0xFFFF


def bits_value(b, fmt):
    if fmt == "f64":
        return float(np.array([b], dtype=np.uint64).view(np.float64)[0])
    if fmt == "f32":
        return float(np.array([b], dtype=np.uint32).view(np.float32)[0])
    if fmt == "f16":
        return float(np.array([b], dtype=np.uint16).view(np.float16)[0])
    return float(np.array([b << 16], dtype=np.uint32).view(np.float32)[0])


def wrap(v, dt):
    bits, signed = INTS[dt]
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_range(dt):
    bits, signed = INTS[dt]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


FLOAT_EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0,
               -7.25, 127.5, -128.5, 255.5, 300.0, -300.0, 65504.0, 70000.0, 3e9, -3e9, 1e19, -1e20,
               1e-40, 1e-5, 0.1, -0.7, 4.5, -5.5, 2147483520.0, -2147483648.0]


def float_values(fmt, n, rng):
    vals = [round_fmt(v, fmt) for v in FLOAT_EDGES]
    while len(vals) < n:
        vals.append(round_fmt(rng.gauss(0.0, 6.0), fmt))
    return vals[:n]


def int_values(dt, n, rng):
    lo, hi = int_range(dt)
    vals = [0, 1, 2, 5, 7, lo, hi, lo + 1, hi - 1, wrap(-1, dt), wrap(-2, dt), wrap(-7, dt), wrap(-5, dt)]
    while len(vals) < n:
        vals.append(rng.randrange(lo, hi + 1) if rng.random() < 0.5 else wrap(rng.randrange(-9, 10), dt))
    return vals[:n]


def values(dt, n, rng):
    if dt in FLOATS:
        return float_values(dt, n, rng)
    if dt == "bool":
        return [rng.randrange(2) for _ in range(n)]
    return int_values(dt, n, rng)


def storage(vals, dt):
    """JSON form of a value list."""
    if dt in FLOATS:
        return [float_bits(v, dt) for v in vals]
    return [int(v) for v in vals]


def numeric(v):
    return float(v) if isinstance(v, float) else v


# ---- Compare ----------------------------------------------------------------------------------------
CMP = [lambda x, y: x == y, lambda x, y: x != y, lambda x, y: x < y, lambda x, y: x <= y,
       lambda x, y: x > y, lambda x, y: x >= y]
NP_CMP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


def compare_cases(rng):
    cases = []
    for dt in ALL:
        n = 40
        a = values(dt, n, rng)
        b = values(dt, n, rng)
        for i in range(0, n, 3):  # equal pairs (NaN == NaN included)
            b[i] = a[i]
        outs = []
        for op, f in enumerate(CMP):
            out = [int(bool(f(x, y))) for x, y in zip(a, b)]
            if dt in FLOATS:  # NumPy in float64 (the values are exact there)
                ref = NP_CMP[op](np.array(a, dtype=np.float64), np.array(b, dtype=np.float64))
                assert list(map(int, ref)) == out, (dt, op)
            outs.append(out)
        cases.append({"method": "Compare", "dtype": dt, "a": storage(a, dt), "b": storage(b, dt), "out": outs})
    return cases


def logical_cases(rng):
    cases = []
    for n in (0, 1, 7, 8, 9, 64, 70):
        a = [rng.randrange(2) for _ in range(n)]
        b = [rng.randrange(2) for _ in range(n)]
        outs = [[x & y for x, y in zip(a, b)], [x | y for x, y in zip(a, b)], [x ^ y for x, y in zip(a, b)],
                [1 - x for x in a]]
        na, nb = np.array(a, dtype=bool), np.array(b, dtype=bool)
        assert outs[0] == list(map(int, np.logical_and(na, nb)))
        assert outs[2] == list(map(int, np.logical_xor(na, nb)))
        cases.append({"method": "Logical", "dtype": "bool", "a": a, "b": b, "out": outs})
    return cases


def where_cases(rng):
    cases = []
    for dt in ALL:
        n = 20
        c = [rng.randrange(2) for _ in range(n)]
        a, b = values(dt, n, rng), values(dt, n, rng)
        out = [x if k else y for k, x, y in zip(c, a, b)]
        cases.append({"method": "Where", "dtype": dt, "cond": c, "a": storage(a, dt), "b": storage(b, dt),
                      "out": storage(out, dt)})
    return cases


# ---- Cast ---------------------------------------------------------------------------------------------
def cast_one(v, src, dst):
    if dst == "bool":
        return int(v != 0)  # NaN != 0
    if src == "bool":
        v = int(v)
    if dst in FLOATS:
        return round_fmt(v, dst)
    if isinstance(v, float):  # float -> int: NaN 0, truncate, saturate
        lo, hi = int_range(dst)
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return hi if v > 0 else lo
        t = int(v)  # truncates toward zero
        return min(max(t, lo), hi)
    return wrap(v, dst)  # int -> int: modulo 2^bits


NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
      "i16": np.int16, "i8": np.int8, "u64": np.uint64, "u32": np.uint32, "u16": np.uint16, "u8": np.uint8,
      "bool": np.bool_}


def cast_cases(rng):
    cases = []
    for src in ALL:
        vals = values(src, 36, rng)
        for dst in ALL:
            out = [cast_one(v, src, dst) for v in vals]
            # Agreement with NumPy's astype where it is defined: in-range finite floats, ints, bools.
            if src in NP and dst in NP and src != "f16":
                for v, o in zip(vals, out):
                    if isinstance(v, float) and dst in INTS:
                        lo, hi = int_range(dst)
                        if not (math.isfinite(v) and lo <= math.trunc(v) <= hi and abs(v) < 2**53):
                            continue
                    if src in INTS and dst in FLOATS and abs(v) >= 2**24:
                        continue  # NumPy may round twice through float64
                    with np.errstate(all="ignore"):
                        ref = np.array([v], dtype=NP[src]).astype(NP[dst])[0]
                    ref = ref.item()
                    assert (math.isnan(ref) and math.isnan(o)) if isinstance(o, float) and math.isnan(o) \
                        else ref == o, (src, dst, v, ref, o)
            cases.append({"method": "Cast", "from": src, "to": dst, "in": storage(vals, src),
                          "out": storage(out, dst)})
    return cases


# ---- Pow, Mod, Round ------------------------------------------------------------------------------------
def pow_cases(rng):
    cases = []
    for dt in FLOATS:
        a = [2.0, -2.0, 0.0, -0.0, 1.0, math.nan, math.inf, -math.inf, 0.5, 10.0, -8.0, 3.0, 1.0, math.nan]
        b = [10.0, 3.0, -1.0, -1.0, math.nan, 0.0, -2.0, 3.0, 0.5, -3.0, 1.0 / 3.0, 2.5, math.inf, 1.0]
        a += [round_fmt(abs(rng.gauss(0, 3)), dt) for _ in range(10)]
        b += [round_fmt(rng.gauss(0, 2), dt) for _ in range(10)]
        a, b = [round_fmt(x, dt) for x in a], [round_fmt(x, dt) for x in b]
        with np.errstate(all="ignore"):
            exact = np.power(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64))
        t = torch.pow(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)).numpy()
        # torch.pow agrees with NumPy to the last ulp of float64 (the libms differ there).
        assert np.allclose(exact, t, rtol=4.5e-16, atol=0.0, equal_nan=True)
        out = [round_fmt(float(x), dt) for x in exact]
        cases.append({"method": "Pow", "dtype": dt, "a": storage(a, dt), "b": storage(b, dt),
                      "out": storage(out, dt)})
    return cases


def float_mod(a, b, fmod):
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
        return math.nan
    r = math.fmod(a, b)
    if fmod:
        return r
    if r == 0:
        return math.copysign(0.0, b)
    if (r < 0) != (b < 0):
        r += b
    return r


def int_mod(a, b, fmod):
    r = abs(a) % abs(b)
    if fmod:
        return -r if a < 0 else r
    return a % b  # Python: sign of b


def mod_cases(rng):
    cases = []
    for dt in FLOATS + list(INTS):
        n = 30
        a = values(dt, n, rng)
        b = values(dt, n, rng)
        if dt in INTS:
            b = [x if x != 0 else 3 for x in b]
            b[0], b[1] = 3, wrap(-3, dt)
            a[0], a[1] = wrap(-7, dt), 7
        else:
            b[:6] = [3.0, -3.0, math.inf, 0.0, -0.0, 2.5]
            a[:6] = [-7.0, 7.0, -1.0, 5.0, 5.0, -0.0]
            b = [round_fmt(x, dt) for x in b]
        for fmod in (False, True):
            if dt in FLOATS:
                out = [round_fmt(float_mod(x, y, fmod), dt) for x, y in zip(a, b)]
                with np.errstate(all="ignore"):
                    fa, fb = np.array(a, dtype=np.float64), np.array(b, dtype=np.float64)
                    ref = np.fmod(fa, fb) if fmod else np.remainder(fa, fb)
                for x, y, o, r in zip(a, b, out, ref):
                    if dt == "f64":
                        assert (math.isnan(o) and math.isnan(r)) or (o == r and math.copysign(1, o) == math.copysign(1, r)), (x, y, o, r)
            else:
                out = [wrap(int_mod(x, y, fmod), dt) for x, y in zip(a, b)]
                with np.errstate(all="ignore"):
                    na, nb = np.array(a, dtype=NP[dt]), np.array(b, dtype=NP[dt])
                    ref = np.fmod(na, nb) if fmod else np.remainder(na, nb)
                for x, y, o, r in zip(a, b, out, ref):
                    if not (y == -1 and x == int_range(dt)[0]):
                        assert o == int(r), (dt, x, y, o, r)
            cases.append({"method": "Mod", "dtype": dt, "fmod": fmod, "a": storage(a, dt), "b": storage(b, dt),
                          "out": storage(out, dt)})
    return cases


def round_cases(rng):
    cases = []
    ops = [math.floor, math.ceil, None, math.trunc, math.erf]
    for dt in FLOATS:
        x = float_values(dt, 44, rng)
        x += [round_fmt(v, dt) for v in (-0.25, 0.25, 3.5, -3.5, 1e6 + 0.5, -1e-30)]
        outs = []
        for op, f in enumerate(ops):
            res = []
            for v in x:
                if math.isnan(v) or math.isinf(v):
                    r = v if op != 4 else (math.nan if math.isnan(v) else math.copysign(1.0, v))
                elif op == 2:
                    r = float(np.round(np.float64(v)))  # half to even
                else:
                    r = float(f(v))
                if op < 4 and r == 0:
                    r = math.copysign(0.0, v)  # IEEE: the sign of x
                res.append(round_fmt(r, dt))
            t = [torch.floor, torch.ceil, torch.round, torch.trunc, torch.erf][op](torch.tensor(x, dtype=torch.float64))
            for r, tv in zip(res, t.tolist()):
                tr = round_fmt(tv, dt)
                # torch.erf and the C library's erf differ in the last ulp of float64.
                assert (math.isnan(r) and math.isnan(tr)) or r == tr or (op == 4 and abs(r - tr) <= 1e-15 * abs(r)), \
                    (dt, op, r, tr)
            outs.append(storage(res, dt))
        cases.append({"method": "Round", "dtype": dt, "in": storage(x, dt), "out": outs})
    return cases


def main():
    rng = random.Random(20261202)
    cases = (compare_cases(rng) + logical_cases(rng) + where_cases(rng) + cast_cases(rng) + pow_cases(rng)
             + mod_cases(rng) + round_cases(rng))
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_tensor_ops_elementwise.py", "cases": cases}, f,
                  separators=(",", ":"))
    print(f"{OUT}: {len(cases)} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
