// Passes: dead-code elimination, and every fusion-table rule run both ways within its bound.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/ir/passes.hpp"
#include "backplane/random.hpp"
#include "backplane/runtime/executor.hpp"

namespace backplane::ir {
namespace {

Tensor Random(DType dtype, Shape shape, uint64_t seed, double scale = 1.0) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.SetDouble(i, scale * (2.0 * PhiloxUniformDouble(seed, 0, static_cast<uint64_t>(i)) - 1.0));
  }
  return t;
}

// A graph for one rule: the unfused chain on inputs a, b (and c, d where needed).
std::string RuleGraph(const FusionRule& rule, DType dtype) {
  const std::string t(DTypeName(dtype));
  if (rule.pattern == "matmul_bias_act") {
    std::string nodes = R"({"op": "math.matmul", "inputs": ["a", "b"], "outputs": ["mm"]},
                           {"op": "math.add", "inputs": ["mm", "c"], "outputs": ["sum"]})";
    std::string out = "sum";
    if (rule.ops.size() == 3) {
      nodes += fmt::format(R"(, {{"op": "{}", "inputs": ["sum"], "outputs": ["act"]}})", rule.ops[2]);
      out = "act";
    }
    return fmt::format(R"({{"format": "backplane.graph", "version": 1,
        "inputs": [{{"name": "a", "dtype": "{0}", "shape": [2, 5, 16]}}, {{"name": "b", "dtype": "{0}", "shape": [16, 24]}},
                   {{"name": "c", "dtype": "{0}", "shape": [24]}}],
        "nodes": [{1}], "outputs": ["{2}"]}})",
                       t, nodes, out);
  }
  if (rule.pattern == "add_layernorm") {
    return fmt::format(R"({{"format": "backplane.graph", "version": 1,
        "inputs": [{{"name": "a", "dtype": "{0}", "shape": [3, 7, 32]}}, {{"name": "b", "dtype": "{0}", "shape": [3, 7, 32]}},
                   {{"name": "c", "dtype": "{0}", "shape": [32]}}, {{"name": "d", "dtype": "{0}", "shape": [32]}}],
        "nodes": [{{"op": "math.add", "inputs": ["a", "b"], "outputs": ["s"]}},
                  {{"op": "math.layernorm", "inputs": ["s", "c", "d"], "outputs": ["y"]}}],
        "outputs": ["y"]}})",
                       t);
  }
  return fmt::format(R"({{"format": "backplane.graph", "version": 1,
      "inputs": [{{"name": "a", "dtype": "{0}", "shape": [6, 16]}}, {{"name": "q", "dtype": "i4", "shape": [16, 8]}}],
      "nodes": [{{"op": "quant.dequant_int4", "inputs": ["q"], "outputs": ["w"], "attrs": {{"scale": 0.125, "zero_point": 1}}}},
                {{"op": "math.matmul", "inputs": ["a", "w"], "outputs": ["y"]}}],
      "outputs": ["y"]}})",
                     t);
}

TEST(Fusion, EveryRuleMatchesTheUnfusedGraph) {
  auto backend = cpu::CreateBackend();
  for (const FusionRule& rule : FusionTable()) {
    for (DType dtype : rule.dtypes) {
      SCOPED_TRACE(fmt::format("{} {}", rule.name, DTypeName(dtype)));
      const Graph unfused = ParseGraph(RuleGraph(rule, dtype));
      Graph fused = unfused;
      const PassReport report = FuseOps(fused);
      ASSERT_EQ(report.fused.size(), 1u) << "the rule did not fire";
      ASSERT_EQ(fused.nodes.size(), 1u);
      EXPECT_EQ(fused.nodes[0].op, "Fused");
      std::map<std::string, Tensor> inputs;
      for (const ValueSpec& in : unfused.inputs) {
        Shape shape;
        for (const Dim& d : in.shape) shape.push_back(d.size);
        inputs[in.name] = in.dtype == DType::Int4 ? Random(DType::Int4, shape, 9, 8.0)
                                                  : Random(in.dtype, shape, std::hash<std::string>{}(in.name));
      }
      runtime::Executor a(unfused, *backend), b(fused, *backend);
      const Tensor want = a.Run(inputs).at(unfused.outputs[0]);
      const Tensor got = b.Run(inputs).at(unfused.outputs[0]);
      ASSERT_EQ(got.shape(), want.shape());
      // Unfused bf16 graphs store intermediates in bf16; the bound is then the bf16 tolerance.
      const Tolerance bound = dtype == DType::BFloat16 ? DefaultTolerance(dtype) : rule.parity;
      double worst = 0;
      for (int64_t i = 0; i < got.numel(); ++i) {
        const double err = std::fabs(got.GetDouble(i) - want.GetDouble(i));
        worst = std::max(worst, err / (bound.abs + bound.rel * std::fabs(want.GetDouble(i))));
      }
      EXPECT_LE(worst, 1.0) << "parity bound exceeded by a factor " << worst;
    }
  }
}

TEST(Fusion, KeepsIntermediatesThatOthersRead) {
  Graph g = ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "a", "dtype": "f32", "shape": [2, 4]}, {"name": "b", "dtype": "f32", "shape": [4, 3]},
                 {"name": "c", "dtype": "f32", "shape": [3]}],
      "nodes": [{"op": "math.matmul", "inputs": ["a", "b"], "outputs": ["mm"]},
                {"op": "math.add", "inputs": ["mm", "c"], "outputs": ["y"]}],
      "outputs": ["y", "mm"]})");
  EXPECT_TRUE(FuseOps(g).fused.empty()) << "mm is a graph output and must stay";
  EXPECT_EQ(g.nodes.size(), 2u);
}

TEST(DeadCode, RemovesUnreachableNodesAndKeepsEffects) {
  Graph g = ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
      "params": [{"name": "w", "dtype": "f32", "shape": [4]}],
      "nodes": [{"op": "activation.relu", "inputs": ["x"], "outputs": ["used"]},
                {"op": "activation.tanh", "inputs": ["x"], "outputs": ["unused"]},
                {"op": "activation.sigmoid", "inputs": ["unused"], "outputs": ["unused2"]},
                {"op": "train.optimizer.sgd", "inputs": ["w", "x"], "outputs": ["w_next"]}],
      "outputs": ["used"]})");
  const PassReport r = EliminateDeadCode(g);
  EXPECT_EQ(r.removed, (std::vector<std::string>{"unused", "unused2"}));
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].op, "train.optimizer.sgd");
}

}  // namespace
}  // namespace backplane::ir
