"""Mini-batch training of a graph whose optimizer nodes update its parameters in place."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ._backplane import Executor


def train(executor: Executor, data: dict, *, epochs: int = 1, batch_size: int = 32, loss: str = "loss",
          seed: int = 0, shuffle: bool = True, on_epoch: Callable[[int, float], None] | None = None) -> list[float]:
    """Runs `executor` over `data` ({input name: array with a leading sample axis}) in mini-batches
    for `epochs` epochs; returns the mean of output `loss` per epoch. Like `backplane train`, the
    last batch of an epoch may be smaller."""
    if epochs < 0 or batch_size < 1:
        raise ValueError(f"backplane.train: argument 'epochs/batch_size' must be >= 0 / >= 1, got {epochs} / {batch_size}")
    arrays = {k: np.asarray(v) for k, v in data.items()}
    if not arrays:
        raise ValueError("backplane.train: argument 'data' must name at least one input, got none")
    rows = {a.shape[0] if a.ndim else -1 for a in arrays.values()}
    if len(rows) != 1 or -1 in rows:
        raise ValueError(f"backplane.train: argument 'data' must hold arrays with the same leading sample axis, got {sorted(rows)}")
    n = rows.pop()
    rng = np.random.default_rng(seed)
    history = []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(n) if shuffle else np.arange(n)
        total, count = 0.0, 0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            batch = {k: np.ascontiguousarray(a[idx]) for k, a in arrays.items()}
            out = executor.run(batch)
            if loss not in out:
                raise ValueError(f"backplane.train: argument 'loss' must be a graph output name, got '{loss}'")
            total += float(out[loss].numpy()) * len(idx)
            count += len(idx)
        history.append(total / max(count, 1))
        if on_epoch is not None:
            on_epoch(epoch, history[-1])
    return history
