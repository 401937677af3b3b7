#!/usr/bin/env python3
"""Golden data for the Physics surface (tests/cpu/reference/physics_test.cpp).

Run with /usr/bin/python3 (NumPy, SciPy, PyTorch) from the repository root:
    /usr/bin/python3 tests/golden/gen_physics.py
Writes tests/golden/data/physics_stencils.json, physics_fft_f64.json, physics_fft_f32.json and
physics_fft_half.json. Inputs are generated in float64 from a fixed seed, rounded to each storage
dtype with torch and stored exactly (f32 values as their shortest float32 decimal string, checked to
read back to the same float32); the oracle is computed in float64 from the rounded inputs and stored
with 12 significant digits:
  laplacian          scipy.ndimage.laplace(u, mode="wrap") / h^2 (periodic, every axis)
  laplacian4         scipy.ndimage.correlate1d(u, [-1, 16, -30, 16, -1], mode="wrap") / (12 h^2)
  grad1d, divergence1d, bohmian_velocity
                     scipy.ndimage.correlate1d(u, [-1, 0, 1], mode="wrap") / (2 h)
  quantum_potential  -0.5 * correlate1d(sqrt(rho), [1, -2, 1], wrap) / h^2 / sqrt(rho),
                     0 where rho = 0
  madelung           correlate1d(rho * v, [-1, 0, 1], mode="wrap") / (2 h)
  fft / ifft         numpy.fft.fft / numpy.fft.ifft (pocketfft, float64 complex)
Each scipy result is cross-checked against an explicit numpy.roll formula.
"""
import json
import os

import numpy as np
import scipy.ndimage as ndi
import torch

SEED = 20240917
DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
          "bf16": torch.bfloat16}
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def rounded(values, dtype):
    t = torch.tensor(np.asarray(values, dtype=np.float64)).to(DTYPES[dtype])
    return t.to(torch.float64).numpy()


def stored(a, dtype):
    """Exact storage-format values, written compactly (f32: shortest float32 string)."""
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
    return [float(f"{v:.12g}") for v in np.asarray(a, dtype=np.float64).ravel()]


def spacing(h):
    return float(np.float32(h))  # the kernels take a float32 spacing


def wrap1d(u, weights):
    if u.size == 0:
        return u.copy()
    return ndi.correlate1d(u, np.asarray(weights, dtype=np.float64), mode="wrap")


def roll_stencil(u, weights, axis=0):
    half = len(weights) // 2
    return sum(w * np.roll(u, half - k, axis=axis) for k, w in enumerate(weights))


def laplacian(u, h):
    if u.size == 0:
        return u.copy()
    got = ndi.laplace(u, mode="wrap") / (h * h)
    want = sum(roll_stencil(u, [1.0, -2.0, 1.0], axis) for axis in range(u.ndim)) / (h * h)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    return got


def first_derivative(u, h):
    got = wrap1d(u, [-1.0, 0.0, 1.0]) / (2.0 * h)
    if u.size:
        assert np.allclose(got, (np.roll(u, -1) - np.roll(u, 1)) / (2.0 * h), 1e-12, 1e-12)
    return got


def laplacian4(u, h):
    got = wrap1d(u, [-1.0, 16.0, -30.0, 16.0, -1.0]) / (12.0 * h * h)
    if u.size:
        want = roll_stencil(u, [-1.0, 16.0, -30.0, 16.0, -1.0]) / (12.0 * h * h)
        assert np.allclose(got, want, 1e-12, 1e-12)
    return got


def quantum_potential(rho, h):
    s = np.sqrt(rho)
    second = wrap1d(s, [1.0, -2.0, 1.0]) / (h * h)
    q = np.zeros_like(rho)
    pos = s > 0
    q[pos] = -0.5 * second[pos] / s[pos]
    return q


