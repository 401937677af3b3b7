#!/usr/bin/env python3
"""Golden data for BlockQuant.Dequantize and BlockQuant.MatmulT
(tests/cpu/reference/block_quant_test.cpp): ggml block formats decoded by an independent
implementation, gguf-py (the Python package of llama.cpp), not by Backplane.

Requirements (a throwaway venv; the script checks the versions):
    python3 -m venv /tmp/venv-gguf2
    /tmp/venv-gguf2/bin/pip install gguf==0.19.0 numpy==2.4.6
    /tmp/venv-gguf2/bin/python tests/golden/gen_block_quant.py      # from the repository root

Writes tests/golden/data/block_quant/:
- <format>.blocks.npy  uint8 [blocks, block bytes]: random bytes, except that every f16/f32 scale
  field holds a finite random value (about 10% zeros, 10% subnormal f16 / 5% subnormal f32,
  about a third negative; each field is +0, -0, subnormal and negative in at least one block). F32/F16/BF16 hold random finite values incl. +-0, +-Inf, subnormals.
- <format>.values.npy  float32 [blocks * block elements]: the dequantised values.
- manifest.json: the dequantisation cases and the MatmulT cases (weights and x as hex bytes,
  want = the float64 NumPy product x @ W.T of the gguf-py-dequantised weights, sum_abs =
  |x| @ |W|.T for the tolerance).

Sources of the expected values:
- gguf.quants.dequantize(data, GGMLQuantizationType.X) for F32, F16, BF16, Q4_0, Q4_1, Q5_0,
  Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. Its float operations are ggml's (one f32 rounding per
  * and +, same order), so the C++ test compares bit for bit.
- gguf-py 0.19.0 cannot dequantise Q8_1 and Q8_K (no quant class). For those two only, the
  NumPy code in section "Independent NumPy decoders" below implements ggml-common.h's layout:
  Q8_1 {f16 d; f16 s; int8 qs[32]}: y = qs * d;  Q8_K {f32 d; int8 qs[256]; int16 bsums[16]}:
  y = d * qs. Those cases are marked "source": "numpy" in the manifest.
"""

import importlib.metadata
import json
import os

import numpy as np

PINNED = {"gguf": "0.19.0", "numpy": "2.4.6"}
for _pkg, _version in PINNED.items():
    _got = importlib.metadata.version(_pkg)
    if _got != _version:
        raise SystemExit(f"{_pkg} {_got} installed; this script is pinned to {_pkg}=={_version}")

from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf import quants  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "block_quant")
SEED = 20240611

# name -> (ggml type, block elements, block bytes, scale fields [(offset, "f16"|"f32")],
#          dequant blocks)
FORMATS = {
    "f32": (T.F32, 1, 4, [], 512),
    "f16": (T.F16, 1, 2, [], 512),
    "bf16": (T.BF16, 1, 2, [], 512),
    "q4_0": (T.Q4_0, 32, 18, [(0, "f16")], 48),
    "q4_1": (T.Q4_1, 32, 20, [(0, "f16"), (2, "f16")], 48),
    "q5_0": (T.Q5_0, 32, 22, [(0, "f16")], 48),
    "q5_1": (T.Q5_1, 32, 24, [(0, "f16"), (2, "f16")], 48),
    "q8_0": (T.Q8_0, 32, 34, [(0, "f16")], 48),
    "q8_1": (T.Q8_1, 32, 36, [(0, "f16"), (2, "f16")], 48),
    "q2_k": (T.Q2_K, 256, 84, [(80, "f16"), (82, "f16")], 12),
    "q3_k": (T.Q3_K, 256, 110, [(108, "f16")], 12),
    "q4_k": (T.Q4_K, 256, 144, [(0, "f16"), (2, "f16")], 12),
    "q5_k": (T.Q5_K, 256, 176, [(0, "f16"), (2, "f16")], 12),
    "q6_k": (T.Q6_K, 256, 210, [(208, "f16")], 12),
    "q8_k": (T.Q8_K, 256, 292, [(0, "f32")], 12),
}

