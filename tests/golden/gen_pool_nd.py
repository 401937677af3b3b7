#!/usr/bin/env python3
"""Golden data for the PoolNd methods (tests/cpu/reference/pool_nd_test.cpp), from PyTorch.

Run from the repository root in a throwaway venv with torch 2.x and numpy:
    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    /tmp/torchvenv/bin/python tests/golden/gen_pool_nd.py

Inputs are drawn from a fixed seed and rounded to each case's dtype first; the pools run in
float64 on those values:
    max, symmetric pads   torch.nn.functional.max_pool{1,2,3}d(..., dilation, ceil_mode,
                          return_indices=True) (indices flat over each [N, C] plane)
    max, asymmetric pads  F.pad(x, -inf) then max_poolNd without padding; the indices mapped back
                          from the padded plane to the input plane
    avg                   F.avg_pool{1,2,3}d(ceil_mode, count_include_pad); asymmetric pads and
                          dilations: sums and counts of F.unfold patches (2-D) or of F.pad'ed
                          inputs and masks (1-D)
Integer cases pool integer values exactly representable in float64. Outputs are rounded once from
float64 to the case's dtype (f16 by numpy; bf16 cases are max only, exact). The column-major index
of a 2-D case is w * H + h (ONNX storage_order 1). NaN and infinities are "nan", "inf", "-inf".
Output: tests/golden/data/pool_nd.json
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20261202
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "pool_nd.json")
rng = np.random.default_rng(SEED)


def enc(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def rounded(values, dtype):
    if dtype == "f32":
        return values.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return values.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16).to(torch.float64).numpy()
    return values


def out_rounded(values, dtype):
    if dtype in ("f64", "f32", "f16", "bf16"):
        return rounded(values, dtype)
    return values


def pool_max(x, k, s, d, pb, pe, ceil):
    r = len(k)
    t = torch.from_numpy(x)
    fn = [F.max_pool1d, F.max_pool2d, F.max_pool3d][r - 1]
    if pb == pe and all(2 * p <= ((kk - 1) * dd + 1) for p, kk, dd in zip(pb, k, d)):
        y, idx = fn(t, k, s, pb, d, ceil_mode=ceil, return_indices=True)
        return y.numpy(), idx.numpy()
    assert not ceil
    pad = []
    for i in reversed(range(r)):
        pad += [pb[i], pe[i]]
    tp = F.pad(t, pad, value=-math.inf)
    y, idx = fn(tp, k, s, 0, d, return_indices=True)
    padded = tp.shape[2:]
    coords = np.unravel_index(idx.numpy(), padded)
    coords = [c - pb[i] for i, c in enumerate(coords)]
    return y.numpy(), np.ravel_multi_index(coords, x.shape[2:])


def pool_avg(x, k, s, d, pb, pe, ceil, include):
    r = len(k)
    t = torch.from_numpy(x)
    if pb == pe and all(dd == 1 for dd in d) and all(2 * p <= kk for p, kk in zip(pb, k)):
        fn = [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][r - 1]
        return fn(t, k, s, pb, ceil_mode=ceil, count_include_pad=include).numpy()
    assert not ceil
    if r == 2:
        n, c = x.shape[:2]
        pad = [pb[1], pe[1], pb[0], pe[0]]
        tp = F.pad(t, pad)
        ones = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=torch.float64)
        mask = F.pad(ones, pad, value=1.0 if include else 0.0)
        sums = F.unfold(tp.reshape(n * c, 1, *tp.shape[2:]), k, dilation=d, stride=s).sum(1)
        counts = F.unfold(mask, k, dilation=d, stride=s).sum(1)
        oh = (tp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
        ow = (tp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
        return (sums / counts).reshape(n, c, oh, ow).numpy()
    assert r == 1 and d == [1]
    tp = F.pad(t, [pb[0], pe[0]])
    mask = F.pad(torch.ones((1, 1, x.shape[2]), dtype=torch.float64), [pb[0], pe[0]], value=1.0 if include else 0.0)
    sums = F.avg_pool1d(tp, k, s) * k[0]
    counts = F.avg_pool1d(mask, k, s) * k[0]
    return (sums / counts).numpy()


cases = []


def add(name, op, shape, k, s, d, pb, pe, ceil=False, include=False, dtypes=("f64", "f32", "f16"), ints=False, nan=False):
    r = len(k)
    for dtype in dtypes:
        if ints:
            lo, hi = {"u8": (0, 256), "i8": (-128, 128), "i32": (-2**31, 2**31), "i64": (-2**50, 2**50)}[dtype]
            x = rng.integers(lo, hi, size=shape).astype(np.float64)
            x.flat[::5] = x.flat[0]  # ties
        else:
            x = rounded(rng.standard_normal(shape) * 2.0, dtype)
            x.flat[::7] = x.flat[1]  # ties
            if nan:
                x.flat[3] = math.nan
                x.flat[11] = math.inf
        case = {"name": f"{name} {dtype}", "op": op, "dtype": dtype, "planes": shape[0] * shape[1], "rank": r,
                "in": list(shape[2:]), "kernel": k, "stride": s, "dilation": d, "pad_begin": pb, "pad_end": pe,
                "ceil": ceil, "include_pad": include, "x": [enc(v) if not ints else int(v) for v in x.ravel()]}
        if op == "max":
            y, idx = pool_max(x, k, s, d, pb, pe, ceil)
            case["y"] = [enc(v) if not ints else int(v) for v in y.ravel()]
            case["indices"] = [int(v) for v in idx.ravel()]
            if r == 2:
                h, w = np.unravel_index(idx.ravel(), shape[2:])
                case["indices_column_major"] = [int(v) for v in (w * shape[2] + h)]
        else:
            y = out_rounded(pool_avg(x, k, s, d, pb, pe, ceil, include), dtype)
            case["y"] = [enc(v) for v in y.ravel()]
        case["out"] = list(y.shape[2:])
        cases.append(case)


add("max 1-D dilated ceil", "max", (2, 3, 11), [3], [2], [2], [1], [1], ceil=True, dtypes=("f64", "f32", "f16", "bf16"))
add("max 2-D", "max", (1, 2, 7, 9), [3, 2], [2, 1], [1, 2], [1, 1], [1, 1], dtypes=("f64", "f32", "bf16"), nan=True)
add("max 3-D ceil", "max", (1, 2, 4, 5, 6), [2, 2, 2], [1, 2, 2], [2, 1, 1], [1, 0, 1], [1, 0, 1], ceil=True)
add("max 2-D asymmetric pads", "max", (2, 1, 6, 5), [3, 3], [2, 2], [1, 1], [0, 2], [2, 0])
add("max 2-D integers", "max", (1, 3, 6, 7), [2, 3], [2, 2], [1, 1], [1, 1], [1, 1], dtypes=("u8", "i8", "i32", "i64"), ints=True)
add("avg 2-D ceil include-pad", "avg", (1, 2, 6, 7), [3, 3], [2, 2], [1, 1], [1, 1], [1, 1], ceil=True, include=True)
add("avg 2-D ceil", "avg", (1, 2, 6, 7), [3, 3], [2, 2], [1, 1], [1, 1], [1, 1], ceil=True)
add("avg 3-D", "avg", (1, 1, 5, 4, 6), [2, 3, 2], [2, 1, 2], [1, 1, 1], [1, 1, 0], [1, 1, 0])
add("avg 2-D dilated asymmetric", "avg", (1, 2, 7, 8), [2, 3], [1, 2], [2, 1], [1, 0], [0, 2])
add("avg 2-D dilated asymmetric include-pad", "avg", (1, 2, 7, 8), [2, 3], [1, 2], [2, 1], [1, 0], [0, 2], include=True)
add("avg 1-D asymmetric", "avg", (2, 2, 9), [4], [3], [1], [0], [3])

with open(OUT, "w") as f:
    json.dump({"generator": "tests/golden/gen_pool_nd.py", "torch": torch.__version__, "cases": cases}, f,
              separators=(",", ":"))
print(f"wrote {len(cases)} cases to {OUT}")
