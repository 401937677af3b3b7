// Lowerings of ONNX's Resize (opsets 11-17: nearest, linear and cubic, every coordinate
// transformation) and Upsample for static inputs: per axis, the source indices and weights of every
// output position are computed at import time as ONNX's reference does; the data is gathered along
// the axis (tensor.gather_elements with a constant index) and blended with constant weights.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

// Source coordinate of output position `o` on an axis of `in` elements at `scale`; the resized
// length is in * scale unrounded, as ONNX's reference has it (sizes give scale = sizes / in);
// `roi` is the axis's [start, end] (tf_crop_and_resize only).
double SourceCoordinate(const std::string& mode, double o, int64_t in, double scale, double roi_start, double roi_end) {
  const double out = static_cast<double>(in) * scale, span = static_cast<double>(in - 1);
  if (mode == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out == 1 ? 0.0 : o * span / (out - 1);
  if (mode == "asymmetric") return o / scale;
  if (mode == "tf_crop_and_resize") {
    return out > 1 ? roi_start * span + o * (roi_end - roi_start) * span / (out - 1) : 0.5 * (roi_start + roi_end) * span;
  }
  return (o + 0.5) / scale;  // tf_half_pixel_for_nn
}

int64_t NearestIndex(const std::string& mode, double x) {
  const double f = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

// Keys' cubic convolution weights of the taps at floor(x) - 1 .. floor(x) + 2 for fraction r.
std::vector<double> CubicWeights(double r, double a) {
  auto w = [a](double t) {
    t = std::fabs(t);
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0.0;
  };
  return {w(1 + r), w(r), w(1 - r), w(2 - r)};
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

struct ResizeMode {
  std::string mode = "nearest";             // nearest, linear, cubic
  std::string coordinates = "half_pixel";   // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;               // tf_crop_and_resize, outside the roi
};

// One axis's sampling: `taps` source indices (clamped into the input, i.e. edge padding) and
// weights per output position, and whether the position lies outside the input (extrapolated).
struct AxisTaps {
  size_t taps = 1;
  std::vector<std::vector<int64_t>> index;  // [tap][o]
  std::vector<std::vector<double>> weight;  // [tap][o]
  std::vector<bool> outside;
  bool any_outside = false;
};

AxisTaps SampleAxis(const ResizeMode& m, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisTaps t;
  t.taps = m.mode == "nearest" ? 1 : m.mode == "linear" ? 2 : 4;
  t.index.assign(t.taps, std::vector<int64_t>(static_cast<size_t>(out), 0));
  t.weight.assign(t.taps, std::vector<double>(static_cast<size_t>(out), 0.0));
  t.outside.assign(static_cast<size_t>(out), false);
  const auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    const auto so = static_cast<size_t>(o);
    const double x = SourceCoordinate(m.coordinates, static_cast<double>(o), in, scale, roi_start, roi_end);
    if (m.coordinates == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1))) {
      t.outside[so] = t.any_outside = true;
      continue;  // every weight 0
    }
    if (m.mode == "nearest") {
      t.index[0][so] = clamp(NearestIndex(m.nearest, x));
      t.weight[0][so] = 1.0;
    } else if (m.mode == "linear") {
      const double c = std::clamp(x, 0.0, static_cast<double>(in - 1));
      const auto i0 = static_cast<int64_t>(std::floor(c));
      t.index[0][so] = i0;
      t.index[1][so] = std::min(i0 + 1, in - 1);
      t.weight[0][so] = 1.0 - (c - static_cast<double>(i0));
      t.weight[1][so] = c - static_cast<double>(i0);
    } else {
      const double f = std::floor(x);
      const auto i0 = static_cast<int64_t>(f);
      std::vector<double> w = x == f ? std::vector<double>{0, 1, 0, 0} : CubicWeights(x - f, m.cubic_a);
      if (m.exclude_outside) {
        double sum = 0;
        for (size_t k = 0; k < 4; ++k) {
          const int64_t i = i0 - 1 + static_cast<int64_t>(k);
          if (i < 0 || i >= in) w[k] = 0;
          sum += w[k];
        }
        for (double& wk : w) wk /= sum;
      }
      for (size_t k = 0; k < 4; ++k) {
        t.index[k][so] = clamp(i0 - 1 + static_cast<int64_t>(k));
        t.weight[k][so] = w[k];
      }
    }
  }
  return t;
}

// A constant of dtype `d` shaped 1 except `extent` on `axis`.
std::string AxisConst(Context& ctx, DType d, size_t rank, size_t axis, const std::vector<double>& values, const std::string& hint) {
  Shape shape(rank, 1);
  shape[axis] = static_cast<int64_t>(values.size());
  Tensor t(d, shape);
  for (size_t o = 0; o < values.size(); ++o) t.SetDouble(static_cast<int64_t>(o), values[o]);
  return ctx.ConstTensor(t, hint);
}

