"""Backplane: a compute backend for AI research, from Python.

    import numpy as np, backplane
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    y = backplane.ops.gelu(x)                      # every catalog op, NumPy in, NumPy out
    t = backplane.Tensor.from_numpy(x)             # zero-copy: t.data_ptr == x.ctypes.data
    print(backplane.op("activation.gelu", t).numpy())
"""
from __future__ import annotations

from . import _backplane
from ._backplane import (Executor, Graph, Tensor, devices, num_threads, selected_target, set_num_threads,
                         set_target, targets)
from ._convert import as_tensor, tensor
from ._op import op
from . import ops
from . import models
from ._train import train

__version__ = _backplane.__version__

__all__ = ["Tensor", "Graph", "Executor", "op", "ops", "models", "tensor", "as_tensor", "train",
           "devices", "num_threads", "set_num_threads", "targets", "selected_target", "set_target",
           "dtypes", "read_safetensors", "write_safetensors", "__version__"]


def dtypes():
    """Backplane's dtype names ('f64', 'f32', 'f16', 'bf16', 'f8e4m3', ...), in enum order."""
    return _backplane.dtypes()


def read_safetensors(path):
    """Tensors of a .safetensors file, by name (backplane.Tensor values)."""
    return _backplane.read_safetensors(str(path))


def write_safetensors(path, tensors):
    """Writes {name: array or Tensor} to a .safetensors file."""
    _backplane.write_safetensors(str(path), {k: as_tensor(v) for k, v in tensors.items()})
