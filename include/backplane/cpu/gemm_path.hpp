// Which code runs the CPU's large f32 matrix products (Matmul, MatmulTransB): Backplane's own
// packed GEMM (the default; f16/bf16 always use it) or OpenBLAS (BACKPLANE_GEMM=openblas). Both
// are verified against the reference on every target. Own is the default since it measured 1.8x
// OpenBLAS on a core with two 512-bit FMA pipes and 0.93-0.97x on one with a single pipe
// (docs/performance.md; this environment pins OpenBLAS to its AVX2 kernels). f64 is always
// OpenBLAS. Small products take the exact f64-accumulating kernel on either path.
#pragma once

#include <string_view>

namespace backplane::cpu {

enum class GemmPath { Own, OpenBlas };

// The path in force: SetGemmPath's, else BACKPLANE_GEMM ("openblas" or "own"; anything else is
// an InvalidArgument error naming the variable, raised by cpu::CreateBackend), else Own.
GemmPath CurrentGemmPath();
// Overrides the path for the process (tests, benchmarks).
void SetGemmPath(GemmPath path);
std::string_view GemmPathName(GemmPath path);

}  // namespace backplane::cpu
