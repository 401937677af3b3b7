#!/usr/bin/python3
"""Golden data for the Activation surface (tests/cpu/reference/activation_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_activation.py

For every method and every storage dtype (f64, f32, f16, bf16) the script draws inputs from a
fixed seed, rounds them to the storage dtype with torch, and evaluates the oracle in float64 on
the rounded inputs: PyTorch's own float64 function wherever PyTorch has one, otherwise the
closed-form formula in float64 NumPy. Scalar parameters are rounded to float32 first (the
Backend takes them as float). Inputs and outputs are written to tests/golden/data/:
    activation_unary.json    25 unary methods + Softmax/LogSoftmax
    activation_param.json    the 12 parametric methods (PReLUV with its slopes)
    activation_glu.json      the 8 packed and 8 Tensors gated linear units
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20240611
DTYPES = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
}
SIZES = [1, 7, 33]
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

rng = np.random.default_rng(SEED)


def rounded(values, dtype):
    """float64 values rounded to the storage dtype, returned as a float64 tensor."""
    t = torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64)
    return t.to(DTYPES[dtype]).to(torch.float64)


def draw(dtype, count, lo, hi, log_uniform=False):
    if log_uniform:
        values = np.exp(rng.uniform(math.log(lo), math.log(hi), count))
    else:
        values = rng.uniform(lo, hi, count)
    return rounded(values, dtype)


def f32(value):
    """A scalar parameter as the float the Backend receives, widened exactly."""
    return float(np.float32(value))


def as_list(t):
    out = t.detach().numpy().astype(np.float64).tolist()
    for v in out:
        assert math.isfinite(v), "golden values must be finite (JSON has no NaN/Inf)"
    return out


def numpy_oracle(fn):
    return lambda t: torch.from_numpy(fn(t.numpy()))


def sigmoid(t):
    return torch.sigmoid(t)


# name -> (oracle on a float64 tensor, (lo, hi), log-uniform inputs)
UNARY = {
    "Exp": (torch.exp, (-10.0, 10.0), False),
    "Log": (torch.log, (1e-3, 1e3), True),
    "Log1p": (torch.log1p, (-0.99, 10.0), False),
    "Expm1": (torch.expm1, (-5.0, 5.0), False),
    "Sigmoid": (torch.sigmoid, (-12.0, 12.0), False),
    "LogSigmoid": (F.logsigmoid, (-30.0, 30.0), False),
    "Tanh": (torch.tanh, (-5.0, 5.0), False),
    "Silu": (F.silu, (-8.0, 8.0), False),
    "Swish": (F.silu, (-8.0, 8.0), False),
    "GeluTanh": (lambda t: F.gelu(t, approximate="tanh"), (-6.0, 6.0), False),
    "Gelu": (F.gelu, (-6.0, 6.0), False),
    "ReLU": (torch.relu, (-4.0, 4.0), False),
    "LeakyReLU": (lambda t: F.leaky_relu(t, 0.01), (-4.0, 4.0), False),
    "ELU": (F.elu, (-6.0, 4.0), False),
    "CELU": (F.celu, (-6.0, 4.0), False),
    "SELU": (F.selu, (-6.0, 4.0), False),
    "Softplus": (F.softplus, (-30.0, 30.0), False),
    "Mish": (F.mish, (-8.0, 8.0), False),
    "Softsign": (F.softsign, (-10.0, 10.0), False),
    "HardSigmoid": (F.hardsigmoid, (-5.0, 5.0), False),
    "HardSwish": (F.hardswish, (-5.0, 5.0), False),
    "HardTanh": (F.hardtanh, (-3.0, 3.0), False),
    # No PyTorch function of that name: the closed form x * clamp(x + 3, 0, 6) / 6.
    "HardGelu": (numpy_oracle(lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0), (-5.0, 5.0),
                 False),
    # x * sigmoid(1.702 x), closed form.
    "QuickGelu": (numpy_oracle(lambda x: x / (1.0 + np.exp(-1.702 * x))), (-6.0, 6.0), False),
    "TanhShrink": (F.tanhshrink, (-4.0, 4.0), False),
    "Softmax": (lambda t: torch.softmax(t, dim=0), (-10.0, 10.0), False),
    "LogSoftmax": (lambda t: torch.log_softmax(t, dim=0), (-10.0, 10.0), False),
}


def snake(t, alpha, beta):
    x = t.numpy()
    return torch.from_numpy(x + np.sin(alpha * x) ** 2 / beta)


# name -> (oracle(t, params), parameter sets (one per size), (lo, hi))
PARAM = {
    "PReLU": (lambda t, p: F.prelu(t, torch.tensor([p[0]], dtype=torch.float64)),
              [[0.25], [-0.1], [0.5]], (-4.0, 4.0)),
    "LeakyReLUSlope": (lambda t, p: F.leaky_relu(t, p[0]), [[0.01], [0.2], [1.5]], (-4.0, 4.0)),
    "ELUAlpha": (lambda t, p: F.elu(t, p[0]), [[1.0], [0.5], [2.5]], (-6.0, 4.0)),
    "CELUAlpha": (lambda t, p: F.celu(t, p[0]), [[1.0], [0.3], [2.5]], (-6.0, 4.0)),
    "Threshold": (lambda t, p: F.threshold(t, p[0], 0.0), [[0.0], [0.5], [-1.25]], (-4.0, 4.0)),
    # No PyTorch function: x + sin^2(alpha x) / alpha, closed form.
    "Snake": (lambda t, p: snake(t, p[0], p[0]), [[1.0], [0.5], [3.0]], (-4.0, 4.0)),
    "HardShrink": (lambda t, p: F.hardshrink(t, p[0]), [[0.5], [0.0], [1.5]], (-4.0, 4.0)),
    "SoftShrink": (lambda t, p: F.softshrink(t, p[0]), [[0.5], [0.0], [1.5]], (-4.0, 4.0)),
    "HardTanhRange": (lambda t, p: F.hardtanh(t, p[0], p[1]),
                      [[-1.0, 1.0], [-0.5, 2.0], [0.25, 0.25]], (-3.0, 3.0)),
    # x + sin^2(alpha x) / beta, closed form.
    "SnakeParametric": (lambda t, p: snake(t, p[0], p[1]),
                        [[1.0, 1.0], [0.5, 2.0], [2.0, -0.75]], (-4.0, 4.0)),
    # Inference-mode RReLU: fixed slope (lower + upper) / 2.
    "RReLU": (lambda t, p: F.rrelu(t, p[0], p[1], training=False),
              [[0.125, 0.333], [0.0, 0.0], [0.1, 0.9]], (-4.0, 4.0)),
}

# PReLUV: (count, slopeCount); element i uses slopes[i % slopeCount], which is
# torch.nn.functional.prelu on the [count / slopeCount, slopeCount] view (channels in dim 1).
PRELUV_SHAPES = [(1, 1), (7, 1), (33, 3), (40, 8)]

GLU = {
    "GLU": lambda g, u: g * torch.sigmoid(u),
    "GeGLU": lambda g, u: g * F.gelu(u),
    "GeGLUTanh": lambda g, u: g * F.gelu(u, approximate="tanh"),
    "SwiGLU": lambda g, u: F.silu(g) * u,
    "ReGLU": lambda g, u: g * torch.relu(u),
    "SiGLU": lambda g, u: torch.sigmoid(g) * u,
    "LinGLU": lambda g, u: g * u,
    "SeGLU": lambda g, u: torch.sigmoid(g) * u,
}
GLU_PACKED_SHAPES = [(1, 1), (3, 5), (2, 17)]  # (batch, halfCount)


def gen_unary():
    methods = {}
    for name, (oracle, (lo, hi), log_uniform) in UNARY.items():
        per_dtype = {}
        for dtype in DTYPES:
            cases = []
            for size in SIZES:
                x = draw(dtype, size, lo, hi, log_uniform)
                cases.append({"x": as_list(x), "y": as_list(oracle(x))})
            per_dtype[dtype] = cases
        methods[name] = per_dtype
    return methods


def gen_param():
    methods = {}
    for name, (oracle, param_sets, (lo, hi)) in PARAM.items():
        per_dtype = {}
        for dtype in DTYPES:
            cases = []
            for size, params in zip(SIZES, param_sets):
                p = [f32(v) for v in params]
                x = draw(dtype, size, lo, hi)
                cases.append({"params": p, "x": as_list(x), "y": as_list(oracle(x, p))})
            per_dtype[dtype] = cases
        methods[name] = per_dtype
    per_dtype = {}
    for dtype in DTYPES:
        cases = []
        for count, channels in PRELUV_SHAPES:
            slopes = torch.tensor([f32(v) for v in rng.uniform(-0.5, 1.0, channels)],
                                  dtype=torch.float64)
            x = draw(dtype, count, -4.0, 4.0)
            y = F.prelu(x.view(count // channels, channels), slopes).reshape(-1)
            cases.append({"slopes": as_list(slopes), "x": as_list(x), "y": as_list(y)})
        per_dtype[dtype] = cases
    methods["PReLUV"] = per_dtype
    return methods


def gen_glu():
    packed = {}
    tensors = {}
    for name, oracle in GLU.items():
        packed_dtype = {}
        tensors_dtype = {}
        for dtype in DTYPES:
            cases = []
            for batch, half in GLU_PACKED_SHAPES:
                x = draw(dtype, batch * 2 * half, -5.0, 5.0).view(batch, 2 * half)
                if name == "GLU":
                    y = F.glu(x, dim=-1)  # torch's own packed GLU: first half * sigmoid(second)
                else:
                    y = oracle(x[:, :half], x[:, half:])
                cases.append({"batch": batch, "halfCount": half, "packed": as_list(x.reshape(-1)),
                              "y": as_list(y.reshape(-1))})
            packed_dtype[dtype] = cases
            cases = []
            for size in SIZES:
                g = draw(dtype, size, -5.0, 5.0)
                u = draw(dtype, size, -5.0, 5.0)
                cases.append({"gate": as_list(g), "up": as_list(u), "y": as_list(oracle(g, u))})
            tensors_dtype[dtype] = cases
        packed[name] = packed_dtype
        tensors[name + "Tensors"] = tensors_dtype
    return {"packed": packed, "tensors": tensors}


def write(name, methods):
    path = os.path.join(OUT_DIR, name)
    doc = {"generator": "tests/golden/gen_activation.py", "seed": SEED,
           "torch": torch.__version__, "methods": methods}
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    torch.manual_seed(SEED)
    os.makedirs(OUT_DIR, exist_ok=True)
    write("activation_unary.json", gen_unary())
    write("activation_param.json", gen_param())
    write("activation_glu.json", gen_glu())


if __name__ == "__main__":
    main()
