// Highway kernels for the MathExt surface (docs/semantics/math_ext.md), every method: Sin, Cos,
// Sign, InvSqrtDimScale, Outer and LogSumExp. f32 and f64 run in native lanes; f16/bf16 are
// widened to f32 in blocks and rounded back to nearest even, as the reference does.
//
// Sin/Cos use Highway's contrib/math (3 ULP on [-39000, 39000]); a vector holding a larger
// argument, +-Inf or NaN is computed with std::sin/std::cos lane by lane, so those lanes are exactly
// libm's. InvSqrtDimScale is evaluated in f64 lanes for every format (x / sqrt(dim), one division),
// bit-identical to the reference.
//
// Outer: rows of left[i] * right (f32 lanes for f32/f16/bf16, where the product of two 16-bit
// values is exact; f64 lanes), bit-identical to the reference; rows in parallel for large outputs.
// LogSumExp: per row the maximum (and a NaN flag), then sum exp(x - m) accumulated in f64 lanes
// and m + ln(sum) in f64, rows in parallel. f64 storage uses f64 Exp. f32/f16/bf16 use f32 Exp
// (1 ULP) with f64 accumulation. Bound: each term exp(d), d = x - m <= 0, has relative error
// <= 2^-24 |d| (rounding x - m in f32) + 2^-23 (Exp). The sum's relative error is the exp(d)-
// weighted mean of these; with S >= 1 (the maximum's term) and n e^-L L <= 1 for L = 2 ln n, the
// weighted mean of |d| is <= 2 ln n + 1, so |error of ln(sum)| <= 2^-24 (2 ln n + 3): 2.2e-6 at
// n = 2^24, within the f32 bound's absolute 1e-5 for n < 1e35. m + ln(sum) and the final rounding
// are the reference's.
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
#include <limits>

#include <hwy/aligned_allocator.h>
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
  for (; i + lanes <= n; i += lanes) {
    if constexpr (sizeof(T) == 8) {
      hn::StoreU(hn::Div(hn::LoadU(dd, x + i), r), dd, y + i);
    } else {
      hn::StoreU(simd::HWY_NAMESPACE::DemoteF32(dt, hn::Div(hn::PromoteTo(dd, hn::LoadU(dt, x + i)), r)), dt, y + i);
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

// ---- Outer: out[i, :] = left[i] * right, rows [r0, r1) --------------------------------------

template <class T>
void OuterRowsTyped(const T* left, const T* right, T* out, size_t r0, size_t r1, size_t cols) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t r = r0; r < r1; ++r) {
    const T a = left[r];
    const auto av = hn::Set(d, a);
    T* o = out + r * cols;
    size_t j = 0;
    for (; j + 2 * lanes <= cols; j += 2 * lanes) {
      hn::StoreU(hn::Mul(av, hn::LoadU(d, right + j)), d, o + j);
      hn::StoreU(hn::Mul(av, hn::LoadU(d, right + j + lanes)), d, o + j + lanes);
    }
    for (; j + lanes <= cols; j += lanes)
      hn::StoreU(hn::Mul(av, hn::LoadU(d, right + j)), d, o + j);
    for (; j < cols; ++j) o[j] = a * right[j];
  }
}

void OuterF32(const float* l, const float* r, float* out, size_t r0, size_t r1, size_t cols) {
  OuterRowsTyped(l, r, out, r0, r1, cols);
}
void OuterF64(const double* l, const double* r, double* out, size_t r0, size_t r1, size_t cols) {
  OuterRowsTyped(l, r, out, r0, r1, cols);
}
// lf, rf: the operands widened to f32; rows computed in f32 blocks and narrowed.
void OuterHalf(const float* lf, const float* rf, uint16_t* out, size_t r0, size_t r1, size_t cols,
               bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t r = r0; r < r1; ++r) {
    for (size_t j = 0; j < cols; j += kBlock) {
      const size_t m = cols - j < kBlock ? cols - j : kBlock;
      OuterRowsTyped(lf + r, rf + j, f, 0, 1, m);
      NarrowBlock(f, out + r * cols + j, m, bf16);
    }
  }
}

