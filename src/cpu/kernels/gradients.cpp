// Highway kernels for the Gradients surface: MSEGrad, MAEGrad, HuberGrad, BinaryCrossEntropyGrad,
// KLDivergenceGrad and CrossEntropyGrad.
//
// The elementwise gradients share MSEGrad's lanes and rounding: MAE sign(p - t), Huber
// clamp(p - t, -1, 1), BCE (p - t) / max(p (1 - p), float(1e-12)), KL -t / p (0 where t = 0), each times
// 1 / n where the reference divides by n (at most 1 ulp of f64 apart before rounding). BCE and KL
// scan their inputs first; an invalid entry sends the call to the reference, which throws.
//
// MSEGrad: grad = (p - t) * (2 / n) in f64 lanes for every storage format (f16/bf16 widened in
// f32 blocks), rounded to f32 and then, for f16/bf16, to nearest even, as the reference's store.
// It multiplies by 2/n where the reference divides: at most 1 ulp of f64 apart before rounding.
// CrossEntropyGrad: per row, the maximum and a NaN check in native lanes, exp(z - max) with
// Highway's Exp in f64 lanes (f64) or f32 lanes (f32, f16/bf16 widened), the sum accumulated in
// f64, then grad = e * (1 / (sum * B)) in the same lanes; the target entry is computed in f64
// as the reference does. f32 exponentials and the f32 scale keep each element within ~4 f32 ulp
// (< 3e-7 relative) of the f64 reference. Rows with a NaN, a non-finite maximum or fewer elements
// than a vector run the reference's f64 row formula. Rows are independent, so threads split them.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/gradients.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"
#include "cpu/kernels/cross_entropy-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_GRADIENTS_SHARED_
#define BACKPLANE_CPU_KERNELS_GRADIENTS_SHARED_
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::gradients_ops {

using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)

enum GradOp : int { kMSE, kMAE, kHuber, kBCE, kKL };

// The reference's row of CrossEntropyGrad in f64 (z and g may be the same buffer).
template <class T>
void GradRowScalar(const T* z, T* g, size_t n, int32_t target, double inv_batch) {
  double m = z[0];
  for (size_t c = 1; c < n; ++c) {
    const double v = z[c];
    if (std::isnan(v) || v > m) m = v;
  }
  std::vector<double> e(n);
  double sum = 0.0;
  for (size_t c = 0; c < n; ++c) {
    e[c] = std::exp(static_cast<double>(z[c]) - m);
    sum += e[c];
  }
  for (size_t c = 0; c < n; ++c) {
    const double onehot = c == static_cast<size_t>(target) ? 1.0 : 0.0;
    g[c] = static_cast<T>((e[c] / sum - onehot) * inv_batch);
  }
}

}  // namespace backplane::cpu::simd::gradients_ops
#endif  // BACKPLANE_CPU_KERNELS_GRADIENTS_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace gradients_ops;  // NOLINT

constexpr size_t kBlock = 1024;

// The f64 formula of grad kind `op` (kMSE..kKL) before the scale, as the reference's.
template <int op>
double GradScalar(double p, double t) {
  const double d = p - t;
  if constexpr (op == kMSE) return d;
  if constexpr (op == kMAE) return d > 0.0 ? 1.0 : d < 0.0 ? -1.0 : (std::isnan(d) ? d : 0.0);
  if constexpr (op == kHuber) return d > 1.0 ? 1.0 : d < -1.0 ? -1.0 : d;
  if constexpr (op == kBCE) return d / std::max((1.0 - p) * p, double{1e-12f});
  if constexpr (op == kKL) {
    if (std::isnan(p) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
    return t == 0.0 ? 0.0 : -t / p;
  }
  return d;
}

template <int op, class D, class V>
V GradLanes(D d, V p, V t) {
  const V diff = hn::Sub(p, t);
  if constexpr (op == kMSE) return diff;
  const V one = hn::Set(d, 1.0);
  if constexpr (op == kMAE) {
    const V zero_or_nan = hn::IfThenElse(hn::Eq(diff, diff), hn::Zero(d), diff);
    return hn::IfThenElse(hn::Gt(diff, hn::Zero(d)), one,
                          hn::IfThenElse(hn::Lt(diff, hn::Zero(d)), hn::Neg(one), zero_or_nan));
  }
  if constexpr (op == kHuber) {
    return hn::IfThenElse(hn::Gt(diff, one), one, hn::IfThenElse(hn::Lt(diff, hn::Neg(one)), hn::Neg(one), diff));
  }
  if constexpr (op == kBCE) return hn::Div(diff, hn::Max(hn::Mul(hn::Sub(one, p), p), hn::Set(d, double{1e-12f})));
  // kKL: 0 where t == 0 and p is not NaN; -t / p otherwise (NaN/Inf propagate).
  const V q = hn::Neg(hn::Div(t, p));
  return hn::IfThenElse(hn::And(hn::Eq(t, hn::Zero(d)), hn::Eq(p, p)), hn::Zero(d), q);
}

// out[i] = formula(p[i], t[i]) * scale in f64 lanes, stored as P (float or double).
template <int op, class P>
void GradTyped(const P* p, const P* t, P* out, size_t n, double scale) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<P, decltype(d)> dp;
  const size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, scale);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    if constexpr (sizeof(P) == 8) {
      hn::StoreU(hn::Mul(GradLanes<op>(d, hn::LoadU(d, p + i), hn::LoadU(d, t + i)), s), d, out + i);
    } else {
      const auto g = GradLanes<op>(d, hn::PromoteTo(d, hn::LoadU(dp, p + i)), hn::PromoteTo(d, hn::LoadU(dp, t + i)));
      hn::StoreU(DemoteF32(dp, hn::Mul(g, s)), dp, out + i);
    }
  }
  for (; i < n; ++i) {
    out[i] = static_cast<P>(GradScalar<op>(static_cast<double>(p[i]), static_cast<double>(t[i])) * scale);
  }
}

