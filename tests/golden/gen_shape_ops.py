#!/usr/bin/python3
"""Golden data for the graph-level shape ops (tests/runtime/shape_ops_test.cpp, lowerings in
src/runtime/ops/shape_ops.cpp).

Run with the system Python (NumPy, PyTorch 1.13) from anywhere:
    /usr/bin/python3 tests/golden/gen_shape_ops.py
Writes tests/golden/data/shape_ops.json.

Each case is one graph node: op, attrs, inputs (dtype, shape, values) and the expected outputs
(one per node output; shape.split has several). Values are small integers, exact in every dtype,
so the test compares exactly. Expected outputs come from NumPy indexing (reshape, transpose,
concatenate, split, slice objects) and, for nearest upsampling, from torch.nn.functional.interpolate
on a float32 index tensor.
"""

import os

import numpy as np
import torch
import torch.nn.functional as F

from philox_golden import write_json

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shape_ops.json")
RNG = np.random.default_rng(20241101)
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def tensor(shape, dtype):
    """Small integers, exact in every dtype: i4 in [-8, 7], unsigned >= 0, others in [-100, 100)."""
    lo, hi = {"i4": (-8, 8), "u8": (0, 200)}.get(dtype, (-100, 100))
    return RNG.integers(lo, hi, size=shape).astype(np.float64)


def encode(dtype, a):
    a = np.asarray(a, dtype=np.float64)
    return {"dtype": dtype, "shape": list(a.shape), "values": [float(v) for v in a.ravel()]}


CASES = []


def case(name, op, dtype, inputs, outputs, attrs=None):
    CASES.append({"name": name, "op": op, "attrs": attrs or {},
                  "inputs": [encode(dtype, x) for x in inputs],
                  "outputs": [encode(dtype, y) for y in outputs]})


def gen_reshape():
    for dtype, shape, spec in [("f32", [2, 3, 4], [4, -1]), ("f64", [2, 3, 4], [0, -1]),
                               ("i32", [2, 3, 4], [-1]), ("bf16", [2, 3, 4], [0, 0, 2, 2]),
                               ("i4", [6], [3, -1, 1]), ("u8", [2, 0, 3], [0, -1]),
                               ("f16", [], [1, 1])]:
        x = tensor(shape, dtype)
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(spec)]
        case(f"reshape {dtype} {shape} {spec}", "shape.reshape", dtype, [x], [x.reshape(target)],
             {"shape": spec})


def gen_transpose():
    for dtype, shape, perm in [("f32", [2, 3, 4], []), ("i64", [2, 3, 4], [1, 0, 2]),
                               ("bf16", [3, 5], []), ("f64", [2, 3, 4, 2], [-1, 0, 2, 1]),
                               ("i4", [3, 4], [1, 0]), ("f16", [4], [])]:
        x = tensor(shape, dtype)
        attrs = {"perm": perm} if perm else {}
        case(f"transpose {dtype} {shape} {perm}", "shape.transpose", dtype, [x],
             [np.transpose(x, perm or None)], attrs)


def gen_concat():
    # Three inputs, sizes differing along the axis, on every axis of a rank-3 tensor.
    base = [2, 3, 4]
    for dtype, axis in [("f32", -2), ("f64", 0), ("i32", 2), ("bf16", -1), ("i8", 1)]:
        xs = []
        for k in (1, 2, 3):
            shape = list(base)
            shape[axis] = k
            xs.append(tensor(shape, dtype))
        case(f"concat {dtype} axis {axis}", "shape.concat", dtype, xs,
             [np.concatenate(xs, axis=axis)], {"axis": axis})


