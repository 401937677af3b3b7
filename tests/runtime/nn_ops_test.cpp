// Graph-level attention, masking, positional, embedding, convolution, pooling and projection ops
// through the executor, against the goldens of tests/golden/gen_nn_ops.py (PyTorch float64 and
// explicit NumPy formulas on inputs rounded to the dtype): one single-node graph per golden case.
// Also closed-form checks of the causal mask (its -Inf entries are not JSON), shape-rule errors
// naming the node, and the kernel errors that only the values reveal.
//
// Tolerance: DefaultTolerance of the output dtype, relative to |want|, or to the golden's "mag"
// (the sum of the terms' magnitudes) for ops that round twice (projection: matmul, then bias).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
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
    std::ifstream in(test::GoldenPath("nn_ops.json"));
    if (!in.good()) throw std::runtime_error("missing golden file nn_ops.json");
    return json::parse(in);
  }();
  return data;
}

std::string InputName(size_t i) { return fmt::format("x{}", i); }

DType DTypeOf(const json& t) { return *DTypeFromName(t.at("dtype").get<std::string>()); }

// A one-node graph named "bad" with inputs x0, x1, ... (a null input is an omitted optional
// one) and the given outputs.
ir::Graph OneNodeGraph(const std::string& op, const json& inputs, const json& attrs,
                       const std::vector<std::string>& outputs = {"y"}) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", outputs}});
  g["inputs"] = json::array();
  json names = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(inputs[i].is_null() ? "" : InputName(i));
    if (inputs[i].is_null()) continue;
    g["inputs"].push_back({{"name", InputName(i)}, {"dtype", inputs[i].at("dtype")}, {"shape", inputs[i].at("shape")}});
  }
  g["nodes"] = json::array();
  g["nodes"].push_back(
      json::object({{"name", "bad"}, {"op", op}, {"inputs", names}, {"outputs", outputs}, {"attrs", attrs}}));
  return ir::ParseGraph(g.dump());
}

std::map<std::string, Tensor> Inputs(const json& inputs) {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto values = inputs[i].at("values").get<std::vector<double>>();
    out[InputName(i)] = Tensor::FromDoubles(DTypeOf(inputs[i]), inputs[i].at("shape").get<Shape>(), values);
    EXPECT_EQ(out[InputName(i)].ToDoubles(), values) << "golden input " << i << " not exact";
  }
  return out;
}

