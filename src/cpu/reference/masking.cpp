// Scalar reference kernels for the Masking surface. Score matrices are [seqQ, seqK] row-major.
// Causal alignment is bottom-right (KV-cache convention): query q sits at absolute position
// p = q + (seqK - seqQ) and sees keys k <= p. Semantics: docs/semantics/masking.md.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace masking {
namespace {

// seqQ * seqK, throwing instead of overflowing.
int64_t ScoreCount(std::string_view op, int64_t seqQ, int64_t seqK) {
  int64_t product = 0;
  if (__builtin_mul_overflow(seqQ, seqK, &product)) {
    ThrowInvalidArgument(op, "seqK",
                         fmt::format("such that seqQ*seqK fits in int64 (seqQ = {})", seqQ),
                         std::to_string(seqK));
  }
  return product;
}

// The absolute position of query q when the queries are the last seqQ of seqK positions.
int64_t AlignedPosition(int64_t q, int64_t seqQ, int64_t seqK) { return q + (seqK - seqQ); }

}  // namespace

// out[i] = in[i] + mask[i] (additive mask: 0 keeps, -Inf removes). In-place safe.
void ApplyMask(const void* in, const void* mask, void* out, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Masking.ApplyMask";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "mask", mask, count);
  CheckPointer(kOp, "out", out, count);
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      Store<T>(out, i, dtype, Load<T>(in, i, dtype) + Load<T>(mask, i, dtype));
    }
  });
}

// out[q, k] = -Inf if k > q + (seqK - seqQ), else +0.
void CausalMask(void* out, int64_t seqQ, int64_t seqK, DType dtype) {
  constexpr std::string_view kOp = "Masking.CausalMask";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqQ", seqQ);
  CheckNonNegative(kOp, "seqK", seqK);
  CheckPointer(kOp, "out", out, ScoreCount(kOp, seqQ, seqK));
  const double kMasked = -std::numeric_limits<double>::infinity();
  for (int64_t q = 0; q < seqQ; ++q) {
    const int64_t p = AlignedPosition(q, seqQ, seqK);
    for (int64_t k = 0; k < seqK; ++k) {
      Store<double>(out, q * seqK + k, dtype, k > p ? kMasked : 0.0);
    }
  }
}

// out[q, k] = scores[q, k] - slope * (p - k) for k <= p (p = q + seqK - seqQ); future positions
// (k > p) are copied unchanged: this is a bias, not a mask. `slope` is one element of `dtype` and
// must be finite and >= 0. In-place safe (scores == out).
void ALiBiBias(const void* scores, const void* slope, void* out, int64_t seqQ, int64_t seqK,
               DType dtype) {
  constexpr std::string_view kOp = "Masking.ALiBiBias";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqQ", seqQ);
  CheckNonNegative(kOp, "seqK", seqK);
  const int64_t count = ScoreCount(kOp, seqQ, seqK);
  CheckPointer(kOp, "scores", scores, count);
  CheckPointer(kOp, "slope", slope, count > 0 ? 1 : 0);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    const T m = Load<T>(slope, 0, dtype);
    CheckFinite(kOp, "slope", static_cast<double>(m));
    if (m < T(0)) ThrowInvalidArgument(kOp, "slope", ">= 0", fmt::format("{}", m));
    for (int64_t q = 0; q < seqQ; ++q) {
      const int64_t p = AlignedPosition(q, seqQ, seqK);
      for (int64_t k = 0; k < seqK; ++k) {
        const int64_t i = q * seqK + k;
        const T s = Load<T>(scores, i, dtype);
        // One rounding in the compute type: s - m * (p - k).
        const T biased = k <= p ? std::fma(-m, static_cast<T>(p - k), s) : s;
        Store<T>(out, i, dtype, biased);
      }
    }
  });
}

}  // namespace masking

void RegisterMasking(KernelTable& table) {
  table.Masking_ApplyMask = &masking::ApplyMask;
  table.Masking_CausalMask = &masking::CausalMask;
  table.Masking_ALiBiBias = &masking::ALiBiBias;
}

}  // namespace backplane::cpu::ref
