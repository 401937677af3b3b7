// Scalar reference kernels for the Pool surface: 2-D max and average pooling over NCHW tensors,
// with fixed windows (MaxPool2D, AvgPool2D: torch.nn.functional.max_pool2d and
// avg_pool2d(count_include_pad=False)) and PyTorch's adaptive windows (adaptive_max_pool2d,
// adaptive_avg_pool2d). Inputs are widened exactly to double, window sums are taken in double and
// each result is rounded once to the storage format. Semantics: docs/semantics/pool.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "checks/pool.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace pool {
namespace {

// The in-bounds taps [begin, end) of one window along one axis.
struct Range {
  int64_t begin, end;
};

using checks::pool::Axis;
using checks::pool::Cols;
using checks::pool::Plan;
using checks::pool::Rows;
using checks::pool::ValidateAdaptive;
using checks::pool::ValidateFixed;

// Window o of a fixed-window pool, clipped to the input. With in > 0 and padding <= kernel / 2
// every window holds at least one in-bounds tap.
Range FixedWindow(const Axis& a, int64_t o) {
  const int64_t start = o * a.stride - a.padding;
  return {std::max<int64_t>(start, 0), std::min(start + a.kernel, a.in)};
}

// PyTorch's adaptive window o: [floor(o*in/out), ceil((o+1)*in/out)). Never empty when in, out > 0.
Range AdaptiveWindow(int64_t in, int64_t out, int64_t o) {
  return {(o * in) / out, ((o + 1) * in + out - 1) / out};
}

// Max over the rectangle; NaN propagates (as torch: a NaN tap replaces the running max).
double MaxOf(const double* plane, int64_t width, Range rows, Range cols) {
  double best = -std::numeric_limits<double>::infinity();
  for (int64_t h = rows.begin; h < rows.end; ++h) {
    for (int64_t w = cols.begin; w < cols.end; ++w) {
      const double v = plane[h * width + w];
      if (std::isnan(v) || v > best) best = v;
    }
  }
  return best;
}

// Mean over the rectangle (in-bounds taps only), summed in double.
double MeanOf(const double* plane, int64_t width, Range rows, Range cols) {
  double sum = 0.0;
  for (int64_t h = rows.begin; h < rows.end; ++h) {
    for (int64_t w = cols.begin; w < cols.end; ++w) sum += plane[h * width + w];
  }
  return sum / static_cast<double>((rows.end - rows.begin) * (cols.end - cols.begin));
}

// Runs `reduce` over every output window of every plane; the result is computed in full before
// anything is stored, so `out` may alias `in`.
template <class RowWindow, class ColWindow, class Reduce>
void Run(const Plan& p, const void* in, void* out, DType dtype, RowWindow rowWindow,
         ColWindow colWindow, Reduce reduce) {
  const std::vector<double> x = Widen<double>(in, p.inCount, dtype);
  std::vector<double> y(static_cast<size_t>(p.outCount));
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const double* src = x.data() + plane * p.inH * p.inW;
    double* dst = y.data() + plane * p.outH * p.outW;
    for (int64_t oh = 0; oh < p.outH; ++oh) {
      const Range rows = rowWindow(oh);
      for (int64_t ow = 0; ow < p.outW; ++ow) {
        dst[oh * p.outW + ow] = reduce(src, p.inW, rows, colWindow(ow));
      }
    }
  }
  Narrow(y, out, dtype);
}

template <class Reduce>
void RunFixed(const PoolConfig& config, const Plan& p, const void* in, void* out, DType dtype,
              Reduce reduce) {
  const Axis rows = Rows(config, p.inH, p.outH);
  const Axis cols = Cols(config, p.inW, p.outW);
  Run(
      p, in, out, dtype, [&](int64_t oh) { return FixedWindow(rows, oh); },
      [&](int64_t ow) { return FixedWindow(cols, ow); }, reduce);
}

template <class Reduce>
void RunAdaptive(const Plan& p, const void* in, void* out, DType dtype, Reduce reduce) {
  Run(
      p, in, out, dtype, [&](int64_t oh) { return AdaptiveWindow(p.inH, p.outH, oh); },
      [&](int64_t ow) { return AdaptiveWindow(p.inW, p.outW, ow); }, reduce);
}

}  // namespace

// out[n,c,oh,ow] = max of the in-bounds taps of window (oh*sH - pH .., ow*sW - pW ..), kH x kW.
void MaxPool2D(const PoolConfig& config, const void* in, void* out, int64_t batch, int64_t channels,
               int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const Plan p = ValidateFixed("Pool.MaxPool2D", config, in, out, batch, channels, inH, inW, outH,
                               outW, dtype);
  RunFixed(config, p, in, out, dtype, MaxOf);
}

// out[n,c,oh,ow] = mean of the in-bounds taps of the window (count_include_pad = false).
void AvgPool2D(const PoolConfig& config, const void* in, void* out, int64_t batch, int64_t channels,
               int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const Plan p = ValidateFixed("Pool.AvgPool2D", config, in, out, batch, channels, inH, inW, outH,
                               outW, dtype);
  RunFixed(config, p, in, out, dtype, MeanOf);
}

// out[n,c,oh,ow] = max over rows [floor(oh*inH/outH), ceil((oh+1)*inH/outH)), columns likewise.
void AdaptiveMaxPool2D(const void* in, void* out, int64_t batch, int64_t channels, int64_t inH,
                       int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const Plan p = ValidateAdaptive("Pool.AdaptiveMaxPool2D", in, out, batch, channels, inH, inW,
                                  outH, outW, dtype);
  RunAdaptive(p, in, out, dtype, MaxOf);
}

// Same windows as AdaptiveMaxPool2D, mean.
void AdaptiveAvgPool2D(const void* in, void* out, int64_t batch, int64_t channels, int64_t inH,
                       int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const Plan p = ValidateAdaptive("Pool.AdaptiveAvgPool2D", in, out, batch, channels, inH, inW,
                                  outH, outW, dtype);
  RunAdaptive(p, in, out, dtype, MeanOf);
}

}  // namespace pool

void RegisterPool(KernelTable& table) {
  table.Pool_MaxPool2D = &pool::MaxPool2D;
  table.Pool_AvgPool2D = &pool::AvgPool2D;
  table.Pool_AdaptiveMaxPool2D = &pool::AdaptiveMaxPool2D;
  table.Pool_AdaptiveAvgPool2D = &pool::AdaptiveAvgPool2D;
}

}  // namespace backplane::cpu::ref
