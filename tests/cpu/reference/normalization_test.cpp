// Tests of the Normalization reference kernels through the CPU Backend: PyTorch golden data
// (tests/golden/gen_normalization.py -> tests/golden/data/normalization*.json) for every method
// and dtype, known values for the edge cases, and every validation path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

NormalizationSurface& Norm() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Normalization();
}

const std::vector<nlohmann::json>& GoldenCases() {
  static const std::vector<nlohmann::json> cases = [] {
    std::vector<nlohmann::json> all;
    for (const char* name : {"normalization.json", "normalization_large.json"}) {
      std::ifstream file(test::GoldenPath(name));
      const nlohmann::json doc = nlohmann::json::parse(file);
      for (const auto& c : doc["cases"]) all.push_back(c);
    }
    return all;
  }();
  return cases;
}

std::vector<DType> CaseDTypes(const std::string& name) {
  static const std::map<std::string, DType> kNames = {{"f64", DType::Float64},
                                                      {"f32", DType::Float32},
                                                      {"f16", DType::Float16},
                                                      {"bf16", DType::BFloat16}};
  if (name == "all") return test::FloatDTypes();
  return {kNames.at(name)};
}

// The values of `key` in `dtype`, or nothing when the case stores null (parameter absent).
std::optional<Buffer> Values(const nlohmann::json& c, const std::string& key, DType dtype) {
  const auto& values = c[key];
  if (values.is_null()) return std::nullopt;
  const double grid = c["grid"].get<double>();
  Buffer b(dtype, static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    b.Set(static_cast<int64_t>(i), values[i].get<double>() / grid);
  }
  return b;
}

const void* DataOrNull(const std::optional<Buffer>& b) { return b ? b->data() : nullptr; }

std::map<DType, int> RunGolden(const std::string& method) {
  std::map<DType, int> runs;
  for (const auto& c : GoldenCases()) {
    if (c["method"] != method) continue;
    const int64_t n = c["batch"], ch = c["channels"], s = c["spatial"];
    for (DType dtype : CaseDTypes(c["dtype"])) {
      SCOPED_TRACE(method + " " + std::string(DTypeName(dtype)) + " [" + std::to_string(n) + ", " +
                   std::to_string(ch) + ", " + std::to_string(s) + "]" +
                   (c["scale"].is_null() ? " no scale" : "") +
                   (c["bias"].is_null() ? " no bias" : ""));
      const auto x = Values(c, "x", dtype);
      const auto scale = Values(c, "scale", dtype);
      const auto bias = Values(c, "bias", dtype);
      const std::vector<double> want = c["y"].get<std::vector<double>>();
      Buffer y(dtype, static_cast<int64_t>(want.size()));
      y.Poison();
      if (method == "GroupNorm") {
        Norm().GroupNorm({c["groups"].get<int64_t>()}, x->data(), DataOrNull(scale),
                         DataOrNull(bias), y.data(), n, ch, s, dtype);
      } else if (method == "InstanceNorm") {
        Norm().InstanceNorm(x->data(), DataOrNull(scale), DataOrNull(bias), y.data(), n, ch, s,
                            dtype);
      } else {
        const auto mean = Values(c, "mean", dtype);
        const auto var = Values(c, "var", dtype);
        Norm().BatchNormEval(x->data(), DataOrNull(scale), DataOrNull(bias), mean->data(),
                             var->data(), y.data(), n, ch, s, dtype);
      }
      EXPECT_TRUE(test::AllClose(y, want, test::DefaultTolerance(dtype)));
      EXPECT_TRUE(y.GuardIntact());
      ++runs[dtype];
    }
  }
  return runs;
}

void ExpectCovered(const std::map<DType, int>& runs) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_GE(runs.count(dtype) ? runs.at(dtype) : 0, 6) << DTypeName(dtype);
  }
}

TEST(NormalizationGolden, GroupNorm) { ExpectCovered(RunGolden("GroupNorm")); }
TEST(NormalizationGolden, InstanceNorm) { ExpectCovered(RunGolden("InstanceNorm")); }
TEST(NormalizationGolden, BatchNormEval) { ExpectCovered(RunGolden("BatchNormEval")); }

