#!/usr/bin/python3
"""Golden data for the Spatial methods (tests/cpu/reference/spatial_test.cpp).

Run from the repository root with /usr/bin/python3 and NumPy only:
    /usr/bin/python3 tests/golden/gen_spatial.py

Inputs are drawn from a fixed seed and rounded to their storage dtype (f64, f32, f16, bf16); the
expected outputs are computed in float64 from those stored values:
    GridSample  a vectorised float64 NumPy implementation written here from the ONNX GridSample-16
                text and torch.nn.functional.grid_sample's documented algorithm (unnormalise,
                pad with numpy.fmod reflection, floor / numpy.rint / 4x4 cubic taps with
                A = -0.75, zero outside), every mode x padding x align_corners; grid points mix
                uniform values in [-1.3, 1.3] with points on a 1/32 lattice (exact taps,
                rounding ties for nearest)
    RoiAlign    a float64 NumPy implementation written here from the ONNX RoiAlign-16 text (the
                torchvision / Caffe2 algorithm): per bin a grid of sampling_ratio^2 (or adaptive
                ceil(roi / out)) points, each a bilinear sample (0 outside [-1, H] x [-1, W],
                clamped to the last pixel); avg: their mean; max: the max over the points of the
                largest of the four weighted corner terms (ONNX's definition)
Output: tests/golden/data/spatial.json
"""

import json
import math
import os

import numpy as np

SEED = 20261204
rng = np.random.default_rng(SEED)
DTYPES = ["f64", "f32", "f16", "bf16"]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "spatial.json")


