#!/usr/bin/env python3
"""Golden data for the ActiveInference surface (tests/cpu/reference/active_inference_test.cpp).

Run with /usr/bin/python3 (NumPy, SciPy, PyTorch) from the repository root:
    /usr/bin/python3 tests/golden/gen_active_inference.py
Writes tests/golden/data/active_inference.json. Inputs are generated in float64 from a fixed seed,
rounded to each storage dtype with torch; oracles in float64 from the rounded inputs with SciPy:
  free_energy    sum(scipy.special.rel_entr(q, p)) - sum(scipy.special.xlogy(q, L))
  expected_fe    -sum(xlogy(Q(o), C(o))) - sum(scipy.special.entr(Q(s)))
  belief_update  scipy.special.softmax(log L + log p)   (log space: no underflow)
"""
import json
import os

import numpy as np
import scipy.special
import torch

SEED = 2010
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "active_inference.json")


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return t.to(torch.float64).numpy()


def floats(a):
    return [float(v) for v in np.ravel(a)]


def distribution(rng, n, zeros=0):
    d = rng.dirichlet(np.ones(n))
    if zeros and n > zeros:
        d[rng.permutation(n)[:zeros]] = 0.0
        d /= d.sum()
    return d


def main():
    rng = np.random.default_rng(SEED)
    data = {"generator": "tests/golden/gen_active_inference.py", "seed": SEED,
            "free_energy": [], "expected_free_energy": [], "belief_update": []}
    for dtype in DTYPES:
        for n, zeros in [(1, 0), (2, 0), (7, 2), (33, 5), (300, 30)]:
            q = rounded(distribution(rng, n, zeros), dtype)
            p = rounded(distribution(rng, n), dtype)
            lik = rounded(rng.uniform(0.05, 1.0, n), dtype)
            if zeros:
                # A zero prior and likelihood where q is 0: 0 ln 0 = 0 must hold.
                i = int(np.flatnonzero(q == 0)[0])
                p[i] = 0.0
                lik[i] = 0.0
            want = float(np.sum(scipy.special.rel_entr(q, p)) - np.sum(scipy.special.xlogy(q, lik)))
            data["free_energy"].append({"dtype": dtype, "likelihood": floats(lik),
                                        "posterior": floats(q), "prior": floats(p), "want": want})
        for o, s in [(1, 1), (2, 3), (5, 0), (0, 4), (9, 7), (64, 100)]:
            qo = rounded(distribution(rng, o, 1 if o > 3 else 0), dtype) if o else np.zeros(0)
            c = rounded(distribution(rng, o), dtype) if o else np.zeros(0)
            qs = rounded(distribution(rng, s, 1 if s > 3 else 0), dtype) if s else np.zeros(0)
            want = float(-np.sum(scipy.special.xlogy(qo, c)) - np.sum(scipy.special.entr(qs)))
            data["expected_free_energy"].append({"dtype": dtype, "predictedObs": floats(qo),
                                                 "preferredObs": floats(c),
                                                 "predictedState": floats(qs), "want": want})
        for n, kind in [(1, "plain"), (2, "plain"), (7, "zeros"), (33, "plain"),
                        (300, "zeros"), (12, "tiny")]:
            lik = rng.uniform(0.0, 1.0, n)
            prior = distribution(rng, n)
            if kind == "zeros":
                lik[rng.permutation(n)[: n // 3]] = 0.0
            if kind == "tiny":
                # Products far below the smallest double in f64 and below f32's range in f32:
                # the normaliser must not underflow to 0 (scaled per dtype into its range).
                low = {"f64": 1e-200, "f32": 1e-30, "f16": 1e-3, "bf16": 1e-30}[dtype]
                lik = lik * low
                prior = prior * low
            lik = rounded(lik, dtype)
            prior = rounded(prior, dtype)
            with np.errstate(divide="ignore"):
                want = scipy.special.softmax(np.log(lik) + np.log(prior))
            data["belief_update"].append({"dtype": dtype, "likelihood": floats(lik),
                                          "prior": floats(prior), "want": floats(want)})
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