# MatmulT cases: (format, rows, outFeatures, blocks per row); in = blocks * block elements
# (1-element formats use 7, 32 and 96 features).
MATMUL = [
    ("q4_1", 1, 17, 1), ("q4_1", 3, 5, 3), ("q4_1", 3, 11, 2),
    ("q8_0", 1, 16, 2), ("q8_0", 3, 7, 3),
    ("q4_k", 1, 9, 1), ("q4_k", 3, 5, 2),
    ("q6_k", 1, 6, 3), ("q6_k", 3, 13, 1),
    ("q4_0", 3, 8, 2), ("q5_0", 1, 12, 3), ("q5_1", 3, 5, 1), ("q8_1", 1, 5, 2),
    ("q2_k", 3, 5, 1), ("q3_k", 1, 7, 2), ("q5_k", 3, 6, 1), ("q8_k", 1, 5, 1),
    ("f32", 3, 9, 7), ("f16", 1, 17, 32), ("bf16", 3, 5, 96),
]


def random_f16_scales(rng, n):
    """Finite f16 bit patterns: ~10% +-0, ~10% subnormal, the rest normal of magnitude
    1e-5..3 (the smallest of those are subnormal too); about a third negative."""
    mag = 10.0 ** rng.uniform(-5.0, 0.5, n)
    sign = np.where(rng.random(n) < 0.35, -1.0, 1.0)
    bits = (sign * mag).astype(np.float16).view(np.uint16).copy()
    kind = rng.random(n)
    zero = kind < 0.10
    bits[zero] = np.where(rng.random(zero.sum()) < 0.5, 0x0000, 0x8000)
    sub = (kind >= 0.10) & (kind < 0.20)
    bits[sub] = rng.integers(1, 0x400, sub.sum()) | np.where(rng.random(sub.sum()) < 0.5, 0, 0x8000)
    return bits.astype(np.uint16)


def random_f32_scales(rng, n):
    """Finite f32 bit patterns: ~10% +-0, ~5% subnormal, the rest +-1e-6..1."""
    mag = 10.0 ** rng.uniform(-6.0, 0.0, n)
    sign = np.where(rng.random(n) < 0.35, -1.0, 1.0)
    bits = (sign * mag).astype(np.float32).view(np.uint32).copy()
    kind = rng.random(n)
    zero = kind < 0.10
    bits[zero] = np.where(rng.random(zero.sum()) < 0.5, 0, 0x80000000)
    sub = (kind >= 0.10) & (kind < 0.15)
    bits[sub] = rng.integers(1, 0x800000, sub.sum()) | np.where(rng.random(sub.sum()) < 0.5, 0, 0x80000000)
    return bits.astype(np.uint32)


def random_plain(rng, name, n, full_range):
    """F32/F16/BF16 values as bytes. full_range: random finite bit patterns plus +-0, +-Inf and
    subnormals; otherwise normal(0, 1) values (for MatmulT, whose sums must stay finite)."""
    if not full_range:
        v = rng.standard_normal(n)
        if name == "f32":
            return v.astype(np.float32).view(np.uint8)
        if name == "f16":
            return v.astype(np.float16).view(np.uint8)
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    if name == "f32":
        bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        exp = (bits >> 23) & 0xFF
        bits[exp == 0xFF] &= np.uint32(0xBFFFFFFF)  # no NaN/Inf from the random part
        specials = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
                    0x7F7FFFFF, 0x00800000]
        bits[: len(specials)] = specials
        return bits.view(np.uint8)
    bits = rng.integers(0, 1 << 16, n).astype(np.uint16)
    if name == "f16":
        exp = (bits >> 10) & 0x1F
        bits[exp == 0x1F] &= np.uint16(0xBFFF)
        specials = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x7BFF, 0x0400]
    else:
        exp = (bits >> 7) & 0xFF
        bits[exp == 0xFF] &= np.uint16(0xBFFF)
        specials = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x807F, 0x7F7F, 0x0080]
    bits[: len(specials)] = specials
    return bits.view(np.uint8)


