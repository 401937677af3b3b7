#!/usr/bin/env python3
"""Golden data for the Causal surface (tests/cpu/reference/causal_test.cpp).

Run with /usr/bin/python3 (NumPy, PyTorch) from the repository root:
    /usr/bin/python3 tests/golden/gen_causal.py
Writes tests/golden/data/causal.json. Inputs are generated in float64 from a fixed seed, rounded to
each storage dtype with torch and stored exactly (f32 values as their shortest float32 decimal
string, checked to read back to the same float32); the oracle is computed in float64 from the
rounded inputs:
  cholesky     numpy.linalg.cholesky (LAPACK potrf) on random symmetric positive-definite matrices
  backdoor     numpy.einsum("xzy,z->xy", P(y|x,z), P(z))                       (Pearl 2009, 3.3.2)
  frontdoor    numpy.einsum("xm,my->xy", P(m|x), einsum("xmy,x->my", P(y|x,m), P(x)))  (3.3.4)
  iv           numpy.cov(z, y)[0, 1] / numpy.cov(z, x)[0, 1], cross-checked against two-stage least
               squares with numpy.linalg.lstsq
  backdoor_dag, frontdoor_dag
               small structural causal models whose interventional distribution P(y | do(x)) is
               known in closed form (truncated factorisation); the observational tables fed to the
               adjustment formulas are derived from the joint distribution, and the closed form is
               checked here against a Monte Carlo simulation of the intervened SCM.
"""
import json
import os

import numpy as np
import torch

SEED = 20241003
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "causal.json")
SUM_TOL = {"f64": 1e-9, "f32": 1e-6, "f16": 1e-3, "bf16": 1e-2}  # the kernels' row-sum rule


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return t.to(torch.float64).numpy()


def stored(a, dtype):
    out = []
    for v in np.asarray(a, dtype=np.float64).ravel():
        if dtype == "f32":
            s = float(str(np.float32(v)))
            assert np.float32(s) == np.float32(v) and float(np.float32(v)) == v
            out.append(s)
        else:
            out.append(float(v))
    return out


def oracle(a):
    return [float(f"{v:.15g}") for v in np.asarray(a, dtype=np.float64).ravel()]


def distributions(rng, shape, dtype):
    """Rows over the last axis drawn from a flat Dirichlet, rounded; rows still sum to 1 within the
    kernels' tolerance (rounding moves a sum by at most half an ulp of 1)."""
    p = rounded(rng.dirichlet(np.ones(shape[-1]), size=shape[:-1]), dtype)
    assert np.all(np.abs(p.sum(axis=-1) - 1.0) <= SUM_TOL[dtype] / 2)
    return p


def cholesky_cases(rng):
    cases = []
    for dtype in DTYPES:
        for i, n in enumerate([1, 2, 3, 4, 5, 8, 13, 24]):
            b = rng.uniform(-1.0, 1.0, (n, n))
            a = b @ b.T / n + np.eye(n)
            a = (a + a.T) / 2 * [1.0, 40.0, 0.05][i % 3]
            a = rounded(a, dtype)
            assert np.array_equal(a, a.T)
            cases.append({"dtype": dtype, "n": n, "input": stored(a, dtype),
                          "output": oracle(np.linalg.cholesky(a))})
    return cases


def backdoor_cases(rng):
    cases = []
    for dtype in DTYPES:
        for x, z, y in [(1, 1, 1), (1, 1, 3), (2, 3, 2), (3, 5, 4), (4, 2, 7), (6, 7, 5)]:
            cond = distributions(rng, (x, z, y), dtype)
            pz = distributions(rng, (z,), dtype)
            cases.append({"dtype": dtype, "x": x, "z": z, "y": y,
                          "conditional": stored(cond, dtype),
                          "marginalZ": stored(pz, dtype),
                          "output": oracle(np.einsum("xzy,z->xy", cond, pz))})
    return cases


def frontdoor(pmx, pyxm, px):
    return np.einsum("xm,my->xy", pmx, np.einsum("xmy,x->my", pyxm, px))


def frontdoor_cases(rng):
    cases = []
    for dtype in DTYPES:
        for x, m, y in [(1, 1, 1), (2, 2, 2), (3, 4, 2), (5, 3, 6), (2, 6, 3)]:
            pmx = distributions(rng, (x, m), dtype)
            pyxm = distributions(rng, (x, m, y), dtype)
            px = distributions(rng, (x,), dtype)
            cases.append({"dtype": dtype, "x": x, "m": m, "y": y,
                          "mediatorGivenX": stored(pmx, dtype),
                          "outcomeGivenXM": stored(pyxm, dtype), "marginalX": stored(px, dtype),
                          "output": oracle(frontdoor(pmx, pyxm, px))})
    return cases


def sample(rng, probs):
    """One categorical draw per row of probs (rows sum to 1)."""
    u = rng.uniform(size=(probs.shape[0], 1))
    return np.minimum((u > np.cumsum(probs, axis=1)).sum(axis=1), probs.shape[1] - 1)