::testing::AssertionResult Matches(const Tensor& got, const json& want) {
  if (got.dtype() != DTypeOf(want)) {
    return ::testing::AssertionFailure() << "dtype " << DTypeName(got.dtype()) << ", want " << want.at("dtype");
  }
  if (got.shape() != want.at("shape").get<Shape>()) {
    return ::testing::AssertionFailure() << "shape " << ShapeToString(got.shape()) << ", want " << want.at("shape");
  }
  const Tolerance tol = DefaultTolerance(got.dtype());
  const auto values = want.at("values").get<std::vector<double>>();
  const auto mag = want.contains("mag") ? want.at("mag").get<std::vector<double>>() : std::vector<double>{};
  for (size_t i = 0; i < values.size(); ++i) {
    const double g = got.GetDouble(static_cast<int64_t>(i));
    const double scale = std::max(std::fabs(values[i]), mag.empty() ? 0.0 : mag[i]);
    if (!(std::fabs(g - values[i]) <= tol.abs + tol.rel * scale)) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

class NnOpsGolden : public ::testing::TestWithParam<size_t> {};

TEST_P(NnOpsGolden, MatchesOracle) {
  const json& c = Golden().at("cases").at(GetParam());
  SCOPED_TRACE(c.at("name").get<std::string>());
  std::vector<std::string> names;
  for (const json& want : c.at("outputs")) names.push_back(want.at("name"));
  auto backend = cpu::CreateBackend();
  Executor ex(OneNodeGraph(c.at("op"), c.at("inputs"), c.at("attrs"), names), *backend);
  const auto got = ex.Run(Inputs(c.at("inputs")));
  for (const json& want : c.at("outputs")) EXPECT_TRUE(Matches(got.at(want.at("name")), want)) << want.at("name");
}

std::vector<size_t> CaseIndices() {
  std::vector<size_t> out(Golden().at("cases").size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = fmt::format("c{}_", info.param);
  for (char ch : Golden().at("cases").at(info.param).at("name").get<std::string>()) {
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(NnOps, NnOpsGolden, ::testing::ValuesIn(CaseIndices()), CaseName);

bool IsNnOp(const std::string& id) {
  for (const char* prefix :
       {"attention.", "masking.", "positional.", "embedding.", "convolution.", "pooling.", "projection."}) {
    if (id.starts_with(prefix)) return true;
  }
  return false;
}

TEST(NnOps, EveryRegisteredOpHasAGoldenCase) {
  std::set<std::string> covered = {"masking.causal"};  // closed form below
  for (const json& c : Golden().at("cases")) covered.insert(c.at("op").get<std::string>());
  int mine = 0;
  for (const std::string& id : Registry().Ids()) {
    if (!IsNnOp(id)) continue;
    ++mine;
    EXPECT_TRUE(covered.contains(id)) << id << " has no golden case";
  }
  EXPECT_EQ(mine, 24);
}

// ---- the causal mask, alone and applied to scores ------------------------------------------------------
constexpr double kInf = std::numeric_limits<double>::infinity();

// -Inf where key k is after query q's position q + (sk - sq) (bottom-right), else 0.
double CausalEntry(int64_t q, int64_t k, int64_t sq, int64_t sk) { return k > q + sk - sq ? -kInf : 0.0; }

TEST(NnOps, CausalMaskIsBottomRightAlignedAndReadsOnlyTheLastTwoDims) {
  auto backend = cpu::CreateBackend();
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    for (const Shape& shape : {Shape{2, 3, 5}, Shape{4, 2}, Shape{3, 3}}) {
      const json in = json::array({json{{"dtype", DTypeName(dtype)}, {"shape", shape}}});
      Executor ex(OneNodeGraph("masking.causal", in, json::object()), *backend);
      const Tensor y = ex.Run({{"x0", Tensor(dtype, shape)}}).at("y");
      const int64_t sq = shape[shape.size() - 2], sk = shape.back();
      ASSERT_EQ(y.shape(), (Shape{sq, sk}));
      ASSERT_EQ(y.dtype(), dtype);
      for (int64_t q = 0; q < sq; ++q) {
        for (int64_t k = 0; k < sk; ++k) EXPECT_EQ(y.GetDouble(q * sk + k), CausalEntry(q, k, sq, sk)) << q << "," << k;
      }
    }
  }
}

// scores [2, 3, 4] -> masking.causal -> masking.apply (mask broadcast over the batch).
TEST(NnOps, CausalMaskAppliedToBatchedScores) {
  const std::string graph = R"({"format": "backplane.graph", "version": 1,
    "inputs": [{"name": "s", "dtype": "f32", "shape": [2, 3, 4]}],
    "nodes": [{"name": "mask", "op": "masking.causal", "inputs": ["s"], "outputs": ["m"]},
              {"name": "apply", "op": "masking.apply", "inputs": ["s", "m"], "outputs": ["y"]}],
    "outputs": ["y"]})";
  std::vector<double> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i) - 3.0;
  auto backend = cpu::CreateBackend();
  Executor ex(ir::ParseGraph(graph), *backend);
  const Tensor y = ex.Run({{"s", Tensor::FromDoubles(DType::Float32, {2, 3, 4}, values)}}).at("y");
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t q = 0; q < 3; ++q) {
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t i = (b * 3 + q) * 4 + k;
        EXPECT_EQ(y.GetDouble(i), values[static_cast<size_t>(i)] + CausalEntry(q, k, 3, 4)) << i;
      }
    }
  }
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

// Builds and runs a one-node graph of zero-filled inputs; the error must name the node and op.
::testing::AssertionResult FailsNamingTheNode(const ErrorCase& c) {
  json inputs = json::array();
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].dtype.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    inputs.push_back(json::object({{"dtype", c.inputs[i].dtype}, {"shape", c.inputs[i].shape}}));
    values[InputName(i)] = Tensor(*DTypeFromName(c.inputs[i].dtype), c.inputs[i].shape);
  }
  const int outputs = c.op == "projection.fused_qkv" ? 3 : 1;
  const std::vector<std::string> names =
      outputs == 3 ? std::vector<std::string>{"q", "k", "v"} : std::vector<std::string>{"y"};
  auto backend = cpu::CreateBackend();
  return test::ThrowsError(
      [&] {
        Executor ex(OneNodeGraph(c.op, inputs, c.attrs.is_null() ? json::object() : c.attrs, names), *backend);
        ex.Run(values);
      },
      c.code, {"node 'bad'", c.op, c.fragment});
}

