// Graph-level math, reduction and elementwise ops through the executor, against the goldens of
// tests/golden/gen_math_ops.py (NumPy / SciPy / PyTorch float64, Python Philox for dropout): one
// single-node graph per golden case, run as many times as the case lists outputs. Also shape-rule
// errors naming the node, and the dropout identity paths.
//
// Tolerance: DefaultTolerance of the output dtype (every lowering rounds its result once, or is
// the f64-accumulated kernel result rounded to the dtype); i64 results compare exactly.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane::runtime {
namespace {

using nlohmann::json;

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("math_ops.json"));
    if (!in.good()) throw std::runtime_error("missing golden file math_ops.json");
    return json::parse(in);
  }();
  return data;
}

// Graph input i is named "x<i>".
std::string InputName(size_t i) { return fmt::format("x{}", i); }

DType DTypeOf(const json& t) { return *DTypeFromName(t.at("dtype").get<std::string>()); }

Tensor FromJson(const json& t) {
  const auto values = t.at("values").get<std::vector<double>>();
  return Tensor::FromDoubles(DTypeOf(t), t.at("shape").get<Shape>(), values);
}

// A one-node graph: inputs x0, x1, ... (a null golden input is an omitted optional input: ""
// in the middle of the list, left off at its end), output y.
ir::Graph OneNodeGraph(const std::string& op, const json& inputs, const json& attrs) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", json::array({"y"})}});
  g["inputs"] = json::array();
  json names = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json& in = inputs[i];
    names.push_back(in.is_null() ? "" : InputName(i));
    if (in.is_null()) continue;
    g["inputs"].push_back({{"name", InputName(i)}, {"dtype", in.at("dtype")}, {"shape", in.at("shape")}});
  }
  while (!names.empty() && names.back() == "") names.erase(names.size() - 1);
  g["nodes"] = json::array();
  g["nodes"].push_back(json::object(
      {{"name", "bad"}, {"op", op}, {"inputs", names}, {"outputs", json::array({"y"})}, {"attrs", attrs}}));
  return ir::ParseGraph(g.dump());
}

std::map<std::string, Tensor> Inputs(const json& inputs) {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_null()) continue;
    out[InputName(i)] = FromJson(inputs[i]);
    const auto want = inputs[i].at("values").get<std::vector<double>>();
    EXPECT_EQ(out[InputName(i)].ToDoubles(), want) << "golden input " << i << " not exact";
  }
  return out;
}

