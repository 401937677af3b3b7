"""Catalog ops called from Python on small seeded random inputs and compared with independent
references: NumPy, SciPy (scipy.special) and PyTorch 1.13 (torch.nn.functional, torch.optim).
No expected value comes from backplane itself.

Tolerances (|got - want| <= abs + rel * |want|, want in float64 from the dtype-rounded inputs):
  f64  abs 1e-10, rel 1e-10
  f32  abs 1e-5,  rel 1.3e-6
  f16  abs 1e-5,  rel 1e-3     (one rounding to f16 is 2^-11 = 4.9e-4 relative)
  bf16 abs 1e-5,  rel 1.6e-2   (one rounding to bf16 is 2^-8 = 3.9e-3 relative)
  integers and bools: exact.
These are conftest.TOLERANCE; where a check needs a looser bound the reason is given there.
"""
from __future__ import annotations

import math
import zlib

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp
import torch
import torch.nn.functional as F

import backplane
from conftest import assert_close, numpy_dtype

FLOATS = ["f64", "f32", "f16", "bf16"]
SIGNED = ["i64", "i32", "i16", "i8"]
UNSIGNED = ["u64", "u32", "u16", "u8"]
INTS = SIGNED + UNSIGNED
ALL = FLOATS + INTS + ["bool"]


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def f32(v: float) -> float:
    """Scalar float attributes are f32 in the activation kernels (docs/semantics/activation.md:
    "Scalar parameters are float; f64 widens them exactly"), so references use float32(attr)."""
    return float(np.float32(v))


