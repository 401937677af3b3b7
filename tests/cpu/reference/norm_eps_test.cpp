// Tests of the caller-eps channel norms (MathExt.GroupNormEps, InstanceNormEps, BatchNormEvalEps)
// through the CPU Backend: golden data (tests/golden/gen_norm_eps.py -> tests/golden/data/
// norm_eps.json: torch group_norm, instance_norm and batch_norm(training=False) at eps 1e-12,
// 1e-5, 0.25 and 0) for every dtype, eps 1e-5 against the fixed-eps Normalization methods bit for
// bit, known values and the eps validation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Backend& CpuBackend() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return *backend;
}
MathExtSurface& Ext() { return CpuBackend().MathExt(); }
NormalizationSurface& Norm() { return CpuBackend().Normalization(); }

DType DTypeOf(const std::string& name) {
  if (name == "f64") return DType::Float64;
  if (name == "f32") return DType::Float32;
  if (name == "f16") return DType::Float16;
  return DType::BFloat16;
}

// The values of `key` in `dtype`, or nothing when the case stores null (parameter absent).
std::optional<Buffer> Values(const nlohmann::json& c, const std::string& key, DType dtype) {
  if (c[key].is_null()) return std::nullopt;
  return FromDoubles(dtype, c[key].get<std::vector<double>>());
}

const void* DataOrNull(const std::optional<Buffer>& b) { return b ? b->data() : nullptr; }

// Runs every golden case of `method`; returns the cases run per eps value.
std::map<double, int> RunGolden(const std::string& method) {
  std::ifstream file(test::GoldenPath("norm_eps.json"));
  const nlohmann::json doc = nlohmann::json::parse(file);
  std::map<double, int> runs;
  for (const auto& c : doc["cases"]) {
    if (c["method"] != method) continue;
    const DType dtype = DTypeOf(c["dtype"]);
    const double eps = c["eps"];
    const int64_t n = c["batch"], ch = c["channels"], s = c["spatial"];
    SCOPED_TRACE(fmt::format("{} {} [{}, {}, {}] eps={}{}", method, DTypeName(dtype), n, ch, s, eps,
                             c["scale"].is_null() ? " no affine" : ""));
    const auto x = Values(c, "x", dtype), scale = Values(c, "scale", dtype), bias = Values(c, "bias", dtype);
    const std::vector<double> want = c["y"].get<std::vector<double>>();
    Buffer y(dtype, static_cast<int64_t>(want.size()));
    y.Poison();
    if (method == "GroupNormEps") {
      Ext().GroupNormEps({c["groups"].get<int64_t>()}, x->data(), DataOrNull(scale), DataOrNull(bias),
                         y.data(), n, ch, s, eps, dtype);
    } else if (method == "InstanceNormEps") {
      Ext().InstanceNormEps(x->data(), DataOrNull(scale), DataOrNull(bias), y.data(), n, ch, s, eps, dtype);
    } else {
      const auto mean = Values(c, "mean", dtype), var = Values(c, "var", dtype);
      Ext().BatchNormEvalEps(x->data(), DataOrNull(scale), DataOrNull(bias), mean->data(), var->data(),
                             y.data(), n, ch, s, eps, dtype);
    }
    EXPECT_TRUE(test::AllClose(y, want, test::DefaultTolerance(dtype)));
    EXPECT_TRUE(y.GuardIntact());
    ++runs[eps];
  }
  return runs;
}

void ExpectCovered(const std::map<double, int>& runs) {
  for (const double eps : {1e-12, 1e-5, 0.25, 0.0}) EXPECT_GE(runs.count(eps) ? runs.at(eps) : 0, 12) << eps;
}

TEST(NormEpsGolden, GroupNormEps) { ExpectCovered(RunGolden("GroupNormEps")); }
TEST(NormEpsGolden, InstanceNormEps) { ExpectCovered(RunGolden("InstanceNormEps")); }
TEST(NormEpsGolden, BatchNormEvalEps) { ExpectCovered(RunGolden("BatchNormEvalEps")); }

// ---- eps 1e-5 is the fixed-eps method ----------------------------------------------------------

bool SameBytes(const Buffer& a, const Buffer& b) {
  return std::memcmp(a.data(), b.data(), DTypeStorageBytes(a.dtype(), a.count())) == 0;
}

