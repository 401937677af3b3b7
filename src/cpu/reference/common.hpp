// Helpers shared by the scalar reference kernels: element access in any floating storage format
// and the choice of compute precision (f32 for f32/f16/bf16 storage, f64 for f64).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/dtype.hpp"
#include "backplane/error.hpp"

namespace backplane::cpu::ref {

// Reads element i of a floating buffer (f64, f32, f16, bf16) as T.
template <class T>
T Load(const void* data, int64_t i, DType dtype) {
  switch (dtype) {
    case DType::Float64: return static_cast<T>(static_cast<const double*>(data)[i]);
    case DType::Float32: return static_cast<T>(static_cast<const float*>(data)[i]);
    case DType::Float16: return static_cast<T>(F16ToF32(static_cast<const uint16_t*>(data)[i]));
    case DType::BFloat16: return static_cast<T>(BF16ToF32(static_cast<const uint16_t*>(data)[i]));
    default: break;
  }
  throw Error(ErrorCode::Internal, "reference.Load", "not a floating storage format");
}

// Writes element i. f16/bf16 round the f32 value to nearest even; a double value stored into a
// 32-bit or narrower format is first rounded to f32 (the compute type of those formats).
template <class T>
void Store(void* data, int64_t i, DType dtype, T value) {
  switch (dtype) {
    case DType::Float64: static_cast<double*>(data)[i] = static_cast<double>(value); return;
    case DType::Float32: static_cast<float*>(data)[i] = static_cast<float>(value); return;
    case DType::Float16:
      static_cast<uint16_t*>(data)[i] = F32ToF16(static_cast<float>(value));
      return;
    case DType::BFloat16:
      static_cast<uint16_t*>(data)[i] = F32ToBF16(static_cast<float>(value));
      return;
    default: break;
  }
  throw Error(ErrorCode::Internal, "reference.Store", "not a floating storage format");
}

// double -> float rounding to odd (truncate toward zero, set the last bit when inexact). A
// following round-to-nearest-even into f16 or bf16 then equals one correct rounding of the double
// (Boldo & Melquiond, IEEE TC 2008).
inline float RoundToOddF32(double value) {
  const float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) --bits;  // one step towards zero
  return std::bit_cast<float>(bits | 1u);
}

// Writes element i from a double with a single rounding to nearest even, in any floating format.
inline void StoreResult(void* data, int64_t i, DType dtype, double value) {
  switch (dtype) {
    case DType::Float64:
      static_cast<double*>(data)[i] = value;
      return;
    case DType::Float32:
      static_cast<float*>(data)[i] = static_cast<float>(value);
      return;
    case DType::Float16:
      static_cast<uint16_t*>(data)[i] = F32ToF16(RoundToOddF32(value));
      return;
    case DType::BFloat16:
      static_cast<uint16_t*>(data)[i] = F32ToBF16(RoundToOddF32(value));
      return;
    default:
      break;
  }
  throw Error(ErrorCode::Internal, "reference.StoreResult", "not a floating storage format");
}

// Widens `count` elements to a vector of T.
template <class T>
std::vector<T> Widen(const void* data, int64_t count, DType dtype) {
  std::vector<T> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = Load<T>(data, i, dtype);
  return out;
}

// Narrows a vector of T into storage.
template <class T>
void Narrow(const std::vector<T>& values, void* data, DType dtype) {
  for (size_t i = 0; i < values.size(); ++i) Store<T>(data, static_cast<int64_t>(i), dtype, values[i]);
}

// Calls fn(T{}) with T = double for f64 storage and T = float for f32/f16/bf16; throws
// UnsupportedDType (naming op and argument) for anything else.
template <class Fn>
decltype(auto) WithComputeType(std::string_view op, std::string_view arg, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: return fn(double{});
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: return fn(float{});
    default: ThrowUnsupportedDType(op, arg, dtype, kFloatDTypes);
  }
}

}  // namespace backplane::cpu::ref