template <class P>
void GradDispatch(int op, const P* p, const P* t, P* out, size_t n, double scale) {
  switch (op) {
    case kMAE: return GradTyped<kMAE>(p, t, out, n, scale);
    case kHuber: return GradTyped<kHuber>(p, t, out, n, scale);
    case kBCE: return GradTyped<kBCE>(p, t, out, n, scale);
    case kKL: return GradTyped<kKL>(p, t, out, n, scale);
    default: return GradTyped<kMSE>(p, t, out, n, scale);
  }
}

// One row of CrossEntropyGrad; g may alias z.
template <class T>
void GradRow(const T* z, T* g, size_t n, int32_t target, double inv_batch) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  T m;
  if (n < lanes || !RowMax(z, n, &m) || !std::isfinite(m)) return GradRowScalar(z, g, n, target, inv_batch);
  const double md = m;
  const double zt = z[target];  // read before g (possibly z) is written
  const double sum = ExpSum<true>(z, g, n, m);
  const auto s = hn::Set(d, static_cast<T>(inv_batch / sum));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, g + i), s), d, g + i);
  for (; i < n; ++i) g[i] = g[i] * hn::GetLane(s);
  g[target] = static_cast<T>((std::exp(zt - md) / sum - 1.0) * inv_batch);
}

}  // namespace

void GradChunk(int op, int kind, const void* p, const void* t, void* out, size_t n, double scale) {
  if (kind == kF32) {
    return GradDispatch(op, static_cast<const float*>(p), static_cast<const float*>(t), static_cast<float*>(out), n,
                        scale);
  }
  if (kind == kF64) {
    return GradDispatch(op, static_cast<const double*>(p), static_cast<const double*>(t), static_cast<double*>(out), n,
                        scale);
  }
  HWY_ALIGN float fp[kBlock], ft[kBlock];
  const bool bf16 = kind == kBF16;
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    WidenBlock(static_cast<const uint16_t*>(p) + i, fp, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(t) + i, ft, m, bf16);
    GradDispatch(op, fp, ft, fp, m, scale);
    NarrowBlock(fp, static_cast<uint16_t*>(out) + i, m, bf16);
  }
}

