// Highway kernels for the MathExt surface (docs/semantics/math_ext.md): Sin, Cos, Sign and
// InvSqrtDimScale. f32 and f64 run in native lanes; f16/bf16 are widened to f32 in blocks and
// rounded back to nearest even, as the reference does. Outer and LogSumExp stay on the reference.
//
// Sin/Cos use Highway's contrib/math (3 ULP on [-39000, 39000]); a vector holding a larger
// argument, +-Inf or NaN is computed with std::sin/std::cos lane by lane, so those lanes are exactly
// libm's. InvSqrtDimScale is evaluated in f64 lanes for every format (x / sqrt(dim), one division),
// bit-identical to the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/math_ext.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_MATH_EXT_OPS_
#define BACKPLANE_CPU_KERNELS_MATH_EXT_OPS_
#include <cmath>
#include <cstddef>
#include <cstdint>
namespace backplane::cpu::simd::math_ext_ops {
enum UnaryOp : int { kSin, kCos, kSign };
constexpr size_t kBlock = 1024;
constexpr double kTrigLimit = 39000.0;  // Highway Sin/Cos valid range
}  // namespace backplane::cpu::simd::math_ext_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::math_ext_hwy::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace math_ext_ops;  // NOLINT
using ::backplane::cpu::simd::HWY_NAMESPACE::NarrowBlock;
using ::backplane::cpu::simd::HWY_NAMESPACE::WidenBlock;

template <class T>
HWY_NOINLINE void TrigScalar(T* v, size_t lanes, bool cosine) {
  for (size_t k = 0; k < lanes; ++k) v[k] = cosine ? std::cos(v[k]) : std::sin(v[k]);
}

template <int kOp>
struct UnaryF {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    using T = hn::TFromD<D>;
    if constexpr (kOp == kSign) {  // numpy.sign: +1, -1, +0 for +-0, NaN for NaN
      const V zero = hn::Zero(d);
      return hn::IfThenElse(hn::Gt(x, zero), hn::Set(d, T(1)),
                            hn::IfThenElse(hn::Lt(x, zero), hn::Set(d, T(-1)),
                                           hn::IfThenElse(hn::Eq(x, zero), zero, x)));
    } else {
      if (HWY_UNLIKELY(!hn::AllTrue(d, hn::Le(hn::Abs(x), hn::Set(d, static_cast<T>(kTrigLimit)))))) {
        HWY_ALIGN T lanes[hn::MaxLanes(d)];
        hn::Store(x, d, lanes);
        TrigScalar(lanes, hn::Lanes(d), kOp == kCos);
        return hn::Load(d, lanes);
      }
      if constexpr (kOp == kCos) {
        return hn::Cos(d, x);
      } else {
        return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, hn::Sin(d, x));  // sin(-0) = -0 on every target
      }
    }
  }
};

// Full vectors, then the tail through a zeroed aligned buffer (Highway 1.0.3's MaskedLoad is an
// aligned full-vector load on SSSE3/SSE4: it faults on unaligned tails and reads past the end).
template <class D, class F>
HWY_INLINE void Map1(D d, const F& f, const hn::TFromD<D>* x, hn::TFromD<D>* y, size_t n) {
  using T = hn::TFromD<D>;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T buf[hn::MaxLanes(d)] = {};
    for (size_t k = 0; k < n - i; ++k) buf[k] = x[i + k];
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    for (size_t k = 0; k < n - i; ++k) y[i + k] = buf[k];
  }
}

template <class T>
void UnaryTyped(int op, const T* x, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  switch (op) {
    case kSin: return Map1(d, UnaryF<kSin>(), x, y, n);
    case kCos: return Map1(d, UnaryF<kCos>(), x, y, n);
    case kSign: return Map1(d, UnaryF<kSign>(), x, y, n);
  }
}

// y = x / root in f64 lanes, rounded once to T.
template <class T>
void ScaleTyped(const T* x, T* y, size_t n, double root) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;
  const size_t lanes = hn::Lanes(dd);
  const auto r = hn::Set(dd, root);
  size_t i = 0;
  // HWY_SCALAR's f64 -> f32 DemoteTo saturates +-Inf to +-FLT_MAX: that target uses the plain loop.
  for (; HWY_TARGET != HWY_SCALAR && i + lanes <= n; i += lanes) {
    if constexpr (sizeof(T) == 8) {
      hn::StoreU(hn::Div(hn::LoadU(dd, x + i), r), dd, y + i);
    } else {
      hn::StoreU(hn::DemoteTo(dt, hn::Div(hn::PromoteTo(dd, hn::LoadU(dt, x + i)), r)), dt, y + i);
    }
  }
  for (; i < n; ++i) y[i] = static_cast<T>(static_cast<double>(x[i]) / root);
}

