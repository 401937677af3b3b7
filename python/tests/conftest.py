"""Shared helpers: the repository's golden data and the model cache."""
from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "data"
CACHE = pathlib.Path(os.environ.get("BACKPLANE_CACHE", pathlib.Path.home() / ".cache" / "backplane"))
MODELS = CACHE / "models"

# backplane/tolerance.hpp's table: |got - want| <= abs + rel * |want| (PyTorch's assert_close
# defaults or tighter); integers and packed formats compare exactly.
TOLERANCE = {"f64": (1e-10, 1e-10), "f32": (1e-5, 1.3e-6), "f16": (1e-5, 1e-3), "bf16": (1e-5, 1.6e-2)}


def numpy_dtype(name: str):
    import ml_dtypes
    return {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
            "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2, "i64": np.int64,
            "i32": np.int32, "i16": np.int16, "i8": np.int8, "i4": ml_dtypes.int4, "u64": np.uint64,
            "u32": np.uint32, "u16": np.uint16, "u8": np.uint8, "bool": np.bool_, "c64": np.complex64,
            "c128": np.complex128}[name]


def array(spec: dict) -> np.ndarray:
    """A golden {dtype, shape, values} record as a NumPy array of that dtype."""
    values = np.asarray(spec["values"], dtype=np.float64)
    return values.astype(numpy_dtype(spec["dtype"])).reshape(spec["shape"])


def assert_close(got, want, dtype: str, scale=None, what=""):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    g = got.astype(np.complex128 if np.iscomplexobj(got) else np.float64)
    w = want.astype(np.complex128 if np.iscomplexobj(want) else np.float64)
    abs_tol, rel_tol = TOLERANCE.get(dtype, (0.0, 0.0))
    ref = np.abs(w) if scale is None else np.maximum(np.abs(w), np.asarray(scale, dtype=np.float64).reshape(w.shape) if np.size(scale) == w.size else scale)
    bad = ~(np.abs(g - w) <= abs_tol + rel_tol * ref)
    bad &= ~(np.isnan(g) & np.isnan(w)) & ~((g == w) & np.isinf(w))
    assert not bad.any(), f"{what}: {int(bad.sum())} of {w.size} elements differ; first at {np.argwhere(bad)[0]}: got {g[bad][0]}, expected {w[bad][0]}"


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    if not MODELS.is_dir():
        pytest.fail(f"model cache {MODELS} is missing: run scripts/fetch-models.sh")
    return MODELS
