// Which code runs the CPU's f32 (and f16/bf16) 3x3 stride-1 2-D convolutions with at least 16
// input and output channels: Winograd F(2x2, 3x3) (the default; 2.25x fewer multiplies, results
// within the same error bound as the direct sums on the conformance cases) or the direct register
// tiles (BACKPLANE_CONV=direct), which every other convolution uses. Inputs or weights that are
// not finite, or large enough that the transforms could overflow, always take the direct tiles.
#pragma once

#include <string_view>

namespace backplane::cpu {

enum class ConvPath { Winograd, Direct };

// The path in force: SetConvPath's, else BACKPLANE_CONV ("winograd" or "direct"; anything else is
// an InvalidArgument error naming the variable, raised by cpu::CreateBackend), else Winograd.
ConvPath CurrentConvPath();
// Overrides the path for the process (tests, benchmarks).
void SetConvPath(ConvPath path);
std::string_view ConvPathName(ConvPath path);

}  // namespace backplane::cpu
