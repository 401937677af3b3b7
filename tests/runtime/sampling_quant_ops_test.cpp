// Graph-level sampling.* and quant.* ops run through the executor. Oracles: goldens from
// tests/golden/gen_research_ops.py (torch/NumPy softmax draws with an independent Python Philox,
// one draw per row seeded with seed + row) and closed-form float64 values here (argmax,
// round-half-even affine quantisation, (q - zero_point) * scale).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;

struct Input {
  DType dtype;
  Shape shape;
  std::vector<double> values = {};
};

Backend& Cpu() {
  static auto backend = cpu::CreateBackend();
  return *backend;
}

// A graph with one node 'probe' running `op` on graph input x0 into output y0.
ir::Graph OneNodeGraph(const std::string& op, const Input& input, const json& attrs) {
  const json g = {
      {"format", "backplane.graph"},
      {"version", 1},
      {"inputs", json::array({{{"name", "x0"}, {"dtype", DTypeName(input.dtype)}, {"shape", input.shape}}})},
      {"nodes", json::array({{{"name", "probe"}, {"op", op}, {"inputs", {"x0"}}, {"outputs", {"y0"}}, {"attrs", attrs}}})},
      {"outputs", {"y0"}}};
  return ir::ParseGraph(g.dump(), "sampling_quant_ops_test");
}

Tensor RunNode(const std::string& op, const Input& input, const json& attrs = json::object()) {
  runtime::Executor executor(OneNodeGraph(op, input, attrs), Cpu());
  return executor.Run({{"x0", Tensor::FromDoubles(input.dtype, input.shape, input.values)}}).at("y0");
}

::testing::AssertionResult RejectsGraph(const std::string& op, const Input& input, ErrorCode code,
                                        const std::string& detail, const json& attrs = json::object()) {
  return test::ThrowsError([&] { runtime::Executor(OneNodeGraph(op, input, attrs), Cpu()); }, code,
                           {"node 'probe'", op, detail});
}

