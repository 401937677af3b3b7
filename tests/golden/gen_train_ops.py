#!/usr/bin/python3
"""Golden data for the graph-level training ops (tests/runtime/train_ops_test.cpp, lowerings in
src/runtime/ops/train_ops.cpp).

Run with a Python that has NumPy and PyTorch (2.x; a throwaway venv outside the repository if
the system one has none) from anywhere:
    /tmp/torchvenv/bin/python tests/golden/gen_train_ops.py
Writes tests/golden/data/train_ops.json with two lists:

"cases": one graph node each (losses and their gradients): op, inputs (dtype, shape, values) and
  the expected output, computed by torch in float64 (losses by torch.nn.functional, gradients by
  autograd) from inputs rounded to their storage dtype.

"trajectories": a training problem run step by step. Parameter w (dtype, shape), graph inputs a
  (a per-element scale) and t (the target); the loss is mean((a w - t)^2), so its Hessian is not
  a multiple of the identity. The graph computes the gradient with ops (a * mse_grad(a w, t)) and
  steps the optimizer; "steps" lists w after each run. Expected values come from torch.optim in
  float64 on the same problem (L-BFGS: torch.optim.LBFGS(max_iter=1), one iteration per run), or,
  for optimizers torch lacks (Lion, LARS, LAMB, Hebbian), from the NumPy float64 implementations
  below of the papers' update rules. Hyper-parameters are used as the exact float64 values (the
  Backend's configs hold doubles).
"""

import os

import numpy as np
import torch
import torch.nn.functional as F

from philox_golden import write_json

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "train_ops.json")
TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
RNG = np.random.default_rng(20241102)
STEPS = 20


def rounded(values, dtype):
    """float64 values rounded (RNE) to the storage dtype, as float64."""
    t = torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64)
    return t.to(TORCH[dtype]).to(torch.float64).numpy()


def tensor(dtype, shape, lo=-3.0, hi=3.0):
    return rounded(RNG.uniform(lo, hi, shape), dtype)


def encode(dtype, a):
    a = np.asarray(a, dtype=np.float64)
    assert np.all(np.isfinite(a)), "goldens hold finite values only"
    return {"dtype": dtype, "shape": list(a.shape), "values": [float(v) for v in a.ravel()]}


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


CASES = []
TRAJECTORIES = []


def case(name, op, inputs, output):
    CASES.append({"name": name, "op": op, "inputs": [encode(*i) for i in inputs], "output": encode(*output)})


# ---- losses and gradients ------------------------------------------------------------------------
def kl(p, t):
    """mean of t ln(t / p) with 0 ln(0 / p) = 0 (torch.xlogy)."""
    return (torch.xlogy(t, t) - torch.xlogy(t, p)).mean()


LOSSES = {
    "train.loss.mse": (F.mse_loss, (-3, 3), (-3, 3)),
    "train.loss.mae": (F.l1_loss, (-3, 3), (-3, 3)),
    "train.loss.huber": (lambda p, t: F.huber_loss(p, t, delta=1.0), (-3, 3), (-3, 3)),
    "train.loss.binary_cross_entropy": (F.binary_cross_entropy, (0.02, 0.98), (0.0, 1.0)),
    "train.loss.kl_divergence": (kl, (0.05, 1.0), (0.0, 1.0)),
}


def gen_losses():
    for op, (fn, prange, trange) in LOSSES.items():
        for dtype, shape in [("f64", [2, 3, 4]), ("f32", [5]), ("bf16", [3, 2]), ("f16", [])]:
            p, t = tensor(dtype, shape, *prange), tensor(dtype, shape, *trange)
            loss = fn(t64(p), t64(t)).item()
            case(f"{op} {dtype} {shape}", op, [(dtype, p), (dtype, t)], (dtype, loss))


def class_inputs(dtype, batch, classes):
    logits = tensor(dtype, [classes] if batch is None else [batch, classes], -4, 4)
    targets = RNG.integers(0, classes, size=[] if batch is None else [batch]).astype(np.float64)
    return logits, targets


def gen_cross_entropy():
    for dtype, batch, classes in [("f64", 4, 5), ("f32", 3, 7), ("bf16", 2, 3), ("f32", None, 6)]:
        logits, targets = class_inputs(dtype, batch, classes)
        loss = F.cross_entropy(t64(logits), torch.tensor(targets, dtype=torch.int64)).item()
        case(f"cross_entropy {dtype} b{batch} c{classes}", "train.loss.cross_entropy",
             [(dtype, logits), ("i32", targets)], (dtype, loss))


