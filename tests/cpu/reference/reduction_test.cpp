// Reduction reference kernels against golden data (tests/golden/gen_core_math.py: torch float64 on
// inputs rounded to each dtype, including one input of 4099 elements), special values and every
// validation path. Called through the public CPU Backend.
//
// Tolerances: f64 results use DefaultTolerance(f64). f32/f16/bf16 results are the f64 total rounded
// once to f32, so they are held to DefaultTolerance(f32) (tighter than the f16/bf16 rows: a
// 16-bit round trip of the result would fail) and must be exactly representable in f32.
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

using ReduceMethod = double (ReductionSurface::*)(const void*, int64_t, DType);
struct ReduceOp {
  const char* name;
  ReduceMethod method;
};
const std::vector<ReduceOp> kOps = {{"Sum", &ReductionSurface::Sum},
                                    {"Prod", &ReductionSurface::Prod},
                                    {"ReduceMin", &ReductionSurface::ReduceMin},
                                    {"ReduceMax", &ReductionSurface::ReduceMax},
                                    {"L1Norm", &ReductionSurface::L1Norm}};

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("reduction.json"));
    EXPECT_TRUE(in.good()) << "missing golden file reduction.json";
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

bool IsF32Value(double v) {
  return std::isnan(v) || static_cast<double>(static_cast<float>(v)) == v;
}

class ReductionTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
  ReductionSurface& red() { return backend_->Reduction(); }

  double Run(ReduceMethod m, DType dtype, const std::vector<double>& values) {
    const Buffer b = FromDoubles(dtype, values);
    return (red().*m)(b.data(), b.count(), dtype);
  }

  // Checks every method on one input set against the golden results.
  void CheckCase(DType dtype, const json& c) {
    const Buffer values = FromGolden(dtype, c["values"]);
    const Buffer prod_values = FromGolden(dtype, c["prod_values"]);
    const json& want = c["results"];
    for (const ReduceOp& op : kOps) {
      SCOPED_TRACE(op.name);
      const Buffer& in = std::string(op.name) == "Prod" ? prod_values : values;
      if (!want.contains(op.name)) {  // ReduceMin/ReduceMax of an empty input
        EXPECT_TRUE(test::ThrowsError([&] { (red().*op.method)(in.data(), in.count(), dtype); },
                                      ErrorCode::InvalidArgument, {"'count'"}));
        continue;
      }
      const double got = (red().*op.method)(in.data(), in.count(), dtype);
      const double expected = want[op.name].get<double>();
      if (op.name == std::string("ReduceMin") || op.name == std::string("ReduceMax")) {
        EXPECT_EQ(got, expected) << "min/max return an input element exactly";
      } else {
        EXPECT_TRUE(test::Close(got, expected, ResultTolerance(dtype)));
      }
      if (dtype != DType::Float64) {
        EXPECT_TRUE(IsF32Value(got)) << got;
      }
    }
  }
};

TEST_F(ReductionTest, MatchesGoldenForEveryMethodAndDType) {
  int cases = 0;
  for (const json& c : Golden()["cases"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(c["n"].get<int>()));
    CheckCase(dtype, c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 6);
}

TEST_F(ReductionTest, MatchesGoldenOver4096Elements) {
  const json& large = Golden()["large"];
  ASSERT_GT(large["n"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    CheckCase(dtype, large);
  }
}

// ---- Known values
// --------------------------------------------------------------------------------

TEST_F(ReductionTest, EmptyInputs) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_EQ(red().Sum(nullptr, 0, dtype), 0.0);
    EXPECT_EQ(red().Prod(nullptr, 0, dtype), 1.0) << "the empty product is 1";
    EXPECT_EQ(red().L1Norm(nullptr, 0, dtype), 0.0);
    EXPECT_TRUE(test::ThrowsError([&] { red().ReduceMin(nullptr, 0, dtype); },
                                  ErrorCode::InvalidArgument,
                                  {"Reduction.ReduceMin", "'count'", "> 0", "got 0"}));
    EXPECT_TRUE(test::ThrowsError([&] { red().ReduceMax(nullptr, 0, dtype); },
                                  ErrorCode::InvalidArgument,
                                  {"Reduction.ReduceMax", "'count'", "> 0", "got 0"}));
  }
}

TEST_F(ReductionTest, NaNPropagates) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    for (const std::vector<double>& v :
         {std::vector<double>{kNaN, 1.0, 3.0}, std::vector<double>{1.0, kNaN, -3.0},
          std::vector<double>{1.0, -3.0, kNaN}}) {
      for (const ReduceOp& op : kOps) EXPECT_TRUE(std::isnan(Run(op.method, dtype, v))) << op.name;
    }
    EXPECT_TRUE(std::isnan(Run(&ReductionSurface::Sum, dtype, {kInf, -kInf})));
    EXPECT_TRUE(std::isnan(Run(&ReductionSurface::Prod, dtype, {kInf, 0.0})));
  }
}

