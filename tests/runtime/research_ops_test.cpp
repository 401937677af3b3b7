// Graph-level research ops (hawkes, vsa, active_inference, predictive_coding, markov_blanket,
// causal, physics, pospop) run through the executor. Oracles: NumPy/SciPy goldens from
// tests/golden/gen_research_ops.py (broadcasting, numpy.roll, stencils of rank 1-3, batched
// Cholesky, FFT, Hawkes formulas), closed-form float64 values here, and statistical properties of
// the Hawkes simulation.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
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

// A graph with one node 'probe' running `op` on graph inputs x0, x1, ... into outputs y0, y1, ...
ir::Graph OneNodeGraph(const std::string& op, const std::vector<Input>& inputs, int outputs, const json& attrs) {
  json g = {{"format", "backplane.graph"}, {"version", 1}, {"inputs", json::array()}};
  json names = json::array();
  json outs = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    g["inputs"].push_back({{"name", names.back()}, {"dtype", DTypeName(inputs[i].dtype)}, {"shape", inputs[i].shape}});
  }
  for (int o = 0; o < outputs; ++o) outs.push_back("y" + std::to_string(o));
  g["nodes"] = json::array({{{"name", "probe"}, {"op", op}, {"inputs", names}, {"outputs", outs}, {"attrs", attrs}}});
  g["outputs"] = outs;
  return ir::ParseGraph(g.dump(), "research_ops_test");
}

std::map<std::string, Tensor> Feed(const std::vector<Input>& inputs) {
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    feed["x" + std::to_string(i)] = Tensor::FromDoubles(inputs[i].dtype, inputs[i].shape, inputs[i].values);
  }
  return feed;
}

std::vector<Tensor> RunNode(const std::string& op, const std::vector<Input>& inputs, int outputs = 1,
                            const json& attrs = json::object()) {
  runtime::Executor executor(OneNodeGraph(op, inputs, outputs, attrs), Cpu());
  std::map<std::string, Tensor> result = executor.Run(Feed(inputs));
  std::vector<Tensor> out;
  for (int o = 0; o < outputs; ++o) out.push_back(result.at("y" + std::to_string(o)));
  return out;
}

// Building the executor (which verifies the graph) throws `code`, naming the node and the op.
::testing::AssertionResult RejectsGraph(const std::string& op, const std::vector<Input>& inputs, ErrorCode code,
                                        const std::string& detail, const json& attrs = json::object(),
                                        int outputs = 1) {
  return test::ThrowsError([&] { runtime::Executor(OneNodeGraph(op, inputs, outputs, attrs), Cpu()); }, code,
                           {"node 'probe'", op, detail});
}

::testing::AssertionResult Near(const Tensor& got, const std::vector<double>& want, double tol) {
  if (got.numel() != static_cast<int64_t>(want.size())) {
    return ::testing::AssertionFailure() << got.numel() << " elements, expected " << want.size();
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want[static_cast<size_t>(i)];
    if (!(std::fabs(got.GetDouble(i) - w) <= tol * (1 + std::fabs(w)))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got.GetDouble(i) << ", expected " << w;
    }
  }
  return ::testing::AssertionSuccess();
}

bool IsResearchOp(const std::string& id) {
  for (const char* prefix : {"hawkes.", "vsa.", "active_inference.", "predictive_coding.", "markov_blanket.",
                             "causal.", "physics.", "pospop."}) {
    if (id.starts_with(prefix)) return true;
  }
  return false;
}

Input FromJson(const json& j) {
  return {*DTypeFromName(j["dtype"].get<std::string>()), j["shape"].get<Shape>(), j["values"].get<std::vector<double>>()};
}