def storage_round(values, dtype):
    """float64 -> the storage dtype -> float64 along the C++ path (double -> f32 -> f16 / bf16, each
    rounding to nearest even)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if dtype == "f64":
        return v.copy()
    f = v.astype(np.float32)
    if dtype == "f16":
        f = f.astype(np.float16).astype(np.float32)
    elif dtype == "bf16":
        bits = f.view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        f = bits.astype(np.uint32).view(np.float32)
    return f.astype(np.float64)


def values_list(a):
    """Exact float64 values (the stored inputs)."""
    flat = np.asarray(a, dtype=np.float64).ravel()
    assert np.all(np.isfinite(flat))
    return [float(v) for v in flat]


def expected(a, dtype):
    """The float64 oracle: all digits for f64, 10 significant ones (far below the tolerance) otherwise."""
    flat = np.asarray(a, dtype=np.float64).ravel()
    assert np.all(np.isfinite(flat))
    return [float(v) if dtype == "f64" else float("%.10g" % v) for v in flat]


def grid_points(shape):
    n = int(np.prod(shape))
    g = rng.uniform(-1.3, 1.3, n)
    lattice = rng.random(n) < 0.4
    g[lattice] = np.round(g[lattice] * 32.0) / 32.0
    return g.reshape(shape)


def unnormalize(g, size, align):
    return (g + 1.0) / 2.0 * (size - 1) if align else ((g + 1.0) * size - 1.0) / 2.0


def reflect(v, twice_low, twice_high):
    if twice_low == twice_high:
        return np.zeros_like(v)
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    v = np.abs(v - low)
    extra = np.fmod(v, span)
    flips = np.floor(v / span)
    return np.where(flips % 2 == 0, extra + low, span - extra + low)


def pad(v, size, padding, align):
    if padding == "border":
        return np.clip(v, 0, size - 1)
    if padding == "reflection":
        v = reflect(v, 0, 2 * (size - 1)) if align else reflect(v, -1, 2 * size - 1)
        return np.clip(v, 0, size - 1)
    return v


def taps(plane, ys, xs):
    """plane[ys, xs] where inside, 0 elsewhere (integral float coordinates)."""
    h, w = plane.shape
    inside = (xs >= 0) & (xs <= w - 1) & (ys >= 0) & (ys <= h - 1)
    yi = np.where(inside, ys, 0).astype(np.int64)
    xi = np.where(inside, xs, 0).astype(np.int64)
    return np.where(inside, plane[yi, xi], 0.0)


def cubic_weights(t):
    a = -0.75
    near = lambda s: ((a + 2) * s - (a + 3)) * s * s + 1  # noqa: E731
    far = lambda s: ((a * s - 5 * a) * s + 8 * a) * s - 4 * a  # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(x, grid, mode, padding, align):
    n, c, h, w = x.shape
    out = np.zeros((n, c, grid.shape[1], grid.shape[2]))
    for b in range(n):
        ux = unnormalize(grid[b, ..., 0], w, align)
        uy = unnormalize(grid[b, ..., 1], h, align)
        for ch in range(c):
            plane = x[b, ch]
            if mode == "bicubic":
                x0, y0 = np.floor(ux), np.floor(uy)
                wx, wy = cubic_weights(ux - x0), cubic_weights(uy - y0)
                acc = 0.0
                for i in range(4):
                    py = pad(y0 - 1 + i, h, padding, align)
                    row = sum(taps(plane, py, pad(x0 - 1 + j, w, padding, align)) * wx[j] for j in range(4))
                    acc = acc + row * wy[i]
                out[b, ch] = acc
                continue
            ix, iy = pad(ux, w, padding, align), pad(uy, h, padding, align)
            if mode == "nearest":
                out[b, ch] = taps(plane, np.rint(iy), np.rint(ix))
                continue
            x0, y0 = np.floor(ix), np.floor(iy)
            fx, fy = ix - x0, iy - y0
            out[b, ch] = (taps(plane, y0, x0) * (1 - fx) * (1 - fy) + taps(plane, y0, x0 + 1) * fx * (1 - fy) +
                          taps(plane, y0 + 1, x0) * (1 - fx) * fy + taps(plane, y0 + 1, x0 + 1) * fx * fy)
    return out


def grid_cases():
    """One case per (dtype, shape): x and grid once, the outputs of every mode x padding x align."""
    cases = []
    shapes = [(1, 1, 3, 2, 2, 4), (2, 2, 4, 5, 3, 4), (1, 1, 4, 4, 1, 19), (1, 1, 1, 1, 2, 3), (1, 1, 6, 1, 2, 3)]
    for dtype in DTYPES:
        for (n, c, h, w, ho, wo) in shapes:
            x = storage_round(rng.normal(0.0, 1.0, (n, c, h, w)), dtype).reshape(n, c, h, w)
            g = storage_round(grid_points((n, ho, wo, 2)), dtype).reshape(n, ho, wo, 2)
            results = []
            for mode in ["bilinear", "nearest", "bicubic"]:
                for padding in ["zeros", "border", "reflection"]:
                    for align in [False, True]:
                        results.append({"mode": mode, "padding": padding, "align_corners": align,
                                        "y": expected(grid_sample(x, g, mode, padding, align), dtype)})
            cases.append({"method": "GridSample", "dtype": dtype, "shape": [n, c, h, w], "out_hw": [ho, wo],
                          "x": values_list(x), "grid": values_list(g), "results": results})
    return cases


def bilinear_terms(plane, y, x):
    """The four weighted corner terms of one sample point (all zero outside the map)."""
    h, w = plane.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(4)
    y = max(y, 0.0)
    x = max(x, 0.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    return np.array([hy * hx * plane[y0, x0], hy * lx * plane[y0, x1], ly * hx * plane[y1, x0],
                     ly * lx * plane[y1, x1]])


def roi_align(x, rois, batch, mode, oh, ow, ratio, scale, half_pixel):
    r_count, c_count = rois.shape[0], x.shape[1]
    out = np.zeros((r_count, c_count, oh, ow))
    off = 0.5 if half_pixel else 0.0
    for r in range(r_count):
        x1, y1, x2, y2 = (rois[r] * scale - off).tolist()
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(math.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(math.ceil(rw / ow))
        gh, gw = max(gh, 0), max(gw, 0)
        for c in range(c_count):
            plane = x[batch[r], c]
            for ph in range(oh):
                for pw in range(ow):
                    terms = []
                    for iy in range(gh):
                        yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                            terms.append(bilinear_terms(plane, yy, xx))
                    if not terms:
                        out[r, c, ph, pw] = 0.0
                    elif mode == "avg":
                        out[r, c, ph, pw] = sum(t.sum() for t in terms) / max(gh * gw, 1)
                    else:
                        out[r, c, ph, pw] = max(t.max() for t in terms)
    return out


def roi_cases():
    cases = []
    configs = [  # (n, c, h, w, rois, oh, ow, ratio, scale)
        (1, 1, 10, 10, 3, 5, 5, 2, 1.0),
        (2, 3, 7, 9, 4, 2, 3, 0, 0.5),
        (1, 2, 6, 5, 3, 3, 2, 1, 1.0),
        (2, 1, 5, 8, 2, 1, 1, 0, 2.0),
    ]
    for dtype in DTYPES:
        for (n, c, h, w, r, oh, ow, ratio, scale) in configs:
            x = storage_round(rng.normal(0.0, 1.0, (n, c, h, w)), dtype).reshape(n, c, h, w)
            lo = rng.uniform(-2.0, 0.8, (r, 2)) * np.array([w, h]) / scale
            size = rng.uniform(0.2, 1.2, (r, 2)) * np.array([w, h]) / scale
            rois = np.concatenate([lo, lo + size], axis=1)
            rois[0, 2:] = rois[0, :2] + 0.25  # a roi smaller than a pixel
            rois = storage_round(np.round(rois * 8.0) / 8.0, dtype).reshape(r, 4)
            batch = rng.integers(0, n, r)
            for mode in ["avg", "max"]:
                for half_pixel in [True, False]:
                    y = roi_align(x, rois, batch, mode, oh, ow, ratio, scale, half_pixel)
                    cases.append({"method": "RoiAlign", "dtype": dtype, "mode": mode, "half_pixel": half_pixel,
                                  "shape": [n, c, h, w], "output": [oh, ow], "sampling_ratio": ratio,
                                  "spatial_scale": scale, "x": values_list(x),
                                  "rois": values_list(rois), "batch_indices": batch.tolist(),
                                  "y": expected(y, dtype)})
    return cases


if __name__ == "__main__":
    with open(OUT, "w") as f:
        json.dump({"seed": SEED, "cases": grid_cases() + roi_cases()}, f, separators=(",", ":"), allow_nan=False)
