// Scalar reference kernels for the Convolution surface: cross-correlation over NCL / NCHW / NCDHW
// tensors with stride, zero padding and dilation (torch.nn.functional.conv1d/conv2d/conv3d) and the
// 2-D transposed convolution (conv_transpose2d, weight [Cin, Cout, kH, kW], with output_padding).
// Inputs are widened exactly to double, every output is one double accumulator (bias first, then
// the taps) and is rounded once to the storage format. Semantics: docs/semantics/convolution.md.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "checks/convolution.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace convolution {
namespace {

using checks::convolution::AxesDHW;
using checks::convolution::AxesHW;
using checks::convolution::Axis;
using checks::convolution::AxisL;
using checks::convolution::Plan;
using checks::convolution::Validate;

// Splits a row-major flat index over `extent` into per-axis coordinates.
template <size_t R>
std::array<int64_t, R> Unflatten(int64_t flat, const std::array<int64_t, R>& extent) {
  std::array<int64_t, R> index{};
  for (size_t r = R; r-- > 0;) {
    index[r] = flat % extent[r];
    flat /= extent[r];
  }
  return index;
}

template <size_t R>
std::array<int64_t, R> Extents(const std::array<Axis, R>& axes, int64_t Axis::*member) {
  std::array<int64_t, R> extent{};
  for (size_t r = 0; r < R; ++r) extent[r] = axes[r].*member;
  return extent;
}

// out[n, co, o...] = bias[co] + sum over ci and kernel taps k... of
//   in[n, ci, o*stride + k*dilation - padding ...] * weight[co, ci, k...],
// skipping taps outside the input (zero padding). Accumulated in double; stored at the end, so
// `out` may alias an input.
template <size_t R>
void Forward(const Plan& p, const std::array<Axis, R>& axes, const void* in, const void* weight,
             const void* bias, void* out, int64_t batch, int64_t inChannels, int64_t outChannels,
             DType dtype) {
  const std::vector<double> x = Widen<double>(in, p.inCount, dtype);
  const std::vector<double> w = Widen<double>(weight, p.weightCount, dtype);
  const std::vector<double> b =
      bias != nullptr ? Widen<double>(bias, outChannels, dtype) : std::vector<double>{};
  const auto outExtent = Extents(axes, &Axis::out);
  const auto kernelExtent = Extents(axes, &Axis::kernel);
  std::vector<double> y(static_cast<size_t>(p.outCount));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t co = 0; co < outChannels; ++co) {
      for (int64_t o = 0; o < p.outVolume; ++o) {
        const auto outIndex = Unflatten(o, outExtent);
        double acc = b.empty() ? 0.0 : b[static_cast<size_t>(co)];
        for (int64_t ci = 0; ci < inChannels; ++ci) {
          const double* plane = x.data() + (n * inChannels + ci) * p.inVolume;
          const double* filter = w.data() + (co * inChannels + ci) * p.kernelVolume;
          for (int64_t k = 0; k < p.kernelVolume; ++k) {
            const auto tap = Unflatten(k, kernelExtent);
            int64_t offset = 0;
            bool inside = true;
            for (size_t r = 0; r < R && inside; ++r) {
              const Axis& a = axes[r];
              const int64_t i = outIndex[r] * a.stride + tap[r] * a.dilation - a.padding;
              inside = i >= 0 && i < a.in;
              offset = offset * a.in + i;
            }
            if (inside) acc += plane[offset] * filter[k];
          }
        }
        y[static_cast<size_t>((n * outChannels + co) * p.outVolume + o)] = acc;
      }
    }
  }
  Narrow(y, out, dtype);
}

// The input position that kernel tap k scatters onto output position o along one axis of a
// transposed convolution (o = i*stride + k*dilation - padding), or -1 when there is none.
int64_t TransposedSource(const Axis& a, int64_t o, int64_t k) {
  const int64_t t = o + a.padding - k * a.dilation;
  if (t < 0 || t % a.stride != 0) return -1;
  const int64_t i = t / a.stride;
  return i < a.in ? i : -1;
}

}  // namespace

// 2-D cross-correlation, in [N, Cin, H, W], weight [Cout, Cin, kH, kW], out [N, Cout, oH, oW].
void Conv2D(const Conv2DConfig& config, const void* in, const void* weight, const void* bias,
            void* out, int64_t batch, int64_t inChannels, int64_t inH, int64_t inW,
            int64_t outChannels, int64_t kernelH, int64_t kernelW, int64_t outH, int64_t outW,
            DType dtype) {
  const auto axes = AxesHW(config, inH, inW, kernelH, kernelW, outH, outW);
  const Plan p = Validate("Convolution.Conv2D", false, axes, in, weight, out, batch, inChannels,
                          outChannels, dtype);
  Forward(p, axes, in, weight, bias, out, batch, inChannels, outChannels, dtype);
}

