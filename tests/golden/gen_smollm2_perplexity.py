#!/usr/bin/env python3
"""Perplexity reference for SmolLM2-135M-Instruct (Q4_1 GGUF) on /usr/share/common-licenses/GPL-3,
computed the way llama.cpp's `llama-perplexity -f FILE -c N_CTX` does (tools/perplexity/
perplexity.cpp, function perplexity(); no --ppl-stride), with the model run by HF transformers in
float32 on CPU. Nothing here calls Backplane.

The procedure (llama.cpp's metric):
  1. Read the file as bytes (UTF-8) and drop one trailing '\\n' if present (common/arg.cpp, -f).
  2. Tokenise the whole text once: common_tokenize(ctx, text, add_special=true,
     parse_special=false). add_special adds BOS only when the vocab says so; this GGUF has
     tokenizer.ggml.add_bos_token = false, so no BOS is added. Special-token text is not parsed
     (the GPL has none; asserted). Pre-tokenizer "smollm": digits are split off one by one before
     the GPT-2 regex (see smollm2_tokenizer in gen_smollm2_reference.py).
  3. Needs at least 2*n_ctx tokens. n_chunk = n_tokens / n_ctx (integer division); the tail that
     does not fill a chunk is dropped. Chunk i is tokens[i*n_ctx, (i+1)*n_ctx).
  4. Each chunk is evaluated on its own from an empty KV cache, positions 0..n_ctx-1. When the
     vocab adds BOS the chunk's first token is replaced by BOS for the evaluation (not here:
     add_bos is false, so chunks are fed unchanged). llama.cpp packs n_batch/n_ctx chunks into
     one batch as separate sequences; that does not change the result.
  5. Only the second half is scored: first = n_ctx/2; logits at positions j = first..n_ctx-2
     predict token j+1, i.e. n_ctx/2 - 1 tokens per chunk (255 for n_ctx = 512, 63 for 128).
     Per token: nll = -(logit[tok] - max - log(sum_v expf(logit[v] - max))), logits in float32,
     the sum and nll in double.
  6. Running value after chunk k (what llama.cpp prints as "[k]ppl,"): exp(sum nll / count)
     over chunks 1..k. Final PPL = exp(mean nll) over all scored tokens; the printed "+/-" is
     ppl * sqrt((mean(nll^2) - mean(nll)^2) / (count - 1)).

Note: llama.cpp itself multiplies Q4_1 weights with q8_1-quantised activations, so its PPL for
this file differs slightly from this float32 reference (dequantised weights, f32 activations).
Cross-check, done once by hand with llama-perplexity (llama.cpp as vendored in llama-cpp-python
0.3.36, CPU, -t 2): it tokenises the file to the same 7638 ids (read back from its
--kl-divergence-base file) and reports PPL 18.3459 +/- 0.86234 (-c 512, 14 chunks) and
24.2919 +/- 1.19651 (-c 128, 59 chunks), against 18.3001 and 24.2311 here (0.25% apart).

Run (same venv as gen_smollm2_reference.py, whose loaders it imports):
    /tmp/venv-ref/bin/python tests/golden/gen_smollm2_perplexity.py [MODEL.gguf]
Pinned: torch==2.15.0 transformers==5.24.0 gguf==0.19.0 numpy==2.4.6 accelerate==1.15.0.

File: tests/golden/data/smollm2/perplexity.json (per n_ctx: token count, chunks, per-chunk nll
sums and running ppl, final ppl; plus the full token id list of the text, to test tokenisation).
"""

import hashlib
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_smollm2_reference import (MODEL_DEFAULT, OUT_DIR, load_model, sha256_file,  # noqa: E402
                                   smollm2_tokenizer, versions)

TEXT_PATH = "/usr/share/common-licenses/GPL-3"
N_CTXS = [512, 128]


def read_prompt_file(path):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    return raw, text


def chunk_nll(logits, targets):
    """llama.cpp log_softmax(): float32 max and expf, double sum and result; returns nll per row."""
    logits = logits.astype(np.float32)
    m = logits.max(axis=1, keepdims=True)
    sum_exp = np.exp(logits - m).astype(np.float64).sum(axis=1)
    picked = logits[np.arange(len(targets)), targets].astype(np.float64)
    return -(picked - m[:, 0].astype(np.float64) - np.log(sum_exp))


