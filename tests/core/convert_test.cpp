// Tests for the scalar float conversions against an independent oracle: values are decoded from
// the bit fields in double, and narrowing is checked against the nearest entry of a sorted table
// of every finite value of the target format (ties to the even encoding).

#include "backplane/convert.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace backplane {
namespace {

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }
float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

constexpr float kInf = std::numeric_limits<float>::infinity();

// A narrow float format, described only by its fields, plus the conversions under test.
struct Format {
  std::string name;
  int exp_bits;
  int man_bits;
  // True for IEEE-like specials (all-ones exponent is Inf/NaN). False for E4M3FN, where only
  // S.1111.111 is NaN and there is no Inf.
  bool ieee_specials;
  float (*to_f32)(uint32_t);
  uint32_t (*from_f32)(float);

  int total_bits() const { return 1 + exp_bits + man_bits; }
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  uint32_t max_exp() const { return (1u << exp_bits) - 1; }
  uint32_t man_mask() const { return (1u << man_bits) - 1; }
  // Largest finite positive encoding.
  uint32_t max_finite() const {
    return ieee_specials ? (max_exp() << man_bits) - 1 : (max_exp() << man_bits) + man_mask() - 1;
  }
};

enum class Kind { kFinite, kInf, kNaN };

struct Decoded {
  Kind kind;
  bool negative;
  double value;  // signed; meaningful for kFinite and kInf
};

// sign * 2^(e - bias) * (1 + m / 2^M) for normals, sign * 2^(1 - bias) * (m / 2^M) for subnormals,
// ignoring specials.
double FieldValue(const Format& f, uint32_t exp, uint32_t man) {
  const double frac = static_cast<double>(man) / std::ldexp(1.0, f.man_bits);
  if (exp == 0) return std::ldexp(frac, 1 - f.bias());
  return std::ldexp(1.0 + frac, static_cast<int>(exp) - f.bias());
}

Decoded OracleDecode(const Format& f, uint32_t bits) {
  const bool negative = (bits & f.sign_bit()) != 0;
  const uint32_t exp = (bits >> f.man_bits) & f.max_exp();
  const uint32_t man = bits & f.man_mask();
  const double sign = negative ? -1.0 : 1.0;
  if (f.ieee_specials && exp == f.max_exp()) {
    if (man != 0) return {Kind::kNaN, negative, 0.0};
    return {Kind::kInf, negative, sign * std::numeric_limits<double>::infinity()};
  }
  if (!f.ieee_specials && exp == f.max_exp() && man == f.man_mask()) {
    return {Kind::kNaN, negative, 0.0};
  }
  return {Kind::kFinite, negative, sign * FieldValue(f, exp, man)};
}

// Correctly rounded f32 -> format reference.
class Reference {
 public:
  explicit Reference(const Format& f) : f_(f) {
    // Positive finite encodings are 0..max_finite in increasing value order. One more entry, the
    // value the next encoding would have with an unbounded exponent, stands for overflow: it is
    // +Inf for the IEEE-like formats and the NaN pattern 0x7F for E4M3FN, so rounding to it
    // yields exactly the overflow rule (E4M3: |x| > 464 -> NaN, 464 -> 448).
    for (uint32_t b = 0; b <= f.max_finite() + 1; ++b) {
      const uint32_t exp = (b >> f.man_bits) & f.max_exp();
      values_.push_back(FieldValue(f, exp, b & f.man_mask()));
    }
    for (size_t i = 1; i < values_.size(); ++i) {
      if (!(values_[i - 1] < values_[i])) ADD_FAILURE() << f.name << ": table not increasing";
    }
  }

  // Expected encoding; NaN expectations are reported through `nan`.
  struct Expected {
    bool nan;
    bool negative;
    uint32_t bits;
  };

  Expected Round(float x) const {
    const bool negative = std::signbit(x);
    if (std::isnan(x)) return {true, negative, 0};
    const double a = std::fabs(static_cast<double>(x));
    const uint32_t overflow = f_.max_finite() + 1;
    uint32_t enc;
    if (a >= values_.back()) {
      enc = overflow;
    } else {
      const auto it = std::upper_bound(values_.begin(), values_.end(), a);
      const auto hi = static_cast<uint32_t>(it - values_.begin());
      const uint32_t lo = hi - 1;
      if (values_[lo] == a) {
        enc = lo;
      } else {
        const double mid = (values_[lo] + values_[hi]) / 2;  // exact in double
        if (a < mid) {
          enc = lo;
        } else if (a > mid) {
          enc = hi;
        } else {
          enc = (lo % 2 == 0) ? lo : hi;
        }
      }
    }
    const uint32_t sign = negative ? f_.sign_bit() : 0;
    if (!f_.ieee_specials && enc == overflow) return {true, negative, enc | sign};
    return {false, negative, enc | sign};
  }

