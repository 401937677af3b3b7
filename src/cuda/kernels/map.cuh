// Element-wise maps on the GPU: dst[i] = f(src[i]) and dst[i] = f(left[i], right[i]) in the compute
// type, with the CPU reference's argument checks. Each index is read before it is written, so dst
// may alias an input.
#pragma once

#include "cuda/kernels/common.cuh"

namespace backplane::cuda {

template <class S, class F>
__global__ void MapUnaryKernel(void* dst, const void* src, int64_t n, F f) {
  BP_CUDA_GRID_STRIDE(i, n) { St<S>(dst, i, f(Ld<S>(src, i))); }
}

template <class S, class F>
__global__ void MapBinaryKernel(void* dst, const void* left, const void* right, int64_t n, F f) {
  BP_CUDA_GRID_STRIDE(i, n) { St<S>(dst, i, f(Ld<S>(left, i), Ld<S>(right, i))); }
}

inline void CheckUnaryArgs(std::string_view op, void* dst, const void* src, int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "src", src, count);
}

// f is a functor template instantiated per compute type: F<float>, F<double>.
template <template <class> class F, class... Params>
void LaunchUnary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype,
                 Params... params) {
  CheckUnaryArgs(op, dst, src, count, dtype);
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    MapUnaryKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(dst, src, count,
                                                                 F<T>{static_cast<T>(params)...});
  });
  FinishMethod(op);
}

template <template <class> class F>
void LaunchBinary(std::string_view op, void* dst, const void* left, const void* right, int64_t count,
                  DType dtype, std::string_view left_arg = "left", std::string_view right_arg = "right") {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, left_arg, left, count);
  CheckPointer(op, right_arg, right, count);
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    MapBinaryKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(dst, left, right, count, F<T>{});
  });
  FinishMethod(op);
}

}  // namespace backplane::cuda