def gen_split():
    for dtype, shape, axis, sizes, count, outputs in [
            ("f32", [2, 4, 3], 1, [1, 3], 0, 2), ("f64", [2, 3, 6], -1, [], 3, 3),
            ("i32", [6, 2], 0, [], 0, 3), ("bf16", [2, 5, 2], -2, [2, 0, 3], 0, 3),
            ("f16", [4, 2, 3], 0, [], 0, 1)]:
        x = tensor(shape, dtype)
        parts = sizes or [shape[axis] // (count or outputs)] * (count or outputs)
        attrs = {"axis": axis}
        if sizes:
            attrs["sizes"] = sizes
        if count:
            attrs["count"] = count
        ys = np.split(x, np.cumsum(parts)[:-1], axis=axis)
        case(f"split {dtype} {shape} axis {axis} sizes {sizes} count {count}", "shape.split", dtype,
             [x], ys, attrs)


def nearest_indices(n_in, n_out=None, scale=None):
    """torch's nearest index per output position, from a float32 NCHW tensor with 3 channels."""
    src = torch.arange(n_in, dtype=torch.float32).reshape(1, 1, 1, n_in).repeat(1, 3, 1, 1)
    if scale is not None:
        out = F.interpolate(src, scale_factor=(1.0, scale), mode="nearest")
    else:
        out = F.interpolate(src, size=(1, n_out), mode="nearest")
    return out[0, 0, 0].numpy().astype(np.int64)


def gen_upsample():
    # (dtype, shape, attrs): integer and fractional scales, explicit sizes, one way per axis.
    for dtype, shape, attrs in [("f32", [2, 3, 2, 3], {"scale_h": 2.0, "scale_w": 2.0}),
                                ("f64", [1, 2, 4, 5], {"scale_h": 1.5, "scale_w": 0.5}),
                                ("i32", [1, 3, 3, 2], {"out_h": 5, "out_w": 7}),
                                ("bf16", [2, 2, 4, 3], {"scale_h": 0.5, "out_w": 4}),
                                ("u8", [1, 3, 2, 2], {"out_h": 3, "scale_w": 3.0})]:
        x = tensor(shape, dtype)
        h, w = shape[2], shape[3]
        rows = nearest_indices(h, attrs.get("out_h"), attrs.get("scale_h"))
        cols = nearest_indices(w, attrs.get("out_w"), attrs.get("scale_w"))
        y = x[:, :, rows][:, :, :, cols]
        case(f"upsample {dtype} {shape} {attrs}", "shape.upsample_nearest2d", dtype, [x], [y], attrs)


def gen_heads():
    for dtype, (b, s, h, d) in [("f32", (2, 3, 4, 2)), ("bf16", (1, 5, 2, 3)), ("i16", (2, 1, 3, 1))]:
        x = tensor([b, s, h * d], dtype)
        heads = x.reshape(b, s, h, d).transpose(0, 2, 1, 3)
        case(f"view_as_heads {dtype} {[b, s, h * d]} h{h}", "shape.view_as_heads", dtype, [x], [heads],
             {"num_heads": h})
        case(f"merge_heads {dtype} {[b, h, s, d]}", "shape.merge_heads", dtype, [heads], [x])


def gen_last_token():
    for dtype, shape in [("f32", [2, 3, 4]), ("f64", [2, 2, 3, 2]), ("i32", [3, 4]), ("bf16", [1, 1, 5])]:
        x = tensor(shape, dtype)
        case(f"last_token {dtype} {shape}", "shape.last_token", dtype, [x], [x[..., -1, :]])


def gen_slice():
    # (dtype, shape, starts, ends, axes, steps): negative steps, negative and out-of-range bounds,
    # the default axes and steps, an empty result, "to the end" as INT64_MIN / INT64_MAX.
    for dtype, shape, starts, ends, axes, steps in [
            ("f32", [4, 5, 6], [-1], [INT64_MIN], [2], [-1]),
            ("f64", [4, 5, 6], [-1, 0], [-100, 10], [2, 0], [-2, 1]),
            ("i32", [4, 5, 6], [1, -4], [3, INT64_MAX], [], []),
            ("bf16", [4, 5, 6], [4, 1], [1, 3], [1, -3], [-1, 2]),
            ("f16", [4, 5, 6], [3], [1], [-1], []),
            ("i4", [7, 3], [10, 0], [-10, 3], [0, 1], [-3, 1]),
            ("f32", [3, 4], [0, 5], [3, -9], [0, 1], [1, -2])]:
        x = tensor(shape, dtype)
        index = [slice(None)] * len(shape)
        for k, start in enumerate(starts):
            axis = (axes[k] if axes else k) % len(shape)
            index[axis] = slice(start, ends[k], steps[k] if steps else 1)
        attrs = {"starts": starts, "ends": ends}
        if axes:
            attrs["axes"] = axes
        if steps:
            attrs["steps"] = steps
        case(f"slice {dtype} {shape} {starts}:{ends}:{steps} axes {axes}", "shape.slice", dtype, [x],
             [x[tuple(index)]], attrs)


def main():
    gen_reshape()
    gen_transpose()
    gen_concat()
    gen_split()
    gen_upsample()
    gen_heads()
    gen_last_token()
    gen_slice()
    write_json(OUT, {"generator": "tests/golden/gen_shape_ops.py", "cases": CASES})


if __name__ == "__main__":
    main()