SIZES_1D = [0, 1, 2, 3, 4, 5, 7, 16, 33, 100]
SPACINGS = [0.1, 0.37, 1.0, 2.5]
DIMS = [[0], [1], [2], [5], [17], [1, 1], [2, 3], [3, 5], [7, 4], [1, 6], [2, 2, 2], [3, 4, 5],
        [1, 3, 1], [2, 0, 3], [5, 1, 4]]


def stencils(rng):
    out = {k: [] for k in ["laplacian", "laplacian4", "grad1d", "divergence1d",
                           "quantum_potential", "bohmian_velocity", "madelung"]}
    for dtype in DTYPES:
        for i, dims in enumerate(DIMS):
            h = spacing(SPACINGS[i % len(SPACINGS)])
            u = rounded(rng.uniform(-4.0, 4.0, int(np.prod(dims))), dtype).reshape(dims)
            out["laplacian"].append({"dtype": dtype, "dims": dims, "spacing": h,
                                     "input": stored(u, dtype), "output": oracle(laplacian(u, h))})
        for i, n in enumerate(SIZES_1D):
            h = spacing(SPACINGS[i % len(SPACINGS)])
            for name, fn in [("laplacian4", laplacian4), ("grad1d", first_derivative),
                             ("divergence1d", first_derivative),
                             ("bohmian_velocity", first_derivative)]:
                u = rounded(rng.uniform(-4.0, 4.0, n), dtype)
                out[name].append({"dtype": dtype, "spacing": h, "input": stored(u, dtype),
                                  "output": oracle(fn(u, h))})
            rho = rng.uniform(0.05, 4.0, n)
            rho[rng.uniform(size=n) < 0.15] = 0.0  # nodes of the wavefunction: Q defined as 0
            rho = rounded(rho, dtype)
            out["quantum_potential"].append({"dtype": dtype, "spacing": h,
                                             "input": stored(rho, dtype),
                                             "output": oracle(quantum_potential(rho, h))})
            rho = rounded(rng.uniform(0.0, 4.0, n), dtype)
            v = rounded(rng.uniform(-4.0, 4.0, n), dtype)
            out["madelung"].append({"dtype": dtype, "spacing": h, "density": stored(rho, dtype),
                                    "velocity": stored(v, dtype),
                                    "output": oracle(first_derivative(rho * v, h))})
    return out


def fft_case(rng, dtype, n, with_imag=True, transforms=("fft", "ifft")):
    re = rounded(rng.uniform(-2.0, 2.0, n), dtype)
    im = rounded(rng.uniform(-2.0, 2.0, n), dtype) if with_imag else np.zeros(n)
    x = re + 1j * im
    case = {"dtype": dtype, "n": n, "re": stored(re, dtype),
            "im": stored(im, dtype) if with_imag else None}
    for name in transforms:
        y = getattr(np.fft, name)(x) if n else np.zeros(0, complex)
        case[name + "_re"] = oracle(y.real)
        case[name + "_im"] = oracle(y.imag)
    return case


def write(name, payload):
    path = os.path.join(DATA, name)
    with open(path, "w") as f:
        json.dump(dict(generator="tests/golden/gen_physics.py", seed=SEED, **payload), f,
                  separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    rng = np.random.default_rng(SEED)
    write("physics_stencils.json", stencils(rng))
    # Every length 1..64 in f64 and f32 (some with a null imaginary input), plus the prime 1009.
    for dtype in ["f64", "f32"]:
        cases = [fft_case(rng, dtype, n, with_imag=n % 9 != 4) for n in range(1, 65)]
        cases.append(fft_case(rng, dtype, 1009, transforms=("fft",)))
        write(f"physics_fft_{dtype}.json", {"cases": cases})
    cases = []
    for dtype in ["f16", "bf16"]:
        for n in list(range(1, 18)) + [24, 31, 32, 33, 63, 64, 100]:
            cases.append(fft_case(rng, dtype, n, with_imag=n % 9 != 4))
        cases.append(fft_case(rng, dtype, 1009, transforms=("fft",)))
    write("physics_fft_half.json", {"cases": cases})

if __name__ == "__main__":
    main()
