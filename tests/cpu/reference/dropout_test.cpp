// Dropout.Dropout reference kernel: golden data from tests/golden/gen_dropout.py (an independent
// Python Philox4x32-10 and NumPy/torch arithmetic), statistics of the mask, special values and
// every validation path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/random.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;
using test::ThrowsError;

nlohmann::json LoadGolden(const std::string& name) {
  std::ifstream in(test::GoldenPath(name));
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  return nlohmann::json::parse(in);
}

// Bitwise equality of the stored elements (the golden values are exact, not approximate).
::testing::AssertionResult SameBits(const Buffer& got, const Buffer& want) {
  const size_t bytes = DTypeStorageBytes(got.dtype(), got.count());
  if (got.count() != want.count()) return ::testing::AssertionFailure() << "size differs";
  if (std::memcmp(got.data(), want.data(), bytes) == 0) return ::testing::AssertionSuccess();
  for (int64_t i = 0; i < got.count(); ++i) {
    const double g = got.Get(i), w = want.Get(i);
    if (std::memcmp(&g, &w, sizeof g) != 0) {
      return ::testing::AssertionFailure() << DTypeName(got.dtype()) << " element " << i << ": got "
                                           << g << ", want " << w;
    }
  }
  return ::testing::AssertionFailure() << "bytes differ";
}

DType DTypeOf(const nlohmann::json& name) { return *DTypeFromName(name.get<std::string>()); }

Buffer RunDropout(const Buffer& x, float rate, uint64_t seed) {
  auto b = cpu::CreateBackend();
  Buffer out(x.dtype(), x.count());
  out.Poison();
  b->Dropout().Dropout(out.data(), x.data(), x.count(), DropoutConfig{rate, seed}, x.dtype());
  EXPECT_TRUE(out.GuardIntact());
  return out;
}

TEST(DropoutReference, MatchesGoldenSmallCases) {
  const nlohmann::json golden = LoadGolden("dropout.json");
  int checked = 0;
  for (const auto& c : golden["cases"]) {
    const DType dtype = DTypeOf(c["dtype"]);
    const Buffer x = FromDoubles(dtype, c["x"].get<std::vector<double>>());
    const Buffer want = FromDoubles(dtype, c["want"].get<std::vector<double>>());
    const Buffer got =
        RunDropout(x, c["rate"].get<float>(), std::stoull(c["seed"].get<std::string>()));
    EXPECT_TRUE(SameBits(got, want)) << "rate " << c["rate"] << " seed " << c["seed"];
    ++checked;
  }
  EXPECT_EQ(checked, 32);
}

TEST(DropoutReference, MatchesGoldenLargeAndMaskIsDTypeIndependent) {
  const nlohmann::json big = LoadGolden("dropout.json")["large"];
  const auto xs = big["x"].get<std::vector<double>>();
  const std::string keep = big["keep"].get<std::string>();
  ASSERT_GT(xs.size(), 4096u);
  for (DType dtype : test::FloatDTypes()) {
    const Buffer x = FromDoubles(dtype, xs);
    const Buffer want =
        FromDoubles(dtype, big["want"][std::string(DTypeName(dtype))].get<std::vector<double>>());
    const Buffer got =
        RunDropout(x, big["rate"].get<float>(), std::stoull(big["seed"].get<std::string>()));
    EXPECT_TRUE(SameBits(got, want));
    // Every nonzero input is kept exactly where the golden mask says so, in every dtype.
    for (size_t i = 0; i < xs.size(); ++i) {
      if (xs[i] == 0.0) continue;
      ASSERT_EQ(got.Get(static_cast<int64_t>(i)) != 0.0, keep[i] == '1') << i;
    }
  }
}

TEST(DropoutReference, MaskIsTheDocumentedPhiloxMapping) {
  // The contract GPU kernels reproduce: kept iff PhiloxUniformFloat(seed, 0, i) >= rate.
  const Buffer x = FromDoubles(DType::Float32, std::vector<double>(1000, 1.0));
  const uint64_t seed = 0x0123456789ABCDEFull;
  const Buffer got = RunDropout(x, 0.4f, seed);
  for (int64_t i = 0; i < x.count(); ++i) {
    ASSERT_EQ(got.Get(i) != 0.0, PhiloxUniformFloat(seed, 0, static_cast<uint64_t>(i)) >= 0.4f);
  }
}

