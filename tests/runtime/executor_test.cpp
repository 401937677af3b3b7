// Verifier and executor: located errors, ordering, buffer reuse, graph-only ops.
#include "backplane/runtime/executor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "support/test_support.hpp"

namespace backplane::runtime {
namespace {

ir::Graph Parse(const std::string& nodes, const std::string& outputs,
                const std::string& params = "[]") {
  return ir::ParseGraph(R"({"format": "backplane.graph", "version": 1, "name": "t",
      "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch", 4]}],
      "params": )" + params + R"(, "nodes": )" + nodes + R"(, "outputs": )" + outputs + "}");
}

Tensor Input(std::vector<double> values, Shape shape) {
  return Tensor::FromDoubles(DType::Float32, std::move(shape), values);
}

TEST(Verify, RejectsStructuralErrorsNamingTheNode) {
  struct Case {
    std::string nodes, outputs;
    ErrorCode code;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {R"([{"op": "activation.relu", "inputs": ["nope"], "outputs": ["y"]}])", R"(["y"])",
       ErrorCode::InvalidArgument, {"node 'y'", "$.nodes[0]", "'nope' is not defined"}},
      {R"([{"op": "activation.relu", "inputs": ["x", "x"], "outputs": ["y"]}])", R"(["y"])",
       ErrorCode::InvalidArgument, {"node 'y'", "takes 1 inputs", "got 2"}},
      {R"([{"op": "activation.relu", "inputs": ["b"], "outputs": ["a"]},
           {"op": "activation.relu", "inputs": ["a"], "outputs": ["b"]}])", R"(["a"])",
       ErrorCode::InvalidArgument, {"cycle"}},
      {R"([{"op": "activation.relu", "inputs": ["x"], "outputs": ["y"]}])", R"(["zz"])",
       ErrorCode::InvalidArgument, {"$.outputs[0]", "'zz' is not defined"}},
      {R"([{"op": "activation.swiglu", "inputs": ["x3"], "outputs": ["y"]},
           {"op": "Input", "outputs": ["x3"], "attrs": {"values": [1, 2, 3]}}])", R"(["y"])",
       ErrorCode::ShapeMismatch, {"node 'y'", "even"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.nodes);
    const ir::Graph g = Parse(c.nodes, c.outputs);
    try {
      VerifyGraph(g);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      for (const std::string& f : c.fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}

TEST(Executor, RunsAndBindsSymbolicDimensions) {
  auto backend = cpu::CreateBackend();
  Executor ex(Parse(R"([{"op": "activation.relu", "inputs": ["x"], "outputs": ["r"]},
                        {"op": "activation.tanh", "inputs": ["r"], "outputs": ["y"]}])", R"(["y"])"),
              *backend);
  for (int64_t batch : {1, 3, 2}) {
    std::vector<double> v;
    for (int64_t i = 0; i < batch * 4; ++i) v.push_back(static_cast<double>(i) - 3.0);
    const auto out = ex.Run({{"x", Input(v, {batch, 4})}});
    ASSERT_EQ(out.at("y").shape(), (Shape{batch, 4}));
    for (int64_t i = 0; i < batch * 4; ++i) {
      EXPECT_NEAR(out.at("y").GetDouble(i), std::tanh(std::max(0.0, v[static_cast<size_t>(i)])), 1e-6);
    }
  }
  EXPECT_TRUE(test::ThrowsError([&] { ex.Run({}); }, ErrorCode::InvalidArgument, {"missing input 'x'"}));
  EXPECT_TRUE(test::ThrowsError([&] { ex.Run({{"x", Input({1, 2, 3}, {3})}}); }, ErrorCode::ShapeMismatch,
                                {"input 'x'", "rank 2"}));
  EXPECT_TRUE(test::ThrowsError([&] { ex.Run({{"x", Tensor(DType::Float64, {1, 4})}}); },
                                ErrorCode::UnsupportedDType, {"input 'x'", "f32"}));
}

TEST(Executor, ReusesDeadBuffers) {
  // A chain of 8 elementwise ops needs two live buffers at a time, not eight.
  std::vector<std::string> items;
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    items.push_back(fmt::format(R"({{"op": "activation.relu", "inputs": ["{}"], "outputs": ["v{}"]}})", prev, i));
    prev = fmt::format("v{}", i);
  }
  std::string nodes = fmt::format("[{}", fmt::join(items, ","));
  nodes += "]";
  auto backend = cpu::CreateBackend();
  Executor ex(Parse(nodes, R"(["v7"])"), *backend);
  const auto out = ex.Run({{"x", Input({-1, 2, -3, 4}, {1, 4})}});
  EXPECT_EQ(out.at("v7").ToDoubles(), (std::vector<double>{0, 2, 0, 4}));
  EXPECT_LE(ex.planned_buffers(), 3);
}

TEST(Executor, InputNodeMaterialisesLiterals) {
  auto backend = cpu::CreateBackend();
  Executor ex(Parse(R"([{"op": "Input", "outputs": ["c"], "attrs": {"values": [1, -2, 3, -4, 5, -6], "shape": [2, 3]}},
                        {"op": "Input", "inputs": ["x"], "outputs": ["same"]}])", R"(["c", "same"])"),
              *backend);
  const auto out = ex.Run({{"x", Input({1, 2, 3, 4}, {1, 4})}});
  EXPECT_EQ(out.at("c").shape(), (Shape{2, 3}));
  EXPECT_EQ(out.at("c").ToDoubles(), (std::vector<double>{1, -2, 3, -4, 5, -6}));
  EXPECT_EQ(out.at("same").ToDoubles(), (std::vector<double>{1, 2, 3, 4}));
}

