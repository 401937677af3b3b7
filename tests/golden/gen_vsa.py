#!/usr/bin/env python3
"""Golden data for the VSA surface (tests/cpu/reference/vsa_test.cpp).

Run with /usr/bin/python3 (NumPy, PyTorch) from the repository root:
    /usr/bin/python3 tests/golden/gen_vsa.py
Writes tests/golden/data/vsa.json. Inputs are generated in float64 from a fixed seed, rounded to
each storage dtype with torch, and the oracle is computed in float64 from the rounded inputs:
  permute   numpy.roll(x, shift) and numpy.roll(x, -shift)
  similarity torch.nn.functional.cosine_similarity in float64 (norms here are far above its eps)
"""
import json
import os

import numpy as np
import torch

SEED = 20240611
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "vsa.json")


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return t.to(torch.float64).numpy()


def floats(a):
    return [float(v) for v in a]


def main():
    rng = np.random.default_rng(SEED)
    permute = []
    for dtype in DTYPES:
        for n, shift in [(0, 3), (1, 5), (2, -1), (7, 3), (7, -2), (7, 7), (33, 100),
                         (33, -1000000007), (128, 1), (128, -129)]:
            x = rounded(rng.uniform(-4.0, 4.0, n), dtype)
            permute.append({"dtype": dtype, "n": n, "shift": shift, "input": floats(x),
                            "roll": floats(np.roll(x, shift)),
                            "unroll": floats(np.roll(x, -shift))})
    similarity = []
    for dtype in DTYPES:
        for n in [1, 2, 7, 33, 257]:
            a = rounded(rng.uniform(-4.0, 4.0, n), dtype)
            # Partly correlated so that the cosine is not near 0.
            b = rounded(0.6 * a + rng.uniform(-2.0, 2.0, n), dtype)
            cos = torch.nn.functional.cosine_similarity(torch.tensor(a), torch.tensor(b), dim=0)
            similarity.append({"dtype": dtype, "n": n, "left": floats(a), "right": floats(b),
                               "cosine": float(cos)})
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_vsa.py", "seed": SEED, "permute": permute,
                   "similarity": similarity}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
