// Activation ops through the executor, against float64 closed forms: every op ID of the
// activation domain (plus math.exp, math.log, math.softmax) at least once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/random.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane::runtime {
namespace {

using F = std::function<double(double)>;

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double GeluTanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double Softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }
double Relu6(double x) { return std::min(std::max(x, 0.0), 6.0); }

// op -> (attrs JSON, f(x))
const std::map<std::string, std::pair<std::string, F>>& Elementwise() {
  static const std::map<std::string, std::pair<std::string, F>> ops = {
      {"activation.relu", {"{}", [](double x) { return x < 0 ? 0 : x; }}},
      {"activation.gelu", {"{}", Gelu}},
      {"activation.tanh", {"{}", [](double x) { return std::tanh(x); }}},
      {"activation.sigmoid", {"{}", Sigmoid}},
      {"activation.swish", {"{}", [](double x) { return x * Sigmoid(x); }}},
      {"activation.selu", {"{}", [](double x) {
         return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x));
       }}},
      {"math.exp", {"{}", [](double x) { return std::exp(x); }}},
      {"activation.leaky_relu", {R"({"alpha": 0.2})", [](double x) { return x > 0 ? x : 0.2 * x; }}},
      {"activation.log1p", {"{}", [](double x) { return std::log1p(std::fabs(x)); }}},
      {"activation.expm1", {"{}", [](double x) { return std::expm1(x); }}},
      {"activation.log_sigmoid", {"{}", [](double x) { return -Softplus(-x); }}},
      {"activation.silu", {"{}", [](double x) { return x * Sigmoid(x); }}},
      {"activation.gelu_tanh", {"{}", GeluTanh}},
      {"activation.elu", {"{}", [](double x) { return x > 0 ? x : std::expm1(x); }}},
      {"activation.celu", {"{}", [](double x) { return x > 0 ? x : std::expm1(x); }}},
      {"activation.softplus", {"{}", Softplus}},
      {"activation.mish", {"{}", [](double x) { return x * std::tanh(Softplus(x)); }}},
      {"activation.softsign", {"{}", [](double x) { return x / (1 + std::fabs(x)); }}},
      {"activation.hard_sigmoid", {"{}", [](double x) { return Relu6(x + 3) / 6; }}},
      {"activation.hard_swish", {"{}", [](double x) { return x * Relu6(x + 3) / 6; }}},
      {"activation.hard_tanh", {"{}", [](double x) { return std::min(std::max(x, -1.0), 1.0); }}},
      {"activation.hard_gelu", {"{}", [](double x) { return x * Relu6(x + 3) / 6; }}},
      {"activation.quick_gelu", {"{}", [](double x) { return x * Sigmoid(1.702 * x); }}},
      {"activation.tanh_shrink", {"{}", [](double x) { return x - std::tanh(x); }}},
      {"activation.prelu", {R"({"slope": 0.3})", [](double x) { return x > 0 ? x : 0.3 * x; }}},
      {"activation.leaky_relu_slope", {R"({"slope": 0.05})", [](double x) { return x > 0 ? x : 0.05 * x; }}},
      {"activation.elu_alpha", {R"({"alpha": 1.5})", [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }}},
      {"activation.celu_alpha", {R"({"alpha": 2.0})", [](double x) { return x > 0 ? x : 2.0 * std::expm1(x / 2.0); }}},
      {"activation.threshold", {R"({"threshold": 0.5})", [](double x) { return x > 0.5 ? x : 0; }}},
      {"activation.snake", {R"({"alpha": 2.0})", [](double x) { return x + std::pow(std::sin(2 * x), 2) / 2; }}},
      {"activation.hard_shrink", {R"({"lambda": 0.5})", [](double x) { return std::fabs(x) > 0.5 ? x : 0; }}},
      {"activation.soft_shrink", {R"({"lambda": 0.5})", [](double x) { return x > 0.5 ? x - 0.5 : (x < -0.5 ? x + 0.5 : 0); }}},
      {"activation.hard_tanh_range", {R"({"min": -0.5, "max": 2.0})", [](double x) { return std::min(std::max(x, -0.5), 2.0); }}},
      {"activation.snake_beta", {R"({"alpha": 1.0, "beta": 4.0})", [](double x) { return x + std::pow(std::sin(x), 2) / 4; }}},
      {"activation.rrelu", {R"({"lower": 0.1, "upper": 0.3})", [](double x) { return x > 0 ? x : 0.2 * x; }}},
  };
  return ops;
}

