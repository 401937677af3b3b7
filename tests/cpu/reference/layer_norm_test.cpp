// Tests of the LayerNorm reference kernels through the CPU Backend: golden data
// (tests/golden/gen_layer_norm.py -> tests/golden/data/layer_norm*.json: torch layer_norm and a
// float64 RMSNorm closed form) for every method and dtype, known values for the edge cases, and
// every validation path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
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

LayerNormSurface& LN() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->LayerNorm();
}

const std::vector<nlohmann::json>& GoldenCases() {
  static const std::vector<nlohmann::json> cases = [] {
    std::vector<nlohmann::json> all;
    for (const char* name : {"layer_norm.json", "layer_norm_large.json"}) {
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
    const int64_t rows = c["rows"], dim = c["lastDim"];
    for (DType dtype : CaseDTypes(c["dtype"])) {
      SCOPED_TRACE(method + " " + std::string(DTypeName(dtype)) + " [" + std::to_string(rows) +
                   ", " + std::to_string(dim) + "]" + (c["scale"].is_null() ? " no scale" : "") +
                   (c["bias"].is_null() ? " no bias" : ""));
      const auto x = Values(c, "x", dtype);
      const auto scale = Values(c, "scale", dtype);
      const auto bias = Values(c, "bias", dtype);
      const std::vector<double> want = c["y"].get<std::vector<double>>();
      Buffer y(dtype, static_cast<int64_t>(want.size()));
      y.Poison();
      if (method == "LayerNorm") {
        LN().LayerNorm(x->data(), DataOrNull(scale), DataOrNull(bias), y.data(), rows, dim, dtype);
      } else {
        LN().RMSNorm(x->data(), DataOrNull(scale), y.data(), rows, dim, dtype);
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

TEST(LayerNormGolden, LayerNorm) { ExpectCovered(RunGolden("LayerNorm")); }
TEST(LayerNormGolden, RMSNorm) { ExpectCovered(RunGolden("RMSNorm")); }

// ---- Known values ------------------------------------------------------------------------------

// Runs LayerNorm (or RMSNorm, which ignores `bias`) over rows of in.size() / lastDim; empty
// scale/bias vectors mean null.
std::vector<double> Normalize(bool rms, const std::vector<double>& in, int64_t lastDim,
                              const std::vector<double>& scale, const std::vector<double>& bias,
                              DType dtype) {
  const Buffer x = FromDoubles(dtype, in), s = FromDoubles(dtype, scale);
  const Buffer b = FromDoubles(dtype, bias);
  Buffer y(dtype, x.count());
  y.Poison();
  const void* sp = scale.empty() ? nullptr : s.data();
  if (rms) {
    LN().RMSNorm(x.data(), sp, y.data(), x.count() / lastDim, lastDim, dtype);
  } else {
    LN().LayerNorm(x.data(), sp, bias.empty() ? nullptr : b.data(), y.data(), x.count() / lastDim,
                   lastDim, dtype);
  }
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

TEST(LayerNormKnown, ClosedForms) {
  const double r = 1.0 / std::sqrt(1.0 + 1e-5);  // [1, -1]: mean 0, biased variance 1
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const auto tol = test::DefaultTolerance(dtype);
    // Row 0 [1, -1]; row 1 [3, 3] is constant, so it becomes the bias.
    const auto y = Normalize(false, {1, -1, 3, 3}, 2, {2, -1}, {0.5, 0.25}, dtype);
    EXPECT_TRUE(test::AllClose(FromDoubles(dtype, y), {2 * r + 0.5, r + 0.25, 0.5, 0.25}, tol));
    // RMSNorm [3, 4]: mean square 12.5.
    const double q = 1.0 / std::sqrt(12.5 + 1e-6);
    EXPECT_TRUE(test::AllClose(FromDoubles(dtype, Normalize(true, {3, 4}, 2, {1, -2}, {}, dtype)),
                               {3 * q, -8 * q}, tol));
    // A zero row: LayerNorm gives the bias, RMSNorm gives zeros (eps keeps the divisor finite).
    EXPECT_EQ(Normalize(false, {0, 0, 0}, 3, {}, {1, 2, 3}, dtype), (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(Normalize(true, {0, 0, 0}, 3, {}, {}, dtype), (std::vector<double>{0, 0, 0}));
  }
}

TEST(LayerNormKnown, NaNInfinityAndSignedZero) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // NaN or Inf poisons its own row only (x - mean is NaN for every element).
    const auto y = Normalize(false, {kNaN, 1, 2, 4, -kInf, 5}, 2, {}, {}, dtype);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    EXPECT_FALSE(std::isnan(y[2]) || std::isnan(y[3]));
    EXPECT_TRUE(std::isnan(y[4]) && std::isnan(y[5]));
    // RMSNorm: Inf / Inf is NaN, a finite x / Inf is 0.
    const auto z = Normalize(true, {kInf, 1, 3, 4}, 2, {}, {}, dtype);
    EXPECT_TRUE(std::isnan(z[0]));
    EXPECT_EQ(z[1], 0.0);
    EXPECT_FALSE(std::isnan(z[2]));
    // RMSNorm keeps the sign of zero: -0.0 / sqrt(0 + 1e-6) = -0.0.
    const auto s = Normalize(true, {-0.0, 0.0}, 2, {}, {}, dtype);
    EXPECT_TRUE(s[0] == 0.0 && std::signbit(s[0]));
    EXPECT_TRUE(s[1] == 0.0 && !std::signbit(s[1]));
  }
}

TEST(LayerNormKnown, F16Range) {
  // Squares of 65504 overflow f16 (and an f16 sum); the double statistics give exactly 1.
  EXPECT_EQ(Normalize(true, {65504, 65504, -65504}, 3, {}, {}, DType::Float16),
            (std::vector<double>{1, 1, -1}));
  EXPECT_EQ(Normalize(false, {65504, -65504}, 2, {}, {}, DType::Float16),
            (std::vector<double>{1, -1}));
  // [1, -1, -1, -1] normalises to [sqrt(3), ...]; times scale 65504 it overflows to Inf.
  const auto y = Normalize(false, {1, -1, -1, -1}, 4, {65504, 1, 1, 1}, {}, DType::Float16);
  EXPECT_EQ(y[0], kInf);
  EXPECT_TRUE(std::isfinite(y[1]));
}

TEST(LayerNormKnown, ZeroSizesAndAliasing) {
  Buffer y(DType::Float32, 4);
  y.Poison();
  LN().LayerNorm(nullptr, nullptr, nullptr, nullptr, 0, 7, DType::Float32);
  LN().LayerNorm(nullptr, nullptr, nullptr, nullptr, 3, 0, DType::Float64);
  LN().RMSNorm(nullptr, nullptr, nullptr, 0, 0, DType::BFloat16);
  LN().RMSNorm(nullptr, nullptr, nullptr, 5, 0, DType::Float16);
  EXPECT_TRUE(y.IsPoisoned());
  const std::vector<double> in = {1, 2, 4, -3, 0.5, 7};
  for (bool rms : {false, true}) {
    const auto want = Normalize(rms, in, 3, {}, {}, DType::Float32);
    Buffer x = FromDoubles(DType::Float32, in);
    if (rms) {
      LN().RMSNorm(x.data(), nullptr, x.data(), 2, 3, DType::Float32);
    } else {
      LN().LayerNorm(x.data(), nullptr, nullptr, x.data(), 2, 3, DType::Float32);
    }
    EXPECT_EQ(x.ToDoubles(), want);
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST(LayerNormErrors, EveryValidationPath) {
  using E = ErrorCode;
  const Buffer in = test::RandomBuffer(DType::Float32, 64, 21);
  const Buffer scale = test::RandomBuffer(DType::Float32, 8, 22);
  Buffer out(DType::Float32, 64);
  out.Poison();
  struct Bad {
    std::string name;
    int64_t rows, lastDim;
    DType dtype;
    bool nullIn, nullOut;
    ErrorCode code;
    std::string arg;
  };
  const std::vector<Bad> cases = {
      {"int16 dtype", 4, 8, DType::Int16, false, false, E::UnsupportedDType, "dtype"},
      {"complex dtype at zero size", 0, 0, DType::Complex128, false, false, E::UnsupportedDType,
       "dtype"},
      {"negative rows", -1, 8, DType::Float32, false, false, E::InvalidArgument, "rows"},
      {"negative lastDim", 4, -8, DType::Float32, false, false, E::InvalidArgument, "lastDim"},
      {"null in", 4, 8, DType::Float32, true, false, E::InvalidArgument, "in"},
      {"null out", 4, 8, DType::Float32, false, true, E::InvalidArgument, "out"},
      {"rows * lastDim overflows", kHuge / 2, 8, DType::Float32, false, false, E::InvalidArgument,
       "rows"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.name);
    const void* x = bad.nullIn ? nullptr : in.data();
    void* y = bad.nullOut ? nullptr : out.data();
    EXPECT_TRUE(test::ThrowsError(
        [&] { LN().LayerNorm(x, scale.data(), scale.data(), y, bad.rows, bad.lastDim, bad.dtype); },
        bad.code, {"LayerNorm.LayerNorm", "'" + bad.arg + "'"}));
    EXPECT_TRUE(test::ThrowsError(
        [&] { LN().RMSNorm(x, scale.data(), y, bad.rows, bad.lastDim, bad.dtype); }, bad.code,
        {"LayerNorm.RMSNorm", "'" + bad.arg + "'"}));
    EXPECT_TRUE(out.IsPoisoned());
  }
}

TEST(LayerNormErrors, MessageShape) {
  try {
    LN().RMSNorm(nullptr, nullptr, nullptr, 2, 3, DType::Float32);
    ADD_FAILURE() << "did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "LayerNorm.RMSNorm: argument 'in' must be non-null for 6 elements, got null");
  }
}

}  // namespace
}  // namespace backplane
