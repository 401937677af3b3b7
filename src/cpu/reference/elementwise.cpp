// Scalar reference kernels for the Elementwise surface: dst[i] = f(left[i], right[i]) or f(src[i]),
// and Axpy (y[i] += alpha * x[i]). Semantics: docs/semantics/elementwise.md.
//
// f64 storage is computed in f64; f32/f16/bf16 storage is computed in f32 and rounded once on
// store (for +, -, *, / and sqrt of f16/bf16 operands f32 has at least 2p + 2 bits, so for normal
// results the stored value is the correctly rounded one). Every pointer is read at index i before
// dst[i] is written, so dst may alias an input exactly (in-place use).
#include <cmath>
#include <string_view>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace elementwise {
namespace {

template <class T, class Fn>
void BinaryLoop(void* dst, const void* left, const void* right, int64_t count, DType dtype, Fn fn) {
  for (int64_t i = 0; i < count; ++i) {
    Store<T>(dst, i, dtype, fn(Load<T>(left, i, dtype), Load<T>(right, i, dtype)));
  }
}

// Validates everything, then applies fn element by element in the compute type.
template <class Fn>
void Binary(std::string_view op, void* dst, const void* left, const void* right, int64_t count,
            DType dtype, Fn fn) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "left", left, count);
  CheckPointer(op, "right", right, count);
  WithComputeType(op, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    BinaryLoop<T>(dst, left, right, count, dtype, fn);
  });
}

template <class Fn>
void Unary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype, Fn fn) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "src", src, count);
  WithComputeType(op, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) Store<T>(dst, i, dtype, fn(Load<T>(src, i, dtype)));
  });
}

// torch.maximum: NaN in either operand gives NaN; on a tie (including -0 vs +0) the left operand.
template <class T>
T MaxPropagatingNaN(T l, T r) {
  if (std::isnan(l)) return l;
  if (std::isnan(r)) return r;
  return l < r ? r : l;
}

// torch.minimum, with the same NaN and tie rules.
template <class T>
T MinPropagatingNaN(T l, T r) {
  if (std::isnan(l)) return l;
  if (std::isnan(r)) return r;
  return r < l ? r : l;
}

}  // namespace

void Add(void* dst, const void* left, const void* right, int64_t count, DType dtype) {
  Binary("Elementwise.Add", dst, left, right, count, dtype, [](auto l, auto r) { return l + r; });
}

void Sub(void* dst, const void* left, const void* right, int64_t count, DType dtype) {
  Binary("Elementwise.Sub", dst, left, right, count, dtype, [](auto l, auto r) { return l - r; });
}

void Mul(void* dst, const void* left, const void* right, int64_t count, DType dtype) {
  Binary("Elementwise.Mul", dst, left, right, count, dtype, [](auto l, auto r) { return l * r; });
}

// IEEE division: x/0 is +-Inf, 0/0 is NaN.
void Div(void* dst, const void* left, const void* right, int64_t count, DType dtype) {
  Binary("Elementwise.Div", dst, left, right, count, dtype, [](auto l, auto r) { return l / r; });
}

void Max(void* dst, const void* left, const void* right, int64_t count, DType dtype) {
  Binary("Elementwise.Max", dst, left, right, count, dtype,
         [](auto l, auto r) { return MaxPropagatingNaN(l, r); });
}

void Min(void* dst, const void* left, const void* right, int64_t count, DType dtype) {
  Binary("Elementwise.Min", dst, left, right, count, dtype,
         [](auto l, auto r) { return MinPropagatingNaN(l, r); });
}

// |x|; Abs(-0) = +0 and NaN stays NaN (torch.abs).
void Abs(void* dst, const void* src, int64_t count, DType dtype) {
  Unary("Elementwise.Abs", dst, src, count, dtype, [](auto x) { return std::fabs(x); });
}

void Neg(void* dst, const void* src, int64_t count, DType dtype) {
  Unary("Elementwise.Neg", dst, src, count, dtype, [](auto x) { return -x; });
}

// Correctly rounded IEEE square root: Sqrt(-0) = -0, negative -> NaN, +Inf -> +Inf.
void Sqrt(void* dst, const void* src, int64_t count, DType dtype) {
  Unary("Elementwise.Sqrt", dst, src, count, dtype, [](auto x) { return std::sqrt(x); });
}

// torch.relu: x < 0 -> 0, otherwise x itself (so NaN -> NaN and -0 -> -0).
void ReLU(void* dst, const void* src, int64_t count, DType dtype) {
  Unary("Elementwise.ReLU", dst, src, count, dtype, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;
  });
}

// BLAS axpy, in place on y: y[i] = y[i] + alpha * x[i]. alpha is widened exactly to the compute
// type (f64 for f64 storage); it must be finite.
void Axpy(void* y, const void* x, int64_t count, float alpha, DType dtype) {
  constexpr std::string_view kOp = "Elementwise.Axpy";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "y", y, count);
  CheckPointer(kOp, "x", x, count);
  CheckFinite(kOp, "alpha", alpha);
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    const T a = static_cast<T>(alpha);
    for (int64_t i = 0; i < count; ++i) {
      Store<T>(y, i, dtype, Load<T>(y, i, dtype) + a * Load<T>(x, i, dtype));
    }
  });
}

}  // namespace elementwise

void RegisterElementwise(KernelTable& table) {
  table.Elementwise_Add = &elementwise::Add;
  table.Elementwise_Sub = &elementwise::Sub;
  table.Elementwise_Mul = &elementwise::Mul;
  table.Elementwise_Div = &elementwise::Div;
  table.Elementwise_Max = &elementwise::Max;
  table.Elementwise_Min = &elementwise::Min;
  table.Elementwise_Abs = &elementwise::Abs;
  table.Elementwise_Neg = &elementwise::Neg;
  table.Elementwise_Sqrt = &elementwise::Sqrt;
  table.Elementwise_ReLU = &elementwise::ReLU;
  table.Elementwise_Axpy = &elementwise::Axpy;
}

}  // namespace backplane::cpu::ref
