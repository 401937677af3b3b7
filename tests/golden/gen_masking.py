#!/usr/bin/python3
"""Golden data for the Masking surface (tests/cpu/reference/masking_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_masking.py

Inputs are drawn in float64 from a fixed seed and rounded to each storage dtype; the oracle is
float64 NumPy/torch on the rounded inputs. Score matrices are [seqQ, seqK]; the causal pattern is
bottom-right aligned, i.e. torch.ones(seqQ, seqK).tril(diagonal=seqK - seqQ) (the KV-cache
convention of torch's causal_lower_right and FlashAttention 2). Nothing here calls Backplane.

File: tests/golden/data/masking.json
    applyMask   out = in + mask, counts 0, 1, 7, 33 per dtype
    causalMask  the visible (1) / masked (0) pattern per shape (dtype independent: visible
                entries must be +0, masked ones -Inf)
    alibiBias   out = scores - slope * (p - k) where visible, scores elsewhere, per dtype
The sizes over 4096 elements are checked in the test against float64 closed forms.
"""

import json
import os

import numpy as np
import torch

from golden_util import TORCH, exact_inputs, expected, storage_round, write

SEED = 20240918

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-2.0, hi=2.0):
    return storage_round(rng.uniform(lo, hi, shape), dtype).reshape(shape)


def visible_pattern(seq_q, seq_k):
    """torch's bottom-right causal pattern: query i sees key j iff j <= i + seq_k - seq_q."""
    return torch.ones(seq_q, seq_k, dtype=torch.bool).tril(diagonal=seq_k - seq_q).numpy()


def apply_mask_case(dtype, count):
    x = draw(dtype, count, -4.0, 4.0)
    # Typical additive masks: zeros, small penalties and large negative values.
    kind = rng.integers(0, 3, count)
    mask = np.where(kind == 0, 0.0, np.where(kind == 1, rng.uniform(-4.0, 4.0, count),
                                             rng.uniform(-3e4, -1e3, count)))
    mask = storage_round(mask, dtype)
    return {"dtype": dtype, "count": count, "in": exact_inputs(x, dtype),
            "mask": exact_inputs(mask, dtype), "out": expected(x + mask, dtype)}


def alibi_case(dtype, seq_q, seq_k, slope):
    scores = draw(dtype, (seq_q, seq_k), -4.0, 4.0)
    m = float(storage_round([slope], dtype)[0])
    p = np.arange(seq_q)[:, None] + (seq_k - seq_q)
    k = np.arange(seq_k)[None, :]
    out = np.where(visible_pattern(seq_q, seq_k), scores - m * (p - k), scores)
    return {"dtype": dtype, "seqQ": seq_q, "seqK": seq_k, "slope": exact_inputs([m], dtype)[0],
            "scores": exact_inputs(scores, dtype), "out": expected(out, dtype)}


SHAPES = [(0, 3), (3, 0), (1, 1), (4, 4), (3, 7), (7, 3), (5, 33)]
# (seqQ, seqK, slope)
ALIBI = [(0, 4, 0.5), (1, 1, 0.25), (5, 5, 2 ** (-8 / 3)), (3, 8, 0.5), (8, 3, 2 ** (-1 / 2)),
         (7, 33, 2 ** (-8 / 5)), (4, 6, 0.0)]


def main():
    payload = {"generator": "tests/golden/gen_masking.py", "seed": SEED, "torch": torch.__version__,
               "applyMask": [], "causalMask": [], "alibiBias": []}
    for seq_q, seq_k in SHAPES:
        payload["causalMask"].append({"seqQ": seq_q, "seqK": seq_k, "visible": [
            int(v) for v in visible_pattern(seq_q, seq_k).ravel()]})
    for dtype in TORCH:
        for count in (0, 1, 7, 33):
            payload["applyMask"].append(apply_mask_case(dtype, count))
        for seq_q, seq_k, slope in ALIBI:
            payload["alibiBias"].append(alibi_case(dtype, seq_q, seq_k, slope))
    write("masking.json", payload)


if __name__ == "__main__":
    main()
