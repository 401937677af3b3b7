// Scalar reference kernels for the MathExt surface: sin, cos, sign, outer product, per-row
// log-sum-exp and the 1/sqrt(dim) attention scale.
//
// Semantics: docs/semantics/math_ext.md. Every kernel validates all of its arguments before it
// writes anything. Sin, Cos, Sign and Outer compute in the compute type of the storage format
// (f32 for f32/f16/bf16, f64 for f64); LogSumExp and InvSqrtDimScale compute in f64 for every
// format. Results are rounded once on store.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace math_ext {
namespace {

// count >= 0 and both buffers present when count > 0; the dtype is checked first (also for
// count 0) by the caller through WithComputeType or CheckDType.
void CheckUnary(std::string_view op, void* dst, const void* src, int64_t count) {
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
}

int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "small enough that the element count fits in int64",
                         fmt::format("{} x {}", a, b));
  }
  return product;
}

// The checks of a [rows, cols] method with src [rows, cols] and dst of dst_count elements (-1:
// [rows, cols]); returns rows * cols.
int64_t CheckRowsArguments(std::string_view op, const void* src, const void* dst, int64_t rows, int64_t cols,
                           DType dtype, int64_t dst_count) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "rows", rows);
  CheckNonNegative(op, "cols", cols);
  const int64_t total = CheckedProduct(op, "rows*cols", rows, cols);
  CheckPointer(op, "src", src, total);
  CheckPointer(op, "dst", dst, dst_count < 0 ? total : dst_count);
  return total;
}

// dst[i] = f(src[i]) in the compute type T of the storage format.
template <class F>
void ApplyUnary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype, F f) {
  WithComputeType(op, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    CheckUnary(op, dst, src, count);
    for (int64_t i = 0; i < count; ++i) Store<T>(dst, i, dtype, f(Load<T>(src, i, dtype)));
  });
}

// numpy.sign for floating input: -1, +1, +0 for either zero, NaN for NaN.
template <class T>
T SignOf(T x) {
  if (x > T(0)) return T(1);
  if (x < T(0)) return T(-1);
  if (x == T(0)) return T(0);
  return x;  // NaN propagates (numpy.sign; torch.sign returns 0 here, pytorch/pytorch#41245)
}

}  // namespace

// torch.sin / numpy.sin.
void Sin(void* dst, const void* src, int64_t count, DType dtype) {
  ApplyUnary("MathExt.Sin", dst, src, count, dtype, [](auto x) { return std::sin(x); });
}

// torch.cos / numpy.cos.
void Cos(void* dst, const void* src, int64_t count, DType dtype) {
  ApplyUnary("MathExt.Cos", dst, src, count, dtype, [](auto x) { return std::cos(x); });
}

// numpy.sign: +1 for x > 0, -1 for x < 0, +0 for +-0, NaN for NaN.
void Sign(void* dst, const void* src, int64_t count, DType dtype) {
  ApplyUnary("MathExt.Sign", dst, src, count, dtype, [](auto x) { return SignOf(x); });
}

// numpy.outer: out[i * cols + j] = left[i] * right[j], out row-major [rows, cols]. The product of
// two f16 or bf16 values is exact in f32, so every format is rounded exactly once.
void Outer(const void* left, const void* right, void* out, int64_t rows, int64_t cols,
           DType dtype) {
  constexpr std::string_view kOp = "MathExt.Outer";
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    CheckNonNegative(kOp, "rows", rows);
    CheckNonNegative(kOp, "cols", cols);
    const int64_t total = CheckedProduct(kOp, "rows*cols", rows, cols);
    CheckPointer(kOp, "left", left, rows);
    CheckPointer(kOp, "right", right, cols);
    CheckPointer(kOp, "out", out, total);
    for (int64_t i = 0; i < rows; ++i) {
      const T a = Load<T>(left, i, dtype);
      for (int64_t j = 0; j < cols; ++j) {
        Store<T>(out, i * cols + j, dtype, a * Load<T>(right, j, dtype));
      }
    }
  });
}

