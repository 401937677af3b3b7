#!/usr/bin/python3
"""Golden data for the graph-level attention, masking, positional, embedding, convolution,
pooling and projection ops (tests/runtime/nn_ops_test.cpp, lowerings in
src/runtime/ops/nn_ops.cpp).

Run with NumPy and PyTorch (1.13 or 2.x; a throwaway venv where the system has no torch):
    /usr/bin/python3 tests/golden/gen_nn_ops.py
Writes tests/golden/data/nn_ops.json.

Each case is one graph node: op, attrs, inputs (dtype, shape, values) and the expected value of
each output, named, in the op's output order. Inputs are drawn from a fixed seed and rounded to
their storage dtype with torch (round to nearest even); expected values are computed in float64
from those rounded inputs by PyTorch (F.conv*, F.*pool2d, F.linear, F.embedding,
F.embedding_bag) or by the explicit NumPy formulas below (attention, masks, ALiBi, GPT-J
interleaved RoPE), never by the code under test.

An output may carry "mag": per element, the sum of the absolute values of the terms that make it
(for ops that round twice, e.g. a matmul and then a bias add); the test scales its relative
tolerance by max(|want|, mag).
"""

import os

import numpy as np
import torch
import torch.nn.functional as F

from philox_golden import write_json

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nn_ops.json")
TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
RNG = np.random.default_rng(20241001)


def rounded(values, dtype):
    """float64 values rounded (RNE) to the storage dtype, as float64."""
    if dtype == "i32":
        return np.asarray(values, dtype=np.float64)
    t = torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64)
    return t.to(TORCH[dtype]).to(torch.float64).numpy()


def tensor(dtype, shape, lo=-2.0, hi=2.0):
    """A random input rounded to dtype, as a float64 array of the given shape."""
    n = int(np.prod(shape, dtype=np.int64))
    return rounded(RNG.uniform(lo, hi, n), dtype).reshape(shape)


def ids(shape, vocab):
    return RNG.integers(0, vocab, size=shape).astype(np.float64)


def encode(dtype, a, mag=None):
    a = np.asarray(a, dtype=np.float64)
    assert np.all(np.isfinite(a)), "goldens hold finite values only"
    out = {"dtype": dtype, "shape": list(a.shape), "values": [float(v) for v in a.ravel()]}
    if mag is not None:
        out["mag"] = [float(v) for v in np.asarray(mag, dtype=np.float64).ravel()]
    return out


CASES = []


def case(name, op, inputs, outputs, attrs=None):
    """inputs: list of (dtype, array); outputs: {name: (dtype, array[, mag])}."""
    CASES.append({
        "name": name,
        "op": op,
        "attrs": attrs or {},
        "inputs": [encode(*i) for i in inputs],
        "outputs": [dict(encode(*v), name=k) for k, v in outputs.items()],
    })


def t64(a):
    return torch.tensor(a, dtype=torch.float64)


# ---- attention --------------------------------------------------------------------------------------
def attend(q, k, v, causal=False, window=0, slope=0.0):
    """One head: softmax(q k^T / sqrt(d) + bias) v over the visible keys (bottom-right aligned:
    query i sits at p = i + Sk - Sq); a query that sees no key gets zeros."""
    sq, sk = q.shape[0], k.shape[0]
    out = np.zeros((sq, v.shape[1]))
    for i in range(sq):
        p = i + sk - sq
        j = np.arange(sk)
        visible = np.ones(sk, dtype=bool)
        if causal or window > 0:
            visible &= j <= p
        if window > 0:
            visible &= j > p - window
        if not visible.any():
            continue
        s = (k[visible] @ q[i]) / np.sqrt(q.shape[1]) + slope * (j[visible] - p)
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ v[visible]
    return out


def attend_batched(q, k, v, causal):
    """q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv]."""
    lead = q.shape[:-2]
    qf, kf, vf = (x.reshape((-1,) + x.shape[-2:]) for x in (q, k, v))
    out = np.stack([attend(qf[b], kf[b], vf[b], causal) for b in range(qf.shape[0])])
    return out.reshape(lead + out.shape[-2:])


