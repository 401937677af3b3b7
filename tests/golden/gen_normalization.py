#!/usr/bin/python3
"""Golden data for the Normalization surface (tests/cpu/reference/normalization_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_normalization.py

For every method and every storage dtype (f64, f32, f16, bf16) the script draws a
[batch, channels, spatial] input and the per-channel parameters from a fixed seed, rounds them to
the storage dtype with torch, and evaluates the oracle with PyTorch in float64 (eps = 1e-5) on the
rounded values:
    GroupNorm      F.group_norm(x, groups, weight, bias)
    InstanceNorm   F.instance_norm(x, weight=, bias=, use_input_stats=True)
Where torch refuses a block of one element ("Expected more than 1 value per channel when
training"), the oracle is the closed form in float64 torch: mean and biased variance of each
block, (x - mean) / sqrt(var + eps) * scale + bias.
    BatchNormEval  F.batch_norm(x, mean, var, weight, bias, training=False)
scale and bias are each present or absent ("scale": null, "bias": null = torch weight/bias None).
One case per method has more than 4096 elements; its values are k/64 with integer k in
[-256, 256] (variances in [0, 4]), exactly representable in every storage dtype, so one float64
oracle serves all four dtypes ("dtype": "all", values stored as the integers k, "grid": 64).

Input values are written with the fewest digits that parse back (string -> double -> storage
dtype) to exactly the rounded value; outputs with 17 significant digits for f64, 13 for the grid
cases and 10 otherwise.
Output: tests/golden/data/normalization.json and normalization_large.json (the grid cases).
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20240709
GRID = 64
EPS = 1e-5
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


def affine(dtype, channels, which):
    scale = draw(dtype, (channels,), -2.0, 2.0) if which in ("both", "scale") else None
    bias = draw(dtype, (channels,), -2.0, 2.0) if which in ("both", "bias") else None
    return scale, bias


def closed_form(x, groups, scale, bias):
    """Group normalisation in float64, for the blocks torch refuses."""
    n, c, s = x.shape
    blocks = x.reshape(n, groups, -1)
    mean = blocks.mean(dim=2, keepdim=True)
    var = ((blocks - mean) ** 2).mean(dim=2, keepdim=True)
    y = ((blocks - mean) / torch.sqrt(var + EPS)).reshape(n, c, s)
    if scale is not None:
        y = y * scale.reshape(1, c, 1)
    if bias is not None:
        y = y + bias.reshape(1, c, 1)
    return y


def group_norm(dtype, spec):
    n, c, s, groups, which = spec
    x = draw(dtype, (n, c, s))
    scale, bias = affine(dtype, c, which)
    if c // groups * s == 1:
        y = closed_form(x, groups, scale, bias)
    else:
        y = F.group_norm(x, groups, scale, bias, EPS)
    return {"groups": groups}, x, scale, bias, {}, y


def instance_norm(dtype, spec):
    n, c, s, which = spec
    x = draw(dtype, (n, c, s))
    scale, bias = affine(dtype, c, which)
    if n == 0:
        y = x.clone()  # empty; torch.instance_norm raises on an empty batch
    elif s == 1:
        y = closed_form(x, c, scale, bias)
    else:
        y = F.instance_norm(x, weight=scale, bias=bias, use_input_stats=True, eps=EPS)
    return {}, x, scale, bias, {}, y


def batch_norm_eval(dtype, spec):
    n, c, s, which, var_hi = spec
    x = draw(dtype, (n, c, s))
    scale, bias = affine(dtype, c, which)
    mean = draw(dtype, (c,), -2.0, 2.0)
    var = draw(dtype, (c,), 0.0, var_hi)
    y = F.batch_norm(x, mean, var, scale, bias, training=False, eps=EPS)
    stats = {"mean": encode_inputs(mean, dtype), "var": encode_inputs(var, dtype)}
    return {}, x, scale, bias, stats, y


# (batch, channels, spatial, groups, affine)
GROUP_NORM = [(0, 4, 5, 2, "both"), (1, 1, 1, 1, "both"), (2, 6, 7, 3, "both"),
              (3, 4, 5, 4, "scale"), (1, 6, 9, 1, "none"), (2, 8, 3, 2, "bias")]
GROUP_NORM_LARGE = (1, 4, 1025, 2, "both")  # 4100 elements
# (batch, channels, spatial, affine)
INSTANCE_NORM = [(0, 3, 4, "both"), (1, 1, 1, "both"), (2, 3, 7, "both"), (1, 5, 13, "none"),
                 (3, 2, 1, "scale"), (2, 4, 6, "bias")]
INSTANCE_NORM_LARGE = (1, 2, 2049, "both")  # 4098 elements
# (batch, channels, spatial, affine, variances drawn from [0, var_hi])
BATCH_NORM = [(0, 3, 4, "both", 3.0), (1, 1, 1, "both", 3.0), (2, 3, 7, "both", 3.0),
              (1, 5, 1, "none", 3.0), (4, 2, 9, "scale", 3.0), (2, 3, 5, "bias", 2e-5)]
BATCH_NORM_LARGE = (1, 4, 1025, "both", 4.0)  # 4100 elements

SPEC = {"GroupNorm": (group_norm, GROUP_NORM, GROUP_NORM_LARGE),
        "InstanceNorm": (instance_norm, INSTANCE_NORM, INSTANCE_NORM_LARGE),
        "BatchNormEval": (batch_norm_eval, BATCH_NORM, BATCH_NORM_LARGE)}


def make_case(method, dtype, spec):
    fn = SPEC[method][0]
    extra, x, scale, bias, stats, y = fn(dtype, spec)
    case = {"method": method, "dtype": dtype, "batch": x.shape[0], "channels": x.shape[1],
            "spatial": x.shape[2], "grid": GRID if dtype == "all" else 1}
    case.update(extra)
    case.update({"x": encode_inputs(x, dtype), "scale": encode_inputs(scale, dtype),
                 "bias": encode_inputs(bias, dtype)})
    case.update(stats)
    case["y"] = encode_outputs(y, dtype)
    return case


def write(name, cases):
    path = os.path.join(OUT_DIR, name)
    doc = {"generator": "tests/golden/gen_normalization.py", "seed": SEED,
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
    write("normalization.json", small_cases)
    write("normalization_large.json", large_cases)


if __name__ == "__main__":
    main()
