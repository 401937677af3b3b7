"""Backplane errors arrive as ValueError / TypeError / RuntimeError with the one-line message."""
from __future__ import annotations

import numpy as np
import pytest

import backplane
from backplane import _backplane


@pytest.mark.parametrize("code,exc", [("invalid argument", ValueError), ("shape mismatch", ValueError),
                                      ("unsupported dtype", TypeError), ("not implemented", NotImplementedError),
                                      ("device unavailable", RuntimeError), ("internal", RuntimeError),
                                      ("out of memory", MemoryError)])
def test_error_codes_map_to_python_exceptions(code, exc):
    with pytest.raises(exc) as info:
        _backplane._raise(code, "Demo.Op", "argument 'x' must be >= 0, got -3")
    assert str(info.value) == "Demo.Op: argument 'x' must be >= 0, got -3"
    assert "\n" not in str(info.value)


def test_not_implemented_is_a_runtime_error():
    assert issubclass(NotImplementedError, RuntimeError)


def test_unknown_op():
    with pytest.raises(ValueError, match="argument 'op' must be a catalog operation ID, got 'activation.nope'"):
        backplane.op("activation.nope", np.zeros(2))


def test_shape_mismatch_names_the_op():
    with pytest.raises(ValueError, match="math.matmul"):
        backplane.op("math.matmul", np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="math.abs"):
        backplane.op("math.abs", np.zeros(2, np.int32))


def test_attribute_type_and_name_errors():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="activation.leaky_relu: argument 'alpha' must be float, got str"):
        backplane.ops.leaky_relu(x, alpha="big")
    with pytest.raises(ValueError, match="an attribute of activation.leaky_relu"):
        backplane.op("activation.leaky_relu", x, beta=1.0)


def test_wrong_input_count():
    with pytest.raises(ValueError, match="at least 2 tensors"):
        backplane.op("math.add", np.ones(2))


def test_graph_errors_name_the_path():
    with pytest.raises(ValueError, match=r"\$"):
        backplane.Graph.from_json('{"version": 1, "nodes": [{"op": "math.nope", "inputs": [], "outputs": ["y"]}]}')


def test_non_array_input_is_a_type_error():
    with pytest.raises(TypeError, match="backplane.Tensor"):
        backplane.Tensor.from_dlpack(object())
