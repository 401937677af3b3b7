// Matmul.Matmul and MathExt.MatmulTransB on cuBLAS (row-major C = A B or A B^T as the column-major
// product C^T = B^T A^T). f32 runs in f32 without TF32, f64 in f64, f16/bf16 operands accumulate in
// f32 and round once on store, as the reference. Semantics: docs/semantics/matmul.md.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "backplane/dtype.hpp"
#include "backplane/error.hpp"
#include "cuda/kernels/device_scratch.hpp"
#include "cuda/context.hpp"
#include "cuda/cublas_library.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_table.hpp"

namespace backplane::cuda {
namespace {

int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "representable in int64", std::to_string(a) + " * " + std::to_string(b) + " overflows");
  }
  return product;
}

void Product(std::string_view op, bool trans_b, void* out, const void* left, const void* right, int64_t rows,
             int64_t inner, int64_t cols, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "rows", rows);
  CheckNonNegative(op, "inner", inner);
  CheckNonNegative(op, "cols", cols);
  const int64_t left_count = CheckedProduct(op, "rows*inner", rows, inner);
  const int64_t right_count = CheckedProduct(op, trans_b ? "cols*inner" : "inner*cols", inner, cols);
  const int64_t out_count = CheckedProduct(op, "rows*cols", rows, cols);
  CheckPointer(op, "out", out, out_count);
  CheckPointer(op, "left", left, left_count);
  CheckPointer(op, "right", right, right_count);
  if (out_count == 0) return;

  const size_t element = DTypeStorageBytes(dtype, 1);
  const size_t out_bytes = static_cast<size_t>(out_count) * element;
  cudaStream_t stream = Stream();
  if (inner == 0) {
    CheckCuda(cudaMemsetAsync(out, 0, out_bytes, stream), std::string(op) + ": cudaMemsetAsync");
    Synchronize(std::string(op).c_str());
    return;
  }
  // cuBLAS needs C apart from A and B; an aliased output goes through a scratch buffer.
  const bool aliased = Overlaps(out, out_bytes, left, static_cast<size_t>(left_count) * element) ||
                       Overlaps(out, out_bytes, right, static_cast<size_t>(right_count) * element);
  void* c = out;
  if (aliased) CheckCuda(cudaMallocAsync(&c, out_bytes, stream), std::string(op) + ": cudaMallocAsync");

  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  const float alpha32 = 1.0f, beta32 = 0.0f;
  const double alpha64 = 1.0, beta64 = 0.0;
  const void* alpha = &alpha32;
  const void* beta = &beta32;
  switch (dtype) {
    case DType::Float64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; alpha = &alpha64; beta = &beta64; break;
    case DType::Float32: type = CUDA_R_32F; break;
    case DType::Float16: type = CUDA_R_16F; break;
    case DType::BFloat16: type = CUDA_R_16BF; break;
    default: ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
  // Column-major view: C^T [cols x rows] = op(B^T) [cols x inner] * A^T [inner x rows].
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ldb = trans_b ? inner : cols;
  const cublasStatus_t status =
      CublasApi().gemm_ex_64(Cublas(), op_b, CUBLAS_OP_N, cols, rows, inner, alpha, right, type, ldb, left, type, inner,
                      beta, c, type, cols, compute, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    if (aliased) cudaFreeAsync(c, stream);
    CheckCublas(status, std::string(op) + ": cublasGemmEx");
  }
  if (aliased) {
    CheckCuda(cudaMemcpyAsync(out, c, out_bytes, cudaMemcpyDeviceToDevice, stream), std::string(op) + ": cudaMemcpyAsync");
    CheckCuda(cudaFreeAsync(c, stream), std::string(op) + ": cudaFreeAsync");
  }
  Synchronize(std::string(op).c_str());
}

void Matmul(void* out, const void* left, const void* right, int64_t rows, int64_t inner, int64_t cols, DType dtype) {
  Product("Matmul.Matmul", false, out, left, right, rows, inner, cols, dtype);
}

void MatmulTransB(void* out, const void* left, const void* right, int64_t rows, int64_t inner, int64_t cols,
                  DType dtype) {
  Product("MathExt.MatmulTransB", true, out, left, right, rows, inner, cols, dtype);
}

}  // namespace

void RegisterMatmul(KernelTable& table) {
  table.Matmul_Matmul = &Matmul;
  table.MathExt_MatmulTransB = &MatmulTransB;
}

}  // namespace backplane::cuda
