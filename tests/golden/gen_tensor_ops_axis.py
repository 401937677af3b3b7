#!/usr/bin/python3
"""Golden data for the TensorOps axis methods (tests/cpu/reference/tensor_ops_axis_test.cpp).

Run from the repository root with NumPy and PyTorch:
    /tmp/refvenv/bin/python tests/golden/gen_tensor_ops_axis.py

Every case is an [outer, axis, inner] tensor (Trilu: [batch, rows, cols]) drawn from a fixed seed
in its storage dtype (floats rounded with torch; bf16 held exactly in float64):
    ArgReduce       torch.argmax / torch.argmin(dim=1) (first NaN wins; first of ties); select_last
                    by flipping the axis (cases with select_last and NaN use the first-NaN rule,
                    checked against a plain loop)
    CumSum          numpy.cumsum along axis 1 in float64, rounded once to the storage dtype
                    (f16 by numpy; bf16 cases hold small integers, so every sum is exact);
                    integers in their own dtype (two's-complement wrap-around); exclusive and
                    reverse as ONNX CumSum (shift / flip)
    Trilu           torch.triu / torch.tril(diagonal=k)
    GatherElements  torch.gather(dim=1) after adding inAxis to negative indices
Values are JSON numbers; NaN and infinities are the strings "nan", "inf", "-inf".
Output: tests/golden/data/tensor_ops_axis.json
"""

import json
import math
import os

import numpy as np
import torch

SEED = 20261202
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tensor_ops_axis.json")
rng = np.random.default_rng(SEED)

FLOAT_TORCH = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
INT_NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32,
          "u64": np.uint64}


def enc(v):
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, (bool, np.bool_)):
        return 1 if v else 0
    return int(v)


