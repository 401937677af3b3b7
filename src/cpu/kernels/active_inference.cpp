// Highway kernels for the ActiveInference surface (docs/semantics/active_inference.md). Every
// method is accelerated; all of them validate their inputs (finite and >= 0) in the same pass as
// the arithmetic or before writing, and hand any invalid call to the reference, which throws.
// - FreeEnergy, ExpectedFreeEnergy: sums of q ln v in f64 lanes (Highway Log, 4 ULP) over fixed
//   64K-element chunks combined in chunk order. For f32/f16/bf16 storage FreeEnergy takes one log
//   per term, ln(q / (p L)): p L is exact in f64 and the quotient is rounded once, which is more
//   accurate than the reference's three logs where they cancel. f64 storage takes three logs.
// - BeliefUpdate: two passes in f64 lanes (evidence, then L p / evidence with a true division).
//   For f32/f16/bf16, L p is exact and normal in f64, so the reference's mantissa/exponent scaling
//   is exact and omitted; the result is bit-identical up to the evidence's summation order. f64
//   inputs with a nonzero value outside [2^-500, 2^500] go to the reference (it rescales).
// - PrecisionWeight: a validation pass over the precisions, then the product in the compute
//   type (f32 / f64 lanes; f16/bf16 widened in blocks, rounded to nearest even).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/active_inference.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_ACTIVE_INFERENCE_OPS_
#define BACKPLANE_CPU_KERNELS_ACTIVE_INFERENCE_OPS_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::active_inference_ops {
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)
constexpr size_t kBlock = 1024;
// One chunk's partial sum; bad: an entry that is negative or not finite, or (f64) outside the
// range where the fast BeliefUpdate is exact.
struct Part {
  double sum = 0.0;
  bool bad = false;
};
constexpr double kMinF64 = 0x1p-500, kMaxF64 = 0x1p500;
}  // namespace backplane::cpu::simd::active_inference_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::active_inference_hwy::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace active_inference_ops;  // NOLINT
using ::backplane::cpu::simd::HWY_NAMESPACE::NarrowBlock;
using ::backplane::cpu::simd::HWY_NAMESPACE::WidenBlock;

using DD = hn::ScalableTag<double>;

template <class T>
HWY_INLINE hn::Vec<DD> LoadD(DD dd, const T* p) {
  if constexpr (sizeof(T) == 8) {
    return hn::LoadU(dd, p);
  } else {
    return hn::PromoteTo(dd, hn::LoadU(hn::Rebind<T, DD>(), p));
  }
}

// Lanes that are finite and >= 0 (NaN fails both comparisons).
HWY_INLINE hn::Mask<DD> Valid(DD dd, hn::Vec<DD> x) {
  return hn::And(hn::Ge(x, hn::Zero(dd)),
                 hn::Le(x, hn::Set(dd, std::numeric_limits<double>::max())));
}

// Scalar tail: a buffer of one vector, padded with the given value.
template <class T>
HWY_INLINE void Pad(T* buf, const T* src, size_t n, size_t lanes, T fill) {
  for (size_t k = 0; k < lanes; ++k) buf[k] = k < n ? src[k] : fill;
}

// Lanes that are not (finite and >= 0); f64 storage for BeliefUpdate also flags nonzero values
// outside [2^-500, 2^500].
template <bool kRange = false>
HWY_INLINE hn::Mask<DD> Invalid(DD dd, hn::Vec<DD> x) {
  auto ok = Valid(dd, x);
  if constexpr (kRange) {
    const auto in = hn::And(hn::Ge(x, hn::Set(dd, kMinF64)), hn::Le(x, hn::Set(dd, kMaxF64)));
    ok = hn::And(ok, hn::Or(hn::Eq(x, hn::Zero(dd)), in));
  }
  return hn::Not(ok);
}

