// Graph-level TensorOps elementwise lowerings through the executor: NumPy broadcasting of the
// comparisons, logic, tensor.where (three-way), tensor.pow and tensor.mod; bool (bit-packed)
// outputs; tensor.cast's `to`; the roundings and math.erf; the Trig ops (closed forms); the bit
// shifts (broadcast, shifts past the width); errors naming the node or the method.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane::runtime {
namespace {

using nlohmann::json;
using test::ThrowsError;

Backend& Cpu() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return *backend;
}

ir::Graph OneNode(const std::string& op, const std::vector<std::pair<std::string, Shape>>& inputs,
                  const json& attrs) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", json::array({"y"})}});
  g["inputs"] = json::array();
  json names = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(fmt::format("x{}", i));
    g["inputs"].push_back(
        {{"name", fmt::format("x{}", i)}, {"dtype", inputs[i].first}, {"shape", inputs[i].second}});
  }
  g["nodes"] = json::array({json::object(
      {{"name", "n"}, {"op", op}, {"inputs", names}, {"outputs", json::array({"y"})}, {"attrs", attrs}})});
  return ir::ParseGraph(g.dump());
}

Tensor RunOnce(const std::string& op, const std::vector<Tensor>& inputs, const json& attrs = json::object()) {
  std::vector<std::pair<std::string, Shape>> types;
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    types.emplace_back(std::string(DTypeName(inputs[i].dtype())), inputs[i].shape());
    feed[fmt::format("x{}", i)] = inputs[i];
  }
  Executor ex(OneNode(op, types, attrs), Cpu());
  return ex.Run(feed).at("y");
}

Tensor F32(Shape shape, const std::vector<double>& v) {
  return Tensor::FromDoubles(DType::Float32, std::move(shape), v);
}
Tensor Bools(Shape shape, const std::vector<double>& v) {
  return Tensor::FromDoubles(DType::Bool, std::move(shape), v);
}
Tensor I32(Shape shape, const std::vector<double>& v) {
  return Tensor::FromDoubles(DType::Int32, std::move(shape), v);
}

TEST(TensorElementwiseOps, ComparisonsBroadcastToBoolOutputs) {
  const Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, NAN});
  const Tensor b = F32({3}, {2, 2, NAN});
  const std::map<std::string, std::vector<double>> want = {
      {"tensor.equal", {0, 1, 0, 0, 0, 0}},   {"tensor.not_equal", {1, 0, 1, 1, 1, 1}},
      {"tensor.less", {1, 0, 0, 0, 0, 0}},    {"tensor.less_equal", {1, 1, 0, 0, 0, 0}},
      {"tensor.greater", {0, 0, 0, 1, 1, 0}}, {"tensor.greater_equal", {0, 1, 0, 1, 1, 0}}};
  for (const auto& [op, values] : want) {
    const Tensor y = RunOnce(op, {a, b});
    EXPECT_EQ(y.dtype(), DType::Bool) << op;
    EXPECT_EQ(y.shape(), (Shape{2, 3})) << op;
    EXPECT_EQ(y.ToDoubles(), values) << op;
  }
  // Integer operands, a column against a row.
  const Tensor y = RunOnce("tensor.less", {I32({3, 1}, {1, 2, 3}), I32({1, 2}, {2, 3})});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.ToDoubles(), (std::vector<double>{1, 1, 0, 1, 0, 0}));
}

TEST(TensorElementwiseOps, LogicOnBitPackedBools) {
  std::vector<double> av, bv;
  for (int i = 0; i < 20; ++i) {
    av.push_back(i % 3 == 0);
    bv.push_back(i % 2);
  }
  const Tensor a = Bools({20}, av);
  const Tensor b = Bools({20}, bv);
  const Tensor y_and = RunOnce("tensor.logical_and", {a, b});
  const Tensor y_xor = RunOnce("tensor.logical_xor", {a, b});
  const Tensor y_or = RunOnce("tensor.logical_or", {a, Bools({1}, {0})});
  const Tensor y_not = RunOnce("tensor.logical_not", {a});
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(y_and.GetDouble(i), double(av[i] && bv[i])) << i;
    EXPECT_EQ(y_xor.GetDouble(i), double(av[i] != bv[i])) << i;
    EXPECT_EQ(y_or.GetDouble(i), av[i]) << i;
    EXPECT_EQ(y_not.GetDouble(i), 1.0 - av[i]) << i;
  }
  EXPECT_EQ(y_and.nbytes(), 3u);
}

