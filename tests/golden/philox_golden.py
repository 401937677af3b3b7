"""Helpers shared by gen_dropout.py, gen_sampling.py and gen_quant.py.

An independent Python implementation of Philox4x32-10 (Salmon et al., SC'11; checked here against
the Random123 known-answer vectors) and of the uniform mappings documented in
include/backplane/random.hpp, plus dtype rounding and compact JSON encoding of storage values.
"""

import json

import numpy as np
import torch

M32 = 0xFFFFFFFF

# ---- Philox4x32-10 ------------------------------------------------------------------------------


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32,
                          ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32)
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


# Random123 kat_vectors, philox4x32 with 10 rounds.
assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
assert philox4x32_10((M32,) * 4, (M32, M32)) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
assert philox4x32_10((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
                     (0xA4093822, 0x299F31D0)) == (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def philox_bits(seed, stream, index):
    """counter = (index lo, index hi, stream lo, stream hi), key = (seed lo, seed hi)."""
    return philox4x32_10((index & M32, (index >> 32) & M32, stream & M32, (stream >> 32) & M32),
                         (seed & M32, (seed >> 32) & M32))


def uniform_float(seed, stream, index):
    """Word 0's high 24 bits / 2^24, as an exact float (also exactly an f32)."""
    return (philox_bits(seed, stream, index)[0] >> 8) / float(1 << 24)


def uniform_double(seed, stream, index):
    """53 bits: (word0 << 21) ^ (word1 >> 11), masked to 53 bits, / 2^53."""
    r = philox_bits(seed, stream, index)
    bits = ((r[0] << 21) ^ (r[1] >> 11)) & ((1 << 53) - 1)
    return bits / float(1 << 53)


# ---- dtypes -------------------------------------------------------------------------------------

TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DTYPES = ["f32", "f64", "f16", "bf16"]


def round_to(values, dtype):
    """float64 values rounded to the storage dtype the way the C++ test's Buffer::Set stores a
    double (f64 -> f32 -> f16/bf16, each round to nearest even), returned as float64."""
    t = torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64)
    if dtype != "f64":
        t = t.to(torch.float32).to(TORCH[dtype])
    return t.to(torch.float64).numpy()


def short(values, dtype):
    """The shortest decimals that the C++ test's Buffer::Set stores as exactly these dtype values
    (values must already be representable in dtype). Returns Python floats for json."""
    values = np.asarray(values, dtype=np.float64)
    out = []
    for v in values.tolist():
        if not np.isfinite(v) or dtype == "f64":
            out.append(v)
            continue
        for digits in range(1, 18):
            cand = float(f"{v:.{digits}g}")
            if round_to([cand], dtype)[0] == v:
                out.append(cand)
                break
        else:
            raise AssertionError(f"no short form for {v!r} as {dtype}")
    return out


def write_json(path, obj):
    text = json.dumps(obj, separators=(",", ":"))
    with open(path, "w") as f:
        f.write(text + "\n")
    print(f"wrote {path}: {len(text) / 1024:.1f} KiB")
