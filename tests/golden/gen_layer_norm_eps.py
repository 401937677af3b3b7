#!/usr/bin/env python3
"""Golden data for the caller-eps norms MathExt.LayerNormEps and MathExt.RMSNormEps
(tests/cpu/reference/layer_norm_eps_test.cpp).

Run from the repository root with a Python that has NumPy and PyTorch (Debian's 1.13, or a venv):
    /usr/bin/python3 tests/golden/gen_layer_norm_eps.py

Inputs are drawn from a fixed seed and rounded to the storage dtype; the oracle runs in float64 on
the rounded values: LayerNormEps is F.layer_norm(x, (lastDim,), weight, bias, eps), RMSNormEps
the closed form x * scale / sqrt(mean(x^2) + eps) in NumPy. Each case has its own eps (BERT's
1e-12, Llama's 1e-5, 0 and a large 0.25) and rows with a small spread near 1 (1e-3, or what f16/bf16 resolve), where eps
matters. Output: tests/golden/data/layer_norm_eps.json.
"""

import json
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20261202
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "layer_norm_eps.json")
rng = np.random.default_rng(SEED)
# A spread near 1 that the storage dtype still resolves (bf16 steps by 2^-7 there).
SMALL_SPREAD = {"f64": 1e-3, "f32": 1e-3, "f16": 1e-2, "bf16": 6e-2}


def draw(dtype, shape, lo, hi, offset=0.0):
    values = offset + rng.uniform(lo, hi, size=shape)
    if dtype == "f64":
        values = np.round(values, 10)
    return torch.tensor(values, dtype=torch.float64).to(DTYPES[dtype]).to(torch.float64)


def encode(t):
    return None if t is None else [float(repr(v)) for v in t.flatten().tolist()]


def main():
    cases = []
    for method in ("LayerNormEps", "RMSNormEps"):
        for dtype in DTYPES:
            for eps in (1e-12, 1e-5, 0.0, 0.25):
                for rows, dim, spread in ((3, 33, 2.0), (2, 64, 1e-3), (1, 1, 1.0), (4, 7, 0.5)):
                    if dim == 1 and (eps == 0.0 or method == "LayerNormEps"):
                        continue  # a single element has zero variance: 0/0 with eps 0
                    # Small-spread rows sit near 1 so that the rounded inputs keep a spread.
                    offset = 1.0 if spread < 0.01 else 0.0
                    if offset:
                        spread = SMALL_SPREAD[dtype]
                    x = draw(dtype, (rows, dim), -spread, spread, offset)
                    scale = draw(dtype, (dim,), -2.0, 2.0)
                    bias = draw(dtype, (dim,), -1.0, 1.0) if method == "LayerNormEps" else None
                    if method == "LayerNormEps":
                        y = F.layer_norm(x, (dim,), scale, bias, eps=eps)
                    else:
                        a = x.numpy()
                        y = torch.from_numpy(a / np.sqrt(np.mean(a * a, axis=1, keepdims=True) + eps) * scale.numpy())
                    assert torch.isfinite(y).all(), (method, dtype, eps, rows, dim)
                    cases.append({"method": method, "dtype": dtype, "eps": eps, "rows": rows, "lastDim": dim,
                                  "x": encode(x), "scale": encode(scale), "bias": encode(bias),
                                  "y": [float(f"{v:.17g}") for v in y.flatten().tolist()]})
    doc = {"generator": "tests/golden/gen_layer_norm_eps.py", "seed": SEED, "torch": torch.__version__,
           "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{OUT}: {os.path.getsize(OUT)} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
