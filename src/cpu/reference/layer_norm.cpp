// Scalar reference kernels for the LayerNorm surface over [rows, lastDim] tensors: LayerNorm
// (torch.nn.functional.layer_norm over the last dimension, eps 1e-5, biased variance) and RMSNorm
// (y = x * scale / sqrt(mean(x^2) + 1e-6)). Row statistics are taken in double (two passes for
// LayerNorm); every output is computed in double and rounded once to the storage format. scale
// and bias have lastDim elements and may be null (weight 1, bias 0).
// Semantics: docs/semantics/layer_norm.md.
#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace layer_norm {
namespace {

constexpr double kLayerNormEps = 1e-5;
constexpr double kRMSNormEps = 1e-6;

// Checks dtype, sizes and the in/out pointers; returns rows * lastDim.
int64_t Validate(std::string_view op, const void* in, const void* out, int64_t rows,
                 int64_t lastDim, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "rows", rows);
  CheckNonNegative(op, "lastDim", lastDim);
  int64_t count = 0;
  if (__builtin_mul_overflow(rows, lastDim, &count)) {
    ThrowInvalidArgument(op, "rows", "small enough for rows * lastDim to fit in int64",
                         fmt::format("{} * {}", rows, lastDim));
  }
  CheckPointer(op, "in", in, count);
  CheckPointer(op, "out", out, count);
  return count;
}

// The optional per-column parameters, widened; empty when the pointer is null.
std::vector<double> Optional(const void* values, int64_t lastDim, DType dtype) {
  return values != nullptr ? Widen<double>(values, lastDim, dtype) : std::vector<double>{};
}

}  // namespace

// Per row: mu = mean(x), var = mean((x - mu)^2), y_j = (x_j - mu) / sqrt(var + eps) * scale[j]
// + bias[j]; the scale and bias steps are skipped when the pointer is null.
void LayerNormWith(std::string_view op, const void* in, const void* scale, const void* bias, void* out,
                   int64_t rows, int64_t lastDim, double eps, DType dtype) {
  const int64_t count = Validate(op, in, out, rows, lastDim, dtype);
  if (!(std::isfinite(eps) && eps >= 0.0)) {
    ThrowInvalidArgument(op, "eps", "finite and >= 0", fmt::format("{}", eps));
  }
  if (count == 0) return;
  const std::vector<double> x = Widen<double>(in, count, dtype);
  const std::vector<double> s = Optional(scale, lastDim, dtype);
  const std::vector<double> b = Optional(bias, lastDim, dtype);
  const double n = static_cast<double>(lastDim);
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * lastDim;
    double sum = 0.0;
    for (int64_t j = 0; j < lastDim; ++j) sum += row[j];
    const double mean = sum / n;
    double squares = 0.0;
    for (int64_t j = 0; j < lastDim; ++j) squares += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1.0 / std::sqrt(squares / n + eps);
    for (int64_t j = 0; j < lastDim; ++j) {
      double v = (row[j] - mean) * rstd;
      if (!s.empty()) v *= s[static_cast<size_t>(j)];
      if (!b.empty()) v += b[static_cast<size_t>(j)];
      y[static_cast<size_t>(r * lastDim + j)] = v;
    }
  }
  Narrow(y, out, dtype);
}

void LayerNorm(const void* in, const void* scale, const void* bias, void* out, int64_t rows,
               int64_t lastDim, DType dtype) {
  LayerNormWith("LayerNorm.LayerNorm", in, scale, bias, out, rows, lastDim, kLayerNormEps, dtype);
}

void LayerNormEps(const void* in, const void* scale, const void* bias, void* out, int64_t rows,
                  int64_t lastDim, double eps, DType dtype) {
  LayerNormWith("MathExt.LayerNormEps", in, scale, bias, out, rows, lastDim, eps, dtype);
}

// Per row: y_j = x_j * scale[j] / sqrt(mean(x^2) + eps); no mean subtraction, no bias.
void RMSNormWith(std::string_view op, const void* in, const void* scale, void* out, int64_t rows,
                 int64_t lastDim, double eps, DType dtype) {
  const int64_t count = Validate(op, in, out, rows, lastDim, dtype);
  if (!(std::isfinite(eps) && eps >= 0.0)) {
    ThrowInvalidArgument(op, "eps", "finite and >= 0", fmt::format("{}", eps));
  }
  if (count == 0) return;
  const std::vector<double> x = Widen<double>(in, count, dtype);
  const std::vector<double> s = Optional(scale, lastDim, dtype);
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * lastDim;
    double squares = 0.0;
    for (int64_t j = 0; j < lastDim; ++j) squares += row[j] * row[j];
    const double rms = std::sqrt(squares / static_cast<double>(lastDim) + eps);
    for (int64_t j = 0; j < lastDim; ++j) {
      double v = row[j] / rms;
      if (!s.empty()) v *= s[static_cast<size_t>(j)];
      y[static_cast<size_t>(r * lastDim + j)] = v;
    }
  }
  Narrow(y, out, dtype);
}

void RMSNorm(const void* in, const void* scale, void* out, int64_t rows, int64_t lastDim,
             DType dtype) {
  RMSNormWith("LayerNorm.RMSNorm", in, scale, out, rows, lastDim, kRMSNormEps, dtype);
}

void RMSNormEps(const void* in, const void* scale, void* out, int64_t rows, int64_t lastDim,
                double eps, DType dtype) {
  RMSNormWith("MathExt.RMSNormEps", in, scale, out, rows, lastDim, eps, dtype);
}

}  // namespace layer_norm

void RegisterLayerNorm(KernelTable& table) {
  table.LayerNorm_LayerNorm = &layer_norm::LayerNorm;
  table.LayerNorm_RMSNorm = &layer_norm::RMSNorm;
  table.MathExt_RMSNormEps = &layer_norm::RMSNormEps;
  table.MathExt_LayerNormEps = &layer_norm::LayerNormEps;
}

}  // namespace backplane::cpu::ref
