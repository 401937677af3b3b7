// Scalar reference kernels for Matmul.Matmul, C[rows, cols] = A[rows, inner] * B[inner, cols], and
// MathExt.MatmulTransB, C = A * B^T with B [cols, inner]; all row-major. Semantics: docs/semantics/matmul.md.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace matmul {
namespace {

// a * b for non-negative sizes; throws instead of overflowing int64.
int64_t CheckedProduct(std::string_view kOp, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(kOp, arg, "representable in int64",
                         std::to_string(a) + " * " + std::to_string(b) + " overflows");
  }
  return product;
}

}  // namespace

// Every output element is a dot product accumulated in f64 in k order and rounded once to the
// storage format. `out` is always overwritten (inner == 0 gives zeros). The whole product is
// computed before `out` is written, so `out` may alias an operand. B is [inner, cols], or
// [cols, inner] when trans_b.
void Product(std::string_view kOp, bool trans_b, void* out, const void* left, const void* right, int64_t rows,
             int64_t inner, int64_t cols, DType dtype) {
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "rows", rows);
  CheckNonNegative(kOp, "inner", inner);
  CheckNonNegative(kOp, "cols", cols);
  const int64_t left_count = CheckedProduct(kOp, "rows*inner", rows, inner);
  const int64_t right_count = CheckedProduct(kOp, trans_b ? "cols*inner" : "inner*cols", inner, cols);
  const int64_t out_count = CheckedProduct(kOp, "rows*cols", rows, cols);
  CheckPointer(kOp, "out", out, out_count);
  CheckPointer(kOp, "left", left, left_count);
  CheckPointer(kOp, "right", right, right_count);

  const std::vector<double> a = Widen<double>(left, left_count, dtype);
  const std::vector<double> b = Widen<double>(right, right_count, dtype);
  std::vector<double> c(static_cast<size_t>(out_count), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < inner; ++k) {
        acc += a[static_cast<size_t>(r * inner + k)] * b[static_cast<size_t>(trans_b ? j * inner + k : k * cols + j)];
      }
      c[static_cast<size_t>(r * cols + j)] = acc;
    }
  }
  for (int64_t i = 0; i < out_count; ++i)
    StoreResult(out, i, dtype, c[static_cast<size_t>(i)]);
}

void Matmul(void* out, const void* left, const void* right, int64_t rows, int64_t inner,
            int64_t cols, DType dtype) {
  Product("Matmul.Matmul", false, out, left, right, rows, inner, cols, dtype);
}

void MatmulTransB(void* out, const void* left, const void* right, int64_t rows, int64_t inner,
                  int64_t cols, DType dtype) {
  Product("MathExt.MatmulTransB", true, out, left, right, rows, inner, cols, dtype);
}

}  // namespace matmul

void RegisterMatmul(KernelTable& table) {
  table.Matmul_Matmul = &matmul::Matmul;
  table.MathExt_MatmulTransB = &matmul::MatmulTransB;
}

}  // namespace backplane::cpu::ref