// ---- Known values ------------------------------------------------------------------------------

// GroupNorm on [1, channels, spatial]; empty scale/bias vectors mean null.
std::vector<double> Group(int64_t groups, const std::vector<double>& in, int64_t channels,
                          const std::vector<double>& scale, const std::vector<double>& bias,
                          DType dtype) {
  const Buffer x = FromDoubles(dtype, in), s = FromDoubles(dtype, scale);
  const Buffer b = FromDoubles(dtype, bias);
  Buffer y(dtype, x.count());
  y.Poison();
  Norm().GroupNorm({groups}, x.data(), scale.empty() ? nullptr : s.data(),
                   bias.empty() ? nullptr : b.data(), y.data(), 1, channels, x.count() / channels,
                   dtype);
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

std::vector<double> BatchEval(const std::vector<double>& in, const std::vector<double>& mean,
                              const std::vector<double>& var, DType dtype) {
  const Buffer x = FromDoubles(dtype, in), m = FromDoubles(dtype, mean);
  const Buffer v = FromDoubles(dtype, var);
  const int64_t channels = m.count();
  Buffer y(dtype, x.count());
  y.Poison();
  Norm().BatchNormEval(x.data(), nullptr, nullptr, m.data(), v.data(), y.data(), 1, channels,
                       x.count() / channels, dtype);
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

TEST(NormalizationKnown, ClosedForms) {
  const double r = 1.0 / std::sqrt(1.0 + 1e-5);  // [1, -1]: mean 0, biased variance 1
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const auto tol = test::DefaultTolerance(dtype);
    // Two groups of two channels x one element; scale 2, bias 0.5 on channel 0 only matters.
    EXPECT_TRUE(test::AllClose(
        FromDoubles(dtype, Group(2, {1, -1, 3, 3}, 4, {2, 1, 1, 1}, {0.5, 0, 0, -1}, dtype)),
        {2 * r + 0.5, -r, 0, -1}, tol));
    // InstanceNorm = GroupNorm with one channel per group.
    const Buffer x = FromDoubles(dtype, {1, -1, 5, 7});
    Buffer y(dtype, 4);
    Norm().InstanceNorm(x.data(), nullptr, nullptr, y.data(), 1, 2, 2, dtype);
    EXPECT_TRUE(test::AllClose(y, {r, -r, -r, r}, tol));
    // BatchNormEval: (x - mean) / sqrt(var + eps).
    EXPECT_TRUE(
        test::AllClose(FromDoubles(dtype, BatchEval({3, 1, -2, 4}, {1, -2}, {4, 0.25}, dtype)),
                       {2 / std::sqrt(4 + 1e-5), 0, 0, 6 / std::sqrt(0.25 + 1e-5)}, tol));
  }
  // var = -eps/2 is accepted (var + eps > 0): the divisor is sqrt(eps / 2).
  EXPECT_TRUE(test::Close(BatchEval({1}, {0}, {-0.5e-5}, DType::Float64)[0], 1 / std::sqrt(0.5e-5),
                          test::DefaultTolerance(DType::Float64)));
}

TEST(NormalizationKnown, NaNInfinityAndSignedZero) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // NaN or Inf poisons its own group only.
    const auto y = Group(2, {kNaN, 1, 2, 4}, 2, {}, {}, dtype);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    EXPECT_FALSE(std::isnan(y[2]) || std::isnan(y[3]));
    const auto z = Group(2, {1, 2, kInf, 4}, 2, {}, {}, dtype);
    EXPECT_FALSE(std::isnan(z[0]) || std::isnan(z[1]));
    EXPECT_TRUE(std::isnan(z[2]) && std::isnan(z[3]));
    // Running mean NaN poisons its channel; var = +Inf gives (x - mean) * 0.
    const auto b = BatchEval({1, 2, 3, 4}, {kNaN, 0}, {1, kInf}, dtype);
    EXPECT_TRUE(std::isnan(b[0]) && std::isnan(b[1]));
    EXPECT_EQ(b[2], 0.0);
    EXPECT_EQ(b[3], 0.0);
    // -0.0 is zero: a constant block of signed zeros normalises to zeros.
    const auto s = Group(1, {-0.0, 0.0, -0.0, 0.0}, 1, {}, {}, dtype);
    EXPECT_EQ(s, std::vector<double>(4, 0.0));
  }
}

