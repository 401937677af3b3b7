#!/usr/bin/env python3
"""Golden data for the elementwise loss gradients (tests/cpu/reference/loss_grads_test.cpp).

Oracle: torch.autograd (any PyTorch 2.x, float64) of the mean losses with respect to the
predictions: l1_loss, huber_loss (delta 1), binary_cross_entropy, and
kl_div(log(p), t, reduction='mean') (Backplane's KLDivergence takes p itself, so the gradient
goes through log). Run from the repository root with a Python that has torch, e.g. a throwaway
venv outside the repository:
    /tmp/torchvenv/bin/python tests/golden/gen_loss_grads.py
Writes tests/golden/data/loss_grads.json.
"""
import json
import os

import torch

torch.manual_seed(20261202)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "loss_grads.json")
F = torch.nn.functional


def grad(fn, p, t):
    p = p.clone().requires_grad_(True)
    fn(p, t).backward()
    return [float(v) for v in p.grad]


def main():
    n = 37
    dt = torch.float64
    cases = []
    # MAE / Huber: random pairs, plus exact ties (p == t) and |p - t| at, above and below 1.
    p = torch.randn(n, dtype=dt) * 2
    t = torch.randn(n, dtype=dt) * 2
    t[0] = p[0]
    t[1] = p[1] - 1.0
    t[2] = p[2] + 1.0
    t[3] = p[3] + 0.999
    t[4] = p[4] - 1.001
    cases.append({"method": "MAEGrad", "p": p.tolist(), "t": t.tolist(),
                  "grad": grad(lambda a, b: F.l1_loss(a, b), p, t)})
    cases.append({"method": "HuberGrad", "p": p.tolist(), "t": t.tolist(),
                  "grad": grad(lambda a, b: F.huber_loss(a, b, delta=1.0), p, t)})
    # BCE: probabilities in (0, 1) with soft and hard labels, plus p = 0 and p = 1 (EPSILON).
    p = torch.rand(n, dtype=dt) * 0.98 + 0.01
    t = torch.rand(n, dtype=dt)
    t[::3] = torch.round(t[::3])
    p[5], t[5] = 0.0, 0.0
    p[6], t[6] = 1.0, 1.0
    p[7], t[7] = 0.0, 0.5
    cases.append({"method": "BinaryCrossEntropyGrad", "p": p.tolist(), "t": t.tolist(),
                  "grad": grad(lambda a, b: F.binary_cross_entropy(a, b), p, t)})
    # KL: positive p and t (torch's -t/p/n through log), with t = 0 entries (torch: -0.0).
    p = torch.rand(n, dtype=dt) + 0.05
    t = torch.rand(n, dtype=dt)
    t[::5] = 0.0
    cases.append({"method": "KLDivergenceGrad", "p": p.tolist(), "t": t.tolist(),
                  "grad": grad(lambda a, b: F.kl_div(torch.log(a), b, reduction="mean"), p, t)})
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/golden/gen_loss_grads.py", "torch": torch.__version__,
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
