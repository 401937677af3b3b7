#!/usr/bin/python3
"""Golden data for the Convolution surface (tests/cpu/reference/convolution_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_convolution.py

For every method and every storage dtype (f64, f32, f16, bf16) the script draws the input, the
weight and (in most cases) the bias from a fixed seed, rounds them to the storage dtype with
torch, and evaluates the oracle with PyTorch in float64 on the rounded values:
    Conv1D / Conv2D / Conv3D   F.conv1d / F.conv2d / F.conv3d (stride, padding, dilation)
    ConvTranspose2D            F.conv_transpose2d (weight [Cin, Cout, kH, kW], output_padding)
A case without bias is stored with "bias": null (torch bias=None). One case per method has more
than 4096 input elements; its values are k/64 with integer k in [-256, 256], exactly
representable in every storage dtype, so one float64 oracle serves all four dtypes
("dtype": "all", values stored as the integers k, "grid": 64).

Input values are written with the fewest digits that parse back (string -> double -> storage
dtype) to exactly the rounded value; outputs with 17 significant digits for f64 and 10 otherwise.
Output: tests/golden/data/convolution.json (small cases) and convolution_large.json (the grid
cases), each under 300 KB.
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20240708
GRID = 64
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-2.0, hi=2.0):
    """Values rounded to the storage dtype, as a float64 tensor; for "all", k / 64 on the grid."""
    if dtype == "all":
        k = rng.integers(-4 * GRID, 4 * GRID + 1, size=shape)
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
    if dtype in ("f64", "all"):
        return out
    return [float(f"{v:.10g}") for v in out]


# Each case: (batch, Cin, in spatial, Cout, kernel, stride, padding, dilation, bias?) with one
# entry per spatial axis in the tuples; ConvTranspose2D adds output_padding.
CONV1D = [
    (0, 2, (7,), 3, (3,), (1,), (0,), (1,), True),
    (1, 1, (1,), 1, (1,), (1,), (0,), (1,), True),
    (2, 3, (11,), 4, (3,), (2,), (1,), (2,), True),
    (1, 2, (13,), 3, (4,), (3,), (3,), (1,), False),
    (3, 1, (5,), 2, (5,), (1,), (0,), (1,), True),
    (1, 3, (9,), 2, (2,), (1,), (4,), (3,), True),
]
CONV1D_LARGE = (2, 3, (701,), 2, (5,), (3,), (2,), (3,), True)  # 4206 input elements

CONV2D = [
    (0, 2, (5, 5), 3, (3, 3), (1, 1), (0, 0), (1, 1), True),
    (1, 1, (1, 1), 1, (1, 1), (1, 1), (0, 0), (1, 1), True),
    (2, 3, (7, 6), 4, (3, 2), (2, 1), (1, 0), (1, 2), True),
    (1, 2, (9, 8), 3, (3, 3), (3, 2), (2, 1), (2, 1), False),
    (1, 3, (5, 5), 2, (5, 5), (1, 1), (2, 2), (1, 1), True),
    (2, 1, (4, 7), 1, (1, 3), (2, 2), (0, 3), (1, 3), True),
]
CONV2D_LARGE = (1, 3, (41, 37), 2, (3, 3), (2, 2), (1, 1), (1, 1), True)  # 4551 input elements

CONV3D = [
    (0, 2, (3, 4, 4), 2, (2, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), True),
    (1, 1, (1, 1, 1), 1, (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), True),
    (1, 2, (5, 6, 4), 3, (3, 2, 2), (2, 1, 1), (1, 0, 1), (1, 2, 1), True),
    (2, 1, (4, 5, 3), 2, (2, 3, 1), (1, 2, 1), (0, 1, 0), (1, 1, 1), False),
    (1, 3, (3, 3, 5), 2, (3, 3, 2), (1, 1, 2), (1, 1, 1), (1, 1, 2), True),
]
CONV3D_LARGE = (1, 2, (17, 13, 11), 2, (3, 3, 3), (2, 2, 1), (1, 1, 1), (1, 1, 2), True)  # 4862

# ConvTranspose2D: (..., output_padding) appended.
CONVT2D = [
    (0, 2, (3, 3), 2, (2, 2), (1, 1), (0, 0), (1, 1), True, (0, 0)),
    (1, 1, (1, 1), 1, (1, 1), (1, 1), (0, 0), (1, 1), True, (0, 0)),
    (2, 3, (4, 5), 2, (3, 2), (2, 1), (1, 0), (1, 2), True, (1, 1)),
    (1, 2, (5, 3), 3, (3, 3), (3, 2), (1, 1), (1, 1), False, (2, 0)),
    (1, 1, (3, 3), 1, (2, 2), (1, 1), (0, 1), (1, 1), True, (0, 0)),
    (2, 2, (2, 4), 3, (4, 3), (2, 3), (2, 1), (2, 1), True, (0, 2)),
    (1, 1, (1, 1), 1, (1, 1), (3, 3), (1, 1), (1, 1), True, (2, 2)),  # base size -1, +2 padding
]
CONVT2D_LARGE = (1, 3, (41, 37), 1, (3, 3), (1, 1), (2, 2), (2, 2), True, (1, 0))  # 4551

TORCH = {"Conv1D": F.conv1d, "Conv2D": F.conv2d, "Conv3D": F.conv3d}
SPEC = {"Conv1D": (CONV1D, CONV1D_LARGE), "Conv2D": (CONV2D, CONV2D_LARGE),
        "Conv3D": (CONV3D, CONV3D_LARGE), "ConvTranspose2D": (CONVT2D, CONVT2D_LARGE)}


def make_case(method, dtype, spec):
    n, cin, spatial, cout, kernel, stride, padding, dilation, has_bias = spec[:9]
    x = draw(dtype, (n, cin) + spatial)
    transposed = method == "ConvTranspose2D"
    w = draw(dtype, ((cin, cout) if transposed else (cout, cin)) + kernel)
    b = draw(dtype, (cout,)) if has_bias else None
    if transposed:
        output_padding = spec[9]
        y = F.conv_transpose2d(x, w, b, stride, padding, output_padding, 1, dilation)
    else:
        output_padding = (0,) * len(spatial)
        y = TORCH[method](x, w, b, stride, padding, dilation)
    return {"method": method, "dtype": dtype, "batch": n, "inChannels": cin, "outChannels": cout,
            "in": list(spatial), "kernel": list(kernel), "out": list(y.shape[2:]),
            "stride": list(stride), "padding": list(padding), "dilation": list(dilation),
            "outputPadding": list(output_padding), "grid": GRID if dtype == "all" else 1,
            "x": encode_inputs(x, dtype), "w": encode_inputs(w, dtype),
            "bias": encode_inputs(b, dtype), "y": encode_outputs(y, dtype)}


def write(name, cases):
    path = os.path.join(OUT_DIR, name)
    doc = {"generator": "tests/golden/gen_convolution.py", "seed": SEED,
           "torch": torch.__version__, "cases": cases}
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{path}: {os.path.getsize(path)} bytes, {len(cases)} cases")


def main():
    small_cases, large_cases = [], []
    for method, (small, large) in SPEC.items():
        for dtype in DTYPES:
            for spec in small:
                small_cases.append(make_case(method, dtype, spec))
        large_cases.append(make_case(method, "all", large))
    write("convolution.json", small_cases)
    write("convolution_large.json", large_cases)


if __name__ == "__main__":
    main()
