#!/usr/bin/python3
"""Golden data for the graph-level math, reduction and elementwise ops
(tests/runtime/math_ops_test.cpp, lowerings in src/runtime/ops/math_ops.cpp).

Run with the system Python (NumPy, SciPy, PyTorch 1.13) from anywhere:
    /usr/bin/python3 tests/golden/gen_math_ops.py
Writes tests/golden/data/math_ops.json.

Each case is one graph node: op, attrs, inputs (dtype, shape, values; null for an omitted
optional input) and the expected output of each successive run of the same executor. Inputs are
drawn from a fixed seed and rounded to their storage dtype with torch (round to nearest even);
expected values are computed in float64 by NumPy / SciPy / PyTorch from those rounded inputs, so
they never come from the code under test. Dropout masks come from the independent Python Philox
in philox_golden.py (through gen_dropout.expected).
"""

import os

import numpy as np
import scipy.special
import torch
import torch.nn.functional as F

from gen_dropout import expected as dropout_expected
from philox_golden import write_json

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "math_ops.json")
TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
RNG = np.random.default_rng(20240930)
SEED_STEP = 0x9E3779B97F4A7C15  # math.dropout: seed of call c = seed + SEED_STEP * c (mod 2^64)


def rounded(values, dtype):
    """float64 values rounded (RNE) to the storage dtype, as float64."""
    if dtype == "i8":
        return np.asarray(values, dtype=np.float64)
    t = torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64)
    return t.to(TORCH[dtype]).to(torch.float64).numpy()


def tensor(dtype, shape, lo=-4.0, hi=4.0):
    """A random input rounded to dtype, as a float64 array of the given shape."""
    n = int(np.prod(shape, dtype=np.int64))
    return rounded(RNG.uniform(lo, hi, n), dtype).reshape(shape)


def encode(dtype, a):
    a = np.asarray(a, dtype=np.float64)
    assert np.all(np.isfinite(a)), "goldens hold finite values only"
    return {"dtype": dtype, "shape": list(a.shape), "values": [float(v) for v in a.ravel()]}


CASES = []


def case(name, op, inputs, outputs, attrs=None):
    """inputs: list of (dtype, array) or None; outputs: list of (dtype, array), one per run."""
    CASES.append({
        "name": name,
        "op": op,
        "attrs": attrs or {},
        "inputs": [None if i is None else encode(*i) for i in inputs],
        "runs": [encode(*o) for o in outputs],
    })


# ---- elementwise ----------------------------------------------------------------------------------
BINARY = {"math.add": np.add, "math.sub": np.subtract, "math.mul": np.multiply,
          "math.div": np.divide, "math.maximum": np.maximum, "math.minimum": np.minimum}
# (dtype, shape a, shape b): NumPy broadcasting in both directions, a scalar, equal shapes.
BROADCASTS = [("f32", [2, 1, 4], [3, 1]), ("f16", [3, 4], [4]), ("bf16", [], [2, 3]),
              ("f64", [2, 3], [2, 3]), ("f32", [4, 1], [1, 3])]


def divisor(dtype, shape):
    """Values with |x| in [0.5, 4) and a random sign."""
    return tensor(dtype, shape, 0.5, 4.0) * RNG.choice([-1.0, 1.0], size=shape)


def gen_binary():
    for op, fn in BINARY.items():
        for dtype, sa, sb in BROADCASTS:
            a = tensor(dtype, sa)
            b = divisor(dtype, sb) if op == "math.div" else tensor(dtype, sb)
            name = f"{op} {dtype} {sa} {sb}"
            case(name, op, [(dtype, a), (dtype, b)], [(dtype, fn(a, b))])


UNARY = {"math.abs": np.abs, "math.neg": np.negative, "math.sqrt": np.sqrt,
         "elementwise.relu": lambda x: np.where(x < 0, 0.0, x), "math.sin": np.sin,
         "math.cos": np.cos, "math.sign": np.sign}


def gen_unary():
    for op, fn in UNARY.items():
        for dtype, shape in [("f32", [2, 3, 4]), ("f16", [5]), ("bf16", [3, 2]), ("f64", [])]:
            x = tensor(dtype, shape, 0.0, 9.0) if op == "math.sqrt" else tensor(dtype, shape)
            if op == "math.sign" and x.size > 2:
                x.ravel()[:2] = 0.0  # sign(0) = 0
            case(f"{op} {dtype} {shape}", op, [(dtype, x)], [(dtype, fn(x))])


def gen_axpy():
    # (dtype, y shape, x shape, alpha): alphas exact in f32, as the kernel takes a float.
    for dtype, sy, sx, alpha in [("f32", [2, 3, 4], [3, 1], 0.75), ("f64", [3, 4], [4], -2.0),
                                 ("f16", [2, 3], [2, 3], None), ("bf16", [2, 2], [], 1.5)]:
        y, x = tensor(dtype, sy), tensor(dtype, sx)
        a = 1.0 if alpha is None else alpha
        attrs = {} if alpha is None else {"alpha": alpha}
        case(f"math.axpy {dtype} {sy} {sx}", "math.axpy", [(dtype, y), (dtype, x)], [(dtype, y + a * x)], attrs)