// ---- LogSumExp ---------------------------------------------------------------------------------

// The row's maximum and whether it holds a NaN.
template <class T>
T RowMax(const T* x, size_t n, bool& nan) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  auto m = hn::Set(d, -std::numeric_limits<T>::infinity());
  auto bad = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    m = hn::Max(m, v);
    bad = hn::Or(bad, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  T best = hn::GetLane(hn::MaxOfLanes(d, m));
  nan = !hn::AllFalse(d, hn::MaskFromVec(bad));
  for (; i < n; ++i) {
    if (std::isnan(x[i])) nan = true;
    if (x[i] > best) best = x[i];
  }
  return best;
}

// sum_j exp(x_j - m) for a finite m, accumulated in f64 (see the header for the f32 bound).
template <class T>
double RowSumExp(const T* x, size_t n, T m) {
  const hn::ScalableTag<T> d;
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(d);
  const auto mv = hn::Set(d, m);
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), mv));
    if constexpr (sizeof(T) == 8) {
      acc0 = hn::Add(acc0, e);
    } else {
#if HWY_TARGET == HWY_SCALAR
      acc0 = hn::Add(acc0, hn::PromoteTo(dd, e));
#else
      const hn::Half<decltype(d)> dh;
      acc0 = hn::Add(acc0, hn::PromoteTo(dd, hn::LowerHalf(dh, e)));
      acc1 = hn::Add(acc1, hn::PromoteTo(dd, hn::UpperHalf(dh, e)));
#endif
    }
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
  for (; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - static_cast<double>(m));
  return sum;
}

template <class T>
double RowLogSumExp(const T* x, size_t n) {
  bool nan = false;
  const T m = n == 0 ? -std::numeric_limits<T>::infinity() : RowMax(x, n, nan);
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  if (!std::isfinite(m))
    return static_cast<double>(m);  // empty or all -Inf: -Inf; +Inf maximum: +Inf
  return static_cast<double>(m) + std::log(RowSumExp(x, n, m));
}

// dst[r] for rows [r0, r1) of src[rows x cols], rounded as the reference's Store<double>.
void LogSumExpF32(const float* src, float* dst, size_t r0, size_t r1, size_t cols) {
  for (size_t r = r0; r < r1; ++r) dst[r] = static_cast<float>(RowLogSumExp(src + r * cols, cols));
}
void LogSumExpF64(const double* src, double* dst, size_t r0, size_t r1, size_t cols) {
  for (size_t r = r0; r < r1; ++r) dst[r] = RowLogSumExp(src + r * cols, cols);
}
void LogSumExpHalf(const uint16_t* src, uint16_t* dst, size_t r0, size_t r1, size_t cols,
                   bool bf16) {
  auto row = hwy::AllocateAligned<float>(cols > 0 ? cols : 1);
  for (size_t r = r0; r < r1; ++r) {
    for (size_t j = 0; j < cols; j += kBlock) {
      WidenBlock(src + r * cols + j, row.get() + j, cols - j < kBlock ? cols - j : kBlock, bf16);
    }
    const float v = static_cast<float>(RowLogSumExp(row.get(), cols));
    NarrowBlock(&v, dst + r, 1, bf16);
  }
}

}  // namespace backplane::cpu::simd::math_ext_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/storage.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace math_ext_hwy {
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(UnaryHalf);
HWY_EXPORT(ScaleF32);
HWY_EXPORT(ScaleF64);
HWY_EXPORT(ScaleHalf);
HWY_EXPORT(OuterF32);
HWY_EXPORT(OuterF64);
HWY_EXPORT(OuterHalf);
HWY_EXPORT(LogSumExpF32);
HWY_EXPORT(LogSumExpF64);
HWY_EXPORT(LogSumExpHalf);

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

bool FloatDType(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
         dtype == DType::BFloat16;
}

bool Overlap(const void* a, size_t abytes, const void* b, size_t bbytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && x < y + bbytes && y < x + abytes;
}