def gen_gradients():
    for dtype, shape in [("f64", [3, 4]), ("f32", [2, 3, 2]), ("f16", [5])]:
        p, t = tensor(dtype, shape), tensor(dtype, shape)
        x = t64(p).requires_grad_()
        F.mse_loss(x, t64(t)).backward()
        case(f"mse_grad {dtype} {shape}", "train.loss.mse_grad", [(dtype, p), (dtype, t)], (dtype, x.grad.numpy()))
    for dtype, batch, classes in [("f64", 4, 5), ("f32", 3, 7), ("bf16", 2, 4)]:
        logits, targets = class_inputs(dtype, batch, classes)
        x = t64(logits).requires_grad_()
        F.cross_entropy(x, torch.tensor(targets, dtype=torch.int64)).backward()
        case(f"cross_entropy_grad {dtype} b{batch} c{classes}", "train.loss.cross_entropy_grad",
             [(dtype, logits), ("i32", targets)], (dtype, x.grad.numpy()))


def gen_loss_gradients():
    """d(mean loss)/d(predictions) of MAE, Huber, BCE and KL by autograd (after the optimizers, so
    that the earlier cases keep their random draws)."""
    for op in ("train.loss.mae", "train.loss.huber", "train.loss.binary_cross_entropy", "train.loss.kl_divergence"):
        fn, prange, trange = LOSSES[op]
        for dtype, shape in [("f64", [3, 4]), ("f32", [2, 3]), ("bf16", [5])]:
            p, t = tensor(dtype, shape, *prange), tensor(dtype, shape, *trange)
            x = t64(p).requires_grad_()
            fn(x, t64(t)).backward()
            case(f"{op}_grad {dtype} {shape}", op + "_grad", [(dtype, p), (dtype, t)], (dtype, x.grad.numpy()))


# ---- optimizers -----------------------------------------------------------------------------------
def f32(x):
    return float(np.float32(x))


def grad_of(w, a, t):
    """d/dw mean((a w - t)^2), by torch autograd."""
    x = t64(w).requires_grad_()
    F.mse_loss(x * t64(a), t64(t)).backward()
    return x.grad.numpy()


def torch_steps(make, w0, a, t):
    w = t64(w0).requires_grad_()
    opt = make([w])
    out = []
    for _ in range(STEPS):
        opt.zero_grad()
        F.mse_loss(w * t64(a), t64(t)).backward()
        opt.step()
        out.append(w.detach().numpy().copy())
    return out


def numpy_steps(step, w0, a, t):
    """step(w, g, state, k) -> new w, for k = 1, 2, ..."""
    w, state, out = w0.copy(), {}, []
    for k in range(1, STEPS + 1):
        w = step(w, grad_of(w, a, t), state, k)
        out.append(w.copy())
    return out


def lion(lr, beta1, beta2, weight_decay):
    def step(p, g, s, k):
        m = s.get("m", np.zeros_like(p))
        c = beta1 * m + (1 - beta1) * g
        s["m"] = beta2 * m + (1 - beta2) * g
        return p * (1 - lr * weight_decay) - lr * np.sign(c)
    return step


def lars(lr, eta, momentum, weight_decay, eps):
    def step(p, g, s, k):
        pn, gn = np.linalg.norm(p), np.linalg.norm(g)
        local = 1.0 if pn == 0 or gn == 0 else eta * pn / (gn + weight_decay * pn + eps)
        s["v"] = momentum * s.get("v", np.zeros_like(p)) + lr * local * (g + weight_decay * p)
        return p - s["v"]
    return step


def lamb(lr, beta1, beta2, eps, weight_decay):
    def step(p, g, s, k):
        s["m"] = beta1 * s.get("m", np.zeros_like(p)) + (1 - beta1) * g
        s["v"] = beta2 * s.get("v", np.zeros_like(p)) + (1 - beta2) * g * g
        r = (s["m"] / (1 - beta1**k)) / (np.sqrt(s["v"] / (1 - beta2**k)) + eps) + weight_decay * p
        pn, rn = np.linalg.norm(p), np.linalg.norm(r)
        return p - lr * (1.0 if pn == 0 or rn == 0 else pn / rn) * r
    return step


def hebbian(lr, max_norm):
    def step(p, g, s, k):
        p = p + lr * g
        n = np.linalg.norm(p)
        return p * (max_norm / n) if 0 < max_norm < n else p
    return step


def torch_lbfgs_steps(make, w0, a, t):
    """torch.optim.LBFGS(max_iter=1): one closure evaluation and one iteration per run."""
    w = t64(w0).requires_grad_()
    opt = make([w])

    def closure():
        opt.zero_grad()
        loss = F.mse_loss(w * t64(a), t64(t))
        loss.backward()
        return loss

    out = []
    for _ in range(STEPS):
        opt.step(closure)
        out.append(w.detach().numpy().copy())
    return out


def trajectory(name, op, dtype, attrs, steps_fn):
    shape = [3, 2]
    w0 = tensor(dtype, shape)
    a = tensor(dtype, shape, 0.5, 2.0)
    t = tensor(dtype, shape)
    steps = steps_fn(w0, a, t)
    TRAJECTORIES.append({"name": name, "op": op, "attrs": attrs, "w0": encode(dtype, w0),
                         "a": encode(dtype, a), "t": encode(dtype, t),
                         "steps": [encode(dtype, w) for w in steps]})


def torch_case(name, op, dtype, attrs, make):
    trajectory(name, op, dtype, attrs, lambda w0, a, t: torch_steps(make, w0, a, t))


