#!/usr/bin/env python3
"""Reference outputs of SmolLM2-135M-Instruct (the packaged Q4_1 GGUF) from Hugging Face
transformers + PyTorch, for the C++ end-to-end model tests. Nothing here calls Backplane.

Run in a throwaway venv (the default torch wheel is ~6 GB and takes minutes to install):
    python3 -m venv /tmp/venv-ref
    /tmp/venv-ref/bin/pip install torch==2.15.0 transformers==5.24.0 gguf==0.19.0 \
        numpy==2.4.6 accelerate==1.15.0
    /tmp/venv-ref/bin/python tests/golden/gen_smollm2_reference.py [MODEL.gguf]
(tokenizers 0.23.3 came with transformers; accelerate is required by transformers' GGUF loader.)
MODEL.gguf defaults to ~/.cache/backplane/models/SmolLM2-135M-Instruct.Q4_1.gguf.

How the reference is made:
  * AutoModelForCausalLM.from_pretrained(dir, gguf_file=name, dtype=float32) dequantises every
    GGUF tensor to f32 with gguf-py and undoes llama.cpp's q/k rotary row permutation. The script
    re-checks that independently: it dequantises a few tensors itself from the file's raw bytes
    (Q4_1, Q8_0, F32; own NumPy code), undoes the permutation, and asserts they equal the weights
    HF loaded. The output projection is tied to token_embd (the file has no output.weight).
  * Float32 on CPU, torch.set_num_threads(2), eager attention, no BOS (the GGUF says
    tokenizer.ggml.add_bos_token = false and llama.cpp adds none; HF adds none either).
  * The tokenizer HF builds from the GGUF has a plain ByteLevel pre-tokenizer, but the file's
    tokenizer.ggml.pre is "smollm", which llama.cpp pre-splits every digit (\\p{N}) before the
    GPT-2 regex (as does the original SmolLM2 tokenizer.json: Digits(individual) + ByteLevel). The
    two differ on runs of spaces before a digit ("\\n\\n  0." in the GPL). smollm2_tokenizer()
    installs the llama.cpp pre-tokenizer; the prompts here tokenise the same either way (asserted).
  * Greedy decoding: model.generate(do_sample=False, max_new_tokens=20, no repetition penalty),
    cross-checked by a manual loop over past_key_values (DynamicCache) and by one full forward pass
    over prompt + generated tokens. generate() stops at EOS (<|im_end|>, id 2); the manual loop
    always runs 20 steps, so for the chat example both are recorded.
  * Step 12 (0-based; the 13th token) of the story is a near-tie: ' would' 25.8126526 vs ' had'
    25.8094101 (' loved' 25.7599678). llama.cpp's llama-simple (as vendored in llama-cpp-python
    0.3.36, CPU; q8_1 activations) agrees on the first 12 tokens and then picks ' loved'
    ("... in the sun. She loved to play with her friends, and"); a test should not demand one
    token where the top logits are this close.

File: tests/golden/data/smollm2/reference.json (logits are float32 values printed with 9
significant digits; "step" is 0-based, "step1" the same step 1-based).
"""

import hashlib
import json
import os
import sys

import numpy as np
import torch

MODEL_DEFAULT = os.path.expanduser("~/.cache/backplane/models/SmolLM2-135M-Instruct.Q4_1.gguf")
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "smollm2")
PROMPT = "Once upon a time, there was a little"
PROMPT_IDS_EXPECTED = [6403, 1980, 253, 655, 28, 665, 436, 253, 1838]
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
N_NEW = 20
TOP_PROMPT = 10
TOP_STEP = 5
PROBE_IDS = [0, 1, 2, 100, 1000, 2000, 3000, 5000, 7500, 10000,
             12345, 15000, 20000, 25000, 30000, 35000, 40000, 45000, 49000, 49151]
HIDDEN_POSITIONS = 3
HIDDEN_VALUES = 8


def f32(x):
    """A float32 value as the shortest-ish decimal that reads back to it (9 significant digits)."""
    return float("%.9g" % float(np.float32(x)))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def versions():
    import tokenizers
    import transformers
    from importlib.metadata import version
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "gguf": version("gguf"), "numpy": np.__version__, "accelerate": version("accelerate")}


