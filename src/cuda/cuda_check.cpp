#include "cuda/cuda_check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include <string>

#include "backplane/error.hpp"
#include "cuda/context.hpp"
#include "cuda/cublas_library.hpp"

namespace backplane::cuda {

void CheckCuda(int status, std::string_view call) {
  const auto error = static_cast<cudaError_t>(status);
  if (error == cudaSuccess) return;
  ErrorCode code = ErrorCode::Internal;
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver || error == cudaErrorInitializationError) {
    code = ErrorCode::DeviceUnavailable;
  } else if (error == cudaErrorMemoryAllocation) {
    code = ErrorCode::OutOfMemory;
  }
  throw Error(code, call, std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")");
}

void CheckCublas(int status, std::string_view call) {
  const auto s = static_cast<cublasStatus_t>(status);
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw Error(s == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Internal, call,
              std::string(CublasApi().status_string(s)) + " (" + CublasApi().status_name(s) + ")");
}

void CheckCufft(int status, std::string_view call) {
  if (status == CUFFT_SUCCESS) return;
  throw Error(status == CUFFT_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Internal, call,
              "cuFFT status " + std::to_string(status));
}

void FinishMethod(std::string_view op) {
  const cudaError_t launch = cudaGetLastError();
  if (launch != cudaSuccess) CheckCuda(launch, std::string(op) + ": kernel launch");
  CheckCuda(cudaStreamSynchronize(Stream()), std::string(op) + ": cudaStreamSynchronize");
}

}  // namespace backplane::cuda