  const std::vector<double>& values() const { return values_; }

 private:
  const Format& f_;
  std::vector<double> values_;
};

// Checks the narrowing of every input; returns the number of mismatches (reports the first few).
int CheckNarrowing(const Format& f, const Reference& ref, const std::vector<float>& inputs) {
  int failures = 0;
  for (float x : inputs) {
    const Reference::Expected want = ref.Round(x);
    const uint32_t got = f.from_f32(x);
    bool ok;
    if (want.nan) {
      const Decoded d = OracleDecode(f, got);
      const bool quiet = !f.ieee_specials || ((got >> (f.man_bits - 1)) & 1);
      ok = got < (1u << f.total_bits()) && d.kind == Kind::kNaN && d.negative == want.negative &&
           quiet;
    } else {
      ok = got == want.bits;
    }
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << f.name << ": f32 0x" << std::hex << Bits(x) << " (" << x << ") -> 0x" << got
                    << ", want " << (want.nan ? "quiet NaN" : "0x") << want.bits;
    }
  }
  return failures;
}

// Adds x and its f32 neighbours.
void AddWithNeighbours(std::vector<float>& out, float x) {
  out.push_back(x);
  out.push_back(std::nextafter(x, kInf));
  out.push_back(std::nextafter(x, -kInf));
}

// Every target value, every midpoint between neighbours, each +-1 f32 ulp, both signs.
std::vector<float> BoundaryInputs(const Reference& ref) {
  std::vector<float> out;
  const std::vector<double>& v = ref.values();
  for (size_t i = 0; i < v.size(); ++i) {
    // The overflow entry of bf16 is 2^128, beyond f32; Inf comes from SpecialInputs().
    if (v[i] > std::numeric_limits<float>::max()) continue;
    const auto value = static_cast<float>(v[i]);
    EXPECT_EQ(static_cast<double>(value), v[i]);
    AddWithNeighbours(out, value);
    if (i + 1 < v.size()) {
      const double mid = (v[i] + v[i + 1]) / 2;
      const auto mid_f = static_cast<float>(mid);
      EXPECT_EQ(static_cast<double>(mid_f), mid) << "midpoint not an f32";
      AddWithNeighbours(out, mid_f);
    }
  }
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) out.push_back(-out[i]);
  return out;
}

std::vector<float> SpecialInputs() {
  std::vector<float> out = {0.0f,
                            -0.0f,
                            kInf,
                            -kInf,
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            1.0f,
                            -1.0f};
  for (uint32_t b : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7FFFFFFFu,
                     0xFFFFFFFFu, 0x7F80FFFFu, 0x7FA00000u, 0x007FFFFFu, 0x80000001u}) {
    out.push_back(FromBits(b));
  }
  return out;
}

std::vector<float> RandomInputs(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<float> out(static_cast<size_t>(count));
  for (float& x : out) x = FromBits(static_cast<uint32_t>(rng()));
  return out;
}

// Random f32 values whose exponent lies in and just around the target's range (subnormals
// included), with random mantissa and sign.
std::vector<float> RandomInRangeInputs(const Format& f, uint32_t seed, int count) {
  std::mt19937 rng(seed);
  const int lo_exp = 127 + 1 - f.bias() - f.man_bits - 3;  // below half the min subnormal
  const int hi_exp = 127 + static_cast<int>(f.max_exp()) - f.bias() + 1;  // above the overflow
  std::uniform_int_distribution<int> exp_dist(std::max(lo_exp, 0), std::min(hi_exp, 254));
  std::vector<float> out(static_cast<size_t>(count));
  for (float& x : out) {
    const uint32_t r = static_cast<uint32_t>(rng());
    x = FromBits((r & 0x807FFFFFu) | (static_cast<uint32_t>(exp_dist(rng)) << 23));
  }
  return out;
}

float F16Wrap(uint32_t b) { return F16ToF32(static_cast<uint16_t>(b)); }
uint32_t F16Narrow(float x) { return F32ToF16(x); }
float BF16Wrap(uint32_t b) { return BF16ToF32(static_cast<uint16_t>(b)); }
uint32_t BF16Narrow(float x) { return F32ToBF16(x); }
float E4M3Wrap(uint32_t b) { return F8E4M3ToF32(static_cast<uint8_t>(b)); }
uint32_t E4M3Narrow(float x) { return F32ToF8E4M3(x); }
float E5M2Wrap(uint32_t b) { return F8E5M2ToF32(static_cast<uint8_t>(b)); }
uint32_t E5M2Narrow(float x) { return F32ToF8E5M2(x); }

