#include "checks/pool.hpp"
#include "checks/overflow.hpp"

#include <fmt/format.h>

#include <string>

#include "backplane/error.hpp"

namespace backplane::checks::pool {
namespace {

// The argument names of one axis.
struct AxisNames {
  std::string_view in, out, kernel, stride, padding;
};
constexpr AxisNames kRowNames{"inH", "outH", "config.KernelH", "config.StrideH", "config.PaddingH"};
constexpr AxisNames kColNames{"inW", "outW", "config.KernelW", "config.StrideW", "config.PaddingW"};

// Kernel and stride > 0 and 0 <= padding <= kernel / 2 (torch's rule for max_pool2d/avg_pool2d).
void CheckWindowConfig(std::string_view op, const Axis& a, const AxisNames& n) {
  CheckPositive(op, n.kernel, a.kernel);
  CheckPositive(op, n.stride, a.stride);
  CheckNonNegative(op, n.padding, a.padding);
  if (a.padding > a.kernel / 2) {
    ThrowInvalidArgument(op, n.padding, fmt::format("<= {} (half of {})", a.kernel / 2, n.kernel),
                         std::to_string(a.padding));
  }
}

// out = floor((in + 2*padding - kernel) / stride) + 1; an empty input has an empty output.
void CheckExtent(std::string_view op, const Axis& a, const AxisNames& n) {
  int64_t expected = 0;
  if (a.in > 0) {
    const int64_t padded = AddOrThrow(op, n.in, a.in, 2 * a.padding);  // 2p <= kernel: no overflow
    if (padded < a.kernel) {
      ThrowShapeMismatch(
          op, n.in, fmt::format(">= {} ({} - 2*{})", a.kernel - 2 * a.padding, n.kernel, n.padding),
          std::to_string(a.in));
    }
    expected = (padded - a.kernel) / a.stride + 1;
  }
  if (a.out != expected) {
    ThrowShapeMismatch(op, n.out, fmt::format("{} (from {} and the config)", expected, n.in),
                       std::to_string(a.out));
  }
}

// Checks sizes and pointers common to every pool method, after the method-specific checks.
Plan CheckBuffers(std::string_view op, const void* in, const void* out, int64_t batch,
                  int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW) {
  Plan p;
  p.planes = MulOrThrow(op, "channels", batch, channels);
  p.inH = inH;
  p.inW = inW;
  p.outH = outH;
  p.outW = outW;
  p.inCount = MulOrThrow(op, "in", MulOrThrow(op, "in", p.planes, inH), inW);
  p.outCount = MulOrThrow(op, "out", MulOrThrow(op, "out", p.planes, outH), outW);
  CheckPointer(op, "in", in, p.inCount);
  CheckPointer(op, "out", out, p.outCount);
  return p;
}

void CheckSizes(std::string_view op, int64_t batch, int64_t channels, int64_t inH, int64_t inW,
                int64_t outH, int64_t outW) {
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "channels", channels);
  CheckNonNegative(op, "inH", inH);
  CheckNonNegative(op, "inW", inW);
  CheckNonNegative(op, "outH", outH);
  CheckNonNegative(op, "outW", outW);
}

}  // namespace

Axis Rows(const PoolConfig& c, int64_t inH, int64_t outH) {
  return {inH, outH, c.KernelH, c.StrideH, c.PaddingH};
}
Axis Cols(const PoolConfig& c, int64_t inW, int64_t outW) {
  return {inW, outW, c.KernelW, c.StrideW, c.PaddingW};
}

Plan ValidateFixed(std::string_view op, const PoolConfig& config, const void* in, const void* out,
                   int64_t batch, int64_t channels, int64_t inH, int64_t inW, int64_t outH,
                   int64_t outW, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckSizes(op, batch, channels, inH, inW, outH, outW);
  const Axis rows = Rows(config, inH, outH);
  const Axis cols = Cols(config, inW, outW);
  CheckWindowConfig(op, rows, kRowNames);
  CheckWindowConfig(op, cols, kColNames);
  CheckExtent(op, rows, kRowNames);
  CheckExtent(op, cols, kColNames);
  return CheckBuffers(op, in, out, batch, channels, inH, inW, outH, outW);
}

Plan ValidateAdaptive(std::string_view op, const void* in, const void* out, int64_t batch,
                      int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW,
                      DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckSizes(op, batch, channels, inH, inW, outH, outW);
  if (batch > 0 && channels > 0) {
    // Every window needs at least one tap, and torch rejects an empty output size.
    const std::string_view why = "> 0 (batch * channels > 0)";
    if (inH == 0) ThrowInvalidArgument(op, "inH", why, "0");
    if (inW == 0) ThrowInvalidArgument(op, "inW", why, "0");
    if (outH == 0) ThrowInvalidArgument(op, "outH", why, "0");
    if (outW == 0) ThrowInvalidArgument(op, "outW", why, "0");
    // The window bounds compute (o + 1) * in + out - 1 <= out * (in + 1).
    MulOrThrow(op, "outH", outH, AddOrThrow(op, "inH", inH, 1));
    MulOrThrow(op, "outW", outW, AddOrThrow(op, "inW", inW, 1));
  }
  return CheckBuffers(op, in, out, batch, channels, inH, inW, outH, outW);
}

}  // namespace backplane::checks::pool
