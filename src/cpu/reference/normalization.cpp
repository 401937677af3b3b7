// Scalar reference kernels for the Normalization surface over [batch, channels, spatial] tensors:
// GroupNorm, InstanceNorm (statistics of the input, as torch.nn.functional.group_norm and
// instance_norm) and BatchNormEval (running statistics, as batch_norm(training=False)).
// eps = 1e-5 (MathExt.GroupNormEps, InstanceNormEps, BatchNormEvalEps: the caller's eps, finite
// and >= 0); biased variance; mean and variance in double, two passes; every output computed in
// double and rounded once to the storage format. scale and bias are per channel and may be null
// (weight 1, bias 0). Semantics: docs/semantics/normalization.md.
#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "checks/normalization.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace normalization {
namespace {

constexpr double kEps = 1e-5;

using checks::normalization::CheckBuffers;
using checks::normalization::CheckEps;
using checks::normalization::CheckSizes;

// The optional per-channel affine parameters, widened; empty when the pointer is null.
std::vector<double> Optional(const void* values, int64_t channels, DType dtype) {
  return values != nullptr ? Widen<double>(values, channels, dtype) : std::vector<double>{};
}

// y = xhat * scale[c] + bias[c], each step skipped when its parameter is absent (as torch's
// weight=None / bias=None, which keeps the sign of a zero xhat).
double Affine(double xhat, const std::vector<double>& scale, const std::vector<double>& bias,
              int64_t c) {
  double y = xhat;
  if (!scale.empty()) y *= scale[static_cast<size_t>(c)];
  if (!bias.empty()) y += bias[static_cast<size_t>(c)];
  return y;
}

// Normalises every block of `blockSize` consecutive elements with its own mean and biased
// variance (two passes in double); element i of the tensor belongs to channel (i / spatial) %
// channels. GroupNorm blocks are (batch, group) slices, InstanceNorm blocks are (batch, channel).
void NormalizeBlocks(const void* in, const void* scale, const void* bias, void* out, int64_t count,
                     int64_t blockSize, int64_t channels, int64_t spatial, double eps, DType dtype) {
  const std::vector<double> x = Widen<double>(in, count, dtype);
  const std::vector<double> s = Optional(scale, channels, dtype);
  const std::vector<double> b = Optional(bias, channels, dtype);
  std::vector<double> y(x.size());
  for (int64_t start = 0; start < count; start += blockSize) {
    double sum = 0.0;
    for (int64_t i = start; i < start + blockSize; ++i) sum += x[static_cast<size_t>(i)];
    const double mean = sum / static_cast<double>(blockSize);
    double squares = 0.0;
    for (int64_t i = start; i < start + blockSize; ++i) {
      const double d = x[static_cast<size_t>(i)] - mean;
      squares += d * d;
    }
    const double variance = squares / static_cast<double>(blockSize);
    const double rstd = 1.0 / std::sqrt(variance + eps);
    for (int64_t i = start; i < start + blockSize; ++i) {
      const int64_t c = (i / spatial) % channels;
      y[static_cast<size_t>(i)] = Affine((x[static_cast<size_t>(i)] - mean) * rstd, s, b, c);
    }
  }
  Narrow(y, out, dtype);
}

}  // namespace

// Statistics over each (batch, group) block of (channels / Groups) * spatial elements.
void GroupNormWith(std::string_view op, const GroupNormConfig& config, const void* in, const void* scale,
                   const void* bias, void* out, int64_t batch, int64_t channels, int64_t spatial, double eps,
                   DType dtype) {
  CheckSizes(op, batch, channels, spatial, dtype);
  CheckPositive(op, "config.Groups", config.Groups);
  if (channels % config.Groups != 0) {
    ThrowInvalidArgument(op, "config.Groups", fmt::format("a divisor of channels ({})", channels),
                         std::to_string(config.Groups));
  }
  const int64_t count = CheckBuffers(op, in, out, batch, channels, spatial);
  CheckEps(op, eps);
  const int64_t blockSize = channels / config.Groups * spatial;
  if (blockSize == 0) return;  // nothing to normalise: `out` has no elements
  NormalizeBlocks(in, scale, bias, out, count, blockSize, channels, spatial, eps, dtype);
}

void GroupNorm(const GroupNormConfig& config, const void* in, const void* scale, const void* bias,
               void* out, int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
  GroupNormWith("Normalization.GroupNorm", config, in, scale, bias, out, batch, channels, spatial, kEps,
                dtype);
}

