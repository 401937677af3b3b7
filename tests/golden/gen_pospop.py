#!/usr/bin/env python3
"""Golden data for the PosPop surface (tests/cpu/reference/pospop_test.cpp).

Run with /usr/bin/python3 (NumPy) from the repository root:
    /usr/bin/python3 tests/golden/gen_pospop.py
Writes tests/golden/data/pospop.json: random words of each width from a fixed seed and, for every
bit position b, the number of words with bit b set, computed with numpy.unpackbits over the
little-endian bytes of the words (bit b of a w-bit word is bit b % 8 of byte b // 8).
"""
import json
import os

import numpy as np

SEED = 2021
WIDTHS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "pospop.json")


def positional_counts(words, width):
    as_bytes = words.astype(words.dtype.newbyteorder("<")).view(np.uint8)
    bits = np.unpackbits(as_bytes.reshape(-1, width // 8), axis=1, bitorder="little")
    return [int(c) for c in bits.sum(axis=0)] if len(words) else [0] * width


def main():
    rng = np.random.default_rng(SEED)
    cases = []
    for width, dtype in WIDTHS.items():
        for n in [0, 1, 7, 15, 16, 31, 100, 1000]:
            # Biased bits (p(set) varies with the position) so the counts differ per position.
            p = rng.uniform(0.05, 0.95, width)
            bits = (rng.uniform(0, 1, (n, width)) < p).astype(np.uint64)
            words = (bits << np.arange(width, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
            words = words.astype(dtype)
            cases.append({"width": width, "words": [int(w) for w in words],
                          "counts": positional_counts(words, width)})
    text = rng.integers(0, 256, 777).astype(np.uint8)
    cases.append({"width": 0, "words": [int(b) for b in text],
                  "counts": positional_counts(text, 8)})  # width 0: CountString over these bytes
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_pospop.py", "seed": SEED, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
