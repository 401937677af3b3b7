"""backplane.op(id, *inputs, **attributes): one catalog operation."""
from __future__ import annotations

import numpy as np

from . import _backplane
from ._backplane import Tensor
from ._convert import as_tensor


def _result_kind(inputs):
    for x in inputs:
        if isinstance(x, Tensor):
            return "tensor"
        if type(x).__module__.startswith("torch"):
            return "torch"
        if x is not None:
            return "numpy"
    return "numpy"


def _wrap(t: Tensor, kind: str):
    if kind == "tensor":
        return t
    if kind == "torch":
        import torch
        if t.dtype in ("bool", "i4", "f8e4m3", "f8e5m2"):
            return torch.from_numpy(np.ascontiguousarray(t.numpy()))
        return torch.from_dlpack(t)
    return t.numpy()


def _write_out(out, value: Tensor):
    """Copies `value` into the caller's `out` (same shape; cast to out's dtype like NumPy's
    out=, which must be safe for the values)."""
    src = value.numpy()
    if isinstance(out, Tensor):
        dst = out.numpy()
        if out.dtype in ("bool", "i4"):
            raise TypeError(f"backplane.op: argument 'out' must be a tensor whose memory NumPy can write, got {out.dtype}")
    elif isinstance(out, np.ndarray):
        dst = out
    elif type(out).__module__.startswith("torch"):
        dst = out.numpy()
    else:
        raise TypeError(f"backplane.op: argument 'out' must be a NumPy array, a torch.Tensor or a backplane.Tensor, got {type(out).__name__}")
    if tuple(dst.shape) != tuple(src.shape):
        raise ValueError(f"backplane.op: argument 'out' must have shape {tuple(src.shape)}, got {tuple(dst.shape)}")
    np.copyto(dst, src, casting="same_kind")
    return out


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _with_weak_scalars(inputs):
    """Python numbers take the dtype of the first tensor input (as in PyTorch and NumPy 2)."""
    tensors = [None if x is None or _is_scalar(x) else as_tensor(x) for x in inputs]
    like = next((t for t in tensors if t is not None), None)
    for i, x in enumerate(inputs):
        if tensors[i] is None and x is not None:
            t = as_tensor(np.asarray(x))
            if like is not None and like.dtype != t.dtype:
                t = _backplane.run_op("tensor.cast", [t], {"to": like.dtype}, -1, "cpu")[0][0]
            tensors[i] = t
    return tensors


def op(op_id: str, *inputs, out=None, num_outputs: int | None = None, device: str = "cpu", **attributes):
    """Runs catalog operation `op_id` (e.g. "activation.gelu") on `inputs`.

    Inputs are NumPy arrays, torch tensors, backplane.Tensor or anything NumPy converts; they are
    shared, not copied, when contiguous and aligned. For ops with state (optimizers) the state
    tensors follow the inputs, and the updated state follows the outputs in the result.
    Attributes are keywords (catalog defaults apply). Results are NumPy arrays, or Tensors when
    the first input is a backplane.Tensor, or torch tensors when it is one; several results come
    as a tuple. `out=` (one output) copies the result into an existing array and returns it.
    """
    kind = _result_kind(inputs)
    tensors = _with_weak_scalars(inputs)
    outputs, state = _backplane.run_op(op_id, tensors, attributes, -1 if num_outputs is None else num_outputs, device)
    results = list(outputs) + list(state)
    if out is not None:
        if len(results) != 1:
            raise ValueError(f"{op_id}: argument 'out' must be used with a single result, got {len(results)} results")
        return _write_out(out, results[0])
    wrapped = [_wrap(t, kind) for t in results]
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)