void UnaryF32(int op, const float* x, float* y, size_t n) { UnaryTyped(op, x, y, n); }
void UnaryF64(int op, const double* x, double* y, size_t n) { UnaryTyped(op, x, y, n); }
void UnaryHalf(int op, const uint16_t* x, uint16_t* y, size_t n, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, m, bf16);
    UnaryTyped(op, f, f, m);
    NarrowBlock(f, y + i, m, bf16);
  }
}

void ScaleF32(const float* x, float* y, size_t n, double root) { ScaleTyped(x, y, n, root); }
void ScaleF64(const double* x, double* y, size_t n, double root) { ScaleTyped(x, y, n, root); }
// f16/bf16: double result rounded to f32, then to 16 bits (the reference's Store<double>).
void ScaleHalf(const uint16_t* x, uint16_t* y, size_t n, double root, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, m, bf16);
    ScaleTyped(f, f, m, root);
    NarrowBlock(f, y + i, m, bf16);
  }
}

}  // namespace backplane::cpu::simd::math_ext_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace math_ext_hwy {
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(UnaryHalf);
HWY_EXPORT(ScaleF32);
HWY_EXPORT(ScaleF64);
HWY_EXPORT(ScaleHalf);

namespace {

using namespace math_ext_ops;  // NOLINT

constexpr int64_t kGrain = 32768;
constexpr int64_t kParallelMin = 65536;

template <class Fn>
void Chunked(int64_t n, const Fn& fn) {
  if (n < kParallelMin) return fn(int64_t{0}, n);
  ParallelFor(n, kGrain, [&](int64_t b, int64_t e) { fn(b, e); });
}

bool ValidUnary(void* dst, const void* src, int64_t count, DType dtype) {
  const bool fp = dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
                  dtype == DType::BFloat16;
  return fp && count >= 0 && (count == 0 || (dst != nullptr && src != nullptr));
}

template <class T>
T* At(void* p, int64_t i) {
  return static_cast<T*>(p) + i;
}
template <class T>
const T* At(const void* p, int64_t i) {
  return static_cast<const T*>(p) + i;
}

template <int kOp>
void Unary(void* dst, const void* src, int64_t count, DType dtype, void (*fallback)(void*, const void*, int64_t, DType)) {
  if (!ValidUnary(dst, src, count, dtype)) return fallback(dst, src, count, dtype);
  Chunked(count, [&](int64_t b, int64_t e) {
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32: return HWY_DYNAMIC_DISPATCH(UnaryF32)(kOp, At<float>(src, b), At<float>(dst, b), n);
      case DType::Float64: return HWY_DYNAMIC_DISPATCH(UnaryF64)(kOp, At<double>(src, b), At<double>(dst, b), n);
      default:
        return HWY_DYNAMIC_DISPATCH(UnaryHalf)(kOp, At<uint16_t>(src, b), At<uint16_t>(dst, b), n,
                                               dtype == DType::BFloat16);
    }
  });
}

void InvSqrtDimScale(void* dst, const void* src, int64_t count, int64_t dim, DType dtype) {
  if (!ValidUnary(dst, src, count, dtype) || dim <= 0) {
    return Reference().MathExt_InvSqrtDimScale(dst, src, count, dim, dtype);
  }
  const double root = std::sqrt(static_cast<double>(dim));
  Chunked(count, [&](int64_t b, int64_t e) {
    const auto n = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float32: return HWY_DYNAMIC_DISPATCH(ScaleF32)(At<float>(src, b), At<float>(dst, b), n, root);
      case DType::Float64: return HWY_DYNAMIC_DISPATCH(ScaleF64)(At<double>(src, b), At<double>(dst, b), n, root);
      default:
        return HWY_DYNAMIC_DISPATCH(ScaleHalf)(At<uint16_t>(src, b), At<uint16_t>(dst, b), n, root,
                                               dtype == DType::BFloat16);
    }
  });
}

}  // namespace
}  // namespace math_ext_hwy

void RegisterMathExt(KernelTable& t) {
  using namespace math_ext_ops;  // NOLINT
  namespace k = math_ext_hwy;
  t.MathExt_Sin = [](void* d, const void* s, int64_t n, DType dt) { k::Unary<kSin>(d, s, n, dt, Reference().MathExt_Sin); };
  t.MathExt_Cos = [](void* d, const void* s, int64_t n, DType dt) { k::Unary<kCos>(d, s, n, dt, Reference().MathExt_Cos); };
  t.MathExt_Sign = [](void* d, const void* s, int64_t n, DType dt) {
    k::Unary<kSign>(d, s, n, dt, Reference().MathExt_Sign);
  };
  t.MathExt_InvSqrtDimScale = &k::InvSqrtDimScale;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
