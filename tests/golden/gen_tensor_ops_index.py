#!/usr/bin/python3
"""Golden data for the TensorOps index methods (tests/cpu/reference/tensor_ops_index_test.cpp).

Run from the repository root with NumPy only:
    /usr/bin/python3 tests/golden/gen_tensor_ops_index.py

Cases (TopK also with 37 columns, several vectors wide) drawn from a fixed seed in their storage dtype (f16 by numpy; integers in their own dtype):
    TopK             numpy.lexsort along axis 1 of [outer, axis, inner] with keys (NaN first for
                     largest / last for smallest, then the value descending / ascending, then the
                     index ascending), the first k kept
    ScatterElements  none: the updates assigned one by one in row-major order (the last write of a
                     duplicate index wins); add / mul: numpy.add.at / numpy.multiply.at (sequential,
                     one rounding per update, integers wrap)
    ScatterND        the same over index tuples: out[tuple(idx[n])] = / += / *= upd[n] in order
    GatherND         numpy advanced indexing x[b][tuple(idx[b, n])] per batch
Indices include negative ones (counted from the end). NaN and infinities are "nan", "inf", "-inf".
Output: tests/golden/data/tensor_ops_index.json
"""

import json
import math
import os

import numpy as np

SEED = 20261203
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tensor_ops_index.json")
rng = np.random.default_rng(SEED)

FLOAT_NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16}
INT_NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
          "u32": np.uint32}


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


def encs(a):
    return [enc(v) for v in np.asarray(a).ravel().tolist()]


def values(dtype, shape, kind="random"):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if dtype in FLOAT_NP:
        if kind == "ties":
            x = rng.integers(-2, 3, n).astype(np.float64)
            x[rng.random(n) < 0.2] = -0.0
            x[rng.random(n) < 0.15] = np.nan
        else:
            x = rng.normal(0, 2, n)
        return x.astype(FLOAT_NP[dtype]).reshape(shape)
    info = np.iinfo(INT_NP[dtype])
    if kind == "ties":
        x = rng.integers(max(info.min, -2), 3, n)
    else:
        x = rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64 if info.max < 2**63 else np.uint64)
    return x.astype(INT_NP[dtype]).reshape(shape)


def topk_cases():
    cases = []
    for dtype in ["f32", "f64", "f16", "i32", "u8", "i16"]:
        for (outer, axis, inner) in [(1, 6, 1), (2, 5, 3), (3, 9, 2), (1, 1, 4), (1, 5, 37)]:
            for kind in ["random", "ties"]:
                x = values(dtype, (outer, axis, inner), kind)
                for largest in [True, False]:
                    for k in sorted({1, min(3, axis), axis}) if inner < 37 else [3]:
                        vals = np.empty((outer, k, inner), dtype=x.dtype)
                        idxs = np.empty((outer, k, inner), dtype=np.int64)
                        for o in range(outer):
                            for j in range(inner):
                                col = x[o, :, j]
                                num = col.astype(np.float64)  # exact for these dtypes
                                nan = np.isnan(num)
                                filled = np.where(nan, 0.0, num)
                                pos = np.arange(axis)
                                if largest:
                                    order = np.lexsort((pos, -filled, ~nan))
                                else:
                                    order = np.lexsort((pos, filled, nan))
                                vals[o, :, j] = col[order[:k]]
                                idxs[o, :, j] = order[:k]
                        cases.append({"method": "TopK", "dtype": dtype, "shape": [outer, axis, inner], "k": k,
                                      "largest": largest, "x": encs(x), "values": encs(vals),
                                      "indices": idxs.ravel().tolist()})
    return cases


REDUCTIONS = ["none", "add", "mul"]


def scatter_elements_cases():
    cases = []
    for dtype in ["f32", "f64", "f16", "i32", "u8", "i64"]:
        for (outer, data_axis, upd_axis, inner) in [(1, 5, 3, 1), (2, 4, 6, 3), (3, 1, 2, 2), (1, 7, 7, 4)]:
            data = values(dtype, (outer, data_axis, inner))
            upd = values(dtype, (outer, upd_axis, inner))
            idx = rng.integers(-data_axis, data_axis, (outer, upd_axis, inner))
            for red in REDUCTIONS:
                out = data.copy()
                if red == "none":
                    for o in range(outer):
                        for k in range(upd_axis):
                            for j in range(inner):
                                out[o, idx[o, k, j], j] = upd[o, k, j]
                else:
                    o_i, _, j_i = np.meshgrid(np.arange(outer), np.arange(upd_axis), np.arange(inner), indexing="ij")
                    with np.errstate(all="ignore"):
                        (np.add if red == "add" else np.multiply).at(out, (o_i, np.where(idx < 0, idx + data_axis, idx), j_i), upd)
                cases.append({"method": "ScatterElements", "dtype": dtype, "shape": [outer, data_axis, inner],
                              "upd_axis": upd_axis, "reduction": red, "indices": idx.ravel().tolist(),
                              "data": encs(data), "updates": encs(upd), "want": encs(out)})
    return cases


def tuples(dims, depth, count):
    if depth == 0:
        return np.zeros((count, 0), dtype=np.int64)
    return np.stack([rng.integers(-dims[d], dims[d], count) for d in range(depth)], axis=-1).reshape(count, depth)


def scatter_nd_cases():
    cases = []
    for dtype in ["f32", "f16", "i32", "u8"]:
        for (dims, depth, count) in [([5], 1, 4), ([3, 4], 1, 5), ([3, 4], 2, 7), ([2, 3, 4], 2, 3), ([2, 3], 0, 2)]:
            data = values(dtype, dims)
            slice_shape = dims[depth:]
            upd = values(dtype, [count] + slice_shape)
            idx = tuples(dims, depth, count)
            for red in REDUCTIONS:
                out = data.copy()
                with np.errstate(all="ignore"):
                    for n in range(count):
                        at = tuple(int(v) for v in idx[n])
                        if red == "none":
                            out[at] = upd[n]
                        elif red == "add":
                            out[at] = out[at] + upd[n]
                        else:
                            out[at] = out[at] * upd[n]
                cases.append({"method": "ScatterND", "dtype": dtype, "dims": dims, "depth": depth, "count": count,
                              "reduction": red, "indices": idx.ravel().tolist(), "data": encs(data),
                              "updates": encs(upd), "want": encs(out)})
    return cases


def gather_nd_cases():
    cases = []
    for dtype in ["f32", "f16", "i64", "u8", "bool"]:
        for (batch, dims, depth, count) in [(1, [5], 1, 4), (1, [3, 4], 1, 5), (2, [3, 4], 2, 7), (3, [2, 3, 4], 2, 3),
                                            (2, [2, 3], 0, 2)]:
            x = values(dtype, [batch] + dims)
            idx = tuples(dims, depth, batch * count).reshape(batch, count, depth)
            out = np.stack([np.stack([x[b][tuple(int(v) for v in idx[b, n])] for n in range(count)])
                            for b in range(batch)])
            cases.append({"method": "GatherND", "dtype": dtype, "batch": batch, "dims": dims, "depth": depth,
                          "count": count, "indices": idx.ravel().tolist(), "x": encs(x), "want": encs(out)})
    return cases


def main():
    cases = topk_cases() + scatter_elements_cases() + scatter_nd_cases() + gather_nd_cases()
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_tensor_ops_index.py", "seed": SEED, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")
    print(f"{len(cases)} cases, {os.path.getsize(OUT)} bytes -> {OUT}")


if __name__ == "__main__":
    main()