def smollm2_tokenizer(model_path):
    """HF tokenizer from the GGUF with llama.cpp's "smollm" pre-tokenizer (digits split first)."""
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(os.path.dirname(model_path),
                                        gguf_file=os.path.basename(model_path))
    stock = json.loads(tok.backend_tokenizer.to_str())["pre_tokenizer"]
    assert stock == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                     "use_regex": True}, stock
    stock_tok = AutoTokenizer.from_pretrained(os.path.dirname(model_path),
                                              gguf_file=os.path.basename(model_path))
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    return tok, stock_tok


def load_model(model_path):
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(model_path), gguf_file=os.path.basename(model_path),
        dtype=torch.float32, attn_implementation="eager")
    model.eval()
    return model


# --- independent weight check: own dequantisation of the raw GGUF bytes -----------------------

def dequant_q4_1(raw, rows, cols):
    """ggml block_q4_1: f16 d, f16 m, 16 bytes of nibbles; x[j] = lo(q[j])*d+m, x[j+16] = hi."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 20)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 4:20]
    vals = np.concatenate([q & 0x0F, q >> 4], axis=1).astype(np.float32)
    return (vals * d + m).reshape(rows, cols)


def dequant_q8_0(raw, rows, cols):
    """ggml block_q8_0: f16 d, 32 int8; x = d*q."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 2:34].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(rows, cols)


