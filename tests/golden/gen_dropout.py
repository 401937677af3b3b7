#!/usr/bin/env python3
"""Golden data for Dropout.Dropout (tests/cpu/reference/dropout_test.cpp).

Run with /usr/bin/python3 from the repository root; writes tests/golden/data/dropout.json.
The oracle is independent of the C++ code: the mask comes from philox_golden.py (a Python
Philox4x32-10 checked against Random123's known answers): element i is kept iff
uniform_float(seed, 0, i) >= f32(rate); kept values are x * s with s = 1 / (1 - rate) rounded to the
compute type (f32 for f32/f16/bf16, f64 for f64), computed here with NumPy, then rounded once to
the storage dtype by torch. Inputs are generated in float64 and rounded to the storage dtype first.
"""

import os

import numpy as np
import torch

from philox_golden import DTYPES, TORCH, round_to, short, uniform_float, write_json

HERE = os.path.dirname(os.path.abspath(__file__))


def expected(x, rate, seed, dtype):
    rate32 = np.float32(rate)
    keep = np.array([uniform_float(seed, 0, i) >= rate32 for i in range(len(x))], dtype=bool)
    if rate32 == 0:
        return x.copy(), keep
    if rate32 == 1:
        return np.zeros_like(x), keep
    if dtype == "f64":
        scale = 1.0 / (1.0 - np.float64(rate32))
        out = np.where(keep, x * scale, 0.0)
    else:
        scale = np.float32(1) / (np.float32(1) - rate32)
        out32 = np.where(keep, x.astype(np.float32) * scale, np.float32(0))
        out = torch.from_numpy(out32).to(TORCH[dtype]).to(torch.float64).numpy()
    return out, keep


def main():
    rng = np.random.default_rng(20240611)
    # (count, rate, seed): zero, one, odd lengths, the exact-copy and all-dropped rates, a seed
    # with only high bits, a seed of 0.
    shapes = [(0, 0.5, 7), (1, 0.5, 7), (7, 0.1, 0xC0FFEE), (33, 0.5, 0), (33, 0.0, 99),
              (33, 1.0, 99), (257, 0.9, 0xDEADBEEF00000000), (257, 0.25, 0xDEADBEEF00000001)]
    cases = []
    for dtype in DTYPES:
        for count, rate, seed in shapes:
            x = round_to(rng.uniform(-4.0, 4.0, count), dtype)
            out, keep = expected(x, rate, seed, dtype)
            cases.append({"dtype": dtype, "rate": rate, "seed": str(seed), "x": short(x, dtype),
                          "keep": "".join("1" if k else "0" for k in keep),
                          "want": short(out, dtype)})
    # One length over 4096; inputs are multiples of 1/64 in [-4, 4), exact in every dtype.
    count, rate, seed = 4099, 0.3, 0xC0FFEE
    big_x = rng.integers(-256, 256, count) / 64.0
    big = {"rate": rate, "seed": str(seed), "x": big_x.tolist(), "want": {}}
    for dtype in DTYPES:
        out, keep = expected(big_x, rate, seed, dtype)
        big["want"][dtype] = short(out, dtype)
    big["keep"] = "".join("1" if k else "0" for k in keep)
    write_json(os.path.join(HERE, "data", "dropout.json"),
               {"generator": "tests/golden/gen_dropout.py", "cases": cases, "large": big})


if __name__ == "__main__":
    main()
