#!/usr/bin/python3
"""Golden data for the MathExt reference kernels (Sin, Cos, Sign, Outer, LogSumExp, SoftmaxRows,
LogSoftmaxRows).

Run with the system Python (NumPy, PyTorch):  /usr/bin/python3 tests/golden/gen_math_ext.py
Writes tests/golden/data/math_ext_{unary,unary_large,outer,lse,softmax_rows}.json.

Every input is generated here from a fixed seed, rounded to its storage dtype with torch (round to
nearest even) and stored already rounded; every expected value is computed in float64 from those
rounded inputs by torch.sin, torch.cos, numpy.sign, numpy.outer, torch.logsumexp, torch.softmax and
torch.log_softmax. The C++ tests never derive expected values from the code under test.

Two kinds of cases:
  * "cases": small sizes (0, 1, 2, odd, ...) with full-precision random inputs per dtype;
  * "large": one case over 4096 elements whose inputs are drawn on the bfloat16 grid (8
    significant bits, exponents inside the float16 range), so the same stored values are exact in
    f64, f32, f16 and bf16 and one input set serves all four dtypes (this keeps the files small).
    The script asserts that exactness.
Special values (NaN, +-Inf, cols == 0 giving -Inf) cannot be stored in strict JSON; the C++ tests
check them as known values.
"""

import json
import os

import numpy as np
import torch

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


def write(name, payload):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        json.dump(payload, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    size = os.path.getsize(path)
    assert size < 300_000, (name, size)
    print(f"{path}: {size} bytes")


# ---- Sin, Cos, Sign ------------------------------------------------------------------------------
def unary_inputs(rng, n):
    """Mostly [-8, 8]; about one in eight values with |x| in [8, 1000) to exercise argument
    reduction; about one in sixteen an exact zero of either sign (for Sign)."""
    x = rng.uniform(-8.0, 8.0, n)
    big = rng.random(n) < 0.125
    x[big] = rng.uniform(8.0, 1000.0, int(big.sum())) * rng.choice([-1.0, 1.0], int(big.sum()))
    zero = rng.random(n) < 0.0625
    x[zero] = rng.choice([0.0, -0.0], int(zero.sum()))
    return x


def unary_results(x):
    return {
        "Sin": as_list(torch.sin(t64(x))),
        "Cos": as_list(torch.cos(t64(x))),
        "Sign": as_list(np.sign(x)),
    }


def gen_unary():
    rng = np.random.default_rng(20240501)
    cases = []
    for dtype in DTYPES:
        for n in [0, 1, 2, 7, 33, 257]:
            x = rounded(unary_inputs(rng, n), dtype)
            cases.append({"dtype": dtype, "n": n, "x": as_list(x), "results": unary_results(x)})
    write("math_ext_unary.json", {"generator": "tests/golden/gen_math_ext.py", "cases": cases})
    x = on_bf16_grid(unary_inputs(rng, LARGE_N))
    write("math_ext_unary_large.json",
          {"generator": "tests/golden/gen_math_ext.py",
           "large": {"n": LARGE_N, "x": as_list(x), "results": unary_results(x)}})


# ---- Outer ---------------------------------------------------------------------------------------
def gen_outer():
    rng = np.random.default_rng(20240502)
    cases = []
    for dtype in DTYPES:
        for rows, cols in [(0, 0), (0, 3), (3, 0), (1, 1), (5, 7), (9, 2), (13, 11)]:
            a = rounded(rng.uniform(-4, 4, rows), dtype)
            b = rounded(rng.uniform(-4, 4, cols), dtype)
            cases.append({"dtype": dtype, "rows": rows, "cols": cols, "left": as_list(a),
                          "right": as_list(b), "out": as_list(np.outer(a, b))})
    rows, cols = 67, 65  # 4355 outputs
    a = on_bf16_grid(rng.uniform(-4, 4, rows))
    b = on_bf16_grid(rng.uniform(-4, 4, cols))
    large = {"rows": rows, "cols": cols, "left": as_list(a), "right": as_list(b),
             "out": as_list(np.outer(a, b))}
    write("math_ext_outer.json",
          {"generator": "tests/golden/gen_math_ext.py", "cases": cases, "large": large})


# ---- LogSumExp -----------------------------------------------------------------------------------
def lse_inputs(rng, rows, cols):
    """Rows of uniform values in [-30, 30); every third row is spread over [-1000, 1000) so that
    exp would overflow without the max shift."""
    x = rng.uniform(-30.0, 30.0, (rows, cols))
    x[::3] = rng.uniform(-1000.0, 1000.0, x[::3].shape)
    return x


def gen_lse():
    rng = np.random.default_rng(20240503)
    cases = []
    for dtype in DTYPES:
        for rows, cols in [(0, 5), (0, 0), (1, 1), (4, 7), (5, 33), (9, 64)]:
            x = rounded(lse_inputs(rng, rows, cols), dtype).reshape(rows, cols)
            cases.append({"dtype": dtype, "rows": rows, "cols": cols, "src": as_list(x),
                          "dst": as_list(torch.logsumexp(t64(x), dim=1))})
    rows, cols = 37, 113  # 4181 inputs
    x = on_bf16_grid(lse_inputs(rng, rows, cols)).reshape(rows, cols)
    large = {"rows": rows, "cols": cols, "src": as_list(x),
             "dst": as_list(torch.logsumexp(t64(x), dim=1))}
    write("math_ext_lse.json",
          {"generator": "tests/golden/gen_math_ext.py", "cases": cases, "large": large})


# ---- SoftmaxRows, LogSoftmaxRows -----------------------------------------------------------------
def gen_softmax_rows():
    """torch.softmax / torch.log_softmax over dim=1 in float64, from the rounded inputs of
    lse_inputs (wide rows need the max shift). Non-finite inputs are tested in C++ (closed form)."""
    rng = np.random.default_rng(20261207)
    cases = []
    for dtype in DTYPES:
        for rows, cols in [(0, 5), (3, 0), (1, 1), (4, 7), (5, 33), (2, 260)]:
            x = rounded(lse_inputs(rng, rows, cols), dtype).reshape(rows, cols)
            cases.append({"dtype": dtype, "rows": rows, "cols": cols, "src": as_list(x),
                          "softmax": as_list(torch.softmax(t64(x), dim=1)),
                          "log_softmax": as_list(torch.log_softmax(t64(x), dim=1))})
    write("math_ext_softmax_rows.json", {"generator": "tests/golden/gen_math_ext.py", "cases": cases})


if __name__ == "__main__":
    torch.set_num_threads(1)
    gen_unary()
    gen_outer()
    gen_lse()
    gen_softmax_rows()