// ---- goldens ---------------------------------------------------------------------------------------
TEST(ResearchOpsGolden, EveryCaseMatchesNumPy) {
  json cases = json::array();
  for (const char* name : {"research_ops.json", "fft_batched.json"}) {  // the second: gen_fft_batched.py
    std::ifstream file(test::GoldenPath(name));
    ASSERT_TRUE(file.good()) << "missing golden file " << name << "; run its tests/golden/gen_*.py";
    const json golden = json::parse(file);
    for (const json& c : golden["cases"]) cases.push_back(c);
  }
  std::set<std::string> covered;
  for (const json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string op = c["op"].get<std::string>();
    std::vector<Input> inputs;
    for (const json& in : c["inputs"]) inputs.push_back(FromJson(in));
    const int outputs = static_cast<int>(c["outputs"].size());
    std::vector<Tensor> got;
    try {
      got = RunNode(op, inputs, outputs, c["attrs"]);
    } catch (const Error& e) {
      ADD_FAILURE() << op << " threw: " << e.what();
      continue;
    }
    for (int o = 0; o < outputs; ++o) {
      const Input want = FromJson(c["outputs"][o]);
      EXPECT_EQ(got[o].dtype(), want.dtype) << "output " << o;
      EXPECT_EQ(got[o].shape(), want.shape) << "output " << o;
      EXPECT_TRUE(Near(got[o], want.values, IsFloatingPoint(want.dtype) ? 1e-12 : 0.0)) << "output " << o;
    }
    covered.insert(op);
  }
  // Every research op has a golden, except hawkes.simulate (random; tested below).
  for (const std::string& id : runtime::Registry().Ids()) {
    if (IsResearchOp(id) && id != "hawkes.simulate") {
      EXPECT_TRUE(covered.contains(id)) << id << " has no golden";
    }
  }
}

// ---- batched FFT: no imaginary input, f32 ------------------------------------------------------------
// The DFT of a unit impulse is all ones; of a constant c over n points, n c at bin 0 only.
TEST(ResearchOps, BatchedFftOfRealRowsWithoutImaginaryInput) {
  json g = {{"format", "backplane.graph"}, {"version", 1},
            {"inputs", json::array({{{"name", "x"}, {"dtype", "f32"}, {"shape", {2, 6}}}})},
            {"nodes", json::array({{{"name", "probe"}, {"op", "physics.fft"}, {"inputs", {"x", ""}},
                                    {"outputs", {"re", "im"}}, {"attrs", json::object()}}})},
            {"outputs", {"re", "im"}}};
  runtime::Executor executor(ir::ParseGraph(g.dump(), "fft_real"), Cpu());
  const std::vector<double> x = {1, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2};
  std::map<std::string, Tensor> feed;
  feed["x"] = Tensor::FromDoubles(DType::Float32, {2, 6}, x);
  const std::map<std::string, Tensor> out = executor.Run(feed);
  EXPECT_EQ(out.at("re").dtype(), DType::Float32);
  EXPECT_TRUE(Near(out.at("re"), {1, 1, 1, 1, 1, 1, 12, 0, 0, 0, 0, 0}, 1e-6));
  EXPECT_TRUE(Near(out.at("im"), std::vector<double>(12, 0.0), 1e-6));
}

TEST(ResearchOps, BatchedFftRejectsMismatchedParts) {
  EXPECT_TRUE(RejectsGraph("physics.fft", {{DType::Float64, {2, 4}}, {DType::Float64, {2, 3}}},
                           ErrorCode::ShapeMismatch, "input 1", json::object(), 2));
  EXPECT_TRUE(RejectsGraph("physics.ifft", {{DType::Float64, {2, 4}}, {DType::Float32, {2, 4}}},
                           ErrorCode::UnsupportedDType, "input 1", json::object(), 2));
}

// ---- closed forms in other dtypes --------------------------------------------------------------------
TEST(ResearchOps, ElementwiseOpsKeepLowPrecisionDTypes) {
  const Input a{DType::BFloat16, {2, 2}, {1.5, -2, 0.25, 4}};
  const Input b{DType::BFloat16, {2}, {2, -0.5}};
  const Tensor bound = RunNode("vsa.bind", {a, b})[0];
  EXPECT_EQ(bound.dtype(), DType::BFloat16);
  EXPECT_TRUE(Near(bound, {3, 1, 0.5, -2}, 0));
  const Input t{DType::Float32, {3}, {1, 2.5, -1}};
  const Input c{DType::Float32, {}, {0.5}};
  EXPECT_TRUE(Near(RunNode("causal.cate", {t, c})[0], {0.5, 2, -1.5}, 0));
}

