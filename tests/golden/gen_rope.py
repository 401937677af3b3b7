#!/usr/bin/python3
"""Golden data for the RoPE surface (tests/cpu/reference/rope_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_rope.py

The oracle is a float64 NumPy transcription of GPT-J's rotary embedding (HuggingFace
modeling_gptj: create_sinusoidal_positions, rotate_every_two, apply_rotary_pos_emb), i.e. the
interleaved pairing (x[2p], x[2p+1]), on inputs [seq, heads, headDim] drawn from a fixed seed and
rounded to each storage dtype. Positions start at StartPosition. Nothing here calls Backplane.

File: tests/golden/data/rope.json
    rope       RoPE cases (seq, heads, headDim, BaseFreq, StartPosition) per dtype
    ropePairs  RoPEPairs cases (one vector, caller-supplied cos/sin rounded to the dtype)
The sizes over 4096 elements are checked in the test against a float64 closed form.
"""

import json
import os

import numpy as np
import torch

from golden_util import TORCH, exact_inputs, expected, storage_round, write

SEED = 20240919

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-2.0, hi=2.0):
    return storage_round(rng.uniform(lo, hi, shape), dtype).reshape(shape)


# ---- GPT-J rotary embedding in float64 (layout [seq, heads, headDim]) ---------------------------
def create_sinusoidal_positions(positions, dim, base):
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    sinusoid_inp = np.einsum("i,j->ij", positions.astype(np.float64), inv_freq)
    return np.sin(sinusoid_inp), np.cos(sinusoid_inp)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return np.stack((-x2, x1), axis=-1).reshape(x.shape)


def apply_rotary_pos_emb(x, sin, cos):
    sin = np.repeat(sin[:, None, :], 2, axis=-1)  # [seq, 1, headDim], pairs interleaved
    cos = np.repeat(cos[:, None, :], 2, axis=-1)
    return x * cos + rotate_every_two(x) * sin


def rope_case(dtype, seq, heads, head_dim, base, start):
    x = draw(dtype, (seq, heads, head_dim), -4.0, 4.0)
    sin, cos = create_sinusoidal_positions(np.arange(start, start + seq), head_dim, base)
    out = apply_rotary_pos_emb(x, sin, cos) if x.size else x
    return {"dtype": dtype, "seqLen": seq, "numHeads": heads, "headDim": head_dim,
            "baseFreq": base, "startPosition": start, "in": exact_inputs(x, dtype),
            "out": expected(out, dtype)}


def pairs_case(dtype, half):
    x = draw(dtype, (1, 1, 2 * half), -4.0, 4.0)
    angles = rng.uniform(-np.pi, np.pi, half)
    cos = storage_round(np.cos(angles), dtype)
    sin = storage_round(np.sin(angles), dtype)
    out = apply_rotary_pos_emb(x, sin[None, :], cos[None, :])
    return {"dtype": dtype, "halfDim": half, "in": exact_inputs(x, dtype),
            "cos": exact_inputs(cos, dtype), "sin": exact_inputs(sin, dtype),
            "out": expected(out, dtype)}


# (seq, heads, headDim, BaseFreq, StartPosition)
ROPE = [
    (0, 2, 4, 10000.0, 0),
    (3, 2, 0, 10000.0, 0),
    (1, 1, 2, 10000.0, 0),
    (3, 2, 8, 10000.0, 0),
    (5, 3, 6, 10000.0, 7),
    (7, 1, 10, 10.0, 3),
    (2, 2, 64, 500000.0, 1000),
    (3, 1, 16, 10000.0, 123456),
]


def main():
    payload = {"generator": "tests/golden/gen_rope.py", "seed": SEED, "torch": torch.__version__,
               "rope": [], "ropePairs": []}
    for dtype in TORCH:
        for seq, heads, head_dim, base, start in ROPE:
            payload["rope"].append(rope_case(dtype, seq, heads, head_dim, base, start))
        for half in (0, 1, 5, 17):
            payload["ropePairs"].append(pairs_case(dtype, half))
    write("rope.json", payload)


if __name__ == "__main__":
    main()
