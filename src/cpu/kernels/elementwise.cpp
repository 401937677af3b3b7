// Highway kernels for the Elementwise surface. f32 and f64 run in native lanes; f16/bf16 are
// widened to f32 in blocks and rounded back to nearest even, as the reference does.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_ELEMENTWISE_OPS_
#define BACKPLANE_CPU_KERNELS_ELEMENTWISE_OPS_
#include <cmath>
namespace backplane::cpu::simd::elementwise_ops {
enum BinaryOp : int { kAdd, kSub, kMul, kDiv, kMax, kMin };
enum UnaryOp : int { kAbs, kNeg, kSqrt, kReLU };
}  // namespace backplane::cpu::simd::elementwise_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace elementwise_ops;  // NOLINT

// torch.maximum / torch.minimum: NaN in either operand wins; on a tie the left operand.
template <class D, class V>
HWY_INLINE V ApplyBinary(D d, int op, V l, V r) {
  switch (op) {
    case kAdd: return hn::Add(l, r);
    case kSub: return hn::Sub(l, r);
    case kMul: return hn::Mul(l, r);
    case kDiv: return hn::Div(l, r);
    case kMax:
    case kMin: {
      const auto pick_r = op == kMax ? hn::Lt(l, r) : hn::Lt(r, l);
      const V m = hn::IfThenElse(pick_r, r, l);
      return hn::IfThenElse(hn::IsNaN(l), l, hn::IfThenElse(hn::IsNaN(r), r, m));
    }
  }
  return l;
}

template <class D, class V>
HWY_INLINE V ApplyUnary(D d, int op, V x) {
  switch (op) {
    case kAbs: return hn::Abs(x);
    case kNeg: return hn::Neg(x);
    case kSqrt: return hn::Sqrt(x);
    case kReLU: return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Zero(d), x);
  }
  return x;
}

template <class T>
void BinaryTyped(int op, const T* a, const T* b, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(ApplyBinary(d, op, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  }
  if (i < n) {
    // The tail goes through aligned buffers: Highway 1.0.3's MaskedLoad is a full aligned load
    // on SSE4/SSSE3 and would fault on an unaligned tail.
    HWY_ALIGN T ta[hn::MaxLanes(d)] = {}, tb[hn::MaxLanes(d)] = {};
    for (size_t k = 0; i + k < n; ++k) {
      ta[k] = a[i + k];
      tb[k] = b[i + k];
    }
    hn::Store(ApplyBinary(d, op, hn::Load(d, ta), hn::Load(d, tb)), d, ta);
    for (size_t k = 0; i + k < n; ++k) out[i + k] = ta[k];
  }
}

template <class T>
void UnaryTyped(int op, const T* x, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(ApplyUnary(d, op, hn::LoadU(d, x + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN T tx[hn::MaxLanes(d)] = {};
    for (size_t k = 0; i + k < n; ++k) tx[k] = x[i + k];
    hn::Store(ApplyUnary(d, op, hn::Load(d, tx)), d, tx);
    for (size_t k = 0; i + k < n; ++k) out[i + k] = tx[k];
  }
}

// y += alpha * x, not fused (two roundings, like the reference).
template <class T>
void AxpyTyped(T alpha, const T* x, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const auto a = hn::Set(d, alpha);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::Mul(a, hn::LoadU(d, x + i))), d, y + i);
  }
  for (; i < n; ++i) y[i] = y[i] + alpha * x[i];
}

void BinaryF32(int op, const float* a, const float* b, float* out, size_t n) { BinaryTyped(op, a, b, out, n); }
void BinaryF64(int op, const double* a, const double* b, double* out, size_t n) { BinaryTyped(op, a, b, out, n); }
void UnaryF32(int op, const float* x, float* out, size_t n) { UnaryTyped(op, x, out, n); }
void UnaryF64(int op, const double* x, double* out, size_t n) { UnaryTyped(op, x, out, n); }
void AxpyF32(float alpha, const float* x, float* y, size_t n) { AxpyTyped(alpha, x, y, n); }
void AxpyF64(double alpha, const double* x, double* y, size_t n) { AxpyTyped(alpha, x, y, n); }

constexpr size_t kBlock = 1024;

void BinaryHalf(int op, const uint16_t* a, const uint16_t* b, uint16_t* out, size_t n, bool bf16) {
  HWY_ALIGN float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(a + i, fa, m, bf16);
    WidenBlock(b + i, fb, m, bf16);
    BinaryTyped(op, fa, fb, fa, m);
    NarrowBlock(fa, out + i, m, bf16);
  }
}

void UnaryHalf(int op, const uint16_t* x, uint16_t* out, size_t n, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, f, m, bf16);
    UnaryTyped(op, f, f, m);
    NarrowBlock(f, out + i, m, bf16);
  }
}

