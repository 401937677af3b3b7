#!/usr/bin/env python3
"""Golden data for Sampling.GreedySample / TopKSample / TopPSample
(tests/cpu/reference/sampling_test.cpp).

Run with /usr/bin/python3 from the repository root; writes tests/golden/data/sampling.json.
Oracle (independent of the C++ code): greedy = torch.argmax (first maximum);
p = torch.softmax(logits / T) in float64; order = numpy stable argsort of -p (ties keep ascending
index); kept = the first K (TopK; K == 0 or K > vocab means all) or the shortest prefix with
cumulative p >= TopP; u = uniform_double(seed, 0, 0) from philox_golden.py (a Python
Philox4x32-10); the token is the first kept index whose cumulative p exceeds u * (sum of kept p).
Temperature 0 is greedy. Draws whose target lies within 1e-9 of a cumulative sum, or whose
token changes when TopP moves by 1e-9, are skipped, so last-ulp differences between torch's and
libm's exp cannot flip a token.
"""

import os

import numpy as np
import torch

from philox_golden import DTYPES, round_to, short, uniform_double, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
MARGIN = 1e-9


def probabilities(x, temperature):
    t = torch.tensor(x, dtype=torch.float64) / float(np.float32(temperature))
    return torch.softmax(t, dim=0).numpy()


def draw(p, order, kept, seed):
    """Returns (token, margin) for an inverse-CDF draw over order[:kept]."""
    cum = np.cumsum(p[order[:kept]])
    target = uniform_double(seed, 0, 0) * cum[-1]
    r = int(np.argmax(cum > target)) if (cum > target).any() else kept - 1
    return int(order[r]), float(np.min(np.abs(cum - target)))


def topk(x, temperature, k, seed):
    if np.float32(temperature) == 0:
        return int(torch.argmax(torch.tensor(x))), 1.0
    p = probabilities(x, temperature)
    order = np.argsort(-p, kind="stable")
    kept = len(x) if k == 0 or k > len(x) else k
    return draw(p, order, kept, seed)


def topp(x, temperature, top_p, seed):
    if np.float32(temperature) == 0:
        return int(torch.argmax(torch.tensor(x))), 1.0
    p = probabilities(x, temperature)
    order = np.argsort(-p, kind="stable")
    cum = np.cumsum(p[order])
    top_p = float(np.float32(top_p))
    results = []
    for bound in (top_p - MARGIN, top_p, top_p + MARGIN):
        hits = np.nonzero(cum >= bound)[0]
        kept = int(hits[0]) + 1 if len(hits) else len(x)
        results.append(draw(p, order, kept, seed))
    token, margin = results[1]
    # A nucleus boundary within MARGIN of TopP only matters if it changes the token.
    return token, margin if all(r[0] == token for r in results) else 0.0

def row_case(x, dtype, rng):
    vocab = len(x)
    case = {"dtype": dtype, "logits": short(x, dtype),
            "greedy": int(torch.argmax(torch.tensor(x))), "topk": [], "topp": []}
    temps = [0.0, 0.7, 1.0, 2.5]
    ks = [0, 1, 3, vocab + 5, max(1, vocab // 2)]
    ps = [0.1, 0.5, 0.9, 1.0]
    for i in range(10):
        seed = int(rng.integers(0, 2**63)) * 2 + (i & 1)
        t, k, pp = temps[i % 4], ks[i % 5], ps[(i // 2) % 4]
        tok, margin = topk(x, t, k, seed)
        if margin > MARGIN:
            case["topk"].append({"t": t, "k": k, "seed": str(seed), "token": tok})
        tok, margin = topp(x, t, pp, seed)
        if margin > MARGIN:
            case["topp"].append({"t": t, "p": pp, "seed": str(seed), "token": tok})
    return case


def main():
    rng = np.random.default_rng(77)
    cases = []
    for dtype in DTYPES:
        for vocab in [1, 2, 7, 50]:
            x = round_to(rng.normal(0.0, 2.0, vocab), dtype)
            cases.append(row_case(x, dtype, rng))
        # Ties: multiples of 1/2, so equal probabilities must keep ascending index order.
        x = np.round(rng.normal(0.0, 1.5, 31) * 2) / 2
        cases.append(row_case(x, dtype, rng))
    # One vocabulary over 4096: multiples of 1/32 in [-8, 8), exact in every dtype, many ties.
    big_x = rng.integers(-256, 256, 5000) / 32.0
    big = [row_case(big_x, dtype, rng) for dtype in DTYPES]
    for c in big[1:]:
        del c["logits"]  # the same values for every dtype: stored once, in large[0]
    write_json(os.path.join(HERE, "data", "sampling.json"),
               {"generator": "tests/golden/gen_sampling.py", "cases": cases, "large": big})


if __name__ == "__main__":
    main()
