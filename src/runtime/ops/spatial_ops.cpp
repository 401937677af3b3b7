// Graph-level lowerings of spatial.grid_sample and spatial.roi_align onto the Spatial methods.
// Batch indices may be int64 or int32 (widened).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

GridSampleConfig GridConfig(const Attrs& attrs) {
  GridSampleConfig c;
  const std::string& mode = attrs.String("mode");
  if (mode == "bilinear") {
    c.Mode = GridSampleMode::Bilinear;
  } else if (mode == "nearest") {
    c.Mode = GridSampleMode::Nearest;
  } else if (mode == "bicubic") {
    c.Mode = GridSampleMode::Bicubic;
  } else {
    attrs.Fail("mode", "bilinear, nearest or bicubic", mode);
  }
  const std::string& pad = attrs.String("padding_mode");
  if (pad == "zeros") {
    c.Padding = GridSamplePadding::Zeros;
  } else if (pad == "border") {
    c.Padding = GridSamplePadding::Border;
  } else if (pad == "reflection") {
    c.Padding = GridSamplePadding::Reflection;
  } else {
    attrs.Fail("padding_mode", "zeros, border or reflection", pad);
  }
  c.AlignCorners = attrs.Bool("align_corners");
  return c;
}

// spatial.grid_sample: x [N, C, H, W], grid [N, Ho, Wo, 2] of x's dtype -> [N, C, Ho, Wo].
OpImpl GridSampleOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectDType(attrs, in, 1, DTypeSet{in[0].dtype});
        ExpectRank(attrs, in, 0, 4);
        ExpectRank(attrs, in, 1, 4);
        GridConfig(attrs);
        const Shape& xs = in[0].shape;
        const Shape& gs = in[1].shape;
        if (gs[0] != xs[0] || gs[3] != 2) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("grid {} must be [N, Ho, Wo, 2] with N = {} (the batch of x {})", ShapeToString(gs), xs[0],
                           ShapeToString(xs)));
        }
        if ((xs[2] == 0 || xs[3] == 0) && xs[0] * xs[1] * gs[1] * gs[2] > 0) {
          Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("x {} must have H, W > 0", ShapeToString(xs)));
        }
        return std::vector<TensorType>{{in[0].dtype, Shape{xs[0], xs[1], gs[1], gs[2]}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& xs = in[0].shape();
        const Shape& gs = in[1].shape();
        ctx.backend.Spatial().GridSample(GridConfig(ctx.attrs), in[0].data(), in[1].data(), out[0].data(), xs[0],
                                         xs[1], xs[2], xs[3], gs[1], gs[2], in[0].dtype());
      }};
}

RoiAlignConfig RoiConfig(const Attrs& attrs) {
  RoiAlignConfig c;
  const std::string& mode = attrs.String("mode");
  if (mode == "avg") {
    c.Mode = RoiAlignMode::Avg;
  } else if (mode == "max") {
    c.Mode = RoiAlignMode::Max;
  } else {
    attrs.Fail("mode", "avg or max", mode);
  }
  c.OutputHeight = attrs.Int("output_height");
  c.OutputWidth = attrs.Int("output_width");
  c.SamplingRatio = attrs.Int("sampling_ratio");
  c.SpatialScale = attrs.Float("spatial_scale");
  c.HalfPixel = attrs.Bool("half_pixel");
  if (c.OutputHeight < 1) attrs.Fail("output_height", ">= 1", std::to_string(c.OutputHeight));
  if (c.OutputWidth < 1) attrs.Fail("output_width", ">= 1", std::to_string(c.OutputWidth));
  if (c.SamplingRatio < 0) attrs.Fail("sampling_ratio", ">= 0", std::to_string(c.SamplingRatio));
  return c;
}

// spatial.roi_align: x [N, C, H, W], rois [R, 4] of x's dtype, batch_indices [R] -> [R, C, oh, ow].
OpImpl RoiAlignOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectDType(attrs, in, 1, DTypeSet{in[0].dtype});
        ExpectDType(attrs, in, 2, DTypeSet{DType::Int64, DType::Int32});
        ExpectRank(attrs, in, 0, 4);
        ExpectRank(attrs, in, 1, 2);
        ExpectRank(attrs, in, 2, 1);
        const RoiAlignConfig c = RoiConfig(attrs);
        const Shape& rs = in[1].shape;
        if (rs[1] != 4 || in[2].shape[0] != rs[0]) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("rois {} must be [R, 4] and batch_indices {} [R]", ShapeToString(rs),
                           ShapeToString(in[2].shape)));
        }
        return std::vector<TensorType>{
            {in[0].dtype, Shape{rs[0], in[0].shape[1], c.OutputHeight, c.OutputWidth}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& xs = in[0].shape();
        Tensor idx = in[2];
        if (idx.dtype() != DType::Int64) {
          idx = Tensor(DType::Int64, in[2].shape());
          const int32_t* src = in[2].data_as<int32_t>();
          for (int64_t i = 0; i < idx.numel(); ++i) idx.data_as<int64_t>()[i] = src[i];
        }
        ctx.backend.Spatial().RoiAlign(RoiConfig(ctx.attrs), in[0].data(), in[1].data(), idx.data_as<int64_t>(),
                                       out[0].data(), xs[0], xs[1], xs[2], xs[3], in[1].shape()[0],
                                       in[0].dtype());
      }};
}

}  // namespace

void RegisterSpatialOps(OpRegistry& r) {
  r.Add("spatial.grid_sample", GridSampleOp());
  r.Add("spatial.roi_align", RoiAlignOp());
}

}  // namespace backplane::runtime::ops