TEST(TensorElementwiseOps, WhereBroadcastsThreeWays) {
  const Tensor cond = Bools({2, 1}, {1, 0});
  const Tensor a = F32({3}, {1, 2, 3});
  const Tensor b = F32({}, {-1});
  const Tensor y = RunOnce("tensor.where", {cond, a, b});
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.ToDoubles(), (std::vector<double>{1, 2, 3, -1, -1, -1}));
  const Tensor yb = RunOnce("tensor.where", {Bools({3}, {1, 0, 1}), Bools({3}, {0, 0, 0}), Bools({1}, {1})});
  EXPECT_EQ(yb.ToDoubles(), (std::vector<double>{0, 1, 0}));
}

TEST(TensorElementwiseOps, CastTakesTheTargetDType) {
  const Tensor x = F32({5}, {2.7, -2.7, 3e9, NAN, 0});
  const Tensor y = RunOnce("tensor.cast", {x}, {{"to", "i32"}});
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(y.ToDoubles(), (std::vector<double>{2, -2, 2147483647, 0, 0}));
  const Tensor yb = RunOnce("tensor.cast", {x}, {{"to", "bool"}});
  EXPECT_EQ(yb.ToDoubles(), (std::vector<double>{1, 1, 1, 1, 0}));
  const Tensor yh = RunOnce("tensor.cast", {I32({2}, {300, -1})}, {{"to", "u8"}});
  EXPECT_EQ(yh.ToDoubles(), (std::vector<double>{44, 255}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.cast", {x}, {{"to", "i4"}});
      },
      ErrorCode::InvalidArgument, {"tensor.cast", "'n'", "'to'"}));
}

TEST(TensorElementwiseOps, PowModAndRounding) {
  const Tensor p = RunOnce("tensor.pow", {F32({2, 2}, {2, 3, 4, 9}), F32({2}, {2, 0.5})});
  EXPECT_EQ(p.ToDoubles(), (std::vector<double>{4, std::sqrt(3.0f), 16, 3}));
  const Tensor m = RunOnce("tensor.mod", {I32({2, 2}, {-7, 7, -7, 7}), I32({2}, {3, -3})});
  EXPECT_EQ(m.ToDoubles(), (std::vector<double>{2, -2, 2, -2}));
  const Tensor mf = RunOnce("tensor.mod", {I32({2, 2}, {-7, 7, -7, 7}), I32({2}, {3, -3})}, {{"fmod", true}});
  EXPECT_EQ(mf.ToDoubles(), (std::vector<double>{-1, 1, -1, 1}));
  const Tensor x = F32({4}, {-1.5, -0.5, 0.5, 2.5});
  EXPECT_EQ(RunOnce("tensor.floor", {x}).ToDoubles(), (std::vector<double>{-2, -1, 0, 2}));
  EXPECT_EQ(RunOnce("tensor.ceil", {x}).ToDoubles(), (std::vector<double>{-1, 0, 1, 3}));
  EXPECT_EQ(RunOnce("tensor.round", {x}).ToDoubles(), (std::vector<double>{-2, 0, 0, 2}));
  EXPECT_EQ(RunOnce("tensor.trunc", {x}).ToDoubles(), (std::vector<double>{-1, 0, 0, 2}));
  const Tensor e = RunOnce("math.erf", {x});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(e.GetDouble(i), static_cast<float>(std::erf(x.GetDouble(i)))) << i;
  }
}