const Format kF16{"f16", 5, 10, true, F16Wrap, F16Narrow};
const Format kBF16{"bf16", 8, 7, true, BF16Wrap, BF16Narrow};
const Format kE4M3{"f8e4m3", 4, 3, false, E4M3Wrap, E4M3Narrow};
const Format kE5M2{"f8e5m2", 5, 2, true, E5M2Wrap, E5M2Narrow};

class ConvertFormatTest : public ::testing::TestWithParam<const Format*> {};

// Every bit pattern widens to the value given by its fields; non-NaN patterns round-trip.
TEST_P(ConvertFormatTest, WidenAllPatternsAndRoundTrip) {
  const Format& f = *GetParam();
  int failures = 0;
  const uint32_t count = 1u << f.total_bits();
  for (uint32_t b = 0; b < count; ++b) {
    const Decoded want = OracleDecode(f, b);
    const float got = f.to_f32(b);
    bool ok = std::signbit(got) == want.negative;
    if (want.kind == Kind::kNaN) {
      ok = ok && std::isnan(got) && (Bits(got) & 0x00400000u) != 0;  // quiet
      const uint32_t back = f.from_f32(got);
      ok = ok && OracleDecode(f, back).kind == Kind::kNaN &&
           OracleDecode(f, back).negative == want.negative;
    } else {
      ok = ok && static_cast<double>(got) == want.value && f.from_f32(got) == b;
    }
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << f.name << ": pattern 0x" << std::hex << b << " -> f32 0x" << Bits(got)
                    << " (" << got << "), back 0x" << f.from_f32(got);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(ConvertFormatTest, NarrowAtValuesMidpointsAndNeighbours) {
  const Format& f = *GetParam();
  const Reference ref(f);
  EXPECT_EQ(CheckNarrowing(f, ref, BoundaryInputs(ref)), 0);
  EXPECT_EQ(CheckNarrowing(f, ref, SpecialInputs()), 0);
}

TEST_P(ConvertFormatTest, NarrowRandomBitPatterns) {
  const Format& f = *GetParam();
  const Reference ref(f);
  EXPECT_EQ(CheckNarrowing(f, ref, RandomInputs(0x5EEDu, 1'000'000)), 0);
  EXPECT_EQ(CheckNarrowing(f, ref, RandomInRangeInputs(f, 0xC0FFEEu, 500'000)), 0);
}

// A strided sweep over every f32 from below half the smallest subnormal up to twice the overflow
// threshold; the odd stride varies the low mantissa bits.
TEST_P(ConvertFormatTest, NarrowStridedSweepOfTargetRange) {
  const Format& f = *GetParam();
  const Reference ref(f);
  const uint32_t lo = Bits(static_cast<float>(ref.values()[1] / 4));
  const uint32_t hi = Bits(static_cast<float>(ref.values().back() * 2));
  const uint32_t stride = ((hi - lo) / 400'000) | 1u;
  std::vector<float> inputs;
  for (uint64_t b = lo; b <= hi; b += stride) {
    inputs.push_back(FromBits(static_cast<uint32_t>(b)));
    inputs.push_back(-FromBits(static_cast<uint32_t>(b)));
  }
  EXPECT_EQ(CheckNarrowing(f, ref, inputs), 0);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, ConvertFormatTest,
                         ::testing::Values(&kF16, &kBF16, &kE4M3, &kE5M2),
                         [](const ::testing::TestParamInfo<const Format*>& info) {
                           return std::string(info.param->name);
                         });

// Hand-checked values documenting the edge rules.

TEST(ConvertTest, F16Edges) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);  // tie rounds to even = Inf
  EXPECT_EQ(F32ToF16(-1e10f), 0xFC00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie rounds to even = 0
  EXPECT_EQ(F32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 min subnormals, tie to even
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F16ToF32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(Bits(F16ToF32(0x8000)), 0x80000000u);
}

TEST(ConvertTest, BF16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBF16(FromBits(0x3F808000u)), 0x3F80);              // tie, even stays
  EXPECT_EQ(F32ToBF16(FromBits(0x3F818000u)), 0x3F82);              // tie, odd rounds up
  EXPECT_EQ(F32ToBF16(FromBits(0x3F808001u)), 0x3F81);              // above the tie: not truncated
  EXPECT_EQ(F32ToBF16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(F32ToBF16(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(F32ToBF16(-0.0f), 0x8000);
  EXPECT_EQ(BF16ToF32(0x3F80), 1.0f);
}

TEST(ConvertTest, F8E4M3Edges) {
  EXPECT_EQ(F32ToF8E4M3(448.0f), 0x7E);
  EXPECT_EQ(F32ToF8E4M3(464.0f), 0x7E);  // tie to even stays finite
  EXPECT_EQ(F32ToF8E4M3(-464.0f), 0xFE);
  EXPECT_EQ(F32ToF8E4M3(std::nextafter(464.0f, kInf)), 0x7F);  // NaN
  EXPECT_EQ(F32ToF8E4M3(-500.0f), 0xFF);
  EXPECT_EQ(F32ToF8E4M3(kInf), 0x7F);
  EXPECT_EQ(F32ToF8E4M3(-kInf), 0xFF);
  EXPECT_EQ(F32ToF8E4M3(std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(F32ToF8E4M3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(F32ToF8E4M3(std::ldexp(3.0f, -11)), 0x01);  // 0.75 min subnormals
  EXPECT_EQ(F32ToF8E4M3(std::ldexp(3.0f, -10)), 0x02);  // 1.5 min subnormals, tie to even
  EXPECT_EQ(F32ToF8E4M3(std::ldexp(1.0f, -6)), 0x08);
  EXPECT_EQ(F8E4M3ToF32(0x7E), 448.0f);
  EXPECT_EQ(F8E4M3ToF32(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(F8E4M3ToF32(0x7F)));
  EXPECT_TRUE(std::isnan(F8E4M3ToF32(0xFF)));
  EXPECT_TRUE(std::signbit(F8E4M3ToF32(0xFF)));
  EXPECT_EQ(F8E4M3ToF32(0x78), 256.0f);  // exponent 15 is finite apart from mantissa 111
}

TEST(ConvertTest, F8E5M2Edges) {
  EXPECT_EQ(F32ToF8E5M2(57344.0f), 0x7B);
  EXPECT_EQ(F32ToF8E5M2(std::nextafter(61440.0f, 0.0f)), 0x7B);
  EXPECT_EQ(F32ToF8E5M2(61440.0f), 0x7C);  // tie to even = Inf
  EXPECT_EQ(F32ToF8E5M2(-kInf), 0xFC);
  EXPECT_EQ(F32ToF8E5M2(std::ldexp(1.0f, -16)), 0x01);
  EXPECT_EQ(F32ToF8E5M2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(F8E5M2ToF32(0x7B), 57344.0f);
  EXPECT_EQ(F8E5M2ToF32(0x7C), kInf);
  EXPECT_EQ(F8E5M2ToF32(0xFC), -kInf);
}

// NaN policy: the result is a quiet NaN keeping the sign and the leading payload bits.
TEST(ConvertTest, NaNPayloadAndSign) {
  EXPECT_EQ(F32ToF16(FromBits(0x7FC00000u)), 0x7E00);
  EXPECT_EQ(F32ToF16(FromBits(0xFFC00000u)), 0xFE00);
  EXPECT_EQ(F32ToF16(FromBits(0x7F800001u)), 0x7E00);  // payload below f16 precision
  EXPECT_EQ(F32ToF16(FromBits(0x7FC02000u)), 0x7E01);
  EXPECT_EQ(F32ToF16(FromBits(0x7FA00000u)), 0x7F00);  // signalling -> quiet, payload kept
  EXPECT_EQ(Bits(F16ToF32(0x7C01)), 0x7FC02000u);      // signalling -> quiet
  EXPECT_EQ(Bits(F16ToF32(0xFE00)), 0xFFC00000u);

  EXPECT_EQ(F32ToBF16(FromBits(0x7F800001u)), 0x7FC0);  // low-16-bit payload stays NaN
  EXPECT_EQ(F32ToBF16(FromBits(0xFF800001u)), 0xFFC0);
  EXPECT_EQ(F32ToBF16(FromBits(0x7FC00000u)), 0x7FC0);
  EXPECT_EQ(F32ToBF16(FromBits(0x7F810000u)), 0x7FC1);
  EXPECT_EQ(F32ToBF16(FromBits(0x7FFFFFFFu)), 0x7FFF);  // no rounding carry into the sign
  EXPECT_EQ(Bits(BF16ToF32(0x7F81)), 0x7FC10000u);
  EXPECT_EQ(Bits(BF16ToF32(0xFFC0)), 0xFFC00000u);

  EXPECT_EQ(F32ToF8E4M3(FromBits(0x7FC00000u)), 0x7F);
  EXPECT_EQ(F32ToF8E4M3(FromBits(0xFF800001u)), 0xFF);

  EXPECT_EQ(F32ToF8E5M2(FromBits(0x7FC00000u)), 0x7E);
  EXPECT_EQ(F32ToF8E5M2(FromBits(0xFF800001u)), 0xFE);
  EXPECT_EQ(F32ToF8E5M2(FromBits(0x7FE00000u)), 0x7F);
  EXPECT_EQ(Bits(F8E5M2ToF32(0x7D)), 0x7FE00000u);  // signalling -> quiet, payload kept
}

}  // namespace
}  // namespace backplane