def numpy_case(name, op, dtype, attrs, step):
    trajectory(name, op, dtype, attrs, lambda w0, a, t: numpy_steps(step, w0, a, t))


def gen_optimizers():
    O = torch.optim
    for dtype in ("f64", "f32"):
        torch_case(f"adam {dtype}", "train.optimizer.adam", dtype, {"lr": 0.05},
                   lambda p: O.Adam(p, lr=float(0.05), betas=(float(0.9), float(0.999)), eps=float(1e-8), foreach=False))
        torch_case(f"sgd momentum {dtype}", "train.optimizer.sgd", dtype, {"lr": 0.05, "momentum": 0.9},
                   lambda p: O.SGD(p, lr=float(0.05), momentum=float(0.9), foreach=False))
    torch_case("adam weight decay", "train.optimizer.adam", "f64", {"lr": 0.05, "weight_decay": 0.1, "beta2": 0.99},
               lambda p: O.Adam(p, lr=float(0.05), betas=(float(0.9), float(0.99)), eps=float(1e-8),
                                weight_decay=float(0.1), foreach=False))
    torch_case("adamw defaults", "train.optimizer.adamw", "f64", {"lr": 0.05},
               lambda p: O.AdamW(p, lr=float(0.05), betas=(float(0.9), float(0.999)), eps=float(1e-8),
                                 weight_decay=float(0.01), foreach=False))
    torch_case("adamax", "train.optimizer.adamax", "f64", {"weight_decay": 0.01},
               lambda p: O.Adamax(p, lr=float(0.002), betas=(float(0.9), float(0.999)), eps=float(1e-8),
                                  weight_decay=float(0.01), foreach=False))
    torch_case("sgd nesterov weight decay", "train.optimizer.sgd", "f64",
               {"lr": 0.02, "momentum": 0.8, "nesterov": True, "weight_decay": 0.05},
               lambda p: O.SGD(p, lr=float(0.02), momentum=float(0.8), nesterov=True, weight_decay=float(0.05),
                               foreach=False))
    torch_case("sgd dampening", "train.optimizer.sgd", "f64", {"lr": 0.1, "momentum": 0.5, "dampening": 0.3},
               lambda p: O.SGD(p, lr=float(0.1), momentum=float(0.5), dampening=float(0.3), foreach=False))
    torch_case("rmsprop defaults", "train.optimizer.rmsprop", "f64", {},
               lambda p: O.RMSprop(p, lr=float(0.01), alpha=float(0.99), eps=float(1e-8), foreach=False))
    torch_case("rmsprop centered momentum", "train.optimizer.rmsprop", "f64",
               {"lr": 0.005, "momentum": 0.7, "centered": True, "weight_decay": 0.02},
               lambda p: O.RMSprop(p, lr=float(0.005), alpha=float(0.99), eps=float(1e-8), momentum=float(0.7),
                                   centered=True, weight_decay=float(0.02), foreach=False))
    torch_case("adagrad lr decay", "train.optimizer.adagrad", "f64", {"lr": 0.3, "lr_decay": 0.05, "weight_decay": 0.01},
               lambda p: O.Adagrad(p, lr=float(0.3), lr_decay=float(0.05), weight_decay=float(0.01), eps=float(1e-10),
                                   foreach=False))
    torch_case("adadelta", "train.optimizer.adadelta", "f64", {"rho": 0.8},
               lambda p: O.Adadelta(p, lr=float(1.0), rho=float(0.8), eps=float(1e-6), foreach=False))
    numpy_case("lion", "train.optimizer.lion", "f64", {"lr": 0.01, "weight_decay": 0.1},
               lion(float(0.01), float(0.9), float(0.99), float(0.1)))
    numpy_case("lars", "train.optimizer.lars", "f64", {"lr": 0.5, "eta": 0.02, "weight_decay": 0.001},
               lars(float(0.5), float(0.02), float(0.9), float(0.001), float(1e-8)))
    numpy_case("lamb", "train.optimizer.lamb", "f64", {"lr": 0.02, "weight_decay": 0.01},
               lamb(float(0.02), float(0.9), float(0.999), float(1e-6), float(0.01)))
    numpy_case("hebbian max norm", "train.optimizer.hebbian", "f64", {"lr": 0.25, "max_norm": 6.0},
               hebbian(float(0.25), float(6.0)))
    trajectory("lbfgs history 3", "train.optimizer.lbfgs", "f64", {"lr": 0.5, "history_size": 3},
               lambda w0, a, t: torch_lbfgs_steps(lambda p: O.LBFGS(p, lr=0.5, max_iter=1, history_size=3),
                                                  w0, a, t))


def main():
    gen_losses()
    gen_cross_entropy()
    gen_gradients()
    gen_optimizers()
    gen_loss_gradients()
    write_json(OUT, {"generator": "tests/golden/gen_train_ops.py", "cases": CASES, "trajectories": TRAJECTORIES})


if __name__ == "__main__":
    main()
