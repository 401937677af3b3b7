// Which code runs the CPU's large f32 matrix products (Matmul, MatmulTransB): OpenBLAS (the
// default) or Backplane's own packed GEMM (BACKPLANE_GEMM=own; f16/bf16 always use it). The own
// path is verified against the reference on every target; it is not the default because it is
// still slower than OpenBLAS on the measured machine (docs/performance.md). f64 is always
// OpenBLAS. Small products take the exact f64-accumulating kernel on either path.
#pragma once

#include <string_view>

namespace backplane::cpu {

enum class GemmPath { Own, OpenBlas };

// The path in force: SetGemmPath's, else BACKPLANE_GEMM ("openblas" or "own"; anything else is
// an InvalidArgument error naming the variable, raised by cpu::CreateBackend), else OpenBlas.
GemmPath CurrentGemmPath();
// Overrides the path for the process (tests, benchmarks).
void SetGemmPath(GemmPath path);
std::string_view GemmPathName(GemmPath path);

}  // namespace backplane::cpu
