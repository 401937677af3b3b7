#!/usr/bin/env python3
"""Writes the generated seeds of fuzz/corpus; the other seeds are copies of test fixtures and
examples (docs/reliability.md lists them). Run: python3 fuzz/make_seeds.py (plain Python)."""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- GGUF: a tiny GPT-2 BPE vocabulary plus two tensors ----------------------------------------
def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def byte_chars():  # GPT-2's byte-to-unicode alphabet
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def gguf(kvs, tensors, version=3):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, typ, val in kvs:
        out += gguf_str(key) + struct.pack("<I", typ)
        if typ == 8:
            out += gguf_str(val)
        elif typ == 4:
            out += struct.pack("<I", val)
        elif typ == 7:
            out += struct.pack("<B", val)
        elif typ == 6:
            out += struct.pack("<f", val)
        elif typ == 9:
            etyp, items = val
            out += struct.pack("<IQ", etyp, len(items))
            for it in items:
                out += gguf_str(it) if etyp == 8 else struct.pack("<i", it)
    offset, blobs = 0, []
    for name, dims, ggml_type, data in tensors:
        out += gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ggml_type, offset)
        pad = (-len(data)) % 32
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    out += b"\0" * ((-len(out)) % 32)
    return out + b"".join(blobs)


tokens = byte_chars() + ["he", "ll", "llo", "hello", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]
types = [1] * (len(tokens) - 3) + [3, 3, 3]
merges = ["h e", "l l", "ll o", "he llo"]
chatml = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}")
tok_kvs = [
    ("general.architecture", 8, "llama"),
    ("general.alignment", 4, 32),
    ("tokenizer.ggml.model", 8, "gpt2"),
    ("tokenizer.ggml.pre", 8, "smollm"),
    ("tokenizer.ggml.tokens", 9, (8, tokens)),
    ("tokenizer.ggml.token_type", 9, (5, types)),
    ("tokenizer.ggml.merges", 9, (8, merges)),
    ("tokenizer.ggml.bos_token_id", 4, len(tokens) - 1),
    ("tokenizer.ggml.eos_token_id", 4, len(tokens) - 2),
    ("tokenizer.ggml.add_bos_token", 7, 0),
    ("tokenizer.chat_template", 8, chatml),
]
f32 = struct.pack("<8f", *[0.5 * i for i in range(8)])
q8_0 = struct.pack("<e", 0.25) + bytes(range(32))  # one Q8_0 block: f16 scale, 32 int8
put("gguf", "tokenizer.gguf", gguf(tok_kvs, [("a.weight", [4, 2], 0, f32), ("b.weight", [32], 8, q8_0)]))
put("gguf", "empty_v2.gguf", gguf([], [], version=2))

# ---- .safetensors --------------------------------------------------------------------------------
def safetensors(entries, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((-len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


put("safetensors", "mixed.safetensors", safetensors([
    ("w", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
    ("ids", "I64", [3], struct.pack("<3q", 1, -2, 3)),
    ("mask", "BOOL", [2], b"\x01\x00"),
    ("h", "BF16", [1], b"\x80\x3f"),
    ("z", "F16", [0], b""),
], {"format": "pt"}))
put("safetensors", "empty.safetensors", safetensors([]))

# ---- attribute text: first byte picks the type (int, float, bool, string, int list, float list)
for i, (t, text) in enumerate([(0, "42"), (0, "-9223372036854775808"), (1, "1e-3"), (1, "inf"),
                               (2, "true"), (3, "reflect"), (4, "[1, 2, 3]"), (4, "1,-2"),
                               (5, "[0.5, -1e300]"), (5, "nan,2")]):
    put("attr_text", f"seed{i}", bytes([t]) + text.encode())

# ---- WordPiece vocab.txt ---------------------------------------------------------------------------
put("wordpiece_vocab", "vocab.txt",
    "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", ",", "!", "un", "##aff", "##able",
               "world", "東", "京", "##s"]) + "\n")
put("wordpiece_vocab", "crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhello\r\n")
