// Tests of the caller-eps norms (MathExt.LayerNormEps, MathExt.RMSNormEps) through the CPU
// Backend: golden data (tests/golden/gen_layer_norm_eps.py -> tests/golden/data/
// layer_norm_eps.json: torch layer_norm and the float64 RMSNorm closed form at eps 1e-12, 1e-5,
// 0 and 0.25) for every dtype, and the eps validation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;

MathExtSurface& Ext() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->MathExt();
}

DType DTypeOf(const std::string& name) {
  if (name == "f64") return DType::Float64;
  if (name == "f32") return DType::Float32;
  if (name == "f16") return DType::Float16;
  return DType::BFloat16;
}

// Runs every golden case of `method`; returns the cases run per eps value.
std::map<double, int> RunGolden(const std::string& method) {
  std::ifstream file(test::GoldenPath("layer_norm_eps.json"));
  const nlohmann::json doc = nlohmann::json::parse(file);
  std::map<double, int> runs;
  for (const auto& c : doc["cases"]) {
    if (c["method"] != method) continue;
    const DType dtype = DTypeOf(c["dtype"]);
    const double eps = c["eps"];
    const int64_t rows = c["rows"], dim = c["lastDim"];
    SCOPED_TRACE(fmt::format("{} {} [{}, {}] eps={}", method, DTypeName(dtype), rows, dim, eps));
    const Buffer x = FromDoubles(dtype, c["x"].get<std::vector<double>>());
    const Buffer scale = FromDoubles(dtype, c["scale"].get<std::vector<double>>());
    const std::vector<double> want = c["y"].get<std::vector<double>>();
    Buffer y(dtype, static_cast<int64_t>(want.size()));
    y.Poison();
    if (method == "LayerNormEps") {
      const Buffer bias = FromDoubles(dtype, c["bias"].get<std::vector<double>>());
      Ext().LayerNormEps(x.data(), scale.data(), bias.data(), y.data(), rows, dim, eps, dtype);
    } else {
      Ext().RMSNormEps(x.data(), scale.data(), y.data(), rows, dim, eps, dtype);
    }
    EXPECT_TRUE(test::AllClose(y, want, test::DefaultTolerance(dtype)));
    EXPECT_TRUE(y.GuardIntact());
    ++runs[eps];
  }
  return runs;
}

TEST(LayerNormEpsGolden, LayerNormEps) {
  const auto runs = RunGolden("LayerNormEps");
  for (const double eps : {1e-12, 1e-5, 0.0, 0.25}) EXPECT_GE(runs.count(eps) ? runs.at(eps) : 0, 12) << eps;
}

TEST(LayerNormEpsGolden, RMSNormEps) {
  const auto runs = RunGolden("RMSNormEps");
  for (const double eps : {1e-12, 1e-5, 0.0, 0.25}) EXPECT_GE(runs.count(eps) ? runs.at(eps) : 0, 12) << eps;
}

// eps 1e-5 is the seed's LayerNorm.LayerNorm exactly.
TEST(LayerNormEpsKnown, MatchesTheFixedEpsMethod) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer x = test::RandomBuffer(dtype, 3 * 40, 7), s = test::RandomBuffer(dtype, 40, 8);
    const Buffer b = test::RandomBuffer(dtype, 40, 9);
    Buffer a(dtype, 120), e(dtype, 120);
    static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
    backend->LayerNorm().LayerNorm(x.data(), s.data(), b.data(), a.data(), 3, 40, dtype);
    Ext().LayerNormEps(x.data(), s.data(), b.data(), e.data(), 3, 40, 1e-5, dtype);
    EXPECT_EQ(a.ToDoubles(), e.ToDoubles()) << DTypeName(dtype);
  }
}

TEST(LayerNormEpsErrors, EpsMustBeFiniteAndNonNegative) {
  const Buffer x = FromDoubles(DType::Float32, {1, 2, 3, 4});
  Buffer y(DType::Float32, 4);
  for (const double eps : {-1e-12, std::nan(""), HUGE_VAL}) {
    EXPECT_TRUE(test::ThrowsError([&] { Ext().LayerNormEps(x.data(), nullptr, nullptr, y.data(), 1, 4, eps, DType::Float32); },
                                  ErrorCode::InvalidArgument, {"MathExt.LayerNormEps", "eps", "finite and >= 0"}));
  }
}

}  // namespace
}  // namespace backplane