void CrossEntropyGradRows(int kind, const void* logits, const int32_t* targets, void* grad, size_t rows,
                          size_t classes, double inv_batch) {
  std::vector<float> buf;
  for (size_t r = 0; r < rows; ++r) {
    const size_t at = r * classes;
    switch (kind) {
      case kF32:
        GradRow(static_cast<const float*>(logits) + at, static_cast<float*>(grad) + at, classes, targets[r], inv_batch);
        break;
      case kF64:
        GradRow(static_cast<const double*>(logits) + at, static_cast<double*>(grad) + at, classes, targets[r],
                inv_batch);
        break;
      default:
        buf.resize(classes);
        WidenBlock(static_cast<const uint16_t*>(logits) + at, buf.data(), classes, kind == kBF16);
        GradRow(buf.data(), buf.data(), classes, targets[r], inv_batch);
        NarrowBlock(buf.data(), static_cast<uint16_t*>(grad) + at, classes, kind == kBF16);
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(GradChunk);
HWY_EXPORT(CrossEntropyGradRows);

namespace {
using namespace gradients_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;

using GradFn = void (*)(const void*, const void*, void*, int64_t, DType);

// Widened value i of a float storage kind.
double ValueAt(int kind, const void* v, int64_t i) {
  switch (kind) {
    case kF32: return static_cast<const float*>(v)[i];
    case kF64: return static_cast<const double*>(v)[i];
    case kF16: return F16ToF32(static_cast<const uint16_t*>(v)[i]);
    default: return BF16ToF32(static_cast<const uint16_t*>(v)[i]);
  }
}

// Whether the reference accepts the values (BCE: p in [0, 1]; KL: p, t not negative).
bool ValidValues(int op, int kind, const void* p, const void* t, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const double pv = ValueAt(kind, p, i);
    if (op == kBCE && !(pv >= 0.0 && pv <= 1.0)) return false;
    if (op == kKL && (pv < 0.0 || ValueAt(kind, t, i) < 0.0)) return false;
  }
  return true;
}

void Grad(int op, GradFn reference, const void* p, const void* t, void* grad, int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count <= 0 || !p || !t || !grad) return reference(p, t, grad, count, dtype);
  if ((op == kBCE || op == kKL) && !ValidValues(op, kind, p, t, count)) return reference(p, t, grad, count, dtype);
  const double scale = (op == kMSE ? 2.0 : 1.0) / static_cast<double>(count);
  const size_t bytes = KindBytes(kind);
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(GradChunk)(op, kind, static_cast<const uint8_t*>(p) + b * bytes,
                                    static_cast<const uint8_t*>(t) + b * bytes, static_cast<uint8_t*>(grad) + b * bytes,
                                    static_cast<size_t>(e - b), scale);
  });
}

void MSEGrad(const void* p, const void* t, void* g, int64_t n, DType dt) {
  Grad(kMSE, Reference().Gradients_MSEGrad, p, t, g, n, dt);
}
void MAEGrad(const void* p, const void* t, void* g, int64_t n, DType dt) {
  Grad(kMAE, Reference().Gradients_MAEGrad, p, t, g, n, dt);
}
void HuberGrad(const void* p, const void* t, void* g, int64_t n, DType dt) {
  Grad(kHuber, Reference().Gradients_HuberGrad, p, t, g, n, dt);
}
void BinaryCrossEntropyGrad(const void* p, const void* t, void* g, int64_t n, DType dt) {
  Grad(kBCE, Reference().Gradients_BinaryCrossEntropyGrad, p, t, g, n, dt);
}
void KLDivergenceGrad(const void* p, const void* t, void* g, int64_t n, DType dt) {
  Grad(kKL, Reference().Gradients_KLDivergenceGrad, p, t, g, n, dt);
}

void CrossEntropyGrad(const void* logits, const int32_t* targets, void* grad, int64_t batch, int64_t classes,
                      DType dtype) {
  const int kind = KindOf(dtype);
  int64_t total = 0;
  auto fallback = [&] { Reference().Gradients_CrossEntropyGrad(logits, targets, grad, batch, classes, dtype); };
  if (kind < 0 || batch <= 0 || classes <= 0 || __builtin_mul_overflow(batch, classes, &total) || !logits ||
      !targets || !grad) {
    return fallback();
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (targets[b] < 0 || targets[b] >= classes) return fallback();
  }
  const double inv_batch = 1.0 / static_cast<double>(batch);
  const int64_t grain = std::max<int64_t>(1, kChunk / classes);
  const size_t bytes = KindBytes(kind);
  ParallelFor(batch, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(CrossEntropyGradRows)(kind, static_cast<const uint8_t*>(logits) + b * classes * bytes,
                                               targets + b, static_cast<uint8_t*>(grad) + b * classes * bytes,
                                               static_cast<size_t>(e - b), static_cast<size_t>(classes), inv_batch);
  });
}

}  // namespace

void RegisterGradients(KernelTable& t) {
  t.Gradients_MSEGrad = &MSEGrad;
  t.Gradients_MAEGrad = &MAEGrad;
  t.Gradients_HuberGrad = &HuberGrad;
  t.Gradients_BinaryCrossEntropyGrad = &BinaryCrossEntropyGrad;
  t.Gradients_KLDivergenceGrad = &KLDivergenceGrad;
  t.Gradients_CrossEntropyGrad = &CrossEntropyGrad;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