// 1-D cross-correlation, in [N, Cin, L], weight [Cout, Cin, k], out [N, Cout, oL].
void Conv1D(const Conv1DConfig& config, const void* in, const void* weight, const void* bias,
            void* out, int64_t batch, int64_t inChannels, int64_t inL, int64_t outChannels,
            int64_t kernelL, int64_t outL, DType dtype) {
  const std::array<Axis, 1> axes = {AxisL(config, inL, kernelL, outL)};
  const Plan p = Validate("Convolution.Conv1D", false, axes, in, weight, out, batch, inChannels,
                          outChannels, dtype);
  Forward(p, axes, in, weight, bias, out, batch, inChannels, outChannels, dtype);
}

// 3-D cross-correlation, in [N, Cin, D, H, W], weight [Cout, Cin, kD, kH, kW].
void Conv3D(const Conv3DConfig& config, const void* in, const void* weight, const void* bias,
            void* out, int64_t batch, int64_t inChannels, int64_t inD, int64_t inH, int64_t inW,
            int64_t outChannels, int64_t kernelD, int64_t kernelH, int64_t kernelW, int64_t outD,
            int64_t outH, int64_t outW, DType dtype) {
  const auto axes = AxesDHW(config, inD, inH, inW, kernelD, kernelH, kernelW, outD, outH, outW);
  const Plan p = Validate("Convolution.Conv3D", false, axes, in, weight, out, batch, inChannels,
                          outChannels, dtype);
  Forward(p, axes, in, weight, bias, out, batch, inChannels, outChannels, dtype);
}

// 2-D transposed convolution (the gradient of Conv2D with respect to its input), in
// [N, Cin, H, W], weight [Cin, Cout, kH, kW], out [N, Cout, oH, oW]:
//   out[n, co, oh, ow] = bias[co] + sum of in[n, ci, ih, iw] * weight[ci, co, kh, kw]
//   over every (ci, ih, iw, kh, kw) with ih*sH + kh*dH - pH = oh and iw*sW + kw*dW - pW = ow.
// Each output is gathered into one double accumulator.
void ConvTranspose2D(const Conv2DConfig& config, const void* in, const void* weight,
                     const void* bias, void* out, int64_t batch, int64_t inChannels, int64_t inH,
                     int64_t inW, int64_t outChannels, int64_t kernelH, int64_t kernelW,
                     int64_t outH, int64_t outW, DType dtype) {
  const auto axes = AxesHW(config, inH, inW, kernelH, kernelW, outH, outW);
  const Plan p = Validate("Convolution.ConvTranspose2D", true, axes, in, weight, out, batch,
                          inChannels, outChannels, dtype);
  const std::vector<double> x = Widen<double>(in, p.inCount, dtype);
  const std::vector<double> w = Widen<double>(weight, p.weightCount, dtype);
  const std::vector<double> b =
      bias != nullptr ? Widen<double>(bias, outChannels, dtype) : std::vector<double>{};
  std::vector<double> y(static_cast<size_t>(p.outCount));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t co = 0; co < outChannels; ++co) {
      for (int64_t oh = 0; oh < outH; ++oh) {
        for (int64_t ow = 0; ow < outW; ++ow) {
          double acc = b.empty() ? 0.0 : b[static_cast<size_t>(co)];
          for (int64_t ci = 0; ci < inChannels; ++ci) {
            const double* plane = x.data() + (n * inChannels + ci) * inH * inW;
            const double* filter = w.data() + (ci * outChannels + co) * kernelH * kernelW;
            for (int64_t kh = 0; kh < kernelH; ++kh) {
              const int64_t ih = TransposedSource(axes[0], oh, kh);
              if (ih < 0) continue;
              for (int64_t kw = 0; kw < kernelW; ++kw) {
                const int64_t iw = TransposedSource(axes[1], ow, kw);
                if (iw >= 0) acc += plane[ih * inW + iw] * filter[kh * kernelW + kw];
              }
            }
          }
          y[static_cast<size_t>(((n * outChannels + co) * outH + oh) * outW + ow)] = acc;
        }
      }
    }
  }
  Narrow(y, out, dtype);
}

}  // namespace convolution

void RegisterConvolution(KernelTable& table) {
  table.Convolution_Conv2D = &convolution::Conv2D;
  table.Convolution_Conv1D = &convolution::Conv1D;
  table.Convolution_Conv3D = &convolution::Conv3D;
  table.Convolution_ConvTranspose2D = &convolution::ConvTranspose2D;
}

}  // namespace backplane::cpu::ref
