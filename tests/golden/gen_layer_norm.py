#!/usr/bin/python3
"""Golden data for the LayerNorm surface (tests/cpu/reference/layer_norm_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_layer_norm.py

For every method and every storage dtype (f64, f32, f16, bf16) the script draws a [rows, lastDim]
input and the per-column parameters from a fixed seed, rounds them to the storage dtype with
torch, and evaluates the oracle in float64 on the rounded values:
    LayerNorm  F.layer_norm(x, (lastDim,), weight, bias, eps=1e-5)
    RMSNorm    x * scale / sqrt(mean(x^2) + 1e-6), the closed form in float64 NumPy (PyTorch 1.13
               has no rms_norm)
scale and bias may be absent ("scale": null, "bias": null = weight/bias None). One case per
method has a row of 4099 elements; its values are k/64 with integer k in [-256, 256], exactly
representable in every storage dtype, so one float64 oracle serves all four dtypes
("dtype": "all", values stored as the integers k, "grid": 64).

Input values are written with the fewest digits that parse back (string -> double -> storage
dtype) to exactly the rounded value; outputs with 17 significant digits for f64, 13 for the grid
cases and 10 otherwise.
Output: tests/golden/data/layer_norm.json and layer_norm_large.json (the grid cases).
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20240710
GRID = 64
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-3.0, hi=3.0):
    """Values rounded to the storage dtype, as a float64 tensor; for "all", k / 64 on the grid."""
    if dtype == "all":
        k = rng.integers(int(lo * GRID), int(hi * GRID) + 1, size=shape)
        return torch.tensor(k, dtype=torch.float64) / GRID
    values = rng.uniform(lo, hi, size=shape)
    if dtype == "f64":
        values = np.round(values, 8)
    return torch.tensor(values, dtype=torch.float64).to(DTYPES[dtype]).to(torch.float64)


def encode_inputs(t, dtype):
    if t is None:
        return None
    out = []
    for v in t.flatten().tolist():
        if dtype == "all":
            out.append(int(v * GRID))
        elif dtype == "f64":
            out.append(v)
        else:
            short = float(np.format_float_scientific(np.float32(v), unique=True))
            assert float(np.float32(short)) == v, (v, short)  # double -> float is exact again
            out.append(short)
    return out


def encode_outputs(t, dtype):
    out = t.flatten().tolist()
    assert all(math.isfinite(v) for v in out), "golden values must be finite (JSON has no NaN/Inf)"
    if dtype == "f64":
        return out
    digits = 13 if dtype == "all" else 10
    return [float(f"{v:.{digits}g}") for v in out]


def layer_norm(x, scale, bias):
    return F.layer_norm(x, (x.shape[1],), scale, bias, eps=1e-5)


def rms_norm(x, scale, bias):
    a = x.numpy()
    y = a / np.sqrt(np.mean(a * a, axis=1, keepdims=True) + 1e-6)
    if scale is not None:
        y = y * scale.numpy()
    return torch.from_numpy(y)


# (rows, lastDim, affine)
LAYER_NORM = [(0, 5, "both"), (1, 1, "both"), (4, 7, "both"), (3, 33, "both"), (5, 17, "none"),
              (2, 9, "scale"), (3, 4, "bias")]
RMS_NORM = [(0, 5, "scale"), (1, 1, "scale"), (4, 7, "scale"), (3, 33, "scale"), (5, 17, "none"),
            (2, 64, "scale")]
LAYER_NORM_LARGE = (1, 4099, "both")
RMS_NORM_LARGE = (1, 4099, "scale")

SPEC = {"LayerNorm": (layer_norm, LAYER_NORM, LAYER_NORM_LARGE),
        "RMSNorm": (rms_norm, RMS_NORM, RMS_NORM_LARGE)}


def make_case(method, dtype, spec):
    rows, dim, which = spec
    x = draw(dtype, (rows, dim))
    scale = draw(dtype, (dim,), -2.0, 2.0) if which in ("both", "scale") else None
    bias = draw(dtype, (dim,), -2.0, 2.0) if which in ("both", "bias") else None
    y = SPEC[method][0](x, scale, bias)
    return {"method": method, "dtype": dtype, "rows": rows, "lastDim": dim,
            "grid": GRID if dtype == "all" else 1, "x": encode_inputs(x, dtype),
            "scale": encode_inputs(scale, dtype), "bias": encode_inputs(bias, dtype),
            "y": encode_outputs(y, dtype)}


def write(name, cases):
    path = os.path.join(OUT_DIR, name)
    doc = {"generator": "tests/golden/gen_layer_norm.py", "seed": SEED,
           "torch": torch.__version__, "cases": cases}
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{path}: {os.path.getsize(path)} bytes, {len(cases)} cases")


def main():
    small_cases, large_cases = [], []
    for method, (_, small, large) in SPEC.items():
        for dtype in DTYPES:
            for spec in small:
                small_cases.append(make_case(method, dtype, spec))
        large_cases.append(make_case(method, "all", large))
    write("layer_norm.json", small_cases)
    write("layer_norm_large.json", large_cases)


if __name__ == "__main__":
    main()
