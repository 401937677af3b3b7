#!/usr/bin/python3
"""Golden data for the Attention surface (tests/cpu/reference/attention_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_attention.py

Inputs are drawn in float64 from a fixed seed and rounded to each storage dtype (f64, f32, f16,
bf16); the oracle is evaluated in float64 on the rounded inputs, written out explicitly with
torch: scores = Q K^T * scale (+ ALiBi bias), an explicit boolean visibility mask (bottom-right
causal alignment, sliding window), torch.softmax over the visible keys, then @ V. A query that
sees no key gets a zero row. Nothing here calls Backplane.

Files (tests/golden/data/):
    attention.json        single-head cases (ScaledDotProductAttention and FlashAttention share
                          them: FlashAttention must compute the same function) and the
                          MultiHeadAttention cases (MHA, GQA, MQA, sliding window, ALiBi, mixes)
    attention_large.json  one single-head case per dtype with more than 4096 key elements
"""

import json
import math
import os

import numpy as np
import torch

from golden_util import TORCH, exact_inputs, expected, storage_round, write

SEED = 20240917

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-2.0, hi=2.0):
    return storage_round(rng.uniform(lo, hi, shape), dtype).reshape(shape)


# ---- the oracle ---------------------------------------------------------------------------------
def visibility(seq_q, seq_k, causal, window):
    """visible[i, j]: query i (absolute position p = i + seq_k - seq_q) sees key j."""
    p = np.arange(seq_q)[:, None] + (seq_k - seq_q)
    j = np.arange(seq_k)[None, :]
    visible = np.ones((seq_q, seq_k), dtype=bool)
    if causal or window > 0:
        visible &= j <= p
    if window > 0:
        visible &= (p - j) < window
    return visible


def attend(q, k, v, scale, visible, bias):
    """softmax(q k^T * scale + bias) v over the visible keys, float64; zero rows if none."""
    q, k, v = (torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in (q, k, v))
    scores = q @ k.T * scale + torch.from_numpy(bias)
    scores = scores.masked_fill(~torch.from_numpy(visible), -math.inf)
    out = torch.zeros(q.shape[0], v.shape[1], dtype=torch.float64)
    rows = torch.from_numpy(visible.any(axis=1))
    if rows.any() and v.shape[1] > 0:
        out[rows] = torch.softmax(scores[rows], dim=-1) @ v
    return out.numpy()


def single_head_case(dtype, seq_q, seq_k, depth, value_dim, causal, block):
    q = draw(dtype, (seq_q, depth))
    k = draw(dtype, (seq_k, depth))
    v = draw(dtype, (seq_k, value_dim))
    visible = visibility(seq_q, seq_k, causal, 0)
    scale = 1.0 / math.sqrt(depth)
    o = attend(q, k, v, scale, visible, np.zeros((seq_q, seq_k)))
    return {"dtype": dtype, "seqQ": seq_q, "seqK": seq_k, "depth": depth, "valueDim": value_dim,
            "causal": causal, "blockSize": block, "q": exact_inputs(q, dtype),
            "k": exact_inputs(k, dtype), "v": exact_inputs(v, dtype), "o": expected(o, dtype)}


def mha_case(dtype, name, seq_q, seq_k, heads, head_dim, kv_count=0, causal=False, window=0,
             alibi=0.0):
    kv_heads = kv_count if kv_count > 0 else heads
    alibi = float(np.float32(alibi))  # the config field is a float
    q = draw(dtype, (seq_q, heads * head_dim))
    k = draw(dtype, (seq_k, kv_heads * head_dim))
    v = draw(dtype, (seq_k, kv_heads * head_dim))
    o = np.zeros((seq_q, heads * head_dim))
    visible = visibility(seq_q, seq_k, causal, window)
    p = np.arange(seq_q)[:, None] + (seq_k - seq_q)
    j = np.arange(seq_k)[None, :]
    group = heads // kv_heads
    for h in range(heads):
        g = h // group
        qc = slice(h * head_dim, (h + 1) * head_dim)
        kc = slice(g * head_dim, (g + 1) * head_dim)
        slope = alibi ** (h + 1) if alibi != 0.0 else 0.0
        bias = (slope * (j - p)).astype(np.float64)
        o[:, qc] = attend(q[:, qc], k[:, kc], v[:, kc], 1.0 / math.sqrt(head_dim), visible, bias)
    return {"name": name, "dtype": dtype, "seqQ": seq_q, "seqK": seq_k, "numHeads": heads,
            "headDim": head_dim, "kvHeadCount": kv_count, "causal": causal, "windowSize": window,
            "alibiSlope": alibi, "q": exact_inputs(q, dtype), "k": exact_inputs(k, dtype),
            "v": exact_inputs(v, dtype), "o": expected(o, dtype)}


