// The own packed f32 GEMM (matmul.cpp) for other kernels: C (+)= A B with leading dimensions.
#pragma once

#include <cstddef>

namespace backplane::cpu::simd {

// Rows below this take other paths (the packed tile has 6 rows).
constexpr size_t kOwnGemmMinRows = 6;

// c [rows, cols] (leading dimension ldc) = a [rows, inner] (lda) * b [inner, cols] (ldb), or
// c += a * b with add_to_c; f32, row-major, on the selected SIMD target; rows >= kOwnGemmMinRows;
// c must not overlap a or b. threads = false when the caller already runs in a parallel region.
// Each output sums over k in the same order whatever the thread count.
void OwnGemmF32(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows,
                size_t inner, size_t cols, bool add_to_c, bool threads);

}  // namespace backplane::cpu::simd