// Resizes `x` to `sizes` (scales as ONNX gives them, or out / in) along every axis that changes,
// one axis at a time: the sum over taps of the gathered data times constant weights.
void ResizeTo(Context& ctx, const std::vector<int64_t>& sizes, const std::vector<double>& scales,
              const std::vector<double>& roi, const ResizeMode& m) {
  std::string v = ctx.Input(0);
  const Shape in = ctx.In(0).shape();
  const DType d = ctx.In(0).dtype;
  const bool crop = m.coordinates == "tf_crop_and_resize";
  for (size_t a = 0; a < in.size(); ++a) {
    const double roi_start = crop ? roi[a] : 0.0, roi_end = crop ? roi[a + in.size()] : 1.0;
    if (sizes[a] == in[a] && scales[a] == 1.0 && (!crop || (roi_start == 0.0 && roi_end == 1.0))) continue;
    const AxisTaps t = SampleAxis(m, in[a], sizes[a], scales[a], roi_start, roi_end);
    if (m.mode == "nearest" && !t.any_outside) {
      v = GatherAxis(ctx, v, a, t.index[0]);
      continue;
    }
    std::string sum;
    for (size_t k = 0; k < t.taps; ++k) {
      if (std::all_of(t.weight[k].begin(), t.weight[k].end(), [](double w) { return w == 0.0; })) continue;
      const std::string term =
          ctx.Op("math.mul", {GatherAxis(ctx, v, a, t.index[k]), AxisConst(ctx, d, in.size(), a, t.weight[k], "resize_w")});
      sum = sum.empty() ? term : ctx.Op("math.add", {sum, term});
    }
    if (sum.empty()) {  // every position extrapolated
      std::vector<double> zero(static_cast<size_t>(sizes[a]), 0.0);
      sum = ctx.Op("math.mul", {GatherAxis(ctx, v, a, t.index[0]), AxisConst(ctx, d, in.size(), a, zero, "resize_w")});
    }
    if (t.any_outside && m.extrapolation != 0.0) {
      std::vector<double> fill(static_cast<size_t>(sizes[a]));
      for (size_t o = 0; o < fill.size(); ++o) fill[o] = t.outside[o] ? m.extrapolation : 0.0;
      sum = ctx.Op("math.add", {sum, AxisConst(ctx, d, in.size(), a, fill, "resize_fill")});
    }
    v = sum;
  }
  ctx.Alias(v, ctx.Output(0));
}

void Resize(Context& ctx) {
  ctx.AllowAttrs({"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "mode",
                  "nearest_mode"});
  ResizeMode m;
  m.mode = ctx.AttrString("mode", "nearest");
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") {
    ctx.Invalid(fmt::format("attribute 'mode' must be nearest, linear or cubic, got '{}'", m.mode));
  }
  m.coordinates = ctx.AttrString("coordinate_transformation_mode", "half_pixel");
  if (m.coordinates != "half_pixel" && m.coordinates != "pytorch_half_pixel" && m.coordinates != "align_corners" &&
      m.coordinates != "asymmetric" && m.coordinates != "tf_half_pixel_for_nn" && m.coordinates != "tf_crop_and_resize") {
    ctx.Unsupported(fmt::format("coordinate_transformation_mode '{}'", m.coordinates));
  }
  m.nearest = ctx.AttrString("nearest_mode", "round_prefer_floor");
  if (m.nearest != "round_prefer_floor" && m.nearest != "round_prefer_ceil" && m.nearest != "floor" && m.nearest != "ceil") {
    ctx.Invalid(fmt::format("attribute 'nearest_mode' must be round_prefer_floor, round_prefer_ceil, floor or ceil, got '{}'", m.nearest));
  }
  m.cubic_a = ctx.AttrFloat("cubic_coeff_a", -0.75);
  m.exclude_outside = ctx.AttrInt("exclude_outside", 0) != 0;
  m.extrapolation = ctx.AttrFloat("extrapolation_value", 0.0);
  const Value& x = ctx.In(0);
  if (!x.is_static()) ctx.Unsupported("Resize needs a static input shape");
  const Shape in = x.shape();
  std::vector<double> roi;
  if (m.coordinates == "tf_crop_and_resize") {
    if (!ctx.HasInput(1)) ctx.Invalid("coordinate_transformation_mode tf_crop_and_resize needs input 'roi'");
    const Tensor r = ctx.RequireConst(1, "roi");
    if (r.numel() != 2 * static_cast<int64_t>(in.size())) {
      ctx.Invalid(fmt::format("input 'roi' must have {} entries, got {}", 2 * in.size(), r.numel()));
    }
    for (int64_t i = 0; i < r.numel(); ++i) roi.push_back(r.GetDouble(i));
  }
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
  ResizeTo(ctx, sizes, scales, roi, m);
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
  ResizeMode m;
  m.mode = mode;
  m.coordinates = "asymmetric";
  m.nearest = "floor";
  ResizeTo(ctx, sizes, scales, {}, m);
}

}  // namespace

void AddResizeOps(std::vector<OpEntry>& t) {
  t.push_back({"Resize", 11, kMaxOpset, Resize});
  t.push_back({"Upsample", 7, 9, Upsample});
}

}  // namespace backplane::onnx
