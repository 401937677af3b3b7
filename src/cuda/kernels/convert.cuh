// Bit-exact float conversions on the device, as the CPU reference does them on x86-64: f16 and bf16
// by integer manipulation (ports of src/core/convert.cpp), f32 <-> f64 as cvtss2sd / cvtsd2ss (NaN
// payloads kept, quiet bit set), and common.hpp's round-to-odd narrowing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace backplane::cuda {

constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietBit = 0x00400000u;

// Shifts `value` right by `shift` (1..31), rounding to nearest, ties to even.
__device__ __forceinline__ uint32_t ShiftRightRoundEven(uint32_t value, int shift) {
  const uint32_t halfMinusOne = (1u << (shift - 1)) - 1u;
  const uint32_t lsb = (value >> shift) & 1u;
  return (value + halfMinusOne + lsb) >> shift;
}

// convert.cpp's RoundF32Magnitude<5, 10> (IEEE binary16): the magnitude of a non-NaN f32 rounded
// to f16, carrying into the exponent past the top finite value.
__device__ __forceinline__ uint32_t RoundF32MagnitudeF16(uint32_t abs) {
  constexpr int kBias = 15;
  constexpr int kManBits = 10;
  constexpr int kDrop = 23 - kManBits;
  constexpr uint32_t kMinNormalExp = 127 - kBias + 1;
  const uint32_t rebiased = abs - (static_cast<uint32_t>(127 - kBias) << 23);
  const uint32_t normal = ShiftRightRoundEven(rebiased, kDrop);
  const int exp = static_cast<int>(abs >> 23);
  const uint32_t m24 = (abs & 0x007FFFFFu) | 0x00800000u;
  int shift = 151 - kBias - kManBits - exp;
  shift = shift < 1 ? 1 : (shift > 25 ? 25 : shift);
  const uint32_t subnormal = ShiftRightRoundEven(m24, shift);
  return (abs >> 23) >= kMinNormalExp ? normal : subnormal;
}

__device__ __forceinline__ float F16ToF32(uint16_t bits) {
  const uint32_t man = bits & 0x03FFu;
  const uint32_t sign = static_cast<uint32_t>(bits >> 15) << 31;
  if ((bits & 0x7C00u) == 0x7C00u) {
    return __uint_as_float(man == 0 ? sign | kF32Inf : sign | kF32Inf | kF32QuietBit | (man << 13));
  }
  int exp = static_cast<int>((bits >> 10) & 0x1Fu);
  uint32_t m = man;
  if (exp == 0) {
    if (m == 0) return __uint_as_float(sign);
    const int width = 32 - __clz(static_cast<int>(m));  // std::bit_width
    const int shift = 10 + 1 - width;
    m = (m << shift) & 0x03FFu;
    exp = 1 - shift;
  }
  return __uint_as_float(sign | (static_cast<uint32_t>(exp + 127 - 15) << 23) | (m << 13));
}

__device__ __forceinline__ uint16_t F32ToF16(float value) {
  const uint32_t x = __float_as_uint(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & kF32AbsMask;
  if (abs > kF32Inf) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x03FFu));
  const uint32_t clamped = abs < 0x47800000u ? abs : 0x47800000u;
  return static_cast<uint16_t>(sign | RoundF32MagnitudeF16(clamped));
}

__device__ __forceinline__ float BF16ToF32(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  if ((x & kF32AbsMask) > kF32Inf) x |= kF32QuietBit;
  return __uint_as_float(x);
}

__device__ __forceinline__ uint16_t F32ToBF16(float value) {
  const uint32_t x = __float_as_uint(value);
  if ((x & kF32AbsMask) > kF32Inf) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>(ShiftRightRoundEven(x & kF32AbsMask, 16) | ((x >> 16) & 0x8000u));
}

// static_cast<double>(float) as x86 (cvtss2sd) does it: exact; a NaN keeps its sign and payload
// and gets the quiet bit.
__device__ __forceinline__ double F32ToF64(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & kF32AbsMask) > kF32Inf) {
    const uint64_t bits = (static_cast<uint64_t>(x >> 31) << 63) | 0x7FF8000000000000ULL |
                          (static_cast<uint64_t>(x & 0x007FFFFFu) << 29);
    return __longlong_as_double(static_cast<long long>(bits));
  }
  return static_cast<double>(f);
}

// static_cast<float>(double) as x86 (cvtsd2ss) does it: rounded to nearest even; a NaN keeps its
// sign and the top 23 payload bits and gets the quiet bit.
__device__ __forceinline__ float F64ToF32(double d) {
  const auto x = static_cast<uint64_t>(__double_as_longlong(d));
  if ((x & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL) {
    const uint32_t bits = (static_cast<uint32_t>(x >> 63) << 31) | kF32Inf | kF32QuietBit |
                          static_cast<uint32_t>((x & 0x000FFFFFFFFFFFFFULL) >> 29);
    return __uint_as_float(bits);
  }
  return __double2float_rn(d);
}

// common.hpp's RoundToOddF32: double -> float truncated toward zero, last bit set when inexact.
__device__ __forceinline__ float RoundToOddF32(double value) {
  if (isnan(value)) return F64ToF32(value);
  const float f = __double2float_rz(value);
  if (static_cast<double>(f) == value) return f;
  return __uint_as_float(__float_as_uint(f) | 1u);
}

}  // namespace backplane::cuda