TEST(TensorElementwiseOps, TrigOpsClosedForms) {
  const Tensor half = F32({3}, {0.5, -0.5, 0.0});
  const Tensor two = F32({2}, {2.0, 1.0});
  struct Case {
    const char* op;
    Tensor x;
    std::vector<double> want;
  };
  const double s3 = std::sqrt(3.0);
  const std::vector<Case> cases = {
      {"math.asin", half, {M_PI / 6, -M_PI / 6, 0}},
      {"math.acos", half, {M_PI / 3, 2 * M_PI / 3, M_PI / 2}},
      {"math.atan", F32({2}, {1.0, -s3}), {M_PI / 4, -M_PI / 3}},
      {"math.tan", F32({2}, {M_PI / 4, -M_PI / 3}), {1.0, -s3}},
      {"math.sinh", two, {(std::exp(2.0) - std::exp(-2.0)) / 2, (std::exp(1.0) - std::exp(-1.0)) / 2}},
      {"math.cosh", two, {(std::exp(2.0) + std::exp(-2.0)) / 2, (std::exp(1.0) + std::exp(-1.0)) / 2}},
      {"math.asinh", two, {std::log(2.0 + std::sqrt(5.0)), std::log(1.0 + std::sqrt(2.0))}},
      {"math.acosh", two, {std::log(2.0 + s3), 0.0}},
      {"math.atanh", half, {0.5 * std::log(3.0), -0.5 * std::log(3.0), 0.0}}};
  for (const Case& c : cases) {
    const Tensor y = RunOnce(c.op, {c.x});
    EXPECT_EQ(y.dtype(), DType::Float32) << c.op;
    EXPECT_EQ(y.shape(), c.x.shape()) << c.op;
    const std::vector<double> got = y.ToDoubles();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.want[i], 1e-6) << c.op << " " << i;
  }
}

TEST(TensorElementwiseOps, BitShiftsBroadcast) {
  const Tensor a = Tensor::FromDoubles(DType::Uint8, {2, 2}, std::vector<double>{1, 255, 16, 3});
  const Tensor b = Tensor::FromDoubles(DType::Uint8, {2}, std::vector<double>{1, 8});
  const Tensor l = RunOnce("tensor.bitshift_left", {a, b});
  EXPECT_EQ(l.dtype(), DType::Uint8);
  EXPECT_EQ(l.shape(), (Shape{2, 2}));
  EXPECT_EQ(l.ToDoubles(), (std::vector<double>{2, 0, 32, 0}));  // 255 << 8 and 3 << 8: past u8
  EXPECT_EQ(RunOnce("tensor.bitshift_right", {a, b}).ToDoubles(), (std::vector<double>{0, 0, 8, 0}));
  const Tensor s = I32({3}, {-8, -1, 7});
  EXPECT_EQ(RunOnce("tensor.bitshift_right", {s, I32({3}, {1, 40, 1})}).ToDoubles(),
            (std::vector<double>{-4, -1, 3}));
  EXPECT_TRUE(ThrowsError([&] { RunOnce("tensor.bitshift_left", {s, I32({3}, {1, -1, 0})}); },
                          ErrorCode::InvalidArgument, {"TensorOps.BitShift", "b"}));
  EXPECT_TRUE(ThrowsError([&] { RunOnce("tensor.bitshift_left", {F32({1}, {1}), F32({1}, {1})}); },
                          ErrorCode::UnsupportedDType, {"tensor.bitshift_left", "'n'"}));
}

TEST(TensorElementwiseOps, ErrorsNameTheNodeOrTheMethod) {
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.equal", {F32({2}, {1, 2}), F32({3}, {1, 2, 3})});
      },
      ErrorCode::ShapeMismatch, {"tensor.equal", "'n'"}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.less", {F32({2}, {1, 2}), I32({2}, {1, 2})});
      },
      ErrorCode::UnsupportedDType, {"tensor.less", "'n'"}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.logical_and", {F32({2}, {1, 2}), F32({2}, {1, 2})});
      },
      ErrorCode::UnsupportedDType, {"tensor.logical_and", "'n'"}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.where", {F32({2}, {1, 0}), F32({2}, {1, 2}), F32({2}, {1, 2})});
      },
      ErrorCode::UnsupportedDType, {"tensor.where", "'n'"}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.pow", {I32({2}, {1, 2}), I32({2}, {1, 2})});
      },
      ErrorCode::UnsupportedDType, {"tensor.pow", "'n'"}));
  // An integer zero divisor is the method's error.
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunOnce("tensor.mod", {I32({2}, {1, 2}), I32({1}, {0})});
      },
      ErrorCode::InvalidArgument, {"TensorOps.Mod", "'b'"}));
}

}  // namespace
}  // namespace backplane::runtime