# ---- products -------------------------------------------------------------------------------------
def gen_products():
    # numpy.matmul: batch broadcast both ways, 1-D operands on either side, a shared weight.
    for dtype, sa, sb in [("f32", [2, 1, 3, 4], [5, 4, 6]), ("f16", [3, 4], [4, 5]),
                          ("bf16", [4], [2, 4, 3]), ("f64", [2, 3, 4], [4]), ("f32", [4], [4]),
                          ("f32", [2, 3, 4], [4, 5]), ("f64", [1, 3, 4], [2, 4, 2]),
                          ("f32", [2, 3, 0], [0, 2])]:
        a, b = tensor(dtype, sa), tensor(dtype, sb)
        case(f"math.matmul {dtype} {sa} {sb}", "math.matmul", [(dtype, a), (dtype, b)],
             [(dtype, np.matmul(a, b))])
    for dtype, m, n in [("f32", 3, 4), ("bf16", 2, 5), ("f64", 1, 3)]:
        a, b = tensor(dtype, [m]), tensor(dtype, [n])
        case(f"math.outer {dtype} {m}x{n}", "math.outer", [(dtype, a), (dtype, b)], [(dtype, np.outer(a, b))])
    for dtype, n in [("f32", 7), ("f64", 5), ("f16", 6), ("f32", 0)]:
        a, b = tensor(dtype, [n]), tensor(dtype, [n])
        case(f"math.dot {dtype} {n}", "math.dot", [(dtype, a), (dtype, b)], [(dtype, np.dot(a, b))])
    a = RNG.integers(-128, 128, 9)
    b = RNG.integers(-128, 128, 9)
    exact = sum(int(x) * int(y) for x, y in zip(a, b))
    case("math.dot i8 9", "math.dot", [("i8", a), ("i8", b)], [("i64", np.float64(exact))])


# ---- axis ops -------------------------------------------------------------------------------------
def gen_logsumexp():
    x = tensor("f32", [2, 3, 4])
    for axis in [0, 1, 2, -1, -2, -3]:
        case(f"math.logsumexp f32 axis {axis}", "math.logsumexp", [("f32", x)],
             [("f32", scipy.special.logsumexp(x, axis=axis))], {"axis": axis})
    x = tensor("f64", [3, 2, 5])
    case("math.logsumexp f64 axis 1", "math.logsumexp", [("f64", x)],
         [("f64", scipy.special.logsumexp(x, axis=1))], {"axis": 1})
    x = tensor("bf16", [2, 3, 4])
    case("math.logsumexp bf16 default axis", "math.logsumexp", [("bf16", x)],
         [("bf16", scipy.special.logsumexp(x, axis=-1))])
    x = tensor("f16", [5])
    case("math.logsumexp f16 rank 1", "math.logsumexp", [("f16", x)], [("f16", scipy.special.logsumexp(x))])


def gen_inv_sqrt():
    for dtype, shape, dim in [("f32", [2, 3, 4], 0), ("f64", [2, 3], 9), ("f16", [3, 5], None),
                              ("bf16", [4], 2)]:
        x = tensor(dtype, shape)
        d = shape[-1] if not dim else dim
        attrs = {} if dim is None else {"dim": dim}
        case(f"math.inv_sqrt_dim_scale {dtype} {shape} dim {dim}", "math.inv_sqrt_dim_scale",
             [(dtype, x)], [(dtype, x / np.sqrt(d))], attrs)


def gen_dropout():
    for dtype, shape, p, seed in [("f32", [4, 8], 0.5, 1234), ("bf16", [3, 5], 0.25, 0xC0FFEE),
                                  ("f64", [2, 2, 3], 0.75, 7)]:
        x = tensor(dtype, shape)
        runs = []
        for call in range(3):
            s = (seed + SEED_STEP * call) % 2**64
            out, _ = dropout_expected(x.ravel(), p, s, dtype)
            runs.append((dtype, out.reshape(shape)))
        case(f"math.dropout {dtype} p {p}", "math.dropout", [(dtype, x)], runs, {"p": p, "seed": seed})


# ---- norms ----------------------------------------------------------------------------------------
def t64(a):
    return torch.tensor(a, dtype=torch.float64)


