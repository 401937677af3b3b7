// Highway kernels for the Losses surface: all six methods.
//
// MSE, MAE, Huber, BinaryCrossEntropy, KLDivergence: every element is widened to f64 lanes
// (f16/bf16 through f32 blocks) and each term is evaluated in f64 as the reference does; only the
// summation order differs (lanes, then fixed 64K-element chunks combined in chunk order), so the
// result does not depend on the thread count. The log losses use Highway's f64 Log on ordinary
// lanes (BCE takes log1p(-p) as Log(1 - p): <= 1.2e-16 absolute apart); a vector holding a lane the formula treats specially (0, 1, Inf, NaN) is
// evaluated with the reference's scalar formula. Invalid data (BCE p outside [0, 1], KL negative
// entries) is detected in the same pass, and the reference is then called to throw its error.
// CrossEntropy: per-row max and NaN check in native lanes, then sum exp(z - max) with Highway's
// Exp in f64 lanes for f64 logits and in f32 lanes for f32/f16/bf16 logits, 16 exponentials per
// f32 lane summed before the f64 accumulation. Error on each row's log-sum-exp: f32 z - max
// (2^-24 |d|, i.e. <= 6e-8 * log(classes) weighted), Exp (~2 ulp) and the f32 partial sums
// (< 9e-7): below 2e-6 absolute, inside the f32 bound 1e-5 + 1.3e-6 |loss| of the f32 result. Rows with NaN, +-Inf maximum or fewer elements than a
// vector use the reference's f64 row formula. Row losses are summed in row order, as the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/losses.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"
#include "cpu/kernels/cross_entropy-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_LOSSES_SHARED_
#define BACKPLANE_CPU_KERNELS_LOSSES_SHARED_
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::losses_ops {

enum LossOp : int { kMSE, kMAE, kHuber, kBCE, kKL };
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)

// The reference's term of each loss, in f64.
inline double TermScalar(int op, double p, double t) {
  switch (op) {
    case kMSE: return (p - t) * (p - t);
    case kMAE: return std::fabs(p - t);
    case kHuber: {
      const double z = std::fabs(p - t);
      return z < 1.0 ? 0.5 * z * z : 1.0 * (z - 0.5);
    }
    case kBCE: {
      const double log_p = std::max(std::log(p), -100.0);
      const double log_1mp = std::max(std::log1p(-p), -100.0);
      return -(t * log_p + (1.0 - t) * log_1mp);
    }
    default:
      if (std::isnan(p) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
      if (t == 0.0) return 0.0;
      return t * (std::log(t) - std::log(p));
  }
}

// Data the reference rejects (it then throws; the fast kernel defers to it).
inline bool InvalidScalar(int op, double p, double t) {
  if (op == kBCE) return !(p >= 0.0 && p <= 1.0);
  if (op == kKL) return p < 0.0 || t < 0.0;
  return false;
}

// The reference's row of CrossEntropy: logsumexp(z) - z[target] in f64.
template <class T>
double RowLossScalar(const T* z, size_t n, int32_t target) {
  double m = z[0];
  for (size_t c = 1; c < n; ++c) {
    const double v = z[c];
    if (std::isnan(v) || v > m) m = v;
  }
  double sum = 0.0;
  for (size_t c = 0; c < n; ++c) sum += std::exp(static_cast<double>(z[c]) - m);
  return m + std::log(sum) - static_cast<double>(z[target]);
}

}  // namespace backplane::cpu::simd::losses_ops
#endif  // BACKPLANE_CPU_KERNELS_LOSSES_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace losses_ops;  // NOLINT

constexpr size_t kBlock = 1024;

