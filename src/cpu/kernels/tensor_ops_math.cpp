// Highway kernels for TensorOps.Trig (docs/semantics/math_ops.md) on Highway's contrib/math.
// f64 runs in f64 lanes, f32 in f32 lanes, f16/bf16 widened to f32 in blocks and rounded back to
// nearest even. Tan is Sin / Cos in f64 lanes for every format; Cosh is (e + 1/e) / 2 with
// e = Exp(|x|). A vector holding a lane outside the function's vector range (NaN and +-Inf
// included; Tan: |x| > 39000 or |cos x| < 2^-20; Sinh/Cosh: |x| > 88 in f32, 709 in f64) is
// computed lane by lane with the reference's f64 libm call, so those lanes equal the reference.
// Odd functions return a zero input unchanged (the sign of -0 kept).
// Error against the reference (f64 libm rounded once), from Highway's stated ULP bounds: f64
// asin/acos 2 ULP, atan/asinh/acosh/atanh 3, sinh 4, cosh 3, tan 7; f32 lanes the same counts in
// f32 ULP (tan: 1 ULP, from f64 lanes); f16/bf16 1 ULP of the 16-bit format (one rounding of
// an f32 value within a few f32 ULP). The conformance runner checks 1e-14 (f64), 1.3e-6 (f32),
// 1e-3 (f16) and 8e-3 (bf16) relative.
// BitShift stays on the reference (ScalarByDesign, reason below).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/tensor_ops_math.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_TENSOR_OPS_MATH_OPS_
#define BACKPLANE_CPU_KERNELS_TENSOR_OPS_MATH_OPS_
#include <cmath>
#include <cstddef>
#include <cstdint>
namespace backplane::cpu::simd::tensor_math_ops {
// The TrigOp order.
enum Fn : int { kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh };
constexpr size_t kBlock = 1024;
inline double LibmTrig(int op, double x) {
  switch (op) {
    case kTan: return std::tan(x);
    case kAsin: return std::asin(x);
    case kAcos: return std::acos(x);
    case kAtan: return std::atan(x);
    case kSinh: return std::sinh(x);
    case kCosh: return std::cosh(x);
    case kAsinh: return std::asinh(x);
    case kAcosh: return std::acosh(x);
    default: return std::atanh(x);
  }
}
}  // namespace backplane::cpu::simd::tensor_math_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::tensor_math_hwy::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace tensor_math_ops;  // NOLINT
using ::backplane::cpu::simd::HWY_NAMESPACE::DemoteF32;
using ::backplane::cpu::simd::HWY_NAMESPACE::LoadF64;
using ::backplane::cpu::simd::HWY_NAMESPACE::NarrowBlock;
using ::backplane::cpu::simd::HWY_NAMESPACE::WidenBlock;

template <class T>
HWY_NOINLINE void LibmLanes(int op, T* v, size_t lanes) {
  for (size_t k = 0; k < lanes; ++k) v[k] = static_cast<T>(LibmTrig(op, static_cast<double>(v[k])));
}

// Lanes where the vector function is valid (finite inputs in its range).
template <class D, class V>
HWY_INLINE auto InRange(D d, int op, V x) {
  using T = hn::TFromD<D>;
  const V ax = hn::Abs(x);
  const V one = hn::Set(d, T(1));
  switch (op) {
    case kTan: return hn::Le(ax, hn::Set(d, T(39000)));
    case kAsin:
    case kAcos: return hn::Le(ax, one);
    case kAtanh: return hn::Lt(ax, one);
    case kAcosh: return hn::And(hn::Ge(x, one), hn::Le(x, hn::Set(d, hwy::HighestValue<T>())));
    case kSinh:
    case kCosh: return hn::Le(ax, hn::Set(d, T(sizeof(T) == 8 ? 709 : 88)));
    default: return hn::Le(ax, hn::Set(d, hwy::HighestValue<T>()));  // atan, asinh: finite
  }
}

