// Typed element access for the reference kernels over every real dtype: Elem<S> reads and writes
// storage type S in its compute type Value (float for f16/bf16, S itself otherwise, so integers
// stay exact), and ByElem calls a functor with the Elem of a runtime dtype.
#pragma once

#include <cstdint>
#include <string_view>

#include "backplane/convert.hpp"
#include "backplane/dtype.hpp"
#include "backplane/error.hpp"

namespace backplane::cpu::ref::elem {

struct F16Tag {};
struct BF16Tag {};

// Element access for one storage type: Value is the compute type (float for f16/bf16).
template <class S>
struct Elem {
  using Value = S;
  static Value Get(const void* p, int64_t i) { return static_cast<const S*>(p)[i]; }
  static void Put(void* p, int64_t i, Value v) { static_cast<S*>(p)[i] = v; }
};
template <>
struct Elem<F16Tag> {
  using Value = float;
  static Value Get(const void* p, int64_t i) { return F16ToF32(static_cast<const uint16_t*>(p)[i]); }
  static void Put(void* p, int64_t i, Value v) { static_cast<uint16_t*>(p)[i] = F32ToF16(v); }
};
template <>
struct Elem<BF16Tag> {
  using Value = float;
  static Value Get(const void* p, int64_t i) { return BF16ToF32(static_cast<const uint16_t*>(p)[i]); }
  static void Put(void* p, int64_t i, Value v) { static_cast<uint16_t*>(p)[i] = F32ToBF16(v); }
};

template <class Fn>
inline void ByElem(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: fn(Elem<double>{}); return;
    case DType::Float32: fn(Elem<float>{}); return;
    case DType::Float16: fn(Elem<F16Tag>{}); return;
    case DType::BFloat16: fn(Elem<BF16Tag>{}); return;
    case DType::Int64: fn(Elem<int64_t>{}); return;
    case DType::Int32: fn(Elem<int32_t>{}); return;
    case DType::Int16: fn(Elem<int16_t>{}); return;
    case DType::Int8: fn(Elem<int8_t>{}); return;
    case DType::Uint64: fn(Elem<uint64_t>{}); return;
    case DType::Uint32: fn(Elem<uint32_t>{}); return;
    case DType::Uint16: fn(Elem<uint16_t>{}); return;
    case DType::Uint8: fn(Elem<uint8_t>{}); return;
    default: break;
  }
  throw Error(ErrorCode::Internal, "reference", "ByElem: not a real dtype");
}

inline void CheckTensorDType(std::string_view op, DType dtype, DTypeSet accepted) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kDTypeCount) || !accepted.Contains(dtype)) {
    ThrowUnsupportedDType(op, "dtype", dtype, accepted);
  }
}

}  // namespace backplane::cpu::ref::elem
