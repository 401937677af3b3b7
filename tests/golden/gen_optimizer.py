#!/usr/bin/env python3
"""Golden data for the Optimizer surface (tests/cpu/reference/optimizer_test.cpp).

Run with /usr/bin/python3 (NumPy, PyTorch 1.13) from the repository root:
    /usr/bin/python3 tests/golden/gen_optimizer.py
Writes tests/golden/data/optimizer.json (trajectories) and tests/golden/data/optimizer_large.json
(a 4099-element vector, 3 steps).

Trajectories: every method, two or three hyper-parameter settings, on three problems whose
gradients the C++ test recomputes in float64 from the same data:
  scalar     f(p) = 0.5 a (p - c)^2                      (1 parameter)
  quadratic  f(p) = 0.5 p'Ap - b'p, A SPD 7x7            (gradient Ap - b)
  logistic   mean binary cross-entropy of sigmoid(X w)   (5 parameters: 4 weights and a bias
             column of ones in X; gradient X'(sigmoid(Xw) - y) / N)
Each step: the gradient is computed in float64 from the stored parameters and rounded to the
storage dtype; then one optimizer step. The parameters after steps 1, 10 and 50 are stored.

Oracles (never the code under test):
  Adam, AdamW, Adamax, SGD, RMSprop, Adagrad, Adadelta: torch.optim (foreach=False), in float32
      for f32 and float64 for f64. For f16/bf16 the same torch optimizer runs on a float32 copy
      (float32 state), and the parameters are rounded to the storage dtype after every step:
      exactly Backplane's contract (compute in f32, state in f32, round once on store).
  LBFGS: torch.optim.LBFGS(max_iter=1, line_search_fn=None, default tolerances), one call per
      step with a closure returning the gradient, for f32/f64 (its first step is scaled by
      min(1, 1/|g|_1), as Backplane's). For f16/bf16 storage a NumPy transcription of
      torch's iteration (float32 vectors, float64 dots; checked here against torch in float32).
  Lion: lion-pytorch's update (Chen et al. 2023, Algorithm 1) with torch tensor ops.
  LARS: You et al. 2017, Algorithm 1, with torch tensor ops; norms in float64.
  LAMB: You et al. 2019, Algorithm 2 (phi = identity), with torch tensor ops; norms in float64.
  Hebbian: p += lr * signal (signal = -gradient here); if MaxNorm > 0 and ||p|| > MaxNorm,
      p *= MaxNorm / ||p|| (norm in float64).
Hyper-parameters are float32 values for f32/f16/bf16 storage and the exact float64 values for f64
(the C++ config fields are double; torch.optim takes Python floats).

Requires PyTorch (any 2.x; run it with a throwaway venv's python if /usr/bin/python3 has none).
"""
import json
import math
import os

# One thread everywhere: multi-threaded BLAS dot products would make the goldens vary per run.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

SEED = 20230213
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "optimizer.json")
OUT_LARGE = os.path.join(HERE, "data", "optimizer_large.json")
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
CHECKPOINTS = [1, 10, 50]
STEPS = 50


def f32(x):
    return float(np.float32(x))


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return [float(v) for v in t.to(torch.float64).numpy()]


# ---- Settings (field names as in include/backplane/backend/optimizer.hpp) ---------------------
def adam(lr, b1, b2, eps, wd):
    return {"LearningRate": lr, "Beta1": b1, "Beta2": b2, "Eps": eps, "WeightDecay": wd}


