// Graph-level shape ops through the executor, against the goldens of tests/golden/gen_shape_ops.py
// (NumPy indexing; torch.nn.functional.interpolate for nearest upsampling): one single-node graph
// per golden case. Also the view_as_heads / merge_heads round trip and shape-rule errors naming
// the node. Shape ops move values without converting them, so every comparison is exact.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
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
    std::ifstream in(test::GoldenPath("shape_ops.json"));
    if (!in.good()) throw std::runtime_error("missing golden file shape_ops.json");
    return json::parse(in);
  }();
  return data;
}

DType DTypeOf(const json& t) { return *DTypeFromName(t.at("dtype").get<std::string>()); }

Tensor FromJson(const json& t) {
  return Tensor::FromDoubles(DTypeOf(t), t.at("shape").get<Shape>(), t.at("values").get<std::vector<double>>());
}

// A one-node graph named "bad": inputs x0, x1, ... with the given types, outputs y0, y1, ...
ir::Graph OneNodeGraph(const std::string& op, const json& input_types, size_t outputs, const json& attrs) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}});
  json names = json::array();
  json outs = json::array();
  g["inputs"] = json::array();
  for (size_t i = 0; i < input_types.size(); ++i) {
    names.push_back(fmt::format("x{}", i));
    const json& type = input_types[i];
    g["inputs"].push_back({{"name", names.back()}, {"dtype", type.at("dtype")}, {"shape", type.at("shape")}});
  }
  for (size_t o = 0; o < outputs; ++o) outs.push_back(fmt::format("y{}", o));
  g["nodes"] = {{{"name", "bad"}, {"op", op}, {"inputs", names}, {"outputs", outs}, {"attrs", attrs}}};
  g["outputs"] = outs;
  return ir::ParseGraph(g.dump());
}

::testing::AssertionResult Exactly(const Tensor& got, const json& want) {
  if (got.dtype() != DTypeOf(want) || got.shape() != want.at("shape").get<Shape>()) {
    return ::testing::AssertionFailure() << "got " << DTypeName(got.dtype()) << ShapeToString(got.shape()) << ", want "
                                         << want.at("dtype") << want.at("shape");
  }
  const auto values = want.at("values").get<std::vector<double>>();
  if (got.ToDoubles() != values) return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

class ShapeOpsGolden : public ::testing::TestWithParam<size_t> {};

TEST_P(ShapeOpsGolden, MatchesNumPy) {
  const json& c = Golden().at("cases").at(GetParam());
  SCOPED_TRACE(c.at("name").get<std::string>());
  auto backend = cpu::CreateBackend();
  const json& outputs = c.at("outputs");
  Executor ex(OneNodeGraph(c.at("op"), c.at("inputs"), outputs.size(), c.at("attrs")), *backend);
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < c.at("inputs").size(); ++i) inputs[fmt::format("x{}", i)] = FromJson(c.at("inputs")[i]);
  const auto got = ex.Run(inputs);
  for (size_t o = 0; o < outputs.size(); ++o) {
    EXPECT_TRUE(Exactly(got.at(fmt::format("y{}", o)), outputs[o])) << "y" << o;
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

INSTANTIATE_TEST_SUITE_P(ShapeOps, ShapeOpsGolden, ::testing::ValuesIn(CaseIndices()), CaseName);

TEST(ShapeOps, EveryRegisteredOpHasAGoldenCase) {
  std::set<std::string> covered;
  for (const json& c : Golden().at("cases")) covered.insert(c.at("op").get<std::string>());
  int mine = 0;
  for (const std::string& id : Registry().Ids()) {
    if (!id.starts_with("shape.")) continue;
    ++mine;
    EXPECT_TRUE(covered.contains(id)) << id << " has no golden case";
  }
  EXPECT_EQ(mine, 9);
}

TEST(ShapeOps, HeadsRoundTripIsTheIdentity) {
  auto backend = cpu::CreateBackend();
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch", 5, 12]}],
      "nodes": [{"op": "shape.view_as_heads", "inputs": ["x"], "outputs": ["h"], "attrs": {"num_heads": 3}},
                {"op": "shape.merge_heads", "inputs": ["h"], "outputs": ["y"]}],
      "outputs": ["h", "y"]})");
  Executor ex(g, *backend);
  std::vector<double> values(2 * 5 * 12);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  const Tensor x = Tensor::FromDoubles(DType::Float32, {2, 5, 12}, values);
  const auto out = ex.Run({{"x", x}});
  EXPECT_EQ(out.at("h").shape(), (Shape{2, 3, 5, 4}));
  // h[b, h, s, d] = x[b, s, h*4 + d]
  EXPECT_EQ(out.at("h").GetDouble(((1 * 3 + 2) * 5 + 3) * 4 + 1), x.GetDouble((1 * 5 + 3) * 12 + 2 * 4 + 1));
  EXPECT_EQ(out.at("y").ToDoubles(), values);
}

// ---- shape-rule errors -------------------------------------------------------------------------------
struct ErrorCase {
  std::string op;
  std::vector<std::pair<std::string, Shape>> inputs;  // dtype, shape
  size_t outputs;
  json attrs;
  ErrorCode code;
  std::string fragment;
};

