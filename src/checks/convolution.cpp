#include "checks/convolution.hpp"
#include "checks/overflow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "backplane/error.hpp"

namespace backplane::checks::convolution {
namespace {

// Stride and dilation > 0, padding >= 0.
void CheckAxisConfig(std::string_view op, const Axis& a) {
  CheckPositive(op, a.strideName, a.stride);
  CheckNonNegative(op, a.paddingName, a.padding);
  CheckPositive(op, a.dilationName, a.dilation);
}

// dilation * (kernel - 1), the span of the dilated kernel minus one.
int64_t DilatedSpan(std::string_view op, const Axis& a) {
  return MulOrThrow(op, a.kernelName, a.dilation, a.kernel - 1);
}

// Forward convolution: out = floor((in + 2p - d(k-1) - 1) / s) + 1, and the padded input must
// hold the dilated kernel. An empty input has an empty output.
void CheckForwardExtent(std::string_view op, const Axis& a) {
  int64_t expected = 0;
  if (a.in > 0) {
    const int64_t twoPad = MulOrThrow(op, a.paddingName, 2, a.padding);
    const int64_t padded = AddOrThrow(op, a.paddingName, a.in, twoPad);
    const int64_t span = DilatedSpan(op, a);
    if (padded <= span) {
      ThrowShapeMismatch(op, a.inName,
                         fmt::format("> {} ({}*({} - 1) - 2*{})", span - twoPad, a.dilationName,
                                     a.kernelName, a.paddingName),
                         std::to_string(a.in));
    }
    expected = (padded - span - 1) / a.stride + 1;
  }
  if (a.out != expected) {
    ThrowShapeMismatch(
        op, a.outName,
        fmt::format("{} (from {}, {} and the config)", expected, a.inName, a.kernelName),
        std::to_string(a.out));
  }
}

// Transposed convolution: out = (in - 1)s - 2p + d(k-1) + 1 + output_padding with
// 0 <= output_padding < max(s, d) (torch's rule) and out >= 1. An empty input has an empty output.
void CheckTransposedExtent(std::string_view op, const Axis& a) {
  if (a.in == 0) {
    if (a.out != 0) {
      ThrowShapeMismatch(op, a.outName, fmt::format("0 (from {} = 0)", a.inName),
                         std::to_string(a.out));
    }
    return;
  }
  const int64_t grown = MulOrThrow(op, a.strideName, a.in - 1, a.stride);
  const int64_t shrink = MulOrThrow(op, a.paddingName, 2, a.padding);
  const int64_t base = AddOrThrow(op, a.kernelName, AddOrThrow(op, a.kernelName, grown - shrink, 1),
                                  DilatedSpan(op, a));
  const int64_t extra = std::max(a.stride, a.dilation) - 1;  // largest output_padding
  const int64_t highest = AddOrThrow(op, a.outName, base, extra);
  if (a.out < std::max<int64_t>(base, 1) || a.out > highest) {
    ThrowShapeMismatch(op, a.outName,
                       fmt::format("{} + output_padding with 0 <= output_padding <= {}, and >= 1 "
                                   "(({} - 1)*{} - 2*{} + {}*({} - 1) + 1)",
                                   base, extra, a.inName, a.strideName, a.paddingName,
                                   a.dilationName, a.kernelName),
                       std::to_string(a.out));
  }
}

// Product of one member over the axes (the element count of a spatial block).
template <size_t R>
int64_t Volume(std::string_view op, std::string_view arg, const std::array<Axis, R>& axes,
               int64_t Axis::*member) {
  int64_t volume = 1;
  for (const Axis& a : axes) volume = MulOrThrow(op, arg, volume, a.*member);
  return volume;
}

}  // namespace

Axis AxisL(const Conv1DConfig& c, int64_t inL, int64_t kernelL, int64_t outL) {
  return {inL,   kernelL,   outL,   c.Stride,        c.Padding,        c.Dilation,
          "inL", "kernelL", "outL", "config.Stride", "config.Padding", "config.Dilation"};
}

std::array<Axis, 2> AxesHW(const Conv2DConfig& c, int64_t inH, int64_t inW, int64_t kernelH,
                           int64_t kernelW, int64_t outH, int64_t outW) {
  return {{{inH, kernelH, outH, c.StrideH, c.PaddingH, c.DilationH, "inH", "kernelH", "outH",
            "config.StrideH", "config.PaddingH", "config.DilationH"},
           {inW, kernelW, outW, c.StrideW, c.PaddingW, c.DilationW, "inW", "kernelW", "outW",
            "config.StrideW", "config.PaddingW", "config.DilationW"}}};
}

std::array<Axis, 3> AxesDHW(const Conv3DConfig& c, int64_t inD, int64_t inH, int64_t inW, int64_t kernelD,
                            int64_t kernelH, int64_t kernelW, int64_t outD, int64_t outH, int64_t outW) {
  return {{
      {inD, kernelD, outD, c.StrideD, c.PaddingD, c.DilationD, "inD", "kernelD", "outD", "config.StrideD",
       "config.PaddingD", "config.DilationD"},
      {inH, kernelH, outH, c.StrideH, c.PaddingH, c.DilationH, "inH", "kernelH", "outH", "config.StrideH",
       "config.PaddingH", "config.DilationH"},
      {inW, kernelW, outW, c.StrideW, c.PaddingW, c.DilationW, "inW", "kernelW", "outW", "config.StrideW",
       "config.PaddingW", "config.DilationW"},
  }};
}

template <size_t R>
Plan Validate(std::string_view op, bool transposed, const std::array<Axis, R>& axes, const void* in,
              const void* weight, const void* out, int64_t batch, int64_t inChannels,
              int64_t outChannels, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "inChannels", inChannels);
  for (const Axis& a : axes) CheckNonNegative(op, a.inName, a.in);
  CheckNonNegative(op, "outChannels", outChannels);
  for (const Axis& a : axes) CheckNonNegative(op, a.kernelName, a.kernel);
  for (const Axis& a : axes) CheckNonNegative(op, a.outName, a.out);
  for (const Axis& a : axes) CheckAxisConfig(op, a);
  for (const Axis& a : axes) CheckPositive(op, a.kernelName, a.kernel);
  for (const Axis& a : axes) {
    if (transposed) {
      CheckTransposedExtent(op, a);
    } else {
      CheckForwardExtent(op, a);
    }
  }
  Plan p;
  p.inVolume = Volume(op, "in", axes, &Axis::in);
  p.kernelVolume = Volume(op, "weight", axes, &Axis::kernel);
  p.outVolume = Volume(op, "out", axes, &Axis::out);
  p.inCount = MulOrThrow(op, "in", MulOrThrow(op, "in", batch, inChannels), p.inVolume);
  p.weightCount =
      MulOrThrow(op, "weight", MulOrThrow(op, "weight", outChannels, inChannels), p.kernelVolume);
  p.outCount = MulOrThrow(op, "out", MulOrThrow(op, "out", batch, outChannels), p.outVolume);
  CheckPointer(op, "in", in, p.inCount);
  CheckPointer(op, "weight", weight, p.weightCount);
  CheckPointer(op, "out", out, p.outCount);
  return p;  // bias may be null at any size: no bias (torch bias=None).
}

template Plan Validate<1>(std::string_view, bool, const std::array<Axis, 1>&, const void*, const void*, const void*,
                          int64_t, int64_t, int64_t, DType);
template Plan Validate<2>(std::string_view, bool, const std::array<Axis, 2>&, const void*, const void*, const void*,
                          int64_t, int64_t, int64_t, DType);
template Plan Validate<3>(std::string_view, bool, const std::array<Axis, 3>&, const void*, const void*, const void*,
                          int64_t, int64_t, int64_t, DType);

}  // namespace backplane::checks::convolution