SETTINGS = {
    "Adam": [adam(0.05, 0.9, 0.999, 1e-8, 0.0), adam(0.02, 0.8, 0.99, 1e-6, 0.1)],
    "AdamW": [adam(0.05, 0.9, 0.999, 1e-8, 0.01), adam(0.02, 0.85, 0.98, 1e-6, 0.2)],
    "Adamax": [adam(0.05, 0.9, 0.999, 1e-8, 0.0), adam(0.03, 0.8, 0.95, 1e-6, 0.05)],
    "SGD": [
        {"LearningRate": 0.05, "Momentum": 0.0, "Dampening": 0.0, "WeightDecay": 0.0,
         "Nesterov": False},
        {"LearningRate": 0.03, "Momentum": 0.9, "Dampening": 0.1, "WeightDecay": 0.01,
         "Nesterov": False},
        {"LearningRate": 0.03, "Momentum": 0.8, "Dampening": 0.0, "WeightDecay": 0.02,
         "Nesterov": True},
    ],
    "Lion": [
        {"LearningRate": 0.01, "Beta1": 0.9, "Beta2": 0.99, "WeightDecay": 0.0},
        {"LearningRate": 0.005, "Beta1": 0.95, "Beta2": 0.98, "WeightDecay": 0.1},
    ],
    "RMSprop": [
        {"LearningRate": 0.01, "Alpha": 0.99, "Eps": 1e-8, "WeightDecay": 0.0, "Momentum": 0.0,
         "Centered": False},
        {"LearningRate": 0.005, "Alpha": 0.9, "Eps": 1e-6, "WeightDecay": 0.01, "Momentum": 0.5,
         "Centered": True},
        {"LearningRate": 0.002, "Alpha": 0.95, "Eps": 1e-8, "WeightDecay": 0.0, "Momentum": 0.9,
         "Centered": False},
    ],
    "Hebbian": [
        {"LearningRate": 0.05, "MaxNorm": 0.0},
        {"LearningRate": 0.1, "MaxNorm": 1.0},
    ],
    "LARS": [
        {"LearningRate": 1.0, "Eta": 0.02, "Momentum": 0.9, "WeightDecay": 0.0, "Eps": 1e-8},
        {"LearningRate": 0.5, "Eta": 0.05, "Momentum": 0.5, "WeightDecay": 0.01, "Eps": 1e-6},
    ],
    "LAMB": [adam(0.02, 0.9, 0.999, 1e-6, 0.0), adam(0.01, 0.85, 0.99, 1e-6, 0.05)],
    "Adagrad": [
        {"LearningRate": 0.1, "LrDecay": 0.0, "WeightDecay": 0.0, "Eps": 1e-10},
        {"LearningRate": 0.2, "LrDecay": 0.05, "WeightDecay": 0.02, "Eps": 1e-8},
    ],
    "Adadelta": [
        {"LearningRate": 1.0, "Rho": 0.9, "Eps": 1e-6, "WeightDecay": 0.0},
        {"LearningRate": 0.5, "Rho": 0.95, "Eps": 1e-4, "WeightDecay": 0.05},
    ],
    "LBFGS": [
        {"LearningRate": 1.0, "HistorySize": 10},
        {"LearningRate": 0.5, "HistorySize": 3},
    ],
}


def as_f32_config(cfg):
    out = {}
    for k, v in cfg.items():
        out[k] = v if isinstance(v, (bool, int)) and not isinstance(v, float) else f32(v)
    return out


# ---- Problems: float64 gradients in a fixed summation order (the test uses the same) ----------
def quad_grad(prob, p):
    A, b = prob["A"], prob["b"]
    g = []
    for i in range(len(b)):
        s = 0.0
        for j in range(len(p)):
            s += A[i][j] * p[j]
        g.append(s - b[i])
    return g


def logistic_grad(prob, p):
    X, y = prob["X"], prob["y"]
    n = len(y)
    g = [0.0] * len(p)
    for i in range(n):
        z = 0.0
        for j in range(len(p)):
            z += X[i][j] * p[j]
        r = 1.0 / (1.0 + math.exp(-z)) - y[i]
        for j in range(len(p)):
            g[j] += r * X[i][j]
    return [v / n for v in g]


def gradient(prob, p):
    return quad_grad(prob, p) if prob["kind"] == "quadratic" else logistic_grad(prob, p)


