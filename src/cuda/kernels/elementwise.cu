// CUDA kernels for the Elementwise surface (11 methods). Semantics: docs/semantics/elementwise.md.
#include "cuda/kernels/map.cuh"

namespace backplane::cuda {
namespace {

template <class T> struct AddF { __device__ T operator()(T l, T r) const { return l + r; } };
template <class T> struct SubF { __device__ T operator()(T l, T r) const { return l - r; } };
template <class T> struct MulF { __device__ T operator()(T l, T r) const { return l * r; } };
template <class T> struct DivF { __device__ T operator()(T l, T r) const { return l / r; } };
// torch.maximum / torch.minimum: NaN in either operand wins; a tie returns the left operand.
template <class T> struct MaxF {
  __device__ T operator()(T l, T r) const {
    if (isnan(l)) return l;
    if (isnan(r)) return r;
    return l < r ? r : l;
  }
};
template <class T> struct MinF {
  __device__ T operator()(T l, T r) const {
    if (isnan(l)) return l;
    if (isnan(r)) return r;
    return r < l ? r : l;
  }
};
template <class T> struct AbsF { __device__ T operator()(T x) const { return fabs(x); } };
template <class T> struct NegF { __device__ T operator()(T x) const { return -x; } };
template <class T> struct SqrtF { __device__ T operator()(T x) const { return sqrt(x); } };
template <class T> struct ReluF { __device__ T operator()(T x) const { return x < T(0) ? T(0) : x; } };

template <class S>
__global__ void AxpyKernel(void* y, const void* x, int64_t n, Compute<S> alpha) {
  BP_CUDA_GRID_STRIDE(i, n) { St<S>(y, i, Ld<S>(y, i) + alpha * Ld<S>(x, i)); }
}

#define BP_CUDA_BINARY(Name, F)                                                           \
  void Name(void* dst, const void* left, const void* right, int64_t count, DType dtype) { \
    LaunchBinary<F>("Elementwise." #Name, dst, left, right, count, dtype);               \
  }
BP_CUDA_BINARY(Add, AddF)
BP_CUDA_BINARY(Sub, SubF)
BP_CUDA_BINARY(Mul, MulF)
BP_CUDA_BINARY(Div, DivF)
BP_CUDA_BINARY(Max, MaxF)
BP_CUDA_BINARY(Min, MinF)
#undef BP_CUDA_BINARY

#define BP_CUDA_UNARY(Name, F)                                             \
  void Name(void* dst, const void* src, int64_t count, DType dtype) {      \
    LaunchUnary<F>("Elementwise." #Name, dst, src, count, dtype);         \
  }
BP_CUDA_UNARY(Abs, AbsF)
BP_CUDA_UNARY(Neg, NegF)
BP_CUDA_UNARY(Sqrt, SqrtF)
BP_CUDA_UNARY(ReLU, ReluF)
#undef BP_CUDA_UNARY

void Axpy(void* y, const void* x, int64_t count, float alpha, DType dtype) {
  constexpr std::string_view kOp = "Elementwise.Axpy";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "y", y, count);
  CheckPointer(kOp, "x", x, count);
  CheckFinite(kOp, "alpha", alpha);
  if (count == 0) return;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    AxpyKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(y, x, count, static_cast<Compute<S>>(alpha));
  });
  FinishMethod(kOp);
}

}  // namespace

void RegisterElementwise(KernelTable& table) {
#define BP_CUDA_REGISTER(S, M, F, D) table.S##_##M = &M;
  BP_SURFACE_ELEMENTWISE(BP_CUDA_REGISTER)
#undef BP_CUDA_REGISTER
}

}  // namespace backplane::cuda