TEST(ResearchOps, BeliefUpdateInF32MatchesBayesRule) {
  const Tensor q = RunNode("active_inference.belief_update",
                           {{DType::Float32, {3}, {0.5, 0.25, 1}}, {DType::Float32, {3}, {0.2, 0.4, 0.4}}})[0];
  const double z = 0.5 * 0.2 + 0.25 * 0.4 + 1 * 0.4;
  EXPECT_TRUE(Near(q, {0.1 / z, 0.1 / z, 0.4 / z}, 1e-6));
}

TEST(ResearchOps, PosPopCountsStartFreshOnEveryRun) {
  const std::vector<Input> words = {{DType::Uint8, {3}, {0b1011, 0b0001, 0b1000'0000}}};
  runtime::Executor executor(OneNodeGraph("pospop.count8", words, 1, json::object()), Cpu());
  for (int run = 0; run < 2; ++run) {
    const Tensor counts = executor.Run(Feed(words)).at("y0");
    EXPECT_TRUE(Near(counts, {2, 1, 0, 1, 0, 0, 0, 1}, 0)) << "run " << run;
  }
}

// ---- hawkes.simulate ---------------------------------------------------------------------------------
TEST(ResearchOps, HawkesSimulateIsSortedPaddedAndReproducible) {
  const json attrs = {{"mu", 1.0}, {"alpha", 0.5}, {"beta", 2.0}, {"horizon", 5.0}, {"max_events", 64}, {"seed", 9}};
  const std::vector<Tensor> first = RunNode("hawkes.simulate", {}, 2, attrs);
  ASSERT_EQ(first[0].dtype(), DType::Float32);
  ASSERT_EQ(first[0].shape(), Shape{64});
  ASSERT_EQ(first[1].dtype(), DType::Int64);
  ASSERT_EQ(first[1].shape(), Shape{1});
  const int64_t count = first[1].data_as<int64_t>()[0];
  ASSERT_GE(count, 0);
  ASSERT_LE(count, 64);
  for (int64_t i = 0; i < count; ++i) {
    EXPECT_GE(first[0].GetDouble(i), i == 0 ? 0.0 : first[0].GetDouble(i - 1)) << i;
    EXPECT_LT(first[0].GetDouble(i), 5.0) << i;
  }
  for (int64_t i = count; i < 64; ++i) EXPECT_EQ(first[0].GetDouble(i), -1.0) << i;
  const std::vector<Tensor> again = RunNode("hawkes.simulate", {}, 2, attrs);
  EXPECT_EQ(again[0].ToDoubles(), first[0].ToDoubles());
  EXPECT_EQ(again[1].ToDoubles(), first[1].ToDoubles());
}

// With alpha = 0 the process is Poisson(mu): the count over the horizon has mean and variance
// mu * horizon (500 here); 6 standard deviations is about 134.
TEST(ResearchOps, HawkesSimulateWithoutExcitationIsPoisson) {
  const json attrs = {{"mu", 50.0}, {"alpha", 0.0}, {"beta", 1.0}, {"horizon", 10.0}, {"max_events", 2000}, {"seed", 3}};
  const int64_t count = RunNode("hawkes.simulate", {}, 2, attrs)[1].data_as<int64_t>()[0];
  EXPECT_NEAR(static_cast<double>(count), 500.0, 6 * std::sqrt(500.0));
}

TEST(ResearchOps, HawkesSimulateStopsAtMaxEvents) {
  const json attrs = {{"mu", 100.0}, {"alpha", 0.5}, {"beta", 1.0}, {"horizon", 10.0}, {"max_events", 8}};
  const std::vector<Tensor> out = RunNode("hawkes.simulate", {}, 2, attrs);
  EXPECT_EQ(out[1].data_as<int64_t>()[0], 8);
  for (int64_t i = 0; i < 8; ++i) EXPECT_GE(out[0].GetDouble(i), 0.0) << i;
}

// ---- shape rules: one or more per family -------------------------------------------------------------
const Input kVec3{DType::Float64, {3}};
const Input kVec4{DType::Float64, {4}};
const Input kMat33{DType::Float64, {3, 3}};

TEST(ResearchOpsShapeRules, Hawkes) {
  EXPECT_TRUE(RejectsGraph("hawkes.kernel_matrix", {kMat33}, ErrorCode::ShapeMismatch, "rank 1",
                           {{"alpha", 1.0}, {"beta", 1.0}}));
  EXPECT_TRUE(RejectsGraph("hawkes.intensity", {kVec3, kVec3}, ErrorCode::InvalidArgument, "'beta'",
                           {{"mu", 1.0}, {"alpha", 1.0}, {"beta", 0.0}}));
  EXPECT_TRUE(RejectsGraph("hawkes.simulate", {}, ErrorCode::InvalidArgument, "'max_events'",
                           {{"mu", 1.0}, {"alpha", 0.5}, {"beta", 1.0}, {"horizon", 1.0}}, 2));
}

TEST(ResearchOpsShapeRules, VSA) {
  EXPECT_TRUE(RejectsGraph("vsa.similarity", {kVec3, kVec4}, ErrorCode::ShapeMismatch, "shape [3]"));
  EXPECT_TRUE(RejectsGraph("vsa.bind", {{DType::Float64, {2, 3}}, kVec4}, ErrorCode::ShapeMismatch, "broadcast"));
  EXPECT_TRUE(RejectsGraph("vsa.bundle", {kVec3, {DType::Float32, {3}}}, ErrorCode::UnsupportedDType, "f32"));
}

TEST(ResearchOpsShapeRules, ActiveInference) {
  EXPECT_TRUE(RejectsGraph("active_inference.expected_free_energy", {kVec3, kVec4, kVec3}, ErrorCode::ShapeMismatch,
                           "input 1"));
  EXPECT_TRUE(RejectsGraph("active_inference.free_energy", {kVec3, kVec3, {DType::Int32, {3}}},
                           ErrorCode::UnsupportedDType, "input 2"));
}

TEST(ResearchOpsShapeRules, PredictiveCoding) {
  EXPECT_TRUE(RejectsGraph("predictive_coding.prediction", {{DType::Float64, {3, 4}}, kVec3}, ErrorCode::ShapeMismatch,
                           "must have shape [4]"));
  EXPECT_TRUE(RejectsGraph("predictive_coding.update_weights", {{DType::Float64, {3, 4}}, kVec4, kVec4},
                           ErrorCode::ShapeMismatch, "must have shape [3]"));
}

TEST(ResearchOpsShapeRules, MarkovBlanket) {
  EXPECT_TRUE(RejectsGraph("markov_blanket.partition", {kMat33, kVec3}, ErrorCode::UnsupportedDType, "i32"));
  EXPECT_TRUE(RejectsGraph("markov_blanket.flow_active", {{DType::Float64, {3, 4}}, {DType::Int32, {3}}},
                           ErrorCode::ShapeMismatch, "square"));
}

TEST(ResearchOpsShapeRules, Causal) {
  EXPECT_TRUE(RejectsGraph("causal.backdoor_adjustment", {{DType::Float64, {2, 3, 4}}, kVec4},
                           ErrorCode::ShapeMismatch, "must have shape [3]"));
  EXPECT_TRUE(RejectsGraph("causal.iv_estimate", {{DType::Float64, {1}}, {DType::Float64, {1}}, {DType::Float64, {1}}},
                           ErrorCode::ShapeMismatch, "at least 2"));
  EXPECT_TRUE(RejectsGraph("causal.cholesky", {{DType::Float64, {2, 3}}}, ErrorCode::ShapeMismatch, "square"));
  EXPECT_TRUE(RejectsGraph("causal.do_calculus", {kMat33, {DType::Int64, {1}}}, ErrorCode::UnsupportedDType, "i64"));
}

TEST(ResearchOpsShapeRules, Physics) {
  EXPECT_TRUE(RejectsGraph("physics.laplacian", {{DType::Float64, {2, 2, 2, 2}}}, ErrorCode::ShapeMismatch,
                           "rank 1, 2 or 3"));
  EXPECT_TRUE(RejectsGraph("physics.grad1d", {kVec3}, ErrorCode::InvalidArgument, "'spacing'", {{"spacing", 0.0}}));
  EXPECT_TRUE(RejectsGraph("physics.fft1d", {kVec3, kVec4}, ErrorCode::ShapeMismatch, "input 1", json::object(), 2));
}

TEST(ResearchOpsShapeRules, PosPop) {
  EXPECT_TRUE(RejectsGraph("pospop.count16", {{DType::Uint8, {4}}}, ErrorCode::UnsupportedDType, "u16"));
}

}  // namespace
}  // namespace backplane