def make_problems(rng):
    # scalar: 0.5 a (p - c)^2 written as A = [[a]], b = [a c].
    scalar = {"kind": "quadratic", "A": [[2.5]], "b": [2.5 * 1.75], "p0": [-0.5]}
    # A = B B' / 2 + I / 2: symmetric positive definite, built with exactly rounded sums (no
    # BLAS), so the data are the same on every run.
    n = 7
    B = rng.uniform(-1.0, 1.0, (n, n))
    A = np.array([[math.fsum(B[i] * B[j]) / 2 + (0.5 if i == j else 0.0) for j in range(n)]
                  for i in range(n)])
    b = rng.uniform(-2.0, 2.0, n)
    quadratic = {"kind": "quadratic", "A": A.tolist(), "b": b.tolist(),
                 "p0": rng.uniform(-1.5, 1.5, n).tolist()}
    N, d = 24, 4
    X = np.concatenate([rng.standard_normal((N, d)), np.ones((N, 1))], axis=1)
    w_true = np.array([1.5, -2.0, 0.5, 1.0, 0.3])
    y = (rng.uniform(0, 1, N) < 1 / (1 + np.exp(-X @ w_true))).astype(np.float64)
    y[:3] = 1.0 - y[:3]  # label noise: the classes overlap, so the optimum is finite
    logistic = {"kind": "logistic", "X": X.tolist(), "y": y.tolist(),
                "p0": rng.uniform(-0.5, 0.5, d + 1).tolist()}
    # Check the logistic optimum is finite: plain gradient descent drives the gradient to ~0.
    w = np.zeros(d + 1)
    for _ in range(20000):
        w -= 2.0 * np.array(logistic_grad(logistic, w.tolist()))
    assert np.max(np.abs(logistic_grad(logistic, w.tolist()))) < 1e-8, "separable data"
    eig = np.linalg.eigvalsh(A)
    assert 0.5 <= eig[0] and eig[-1] < 8.0, eig  # SGD with lr 0.05 is stable
    assert np.linalg.norm(np.linalg.solve(A, b)) > 1.5  # Hebbian's MaxNorm 1 is active
    return {"scalar": scalar, "quadratic": quadratic, "logistic": logistic}


# ---- Oracles ---------------------------------------------------------------------------------
TORCH = {
    "Adam": lambda p, c: torch.optim.Adam([p], lr=c["LearningRate"],
                                          betas=(c["Beta1"], c["Beta2"]), eps=c["Eps"],
                                          weight_decay=c["WeightDecay"], foreach=False),
    "AdamW": lambda p, c: torch.optim.AdamW([p], lr=c["LearningRate"],
                                            betas=(c["Beta1"], c["Beta2"]), eps=c["Eps"],
                                            weight_decay=c["WeightDecay"], foreach=False),
    "Adamax": lambda p, c: torch.optim.Adamax([p], lr=c["LearningRate"],
                                              betas=(c["Beta1"], c["Beta2"]), eps=c["Eps"],
                                              weight_decay=c["WeightDecay"], foreach=False),
    "SGD": lambda p, c: torch.optim.SGD([p], lr=c["LearningRate"], momentum=c["Momentum"],
                                        dampening=c["Dampening"],
                                        weight_decay=c["WeightDecay"], nesterov=c["Nesterov"],
                                        foreach=False),
    "RMSprop": lambda p, c: torch.optim.RMSprop([p], lr=c["LearningRate"], alpha=c["Alpha"],
                                                eps=c["Eps"], weight_decay=c["WeightDecay"],
                                                momentum=c["Momentum"], centered=c["Centered"],
                                                foreach=False),
    "Adagrad": lambda p, c: torch.optim.Adagrad([p], lr=c["LearningRate"],
                                                lr_decay=c["LrDecay"],
                                                weight_decay=c["WeightDecay"], eps=c["Eps"],
                                                foreach=False),
    "Adadelta": lambda p, c: torch.optim.Adadelta([p], lr=c["LearningRate"], rho=c["Rho"],
                                                  eps=c["Eps"], weight_decay=c["WeightDecay"],
                                                  foreach=False),
}


class TorchStepper:
    def __init__(self, method, cfg, p):
        self.p = p
        self.opt = TORCH[method](p, cfg)

    def step(self, g):
        self.p.grad = g.clone()
        self.opt.step()


