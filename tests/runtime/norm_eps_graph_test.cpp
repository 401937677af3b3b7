// Graph-level channel norms with a caller eps: math.batchnorm, math.groupnorm and
// math.instancenorm nodes with eps 1e-3 (the MathExt *Eps methods) through runtime::Executor,
// against float64 closed forms on inputs with a small spread, where eps 1e-3 and 1e-5 differ far
// beyond the tolerance. Also eps 1e-5 (the fixed-eps methods) and the eps attribute's validation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane::runtime {
namespace {

using nlohmann::json;

constexpr int64_t kB = 2, kC = 4, kS = 6;  // x [B, C, S]

Backend& CpuBackend() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return *backend;
}

// One node `op` over graph inputs x, then `params` ([C] each; "" is an omitted optional input).
ir::Graph NormGraph(const std::string& op, DType dtype, const std::vector<std::string>& params,
                    const json& attrs) {
  const std::string d(DTypeName(dtype));
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", json::array({"y"})}});
  g["inputs"] = json::array({json{{"name", "x"}, {"dtype", d}, {"shape", json::array({kB, kC, kS})}}});
  json names = json::array({"x"});
  for (const std::string& p : params) {
    names.push_back(p);
    if (!p.empty()) g["inputs"].push_back({{"name", p}, {"dtype", d}, {"shape", json::array({kC})}});
  }
  g["nodes"] = json::array({json::object(
      {{"name", "norm"}, {"op", op}, {"inputs", names}, {"outputs", json::array({"y"})}, {"attrs", attrs}})});
  return ir::ParseGraph(g.dump());
}

// x near 1 with a spread of about 0.03 (variance ~1e-3, resolved by f32 and f64).
std::vector<double> SmallSpread() {
  std::vector<double> x(static_cast<size_t>(kB * kC * kS));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + 0.005 * static_cast<double>((i * 7) % 13) - 0.03;
  return x;
}

const std::vector<double> kGamma = {1.5, -0.5, 2.0, 0.75}, kBeta = {0.25, -1.0, 0.0, 0.5};

// The closed form over blocks of `block` consecutive elements: (x - mean) / sqrt(var + eps) *
// gamma[c] + beta[c] (biased variance; gamma/beta empty: 1 and 0).
std::vector<double> BlockNorm(const std::vector<double>& x, int64_t block, double eps,
                              const std::vector<double>& g, const std::vector<double>& b) {
  std::vector<double> y(x.size());
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(block)) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < block; ++i) mean += x[start + static_cast<size_t>(i)];
    mean /= static_cast<double>(block);
    for (int64_t i = 0; i < block; ++i) var += std::pow(x[start + static_cast<size_t>(i)] - mean, 2);
    var /= static_cast<double>(block);
    for (int64_t i = 0; i < block; ++i) {
      const size_t k = start + static_cast<size_t>(i);
      const size_t c = (k / kS) % kC;
      y[k] = (x[k] - mean) / std::sqrt(var + eps) * (g.empty() ? 1.0 : g[c]) + (b.empty() ? 0.0 : b[c]);
    }
  }
  return y;
}

Tensor Vec(DType dtype, const std::vector<double>& v) { return Tensor::FromDoubles(dtype, {kC}, v); }

// Runs the graph; the result as doubles.
std::vector<double> RunGraph(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  Executor ex(graph, CpuBackend());
  return ex.Run(inputs).at("y").ToDoubles();
}