TEST_F(ReductionTest, Infinities) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_EQ(Run(&ReductionSurface::Sum, dtype, {kInf, 1.0}), kInf);
    EXPECT_EQ(Run(&ReductionSurface::L1Norm, dtype, {-kInf, 1.0}), kInf);
    EXPECT_EQ(Run(&ReductionSurface::ReduceMin, dtype, {3.0, -kInf, 1.0}), -kInf);
    EXPECT_EQ(Run(&ReductionSurface::ReduceMax, dtype, {3.0, kInf, 1.0}), kInf);
    EXPECT_EQ(Run(&ReductionSurface::Prod, dtype, {-kInf, 2.0}), -kInf);
  }
}

TEST_F(ReductionTest, SignedZeros) {
  for (DType dtype : test::FloatDTypes()) {
    // Ties keep the first occurrence.
    EXPECT_FALSE(std::signbit(Run(&ReductionSurface::ReduceMin, dtype, {0.0, -0.0})));
    EXPECT_TRUE(std::signbit(Run(&ReductionSurface::ReduceMin, dtype, {-0.0, 0.0})));
    EXPECT_TRUE(std::signbit(Run(&ReductionSurface::ReduceMax, dtype, {-0.0, 0.0})));
    EXPECT_FALSE(std::signbit(Run(&ReductionSurface::L1Norm, dtype, {-0.0, -0.0})));
    EXPECT_EQ(Run(&ReductionSurface::Sum, dtype, {-0.0}), 0.0);
  }
}

TEST_F(ReductionTest, HalfSumsAreNotRoundedThrough16Bits) {
  // The reference rounded f16 totals to f16 (overflowing above 65504) and bf16 totals to bf16.
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::Float16, {60000.0, 60000.0}), 120000.0);
  EXPECT_EQ(Run(&ReductionSurface::L1Norm, DType::Float16, {60000.0, -60000.0}), 120000.0);
  EXPECT_EQ(Run(&ReductionSurface::Prod, DType::Float16, {300.0, 300.0}), 90000.0);
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::BFloat16, {256.0, 1.0}), 257.0);
}

TEST_F(ReductionTest, AccumulatesInFloat64AndRoundsOnceToFloat32) {
  // In f32 accumulation 1e8 + 1 - 1e8 would be 0.
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::Float32, {1e8, 1.0, -1e8}), 1.0);
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::Float32, {1e8, 1.0, 1.0, 1.0, 1.0, -1e8}), 4.0);
  // 2^24 + 1 is not an f32: the f64 total is rounded once, to even.
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::Float32, {16777216.0, 1.0}), 16777216.0);
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::Float64, {16777216.0, 1.0}), 16777217.0);
  EXPECT_EQ(Run(&ReductionSurface::L1Norm, DType::Float32, {16777216.0, -1.0, -1.0}), 16777218.0);
  // Overflow of the f32 result gives Inf; f64 keeps the value.
  EXPECT_EQ(Run(&ReductionSurface::Prod, DType::Float32, {1e30, 1e30}), kInf);
  EXPECT_EQ(Run(&ReductionSurface::Prod, DType::Float64, {1e30, 1e30}), 1e30 * 1e30);
  // An f32 product whose intermediate leaves the f32 range but whose result does not.
  const double big = 1e30f, small = 1e-30f;
  EXPECT_EQ(Run(&ReductionSurface::Prod, DType::Float32, {big, big, small}),
            static_cast<double>(static_cast<float>(big * big * small)));
}

TEST_F(ReductionTest, Float64KeepsFullPrecision) {
  const double tiny = std::ldexp(1.0, -40);
  EXPECT_EQ(Run(&ReductionSurface::Sum, DType::Float64, {1.0, tiny}), 1.0 + tiny);
  EXPECT_EQ(Run(&ReductionSurface::ReduceMax, DType::Float64, {1.0, 1.0 + tiny}), 1.0 + tiny);
  EXPECT_EQ(Run(&ReductionSurface::ReduceMin, DType::Float64, {1.0, 1.0 - tiny}), 1.0 - tiny);
  EXPECT_EQ(Run(&ReductionSurface::Prod, DType::Float64, {1.0 + tiny, 3.0}), (1.0 + tiny) * 3.0);
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(ReductionTest, RejectsBadArguments) {
  const Buffer v = test::RandomBuffer(DType::Float32, 4, 5);
  for (const ReduceOp& op : kOps) {
    const std::string name = std::string("Reduction.") + op.name;
    SCOPED_TRACE(name);
    auto m = op.method;
    auto call = [&](const void* p, int64_t n, DType t) {
      return [=, this] { (red().*m)(p, n, t); };
    };
    EXPECT_TRUE(test::ThrowsError(call(v.data(), -2, DType::Float32), ErrorCode::InvalidArgument,
                                  {name, "'count'", "-2"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, 4, DType::Float32), ErrorCode::InvalidArgument,
                                  {name, "'values'", "null"}));
    for (DType bad : {DType::Int8, DType::Int32, DType::Uint8, DType::Float8E5M2, DType::Bool,
                      DType::Invalid, static_cast<DType>(kDTypeCount)}) {
      EXPECT_TRUE(test::ThrowsError(call(v.data(), 4, bad), ErrorCode::UnsupportedDType,
                                    {name, "'dtype'"}));
      EXPECT_TRUE(
          test::ThrowsError(call(nullptr, 0, bad), ErrorCode::UnsupportedDType, {name, "'dtype'"}))
          << "the dtype is validated even when count is 0";
    }
  }
}

}  // namespace
}  // namespace backplane