# (seqQ, seqK, depth, valueDim, causal, blockSize)
SINGLE_HEAD = [
    (0, 5, 4, 3, False, 4),
    (4, 0, 4, 3, True, 4),      # no keys: zero rows
    (1, 1, 1, 1, False, 1),
    (7, 7, 5, 3, False, 3),
    (7, 7, 5, 3, True, 2),
    (5, 9, 8, 6, True, 4),      # KV cache: seqQ < seqK
    (5, 9, 8, 6, False, 64),
    (9, 5, 8, 6, True, 2),      # seqQ > seqK: the first 4 queries see nothing
    (9, 5, 8, 6, False, 3),
    (3, 33, 7, 5, True, 5),
]

# (name, seqQ, seqK, heads, headDim, kvHeadCount, causal, window, alibi)
MULTI_HEAD = [
    ("mha_noncausal", 5, 6, 2, 3, 0, False, 0, 0.0),
    ("mha_causal_seqQ_gt_seqK", 7, 4, 2, 5, 0, True, 0, 0.0),
    ("gqa_h8_kv2_causal_kvcache", 5, 7, 8, 4, 2, True, 0, 0.0),
    ("mqa_kv1", 6, 6, 4, 3, 1, False, 0, 0.0),
    ("single", 1, 1, 1, 1, 0, False, 0, 0.0),
    ("no_queries", 0, 3, 2, 2, 0, True, 0, 0.0),
    ("no_keys", 3, 0, 2, 2, 1, False, 0, 0.0),
    ("window3_flag_off", 9, 9, 2, 4, 0, False, 3, 0.0),
    ("window4_causal_gqa_kvcache", 4, 10, 4, 4, 2, True, 4, 0.0),
    ("window2_seqQ_gt_seqK", 6, 3, 2, 2, 0, True, 2, 0.0),
    ("alibi_paper_slopes_h4", 8, 8, 4, 4, 0, True, 0, 2 ** (-8 / 4)),
    ("alibi_h6_kv3", 5, 7, 6, 2, 3, True, 0, 2 ** (-8 / 6)),
    ("alibi_noncausal", 5, 6, 2, 3, 0, False, 0, 0.5),
    ("gqa_window_alibi", 6, 11, 8, 4, 2, True, 5, 2 ** (-8 / 8)),
]


def main():
    cases = {"singleHead": [], "multiHead": []}
    for dtype in TORCH:
        for seq_q, seq_k, depth, value_dim, causal, block in SINGLE_HEAD:
            cases["singleHead"].append(
                single_head_case(dtype, seq_q, seq_k, depth, value_dim, causal, block))
        for name, seq_q, seq_k, heads, head_dim, kv, causal, window, alibi in MULTI_HEAD:
            cases["multiHead"].append(
                mha_case(dtype, name, seq_q, seq_k, heads, head_dim, kv, causal, window, alibi))
    write("attention.json", {"generator": "tests/golden/gen_attention.py", "seed": SEED,
                             "torch": torch.__version__, **cases})

    large = []
    for dtype in TORCH:
        # K holds 130 * 32 = 4160 elements; causal with seqQ < seqK, 9 tiles of 16 keys.
        large.append(single_head_case(dtype, 6, 130, 32, 8, True, 16))
    write("attention_large.json", {"generator": "tests/golden/gen_attention.py", "seed": SEED,
                                   "torch": torch.__version__, "singleHead": large})


if __name__ == "__main__":
    main()
