// Graph-level tensor.argmax/argmin, tensor.cumsum, tensor.triu/tril and tensor.gather_elements
// through the executor: shape rules (negative axes, keepdims, int64 outputs, int32 indices),
// values against hand-computed NumPy results, and errors naming the node or the method.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// One node `op` over inputs x0, x1, ... of the given dtype/shape, output y.
ir::Graph OneNode(const std::string& op, const std::vector<std::pair<std::string, Shape>>& inputs, const json& attrs) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", json::array({"y"})}});
  g["inputs"] = json::array();
  json names = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(fmt::format("x{}", i));
    g["inputs"].push_back({{"name", fmt::format("x{}", i)}, {"dtype", inputs[i].first}, {"shape", inputs[i].second}});
  }
  g["nodes"] = json::array({json::object(
      {{"name", "n"}, {"op", op}, {"inputs", names}, {"outputs", json::array({"y"})}, {"attrs", attrs}})});
  return ir::ParseGraph(g.dump());
}

// Builds and runs a one-node graph over `inputs` (named x0, x1, ...); returns y.
Tensor RunOnce(const std::string& op, const std::vector<Tensor>& inputs, const json& attrs) {
  std::vector<std::pair<std::string, Shape>> types;
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    types.emplace_back(std::string(DTypeName(inputs[i].dtype())), inputs[i].shape());
    feed[fmt::format("x{}", i)] = inputs[i];
  }
  Executor ex(OneNode(op, types, attrs), Cpu());
  return ex.Run(feed).at("y");
}

template <class T>
Tensor Make(DType dt, Shape shape, const std::vector<T>& values) {
  Tensor t(dt, std::move(shape));
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return t;
}

template <class T>
std::vector<T> Values(const Tensor& t) {
  const T* p = t.data_as<T>();
  return std::vector<T>(p, p + t.numel());
}

// x[2, 3, 2] = 0, 5, 2, 5, ... with a tie on axis 1.
const std::vector<float> kX = {1, 7, 3, 7, 3, 2, 0, 4, 9, 4, 9, -1};

TEST(TensorAxisOps, ArgMaxKeepdimsAndNegativeAxis) {
  Executor keep(OneNode("tensor.argmax", {{"f32", {2, 3, 2}}}, {{"axis", 1}}), Cpu());
  const Tensor y = keep.Run({{"x0", Make(DType::Float32, {2, 3, 2}, kX)}}).at("y");
  EXPECT_EQ(y.dtype(), DType::Int64);
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(Values<int64_t>(y), (std::vector<int64_t>{1, 0, 1, 0}));  // the first of tied 3s, 7s, 9s, 4s
  Executor last(OneNode("tensor.argmax", {{"f32", {2, 3, 2}}},
                        {{"axis", -2}, {"keepdims", false}, {"select_last_index", true}}),
                Cpu());
  const Tensor z = last.Run({{"x0", Make(DType::Float32, {2, 3, 2}, kX)}}).at("y");
  EXPECT_EQ(z.shape(), (Shape{2, 2}));
  EXPECT_EQ(Values<int64_t>(z), (std::vector<int64_t>{2, 1, 2, 1}));
  Executor inner(OneNode("tensor.argmin", {{"f32", {2, 3, 2}}}, {{"axis", -1}, {"keepdims", false}}), Cpu());
  const Tensor w = inner.Run({{"x0", Make(DType::Float32, {2, 3, 2}, kX)}}).at("y");
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<int64_t>(w), (std::vector<int64_t>{0, 0, 1, 0, 1, 1}));
}

TEST(TensorAxisOps, ArgMaxOfAnEmptyAxisNamesTheAttribute) {
  EXPECT_TRUE(ThrowsError([] { RunOnce("tensor.argmax", {Tensor(DType::Float32, {2, 0})}, {{"axis", 1}}); },
                          ErrorCode::InvalidArgument, {"tensor.argmax", "'axis'"}));
  EXPECT_TRUE(ThrowsError([] { RunOnce("tensor.argmin", {Tensor(DType::Float32, {2, 3})}, {{"axis", 2}}); },
                          ErrorCode::InvalidArgument, {"'axis'"}));
}

