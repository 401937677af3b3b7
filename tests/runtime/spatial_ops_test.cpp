// Graph-level spatial.grid_sample and spatial.roi_align through the executor: shape rules, values
// worked out by hand (bilinear centre of a 2x2 map, RoiAlign's mean and ONNX max), int32 batch
// indices, and errors naming the node and attribute or shape.
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

std::map<std::string, Tensor> RunNode(const std::string& op, const std::vector<Tensor>& inputs, const json& attrs) {
  json g = json::object({{"format", "backplane.graph"}, {"version", 1}, {"outputs", {"y"}}});
  g["inputs"] = json::array();
  json names = json::array();
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = fmt::format("x{}", i);
    names.push_back(name);
    g["inputs"].push_back({{"name", name}, {"dtype", std::string(DTypeName(inputs[i].dtype()))}, {"shape", inputs[i].shape()}});
    feed[name] = inputs[i];
  }
  g["nodes"] = json::array({json::object(
      {{"name", "n"}, {"op", op}, {"inputs", names}, {"outputs", {"y"}}, {"attrs", attrs.is_null() ? json::object() : attrs}})});
  Executor ex(ir::ParseGraph(g.dump()), Cpu());
  return ex.Run(feed);
}

TEST(SpatialOps, GridSampleBilinearCentreAndShape) {
  const Tensor x = Make<float>(DType::Float32, {1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  const Tensor grid = Make<float>(DType::Float32, {1, 1, 2, 2}, {0, 0, -1, -1});
  const auto out = RunNode("spatial.grid_sample", {x, grid}, {{"align_corners", true}});
  const Tensor& y = out.at("y");
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 2}));
  EXPECT_EQ(y.GetDouble(0), 2.5);  // the centre: the mean of the four
  EXPECT_EQ(y.GetDouble(1), 1.0);  // the top-left corner
  EXPECT_EQ(y.GetDouble(2), 25.0);
  EXPECT_EQ(y.GetDouble(3), 10.0);
}

TEST(SpatialOps, RoiAlignAvgMaxAndInt32Indices) {
  const Tensor x = Make<double>(DType::Float64, {2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor rois = Make<double>(DType::Float64, {2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  const Tensor batch = Make<int32_t>(DType::Int32, {2}, {1, 0});
  const json attrs = {{"sampling_ratio", 1}, {"half_pixel", false}};
  const auto avg = RunNode("spatial.roi_align", {x, rois, batch}, attrs);
  EXPECT_EQ(avg.at("y").shape(), (Shape{2, 1, 1, 1}));
  EXPECT_EQ(avg.at("y").GetDouble(0), 6.5);
  EXPECT_EQ(avg.at("y").GetDouble(1), 2.5);
  json max_attrs = attrs;
  max_attrs["mode"] = "max";
  const auto mx = RunNode("spatial.roi_align", {x, rois, batch}, max_attrs);
  EXPECT_EQ(mx.at("y").GetDouble(0), 2.0);  // the largest quarter-weighted corner: 8 / 4
  EXPECT_EQ(mx.at("y").GetDouble(1), 1.0);
}

TEST(SpatialOps, ErrorsNameTheNode) {
  const Tensor x = Make<float>(DType::Float32, {1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor grid = Make<float>(DType::Float32, {1, 1, 1, 2}, {0, 0});
  EXPECT_TRUE(ThrowsError([&] { RunNode("spatial.grid_sample", {x, grid}, {{"mode", "area"}}); },
                          ErrorCode::InvalidArgument, {"node 'n'", "mode", "bilinear, nearest or bicubic", "area"}));
  const Tensor bad_grid = Make<float>(DType::Float32, {1, 1, 1, 3}, {0, 0, 0});
  EXPECT_TRUE(ThrowsError([&] { RunNode("spatial.grid_sample", {x, bad_grid}, {}); }, ErrorCode::ShapeMismatch,
                          {"node 'n'", "[N, Ho, Wo, 2]"}));
  const Tensor rois = Make<float>(DType::Float32, {1, 4}, {0, 0, 1, 1});
  const Tensor batch = Make<int64_t>(DType::Int64, {1}, {0});
  EXPECT_TRUE(ThrowsError([&] { RunNode("spatial.roi_align", {x, rois, batch}, {{"output_height", 0}}); },
                          ErrorCode::InvalidArgument, {"node 'n'", "output_height", ">= 1"}));
  const Tensor far = Make<int64_t>(DType::Int64, {1}, {3});
  EXPECT_TRUE(ThrowsError([&] { RunNode("spatial.roi_align", {x, rois, far}, {}); }, ErrorCode::InvalidArgument,
                          {"Spatial.RoiAlign", "batchIndices", "in [0, 1)"}));
}

}  // namespace
}  // namespace backplane::runtime
