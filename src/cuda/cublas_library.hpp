// cuBLAS, loaded with dlopen on first use: linking it would map its 600 MB (with cuBLASLt) into
// every process that links Backplane, GPU or not, and cost 0.1 s per start.
#pragma once

#include <cublas_v2.h>

namespace backplane::cuda {

struct CublasLibrary {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasGemmEx_64) gemm_ex_64 = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
};

// Loads libcublas.so.<CUDA major> once; throws Error(DeviceUnavailable) naming the library and
// dlerror() when it or a symbol is missing.
const CublasLibrary& CublasApi();

}  // namespace backplane::cuda
