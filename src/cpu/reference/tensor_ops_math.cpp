// Scalar reference kernels of TensorOps.Trig (tan, the inverse trigonometric and the hyperbolic
// functions) and TensorOps.BitShift. Semantics: docs/semantics/math_ops.md.
//
// Trig reads floats exactly as f64, applies the C library function in f64 and rounds once to the
// output format. BitShift works on the integer type itself: a shift of the bit width or more gives
// 0 (an arithmetic right shift of a negative value: -1); a negative shift amount is invalid.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace tensor_math {
namespace {

constexpr std::string_view kTrig = "TensorOps.Trig";
constexpr std::string_view kBitShift = "TensorOps.BitShift";

double ApplyTrig(TrigOp op, double x) {
  switch (op) {
    case TrigOp::Tan:
      return std::tan(x);
    case TrigOp::Asin:
      return std::asin(x);
    case TrigOp::Acos:
      return std::acos(x);
    case TrigOp::Atan:
      return std::atan(x);
    case TrigOp::Sinh:
      return std::sinh(x);
    case TrigOp::Cosh:
      return std::cosh(x);
    case TrigOp::Asinh:
      return std::asinh(x);
    case TrigOp::Acosh:
      return std::acosh(x);
    case TrigOp::Atanh:
      return std::atanh(x);
  }
  return x;
}

void Trig(const TrigConfig& config, const void* in, void* out, int64_t count, DType dtype) {
  CheckDType(kTrig, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kTrig, "count", count);
  const auto op = static_cast<int32_t>(config.Op);
  if (op < 0 || op > static_cast<int32_t>(TrigOp::Atanh)) {
    ThrowInvalidArgument(kTrig, "config.Op", fmt::format("in [0, {}]", static_cast<int32_t>(TrigOp::Atanh)),
                         std::to_string(op));
  }
  CheckPointer(kTrig, "in", in, count);
  CheckPointer(kTrig, "out", out, count);
  for (int64_t i = 0; i < count; ++i) StoreResult(out, i, dtype, ApplyTrig(config.Op, Load<double>(in, i, dtype)));
}

template <class T>
T Get(const void* p, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

template <class T>
T Shift(T a, T b, bool left) {
  using U = std::make_unsigned_t<T>;
  constexpr int kBits = std::numeric_limits<U>::digits;
  const auto s = static_cast<uint64_t>(b);  // b >= 0 checked
  if (left) return s >= kBits ? T{0} : static_cast<T>(static_cast<U>(static_cast<U>(a) << s));
  if (s >= kBits) return a < T{0} ? static_cast<T>(-1) : T{0};
  return static_cast<T>(a >> s);  // arithmetic for signed (C++20), logical for unsigned
}

template <class T>
void ShiftTyped(const BitShiftConfig& config, const void* a, const void* b, void* out, int64_t count) {
  if constexpr (std::is_signed_v<T>) {
    for (int64_t i = 0; i < count; ++i) {
      if (Get<T>(b, i) < 0) {
        ThrowInvalidArgument(kBitShift, "b", "non-negative shift amounts",
                             fmt::format("{} at element {}", static_cast<int64_t>(Get<T>(b, i)), i));
      }
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    const T r = Shift<T>(Get<T>(a, i), Get<T>(b, i), config.Left);
    std::memcpy(static_cast<char*>(out) + static_cast<size_t>(i) * sizeof(T), &r, sizeof(T));
  }
}

void BitShift(const BitShiftConfig& config, const void* a, const void* b, void* out, int64_t count,
              DType dtype) {
  CheckDType(kBitShift, "dtype", dtype, kIntegerDTypes);
  CheckNonNegative(kBitShift, "count", count);
  CheckPointer(kBitShift, "a", a, count);
  CheckPointer(kBitShift, "b", b, count);
  CheckPointer(kBitShift, "out", out, count);
  switch (dtype) {
    case DType::Int64:
      return ShiftTyped<int64_t>(config, a, b, out, count);
    case DType::Int32:
      return ShiftTyped<int32_t>(config, a, b, out, count);
    case DType::Int16:
      return ShiftTyped<int16_t>(config, a, b, out, count);
    case DType::Int8:
      return ShiftTyped<int8_t>(config, a, b, out, count);
    case DType::Uint64:
      return ShiftTyped<uint64_t>(config, a, b, out, count);
    case DType::Uint32:
      return ShiftTyped<uint32_t>(config, a, b, out, count);
    case DType::Uint16:
      return ShiftTyped<uint16_t>(config, a, b, out, count);
    default:
      return ShiftTyped<uint8_t>(config, a, b, out, count);
  }
}

}  // namespace
}  // namespace tensor_math

void RegisterTensorOpsMath(KernelTable& table) {
  table.TensorOps_Trig = &tensor_math::Trig;
  table.TensorOps_BitShift = &tensor_math::BitShift;
}

}  // namespace backplane::cpu::ref