TEST(NnOps, ShapeRuleErrorsNameTheNode) {
  const auto f32 = [](Shape s) { return In{"f32", std::move(s)}; };
  const auto i32 = [](Shape s) { return In{"i32", std::move(s)}; };
  const In none{};
  const json heads = {{"num_heads", 4}, {"head_dim", 8}};
  const json gqa = {{"num_heads", 4}, {"num_kv_heads", 2}, {"head_dim", 8}};
  const ErrorCode shape = ErrorCode::ShapeMismatch;
  const ErrorCode arg = ErrorCode::InvalidArgument;
  const ErrorCode dtype = ErrorCode::UnsupportedDType;
  // clang-format off
  const std::vector<ErrorCase> cases = {
      {"attention.sdpa", {f32({2, 3, 4}), f32({2, 5, 3}), f32({2, 5, 2})}, {}, shape, "depth"},
      {"attention.sdpa", {f32({2, 3, 4}), f32({3, 5, 4}), f32({3, 5, 2})}, {}, shape, "leading dims"},
      {"attention.sdpa", {f32({3, 4}), f32({5, 4}), f32({6, 2})}, {}, shape, "key count"},
      {"attention.sdpa", {f32({3, 4}), In{"f16", {5, 4}}, f32({5, 2})}, {}, dtype, "f16"},
      {"attention.sdpa", {f32({4}), f32({5, 4}), f32({5, 2})}, {}, shape, "rank >= 2"},
      {"attention.mqa", {f32({1, 4, 3, 8}), f32({1, 2, 3, 8}), f32({1, 2, 3, 8})}, heads, shape, "one shared"},
      {"attention.mqa", {f32({1, 4, 3, 8}), f32({1, 1, 3, 8}), f32({1, 1, 3, 8})},
       {{"num_heads", 2}, {"head_dim", 8}}, arg, "'num_heads'"},
      {"attention.mqa", {f32({1, 4, 3, 8}), f32({1, 1, 3, 8}), f32({1, 1, 3, 8})},
       {{"num_heads", 4}, {"head_dim", 4}}, arg, "'head_dim'"},
      {"attention.mqa", {f32({4, 3, 8}), f32({1, 3, 8}), f32({1, 3, 8})}, heads, shape, "rank 4"},
      {"attention.gqa", {f32({1, 4, 3, 8}), f32({1, 3, 3, 8}), f32({1, 3, 3, 8})}, gqa, arg, "'num_kv_heads'"},
      {"attention.gqa", {f32({1, 4, 3, 8}), f32({1, 3, 3, 8}), f32({1, 3, 3, 8})},
       {{"num_heads", 4}, {"num_kv_heads", 3}, {"head_dim", 8}}, shape, "divisor"},
      {"attention.gqa", {f32({1, 4, 3, 8}), f32({1, 2, 3, 8}), f32({1, 2, 3, 4})}, gqa, shape,
       "input 2 must have shape"},
      {"attention.gqa", {f32({2, 4, 3, 8}), f32({1, 2, 3, 8}), f32({1, 2, 3, 8})}, gqa, shape, "batch"},
      {"attention.gqa", {f32({1, 4, 3, 8}), f32({1, 2, 3, 8}), f32({1, 2, 3, 8})},
       {{"num_heads", 4}, {"num_kv_heads", 2}, {"head_dim", 8}, {"alibi_slope", -0.5}}, arg, "'alibi_slope'"},
      {"attention.gqa", {f32({1, 4, 3, 8}), f32({1, 2, 3, 8}), f32({1, 2, 3, 8})},
       {{"num_heads", 4}, {"num_kv_heads", 2}, {"head_dim", 8}, {"window", -1}}, arg, "'window'"},
      {"attention.sliding_window", {f32({1, 2, 3, 8}), f32({1, 2, 3, 8}), f32({1, 2, 3, 8})}, {{"window", 0}}, arg,
       "'window'"},
      {"attention.sliding_window", {f32({1, 2, 3, 8}), f32({1, 2, 3, 4}), f32({1, 2, 3, 4})}, {}, shape, "head dim"},
      {"masking.apply", {f32({2, 3}), f32({2, 2, 3})}, {}, shape, "does not broadcast to the logits"},
      {"masking.apply", {f32({2, 3}), In{"f64", {3}}}, {}, dtype, "f64"},
      {"masking.causal", {f32({4})}, {}, shape, "rank >= 2"},
      {"masking.causal", {i32({2, 2})}, {}, dtype, "i32"},
      {"positional.rope", {f32({2, 3, 8})}, {{"head_dim", 4}}, arg, "'head_dim'"},
      {"positional.rope", {f32({2, 3, 5})}, {{"head_dim", 5}}, shape, "even"},
      {"positional.rope", {f32({3, 8})}, {{"head_dim", 8}}, shape, "rank >= 3"},
      {"positional.rope", {f32({2, 3, 8})}, {{"head_dim", 8}, {"base", 0.0}}, arg, "'base'"},
      {"positional.rope", {f32({2, 3, 8})}, {{"head_dim", 8}, {"position_start", -1}}, arg, "'position_start'"},
      {"positional.alibi", {f32({3, 4}), f32({2})}, {}, shape, "shape [1]"},
      {"positional.alibi", {f32({3, 4}), In{"bf16", {1}}}, {}, dtype, "bf16"},
      {"positional.rope_pairs", {f32({2, 5}), f32({2}), f32({2})}, {}, shape, "even"},
      {"positional.rope_pairs", {f32({2, 6}), f32({3}), f32({2})}, {}, shape, "shape [3]"},
      {"embedding.token", {f32({3}), f32({5, 4})}, {}, dtype, "f32"},
      {"embedding.token", {i32({3}), f32({20})}, {}, shape, "rank 2"},
      {"embedding.token", {i32({3}), f32({5, 4})}, {{"vocab_size", 6}}, arg, "'vocab_size'"},
      {"embedding.token", {i32({3}), f32({5, 4})}, {{"d_model", 3}}, arg, "'d_model'"},
      {"embedding.bag", {i32({4}), i32({2}), f32({5, 4})}, {{"mode", "mean"}}, arg, "'mode'"},
      {"embedding.bag", {i32({2, 2}), i32({2}), f32({5, 4})}, {}, shape, "rank 1"},
      {"convolution.conv1d", {f32({1, 2, 5}), f32({3, 2, 2}), f32({3})}, {{"groups", 2}}, arg, "'groups'"},
      {"convolution.conv1d", {f32({1, 2, 5}), f32({3, 4, 2}), f32({3})}, {}, shape, "input channels"},
      {"convolution.conv1d", {f32({1, 2, 5}), f32({3, 2, 2}), f32({4})}, {}, shape, "shape [3]"},
      {"convolution.conv1d", {f32({1, 2, 5}), f32({3, 2, 4}), f32({3})}, {{"dilation", 2}}, shape, "dilated kernel"},
      {"convolution.conv1d", {f32({1, 2, 5}), f32({3, 2, 2}), f32({3})}, {{"stride", 0}}, arg, "'stride'"},
      {"convolution.conv2d", {f32({1, 2, 5, 5}), f32({3, 2, 2, 2}), f32({3})}, {{"pad_w", -1}}, arg, "'pad_w'"},
      {"convolution.conv2d", {f32({2, 5, 5}), f32({3, 2, 2, 2}), f32({3})}, {}, shape, "rank 4"},
      {"convolution.conv2d", {f32({1, 2, 5, 5}), In{"f64", {3, 2, 2, 2}}, f32({3})}, {}, dtype, "f64"},
      {"convolution.conv3d", {f32({1, 2, 3, 3, 3}), f32({3, 2, 2, 2, 2}), f32({3})}, {{"dil_d", 0}}, arg, "'dil_d'"},
      {"convolution.conv3d", {f32({1, 2, 3, 3, 3}), f32({3, 2, 2, 2, 2}), f32({3})}, {{"groups", 3}}, arg, "'groups'"},
      {"convolution.conv_transpose2d", {f32({1, 2, 3, 3}), f32({2, 4, 2, 2}), f32({3})}, {}, shape, "shape [4]"},
      {"convolution.conv_transpose2d", {f32({1, 2, 3, 3}), f32({3, 4, 2, 2}), f32({4})}, {}, shape, "input channels"},
      {"convolution.conv_transpose2d", {f32({1, 2, 3, 3}), f32({2, 4, 2, 2}), f32({4})}, {{"out_pad_h", 1}}, arg,
       "'out_pad_h'"},
      {"convolution.conv_transpose2d", {f32({1, 2, 1, 1}), f32({2, 4, 1, 1}), f32({4})}, {{"pad_h", 1}}, shape, "< 1"},
      {"pooling.max_pool2d", {f32({1, 1, 4, 4})}, {{"kernel_h", 2}, {"kernel_w", 2}, {"pad_h", 2}}, arg, "'pad_h'"},
      {"pooling.max_pool2d", {f32({1, 1, 4, 4})}, {{"kernel_h", 0}, {"kernel_w", 2}}, arg, "'kernel_h'"},
      {"pooling.avg_pool2d", {f32({1, 1, 2, 4})}, {{"kernel_h", 3}, {"kernel_w", 2}}, shape, "smaller than the kernel"},
      {"pooling.avg_pool2d", {f32({4, 4})}, {{"kernel_h", 2}, {"kernel_w", 2}}, shape, "rank 4"},
      {"pooling.adaptive_avg_pool2d", {f32({1, 1, 4, 4})}, {{"out_h", 0}, {"out_w", 2}}, arg, "'out_h'"},
      {"pooling.adaptive_max_pool2d", {f32({1, 1, 0, 4})}, {{"out_h", 2}, {"out_w", 2}}, shape, "empty plane"},
      {"projection.linear", {f32({2, 5}), f32({3, 4})}, {}, shape, "x's last dim"},
      {"projection.linear", {f32({2, 4}), f32({3, 4}), f32({4})}, {}, shape, "shape [3]"},
      {"projection.linear", {f32({2, 4}), f32({3, 4})}, {{"out_features", 4}}, arg, "'out_features'"},
      {"projection.linear", {f32({}), f32({3, 4})}, {}, shape, "rank >= 1"},
      {"projection.linear", {In{"i32", {2, 4}}, f32({3, 4})}, {}, dtype, "i32"},
      {"projection.fused_qkv", {f32({2, 4}), f32({5, 4})}, {}, shape, "3 D"},
      {"projection.fused_qkv", {f32({2, 4}), f32({6, 4}), none}, {{"d_k", 3}}, arg, "'d_k'"},
  };
  // clang-format on
  for (const ErrorCase& c : cases) EXPECT_TRUE(FailsNamingTheNode(c)) << c.op << " " << c.attrs.dump();
}