TEST(NormalizationKnown, F16RangeIsNotAnAccumulatorLimit) {
  // Statistics of +-65504 overflow 16-bit (and would lose digits in f32 sums of squares); the
  // double statistics give +-1/sqrt(1 + eps/65504^2).
  const auto y = Group(1, {65504, -65504}, 1, {}, {}, DType::Float16);
  EXPECT_EQ(y, (std::vector<double>{1, -1}));
  // A result beyond 65504 rounds to Inf in f16: (60000 - -60000) / sqrt(1e-5).
  const auto z = BatchEval({60000, -60000}, {-60000}, {0}, DType::Float16);
  EXPECT_EQ(z[0], kInf);
  EXPECT_EQ(z[1], 0.0);
}

TEST(NormalizationKnown, ZeroSizesAndAliasing) {
  Buffer y(DType::Float32, 4);
  y.Poison();
  Norm().GroupNorm({3}, nullptr, nullptr, nullptr, nullptr, 2, 6, 0, DType::Float32);
  Norm().GroupNorm({3}, nullptr, nullptr, nullptr, nullptr, 2, 0, 5, DType::Float16);
  Norm().InstanceNorm(nullptr, nullptr, nullptr, nullptr, 0, 3, 4, DType::BFloat16);
  const Buffer m = FromDoubles(DType::Float64, {0, 0}), v = FromDoubles(DType::Float64, {1, 1});
  Norm().BatchNormEval(nullptr, nullptr, nullptr, m.data(), v.data(), nullptr, 0, 2, 3,
                       DType::Float64);
  EXPECT_TRUE(y.IsPoisoned());
  // In place: out == in.
  const std::vector<double> in = {1, 2, 4, -3, 0.5, 7};
  const auto want = Group(1, in, 2, {}, {}, DType::Float32);
  Buffer x = FromDoubles(DType::Float32, in);
  Norm().GroupNorm({1}, x.data(), nullptr, nullptr, x.data(), 1, 2, 3, DType::Float32);
  EXPECT_EQ(x.ToDoubles(), want);
}

// ---- Validation
// ----------------------------------------------------------------------------------

// A valid call on [2, 6, 5] with 3 groups, every pointer set; each case breaks one thing.
struct Call {
  int64_t groups = 3, batch = 2, channels = 6, spatial = 5;
  DType dtype = DType::Float32;
  bool nullIn = false, nullOut = false, nullMean = false, nullVar = false;
  std::vector<double> var = {1, 2, 0, 0.5, 3, 1};
};

struct BadCase {
  std::string name;
  std::function<void(Call&)> mutate;
  ErrorCode code;
  std::string arg;
};

enum class Method { kGroup, kInstance, kBatchEval };

std::string OpName(Method m) {
  switch (m) {
    case Method::kGroup:
      return "Normalization.GroupNorm";
    case Method::kInstance:
      return "Normalization.InstanceNorm";
    case Method::kBatchEval:
      return "Normalization.BatchNormEval";
  }
  return "";
}

void ExpectRejected(Method method, const std::vector<BadCase>& cases) {
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(OpName(method) + ": " + bad.name);
    Call c;
    bad.mutate(c);
    const Buffer in = test::RandomBuffer(DType::Float64, 64, 11);
    const Buffer params = test::RandomBuffer(DType::Float32, 8, 12);
    const Buffer var = FromDoubles(DType::Float32, c.var);  // every valid call here is f32
    Buffer out(DType::Float64, 64);
    out.Poison();
    const void* x = c.nullIn ? nullptr : in.data();
    void* y = c.nullOut ? nullptr : out.data();
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          switch (method) {
            case Method::kGroup:
              Norm().GroupNorm({c.groups}, x, params.data(), params.data(), y, c.batch, c.channels,
                               c.spatial, c.dtype);
              break;
            case Method::kInstance:
              Norm().InstanceNorm(x, params.data(), params.data(), y, c.batch, c.channels,
                                  c.spatial, c.dtype);
              break;
            case Method::kBatchEval:
              Norm().BatchNormEval(
                  x, params.data(), params.data(), c.nullMean ? nullptr : params.data(),
                  c.nullVar ? nullptr : var.data(), y, c.batch, c.channels, c.spatial, c.dtype);
              break;
          }
        },
        bad.code, {OpName(method), "'" + bad.arg + "'"}));
    EXPECT_TRUE(out.IsPoisoned());
  }
}