def unpermute_rope_rows(w, n_head):
    """Inverse of convert_hf_to_gguf's permute(): rows (head, pair, half) -> (head, half, pair)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def check_weights(model_path, model):
    import gguf
    reader = gguf.GGUFReader(model_path)
    tensors = {t.name: t for t in reader.tensors}
    assert "output.weight" not in tensors
    cfg = model.config
    state = dict(model.named_parameters())
    emb = model.model.embed_tokens.weight
    assert model.lm_head.weight.data_ptr() == emb.data_ptr(), "lm_head not tied to embedding"

    def own(name):
        t = tensors[name]
        cols = int(t.shape[0])
        rows = int(t.shape[1]) if len(t.shape) > 1 else 1
        raw = bytes(t.data.tobytes())
        kind = t.tensor_type.name
        if kind == "Q4_1":
            return dequant_q4_1(raw, rows, cols)
        if kind == "Q8_0":
            return dequant_q8_0(raw, rows, cols)
        assert kind == "F32", kind
        return np.frombuffer(raw, dtype=np.float32).reshape(rows, cols).squeeze(0)

    n_q, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    checks = [
        ("token_embd.weight", "model.embed_tokens.weight", None),
        ("output_norm.weight", "model.norm.weight", None),
        ("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", None),
        ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", n_q),
        ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", n_kv),
        ("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", None),
        ("blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", None),
        ("blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_proj.weight", None),
        ("blk.0.ffn_up.weight", "model.layers.0.mlp.up_proj.weight", None),
        ("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight", None),
        ("blk.29.attn_q.weight", "model.layers.29.self_attn.q_proj.weight", n_q),
        ("blk.29.attn_k.weight", "model.layers.29.self_attn.k_proj.weight", n_kv),
        ("blk.29.ffn_down.weight", "model.layers.29.mlp.down_proj.weight", None),
    ]
    done = []
    for gguf_name, hf_name, heads in checks:
        mine = own(gguf_name)
        if heads is not None:
            mine = unpermute_rope_rows(mine, heads)
        hf = state[hf_name].detach().numpy()
        assert hf.shape == mine.shape, (gguf_name, hf.shape, mine.shape)
        assert np.array_equal(hf, mine), f"{gguf_name}: HF weights differ from own dequantisation"
        done.append({"gguf": gguf_name, "hf": hf_name, "type": tensors[gguf_name].tensor_type.name,
                     "unpermuted_heads": heads})
    return done


# --- reference computations ------------------------------------------------------------------

def top_pairs(logits_row, k):
    vals, ids = torch.topk(logits_row, k)
    return [[int(i), f32(v)] for i, v in zip(ids.tolist(), vals.tolist())]


def probe(logits_row):
    return [f32(logits_row[i]) for i in PROBE_IDS]


def position_summary(logits_row):
    row = logits_row.double()
    return {"max": f32(logits_row.max()), "logsumexp": float("%.12g" % torch.logsumexp(row, 0)),
            "mean": float("%.9g" % row.mean())}


@torch.no_grad()
def manual_greedy(model, ids, n_new):
    """Prefill once, then one token per step through past_key_values; never stops at EOS."""
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    out = model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
    step_logits, new = [], []
    logits = out.logits[0, -1]
    for _ in range(n_new):
        step_logits.append(logits.clone())
        nxt = int(torch.argmax(logits))
        new.append(nxt)
        out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values,
                    use_cache=True)
        logits = out.logits[0, -1]
    return new, step_logits


@torch.no_grad()
def generate_greedy(model, ids, n_new):
    mask = torch.ones(1, len(ids), dtype=torch.long)
    out = model.generate(torch.tensor([ids]), attention_mask=mask, do_sample=False,
                         max_new_tokens=n_new, repetition_penalty=None, temperature=None,
                         top_p=None, top_k=None, output_logits=True, return_dict_in_generate=True)
    new = out.sequences[0, len(ids):].tolist()
    return new, [l[0] for l in out.logits]


@torch.no_grad()
def greedy_case(model, tok, ids, n_new):
    gen_ids, gen_logits = generate_greedy(model, ids, n_new)
    man_ids, man_logits = manual_greedy(model, ids, n_new)
    n_common = len(gen_ids)
    agree = gen_ids == man_ids[:n_common]
    max_diff = max(float((a - b).abs().max()) for a, b in zip(gen_logits, man_logits[:n_common]))
    # One uncached forward over prompt + all 20 generated tokens: its argmax per step.
    full = model(input_ids=torch.tensor([ids + man_ids])).logits[0]
    full_rows = full[len(ids) - 1:len(ids) - 1 + n_new]
    full_argmax = full_rows.argmax(-1).tolist()
    full_diff = float((full_rows - torch.stack(man_logits)).abs().max())
    steps = []
    for s, row in enumerate(man_logits):
        top = top_pairs(row, TOP_STEP)
        steps.append({"step": s, "step1": s + 1, "chosen": man_ids[s], "top5": top,
                      "top5_text": [tok.decode([i]) for i, _ in top],
                      "gap_top1_top2": f32(top[0][1] - top[1][1])})
    return {
        "generate_ids": gen_ids,
        "generate_text": tok.decode(gen_ids),
        "generate_stopped_at_eos": len(gen_ids) < n_new,
        "manual_kv_loop_ids": man_ids,
        "manual_kv_loop_text": tok.decode(man_ids),
        "generate_and_manual_agree": bool(agree),
        "generate_vs_manual_max_abs_logit_diff": float("%.3g" % max_diff),
        "uncached_full_forward_argmax": full_argmax,
        "uncached_full_forward_agrees": full_argmax == man_ids,
        "uncached_vs_manual_max_abs_logit_diff": float("%.3g" % full_diff),
        "steps": steps,
    }


def main():
    model_path = sys.argv[1] if len(sys.argv) > 1 else MODEL_DEFAULT
    print("requirements: torch==2.15.0 transformers==5.24.0 gguf==0.19.0 numpy==2.4.6 "
          "accelerate==1.15.0 (tokenizers==0.23.3)")
    vers = versions()
    print("versions:", vers)
    torch.manual_seed(0)
    tok, stock_tok = smollm2_tokenizer(model_path)
    model = load_model(model_path)
    weight_checks = check_weights(model_path, model)
    print("weights: own dequantisation matches HF for", len(weight_checks), "tensors")

    cfg = model.config
    rope_theta = cfg.rope_parameters["rope_theta"] if getattr(cfg, "rope_parameters", None) \
        else cfg.rope_theta
    config = {
        "rms_norm_eps": cfg.rms_norm_eps, "rope_theta": rope_theta,
        "rope_type": (cfg.rope_parameters or {}).get("rope_type", "default"),
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads, "head_dim": cfg.head_dim,
        "hidden_size": cfg.hidden_size, "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers, "vocab_size": cfg.vocab_size,
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "max_position_embeddings": cfg.max_position_embeddings, "hidden_act": cfg.hidden_act,
        "bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id,
        "pad_token_id": cfg.pad_token_id,
    }

    # Prompt: HF adds no BOS (add_bos_token false in the GGUF), so these 9 ids are fed as is.
    with_special = tok(PROMPT)["input_ids"]
    ids = tok(PROMPT, add_special_tokens=False)["input_ids"]
    assert with_special == ids, "HF added special tokens to the prompt"
    assert ids == stock_tok(PROMPT, add_special_tokens=False)["input_ids"]
    assert ids == PROMPT_IDS_EXPECTED, ids

    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    logits = out.logits[0]
    hs = out.hidden_states
    # transformers 5: hidden_states[0] = embeddings, [i] = output of layer i-1 for i < n_layers,
    # [n_layers] = final RMSNorm output. Cross-check both against forward hooks.
    hooked = {}
    def keep(name):
        def hook(module, args, output):
            hooked[name] = (output[0] if isinstance(output, tuple) else output).clone()
        return hook
    h1 = model.model.layers[0].register_forward_hook(keep("layer0"))
    h2 = model.model.norm.register_forward_hook(keep("norm"))
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]))
    h1.remove()
    h2.remove()
    assert len(hs) == cfg.num_hidden_layers + 1
    assert torch.equal(hs[1], hooked["layer0"]), "hidden_states[1] is not layer 0's output"
    assert torch.equal(hs[-1], hooked["norm"]), "hidden_states[-1] is not the final norm output"
    assert torch.allclose(model.lm_head(hs[-1])[0], logits, rtol=0, atol=1e-4)

    positions = []
    for p in range(len(ids)):
        positions.append({"pos": p, "token": ids[p], "top10": top_pairs(logits[p], TOP_PROMPT),
                          "probe_logits": probe(logits[p]), **position_summary(logits[p])})
    hidden = []
    for p in range(HIDDEN_POSITIONS):
        hidden.append({"pos": p,
                       "embedding_first8": [f32(v) for v in hs[0][0, p, :HIDDEN_VALUES]],
                       "after_layer0_first8": [f32(v) for v in hs[1][0, p, :HIDDEN_VALUES]],
                       "final_norm_first8": [f32(v) for v in hs[-1][0, p, :HIDDEN_VALUES]]})

    story = greedy_case(model, tok, ids, N_NEW)

    chat_text = tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    chat_ids = tok(chat_text, add_special_tokens=False)["input_ids"]
    chat_ids_template = tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=True)
    if isinstance(chat_ids_template, dict) or hasattr(chat_ids_template, "keys"):
        chat_ids_template = chat_ids_template["input_ids"]
    assert list(chat_ids_template) == chat_ids, (chat_ids_template, chat_ids)
    assert chat_ids == stock_tok(chat_text, add_special_tokens=False)["input_ids"]
    chat = {"messages": CHAT, "rendered": chat_text, "ids": chat_ids,
            "note": "special tokens such as <|im_start|> in the rendered text are parsed as "
                    "special (llama.cpp: parse_special=true)",
            **greedy_case(model, tok, chat_ids, N_NEW)}

    payload = {
        "about": "SmolLM2-135M-Instruct Q4_1 GGUF reference from HF transformers, float32 CPU; "
                 "made by tests/golden/gen_smollm2_reference.py",
        "versions": vers,
        "model_file": os.path.basename(model_path),
        "model_sha256": sha256_file(model_path),
        "settings": {"dtype": "float32", "device": "cpu", "torch_threads": 2,
                     "attn_implementation": "eager", "bos_prepended": False,
                     "gguf_add_bos_token": False, "pre_tokenizer": "Digits(individual)+ByteLevel"},
        "config": config,
        "weight_checks": weight_checks,
        "prompt": {"text": PROMPT, "ids_fed": ids, "hf_adds_bos": with_special != ids,
                   "probe_ids": PROBE_IDS, "positions": positions, "hidden_states": hidden,
                   "hidden_states_note": "embedding = hidden_states[0]; after_layer0 = "
                                         "hidden_states[1] (output of decoder layer 0, residual "
                                         "included); final_norm = hidden_states[30] = "
                                         "model.norm output, the lm_head input",
                   "greedy": story},
        "chat": chat,
    }
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, "reference.json")
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, allow_nan=False)
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")
    print("story ids:", story["manual_kv_loop_ids"])
    print("story text:", repr(story["manual_kv_loop_text"]))
    print("generate == manual:", story["generate_and_manual_agree"],
          "| uncached argmax agrees:", story["uncached_full_forward_agrees"])
    for s in story["steps"]:
        print("  step %2d (1-based %2d) chosen %5d gap %.4g top5 %s %s" % (
            s["step"], s["step1"], s["chosen"], s["gap_top1_top2"], s["top5"], s["top5_text"]))
    print("chat generate ids:", chat["generate_ids"], repr(chat["generate_text"]))
    print("chat manual ids:", chat["manual_kv_loop_ids"], repr(chat["manual_kv_loop_text"]))


if __name__ == "__main__":
    main()