// Empty batches, rows and spatial extents run and give empty outputs of the inferred shape.
TEST(NnOps, ZeroSizedInputsGiveEmptyOutputs) {
  struct Case {
    std::string op;
    std::vector<Shape> inputs;  // f32
    json attrs;
    Shape want;
  };
  const std::vector<Case> cases = {
      {"attention.sdpa", {{0, 3, 4}, {0, 5, 4}, {0, 5, 2}}, {}, {0, 3, 2}},
      {"attention.gqa", {{0, 2, 3, 4}, {0, 1, 3, 4}, {0, 1, 3, 4}},
       {{"num_heads", 2}, {"num_kv_heads", 1}, {"head_dim", 4}}, {0, 2, 3, 4}},
      {"positional.rope", {{0, 3, 2, 4}}, {{"head_dim", 4}}, {0, 3, 2, 4}},
      {"convolution.conv2d", {{1, 2, 0, 4}, {3, 2, 2, 2}, {3}}, {}, {1, 3, 0, 3}},
      {"pooling.max_pool2d", {{2, 1, 0, 0}}, {{"kernel_h", 2}, {"kernel_w", 2}}, {2, 1, 0, 0}},
      {"projection.linear", {{0, 4}, {3, 4}, {3}}, {}, {0, 3}},
  };
  auto backend = cpu::CreateBackend();
  for (const Case& c : cases) {
    json inputs = json::array();
    std::map<std::string, Tensor> values;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      inputs.push_back(json::object({{"dtype", "f32"}, {"shape", c.inputs[i]}}));
      values[InputName(i)] = Tensor(DType::Float32, c.inputs[i]);
    }
    Executor ex(OneNodeGraph(c.op, inputs, c.attrs.is_null() ? json::object() : c.attrs), *backend);
    EXPECT_EQ(ex.Run(values).at("y").shape(), c.want) << c.op;
  }
}

