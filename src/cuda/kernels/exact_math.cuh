// Device arithmetic as the CPU reference computes it: one rounding per operation, never contracted
// into an FMA (the reference is compiled without contraction), loads widened exactly to f64, and
// a block-wide reduction.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/common.cuh"

namespace backplane::cuda {

__device__ __forceinline__ double Add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double Sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double Mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double Div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float Add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float Sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float Mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float Div(float a, float b) { return __fdiv_rn(a, b); }

// Element i of a float buffer widened (exactly) to double.
template <class S>
__device__ __forceinline__ double LdD(const void* p, int64_t i) {
  return static_cast<double>(Ld<S>(p, i));
}

// The reference's Store<double> (Narrow): a double rounded to the compute type (f32 for
// f32/f16/bf16), then to the storage format.
template <class S>
__device__ __forceinline__ void StD(void* p, int64_t i, double v) {
  St<S>(p, i, static_cast<Compute<S>>(v));
}

// Reduces one value per thread across the block with op.Combine; every thread gets the result.
// Must be reached by all threads of the block (blockDim.x == kThreads, a power of two).
template <class Acc, class Op>
__device__ Acc BlockReduce(Acc value, const Op& op) {
  __shared__ Acc buffer[kThreads];
  buffer[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) {
      buffer[threadIdx.x] = op.Combine(buffer[threadIdx.x], buffer[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  const Acc result = buffer[0];
  __syncthreads();  // the buffer may be reused by the next call
  return result;
}

struct AddOp {
  __device__ double Combine(double a, double b) const { return Add(a, b); }
};

}  // namespace backplane::cuda