Tensor Input(Shape shape, uint64_t seed, bool positive = false) {
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double u = PhiloxUniformDouble(seed, 0, static_cast<uint64_t>(i));
    t.SetDouble(i, positive ? 0.1 + 3 * u : 6 * u - 3);
  }
  return t;
}

Tensor RunOne(const std::string& op, const std::string& attrs, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::string in_specs, names;
  for (const auto& [name, t] : inputs) {
    std::string dims;
    for (int64_t d : t.shape()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    in_specs += fmt::format(R"({}{{"name": "{}", "dtype": "f32", "shape": [{}]}})", in_specs.empty() ? "" : ", ", name, dims);
    names += fmt::format(R"({}"{}")", names.empty() ? "" : ", ", name);
  }
  const std::string json = fmt::format(R"({{"format": "backplane.graph", "version": 1, "inputs": [{}],
      "nodes": [{{"op": "{}", "inputs": [{}], "outputs": ["y"], "attrs": {}}}], "outputs": ["y"]}})",
                                       in_specs, op, names, attrs);
  auto backend = cpu::CreateBackend();
  Executor ex(ir::ParseGraph(json), *backend);
  std::map<std::string, Tensor> feed(inputs.begin(), inputs.end());
  return ex.Run(feed).at("y");
}

TEST(ActivationOps, ElementwiseOpsMatchClosedForms) {
  for (const auto& [op, spec] : Elementwise()) {
    SCOPED_TRACE(op);
    const Tensor x = Input({2, 3, 5}, std::hash<std::string>{}(op));
    const Tensor y = RunOne(op, spec.first, {{"x", x}});
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double in = op == "activation.log1p" ? std::fabs(x.GetDouble(i)) : x.GetDouble(i);
      if (op == "activation.log1p") continue;  // checked on positive inputs below
      EXPECT_TRUE(test::Close(y.GetDouble(i), spec.second(in), {2e-6, 2e-6})) << i;
    }
  }
  const Tensor p = Input({7}, 3, true);
  const Tensor l1 = RunOne("activation.log1p", "{}", {{"x", p}});
  const Tensor lg = RunOne("math.log", "{}", {{"x", p}});
  for (int64_t i = 0; i < 7; ++i) {
    EXPECT_NEAR(l1.GetDouble(i), std::log1p(p.GetDouble(i)), 2e-6);
    EXPECT_NEAR(lg.GetDouble(i), std::log(p.GetDouble(i)), 2e-6);
  }
}

TEST(ActivationOps, SoftmaxAndLogSoftmaxOnEveryAxis) {
  const Tensor x = Input({3, 4, 5}, 17);
  const Shape shape = x.shape();
  for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const Tensor sm = RunOne("math.softmax", fmt::format(R"({{"axis": {}}})", axis), {{"x", x}});
    const Tensor lsm = RunOne("activation.log_softmax", fmt::format(R"({{"axis": {}}})", axis), {{"x", x}});
    int64_t strides[3] = {20, 5, 1};
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t pos = (i / strides[a]) % shape[static_cast<size_t>(a)];
      const int64_t base = i - pos * strides[a];
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < shape[static_cast<size_t>(a)]; ++k) m = std::max(m, x.GetDouble(base + k * strides[a]));
      for (int64_t k = 0; k < shape[static_cast<size_t>(a)]; ++k) sum += std::exp(x.GetDouble(base + k * strides[a]) - m);
      EXPECT_NEAR(sm.GetDouble(i), std::exp(x.GetDouble(i) - m) / sum, 1e-6) << "axis " << axis << " i " << i;
      EXPECT_NEAR(lsm.GetDouble(i), x.GetDouble(i) - m - std::log(sum), 2e-6) << "axis " << axis << " i " << i;
    }
  }
}

