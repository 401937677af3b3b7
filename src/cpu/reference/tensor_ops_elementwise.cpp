// Scalar reference kernels of the TensorOps elementwise half: Compare, Logical, Where, Cast, Pow,
// Mod, Round. Semantics: docs/semantics/tensor_ops.md ("Elementwise").
//
// Floats are read exactly as f64; integers as themselves (int64/uint64 arithmetic, never through
// double); bools are bit-packed, LSB first. Float results are computed in f64 and rounded once to
// the output format. Bool outputs leave the bits past `count` in the last byte unchanged.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace tensor_ops {
namespace {

constexpr std::string_view kCompare = "TensorOps.Compare";
constexpr std::string_view kLogical = "TensorOps.Logical";
constexpr std::string_view kWhere = "TensorOps.Where";
constexpr std::string_view kCast = "TensorOps.Cast";
constexpr std::string_view kPow = "TensorOps.Pow";
constexpr std::string_view kMod = "TensorOps.Mod";
constexpr std::string_view kRound = "TensorOps.Round";

template <class T>
T Get(const void* p, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void Put(void* p, int64_t i, T v) {
  std::memcpy(static_cast<char*>(p) + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

// Calls fn(V{}) with the value type of `dtype`: double for the floats (exact), the integer type
// itself, bool for Bool.
template <class Fn>
decltype(auto) WithValueType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return fn(double{});
    case DType::Int64:
      return fn(int64_t{});
    case DType::Int32:
      return fn(int32_t{});
    case DType::Int16:
      return fn(int16_t{});
    case DType::Int8:
      return fn(int8_t{});
    case DType::Uint64:
      return fn(uint64_t{});
    case DType::Uint32:
      return fn(uint32_t{});
    case DType::Uint16:
      return fn(uint16_t{});
    case DType::Uint8:
      return fn(uint8_t{});
    default:
      return fn(bool{});
  }
}

// Element i of storage `dtype` as its value type V (see WithValueType).
template <class V>
V LoadValue(const void* p, int64_t i, DType dtype) {
  if constexpr (std::is_same_v<V, double>) {
    return Load<double>(p, i, dtype);
  } else if constexpr (std::is_same_v<V, bool>) {
    return LoadBool(p, i);
  } else {
    return Get<V>(p, i);
  }
}

// Copies element `from` of src to element `to` of dst (raw bits; Bool bit by bit).
void CopyElement(void* dst, int64_t to, const void* src, int64_t from, DType dtype) {
  if (dtype == DType::Bool) return StoreBool(dst, to, LoadBool(src, from));
  const size_t bytes = DTypeStorageBytes(dtype, 1);
  std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(to) * bytes,
              static_cast<const char*>(src) + static_cast<size_t>(from) * bytes, bytes);
}

void CheckCommon(std::string_view op, DType dtype, DTypeSet accepted, int64_t count) {
  CheckDType(op, "dtype", dtype, accepted);
  CheckNonNegative(op, "count", count);
}

template <class E>
void CheckEnum(std::string_view op, std::string_view arg, E value, E last) {
  const auto v = static_cast<int32_t>(value);
  if (v < 0 || v > static_cast<int32_t>(last)) {
    ThrowInvalidArgument(op, arg, fmt::format("in [0, {}]", static_cast<int32_t>(last)), std::to_string(v));
  }
}

// ---- Cast helpers ---------------------------------------------------------------------------------

// A 64-bit magnitude rounded to 53 bits to odd (truncated, last bit set when inexact): a later
// round-to-nearest-even into f32/f16/bf16 is then one correct rounding of the integer.
double RoundToOddF64(uint64_t m) {
  if (m < (uint64_t{1} << 53)) return static_cast<double>(m);
  const int shift = 64 - std::countl_zero(m) - 53;
  uint64_t kept = m >> shift;
  if ((m & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1;
  return std::ldexp(static_cast<double>(kept), shift);
}

// An integer value stored into a float format, rounded once to nearest even.
void StoreIntAsFloat(void* out, int64_t i, DType to, bool negative, uint64_t magnitude) {
  if (to == DType::Float64) {
    // One hardware rounding (nearest even) of the exact integer.
    const double d = static_cast<double>(magnitude);
    Put<double>(out, i, negative ? -d : d);
    return;
  }
  const double odd = RoundToOddF64(magnitude);
  StoreResult(out, i, to, negative ? -odd : odd);
}

// Float (exact as f64) to integer type I: truncation toward zero, NaN -> 0, saturation.
template <class I>
I FloatToInt(double v) {
  if (std::isnan(v)) return 0;
  // max + 1 (2^(bits-1) signed, 2^bits unsigned) is exact in double; compare before converting.
  constexpr double kHi = 2.0 * static_cast<double>(std::numeric_limits<I>::max() / 2 + 1);
  constexpr double kLo = std::is_signed_v<I> ? -kHi : 0.0;
  const double t = std::trunc(v);
  if (t >= kHi) return std::numeric_limits<I>::max();
  if (t <= kLo) return std::numeric_limits<I>::min();
  return static_cast<I>(t);
}

// Stores element i of `to` from an integer value (sign + 64-bit pattern): floats round once,
// integers wrap modulo 2^bits, Bool is v != 0.
void StoreFromInt(void* out, int64_t i, DType to, bool negative, uint64_t bits) {
  if (IsFloatingPoint(to)) {
    return StoreIntAsFloat(out, i, to, negative, negative ? uint64_t{0} - bits : bits);
  }
  switch (to) {
    case DType::Int64:
      return Put<int64_t>(out, i, static_cast<int64_t>(bits));
    case DType::Int32:
      return Put<int32_t>(out, i, static_cast<int32_t>(bits));
    case DType::Int16:
      return Put<int16_t>(out, i, static_cast<int16_t>(bits));
    case DType::Int8:
      return Put<int8_t>(out, i, static_cast<int8_t>(bits));
    case DType::Uint64:
      return Put<uint64_t>(out, i, bits);
    case DType::Uint32:
      return Put<uint32_t>(out, i, static_cast<uint32_t>(bits));
    case DType::Uint16:
      return Put<uint16_t>(out, i, static_cast<uint16_t>(bits));
    case DType::Uint8:
      return Put<uint8_t>(out, i, static_cast<uint8_t>(bits));
    default:
      return StoreBool(out, i, bits != 0);
  }
}

// Stores element i of `to` from a float value (exact f64).
void StoreFromFloat(void* out, int64_t i, DType to, double v) {
  switch (to) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return StoreResult(out, i, to, v);
    case DType::Int64:
      return Put<int64_t>(out, i, FloatToInt<int64_t>(v));
    case DType::Int32:
      return Put<int32_t>(out, i, FloatToInt<int32_t>(v));
    case DType::Int16:
      return Put<int16_t>(out, i, FloatToInt<int16_t>(v));
    case DType::Int8:
      return Put<int8_t>(out, i, FloatToInt<int8_t>(v));
    case DType::Uint64:
      return Put<uint64_t>(out, i, FloatToInt<uint64_t>(v));
    case DType::Uint32:
      return Put<uint32_t>(out, i, FloatToInt<uint32_t>(v));
    case DType::Uint16:
      return Put<uint16_t>(out, i, FloatToInt<uint16_t>(v));
    case DType::Uint8:
      return Put<uint8_t>(out, i, FloatToInt<uint8_t>(v));
    default:
      return StoreBool(out, i, v != 0.0);  // NaN != 0: true
  }
}

// ---- Mod helpers ----------------------------------------------------------------------------------

// Integer remainder: truncated (sign of a) or floored (sign of b); b != 0 was checked.
template <class T>
T IntMod(T a, T b, bool fmod) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;  // also INT_MIN % -1, which C leaves undefined
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

// Float remainder in f64: C fmod, or Python's % (fmod, plus b when the signs differ; a zero
// result takes the sign of b).
double FloatMod(double a, double b, bool fmod) {
  double r = std::fmod(a, b);
  if (fmod || std::isnan(r)) return r;
  if (r == 0.0) return std::copysign(0.0, b);
  if ((r < 0) != (b < 0)) r += b;
  return r;
}

template <class T>
bool AnyZero(const void* b, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if (Get<T>(b, i) == 0) return true;
  }
  return false;
}

// Round half to even, independent of the floating-point environment.
double RoundHalfEven(double x) {
  const double r = std::round(x);  // half away from zero
  if (std::fabs(r - x) == 0.5) return 2.0 * std::round(x / 2.0);
  return r;
}

}  // namespace