class LBFGSTorch:
    def __init__(self, cfg, p):
        self.p = p
        self.opt = torch.optim.LBFGS([p], lr=cfg["LearningRate"], max_iter=1,
                                     history_size=cfg["HistorySize"], line_search_fn=None)

    def step(self, g):
        def closure():
            self.p.grad = g.clone()
            return torch.zeros((), dtype=g.dtype)

        self.opt.step(closure)


def dot64(a, b):
    """Dot product of two vectors in float64, exactly rounded (deterministic, no BLAS)."""
    return math.fsum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64))


class LBFGSTextbook:
    """torch.optim.LBFGS's iteration (max_iter=1, no line search, tolerance_grad 1e-7,
    tolerance_change 1e-9) with Backplane's storage contract: vectors in float32, dots in float64,
    s = t d."""

    def __init__(self, cfg, p):
        self.p = p
        self.lr = cfg["LearningRate"]
        self.m = cfg["HistorySize"]
        self.pairs = []  # oldest first: (s, y, rho)
        self.prev_g = None
        self.last = None  # t d of the previous iteration
        self.k = 0

    def step(self, g):
        p = self.p.detach().numpy().astype(np.float32)
        g = g.numpy().astype(np.float32)
        if np.abs(g).max() <= 1e-7:
            return
        self.k += 1
        if self.k > 1:
            y = g - self.prev_g
            s = self.last
            ys = dot64(y, s)
            if ys > 1e-10:
                if len(self.pairs) == self.m:
                    self.pairs.pop(0)
                self.pairs.append((s, y, 1.0 / ys))
        q = -g
        alphas = []
        for s, y, rho in reversed(self.pairs):
            a = dot64(s, q) * rho
            alphas.append(a)
            q = q - np.float32(a) * y
        alphas.reverse()
        h_diag = 1.0
        if self.pairs:
            s, y, _ = self.pairs[-1]
            h_diag = dot64(y, s) / dot64(y, y)
        d = q * np.float32(h_diag)
        for (s, y, rho), a in zip(self.pairs, alphas):
            beta = dot64(y, d) * rho
            d = d + np.float32(a - beta) * s
        t = min(1.0, 1.0 / math.fsum(np.abs(g.astype(np.float64)))) * self.lr if self.k == 1 else self.lr
        self.prev_g = g
        self.last = d * np.float32(t)
        if dot64(g, d) > -1e-9:
            return
        with torch.no_grad():
            self.p.copy_(torch.from_numpy(p + self.last))


def norm64(t):
    return math.sqrt(dot64(t.numpy(), t.numpy()))


class Lion:
    def __init__(self, cfg, p):
        self.p, self.c = p, cfg
        self.m = torch.zeros_like(p)

    def step(self, g):
        c, p, m = self.c, self.p.data, self.m
        p.mul_(1 - c["LearningRate"] * c["WeightDecay"])
        update = m.clone().mul_(c["Beta1"]).add(g, alpha=1 - c["Beta1"]).sign_()
        p.add_(update, alpha=-c["LearningRate"])
        m.mul_(c["Beta2"]).add_(g, alpha=1 - c["Beta2"])


class LARS:
    def __init__(self, cfg, p):
        self.p, self.c = p, cfg
        self.v = torch.zeros_like(p)

    def step(self, g):
        c, p = self.c, self.p.data
        pn, gn = norm64(p), norm64(g)
        if pn == 0.0 or gn == 0.0:
            trust = 1.0
        else:
            trust = c["Eta"] * pn / (gn + c["WeightDecay"] * pn + c["Eps"])
        d = g.add(p, alpha=c["WeightDecay"]) if c["WeightDecay"] != 0 else g
        self.v.mul_(c["Momentum"]).add_(d, alpha=c["LearningRate"] * trust)
        p.sub_(self.v)