def wide(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def t64(fn):
    """A torch function evaluated in float64 on a float64 NumPy array."""
    return lambda x, *args, **kw: fn(torch.from_numpy(np.ascontiguousarray(x)), *args, **kw).numpy()


def call(op_id: str, *inputs, **attrs):
    assert op_id in TESTED_OPS, f"{op_id} is called but not listed in TESTED_OPS"
    return backplane.op(op_id, *inputs, **attrs)


def gelu(x):
    return 0.5 * x * (1 + sp.erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return t64(F.gelu)(x, approximate="tanh")


# ---- unary element-wise: (op id, float64 reference, input domain, attrs) ----------------------------
# A domain is (low, high) for uniform inputs, or "halves" for multiples of 0.5 (rounding ties).
UNARY = [
    ("activation.relu", lambda x: np.maximum(x, 0), (-3, 3), {}),
    # The default alpha runs the fixed-slope kernel (0.01 exact, as torch's default); others are f32.
    ("activation.leaky_relu", lambda x: t64(F.leaky_relu)(x, negative_slope=0.01), (-3, 3), {}),
    ("activation.leaky_relu", lambda x: t64(F.leaky_relu)(x, negative_slope=f32(0.2)), (-3, 3), {"alpha": 0.2}),
    ("activation.gelu", gelu, (-4, 4), {}),
    ("activation.tanh", np.tanh, (-3, 3), {}),
    ("activation.sigmoid", sp.expit, (-8, 8), {}),
    ("activation.swish", lambda x: x * sp.expit(x), (-6, 6), {}),
    ("activation.selu", t64(F.selu), (-3, 3), {}),
    ("math.exp", np.exp, (-5, 5), {}),
    ("math.log", np.log, (0.05, 10), {}),
    ("activation.log1p", np.log1p, (-0.9, 5), {}),
    ("activation.expm1", np.expm1, (-3, 3), {}),
    ("activation.log_sigmoid", t64(F.logsigmoid), (-10, 10), {}),
    ("activation.silu", t64(F.silu), (-6, 6), {}),
    ("activation.gelu_tanh", gelu_tanh, (-4, 4), {}),
    ("activation.elu", t64(F.elu), (-3, 3), {}),
    ("activation.celu", t64(F.celu), (-3, 3), {}),
    ("activation.softplus", t64(F.softplus), (-5, 25), {}),
    ("activation.mish", t64(F.mish), (-5, 5), {}),
    ("activation.softsign", t64(F.softsign), (-5, 5), {}),
    ("activation.hard_sigmoid", t64(F.hardsigmoid), (-5, 5), {}),
    ("activation.hard_swish", t64(F.hardswish), (-5, 5), {}),
    ("activation.hard_tanh", t64(F.hardtanh), (-2, 2), {}),
    ("activation.hard_gelu", lambda x: x * np.clip(x + 3, 0, 6) / 6, (-5, 5), {}),
    ("activation.quick_gelu", lambda x: x * sp.expit(1.702 * x), (-5, 5), {}),
    ("activation.tanh_shrink", t64(F.tanhshrink), (-3, 3), {}),
    ("activation.prelu", lambda x: np.where(x > 0, x, 0.25 * x), (-3, 3), {}),
    ("activation.prelu", lambda x: np.where(x > 0, x, f32(-0.3) * x), (-3, 3), {"slope": -0.3}),
    ("activation.leaky_relu_slope", lambda x: t64(F.leaky_relu)(x, negative_slope=f32(0.1)), (-3, 3), {"slope": 0.1}),
    ("activation.elu_alpha", lambda x: t64(F.elu)(x, alpha=f32(1.7)), (-3, 3), {"alpha": 1.7}),
    ("activation.celu_alpha", lambda x: t64(F.celu)(x, alpha=0.5), (-3, 3), {"alpha": 0.5}),
    ("activation.threshold", lambda x: t64(F.threshold)(x, 0.25, 0.0), (-2, 2), {"threshold": 0.25}),
    ("activation.snake", lambda x: x + np.sin(f32(0.7) * x) ** 2 / f32(0.7), (-4, 4), {"alpha": 0.7}),
    ("activation.hard_shrink", t64(F.hardshrink), (-2, 2), {}),
    ("activation.hard_shrink", lambda x: t64(F.hardshrink)(x, lambd=1.25), (-2, 2), {"lambda": 1.25}),
    ("activation.soft_shrink", lambda x: t64(F.softshrink)(x, lambd=0.75), (-2, 2), {"lambda": 0.75}),
    ("activation.hard_tanh_range", lambda x: t64(F.hardtanh)(x, -0.5, 1.5), (-3, 3), {"min": -0.5, "max": 1.5}),
    ("activation.snake_beta", lambda x: x + np.sin(1.5 * x) ** 2 / 0.75, (-4, 4), {"alpha": 1.5, "beta": 0.75}),
    ("activation.rrelu", lambda x: t64(F.rrelu)(x, lower=0.125, upper=f32(0.3333333), training=False), (-3, 3), {}),
    ("math.erf", sp.erf, (-3, 3), {}),
    ("math.tan", np.tan, (-1.4, 1.4), {}),
    ("math.asin", np.arcsin, (-0.99, 0.99), {}),
    ("math.acos", np.arccos, (-0.99, 0.99), {}),
    ("math.atan", np.arctan, (-5, 5), {}),
    ("math.sinh", np.sinh, (-5, 5), {}),
    ("math.cosh", np.cosh, (-5, 5), {}),
    ("math.asinh", np.arcsinh, (-5, 5), {}),
    ("math.acosh", np.arccosh, (1.01, 6), {}),
    ("math.atanh", np.arctanh, (-0.95, 0.95), {}),
    ("tensor.floor", np.floor, (-5, 5), {}),
    ("tensor.ceil", np.ceil, (-5, 5), {}),
    ("tensor.round", np.round, "halves", {}),
    ("tensor.round", np.round, (-5, 5), {}),
    ("tensor.trunc", np.trunc, (-5, 5), {}),
    ("tensor.trunc", np.trunc, "halves", {}),
]


def draw(rng, domain, shape, dtype):
    if domain == "halves":
        x = rng.integers(-10, 11, size=shape) / 2.0
    else:
        x = rng.uniform(domain[0], domain[1], size=shape)
    return x.astype(numpy_dtype(dtype))


def unary_id(row):
    return row[0] + ("" if not row[3] else "[" + ",".join(f"{k}={v}" for k, v in row[3].items()) + "]") + (
        "[halves]" if row[2] == "halves" else "")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("row", UNARY, ids=[unary_id(r) for r in UNARY])
def test_unary(row, dtype):
    op_id, ref, domain, attrs = row
    x = draw(rng_for(op_id, dtype), domain, (3, 17), dtype)
    got = call(op_id, x, **attrs)
    assert got.dtype == x.dtype
    assert_close(got, ref(wide(x)), dtype, what=op_id)


# ---- binary element-wise: (op id, reference(a, b), domain of a, domain of b, attrs) ------------------
BINARY = [
    ("tensor.pow", np.power, (0.1, 3), (-2, 2), {}),
    ("tensor.mod", np.remainder, (-6, 6), "nonzero", {}),
    ("tensor.mod", np.fmod, (-6, 6), "nonzero", {"fmod": True}),
    ("activation.glu_tensors", lambda g, u: g * sp.expit(u), (-3, 3), (-3, 3), {}),
    ("activation.geglu_tensors", lambda g, u: g * gelu(u), (-3, 3), (-3, 3), {}),
    ("activation.geglu_tanh_tensors", lambda g, u: g * gelu_tanh(u), (-3, 3), (-3, 3), {}),
    ("activation.swiglu_tensors", lambda g, u: g * sp.expit(g) * u, (-3, 3), (-3, 3), {}),
    ("activation.reglu_tensors", lambda g, u: g * np.maximum(u, 0), (-3, 3), (-3, 3), {}),
    ("activation.siglu_tensors", lambda g, u: sp.expit(g) * u, (-3, 3), (-3, 3), {}),
    ("activation.linglu_tensors", lambda g, u: g * u, (-3, 3), (-3, 3), {}),
    ("activation.seglu_tensors", lambda g, u: sp.expit(g) * u, (-3, 3), (-3, 3), {}),
]


def draw_b(rng, domain, shape, dtype):
    if domain == "nonzero":  # |b| in [0.5, 3], either sign
        x = rng.uniform(0.5, 3, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        return x.astype(numpy_dtype(dtype))
    return draw(rng, domain, shape, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("row", BINARY, ids=[unary_id((r[0], None, r[2], r[4])) for r in BINARY])
def test_binary(row, dtype):
    op_id, ref, da, db, attrs = row
    rng = rng_for(op_id, dtype, attrs)
    a = draw(rng, da, (4, 9), dtype)
    b = draw_b(rng, db, (4, 9), dtype)
    got = call(op_id, a, b, **attrs)
    assert got.dtype == a.dtype
    assert_close(got, ref(wide(a), wide(b)), dtype, what=op_id)


BROADCAST = [
    ("tensor.pow", np.power, (0.1, 3), (-2, 2), {}),
    ("tensor.mod", np.remainder, (-6, 6), "nonzero", {}),
    ("activation.swiglu_tensors", lambda g, u: g * sp.expit(g) * u, (-3, 3), (-3, 3), {}),
    ("activation.linglu_tensors", lambda g, u: g * u, (-3, 3), (-3, 3), {}),
]


@pytest.mark.parametrize("dtype", ["f64", "f32"])
@pytest.mark.parametrize("row", BROADCAST, ids=[r[0] for r in BROADCAST])
def test_binary_broadcast(row, dtype):
    op_id, ref, da, db, attrs = row
    rng = rng_for("broadcast", op_id, dtype)
    a = draw(rng, da, (2, 1, 4), dtype)
    b = draw_b(rng, db, (3, 1), dtype)
    want = ref(wide(a), wide(b))
    assert want.shape == (2, 3, 4)
    assert_close(call(op_id, a, b, **attrs), want, dtype, what=op_id)
    with np.errstate(invalid="ignore"):  # pow of a negative base: NaN on both sides
        want = ref(wide(b), wide(a))
    assert_close(call(op_id, b, a, **attrs), want, dtype, what=op_id + " swapped")


def ints(rng, dtype, shape, low=None, high=None):
    info = np.iinfo(numpy_dtype(dtype))
    low = info.min if low is None else max(low, info.min)
    high = info.max if high is None else min(high, info.max)
    return rng.integers(low, high, size=shape, endpoint=True, dtype=numpy_dtype(dtype))


@pytest.mark.parametrize("fmod", [False, True])
@pytest.mark.parametrize("dtype", INTS)
def test_mod_integers(dtype, fmod):
    rng = rng_for("mod", dtype, fmod)
    a = ints(rng, dtype, (5, 6), -1000, 1000)
    b = ints(rng, dtype, (5, 6), -9, 9)
    b[b == 0] = 3
    want = (np.fmod if fmod else np.remainder)(a, b)
    got = call("tensor.mod", a, b, fmod=fmod)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, want)


# ---- gated linear units over the halves of the last axis: gate = first half, up = second half -------
PACKED = [
    ("activation.swiglu", lambda g, u: g * sp.expit(g) * u),
    ("activation.glu", lambda g, u: t64(F.glu)(np.concatenate([g, u], -1), dim=-1)),
    ("activation.geglu", lambda g, u: g * gelu(u)),
    ("activation.geglu_tanh", lambda g, u: g * gelu_tanh(u)),
    ("activation.reglu", lambda g, u: g * np.maximum(u, 0)),
    ("activation.siglu", lambda g, u: sp.expit(g) * u),
    ("activation.linglu", lambda g, u: g * u),
    ("activation.seglu", lambda g, u: sp.expit(g) * u),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_id,ref", PACKED, ids=[p[0] for p in PACKED])
def test_gated_packed(op_id, ref, dtype):
    x = draw(rng_for(op_id, dtype), (-3, 3), (2, 3, 10), dtype)
    got = call(op_id, x)
    xw = wide(x)
    assert_close(got, ref(xw[..., :5], xw[..., 5:]), dtype, what=op_id)


@pytest.mark.parametrize("dtype", FLOATS)
def test_prelu_channels(dtype):
    # The graph op is channels first, [N, C, ...] as torch PReLU (src/runtime/ops/activation_ops.cpp),
    # although the catalog summary says "channels last".
    rng = rng_for("prelu_channels", dtype)
    x = draw(rng, (-3, 3), (2, 3, 4), dtype)
    slopes = rng.uniform(-0.5, 0.5, size=3).astype(np.float32)  # slopes are always f32
    want = t64(F.prelu)(wide(x), weight=torch.from_numpy(wide(slopes)))
    assert_close(call("activation.prelu_channels", x, slopes), want, dtype)
    one = np.array([0.375], dtype=np.float32)
    assert_close(call("activation.prelu_channels", x, one), np.where(wide(x) > 0, wide(x), 0.375 * wide(x)), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(dtype, axis):
    x = draw(rng_for("softmax", dtype, axis), (-6, 6), (3, 4, 5), dtype)
    xt = torch.from_numpy(wide(x))
    assert_close(call("math.softmax", x, axis=axis), F.softmax(xt, dim=axis).numpy(), dtype, what="softmax")
    assert_close(call("activation.log_softmax", x, axis=axis), F.log_softmax(xt, dim=axis).numpy(), dtype,
                 what="log_softmax")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sq,sk", [(4, 4), (3, 5), (5, 3)])
def test_causal_mask(dtype, sq, sk):
    want = np.where(np.tril(np.ones((sq, sk)), k=sk - sq) > 0, 0.0, -np.inf)
    got = call("masking.causal", np.zeros((sq, sk), dtype=numpy_dtype(dtype)))
    assert got.dtype == numpy_dtype(dtype)
    np.testing.assert_array_equal(wide(got), want)


# ---- comparisons, logical ops, where -----------------------------------------------------------------
COMPARE = [("tensor.equal", np.equal), ("tensor.not_equal", np.not_equal), ("tensor.less", np.less),
           ("tensor.less_equal", np.less_equal), ("tensor.greater", np.greater),
           ("tensor.greater_equal", np.greater_equal)]


def small_values(rng, dtype, shape):
    """Few distinct values, so that ties occur; floats get a NaN too."""
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in UNSIGNED:
        return rng.integers(0, 4, size=shape).astype(numpy_dtype(dtype))
    x = rng.integers(-2, 3, size=shape).astype(np.float64)
    if dtype in FLOATS:
        x = x / 2
        x.flat[0] = np.nan
    return x.astype(numpy_dtype(dtype))


@pytest.mark.parametrize("dtype", ALL)
def test_comparisons(dtype):
    rng = rng_for("compare", dtype)
    a = small_values(rng, dtype, (4, 6))
    b = small_values(rng, dtype, (4, 6))
    b.flat[1] = np.nan if dtype in FLOATS else b.flat[1]
    ua, ub = (wide(a), wide(b)) if dtype in ("f16", "bf16") else (a, b)
    for op_id, ref in COMPARE:
        got = call(op_id, a, b)
        assert got.dtype == np.bool_, op_id
        np.testing.assert_array_equal(got, ref(ua, ub), err_msg=op_id)
        # broadcasting [2,1,4] with [3,1]
        got = call(op_id, a[:2, None, :4], b[:3, :1])
        np.testing.assert_array_equal(got, ref(ua[:2, None, :4], ub[:3, :1]), err_msg=op_id + " broadcast")


def test_logical():
    rng = rng_for("logical")
    a = rng.integers(0, 2, size=(3, 11)).astype(bool)
    b = rng.integers(0, 2, size=(3, 11)).astype(bool)
    for op_id, ref in [("tensor.logical_and", np.logical_and), ("tensor.logical_or", np.logical_or),
                       ("tensor.logical_xor", np.logical_xor)]:
        np.testing.assert_array_equal(call(op_id, a, b), ref(a, b), err_msg=op_id)
        np.testing.assert_array_equal(call(op_id, a[:2, None, :4], b[:3, :1]), ref(a[:2, None, :4], b[:3, :1]),
                                      err_msg=op_id + " broadcast")
    np.testing.assert_array_equal(call("tensor.logical_not", a), np.logical_not(a))


@pytest.mark.parametrize("dtype", ALL)
def test_where(dtype):
    rng = rng_for("where", dtype)
    cond = rng.integers(0, 2, size=(3, 1)).astype(bool)
    a = small_values(rng, dtype, (2, 1, 4))
    b = small_values(rng, dtype, (4,))
    got = call("tensor.where", cond, a, b)
    want = np.where(cond, a, b)
    assert got.shape == (2, 3, 4) and got.dtype == a.dtype
    np.testing.assert_array_equal(got.view(np.uint16) if dtype == "bf16" else got,
                                  want.view(np.uint16) if dtype == "bf16" else want)


# ---- cast ------------------------------------------------------------------------------------------
def cast_source(rng, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, size=24).astype(bool)
    if dtype in INTS:
        return ints(rng, dtype, 24, -300, 600)
    # f32-exact values, so that NumPy's/ml_dtypes' f64 -> f16/bf16 conversion is one rounding too
    x = rng.uniform(-300, 300, size=24).astype(np.float32).astype(np.float64)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 2.5, -2.5]
    return x.astype(numpy_dtype(dtype))


def cast_reference(x, src, to):
    out = numpy_dtype(to)
    if to == "bool":
        return wide(x) != 0 if src != "bool" else x.copy()
    if to in FLOATS:
        return x.astype(np.float64).astype(np.float32).astype(out) if src in INTS else wide(x).astype(out)
    if src in FLOATS:  # truncation toward zero, NaN -> 0, saturating
        info = np.iinfo(out)
        v = np.nan_to_num(np.trunc(wide(x)), nan=0.0)
        res = np.empty(v.shape, dtype=out)
        for i, e in enumerate(v):
            res[i] = info.min if e <= info.min else info.max if e >= info.max else int(e)
        return res
    return x.astype(out)  # integers wrap modulo 2^bits; bools are 0/1


@pytest.mark.parametrize("src", ALL)
def test_cast(src):
    x = cast_source(rng_for("cast", src), src)
    for to in ALL:
        got = call("tensor.cast", x, to=to)
        want = cast_reference(x, src, to)
        assert got.dtype == want.dtype, (src, to)
        if to in FLOATS:
            np.testing.assert_array_equal(wide(got), wide(want), err_msg=f"{src} -> {to}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {to}")


def test_cast_f64_rounds_once():
    x = rng_for("cast64").uniform(-70000, 70000, size=64)
    for to in ["f32", "f16"]:  # NumPy rounds f64 -> f16 once, directly; beyond 65504 -> inf
        with np.errstate(over="ignore"):
            want = x.astype(numpy_dtype(to))
        np.testing.assert_array_equal(wide(call("tensor.cast", x, to=to)), wide(want), err_msg=to)


# ---- bit shifts ---------------------------------------------------------------------------------------
def shift_reference(a, b, dtype, left):
    bits = np.iinfo(numpy_dtype(dtype)).bits
    signed = dtype in SIGNED
    out = []
    for x, s in zip(a.ravel().tolist(), b.ravel().tolist()):
        if left:
            v = 0 if s >= bits else (x << s) % (1 << bits)
            if signed and v >= 1 << (bits - 1):
                v -= 1 << bits
        else:
            v = x >> s  # Python: arithmetic for negatives, 0 / -1 past the width
        out.append(v)
    return np.array(out, dtype=numpy_dtype(dtype)).reshape(a.shape)


@pytest.mark.parametrize("dtype", INTS)
def test_bitshift(dtype):
    rng = rng_for("shift", dtype)
    bits = np.iinfo(numpy_dtype(dtype)).bits
    a = ints(rng, dtype, (4, 8))
    b = rng.integers(0, bits + 3, size=(4, 8)).astype(numpy_dtype(dtype))
    for op_id, left in [("tensor.bitshift_left", True), ("tensor.bitshift_right", False)]:
        got = call(op_id, a, b)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, shift_reference(a, b, dtype, left), err_msg=op_id)
    bb = rng.integers(0, bits, size=(3, 1)).astype(numpy_dtype(dtype))  # broadcast [2,1,4] with [3,1]
    got = call("tensor.bitshift_right", a[:2, None, :4], bb)
    np.testing.assert_array_equal(got, shift_reference(np.broadcast_to(a[:2, None, :4], (2, 3, 4)),
                                                       np.broadcast_to(bb, (2, 3, 4)), dtype, False))


# ---- axis ops ---------------------------------------------------------------------------------------
def axis_values(rng, dtype, shape):
    if dtype in FLOATS:
        return (rng.integers(-4, 5, size=shape) / 4).astype(numpy_dtype(dtype))  # ties
    return ints(rng, dtype, shape, -5, 5)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_argmax_argmin(dtype):
    x = axis_values(rng_for("arg", dtype), dtype, (3, 4, 5))
    for op_id, fn in [("tensor.argmax", np.argmax), ("tensor.argmin", np.argmin)]:
        for axis in [0, 1, -1]:
            for keepdims in [True, False]:
                for last in [False, True]:
                    got = call(op_id, x, axis=axis, keepdims=keepdims, select_last_index=last)
                    if last:
                        want = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis)
                    else:
                        want = fn(x, axis=axis)
                    if keepdims:
                        want = np.expand_dims(want, axis)
                    assert got.dtype == np.int64
                    np.testing.assert_array_equal(got, want, err_msg=f"{op_id} axis={axis} keep={keepdims} last={last}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_argmax_topk_nan(dtype):
    x = np.array([[1.0, np.nan, 3.0, np.nan, -1.0], [2.0, 0.5, np.inf, -np.inf, 1.5]]).astype(numpy_dtype(dtype))
    for op_id, fn in [("tensor.argmax", np.argmax), ("tensor.argmin", np.argmin)]:  # the first NaN wins
        np.testing.assert_array_equal(call(op_id, x, axis=1, keepdims=False), fn(x.astype(np.float64), axis=1))
    xt = torch.from_numpy(wide(x))
    for largest in [True, False]:  # NaN sorts above +inf, as torch.topk
        values, indices = call("tensor.topk", x, k=3, axis=1, largest=largest)
        want = torch.topk(xt, 3, dim=1, largest=largest, sorted=True)
        np.testing.assert_array_equal(wide(values), want.values.numpy())
        np.testing.assert_array_equal(indices, want.indices.numpy())


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_cumsum(dtype):
    rng = rng_for("cumsum", dtype)
    x = draw(rng, (-3, 3), (3, 4, 5), dtype) if dtype in FLOATS else ints(rng, dtype, (3, 4, 5), -120, 120)
    for axis in [0, 1, -1]:
        for exclusive in [False, True]:
            for reverse in [False, True]:
                got = call("tensor.cumsum", x, axis=axis, exclusive=exclusive, reverse=reverse)
                v = np.flip(x, axis) if reverse else x
                if dtype in FLOATS:
                    want = np.cumsum(wide(v), axis=axis)  # accumulated in f64
                else:
                    want = np.cumsum(v, axis=axis, dtype=x.dtype)  # wraps
                if exclusive:
                    want = want - (wide(v) if dtype in FLOATS else v)
                want = np.flip(want, axis) if reverse else want
                what = f"axis={axis} exclusive={exclusive} reverse={reverse}"
                assert got.dtype == x.dtype
                if dtype in FLOATS:
                    assert_close(got, want, dtype, what=what)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("dtype", ALL)
def test_triu_tril(dtype):
    x = small_values(rng_for("trilu", dtype), dtype, (2, 4, 5))
    if dtype in FLOATS:
        x[np.isnan(wide(x))] = 1
    for k in [-2, -1, 0, 1, 3, 7]:
        for op_id, fn in [("tensor.triu", np.triu), ("tensor.tril", np.tril)]:
            got = call(op_id, x, k=k)
            np.testing.assert_array_equal(wide(got) if dtype in ("f16", "bf16") else got,
                                          fn(wide(x) if dtype in ("f16", "bf16") else x, k=k), err_msg=f"{op_id} k={k}")


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16", "i32", "u8", "bool"])
def test_gather_elements(dtype):
    rng = rng_for("gather_elements", dtype)
    x = small_values(rng, dtype, (3, 4))
    for axis, idx_shape in [(0, (5, 4)), (1, (3, 2)), (-1, (3, 6))]:
        n = x.shape[axis]
        for idx_dtype in [np.int64, np.int32]:
            idx = rng.integers(-n, n, size=idx_shape).astype(idx_dtype)
            got = call("tensor.gather_elements", x, idx, axis=axis)
            want = np.take_along_axis(x, (idx % n).astype(np.int64), axis=axis)
            np.testing.assert_array_equal(got.view(np.uint16) if dtype == "bf16" else got,
                                          want.view(np.uint16) if dtype == "bf16" else want)


def topk_reference(x, k, axis, largest):
    xm = np.moveaxis(wide(x) if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 else x, axis, -1)
    vals, idxs = np.empty(xm.shape[:-1] + (k,), dtype=xm.dtype), np.empty(xm.shape[:-1] + (k,), dtype=np.int64)
    for pos in np.ndindex(xm.shape[:-1]):
        row = xm[pos].tolist()
        order = sorted(range(len(row)), key=lambda i: ((-row[i]) if largest else row[i], i))[:k]
        idxs[pos] = order
        vals[pos] = [row[i] for i in order]
    return np.moveaxis(vals, -1, axis), np.moveaxis(idxs, -1, axis)


@pytest.mark.parametrize("dtype", FLOATS + ["i64", "i8", "u16"])
def test_topk(dtype):
    rng = rng_for("topk", dtype)
    x = axis_values(rng, dtype, (3, 6))  # with ties: the lower index comes first
    y = draw(rng, (-5, 5), (3, 6), dtype) if dtype in FLOATS else ints(rng, dtype, (3, 6), 0, 100)
    for data in [x, y]:
        for axis, k in [(-1, 3), (0, 2), (1, 6)]:
            for largest in [True, False]:
                values, indices = call("tensor.topk", data, k=k, axis=axis, largest=largest)
                want_v, want_i = topk_reference(data, k, axis, largest)
                assert indices.dtype == np.int64 and values.dtype == data.dtype
                np.testing.assert_array_equal(indices, want_i, err_msg=f"axis={axis} k={k} largest={largest}")
                np.testing.assert_array_equal(wide(values) if dtype in FLOATS else values, want_v)


def scatter_elements_reference(data, idx, upd, axis, reduction):
    out = wide(data) if data.dtype.kind == "f" or data.dtype == ml_dtypes.bfloat16 else data.copy()
    n = data.shape[axis]
    for pos in np.ndindex(idx.shape):
        target = list(pos)
        target[axis] = idx[pos] % n
        t = tuple(target)
        u = out.dtype.type(upd[pos])
        out[t] = u if reduction == "none" else out[t] + u if reduction == "add" else out[t] * u
    return out


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16", "bf16", "i32", "i8", "u8"])
@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_elements(dtype, reduction):
    rng = rng_for("scatter_elements", dtype, reduction)
    data = small_values(rng, dtype, (4, 3))
    if dtype in FLOATS:
        data[np.isnan(wide(data))] = 1
    upd = small_values(rng, dtype, (5, 3))
    if dtype in FLOATS:
        upd[np.isnan(wide(upd))] = 2
    idx = rng.integers(-4, 4, size=(5, 3))  # duplicates: applied in order
    got = call("tensor.scatter_elements", data, idx, upd, axis=0, reduction=reduction)
    want = scatter_elements_reference(data, idx, wide(upd) if dtype in FLOATS else upd, 0, reduction)
    np.testing.assert_array_equal(wide(got) if dtype in FLOATS else got, want)
    idx = rng.integers(0, 3, size=(4, 2))
    got = call("tensor.scatter_elements", data, idx, upd[:4, :2], axis=1, reduction=reduction)
    want = scatter_elements_reference(data, idx, wide(upd[:4, :2]) if dtype in FLOATS else upd[:4, :2], 1, reduction)
    np.testing.assert_array_equal(wide(got) if dtype in FLOATS else got, want)


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16", "i64", "u16"])
@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_nd(dtype, reduction):
    rng = rng_for("scatter_nd", dtype, reduction)
    data = small_values(rng, dtype, (4, 3, 2))
    if dtype in FLOATS:
        data[np.isnan(wide(data))] = 1
    for m in [1, 2, 3]:
        idx = np.stack([rng.integers(-d, d, size=5) for d in data.shape[:m]], axis=-1)
        upd = small_values(rng, dtype, (5,) + data.shape[m:])
        if dtype in FLOATS:
            upd[np.isnan(wide(upd))] = 2
        got = call("tensor.scatter_nd", data, idx, upd, reduction=reduction)
        want = wide(data) if dtype in FLOATS else data.copy()
        for n in range(5):
            t = tuple(int(i) % d for i, d in zip(idx[n], data.shape))
            u = wide(upd[n]) if dtype in FLOATS else upd[n]
            want[t] = u if reduction == "none" else want[t] + u if reduction == "add" else want[t] * u
        np.testing.assert_array_equal(wide(got) if dtype in FLOATS else got, want, err_msg=f"m={m}")


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16", "i16", "u32", "bool"])
def test_gather_nd(dtype):
    rng = rng_for("gather_nd", dtype)
    x = small_values(rng, dtype, (2, 3, 4))
    view = (lambda a: a.view(np.uint16)) if dtype == "bf16" else (lambda a: a)
    for m in [1, 2, 3]:
        idx = np.stack([rng.integers(-d, d, size=(2, 2)) for d in x.shape[:m]], axis=-1)
        want = x[tuple(np.moveaxis(idx, -1, 0))]
        np.testing.assert_array_equal(view(call("tensor.gather_nd", x, idx)), view(want), err_msg=f"m={m}")
    idx = rng.integers(-3, 3, size=(2, 5, 1))  # batch_dims 1: y[b, n] = x[b, idx[b, n]]
    want = np.stack([x[b][idx[b, :, 0]] for b in range(2)])
    np.testing.assert_array_equal(view(call("tensor.gather_nd", x, idx, batch_dims=1)), view(want))


# ---- quantisation ----------------------------------------------------------------------------------
def test_dequant_int8():
    rng = rng_for("dequant8")
    q = rng.integers(-128, 128, size=(3, 7)).astype(np.int8)
    got = call("quant.dequant_int8", q, scale=0.37, zero_point=-5)
    assert got.dtype == np.float32
    want = ((q.astype(np.int32) + 5).astype(np.float32) * np.float32(0.37))  # one f32 multiplication
    np.testing.assert_array_equal(got, want)


def test_dequant_int4():
    rng = rng_for("dequant4")
    q = rng.integers(-8, 8, size=(3, 7))
    for zp in [0, 3, -8]:
        got = call("quant.dequant_int4", q.astype(ml_dtypes.int4), scale=0.25, zero_point=zp)
        np.testing.assert_array_equal(got, ((q - zp) * 0.25).astype(np.float32))


@pytest.mark.parametrize("dtype", FLOATS)
def test_quantize_int8(dtype):
    rng = rng_for("quantize", dtype)
    x = rng.uniform(-40, 40, size=(4, 9))
    x[0, :4] = [2.5, 3.5, -2.5, 1000.0]  # ties to even; saturation
    x = x.astype(numpy_dtype(dtype))
    for scale, zp in [(1.0, 0), (0.25, 3), (0.3, -7)]:
        got = call("quant.quantize_int8", x, scale=scale, zero_point=zp)
        ct = np.float64 if dtype == "f64" else np.float32  # x / scale in the compute type, one division
        quot = wide(x).astype(ct) / ct(scale)
        want = np.clip(np.rint(wide(quot)) + zp, -128, 127).astype(np.int8)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, want, err_msg=f"scale={scale} zp={zp}")
    tq = torch.quantize_per_tensor(torch.from_numpy(wide(x).astype(np.float32)), 0.25, 3, torch.qint8)
    np.testing.assert_array_equal(call("quant.quantize_int8", x, scale=0.25, zero_point=3), tq.int_repr().numpy())


def q8_0_rows(rng, rows, blocks):
    """ggml Q8_0 rows: per block of 32 values an f16 scale d then 32 int8 codes; value = d * q."""
    d = rng.uniform(0.005, 0.05, size=(rows, blocks)).astype(np.float16)
    qs = rng.integers(-127, 128, size=(rows, blocks, 32)).astype(np.int8)
    raw = np.concatenate([d[..., None].view(np.uint8).reshape(rows, blocks, 2), qs.view(np.uint8)], axis=-1)
    values = d.astype(np.float32)[..., None] * qs.astype(np.float32)  # exact in f32
    return raw.reshape(rows, blocks * 34), values.reshape(rows, blocks * 32)


def q4_0_rows(rng, rows, blocks):
    """ggml Q4_0: f16 d, 16 bytes; value k < 16 is the low nibble of byte k, value k + 16 the high one;
    value = (nibble - 8) * d."""
    d = rng.uniform(0.01, 0.1, size=(rows, blocks)).astype(np.float16)
    nib = rng.integers(0, 16, size=(rows, blocks, 32)).astype(np.uint8)
    qs = (nib[..., :16] | (nib[..., 16:] << 4)).astype(np.uint8)
    raw = np.concatenate([d[..., None].view(np.uint8).reshape(rows, blocks, 2), qs], axis=-1)
    values = (nib.astype(np.float32) - 8) * d.astype(np.float32)[..., None]
    return raw.reshape(rows, blocks * 18), values.reshape(rows, blocks * 32)


@pytest.mark.parametrize("fmt,make", [("q8_0", q8_0_rows), ("q4_0", q4_0_rows)])
def test_block_dequantize(fmt, make):
    raw, values = make(rng_for("blockdq", fmt), 3, 2)
    got = call("quant.block_dequantize", raw, format=fmt)
    assert got.dtype == np.float32 and got.shape == values.shape
    np.testing.assert_array_equal(got, values)
    np.testing.assert_array_equal(call("quant.block_dequantize", raw.reshape(3, 1, -1), format=fmt),
                                  values.reshape(3, 1, -1))


@pytest.mark.parametrize("fmt,make", [("q8_0", q8_0_rows), ("q4_0", q4_0_rows)])
def test_block_matmul(fmt, make):
    rng = rng_for("blockmm", fmt)
    raw, w = make(rng, 5, 3)  # W [out 5, in 96]
    x = rng.standard_normal((4, 96)).astype(np.float32)
    got = call("quant.block_matmul", x, raw, format=fmt)
    want = wide(x) @ wide(w).T
    # docs/semantics/block_quant.md: the fast kernel quantises each run of 32 activations to 8 bits
    # (d_b = max|x| / 127), so the error is bounded by sum_b d_b (1/2 + 2^-13) sum_{i in b} |w_i| plus
    # f32 accumulation.
    xb = np.abs(wide(x)).reshape(4, 3, 32).max(axis=-1) / 127
    wb = np.abs(wide(w)).reshape(5, 3, 32).sum(axis=-1)
    bound = xb @ wb.T * (0.5 + 2.0 ** -13) + 1e-6 * (np.abs(wide(x)) @ np.abs(wide(w)).T)
    assert got.shape == (4, 5) and got.dtype == np.float32
    assert np.all(np.abs(wide(got) - want) <= bound), np.max(np.abs(wide(got) - want) / bound)


# ---- graph-only ops --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["f64", "f32", "f16", "bf16", "i32", "u8", "bool"])
def test_input_literal(dtype):
    values = [1, 0, 3, 2, 0, 5]
    got = call("Input", values=values, shape=[2, 3], dtype=dtype)
    want = np.array(values, dtype=np.float64).astype(numpy_dtype(dtype)).reshape(2, 3)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    x = small_values(rng_for("input", dtype), dtype, (3, 2))
    view = (lambda a: a.view(np.uint16)) if dtype == "bf16" else (lambda a: a)
    np.testing.assert_array_equal(view(call("Input", x)), view(x))  # identity on a given input


def test_input_inside_a_graph():
    g = backplane.Graph("literal")
    g.add_input("x", "f32", [3])
    (c,) = g.add_node("Input", [], ["c"], attrs={"values": [0.5, -1.0, 2.0], "dtype": "f32"})
    g.add_node("math.add", ["x", c], ["y"])
    g.outputs = ["y"]
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    np.testing.assert_array_equal(backplane.Executor(g).run({"x": x})["y"].numpy(), x + [0.5, -1.0, 2.0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("act,fn", [("none", lambda v: v), ("relu", lambda v: np.maximum(v, 0)), ("gelu", gelu),
                                    ("gelu_tanh", gelu_tanh)])
def test_fused_matmul_bias_act(dtype, act, fn):
    rng = rng_for("fused", dtype, act)
    a = draw(rng, (-1, 1), (2, 3, 8), dtype)
    b = draw(rng, (-1, 1), (8, 5), dtype)
    c = draw(rng, (-1, 1), (5,), dtype)
    want = fn(wide(a) @ wide(b) + wide(c))
    # Rounding errors of a dot product scale with its terms: the tolerance is relative to sum |a b| + |c|.
    scale = np.abs(wide(a)) @ np.abs(wide(b)) + np.abs(wide(c))
    # num_outputs=1: without it backplane.op asks for both declared outputs (y, sum?) and fails.
    got = call("Fused", a, b, c, pattern="matmul_bias_act", activation=act, num_outputs=1)
    assert_close(got, want, dtype, scale=scale, what=act)
    got = call("Fused", a, b, pattern="matmul_bias_act", activation="none", num_outputs=1)
    assert_close(got, wide(a) @ wide(b), dtype, scale=np.abs(wide(a)) @ np.abs(wide(b)), what="no bias")


@pytest.mark.parametrize("dtype", FLOATS)
def test_fused_add_layernorm(dtype):
    rng = rng_for("fused_ln", dtype)
    a, b = draw(rng, (-2, 2), (3, 6), dtype), draw(rng, (-2, 2), (3, 6), dtype)
    gamma, beta = draw(rng, (0.5, 1.5), (6,), dtype), draw(rng, (-1, 1), (6,), dtype)
    y, s = call("Fused", a, b, gamma, beta, pattern="add_layernorm", num_outputs=2)
    sum_ = wide(a.astype(np.float64) + b.astype(np.float64)).astype(numpy_dtype(dtype))  # a + b in the dtype
    want = F.layer_norm(torch.from_numpy(wide(sum_)), (6,), torch.from_numpy(wide(gamma)), torch.from_numpy(wide(beta)),
                        eps=1e-5).numpy()
    assert_close(s, wide(a) + wide(b), dtype, what="sum")
    assert_close(y, want, dtype, what="layernorm")


def test_fused_default_num_outputs():
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(call("Fused", a, b, pattern="matmul_bias_act"), np.full((2, 4), 3.0, np.float32))


def test_fused_dequant4_matmul():
    rng = rng_for("fused_dq4")
    a = rng.standard_normal((3, 8)).astype(np.float32)
    q = rng.integers(-8, 8, size=(8, 4))
    got = call("Fused", a, q.astype(ml_dtypes.int4), pattern="dequant4_matmul", scale=0.5, zero_point=1,
                num_outputs=1)
    want = wide(a) @ ((q - 1) * 0.5)
    assert_close(got, want, "f32", scale=np.abs(wide(a)) @ np.abs((q - 1) * 0.5))


def metric_graph(op_id, classes):
    g = backplane.Graph("metric")
    g.add_input("p", "f32", ["b", classes])
    g.add_input("t", "f32", ["b", classes])
    g.add_node(op_id, ["p", "t"], ["m"])
    g.outputs = ["m"]
    return backplane.Executor(g)


def batches(seed, kind):
    rng = rng_for("metric", seed)
    out = []
    for rows in [6, 9]:
        if kind == "probs":
            p = sp.softmax(rng.standard_normal((rows, 4)), axis=1).astype(np.float32)
            t = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=rows)]
        else:
            p = rng.uniform(0, 1, size=(rows, 4)).astype(np.float32)
            t = (rng.uniform(0, 1, size=(rows, 4)) < 0.5).astype(np.float32)
        out.append((p, t))
    return out


def test_metric_accuracy_is_running():
    ex = metric_graph("bench.metric.accuracy", 4)
    correct = total = 0
    for p, t in batches(1, "probs"):
        got = float(ex.run({"p": p, "t": t})["m"].numpy()[0])
        correct += int(np.sum(np.argmax(p, 1) == np.argmax(t, 1)))
        total += len(p)
        assert got == pytest.approx(correct / total, rel=1e-7)


def test_metric_perplexity_is_running():
    ex = metric_graph("bench.metric.perplexity", 4)
    ce = []
    for p, t in batches(2, "probs"):
        got = float(ex.run({"p": p, "t": t})["m"].numpy()[0])
        ce += list(-np.log(wide(p)[t > 0]))  # cross entropy against one-hot targets
        assert_close(got, math.exp(np.mean(ce)), "f32", what="perplexity")


def test_metric_f1_is_running():
    ex = metric_graph("bench.metric.f1", 4)
    tp = fp = fn = 0
    for p, t in batches(3, "binary"):
        got = float(ex.run({"p": p, "t": t})["m"].numpy()[0])
        pred, true = p >= 0.5, t >= 0.5
        tp += int(np.sum(pred & true))
        fp += int(np.sum(pred & ~true))
        fn += int(np.sum(~pred & true))
        assert_close(got, 2 * tp / (2 * tp + fp + fn), "f32", what="f1")


METRIC_P = np.array([[0.7, 0.2, 0.1], [0.25, 0.25, 0.5]])
METRIC_T = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_metric_perplexity_f64():
    got = call("bench.metric.perplexity", METRIC_P, METRIC_T)
    assert_close(got, [math.exp(-(math.log(0.7) + math.log(0.5)) / 2)], "f64", what="perplexity")


def test_metric_f1_f64():
    assert_close(call("bench.metric.f1", METRIC_P, METRIC_T), [1.0], "f64", what="f1")


def test_metrics_as_single_ops():
    p = np.array([[0.7, 0.2, 0.1], [0.25, 0.45, 0.3]], dtype=np.float32)
    t = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    np.testing.assert_array_equal(call("bench.metric.accuracy", p, t), [0.5])


def model_graph(freeze_attrs=None):
    g = backplane.Graph("model")
    g.add_input("trigger", "f32", [1])
    for name, shape in [("enc.w", [2, 3]), ("enc.b", [3]), ("dec.w", [3, 2])]:
        g.add_param(name, "f32", shape)
        g.add_input("g_" + name.replace(".", "_"), "f32", shape)
    outputs = []
    if freeze_attrs is not None:
        (count,) = g.add_node("model.freeze", ["trigger"], ["count"], name="freeze", attrs=freeze_attrs)
        outputs.append(count)
    for name in ["enc.w", "enc.b", "dec.w"]:
        (o,) = g.add_node("train.optimizer.sgd", [name, "g_" + name.replace(".", "_")], [name + ".next"],
                          name="sgd_" + name.replace(".", "_"), attrs={"lr": 0.5})
        outputs.append(o)
    g.outputs = outputs
    return g


def model_values(rng):
    shapes = {"enc.w": (2, 3), "enc.b": (3,), "dec.w": (3, 2)}
    params = {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
    grads = {"g_" + k.replace(".", "_"): rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    return params, grads


@pytest.mark.parametrize("attrs,frozen", [({"pattern": "enc"}, {"enc.w", "enc.b"}),
                                          ({"pattern": "*.w"}, {"enc.w", "dec.w"}),
                                          ({"pattern": "**", "except": "enc.b"}, {"enc.w", "dec.w"}),
                                          ({"pattern": "dec.w", "frozen": False}, set())])
def test_model_freeze_keeps_parameters(attrs, frozen):
    params, grads = model_values(rng_for("freeze", repr(attrs)))
    ex = backplane.Executor(model_graph(attrs))
    ex.load_params(params)
    for _ in range(2):
        out = ex.run({"trigger": np.zeros(1, np.float32), **grads})
    expected_count = len(frozen) if attrs.get("frozen", True) else 1
    np.testing.assert_array_equal(out["count"].numpy(), [expected_count])
    saved = ex.save_params()
    for name, p in params.items():
        g = grads["g_" + name.replace(".", "_")]
        want = p if name in frozen else (p - np.float32(0.5) * g) - np.float32(0.5) * g  # two SGD steps
        assert_close(saved[name].numpy(), want, "f32", what=name)


def test_model_graft_reads_and_patches():
    rng = rng_for("graft")
    params, _ = model_values(rng)
    inj = rng.standard_normal(9).astype(np.float32)
    g = backplane.Graph("graft")
    g.add_input("trigger", "f32", [1])
    g.add_input("inj", "f32", [9])
    for name, v in params.items():
        g.add_param(name, "f32", list(v.shape))
    g.add_node("model.graft", ["trigger"], ["all"], name="read_all", attrs={"at": "**"})
    g.add_node("model.graft", ["trigger"], ["w"], name="read_w", attrs={"at": "*.w"})
    g.outputs = ["all", "w"]
    ex = backplane.Executor(g)
    ex.load_params(params)
    out = ex.run({"trigger": np.zeros(1, np.float32), "inj": inj})
    order = sorted(params)  # concatenated in sorted name order
    np.testing.assert_array_equal(out["all"].numpy(), np.concatenate([params[k].ravel() for k in order]))
    np.testing.assert_array_equal(out["w"].numpy(), np.concatenate([params[k].ravel() for k in ["dec.w", "enc.w"]]))

    g2 = backplane.Graph("patch")
    g2.add_input("trigger", "f32", [1])
    g2.add_input("inj", "f32", [9])
    for name, v in params.items():
        g2.add_param(name, "f32", list(v.shape))
    g2.add_node("model.graft", ["trigger", "inj"], ["patched"], name="patch", attrs={"at": "enc", "mode": "read_write"})
    g2.outputs = ["patched"]
    ex2 = backplane.Executor(g2)
    ex2.load_params(params)
    out = ex2.run({"trigger": np.zeros(1, np.float32), "inj": inj})
    enc = np.concatenate([params["enc.b"].ravel(), params["enc.w"].ravel()])  # enc.b < enc.w
    np.testing.assert_array_equal(out["patched"].numpy(), enc + inj)
    saved = ex2.save_params()
    np.testing.assert_array_equal(saved["enc.b"].numpy(), params["enc.b"] + inj[:3])
    np.testing.assert_array_equal(saved["enc.w"].numpy(), params["enc.w"] + inj[3:].reshape(2, 3))
    np.testing.assert_array_equal(saved["dec.w"].numpy(), params["dec.w"])


# ---- hawkes.simulate: random, checked by invariants ----------------------------------------------------
def hawkes(seed, horizon=20.0, max_events=200, mu=0.8, alpha=0.6, beta=1.5):
    times, count = call("hawkes.simulate", mu=mu, alpha=alpha, beta=beta, horizon=horizon, max_events=max_events,
                        seed=seed)
    return times, int(count[0])


def test_hawkes_simulate_invariants():
    times, n = hawkes(7)
    assert times.shape == (200,) and 0 < n <= 200
    events = wide(times[:n])
    assert np.all(np.diff(events) >= 0) and events[0] >= 0 and events[-1] <= 20.0
    np.testing.assert_array_equal(times[n:], -1)  # padding after the events
    again, n2 = hawkes(7)
    assert n2 == n and np.array_equal(again, times)  # same seed, same run
    other, n3 = hawkes(8)
    assert n3 != n or not np.array_equal(other, times)  # another seed, another run
    short, n4 = hawkes(7, horizon=8.0)  # a shorter horizon gives a prefix
    assert n4 == int(np.sum(events < 8.0)) and np.array_equal(short[:n4], times[:n4])
    capped, n5 = hawkes(7, max_events=5)
    assert n5 == 5 and np.array_equal(capped[:5], times[:5])


def test_hawkes_simulate_mean_count():
    mu, alpha, beta, horizon = 0.8, 0.6, 1.5, 10.0
    counts = np.array([hawkes(seed, horizon, 400, mu, alpha, beta)[1] for seed in range(300)], dtype=np.float64)
    n = alpha / beta  # E N(T) for the exponential kernel (Laub, Taimre & Pollett 2015)
    expected = mu * horizon / (1 - n) - mu * n * (1 - math.exp(-(beta - alpha) * horizon)) / ((1 - n) * (beta - alpha))
    assert abs(counts.mean() - expected) < 5 * counts.std() / math.sqrt(len(counts)), (counts.mean(), expected)


# ---- optimizers: one or two steps against torch.optim (float64) or the papers' rules in NumPy ----------
def torch_optimizer(cls, **kw):
    def run(p0, grads):
        p = torch.nn.Parameter(torch.from_numpy(wide(p0).copy()))
        opt = cls([p], **kw)
        out = []
        for g in grads:
            p.grad = torch.from_numpy(wide(g).copy())
            opt.step()
            out.append(p.detach().numpy().copy())
        return out
    return run


def numpy_optimizer(step):
    def run(p0, grads):
        p, state, out = wide(p0).copy(), {}, []
        for t, g in enumerate(grads, start=1):
            p = step(p, wide(g), state, t)
            out.append(p.copy())
        return out
    return run


def lion(lr, beta1, beta2, wd):
    def step(p, g, s, t):
        m = s.get("m", np.zeros_like(p))
        p = p * (1 - lr * wd)
        p = p - lr * np.sign(beta1 * m + (1 - beta1) * g)
        s["m"] = beta2 * m + (1 - beta2) * g
        return p
    return numpy_optimizer(step)


def lars(lr, eta, momentum, wd, eps):
    def step(p, g, s, t):
        pn, gn = np.linalg.norm(p), np.linalg.norm(g)
        local = eta * pn / (gn + wd * pn + eps) if pn > 0 and gn > 0 else 1.0
        s["v"] = momentum * s.get("v", 0.0) + lr * local * (g + wd * p)
        return p - s["v"]
    return numpy_optimizer(step)


def lamb(lr, beta1, beta2, eps, wd):
    def step(p, g, s, t):
        s["m"] = beta1 * s.get("m", 0.0) + (1 - beta1) * g
        s["v"] = beta2 * s.get("v", 0.0) + (1 - beta2) * g * g
        r = (s["m"] / (1 - beta1 ** t)) / (np.sqrt(s["v"] / (1 - beta2 ** t)) + eps) + wd * p
        pn, rn = np.linalg.norm(p), np.linalg.norm(r)
        return p - lr * (pn / rn if pn > 0 and rn > 0 else 1.0) * r
    return numpy_optimizer(step)


def hebbian(lr, max_norm):
    def step(p, g, s, t):
        q = p + lr * g
        if max_norm > 0 and np.linalg.norm(q) > max_norm:
            q = q * (max_norm / np.linalg.norm(q))
        return q
    return numpy_optimizer(step)


OPTIMIZERS = [
    ("train.optimizer.adam", {"lr": 0.01}, torch_optimizer(torch.optim.Adam, lr=0.01, foreach=False)),
    ("train.optimizer.adam", {"lr": 0.02, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.1},
     torch_optimizer(torch.optim.Adam, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, foreach=False)),
    ("train.optimizer.adamw", {"lr": 0.01, "weight_decay": 0.1},
     torch_optimizer(torch.optim.AdamW, lr=0.01, weight_decay=0.1, foreach=False)),
    ("train.optimizer.adamax", {"lr": 0.01, "weight_decay": 0.05},
     torch_optimizer(torch.optim.Adamax, lr=0.01, weight_decay=0.05, foreach=False)),
    ("train.optimizer.sgd", {"lr": 0.1}, torch_optimizer(torch.optim.SGD, lr=0.1, foreach=False)),
    ("train.optimizer.sgd", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
     torch_optimizer(torch.optim.SGD, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, foreach=False)),
    ("train.optimizer.sgd", {"lr": 0.1, "momentum": 0.9, "nesterov": True},
     torch_optimizer(torch.optim.SGD, lr=0.1, momentum=0.9, nesterov=True, foreach=False)),
    ("train.optimizer.rmsprop", {"lr": 0.01}, torch_optimizer(torch.optim.RMSprop, lr=0.01, foreach=False)),
    ("train.optimizer.rmsprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.1},
     torch_optimizer(torch.optim.RMSprop, lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1,
                     foreach=False)),
    ("train.optimizer.adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.05},
     torch_optimizer(torch.optim.Adagrad, lr=0.1, lr_decay=0.1, weight_decay=0.05, foreach=False)),
    ("train.optimizer.adadelta", {"lr": 1.0, "rho": 0.8, "weight_decay": 0.1},
     torch_optimizer(torch.optim.Adadelta, lr=1.0, rho=0.8, weight_decay=0.1, foreach=False)),
    ("train.optimizer.lion", {"lr": 0.01, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.1},
     lion(0.01, 0.9, 0.99, 0.1)),
    ("train.optimizer.lars", {"lr": 0.1, "eta": 0.01, "momentum": 0.9, "weight_decay": 0.01},
     lars(0.1, 0.01, 0.9, 0.01, 1e-8)),
    ("train.optimizer.lamb", {"lr": 0.01, "weight_decay": 0.01}, lamb(0.01, 0.9, 0.999, 1e-6, 0.01)),
    ("train.optimizer.hebbian", {"lr": 0.1}, hebbian(0.1, 0.0)),
    ("train.optimizer.hebbian", {"lr": 0.5, "max_norm": 2.0}, hebbian(0.5, 2.0)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_id,attrs,reference", OPTIMIZERS,
                         ids=[f"{o[0]}-{i}" for i, o in enumerate(OPTIMIZERS)])
def test_optimizer(op_id, attrs, reference, dtype):
    rng = rng_for(op_id, repr(attrs), dtype)
    n = 11
    p0 = rng.standard_normal(n).astype(numpy_dtype(dtype))
    grads = [rng.standard_normal(n).astype(numpy_dtype(dtype)) for _ in range(2)]
    # f16/bf16: one step (later steps would start from the rounded params, which the f64 reference
    # does not see); f64/f32: two steps, feeding the returned state back in.
    steps = 1 if dtype in ("f16", "bf16") else 2
    want = reference(p0, grads[:steps])
    p, state = p0, ()
    for k in range(steps):
        result = call(op_id, p, grads[k], *state, **attrs)
        result = result if isinstance(result, tuple) else (result,)
        p, state = result[0], result[1:]
        assert p.dtype == p0.dtype
        assert_close(p, want[k], dtype, what=f"step {k + 1}")


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_lbfgs(dtype):
    rng = rng_for("lbfgs", dtype)
    n = 6
    m = rng.standard_normal((n, n))
    a = m @ m.T / n + np.eye(n)  # SPD quadratic 0.5 p'Ap - b'p, gradient Ap - b
    b = rng.standard_normal(n)
    p0 = rng.standard_normal(n).astype(numpy_dtype(dtype))
    pt = torch.nn.Parameter(torch.from_numpy(wide(p0)))  # torch in f64 from the same start
    at, bt = torch.from_numpy(a), torch.from_numpy(b)
    opt = torch.optim.LBFGS([pt], lr=0.8, history_size=3, max_iter=1, line_search_fn=None)

    def closure():
        opt.zero_grad()
        loss = 0.5 * pt @ at @ pt - bt @ pt
        loss.backward()
        return loss

    p, state = p0, ()
    for k in range(6):
        g = (a.astype(numpy_dtype(dtype)) @ p - b.astype(numpy_dtype(dtype))).astype(numpy_dtype(dtype))
        result = call("train.optimizer.lbfgs", p, g, *state, lr=0.8, history_size=3)
        p, state = result[0], result[1:]
        opt.step(closure)
        assert_close(p, pt.detach().numpy(), dtype, what=f"iteration {k + 1}")


# ---- spatial ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(dtype, mode, padding, align):
    rng = rng_for("grid", dtype, mode, padding, align)
    x = draw(rng, (-2, 2), (2, 3, 5, 6), dtype)
    grid = draw(rng, (-1.3, 1.3), (2, 4, 3, 2), dtype)
    got = call("spatial.grid_sample", x, grid, mode=mode, padding_mode=padding, align_corners=align)
    want = F.grid_sample(torch.from_numpy(wide(x)), torch.from_numpy(wide(grid)), mode=mode, padding_mode=padding,
                         align_corners=align).numpy()
    # The taps' weights sum to 1 (bicubic's overshoot a little), so the error scales with max |x|.
    assert_close(got, want, dtype, scale=np.abs(wide(x)).max())


def test_roi_align_linear_image():
    # On v(y, x) = 3 + 0.5 x - 0.25 y bilinear sampling is exact, and the mean over a bin's symmetric
    # sampling grid is v at the bin centre (as long as no sample is clamped at the border).
    h, w = 10, 12
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    plane = 3 + 0.5 * xx - 0.25 * yy
    x = np.stack([plane[None], 2 * plane[None] - 1]).astype(np.float64)  # N = 2, C = 1
    rois = np.array([[2.0, 1.5, 8.0, 7.0], [3.0, 2.0, 9.0, 6.5], [1.25, 1.25, 5.5, 8.0]])
    batch = np.array([0, 1, 1])
    for oh, ow, ratio, scale_ in [(2, 3, 0, 1.0), (3, 2, 2, 1.0), (1, 1, 0, 1.0), (2, 2, 3, 0.5)]:
        for half in [True, False]:
            got = call("spatial.roi_align", x, rois, batch, output_height=oh, output_width=ow, sampling_ratio=ratio,
                       spatial_scale=scale_, half_pixel=half)
            want = np.empty((3, 1, oh, ow))
            for r in range(3):
                x1, y1, x2, y2 = rois[r] * scale_ - (0.5 if half else 0.0)
                rw, rh = x2 - x1, y2 - y1
                if not half:
                    rw, rh = max(rw, 1.0), max(rh, 1.0)
                for i in range(oh):
                    for j in range(ow):
                        cy, cx = y1 + (i + 0.5) * rh / oh, x1 + (j + 0.5) * rw / ow
                        v = 3 + 0.5 * cx - 0.25 * cy
                        want[r, 0, i, j] = v if batch[r] == 0 else 2 * v - 1
            assert_close(got, want, "f64", what=f"{oh}x{ow} ratio={ratio} scale={scale_} half={half}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_roi_align_constant_image(dtype):
    x = np.full((1, 2, 6, 7), 1.5).astype(numpy_dtype(dtype))
    x[0, 1] = -0.75
    rois = np.array([[1.0, 1.0, 4.0, 3.5], [0.5, 0.5, 5.5, 5.0]]).astype(numpy_dtype(dtype))
    for mode in ["avg", "max"]:
        got = call("spatial.roi_align", x, rois, np.array([0, 0], dtype=np.int64), mode=mode, output_height=2,
                   output_width=3)
        want = np.broadcast_to(np.array([1.5, -0.75])[None, :, None, None], (2, 2, 2, 3))
        if mode == "max":  # ONNX's max: the largest weighted corner term w_k v_k, so <= v for v > 0
            assert np.all(wide(got)[:, 0] <= 1.5 + 1e-6) and np.all(wide(got)[:, 0] >= 1.5 / 4 - 1e-6)
            continue
        assert_close(got, want, dtype, what=mode)


TESTED_OPS: set[str] = (
    {row[0] for row in UNARY} | {row[0] for row in BINARY} | {row[0] for row in PACKED}
    | {op for op, _ in COMPARE} | {row[0] for row in OPTIMIZERS}
    | {"activation.prelu_channels", "math.softmax", "activation.log_softmax", "masking.causal",
       "tensor.logical_and", "tensor.logical_or", "tensor.logical_xor", "tensor.logical_not", "tensor.where",
       "tensor.cast", "tensor.bitshift_left", "tensor.bitshift_right", "tensor.argmax", "tensor.argmin",
       "tensor.cumsum", "tensor.triu", "tensor.tril", "tensor.gather_elements", "tensor.topk",
       "tensor.scatter_elements", "tensor.scatter_nd", "tensor.gather_nd", "quant.dequant_int8",
       "quant.dequant_int4", "quant.quantize_int8", "quant.block_dequantize", "quant.block_matmul", "Input", "Fused",
       "bench.metric.accuracy", "bench.metric.perplexity", "bench.metric.f1", "model.freeze", "model.graft",
       "hawkes.simulate", "train.optimizer.lbfgs", "spatial.grid_sample", "spatial.roi_align"}
)