std::vector<BadCase> CommonBadCases() {
  using E = ErrorCode;
  return {
      {"int64 dtype", [](Call& c) { c.dtype = DType::Int64; }, E::UnsupportedDType, "dtype"},
      {"uint8 dtype at zero size",
       [](Call& c) {
         c.dtype = DType::Uint8;
         c.batch = 0;
       },
       E::UnsupportedDType, "dtype"},
      {"negative batch", [](Call& c) { c.batch = -2; }, E::InvalidArgument, "batch"},
      {"negative channels", [](Call& c) { c.channels = -6; }, E::InvalidArgument, "channels"},
      {"negative spatial", [](Call& c) { c.spatial = -1; }, E::InvalidArgument, "spatial"},
      {"null in", [](Call& c) { c.nullIn = true; }, E::InvalidArgument, "in"},
      {"null out", [](Call& c) { c.nullOut = true; }, E::InvalidArgument, "out"},
      {"element count overflows",
       [](Call& c) {
         c.batch = kHuge / 4;
         c.spatial = 5;
       },
       E::InvalidArgument, "in"},
  };
}

TEST(NormalizationErrors, GroupNorm) {
  using E = ErrorCode;
  auto cases = CommonBadCases();
  cases.push_back(
      {"zero Groups", [](Call& c) { c.groups = 0; }, E::InvalidArgument, "config.Groups"});
  cases.push_back(
      {"negative Groups", [](Call& c) { c.groups = -3; }, E::InvalidArgument, "config.Groups"});
  cases.push_back({"Groups not dividing channels", [](Call& c) { c.groups = 4; },
                   E::InvalidArgument, "config.Groups"});
  cases.push_back({"Groups above channels at zero batch",
                   [](Call& c) {
                     c.groups = 12;
                     c.batch = 0;
                   },
                   E::InvalidArgument, "config.Groups"});
  ExpectRejected(Method::kGroup, cases);
}

TEST(NormalizationErrors, InstanceNorm) { ExpectRejected(Method::kInstance, CommonBadCases()); }

TEST(NormalizationErrors, BatchNormEval) {
  using E = ErrorCode;
  auto cases = CommonBadCases();
  cases.push_back({"null mean", [](Call& c) { c.nullMean = true; }, E::InvalidArgument, "mean"});
  cases.push_back({"null var", [](Call& c) { c.nullVar = true; }, E::InvalidArgument, "var"});
  cases.push_back({"negative var", [](Call& c) { c.var[4] = -1; }, E::InvalidArgument, "var"});
  cases.push_back({"var = -eps", [](Call& c) { c.var[0] = -2e-5; }, E::InvalidArgument, "var"});
  cases.push_back({"NaN var", [](Call& c) { c.var[5] = kNaN; }, E::InvalidArgument, "var"});
  cases.push_back({"negative var at zero batch",
                   [](Call& c) {
                     c.var[1] = -3;
                     c.batch = 0;
                   },
                   E::InvalidArgument, "var"});
  ExpectRejected(Method::kBatchEval, cases);
}

TEST(NormalizationErrors, MessageShape) {
  Buffer in(DType::Float32, 60), out(DType::Float32, 60);
  try {
    Norm().GroupNorm({4}, in.data(), nullptr, nullptr, out.data(), 2, 6, 5, DType::Float32);
    ADD_FAILURE() << "did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "Normalization.GroupNorm: argument 'config.Groups' must be a divisor of channels "
                 "(6), got 4");
  }
}

}  // namespace
}  // namespace backplane
