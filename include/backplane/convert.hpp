// Scalar conversions between f32 and the reduced floating formats, and packed int4/bool access.
// Every narrowing conversion rounds to nearest, ties to even.
#pragma once

#include <cstdint>

namespace backplane {

// IEEE binary16. Overflow gives +-Inf, NaN stays NaN (quiet), subnormals are kept.
float F16ToF32(uint16_t bits);
uint16_t F32ToF16(float value);

// bfloat16: the high half of an f32. NaN stays NaN (quiet), overflow gives +-Inf.
float BF16ToF32(uint16_t bits);
uint16_t F32ToBF16(float value);

// OCP FP8 E4M3 ("e4m3fn"): bias 7, no infinities, S.1111.111 is NaN, max finite 448.
// Values beyond the range (Inf included) saturate to NaN as in the OCP spec's non-saturating
// mode, which is what PyTorch's float8_e4m3fn conversion does.
float F8E4M3ToF32(uint8_t bits);
uint8_t F32ToF8E4M3(float value);

// OCP FP8 E5M2: bias 15, IEEE-like with +-Inf and NaN, max finite 57344. Overflow gives +-Inf.
float F8E5M2ToF32(uint8_t bits);
uint8_t F32ToF8E5M2(float value);

// Int4: element 2i is the low nibble of byte i, element 2i+1 the high nibble; two's complement.
inline int8_t LoadInt4(const void* packed, int64_t index) {
  const uint8_t byte = static_cast<const uint8_t*>(packed)[index >> 1];
  const uint8_t nibble = (index & 1) ? (byte >> 4) : (byte & 0x0F);
  return static_cast<int8_t>(static_cast<int8_t>(nibble << 4) >> 4);
}
// Stores value clamped to [-8, 7].
inline void StoreInt4(void* packed, int64_t index, int value) {
  const int clamped = value < -8 ? -8 : (value > 7 ? 7 : value);
  uint8_t* byte = static_cast<uint8_t*>(packed) + (index >> 1);
  const uint8_t nibble = static_cast<uint8_t>(clamped) & 0x0F;
  *byte = (index & 1) ? static_cast<uint8_t>((*byte & 0x0F) | (nibble << 4))
                      : static_cast<uint8_t>((*byte & 0xF0) | nibble);
}

// Bool: element i is bit (i % 8) of byte i / 8, least significant bit first.
inline bool LoadBool(const void* packed, int64_t index) {
  return (static_cast<const uint8_t*>(packed)[index >> 3] >> (index & 7)) & 1;
}
inline void StoreBool(void* packed, int64_t index, bool value) {
  uint8_t* byte = static_cast<uint8_t*>(packed) + (index >> 3);
  const uint8_t mask = static_cast<uint8_t>(1u << (index & 7));
  *byte = value ? static_cast<uint8_t>(*byte | mask) : static_cast<uint8_t>(*byte & ~mask);
}

}  // namespace backplane