def gen_norms():
    for dtype, shape in [("f32", [2, 3, 4]), ("bf16", [3, 8]), ("f64", [5]), ("f16", [2, 1, 6])]:
        x, g, b = tensor(dtype, shape), tensor(dtype, shape[-1:]), tensor(dtype, shape[-1:])
        rms = x * g / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        case(f"math.rmsnorm {dtype} {shape}", "math.rmsnorm", [(dtype, x), (dtype, g)], [(dtype, rms)])
        ln = F.layer_norm(t64(x), shape[-1:], t64(g), t64(b), eps=1e-5).numpy()
        case(f"math.layernorm {dtype} {shape}", "math.layernorm", [(dtype, x), (dtype, g), (dtype, b)],
             [(dtype, ln)])
    for dtype, shape, groups in [("f32", [2, 6, 3, 2], 3), ("f64", [2, 4, 5], 2), ("bf16", [3, 4], 4),
                                 ("f16", [1, 4, 3], 1)]:
        c = shape[1]
        x, g, b = tensor(dtype, shape), tensor(dtype, [c]), tensor(dtype, [c])
        y = F.group_norm(t64(x), groups, t64(g), t64(b), eps=1e-5).numpy()
        case(f"math.groupnorm {dtype} {shape} groups {groups}", "math.groupnorm",
             [(dtype, x), (dtype, g), (dtype, b)], [(dtype, y)], {"groups": groups})
    # instancenorm: gamma and beta each given or omitted.
    for dtype, shape, has_g, has_b in [("f32", [2, 3, 4], True, True), ("f64", [2, 3, 2, 2], False, False),
                                       ("f16", [1, 2, 5], True, False), ("bf16", [2, 2, 3], False, True)]:
        c = shape[1]
        x = tensor(dtype, shape)
        g = tensor(dtype, [c]) if has_g else None
        b = tensor(dtype, [c]) if has_b else None
        y = F.instance_norm(t64(x), weight=None if g is None else t64(g), bias=None if b is None else t64(b),
                            eps=1e-5).numpy()
        ins = [(dtype, x), None if g is None else (dtype, g), None if b is None else (dtype, b)]
        case(f"math.instancenorm {dtype} {shape} gamma {has_g} beta {has_b}", "math.instancenorm", ins, [(dtype, y)])
    for dtype, shape, affine in [("f32", [2, 3, 4], True), ("f64", [4, 3], False), ("f16", [2, 3, 2, 2], True)]:
        c = shape[1]
        x, mean, var = tensor(dtype, shape), tensor(dtype, [c], -1.0, 1.0), tensor(dtype, [c], 0.25, 2.0)
        g = tensor(dtype, [c]) if affine else None
        b = tensor(dtype, [c]) if affine else None
        y = F.batch_norm(t64(x), t64(mean), t64(var), weight=None if g is None else t64(g),
                         bias=None if b is None else t64(b), training=False, eps=1e-5).numpy()
        ins = [(dtype, x), None if g is None else (dtype, g), None if b is None else (dtype, b),
               (dtype, mean), (dtype, var)]
        case(f"math.batchnorm {dtype} {shape} affine {affine}", "math.batchnorm", ins, [(dtype, y)])


# ---- reductions -----------------------------------------------------------------------------------
REDUCTIONS = {"reduction.sum": np.sum, "reduction.prod": np.prod, "reduction.min": np.min,
              "reduction.max": np.max, "reduction.l1_norm": lambda x, axis: np.sum(np.abs(x), axis=axis)}


def gen_reductions():
    axes_f32 = [[], [0], [-1], [0, 2], [1], [-3, -2], [2, 0, 1]]
    for op, fn in REDUCTIONS.items():
        # Products stay in a modest range: |x| in [0.5, 2).
        lo, hi = (0.5, 2.0) if op == "reduction.prod" else (-4.0, 4.0)
        x = tensor("f32", [2, 3, 4], lo, hi)
        for axis in axes_f32:
            case(f"{op} f32 axis {axis}", op, [("f32", x)], [("f32", fn(x, axis=tuple(axis) or None))],
                 {"axis": axis})
        for dtype, shape, axis in [("f64", [3, 2, 4], [0, 2]), ("f16", [2, 3, 4], [-1]),
                                   ("bf16", [2, 5], []), ("f32", [], [])]:
            x = tensor(dtype, shape, lo, hi)
            case(f"{op} {dtype} {shape} axis {axis}", op, [(dtype, x)],
                 [(dtype, fn(x, axis=tuple(axis) or None))], {"axis": axis})
        if op not in ("reduction.min", "reduction.max"):  # empty sums and products are defined
            x = np.zeros([2, 0, 3])
            case(f"{op} f32 empty axis", op, [("f32", x)], [("f32", fn(x, axis=(1,)))], {"axis": [1]})


def main():
    gen_binary()
    gen_unary()
    gen_axpy()
    gen_products()
    gen_logsumexp()
    gen_inv_sqrt()
    gen_dropout()
    gen_norms()
    gen_reductions()
    write_json(OUT, {"generator": "tests/golden/gen_math_ops.py", "cases": CASES})


if __name__ == "__main__":
    main()
