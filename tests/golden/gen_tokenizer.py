#!/usr/bin/env python3
r"""Golden token ids for SmolLM2-135M-Instruct's byte-level BPE tokenizer, from Hugging Face's
tokenizer loaded from the GGUF file (AutoTokenizer.from_pretrained(dir, gguf_file=name)), and
pre-tokeniser splits from `tokenizers`' own Split/Digits pre-tokenisers. Writes
tests/golden/data/tokenizer/smollm2.json.

One correction: transformers' GGUF loader has no entry for tokenizer.ggml.pre == "smollm" and
falls back to plain GPT-2 splitting (ByteLevel with its regex). SmolLM2's own tokenizer.json
splits digits first (Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)]), and
so does llama.cpp for "smollm" (regexes "\p{N}" then GPT-2's). The two differ where whitespace
meets a digit ("a  1", "1\n\n2"). The golden "ids" come from the loaded tokenizer with that
pre-tokeniser put back; "ids_hf_gguf" keeps what the unmodified loader gives, and the script
prints the strings where they differ.

Needs the model (scripts/fetch-models.sh) and a throwaway venv; transformers' GGUF reader
imports torch, so torch is needed too (only its import is used):
  python3 -m venv /tmp/venv-tok
  /tmp/venv-tok/bin/pip install transformers==5.24.0 tokenizers==0.23.3 gguf==0.19.0 \
      numpy==2.4.6 torch==2.15.0 jinja2==3.1.6
  /tmp/venv-tok/bin/python tests/golden/gen_tokenizer.py
"""

import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile

REQUIREMENTS = ("transformers==5.24.0 tokenizers==0.23.3 gguf==0.19.0 numpy==2.4.6 torch==2.15.0 "
                "jinja2==3.1.6")

import gguf  # noqa: E402
import jinja2  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Regex, pre_tokenizers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from transformers.convert_slow_tokenizer import bytes_to_unicode  # noqa: E402

MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PROMPT = "Once upon a time, there was a little"
PROMPT_IDS = [6403, 1980, 253, 655, 28, 665, 436, 253, 1838]
GPL3 = "/usr/share/common-licenses/GPL-3"

# The regexes as `tokenizers` (Oniguruma) runs them.
GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

STRINGS = [
    "",
    "a",
    " ",
    "\n",
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "12345",
    "3.14 and 2.71828, or 1,000,000.",
    "The year 2024 had 366 days; 10% off $99.99!",
    "I'm sure you're right: they've said we'll see, he'd go, it's Tom's.",
    "I'M SURE YOU'RE RIGHT, THEY'VE SAID WE'LL SEE",
    "  two leading spaces",
    "trailing spaces   ",
    "multiple    spaces   between words",
    "a  1 and b   22",
    "line one\nline two\n\nline four\n\n\n",
    "1\n\n2\n 3",
    "\ttab\tseparated\tvalues\t",
    "\r\nWindows line\r\n  \r\n",
    "   \n\n   \t ",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m \u00fcber",
    "\u4e2d\u6587\u6d4b\u8bd5\uff1a\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "Emoji: \U0001f600\U0001f389\U0001f44d\U0001f3fd and \U0001f1fa\U0001f1f8 flags",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "Mixed: English, \u4e2d\u6587, \u0627\u0644\u0639\u0631\u0628\u064a\u0629, "
    "\u0440\u0443\u0441\u0441\u043a\u0438\u0439, 123",
    "\u0663\u0664\u0665 \u00bd \u216b numbers",
    "<|im_start|>user\nHi there<|im_end|>\n",
    "<|endoftext|>",
    "text<|im_start|>inside<|im_end|>text",
    "<|im_start|",
    "def foo(x):\n    return x ** 2  # square\n",
    "https://example.com/path?query=1&b=2#frag",
    "x = [1, 2, 3]; y = {'a': 1}",
    "!!!???...,,,;;; --- ===",
    "'s 't 're 've 'm 'll 'd '' \"double\"",
    "\u017f long s: '\u017f 'S",
    "ctrl\x04\x06\x1d bytes without tokens; plane 4: \U00040000",
    "merge across a dropped byte: !!\x04!! ..\x1d.. ab\x04cd",
    "Zero\u200bwidth and non\u00a0breaking\u3000space",
    "CamelCaseWord snake_case_word kebab-case-word",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
]

CHATS = [
    ([{"role": "user", "content": "What is the capital of France?"}], True),
    ([{"role": "system", "content": "You are a pirate."},
      {"role": "user", "content": "Hello!"},
      {"role": "assistant", "content": "Arr, hello matey."},
      {"role": "user", "content": "Tell me a joke."}], True),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], False),
]

# Llama 3.0's template (meta-llama/Meta-Llama-3-8B-Instruct), rendered here with jinja2.
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant"
    "<|end_header_id|>\n\n' }}{% endif %}")


# Characters of every class the regexes tell apart, for random pre-tokeniser cases.
RANDOM_ALPHABET = ["a", "b", "Z", "s", "t", "S", "\u00e9", "\u4e2d", "\u017f", "1", "7", "\u0663",
                   "\u00bd", " ", " ", " ", "\n", "\r", "\t", "\u00a0", "\u3000", "'", "'", "!",
                   ".", "-", "\u200b", "\U0001f600", "\"", "re", "ll", "ve", "D", "M"]


def random_texts(count, seed=20241201):
    import random
    rng = random.Random(seed)
    return ["".join(rng.choice(RANDOM_ALPHABET) for _ in range(rng.randint(1, 24)))
            for _ in range(count)]


def pieces(pre, text):
    return [p for p, _ in pre.pre_tokenize_str(text)]


