// Scalar reference kernel for the Quant surface (affine per-tensor int8 quantisation, as
// torch.quantize_per_tensor(x, scale, zp, torch.qint8)):
//   q_i = clamp(round_half_even(x_i / Scale) + ZeroPoint, -128, 127)
// The division is one correctly rounded operation in the compute type (f32 for f32/f16/bf16
// sources, f64 for f64 with Scale widened exactly); the rounding is exact. +-Inf (and quotients
// that overflow) saturate; a NaN source element throws before anything is written.
#include <fmt/format.h>

#include <cmath>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace quant {

namespace {

constexpr std::string_view kOp = "Quant.Quant";

// Round to nearest, ties to even, independent of the floating-point environment. v is not NaN.
// Works on |v|, where |v| - floor(|v|) is exact.
template <class T>
T RoundHalfEven(T v) {
  if (!std::isfinite(v)) return v;
  const T a = std::fabs(v);
  const T lower = std::floor(a);
  const T frac = a - lower;
  T r = lower + T{1};
  if (frac < T{0.5} || (frac == T{0.5} && std::fmod(lower, T{2}) == T{0})) r = lower;
  return std::copysign(r, v);
}

}  // namespace

void Quant(void* dst, const void* src, int64_t count, const QuantConfig& config, DType dstFormat,
           DType srcFormat) {
  CheckDType(kOp, "dstFormat", dstFormat, DTypeSet{DType::Int8});
  CheckDType(kOp, "srcFormat", srcFormat, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "dst", dst, count);
  CheckPointer(kOp, "src", src, count);
  if (!(std::isfinite(config.Scale) && config.Scale > 0.0f)) {
    ThrowInvalidArgument(kOp, "config.Scale", "finite and > 0", fmt::format("{}", config.Scale));
  }
  WithComputeType(kOp, "srcFormat", srcFormat, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      if (std::isnan(Load<T>(src, i, srcFormat))) {
        ThrowInvalidArgument(kOp, "src", "free of NaN", fmt::format("NaN at index {}", i));
      }
    }
    const T scale = static_cast<T>(config.Scale);
    auto* out = static_cast<int8_t*>(dst);
    for (int64_t i = 0; i < count; ++i) {
      const double q = static_cast<double>(RoundHalfEven(Load<T>(src, i, srcFormat) / scale)) +
                       static_cast<double>(config.ZeroPoint);
      out[i] = static_cast<int8_t>(std::fmin(std::fmax(q, -128.0), 127.0));
    }
  });
}

}  // namespace quant

void RegisterQuant(KernelTable& table) { table.Quant_Quant = &quant::Quant; }

}  // namespace backplane::cpu::ref