void Compare(const CompareConfig& config, const void* a, const void* b, void* out, int64_t count,
             DType dtype) {
  CheckCommon(kCompare, dtype, kTensorDTypesAndBool, count);
  CheckEnum(kCompare, "config.Op", config.Op, CompareOp::GreaterEqual);
  CheckPointer(kCompare, "a", a, count);
  CheckPointer(kCompare, "b", b, count);
  CheckPointer(kCompare, "out", out, count);
  WithValueType(dtype, [&](auto zero) {
    using V = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      const V x = LoadValue<V>(a, i, dtype), y = LoadValue<V>(b, i, dtype);
      bool r = false;
      switch (config.Op) {
        case CompareOp::Equal:
          r = x == y;
          break;
        case CompareOp::NotEqual:
          r = x != y;
          break;
        case CompareOp::Less:
          r = x < y;
          break;
        case CompareOp::LessEqual:
          r = x <= y;
          break;
        case CompareOp::Greater:
          r = x > y;
          break;
        case CompareOp::GreaterEqual:
          r = x >= y;
          break;
      }
      StoreBool(out, i, r);
    }
  });
}

void Logical(const LogicalConfig& config, const void* a, const void* b, void* out, int64_t count,
             DType dtype) {
  CheckCommon(kLogical, dtype, DTypeSet{DType::Bool}, count);
  CheckEnum(kLogical, "config.Op", config.Op, LogicalOp::Not);
  CheckPointer(kLogical, "a", a, count);
  if (config.Op != LogicalOp::Not) CheckPointer(kLogical, "b", b, count);
  CheckPointer(kLogical, "out", out, count);
  for (int64_t i = 0; i < count; ++i) {
    const bool x = LoadBool(a, i);
    bool r = false;
    switch (config.Op) {
      case LogicalOp::And:
        r = x && LoadBool(b, i);
        break;
      case LogicalOp::Or:
        r = x || LoadBool(b, i);
        break;
      case LogicalOp::Xor:
        r = x != LoadBool(b, i);
        break;
      case LogicalOp::Not:
        r = !x;
        break;
    }
    StoreBool(out, i, r);
  }
}