// Errors only the values reveal come from the kernel at run time.
TEST(NnOps, KernelErrorsOnValues) {
  auto backend = cpu::CreateBackend();
  const json token = json::array({json{{"dtype", "i32"}, {"shape", {2}}}, json{{"dtype", "f32"}, {"shape", {3, 2}}}});
  Executor ex(OneNodeGraph("embedding.token", token, json::object()), *backend);
  const Tensor ids = Tensor::FromDoubles(DType::Int32, {2}, std::vector<double>{1, 3});
  EXPECT_TRUE(test::ThrowsError(
      [&] {
        ex.Run({{"x0", ids}, {"x1", Tensor(DType::Float32, {3, 2})}});
      },
      ErrorCode::InvalidArgument, {"'indices'"}));

  const json alibi = json::array({json{{"dtype", "f32"}, {"shape", {2, 2}}}, json{{"dtype", "f32"}, {"shape", {1}}}});
  Executor ex2(OneNodeGraph("positional.alibi", alibi, json::object()), *backend);
  const Tensor slope = Tensor::FromDoubles(DType::Float32, {1}, std::vector<double>{-0.5});
  EXPECT_TRUE(test::ThrowsError(
      [&] {
        ex2.Run({{"x0", Tensor(DType::Float32, {2, 2})}, {"x1", slope}});
      },
      ErrorCode::InvalidArgument, {"'slope'"}));
}

}  // namespace
}  // namespace backplane::runtime