def backdoor_dag(rng):
    """Z -> X -> Y and Z -> Y: Z confounds X and Y, and {Z} satisfies the back-door criterion."""
    pz = np.array([0.5, 0.3, 0.2])
    px_z = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    py_xz = np.array([[[0.7, 0.2, 0.1], [0.4, 0.4, 0.2], [0.3, 0.3, 0.4]],
                      [[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]]])  # [x][z][y]
    joint = np.einsum("z,zx,xzy->xzy", pz, px_z, py_xz)  # P(x, z, y)
    # Observational tables as a data analyst would estimate them from the joint.
    p_xz = joint.sum(axis=2)
    cond = joint / p_xz[:, :, None]
    marg_z = joint.sum(axis=(0, 2))
    truth = np.einsum("xzy,z->xy", py_xz, pz)  # truncated factorisation: P(y | do(x))
    observational = joint.sum(axis=1) / joint.sum(axis=(1, 2))[:, None]  # P(y | x)
    assert np.abs(truth - observational).max() > 0.05  # confounding matters here
    # Monte Carlo of the intervened SCM: Z ~ P(z), X := x, Y ~ P(y | x, z).
    n = 400000
    for x in range(2):
        z = sample(rng, np.tile(pz, (n, 1)))
        y = sample(rng, py_xz[x][z])
        assert np.abs(np.bincount(y, minlength=3) / n - truth[x]).max() < 5e-3
    cases = []
    for dtype in DTYPES:
        c, m = rounded(cond, dtype), rounded(marg_z, dtype)
        cases.append({"dtype": dtype, "x": 2, "z": 3, "y": 3, "conditional": stored(c, dtype),
                      "marginalZ": stored(m, dtype), "output": oracle(np.einsum("xzy,z->xy", c, m)),
                      "truth": oracle(truth), "observational": oracle(observational)})
    return cases


def frontdoor_dag(rng):
    """U -> X, U -> Y (U unobserved), X -> M -> Y: M satisfies the front-door criterion."""
    pu = np.array([0.6, 0.4])
    px_u = np.array([[0.8, 0.2], [0.3, 0.7]])  # [u][x]
    pm_x = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])  # [x][m]
    py_mu = np.array([[[0.9, 0.1], [0.6, 0.4]], [[0.5, 0.5], [0.3, 0.7]],
                      [[0.2, 0.8], [0.1, 0.9]]])  # [m][u][y]
    joint = np.einsum("u,ux,xm,muy->uxmy", pu, px_u, pm_x, py_mu)
    obs = joint.sum(axis=0)  # P(x, m, y), U marginalised out
    px = obs.sum(axis=(1, 2))
    pmx = obs.sum(axis=2) / px[:, None]
    pyxm = obs / obs.sum(axis=2, keepdims=True)
    truth = np.einsum("u,xm,muy->xy", pu, pm_x, py_mu)  # P(y | do(x))
    observational = obs.sum(axis=1) / px[:, None]
    assert np.abs(truth - observational).max() > 0.05
    n = 400000
    for x in range(2):
        u = sample(rng, np.tile(pu, (n, 1)))
        m = sample(rng, np.tile(pm_x[x], (n, 1)))
        y = sample(rng, py_mu[m, u])
        assert np.abs(np.bincount(y, minlength=2) / n - truth[x]).max() < 5e-3
    cases = []
    for dtype in DTYPES:
        a, b, c = rounded(pmx, dtype), rounded(pyxm, dtype), rounded(px, dtype)
        cases.append({"dtype": dtype, "x": 2, "m": 3, "y": 2, "mediatorGivenX": stored(a, dtype),
                      "outcomeGivenXM": stored(b, dtype), "marginalX": stored(c, dtype),
                      "output": oracle(frontdoor(a, b, c)), "truth": oracle(truth),
                      "observational": oracle(observational)})
    return cases


def iv_cases(rng):
    cases = []
    for dtype in DTYPES:
        for n in [2, 3, 5, 10, 64, 257]:
            z = rng.normal(size=n)
            u = rng.normal(size=n)
            x = rounded(0.8 * z + u + 0.3 * rng.normal(size=n), dtype)
            y = rounded(2.5 * x - 1.5 * u + 0.5 * rng.normal(size=n), dtype)
            z = rounded(z, dtype)
            beta = np.cov(z, y)[0, 1] / np.cov(z, x)[0, 1]
            # Two-stage least squares: X on [1, Z], then Y on [1, X_hat].
            design = np.column_stack([np.ones(n), z])
            x_hat = design @ np.linalg.lstsq(design, x, rcond=None)[0]
            beta_2sls = np.linalg.lstsq(np.column_stack([np.ones(n), x_hat]), y, rcond=None)[0][1]
            assert abs(beta - beta_2sls) <= 1e-9 * max(1.0, abs(beta))
            cases.append({"dtype": dtype, "instrument": stored(z, dtype),
                          "treatment": stored(x, dtype), "outcome": stored(y, dtype),
                          "output": float(f"{beta:.15g}")})
    return cases


def main():
    rng = np.random.default_rng(SEED)
    payload = {"generator": "tests/golden/gen_causal.py", "seed": SEED,
               "cholesky": cholesky_cases(rng), "backdoor": backdoor_cases(rng),
               "frontdoor": frontdoor_cases(rng), "backdoor_dag": backdoor_dag(rng),
               "frontdoor_dag": frontdoor_dag(rng), "iv": iv_cases(rng)}
    with open(OUT, "w") as f:
        json.dump(payload, f, separators=(",", ":"))
        f.write("\n")
    print(f"{OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
