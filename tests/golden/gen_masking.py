#!/usr/bin/python3
"""Golden data for the Masking surface (tests/cpu/reference/masking_test.cpp).

Run from the repository root with the system Python (NumPy, PyTorch 1.13):
    /usr/bin/python3 tests/golden/gen_masking.py

Inputs are drawn in float64 from a fixed seed and rounded to each storage dtype; the oracle is
float64 NumPy/torch on the rounded inputs. Score matrices are [seqQ, seqK]; the causal pattern is
bottom-right aligned, i.e. torch.ones(seqQ, seqK).tril(diagonal=seqK - seqQ) (the KV-cache
convention of torch's causal_lower_right and FlashAttention 2). Nothing here calls Backplane.

File: tests/golden/data/masking.json
    applyMask   out = in + mask, counts 0, 1, 7, 33 per dtype
    causalMask  the visible (1) / masked (0) pattern per shape (dtype independent: visible
                entries must be +0, masked ones -Inf)
    alibiBias   out = scores - slope * (p - k) where visible, scores elsewhere, per dtype
The sizes over 4096 elements are checked in the test against float64 closed forms.
"""

import json
import os

import numpy as np
import torch

SEED = 20240918
TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
OUT_DIGITS = {"f64": 17, "f32": 10, "f16": 8, "bf16": 8}
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

rng = np.random.default_rng(SEED)


# ---- storage rounding and compact, exact JSON numbers (same helpers in every gen_*.py) --------
def storage_round(values, dtype):
    """float64 -> the storage dtype -> float64, along the C++ test's path (double -> f32 -> f16)."""
    t = torch.from_numpy(np.asarray(values, dtype=np.float64).copy())
    if dtype == "f64":
        return t.numpy()
    t = t.to(torch.float32)
    if dtype != "f32":
        t = t.to(TORCH[dtype])
    return t.to(torch.float64).numpy()


def draw(dtype, shape, lo=-2.0, hi=2.0):
    return storage_round(rng.uniform(lo, hi, shape), dtype).reshape(shape)


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


def visible_pattern(seq_q, seq_k):
    """torch's bottom-right causal pattern: query i sees key j iff j <= i + seq_k - seq_q."""
    return torch.ones(seq_q, seq_k, dtype=torch.bool).tril(diagonal=seq_k - seq_q).numpy()


def apply_mask_case(dtype, count):
    x = draw(dtype, count, -4.0, 4.0)
    # Typical additive masks: zeros, small penalties and large negative values.
    kind = rng.integers(0, 3, count)
    mask = np.where(kind == 0, 0.0, np.where(kind == 1, rng.uniform(-4.0, 4.0, count),
                                             rng.uniform(-3e4, -1e3, count)))
    mask = storage_round(mask, dtype)
    return {"dtype": dtype, "count": count, "in": exact_inputs(x, dtype),
            "mask": exact_inputs(mask, dtype), "out": expected(x + mask, dtype)}


def alibi_case(dtype, seq_q, seq_k, slope):
    scores = draw(dtype, (seq_q, seq_k), -4.0, 4.0)
    m = float(storage_round([slope], dtype)[0])
    p = np.arange(seq_q)[:, None] + (seq_k - seq_q)
    k = np.arange(seq_k)[None, :]
    out = np.where(visible_pattern(seq_q, seq_k), scores - m * (p - k), scores)
    return {"dtype": dtype, "seqQ": seq_q, "seqK": seq_k, "slope": exact_inputs([m], dtype)[0],
            "scores": exact_inputs(scores, dtype), "out": expected(out, dtype)}


SHAPES = [(0, 3), (3, 0), (1, 1), (4, 4), (3, 7), (7, 3), (5, 33)]
# (seqQ, seqK, slope)
ALIBI = [(0, 4, 0.5), (1, 1, 0.25), (5, 5, 2 ** (-8 / 3)), (3, 8, 0.5), (8, 3, 2 ** (-1 / 2)),
         (7, 33, 2 ** (-8 / 5)), (4, 6, 0.0)]


def main():
    payload = {"generator": "tests/golden/gen_masking.py", "seed": SEED, "torch": torch.__version__,
               "applyMask": [], "causalMask": [], "alibiBias": []}
    for seq_q, seq_k in SHAPES:
        payload["causalMask"].append({"seqQ": seq_q, "seqK": seq_k, "visible": [
            int(v) for v in visible_pattern(seq_q, seq_k).ravel()]})
    for dtype in TORCH:
        for count in (0, 1, 7, 33):
            payload["applyMask"].append(apply_mask_case(dtype, count))
        for seq_q, seq_k, slope in ALIBI:
            payload["alibiBias"].append(alibi_case(dtype, seq_q, seq_k, slope))
    write("masking.json", payload)


if __name__ == "__main__":
    main()
