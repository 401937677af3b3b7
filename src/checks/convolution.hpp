// The argument checks of the Convolution surface, in the reference's order and words: one
// definition that every backend calls before it touches a buffer (the CPU reference and the CUDA
// kernels), so a bad call fails the same way on every device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backplane/backend/convolution.hpp"
#include "backplane/dtype.hpp"

namespace backplane::checks::convolution {

// One spatial axis of a call: its sizes, its config and the argument names errors use.
struct Axis {
  int64_t in, kernel, out, stride, padding, dilation;
  std::string_view inName, kernelName, outName, strideName, paddingName, dilationName;
};

// Sizes of one validated call.
struct Plan {
  int64_t inCount = 0, weightCount = 0, outCount = 0;
  int64_t inVolume = 0, kernelVolume = 0, outVolume = 0;
};

Axis AxisL(const Conv1DConfig& c, int64_t inL, int64_t kernelL, int64_t outL);
std::array<Axis, 2> AxesHW(const Conv2DConfig& c, int64_t inH, int64_t inW, int64_t kernelH, int64_t kernelW,
                           int64_t outH, int64_t outW);
std::array<Axis, 3> AxesDHW(const Conv3DConfig& c, int64_t inD, int64_t inH, int64_t inW, int64_t kernelD,
                            int64_t kernelH, int64_t kernelW, int64_t outD, int64_t outH, int64_t outW);

// The checks shared by every method, in order: dtype, non-negative sizes, config, kernel > 0,
// output extents (forward, or transposed), element counts, pointers. Bias may be null at any size
// (no bias, torch bias=None). Defined for R = 1, 2, 3.
template <size_t R>
Plan Validate(std::string_view op, bool transposed, const std::array<Axis, R>& axes, const void* in,
              const void* weight, const void* out, int64_t batch, int64_t inChannels, int64_t outChannels,
              DType dtype);
extern template Plan Validate<1>(std::string_view, bool, const std::array<Axis, 1>&, const void*, const void*,
                                 const void*, int64_t, int64_t, int64_t, DType);
extern template Plan Validate<2>(std::string_view, bool, const std::array<Axis, 2>&, const void*, const void*,
                                 const void*, int64_t, int64_t, int64_t, DType);
extern template Plan Validate<3>(std::string_view, bool, const std::array<Axis, 3>&, const void*, const void*,
                                 const void*, int64_t, int64_t, int64_t, DType);

}  // namespace backplane::checks::convolution