// Rows in blocks of about kGrain elements; parallel from kParallelMin elements.
template <class Fn>
void Rows(int64_t rows, int64_t cols, const Fn& fn) {
  int64_t total = 0;
  if (__builtin_mul_overflow(rows, cols > 0 ? cols : 1, &total) || total >= kParallelMin) {
    ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)), fn);
  } else {
    fn(int64_t{0}, rows);
  }
}

void Outer(const void* left, const void* right, void* out, int64_t rows, int64_t cols,
           DType dtype) {
  int64_t total = 0;
  if (!FloatDType(dtype) || rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &total) ||
      (rows > 0 && !left) || (cols > 0 && !right) || (total > 0 && !out)) {
    return Reference().MathExt_Outer(left, right, out, rows, cols, dtype);
  }
  if (total == 0) return;
  const size_t elem = DTypeStorageBytes(dtype, 1), out_bytes = static_cast<size_t>(total) * elem;
  // The reference reads the operands while writing: an output overlapping them keeps its order.
  if (Overlap(out, out_bytes, left, static_cast<size_t>(rows) * elem) ||
      Overlap(out, out_bytes, right, static_cast<size_t>(cols) * elem)) {
    return Reference().MathExt_Outer(left, right, out, rows, cols, dtype);
  }
  const auto n = static_cast<size_t>(cols);
  if (dtype == DType::Float32 || dtype == DType::Float64) {
    Rows(rows, cols, [&](int64_t r0, int64_t r1) {
      if (dtype == DType::Float32) {
        HWY_DYNAMIC_DISPATCH(OuterF32)
        (static_cast<const float*>(left), static_cast<const float*>(right),
         static_cast<float*>(out), static_cast<size_t>(r0), static_cast<size_t>(r1), n);
      } else {
        HWY_DYNAMIC_DISPATCH(OuterF64)
        (static_cast<const double*>(left), static_cast<const double*>(right),
         static_cast<double*>(out), static_cast<size_t>(r0), static_cast<size_t>(r1), n);
      }
    });
    return;
  }
  const bool bf16 = dtype == DType::BFloat16;
  const std::vector<float> lf = WidenAll(left, rows, bf16), rf = WidenAll(right, cols, bf16);
  Rows(rows, cols, [&](int64_t r0, int64_t r1) {
    HWY_DYNAMIC_DISPATCH(OuterHalf)
    (lf.data(), rf.data(), static_cast<uint16_t*>(out), static_cast<size_t>(r0),
     static_cast<size_t>(r1), n, bf16);
  });
}

void LogSumExp(const void* src, void* dst, int64_t rows, int64_t cols, DType dtype) {
  int64_t total = 0;
  if (!FloatDType(dtype) || rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &total) ||
      (total > 0 && !src) || (rows > 0 && !dst)) {
    return Reference().MathExt_LogSumExp(src, dst, rows, cols, dtype);
  }
  if (rows == 0) return;
  const size_t elem = DTypeStorageBytes(dtype, 1);
  // The reference writes dst[r] after reading row r: an overlapping dst keeps its order.
  if (Overlap(dst, static_cast<size_t>(rows) * elem, src, static_cast<size_t>(total) * elem)) {
    return Reference().MathExt_LogSumExp(src, dst, rows, cols, dtype);
  }
  const auto n = static_cast<size_t>(cols);
  Rows(rows, cols, [&](int64_t r0, int64_t r1) {
    const auto b = static_cast<size_t>(r0), e = static_cast<size_t>(r1);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(LogSumExpF32)(static_cast<const float*>(src),
                                                  static_cast<float*>(dst), b, e, n);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(LogSumExpF64)(static_cast<const double*>(src),
                                                  static_cast<double*>(dst), b, e, n);
      default:
        return HWY_DYNAMIC_DISPATCH(LogSumExpHalf)(static_cast<const uint16_t*>(src),
                                                   static_cast<uint16_t*>(dst), b, e, n,
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
  t.MathExt_Outer = &k::Outer;
  t.MathExt_LogSumExp = &k::LogSumExp;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
