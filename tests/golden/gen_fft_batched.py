#!/usr/bin/env python3
"""Golden data for physics.fft / physics.ifft, the batched FFT over the last axis
(tests/runtime/research_ops_test.cpp reads it beside research_ops.json).

Run with /usr/bin/python3 from the repository root; writes tests/golden/data/fft_batched.json.
Oracle: numpy.fft.fft / numpy.fft.ifft along axis -1, float64. Lengths 5 and 7 exercise
Bluestein (not a power of two), 8 and 1 the radix-2 path and its trivial case.
"""

import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(2025)


def tensor(a, dtype="f64"):
    a = np.asarray(a)
    return {"dtype": dtype, "shape": list(a.shape), "values": a.reshape(-1).tolist()}


def case(name, op, z, out):
    return {"name": name, "op": op, "attrs": {}, "inputs": [tensor(z.real), tensor(z.imag)],
            "outputs": [tensor(out.real), tensor(out.imag)]}


def complex_normal(*shape):
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


def main():
    z5, z8, z7, z1 = complex_normal(2, 3, 5), complex_normal(4, 8), complex_normal(7), complex_normal(3, 1)
    cases = [
        case("fft_batched_2x3x5", "physics.fft", z5, np.fft.fft(z5, axis=-1)),
        case("fft_batched_4x8", "physics.fft", z8, np.fft.fft(z8, axis=-1)),
        case("fft_rank1_n7", "physics.fft", z7, np.fft.fft(z7)),
        case("ifft_batched_4x8", "physics.ifft", z8, np.fft.ifft(z8, axis=-1)),
        case("ifft_batched_2x3x5", "physics.ifft", z5, np.fft.ifft(z5, axis=-1)),
        case("ifft_batched_3x1", "physics.ifft", z1, np.fft.ifft(z1, axis=-1)),
    ]
    with open(os.path.join(HERE, "data", "fft_batched.json"), "w") as f:
        json.dump({"generator": "tests/golden/gen_fft_batched.py", "cases": cases}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