void AxpyHalf(float alpha, const uint16_t* x, uint16_t* y, size_t n, bool bf16) {
  HWY_ALIGN float fx[kBlock], fy[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(x + i, fx, m, bf16);
    WidenBlock(y + i, fy, m, bf16);
    AxpyTyped(alpha, fx, fy, m);
    NarrowBlock(fy, y + i, m, bf16);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(BinaryHalf);
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(UnaryHalf);
HWY_EXPORT(AxpyF32);
HWY_EXPORT(AxpyF64);
HWY_EXPORT(AxpyHalf);

namespace {

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// Runs op on f32/f64 lanes or on blocks of f16/bf16 widened to f32.
template <int kOp>
void Binary(void* dst, const void* l, const void* r, int64_t count, DType dtype,
            void (*fallback)(void*, const void*, const void*, int64_t, DType)) {
  if (!FloatDType(dtype) || count < 0 || (count > 0 && (!dst || !l || !r))) {
    return fallback(dst, l, r, count, dtype);  // throws the reference's error
  }
  const auto n = static_cast<size_t>(count);
  switch (dtype) {
    case DType::Float32:
      return HWY_DYNAMIC_DISPATCH(BinaryF32)(kOp, static_cast<const float*>(l), static_cast<const float*>(r),
                                             static_cast<float*>(dst), n);
    case DType::Float64:
      return HWY_DYNAMIC_DISPATCH(BinaryF64)(kOp, static_cast<const double*>(l), static_cast<const double*>(r),
                                             static_cast<double*>(dst), n);
    default:
      return HWY_DYNAMIC_DISPATCH(BinaryHalf)(kOp, static_cast<const uint16_t*>(l), static_cast<const uint16_t*>(r),
                                              static_cast<uint16_t*>(dst), n, dtype == DType::BFloat16);
  }
}

template <int kOp>
void Unary(void* dst, const void* src, int64_t count, DType dtype,
           void (*fallback)(void*, const void*, int64_t, DType)) {
  if (!FloatDType(dtype) || count < 0 || (count > 0 && (!dst || !src))) return fallback(dst, src, count, dtype);
  const auto n = static_cast<size_t>(count);
  switch (dtype) {
    case DType::Float32:
      return HWY_DYNAMIC_DISPATCH(UnaryF32)(kOp, static_cast<const float*>(src), static_cast<float*>(dst), n);
    case DType::Float64:
      return HWY_DYNAMIC_DISPATCH(UnaryF64)(kOp, static_cast<const double*>(src), static_cast<double*>(dst), n);
    default:
      return HWY_DYNAMIC_DISPATCH(UnaryHalf)(kOp, static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), n,
                                             dtype == DType::BFloat16);
  }
}

void Axpy(void* y, const void* x, int64_t count, float alpha, DType dtype) {
  if (!FloatDType(dtype) || count < 0 || (count > 0 && (!y || !x)) || !std::isfinite(alpha)) {
    return Reference().Elementwise_Axpy(y, x, count, alpha, dtype);
  }
  const auto n = static_cast<size_t>(count);
  switch (dtype) {
    case DType::Float32:
      return HWY_DYNAMIC_DISPATCH(AxpyF32)(alpha, static_cast<const float*>(x), static_cast<float*>(y), n);
    case DType::Float64:
      return HWY_DYNAMIC_DISPATCH(AxpyF64)(alpha, static_cast<const double*>(x), static_cast<double*>(y), n);
    default:
      return HWY_DYNAMIC_DISPATCH(AxpyHalf)(alpha, static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), n,
                                            dtype == DType::BFloat16);
  }
}

}  // namespace

void RegisterElementwise(KernelTable& t) {
  using namespace elementwise_ops;  // NOLINT
  t.Elementwise_Add = [](void* d, const void* l, const void* r, int64_t n, DType dt) {
    Binary<kAdd>(d, l, r, n, dt, Reference().Elementwise_Add);
  };
  t.Elementwise_Sub = [](void* d, const void* l, const void* r, int64_t n, DType dt) {
    Binary<kSub>(d, l, r, n, dt, Reference().Elementwise_Sub);
  };
  t.Elementwise_Mul = [](void* d, const void* l, const void* r, int64_t n, DType dt) {
    Binary<kMul>(d, l, r, n, dt, Reference().Elementwise_Mul);
  };
  t.Elementwise_Div = [](void* d, const void* l, const void* r, int64_t n, DType dt) {
    Binary<kDiv>(d, l, r, n, dt, Reference().Elementwise_Div);
  };
  t.Elementwise_Max = [](void* d, const void* l, const void* r, int64_t n, DType dt) {
    Binary<kMax>(d, l, r, n, dt, Reference().Elementwise_Max);
  };
  t.Elementwise_Min = [](void* d, const void* l, const void* r, int64_t n, DType dt) {
    Binary<kMin>(d, l, r, n, dt, Reference().Elementwise_Min);
  };
  t.Elementwise_Abs = [](void* d, const void* s, int64_t n, DType dt) {
    Unary<kAbs>(d, s, n, dt, Reference().Elementwise_Abs);
  };
  t.Elementwise_Neg = [](void* d, const void* s, int64_t n, DType dt) {
    Unary<kNeg>(d, s, n, dt, Reference().Elementwise_Neg);
  };
  t.Elementwise_Sqrt = [](void* d, const void* s, int64_t n, DType dt) {
    Unary<kSqrt>(d, s, n, dt, Reference().Elementwise_Sqrt);
  };
  t.Elementwise_ReLU = [](void* d, const void* s, int64_t n, DType dt) {
    Unary<kReLU>(d, s, n, dt, Reference().Elementwise_ReLU);
  };
  t.Elementwise_Axpy = &Axpy;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
