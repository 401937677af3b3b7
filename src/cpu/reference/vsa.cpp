// Scalar reference kernels for the VSA surface: the multiply-add-permute (MAP) model of vector
// symbolic architectures on real vectors (Gayler 1998; Kanerva 2009).
//   Bind           output[i] = left[i] * right[i]             (Hadamard product)
//   Bundle         output[i] = left[i] + right[i]             (plain sum, no normalisation)
//   Permute        numpy.roll(input, Shift):  output[(i + s) mod n] = input[i]
//   InversePermute numpy.roll(input, -Shift): output[i] = input[(i + s) mod n]
//   Similarity     cosine similarity dot / (|left| |right|), float64, 0 for a zero vector
// Semantics: docs/semantics/vsa.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "backplane/error.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace vsa {
namespace {

// The accepted set is kFloatDTypes. A switch rather than DTypeSet::Contains, so that a value
// outside the enum is rejected too.
void CheckFloatDType(std::string_view op, DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return;
    default:
      ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
}

// output[i] = fn(left[i], right[i]) in the compute type of dtype. Element i is read before it is
// written, so output may alias left or right exactly (in-place).
template <class Fn>
void Elementwise(std::string_view op, const void* left, const void* right, void* output,
                 int64_t count, DType dtype, Fn fn) {
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "left", left, count);
  CheckPointer(op, "right", right, count);
  CheckPointer(op, "output", output, count);
  WithComputeType(op, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      const T a = Load<T>(left, i, dtype);
      const T b = Load<T>(right, i, dtype);
      Store<T>(output, i, dtype, fn(a, b));
    }
  });
}

// Moves element i of input to position (i + offset) mod count of output, for offset in
// [0, count). Elements are copied as raw storage (bit-exact: -0.0 and NaN payloads survive). The
// input is copied first, so output may overlap input in any way (in-place rotation is supported).
void Rotate(const void* input, void* output, int64_t count, int64_t offset, DType dtype) {
  const size_t elem = DTypeStorageBytes(dtype, 1);
  const auto* src = static_cast<const unsigned char*>(input);
  std::vector<unsigned char> copy(src, src + static_cast<size_t>(count) * elem);
  auto* dst = static_cast<unsigned char*>(output);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t to = i < count - offset ? i + offset : i - (count - offset);
    std::memcpy(dst + static_cast<size_t>(to) * elem, copy.data() + static_cast<size_t>(i) * elem,
                elem);
  }
}

void PermuteImpl(std::string_view op, const VSAConfig& config, const void* input, void* output,
                 int64_t count, DType dtype, bool inverse) {
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "input", input, count);
  CheckPointer(op, "output", output, count);
  if (count == 0) return;
  // s = Shift mod count in [0, count); C++ % truncates toward zero, so fold negatives up. This
  // never overflows, including for Shift = INT64_MIN.
  const int64_t s = ((config.Shift % count) + count) % count;
  const int64_t offset = inverse ? (count - s) % count : s;
  Rotate(input, output, count, offset, dtype);
}

}  // namespace

void Bind(BP_PARAMS_BinaryOut) {
  Elementwise("VSA.Bind", left, right, output, count, dtype, [](auto a, auto b) { return a * b; });
}

void Bundle(BP_PARAMS_BinaryOut) {
  Elementwise("VSA.Bundle", left, right, output, count, dtype,
              [](auto a, auto b) { return a + b; });
}

void Permute(BP_PARAMS_VSAPermute) {
  PermuteImpl("VSA.Permute", config, input, output, count, dtype, /*inverse=*/false);
}

void InversePermute(BP_PARAMS_VSAPermute) {
  PermuteImpl("VSA.InversePermute", config, input, output, count, dtype, /*inverse=*/true);
}

// Cosine similarity in float64 for every storage format. Each vector is scaled by a power of two
// (exact) so that its largest magnitude lies in [0.5, 1): no intermediate overflows or underflows
// even for float64 inputs near the ends of the range. A vector with zero norm gives 0 (no eps
// clamp); any Inf or NaN element gives NaN. The result is clamped to [-1, 1] against rounding.
double Similarity(BP_PARAMS_Similarity) {
  constexpr std::string_view op = "VSA.Similarity";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "left", left, count);
  CheckPointer(op, "right", right, count);
  if (count == 0) return 0.0;

  const std::vector<double> a = Widen<double>(left, count, dtype);
  const std::vector<double> b = Widen<double>(right, count, dtype);
  double max_a = 0.0;
  double max_b = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    max_a = std::max(max_a, std::fabs(a[i]));
    max_b = std::max(max_b, std::fabs(b[i]));
  }
  if (max_a == 0.0 || max_b == 0.0) return 0.0;

  int exp_a = 0;
  int exp_b = 0;
  std::frexp(max_a, &exp_a);
  std::frexp(max_b, &exp_b);
  double dot = 0.0;
  double norm2_a = 0.0;
  double norm2_b = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = std::ldexp(a[i], -exp_a);
    const double y = std::ldexp(b[i], -exp_b);
    dot += x * y;
    norm2_a += x * x;
    norm2_b += y * y;
  }
  const double cosine = dot / (std::sqrt(norm2_a) * std::sqrt(norm2_b));
  return std::clamp(cosine, -1.0, 1.0);
}

}  // namespace vsa

void RegisterVSA(KernelTable& table) {
  table.VSA_Bind = &vsa::Bind;
  table.VSA_Bundle = &vsa::Bundle;
  table.VSA_Permute = &vsa::Permute;
  table.VSA_InversePermute = &vsa::InversePermute;
  table.VSA_Similarity = &vsa::Similarity;
}

}  // namespace backplane::cpu::ref
