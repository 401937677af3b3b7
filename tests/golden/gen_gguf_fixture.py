#!/usr/bin/env python3
"""Golden files for the GGUF reader (tests/core/gguf_test.cpp), written by an independent writer,
the PyPI `gguf` package (llama.cpp's gguf-py), and checked back with its GGUFReader.

  python3 -m venv /tmp/venv-gguf && /tmp/venv-gguf/bin/pip install gguf==0.19.0 numpy==2.4.6
  /tmp/venv-gguf/bin/python tests/golden/gen_gguf_fixture.py

Writes tests/golden/data/gguf/:
  fixture.gguf        every metadata value type, nested arrays, general.alignment 64 and five
                      small tensors (F32, F16, Q8_0, Q4_1, a 4-d F32)
  fixture.json        the expected header, metadata, tensor infos and each tensor's bytes (hex)
  smollm2_facts.json  facts of $BACKPLANE_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf (from
                      scripts/fetch-models.sh) as GGUFReader sees them; skipped when it is absent
"""
import hashlib
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT

REQUIREMENTS = "gguf==0.19.0 numpy==2.4.6"
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "gguf")
FIXTURE = os.path.join(OUT, "fixture.gguf")
ALIGNMENT = 64

TYPE_NAMES = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16",
              VT.UINT32: "u32", VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool",
              VT.STRING: "string", VT.ARRAY: "array", VT.UINT64: "u64", VT.INT64: "i64",
              VT.FLOAT64: "f64"}


def f32(x):
    return float(np.float32(x))


# (key, value, type, array element type). Float32 values are given as the exact double of the
# float32 the writer stores, so the JSON holds what the file holds.
METADATA = [
    ("test.u8", 200, VT.UINT8, None),
    ("test.i8", -100, VT.INT8, None),
    ("test.u16", 60000, VT.UINT16, None),
    ("test.i16", -30000, VT.INT16, None),
    ("test.u32", 4000000000, VT.UINT32, None),
    ("test.i32", -2000000000, VT.INT32, None),
    ("test.f32", f32(3.14159), VT.FLOAT32, None),
    ("test.bool_true", True, VT.BOOL, None),
    ("test.bool_false", False, VT.BOOL, None),
    ("test.string", "h\u00e9llo w\u00f6rld \u65e5\u672c", VT.STRING, None),
    ("test.u64", 12345678901234, VT.UINT64, None),
    ("test.u64_huge", 2**63 + 5, VT.UINT64, None),  # does not fit int64
    ("test.i64", -(2**62) - 7, VT.INT64, None),
    ("test.f64", 2.718281828459045, VT.FLOAT64, None),
    ("test.array.u8", [0, 1, 255], VT.ARRAY, VT.UINT8),
    ("test.array.i16", [-32768, 0, 32767], VT.ARRAY, VT.INT16),
    ("test.array.u32", [7, 4294967295], VT.ARRAY, VT.UINT32),
    ("test.array.i32", [1, -2, 3, -2147483648], VT.ARRAY, VT.INT32),
    ("test.array.u64", [0, 2**64 - 1], VT.ARRAY, VT.UINT64),
    ("test.array.i64", [-(2**63), 2**63 - 1], VT.ARRAY, VT.INT64),
    ("test.array.f32", [f32(0.5), f32(-1.25), f32(1e-3)], VT.ARRAY, VT.FLOAT32),
    ("test.array.f64", [1e-300, -0.1, 1e300], VT.ARRAY, VT.FLOAT64),
    ("test.array.string", ["a", "bc", "", "\u65e5\u672c"], VT.ARRAY, VT.STRING),
    ("test.array.bool", [True, False, True], VT.ARRAY, VT.BOOL),
    # Arrays of arrays: the writer types each inner array by its first element (ints -> i32).
    ("test.array.nested_i32", [[1, 2], [3, 4, 5]], VT.ARRAY, VT.ARRAY),
    ("test.array.nested_string", [["x"], ["y", "z"]], VT.ARRAY, VT.ARRAY),
]

rng = np.random.default_rng(20240611)
# (name, numpy array or raw bytes, ggml type, ggml dims). numpy shapes are row-major, ggml dims
# reversed (dims[0] is the contiguous one).
TENSORS = [
    ("f32.vector", rng.standard_normal(7).astype(np.float32), QT.F32, [7]),
    ("f16.matrix", rng.standard_normal((3, 5)).astype(np.float16), QT.F16, [5, 3]),
    ("q8_0.matrix", gguf.quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), QT.Q8_0),
     QT.Q8_0, [64, 2]),
    ("q4_1.matrix", gguf.quants.quantize(rng.standard_normal((3, 32)).astype(np.float32), QT.Q4_1),
     QT.Q4_1, [32, 3]),
    ("f32.rank4", rng.standard_normal((2, 1, 3, 2)).astype(np.float32), QT.F32, [2, 3, 1, 2]),
]


def json_value(value, vtype, sub):
    if vtype != VT.ARRAY:
        return {"type": TYPE_NAMES[vtype], "value": value}
    if sub == VT.ARRAY:
        inner = [json_value(v, VT.ARRAY, gguf.GGUFValueType.get_type(v[0])) for v in value]
        return {"type": "array", "element_type": "array", "value": inner}
    return {"type": "array", "element_type": TYPE_NAMES[sub], "value": value}


