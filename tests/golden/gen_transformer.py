#!/usr/bin/python3
"""NumPy reference of examples/transformer/block.json: weights, token ids and the expected logits
(float64 computation from the float32 weights). Weights are written as .safetensors by hand."""
import json
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "transformer")
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(2024)
V, D, H, KV, HD, F = 32, 32, 4, 2, 8, 64
shapes = {"embed": (V, D), "norm1": (D,), "wq": (H * HD, D), "wk": (KV * HD, D), "wv": (KV * HD, D),
          "wo": (D, D), "norm2": (D,), "w_gate_up": (2 * F, D), "w_down": (D, F), "norm_f": (D,),
          "w_head": (V, D)}
w = {}
for name, shape in shapes.items():
    if name.startswith("norm"):
        w[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    else:
        w[name] = (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
ids = rng.integers(0, V, size=(2, 6)).astype(np.int32)

f = {k: v.astype(np.float64) for k, v in w.items()}


def rmsnorm(x, g):
    return x * g / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def rope(x):  # x [B, S, H, D], GPT-J interleaved pairs, base 10000, positions 0..S-1
    b, s, h, d = x.shape
    pos = np.arange(s)[:, None]
    theta = pos * 10000.0 ** (-2.0 * np.arange(d // 2)[None, :] / d)  # [S, D/2]
    c, sn = np.cos(theta)[None, :, None, :], np.sin(theta)[None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * sn
    out[..., 1::2] = x0 * sn + x1 * c
    return out


def gqa_causal(q, k, v):  # [B, H, S, D], [B, KV, S, D]
    b, h, s, d = q.shape
    group = h // k.shape[1]
    out = np.zeros_like(q)
    mask = np.tril(np.ones((s, s), dtype=bool))
    for bi in range(b):
        for hi in range(h):
            kk, vv = k[bi, hi // group], v[bi, hi // group]
            scores = q[bi, hi] @ kk.T / np.sqrt(d)
            scores = np.where(mask, scores, -np.inf)
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            p /= p.sum(axis=-1, keepdims=True)
            out[bi, hi] = p @ vv
    return out


x = f["embed"][ids]
h1 = rmsnorm(x, f["norm1"])
q = (h1 @ f["wq"].T).reshape(2, 6, H, HD)
k = (h1 @ f["wk"].T).reshape(2, 6, KV, HD)
v = (h1 @ f["wv"].T).reshape(2, 6, KV, HD)
att = gqa_causal(rope(q).transpose(0, 2, 1, 3), rope(k).transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))
merged = att.transpose(0, 2, 1, 3).reshape(2, 6, H * HD)
r1 = x + merged @ f["wo"].T
gu = rmsnorm(r1, f["norm2"]) @ f["w_gate_up"].T
gate, up = gu[..., :F], gu[..., F:]
act = gate / (1.0 + np.exp(-gate)) * up
r2 = r1 + act @ f["w_down"].T
logits = rmsnorm(r2, f["norm_f"]) @ f["w_head"].T

header, blob = {}, b""
for name in sorted(w):
    data = w[name].tobytes()
    header[name] = {"dtype": "F32", "shape": list(w[name].shape), "data_offsets": [len(blob), len(blob) + len(data)]}
    blob += data
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(os.path.join(OUT, "weights.safetensors"), "wb") as fh:
    fh.write(struct.pack("<Q", len(text)) + text + blob)
np.save(os.path.join(OUT, "ids.npy"), ids)
np.save(os.path.join(OUT, "logits.npy"), logits)
