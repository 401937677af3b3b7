// Graph-level training ops through the executor. Losses and gradients against torch float64
// (tests/golden/gen_train_ops.py, "cases"); every optimizer trained for 20 runs of one executor on
// mean((a w - t)^2) with the gradient computed by graph ops, against torch.optim (or the NumPy
// implementations of the papers' rules for Lion, LARS, LAMB, Hebbian and L-BFGS) in float64
// ("trajectories"). Also: in-place updates and their ordering, frozen parameters, state that
// persists and can be carried to another executor, and shape-rule errors naming the node.
//
// Tolerance: DefaultTolerance of the dtype, also for the 20-step trajectories (the float32 ones
// against the float64 oracle).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
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
    std::ifstream in(test::GoldenPath("train_ops.json"));
    if (!in.good()) throw std::runtime_error("missing golden file train_ops.json");
    return json::parse(in);
  }();
  return data;
}

DType DTypeOf(const json& t) { return *DTypeFromName(t.at("dtype").get<std::string>()); }

Tensor FromJson(const json& t) {
  return Tensor::FromDoubles(DTypeOf(t), t.at("shape").get<Shape>(), t.at("values").get<std::vector<double>>());
}

json TypeOf(const json& t) { return {{"dtype", t.at("dtype")}, {"shape", t.at("shape")}}; }