def main():
    cache = os.environ.get("BACKPLANE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "backplane"))
    model = os.path.join(cache, "models", MODEL_NAME)
    with open(model, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert digest == MODEL_SHA256, "model sha256 mismatch: %s" % digest
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(model, os.path.join(tmp, MODEL_NAME))
        tok = AutoTokenizer.from_pretrained(tmp, gguf_file=MODEL_NAME)

    reader = gguf.GGUFReader(model)
    field = reader.fields["tokenizer.ggml.tokens"]
    gguf_tokens = [field.contents(i) for i in range(len(field.data))]
    field = reader.fields["tokenizer.ggml.token_type"]
    gguf_types = [int(field.contents(i)) for i in range(len(field.data))]
    pre_name = reader.fields["tokenizer.ggml.pre"].contents()
    assert pre_name == "smollm", pre_name

    def encode(text, split_special=False):
        return tok(text, split_special_tokens=split_special)["input_ids"]

    with open(GPL3, encoding="utf-8") as f:
        gpl3_text = f.read()[:2000]
    texts = STRINGS + [PROMPT, gpl3_text]

    loaded_pre = tok.backend_tokenizer.pre_tokenizer
    print("pre-tokenizer of the GGUF loader:", loaded_pre)
    hf_gguf_ids = {text: encode(text) for text in texts}
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    differ = [text for text in texts if encode(text) != hf_gguf_ids[text]]
    print("strings the loader's pre-tokenizer tokenises differently:", differ)

    prompt_ids = encode(PROMPT)
    assert prompt_ids == PROMPT_IDS, prompt_ids
    add_bos = encode("a")[0] == tok.bos_token_id

    gpt2 = pre_tokenizers.Split(Regex(GPT2_SPLIT), behavior="isolated")
    smollm = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), gpt2])
    llama3 = pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated")

    vocab = tok.get_vocab()
    bytes_without_token = [b for b in range(256) if bytes_to_unicode()[b] not in vocab]
    cases = []
    for text in texts:
        ids = encode(text)
        # the text is what these ids decode to (no clean-up of spaces), unless it has a byte
        # without a token (left out)
        if not set(text.encode("utf-8")) & set(bytes_without_token):
            assert tok.decode(ids, clean_up_tokenization_spaces=False) == text, repr(text)
        cases.append({
            "text": text,
            "ids": ids,
            "ids_hf_gguf": hf_gguf_ids[text],
            "ids_plain": encode(text, split_special=True),
            "pieces": {"gpt2": pieces(gpt2, text), "smollm": pieces(smollm, text),
                       "llama3": pieces(llama3, text)},
        })

    random_cases = [{"text": text, "ids": encode(text),
                     "pieces": {"gpt2": pieces(gpt2, text),
                                              "smollm": pieces(smollm, text),
                                              "llama3": pieces(llama3, text)}}
                    for text in random_texts(300)]

    chats = []
    for messages, gen in CHATS:
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)
        ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=gen)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        chats.append({"messages": messages, "add_generation_prompt": gen, "text": text,
                      "ids": list(ids)})

    llama3_chats = []
    env = jinja2.Environment()
    for messages, gen in CHATS:
        text = env.from_string(LLAMA3_TEMPLATE).render(messages=messages, add_generation_prompt=gen,
                                                        bos_token="<|begin_of_text|>")
        llama3_chats.append({"messages": messages, "add_generation_prompt": gen, "text": text})

    # Bytes of single tokens, from GPT-2's byte<->unicode table (transformers' bytes_to_unicode).
    unicode_to_byte = {c: b for b, c in bytes_to_unicode().items()}
    sample = sorted(set(list(range(0, 40)) + [100, 198, 216, 1000, 6403, 12345, 30000, 49151] +
                        prompt_ids + [i for c in cases if c["text"].startswith(("Emoji", "\u4e2d")) for i in c["ids"]]))
    token_bytes = []
    for i in sample:
        t = gguf_tokens[i]
        if gguf_types[i] == 3:
            b = t.encode("utf-8")
        else:
            b = bytes(unicode_to_byte[c] for c in t)
        token_bytes.append({"id": i, "hex": b.hex()})

    out = {
        "generator": "tests/golden/gen_tokenizer.py",
        "requirements": REQUIREMENTS,
        "versions": {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                     "gguf": importlib.metadata.version("gguf"), "jinja2": jinja2.__version__},
        "model": MODEL_NAME,
        "model_sha256": MODEL_SHA256,
        "vocab_size": len(gguf_tokens),
        "bos": tok.bos_token_id,
        "eos": tok.eos_token_id,
        "im_end": tok.convert_tokens_to_ids("<|im_end|>"),
        "endoftext": tok.convert_tokens_to_ids("<|endoftext|>"),
        "add_bos": add_bos,
        "unk": tok.unk_token_id,
        "bytes_without_token": bytes_without_token,
        "pre_tokenizer_note": "ids: the GGUF loader's tokenizer with SmolLM2's pre-tokenizer "
                              "(Digits then ByteLevel); ids_hf_gguf: the loader's own (ByteLevel "
                              "only)",
        "gpl3_chars": 2000,
        "cases": cases,
        "pretokenize_random": random_cases,
        "chats": chats,
        "llama3_template": LLAMA3_TEMPLATE,
        "llama3_chats": llama3_chats,
        "token_bytes": token_bytes,
    }
    root = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(root, "data", "tokenizer", "smollm2.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=None, separators=(",", ":"))
        f.write("\n")
    print("requirements:", REQUIREMENTS)
    print("wrote %s (%d bytes), add_bos=%s" % (path, os.path.getsize(path), add_bos))


if __name__ == "__main__":
    sys.exit(main())
