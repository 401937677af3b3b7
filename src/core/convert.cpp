// Scalar float conversions by integer bit manipulation (no FP arithmetic, so the result does not
// depend on the rounding mode or on FTZ/DAZ).
//
// NaN policy: every conversion returns a quiet NaN that keeps the sign and as many of the leading
// payload bits as the destination has room for.

#include "backplane/convert.hpp"

#include <algorithm>
#include <bit>

namespace backplane {
namespace {

constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietBit = 0x00400000u;

// Shifts `value` right by `shift` (1..31), rounding to nearest, ties to even.
constexpr uint32_t ShiftRightRoundEven(uint32_t value, int shift) {
  const uint32_t half_minus_one = (1u << (shift - 1)) - 1u;
  const uint32_t lsb = (value >> shift) & 1u;
  return (value + half_minus_one + lsb) >> shift;
}

// Rounds the magnitude of an f32 (sign bit clear, not NaN) to a format with kExpBits exponent
// bits, kManBits mantissa bits and bias 2^(kExpBits-1)-1. The result is the magnitude encoding as
// if the exponent were unbounded above: rounding past the top finite value carries into the
// exponent field, and the caller deals with overflow. Requires kExpBits < 8.
template <int kExpBits, int kManBits>
constexpr uint32_t RoundF32Magnitude(uint32_t abs) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr int kDrop = 23 - kManBits;
  // Smallest f32 exponent field that is normal in the target.
  constexpr uint32_t kMinNormalExp = 127 - kBias + 1;

  // Normal target: rebias the exponent and round off the extra mantissa bits. A carry out of the
  // mantissa increments the exponent, which is the correct result.
  const uint32_t rebiased = abs - (static_cast<uint32_t>(127 - kBias) << 23);
  const uint32_t normal = ShiftRightRoundEven(rebiased, kDrop);

  // Subnormal target: the result is round(|x| / min_subnormal) = round(m24 / 2^shift) with
  // shift = 151 - bias - kManBits - e. A shift of 25 or more always gives 0 (m24 < 2^24), so
  // clamping keeps it defined; f32 subnormals (e == 0) land there too. The lower clamp only matters
  // for normal inputs, whose subnormal result is discarded.
  const int exp = static_cast<int>(abs >> 23);
  const uint32_t m24 = (abs & 0x007FFFFFu) | 0x00800000u;
  const int shift = std::clamp(151 - kBias - kManBits - exp, 1, 25);
  const uint32_t subnormal = ShiftRightRoundEven(m24, shift);

  return (abs >> 23) >= kMinNormalExp ? normal : subnormal;
}

// Widens a format with kExpBits/kManBits (bias 2^(kExpBits-1)-1) to f32 bits, for finite,
// non-NaN encodings only. Exact: every such value is an f32.
template <int kExpBits, int kManBits>
constexpr uint32_t WidenFinite(uint32_t bits) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr uint32_t kManMask = (1u << kManBits) - 1u;
  const uint32_t sign = ((bits >> (kExpBits + kManBits)) & 1u) << 31;
  int exp = static_cast<int>((bits >> kManBits) & ((1u << kExpBits) - 1u));
  uint32_t man = bits & kManMask;
  if (exp == 0) {
    if (man == 0) return sign;
    // Subnormal: move the leading 1 up to the implicit-bit position.
    const int shift = kManBits + 1 - std::bit_width(man);
    man = (man << shift) & kManMask;
    exp = 1 - shift;
  }
  return sign | (static_cast<uint32_t>(exp + 127 - kBias) << 23) | (man << (23 - kManBits));
}

// f32 bits of a NaN from a narrow NaN's sign and mantissa field, quiet bit set.
template <int kManBits>
constexpr uint32_t WidenNaN(uint32_t sign_bit, uint32_t man) {
  return (sign_bit << 31) | kF32Inf | kF32QuietBit | (man << (23 - kManBits));
}

}  // namespace

float F16ToF32(uint16_t bits) {
  const uint32_t man = bits & 0x03FFu;
  if ((bits & 0x7C00u) == 0x7C00u) {
    const uint32_t sign = static_cast<uint32_t>(bits >> 15);
    return std::bit_cast<float>(man == 0 ? (sign << 31) | kF32Inf : WidenNaN<10>(sign, man));
  }
  return std::bit_cast<float>(WidenFinite<5, 10>(bits));
}

uint16_t F32ToF16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & kF32AbsMask;
  if (abs > kF32Inf) {
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x03FFu));
  }
  // 2^16 (and anything larger, Inf included) rounds to exactly 0x7C00 = Inf; values in
  // [65520, 65536) round up to it on their own.
  const uint32_t clamped = std::min(abs, 0x47800000u);
  return static_cast<uint16_t>(sign | RoundF32Magnitude<5, 10>(clamped));
}

float BF16ToF32(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  if ((x & kF32AbsMask) > kF32Inf) x |= kF32QuietBit;
  return std::bit_cast<float>(x);
}

uint16_t F32ToBF16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & kF32AbsMask) > kF32Inf) {
    // Quiet bit set, so a payload confined to the low 16 bits still gives a NaN.
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  // Same exponent field as f32: round the low 16 bits away. The carry turns the largest finite
  // values into Inf, and Inf stays Inf.
  return static_cast<uint16_t>(ShiftRightRoundEven(x & kF32AbsMask, 16) | ((x >> 16) & 0x8000u));
}

float F8E4M3ToF32(uint8_t bits) {
  if ((bits & 0x7Fu) == 0x7Fu) {
    return std::bit_cast<float>(WidenNaN<3>(static_cast<uint32_t>(bits >> 7), 0x7u));
  }
  return std::bit_cast<float>(WidenFinite<4, 3>(bits));
}

uint8_t F32ToF8E4M3(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 24) & 0x80u;
  // 480.0f encodes as exactly 0x7F (NaN), so clamping to it sends Inf, NaN and everything that
  // rounds above 448 (|x| > 464) to NaN, and keeps 464 -> 448 by ties-to-even.
  const uint32_t clamped = std::min(x & kF32AbsMask, 0x43F00000u);
  return static_cast<uint8_t>(sign | RoundF32Magnitude<4, 3>(clamped));
}

float F8E5M2ToF32(uint8_t bits) {
  const uint32_t man = bits & 0x03u;
  if ((bits & 0x7Cu) == 0x7Cu) {
    const uint32_t sign = static_cast<uint32_t>(bits >> 7);
    return std::bit_cast<float>(man == 0 ? (sign << 31) | kF32Inf : WidenNaN<2>(sign, man));
  }
  return std::bit_cast<float>(WidenFinite<5, 2>(bits));
}

uint8_t F32ToF8E5M2(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t abs = x & kF32AbsMask;
  if (abs > kF32Inf) return static_cast<uint8_t>(sign | 0x7Eu | ((abs >> 21) & 0x03u));
  // As for f16 (same exponent range): 2^16 encodes as exactly 0x7C = Inf.
  const uint32_t clamped = std::min(abs, 0x47800000u);
  return static_cast<uint8_t>(sign | RoundF32Magnitude<5, 2>(clamped));
}

}  // namespace backplane