def write_fixture():
    os.makedirs(OUT, exist_ok=True)
    writer = gguf.GGUFWriter(FIXTURE, "test")  # writes general.architecture = "test" first
    writer.add_custom_alignment(ALIGNMENT)
    for key, value, vtype, sub in METADATA:
        writer.add_key_value(key, value, vtype, sub_type=None if sub == VT.ARRAY else sub)
    for name, data, qtype, _dims in TENSORS:
        writer.add_tensor(name, data, raw_dtype=None if qtype in (QT.F32, QT.F16) else qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    metadata = [{"key": "general.architecture", "type": "string", "value": "test"},
                {"key": "general.alignment", "type": "u32", "value": ALIGNMENT}]
    metadata += [dict(key=k, **json_value(v, t, s)) for k, v, t, s in METADATA]

    # Check the file against an independent reading (GGUFReader) and our own expectations.
    reader = gguf.GGUFReader(FIXTURE)
    fields = [(k, f) for k, f in reader.fields.items() if not k.startswith("GGUF.")]
    assert [k for k, _ in fields] == [m["key"] for m in metadata], [k for k, _ in fields]
    for (key, field), want in zip(fields, metadata):
        assert TYPE_NAMES[field.types[0]] == want["type"], key
        if want["type"] == "array" and want["element_type"] != "array":
            assert field.contents() == want["value"], (key, field.contents())
        elif want["type"] != "array":
            assert field.contents() == want["value"], (key, field.contents())
    assert reader.alignment == ALIGNMENT and reader.data_offset % ALIGNMENT == 0

    tensors = []
    offset = 0
    for (name, data, qtype, dims), rt in zip(TENSORS, reader.tensors):
        raw = np.ascontiguousarray(data).tobytes()
        assert rt.name == name and rt.tensor_type == qtype and rt.shape.tolist() == dims, name
        assert rt.data_offset - reader.data_offset == offset, (name, rt.data_offset, offset)
        assert rt.n_bytes == len(raw) and rt.data.tobytes() == raw, name
        tensors.append({"name": name, "ggml_type": int(qtype), "dims": dims, "offset": offset,
                        "bytes": len(raw), "hex": raw.hex()})
        offset += (len(raw) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    size = os.path.getsize(FIXTURE)
    assert reader.data_offset + offset == size, (reader.data_offset, offset, size)
    expected = {"version": 3, "alignment": ALIGNMENT, "data_offset": int(reader.data_offset),
                "file_size": size, "metadata": metadata, "tensors": tensors}
    with open(os.path.join(OUT, "fixture.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"fixture.gguf: {size} bytes, data section at {reader.data_offset}, "
          f"{len(metadata)} keys, {len(tensors)} tensors")


def write_smollm2_facts():
    cache = os.environ.get("BACKPLANE_CACHE", os.path.expanduser("~/.cache/backplane"))
    path = os.path.join(cache, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        print(f"{path} is missing (run scripts/fetch-models.sh); smollm2_facts.json not rewritten")
        return
    reader = gguf.GGUFReader(path)
    fields = reader.fields

    def scalar(key):
        return {"type": TYPE_NAMES[fields[key].types[0]], "value": fields[key].contents()}

    def tensor(name):
        t = next(t for t in reader.tensors if t.name == name)
        raw = t.data.tobytes()
        return {"ggml_type": int(t.tensor_type), "dims": t.shape.tolist(),
                "offset": int(t.data_offset - reader.data_offset), "bytes": int(t.n_bytes),
                "first_bytes_hex": raw[:48].hex(), "last_bytes_hex": raw[-16:].hex()}

    keys = ["general.architecture", "llama.block_count", "llama.context_length",
            "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
            "llama.attention.head_count_kv", "llama.rope.freq_base",
            "llama.attention.layer_norm_rms_epsilon", "llama.vocab_size",
            "llama.rope.dimension_count", "tokenizer.ggml.model", "tokenizer.ggml.add_bos_token",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"]
    tokens = fields["tokenizer.ggml.tokens"].contents()
    merges = fields["tokenizer.ggml.merges"].contents()
    token_types = fields["tokenizer.ggml.token_type"].contents()
    with open(path, "rb") as f:
        sha = hashlib.file_digest(f, "sha256").hexdigest()
    facts = {
        "file": "models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": sha,
        "file_size": os.path.getsize(path),
        "version": int(fields["GGUF.version"].contents()),
        "kv_count": int(fields["GGUF.kv_count"].contents()),
        "tensor_count": len(reader.tensors),
        "alignment": int(reader.alignment),
        "data_offset": int(reader.data_offset),
        "metadata": {k: scalar(k) for k in keys},
        "token_count": len(tokens),
        "tokens_first": tokens[:4],
        "token_1000": tokens[1000],
        "tokens_last": tokens[-1],
        "merge_count": len(merges),
        "merges_first": merges[:3],
        "token_type_first": token_types[:4],
        "token_type_sum": int(sum(token_types)),
        "tensors": {n: tensor(n) for n in ["token_embd.weight", "blk.0.attn_q.weight",
                                           "blk.0.attn_norm.weight", "output_norm.weight"]},
        "format_counts": {},
    }
    for t in reader.tensors:
        name = t.tensor_type.name.lower()
        facts["format_counts"][name] = facts["format_counts"].get(name, 0) + 1
    with open(os.path.join(OUT, "smollm2_facts.json"), "w") as f:
        json.dump(facts, f, indent=1, ensure_ascii=False)
        f.write("\n")
    printable = {k: v for k, v in facts.items() if k != "tensors"}
    print(json.dumps(printable, ensure_ascii=False))


if __name__ == "__main__":
    print("requirements:", REQUIREMENTS, "python", sys.version.split()[0])
    write_fixture()
    write_smollm2_facts()
