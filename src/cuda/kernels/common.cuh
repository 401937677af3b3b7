// What every CUDA kernel file shares: storage loads and stores in the compute type, the float
// dtype switch, launch sizes, and the end of a method (launch check, then the stream's completion).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "backplane/dtype.hpp"
#include "backplane/error.hpp"
#include "cuda/context.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_table.hpp"
#include "math/host_device.hpp"

namespace backplane::cuda {

// f64 storage computes in f64; f32, f16 and bf16 storage compute in f32 (as the CPU reference).
template <class S>
using Compute = std::conditional_t<std::is_same_v<S, double>, double, float>;

template <class S>
__device__ __forceinline__ Compute<S> Ld(const void* p, int64_t i) {
  const S v = static_cast<const S*>(p)[i];
  if constexpr (std::is_same_v<S, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

// Rounds once, to nearest even, into the storage type.
template <class S>
__device__ __forceinline__ void St(void* p, int64_t i, Compute<S> v) {
  if constexpr (std::is_same_v<S, __half>) {
    static_cast<S*>(p)[i] = __float2half_rn(v);
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    static_cast<S*>(p)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<S*>(p)[i] = v;
  }
}

// Calls fn(S{}) with the CUDA storage type of a float dtype; UnsupportedDType otherwise.
template <class Fn>
void ByFloatDType(std::string_view op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: fn(double{}); return;
    case DType::Float32: fn(float{}); return;
    case DType::Float16: fn(__half{}); return;
    case DType::BFloat16: fn(__nv_bfloat16{}); return;
    default: ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
}

inline constexpr int kThreads = 256;

// Grid-stride launches: enough blocks to fill the GPU, never more than the work needs.
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  const int64_t cap = 65535LL * 8;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

#define BP_CUDA_GRID_STRIDE(i, n)                                                    \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace backplane::cuda