::testing::AssertionResult Near(const Tensor& got, const json& want, Tolerance tol) {
  if (got.dtype() != DTypeOf(want) || got.shape() != want.at("shape").get<Shape>()) {
    return ::testing::AssertionFailure() << "got " << DTypeName(got.dtype()) << ShapeToString(got.shape()) << ", want "
                                         << want.at("dtype") << want.at("shape");
  }
  const auto values = want.at("values").get<std::vector<double>>();
  for (size_t i = 0; i < values.size(); ++i) {
    const double g = got.GetDouble(static_cast<int64_t>(i));
    if (!(std::fabs(g - values[i]) <= tol.abs + tol.rel * std::fabs(values[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<size_t> Indices(const char* list) {
  std::vector<size_t> out(Golden().at(list).size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

std::string Sanitize(const std::string& text) {
  std::string name;
  for (char ch : text) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

// ---- losses and gradients: one node "bad" with inputs x0, x1 and output y -----------------------
ir::Graph OneNodeGraph(const std::string& op, const json& input_types, const json& attrs = json::object()) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", {"y"}}});
  json names = json::array();
  g["inputs"] = json::array();
  for (size_t i = 0; i < input_types.size(); ++i) {
    names.push_back(fmt::format("x{}", i));
    json spec = input_types[i];
    spec["name"] = names.back();
    g["inputs"].push_back(spec);
  }
  g["nodes"] = {{{"name", "bad"}, {"op", op}, {"inputs", names}, {"outputs", {"y"}}, {"attrs", attrs}}};
  return ir::ParseGraph(g.dump());
}

class TrainOpsGolden : public ::testing::TestWithParam<size_t> {};

TEST_P(TrainOpsGolden, MatchesTorch) {
  const json& c = Golden().at("cases").at(GetParam());
  SCOPED_TRACE(c.at("name").get<std::string>());
  auto backend = cpu::CreateBackend();
  json types = json::array();
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < c.at("inputs").size(); ++i) {
    types.push_back(TypeOf(c.at("inputs")[i]));
    inputs[fmt::format("x{}", i)] = FromJson(c.at("inputs")[i]);
  }
  Executor ex(OneNodeGraph(c.at("op"), types), *backend);
  const json& want = c.at("output");
  EXPECT_TRUE(Near(ex.Run(inputs).at("y"), want, DefaultTolerance(DTypeOf(want))));
}

INSTANTIATE_TEST_SUITE_P(TrainOps, TrainOpsGolden, ::testing::ValuesIn(Indices("cases")),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           const std::string name = Golden().at("cases").at(info.param).at("name");
                           return fmt::format("c{}_{}", info.param, Sanitize(name));
                         });

// ---- optimizer trajectories ----------------------------------------------------------------------
// w (parameter), a and t (inputs): g = a * mse_grad(a w, t); w_next = <op>(w, g) in node "opt".
ir::Graph TrainingGraph(const std::string& op, const json& w, const json& attrs) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", {"w_next", "loss"}}});
  json a = TypeOf(w);
  a["name"] = "a";
  json t = TypeOf(w);
  t["name"] = "t";
  json p = TypeOf(w);
  p["name"] = "w";
  g["inputs"] = {a, t};
  g["params"] = json::array({p});  // a braced single json is copied, not wrapped, by clang
  g["nodes"] = json::array({
      {{"op", "math.mul"}, {"inputs", {"w", "a"}}, {"outputs", {"u"}}},
      {{"op", "train.loss.mse"}, {"inputs", {"u", "t"}}, {"outputs", {"loss"}}},
      {{"op", "train.grad.mse"}, {"inputs", {"u", "t"}}, {"outputs", {"gu"}}},
      {{"op", "math.mul"}, {"inputs", {"gu", "a"}}, {"outputs", {"g"}}},
      {{"name", "opt"}, {"op", op}, {"inputs", {"w", "g"}}, {"outputs", {"w_next"}}, {"attrs", attrs}},
  });
  return ir::ParseGraph(g.dump());
}

class TrainOpsTrajectory : public ::testing::TestWithParam<size_t> {};

TEST_P(TrainOpsTrajectory, MatchesTheOracleEveryStep) {
  const json& c = Golden().at("trajectories").at(GetParam());
  SCOPED_TRACE(c.at("name").get<std::string>());
  auto backend = cpu::CreateBackend();
  Executor ex(TrainingGraph(c.at("op"), c.at("w0"), c.at("attrs")), *backend);
  ex.LoadParams({{"w", FromJson(c.at("w0"))}});
  const std::map<std::string, Tensor> inputs = {{"a", FromJson(c.at("a"))}, {"t", FromJson(c.at("t"))}};
  const json& steps = c.at("steps");
  const Tolerance tol = DefaultTolerance(DTypeOf(c.at("w0")));
  for (size_t k = 0; k < steps.size(); ++k) {
    const Tensor w_next = ex.Run(inputs).at("w_next");
    ASSERT_TRUE(Near(w_next, steps[k], tol)) << "step " << k + 1;
    EXPECT_TRUE(w_next.SharesStorageWith(ex.params().tensors.at("w"))) << "not updated in place";
  }
  // Every declared state key exists; the step counter (when there is one) counted every run.
  const auto saved = ex.SaveParams();
  for (const std::string& key : Registry().Find(c.at("op").get<std::string>())->state) {
    EXPECT_TRUE(saved.contains("opt/" + key)) << key;
  }
  if (saved.contains("opt/step")) {
    EXPECT_EQ(saved.at("opt/step").dtype(), DType::Int64);
    EXPECT_EQ(saved.at("opt/step").shape(), (Shape{1}));
    EXPECT_EQ(saved.at("opt/step").GetDouble(0), static_cast<double>(steps.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(TrainOps, TrainOpsTrajectory, ::testing::ValuesIn(Indices("trajectories")),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           const std::string name = Golden().at("trajectories").at(info.param).at("name");
                           return fmt::format("t{}_{}", info.param, Sanitize(name));
                         });

TEST(TrainOps, EveryRegisteredOpHasAGoldenCase) {
  std::set<std::string> covered;
  for (const json& c : Golden().at("cases")) covered.insert(c.at("op").get<std::string>());
  for (const json& c : Golden().at("trajectories")) covered.insert(c.at("op").get<std::string>());
  int mine = 0;
  for (const std::string& id : Registry().Ids()) {
    if (!id.starts_with("train.")) continue;
    ++mine;
    EXPECT_TRUE(covered.contains(id)) << id << " has no golden case";
  }
  EXPECT_EQ(mine, 24);
}

// State tensor types, as `backplane op` exposes them: they depend only on the params and attrs.
TEST(TrainOps, LbfgsStateTypes) {
  auto backend = cpu::CreateBackend();
  const json w = {{"dtype", "f32"}, {"shape", {3, 2}}};
  Executor ex(TrainingGraph("train.optimizer.lbfgs", w, {{"history_size", 4}}), *backend);
  const Tensor ones = Tensor::FromDoubles(DType::Float32, {3, 2}, std::vector<double>(6, 1.0));
  ex.Run({{"a", ones}, {"t", ones}});
  const auto saved = ex.SaveParams();
  EXPECT_EQ(saved.at("opt/last_step").shape(), (Shape{3, 2}));
  EXPECT_EQ(saved.at("opt/s_history").shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(saved.at("opt/y_history").dtype(), DType::Float32);
  EXPECT_EQ(saved.at("opt/rho_history").dtype(), DType::Float64);
  EXPECT_EQ(saved.at("opt/rho_history").shape(), (Shape{4}));
  for (const char* key : {"opt/head", "opt/stored", "opt/step"}) EXPECT_EQ(saved.at(key).dtype(), DType::Int64) << key;
}

// ---- in-place semantics ------------------------------------------------------------------------------
TEST(TrainOps, ReadersOfAParameterSeeThePreUpdateValue) {
  auto backend = cpu::CreateBackend();
  // The reshape of w comes after the optimizer in the file; the verifier runs it first.
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "t", "dtype": "f64", "shape": [2, 2]}],
      "params": [{"name": "w", "dtype": "f64", "shape": [2, 2], "init": {"kind": "ones"}}],
      "nodes": [{"op": "train.grad.mse", "inputs": ["w", "t"], "outputs": ["g"]},
                {"op": "train.optimizer.sgd", "inputs": ["w", "g"], "outputs": ["w_next"], "attrs": {"lr": 0.5}},
                {"op": "shape.reshape", "inputs": ["w"], "outputs": ["w_seen"], "attrs": {"shape": [4]}}],
      "outputs": ["w_next", "w_seen"]})");
  Executor ex(g, *backend);
  const std::vector<double> t = {3, -1, 1, 0.5};
  std::vector<double> w = {1, 1, 1, 1};
  for (int run = 0; run < 3; ++run) {
    const auto out = ex.Run({{"t", Tensor::FromDoubles(DType::Float64, {2, 2}, t)}});
    EXPECT_EQ(out.at("w_seen").ToDoubles(), w) << "run " << run;
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5 * 2 * (w[i] - t[i]) / 4;  // sgd on the mse gradient
    EXPECT_EQ(out.at("w_next").ToDoubles(), w) << "run " << run;
    EXPECT_EQ(ex.params().tensors.at("w").ToDoubles(), w) << "run " << run;
  }
}

TEST(TrainOps, AComputedValueIsUpdatedInACopy) {
  auto backend = cpu::CreateBackend();
  const json f32 = {{"dtype", "f32"}, {"shape", {3}}};
  Executor ex(OneNodeGraph("train.optimizer.sgd", {f32, f32}, {{"lr", 0.5}}), *backend);
  const Tensor p = Tensor::FromDoubles(DType::Float32, {3}, std::vector<double>{1, 2, 3});
  const Tensor g = Tensor::FromDoubles(DType::Float32, {3}, std::vector<double>{2, -2, 4});
  const Tensor y = ex.Run({{"x0", p}, {"x1", g}}).at("y");
  EXPECT_EQ(y.ToDoubles(), (std::vector<double>{0, 3, 1}));
  EXPECT_EQ(p.ToDoubles(), (std::vector<double>{1, 2, 3}));
  EXPECT_FALSE(y.SharesStorageWith(p));
}

TEST(TrainOps, FrozenParametersAreNotUpdated) {
  auto backend = cpu::CreateBackend();
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "t", "dtype": "f32", "shape": [2]}],
      "params": [{"name": "enc.w", "dtype": "f32", "shape": [2], "init": {"kind": "ones"}},
                 {"name": "dec.w", "dtype": "f32", "shape": [2], "init": {"kind": "ones"}}],
      "nodes": [{"op": "model.freeze", "inputs": ["t"], "outputs": ["n"], "attrs": {"pattern": "enc"}},
                {"op": "train.grad.mse", "inputs": ["enc.w", "t"], "outputs": ["ge"]},
                {"op": "train.grad.mse", "inputs": ["dec.w", "t"], "outputs": ["gd"]},
                {"name": "opt_enc", "op": "train.optimizer.adam", "inputs": ["enc.w", "ge"], "outputs": ["enc_next"]},
                {"name": "opt_dec", "op": "train.optimizer.adam", "inputs": ["dec.w", "gd"], "outputs": ["dec_next"]}],
      "outputs": ["n", "enc_next", "dec_next"]})");
  Executor ex(g, *backend);
  const Tensor t = Tensor::FromDoubles(DType::Float32, {2}, std::vector<double>{3, -3});
  for (int run = 0; run < 2; ++run) {
    const auto out = ex.Run({{"t", t}});
    EXPECT_EQ(out.at("enc_next").ToDoubles(), (std::vector<double>{1, 1}));
    EXPECT_NE(out.at("dec_next").ToDoubles(), (std::vector<double>{1, 1}));
  }
  const auto saved = ex.SaveParams();
  EXPECT_EQ(saved.at("enc.w").ToDoubles(), (std::vector<double>{1, 1}));
  EXPECT_EQ(saved.at("opt_enc/step").GetDouble(0), 0.0);
  EXPECT_EQ(saved.at("opt_enc/m").ToDoubles(), (std::vector<double>{0, 0}));
  EXPECT_EQ(saved.at("opt_dec/step").GetDouble(0), 2.0);
}

// ---- state carried to another executor (as `backplane op` and --save-params do) ----------------------
TEST(TrainOps, SavedStateContinuesTheTrajectory) {
  const json& c = Golden().at("trajectories").at(0);  // adam f64
  ASSERT_EQ(c.at("op"), "train.optimizer.adam");
  auto backend = cpu::CreateBackend();
  const ir::Graph g = TrainingGraph(c.at("op"), c.at("w0"), c.at("attrs"));
  const std::map<std::string, Tensor> inputs = {{"a", FromJson(c.at("a"))}, {"t", FromJson(c.at("t"))}};
  Executor first(g, *backend);
  first.LoadParams({{"w", FromJson(c.at("w0"))}});
  for (int k = 0; k < 3; ++k) first.Run(inputs);
  std::map<std::string, Tensor> saved;
  for (const auto& [name, t] : first.SaveParams()) saved[name] = t.Clone();
  Executor second(g, *backend);
  second.LoadParams({{"w", saved.at("w")}});
  second.LoadState(saved);
  const Tensor w4 = second.Run(inputs).at("w_next");
  EXPECT_EQ(w4.ToDoubles(), first.Run(inputs).at("w_next").ToDoubles());
  EXPECT_TRUE(Near(w4, c.at("steps")[3], DefaultTolerance(DType::Float64)));
  EXPECT_EQ(second.SaveParams().at("opt/step").GetDouble(0), 4.0);
}

TEST(TrainOps, PrefilledStateOfTheWrongShapeIsRejected) {
  auto backend = cpu::CreateBackend();
  const json f32 = {{"dtype", "f32"}, {"shape", {3}}};
  Executor ex(OneNodeGraph("train.optimizer.adam", {f32, f32}), *backend);
  ex.LoadState({{"bad/m", Tensor(DType::Float32, {4})}});
  const Tensor z(DType::Float32, {3});
  EXPECT_TRUE(test::ThrowsError([&] { ex.Run({{"x0", z}, {"x1", z}}); }, ErrorCode::ShapeMismatch,
                                {"node 'bad'", "state 'm'", "f32[3]"}));
}

// ---- shape-rule errors -----------------------------------------------------------------------------
struct ErrorCase {
  std::string op;
  std::vector<std::pair<std::string, Shape>> inputs;  // dtype, shape
  json attrs;
  ErrorCode code;
  std::string fragment;
};

TEST(TrainOps, ShapeRuleErrorsNameTheNode) {
  const std::vector<ErrorCase> cases = {
      {"train.loss.mse", {{"f32", {2, 3}}, {"f32", {3}}}, {}, ErrorCode::ShapeMismatch, "shape [2, 3]"},
      {"train.loss.huber", {{"f32", {2}}, {"f64", {2}}}, {}, ErrorCode::UnsupportedDType, "f64"},
      {"train.loss.mae", {{"i32", {2}}, {"i32", {2}}}, {}, ErrorCode::UnsupportedDType, "i32"},
      {"train.loss.mse_grad", {{"f32", {4}}, {"f32", {2, 2}}}, {}, ErrorCode::ShapeMismatch, "shape [4]"},
      {"train.loss.cross_entropy", {{"f32", {4, 3}}, {"f32", {4}}}, {}, ErrorCode::UnsupportedDType, "i32"},
      {"train.loss.cross_entropy", {{"f32", {4, 3}}, {"i32", {3}}}, {}, ErrorCode::ShapeMismatch, "shape [4]"},
      {"train.loss.cross_entropy", {{"f32", {2, 4, 3}}, {"i32", {2}}}, {}, ErrorCode::ShapeMismatch,
       "[batch, classes]"},
      {"train.loss.cross_entropy_grad", {{"f32", {2, 0}}, {"i32", {2}}}, {}, ErrorCode::ShapeMismatch, "no classes"},
      {"train.optimizer.adam", {{"f32", {3}}, {"f32", {4}}}, {}, ErrorCode::ShapeMismatch, "shape [3]"},
      {"train.optimizer.sgd", {{"f32", {3}}, {"f16", {3}}}, {}, ErrorCode::UnsupportedDType, "f16"},
      {"train.optimizer.rmsprop", {{"i32", {3}}, {"i32", {3}}}, {}, ErrorCode::UnsupportedDType, "i32"},
      {"train.optimizer.adam", {{"f32", {3}}, {"f32", {3}}}, {{"lr", -0.1}}, ErrorCode::InvalidArgument, "'lr'"},
      {"train.optimizer.adamw", {{"f32", {3}}, {"f32", {3}}}, {{"beta1", 1.0}}, ErrorCode::InvalidArgument, "'beta1'"},
      {"train.optimizer.adadelta", {{"f32", {3}}, {"f32", {3}}}, {{"rho", -0.5}}, ErrorCode::InvalidArgument, "'rho'"},
      {"train.optimizer.sgd", {{"f32", {3}}, {"f32", {3}}}, {{"dampening", 1.5}}, ErrorCode::InvalidArgument,
       "'dampening'"},
      {"train.optimizer.sgd", {{"f32", {3}}, {"f32", {3}}}, {{"nesterov", true}}, ErrorCode::InvalidArgument,
       "'nesterov'"},
      {"train.optimizer.lbfgs", {{"f32", {3}}, {"f32", {3}}}, {{"history_size", 0}}, ErrorCode::InvalidArgument,
       "'history_size'"},
      {"train.optimizer.lars", {{"f32", {3}}, {"f32", {3}}}, {{"eta", "inf"}}, ErrorCode::InvalidArgument, "'eta'"},
  };
  auto backend = cpu::CreateBackend();
  for (const ErrorCase& c : cases) {
    json types = json::array();
    std::map<std::string, Tensor> values;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      types.push_back({{"dtype", c.inputs[i].first}, {"shape", c.inputs[i].second}});
      values[fmt::format("x{}", i)] = Tensor(*DTypeFromName(c.inputs[i].first), c.inputs[i].second);
    }
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          Executor ex(OneNodeGraph(c.op, types, c.attrs.is_null() ? json::object() : c.attrs), *backend);
          ex.Run(values);
        },
        c.code, {"node 'bad'", c.op, c.fragment}))
        << c.op << " " << c.attrs.dump();
  }
}

}  // namespace
}  // namespace backplane::runtime