template <class D, class V>
HWY_INLINE V VecTrig(D d, int op, V x) {
  using T = hn::TFromD<D>;
  switch (op) {
    case kTan: return hn::Div(hn::Sin(d, x), hn::Cos(d, x));
    case kAsin: return hn::Asin(d, x);
    case kAcos: return hn::Acos(d, x);
    case kAtan: return hn::Atan(d, x);
    case kSinh: return hn::Sinh(d, x);
    case kCosh: {
      const V e = hn::Exp(d, hn::Abs(x));
      return hn::Mul(hn::Set(d, T(0.5)), hn::Add(e, hn::Div(hn::Set(d, T(1)), e)));
    }
    case kAsinh: return hn::Asinh(d, x);
    case kAcosh: return hn::Acosh(d, x);
    default: return hn::Atanh(d, x);
  }
}

template <class D, class V>
HWY_INLINE V ApplyTrig(D d, int op, V x) {
  using T = hn::TFromD<D>;
  bool ok = hn::AllTrue(d, InRange(d, op, x));
  if (ok && op == kTan) ok = hn::AllTrue(d, hn::Ge(hn::Abs(hn::Cos(d, x)), hn::Set(d, T(1.0 / 1048576))));
  if (HWY_UNLIKELY(!ok)) {
    HWY_ALIGN T lanes[hn::MaxLanes(d)];
    hn::Store(x, d, lanes);
    LibmLanes(op, lanes, hn::Lanes(d));
    return hn::Load(d, lanes);
  }
  const V r = VecTrig(d, op, x);
  const bool odd = op != kAcos && op != kCosh && op != kAcosh;
  return odd ? hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, r) : r;
}

// Full vectors, then the tail through a zeroed aligned buffer.
template <class T>
void TrigTyped(int op, const T* x, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(ApplyTrig(d, op, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T buf[hn::MaxLanes(d)] = {};
    for (size_t k = 0; k < n - i; ++k) buf[k] = x[i + k];
    hn::Store(ApplyTrig(d, op, hn::Load(d, buf)), d, buf);
    for (size_t k = 0; k < n - i; ++k) y[i + k] = buf[k];
  }
}

// f32 tan in f64 lanes, rounded once to f32.
void TanViaF64(const float* x, float* y, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(DemoteF32(df, ApplyTrig(dd, kTan, LoadF64(dd, x + i))), df, y + i);
  }
  for (; i < n; ++i) y[i] = static_cast<float>(std::tan(static_cast<double>(x[i])));
}

void TrigF32(int op, const float* x, float* y, size_t n) {
  if (op == kTan) return TanViaF64(x, y, n);
  TrigTyped(op, x, y, n);
}
void TrigF64(int op, const double* x, double* y, size_t n) { TrigTyped(op, x, y, n); }
void TrigHalf(int op, const uint16_t* x, uint16_t* y, size_t n, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, m, bf16);
    TrigF32(op, f, f, m);
    NarrowBlock(f, y + i, m, bf16);
  }
}

}  // namespace backplane::cpu::simd::tensor_math_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace tensor_math_hwy {
HWY_EXPORT(TrigF32);
HWY_EXPORT(TrigF64);
HWY_EXPORT(TrigHalf);

namespace {

void Trig(const TrigConfig& config, const void* in, void* out, int64_t count, DType dtype) {
  const auto op = static_cast<int32_t>(config.Op);
  const bool fp = dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
                  dtype == DType::BFloat16;
  if (!fp || op < 0 || op > static_cast<int32_t>(TrigOp::Atanh) || count <= 0 || in == nullptr ||
      out == nullptr) {
    return Reference().TensorOps_Trig(config, in, out, count, dtype);
  }
  const auto n = static_cast<size_t>(count);
  switch (dtype) {
    case DType::Float32:
      return HWY_DYNAMIC_DISPATCH(TrigF32)(op, static_cast<const float*>(in), static_cast<float*>(out), n);
    case DType::Float64:
      return HWY_DYNAMIC_DISPATCH(TrigF64)(op, static_cast<const double*>(in), static_cast<double*>(out), n);
    default:
      return HWY_DYNAMIC_DISPATCH(TrigHalf)(op, static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out),
                                            n, dtype == DType::BFloat16);
  }
}

}  // namespace
}  // namespace tensor_math_hwy

void RegisterTensorOpsMath(KernelTable& t) {
  t.TensorOps_Trig = &tensor_math_hwy::Trig;
  t.ScalarByDesign(catalog::MethodId::TensorOps_BitShift,
                   "integer shifts with per-element amounts that must be range-checked (>= bit width gives 0, "
                   "negative is an error); graphs apply them to small index and bit-mask tensors, which "
                   "import-time folding usually computes");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
