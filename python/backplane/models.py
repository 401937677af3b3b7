"""Real models: GGUF language models and sentence encoders.

    lm = backplane.models.load("SmolLM2-135M-Instruct.Q4_1.gguf")
    for piece in lm.generate("Once upon a time", max_tokens=32):
        print(piece, end="", flush=True)
    enc = backplane.models.load("all-MiniLM-L6-v2/")      # a sentence-transformers folder
    vectors = enc.embed(["A man is eating food.", "A man is eating bread."])
"""
from __future__ import annotations

import os
from typing import Iterator, Sequence

import numpy as np

from . import _backplane


class LanguageModel:
    """A Llama-architecture decoder LM from a GGUF file (quantised products by default;
    exact=True dequantises every weight to f32 at load)."""

    def __init__(self, path: str | os.PathLike, context: int = 2048, exact: bool = False):
        self._m = _backplane.LanguageModel(os.fspath(path), context, exact)

    @property
    def config(self) -> dict:
        return self._m.config

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]:
        return self._m.tokenize(text, add_special, parse_special)

    def detokenize(self, ids: Sequence[int], skip_special: bool = False) -> str:
        return self._m.detokenize(list(ids), skip_special)

    def logits(self, ids: Sequence[int]) -> np.ndarray:
        """f32 [len(ids), vocab] logits of every position (a fresh cache)."""
        return self._m.logits(list(ids)).numpy()

    def generate(self, prompt: str | Sequence[int] | None = None, *, chat: str | None = None, system: str | None = None,
                 max_tokens: int = 64, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 repeat_penalty: float = 1.0, seed: int = 0, stop_at_eos: bool = True) -> Iterator[str]:
        """Streams the generated text piece by piece (greedy at temperature 0, like
        `backplane generate`). `prompt` is text (BOS added) or token ids; `chat` renders a user
        message (and optional system message) with the model's chat template."""
        if (prompt is None) == (chat is None):
            raise ValueError("backplane.LanguageModel.generate: argument 'prompt/chat' must be exactly one of them, got "
                             + ("both" if prompt is not None else "neither"))
        if chat is not None:
            messages = ([("system", system)] if system else []) + [("user", chat)]
            ids = self._m.tokenize(self._m.apply_chat_template(messages), False, True)
        elif isinstance(prompt, str):
            ids = self._m.tokenize(prompt, True, False)
        else:
            ids = [int(i) for i in prompt]
        return self._m.generate(ids, max_tokens, temperature, top_k, top_p, repeat_penalty, seed, stop_at_eos)


class SentenceEncoder:
    """A BERT sentence encoder from a sentence-transformers folder (config.json, vocab.txt,
    model.safetensors, and the pooling/normalisation files)."""

    def __init__(self, model_dir: str | os.PathLike):
        self._m = _backplane.SentenceEncoder(os.fspath(model_dir))

    @property
    def config(self) -> dict:
        return self._m.config

    def embed(self, texts: str | Sequence[str]) -> np.ndarray:
        """f32 [len(texts), hidden] embeddings (one row for a single string)."""
        if isinstance(texts, str):
            texts = [texts]
        return self._m.embed(list(texts)).numpy()


def load(path: str | os.PathLike, **options):
    """A GGUF file gives a LanguageModel; a sentence-transformers folder a SentenceEncoder."""
    p = os.fspath(path)
    if os.path.isdir(p):
        if not os.path.exists(os.path.join(p, "config.json")):
            raise ValueError(f"backplane.models.load: argument 'path' must be a .gguf file or a folder with config.json, got '{p}'")
        return SentenceEncoder(p, **options)
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ValueError(f"backplane.models.load: argument 'path' must be a GGUF file (magic 'GGUF'), got {magic!r} in '{p}'")
    return LanguageModel(p, **options)
