// Dot reference kernel against golden data (tests/golden/gen_core_math.py: torch float64 dot on
// inputs rounded to each dtype, exact Python integers for int8, one length of 4099), special values
// and every validation path. Called through the public CPU Backend.
//
// Tolerances: f64 results use DefaultTolerance(f64); f32/f16/bf16 results are the f64 total rounded
// once to f32, so they are held to DefaultTolerance(f32); int8 results are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("dot.json"));
    EXPECT_TRUE(in.good()) << "missing golden file dot.json";
    return json::parse(in);
  }();
  return data;
}

Buffer FromGolden(DType dtype, const json& values) {
  const auto v = values.get<std::vector<double>>();
  Buffer b = FromDoubles(dtype, v);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(b.Get(static_cast<int64_t>(i)), v[i])
        << "golden input not exact in " << DTypeName(dtype);
  }
  return b;
}

Tolerance ResultTolerance(DType dtype) {
  return DefaultTolerance(dtype == DType::Float64 ? DType::Float64 : DType::Float32);
}

class DotTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
  DotSurface& dot() { return backend_->Dot(); }

  double Run(DType dtype, const std::vector<double>& l, const std::vector<double>& r) {
    const Buffer lb = FromDoubles(dtype, l), rb = FromDoubles(dtype, r);
    return dot().Dot(lb.data(), rb.data(), lb.count(), dtype);
  }
  double RunInt8(const std::vector<int8_t>& l, const std::vector<int8_t>& r) {
    return dot().Dot(l.data(), r.data(), static_cast<int64_t>(l.size()), DType::Int8);
  }
};

TEST_F(DotTest, MatchesGoldenForEveryFloatDType) {
  int cases = 0;
  for (const json& c : Golden()["cases"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(c["n"].get<int>()));
    const Buffer l = FromGolden(dtype, c["left"]), r = FromGolden(dtype, c["right"]);
    const double got = dot().Dot(l.data(), r.data(), l.count(), dtype);
    EXPECT_TRUE(test::Close(got, c["result"].get<double>(), ResultTolerance(dtype)));
    if (dtype != DType::Float64) {
      EXPECT_EQ(got, static_cast<double>(static_cast<float>(got))) << "rounded to f32";
    }
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 6);
}

TEST_F(DotTest, MatchesGoldenOver4096Elements) {
  const json& large = Golden()["large"];
  ASSERT_GT(large["n"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer l = FromGolden(dtype, large["left"]), r = FromGolden(dtype, large["right"]);
    EXPECT_TRUE(test::Close(dot().Dot(l.data(), r.data(), l.count(), dtype),
                            large["result"].get<double>(), ResultTolerance(dtype)));
  }
}

TEST_F(DotTest, Int8MatchesExactGolden) {
  bool saw_large = false;
  for (const json& c : Golden()["int8"]) {
    const auto l = c["left"].get<std::vector<int8_t>>();
    const auto r = c["right"].get<std::vector<int8_t>>();
    EXPECT_EQ(RunInt8(l, r), c["result"].get<double>()) << "n=" << l.size();
    saw_large = saw_large || l.size() > 4096;
  }
  EXPECT_TRUE(saw_large);
}

// ---- Known values
// --------------------------------------------------------------------------------

TEST_F(DotTest, Int8IsExactBeyondFloat32Precision) {
  // 1042 * 127 * 127 + 1 = 16806419: above 2^24 and odd, so not an f32 value.
  std::vector<int8_t> l(1043, 127), r(1043, 127);
  l.back() = 1;
  r.back() = 1;
  EXPECT_EQ(RunInt8(l, r), 16806419.0);
  // Extreme products: (-128) * (-128) and (-128) * 127.
  EXPECT_EQ(RunInt8({-128, -128, 127}, {-128, 127, 127}), 16384.0 - 16256.0 + 16129.0);
  EXPECT_EQ(dot().Dot(nullptr, nullptr, 0, DType::Int8), 0.0);
}

TEST_F(DotTest, EmptyIsZero) {
  for (DType dtype : test::FloatDTypes()) EXPECT_EQ(dot().Dot(nullptr, nullptr, 0, dtype), 0.0);
}

TEST_F(DotTest, AccumulatesInFloat64AndRoundsOnceToFloat32) {
  EXPECT_EQ(Run(DType::Float32, {1e8, 1.0, -1e8}, {1.0, 1.0, 1.0}), 1.0);
  EXPECT_EQ(Run(DType::Float32, {4096.0, 1.0}, {4096.0, 1.0}), 16777216.0);  // 2^24 + 1, to even
  EXPECT_EQ(Run(DType::Float64, {4096.0, 1.0}, {4096.0, 1.0}), 16777217.0);
  const double tiny = std::ldexp(1.0, -30);
  EXPECT_EQ(Run(DType::Float64, {1.0 + tiny}, {1.0 + tiny}), (1.0 + tiny) * (1.0 + tiny));
}

TEST_F(DotTest, HalfResultsAreNotRoundedThrough16Bits) {
  EXPECT_EQ(Run(DType::Float16, {300.0, 1.0}, {300.0, 1.0}), 90001.0);  // above f16's 65504
  EXPECT_EQ(Run(DType::BFloat16, {16.0, 1.0}, {16.0, 1.0}), 257.0);     // not a bf16 value
}

TEST_F(DotTest, SpecialValuesPropagate) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_TRUE(std::isnan(Run(dtype, {kNaN, 1.0}, {1.0, 1.0})));
    EXPECT_TRUE(std::isnan(Run(dtype, {kInf, 1.0}, {0.0, 1.0})));
    EXPECT_EQ(Run(dtype, {kInf, 1.0}, {2.0, 1.0}), kInf);
    EXPECT_EQ(Run(dtype, {kInf, 1.0}, {-2.0, 1.0}), -kInf);
    EXPECT_TRUE(std::isnan(Run(dtype, {kInf, kInf}, {1.0, -1.0})));
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(DotTest, RejectsBadArguments) {
  const Buffer v = test::RandomBuffer(DType::Float32, 4, 6);
  auto call = [&](const void* l, const void* r, int64_t n, DType t) {
    return [=, this] { dot().Dot(l, r, n, t); };
  };
  EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), -1, DType::Float32),
                                ErrorCode::InvalidArgument, {"Dot.Dot", "'count'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, v.data(), 4, DType::Float32),
                                ErrorCode::InvalidArgument, {"Dot.Dot", "'left'"}));
  EXPECT_TRUE(test::ThrowsError(call(v.data(), nullptr, 4, DType::Float32),
                                ErrorCode::InvalidArgument, {"Dot.Dot", "'right'"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, 4, DType::Int8), ErrorCode::InvalidArgument,
                                {"Dot.Dot", "'left'"}));
  for (DType bad : {DType::Int4, DType::Int16, DType::Int32, DType::Uint8, DType::Float8E4M3,
                    DType::Complex128, DType::Invalid, static_cast<DType>(kDTypeCount)}) {
    EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), 4, bad), ErrorCode::UnsupportedDType,
                                  {"Dot.Dot", "'dtype'", "i8"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, 0, bad), ErrorCode::UnsupportedDType,
                                  {"Dot.Dot", "'dtype'"}));
  }
}

}  // namespace
}  // namespace backplane