@torch.no_grad()
def perplexity(model, tokens, n_ctx, add_bos, bos_id):
    assert len(tokens) >= 2 * n_ctx
    n_chunk = len(tokens) // n_ctx
    first = n_ctx // 2
    nll = nll2 = 0.0
    count = 0
    chunks = []
    for i in range(n_chunk):
        chunk = list(tokens[i * n_ctx:(i + 1) * n_ctx])
        if add_bos:
            chunk[0] = bos_id
        logits = model(input_ids=torch.tensor([chunk])).logits[0].numpy()
        rows = logits[first:n_ctx - 1]
        targets = np.array(tokens[i * n_ctx + first + 1:(i + 1) * n_ctx])
        v = chunk_nll(rows, targets)
        nll += float(v.sum())
        nll2 += float((v * v).sum())
        count += n_ctx - first - 1
        chunks.append({"chunk": i + 1, "nll_sum": float("%.12g" % v.sum()),
                       "running_ppl": float("%.10g" % math.exp(nll / count))})
        print("  n_ctx %d [%d]%.4f" % (n_ctx, i + 1, math.exp(nll / count)), flush=True)
    mean = nll / count
    ppl = math.exp(mean)
    var = nll2 / count - mean * mean
    err = ppl * math.sqrt(var / (count - 1)) if var > 0 else None
    return {"n_ctx": n_ctx, "n_chunk": n_chunk, "first": first,
            "scored_tokens_per_chunk": n_ctx - first - 1, "scored_tokens": count,
            "tokens_used": n_chunk * n_ctx, "mean_nll": float("%.12g" % mean),
            "ppl": float("%.10g" % ppl), "ppl_plus_minus": float("%.6g" % err),
            "chunks": chunks}


def main():
    model_path = sys.argv[1] if len(sys.argv) > 1 else MODEL_DEFAULT
    print("requirements: torch==2.15.0 transformers==5.24.0 gguf==0.19.0 numpy==2.4.6 "
          "accelerate==1.15.0 (tokenizers==0.23.3)")
    import gguf
    reader = gguf.GGUFReader(model_path)
    add_bos = bool(reader.fields["tokenizer.ggml.add_bos_token"].contents())
    bos_id = int(reader.fields["tokenizer.ggml.bos_token_id"].contents())
    assert not add_bos, "this reference assumes the packaged GGUF (add_bos_token false)"

    tok, stock_tok = smollm2_tokenizer(model_path)
    raw, text = read_prompt_file(TEXT_PATH)
    specials = [t for t in tok.all_special_tokens + [a.content for a in
                tok.backend_tokenizer.get_added_tokens_decoder().values()] if t in text]
    assert not specials, f"text contains special-token strings {specials} (parse_special=false)"
    tokens = tok(text, add_special_tokens=False)["input_ids"]
    stock = stock_tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(tokens) == text
    print("tokens:", len(tokens), "(stock HF GGUF pre-tokenizer:", len(stock), ")")

    torch.set_num_threads(2)
    model = load_model(model_path)
    results = [perplexity(model, tokens, n, add_bos, bos_id) for n in N_CTXS]

    payload = {
        "about": "llama.cpp llama-perplexity metric for SmolLM2-135M-Instruct Q4_1 on GPL-3, "
                 "HF transformers float32 CPU; made by tests/golden/gen_smollm2_perplexity.py",
        "versions": versions(),
        "model_file": os.path.basename(model_path),
        "model_sha256": sha256_file(model_path),
        "text_file": TEXT_PATH,
        "text_sha256": hashlib.sha256(raw).hexdigest(),
        "text_bytes": len(raw),
        "trailing_newline_dropped": raw.endswith(b"\n"),
        "settings": {"add_bos": add_bos, "bos_token_id": bos_id, "parse_special": False,
                     "ppl_stride": 0, "dtype": "float32", "attn_implementation": "eager",
                     "pre_tokenizer": "Digits(individual)+ByteLevel (llama.cpp smollm)"},
        "n_tokens": len(tokens),
        "n_tokens_stock_hf_pre_tokenizer": len(stock),
        "results": results,
        "token_ids": tokens,
    }
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, "perplexity.json")
    with open(path, "w") as f:
        json.dump(payload, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")
    for r in results:
        print("n_ctx %d: %d chunks, %d scored tokens, PPL = %.4f +/- %.5f" % (
            r["n_ctx"], r["n_chunk"], r["scored_tokens"], r["ppl"], r["ppl_plus_minus"]))


if __name__ == "__main__":
    main()
