#!/usr/bin/python3
"""Golden data for the Elementwise, Reduction, Dot, Matmul and Losses reference kernels.

Run with the system Python (NumPy, SciPy, PyTorch):  /usr/bin/python3 tests/golden/gen_core_math.py
Writes tests/golden/data/{elementwise,reduction,dot,matmul,losses}.json.

Every input is generated here from a fixed seed, rounded to its storage dtype with torch
(round to nearest even) and stored already rounded; every expected value is computed in float64
by PyTorch / NumPy / SciPy from those rounded inputs. The C++ tests never derive expected values
from the code under test.

Two kinds of cases:
  * "cases": small sizes (0, 1, 2, odd, ...) with full-precision random inputs per dtype;
  * "large": one case over 4096 elements whose inputs are drawn on the bfloat16 grid (8
    significant bits, exponents inside the float16 range), so the same stored values are exact in
    f64, f32, f16 and bf16 and one input set serves all four dtypes (this keeps the files small).
    The script asserts that exactness.
"""

import json
import math
import os

import numpy as np
import scipy.special
import torch
import torch.nn.functional as F

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
TORCH_DTYPES = {
    "f32": torch.float32,
    "f64": torch.float64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
}
DTYPES = list(TORCH_DTYPES)
LARGE_N = 4099


def rounded(values, dtype):
    """float64 array -> values rounded (RNE) to the storage dtype, as float64."""
    t = torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64)
    return t.to(TORCH_DTYPES[dtype]).to(torch.float64).numpy()


def on_bf16_grid(values):
    """Rounds to bf16 and keeps clear of the f16 subnormal range, so the result is exact in all
    four storage formats."""
    v = rounded(values, "bf16")
    v[np.abs(v) < 2.0**-14] = 0.0
    for dtype in DTYPES:
        assert np.array_equal(rounded(v, dtype), v), dtype
    return v


def as_list(a):
    return [float(x) for x in np.asarray(a, dtype=np.float64).ravel()]


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=torch.float64)


def signed_uniform(rng, n, lo, hi):
    """|x| uniform in [lo, hi), random sign."""
    return rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)


