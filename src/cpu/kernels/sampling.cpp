// Highway kernels for the Sampling surface.
//
// GreedySample: the maximum and a NaN check in native lanes (f64 lanes for f64; f32 lanes for
// f32 and for f16/bf16 widened exactly), then the first index equal to the maximum, so ties go to
// the first index (-0.0 ties with +0.0), an all -Inf row gives 0 and +Inf wins, as the reference.
// A NaN logit hands the call to the reference, which throws naming its index.
// TopKSample and TopPSample stay on the reference (ScalarByDesign): they need a stable sort by
// probability and an inverse-CDF walk, and the token must be bit-identical to the reference for
// the same seed; a vector Exp changes the probabilities' low bits, which can reorder ties and move
// the draw, while the exact parts (the maximum) are a small fraction of the sort.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/sampling.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_SAMPLING_SHARED_
#define BACKPLANE_CPU_KERNELS_SAMPLING_SHARED_
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>
#endif  // BACKPLANE_CPU_KERNELS_SAMPLING_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Index of the first maximum of x[0, n), or -1 when x has a NaN.
template <class T>
int64_t ArgMaxTyped(const T* x, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  T best;
  if (n < lanes) {
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return -1;
      if (x[i] > x[at]) at = i;
    }
    return static_cast<int64_t>(at);
  }
  // Pass 1: the maximum (the last vector overlaps the previous one, harmless for a maximum).
  auto m0 = hn::LoadU(d, x), m1 = m0;
  auto nan = hn::VecFromMask(d, hn::IsNaN(m0));
  size_t i = lanes;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + lanes);
    m0 = hn::Max(m0, a);
    m1 = hn::Max(m1, b);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::Or(hn::IsNaN(a), hn::IsNaN(b))));
  }
  for (; i < n; i += lanes) {
    const auto a = hn::LoadU(d, x + std::min(i, n - lanes));
    m0 = hn::Max(m0, a);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(a)));
  }
  if (!hn::AllFalse(d, hn::MaskFromVec(nan))) return -1;
  best = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  // Pass 2: the first index holding the maximum (== also matches a zero of the other sign).
  const auto vb = hn::Set(d, best);
  for (i = 0; i + lanes <= n; i += lanes) {
    const intptr_t k = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, x + i), vb));
    if (k >= 0) return static_cast<int64_t>(i) + k;
  }
  for (; i < n; ++i) {
    if (x[i] == best) return static_cast<int64_t>(i);
  }
  return 0;  // not reached
}

}  // namespace

int64_t ArgMaxRow(int kind, const void* logits, size_t n) {
  switch (kind) {
    case 0: return ArgMaxTyped(static_cast<const float*>(logits), n);
    case 1: return ArgMaxTyped(static_cast<const double*>(logits), n);
    default: {
      std::vector<float> buf(n);
      WidenBlock(static_cast<const uint16_t*>(logits), buf.data(), n, kind == 3);
      return ArgMaxTyped(buf.data(), n);
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <limits>

#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(ArgMaxRow);

namespace {

int32_t GreedySample(const void* logits, int64_t vocabSize, DType dtype) {
  int kind = -1;
  switch (dtype) {
    case DType::Float32: kind = 0; break;
    case DType::Float64: kind = 1; break;
    case DType::Float16: kind = 2; break;
    case DType::BFloat16: kind = 3; break;
    default: break;
  }
  if (kind < 0 || vocabSize <= 0 || vocabSize > std::numeric_limits<int32_t>::max() || logits == nullptr) {
    return Reference().Sampling_GreedySample(logits, vocabSize, dtype);
  }
  const int64_t at = HWY_DYNAMIC_DISPATCH(ArgMaxRow)(kind, logits, static_cast<size_t>(vocabSize));
  if (at < 0) return Reference().Sampling_GreedySample(logits, vocabSize, dtype);  // NaN: throws
  return static_cast<int32_t>(at);
}

}  // namespace

void RegisterSampling(KernelTable& t) {
  t.Sampling_GreedySample = &GreedySample;
  t.ScalarByDesign(catalog::MethodId::Sampling_TopKSample,
                   "stable sort by probability + inverse-CDF draw that must pick the reference's token bit "
                   "for bit; a SIMD exp changes the probabilities' bits");
  t.ScalarByDesign(catalog::MethodId::Sampling_TopPSample,
                   "stable sort by probability + nucleus cut + inverse-CDF draw that must pick the reference's "
                   "token bit for bit; a SIMD exp changes the probabilities' bits");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