def random_blocks(rng, name, nblocks, full_range=True):
    """uint8 [nblocks, block bytes]."""
    _, elements, nbytes, fields, _ = FORMATS[name]
    if elements == 1:
        return random_plain(rng, name, nblocks, full_range).reshape(nblocks, nbytes).copy()
    blocks = rng.integers(0, 256, (nblocks, nbytes)).astype(np.uint8)
    for index, (offset, kind) in enumerate(fields):
        if kind == "f16":
            bits = random_f16_scales(rng, nblocks)
            # Every field gets each edge case at least once (at blocks shifted by the field index):
            # +0, a subnormal, -0, a negative normal.
            forced = [0x0000, int(rng.integers(1, 0x400)), 0x8000, 0xA000 | int(rng.integers(0, 0x400))]
        else:
            bits = random_f32_scales(rng, nblocks)
            forced = [0x00000000, int(rng.integers(1, 0x800000)), 0x80000000, 0xBC000000]
        if full_range:
            for k, value in enumerate(forced):
                bits[(k + index) % nblocks] = value
        width = 2 if kind == "f16" else 4
        blocks[:, offset : offset + width] = bits.view(np.uint8).reshape(nblocks, width)
    return blocks


# ---- Independent NumPy decoders (formats gguf-py cannot dequantise) ------------------------------
# ggml-common.h layouts; ggml has no dequantize_row_q8_1 (Q8_1 is only a dot-product operand), and
# its dequantize_row_q8_K computes y = x.d * x.qs[j] in f32.


def numpy_dequantize_q8_1(blocks):
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)  # [n, 1]
    qs = blocks[:, 4:36].copy().view(np.int8).astype(np.float32)  # s (bytes 2..3) is not read
    return (qs * d).reshape(-1)


def numpy_dequantize_q8_k(blocks):
    d = blocks[:, 0:4].copy().view(np.float32)  # [n, 1]
    qs = blocks[:, 4:260].copy().view(np.int8).astype(np.float32)  # bsums are not read
    return (d * qs).reshape(-1)


NUMPY_DECODERS = {"q8_1": numpy_dequantize_q8_1, "q8_k": numpy_dequantize_q8_k}

# --------------------------------------------------------------------------------------------------


def dequantize(name, blocks):
    """(float32 values, source) for uint8 [nblocks, bytes]."""
    if name in NUMPY_DECODERS:
        return NUMPY_DECODERS[name](blocks), "numpy"
    qtype = FORMATS[name][0]
    values = quants.dequantize(blocks.reshape(-1).copy(), qtype)
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    assert values.size == blocks.shape[0] * FORMATS[name][1]
    return values, "gguf"


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(SEED)
    manifest = {
        "generator": "tests/golden/gen_block_quant.py",
        "packages": {k: v for k, v in PINNED.items()},
        "dequant": [],
        "matmul": [],
    }
    for name, (_, elements, nbytes, _, nblocks) in FORMATS.items():
        blocks = random_blocks(rng, name, nblocks)
        values, source = dequantize(name, blocks)
        np.save(os.path.join(OUT, f"{name}.blocks.npy"), blocks)
        np.save(os.path.join(OUT, f"{name}.values.npy"), values)
        manifest["dequant"].append({"format": name, "blocks": nblocks, "block_bytes": nbytes,
                                    "block_elements": elements, "source": source})

    for name, rows, out, nb in MATMUL:
        _, elements, nbytes, _, _ = FORMATS[name]
        inf = nb * elements
        weights = random_blocks(rng, name, out * inf // elements, full_range=False)
        w, source = dequantize(name, weights)
        w = w.astype(np.float64).reshape(out, inf)
        x = rng.standard_normal((rows, inf)).astype(np.float32)
        x64 = x.astype(np.float64)
        want = x64 @ w.T
        sum_abs = np.abs(x64) @ np.abs(w).T
        assert np.all(np.isfinite(want))
        manifest["matmul"].append({
            "format": name, "rows": rows, "out": out, "in": inf, "source": source,
            "weights_hex": weights.tobytes().hex(), "x_hex": x.astype("<f4").tobytes().hex(),
            "want": want.reshape(-1).tolist(), "sum_abs": sum_abs.reshape(-1).tolist(),
        })

    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, separators=(",", ":"))
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, p)) for p in os.listdir(OUT))
    print(f"wrote {OUT}: {len(os.listdir(OUT))} files, {total} bytes")
    print("requirements: " + " ".join(f"{k}=={v}" for k, v in PINNED.items()))


if __name__ == "__main__":
    main()