// Sum over n elements of term(p_i, t_i) in f64 lanes (P = float or double storage); sets
// *invalid when some element is data the reference rejects.
template <int kOp, class P>
double SumTerms(const P* p, const P* t, size_t n, bool* invalid) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<P, decltype(d)> dp;
  const size_t lanes = hn::Lanes(d);
  const auto zero = hn::Zero(d), one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
  const auto inf = hn::Set(d, std::numeric_limits<double>::infinity());
  auto load = [&](const P* base, size_t i) {
    if constexpr (sizeof(P) == 8) {
      return hn::LoadU(d, base + i);
    } else {
      return hn::PromoteTo(d, hn::LoadU(dp, base + i));
    }
  };
  auto bad = zero;  // lanes with invalid data (all ones)
  // One vector of terms. Lanes the vector formula does not cover make the whole vector use the
  // scalar formula (rare: zeros, ones, infinities, NaN).
  auto term = [&](size_t i) {
    const auto vp = load(p, i), vt = load(t, i);
    if constexpr (kOp == kMSE) {
      const auto diff = hn::Sub(vp, vt);
      return hn::Mul(diff, diff);
    } else if constexpr (kOp == kMAE) {
      return hn::Abs(hn::Sub(vp, vt));
    } else if constexpr (kOp == kHuber) {
      const auto z = hn::Abs(hn::Sub(vp, vt));
      return hn::IfThenElse(hn::Lt(z, one), hn::Mul(hn::Mul(half, z), z), hn::Sub(z, half));
    } else {
      hn::Vec<decltype(d)> v;
      hn::Mask<decltype(d)> ordinary;
      if constexpr (kOp == kBCE) {
        bad = hn::Or(bad, hn::VecFromMask(d, hn::Not(hn::And(hn::Ge(vp, zero), hn::Le(vp, one)))));
        // p in (0, 1) and t finite: both logs finite and negative.
        ordinary = hn::And(hn::And(hn::Gt(vp, zero), hn::Lt(vp, one)), hn::Lt(hn::Abs(vt), inf));
        const auto floor = hn::Set(d, -100.0);
        const auto log_p = hn::Max(hn::Log(d, vp), floor);
        // log(1 - p) for log1p(-p): 1 - p is exact for p >= 1/2 and within eps/2 relative below,
        // so the log is off by <= 1.2e-16 absolute (one division fewer than Log1p).
        const auto log_1mp = hn::Max(hn::Log(d, hn::Sub(one, vp)), floor);
        v = hn::Neg(hn::Add(hn::Mul(vt, log_p), hn::Mul(hn::Sub(one, vt), log_1mp)));
      } else {
        bad = hn::Or(bad, hn::VecFromMask(d, hn::Or(hn::Lt(vp, zero), hn::Lt(vt, zero))));
        // t = 0 with p not NaN contributes 0; else p, t positive and finite.
        const auto t_zero = hn::Eq(vt, zero);
        ordinary = hn::Or(hn::And(t_zero, hn::Ge(vp, zero)),
                          hn::And(hn::And(hn::Gt(vp, zero), hn::Lt(vp, inf)), hn::And(hn::Gt(vt, zero), hn::Lt(vt, inf))));
        v = hn::IfThenZeroElse(t_zero, hn::Mul(vt, hn::Sub(hn::Log(d, vt), hn::Log(d, vp))));
      }
      if (!hn::AllTrue(d, ordinary)) {
        HWY_ALIGN double bp[hn::MaxLanes(d)], bt[hn::MaxLanes(d)];
        hn::Store(vp, d, bp);
        hn::Store(vt, d, bt);
        for (size_t k = 0; k < lanes; ++k) bp[k] = TermScalar(kOp, bp[k], bt[k]);
        v = hn::Load(d, bp);
      }
      return v;
    }
  };
  auto a0 = zero, a1 = zero;
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    a0 = hn::Add(a0, term(i));
    a1 = hn::Add(a1, term(i + lanes));
  }
  for (; i + lanes <= n; i += lanes) a0 = hn::Add(a0, term(i));
  double total = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  bool any_bad = !hn::AllFalse(d, hn::MaskFromVec(bad));
  for (; i < n; ++i) {
    const double vp = p[i], vt = t[i];
    any_bad = any_bad || InvalidScalar(kOp, vp, vt);
    total += TermScalar(kOp, vp, vt);
  }
  if (any_bad) *invalid = true;
  return total;
}

template <int kOp>
double ChunkTyped(int kind, const void* p, const void* t, size_t n, bool* invalid) {
  if (kind == kF32) return SumTerms<kOp>(static_cast<const float*>(p), static_cast<const float*>(t), n, invalid);
  if (kind == kF64) return SumTerms<kOp>(static_cast<const double*>(p), static_cast<const double*>(t), n, invalid);
  HWY_ALIGN float fp[kBlock], ft[kBlock];
  const auto* hp = static_cast<const uint16_t*>(p);
  const auto* ht = static_cast<const uint16_t*>(t);
  double total = 0.0;
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    WidenBlock(hp + i, fp, m, kind == kBF16);
    WidenBlock(ht + i, ft, m, kind == kBF16);
    total += SumTerms<kOp>(fp, ft, m, invalid);
  }
  return total;
}

// ---- CrossEntropy ------------------------------------------------------------------------------

template <class T>
double RowLoss(const T* z, size_t n, int32_t target) {
  const hn::ScalableTag<T> d;
  T m;
  if (n < hn::Lanes(d) || !RowMax(z, n, &m) || !std::isfinite(m)) return RowLossScalar(z, n, target);
  const double md = m;
  return md + std::log(ExpSum<false>(z, static_cast<T*>(nullptr), n, m)) - static_cast<double>(z[target]);
}

}  // namespace