def attend_heads(q, k, v, causal=False, window=0, alibi=0.0):
    """q [B, H, Sq, D], k/v [B, KV, Sk, D]; head h uses KV head h // (H / KV) and ALiBi slope
    alibi^(h+1)."""
    b_, h_ = q.shape[:2]
    group = h_ // k.shape[1]
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    for b in range(b_):
        for h in range(h_):
            slope = alibi ** (h + 1) if alibi > 0 else 0.0
            out[b, h] = attend(q[b, h], k[b, h // group], v[b, h // group], causal, window, slope)
    return out


def gen_attention():
    for dtype, sq, sk, causal in [("f32", [2, 3, 4, 5], [2, 3, 6, 5], False),
                                  ("f32", [2, 5, 4], [2, 3, 4], True),
                                  ("bf16", [3, 4], [5, 4], True),
                                  ("f64", [2, 2, 3, 4], [2, 2, 6, 4], True)]:
        sv = sk[:-1] + [sk[-1] + 1]
        q, k, v = tensor(dtype, sq), tensor(dtype, sk), tensor(dtype, sv)
        case(f"sdpa {dtype} {sq} {sk} causal={causal}", "attention.sdpa",
             [(dtype, q), (dtype, k), (dtype, v)], {"y": (dtype, attend_batched(q, k, v, causal))},
             {"causal": causal})

    # (op, dtype, B, H, KV, Sq, Sk, D, attrs)
    heads = [
        ("attention.mqa", "f32", 2, 4, 1, 3, 5, 8, {"causal": False}),
        ("attention.mqa", "f16", 1, 2, 1, 4, 4, 4, {"causal": True}),
        ("attention.gqa", "f32", 2, 4, 2, 5, 5, 4, {"causal": True}),
        ("attention.gqa", "f64", 1, 4, 2, 3, 6, 4, {"causal": True, "window": 2, "alibi_slope": 0.5}),
        ("attention.gqa", "bf16", 1, 6, 3, 2, 3, 2, {}),
        ("attention.sliding_window", "f32", 1, 2, 2, 6, 6, 4, {"window": 3}),
        ("attention.sliding_window", "f64", 2, 2, 1, 4, 6, 2, {"window": 2}),
    ]
    for op, dtype, b, h, kv, sq, sk, d, attrs in heads:
        q = tensor(dtype, [b, h, sq, d])
        k, v = tensor(dtype, [b, kv, sk, d]), tensor(dtype, [b, kv, sk, d])
        full = dict(attrs)
        if op != "attention.sliding_window":
            full.update({"num_heads": h, "head_dim": d})
        if op == "attention.gqa":
            full["num_kv_heads"] = kv
        window = attrs.get("window", 512 if op == "attention.sliding_window" else 0)
        causal = attrs.get("causal", False) or op == "attention.sliding_window"
        y = attend_heads(q, k, v, causal, window, attrs.get("alibi_slope", 0.0))
        case(f"{op} {dtype} B{b} H{h} KV{kv} Sq{sq} Sk{sk} D{d}", op,
             [(dtype, q), (dtype, k), (dtype, v)], {"y": (dtype, y)}, full)


# ---- masking and positional -------------------------------------------------------------------------
def gen_masking():
    for dtype, sl, sm in [("f32", [2, 3, 4], [3, 4]), ("f32", [2, 3, 4], [2, 1, 4]),
                          ("f16", [3, 5], [5]), ("bf16", [2, 3], [2, 3])]:
        x, m = tensor(dtype, sl), tensor(dtype, sm)
        case(f"masking.apply {dtype} {sl} {sm}", "masking.apply", [(dtype, x), (dtype, m)],
             {"y": (dtype, x + m)})


def alibi(scores, slope):
    """scores - slope (p - k) for k <= p (p = q + Sk - Sq); later keys unchanged."""
    sq, sk = scores.shape[-2:]
    p = np.arange(sq)[:, None] + sk - sq
    kk = np.arange(sk)[None, :]
    return np.where(kk <= p, scores - slope * (p - kk), scores)


def rope(x, base, start):
    """GPT-J rotate_every_two over x [..., S, H, D]: pair (2i, 2i+1) at position s + start turns
    by (s + start) base^(-2i/D)."""
    s, d = x.shape[-3], x.shape[-1]
    pos = np.arange(s, dtype=np.float64) + start
    theta = pos[:, None] * base ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # [S, D/2]
    cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]              # [S, 1, D/2]
    return rotate_pairs(x, cos, sin)


def rotate_pairs(x, cos, sin):
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def gen_positional():
    for dtype, shape, base, start in [("f32", [2, 5, 3, 8], 10000.0, 0), ("bf16", [4, 2, 6], 500.0, 3),
                                      ("f64", [2, 2, 3, 2, 4], 10000.0, 7)]:
        x = tensor(dtype, shape)
        attrs = {"head_dim": shape[-1], "base": base, "position_start": start}
        case(f"rope {dtype} {shape}", "positional.rope", [(dtype, x)], {"y": (dtype, rope(x, base, start))}, attrs)
    for dtype, shape, slope in [("f32", [2, 3, 4, 5], 0.25), ("f16", [5, 3], 0.5)]:
        s = tensor(dtype, shape)
        case(f"alibi {dtype} {shape}", "positional.alibi", [(dtype, s), (dtype, np.array([slope]))],
             {"y": (dtype, alibi(s, slope))})
    for dtype, shape in [("f32", [3, 4, 6]), ("f64", [6])]:
        h = shape[-1] // 2
        x = tensor(dtype, shape)
        theta = RNG.uniform(-3.0, 3.0, h)
        cos, sin = rounded(np.cos(theta), dtype), rounded(np.sin(theta), dtype)
        case(f"rope_pairs {dtype} {shape}", "positional.rope_pairs", [(dtype, x), (dtype, cos), (dtype, sin)],
             {"y": (dtype, rotate_pairs(x, cos, sin))})


# ---- embedding ---------------------------------------------------------------------------------------
def gen_embedding():
    for dtype, shape, vocab, dim in [("f32", [2, 3], 7, 4), ("bf16", [5], 5, 3), ("f64", [], 4, 2)]:
        i, table = ids(shape, vocab), tensor(dtype, [vocab, dim])
        y = F.embedding(torch.tensor(i, dtype=torch.long), t64(table)).numpy()
        case(f"embedding.token {dtype} {shape}", "embedding.token", [("i32", i), (dtype, table)],
             {"y": (dtype, y)}, {"vocab_size": vocab, "d_model": dim} if dtype == "f32" else {})
    for dtype, n, offsets, vocab, dim in [("f32", 7, [0, 2, 2, 5], 6, 4), ("f16", 4, [0, 3], 5, 3)]:
        i, table = ids([n], vocab), tensor(dtype, [vocab, dim])
        y = F.embedding_bag(torch.tensor(i, dtype=torch.long), t64(table),
                            torch.tensor(offsets, dtype=torch.long), mode="sum").numpy()
        case(f"embedding.bag {dtype} n{n} bags{len(offsets)}", "embedding.bag",
             [("i32", i), ("i32", np.array(offsets, dtype=np.float64)), (dtype, table)], {"y": (dtype, y)})


# ---- convolution and pooling -------------------------------------------------------------------------
def gen_convolution():
    for dtype, x, w, attrs in [
            ("f32", [2, 3, 10], [4, 3, 3], {"stride": 2, "padding": 1, "dilation": 2}),
            ("f64", [1, 2, 5], [3, 2, 2], {})]:
        xv, wv, bv = tensor(dtype, x), tensor(dtype, w), tensor(dtype, [w[0]])
        y = F.conv1d(t64(xv), t64(wv), t64(bv), attrs.get("stride", 1), attrs.get("padding", 0),
                     attrs.get("dilation", 1)).numpy()
        case(f"conv1d {dtype} {x} {w}", "convolution.conv1d", [(dtype, xv), (dtype, wv), (dtype, bv)],
             {"y": (dtype, y)}, attrs)
    for dtype, x, w, s, p, d in [("f32", [2, 3, 7, 6], [4, 3, 3, 2], (2, 1), (1, 0), (1, 2)),
                                 ("f16", [1, 2, 4, 4], [2, 2, 2, 2], (1, 1), (0, 1), (1, 1))]:
        xv, wv, bv = tensor(dtype, x), tensor(dtype, w), tensor(dtype, [w[0]])
        y = F.conv2d(t64(xv), t64(wv), t64(bv), s, p, d).numpy()
        attrs = {"stride_h": s[0], "stride_w": s[1], "pad_h": p[0], "pad_w": p[1], "dil_h": d[0], "dil_w": d[1]}
        case(f"conv2d {dtype} {x} {w}", "convolution.conv2d", [(dtype, xv), (dtype, wv), (dtype, bv)],
             {"y": (dtype, y)}, attrs)
    for dtype, x, w, s, p, d in [("f32", [1, 2, 5, 4, 6], [3, 2, 2, 3, 2], (1, 2, 1), (1, 0, 1), (2, 1, 1)),
                                 ("bf16", [2, 1, 3, 3, 3], [2, 1, 2, 2, 2], (1, 1, 1), (0, 0, 0), (1, 1, 1))]:
        xv, wv, bv = tensor(dtype, x), tensor(dtype, w), tensor(dtype, [w[0]])
        y = F.conv3d(t64(xv), t64(wv), t64(bv), s, p, d).numpy()
        attrs = {}
        for i, ax in enumerate("dhw"):
            attrs.update({f"stride_{ax}": s[i], f"pad_{ax}": p[i], f"dil_{ax}": d[i]})
        case(f"conv3d {dtype} {x} {w}", "convolution.conv3d", [(dtype, xv), (dtype, wv), (dtype, bv)],
             {"y": (dtype, y)}, attrs)
    for dtype, x, w, s, p, d, op in [("f32", [2, 3, 4, 5], [3, 2, 3, 3], (2, 2), (1, 0), (1, 1), (1, 0)),
                                     ("f64", [1, 2, 3, 3], [2, 3, 2, 3], (1, 2), (0, 1), (2, 1), (1, 1))]:
        xv, wv, bv = tensor(dtype, x), tensor(dtype, w), tensor(dtype, [w[1]])
        y = F.conv_transpose2d(t64(xv), t64(wv), t64(bv), s, p, op, 1, d).numpy()
        attrs = {"stride_h": s[0], "stride_w": s[1], "pad_h": p[0], "pad_w": p[1], "dil_h": d[0], "dil_w": d[1],
                 "out_pad_h": op[0], "out_pad_w": op[1]}
        case(f"conv_transpose2d {dtype} {x} {w}", "convolution.conv_transpose2d",
             [(dtype, xv), (dtype, wv), (dtype, bv)], {"y": (dtype, y)}, attrs)


def gen_pooling():
    for dtype, x, k, s, p in [("f32", [2, 3, 7, 8], (3, 2), (2, 2), (1, 1)), ("f16", [1, 2, 4, 5], (2, 2), (1, 2), (0, 1)),
                              ("bf16", [1, 1, 5, 5], (3, 3), (1, 1), (1, 0))]:
        xv = tensor(dtype, x)
        attrs = {"kernel_h": k[0], "kernel_w": k[1], "stride_h": s[0], "stride_w": s[1], "pad_h": p[0], "pad_w": p[1]}
        ymax = F.max_pool2d(t64(xv), k, s, p).numpy()
        yavg = F.avg_pool2d(t64(xv), k, s, p, count_include_pad=False).numpy()
        case(f"max_pool2d {dtype} {x}", "pooling.max_pool2d", [(dtype, xv)], {"y": (dtype, ymax)}, attrs)
        case(f"avg_pool2d {dtype} {x}", "pooling.avg_pool2d", [(dtype, xv)], {"y": (dtype, yavg)}, attrs)
    for dtype, x, out in [("f32", [2, 3, 7, 5], (3, 7)), ("f64", [1, 2, 6, 6], (4, 2))]:
        xv = tensor(dtype, x)
        attrs = {"out_h": out[0], "out_w": out[1]}
        case(f"adaptive_avg_pool2d {dtype} {x}", "pooling.adaptive_avg_pool2d", [(dtype, xv)],
             {"y": (dtype, F.adaptive_avg_pool2d(t64(xv), out).numpy())}, attrs)
        case(f"adaptive_max_pool2d {dtype} {x}", "pooling.adaptive_max_pool2d", [(dtype, xv)],
             {"y": (dtype, F.adaptive_max_pool2d(t64(xv), out).numpy())}, attrs)


# ---- projection ----------------------------------------------------------------------------------------
def linear(x, w, b):
    """F.linear and the magnitude of its terms (|x| |W|^T + |b|)."""
    y = F.linear(t64(x), t64(w), None if b is None else t64(b)).numpy()
    mag = np.abs(x) @ np.abs(w).T + (0.0 if b is None else np.abs(b))
    return y, mag


def gen_projection():
    for dtype, x, w, bias in [("f32", [2, 3, 5], [4, 5], True), ("f32", [5], [3, 5], False),
                              ("bf16", [3, 4], [2, 4], True), ("f64", [2, 2, 2, 3], [4, 3], True)]:
        xv, wv = tensor(dtype, x), tensor(dtype, w)
        bv = tensor(dtype, [w[0]]) if bias else None
        y, mag = linear(xv, wv, bv)
        inputs = [(dtype, xv), (dtype, wv)] + ([(dtype, bv)] if bias else [])
        attrs = {"in_features": w[1], "out_features": w[0]} if dtype == "f64" else {}
        case(f"linear {dtype} {x} {w} bias={bias}", "projection.linear", inputs, {"y": (dtype, y, mag)}, attrs)
    for dtype, x, d, bias in [("f32", [2, 3, 5], 2, True), ("f16", [4, 6], 3, False), ("f64", [3], 2, True)]:
        din = x[-1]
        xv, wv = tensor(dtype, x), tensor(dtype, [3 * d, din])
        bv = tensor(dtype, [3 * d]) if bias else None
        y, mag = linear(xv, wv, bv)
        outs = {name: (dtype, y[..., i * d:(i + 1) * d], mag[..., i * d:(i + 1) * d])
                for i, name in enumerate(["q", "k", "v"])}
        inputs = [(dtype, xv), (dtype, wv)] + ([(dtype, bv)] if bias else [])
        attrs = {"d_in": din, "d_q": d, "d_k": d, "d_v": d} if dtype == "f32" else {}
        case(f"fused_qkv {dtype} {x} d{d} bias={bias}", "projection.fused_qkv", inputs, outs, attrs)


# ---- N-d pooling (PoolNd) ------------------------------------------------------------------------------
def gen_pooling_nd():
    x = tensor("f32", [1, 2, 4, 5, 6])
    y = F.max_pool3d(t64(x), (2, 2, 2), (1, 2, 2), (1, 0, 1), (2, 1, 1), ceil_mode=True).numpy()
    case("max_pool f32 3-D dilated ceil", "pooling.max_pool", [("f32", x)], {"y": ("f32", y)},
         {"kernel": [2, 2, 2], "strides": [1, 2, 2], "dilations": [2, 1, 1], "pads": [1, 0, 1, 1, 0, 1],
          "ceil_mode": True})
    x = RNG.integers(-1000, 1000, size=(2, 2, 5, 6)).astype(np.float64)
    y = F.max_pool2d(t64(x), (3, 2), (2, 2), (1, 0)).numpy()
    case("max_pool i32 2-D", "pooling.max_pool", [("i32", x)], {"y": ("i32", y)},
         {"kernel": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 0]})
    x = tensor("f64", [2, 3, 5, 4])
    y, idx = F.max_pool2d(t64(x), (2, 2), (2, 1), (1, 1), return_indices=True)
    plane = np.arange(6).reshape(2, 3, 1, 1) * (5 * 4)
    case("max_pool_with_indices f64 2-D over the tensor", "pooling.max_pool_with_indices", [("f64", x)],
         {"y": ("f64", y.numpy()), "indices": ("i64", idx.numpy() + plane)},
         {"kernel": [2, 2], "strides": [2, 1], "pads": [1, 1, 1, 1], "indices_over": "tensor"})
    x = tensor("f16", [1, 3, 9])
    y = F.avg_pool1d(t64(x), 4, 2, 2, ceil_mode=True, count_include_pad=True).numpy()
    case("avg_pool f16 1-D ceil include-pad", "pooling.avg_pool", [("f16", x)], {"y": ("f16", rounded(y, "f16"))},
         {"kernel": [4], "strides": [2], "pads": [2, 2], "ceil_mode": True, "count_include_pad": True})


def main():
    gen_attention()
    gen_masking()
    gen_positional()
    gen_embedding()
    gen_convolution()
    gen_pooling()
    gen_projection()
    gen_pooling_nd()
    write_json(OUT, {"generator": "tests/golden/gen_nn_ops.py", "cases": CASES})


if __name__ == "__main__":
    main()