def values(dtype, shape, kind):
    """Storage values as a float64 (floats, bool) or integer numpy array of `shape`."""
    n = int(np.prod(shape))
    if dtype in FLOAT_TORCH:
        if kind == "ties":
            x = rng.integers(-2, 3, n).astype(np.float64)
            x[rng.random(n) < 0.2] = -0.0
        elif kind == "nan":
            x = rng.integers(-2, 3, n).astype(np.float64)
            x[rng.random(n) < 0.15] = np.nan
            x[rng.random(n) < 0.05] = np.inf
        elif kind == "small":
            x = rng.integers(-8, 9, n).astype(np.float64)
        else:  # short decimal forms keep the file small; f64 cases still carry unrounded values
            x = np.round(rng.normal(0, 3, n) * 64) / 64 + (rng.normal(0, 1e-9, n) if dtype == "f64" else 0)
        t = torch.tensor(x).to(FLOAT_TORCH[dtype]).to(torch.float64)
        return t.numpy().reshape(shape)
    if dtype == "bool":
        return (rng.random(n) < 0.5).astype(np.float64).reshape(shape)
    info = np.iinfo(INT_NP[dtype])
    if kind == "ties":
        lo, hi = max(info.min, -2), 3
        return rng.integers(lo, hi, n).astype(INT_NP[dtype]).reshape(shape)
    if kind == "wrap":  # near the ends of the range: the sums wrap
        big = rng.integers(info.max // 2, info.max, n, dtype=INT_NP[dtype], endpoint=True)
        return big.reshape(shape)
    return rng.integers(info.min, info.max, n, dtype=INT_NP[dtype], endpoint=True).reshape(shape)


def as_torch(dtype, x):
    if dtype in FLOAT_TORCH:
        return torch.tensor(x).to(FLOAT_TORCH[dtype])
    if dtype == "bool":
        return torch.tensor(x != 0)
    if dtype in ("u32", "u64"):
        return None
    return torch.tensor(x)


def first_nan_arg(x, floating, is_max, last):
    """The reference rule on one [outer, axis, inner] array (a plain loop)."""
    outer, axis, inner = x.shape
    out = np.zeros((outer, inner), dtype=np.int64)
    for o in range(outer):
        for j in range(inner):
            col = [float(v) if floating else int(v) for v in x[o, :, j]]
            best, bi = col[0], 0
            if floating and math.isnan(best):
                continue
            for k in range(1, axis):
                v = col[k]
                if floating and math.isnan(v):
                    bi = k
                    break
                if (v > best if is_max else v < best) or (last and v == best):
                    best, bi = v, k
            out[o, j] = bi
    return out


def arg_cases():
    cases = []
    for dtype in ["f32", "f64", "f16", "bf16", "i32", "i64", "i8", "u8", "u64"]:
        floating = dtype in FLOAT_TORCH
        for shape in [(1, 7, 1), (2, 5, 3), (3, 1, 4), (1, 12, 1), (2, 6, 9)]:
            for kind in ["random", "ties", "nan"] if floating else ["random", "ties"]:
                x = values(dtype, shape, kind)
                runs = []
                for is_max in [True, False]:
                    for last in [False, True]:
                        want = first_nan_arg(x, floating, is_max, last)
                        t = as_torch(dtype, x)
                        if not last and t is not None:  # torch.argmax / argmin agree
                            got = (torch.argmax if is_max else torch.argmin)(t, dim=1).numpy()
                            assert (got == want).all(), (dtype, shape, kind, is_max)
                        if last and kind != "nan":  # numpy on the flipped axis agrees
                            f = np.argmax if is_max else np.argmin
                            assert (shape[1] - 1 - f(np.flip(x, axis=1), axis=1) == want).all(), (dtype, shape)
                        runs.append({"max": is_max, "last": last, "want": want.ravel().tolist()})
                cases.append({"method": "ArgReduce", "dtype": dtype, "shape": list(shape),
                              "x": [enc(v) for v in x.ravel().tolist()], "runs": runs})
    return cases


def round_to(dtype, x64):
    if dtype == "f64":
        return x64
    if dtype == "f32":
        return x64.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x64.astype(np.float16).astype(np.float64)  # one rounding from float64
    return torch.tensor(x64).to(torch.bfloat16).to(torch.float64).numpy()  # exact: small integers


def cumsum(dtype, x, exclusive, reverse):
    y = np.flip(x, axis=1) if reverse else x
    if dtype in FLOAT_TORCH:
        s = np.cumsum(y.astype(np.float64), axis=1)
        if exclusive:
            s = np.concatenate([np.zeros_like(s[:, :1]), s[:, :-1]], axis=1)
        s = round_to(dtype, s)
    else:
        s = np.cumsum(y, axis=1, dtype=y.dtype)  # wraps in the dtype
        if exclusive:
            s = np.concatenate([np.zeros_like(s[:, :1]), s[:, :-1]], axis=1)
    return np.flip(s, axis=1) if reverse else s


def cumsum_cases():
    cases = []
    for dtype in ["f32", "f64", "f16", "bf16", "i8", "i32", "i64", "u8", "u64"]:
        for shape in [(1, 9, 1), (2, 6, 3), (1, 1, 5), (2, 7, 5)]:
            kinds = ["small"] if dtype == "bf16" else (["random", "nan"] if dtype in FLOAT_TORCH else ["random", "wrap"])
            if dtype in ("i64", "u64"):
                kinds = ["wrap"] if shape[1] > 1 else []  # full-range 64-bit values are long in JSON
            for kind in kinds:
                x = values(dtype, shape, kind)
                if dtype in FLOAT_TORCH and kind == "random" and shape[1] > 1:
                    x[0, 0, 0] = -0.0  # numpy keeps a leading -0.0
                runs = []
                for exclusive in [False, True]:
                    for reverse in [False, True]:
                        with np.errstate(invalid="ignore", over="ignore"):
                            want = cumsum(dtype, x, exclusive, reverse)
                        runs.append({"exclusive": exclusive, "reverse": reverse,
                                     "want": [enc(v) for v in want.ravel().tolist()]})
                cases.append({"method": "CumSum", "dtype": dtype, "shape": list(shape),
                              "x": [enc(v) for v in x.ravel().tolist()], "runs": runs})
    return cases


def trilu_cases():
    cases = []
    for dtype in ["f32", "f16", "i64", "u8", "bool"]:
        for shape in [(1, 4, 5), (2, 5, 3), (1, 1, 9), (1, 9, 1), (1, 6, 6)]:
            x = values(dtype, shape, "random" if dtype in FLOAT_TORCH or dtype == "bool" else "ties")
            runs = []
            for k in [0, 1, -1, 2, -3, 7]:
                for upper in [True, False]:
                    t = as_torch(dtype, x)
                    y = (torch.triu if upper else torch.tril)(t, diagonal=k)
                    want = y.to(torch.float64).numpy() if dtype in FLOAT_TORCH or dtype == "bool" else y.numpy()
                    runs.append({"upper": upper, "k": k, "want": [enc(v) for v in want.ravel().tolist()]})
            cases.append({"method": "Trilu", "dtype": dtype, "shape": list(shape),
                          "x": [enc(v) for v in x.ravel().tolist()], "runs": runs})
    return cases


def gather_cases():
    cases = []
    for dtype in ["f32", "bf16", "i64", "i16", "bool"]:
        for (outer, in_axis, out_axis, inner) in [(1, 5, 3, 1), (2, 4, 6, 3), (3, 1, 2, 2), (1, 7, 7, 4)]:
            x = values(dtype, (outer, in_axis, inner), "random")
            idx = rng.integers(-in_axis, in_axis, (outer, out_axis, inner))
            t = as_torch(dtype, x)
            y = torch.gather(t, 1, torch.tensor(np.where(idx < 0, idx + in_axis, idx)))
            want = y.to(torch.float64).numpy() if dtype in FLOAT_TORCH or dtype == "bool" else y.numpy()
            cases.append({"method": "GatherElements", "dtype": dtype, "shape": [outer, in_axis, inner],
                          "out_axis": out_axis, "indices": idx.ravel().tolist(),
                          "x": [enc(v) for v in x.ravel().tolist()],
                          "want": [enc(v) for v in want.ravel().tolist()]})
    return cases


def main():
    cases = arg_cases() + cumsum_cases() + trilu_cases() + gather_cases()
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_tensor_ops_axis.py", "seed": SEED, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")
    print(f"{len(cases)} cases, {os.path.getsize(OUT)} bytes -> {OUT}")


if __name__ == "__main__":
    main()