::testing::AssertionResult Matches(const Tensor& got, const json& want) {
  if (got.dtype() != DTypeOf(want)) {
    return ::testing::AssertionFailure()
           << "dtype " << DTypeName(got.dtype()) << ", want " << want.at("dtype");
  }
  if (got.shape() != want.at("shape").get<Shape>()) {
    return ::testing::AssertionFailure()
           << "shape " << ShapeToString(got.shape()) << ", want " << want.at("shape");
  }
  const Tolerance tol = DefaultTolerance(got.dtype());
  const auto values = want.at("values").get<std::vector<double>>();
  for (size_t i = 0; i < values.size(); ++i) {
    const double g = got.GetDouble(static_cast<int64_t>(i));
    if (!(std::fabs(g - values[i]) <= tol.abs + tol.rel * std::fabs(values[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

class MathOpsGolden : public ::testing::TestWithParam<size_t> {};

TEST_P(MathOpsGolden, MatchesOracle) {
  const json& c = Golden().at("cases").at(GetParam());
  SCOPED_TRACE(c.at("name").get<std::string>());
  auto backend = cpu::CreateBackend();
  Executor ex(OneNodeGraph(c.at("op"), c.at("inputs"), c.at("attrs")), *backend);
  const auto inputs = Inputs(c.at("inputs"));
  const json& runs = c.at("runs");
  for (size_t r = 0; r < runs.size(); ++r) {
    EXPECT_TRUE(Matches(ex.Run(inputs).at("y"), runs[r])) << "run " << r;
  }
}

std::vector<size_t> CaseIndices() {
  std::vector<size_t> out(Golden().at("cases").size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = fmt::format("c{}_", info.param);
  for (char ch : Golden().at("cases").at(info.param).at("name").get<std::string>()) {
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : ch == '-' ? 'm' : '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(MathOps, MathOpsGolden, ::testing::ValuesIn(CaseIndices()), CaseName);

TEST(MathOps, EveryRegisteredOpHasAGoldenCase) {
  std::set<std::string> covered;
  for (const json& c : Golden().at("cases")) covered.insert(c.at("op").get<std::string>());
  // activation_ops; math.erf: tensor_elementwise_ops_test.cpp; the Trig ops: math_trig_ops_test.cpp
  const std::set<std::string> elsewhere = {"math.exp",  "math.log",   "math.softmax", "math.erf",
                                           "math.tan",  "math.asin",  "math.acos",    "math.atan",
                                           "math.sinh", "math.cosh",  "math.asinh",   "math.acosh",
                                           "math.atanh"};
  int mine = 0;
  for (const std::string& id : Registry().Ids()) {
    if (!(id.starts_with("math.") || id.starts_with("reduction.") || id.starts_with("elementwise.")))
      continue;
    if (elsewhere.contains(id)) continue;
    ++mine;
    EXPECT_TRUE(covered.contains(id)) << id << " has no golden case";
  }
  EXPECT_EQ(mine, 30);
}

// ---- dropout identity paths -------------------------------------------------------------------------
TEST(MathOps, DropoutIsABitwiseCopyWhenNotTrainingOrPIsZero) {
  auto backend = cpu::CreateBackend();
  const Tensor x = Tensor::FromDoubles(DType::Float32, {2, 3}, std::vector<double>{1, -0.0, 2.5, -3, 4, 5});
  json in = json::array();
  in.push_back(json::object({{"dtype", "f32"}, {"shape", Shape{2, 3}}}));
  for (const json& attrs : {json{{"training", false}, {"p", 0.5}}, json{{"p", 0.0}}}) {
    Executor ex(OneNodeGraph("math.dropout", in, attrs), *backend);
    for (int run = 0; run < 2; ++run) {
      const Tensor y = ex.Run({{"x0", x}}).at("y");
      EXPECT_EQ(std::memcmp(y.data(), x.data(), x.nbytes()), 0) << attrs.dump();
    }
  }
}

TEST(MathOps, LogSumExpOfAnEmptyAxisIsMinusInfinity) {
  auto backend = cpu::CreateBackend();
  json in = json::array();
  in.push_back(json::object({{"dtype", "f32"}, {"shape", Shape{0, 2}}}));
  Executor ex(OneNodeGraph("math.logsumexp", in, json::object({{"axis", 0}})), *backend);
  const Tensor y = ex.Run({{"x0", Tensor(DType::Float32, {0, 2})}}).at("y");
  ASSERT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y.ToDoubles(), (std::vector<double>{-INFINITY, -INFINITY}));
}

// ---- shape-rule errors ---------------------------------------------------------------------------------
struct In {
  std::string dtype;  // "": an omitted optional input
  Shape shape;
};

struct ErrorCase {
  std::string op;
  std::vector<In> inputs;
  json attrs;
  ErrorCode code;
  std::string fragment;
};

TEST(MathOps, ShapeRuleErrorsNameTheNode) {
  const auto f32 = [](Shape s) { return In{"f32", std::move(s)}; };
  const In none{};
  const std::vector<ErrorCase> cases = {
      {"math.add", {f32({2, 3}), f32({4})}, {}, ErrorCode::ShapeMismatch, "do not broadcast"},
      {"math.mul", {f32({2}), In{"f64", {2}}}, {}, ErrorCode::UnsupportedDType, "dtype"},
      {"math.abs", {In{"i32", {2}}}, {}, ErrorCode::UnsupportedDType, "i32"},
      {"math.axpy", {f32({3, 1}), f32({3, 4})}, {}, ErrorCode::ShapeMismatch, "does not broadcast to y"},
      {"math.axpy", {f32({3}), f32({3})}, {{"alpha", 1e300}}, ErrorCode::InvalidArgument, "'alpha'"},
      {"math.matmul", {f32({2, 3}), f32({4, 5})}, {}, ErrorCode::ShapeMismatch, "inner dimensions"},
      {"math.matmul", {f32({2, 2, 3}), f32({3, 3, 4})}, {}, ErrorCode::ShapeMismatch, "do not broadcast"},
      {"math.matmul", {f32({}), f32({3})}, {}, ErrorCode::ShapeMismatch, "rank >= 1"},
      {"math.outer", {f32({2, 2}), f32({3})}, {}, ErrorCode::ShapeMismatch, "rank 1"},
      {"math.dot", {f32({3}), f32({4})}, {}, ErrorCode::ShapeMismatch, "shape [3]"},
      {"math.logsumexp", {f32({2, 3})}, {{"axis", 2}}, ErrorCode::InvalidArgument, "'axis'"},
      {"math.inv_sqrt_dim_scale", {f32({2})}, {{"dim", -1}}, ErrorCode::InvalidArgument, "'dim'"},
      {"math.inv_sqrt_dim_scale", {f32({})}, {}, ErrorCode::InvalidArgument, "'dim'"},
      {"math.dropout", {f32({2})}, {{"p", 1.5}}, ErrorCode::InvalidArgument, "'p'"},
      {"math.rmsnorm", {f32({2, 4}), f32({3})}, {}, ErrorCode::ShapeMismatch, "shape [4]"},
      {"math.rmsnorm", {f32({2, 4}), f32({4})}, {{"eps", -1e-5}}, ErrorCode::InvalidArgument, "'eps'"},  // any eps >= 0 runs
      {"math.layernorm", {f32({2, 4}), f32({4}), In{"f16", {4}}}, {}, ErrorCode::UnsupportedDType, "f16"},
      {"math.groupnorm",
       {f32({2, 6, 3}), f32({6}), f32({6})},
       {{"groups", 4}},
       ErrorCode::InvalidArgument,
       "'groups'"},
      {"math.groupnorm",
       {f32({6}), f32({6}), f32({6})},
       {{"groups", 2}},
       ErrorCode::ShapeMismatch,
       "rank >= 2"},
      {"math.instancenorm", {f32({2, 3, 4}), f32({4})}, {}, ErrorCode::ShapeMismatch, "shape [3]"},
      {"math.batchnorm",
       {f32({2, 3}), none, none, f32({2}), f32({3})},
       {},
       ErrorCode::ShapeMismatch,
       "shape [3]"},
      {"math.batchnorm",
       {f32({2, 3}), none, none, f32({3}), f32({3})},
       {{"eps", -1e-3}},  // any finite eps >= 0 runs (MathExt.BatchNormEvalEps)
       ErrorCode::InvalidArgument,
       "'eps'"},
      {"reduction.sum", {f32({2, 3, 4})}, {{"axis", {0, -3}}}, ErrorCode::InvalidArgument, "distinct"},
      {"reduction.prod", {f32({2, 3, 4})}, {{"axis", {3}}}, ErrorCode::InvalidArgument, "'axis'"},
      {"reduction.max", {f32({2, 0, 4})}, {{"axis", {1}}}, ErrorCode::ShapeMismatch, "empty"},
  };
  auto backend = cpu::CreateBackend();
  for (const ErrorCase& c : cases) {
    json inputs = json::array();
    std::map<std::string, Tensor> values;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const In& in = c.inputs[i];
      if (in.dtype.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      inputs.push_back(json::object({{"dtype", in.dtype}, {"shape", in.shape}}));
      values[InputName(i)] = Tensor(*DTypeFromName(in.dtype), in.shape);
    }
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          Executor ex(OneNodeGraph(c.op, inputs, c.attrs.is_null() ? json::object() : c.attrs), *backend);
          ex.Run(values);
        },
        c.code, {"node 'bad'", c.op, c.fragment}))
        << c.op << " " << c.attrs.dump();
  }
}

}  // namespace
}  // namespace backplane::runtime