void GroupNormEps(const GroupNormConfig& config, const void* in, const void* scale, const void* bias,
                  void* out, int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype) {
  GroupNormWith("MathExt.GroupNormEps", config, in, scale, bias, out, batch, channels, spatial, eps, dtype);
}

// Statistics over each (batch, channel) plane of `spatial` elements.
void InstanceNormWith(std::string_view op, const void* in, const void* scale, const void* bias, void* out,
                      int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype) {
  CheckSizes(op, batch, channels, spatial, dtype);
  const int64_t count = CheckBuffers(op, in, out, batch, channels, spatial);
  CheckEps(op, eps);
  if (count == 0) return;
  NormalizeBlocks(in, scale, bias, out, count, spatial, channels, spatial, eps, dtype);
}

void InstanceNorm(const void* in, const void* scale, const void* bias, void* out, int64_t batch,
                  int64_t channels, int64_t spatial, DType dtype) {
  InstanceNormWith("Normalization.InstanceNorm", in, scale, bias, out, batch, channels, spatial, kEps, dtype);
}

void InstanceNormEps(const void* in, const void* scale, const void* bias, void* out, int64_t batch,
                     int64_t channels, int64_t spatial, double eps, DType dtype) {
  InstanceNormWith("MathExt.InstanceNormEps", in, scale, bias, out, batch, channels, spatial, eps, dtype);
}

// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c] with the given running statistics.
// mean and var are per channel, in `dtype`, mandatory; var[c] + eps must be > 0 (NaN rejected).
void BatchNormEvalWith(std::string_view op, const void* in, const void* scale, const void* bias,
                       const void* mean, const void* var, void* out, int64_t batch, int64_t channels,
                       int64_t spatial, double eps, DType dtype) {
  CheckSizes(op, batch, channels, spatial, dtype);
  const int64_t count = CheckBuffers(op, in, out, batch, channels, spatial);
  CheckPointer(op, "mean", mean, channels);
  CheckPointer(op, "var", var, channels);
  CheckEps(op, eps);
  const std::vector<double> mu = Widen<double>(mean, channels, dtype);
  const std::vector<double> sigma2 = Widen<double>(var, channels, dtype);
  for (int64_t c = 0; c < channels; ++c) {
    const double v = sigma2[static_cast<size_t>(c)];
    if (!(v + eps > 0.0)) {
      // The seed's message spells its constant as "1e-5".
      const std::string bound = eps == kEps ? "1e-5" : fmt::format("{}", eps);
      ThrowInvalidArgument(op, "var", fmt::format("such that var[c] + {} > 0 for every channel", bound),
                           fmt::format("var[{}] = {}", c, v));
    }
  }
  const std::vector<double> x = Widen<double>(in, count, dtype);
  const std::vector<double> s = Optional(scale, channels, dtype);
  const std::vector<double> b = Optional(bias, channels, dtype);
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t c = (i / spatial) % channels;
    const double rstd = 1.0 / std::sqrt(sigma2[static_cast<size_t>(c)] + eps);
    y[static_cast<size_t>(i)] =
        Affine((x[static_cast<size_t>(i)] - mu[static_cast<size_t>(c)]) * rstd, s, b, c);
  }
  Narrow(y, out, dtype);
}

void BatchNormEval(const void* in, const void* scale, const void* bias, const void* mean,
                   const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial,
                   DType dtype) {
  BatchNormEvalWith("Normalization.BatchNormEval", in, scale, bias, mean, var, out, batch, channels, spatial,
                    kEps, dtype);
}

void BatchNormEvalEps(const void* in, const void* scale, const void* bias, const void* mean,
                      const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial,
                      double eps, DType dtype) {
  BatchNormEvalWith("MathExt.BatchNormEvalEps", in, scale, bias, mean, var, out, batch, channels, spatial,
                    eps, dtype);
}

}  // namespace normalization

void RegisterNormalization(KernelTable& table) {
  table.Normalization_GroupNorm = &normalization::GroupNorm;
  table.Normalization_InstanceNorm = &normalization::InstanceNorm;
  table.Normalization_BatchNormEval = &normalization::BatchNormEval;
  table.MathExt_GroupNormEps = &normalization::GroupNormEps;
  table.MathExt_InstanceNormEps = &normalization::InstanceNormEps;
  table.MathExt_BatchNormEvalEps = &normalization::BatchNormEvalEps;
}

}  // namespace backplane::cpu::ref
