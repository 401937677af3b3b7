#!/usr/bin/env python3
"""Golden data for the Hawkes surface (tests/cpu/reference/hawkes_test.cpp).

Run with /usr/bin/python3 (NumPy, SciPy, PyTorch) from the repository root:
    /usr/bin/python3 tests/golden/gen_hawkes.py
Writes tests/golden/data/hawkes.json. Inputs are generated in float64 from a fixed seed and rounded
to each storage dtype with torch (scalar parameters to float32, the type of the C++ signature);
the oracles are computed in float64 from the rounded values:
  intensity       direct O(E Q) sum of the textbook formula (Laub, Taimre & Pollett 2015),
                  strictly-earlier events only: mu + alpha sum_{t_j < t} exp(-beta (t - t_j))
  kernel_matrix   alpha exp(-beta (t_i - t_j)) for t_j < t_i, else 0
  log_likelihood  direct O(E^2) evaluation of sum_i ln lambda(t_i) minus the compensator
                  mu T + (alpha / beta) sum_i (1 - exp(-beta (T - t_i)))
  mutual_info     H(X) + H(Y) - H(X, Y) with scipy.stats.entropy (which normalises the table)
  blanket         Pearl's Markov blanket of the internal set with the FEP split, from Python sets
"""
import json
import os

import numpy as np
import scipy.stats
import torch

SEED = 1971
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "hawkes.json")


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return t.to(torch.float64).numpy()


def f32(x):
    return float(np.float32(x))


def floats(a):
    return [float(v) for v in np.ravel(a)]


def event_times(rng, n, dtype, with_ties):
    t = np.cumsum(rng.exponential(0.7, n))
    if with_ties and n >= 4:
        t[2] = t[1]  # an exact tie
    return np.sort(rounded(t, dtype))


def intensity(events, queries, mu, alpha, beta):
    out = []
    for q in queries:
        earlier = events[events < q]
        out.append(mu + alpha * np.sum(np.exp(-beta * (q - earlier))))
    return np.array(out)


def kernel_matrix(events, alpha, beta):
    n = len(events)
    k = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if events[j] < events[i]:
                k[i, j] = alpha * np.exp(-beta * (events[i] - events[j]))
    return k


def log_likelihood(events, total, mu, alpha, beta):
    lam = [mu + alpha * np.sum(np.exp(-beta * (t - events[events < t]))) for t in events]
    compensator = mu * total + (alpha / beta) * np.sum(1.0 - np.exp(-beta * (total - events)))
    return float(np.sum(np.log(lam)) - compensator)


def mutual_information(table):
    p = np.asarray(table, dtype=np.float64)
    hx = scipy.stats.entropy(p.sum(axis=1))
    hy = scipy.stats.entropy(p.sum(axis=0))
    hxy = scipy.stats.entropy(p.ravel())
    return float(hx + hy - hxy)


def blanket_labels(adj, internal):
    n = adj.shape[0]
    inside = set(internal)
    edge = lambda u, v: u != v and adj[u, v] != 0.0
    children = {v for v in range(n) if v not in inside and any(edge(u, v) for u in inside)}
    parents = {v for v in range(n) if v not in inside and any(edge(v, u) for u in inside)}
    coparents = {v for v in range(n)
                 if v not in inside and any(edge(v, c) for c in children)}
    labels = []
    for v in range(n):
        if v in inside:
            labels.append(0)
        elif v in children:
            labels.append(2)
        elif v in parents or v in coparents:
            labels.append(1)
        else:
            labels.append(3)
    return labels


def main():
    rng = np.random.default_rng(SEED)
    data = {"generator": "tests/golden/gen_hawkes.py", "seed": SEED, "intensity": [],
            "kernel_matrix": [], "log_likelihood": [], "mutual_info": [], "blanket": []}
    for dtype in DTYPES:
        for e, q in [(0, 3), (1, 1), (2, 5), (7, 9), (33, 17), (120, 40)]:
            events = event_times(rng, e, dtype, with_ties=True)
            horizon = (events[-1] if e else 1.0) + 1.0
            queries = list(rng.uniform(-0.5, horizon, q))
            queries[: min(q, e)] = events[: min(q, e)]  # queries exactly at event times
            queries = rounded(queries, dtype)
            mu, alpha, beta = f32(rng.uniform(0.1, 2)), f32(rng.uniform(0, 1.5)), \
                f32(rng.uniform(0.3, 3))
            data["intensity"].append({
                "dtype": dtype, "events": floats(events), "queries": floats(queries), "mu": mu,
                "alpha": alpha, "beta": beta,
                "want": floats(intensity(events, queries, mu, alpha, beta))})
        for e in [0, 1, 2, 9, 17]:
            events = event_times(rng, e, dtype, with_ties=True)
            alpha, beta = f32(rng.uniform(0, 1.5)), f32(rng.uniform(0.3, 3))
            data["kernel_matrix"].append({
                "dtype": dtype, "events": floats(events), "alpha": alpha, "beta": beta,
                "want": floats(kernel_matrix(events, alpha, beta))})
        for e in [0, 1, 2, 9, 33, 150]:
            events = event_times(rng, e, dtype, with_ties=True)
            total = f32((events[-1] if e else 0.0) + rng.uniform(0, 2))
            if e and total < events[-1]:  # float32 rounding must not cut off the last event
                total = float(np.nextafter(np.float32(events[-1]), np.float32(np.inf)))
            mu, alpha, beta = f32(rng.uniform(0.1, 2)), f32(rng.uniform(0, 1.5)), \
                f32(rng.uniform(0.3, 3))
            data["log_likelihood"].append({
                "dtype": dtype, "events": floats(events), "total": total, "mu": mu,
                "alpha": alpha, "beta": beta,
                "want": log_likelihood(events, total, mu, alpha, beta)})
        for x, y, kind in [(1, 1, "random"), (2, 2, "random"), (3, 5, "random"),
                           (8, 4, "sparse"), (1, 7, "random"), (6, 6, "diagonal"),
                           (4, 5, "independent"), (16, 16, "counts")]:
            if kind == "random":
                table = rng.dirichlet(np.ones(x * y)).reshape(x, y)
            elif kind == "sparse":
                table = rng.uniform(0, 1, (x, y)) * (rng.uniform(0, 1, (x, y)) < 0.4)
                table[0, 0] = 0.5
            elif kind == "diagonal":
                table = np.diag(rng.uniform(0.5, 1.0, x))
            elif kind == "independent":
                # Products of dyadic marginals are exact in every dtype: MI is exactly 0.
                table = np.outer([0.5, 0.25, 0.125, 0.125], [0.25, 0.25, 0.25, 0.125, 0.125])
            else:
                table = rng.integers(0, 50, (x, y)).astype(np.float64)  # unnormalised counts
            table = rounded(table, dtype).reshape(x, y)
            data["mutual_info"].append({"dtype": dtype, "x": x, "y": y, "joint": floats(table),
                                        "want": mutual_information(table)})
        for n, density, k in [(1, 0.0, 1), (2, 1.0, 1), (5, 0.4, 2), (12, 0.25, 3),
                              (30, 0.1, 5), (30, 0.1, 0)]:
            adj = rng.uniform(-2, 2, (n, n)) * (rng.uniform(0, 1, (n, n)) < density)
            adj = rounded(adj, dtype).reshape(n, n)
            internal = [int(v) for v in rng.permutation(n)[:k]]
            data["blanket"].append({"dtype": dtype, "n": n, "adjacency": floats(adj),
                                    "internal": internal, "want": blanket_labels(adj, internal)})
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
