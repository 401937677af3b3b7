// spatial.grid_sample and spatial.roi_align: sample coordinates computed on the device in the
// reference's compute type and order (f32 for f32/f16/bf16, f64 for f64; divisions by constants
// kept correctly rounded), taps gathered from x laid out as rows [N*H*W, C].
#include <fmt/format.h>

#include <cmath>

#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {
namespace {

// x / c with c a constant, correctly rounded (XLA turns a division by a constant into a product
// with its reciprocal).
Value DivConst(Builder& b, const Value& x, double c) {
  const Value s = b.Scalar(x.dtype(), c);
  const Value opaque = b.Emit("stablehlo.optimization_barrier", std::span(&s, 1), s.type);
  return b.Div(x, b.BroadcastTo(opaque, x.shape()));
}

Value C(Builder& b, const Value& like, double v) { return b.SplatLike(like, v); }
Value Floor(Builder& b, const Value& x) { return b.Unary("stablehlo.floor", x); }
Value Trunc(Builder& b, const Value& x) {
  return b.Select(b.Compare(x, C(b, x, 0.0), "LT"), b.Unary("stablehlo.ceil", x), Floor(b, x));
}
Value Bool(Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.and", x, y); }

// x [N, C, H, W] as rows [N*H*W, C].
Value Rows(Builder& b, const Value& x) {
  const Shape& s = x.shape();
  const int64_t perm[] = {0, 2, 3, 1};
  return b.Reshape(b.Transpose(x, perm), {s[0] * s[2] * s[3], s[1]});
}

// ---- GridSample -------------------------------------------------------------------------------------
struct Grid {
  bool align = false;
  std::string padding, mode;
};

Value Unnormalize(Builder& b, const Value& g, int64_t size, bool align) {
  const double s = static_cast<double>(size);
  if (align) return b.Mul(DivConst(b, b.Add(g, C(b, g, 1.0)), 2.0), C(b, g, s - 1.0));
  return DivConst(b, b.Sub(b.Mul(b.Add(g, C(b, g, 1.0)), C(b, g, s)), C(b, g, 1.0)), 2.0);
}

Value Reflect(Builder& b, Value in, double twice_low, double twice_high) {
  if (twice_low == twice_high) return C(b, in, 0.0);
  const double low = twice_low / 2.0;
  const double span = (twice_high - twice_low) / 2.0;
  in = b.Unary("stablehlo.abs", b.Sub(in, C(b, in, low)));
  const Value flips = Floor(b, DivConst(b, in, span));
  const Value extra = b.Sub(in, b.Mul(flips, C(b, in, span)));
  const Value even = b.Compare(b.Binary("stablehlo.remainder", flips, C(b, flips, 2.0)), C(b, flips, 0.0), "EQ");
  return b.Select(even, b.Add(extra, C(b, in, low)), b.Add(b.Sub(C(b, in, span), extra), C(b, in, low)));
}

// std::min(std::max(c, lo), hi): NaN stays (comparisons with NaN are false).
Value ClampKeepNaN(Builder& b, const Value& c, double lo, double hi) {
  const Value l = C(b, c, lo), h = C(b, c, hi);
  const Value m = b.Select(b.Compare(c, l, "LT"), l, c);  // std::max(c, lo) = c < lo ? lo : c
  return b.Select(b.Compare(h, m, "LT"), h, m);           // std::min(m, hi) = hi < m ? hi : m
}

Value PadCoord(Builder& b, Value c, int64_t size, const Grid& g) {
  const double hi = static_cast<double>(size - 1);
  if (g.padding == "border") return ClampKeepNaN(b, c, 0.0, hi);
  if (g.padding == "reflection") {
    const double s = static_cast<double>(size);
    c = g.align ? Reflect(b, c, 0.0, 2.0 * hi) : Reflect(b, c, -1.0, 2.0 * s - 1.0);
    return ClampKeepNaN(b, c, 0.0, hi);
  }
  return c;
}

// Taps of x (rows [N*H*W, C]) at integral coordinates (xc, yc) [N, Ho, Wo]: [N, Ho, Wo, C], 0 outside.
Value Tap(Builder& b, const Value& rows, int64_t h, int64_t w, const Value& xc, const Value& yc) {
  const Value valid = Bool(b, Bool(b, b.Compare(xc, C(b, xc, 0.0), "GE"), b.Compare(xc, C(b, xc, static_cast<double>(w - 1)), "LE")),
                           Bool(b, b.Compare(yc, C(b, yc, 0.0), "GE"), b.Compare(yc, C(b, yc, static_cast<double>(h - 1)), "LE")));
  const TensorType it{DType::Int64, xc.shape()};
  const Value xi = b.Convert(b.Select(valid, xc, C(b, xc, 0.0)), DType::Int64);
  const Value yi = b.Convert(b.Select(valid, yc, C(b, yc, 0.0)), DType::Int64);
  const Value n = b.Iota(it, 0);
  const Value idx = b.Add(b.Mul(n, b.Splat(it, static_cast<double>(h * w))), b.Add(b.Mul(yi, b.Splat(it, static_cast<double>(w))), xi));
  const Value v = TakeRows(b, rows, idx);
  const std::vector<int64_t> dims = {0, 1, 2};
  return b.Select(b.BroadcastInDim(valid, v.shape(), dims), v, b.SplatLike(v, 0.0));
}

Value Cubic(Builder& b, const Value& x, int tap) {
  constexpr double A = -0.75;
  auto near = [&](const Value& t) {
    return b.Add(b.Mul(b.Mul(b.Sub(b.Mul(C(b, t, A + 2.0), t), C(b, t, A + 3.0)), t), t), C(b, t, 1.0));
  };
  auto far = [&](const Value& t) {
    return b.Sub(b.Mul(b.Add(b.Mul(b.Sub(b.Mul(C(b, t, A), t), C(b, t, 5.0 * A)), t), C(b, t, 8.0 * A)), t), C(b, t, 4.0 * A));
  };
  const Value one = C(b, x, 1.0);
  switch (tap) {
    case 0: return far(b.Add(x, one));
    case 1: return near(x);
    case 2: return near(b.Sub(one, x));
    default: return far(b.Add(b.Sub(one, x), one));
  }
}

std::vector<Value> GridSample(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const Grid g{ctx.attrs().Bool("align_corners"), ctx.attrs().String("padding_mode"), ctx.attrs().String("mode")};
  const DType ct = ComputeType(in[0].dtype());
  const Shape& xs = in[0].shape();
  const int64_t n = xs[0], h = xs[2], w = xs[3], ho = out.shape[2], wo = out.shape[3];
  const Value rows = Rows(b, b.Convert(in[0], ct));
  const Value grid = b.Convert(in[1], ct);
  const Shape gs{n, ho, wo};
  auto component = [&](int64_t c) {
    return b.Reshape(b.Slice(grid, std::vector<int64_t>{0, 0, 0, c}, std::vector<int64_t>{n, ho, wo, c + 1},
                             std::vector<int64_t>{1, 1, 1, 1}),
                     gs);
  };
  const Value ux = Unnormalize(b, component(0), w, g.align), uy = Unnormalize(b, component(1), h, g.align);
  const Value finite = Bool(b, b.Emit("stablehlo.is_finite", std::span(&ux, 1), {DType::Bool, gs}),
                            b.Emit("stablehlo.is_finite", std::span(&uy, 1), {DType::Bool, gs}));
  const Value ix = PadCoord(b, ux, w, g), iy = PadCoord(b, uy, h, g);
  const std::vector<int64_t> d3 = {0, 1, 2};
  auto spread = [&](const Value& t) { return b.BroadcastInDim(t, {n, ho, wo, xs[1]}, d3); };
  Value value;
  if (g.mode == "nearest") {
    value = Tap(b, rows, h, w, b.Unary("stablehlo.round_nearest_even", ix), b.Unary("stablehlo.round_nearest_even", iy));
  } else if (g.mode == "bilinear") {
    const Value x0 = Floor(b, ix), y0 = Floor(b, iy);
    const Value x1 = b.Add(x0, C(b, x0, 1.0)), y1 = b.Add(y0, C(b, y0, 1.0));
    const Value wx1 = b.Sub(ix, x0), wx0 = b.Sub(x1, ix), wy1 = b.Sub(iy, y0), wy0 = b.Sub(y1, iy);
    value = b.Mul(Tap(b, rows, h, w, x0, y0), spread(b.Mul(wx0, wy0)));
    value = b.Add(value, b.Mul(Tap(b, rows, h, w, x1, y0), spread(b.Mul(wx1, wy0))));
    value = b.Add(value, b.Mul(Tap(b, rows, h, w, x0, y1), spread(b.Mul(wx0, wy1))));
    value = b.Add(value, b.Mul(Tap(b, rows, h, w, x1, y1), spread(b.Mul(wx1, wy1))));
  } else {
    // Bicubic on the unpadded coordinate; each tap coordinate padded on its own.
    const Value x0 = Floor(b, ux), y0 = Floor(b, uy);
    const Value tx = b.Sub(ux, x0), ty = b.Sub(uy, y0);
    for (int i = 0; i < 4; ++i) {
      Value acc;
      for (int j = 0; j < 4; ++j) {
        const Value px = PadCoord(b, b.Add(x0, C(b, x0, j - 1.0)), w, g);
        const Value py = PadCoord(b, b.Add(y0, C(b, y0, i - 1.0)), h, g);
        const Value t = b.Mul(Tap(b, rows, h, w, Trunc(b, px), Trunc(b, py)), spread(Cubic(b, tx, j)));
        acc = j == 0 ? t : b.Add(acc, t);
      }
      const Value r = b.Mul(acc, spread(Cubic(b, ty, i)));
      value = i == 0 ? r : b.Add(value, r);
    }
  }
  value = b.Select(spread(finite), value, b.SplatLike(value, NAN));
  const int64_t perm[] = {0, 3, 1, 2};
  return {b.Convert(b.Transpose(value, perm), out.dtype)};
}

// ---- RoiAlign ---------------------------------------------------------------------------------------
std::vector<Value> RoiAlign(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const runtime::Attrs& a = ctx.attrs();
  const TensorType& out = ctx.out_type(0);
  const int64_t ratio = a.Int("sampling_ratio");
  const Shape& xs = in[0].shape();
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], r = in[1].shape()[0];
  const Value bi = b.Convert(in[2], DType::Int64);
  if (r > 0) {
    ctx.Require(All(b, Bool(b, b.Compare(bi, b.SplatLike(bi, 0.0), "GE"), b.Compare(bi, b.SplatLike(bi, static_cast<double>(n)), "LT"))),
                fmt::format("argument 'batchIndices' must be in [0, {})", n));
  }
  if (ratio == 0) {
    ctx.Unsupported("adaptive sampling (sampling_ratio 0): the samples per bin, ceil(roi size / bins), depend on the "
                    "roi values");
  }
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const DType ct = ComputeType(in[0].dtype());
  const int64_t oh = a.Int("output_height"), ow = a.Int("output_width"), gh = ratio, gw = ratio;
  const double scale = ct == DType::Float32 ? static_cast<double>(static_cast<float>(a.Float("spatial_scale")))
                                            : a.Float("spatial_scale");
  const bool half_pixel = a.Bool("half_pixel");
  const Value rois = b.Convert(in[1], ct);
  auto col = [&](int64_t i) {
    const Value v = b.Reshape(b.Slice(rois, std::vector<int64_t>{0, i}, std::vector<int64_t>{r, i + 1},
                                      std::vector<int64_t>{1, 1}),
                              {r});
    return b.Sub(b.Mul(v, C(b, v, scale)), C(b, v, half_pixel ? 0.5 : 0.0));
  };
  const Value x1 = col(0), y1 = col(1), x2 = col(2), y2 = col(3);
  Value roi_w = b.Sub(x2, x1), roi_h = b.Sub(y2, y1);
  if (!half_pixel) {
    roi_w = b.Select(b.Compare(roi_w, C(b, roi_w, 1.0), "LT"), C(b, roi_w, 1.0), roi_w);  // std::max(roiW, 1)
    roi_h = b.Select(b.Compare(roi_h, C(b, roi_h, 1.0), "LT"), C(b, roi_h, 1.0), roi_h);
  }
  const Value bin_h = DivConst(b, roi_h, static_cast<double>(oh)), bin_w = DivConst(b, roi_w, static_cast<double>(ow));
  // One axis: sample coordinates [R, bins, grid] and their bilinear parts.
  struct AxisSamples {
    Value valid, low, high, l, hgt;
  };
  auto axis = [&](const Value& start, const Value& bin, int64_t bins, int64_t grid, int64_t size) {
    const Shape s{r, bins, grid};
    const TensorType t{ct, s};
    const std::vector<int64_t> d0 = {0};
    const Value st = b.BroadcastInDim(start, s, d0), bn = b.BroadcastInDim(bin, s, d0);
    const Value p = b.Convert(b.Iota({DType::Int64, s}, 1), ct), g = b.Convert(b.Iota({DType::Int64, s}, 2), ct);
    // start + p bin + (g + 0.5) bin / grid
    Value y = b.Add(b.Add(st, b.Mul(p, bn)), DivConst(b, b.Mul(b.Add(g, b.Splat(t, 0.5)), bn), static_cast<double>(grid)));
    const double fs = static_cast<double>(size);
    AxisSamples out;
    out.valid = Bool(b, b.Unary("stablehlo.not", b.Compare(y, b.Splat(t, -1.0), "LT")),
                     b.Unary("stablehlo.not", b.Compare(y, b.Splat(t, fs), "GT")));
    y = b.Select(b.Compare(y, b.Splat(t, 0.0), "LT"), b.Splat(t, 0.0), y);  // std::max(y, 0)
    const TensorType it{DType::Int64, s};
    Value low = b.Convert(y, DType::Int64);
    const Value edge = b.Compare(low, b.Splat(it, static_cast<double>(size - 1)), "GE");
    low = b.Select(edge, b.Splat(it, static_cast<double>(size - 1)), low);
    out.low = low;
    out.high = b.Select(edge, low, b.Add(low, b.Splat(it, 1.0)));
    y = b.Select(edge, b.Convert(low, ct), y);
    out.l = b.Sub(y, b.Convert(low, ct));
    out.hgt = b.Sub(b.Splat(t, 1.0), out.l);
    return out;
  };
  const AxisSamples ys = axis(y1, bin_h, oh, gh, h), xs_ = axis(x1, bin_w, ow, gw, w);
  // Combined [R, oh, ow, gh, gw].
  const Shape full{r, oh, ow, gh, gw};
  const std::vector<int64_t> ydims = {0, 1, 3}, xdims = {0, 2, 4};
  auto Y = [&](const Value& v) { return b.BroadcastInDim(v, full, ydims); };
  auto X = [&](const Value& v) { return b.BroadcastInDim(v, full, xdims); };
  const Value valid = Bool(b, Y(ys.valid), X(xs_.valid));
  const TensorType it{DType::Int64, full};
  const Value base = b.Mul(b.BroadcastInDim(bi, full, std::vector<int64_t>{0}), b.Splat(it, static_cast<double>(h * w)));
  const Value rows = Rows(b, b.Convert(in[0], ct));
  const Shape vs{r, oh, ow, gh, gw, c};
  const std::vector<int64_t> d5 = {0, 1, 2, 3, 4};
  auto corner = [&](const Value& yy, const Value& xx, const Value& wy, const Value& wx) {
    const Value pos = b.Select(valid, b.Add(b.Mul(Y(yy), b.Splat(it, static_cast<double>(w))), X(xx)), b.Splat(it, 0.0));
    const Value wt = b.Select(valid, b.Mul(Y(wy), X(wx)), b.Splat({ct, full}, 0.0));
    return b.Mul(b.BroadcastInDim(wt, vs, d5), TakeRows(b, rows, b.Add(base, pos)));
  };
  const Value v0 = corner(ys.low, xs_.low, ys.hgt, xs_.hgt);
  const Value v1 = corner(ys.low, xs_.high, ys.hgt, xs_.l);
  const Value v2 = corner(ys.high, xs_.low, ys.l, xs_.hgt);
  const Value v3 = corner(ys.high, xs_.high, ys.l, xs_.l);
  const int64_t samples[] = {3, 4};
  Value value;
  if (a.String("mode") == "avg") {
    const Value s = b.Add(b.Add(b.Add(v0, v1), v2), v3);
    value = DivConst(b, b.Reduce(s, samples, ReduceKind::Sum), static_cast<double>(std::max<int64_t>(gh * gw, 1)));
  } else {
    // std::max(a, b) = a < b ? b : a, folded over the samples in order: NaN only from the first.
    auto mx = [&](const Value& p, const Value& q) { return b.Select(b.Compare(p, q, "LT"), q, p); };
    const Value m = mx(mx(v0, v1), mx(v2, v3));
    const Value clean = b.Select(b.Compare(m, m, "NE"), b.SplatLike(m, -INFINITY), m);
    const Value best = b.Reduce(clean, samples, ReduceKind::Max);
    const Value first = b.Reshape(b.Slice(m, std::vector<int64_t>{0, 0, 0, 0, 0, 0}, std::vector<int64_t>{r, oh, ow, 1, 1, c},
                                          std::vector<int64_t>{1, 1, 1, 1, 1, 1}),
                                  {r, oh, ow, c});
    value = b.Select(b.Compare(first, first, "NE"), first, best);
  }
  const int64_t perm[] = {0, 3, 1, 2};
  return {b.Convert(b.Transpose(value, perm), out.dtype)};
}

}  // namespace

void RegisterSpatialLowerings(LoweringTable& t) {
  t.Add("spatial.grid_sample", GridSample);
  t.Add("spatial.roi_align", RoiAlign);
}

}  // namespace backplane::xla::nn