TEST(DropoutReference, DeterministicAndSeedSensitive) {
  const Buffer x = test::RandomBuffer(DType::Float32, 4096, 5, 0.5, 2.0);  // no zeros
  const Buffer a = RunDropout(x, 0.5f, 1234);
  EXPECT_TRUE(SameBits(RunDropout(x, 0.5f, 1234), a)) << "same seed, same result";
  auto mask = [](const Buffer& out) {
    std::vector<bool> m;
    for (int64_t i = 0; i < out.count(); ++i) m.push_back(out.Get(i) != 0.0);
    return m;
  };
  EXPECT_NE(mask(RunDropout(x, 0.5f, 1235)), mask(a)) << "different seeds differ";
  const uint64_t low = 0x00000000DEADBEEFull;
  EXPECT_NE(mask(RunDropout(x, 0.5f, low | (1ull << 32))), mask(RunDropout(x, 0.5f, low)))
      << "the seed's high 32 bits matter";
  EXPECT_NE(mask(RunDropout(x, 0.5f, 0)), std::vector<bool>(4096, true))
      << "seed 0 still drops (the reference's xorshift kept everything)";
}

TEST(DropoutReference, KeptFractionWithinFiveStandardErrors) {
  constexpr int64_t kN = 100000;
  const Buffer x = FromDoubles(DType::Float32, std::vector<double>(kN, 1.0));
  for (float rate : {0.1f, 0.5f, 0.9f, 1e-3f}) {
    const Buffer got = RunDropout(x, rate, 0xC0FFEE);
    int64_t kept = 0;
    for (int64_t i = 0; i < kN; ++i) kept += got.Get(i) != 0.0;
    const double p = 1.0 - rate;
    const double se = std::sqrt(kN * p * (1.0 - p));
    EXPECT_NEAR(static_cast<double>(kept), kN * p, 5.0 * se) << "rate " << rate;
  }
}

TEST(DropoutReference, KeptValuesAreScaledInTheComputeType) {
  const float rate = 0.3f;
  for (DType dtype : test::FloatDTypes()) {
    const Buffer x = test::RandomBuffer(dtype, 513, 9, 0.25, 4.0);
    const Buffer got = RunDropout(x, rate, 77);
    const Buffer keep1 = RunDropout(FromDoubles(dtype, std::vector<double>(513, 1.0)), rate, 77);
    int kept = 0;
    for (int64_t i = 0; i < x.count(); ++i) {
      if (keep1.Get(i) == 0.0) {
        EXPECT_EQ(got.Get(i), 0.0);
        continue;
      }
      ++kept;
      Buffer want(dtype, 1);
      if (dtype == DType::Float64) {
        want.Set(0, x.Get(i) * (1.0 / (1.0 - static_cast<double>(rate))));
      } else {
        want.Set(0, static_cast<float>(x.Get(i)) * (1.0f / (1.0f - rate)));
      }
      ASSERT_EQ(got.Get(i), want.Get(0)) << DTypeName(dtype) << " element " << i;
    }
    EXPECT_GT(kept, 300);
  }
}

TEST(DropoutReference, SpecialValues) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const uint64_t seed = 42;
  const float rate = 0.5f;
  const std::vector<double> xs = {kInf, -kInf, nan, -0.0, 60000.0, -60000.0, 1.0, 3.0};
  for (DType dtype : test::FloatDTypes()) {
    // Repeat the pattern so that every special value is both kept and dropped somewhere.
    std::vector<double> v;
    for (int r = 0; r < 16; ++r) v.insert(v.end(), xs.begin(), xs.end());
    const Buffer x = FromDoubles(dtype, v);
    const Buffer got = RunDropout(x, rate, seed);
    for (int64_t i = 0; i < x.count(); ++i) {
      const double in = x.Get(i), out = got.Get(i);
      if (PhiloxUniformFloat(seed, 0, static_cast<uint64_t>(i)) < rate) {
        EXPECT_EQ(out, 0.0);  // dropped: +0.0, whatever the input (NaN and Inf included)
        EXPECT_FALSE(std::signbit(out));
      } else if (std::isnan(in)) {
        EXPECT_TRUE(std::isnan(out));
      } else if (std::isinf(in)) {
        EXPECT_EQ(out, in);
      } else if (in == 0.0) {
        EXPECT_TRUE(out == 0.0 && std::signbit(out)) << "-0.0 kept stays -0.0";
      } else if (std::fabs(in) == 60000.0 && dtype == DType::Float16) {
        EXPECT_EQ(out, std::copysign(kInf, in)) << "120000 overflows f16";
      } else {
        EXPECT_EQ(out, in * 2.0);
      }
    }
  }
}