void Where(const void* cond, const void* a, const void* b, void* out, int64_t count, DType dtype) {
  CheckCommon(kWhere, dtype, kTensorDTypesAndBool, count);
  CheckPointer(kWhere, "cond", cond, count);
  CheckPointer(kWhere, "a", a, count);
  CheckPointer(kWhere, "b", b, count);
  CheckPointer(kWhere, "out", out, count);
  for (int64_t i = 0; i < count; ++i) CopyElement(out, i, LoadBool(cond, i) ? a : b, i, dtype);
}

void Cast(const void* in, DType from, void* out, DType to, int64_t count) {
  CheckDType(kCast, "from", from, kTensorDTypesAndBool);
  CheckDType(kCast, "to", to, kTensorDTypesAndBool);
  CheckNonNegative(kCast, "count", count);
  CheckPointer(kCast, "in", in, count);
  CheckPointer(kCast, "out", out, count);
  if (from == to) {
    for (int64_t i = 0; i < count; ++i) CopyElement(out, i, in, i, from);
    return;
  }
  WithValueType(from, [&](auto zero) {
    using V = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      const V v = LoadValue<V>(in, i, from);
      if constexpr (std::is_same_v<V, double>) {
        StoreFromFloat(out, i, to, v);
      } else if constexpr (std::is_same_v<V, bool>) {
        StoreFromInt(out, i, to, false, v ? 1 : 0);
      } else if constexpr (std::is_signed_v<V>) {
        StoreFromInt(out, i, to, v < 0, static_cast<uint64_t>(static_cast<int64_t>(v)));
      } else {
        StoreFromInt(out, i, to, false, static_cast<uint64_t>(v));
      }
    }
  });
}

