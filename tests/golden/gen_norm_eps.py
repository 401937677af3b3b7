#!/usr/bin/env python3
"""Golden data for the caller-eps channel norms MathExt.GroupNormEps, MathExt.InstanceNormEps and
MathExt.BatchNormEvalEps (tests/cpu/reference/norm_eps_test.cpp).

Run from the repository root with a Python that has NumPy and PyTorch (Debian's 1.13, or a venv):
    /usr/bin/python3 tests/golden/gen_norm_eps.py

Inputs are drawn from a fixed seed and rounded to the storage dtype; the oracle runs in float64 on
the rounded values: F.group_norm(x, groups, weight, bias, eps), F.instance_norm(x, weight=,
bias=, eps=) and F.batch_norm(x, mean, var, weight, bias, training=False, eps) over [batch,
channels, spatial]. Each case has its own eps (1e-12, 1e-5, 0.25 and 0; eps 0 only where no block
is constant) and one shape per method has blocks with a small spread near 1 (or, for
BatchNormEval, small running variances), where eps matters; one shape per method has no scale and
bias (null). Output: tests/golden/data/norm_eps.json.
"""

import json
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20261203
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "norm_eps.json")
EPS = (1e-12, 1e-5, 0.25, 0.0)
rng = np.random.default_rng(SEED)
# A spread near 1 that the storage dtype still resolves (bf16 steps by 2^-7 there).
SMALL_SPREAD = {"f64": 1e-3, "f32": 1e-3, "f16": 1e-2, "bf16": 6e-2}

# (batch, channels, spatial, groups, kind, affine); kind "small": a small spread near 1 (for
# BatchNormEval: small running variances as well).
SHAPES = {
    "GroupNormEps": ((2, 4, 3, 2, "wide", True), (1, 6, 5, 3, "small", True), (3, 2, 4, 1, "wide", False)),
    "InstanceNormEps": ((2, 3, 4, 0, "wide", True), (1, 4, 6, 0, "small", True), (2, 2, 5, 0, "wide", False)),
    "BatchNormEvalEps": ((2, 3, 4, 0, "wide", True), (1, 4, 6, 0, "small", True), (3, 2, 3, 0, "wide", False)),
}


def draw(dtype, shape, lo, hi, offset=0.0):
    values = offset + rng.uniform(lo, hi, size=shape)
    if dtype == "f64":
        values = np.round(values, 10)
    return torch.tensor(values, dtype=torch.float64).to(DTYPES[dtype]).to(torch.float64)


def encode(t):
    return None if t is None else [float(repr(v)) for v in t.flatten().tolist()]


def make_case(method, dtype, eps, batch, channels, spatial, groups, kind, affine):
    if kind == "small":
        x = draw(dtype, (batch, channels, spatial), -SMALL_SPREAD[dtype], SMALL_SPREAD[dtype], 1.0)
    else:
        x = draw(dtype, (batch, channels, spatial), -2.0, 2.0)
    scale = draw(dtype, (channels,), -2.0, 2.0) if affine else None
    bias = draw(dtype, (channels,), -1.0, 1.0) if affine else None
    case = {"method": method, "dtype": dtype, "eps": eps, "batch": batch, "channels": channels,
            "spatial": spatial}
    if method == "GroupNormEps":
        y = F.group_norm(x, groups, scale, bias, eps=eps)
        case["groups"] = groups
    elif method == "InstanceNormEps":
        y = F.instance_norm(x, weight=scale, bias=bias, use_input_stats=True, eps=eps)
    else:
        mean = draw(dtype, (channels,), -0.5, 0.5, 1.0 if kind == "small" else 0.0)
        var = draw(dtype, (channels,), 1e-4, 4e-4) if kind == "small" else draw(dtype, (channels,), 0.1, 3.0)
        y = F.batch_norm(x, mean, var, scale, bias, training=False, eps=eps)
        case["mean"], case["var"] = encode(mean), encode(var)
    assert torch.isfinite(y).all(), (method, dtype, eps, batch, channels, spatial)
    case.update({"x": encode(x), "scale": encode(scale), "bias": encode(bias),
                 "y": [float(f"{v:.17g}") for v in y.flatten().tolist()]})
    return case


def main():
    cases = []
    for method, shapes in SHAPES.items():
        for dtype in DTYPES:
            for eps in EPS:
                for shape in shapes:
                    cases.append(make_case(method, dtype, eps, *shape))
    doc = {"generator": "tests/golden/gen_norm_eps.py", "seed": SEED, "torch": torch.__version__,
           "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{OUT}: {os.path.getsize(OUT)} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