TEST(ActivationOps, GatedUnitsSplitTheLastAxis) {
  const Tensor x = Input({2, 3, 8}, 5);  // halves of 4
  const std::map<std::string, std::function<double(double, double)>> packed = {
      {"activation.swiglu", [](double g, double u) { return g * Sigmoid(g) * u; }},
      {"activation.glu", [](double g, double u) { return g * Sigmoid(u); }},
      {"activation.geglu", [](double g, double u) { return g * Gelu(u); }},
      {"activation.geglu_tanh", [](double g, double u) { return g * GeluTanh(u); }},
      {"activation.reglu", [](double g, double u) { return g * std::max(u, 0.0); }},
      {"activation.siglu", [](double g, double u) { return Sigmoid(g) * u; }},
      {"activation.linglu", [](double g, double u) { return g * u; }},
      {"activation.seglu", [](double g, double u) { return Sigmoid(g) * u; }},
  };
  const Tensor up = Input({2, 3, 4}, 6);
  for (const auto& [op, f] : packed) {
    SCOPED_TRACE(op);
    const Tensor y = RunOne(op, "{}", {{"x", x}});
    ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
    for (int64_t i = 0; i < y.numel(); ++i) {
      const int64_t row = i / 4, col = i % 4;
      EXPECT_NEAR(y.GetDouble(i), f(x.GetDouble(row * 8 + col), x.GetDouble(row * 8 + 4 + col)), 2e-6);
    }
    // The two-tensor form, with a broadcast `up` of shape [4].
    const std::string tensors = op + "_tensors";
    const Tensor gate = Input({2, 3, 4}, 7);
    const Tensor u4 = Input({4}, 8);
    const Tensor z = RunOne(tensors, "{}", {{"gate", gate}, {"up", u4}});
    for (int64_t i = 0; i < z.numel(); ++i) EXPECT_NEAR(z.GetDouble(i), f(gate.GetDouble(i), u4.GetDouble(i % 4)), 2e-6);
  }
}

TEST(ActivationOps, PReLUChannelsIsChannelsFirst) {
  const Tensor x = Input({2, 3, 4}, 9);
  Tensor slopes(DType::Float32, {3});
  for (int64_t c = 0; c < 3; ++c) slopes.SetDouble(c, 0.1 * static_cast<double>(c + 1));
  const Tensor y = RunOne("activation.prelu_channels", "{}", {{"x", x}, {"slopes", slopes}});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.GetDouble(i), s = 0.1 * static_cast<double>((i / 4) % 3 + 1);
    EXPECT_NEAR(y.GetDouble(i), v > 0 ? v : s * v, 1e-6);
  }
}

TEST(ActivationOps, EveryActivationOpIsCoveredHere) {
  std::set<std::string> covered;
  for (const auto& [op, spec] : Elementwise()) covered.insert(op);
  for (const char* op : {"math.log", "math.softmax", "activation.log_softmax", "activation.swiglu", "activation.glu",
                         "activation.geglu", "activation.geglu_tanh", "activation.reglu", "activation.siglu",
                         "activation.linglu", "activation.seglu", "activation.prelu_channels"}) {
    covered.insert(op);
  }
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (op.domain != "activation" || !op.alias_of.empty()) continue;
    if (op.id.ends_with("_tensors")) continue;  // run by GatedUnitsSplitTheLastAxis
    EXPECT_TRUE(covered.contains(op.id)) << op.id << " has no executor test";
  }
}

}  // namespace
}  // namespace backplane::runtime