TEST(ShapeOps, ShapeRuleErrorsNameTheNode) {
  const std::vector<ErrorCase> cases = {
      {"shape.reshape", {{"f32", {2, 3}}}, 1, {{"shape", {-1, -1}}}, ErrorCode::InvalidArgument, "at most one -1"},
      {"shape.reshape", {{"f32", {2, 3}}}, 1, {{"shape", {4, 2}}}, ErrorCode::ShapeMismatch, "has 8 elements"},
      {"shape.reshape", {{"f32", {2, 3}}}, 1, {{"shape", {4, -1}}}, ErrorCode::ShapeMismatch, "cannot infer"},
      {"shape.reshape", {{"f32", {6}}}, 1, {{"shape", {3, 0}}}, ErrorCode::InvalidArgument, "'shape'"},
      {"shape.reshape", {{"f32", {6}}}, 1, {{"shape", {-2, -3}}}, ErrorCode::InvalidArgument, ">= -1"},
      {"shape.transpose", {{"f32", {2, 3}}}, 1, {{"perm", {0, 0}}}, ErrorCode::InvalidArgument, "'perm'"},
      {"shape.transpose", {{"f32", {2, 3}}}, 1, {{"perm", {0, 1, 2}}}, ErrorCode::InvalidArgument, "permutation"},
      {"shape.concat", {{"f32", {2, 3}}, {"f64", {2, 3}}}, 1, json::object(), ErrorCode::UnsupportedDType, "f64"},
      {"shape.concat", {{"f32", {2, 3}}, {"f32", {3, 3}}}, 1, {{"axis", -1}}, ErrorCode::ShapeMismatch,
       "outside axis 1"},
      {"shape.concat", {{"f32", {2, 3}}, {"f32", {2, 3, 1}}}, 1, json::object(), ErrorCode::ShapeMismatch, "differs"},
      {"shape.concat", {{"f32", {2, 3}}, {"f32", {2, 3}}}, 1, {{"axis", 2}}, ErrorCode::InvalidArgument, "'axis'"},
      {"shape.concat", {{"f32", {}}, {"f32", {}}}, 1, json::object(), ErrorCode::ShapeMismatch, "rank >= 1"},
      {"shape.split", {{"f32", {2, 5}}}, 2, {{"axis", 1}, {"sizes", {2, 2}}}, ErrorCode::InvalidArgument,
       "adding up to"},
      {"shape.split", {{"f32", {2, 6}}}, 2, {{"axis", -1}, {"count", 3}}, ErrorCode::InvalidArgument,
       "names 2 outputs"},
      {"shape.split", {{"f32", {2, 5}}}, 2, {{"axis", 1}}, ErrorCode::ShapeMismatch, "2 equal parts"},
      {"shape.split", {{"f32", {2, 6}}}, 2, {{"count", -1}}, ErrorCode::InvalidArgument, "'count'"},
      {"shape.split", {{"f32", {4}}}, 2, {{"sizes", {2, 2}}, {"count", 2}}, ErrorCode::InvalidArgument, "'count'"},
      {"shape.upsample_nearest2d", {{"f32", {1, 1, 2, 2}}}, 1, {{"scale_h", 2.0}, {"out_h", 4}, {"scale_w", 2.0}},
       ErrorCode::InvalidArgument, "one way per axis"},
      {"shape.upsample_nearest2d", {{"f32", {1, 1, 2, 2}}}, 1, {{"scale_h", 2.0}}, ErrorCode::InvalidArgument,
       "'scale_w'"},
      {"shape.upsample_nearest2d", {{"f32", {1, 2, 2}}}, 1, {{"scale_h", 2.0}, {"scale_w", 2.0}},
       ErrorCode::ShapeMismatch, "rank 4"},
      {"shape.upsample_nearest2d", {{"f32", {1, 1, 0, 2}}}, 1, {{"out_h", 2}, {"scale_w", 2.0}},
       ErrorCode::ShapeMismatch, "empty spatial axis"},
      {"shape.upsample_nearest2d", {{"f32", {1, 1, 2, 2}}}, 1, {{"scale_h", -1.0}, {"scale_w", 2.0}},
       ErrorCode::InvalidArgument, ">= 0"},
      {"shape.view_as_heads", {{"f32", {2, 3, 8}}}, 1, {{"num_heads", 3}}, ErrorCode::ShapeMismatch, "not divisible"},
      {"shape.view_as_heads", {{"f32", {2, 3, 8}}}, 1, {{"num_heads", 0}}, ErrorCode::InvalidArgument, "'num_heads'"},
      {"shape.view_as_heads", {{"f32", {3, 8}}}, 1, {{"num_heads", 2}}, ErrorCode::ShapeMismatch, "rank 3"},
      {"shape.merge_heads", {{"f32", {2, 3, 8}}}, 1, json::object(), ErrorCode::ShapeMismatch, "rank 4"},
      {"shape.last_token", {{"f32", {4}}}, 1, json::object(), ErrorCode::ShapeMismatch, "rank >= 2"},
      {"shape.last_token", {{"f32", {2, 0, 3}}}, 1, json::object(), ErrorCode::ShapeMismatch, "no last token"},
      {"shape.slice", {{"f32", {4, 5}}}, 1, {{"starts", {0}}, {"ends", {2}}, {"steps", {0}}},
       ErrorCode::InvalidArgument, "'steps'"},
      {"shape.slice", {{"f32", {4, 5}}}, 1, {{"starts", {0, 1}}, {"ends", {2}}}, ErrorCode::InvalidArgument, "'ends'"},
      {"shape.slice", {{"f32", {4, 5}}}, 1, {{"starts", {0}}, {"ends", {2}}, {"axes", {2}}}, ErrorCode::InvalidArgument,
       "'axes'"},
      {"shape.slice", {{"f32", {4, 5}}}, 1, {{"starts", {0, 0}}, {"ends", {2, 2}}, {"axes", {1, -1}}},
       ErrorCode::InvalidArgument, "distinct"},
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
          Executor ex(OneNodeGraph(c.op, types, c.outputs, c.attrs), *backend);
          ex.Run(values);
        },
        c.code, {"node 'bad'", c.op, c.fragment}))
        << c.op << " " << c.attrs.dump();
  }
}

}  // namespace
}  // namespace backplane::runtime