TEST(TensorAxisOps, CumSumExclusiveReverseOnIntegers) {
  const std::vector<int32_t> x = {1, 2, 3, 4, 5, 6};
  auto run = [&](bool exclusive, bool reverse) {
    Executor ex(OneNode("tensor.cumsum", {{"i32", {2, 3}}},
                        {{"axis", -1}, {"exclusive", exclusive}, {"reverse", reverse}}),
                Cpu());
    const Tensor y = ex.Run({{"x0", Make(DType::Int32, {2, 3}, x)}}).at("y");
    EXPECT_EQ(y.dtype(), DType::Int32);
    return Values<int32_t>(y);
  };
  EXPECT_EQ(run(false, false), (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run(true, false), (std::vector<int32_t>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(run(false, true), (std::vector<int32_t>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(run(true, true), (std::vector<int32_t>{5, 3, 0, 11, 6, 0}));
  Executor axis0(OneNode("tensor.cumsum", {{"f64", {2, 3}}}, {{"axis", 0}}), Cpu());
  const std::vector<double> xd = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(Values<double>(axis0.Run({{"x0", Make(DType::Float64, {2, 3}, xd)}}).at("y")),
            (std::vector<double>{1, 2, 3, 5, 7, 9}));
}

TEST(TensorAxisOps, TriuTrilBatched) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  Executor up(OneNode("tensor.triu", {{"f32", {2, 3, 3}}}, {{"k", 1}}), Cpu());
  EXPECT_EQ(Values<float>(up.Run({{"x0", Make(DType::Float32, {2, 3, 3}, x)}}).at("y")),
            (std::vector<float>{0, 2, 3, 0, 0, 6, 0, 0, 0, 0, 2, 3, 0, 0, 6, 0, 0, 0}));
  Executor low(OneNode("tensor.tril", {{"f32", {2, 3, 3}}}, json::object()), Cpu());
  EXPECT_EQ(Values<float>(low.Run({{"x0", Make(DType::Float32, {2, 3, 3}, x)}}).at("y")),
            (std::vector<float>{1, 0, 0, 4, 5, 0, 7, 8, 9, 1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_TRUE(ThrowsError([] { RunOnce("tensor.triu", {Tensor(DType::Float32, {3})}, json::object()); },
                          ErrorCode::ShapeMismatch, {"tensor.triu"}));
}

TEST(TensorAxisOps, GatherElementsInt64AndInt32Indices) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const std::vector<int64_t> i64 = {2, -3, 0, -1};   // [2, 2] along axis 1
  const std::vector<int32_t> i32 = {2, -3, 0, -1};
  for (const char* idt : {"i64", "i32"}) {
    Executor ex(OneNode("tensor.gather_elements", {{"f32", {2, 3}}, {idt, {2, 2}}}, {{"axis", -1}}), Cpu());
    const Tensor idx = std::string(idt) == "i64" ? Make(DType::Int64, {2, 2}, i64) : Make(DType::Int32, {2, 2}, i32);
    const Tensor y = ex.Run({{"x0", Make(DType::Float32, {2, 3}, x)}, {"x1", idx}}).at("y");
    EXPECT_EQ(y.shape(), (Shape{2, 2}));
    EXPECT_EQ(Values<float>(y), (std::vector<float>{3, 1, 4, 6})) << idt;
  }
  Executor ax0(OneNode("tensor.gather_elements", {{"f32", {2, 3}}, {"i64", {1, 3}}}, {{"axis", 0}}), Cpu());
  const std::vector<int64_t> rows = {1, 0, 1};
  EXPECT_EQ(Values<float>(ax0.Run({{"x0", Make(DType::Float32, {2, 3}, x)}, {"x1", Make(DType::Int64, {1, 3}, rows)}})
                              .at("y")),
            (std::vector<float>{4, 2, 6}));
  const std::vector<int64_t> bad = {0, 5, 1, 1};
  Executor ex(OneNode("tensor.gather_elements", {{"f32", {2, 3}}, {"i64", {2, 2}}}, {{"axis", 1}}), Cpu());
  EXPECT_TRUE(ThrowsError(
      [&] { ex.Run({{"x0", Make(DType::Float32, {2, 3}, x)}, {"x1", Make(DType::Int64, {2, 2}, bad)}}); },
      ErrorCode::InvalidArgument, {"TensorOps.GatherElements", "'indices'", "5"}));
  EXPECT_TRUE(ThrowsError(
      [] {
        RunOnce("tensor.gather_elements", {Tensor(DType::Float32, {2, 3}), Tensor(DType::Int64, {3, 2})},
                {{"axis", 1}});
      },
      ErrorCode::ShapeMismatch, {"tensor.gather_elements", "indices"}));
  EXPECT_TRUE(ThrowsError(
      [] {
        RunOnce("tensor.gather_elements", {Tensor(DType::Float32, {2, 3}), Tensor(DType::Float32, {2, 3})},
                {{"axis", 1}});
      },
      ErrorCode::UnsupportedDType, {"tensor.gather_elements"}));
}

}  // namespace
}  // namespace backplane::runtime