// q (ln q - ln p - ln L) where q > 0 (else 0); +Inf where p or L is 0. One log of q / (p L) for
// values widened from f32 (exact product, one rounding), three logs for f64.
template <bool kThreeLogs>
HWY_INLINE hn::Vec<DD> FreeTerm(DD dd, hn::Vec<DD> lv, hn::Vec<DD> qv, hn::Vec<DD> pv) {
  const auto zero = hn::Zero(dd);
  hn::Vec<DD> logs;
  if constexpr (kThreeLogs) {
    logs = hn::Sub(hn::Sub(hn::Log(dd, qv), hn::Log(dd, pv)), hn::Log(dd, lv));
  } else {
    logs = hn::Log(dd, hn::Div(qv, hn::Mul(pv, lv)));
  }
  const auto inf = hn::Set(dd, std::numeric_limits<double>::infinity());
  const auto term =
      hn::IfThenElse(hn::Or(hn::Eq(pv, zero), hn::Eq(lv, zero)), inf, hn::Mul(qv, logs));
  return hn::IfThenElseZero(hn::Gt(qv, zero), term);
}

// w ln v where w > 0 (else 0); -Inf where v is 0.
HWY_INLINE hn::Vec<DD> WeightedLogTerm(DD dd, hn::Vec<DD> wv, hn::Vec<DD> vv) {
  const auto zero = hn::Zero(dd);
  const auto term =
      hn::IfThenElse(hn::Eq(vv, zero), hn::Set(dd, -std::numeric_limits<double>::infinity()),
                     hn::Mul(wv, hn::Log(dd, vv)));
  return hn::IfThenElseZero(hn::Gt(wv, zero), term);
}

// sum over q > 0 of q (ln q - ln p - ln L). The tail is padded with q = p = L = 1 (term 0).
template <class T>
void FreeEnergyTyped(const T* l, const T* q, const T* p, size_t n, Part& part) {
  const DD dd;
  const size_t lanes = hn::Lanes(dd);
  constexpr bool kThree = sizeof(T) == 8;
  auto acc = hn::Zero(dd);
  auto bad = hn::FirstN(dd, 0);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto lv = LoadD(dd, l + i), qv = LoadD(dd, q + i), pv = LoadD(dd, p + i);
    bad = hn::Or(bad, hn::Or(Invalid(dd, lv), hn::Or(Invalid(dd, qv), Invalid(dd, pv))));
    acc = hn::Add(acc, FreeTerm<kThree>(dd, lv, qv, pv));
  }
  if (i < n) {
    HWY_ALIGN T bl[hn::MaxLanes(dd)], bq[hn::MaxLanes(dd)], bp[hn::MaxLanes(dd)];
    Pad(bl, l + i, n - i, lanes, T(1));
    Pad(bq, q + i, n - i, lanes, T(1));
    Pad(bp, p + i, n - i, lanes, T(1));
    const auto lv = LoadD(dd, bl), qv = LoadD(dd, bq), pv = LoadD(dd, bp);
    bad = hn::Or(bad, hn::Or(Invalid(dd, lv), hn::Or(Invalid(dd, qv), Invalid(dd, pv))));
    acc = hn::Add(acc, FreeTerm<kThree>(dd, lv, qv, pv));
  }
  part.sum += hn::GetLane(hn::SumOfLanes(dd, acc));
  part.bad = part.bad || !hn::AllFalse(dd, bad);
}

// sum over w > 0 of w ln v. The tail is padded with w = 0, v = 1.
template <class T>
void WeightedLogTyped(const T* w, const T* v, size_t n, Part& part) {
  const DD dd;
  const size_t lanes = hn::Lanes(dd);
  auto acc = hn::Zero(dd);
  auto bad = hn::FirstN(dd, 0);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto wv = LoadD(dd, w + i), vv = LoadD(dd, v + i);
    bad = hn::Or(bad, hn::Or(Invalid(dd, wv), Invalid(dd, vv)));
    acc = hn::Add(acc, WeightedLogTerm(dd, wv, vv));
  }
  if (i < n) {
    HWY_ALIGN T bw[hn::MaxLanes(dd)], bv[hn::MaxLanes(dd)];
    Pad(bw, w + i, n - i, lanes, T(0));
    Pad(bv, v + i, n - i, lanes, T(1));
    const auto wv = LoadD(dd, bw), vv = LoadD(dd, bv);
    bad = hn::Or(bad, hn::Or(Invalid(dd, wv), Invalid(dd, vv)));
    acc = hn::Add(acc, WeightedLogTerm(dd, wv, vv));
  }
  part.sum += hn::GetLane(hn::SumOfLanes(dd, acc));
  part.bad = part.bad || !hn::AllFalse(dd, bad);
}

