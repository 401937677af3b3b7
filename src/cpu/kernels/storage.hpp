// Scalar storage-format helpers of the kernel files (not per-target): the storage-kind index, elements loaded as f64, whole f16/bf16
// arrays widened to f32 and rounded back, and f64 results stored into f32/f16/bf16 with one rounding, as the reference's
// StoreResult does. The per-target vector forms are in convert-inl.h.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/dtype.hpp"
#include "cpu/reference/common.hpp"

namespace backplane::cpu::simd {

// The floating storage formats as a dispatch index (kernel files bring these in with
// `using namespace kinds;` in their shared namespace).
namespace kinds {
enum Kind : int { kF32, kF64, kF16, kBF16 };

// The kind of a floating dtype, else -1.
inline int KindOf(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kF32;
    case DType::Float64: return kF64;
    case DType::Float16: return kF16;
    case DType::BFloat16: return kBF16;
    default: return -1;
  }
}

// Bytes per element of a kind.
inline size_t KindBytes(int kind) { return kind == kF64 ? 8 : kind == kF32 ? 4 : 2; }

// Element i of a storage of `kind`, widened exactly to f64.
inline double LoadKind(int kind, const void* p, size_t i) {
  switch (kind) {
    case kF32: return static_cast<const float*>(p)[i];
    case kF64: return static_cast<const double*>(p)[i];
    case kF16: return F16ToF32(static_cast<const uint16_t*>(p)[i]);
    default: return BF16ToF32(static_cast<const uint16_t*>(p)[i]);
  }
}
}  // namespace kinds

// Element i of storage dtype (f64, f32, f16 or bf16), widened exactly to f64.
inline double LoadAsDouble(const void* p, size_t i, DType dtype) {
  switch (dtype) {
    case DType::Float64: return static_cast<const double*>(p)[i];
    case DType::Float32: return static_cast<const float*>(p)[i];
    case DType::Float16: return F16ToF32(static_cast<const uint16_t*>(p)[i]);
    default: return BF16ToF32(static_cast<const uint16_t*>(p)[i]);
  }
}

// n per-column (per-channel) parameters widened to f64; `fill` where values is null.
inline std::vector<double> ColumnF64(const void* values, int64_t n, DType dtype, double fill) {
  std::vector<double> out(static_cast<size_t>(n), fill);
  if (values != nullptr) {
    for (size_t j = 0; j < out.size(); ++j) out[j] = LoadAsDouble(values, j, dtype);
  }
  return out;
}

// n f16 or bf16 values at src, widened exactly.
inline std::vector<float> WidenAll(const void* src, int64_t n, bool bf16) {
  std::vector<float> out(static_cast<size_t>(n));
  const auto* h = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16 ? BF16ToF32(h[i]) : F16ToF32(h[i]);
  return out;
}

// dst[i] = v[i] rounded to f16 or bf16, nearest even.
inline void NarrowAll(const std::vector<float>& v, void* dst, bool bf16) {
  auto* h = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < v.size(); ++i) h[i] = bf16 ? F32ToBF16(v[i]) : F32ToF16(v[i]);
}

using ref::RoundToOddF32;  // one rounding of a double into f16/bf16 (cpu/reference/common.hpp)

// dst[i] = src[i] rounded once to f16 or bf16.
inline void NarrowFromDouble(const double* src, uint16_t* dst, size_t n, bool bf16) {
  if (bf16) {
    for (size_t i = 0; i < n; ++i) dst[i] = F32ToBF16(RoundToOddF32(src[i]));
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = F32ToF16(RoundToOddF32(src[i]));
  }
}

// out[at .. at + n) (storage dtype: f64, f32, f16 or bf16) = v[0 .. n) with one rounding.
inline void StoreRounded(const double* v, void* out, size_t at, size_t n, DType dtype) {
  switch (dtype) {
    case DType::Float64:
      std::memcpy(static_cast<double*>(out) + at, v, n * sizeof(double));
      return;
    case DType::Float32: {
      float* o = static_cast<float*>(out) + at;
      for (size_t i = 0; i < n; ++i) o[i] = static_cast<float>(v[i]);
      return;
    }
    default:
      NarrowFromDouble(v, static_cast<uint16_t*>(out) + at, n, dtype == DType::BFloat16);
      return;
  }
}

}  // namespace backplane::cpu::simd
