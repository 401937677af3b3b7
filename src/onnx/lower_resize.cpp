// Lowerings of ONNX's Resize (opsets 11-17: nearest and linear, every coordinate transformation
// but tf_crop_and_resize) and Upsample (nearest) for static 4-D or lower-rank inputs: per axis,
// the source index (and linear weight) of every output position is computed at import time as
// ONNX's reference does; the data is gathered along the axis (tensor.gather_elements with a
// constant index) and, for linear, blended with constant weights.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

// Source coordinate of output position `o` on an axis of `in` -> `out` elements at `scale`.
double SourceCoordinate(const std::string& mode, double o, int64_t in, int64_t out, double scale) {
  if (mode == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out == 1 ? 0.0 : o * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  if (mode == "asymmetric") return o / scale;
  return (o + 0.5) / scale;  // tf_half_pixel_for_nn
}

int64_t NearestIndex(const std::string& mode, double x) {
  const double f = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

// `v` gathered on `axis` at the constant source indices `index` (one per output position).
std::string GatherAxis(Context& ctx, const std::string& v, size_t axis, const std::vector<int64_t>& index) {
  Shape shape = ctx.Get(v).shape();
  shape[axis] = static_cast<int64_t>(index.size());
  Tensor t(DType::Int64, shape);
  int64_t inner = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t extent = shape[axis];
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<int64_t>()[i] = index[static_cast<size_t>((i / inner) % extent)];
  return ctx.Op("tensor.gather_elements", {v, ctx.ConstTensor(t, "resize_index")}, {{"axis", static_cast<int64_t>(axis)}});
}

// Resizes `x` to `sizes` (scales as ONNX gives them, or out / in) along every axis that changes.
void ResizeTo(Context& ctx, const std::vector<int64_t>& sizes, const std::vector<double>& scales, const std::string& mode,
              const std::string& coordinates, const std::string& nearest) {
  std::string v = ctx.Input(0);
  const Shape in = ctx.In(0).shape();
  const DType d = ctx.In(0).dtype;
  for (size_t a = 0; a < in.size(); ++a) {
    if (sizes[a] == in[a] && scales[a] == 1.0) continue;
    std::vector<int64_t> lo, hi;
    std::vector<double> weight;
    for (int64_t o = 0; o < sizes[a]; ++o) {
      const double x = SourceCoordinate(coordinates, static_cast<double>(o), in[a], sizes[a], scales[a]);
      if (mode == "nearest") {
        lo.push_back(std::clamp<int64_t>(NearestIndex(nearest, x), 0, in[a] - 1));
      } else {
        const double c = std::clamp(x, 0.0, static_cast<double>(in[a] - 1));
        const auto i0 = static_cast<int64_t>(std::floor(c));
        lo.push_back(i0);
        hi.push_back(std::min(i0 + 1, in[a] - 1));
        weight.push_back(c - static_cast<double>(i0));
      }
    }
    if (mode == "nearest") {
      v = GatherAxis(ctx, v, a, lo);
      continue;
    }
    Shape wshape(in.size(), 1);
    wshape[a] = sizes[a];
    Tensor w1(d, wshape), w0(d, wshape);
    for (int64_t o = 0; o < sizes[a]; ++o) {
      w1.SetDouble(o, weight[static_cast<size_t>(o)]);
      w0.SetDouble(o, 1.0 - weight[static_cast<size_t>(o)]);
    }
    const std::string a0 = ctx.Op("math.mul", {GatherAxis(ctx, v, a, lo), ctx.ConstTensor(w0, "resize_w0")});
    const std::string a1 = ctx.Op("math.mul", {GatherAxis(ctx, v, a, hi), ctx.ConstTensor(w1, "resize_w1")});
    v = ctx.Op("math.add", {a0, a1});
  }
  ctx.Alias(v, ctx.Output(0));
}

void Resize(Context& ctx) {
  ctx.AllowAttrs({"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "mode",
                  "nearest_mode"});
  const std::string mode = ctx.AttrString("mode", "nearest");
  if (mode != "nearest" && mode != "linear") ctx.Unsupported(fmt::format("mode '{}' (nearest and linear are supported)", mode));
  const std::string coordinates = ctx.AttrString("coordinate_transformation_mode", "half_pixel");
  if (coordinates != "half_pixel" && coordinates != "pytorch_half_pixel" && coordinates != "align_corners" &&
      coordinates != "asymmetric" && coordinates != "tf_half_pixel_for_nn") {
    ctx.Unsupported(fmt::format("coordinate_transformation_mode '{}'", coordinates));
  }
  const std::string nearest = ctx.AttrString("nearest_mode", "round_prefer_floor");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" && nearest != "ceil") {
    ctx.Invalid(fmt::format("attribute 'nearest_mode' must be round_prefer_floor, round_prefer_ceil, floor or ceil, got '{}'", nearest));
  }
  const Value& x = ctx.In(0);
  if (!x.is_static()) ctx.Unsupported("Resize needs a static input shape");
  const Shape in = x.shape();
  std::vector<int64_t> sizes(in.size());
  std::vector<double> scales(in.size());
  const bool has_sizes = ctx.HasInput(3);
  if (has_sizes) {
    const std::vector<int64_t> given = ctx.ConstInts(3, "sizes");
    if (given.size() != in.size()) ctx.Invalid(fmt::format("input 'sizes' must have {} entries, got {}", in.size(), given.size()));
    for (size_t a = 0; a < in.size(); ++a) {
      sizes[a] = given[a];
      scales[a] = static_cast<double>(given[a]) / static_cast<double>(in[a]);
    }
  } else {
    if (!ctx.HasInput(2)) ctx.Invalid("one of the inputs 'scales' and 'sizes' is required");
    const Tensor s = ctx.RequireConst(2, "scales");
    if (s.numel() != static_cast<int64_t>(in.size())) ctx.Invalid(fmt::format("input 'scales' must have {} entries, got {}", in.size(), s.numel()));
    for (size_t a = 0; a < in.size(); ++a) {
      scales[a] = s.GetDouble(static_cast<int64_t>(a));
      if (!(scales[a] > 0)) ctx.Invalid(fmt::format("input 'scales' must be positive, got {}", scales[a]));
      sizes[a] = static_cast<int64_t>(std::floor(static_cast<double>(in[a]) * scales[a]));
    }
  }
  for (size_t a = 0; a < in.size(); ++a) {
    if (sizes[a] <= 0) ctx.Invalid(fmt::format("the output size on axis {} would be {}", a, sizes[a]));
  }
  ResizeTo(ctx, sizes, scales, mode, coordinates, nearest);
}

// Upsample (opsets 7-9, deprecated): nearest with the asymmetric floor rule, or linear.
void Upsample(Context& ctx) {
  ctx.AllowAttrs({"mode", "scales"});
  const std::string mode = ctx.AttrString("mode", "nearest");
  if (mode != "nearest" && mode != "linear") ctx.Unsupported(fmt::format("mode '{}'", mode));
  const Value& x = ctx.In(0);
  if (!x.is_static()) ctx.Unsupported("Upsample needs a static input shape");
  const Shape in = x.shape();
  std::vector<double> scales;
  if (const auto attr = ctx.AttrFloats("scales")) {
    scales = *attr;
  } else {
    const Tensor s = ctx.RequireConst(1, "scales");
    for (int64_t i = 0; i < s.numel(); ++i) scales.push_back(s.GetDouble(i));
  }
  if (scales.size() != in.size()) ctx.Invalid(fmt::format("'scales' must have {} entries, got {}", in.size(), scales.size()));
  std::vector<int64_t> sizes(in.size());
  for (size_t a = 0; a < in.size(); ++a) sizes[a] = static_cast<int64_t>(std::floor(static_cast<double>(in[a]) * scales[a]));
  ResizeTo(ctx, sizes, scales, mode, "asymmetric", "floor");
}

}  // namespace

void AddResizeOps(std::vector<OpEntry>& t) {
  t.push_back({"Resize", 11, kMaxOpset, Resize});
  t.push_back({"Upsample", 7, 9, Upsample});
}

}  // namespace backplane::onnx