class LAMB:
    def __init__(self, cfg, p):
        self.p, self.c = p, cfg
        self.m = torch.zeros_like(p)
        self.v = torch.zeros_like(p)
        self.t = 0

    def step(self, g):
        c, p = self.c, self.p.data
        self.t += 1
        self.m.mul_(c["Beta1"]).add_(g, alpha=1 - c["Beta1"])
        self.v.mul_(c["Beta2"]).addcmul_(g, g, value=1 - c["Beta2"])
        bc1 = 1 - c["Beta1"] ** self.t
        bc2 = 1 - c["Beta2"] ** self.t
        r = (self.m / bc1) / ((self.v / bc2).sqrt() + c["Eps"])
        if c["WeightDecay"] != 0:
            r = r.add(p, alpha=c["WeightDecay"])
        pn, rn = norm64(p), norm64(r)
        ratio = 1.0 if pn == 0.0 or rn == 0.0 else pn / rn
        p.add_(r, alpha=-c["LearningRate"] * ratio)


class Hebbian:
    def __init__(self, cfg, p):
        self.p, self.c = p, cfg

    def step(self, g):
        c, p = self.c, self.p.data
        p.add_(-g, alpha=c["LearningRate"])  # signal = -gradient
        if c["MaxNorm"] > 0:
            n = norm64(p)
            if n > c["MaxNorm"]:
                p.mul_(c["MaxNorm"] / n)


def make_stepper(method, cfg, p, storage):
    if method in TORCH:
        return TorchStepper(method, cfg, p)
    if method == "LBFGS":
        return LBFGSTorch(cfg, p) if storage in ("f32", "f64") else LBFGSTextbook(cfg, p)
    return {"Lion": Lion, "LARS": LARS, "LAMB": LAMB, "Hebbian": Hebbian}[method](cfg, p)


def trajectory(method, cfg, storage, p0, grad_fn, steps, checkpoints):
    """Runs `steps` steps; returns {step: params as float64 list} at the checkpoints."""
    compute = torch.float64 if storage == "f64" else torch.float32
    dt = DTYPES[storage]
    p = torch.tensor(p0, dtype=torch.float64).to(dt).to(compute)
    stepper = make_stepper(method, cfg, p, storage)
    out = {}
    for k in range(1, steps + 1):
        g64 = grad_fn([float(v) for v in p.to(torch.float64)])
        g = torch.tensor(g64, dtype=torch.float64).to(dt).to(compute)
        stepper.step(g)
        with torch.no_grad():
            p.copy_(p.to(dt).to(compute))  # round once on store
        if k in checkpoints:
            out[str(k)] = [float(v) for v in p.to(torch.float64)]
    return out


def check_lbfgs_textbook(problems):
    """The NumPy textbook L-BFGS and torch.optim.LBFGS agree (float32 storage and compute)."""
    for name, prob in problems.items():
        for cfg in SETTINGS["LBFGS"]:
            cfg = as_f32_config(cfg)
            a = trajectory("LBFGS", cfg, "f32", prob["p0"], lambda p: gradient(prob, p), 10,
                           [10])
            p = torch.tensor(prob["p0"], dtype=torch.float32)
            stepper = LBFGSTextbook(cfg, p)
            for _ in range(10):
                g = torch.tensor(gradient(prob, [float(v) for v in p.to(torch.float64)]),
                                 dtype=torch.float64).to(torch.float32)
                stepper.step(g)
            assert np.allclose(a["10"], p.numpy(), rtol=1e-5, atol=1e-5), (name, a, p)


# ---- Large: 4099 elements, 3 steps on a separable quadratic with exact rational data ----------
LARGE_N = 4099
LARGE_STEPS = 3


def large_data():
    # The same formulas in the C++ test; every value is an exactly rounded float64 quotient.
    i = np.arange(LARGE_N)
    p0 = ((i * 37) % 101) / 25.0 - 2.0
    a = 0.5 + ((i * 53) % 89) / 32.0
    c = ((i * 71) % 97) / 48.0 - 1.0
    return p0, a, c


LARGE_SETTINGS = {m: s[-1] for m, s in SETTINGS.items()}
LARGE_SETTINGS["Hebbian"] = {"LearningRate": 0.1, "MaxNorm": 50.0}  # ||p|| ~ 70: active
LARGE_SETTINGS["LBFGS"] = {"LearningRate": 0.5, "HistorySize": 3}
SAMPLES = sorted(set(list(range(0, LARGE_N, 41)) + [1, 2, 4095, 4096, 4097, 4098]))