// A small tensor (the reference) and one over 64K elements (the parallel SIMD path); with and
// without scale and bias.
TEST(NormEpsKnown, Eps1e5MatchesTheFixedEpsMethodsBitForBit) {
  struct Shape {
    int64_t batch, channels, spatial, groups;
  };
  for (const Shape sh : {Shape{2, 6, 5, 3}, Shape{2, 8, 4099, 4}}) {
    const int64_t count = sh.batch * sh.channels * sh.spatial;
    for (DType dtype : test::FloatDTypes()) {
      for (const bool affine : {true, false}) {
        SCOPED_TRACE(fmt::format("{} [{}, {}, {}] affine={}", DTypeName(dtype), sh.batch, sh.channels,
                                 sh.spatial, affine));
        const Buffer x = test::RandomBuffer(dtype, count, 7), s = test::RandomBuffer(dtype, sh.channels, 8);
        const Buffer b = test::RandomBuffer(dtype, sh.channels, 9),
                     mean = test::RandomBuffer(dtype, sh.channels, 10);
        const Buffer var = test::RandomBuffer(dtype, sh.channels, 11, 0.0, 3.0);
        const void* scale = affine ? s.data() : nullptr;
        const void* bias = affine ? b.data() : nullptr;
        Buffer seed(dtype, count), eps(dtype, count);
        Norm().GroupNorm({sh.groups}, x.data(), scale, bias, seed.data(), sh.batch, sh.channels, sh.spatial,
                         dtype);
        Ext().GroupNormEps({sh.groups}, x.data(), scale, bias, eps.data(), sh.batch, sh.channels, sh.spatial,
                           1e-5, dtype);
        EXPECT_TRUE(SameBytes(seed, eps)) << "GroupNorm";
        Norm().InstanceNorm(x.data(), scale, bias, seed.data(), sh.batch, sh.channels, sh.spatial, dtype);
        Ext().InstanceNormEps(x.data(), scale, bias, eps.data(), sh.batch, sh.channels, sh.spatial, 1e-5,
                              dtype);
        EXPECT_TRUE(SameBytes(seed, eps)) << "InstanceNorm";
        Norm().BatchNormEval(x.data(), scale, bias, mean.data(), var.data(), seed.data(), sh.batch,
                             sh.channels, sh.spatial, dtype);
        Ext().BatchNormEvalEps(x.data(), scale, bias, mean.data(), var.data(), eps.data(), sh.batch,
                               sh.channels, sh.spatial, 1e-5, dtype);
        EXPECT_TRUE(SameBytes(seed, eps)) << "BatchNormEval";
      }
    }
  }
}

// ---- Known values ------------------------------------------------------------------------------

// GroupNormEps on [1, channels, spatial] without scale and bias.
std::vector<double> Group(int64_t groups, const std::vector<double>& in, int64_t channels, double eps,
                          DType dtype) {
  const Buffer x = FromDoubles(dtype, in);
  Buffer y(dtype, x.count());
  y.Poison();
  Ext().GroupNormEps({groups}, x.data(), nullptr, nullptr, y.data(), 1, channels, x.count() / channels, eps,
                     dtype);
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

TEST(NormEpsKnown, EpsEntersTheDivisor) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const test::Tolerance t = test::DefaultTolerance(dtype);
    // [1, -1]: mean 0, biased variance 1.
    for (const double eps : {0.0, 1e-12, 0.25, 3.0}) {
      const double r = 1.0 / std::sqrt(1.0 + eps);
      const std::vector<double> y = Group(1, {1, -1}, 2, eps, dtype);
      EXPECT_TRUE(test::Close(y[0], r, t)) << eps;
      EXPECT_TRUE(test::Close(y[1], -r, t)) << eps;
    }
    // InstanceNorm, per plane: [4, 0] (mean 2, variance 4) and [3, 1] (mean 2, variance 1).
    const Buffer x = FromDoubles(dtype, {4, 0, 3, 1});
    Buffer y(dtype, 4);
    Ext().InstanceNormEps(x.data(), nullptr, nullptr, y.data(), 1, 2, 2, 0.25, dtype);
    const double a = 2 / std::sqrt(4.25), b = 1 / std::sqrt(1.25);
    EXPECT_TRUE(test::AllClose(y, {a, -a, b, -b}, t));
    // BatchNormEval: (x - mean) / sqrt(var + eps); var = -0.125 is accepted as var + eps > 0.
    const Buffer mean = FromDoubles(dtype, {1, -1}), var = FromDoubles(dtype, {0.75, -0.125});
    const Buffer bx = FromDoubles(dtype, {2, 3, 0, 1});
    Ext().BatchNormEvalEps(bx.data(), nullptr, nullptr, mean.data(), var.data(), y.data(), 1, 2, 2, 0.25,
                           dtype);
    EXPECT_TRUE(test::AllClose(y, {1, 2, 1 / std::sqrt(0.125), 2 / std::sqrt(0.125)}, t));
  }
}

// eps 0 on a zero-variance block: 0 * (1 / sqrt(0)) is NaN for the whole block (as torch); other
// blocks are unaffected. A positive eps gives xhat = 0 there (y = bias).
TEST(NormEpsKnown, ZeroVarianceBlockWithEpsZeroIsNaN) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<double> y = Group(2, {2, 2, 1, -1}, 2, 0.0, dtype);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    EXPECT_EQ(y[2], 1.0);
    EXPECT_EQ(y[3], -1.0);
    const std::vector<double> z = Group(2, {2, 2, 1, -1}, 2, 1e-12, dtype);
    EXPECT_EQ(z[0], 0.0);
    EXPECT_EQ(z[1], 0.0);
  }
}