// Evidence: sum of L p (the tail padded with zeros).
template <class T>
void EvidenceTyped(const T* l, const T* p, size_t n, Part& part) {
  const DD dd;
  const size_t lanes = hn::Lanes(dd);
  constexpr bool kRange = sizeof(T) == 8;
  auto acc = hn::Zero(dd);
  auto bad = hn::FirstN(dd, 0);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto lv = LoadD(dd, l + i), pv = LoadD(dd, p + i);
    bad = hn::Or(bad, hn::Or(Invalid<kRange>(dd, lv), Invalid<kRange>(dd, pv)));
    acc = hn::Add(acc, hn::Mul(lv, pv));
  }
  if (i < n) {
    HWY_ALIGN T bl[hn::MaxLanes(dd)], bp[hn::MaxLanes(dd)];
    Pad(bl, l + i, n - i, lanes, T(0));
    Pad(bp, p + i, n - i, lanes, T(0));
    const auto lv = LoadD(dd, bl), pv = LoadD(dd, bp);
    bad = hn::Or(bad, hn::Or(Invalid<kRange>(dd, lv), Invalid<kRange>(dd, pv)));
    acc = hn::Add(acc, hn::Mul(lv, pv));
  }
  part.sum += hn::GetLane(hn::SumOfLanes(dd, acc));
  part.bad = part.bad || !hn::AllFalse(dd, bad);
}

// out = (L p) / evidence in f64, rounded to T (f32 through DemoteTo: round to nearest even).
template <class T>
void PosteriorTyped(const T* l, const T* p, T* out, size_t n, double evidence) {
  const DD dd;
  const hn::Rebind<T, DD> dt;
  const size_t lanes = hn::Lanes(dd);
  const auto ev = hn::Set(dd, evidence);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto q = hn::Div(hn::Mul(LoadD(dd, l + i), LoadD(dd, p + i)), ev);
    if constexpr (sizeof(T) == 8) {
      hn::StoreU(q, dd, out + i);
    } else {
      hn::StoreU(hn::DemoteTo(dt, q), dt, out + i);
    }
  }
  for (; i < n; ++i)
    out[i] = static_cast<T>(static_cast<double>(l[i]) * static_cast<double>(p[i]) / evidence);
}

// Lanes of x (compute type) that are finite and >= 0.
template <class T>
bool AllValidTyped(const T* x, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const auto zero = hn::Zero(d), big = hn::Set(d, std::numeric_limits<T>::max());
  auto bad = hn::FirstN(d, 0);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    bad = hn::Or(bad, hn::Not(hn::And(hn::Ge(v, zero), hn::Le(v, big))));
  }
  if (!hn::AllFalse(d, bad)) return false;
  for (; i < n; ++i) {
    if (!(x[i] >= T(0) && x[i] <= std::numeric_limits<T>::max())) return false;
  }
  return true;
}

template <class T>
void MulTyped(const T* a, const T* b, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Mul(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  for (; i < n; ++i) out[i] = a[i] * b[i];
}

// ---- Exported chunk kernels: kind selects the storage; f16/bf16 are widened in blocks --------

void FreeEnergyChunk(int kind, const void* l, const void* q, const void* p, size_t n, Part* part) {
  if (kind == kF32)
    return FreeEnergyTyped(static_cast<const float*>(l), static_cast<const float*>(q),
                           static_cast<const float*>(p), n, *part);
  if (kind == kF64)
    return FreeEnergyTyped(static_cast<const double*>(l), static_cast<const double*>(q),
                           static_cast<const double*>(p), n, *part);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fl[kBlock], fq[kBlock], fp[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(l) + i, fl, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(q) + i, fq, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(p) + i, fp, m, bf16);
    FreeEnergyTyped(fl, fq, fp, m, *part);
  }
}

void WeightedLogChunk(int kind, const void* w, const void* v, size_t n, Part* part) {
  if (kind == kF32)
    return WeightedLogTyped(static_cast<const float*>(w), static_cast<const float*>(v), n, *part);
  if (kind == kF64)
    return WeightedLogTyped(static_cast<const double*>(w), static_cast<const double*>(v), n, *part);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fw[kBlock], fv[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(w) + i, fw, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(v) + i, fv, m, bf16);
    WeightedLogTyped(fw, fv, m, *part);
  }
}