def loss(prob, p):
    """The objective whose gradient is gradient(prob, p) (torch's loss-change test reads it)."""
    if prob["kind"] == "quadratic":
        g = quad_grad(prob, p)  # A p - b
        return 0.5 * sum((gi + bi) * pi for gi, bi, pi in zip(g, prob["b"], p)) - \
            sum(bi * pi for bi, pi in zip(prob["b"], p))
    total = 0.0
    for xi, yi in zip(prob["X"], prob["y"]):
        z = sum(a * b for a, b in zip(xi, p))
        total += math.log1p(math.exp(z)) - yi * z
    return total / len(prob["y"])


def lbfgs_torch_steps(problems):
    """torch.optim.LBFGS with max_iter > 1 in float64: per step() call, its iteration count and
    the params after it (each of its iterations is one Backplane call)."""
    out = []
    for pname in ("quadratic", "logistic"):
        prob = problems[pname]
        for lr, hist, max_iter in ((1.0, 3, 5), (0.3, 10, 4)):
            p = torch.tensor(prob["p0"], dtype=torch.float64)
            opt = torch.optim.LBFGS([p], lr=lr, max_iter=max_iter, history_size=hist)

            def closure():
                p.grad = torch.tensor(gradient(prob, [float(v) for v in p]), dtype=torch.float64)
                return torch.tensor(loss(prob, [float(v) for v in p]), dtype=torch.float64)

            steps = []
            for _ in range(6):
                opt.step(closure)
                steps.append({"n_iter": opt.state[p]["n_iter"], "params": [float(v) for v in p]})
            out.append({"problem": pname, "p0": prob["p0"],
                        "config": {"LearningRate": lr, "HistorySize": hist, "MaxIter": max_iter},
                        "steps": steps})
    return out


def main():
    rng = np.random.default_rng(SEED)
    problems = make_problems(rng)
    check_lbfgs_textbook(problems)
    cases = []
    for method, settings in SETTINGS.items():
        for si, cfg in enumerate(settings):
            for pname, prob in problems.items():
                for storage in DTYPES:
                    cfg_s = cfg if storage == "f64" else as_f32_config(cfg)
                    p0 = rounded(prob["p0"], storage)
                    traj = trajectory(method, cfg_s, storage, p0, lambda p: gradient(prob, p),
                                      STEPS, CHECKPOINTS)
                    cases.append({"method": method, "setting": si, "config": cfg_s,
                                  "problem": pname, "dtype": storage, "p0": p0,
                                  "params": traj})
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_optimizer.py", "seed": SEED,
                   "problems": {k: {kk: vv for kk, vv in v.items() if kk != "p0"}
                                for k, v in problems.items()},
                   "steps": STEPS, "checkpoints": CHECKPOINTS, "cases": cases,
                   "lbfgs_max_iter": lbfgs_torch_steps(problems)}, f,
                  separators=(",", ":"))
        f.write("\n")

    p0, a, c = large_data()
    large = []
    for method, cfg64 in LARGE_SETTINGS.items():
        for storage in DTYPES:
            cfg = cfg64 if storage == "f64" else as_f32_config(cfg64)
            traj = trajectory(method, cfg, storage, rounded(p0, storage),
                              lambda p: list(a * (np.asarray(p) - c)), LARGE_STEPS,
                              [LARGE_STEPS])
            final = np.array(traj[str(LARGE_STEPS)])
            large.append({"method": method, "config": cfg, "dtype": storage,
                          "samples": [float(final[k]) for k in SAMPLES],
                          "sum": float(np.sum(final)), "sum_abs": float(np.sum(np.abs(final)))})
    with open(OUT_LARGE, "w") as f:
        json.dump({"generator": "tests/golden/gen_optimizer.py", "count": LARGE_N,
                   "steps": LARGE_STEPS, "sample_indices": SAMPLES, "cases": large}, f,
                  separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