// ---- sampling ----------------------------------------------------------------------------------------
TEST(SamplingOpsGolden, OneDrawPerRowWithSeedPlusRow) {
  std::ifstream file(test::GoldenPath("research_ops_sampling.json"));
  ASSERT_TRUE(file.good()) << "missing golden file; run tests/golden/gen_research_ops.py";
  const json golden = json::parse(file);
  for (const json& c : golden["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const json& in = c["inputs"][0];
    const json& want = c["outputs"][0];
    const Tensor tokens = RunNode(c["op"].get<std::string>(),
                                  {*DTypeFromName(in["dtype"].get<std::string>()), in["shape"].get<Shape>(),
                                   in["values"].get<std::vector<double>>()},
                                  c["attrs"]);
    EXPECT_EQ(tokens.dtype(), DType::Int32);
    EXPECT_EQ(tokens.shape(), want["shape"].get<Shape>());
    EXPECT_EQ(tokens.ToDoubles(), want["values"].get<std::vector<double>>());
  }
}

TEST(SamplingOps, GreedyIsTheFirstArgmaxOfEveryRow) {
  const Input logits{DType::BFloat16, {3, 4}, {1, 5, 5, 2, -1, -3, -0.5, -0.5, 0, 0, 0, 0}};
  const Tensor tokens = RunNode("sampling.greedy", logits);
  EXPECT_EQ(tokens.shape(), Shape{3});
  EXPECT_EQ(tokens.ToDoubles(), (std::vector<double>{1, 2, 0}));
}

TEST(SamplingOps, TopOneAndTinyNucleusAreGreedy) {
  const Input logits{DType::Float64, {2, 5}, {0.1, 0.3, 2.0, -1, 1.9, 3, 2.5, -4, 0, 2.9}};
  for (int seed : {0, 1, 12345}) {
    EXPECT_EQ(RunNode("sampling.top_k", logits, {{"top_k", 1}, {"seed", seed}}).ToDoubles(),
              (std::vector<double>{2, 0}));
    EXPECT_EQ(RunNode("sampling.top_p", logits, {{"top_p", 1e-6}, {"seed", seed}}).ToDoubles(),
              (std::vector<double>{2, 0}));
  }
}

TEST(SamplingOpsShapeRules, LogitsAndAttributes) {
  EXPECT_TRUE(RejectsGraph("sampling.greedy", {DType::Float32, {2, 2, 3}}, ErrorCode::ShapeMismatch, "[B, V]"));
  EXPECT_TRUE(RejectsGraph("sampling.top_k", {DType::Float32, {2, 0}}, ErrorCode::ShapeMismatch, "vocabulary"));
  EXPECT_TRUE(RejectsGraph("sampling.top_k", {DType::Int32, {4}}, ErrorCode::UnsupportedDType, "i32"));
  EXPECT_TRUE(RejectsGraph("sampling.top_k", {DType::Float32, {4}}, ErrorCode::InvalidArgument, "'top_k'",
                           {{"top_k", -1}}));
  EXPECT_TRUE(RejectsGraph("sampling.top_p", {DType::Float32, {4}}, ErrorCode::InvalidArgument, "'top_p'",
                           {{"top_p", 0.0}}));
  EXPECT_TRUE(RejectsGraph("sampling.top_p", {DType::Float32, {4}}, ErrorCode::InvalidArgument, "'temperature'",
                           {{"temperature", -1.0}}));
}

// ---- quant ---------------------------------------------------------------------------------------------
TEST(QuantOps, QuantizeInt8RoundsHalfToEvenAndSaturates) {
  // x / 0.5 = -2.5, 0.5, 1.5, 2, 200, -200 -> round half even -2, 0, 2, 2, 200, -200, + 3, clamped.
  const Tensor q = RunNode("quant.quantize_int8", {DType::Float32, {2, 3}, {-1.25, 0.25, 0.75, 1, 100, -100}},
                           {{"scale", 0.5}, {"zero_point", 3}});
  EXPECT_EQ(q.dtype(), DType::Int8);
  EXPECT_EQ(q.shape(), (Shape{2, 3}));
  EXPECT_EQ(q.ToDoubles(), (std::vector<double>{1, 3, 5, 5, 127, -128}));
}

TEST(QuantOps, DequantInt8IsAffine) {
  const std::vector<double> q = {-128, -1, 0, 5, 127, -2};
  const Tensor y = RunNode("quant.dequant_int8", {DType::Int8, {3, 2}, q}, {{"scale", 0.25}, {"zero_point", -2}});
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(y.GetDouble(static_cast<int64_t>(i)), (q[i] + 2) * 0.25) << i;
}

TEST(QuantOps, DequantInt4ReadsPackedNibblesOfAnOddCount) {
  const std::vector<double> q = {-8, -1, 0, 3, 7};
  const Tensor y = RunNode("quant.dequant_int4", {DType::Int4, {5}, q}, {{"scale", 0.5}, {"zero_point", 1}});
  EXPECT_EQ(y.dtype(), DType::Float32);
  for (size_t i = 0; i < q.size(); ++i) EXPECT_EQ(y.GetDouble(static_cast<int64_t>(i)), (q[i] - 1) * 0.5) << i;
}

TEST(QuantOpsShapeRules, DTypesAndAttributes) {
  EXPECT_TRUE(RejectsGraph("quant.quantize_int8", {DType::Int8, {3}}, ErrorCode::UnsupportedDType, "i8"));
  EXPECT_TRUE(RejectsGraph("quant.dequant_int8", {DType::Float32, {3}}, ErrorCode::UnsupportedDType, "f32"));
  EXPECT_TRUE(RejectsGraph("quant.quantize_int8", {DType::Float32, {3}}, ErrorCode::InvalidArgument, "'scale'",
                           {{"scale", 0.0}}));
  EXPECT_TRUE(RejectsGraph("quant.dequant_int4", {DType::Int4, {3}}, ErrorCode::InvalidArgument, "'zero_point'",
                           {{"zero_point", 8}}));
}

}  // namespace
}  // namespace backplane
