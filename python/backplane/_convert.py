"""NumPy/DLPack <-> backplane.Tensor conversion (zero-copy where the layouts agree)."""
from __future__ import annotations

import numpy as np

from ._backplane import Tensor

try:  # bf16, fp8 and int4 NumPy dtypes
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - ml_dtypes is a dependency of the package
    _ml = None

# NumPy dtype names for Backplane dtypes; bf16/fp8/int4 through ml_dtypes. Bool and int4 are
# unpacked into one byte per element (Backplane packs them), so those two always copy.
NUMPY_DTYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "i4": "int8 (ml_dtypes.int4 accepted)",
    "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8", "bool": "bool",
    "c64": "complex64", "c128": "complex128",
}

_ML_TO_BACKPLANE = {}
if _ml is not None:
    _ML_TO_BACKPLANE = {
        np.dtype(_ml.bfloat16): ("bf16", np.uint16),
        np.dtype(_ml.float8_e4m3fn): ("f8e4m3", np.uint8),
        np.dtype(_ml.float8_e5m2): ("f8e5m2", np.uint8),
    }


def _is_torch(obj) -> bool:
    return type(obj).__module__.startswith("torch")


def as_tensor(obj) -> Tensor:
    """A backplane.Tensor sharing `obj`'s memory when it is a contiguous, aligned CPU array
    (NumPy, PyTorch, anything with the buffer protocol or __dlpack__); otherwise one copy.
    Python scalars and lists become NumPy arrays first (float64/int64/bool)."""
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, np.ndarray):
        special = _ML_TO_BACKPLANE.get(obj.dtype)
        if special is not None:
            name, raw = special
            return Tensor.from_numpy(np.ascontiguousarray(obj).view(raw), name)
        if _ml is not None and obj.dtype == np.dtype(_ml.int4):
            return Tensor.from_numpy(obj.astype(np.int8), "i4")  # packed two per byte: a copy
        return Tensor.from_numpy(obj)
    if _is_torch(obj) or hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        return Tensor.from_dlpack(obj)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__") or isinstance(obj, memoryview):
        return as_tensor(np.asarray(obj))
    return Tensor.from_numpy(np.asarray(obj))


def tensor(obj, dtype: str | None = None) -> Tensor:
    """A backplane.Tensor from an array-like; `dtype` (a Backplane name such as 'bf16') casts."""
    if dtype == "i4":
        return Tensor.from_numpy(np.asarray(obj).astype(np.int8), "i4")
    t = as_tensor(obj)
    if dtype is not None and dtype != t.dtype:
        from ._op import op
        t = op("tensor.cast", t, to=dtype)
    return t


def to_numpy(t: Tensor) -> np.ndarray:
    return t.numpy()
