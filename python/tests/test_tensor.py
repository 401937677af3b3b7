"""backplane.Tensor: zero-copy in both directions (buffer protocol, DLPack), dtype mapping."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import backplane
from backplane import Tensor


def ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_numpy_to_tensor_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor.from_numpy(a)
    assert t.data_ptr == ptr(a)
    assert (t.dtype, t.shape, t.device) == ("f32", (3, 4), "cpu")
    a[0, 0] = 42.0  # the tensor sees writes to the array: same bytes
    assert t.numpy()[0, 0] == 42.0


def test_tensor_to_numpy_shares_memory():
    t = Tensor("f64", [2, 5])
    a = t.numpy()
    assert ptr(a) == t.data_ptr
    b = np.asarray(t)  # buffer protocol
    assert ptr(b) == t.data_ptr
    m = memoryview(t)
    assert (m.format, m.shape, m.nbytes) == ("d", (2, 5), 80)


def test_numpy_round_trip_through_an_op_without_copies():
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    before = backplane._backplane.conversion_copies()
    t = Tensor.from_numpy(x)
    y = backplane.op("activation.relu", t)  # Tensor in, Tensor out
    y_np = y.numpy()
    z = backplane.ops.relu(x)               # NumPy in, NumPy out
    assert backplane._backplane.conversion_copies() == before, "a conversion copied"
    assert t.data_ptr == ptr(x) and ptr(y_np) == y.data_ptr
    np.testing.assert_array_equal(y_np, np.maximum(x, 0))
    np.testing.assert_array_equal(z, np.maximum(x, 0))


def test_dlpack_numpy_both_ways():
    a = np.arange(6, dtype=np.int32)
    t = Tensor.from_dlpack(a)
    assert t.data_ptr == ptr(a)
    b = np.from_dlpack(t)
    assert ptr(b) == t.data_ptr
    np.testing.assert_array_equal(b, a)
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_torch_both_ways():
    torch = pytest.importorskip("torch")
    x = torch.arange(10, dtype=torch.float32)
    t = Tensor.from_dlpack(x)
    assert t.data_ptr == x.data_ptr()
    y = torch.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr
    bf = torch.ones(4, dtype=torch.bfloat16)
    tb = Tensor.from_dlpack(bf)
    assert tb.dtype == "bf16" and tb.data_ptr == bf.data_ptr()
    r = backplane.ops.relu(torch.tensor([-1.0, 2.0]))  # torch in, torch out
    assert isinstance(r, torch.Tensor) and r.tolist() == [0.0, 2.0]


@pytest.mark.parametrize("np_dtype,name", [(np.float64, "f64"), (np.float32, "f32"), (np.float16, "f16"),
                                           (ml_dtypes.bfloat16, "bf16"), (ml_dtypes.float8_e4m3fn, "f8e4m3"),
                                           (ml_dtypes.float8_e5m2, "f8e5m2"), (np.int64, "i64"), (np.int32, "i32"),
                                           (np.int16, "i16"), (np.int8, "i8"), (np.uint64, "u64"), (np.uint32, "u32"),
                                           (np.uint16, "u16"), (np.uint8, "u8"), (np.complex64, "c64"),
                                           (np.complex128, "c128")])
def test_dtype_mapping_round_trips_without_copy(np_dtype, name):
    a = (np.arange(8) - 3).astype(np_dtype) if name[0] not in "u" else np.arange(8).astype(np_dtype)
    t = backplane.as_tensor(a)
    assert t.dtype == name
    assert t.data_ptr == ptr(a)
    b = t.numpy()
    assert b.dtype == np.dtype(np_dtype) and ptr(b) == t.data_ptr
    np.testing.assert_array_equal(b.astype(np.float64) if name[0] != "c" else b, a.astype(np.float64) if name[0] != "c" else a)


def test_bool_and_int4_are_unpacked_copies():
    a = np.array([True, False, True, True, False])
    t = backplane.as_tensor(a)
    assert t.dtype == "bool" and t.nbytes == 1  # Backplane packs 8 per byte
    np.testing.assert_array_equal(t.numpy(), a)
    q = np.array([-8, -1, 0, 7], dtype=ml_dtypes.int4)
    t4 = backplane.as_tensor(q)
    assert t4.dtype == "i4" and t4.nbytes == 2
    np.testing.assert_array_equal(t4.numpy(), np.array([-8, -1, 0, 7], dtype=np.int8))


def test_strided_and_misaligned_arrays_are_copied_once():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)[:, 1:4]
    before = backplane._backplane.conversion_copies()
    t = backplane.as_tensor(a)
    assert backplane._backplane.conversion_copies() == before + 1
    np.testing.assert_array_equal(t.numpy(), a)
    raw = np.zeros(4 * 6 + 1, dtype=np.uint8)
    mis = raw[1:].view(np.float32)  # 1-byte offset: not aligned for f32
    mis[:] = np.arange(6)
    tm = backplane.as_tensor(mis)
    assert tm.data_ptr != ptr(mis)
    np.testing.assert_array_equal(tm.numpy(), np.arange(6, dtype=np.float32))


def test_tensor_keeps_the_array_alive():
    t = Tensor.from_numpy(np.full(1000, 3.0))
    import gc
    gc.collect()
    assert t.numpy().sum() == 3000.0


def test_out_argument_writes_into_existing_array():
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    out = np.empty(3, dtype=np.float32)
    r = backplane.ops.relu(x, out=out)
    assert r is out
    np.testing.assert_array_equal(out, [0.0, 0.5, 2.0])
    with pytest.raises(ValueError, match="'out' must have shape"):
        backplane.ops.relu(x, out=np.empty(4, dtype=np.float32))


def test_tensor_cast_and_repr():
    t = backplane.tensor([1.5, -2.25], dtype="bf16")
    assert t.dtype == "bf16"
    assert "bf16[2]" in repr(t)
    np.testing.assert_array_equal(t.numpy().astype(np.float32), [1.5, -2.25])
