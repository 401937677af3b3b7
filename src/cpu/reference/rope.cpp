// Scalar reference kernels for the RoPE surface: rotary position embedding with interleaved
// (GPT-J "rotate_every_two") pairs (x[2p], x[2p+1]). Semantics: docs/semantics/rope.md.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace rope {
namespace {

// Rotates the pair (in[even], in[even+1]) by the angle whose cosine and sine are c and s. Both
// inputs are read before either output is written (in-place safe); the products and sums are formed
// in f64 and each output is rounded once on store.
void RotatePair(const void* in, void* out, int64_t even, DType dtype, double c, double s) {
  const double x0 = Load<double>(in, even, dtype);
  const double x1 = Load<double>(in, even + 1, dtype);
  Store<double>(out, even, dtype, x0 * c - x1 * s);
  Store<double>(out, even + 1, dtype, x0 * s + x1 * c);
}

}  // namespace

// out[s, h, 2p] = x0 cos(theta) - x1 sin(theta), out[s, h, 2p+1] = x0 sin(theta) + x1 cos(theta)
// with (x0, x1) = in[s, h, 2p .. 2p+1], theta = (s + StartPosition) * BaseFreq^(-2p/headDim).
// The angles, their cosines and sines and the rotation are computed in f64 for every dtype (the
// most accurate choice; one rounding per output). In-place safe (in == out).
void RoPE(const RoPEConfig& config, const void* in, void* out, int64_t seqLen, int64_t numHeads,
          int64_t headDim, DType dtype) {
  constexpr std::string_view kOp = "RoPE.RoPE";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqLen", seqLen);
  CheckNonNegative(kOp, "numHeads", numHeads);
  CheckNonNegative(kOp, "headDim", headDim);
  if (headDim % 2 != 0) {
    ThrowInvalidArgument(kOp, "headDim", "even (pairs (2p, 2p+1) are rotated)",
                         std::to_string(headDim));
  }
  CheckFinite(kOp, "BaseFreq", config.BaseFreq);
  if (!(config.BaseFreq > 0.0)) {
    ThrowInvalidArgument(kOp, "BaseFreq", "> 0", fmt::format("{}", config.BaseFreq));
  }
  CheckNonNegative(kOp, "StartPosition", config.StartPosition);
  int64_t lastPosition = 0;
  if (__builtin_add_overflow(config.StartPosition, seqLen, &lastPosition)) {
    ThrowInvalidArgument(kOp, "StartPosition", "such that StartPosition + seqLen fits in int64",
                         std::to_string(config.StartPosition));
  }
  int64_t rowCount = 0;
  int64_t count = 0;
  if (__builtin_mul_overflow(seqLen, numHeads, &rowCount) ||
      __builtin_mul_overflow(rowCount, headDim, &count)) {
    ThrowInvalidArgument(kOp, "headDim", "such that seqLen*numHeads*headDim fits in int64",
                         std::to_string(headDim));
  }
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;

  const int64_t half = headDim / 2;
  for (int64_t s = 0; s < seqLen; ++s) {
    const double position = static_cast<double>(s + config.StartPosition);
    for (int64_t p = 0; p < half; ++p) {
      const double exponent = -2.0 * static_cast<double>(p) / static_cast<double>(headDim);
      const double theta = position * std::pow(config.BaseFreq, exponent);
      const double c = std::cos(theta);
      const double sn = std::sin(theta);
      for (int64_t h = 0; h < numHeads; ++h) {
        RotatePair(in, out, (s * numHeads + h) * headDim + 2 * p, dtype, c, sn);
      }
    }
  }
}

// Rotates one vector of length 2*halfDim: out[2p] = in[2p] cos[p] - in[2p+1] sin[p],
// out[2p+1] = in[2p] sin[p] + in[2p+1] cos[p]. cos and sin have halfDim elements of `dtype`.
// In-place safe (in == out).
void RoPEPairs(void* out, const void* in, const void* cos, const void* sin, int64_t halfDim,
               DType dtype) {
  constexpr std::string_view kOp = "RoPE.RoPEPairs";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "halfDim", halfDim);
  if (halfDim > INT64_MAX / 2) {
    ThrowInvalidArgument(kOp, "halfDim", fmt::format("<= {}", INT64_MAX / 2),
                         std::to_string(halfDim));
  }
  CheckPointer(kOp, "out", out, 2 * halfDim);
  CheckPointer(kOp, "in", in, 2 * halfDim);
  CheckPointer(kOp, "cos", cos, halfDim);
  CheckPointer(kOp, "sin", sin, halfDim);
  for (int64_t p = 0; p < halfDim; ++p) {
    RotatePair(in, out, 2 * p, dtype, Load<double>(cos, p, dtype), Load<double>(sin, p, dtype));
  }
}

}  // namespace rope

void RegisterRoPE(KernelTable& table) {
  table.RoPE_RoPE = &rope::RoPE;
  table.RoPE_RoPEPairs = &rope::RoPEPairs;
}

}  // namespace backplane::cpu::ref
