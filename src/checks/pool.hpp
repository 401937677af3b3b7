// The argument checks of the Pool surface, in the reference's order and words: one definition
// that the CPU reference and the CUDA kernels both call before they touch a buffer.
#pragma once

#include <cstdint>
#include <string_view>

#include "backplane/backend/pool.hpp"
#include "backplane/dtype.hpp"

namespace backplane::checks::pool {

// One spatial axis of a fixed-window pool.
struct Axis {
  int64_t in, out, kernel, stride, padding;
};

Axis Rows(const PoolConfig& c, int64_t inH, int64_t outH);
Axis Cols(const PoolConfig& c, int64_t inW, int64_t outW);

// Validated sizes of one pooling call.
struct Plan {
  int64_t planes = 0;  // batch * channels
  int64_t inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t inCount = 0, outCount = 0;
};

// MaxPool2D / AvgPool2D: dtype, sizes, the window config (kernel and stride > 0, 0 <= padding <=
// kernel / 2), the output extents, element counts and pointers.
Plan ValidateFixed(std::string_view op, const PoolConfig& config, const void* in, const void* out, int64_t batch,
                   int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype);
// The adaptive pools: dtype, sizes, non-empty windows (as torch), element counts and pointers.
Plan ValidateAdaptive(std::string_view op, const void* in, const void* out, int64_t batch, int64_t channels,
                      int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype);

}  // namespace backplane::checks::pool