void EvidenceChunk(int kind, const void* l, const void* p, size_t n, Part* part) {
  if (kind == kF32)
    return EvidenceTyped(static_cast<const float*>(l), static_cast<const float*>(p), n, *part);
  if (kind == kF64)
    return EvidenceTyped(static_cast<const double*>(l), static_cast<const double*>(p), n, *part);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fl[kBlock], fp[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(l) + i, fl, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(p) + i, fp, m, bf16);
    EvidenceTyped(fl, fp, m, *part);
  }
}

void PosteriorChunk(int kind, const void* l, const void* p, void* out, size_t n, double evidence) {
  if (kind == kF32)
    return PosteriorTyped(static_cast<const float*>(l), static_cast<const float*>(p),
                          static_cast<float*>(out), n, evidence);
  if (kind == kF64)
    return PosteriorTyped(static_cast<const double*>(l), static_cast<const double*>(p),
                          static_cast<double*>(out), n, evidence);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fl[kBlock], fp[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(l) + i, fl, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(p) + i, fp, m, bf16);
    PosteriorTyped(fl, fp, fl, m, evidence);  // f64 quotient rounded to f32, then to 16 bits
    NarrowBlock(fl, static_cast<uint16_t*>(out) + i, m, bf16);
  }
}

bool AllValidChunk(int kind, const void* x, size_t n) {
  if (kind == kF32) return AllValidTyped(static_cast<const float*>(x), n);
  if (kind == kF64) return AllValidTyped(static_cast<const double*>(x), n);
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(x) + i, f, m, kind == kBF16);
    if (!AllValidTyped(f, m)) return false;
  }
  return true;
}

void MulChunk(int kind, const void* a, const void* b, void* out, size_t n) {
  if (kind == kF32)
    return MulTyped(static_cast<const float*>(a), static_cast<const float*>(b),
                    static_cast<float*>(out), n);
  if (kind == kF64)
    return MulTyped(static_cast<const double*>(a), static_cast<const double*>(b),
                    static_cast<double*>(out), n);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(a) + i, fa, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(b) + i, fb, m, bf16);
    MulTyped(fa, fb, fa, m);
    NarrowBlock(fa, static_cast<uint16_t*>(out) + i, m, bf16);
  }
}

}  // namespace backplane::cpu::simd::active_inference_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <type_traits>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace active_inference_hwy {
HWY_EXPORT(FreeEnergyChunk);
HWY_EXPORT(WeightedLogChunk);
HWY_EXPORT(EvidenceChunk);
HWY_EXPORT(PosteriorChunk);
HWY_EXPORT(AllValidChunk);
HWY_EXPORT(MulChunk);

namespace {
using namespace active_inference_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;  // fixed chunks: results independent of thread count

template <class P>
P* At(P* p, int kind, int64_t i) {
  using B = std::conditional_t<std::is_const_v<P>, const uint8_t, uint8_t>;
  return reinterpret_cast<B*>(p) + static_cast<size_t>(i) * KindBytes(kind);
}

bool Ok(const void* p, int64_t n) { return n == 0 || p != nullptr; }

// Sums the chunk parts of fn(begin, end, part) in chunk order.
template <class Fn>
Part Chunked(int64_t n, const Fn& fn) {
  std::vector<Part> parts(static_cast<size_t>((n + kChunk - 1) / kChunk));
  ParallelFor(n, kChunk,
              [&](int64_t b, int64_t e) { fn(b, e, &parts[static_cast<size_t>(b / kChunk)]); });
  Part total;
  for (const Part& p : parts) {
    total.sum += p.sum;
    total.bad = total.bad || p.bad;
  }
  return total;
}

void StoreScalar(void* out, int kind, double v) {
  switch (kind) {
    case kF64:
      *static_cast<double*>(out) = v;
      return;
    case kF32:
      *static_cast<float*>(out) = static_cast<float>(v);
      return;
    case kF16:
      *static_cast<uint16_t*>(out) = F32ToF16(static_cast<float>(v));
      return;
    default:
      *static_cast<uint16_t*>(out) = F32ToBF16(static_cast<float>(v));
      return;
  }
}

void FreeEnergy(const void* likelihood, const void* posterior, const void* prior, void* output,
                int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count < 0 || !Ok(likelihood, count) || !Ok(posterior, count) ||
      !Ok(prior, count) || !output) {
    return Reference().ActiveInference_FreeEnergy(likelihood, posterior, prior, output, count,
                                                  dtype);
  }
  const Part total = Chunked(count, [&](int64_t b, int64_t e, Part* part) {
    HWY_DYNAMIC_DISPATCH(FreeEnergyChunk)
    (kind, At(likelihood, kind, b), At(posterior, kind, b), At(prior, kind, b),
     static_cast<size_t>(e - b), part);
  });
  if (total.bad)
    return Reference().ActiveInference_FreeEnergy(likelihood, posterior, prior, output, count,
                                                  dtype);
  StoreScalar(output, kind, total.sum);
}