void Pow(const void* a, const void* b, void* out, int64_t count, DType dtype) {
  CheckCommon(kPow, dtype, kFloatDTypes, count);
  CheckPointer(kPow, "a", a, count);
  CheckPointer(kPow, "b", b, count);
  CheckPointer(kPow, "out", out, count);
  for (int64_t i = 0; i < count; ++i) {
    StoreResult(out, i, dtype, std::pow(Load<double>(a, i, dtype), Load<double>(b, i, dtype)));
  }
}

void Mod(const ModConfig& config, const void* a, const void* b, void* out, int64_t count, DType dtype) {
  CheckCommon(kMod, dtype, kTensorDTypes, count);
  CheckPointer(kMod, "a", a, count);
  CheckPointer(kMod, "b", b, count);
  CheckPointer(kMod, "out", out, count);
  WithValueType(dtype, [&](auto zero) {
    using V = decltype(zero);
    if constexpr (std::is_same_v<V, double>) {
      for (int64_t i = 0; i < count; ++i) {
        StoreResult(out, i, dtype,
                    FloatMod(Load<double>(a, i, dtype), Load<double>(b, i, dtype), config.Fmod));
      }
    } else if constexpr (!std::is_same_v<V, bool>) {
      if (AnyZero<V>(b, count))
        ThrowInvalidArgument(kMod, "b", "non-zero (integer division)", "a zero element");
      for (int64_t i = 0; i < count; ++i) Put<V>(out, i, IntMod<V>(Get<V>(a, i), Get<V>(b, i), config.Fmod));
    }
  });
}

void Round(const RoundConfig& config, const void* in, void* out, int64_t count, DType dtype) {
  CheckCommon(kRound, dtype, kFloatDTypes, count);
  CheckEnum(kRound, "config.Op", config.Op, RoundOp::Erf);
  CheckPointer(kRound, "in", in, count);
  CheckPointer(kRound, "out", out, count);
  for (int64_t i = 0; i < count; ++i) {
    const double x = Load<double>(in, i, dtype);
    double r = x;
    switch (config.Op) {
      case RoundOp::Floor:
        r = std::floor(x);
        break;
      case RoundOp::Ceil:
        r = std::ceil(x);
        break;
      case RoundOp::HalfToEven:
        r = RoundHalfEven(x);
        break;
      case RoundOp::Trunc:
        r = std::trunc(x);
        break;
      case RoundOp::Erf:
        r = std::erf(x);
        break;
    }
    StoreResult(out, i, dtype, r);
  }
}

}  // namespace tensor_ops

void RegisterTensorOpsElementwise(KernelTable& table) {
  table.TensorOps_Compare = &tensor_ops::Compare;
  table.TensorOps_Logical = &tensor_ops::Logical;
  table.TensorOps_Where = &tensor_ops::Where;
  table.TensorOps_Cast = &tensor_ops::Cast;
  table.TensorOps_Pow = &tensor_ops::Pow;
  table.TensorOps_Mod = &tensor_ops::Mod;
  table.TensorOps_Round = &tensor_ops::Round;
}

}  // namespace backplane::cpu::ref