TEST(Metrics, AccumulateAcrossRuns) {
  auto backend = cpu::CreateBackend();
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "p", "dtype": "f32", "shape": ["b", 3]}, {"name": "t", "dtype": "f32", "shape": ["b", 3]}],
      "nodes": [{"op": "bench.accuracy", "inputs": ["p", "t"], "outputs": ["acc"]},
                {"op": "bench.metric.perplexity", "inputs": ["p", "t"], "outputs": ["ppl"]},
                {"op": "bench.f1", "inputs": ["p", "t"], "outputs": ["f1"]}],
      "outputs": ["acc", "ppl", "f1"]})");
  Executor ex(g, *backend);
  // Run 1: two rows, first correct (argmax 0 vs 0), second wrong (argmax 2 vs 1).
  auto r1 = ex.Run({{"p", Input({0.7, 0.2, 0.1, 0.1, 0.3, 0.6}, {2, 3})},
                    {"t", Input({1, 0, 0, 0, 1, 0}, {2, 3})}});
  EXPECT_NEAR(r1.at("acc").GetDouble(0), 0.5, 1e-7);
  // Run 2: one correct row -> 2 of 3.
  auto r2 = ex.Run({{"p", Input({0.1, 0.8, 0.1}, {1, 3})}, {"t", Input({0, 1, 0}, {1, 3})}});
  EXPECT_NEAR(r2.at("acc").GetDouble(0), 2.0 / 3.0, 1e-7);
  // Perplexity: exp(mean over rows of -ln p_target), rows 0.7, 0.3, 0.8 (f32 inputs).
  const double ce = -(std::log(double(0.7f)) + std::log(double(0.3f)) + std::log(double(0.8f))) / 3;
  EXPECT_NEAR(r2.at("ppl").GetDouble(0), std::exp(ce), 1e-6);  // an f32 output
  // F1 over all elements of both runs, threshold 0.5: predicted positives 0.7, 0.6, 0.8; actual
  // positives at (0,0), (1,1), (2,1): TP = 2 (0.7, 0.8), FP = 1 (0.6), FN = 1 (0.3).
  const double p = 2.0 / 3, r = 2.0 / 3;
  EXPECT_NEAR(r2.at("f1").GetDouble(0), 2 * p * r / (p + r), 1e-6);
}

TEST(ModelOps, FreezeAndGraftSelectByPattern) {
  auto backend = cpu::CreateBackend();
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": [1]}],
      "params": [{"name": "enc.l0.w", "dtype": "f32", "shape": [2], "init": {"kind": "constant", "value": 1}},
                 {"name": "enc.l1.w", "dtype": "f32", "shape": [3], "init": {"kind": "constant", "value": 2}},
                 {"name": "dec.w", "dtype": "f32", "shape": [1], "init": {"kind": "constant", "value": 3}}],
      "nodes": [{"op": "model.freeze", "inputs": ["x"], "outputs": ["n"], "attrs": {"pattern": "enc", "except": "enc.l1"}},
                {"op": "model.graft", "inputs": ["x"], "outputs": ["all"], "attrs": {"at": "**.w"}},
                {"op": "model.graft", "inputs": ["x"], "outputs": ["enc"], "attrs": {"at": "enc.*.w"}}],
      "outputs": ["n", "all", "enc"]})");
  Executor ex(g, *backend);
  const auto out = ex.Run({{"x", Input({0}, {1})}});
  EXPECT_EQ(out.at("n").GetDouble(0), 1.0);
  EXPECT_TRUE(ex.params().frozen.at("enc.l0.w"));
  EXPECT_FALSE(ex.params().frozen.at("enc.l1.w"));
  EXPECT_FALSE(ex.params().frozen.at("dec.w"));
  // Sorted names: dec.w, enc.l0.w, enc.l1.w.
  EXPECT_EQ(out.at("all").ToDoubles(), (std::vector<double>{3, 1, 1, 2, 2, 2}));
  EXPECT_EQ(out.at("enc").ToDoubles(), (std::vector<double>{1, 1, 2, 2, 2}));
}

TEST(ModelOps, GraftReadWritePatchesParameters) {
  auto backend = cpu::CreateBackend();
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "inj", "dtype": "f32", "shape": [2]}],
      "params": [{"name": "a.w", "dtype": "f32", "shape": [3], "init": {"kind": "ones"}}],
      "nodes": [{"op": "model.graft", "inputs": ["inj", "inj"], "outputs": ["patched"],
                 "attrs": {"at": "a", "mode": "read_write"}}],
      "outputs": ["patched"]})");
  Executor ex(g, *backend);
  const auto out = ex.Run({{"inj", Input({0.5, -1}, {2})}});
  EXPECT_EQ(out.at("patched").ToDoubles(), (std::vector<double>{1.5, 0, 1}));
  EXPECT_EQ(ex.params().tensors.at("a.w").ToDoubles(), (std::vector<double>{1.5, 0, 1}));
}

}  // namespace
}  // namespace backplane::runtime