void ExpectedFreeEnergy(const void* predictedObs, const void* preferredObs,
                        const void* predictedState, void* output, int64_t obsCount,
                        int64_t stateCount, DType dtype) {
  const int kind = KindOf(dtype);
  auto reference = [&] {
    Reference().ActiveInference_ExpectedFreeEnergy(predictedObs, preferredObs, predictedState,
                                                   output, obsCount, stateCount, dtype);
  };
  if (kind < 0 || obsCount < 0 || stateCount < 0 || !Ok(predictedObs, obsCount) ||
      !Ok(preferredObs, obsCount) || !Ok(predictedState, stateCount) || !output) {
    return reference();
  }
  const Part cost = Chunked(obsCount, [&](int64_t b, int64_t e, Part* part) {
    HWY_DYNAMIC_DISPATCH(WeightedLogChunk)
    (kind, At(predictedObs, kind, b), At(preferredObs, kind, b), static_cast<size_t>(e - b), part);
  });
  const Part entropy = Chunked(stateCount, [&](int64_t b, int64_t e, Part* part) {
    HWY_DYNAMIC_DISPATCH(WeightedLogChunk)
    (kind, At(predictedState, kind, b), At(predictedState, kind, b), static_cast<size_t>(e - b),
     part);
  });
  if (cost.bad || entropy.bad) return reference();
  // As the reference: expected cost -sum Q(o) ln C minus the state entropy -sum Q(s) ln Q(s).
  StoreScalar(output, kind, (-cost.sum) - (-entropy.sum));
}

void BeliefUpdate(const void* left, const void* right, void* output, int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count <= 0 || !left || !right || !output) {
    return Reference().ActiveInference_BeliefUpdate(left, right, output, count, dtype);
  }
  const Part evidence = Chunked(count, [&](int64_t b, int64_t e, Part* part) {
    HWY_DYNAMIC_DISPATCH(EvidenceChunk)
    (kind, At(left, kind, b), At(right, kind, b), static_cast<size_t>(e - b), part);
  });
  // Invalid input, zero evidence (the reference throws) or an f64 range that needs rescaling.
  if (evidence.bad || !(evidence.sum > 0.0 && std::isfinite(evidence.sum))) {
    return Reference().ActiveInference_BeliefUpdate(left, right, output, count, dtype);
  }
  // Element i is read before it is written: in place works chunk by chunk.
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(PosteriorChunk)
    (kind, At(left, kind, b), At(right, kind, b), At(output, kind, b), static_cast<size_t>(e - b),
     evidence.sum);
  });
}

void PrecisionWeight(const void* left, const void* right, void* output, int64_t count,
                     DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count < 0 || !Ok(left, count) || !Ok(right, count) || !Ok(output, count)) {
    return Reference().ActiveInference_PrecisionWeight(left, right, output, count, dtype);
  }
  const Part valid = Chunked(count, [&](int64_t b, int64_t e, Part* part) {
    part->bad =
        !HWY_DYNAMIC_DISPATCH(AllValidChunk)(kind, At(right, kind, b), static_cast<size_t>(e - b));
  });
  if (valid.bad)
    return Reference().ActiveInference_PrecisionWeight(left, right, output, count, dtype);
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(MulChunk)
    (kind, At(left, kind, b), At(right, kind, b), At(output, kind, b), static_cast<size_t>(e - b));
  });
}

}  // namespace
}  // namespace active_inference_hwy

void RegisterActiveInference(KernelTable& t) {
  namespace k = active_inference_hwy;
  t.ActiveInference_FreeEnergy = &k::FreeEnergy;
  t.ActiveInference_ExpectedFreeEnergy = &k::ExpectedFreeEnergy;
  t.ActiveInference_BeliefUpdate = &k::BeliefUpdate;
  t.ActiveInference_PrecisionWeight = &k::PrecisionWeight;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
