#!/usr/bin/python3
"""Golden data for the Embedding surface (tests/cpu/reference/embedding_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_embedding.py

Tables [vocab, hidden] are drawn in float64 from a fixed seed and rounded to each storage dtype;
indices and offsets are int32. The oracle is torch.nn.functional.embedding and
torch.nn.functional.embedding_bag(mode="sum", offsets=...) evaluated in float64 on the rounded
table. Nothing here calls Backplane.

File: tests/golden/data/embedding.json
    lookup  (vocab, hidden, count) cases per dtype
    bag     (vocab, hidden, bags, count, offsets) cases per dtype, empty bags included
The sizes over 4096 elements are checked in the test against a float64 closed form.
"""

import json
import os

import numpy as np
import torch

from golden_util import TORCH, exact_inputs, expected, storage_round, write
import torch.nn.functional as F

SEED = 20240920

rng = np.random.default_rng(SEED)


def draw(dtype, shape, lo=-2.0, hi=2.0):
    return storage_round(rng.uniform(lo, hi, shape), dtype).reshape(shape)


def lookup_case(dtype, vocab, hidden, count):
    table = draw(dtype, (vocab, hidden), -4.0, 4.0)
    indices = rng.integers(0, max(vocab, 1), count).astype(np.int32)
    out = F.embedding(torch.from_numpy(indices.astype(np.int64)), torch.from_numpy(table))
    return {"dtype": dtype, "vocab": vocab, "hidden": hidden, "count": count,
            "table": exact_inputs(table, dtype), "indices": indices.tolist(),
            # A lookup copies: the expected rows are stored exactly, as the table is.
            "out": exact_inputs(out.numpy(), dtype)}


def bag_case(dtype, vocab, hidden, count, offsets):
    table = draw(dtype, (vocab, hidden), -4.0, 4.0)
    indices = rng.integers(0, max(vocab, 1), count).astype(np.int32)
    if offsets:
        out = F.embedding_bag(torch.from_numpy(indices.astype(np.int64)), torch.from_numpy(table),
                              torch.tensor(offsets, dtype=torch.int64), mode="sum").numpy()
    else:
        out = np.zeros((0, hidden))  # torch 1.13 crashes on empty offsets; nothing to compute
    return {"dtype": dtype, "vocab": vocab, "hidden": hidden, "bags": len(offsets),
            "count": count, "table": exact_inputs(table, dtype), "indices": indices.tolist(),
            "offsets": list(offsets), "out": expected(out, dtype)}


LOOKUP = [(5, 3, 0), (0, 3, 0), (4, 0, 3), (1, 1, 1), (7, 5, 9), (13, 6, 17)]
# (vocab, hidden, count, offsets)
BAG = [
    (5, 3, 0, []),
    (4, 3, 0, [0, 0, 0]),            # no indices: every bag empty, zeros
    (1, 1, 1, [0]),
    (7, 5, 9, [0, 2, 2, 6]),         # bag 1 empty
    (13, 6, 17, [0, 3, 8, 8, 16]),   # bag 2 empty, the last bag has one index
    (6, 4, 10, [0, 10, 10]),         # the last two bags empty
    (9, 7, 33, [0, 33]),             # one long bag and an empty last bag
]


def main():
    payload = {"generator": "tests/golden/gen_embedding.py", "seed": SEED,
               "torch": torch.__version__, "lookup": [], "bag": []}
    for dtype in TORCH:
        for vocab, hidden, count in LOOKUP:
            payload["lookup"].append(lookup_case(dtype, vocab, hidden, count))
        for vocab, hidden, count, offsets in BAG:
            payload["bag"].append(bag_case(dtype, vocab, hidden, count, offsets))
    write("embedding.json", payload)


if __name__ == "__main__":
    main()
