// Graph-level tensor.topk, tensor.scatter_elements, tensor.scatter_nd and tensor.gather_nd through
// the executor: shape rules (two outputs, negative axes, int32 indices, batch_dims), values worked
// out by hand from the ONNX operator examples, and errors naming the node or the method.
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

// Runs one node `op` over `inputs` (x0, x1, ...) with outputs `outs`.
std::map<std::string, Tensor> RunNode(const std::string& op, const std::vector<Tensor>& inputs, const json& attrs,
                                      const std::vector<std::string>& outs = {"y"}) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", outs}});
  g["inputs"] = json::array();
  json names = json::array();
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = fmt::format("x{}", i);
    names.push_back(name);
    g["inputs"].push_back({{"name", name}, {"dtype", std::string(DTypeName(inputs[i].dtype()))}, {"shape", inputs[i].shape()}});
    feed[name] = inputs[i];
  }
  g["nodes"] = json::array(
      {json::object({{"name", "n"}, {"op", op}, {"inputs", names}, {"outputs", outs}, {"attrs", attrs.is_null() ? json::object() : attrs}})});
  Executor ex(ir::ParseGraph(g.dump()), Cpu());
  return ex.Run(feed);
}

TEST(TensorIndexOps, TopKTwoOutputsAlongANegativeAxis) {
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8};  // [3, 4]
  for (const bool largest : {true, false}) {
    auto r = RunNode("tensor.topk", {Make(DType::Float32, {3, 4}, x)}, {{"k", 3}, {"axis", -1}, {"largest", largest}},
                 {"values", "indices"});
    EXPECT_EQ(r.at("values").shape(), (Shape{3, 3}));
    EXPECT_EQ(r.at("indices").dtype(), DType::Int64);
    if (largest) {
      EXPECT_EQ(Values<float>(r.at("values")), (std::vector<float>{3, 2, 1, 7, 6, 5, 11, 10, 9}));
      EXPECT_EQ(Values<int64_t>(r.at("indices")), (std::vector<int64_t>{3, 2, 1, 3, 2, 1, 0, 1, 2}));
    } else {
      EXPECT_EQ(Values<float>(r.at("values")), (std::vector<float>{0, 1, 2, 4, 5, 6, 8, 9, 10}));
      EXPECT_EQ(Values<int64_t>(r.at("indices")), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 2, 1}));
    }
  }
  EXPECT_TRUE(ThrowsError([&] { RunNode("tensor.topk", {Make(DType::Float32, {3, 4}, x)}, {{"k", 5}}, {"v", "i"}); },
                          ErrorCode::InvalidArgument, {"tensor.topk", "k"}));
}

TEST(TensorIndexOps, ScatterElementsWithInt32IndicesAndReductions) {
  const std::vector<float> data = {1, 2, 3, 4, 5};  // [1, 5]
  const std::vector<int32_t> idx = {1, -2, 1};       // ONNX example with a duplicate
  const std::vector<float> upd = {1.1f, 2.1f, 3.0f};
  const std::map<std::string, std::vector<float>> want = {
      {"none", {1, 3.0f, 3, 2.1f, 5}}, {"add", {1, 2 + 1.1f + 3.0f, 3, 4 + 2.1f, 5}}, {"mul", {1, 2 * 1.1f * 3.0f, 3, 4 * 2.1f, 5}}};
  for (const auto& [red, w] : want) {
    auto r = RunNode("tensor.scatter_elements",
                 {Make(DType::Float32, {1, 5}, data), Make(DType::Int32, {1, 3}, idx), Make(DType::Float32, {1, 3}, upd)},
                 {{"axis", 1}, {"reduction", red}});
    EXPECT_EQ(Values<float>(r.at("y")), w) << red;
  }
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunNode("tensor.scatter_elements",
            {Make(DType::Float32, {1, 5}, data), Make(DType::Int32, {1, 3}, idx), Make(DType::Float32, {1, 3}, upd)},
            {{"axis", 1}, {"reduction", "max"}});
      },
      ErrorCode::InvalidArgument, {"tensor.scatter_elements", "reduction"}));
  const std::vector<int32_t> bad = {1, 5, 0};
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunNode("tensor.scatter_elements",
            {Make(DType::Float32, {1, 5}, data), Make(DType::Int32, {1, 3}, bad), Make(DType::Float32, {1, 3}, upd)},
            {{"axis", 1}});
      },
      ErrorCode::InvalidArgument, {"TensorOps.ScatterElements", "'indices'", "5"}));
}

TEST(TensorIndexOps, ScatterNDSlices) {
  // data [4, 2]; indices [[0], [2], [0]] replace (add) whole rows in order.
  const std::vector<float> data = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> idx = {0, 2, 0};
  const std::vector<float> upd = {10, 20, 30, 40, 50, 60};
  auto set = RunNode("tensor.scatter_nd",
                 {Make(DType::Float32, {4, 2}, data), Make(DType::Int64, {3, 1}, idx), Make(DType::Float32, {3, 2}, upd)},
                 {});
  EXPECT_EQ(Values<float>(set.at("y")), (std::vector<float>{50, 60, 3, 4, 30, 40, 7, 8}));
  auto add = RunNode("tensor.scatter_nd",
                 {Make(DType::Float32, {4, 2}, data), Make(DType::Int64, {3, 1}, idx), Make(DType::Float32, {3, 2}, upd)},
                 {{"reduction", "add"}});
  EXPECT_EQ(Values<float>(add.at("y")), (std::vector<float>{61, 82, 3, 4, 35, 46, 7, 8}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunNode("tensor.scatter_nd",
            {Make(DType::Float32, {4, 2}, data), Make(DType::Int64, {3, 1}, idx), Make(DType::Float32, {3, 3}, upd)}, {});
      },
      ErrorCode::ShapeMismatch, {"tensor.scatter_nd", "updates"}));
}

TEST(TensorIndexOps, GatherNDWithBatchDims) {
  // ONNX example 5: data [2, 2, 2], indices [[1], [0]] with batch_dims 1 -> [[2, 3], [4, 5]].
  const std::vector<int32_t> data = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int64_t> idx = {1, 0};
  auto r = RunNode("tensor.gather_nd", {Make(DType::Int32, {2, 2, 2}, data), Make(DType::Int64, {2, 1}, idx)},
               {{"batch_dims", 1}});
  EXPECT_EQ(r.at("y").shape(), (Shape{2, 2}));
  EXPECT_EQ(Values<int32_t>(r.at("y")), (std::vector<int32_t>{2, 3, 4, 5}));
  // ONNX example 2: indices [[[0, 1]], [[1, 0]]] on [2, 2] -> [[1], [2]].
  const std::vector<int64_t> pairs = {0, 1, 1, 0};
  auto r2 = RunNode("tensor.gather_nd", {Make(DType::Int32, {2, 2}, std::vector<int32_t>{0, 1, 2, 3}),
                                     Make(DType::Int64, {2, 1, 2}, pairs)},
                {});
  EXPECT_EQ(r2.at("y").shape(), (Shape{2, 1}));
  EXPECT_EQ(Values<int32_t>(r2.at("y")), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(ThrowsError(
      [&] {
        RunNode("tensor.gather_nd", {Make(DType::Int32, {2, 2, 2}, data), Make(DType::Int64, {2, 1}, idx)},
            {{"batch_dims", 2}});
      },
      ErrorCode::InvalidArgument, {"tensor.gather_nd", "batch_dims"}));
}

}  // namespace
}  // namespace backplane::runtime
