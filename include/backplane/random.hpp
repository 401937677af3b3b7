// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11), as used by cuRAND, PyTorch
// and JAX. A value depends only on (seed, stream, index), never on thread count, SIMD target or
// device, so every random method reproduces exactly everywhere.
#pragma once

#include <array>
#include <cstdint>

namespace backplane {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32 block with 10 rounds.
constexpr PhiloxCounter Philox4x32(PhiloxCounter ctr, PhiloxKey key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kMul0} * ctr[0];
    const uint64_t p1 = uint64_t{kMul1} * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key = {key[0] + kWeyl0, key[1] + kWeyl1};
  }
  return ctr;
}

// The 128 random bits for element `index` of stream `stream` under a 64-bit seed:
// counter = (index, stream), key = seed.
constexpr PhiloxCounter PhiloxBits(uint64_t seed, uint64_t stream, uint64_t index) {
  return Philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                     static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                    {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Uniform float in [0, 1) with 24 random bits (word 0).
constexpr float PhiloxUniformFloat(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(PhiloxBits(seed, stream, index)[0] >> 8) * 0x1.0p-24f;
}

// Uniform double in [0, 1) with 53 random bits (words 0 and 1).
constexpr double PhiloxUniformDouble(uint64_t seed, uint64_t stream, uint64_t index) {
  const PhiloxCounter r = PhiloxBits(seed, stream, index);
  const uint64_t bits = (uint64_t{r[0]} << 21) ^ (uint64_t{r[1]} >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

}  // namespace backplane
