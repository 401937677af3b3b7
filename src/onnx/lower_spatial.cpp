// Lowerings of ONNX's GridSample (opset 16; 4-D input) onto spatial.grid_sample and RoiAlign
// (opsets 10 and 16) onto spatial.roi_align. The grid (and RoiAlign's rois) are cast to X's dtype
// when they differ; RoiAlign-10 has no coordinate_transformation_mode and behaves as
// output_half_pixel.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

std::string AsDType(Context& ctx, const std::string& value, DType want) {
  if (ctx.Get(value).dtype == want) return value;
  return ctx.Op("tensor.cast", {value}, {{"to", std::string(DTypeName(want))}});
}

void GridSample(Context& ctx) {
  ctx.AllowAttrs({"align_corners", "mode", "padding_mode"});
  const Value& x = ctx.In(0);
  const Value& grid = ctx.In(1);
  if (x.rank() != 4) ctx.Unsupported(fmt::format("only 4-D input X (N, C, H, W) is supported, got rank {}", x.rank()));
  if (grid.rank() != 4) ctx.Invalid(fmt::format("input 'grid' must have rank 4 (N, H_out, W_out, 2), got {}", grid.rank()));
  if (!kFloatDTypes.Contains(x.dtype)) {
    ctx.Unsupported(fmt::format("input 'X' must be a float tensor (f64, f32, f16, bf16), got {}", DTypeName(x.dtype)));
  }
  const std::string mode = ctx.AttrString("mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
    ctx.Invalid(fmt::format("attribute 'mode' must be bilinear, nearest or bicubic, got '{}'", mode));
  }
  const std::string padding = ctx.AttrString("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    ctx.Invalid(fmt::format("attribute 'padding_mode' must be zeros, border or reflection, got '{}'", padding));
  }
  const std::string g = AsDType(ctx, ctx.Input(1), x.dtype);
  ctx.Emit("spatial.grid_sample", {ctx.Input(0), g},
           {{"mode", mode}, {"padding_mode", padding}, {"align_corners", ctx.AttrInt("align_corners", 0) != 0}},
           {ctx.Output(0)});
}

void RoiAlign(Context& ctx, bool opset16) {
  if (opset16) {
    ctx.AllowAttrs({"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio",
                    "spatial_scale"});
  } else {
    ctx.AllowAttrs({"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"});
  }
  const Value& x = ctx.In(0);
  if (x.rank() != 4) ctx.Invalid(fmt::format("input 'X' must have rank 4 (N, C, H, W), got {}", x.rank()));
  if (!kFloatDTypes.Contains(x.dtype)) {
    ctx.Unsupported(fmt::format("input 'X' must be a float tensor (f64, f32, f16, bf16), got {}", DTypeName(x.dtype)));
  }
  const std::string ctm = opset16 ? ctx.AttrString("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    ctx.Invalid(fmt::format("attribute 'coordinate_transformation_mode' must be half_pixel or output_half_pixel, got '{}'",
                            ctm));
  }
  const std::string mode = ctx.AttrString("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.Invalid(fmt::format("attribute 'mode' must be avg or max, got '{}'", mode));
  const int64_t oh = ctx.AttrInt("output_height", 1), ow = ctx.AttrInt("output_width", 1);
  const int64_t ratio = ctx.AttrInt("sampling_ratio", 0);
  if (oh < 1 || ow < 1) ctx.Invalid(fmt::format("attributes 'output_height' and 'output_width' must be >= 1, got {} and {}", oh, ow));
  if (ratio < 0) ctx.Invalid(fmt::format("attribute 'sampling_ratio' must be >= 0, got {}", ratio));
  const std::string rois = AsDType(ctx, ctx.Input(1), x.dtype);
  ctx.Emit("spatial.roi_align", {ctx.Input(0), rois, ctx.Input(2)},
           {{"mode", mode},
            {"output_height", oh},
            {"output_width", ow},
            {"sampling_ratio", ratio},
            {"spatial_scale", ctx.AttrFloat("spatial_scale", 1.0)},
            {"half_pixel", ctm == "half_pixel"}},
           {ctx.Output(0)});
}

}  // namespace

void AddSpatialOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"GridSample", 16, kMax, GridSample});
  t.push_back({"RoiAlign", 10, 15, [](Context& c) { RoiAlign(c, false); }});
  t.push_back({"RoiAlign", 16, kMax, [](Context& c) { RoiAlign(c, true); }});
}

}  // namespace backplane::onnx
