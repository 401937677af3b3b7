// convolution.* on stablehlo.convolution (f64, grouped, strided, dilated, zero padded; the
// transposed one as a convolution of the stride-dilated input with the flipped kernel) and
// pooling.* on reduce_window (max: padding never wins, NaN propagates; avg: in-input or padded tap
// counts), adaptive pools as slices, max_pool_with_indices as a variadic reduce_window over
// (value, position) pairs.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "backplane/backend/pool_nd.hpp"
#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {
namespace {

std::string PaddingAttr(std::span<const int64_t> lo, std::span<const int64_t> hi) {
  std::string s = "dense<[";
  for (size_t i = 0; i < lo.size(); ++i) s += fmt::format("{}[{}, {}]", i ? ", " : "", lo[i], hi[i]);
  return s + fmt::format("]> : tensor<{}x2xi64>", lo.size());
}

struct ConvAxis {
  int64_t stride = 1, pad = 0, dil = 1, out_pad = 0;
};

std::vector<ConvAxis> ConvAxes(const runtime::Attrs& a, size_t r, bool transposed) {
  static const char* kNames[] = {"d", "h", "w"};
  std::vector<ConvAxis> axes(r);
  for (size_t i = 0; i < r; ++i) {
    const std::string ax = kNames[3 - r + i];
    const bool plain = r == 1;
    axes[i].stride = a.Int(plain ? "stride" : "stride_" + ax);
    axes[i].pad = a.Int(plain ? "padding" : "pad_" + ax);
    axes[i].dil = a.Int(plain ? "dilation" : "dil_" + ax);
    if (transposed) axes[i].out_pad = a.Int("out_pad_" + ax);
  }
  return axes;
}

// lhs [N, C, s...] and rhs (kernel layout `kernel`: "o, i" or "i, o") in f64.
Value Convolution(Builder& b, const Value& lhs, const Value& rhs, const TensorType& out, const char* kernel,
                  std::span<const int64_t> strides, std::span<const int64_t> lo, std::span<const int64_t> hi,
                  std::span<const int64_t> lhs_dil, std::span<const int64_t> rhs_dil, int64_t groups) {
  const size_t r = strides.size();
  std::string sp;
  for (size_t i = 0; i < r; ++i) sp += fmt::format(", {}", i);
  const Value ops[] = {lhs, rhs};
  return b.Emit("stablehlo.convolution", ops, out,
                fmt::format("batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f{0}]x[{1}{0}]->[b, f{0}]>, "
                            "feature_group_count = {2} : i64, lhs_dilation = {3}, padding = {4}, rhs_dilation = {5}, "
                            "window_strides = {6}, precision_config = [#stablehlo<precision HIGHEST>, "
                            "#stablehlo<precision HIGHEST>]",
                            sp, kernel, groups, I64Array(lhs_dil), PaddingAttr(lo, hi), I64Array(rhs_dil),
                            I64Array(strides)));
}

Value AddBias(Builder& b, const Value& y, std::span<const Value> in) {
  if (!Has(in, 2)) return y;
  return b.Add(y, b.BroadcastInDim(b.Convert(in[2], y.dtype()), y.shape(), std::vector<int64_t>{1}));
}

// The convolution as the reference sums it, tap by tap over the input elements only: padding and
// the holes of a transposed convolution never meet a weight (so 0 * Inf is no NaN). x [N, C, s...]
// and w [O, C / groups, k...] f64; the input padded by lo / hi (may be negative) with `interior`
// holes.
Value ConvByTaps(Builder& b, const Value& x, const Value& w, const Shape& out, std::span<const int64_t> strides,
                 std::span<const int64_t> dils, std::span<const int64_t> lo, std::span<const int64_t> hi,
                 std::span<const int64_t> interior, int64_t groups) {
  const int64_t r = static_cast<int64_t>(strides.size());
  const int64_t n = x.shape()[0], c = x.shape()[1], o = w.shape()[0];
  std::vector<int64_t> plo{0, 0}, phi{0, 0}, pin{0, 0};
  plo.insert(plo.end(), lo.begin(), lo.end());
  phi.insert(phi.end(), hi.begin(), hi.end());
  pin.insert(pin.end(), interior.begin(), interior.end());
  const Value xp = Pad(b, x, b.Scalar(x.dtype(), 0.0), plo, phi, pin);
  const Shape spatial(x.shape().begin() + 2, x.shape().end());
  const Value mask = Pad(b, b.Splat({DType::Bool, spatial}, 1.0), b.Scalar(DType::Bool, 0.0), lo, hi, interior);
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  const Shape out_spatial(out.begin() + 2, out.end());
  Value y = b.Splat({x.dtype(), out}, 0.0);
  for (int64_t t = 0; t < NumElements(kernel); ++t) {
    std::vector<int64_t> k(static_cast<size_t>(r));
    for (int64_t i = r, f = t; i-- > 0;) {
      k[static_cast<size_t>(i)] = f % kernel[static_cast<size_t>(i)];
      f /= kernel[static_cast<size_t>(i)];
    }
    std::vector<int64_t> xs{0, 0}, xl{n, c}, xstr{1, 1}, ms, ml, ws{0, 0}, wl{o, w.shape()[1]};
    for (int64_t i = 0; i < r; ++i) {
      const size_t a = static_cast<size_t>(i);
      const int64_t start = k[a] * dils[a], limit = start + (out_spatial[a] - 1) * strides[a] + 1;
      xs.push_back(start);
      xl.push_back(limit);
      xstr.push_back(strides[a]);
      ms.push_back(start);
      ml.push_back(limit);
      ws.push_back(k[a]);
      wl.push_back(k[a] + 1);
    }
    const std::vector<int64_t> mstr(xstr.begin() + 2, xstr.end());
    Shape xg{n, groups, c / groups};
    xg.insert(xg.end(), out_spatial.begin(), out_spatial.end());
    const Value xt = b.Reshape(b.Slice(xp, xs, xl, xstr), xg);
    const Value wt = b.Reshape(b.Slice(w, ws, wl, std::vector<int64_t>(static_cast<size_t>(r) + 2, 1)),
                               {groups, o / groups, c / groups});
    const int64_t ba[] = {1}, bb[] = {0}, ca[] = {2}, cb[] = {2};
    const Value prod = b.DotGeneral(xt, wt, ba, bb, ca, cb, x.dtype());  // [g, N, out..., O/g]
    std::vector<int64_t> perm{1, 0, 2 + r};
    for (int64_t i = 0; i < r; ++i) perm.push_back(2 + i);
    const Value term = b.Reshape(b.Transpose(prod, perm), out);
    const Value seen = b.BroadcastInDim(b.Slice(mask, ms, ml, mstr), out, Range(r + 2, 2));
    y = b.Add(y, b.Select(seen, term, b.Splat(term.type, 0.0)));
  }
  return y;
}

// `fast` when every weight is finite (padding and holes then add exact zeros), else tap by tap (the
// plugin's convolution skips padding today; this keeps the reference's rule whatever it emits).
Value ExactWhenNonFinite(Builder& b, const Value& w, bool needs, const std::function<Value(Builder&)>& fast,
                         const std::function<Value(Builder&)>& taps, const TensorType& type) {
  if (!needs) return fast(b);
  // The fast convolution runs in the main computation (inside a case branch the CPU plugin loses
  // its fast convolution: 50x slower); the branch only picks it or computes the taps.
  const Value fast_value = fast(b);
  const Value finite = All(b, b.Emit("stablehlo.is_finite", std::span(&w, 1), {DType::Bool, w.shape()}));
  const Value branch = b.Select(finite, b.Scalar(DType::Int32, 0.0), b.Scalar(DType::Int32, 1.0));
  const Builder::Region regions[] = {
      {{}, [&](Builder&, std::span<const Value>) { return std::vector<Value>{fast_value}; }},
      {{}, [&](Builder& rb, std::span<const Value>) { return std::vector<Value>{taps(rb)}; }}};
  return b.EmitRegions("stablehlo.case", std::span(&branch, 1), std::span(&type, 1), regions)[0];
}

LowerFn Conv(size_t r) {
  return [r](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    if (NumElements(out.shape) == 0) return std::vector<Value>{b.Splat(out, 0.0)};
    const std::vector<ConvAxis> axes = ConvAxes(ctx.attrs(), r, false);
    std::vector<int64_t> strides, pads, dils, ones(r, 1), zeros(r, 0);
    bool padded = false;
    for (const ConvAxis& a : axes) {
      strides.push_back(a.stride);
      pads.push_back(a.pad);
      dils.push_back(a.dil);
      padded = padded || a.pad > 0;
    }
    const int64_t groups = ctx.attrs().Int("groups");
    // f32 (and f16/bf16) accumulate in f32 like the CPU's SIMD kernels; f64 in f64.
    const DType acc = ComputeType(out.dtype);
    const Value x = b.Convert(in[0], acc), w = b.Convert(in[1], acc);
    const TensorType yt{acc, out.shape};
    const Value y = ExactWhenNonFinite(
        b, w, padded,
        [&](Builder& rb) { return Convolution(rb, x, w, yt, "o, i", strides, pads, pads, ones, dils, groups); },
        [&](Builder& rb) { return ConvByTaps(rb, x, w, out.shape, strides, dils, pads, pads, zeros, groups); }, yt);
    return std::vector<Value>{StoreAs(b, AddBias(b, y, in), out.dtype)};
  };
}

std::vector<Value> ConvTranspose2d(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const std::vector<ConvAxis> axes = ConvAxes(ctx.attrs(), 2, true);
  std::vector<int64_t> lo, hi, lhs_dil, holes, dils, ones(2, 1);
  bool zeros_meet_weights = false;
  for (size_t i = 0; i < 2; ++i) {
    const ConvAxis& a = axes[i];
    const int64_t k = in[1].shape()[i + 2];
    const int64_t edge = a.dil * (k - 1) - a.pad;
    lo.push_back(edge);
    hi.push_back(edge + a.out_pad);
    lhs_dil.push_back(a.stride);
    holes.push_back(a.stride - 1);
    dils.push_back(a.dil);
    zeros_meet_weights = zeros_meet_weights || a.stride > 1 || edge > 0 || edge + a.out_pad > 0;
  }
  const int64_t flip[] = {2, 3};
  const DType acc = ComputeType(out.dtype);  // as in Conv
  const Value x = b.Convert(in[0], acc);
  const Value w = Reverse(b, b.Convert(in[1], acc), flip);
  const TensorType yt{acc, out.shape};
  const Value y = ExactWhenNonFinite(
      b, w, zeros_meet_weights,
      [&](Builder& rb) { return Convolution(rb, x, w, yt, "i, o", ones, lo, hi, lhs_dil, dils, 1); },
      [&](Builder& rb) {
        const int64_t perm[] = {1, 0, 2, 3};
        return ConvByTaps(rb, x, rb.Transpose(w, perm), out.shape, ones, dils, lo, hi, holes, 1);
      },
      yt);
  return {StoreAs(b, AddBias(b, y, in), out.dtype)};
}

// ---- pooling helpers --------------------------------------------------------------------------------
// Window over [N, C, spatial...]: one tap on N and C.
Window SpatialWindow(std::span<const int64_t> k, std::span<const int64_t> s, std::span<const int64_t> d,
                     std::span<const int64_t> lo, std::span<const int64_t> hi) {
  Window w{{1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  for (size_t i = 0; i < k.size(); ++i) {
    w.dims.push_back(k[i]);
    w.strides.push_back(s[i]);
    w.dilations.push_back(d[i]);
    w.pad_lo.push_back(lo[i]);
    w.pad_hi.push_back(hi[i]);
  }
  return w;
}

// The reference's max: the largest value, NaN when any tap is NaN.
Value MaxWindowNaN(Builder& b, const Value& x, const Window& w) {
  const Value m = ReduceWindow(b, x, ReduceKind::Max, w);
  if (!IsFloatingPoint(x.dtype())) return m;
  const Value nan = b.Convert(b.Compare(x, x, "NE"), x.dtype());
  const Value any = ReduceWindow(b, nan, ReduceKind::Max, w);
  return b.Select(b.Compare(any, b.SplatLike(any, 0.0), "GT"), b.SplatLike(m, NAN), m);
}

// Keeps the first `out` positions of each spatial axis (ceil mode can leave one window too many
// when the end padding is widened to fit the last window).
Value Crop(Builder& b, const Value& x, const Shape& out) {
  if (x.shape() == out) return x;
  const std::vector<int64_t> st(out.size(), 0), str(out.size(), 1);
  return b.Slice(x, st, out, str);
}

// Max over an axis of f64/any x with the reference's NaN rule.
Value MaxAxisNaN(Builder& b, const Value& x, int64_t axis) {
  const int64_t dims[] = {axis};
  const Value m = b.ReduceKeep(x, dims, ReduceKind::Max);
  if (!IsFloatingPoint(x.dtype())) return m;
  const Value any = b.ReduceKeep(b.Compare(x, x, "NE"), dims, ReduceKind::Or);
  return b.Select(any, b.SplatLike(m, NAN), m);
}

// ---- 2-D pools (pooling.max/avg_pool2d, adaptive) ---------------------------------------------------
struct Pool2d {
  int64_t kh, kw, sh, sw, ph, pw;
};
Pool2d Pool2dAttrs(const runtime::Attrs& a) {
  return {a.Int("kernel_h"), a.Int("kernel_w"), a.Int("stride_h"), a.Int("stride_w"), a.Int("pad_h"), a.Int("pad_w")};
}

std::vector<Value> MaxPool2d(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const Pool2d p = Pool2dAttrs(ctx.attrs());
  const int64_t k[] = {p.kh, p.kw}, s[] = {p.sh, p.sw}, d[] = {1, 1}, pad[] = {p.ph, p.pw};
  return {MaxWindowNaN(b, in[0], SpatialWindow(k, s, d, pad, pad))};
}

// In-bounds taps of window o along one axis: [max(o s - p, 0), min(o s - p + k, in)).
std::vector<double> FixedCounts(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p) {
  std::vector<double> c;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    c.push_back(static_cast<double>(std::min(start + k, in) - std::max<int64_t>(start, 0)));
  }
  return c;
}

std::vector<Value> AvgPool2d(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const Pool2d p = Pool2dAttrs(ctx.attrs());
  const int64_t k[] = {p.kh, p.kw}, s[] = {p.sh, p.sw}, d[] = {1, 1}, pad[] = {p.ph, p.pw};
  const Value sum = ReduceWindow(b, F64(b, in[0]), ReduceKind::Sum, SpatialWindow(k, s, d, pad, pad));
  const Shape& xs = in[0].shape();
  const int64_t oh = out.shape[2], ow = out.shape[3];
  const std::vector<double> ch = FixedCounts(xs[2], oh, p.kh, p.sh, p.ph), cw = FixedCounts(xs[3], ow, p.kw, p.sw, p.pw);
  std::vector<double> counts;
  for (double a : ch) {
    for (double c : cw) counts.push_back(a * c);
  }
  const Value cnt = b.BroadcastInDim(b.Constant({DType::Float64, {oh, ow}}, counts), out.shape, std::vector<int64_t>{2, 3});
  return {StoreAs(b, b.Div(sum, cnt), out.dtype)};
}

// PyTorch's adaptive windows [floor(o in / out), ceil((o + 1) in / out)), one slice per output
// position and axis (max and mean are separable over the rectangle).
LowerFn AdaptivePool(bool is_max) {
  return [is_max](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    if (NumElements(out.shape) == 0) return std::vector<Value>{b.Splat(out, 0.0)};
    Value x = F64(b, in[0]);
    for (int64_t axis = 2; axis < 4; ++axis) {
      const int64_t n = x.shape()[static_cast<size_t>(axis)], o_n = out.shape[static_cast<size_t>(axis)];
      std::vector<Value> parts;
      for (int64_t o = 0; o < o_n; ++o) {
        const int64_t begin = (o * n) / o_n, end = ((o + 1) * n + o_n - 1) / o_n;
        std::vector<int64_t> st(4, 0), lim = x.shape(), str(4, 1);
        st[static_cast<size_t>(axis)] = begin;
        lim[static_cast<size_t>(axis)] = end;
        const Value window = b.Slice(x, st, lim, str);
        if (is_max) {
          parts.push_back(MaxAxisNaN(b, window, axis));
        } else {
          const int64_t dims[] = {axis};
          const Value sum = b.ReduceKeep(window, dims, ReduceKind::Sum);
          parts.push_back(b.Div(sum, b.SplatLike(sum, static_cast<double>(end - begin))));
        }
      }
      x = b.Concatenate(parts, axis);
    }
    return std::vector<Value>{StoreAs(b, x, out.dtype)};
  };
}

// ---- N-D pools (pooling.max_pool, max_pool_with_indices, avg_pool) ----------------------------------
struct PoolNd {
  size_t r = 0;
  std::vector<int64_t> in, kernel, strides, dilations, pad_lo, pad_hi, out;
  bool ceil = false;
};

PoolNd PoolNdAttrs(const runtime::Attrs& a, const Shape& shape) {
  PoolNd p;
  p.r = shape.size() - 2;
  auto per_axis = [&](const std::string& name, size_t per, int64_t fill) {
    std::vector<int64_t> v = a.Ints(name);
    if (v.empty()) v.assign(p.r * per, fill);
    return v;
  };
  p.kernel = a.Ints("kernel");
  p.strides = per_axis("strides", 1, 1);
  p.dilations = per_axis("dilations", 1, 1);
  const std::vector<int64_t> pads = per_axis("pads", 2, 0);
  p.ceil = a.Bool("ceil_mode");
  for (size_t i = 0; i < p.r; ++i) {
    p.in.push_back(shape[i + 2]);
    p.pad_lo.push_back(pads[i]);
    p.pad_hi.push_back(pads[i + p.r]);
    p.out.push_back(PoolNdExtent(p.in[i], p.kernel[i], p.strides[i], p.dilations[i], pads[i], pads[i + p.r], p.ceil));
  }
  return p;
}

// The window with the end padding widened so that every one of the `out` windows fits.
Window PoolNdWindow(const PoolNd& p) {
  std::vector<int64_t> hi = p.pad_hi;
  for (size_t i = 0; i < p.r; ++i) {
    const int64_t need = (p.out[i] - 1) * p.strides[i] + p.dilations[i] * (p.kernel[i] - 1) + 1 - p.in[i] - p.pad_lo[i];
    hi[i] = std::max(hi[i], need);
  }
  return SpatialWindow(p.kernel, p.strides, p.dilations, p.pad_lo, hi);
}

// Per axis and window: the taps inside the input, or inside [-pad_lo, in + pad_hi).
std::vector<double> NdCounts(const PoolNd& p, size_t i, bool include_pad) {
  std::vector<double> c;
  for (int64_t o = 0; o < p.out[i]; ++o) {
    int64_t n = 0;
    for (int64_t t = 0; t < p.kernel[i]; ++t) {
      const int64_t pos = o * p.strides[i] - p.pad_lo[i] + t * p.dilations[i];
      if (include_pad ? (pos >= -p.pad_lo[i] && pos < p.in[i] + p.pad_hi[i]) : (pos >= 0 && pos < p.in[i])) ++n;
    }
    c.push_back(static_cast<double>(n));
  }
  return c;
}

std::vector<Value> AvgPoolNd(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const PoolNd p = PoolNdAttrs(ctx.attrs(), in[0].shape());
  const Value sum = Crop(b, ReduceWindow(b, F64(b, in[0]), ReduceKind::Sum, PoolNdWindow(p)), out.shape);
  const bool include = ctx.attrs().Bool("count_include_pad");
  std::vector<double> counts{1.0};
  for (size_t i = 0; i < p.r; ++i) {
    const std::vector<double> c = NdCounts(p, i, include);
    std::vector<double> next;
    for (double a : counts) {
      for (double v : c) next.push_back(a * v);
    }
    counts = next;
  }
  const Shape spatial(out.shape.begin() + 2, out.shape.end());
  const Value cnt = b.BroadcastInDim(b.Constant({DType::Float64, spatial}, counts), out.shape, Range(p.r + 2, 2));
  return {StoreResult(b, b.Div(sum, cnt), out.dtype)};
}

// (value, row-major plane position) pairs reduced by: NaN beats numbers (the later NaN wins),
// else the larger value, ties to the earlier position. A total order, so the reduction order of
// reduce_window does not matter; padding (lowest value, position INT64_MAX) never wins.
std::vector<Value> MaxWithPositions(Builder& b, const Value& x, const Window& w) {
  const DType dt = x.dtype();
  const Shape& s = x.shape();
  const int64_t r = x.rank();
  Shape spatial(s.begin() + 2, s.end());
  const Value pos = b.BroadcastInDim(b.Reshape(b.Iota({DType::Int64, {NumElements(spatial)}}, 0), spatial), s,
                                     Range(r, 2));
  Value init_v;
  if (IsFloatingPoint(dt)) {
    init_v = b.Scalar(dt, -INFINITY);
  } else {
    const int bits = DTypeBits(dt);
    init_v = b.ScalarLiteral(dt, ElementType(dt)[0] == 'u' ? "0" : "-" + std::to_string(uint64_t{1} << (bits - 1)));
  }
  const Value init_i = b.ScalarLiteral(DType::Int64, "9223372036854775807");
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    const size_t a = static_cast<size_t>(i);
    const int64_t padded = s[a] + w.pad_lo[a] + w.pad_hi[a];
    out.push_back((padded - (w.dilations[a] * (w.dims[a] - 1) + 1)) / w.strides[a] + 1);
  }
  const TensorType vt{dt, {}}, itt{DType::Int64, {}};
  const TensorType results[] = {{dt, out}, {DType::Int64, out}};
  const TensorType args[] = {vt, itt, vt, itt};
  const Value ops[] = {x, pos, init_v, init_i};
  const bool is_float = IsFloatingPoint(dt);
  return b.EmitRegion(
      "stablehlo.reduce_window", ops, results, args,
      [is_float](Builder& rb, std::span<const Value> a) {
        const Value &av = a[0], &ai = a[1], &bv = a[2], &bi = a[3];
        Value take_a;
        const Value a_first = rb.Compare(ai, bi, "LT");
        const Value gt = rb.Compare(av, bv, "GT");
        const Value eq = rb.Compare(av, bv, "EQ");
        const Value num_a = rb.Binary("stablehlo.or", gt, rb.Binary("stablehlo.and", eq, a_first));
        if (is_float) {
          const Value a_nan = rb.Compare(av, av, "NE");
          const Value b_nan = rb.Compare(bv, bv, "NE");
          // both NaN: the later position; one NaN: it; none: num_a.
          const Value later = rb.Unary("stablehlo.not", a_first);
          take_a = rb.Select(a_nan, rb.Select(b_nan, later, rb.Scalar(DType::Bool, 1.0)),
                             rb.Select(b_nan, rb.Scalar(DType::Bool, 0.0), num_a));
        } else {
          take_a = num_a;
        }
        return std::vector<Value>{rb.Select(take_a, av, bv), rb.Select(take_a, ai, bi)};
      },
      fmt::format("window_dimensions = {}, window_strides = {}, window_dilations = {}, padding = {}", I64Array(w.dims),
                  I64Array(w.strides), I64Array(w.dilations), PaddingAttr(w.pad_lo, w.pad_hi)));
}

LowerFn MaxPoolNd(bool with_indices) {
  return [with_indices](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const PoolNd p = PoolNdAttrs(ctx.attrs(), in[0].shape());
    if (NumElements(out.shape) == 0) {
      std::vector<Value> r{b.Splat(out, 0.0)};
      if (with_indices) r.push_back(b.Splat(ctx.out_type(1), 0.0));
      return r;
    }
    const Window w = PoolNdWindow(p);
    if (!with_indices) return std::vector<Value>{Crop(b, MaxWindowNaN(b, in[0], w), out.shape)};
    const std::vector<Value> vi = MaxWithPositions(b, in[0], w);
    const Value v = Crop(b, vi[0], out.shape);
    Value pos = Crop(b, vi[1], out.shape);
    const TensorType it{DType::Int64, out.shape};
    if (ctx.attrs().Int("storage_order") == 1 && p.r > 1) {
      // Row-major position -> column-major (the first spatial axis fastest).
      Value col = b.Splat(it, 0.0);
      int64_t row_stride = 1, col_stride = 1;
      std::vector<int64_t> row_strides(p.r), col_strides(p.r);
      for (size_t i = p.r; i-- > 0;) {
        row_strides[i] = row_stride;
        row_stride *= p.in[i];
      }
      for (size_t i = 0; i < p.r; ++i) {
        col_strides[i] = col_stride;
        col_stride *= p.in[i];
      }
      for (size_t i = 0; i < p.r; ++i) {
        const Value coord = b.Binary("stablehlo.remainder", b.Div(pos, b.Splat(it, static_cast<double>(row_strides[i]))),
                                     b.Splat(it, static_cast<double>(p.in[i])));
        col = b.Add(col, b.Mul(coord, b.Splat(it, static_cast<double>(col_strides[i]))));
      }
      pos = col;
    }
    if (ctx.attrs().String("indices_over") == "tensor") {
      int64_t plane = 1;
      for (int64_t d : p.in) plane *= d;
      const int64_t c = out.shape[1];
      const Value n = b.Iota(it, 0), ch = b.Iota(it, 1);
      const Value base = b.Mul(b.Add(b.Mul(n, b.Splat(it, static_cast<double>(c))), ch), b.Splat(it, static_cast<double>(plane)));
      pos = b.Add(pos, base);
    }
    return std::vector<Value>{v, pos};
  };
}

}  // namespace

void RegisterConvPoolLowerings(LoweringTable& t) {
  t.Add("convolution.conv1d", Conv(1));
  t.Add("convolution.conv2d", Conv(2));
  t.Add("convolution.conv3d", Conv(3));
  t.Add("convolution.conv_transpose2d", ConvTranspose2d);
  t.Add("pooling.max_pool2d", MaxPool2d);
  t.Add("pooling.avg_pool2d", AvgPool2d);
  t.Add("pooling.adaptive_avg_pool2d", AdaptivePool(false));
  t.Add("pooling.adaptive_max_pool2d", AdaptivePool(true));
  t.Add("pooling.max_pool", MaxPoolNd(false));
  t.Add("pooling.max_pool_with_indices", MaxPoolNd(true));
  t.Add("pooling.avg_pool", AvgPoolNd);
}

}  // namespace backplane::xla::nn
