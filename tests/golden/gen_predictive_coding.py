#!/usr/bin/env python3
"""Golden data for the PredictiveCoding surface (tests/cpu/reference/predictive_coding_test.cpp).

Run with /usr/bin/python3 (NumPy, PyTorch) from the repository root:
    /usr/bin/python3 tests/golden/gen_predictive_coding.py
Writes tests/golden/data/predictive_coding.json. Inputs are generated in float64 from a fixed seed
and rounded to each storage dtype with torch (the learning rate to float32, the type of the
config field); the oracles are NumPy float64 linear algebra on the rounded inputs:
  prediction             W @ s
  update_representation  s + lr * W.T @ e
  update_weights         W + lr * numpy.outer(e, s)
"""
import json
import os

import numpy as np
import torch

SEED = 1999
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "predictive_coding.json")


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return t.to(torch.float64).numpy()


def floats(a):
    return [float(v) for v in np.ravel(a)]


def main():
    rng = np.random.default_rng(SEED)
    cases = []
    shapes = [(0, 3), (3, 0), (1, 1), (2, 3), (5, 7), (16, 33), (40, 9)]
    rates = [0.01, 0.25, -0.1, 0.0, 0.5, 0.003, 1.0]
    for dtype in DTYPES:
        for (out_dim, in_dim), lr in zip(shapes, rates):
            w = rounded(rng.uniform(-1, 1, (out_dim, in_dim)), dtype).reshape(out_dim, in_dim)
            s = rounded(rng.uniform(-2, 2, in_dim), dtype)
            e = rounded(rng.uniform(-1, 1, out_dim), dtype)
            lr = float(np.float32(lr))
            cases.append({"dtype": dtype, "outDim": out_dim, "inDim": in_dim, "lr": lr,
                          "weights": floats(w), "representation": floats(s),
                          "error": floats(e), "prediction": floats(w @ s),
                          "representation_update": floats(s + lr * (w.T @ e)),
                          "weights_update": floats(w + lr * np.outer(e, s))})
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_predictive_coding.py", "seed": SEED,
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