double LossChunk(int op, int kind, const void* p, const void* t, size_t n, bool* invalid) {
  switch (op) {
    case kMSE: return ChunkTyped<kMSE>(kind, p, t, n, invalid);
    case kMAE: return ChunkTyped<kMAE>(kind, p, t, n, invalid);
    case kHuber: return ChunkTyped<kHuber>(kind, p, t, n, invalid);
    case kBCE: return ChunkTyped<kBCE>(kind, p, t, n, invalid);
    default: return ChunkTyped<kKL>(kind, p, t, n, invalid);
  }
}

// Row losses of rows [0, rows) of a [rows, classes] block (targets already validated).
void CrossEntropyRows(int kind, const void* logits, const int32_t* targets, size_t rows, size_t classes,
                      double* out) {
  std::vector<float> buf;
  for (size_t r = 0; r < rows; ++r) {
    switch (kind) {
      case kF32: out[r] = RowLoss(static_cast<const float*>(logits) + r * classes, classes, targets[r]); break;
      case kF64: out[r] = RowLoss(static_cast<const double*>(logits) + r * classes, classes, targets[r]); break;
      default:
        buf.resize(classes);
        WidenBlock(static_cast<const uint16_t*>(logits) + r * classes, buf.data(), classes, kind == kBF16);
        out[r] = RowLoss(buf.data(), classes, targets[r]);
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(LossChunk);
HWY_EXPORT(CrossEntropyRows);

namespace {
using namespace losses_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;  // fixed chunk boundaries: thread-count independent

double Finish(double value, DType dtype) {
  return dtype == DType::Float64 ? value : static_cast<double>(static_cast<float>(value));
}

template <int kOp>
double Loss(const void* p, const void* t, int64_t count, DType dtype,
            double (*fallback)(const void*, const void*, int64_t, DType)) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count <= 0 || p == nullptr || t == nullptr) return fallback(p, t, count, dtype);
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<double> parts(static_cast<size_t>(chunks));
  std::vector<char> bad(static_cast<size_t>(chunks), 0);
  const size_t bytes = KindBytes(kind);
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    bool invalid = false;
    const auto c = static_cast<size_t>(b / kChunk);
    parts[c] = HWY_DYNAMIC_DISPATCH(LossChunk)(kOp, kind, static_cast<const uint8_t*>(p) + b * bytes,
                                               static_cast<const uint8_t*>(t) + b * bytes,
                                               static_cast<size_t>(e - b), &invalid);
    bad[c] = invalid;
  });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) {
    if (bad[static_cast<size_t>(c)]) return fallback(p, t, count, dtype);  // throws the reference's error
    total += parts[static_cast<size_t>(c)];
  }
  return Finish(total / static_cast<double>(count), dtype);
}

double CrossEntropy(const void* logits, const int32_t* targets, int64_t batch, int64_t classes, DType dtype) {
  const int kind = KindOf(dtype);
  int64_t total = 0;
  if (kind < 0 || batch <= 0 || classes <= 0 || __builtin_mul_overflow(batch, classes, &total) ||
      logits == nullptr || targets == nullptr) {
    return Reference().Losses_CrossEntropy(logits, targets, batch, classes, dtype);
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (targets[b] < 0 || targets[b] >= classes) {
      return Reference().Losses_CrossEntropy(logits, targets, batch, classes, dtype);
    }
  }
  std::vector<double> rows(static_cast<size_t>(batch));
  const int64_t grain = std::max<int64_t>(1, kChunk / classes);
  const size_t bytes = KindBytes(kind);
  ParallelFor(batch, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(CrossEntropyRows)(kind, static_cast<const uint8_t*>(logits) + b * classes * bytes,
                                           targets + b, static_cast<size_t>(e - b), static_cast<size_t>(classes),
                                           rows.data() + b);
  });
  double sum = 0.0;
  for (const double v : rows) sum += v;  // row order, as the reference
  return Finish(sum / static_cast<double>(batch), dtype);
}

}  // namespace

void RegisterLosses(KernelTable& t) {
  t.Losses_MSE = [](const void* p, const void* q, int64_t n, DType dt) {
    return Loss<kMSE>(p, q, n, dt, Reference().Losses_MSE);
  };
  t.Losses_MAE = [](const void* p, const void* q, int64_t n, DType dt) {
    return Loss<kMAE>(p, q, n, dt, Reference().Losses_MAE);
  };
  t.Losses_Huber = [](const void* p, const void* q, int64_t n, DType dt) {
    return Loss<kHuber>(p, q, n, dt, Reference().Losses_Huber);
  };
  t.Losses_BinaryCrossEntropy = [](const void* p, const void* q, int64_t n, DType dt) {
    return Loss<kBCE>(p, q, n, dt, Reference().Losses_BinaryCrossEntropy);
  };
  t.Losses_KLDivergence = [](const void* p, const void* q, int64_t n, DType dt) {
    return Loss<kKL>(p, q, n, dt, Reference().Losses_KLDivergence);
  };
  t.Losses_CrossEntropy = &CrossEntropy;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
