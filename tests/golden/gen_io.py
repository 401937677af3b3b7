#!/usr/bin/python3
"""Golden files for the .npy / .safetensors codecs, written by NumPy and by a direct Python
encoding of the safetensors layout (8-byte little-endian header length, JSON header, data)."""
import json
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "io")
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(7)

arrays = {
    "f64": rng.standard_normal((2, 3)),
    "f32": rng.standard_normal((3, 4)).astype(np.float32),
    "f16": rng.standard_normal((5,)).astype(np.float16),
    "i64": rng.integers(-2**40, 2**40, (2, 2), dtype=np.int64),
    "i32": rng.integers(-1000, 1000, (4,), dtype=np.int32),
    "i16": rng.integers(-1000, 1000, (2, 2), dtype=np.int16),
    "i8": rng.integers(-128, 127, (7,), dtype=np.int8),
    "u64": rng.integers(0, 2**60, (3,), dtype=np.uint64),
    "u32": rng.integers(0, 2**31, (3,), dtype=np.uint32),
    "u16": rng.integers(0, 60000, (3,), dtype=np.uint16),
    "u8": rng.integers(0, 255, (2, 5), dtype=np.uint8),
    "bool": rng.integers(0, 2, (11,)).astype(np.bool_),
    "c64": (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64),
    "c128": rng.standard_normal(2) + 1j * rng.standard_normal(2),
    "scalar_f32": np.float32(2.5),
    "empty_f32": np.zeros((0, 3), dtype=np.float32),
}
expected = {}
for name, a in arrays.items():
    a = np.asarray(a)
    np.save(os.path.join(OUT, name + ".npy"), a)
    expected[name] = {"shape": list(a.shape),
                      "values": [[float(v.real), float(v.imag)] if np.iscomplexobj(a) else float(v)
                                 for v in a.reshape(-1)]}
# Variants the reader must handle: big-endian and Fortran order.
big = arrays["i32"].astype(">i4")
np.save(os.path.join(OUT, "i32_big_endian.npy"), big)
fortran = np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
np.save(os.path.join(OUT, "f64_fortran.npy"), fortran)
expected["i32_big_endian"] = expected["i32"]
expected["f64_fortran"] = {"shape": [2, 3, 4], "values": [float(v) for v in range(24)]}
# bf16 as 2-byte void: the high halves of these f32 values (exactly representable in bf16).
bf16_values = np.array([1.0, -2.5, 0.15625, 2.0**100], dtype=np.float32)
raw = (bf16_values.view(np.uint32) >> 16).astype(np.uint16).view("V2")
np.save(os.path.join(OUT, "bf16.npy"), raw)
expected["bf16"] = {"shape": [4], "values": [float(v) for v in bf16_values]}

# safetensors, encoded by hand.
tensors = {"w": arrays["f32"], "b": arrays["f16"], "ids": arrays["i64"], "mask": arrays["bool"]}
codes = {np.float32: "F32", np.float16: "F16", np.int64: "I64", np.bool_: "BOOL"}
header, blob = {}, b""
for name in sorted(tensors):
    a = np.ascontiguousarray(tensors[name])
    data = a.astype(np.uint8).tobytes() if a.dtype == np.bool_ else a.tobytes()
    header[name] = {"dtype": codes[a.dtype.type], "shape": list(a.shape),
                    "data_offsets": [len(blob), len(blob) + len(data)]}
    blob += data
header["__metadata__"] = {"format": "pt"}
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(os.path.join(OUT, "params.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + blob)
expected["safetensors"] = {name: {"shape": list(np.asarray(a).shape),
                                  "values": [float(v) for v in np.asarray(a).reshape(-1)]}
                           for name, a in tensors.items()}
with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(expected, f, indent=0)
