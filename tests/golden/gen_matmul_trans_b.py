#!/usr/bin/env python3
"""Golden data for MathExt.MatmulTransB (tests/cpu/reference/matmul_trans_b_test.cpp):
out = a @ b.T with b stored [cols, inner], torch.matmul in float64 on inputs rounded to each
storage dtype. Run with a Python that has NumPy and PyTorch:
    python3 tests/golden/gen_matmul_trans_b.py
Output: tests/golden/data/matmul_trans_b.json.
"""
import json
import os

import numpy as np
import torch

SEED = 20261203
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
SHAPES = [(0, 3, 4), (3, 0, 4), (1, 1, 1), (2, 3, 4), (1, 37, 9), (6, 5, 1), (17, 13, 11), (12, 40, 20)]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "matmul_trans_b.json")
rng = np.random.default_rng(SEED)


def draw(dtype, shape):
    v = rng.uniform(-2.0, 2.0, size=shape)
    if dtype == "f64":
        v = np.round(v, 12)
    return torch.tensor(v, dtype=torch.float64).to(DTYPES[dtype]).to(torch.float64)


def main():
    cases = []
    for dtype in DTYPES:
        for rows, inner, cols in SHAPES:
            a, b = draw(dtype, (rows, inner)), draw(dtype, (cols, inner))
            y = a @ b.T
            cases.append({"dtype": dtype, "rows": rows, "inner": inner, "cols": cols,
                          "a": [float(repr(x)) for x in a.flatten().tolist()],
                          "b": [float(repr(x)) for x in b.flatten().tolist()],
                          "y": [float(f"{x:.17g}") for x in y.flatten().tolist()]})
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_matmul_trans_b.py", "seed": SEED, "torch": torch.__version__,
                   "cases": cases}, f, separators=(",", ":"))
    print(f"{OUT}: {os.path.getsize(OUT)} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
