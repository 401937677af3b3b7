#include "backplane/random.hpp"

#include <gtest/gtest.h>

namespace backplane {
namespace {

// Known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds).
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                       {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, UniformsAreInRangeAndRoughlyUniform) {
  double sum = 0, sum_d = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    const float f = PhiloxUniformFloat(42, 7, i);
    const double d = PhiloxUniformDouble(42, 7, i);
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += f;
    sum_d += d;
  }
  // Mean of U(0,1) over 1e5 draws: standard error 0.0009.
  EXPECT_NEAR(sum / kN, 0.5, 0.005);
  EXPECT_NEAR(sum_d / kN, 0.5, 0.005);
  EXPECT_NE(PhiloxBits(1, 0, 0), PhiloxBits(2, 0, 0));
  EXPECT_NE(PhiloxBits(1, 0, 0), PhiloxBits(1, 1, 0));
  EXPECT_NE(PhiloxBits(1ull << 32, 0, 0), PhiloxBits(0, 0, 0)) << "the seed's high word matters";
}

}  // namespace
}  // namespace backplane
