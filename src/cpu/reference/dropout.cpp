// Scalar reference kernels for the Dropout surface.
//
// Inverted dropout driven by Philox4x32-10 (backplane/random.hpp), stream 0, keyed by the full
// 64-bit seed and the element index:
//   u_i  = PhiloxUniformFloat(Seed, 0, i)          (24 random bits, in [0, 1))
//   keep = u_i >= Rate                              (compared in f32)
//   dst_i = keep ? src_i * s : +0.0,  s = 1 / (1 - Rate) rounded to the compute type
// Rate 0 copies src bit for bit; Rate 1 writes +0.0 everywhere (no division).
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backplane/random.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace dropout {

namespace {
constexpr std::string_view kOp = "Dropout.Dropout";
}  // namespace

void Dropout(void* dst, const void* src, int64_t count, const DropoutConfig& config,
             DType dtype) {
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "dst", dst, count);
  CheckPointer(kOp, "src", src, count);
  const float rate = config.Rate;
  if (!(rate >= 0.0f && rate <= 1.0f)) {  // also rejects NaN
    ThrowInvalidArgument(kOp, "config.Rate", "in [0, 1]", fmt::format("{}", rate));
  }
  if (count == 0) return;

  if (rate == 0.0f) {  // exact copy, NaN payloads and signed zeros included
    std::memmove(dst, src, DTypeStorageBytes(dtype, count));
    return;
  }
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    // Rate 1 keeps nothing (u < 1 always), so the scale is never used and never divides by 0.
    const T scale = rate < 1.0f ? T{1} / (T{1} - static_cast<T>(rate)) : T{0};
    for (int64_t i = 0; i < count; ++i) {
      const bool keep = PhiloxUniformFloat(config.Seed, 0, static_cast<uint64_t>(i)) >= rate;
      const T value = keep ? Load<T>(src, i, dtype) * scale : T{0};
      Store<T>(dst, i, dtype, value);
    }
  });
}

}  // namespace dropout

void RegisterDropout(KernelTable& table) { table.Dropout_Dropout = &dropout::Dropout; }

}  // namespace backplane::cpu::ref
