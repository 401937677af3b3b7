// Scalar reference kernel for the Dot surface: sum_i left[i] * right[i].
// Semantics: docs/semantics/dot.md.
#include <string_view>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace dot {

// Floating formats: products and sum in f64 in index order; the total is returned as is for f64
// and rounded once to f32 for f32/f16/bf16. int8: exact int64 accumulation returned as double
// (exact while |total| < 2^53, i.e. for any count below 2^39).
double Dot(const void* left, const void* right, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Dot.Dot";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes | DTypeSet{DType::Int8});
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "left", left, count);
  CheckPointer(kOp, "right", right, count);

  if (dtype == DType::Int8) {
    const auto* l = static_cast<const int8_t*>(left);
    const auto* r = static_cast<const int8_t*>(right);
    int64_t total = 0;
    for (int64_t i = 0; i < count; ++i) total += int64_t{l[i]} * int64_t{r[i]};
    return static_cast<double>(total);
  }

  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    total += Load<double>(left, i, dtype) * Load<double>(right, i, dtype);
  }
  return dtype == DType::Float64 ? total : static_cast<double>(static_cast<float>(total));
}

}  // namespace dot

void RegisterDot(KernelTable& table) { table.Dot_Dot = &dot::Dot; }

}  // namespace backplane::cpu::ref