def write(name, payload):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        json.dump(payload, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


# ---- Elementwise ---------------------------------------------------------------------------------
def elementwise_outputs(left, right, nonneg, alpha):
    l, r, s = t64(left), t64(right), t64(nonneg)
    return {
        "Add": as_list(l + r),
        "Sub": as_list(l - r),
        "Mul": as_list(l * r),
        "Div": as_list(l / r),
        "Max": as_list(torch.maximum(l, r)),
        "Min": as_list(torch.minimum(l, r)),
        "Abs": as_list(torch.abs(l)),
        "Neg": as_list(torch.neg(l)),
        "Sqrt": as_list(torch.sqrt(s)),
        "ReLU": as_list(torch.relu(l)),
        # torch.Tensor.add(other, alpha=...) is BLAS axpy: y + alpha * x, with y = left, x = right.
        "Axpy": as_list(torch.add(l, r, alpha=alpha)),
    }


def gen_elementwise():
    rng = np.random.default_rng(20240611)
    cases = []
    alphas = [0.75, -1.3, 2.5e-3, 3.0, -0.1, 1.0]
    for dtype in DTYPES:
        for k, n in enumerate([0, 1, 2, 7, 33, 100]):
            left = rounded(rng.uniform(-4, 4, n), dtype)
            right = rounded(signed_uniform(rng, n, 0.25, 4), dtype)  # |right| >= 0.25 for Div
            nonneg = rounded(rng.uniform(0, 9, n), dtype)
            # alpha is a float argument: the kernel receives the f32 value.
            alpha = float(np.float32(alphas[k % len(alphas)]))
            cases.append({
                "dtype": dtype, "n": n, "alpha": alpha,
                "left": as_list(left), "right": as_list(right), "nonneg": as_list(nonneg),
                "out": elementwise_outputs(left, right, nonneg, alpha),
            })
    write("elementwise.json", {"generator": "tests/golden/gen_core_math.py", "cases": cases})


# ---- Reduction -----------------------------------------------------------------------------------
def reduction_results(values, prod_values):
    v, pv = t64(values), t64(prod_values)
    out = {
        "Sum": float(torch.sum(v)),
        "Prod": float(torch.prod(pv)),
        "L1Norm": float(torch.linalg.vector_norm(v, ord=1)),
    }
    if len(values) > 0:  # torch.amin/amax raise on an empty input, and so do we
        out["ReduceMin"] = float(torch.amin(v))
        out["ReduceMax"] = float(torch.amax(v))
    return out


def gen_reduction():
    rng = np.random.default_rng(20240612)
    cases = []
    for dtype in DTYPES:
        for n in [0, 1, 2, 7, 33, 100]:
            values = rounded(rng.uniform(-4, 4, n), dtype)
            prod_values = rounded(signed_uniform(rng, n, 0.5, 1.5), dtype)
            cases.append({"dtype": dtype, "n": n, "values": as_list(values),
                          "prod_values": as_list(prod_values),
                          "results": reduction_results(values, prod_values)})
    # Large: Sum/L1Norm/ReduceMin/ReduceMax over [-4, 4); Prod over +-[0.9, 1.1) so the product of
    # 4099 factors stays well inside the f32 range.
    values = on_bf16_grid(rng.uniform(-4, 4, LARGE_N))
    prod_values = on_bf16_grid(signed_uniform(rng, LARGE_N, 0.9, 1.1))
    large = {"n": LARGE_N, "values": as_list(values), "prod_values": as_list(prod_values),
             "results": reduction_results(values, prod_values)}
    assert 1e-30 < abs(large["results"]["Prod"]) < 1e30
    write("reduction.json",
          {"generator": "tests/golden/gen_core_math.py", "cases": cases, "large": large})


# ---- Dot -----------------------------------------------------------------------------------------
def gen_dot():
    rng = np.random.default_rng(20240613)
    cases = []
    for dtype in DTYPES:
        for n in [0, 1, 2, 7, 33, 100]:
            left = rounded(rng.uniform(-4, 4, n), dtype)
            right = rounded(rng.uniform(-4, 4, n), dtype)
            cases.append({"dtype": dtype, "n": n, "left": as_list(left), "right": as_list(right),
                          "result": float(torch.dot(t64(left), t64(right)))})
    left = on_bf16_grid(rng.uniform(-4, 4, LARGE_N))
    right = on_bf16_grid(rng.uniform(-4, 4, LARGE_N))
    large = {"n": LARGE_N, "left": as_list(left), "right": as_list(right),
             "result": float(torch.dot(t64(left), t64(right)))}
    # int8: exact integer oracle (Python ints), including one length over 4096.
    int8_cases = []
    for n in [0, 1, 2, 7, 33, 100, LARGE_N]:
        left = rng.integers(-128, 128, n)
        right = rng.integers(-128, 128, n)
        int8_cases.append({"n": n, "left": [int(x) for x in left], "right": [int(x) for x in right],
                           "result": sum(int(a) * int(b) for a, b in zip(left, right))})
    write("dot.json", {"generator": "tests/golden/gen_core_math.py", "cases": cases,
                       "large": large, "int8": int8_cases})


# ---- Matmul --------------------------------------------------------------------------------------
def gen_matmul():
    rng = np.random.default_rng(20240614)
    shapes = [(0, 3, 4), (3, 0, 4), (2, 3, 0), (0, 0, 0), (1, 1, 1), (1, 5, 1), (3, 5, 7),
              (7, 1, 3), (4, 9, 2), (17, 13, 11)]
    cases = []
    for dtype in DTYPES:
        for rows, inner, cols in shapes:
            a = rounded(rng.uniform(-2, 2, rows * inner), dtype)
            b = rounded(rng.uniform(-2, 2, inner * cols), dtype)
            c = torch.matmul(t64(a).reshape(rows, inner), t64(b).reshape(inner, cols))
            cases.append({"dtype": dtype, "rows": rows, "inner": inner, "cols": cols,
                          "left": as_list(a), "right": as_list(b), "out": as_list(c)})
    # Large: a 64 x 65 left operand (4160 elements).
    rows, inner, cols = 64, 65, 3
    a = on_bf16_grid(rng.uniform(-2, 2, rows * inner))
    b = on_bf16_grid(rng.uniform(-2, 2, inner * cols))
    c = torch.matmul(t64(a).reshape(rows, inner), t64(b).reshape(inner, cols))
    large = {"rows": rows, "inner": inner, "cols": cols, "left": as_list(a), "right": as_list(b),
             "out": as_list(c)}
    write("matmul.json",
          {"generator": "tests/golden/gen_core_math.py", "cases": cases, "large": large})


# ---- Losses --------------------------------------------------------------------------------------
def probability_pair(rng, n):
    """Predictions in [0, 1] and targets in [0, 1] with exact 0s and 1s: p = 0 only where t = 0
    (so KL stays finite), p = 1 with any t (BCE's -100 clamp), t = 0 and t = 1 with any p."""
    p = rng.uniform(0.001, 0.999, n)
    t = rng.uniform(0.0, 1.0, n)
    for i in range(n):
        kind = i % 7
        if kind == 1:
            p[i], t[i] = 0.0, 0.0
        elif kind == 2:
            p[i] = 1.0
        elif kind == 3:
            t[i] = 0.0
        elif kind == 4:
            t[i] = 1.0
    return p, t


def loss_results(a, b, p, t):
    a, b, p, t = t64(a), t64(b), t64(p), t64(t)
    kl = scipy.special.rel_entr(t.numpy(), p.numpy()).mean()
    # Cross-check against torch.kl_div where torch's formula is defined (t = p = 0 gives NaN in
    # torch's xlogy(t, t) - t * log(p) form; rel_entr and Backplane give 0 there).
    keep = ~((t == 0) & (p == 0))
    if keep.any():
        torch_kl = F.kl_div(torch.log(p[keep]), t[keep], reduction="sum") / len(t)
        assert math.isclose(float(torch_kl), kl, rel_tol=1e-12, abs_tol=1e-15)
    return {
        "MSE": float(F.mse_loss(a, b)),
        "MAE": float(F.l1_loss(a, b)),
        "Huber": float(F.huber_loss(a, b, delta=1.0)),
        "BinaryCrossEntropy": float(F.binary_cross_entropy(p, t)),
        "KLDivergence": float(kl),
    }


def cross_entropy_case(rng, batch, classes, dtype_round):
    logits = rng.uniform(-6, 6, (batch, classes))
    if batch >= 8:
        logits[batch // 2] *= 100.0  # |z| up to 600: exp overflows without the max shift
    logits = dtype_round(logits.ravel())
    targets = rng.integers(0, classes, batch) if classes > 0 else np.zeros(0, dtype=np.int64)
    case = {"batch": batch, "classes": classes, "logits": as_list(logits),
            "targets": [int(x) for x in targets]}
    if batch > 0:
        case["result"] = float(F.cross_entropy(t64(logits).reshape(batch, classes),
                                               torch.tensor(targets, dtype=torch.int64)))
    return case


def gen_losses():
    rng = np.random.default_rng(20240615)
    cases = []
    ce_cases = []
    for dtype in DTYPES:
        for n in [0, 1, 2, 7, 33, 100]:
            a = rounded(rng.uniform(-3, 3, n), dtype)  # |a - b| crosses Huber's delta = 1
            b = rounded(rng.uniform(-3, 3, n), dtype)
            p, t = probability_pair(rng, n)
            p, t = rounded(p, dtype), rounded(t, dtype)
            case = {"dtype": dtype, "n": n, "a": as_list(a), "b": as_list(b), "p": as_list(p),
                    "t": as_list(t)}
            if n > 0:
                case["results"] = loss_results(a, b, p, t)
            cases.append(case)
        for batch, classes in [(0, 5), (0, 0), (1, 1), (1, 4), (3, 7), (5, 2), (8, 33)]:
            c = cross_entropy_case(rng, batch, classes, lambda v: rounded(v, dtype))
            c["dtype"] = dtype
            ce_cases.append(c)
    a = on_bf16_grid(rng.uniform(-3, 3, LARGE_N))
    b = on_bf16_grid(rng.uniform(-3, 3, LARGE_N))
    p, t = probability_pair(rng, LARGE_N)
    p, t = on_bf16_grid(p), on_bf16_grid(t)
    large = {"n": LARGE_N, "a": as_list(a), "b": as_list(b), "p": as_list(p), "t": as_list(t),
             "results": loss_results(a, b, p, t)}
    ce_large = cross_entropy_case(rng, 37, 113, on_bf16_grid)  # 4181 logits
    write("losses.json", {"generator": "tests/golden/gen_core_math.py", "cases": cases,
                          "large": large, "cross_entropy": ce_cases,
                          "cross_entropy_large": ce_large})


if __name__ == "__main__":
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.set_default_dtype(torch.float64)
    gen_elementwise()
    gen_reduction()
    gen_dot()
    gen_matmul()
    gen_losses()