::testing::AssertionResult AllClose(const std::vector<double>& got, const std::vector<double>& want,
                                    DType dtype) {
  const test::Tolerance tol = test::DefaultTolerance(dtype);
  for (size_t i = 0; i < want.size(); ++i) {
    if (!test::Close(got[i], want[i], tol)) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

class NormEpsGraph : public ::testing::TestWithParam<DType> {};

TEST_P(NormEpsGraph, BatchNormWithEps1e3) {
  const DType dtype = GetParam();
  const std::vector<double> x = SmallSpread(), mean = {1.0, 0.99, 1.01, 1.0}, var = {1e-3, 5e-4, 2e-3, 1e-4};
  const std::map<std::string, Tensor> in = {{"x", Tensor::FromDoubles(dtype, {kB, kC, kS}, x)},
                                            {"gamma", Vec(dtype, kGamma)},
                                            {"beta", Vec(dtype, kBeta)},
                                            {"mean", Vec(dtype, mean)},
                                            {"var", Vec(dtype, var)}};
  const std::vector<double> m = Tensor::FromDoubles(dtype, {kC}, mean).ToDoubles();
  const std::vector<double> v = Tensor::FromDoubles(dtype, {kC}, var).ToDoubles();
  const std::vector<double> xs = in.at("x").ToDoubles();
  for (const double eps : {1e-3, 1e-5}) {
    SCOPED_TRACE(eps);
    std::vector<double> want(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) {
      const size_t c = (k / kS) % kC;
      want[k] = (xs[k] - m[c]) / std::sqrt(v[c] + eps) * kGamma[c] + kBeta[c];
    }
    const auto graph = NormGraph("math.batchnorm", dtype, {"gamma", "beta", "mean", "var"}, {{"eps", eps}});
    EXPECT_TRUE(AllClose(RunGraph(graph, in), want, dtype));
  }
  // Without gamma and beta.
  std::vector<double> want(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    const size_t c = (k / kS) % kC;
    want[k] = (xs[k] - m[c]) / std::sqrt(v[c] + 1e-3);
  }
  const auto graph = NormGraph("math.batchnorm", dtype, {"", "", "mean", "var"}, {{"eps", 1e-3}});
  EXPECT_TRUE(AllClose(RunGraph(graph, {{"x", in.at("x")}, {"mean", in.at("mean")}, {"var", in.at("var")}}),
                       want, dtype));
}

TEST_P(NormEpsGraph, GroupNormWithEps1e3) {
  const DType dtype = GetParam();
  const Tensor x = Tensor::FromDoubles(dtype, {kB, kC, kS}, SmallSpread());
  const std::map<std::string, Tensor> in = {
      {"x", x}, {"gamma", Vec(dtype, kGamma)}, {"beta", Vec(dtype, kBeta)}};
  for (const double eps : {1e-3, 1e-5}) {
    SCOPED_TRACE(eps);
    const auto graph = NormGraph("math.groupnorm", dtype, {"gamma", "beta"}, {{"groups", 2}, {"eps", eps}});
    EXPECT_TRUE(
        AllClose(RunGraph(graph, in), BlockNorm(x.ToDoubles(), kC / 2 * kS, eps, kGamma, kBeta), dtype));
  }
}

TEST_P(NormEpsGraph, InstanceNormWithEps1e3) {
  const DType dtype = GetParam();
  const Tensor x = Tensor::FromDoubles(dtype, {kB, kC, kS}, SmallSpread());
  for (const double eps : {1e-3, 1e-5}) {
    SCOPED_TRACE(eps);
    const auto affine = NormGraph("math.instancenorm", dtype, {"gamma", "beta"}, {{"eps", eps}});
    EXPECT_TRUE(
        AllClose(RunGraph(affine, {{"x", x}, {"gamma", Vec(dtype, kGamma)}, {"beta", Vec(dtype, kBeta)}}),
                 BlockNorm(x.ToDoubles(), kS, eps, kGamma, kBeta), dtype));
    const auto plain = NormGraph("math.instancenorm", dtype, {}, {{"eps", eps}});
    EXPECT_TRUE(AllClose(RunGraph(plain, {{"x", x}}), BlockNorm(x.ToDoubles(), kS, eps, {}, {}), dtype));
  }
}

INSTANTIATE_TEST_SUITE_P(FloatDTypes, NormEpsGraph, ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

// eps 1e-3 and 1e-5 really differ on these inputs (the eps reaches the kernel).
TEST(NormEpsGraphEps, TheAttributeChangesTheResult) {
  const Tensor x = Tensor::FromDoubles(DType::Float64, {kB, kC, kS}, SmallSpread());
  const auto a = RunGraph(NormGraph("math.instancenorm", DType::Float64, {}, {{"eps", 1e-3}}), {{"x", x}});
  const auto b = RunGraph(NormGraph("math.instancenorm", DType::Float64, {}, {{"eps", 1e-5}}), {{"x", x}});
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(a[i] - b[i]));
  EXPECT_GT(diff, 0.1);
}

TEST(NormEpsGraphEps, EpsMustBeFiniteAndNonNegative) {
  const DType f32 = DType::Float32;
  const std::map<std::string, Tensor> in = {{"x", Tensor::FromDoubles(f32, {kB, kC, kS}, SmallSpread())},
                                            {"gamma", Vec(f32, kGamma)},
                                            {"beta", Vec(f32, kBeta)},
                                            {"mean", Vec(f32, {1, 1, 1, 1})},
                                            {"var", Vec(f32, {1, 1, 1, 1})}};
  for (const double eps : {-1e-3, -1e-5}) {
    using Case = std::tuple<std::string, std::vector<std::string>, json>;
    for (const Case& c : {Case{"math.batchnorm", {"gamma", "beta", "mean", "var"}, json{{"eps", eps}}},
                          Case{"math.groupnorm", {"gamma", "beta"}, json{{"groups", 2}, {"eps", eps}}},
                          Case{"math.instancenorm", {"gamma", "beta"}, json{{"eps", eps}}}}) {
      const std::string& op = std::get<0>(c);
      const std::vector<std::string>& params = std::get<1>(c);
      const json& attrs = std::get<2>(c);
      EXPECT_TRUE(test::ThrowsError(
          [&] {
            std::map<std::string, Tensor> used = {{"x", in.at("x")}};
            for (const std::string& p : params) used[p] = in.at(p);
            RunGraph(NormGraph(op, f32, params, attrs), used);
          },
          ErrorCode::InvalidArgument, {"node 'norm'", op, "'eps'", "finite and >= 0"}))
          << op << " eps=" << eps;
    }
  }
}

}  // namespace
}  // namespace backplane::runtime
