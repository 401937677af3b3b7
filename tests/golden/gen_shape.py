#!/usr/bin/python3
"""Golden data for the Shape surface (tests/cpu/reference/shape_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_shape.py

Every case draws its shape and values from a fixed seed. Values are drawn in the storage dtype
(floats rounded to f64/f32/f16/bf16 with torch; integers in the dtype's range: i8, i32, i4 in
[-8, 7], bool as 0/1) and the expected output is computed by NumPy (reshape, transpose,
concatenate, split, basic slicing, the head layouts as reshape + transpose, x[:, -1, :]) on arrays
of the storage dtype (bf16 held exactly in float64, i4 in int8), or by
torch.nn.functional.interpolate(mode='nearest') with size= and with scale_factor= (float32 index
rule for every dtype; see interpolate below). Shape ops only move elements, so the expected values
are exact. Files written to
tests/golden/data/:
    shape_layout.json        Reshape, Transpose
    shape_heads.json         ViewAsHeads, MergeHeads, LastToken
    shape_concat_split.json  Concat, Split
    shape_upsample.json      UpsampleNearest2D
    shape_slice.json         Slice
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20240605
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# Every golden method is run for each of these storage dtypes.
DTYPES = ["f32", "f64", "f16", "bf16", "i8", "i32", "i4", "bool"]
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

rng = np.random.default_rng(SEED)


def draw(dtype, shape):
    """Random values of `dtype` as a NumPy array holding them exactly."""
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if dtype in ("f64", "f32", "f16", "bf16"):
        torch_dtype = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
                       "bf16": torch.bfloat16}[dtype]
        values = torch.tensor(rng.uniform(-4.0, 4.0, n), dtype=torch.float64).to(torch_dtype)
        if dtype == "bf16":
            return values.to(torch.float64).numpy().reshape(shape)
        return values.numpy().reshape(shape)
    if dtype == "i8":
        return rng.integers(-128, 128, n, dtype=np.int8).reshape(shape)
    if dtype == "i32":
        return rng.integers(-(2**31), 2**31, n, dtype=np.int32).reshape(shape)
    if dtype == "i4":
        return rng.integers(-8, 8, n, dtype=np.int8).reshape(shape)
    if dtype == "bool":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    raise ValueError(dtype)


def values(a):
    """Row-major flat list of the values as JSON numbers (floats exact, bool as 0/1)."""
    flat = np.asarray(a).reshape(-1)
    if flat.dtype == np.bool_:
        return [int(v) for v in flat]
    if np.issubdtype(flat.dtype, np.integer):
        return [int(v) for v in flat]
    out = [float(v) for v in flat.astype(np.float64)]
    assert all(math.isfinite(v) for v in out)
    return out


def random_shape(rank, lo=0, hi=5):
    return [int(d) for d in rng.integers(lo, hi + 1, rank)]


def cycle_dtypes(count):
    return [DTYPES[i % len(DTYPES)] for i in range(count)]


# ---- Reshape, Transpose, heads layouts, LastToken ----

def reshape_cases():
    cases = []
    pairs = [([], [1]), ([1], []), ([1, 1], []), ([0], [0, 3]), ([2, 0, 3], [0]), ([6], [2, 3]),
             ([2, 3], [3, 2]), ([4, 3, 2], [2, 12]), ([5, 7], [35]), ([3, 1, 5], [1, 15, 1]),
             ([7], [7, 1]), ([2, 2, 2, 2], [16])]
    for i, (src, dst) in enumerate(pairs * 2):
        dtype = DTYPES[i % len(DTYPES)]
        x = draw(dtype, src)
        y = np.reshape(x, dst)
        cases.append({"dtype": dtype, "inShape": src, "outShape": dst, "x": values(x),
                      "y": values(y)})
    x = draw("i4", [65, 65])
    cases.append({"dtype": "i4", "inShape": [65, 65], "outShape": [5, 845], "x": values(x),
                  "y": values(np.reshape(x, [5, 845]))})
    return cases


def transpose_cases():
    cases = []
    fixed = [([], []), ([5], [0]), ([0], [0]), ([2, 3], [1, 0]), ([3, 0], [1, 0]),
             ([2, 3, 4], [2, 0, 1]), ([2, 3, 4], [0, 2, 1]), ([2, 3, 4], [1, 0, 2]),
             ([1, 4, 1, 3], [3, 1, 2, 0])]
    for i, (shape, perm) in enumerate(fixed):
        for dtype in (DTYPES[i % len(DTYPES)], DTYPES[(i + 3) % len(DTYPES)]):
            x = draw(dtype, shape)
            cases.append({"dtype": dtype, "shape": shape, "perm": perm, "x": values(x),
                          "y": values(np.transpose(x, perm))})
    for dtype in cycle_dtypes(40):
        rank = int(rng.integers(0, 6))
        shape = random_shape(rank, 0 if rng.random() < 0.15 else 1, 4)
        perm = [int(p) for p in rng.permutation(rank)]
        x = draw(dtype, shape)
        cases.append({"dtype": dtype, "shape": shape, "perm": perm, "x": values(x),
                      "y": values(np.transpose(x, perm))})
    for dtype, shape, perm in (("i8", [17, 13, 19], [2, 0, 1]), ("i4", [9, 8, 7, 9], [3, 1, 0, 2]),
                               ("bool", [65, 70], [1, 0])):
        x = draw(dtype, shape)
        cases.append({"dtype": dtype, "shape": shape, "perm": perm, "x": values(x),
                      "y": values(np.transpose(x, perm))})
    return cases


def heads_cases():
    """(B, S, H, D) with x [B, S, H*D] -> y [B, H, S, D] (ViewAsHeads; MergeHeads reads y -> x)."""
    cases = []
    dims = [(0, 3, 2, 2), (2, 0, 2, 2), (2, 3, 0, 2), (2, 3, 2, 0), (1, 1, 1, 1), (1, 5, 1, 3),
            (2, 3, 4, 1), (3, 1, 5, 2)]
    for dtype in cycle_dtypes(16):
        dims.append(tuple(int(v) for v in rng.integers(1, 5, 4)))
    for i, (b, s, h, d) in enumerate(dims):
        dtype = DTYPES[i % len(DTYPES)]
        x = draw(dtype, [b, s, h * d])
        y = x.reshape(b, s, h, d).transpose(0, 2, 1, 3)
        cases.append({"dtype": dtype, "dims": [b, s, h, d], "x": values(x), "y": values(y)})
    for dtype, (b, s, h, d) in (("i8", (2, 33, 4, 16)), ("bool", (1, 129, 8, 5))):
        x = draw(dtype, [b, s, h * d])
        y = x.reshape(b, s, h, d).transpose(0, 2, 1, 3)
        cases.append({"dtype": dtype, "dims": [b, s, h, d], "x": values(x), "y": values(y)})
    return cases


def last_token_cases():
    cases = []
    dims = [(0, 3, 4), (2, 3, 0), (0, 0, 0), (3, 0, 0), (1, 1, 1), (1, 7, 1), (2, 1, 5),
            (3, 4, 5)]
    for _ in range(16):
        dims.append(tuple(int(v) for v in rng.integers(1, 7, 3)))
    for i, (b, s, f) in enumerate(dims):
        dtype = DTYPES[i % len(DTYPES)]
        x = draw(dtype, [b, s, f])
        y = x[:, -1, :] if s > 0 else np.zeros((b, f), dtype=x.dtype)
        cases.append({"dtype": dtype, "dims": [b, s, f], "x": values(x), "y": values(y)})
    for dtype, (b, s, f) in (("bool", (1, 2, 4100)), ("i4", (2, 3, 700))):
        x = draw(dtype, [b, s, f])
        cases.append({"dtype": dtype, "dims": [b, s, f], "x": values(x),
                      "y": values(x[:, -1, :])})
    return cases


# ---- Concat, Split ----

def concat_cases():
    cases = []
    for i in range(48):
        dtype = DTYPES[i % len(DTYPES)]
        rank = int(rng.integers(1, 5))
        axis = int(rng.integers(0, rank))
        base = random_shape(rank, 0 if rng.random() < 0.1 else 1, 4)
        count = int(rng.integers(1, 5))
        shapes = []
        for _ in range(count):
            s = list(base)
            s[axis] = int(rng.integers(0, 4))
            shapes.append(s)
        xs = [draw(dtype, s) for s in shapes]
        y = np.concatenate(xs, axis=axis)
        cases.append({"dtype": dtype, "axis": axis, "shapes": shapes, "xs": [values(x) for x in xs],
                      "y": values(y)})
    for dtype, shapes, axis in (("i8", [[40, 30, 3], [40, 30, 2]], 2),
                                ("bool", [[10, 64], [30, 64], [25, 64]], 0),
                                ("i4", [[9, 100, 3], [9, 7, 3], [9, 70, 3]], 1)):
        xs = [draw(dtype, s) for s in shapes]
        cases.append({"dtype": dtype, "axis": axis, "shapes": shapes,
                      "xs": [values(x) for x in xs],
                      "y": values(np.concatenate(xs, axis=axis))})
    return cases


def split_cases():
    cases = []
    for i in range(48):
        dtype = DTYPES[i % len(DTYPES)]
        rank = int(rng.integers(1, 5))
        axis = int(rng.integers(0, rank))
        shape = random_shape(rank, 0 if rng.random() < 0.1 else 1, 4)
        count = int(rng.integers(1, 5))
        sizes = [0] * count
        for _ in range(shape[axis]):
            sizes[int(rng.integers(0, count))] += 1
        x = draw(dtype, shape)
        ys = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
        assert [y.shape[axis] for y in ys] == sizes
        cases.append({"dtype": dtype, "axis": axis, "shape": shape, "sizes": sizes,
                      "x": values(x), "ys": [values(y) for y in ys]})
    for dtype, shape, axis, sizes in (("i8", [30, 20, 9], 1, [5, 0, 15]),
                                      ("bool", [100, 50], 0, [33, 67]),
                                      ("i4", [7, 9, 80], 2, [1, 39, 40])):
        x = draw(dtype, shape)
        ys = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
        cases.append({"dtype": dtype, "axis": axis, "shape": shape, "sizes": sizes,
                      "x": values(x), "ys": [values(y) for y in ys]})
    return cases


# ---- UpsampleNearest2D ----

def interpolate(x, dtype, size=None, scale=None):
    """torch.nn.functional.interpolate(mode='nearest') as PyTorch computes it for a float32 NCHW
    tensor, applied to x of any dtype.

    PyTorch's nearest source index depends on the tensor dtype (float64 rounds the double product
    to float before the floor, bfloat16 computes the scale in bfloat16) and on the memory-format
    path (the channels-last kernel, which a C == 1 tensor also takes, short-circuits out == in and
    out == 2 * in). Backplane uses the float32 NCHW rule for every dtype, so the oracle runs
    interpolate on a float32 tensor of source positions with two channels (forcing the NCHW
    kernel) and gathers x with the positions it returns. For f32 inputs with C > 1 the result is
    also checked against interpolate on x itself."""
    b, c, ih, iw = x.shape
    positions = torch.arange(ih * iw, dtype=torch.float32).reshape(1, 1, ih, iw).repeat(1, 2, 1, 1)
    if size is not None:
        index = F.interpolate(positions, size=size, mode="nearest")
    else:
        index = F.interpolate(positions, scale_factor=scale, mode="nearest")
    index = index[0, 0].numpy().astype(np.int64)
    oh, ow = index.shape
    y = x.reshape(b * c, ih * iw)[:, index.reshape(-1)].reshape(b, c, oh, ow)
    if dtype == "f32" and c > 1:
        t = torch.from_numpy(np.ascontiguousarray(x))
        direct = (F.interpolate(t, size=size, mode="nearest") if size is not None
                  else F.interpolate(t, scale_factor=scale, mode="nearest"))
        assert np.array_equal(direct.numpy(), y)
    return y


def upsample_cases():
    cases = []

    def add(dtype, b, c, ih, iw, size=None, scale=None):
        x = draw(dtype, [b, c, ih, iw])
        if size is not None:
            y = interpolate(x, dtype, size=size)
            scale_h = scale_w = 0.0
            oh, ow = size
        else:
            scale_h, scale_w = scale
            y = interpolate(x, dtype, scale=scale)
            oh, ow = math.floor(ih * scale_h), math.floor(iw * scale_w)
        assert y.shape == (b, c, oh, ow)
        cases.append({"dtype": dtype, "dims": [b, c, ih, iw, oh, ow], "scaleH": scale_h,
                      "scaleW": scale_w, "x": values(x), "y": values(y)})

    # Integer and fractional factors, up- and down-sampling, given as sizes and as scales.
    sizes = [((1, 1), (1, 1)), ((1, 1), (3, 4)), ((2, 3), (4, 6)), ((2, 3), (6, 9)),
             ((3, 5), (5, 7)), ((4, 6), (2, 3)), ((5, 4), (3, 7)), ((3, 3), (3, 3)),
             ((7, 2), (10, 5)), ((2, 5), (2, 13))]
    scales = [(2.0, 2.0), (3.0, 1.0), (1.5, 2.5), (0.5, 0.5), (1.3, 0.7), (2.2, 1.75),
              (1.05, 1.1), (4.0, 0.34), (1 / 3, 2.0)]
    for i, ((ih, iw), (oh, ow)) in enumerate(sizes):
        for dtype in (DTYPES[i % len(DTYPES)], DTYPES[(i + 5) % len(DTYPES)]):
            add(dtype, int(rng.integers(1, 3)), int(rng.integers(1, 3)), ih, iw, size=(oh, ow))
    for i, (sh, sw) in enumerate(scales):
        for dtype in (DTYPES[(i + 2) % len(DTYPES)], DTYPES[(i + 7) % len(DTYPES)]):
            ih, iw = int(rng.integers(3, 8)), int(rng.integers(3, 8))
            if math.floor(ih * sh) == 0 or math.floor(iw * sw) == 0:
                ih, iw = 6, 6
            add(dtype, int(rng.integers(1, 3)), int(rng.integers(1, 3)), ih, iw, scale=(sh, sw))
    # Sizes where float32 index arithmetic differs from the exact rational floor(d * in / out),
    # and given scales with out == in or out == 2 * in (no shortcut: floor(d * float(1 / scale))).
    add("i8", 1, 1, 1, 52, scale=(1.0, 1.3))
    add("i8", 1, 1, 1, 195, size=(1, 385))
    add("i8", 1, 1, 1, 28, size=(1, 388))
    add("f32", 1, 2, 1, 14, scale=(1.0, 1.05))
    add("f32", 2, 2, 6, 1, scale=(1.1, 1.0))
    add("i8", 1, 1, 1, 300, scale=(1.0, 2.0000001))
    add("f32", 1, 3, 2, 6, scale=(1.0, 2.0000001))
    # Over 4096 output elements.
    add("i8", 1, 2, 20, 30, size=(50, 75))
    add("bool", 2, 1, 17, 13, scale=(2.5, 3.0))
    add("i4", 1, 3, 11, 16, scale=(4.0, 1.5))
    return cases


# ---- Slice ----

def slice_bound(n):
    """A start or end: in range, negative, out of range either way, or an int64 extreme."""
    r = rng.random()
    if r < 0.1:
        return INT64_MAX
    if r < 0.2:
        return INT64_MIN
    return int(rng.integers(-n - 3, n + 4))


def slice_cases():
    cases = []

    def add(dtype, shape, starts, ends, steps):
        x = draw(dtype, shape)
        y = x[tuple(slice(s, e, st) for s, e, st in zip(starts, ends, steps))]
        cases.append({"dtype": dtype, "shape": shape, "starts": starts, "ends": ends,
                      "steps": steps, "x": values(x), "y": values(np.asarray(y))})

    add("f32", [], [], [], [])
    add("i4", [], [], [], [])
    add("f64", [5], [1], [4], [1])
    add("f16", [5], [-1], [INT64_MIN], [-1])  # x[::-1] spelled with int64 extremes
    add("bf16", [5], [INT64_MIN], [INT64_MAX], [2])
    add("i8", [0, 3], [0, 0], [2, 3], [1, 1])
    add("i32", [4, 3], [10, 0], [20, 3], [1, 1])  # empty: start past the end
    add("bool", [6, 4], [-2, 3], [-7, -9], [-1, -2])
    add("f32", [7], [6], [0], [INT64_MIN])  # one element: the most negative step
    add("f32", [7], [0], [7], [INT64_MAX])  # one element: the largest step
    for i in range(60):
        dtype = DTYPES[i % len(DTYPES)]
        rank = int(rng.integers(0, 5))
        shape = random_shape(rank, 0 if rng.random() < 0.1 else 1, 6)
        steps = [int(rng.choice([1, 1, 2, 3, -1, -1, -2, -3, 7, -5])) for _ in range(rank)]
        starts = [slice_bound(n) for n in shape]
        ends = [slice_bound(n) for n in shape]
        add(dtype, shape, starts, ends, steps)
    add("i8", [20, 35, 6], [2, -1, 0], [INT64_MAX, INT64_MIN, 6], [1, -1, 1])
    add("bool", [65, 64], [0, 63], [65, -200], [1, -1])
    add("i4", [5, 30, 28], [4, 3, -3], [-7, 28, 1], [-1, 1, -1])
    return cases


def write(name, doc):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    meta = {"generator": "tests/golden/gen_shape.py", "seed": SEED, "numpy": np.__version__,
            "torch": torch.__version__}
    write("shape_layout.json", {"meta": meta, "reshape": reshape_cases(),
                                "transpose": transpose_cases()})
    write("shape_heads.json", {"meta": meta, "heads": heads_cases(),
                               "last_token": last_token_cases()})
    write("shape_concat_split.json", {"meta": meta, "concat": concat_cases(),
                                      "split": split_cases()})
    write("shape_upsample.json", {"meta": meta, "upsample": upsample_cases()})
    write("shape_slice.json", {"meta": meta, "slice": slice_cases()})


if __name__ == "__main__":
    main()
