// Scalar reference kernels for the Reduction surface: one double from `count` values.
// Semantics: docs/semantics/reduction.md.
//
// Sum, Prod and L1Norm accumulate in f64 in index order. The total is returned as is for f64
// input and rounded once to f32 for f32/f16/bf16 input (never through a 16-bit format).
// ReduceMin/ReduceMax return an input element exactly and propagate NaN (torch.amin/amax).
#include <cmath>
#include <string_view>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace reduction {
namespace {

void CheckReduce(std::string_view op, const void* values, int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "values", values, count);
}

// The f64 total for f64 input; the total rounded once to f32 for the f32-class formats.
double Finish(double total, DType dtype) {
  return dtype == DType::Float64 ? total : static_cast<double>(static_cast<float>(total));
}

}  // namespace

// Sum of the values; 0 for an empty input.
double Sum(const void* values, int64_t count, DType dtype) {
  CheckReduce("Reduction.Sum", values, count, dtype);
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) total += Load<double>(values, i, dtype);
  return Finish(total, dtype);
}

// Product of the values; 1 (the empty product) for an empty input.
double Prod(const void* values, int64_t count, DType dtype) {
  CheckReduce("Reduction.Prod", values, count, dtype);
  double product = 1.0;
  for (int64_t i = 0; i < count; ++i) product *= Load<double>(values, i, dtype);
  return Finish(product, dtype);
}

// Smallest value. Any NaN makes the result NaN; an empty input throws (torch.min raises).
// On ties (-0 vs +0) the first occurrence wins.
double ReduceMin(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.ReduceMin";
  CheckReduce(kOp, values, count, dtype);
  CheckPositive(kOp, "count", count);
  double best = Load<double>(values, 0, dtype);
  for (int64_t i = 1; i < count && !std::isnan(best); ++i) {
    const double x = Load<double>(values, i, dtype);
    if (std::isnan(x) || x < best) best = x;
  }
  return best;
}

// Largest value, with the same NaN, empty-input and tie rules as ReduceMin.
double ReduceMax(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.ReduceMax";
  CheckReduce(kOp, values, count, dtype);
  CheckPositive(kOp, "count", count);
  double best = Load<double>(values, 0, dtype);
  for (int64_t i = 1; i < count && !std::isnan(best); ++i) {
    const double x = Load<double>(values, i, dtype);
    if (std::isnan(x) || x > best) best = x;
  }
  return best;
}

// Sum of absolute values; 0 for an empty input.
double L1Norm(const void* values, int64_t count, DType dtype) {
  CheckReduce("Reduction.L1Norm", values, count, dtype);
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) total += std::fabs(Load<double>(values, i, dtype));
  return Finish(total, dtype);
}

}  // namespace reduction

void RegisterReduction(KernelTable& table) {
  table.Reduction_Sum = &reduction::Sum;
  table.Reduction_Prod = &reduction::Prod;
  table.Reduction_ReduceMin = &reduction::ReduceMin;
  table.Reduction_ReduceMax = &reduction::ReduceMax;
  table.Reduction_L1Norm = &reduction::L1Norm;
}

}  // namespace backplane::cpu::ref
