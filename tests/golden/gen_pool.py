#!/usr/bin/python3
"""Golden data for the Pool surface (tests/cpu/reference/pool_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_pool.py

For every method and every storage dtype (f64, f32, f16, bf16) the script draws NCHW inputs from
a fixed seed, rounds them to the storage dtype with torch, and evaluates the oracle with PyTorch in
float64 on the rounded inputs:
    MaxPool2D          F.max_pool2d
    AvgPool2D          F.avg_pool2d(count_include_pad=False)
    AdaptiveMaxPool2D  F.adaptive_max_pool2d   (including out > in and non-divisible sizes)
    AdaptiveAvgPool2D  F.adaptive_avg_pool2d
One case per method has more than 4096 input elements; its inputs are k/64 with integer k in
[-256, 256], exactly representable in every storage dtype, so one float64 oracle serves all four
dtypes ("dtype": "all", inputs stored as the integers k, "grid": 64).

Input values are written with the fewest digits that parse back (string -> double -> storage
dtype) to exactly the rounded value; outputs with 17 significant digits for f64 and 10 otherwise.
Output: tests/golden/data/pool.json
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20240707
GRID = 64
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "pool.json")

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-4.0, hi=4.0):
    """Uniform values rounded to the storage dtype, as a float64 tensor (f64: 8 decimals)."""
    values = rng.uniform(lo, hi, size=shape)
    if dtype == "f64":
        values = np.round(values, 8)
    return torch.tensor(values, dtype=torch.float64).to(DTYPES[dtype]).to(torch.float64)


def draw_grid(shape):
    """Integers k in [-256, 256]; the values k / 64 are exact in f64, f32, f16 and bf16."""
    return torch.tensor(rng.integers(-4 * GRID, 4 * GRID + 1, size=shape), dtype=torch.float64)


def encode_inputs(t, dtype):
    out = []
    for v in t.flatten().tolist():
        if dtype in ("f64", "all"):
            out.append(int(v) if dtype == "all" else v)
            continue
        short = float(np.format_float_scientific(np.float32(v), unique=True))
        assert float(np.float32(short)) == v, (v, short)  # double -> float is exact again
        out.append(short)
    return out


def encode_outputs(t, dtype):
    out = t.flatten().tolist()
    assert all(math.isfinite(v) for v in out), "golden values must be finite (JSON has no NaN/Inf)"
    if dtype in ("f64", "all"):
        return out
    return [float(f"{v:.10g}") for v in out]


FIXED = {"MaxPool2D": F.max_pool2d,
         "AvgPool2D": lambda x, k, s, p: F.avg_pool2d(x, k, s, p, count_include_pad=False)}
ADAPTIVE = {"AdaptiveMaxPool2D": F.adaptive_max_pool2d,
            "AdaptiveAvgPool2D": F.adaptive_avg_pool2d}

# (batch, channels, inH, inW, kernel (H, W), stride (H, W), padding (H, W))
FIXED_CASES = [
    (0, 2, 5, 5, (2, 2), (2, 2), (0, 0)),
    (1, 1, 1, 1, (1, 1), (1, 1), (0, 0)),
    (1, 1, 1, 1, (2, 2), (1, 1), (1, 1)),
    (2, 3, 7, 5, (3, 2), (2, 1), (1, 1)),
    (1, 2, 9, 11, (3, 3), (3, 2), (1, 0)),
    (1, 1, 6, 5, (4, 3), (1, 2), (2, 1)),
    (3, 1, 4, 8, (2, 5), (2, 3), (0, 2)),
]
FIXED_LARGE = (1, 3, 37, 39, (3, 3), (2, 2), (1, 1))  # 4329 input elements

# (batch, channels, inH, inW, outH, outW)
ADAPTIVE_CASES = [
    (0, 3, 4, 4, 2, 2),
    (1, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 3, 2),   # out > in: windows repeat the single element
    (2, 3, 7, 5, 3, 2),   # non-divisible: overlapping windows
    (1, 2, 5, 9, 7, 4),   # out > in along H
    (1, 1, 10, 10, 3, 3),
    (2, 1, 6, 8, 6, 8),   # identity
]
ADAPTIVE_LARGE = (1, 3, 41, 37, 6, 5)  # 4551 input elements


def fixed_case(method, dtype, shape, x):
    n, c, h, w, k, s, p = shape
    y = FIXED[method](x, k, s, p)
    return {"method": method, "dtype": dtype, "batch": n, "channels": c, "inH": h, "inW": w,
            "kernelH": k[0], "kernelW": k[1], "strideH": s[0], "strideW": s[1],
            "paddingH": p[0], "paddingW": p[1], "outH": y.shape[2], "outW": y.shape[3],
            "grid": GRID if dtype == "all" else 1,
            "x": encode_inputs(x * (GRID if dtype == "all" else 1), dtype),
            "y": encode_outputs(y, dtype)}


def adaptive_case(method, dtype, shape, x):
    n, c, h, w, oh, ow = shape
    y = ADAPTIVE[method](x, (oh, ow))
    if isinstance(y, tuple):
        y = y[0]
    return {"method": method, "dtype": dtype, "batch": n, "channels": c, "inH": h, "inW": w,
            "outH": oh, "outW": ow, "grid": GRID if dtype == "all" else 1,
            "x": encode_inputs(x * (GRID if dtype == "all" else 1), dtype),
            "y": encode_outputs(y, dtype)}


def main():
    cases = []
    for method in FIXED:
        for dtype in DTYPES:
            for shape in FIXED_CASES:
                cases.append(fixed_case(method, dtype, shape, draw(dtype, shape[:4])))
        cases.append(fixed_case(method, "all", FIXED_LARGE, draw_grid(FIXED_LARGE[:4]) / GRID))
    for method in ADAPTIVE:
        for dtype in DTYPES:
            for shape in ADAPTIVE_CASES:
                cases.append(adaptive_case(method, dtype, shape, draw(dtype, shape[:4])))
        cases.append(adaptive_case(method, "all", ADAPTIVE_LARGE,
                                   draw_grid(ADAPTIVE_LARGE[:4]) / GRID))
    doc = {"generator": "tests/golden/gen_pool.py", "seed": SEED, "torch": torch.__version__,
           "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{OUT}: {os.path.getsize(OUT)} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
