// ONNX importer, spatial lowerings (src/onnx/lower_spatial.cpp): hand-built ModelProtos with
// closed-form results (GridSample nearest with ties to even; RoiAlign-10 as output_half_pixel and
// RoiAlign-16's half_pixel default) and the one-line refusals (bad attributes, 5-D input, opsets
// before 16).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "model_builder.hpp"
#include "onnx_run.hpp"

namespace backplane::onnx {
namespace {

using ::onnx::TensorProto;

TEST(OnnxSpatial, GridSampleNearestRoundsHalfToEven) {
  ModelBuilder b(16);
  b.Input("x", std::initializer_list<int64_t>{1, 1, 2, 3});
  b.Input("grid", std::initializer_list<int64_t>{1, 1, 3, 2});
  auto* n = b.Node("GridSample", {"x", "grid"}, {"y"});
  AttrString(n, "mode", "nearest");
  AttrInt(n, "align_corners", 1);
  b.Output("y");
  // Pixel coordinates (x, y) = (0.5, 0.5), (1.5, 0.5), (1.5, 1): ties go to even.
  const auto out = RunModel(b.Save("spatial_gridsample.onnx"),
                            {{"x", F32({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5})},
                             {"grid", F32({1, 1, 3, 2}, {-0.5, 0.0, 0.5, 0.0, 0.5, 1.0})}});
  ExpectNear(out.at("y"), {0, 2, 5});
  EXPECT_EQ(out.at("y").shape(), (Shape{1, 1, 1, 3}));
}

std::string RoiModel(int opset, const std::string& file, const std::string& ctm) {
  ModelBuilder b(opset);
  b.Input("x", std::initializer_list<int64_t>{1, 1, 2, 2});
  b.Input("rois", std::initializer_list<int64_t>{1, 4});
  b.Input("bi", std::initializer_list<int64_t>{1}, TensorProto::INT64);
  auto* n = b.Node("RoiAlign", {"x", "rois", "bi"}, {"y"});
  AttrInt(n, "output_height", 1);
  AttrInt(n, "output_width", 1);
  AttrInt(n, "sampling_ratio", 1);
  if (!ctm.empty()) AttrString(n, "coordinate_transformation_mode", ctm);
  b.Output("y");
  return b.Save(file);
}

TEST(OnnxSpatial, RoiAlignOpset10IsOutputHalfPixelAndOpset16DefaultsToHalfPixel) {
  Tensor bi(DType::Int64, Shape{1});
  bi.data_as<int64_t>()[0] = 0;
  const std::map<std::string, Tensor> feed = {
      {"x", F32({1, 1, 2, 2}, {1, 2, 3, 4})}, {"rois", F32({1, 4}, {0, 0, 1, 1})}, {"bi", bi}};
  // output_half_pixel: one sample at pixel (0.5, 0.5), the mean of the four values.
  ExpectNear(RunModel(RoiModel(10, "spatial_roi10.onnx", ""), feed).at("y"), {2.5});
  ExpectNear(RunModel(RoiModel(16, "spatial_roi16o.onnx", "output_half_pixel"), feed).at("y"), {2.5});
  // half_pixel: the roi shifts by -0.5; its one sample sits on pixel (0, 0).
  ExpectNear(RunModel(RoiModel(16, "spatial_roi16.onnx", ""), feed).at("y"), {1.0});
}

TEST(OnnxSpatial, RefusalsNameTheNodeAndAttribute) {
  {
    ModelBuilder b(16);
    b.Input("x", std::initializer_list<int64_t>{1, 1, 2, 3});
    b.Input("grid", std::initializer_list<int64_t>{1, 1, 3, 2});
    AttrString(b.Node("GridSample", {"x", "grid"}, {"y"}), "mode", "linear");
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("spatial_bad_mode.onnx")); });
    EXPECT_NE(msg.find("GridSample"), std::string::npos) << msg;
    EXPECT_NE(msg.find("attribute 'mode' must be bilinear, nearest or bicubic, got 'linear'"), std::string::npos) << msg;
  }
  {
    ModelBuilder b(16);
    b.Input("x", std::initializer_list<int64_t>{1, 1, 2, 3, 4});
    b.Input("grid", std::initializer_list<int64_t>{1, 1, 3, 2, 3});
    b.Node("GridSample", {"x", "grid"}, {"y"});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("spatial_5d.onnx")); });
    EXPECT_NE(msg.find("only 4-D input X"), std::string::npos) << msg;
  }
  {
    ModelBuilder b(15);
    b.Input("x", std::initializer_list<int64_t>{1, 1, 2, 3});
    b.Input("grid", std::initializer_list<int64_t>{1, 1, 3, 2});
    b.Node("GridSample", {"x", "grid"}, {"y"});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("spatial_opset15.onnx")); });
    EXPECT_NE(msg.find("GridSample"), std::string::npos) << msg;
  }
  {
    const std::string msg = ErrorOf([&] { ImportOnnx(RoiModel(16, "spatial_roi_bad.onnx", "asymmetric")); });
    EXPECT_NE(msg.find("coordinate_transformation_mode' must be half_pixel or output_half_pixel, got 'asymmetric'"),
              std::string::npos)
        << msg;
  }
}

// Found by fuzz_onnx: a Conv whose input rank is below the kernel's read past the input shape.
TEST(OnnxSpatial, ConvRefusesAnInputRankThatDoesNotMatchTheKernelAndNegativePads) {
  {
    ModelBuilder b(13);
    b.Input("x", std::initializer_list<int64_t>{1, 5});
    b.Input("w", std::initializer_list<int64_t>{1, 1, 3, 3});
    AttrInts(b.Node("Conv", {"x", "w"}, {"y"}), "pads", {2, 1, 1, 1});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("conv_rank2.onnx")); });
    EXPECT_NE(msg.find("Conv"), std::string::npos) << msg;
    EXPECT_NE(msg.find("input rank 2 does not match a 2-D kernel (expected rank 4)"), std::string::npos) << msg;
  }
  {
    ModelBuilder b(13);
    b.Input("x", std::initializer_list<int64_t>{1, 1, 5, 5});
    b.Input("w", std::initializer_list<int64_t>{1, 1, 3, 3});
    AttrInts(b.Node("Conv", {"x", "w"}, {"y"}), "pads", {1, -1, 1, 1});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("conv_negative_pads.onnx")); });
    EXPECT_NE(msg.find("attribute 'pads' must be non-negative, got [1, -1, 1, 1]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace backplane::onnx
