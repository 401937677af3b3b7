"""Helpers shared by the golden generators: storage rounding along the C++ tests' path and compact,
exact JSON numbers. Imported by gen_attention.py, gen_embedding.py, gen_masking.py, gen_rope.py."""

import json
import os

import numpy as np
import torch

TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT_DIGITS = {"f64": 17, "f32": 10, "f16": 8, "bf16": 8}
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def storage_round(values, dtype):
    """float64 -> the storage dtype -> float64, along the C++ test's path (double -> f32 -> f16)."""
    t = torch.from_numpy(np.asarray(values, dtype=np.float64).copy())
    if dtype == "f64":
        return t.numpy()
    t = t.to(torch.float32)
    if dtype != "f32":
        t = t.to(TORCH[dtype])
    return t.to(torch.float64).numpy()


def exact_inputs(values, dtype):
    """The shortest decimals that the C++ test reads back (stod, then Buffer::Set) to the exact
    stored value; values must already be representable in `dtype`."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    assert np.all(np.isfinite(flat)), "JSON has no NaN/Inf"
    assert np.array_equal(storage_round(flat, dtype), flat), "input not representable"
    if dtype == "f64":
        return flat.tolist()
    out = [None] * len(flat)
    pending = np.arange(len(flat))
    for digits in range(1, 18):
        parsed = np.array([float("%.*g" % (digits, v)) for v in flat[pending]])
        ok = storage_round(parsed, dtype) == flat[pending]
        for i, v in zip(pending[ok], parsed[ok]):
            out[i] = float(v)
        pending = pending[~ok]
        if len(pending) == 0:
            break
    assert len(pending) == 0
    return out


def expected(values, dtype):
    """float64 oracle values, with enough digits for the dtype's tolerance (all of them for f64)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    assert np.all(np.isfinite(flat)), "JSON has no NaN/Inf"
    if dtype == "f64":
        return flat.tolist()
    return [float("%.*g" % (OUT_DIGITS[dtype], v)) for v in flat]


def write(name, payload):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        json.dump(payload, f, separators=(",", ":"), allow_nan=False)
    print(f"{path}: {os.path.getsize(path)} bytes")
