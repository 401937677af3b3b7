"""The real models from Python, against transformers / sentence-transformers references
(tests/golden/gen_smollm2_reference.py, gen_minilm_reference.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import backplane
from conftest import GOLDEN


@pytest.fixture(scope="module")
def smollm2(models_dir):
    ref = json.loads((GOLDEN / "smollm2" / "reference.json").read_text())
    return backplane.models.load(models_dir / ref["model_file"], context=512, exact=True), ref


def test_tokenizer_matches_transformers(smollm2):
    lm, ref = smollm2
    assert lm.tokenize(ref["prompt"]["text"]) == ref["prompt"]["ids_fed"]
    assert lm.detokenize(ref["prompt"]["ids_fed"]) == ref["prompt"]["text"]


def test_chat_generation_streams_the_reference_answer(smollm2):
    lm, ref = smollm2
    gen = lm.generate(chat=ref["chat"]["messages"][0]["content"], max_tokens=32)
    pieces = list(gen)
    assert len(pieces) > 1  # streamed piece by piece
    assert gen.prompt_tokens == ref["chat"]["ids"]
    assert gen.tokens == ref["chat"]["generate_ids"]  # greedy, stopped at <|im_end|>
    assert "".join(pieces) == "The capital of France is Paris."


def test_prompt_logits_match_transformers(smollm2):
    lm, ref = smollm2
    logits = lm.logits(ref["prompt"]["ids_fed"])
    assert logits.shape == (len(ref["prompt"]["ids_fed"]), lm.config["vocab"])
    for pos in ref["prompt"]["positions"]:
        row = logits[pos["pos"]]
        assert int(np.argmax(row)) == pos["top10"][0][0]
        probe = row[ref["prompt"]["probe_ids"]]
        np.testing.assert_allclose(probe, pos["probe_logits"], atol=5e-3 * max(1.0, np.abs(pos["probe_logits"]).max()))


def test_generate_arguments_are_checked(smollm2):
    lm, _ = smollm2
    with pytest.raises(ValueError, match="exactly one of them"):
        lm.generate("a", chat="b")
    with pytest.raises(ValueError, match="max_tokens"):
        list(lm.generate("a", max_tokens=-1))


def test_sentence_encoder_matches_sentence_transformers(models_dir):
    ref = json.loads((GOLDEN / "minilm" / "reference.json").read_text())
    enc = backplane.models.load(models_dir / "all-MiniLM-L6-v2")
    texts = [c["text"] for c in ref["cases"]]
    emb = enc.embed(texts)
    assert emb.shape == (len(texts), 384) and emb.dtype == np.float32
    want = np.array([c["embedding"] for c in ref["cases"]], dtype=np.float32)
    assert np.abs(emb - want).max() <= 2e-5  # bert_test.cpp's bound
    np.testing.assert_allclose(enc.embed(texts[0])[0], emb[0], atol=2e-6)


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"NOPE0000")
    with pytest.raises(ValueError, match="GGUF"):
        backplane.models.load(bad)
