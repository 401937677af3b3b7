// The argument checks of the Normalization surface (and the MathExt eps variants), in the
// reference's order and words, called by the CPU reference and the CUDA kernels.
#pragma once

#include <cstdint>
#include <string_view>

#include "backplane/dtype.hpp"

namespace backplane::checks::normalization {

// The checks every method starts with: dtype, then non-negative sizes.
void CheckSizes(std::string_view op, int64_t batch, int64_t channels, int64_t spatial, DType dtype);
// The element count of `in` and `out`, after checking both pointers. scale and bias may be null
// (no affine step), so they are not checked.
int64_t CheckBuffers(std::string_view op, const void* in, const void* out, int64_t batch, int64_t channels,
                     int64_t spatial);
// eps must be finite and >= 0 (the seed methods' 1e-5 always is).
void CheckEps(std::string_view op, double eps);

}  // namespace backplane::checks::normalization