// torch.logsumexp(src, dim=1) for src [rows, cols]: per row m + ln sum_j exp(x_j - m) with m the
// row maximum, evaluated and accumulated in f64 and rounded once. A row containing NaN gives NaN;
// otherwise a row whose maximum is +Inf gives +Inf, an all -Inf row gives -Inf, and cols == 0
// gives -Inf (the log of an empty sum), as torch.logsumexp does.
void LogSumExp(const void* src, void* dst, int64_t rows, int64_t cols, DType dtype) {
  constexpr std::string_view kOp = "MathExt.LogSumExp";
  constexpr double kInf = std::numeric_limits<double>::infinity();
  CheckRowsArguments(kOp, src, dst, rows, cols, dtype, rows);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * cols;
    double m = -kInf;
    bool has_nan = false;
    for (int64_t c = 0; c < cols; ++c) {
      const double x = Load<double>(src, row + c, dtype);
      if (std::isnan(x)) has_nan = true;
      if (x > m) m = x;
    }
    double result = m;  // -Inf for an empty or all -Inf row, +Inf when the maximum is +Inf
    if (has_nan) {
      result = std::numeric_limits<double>::quiet_NaN();
    } else if (std::isfinite(m)) {
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(Load<double>(src, row + c, dtype) - m);
      result = m + std::log(sum);  // sum >= 1 (the maximum contributes exp(0))
    }
    Store<double>(dst, r, dtype, result);
  }
}

// y = x / sqrt(dim) (the attention score scale), dim > 0, evaluated in f64 and rounded once.
void InvSqrtDimScale(void* dst, const void* src, int64_t count, int64_t dim, DType dtype) {
  constexpr std::string_view kOp = "MathExt.InvSqrtDimScale";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckUnary(kOp, dst, src, count);
  CheckPositive(kOp, "dim", dim);
  const double root = std::sqrt(static_cast<double>(dim));
  for (int64_t i = 0; i < count; ++i) {
    Store<double>(dst, i, dtype, Load<double>(src, i, dtype) / root);
  }
}

// torch.softmax / torch.log_softmax(src, dim=1) for src [rows, cols]: each row is the reference
// Activation.Softmax / LogSoftmax of its cols values (f64, rounded once; NaN or +Inf in a row, or
// an all -Inf row, gives that row all NaN). dst may be src; other overlaps are processed row by
// row in order.
void SoftmaxRowsImpl(std::string_view op, void* dst, const void* src, int64_t rows, int64_t cols, DType dtype,
                     bool logarithm) {
  const int64_t total = CheckRowsArguments(op, src, dst, rows, cols, dtype, -1);
  if (total == 0) return;
  const auto row = Table().*(logarithm ? &KernelTable::Activation_LogSoftmax : &KernelTable::Activation_Softmax);
  const size_t rowBytes = DTypeStorageBytes(dtype, cols);
  for (int64_t r = 0; r < rows; ++r) {
    row(static_cast<char*>(dst) + static_cast<size_t>(r) * rowBytes,
        static_cast<const char*>(src) + static_cast<size_t>(r) * rowBytes, cols, dtype);
  }
}

void SoftmaxRows(void* dst, const void* src, int64_t rows, int64_t cols, DType dtype) {
  SoftmaxRowsImpl("MathExt.SoftmaxRows", dst, src, rows, cols, dtype, false);
}

void LogSoftmaxRows(void* dst, const void* src, int64_t rows, int64_t cols, DType dtype) {
  SoftmaxRowsImpl("MathExt.LogSoftmaxRows", dst, src, rows, cols, dtype, true);
}

}  // namespace math_ext

void RegisterMathExt(KernelTable& table) {
  table.MathExt_Sin = &math_ext::Sin;
  table.MathExt_Cos = &math_ext::Cos;
  table.MathExt_Sign = &math_ext::Sign;
  table.MathExt_Outer = &math_ext::Outer;
  table.MathExt_LogSumExp = &math_ext::LogSumExp;
  table.MathExt_InvSqrtDimScale = &math_ext::InvSqrtDimScale;
  table.MathExt_SoftmaxRows = &math_ext::SoftmaxRows;
  table.MathExt_LogSoftmaxRows = &math_ext::LogSoftmaxRows;
}

}  // namespace backplane::cpu::ref