TEST(DropoutReference, RateZeroCopiesBitsAndRateOneZeroes) {
  const uint32_t payload_nan = 0x7FC01234u;
  float special[4];
  std::memcpy(&special[0], &payload_nan, 4);
  special[1] = -0.0f;
  special[2] = std::numeric_limits<float>::infinity();
  special[3] = 1.5f;
  Buffer x(DType::Float32, 4);
  std::memcpy(x.data(), special, sizeof special);
  const Buffer copy = RunDropout(x, 0.0f, 3);
  EXPECT_EQ(std::memcmp(copy.data(), x.data(), sizeof special), 0);
  for (DType dtype : test::FloatDTypes()) {
    const Buffer y = FromDoubles(dtype, {std::numeric_limits<double>::quiet_NaN(),
                                         std::numeric_limits<double>::infinity(), -2.0, 5.0});
    const Buffer zero = RunDropout(y, 1.0f, 3);
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(zero.Get(i), 0.0);
      EXPECT_FALSE(std::signbit(zero.Get(i)));
    }
  }
}

TEST(DropoutReference, InPlaceMatchesOutOfPlace) {
  Buffer x = test::RandomBuffer(DType::BFloat16, 101, 4);
  const Buffer want = RunDropout(x, 0.25f, 8);
  cpu::CreateBackend()->Dropout().Dropout(x.data(), x.data(), x.count(), {0.25f, 8},
                                          DType::BFloat16);
  EXPECT_TRUE(SameBits(x, want));
}

TEST(DropoutReference, ZeroCountIsValidButDTypeIsStillChecked) {
  auto b = cpu::CreateBackend();
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_NO_THROW(b->Dropout().Dropout(nullptr, nullptr, 0, {}, dtype));
  }
  EXPECT_TRUE(ThrowsError([&] { b->Dropout().Dropout(nullptr, nullptr, 0, {}, DType::Int8); },
                          ErrorCode::UnsupportedDType, {"Dropout.Dropout", "'dtype'"}));
}

TEST(DropoutReference, BadInputsThrowAndLeaveOutputPoisoned) {
  auto b = cpu::CreateBackend();
  const Buffer x = test::RandomBuffer(DType::Float32, 8, 1);
  Buffer out(DType::Float32, 8);
  out.Poison();
  auto call = [&](void* dst, const void* src, int64_t n, DropoutConfig cfg, DType dt) {
    return [&b, dst, src, n, cfg, dt] { b->Dropout().Dropout(dst, src, n, cfg, dt); };
  };
  const DropoutConfig ok{0.5f, 1};
  for (DType bad : {DType::Int8, DType::Float8E4M3, DType::Complex64, DType::Invalid}) {
    EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), 8, ok, bad), ErrorCode::UnsupportedDType,
                            {"Dropout.Dropout", "'dtype'"}));
  }
  EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), -1, ok, DType::Float32),
                          ErrorCode::InvalidArgument, {"Dropout.Dropout", "'count'", "-1"}));
  EXPECT_TRUE(ThrowsError(call(nullptr, x.data(), 8, ok, DType::Float32),
                          ErrorCode::InvalidArgument, {"Dropout.Dropout", "'dst'"}));
  EXPECT_TRUE(ThrowsError(call(out.data(), nullptr, 8, ok, DType::Float32),
                          ErrorCode::InvalidArgument, {"Dropout.Dropout", "'src'"}));
  for (float rate : {-0.1f, 1.0001f, 2.0f, std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::infinity()}) {
    EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), 8, {rate, 1}, DType::Float32),
                            ErrorCode::InvalidArgument, {"Dropout.Dropout", "'config.Rate'"}))
        << rate;
    EXPECT_TRUE(ThrowsError(call(nullptr, nullptr, 0, {rate, 1}, DType::Float32),
                            ErrorCode::InvalidArgument, {"config.Rate"}))
        << "config is validated even for count 0";
  }
  EXPECT_TRUE(out.IsPoisoned());
}

}  // namespace
}  // namespace backplane
