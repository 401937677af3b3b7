// Philox4x32-10 as backplane/random.hpp defines it, in plain integers so that the CUDA kernels can
// call it on the device (BP_HD) as well as the host. Same counter, key, rounds and output words:
// PhiloxBits(seed, stream, index) here equals backplane::PhiloxBits word for word, and
// PhiloxUniformFloat equals backplane::PhiloxUniformFloat bit for bit (training.cu checks both at
// compile time).
#pragma once

#include <cstdint>

#include "math/host_device.hpp"

namespace backplane::math {

struct PhiloxBlock {
  uint32_t w[4];
};

// One Philox4x32 block with 10 rounds (Salmon et al., SC'11).
BP_HD constexpr PhiloxBlock Philox4x32R10(PhiloxBlock ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * ctr.w[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * ctr.w[2];
    const PhiloxBlock next{{static_cast<uint32_t>(p1 >> 32) ^ ctr.w[1] ^ key0,
                            static_cast<uint32_t>(p1),
                            static_cast<uint32_t>(p0 >> 32) ^ ctr.w[3] ^ key1,
                            static_cast<uint32_t>(p0)}};
    ctr = next;
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return ctr;
}

// The 128 random bits for element `index` of stream `stream` under a 64-bit seed:
// counter = (index low, index high, stream low, stream high), key = (seed low, seed high).
BP_HD constexpr PhiloxBlock PhiloxBits(uint64_t seed, uint64_t stream, uint64_t index) {
  const PhiloxBlock ctr{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                         static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}};
  return Philox4x32R10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform float in [0, 1) with 24 random bits (word 0): exact integer-to-float conversion and an
// exact scaling by 2^-24.
BP_HD constexpr float PhiloxUniformFloat(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(PhiloxBits(seed, stream, index).w[0] >> 8) * 0x1.0p-24f;
}

}  // namespace backplane::math