// ---- Validation --------------------------------------------------------------------------------

TEST(NormEpsErrors, EpsMustBeFiniteAndNonNegative) {
  const DType f32 = DType::Float32;
  const Buffer x = FromDoubles(f32, {1, 2, 3, 4}), mean = FromDoubles(f32, {0, 0}),
               var = FromDoubles(f32, {1, 1});
  Buffer y(f32, 4);
  for (const double eps : {-1e-12, -1.0, kNaN, kInf, -kInf}) {
    SCOPED_TRACE(eps);
    // Also for an empty tensor (batch 0).
    for (const int64_t batch : {int64_t{1}, int64_t{0}}) {
      y.Poison();
      EXPECT_TRUE(test::ThrowsError(
          [&] { Ext().GroupNormEps({1}, x.data(), nullptr, nullptr, y.data(), batch, 2, 2, eps, f32); },
          ErrorCode::InvalidArgument, {"MathExt.GroupNormEps", "'eps'", "finite and >= 0"}));
      EXPECT_TRUE(test::ThrowsError(
          [&] { Ext().InstanceNormEps(x.data(), nullptr, nullptr, y.data(), batch, 2, 2, eps, f32); },
          ErrorCode::InvalidArgument, {"MathExt.InstanceNormEps", "'eps'", "finite and >= 0"}));
      EXPECT_TRUE(test::ThrowsError(
          [&] {
            Ext().BatchNormEvalEps(x.data(), nullptr, nullptr, mean.data(), var.data(), y.data(), batch, 2, 2,
                                   eps, f32);
          },
          ErrorCode::InvalidArgument, {"MathExt.BatchNormEvalEps", "'eps'", "finite and >= 0"}));
      EXPECT_TRUE(y.IsPoisoned());
    }
  }
  // The earlier checks come first: sizes, then (GroupNorm) config.Groups.
  EXPECT_TRUE(test::ThrowsError(
      [&] { Ext().GroupNormEps({1}, x.data(), nullptr, nullptr, y.data(), -1, 2, 2, kNaN, f32); },
      ErrorCode::InvalidArgument, {"MathExt.GroupNormEps", "'batch'"}));
  EXPECT_TRUE(test::ThrowsError(
      [&] { Ext().GroupNormEps({3}, x.data(), nullptr, nullptr, y.data(), 1, 2, 2, -1.0, f32); },
      ErrorCode::InvalidArgument, {"MathExt.GroupNormEps", "'config.Groups'"}));
}

TEST(NormEpsErrors, VarPlusEpsMustBePositive) {
  const DType f32 = DType::Float32;
  const Buffer x = FromDoubles(f32, {1, 2, 3, 4}), mean = FromDoubles(f32, {0, 0});
  const Buffer zero = FromDoubles(f32, {1, 0}), below = FromDoubles(f32, {-0.5, 1});
  Buffer y(f32, 4);
  y.Poison();
  EXPECT_TRUE(test::ThrowsError(
      [&] {
        Ext().BatchNormEvalEps(x.data(), nullptr, nullptr, mean.data(), zero.data(), y.data(), 1, 2, 2, 0.0,
                               f32);
      },
      ErrorCode::InvalidArgument, {"MathExt.BatchNormEvalEps", "'var'", "var[c] + 0 > 0", "var[1] = 0"}));
  EXPECT_TRUE(test::ThrowsError(
      [&] {
        Ext().BatchNormEvalEps(x.data(), nullptr, nullptr, mean.data(), below.data(), y.data(), 0, 2, 2, 0.25,
                               f32);
      },
      ErrorCode::InvalidArgument,
      {"MathExt.BatchNormEvalEps", "'var'", "var[c] + 0.25 > 0", "var[0] = -0.5"}));
  EXPECT_TRUE(y.IsPoisoned());
  // The seed's message keeps its spelling of the constant.
  EXPECT_TRUE(test::ThrowsError(
      [&] {
        Norm().BatchNormEval(x.data(), nullptr, nullptr, mean.data(), below.data(), y.data(), 1, 2, 2, f32);
      },
      ErrorCode::InvalidArgument, {"Normalization.BatchNormEval", "'var'", "var[c] + 1e-5 > 0"}));
  // var = 0 is fine with any eps > 0.
  Ext().BatchNormEvalEps(x.data(), nullptr, nullptr, mean.data(), zero.data(), y.data(), 1, 2, 2, 0.25, f32);
  EXPECT_TRUE(
      test::AllClose(y, {1 / std::sqrt(1.25), 2 / std::sqrt(1.25), 6, 8}, test::DefaultTolerance(f32)));
}

}  // namespace
}  // namespace backplane
