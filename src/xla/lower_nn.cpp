// Neural-network layers: norms, attention, convolution, pooling, embeddings, projections. This file
// holds the shared helpers (lower_nn_common.hpp), the positional, embedding and projection ops and
// the registration of the topic files lower_nn_*.cpp.
#include <fmt/format.h>

#include <cmath>

#include "xla/lower_nn_common.hpp"

namespace backplane::xla {
namespace nn {

Value StoreAs(Builder& b, const Value& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  if (dtype == DType::Float64 || x.dtype() != DType::Float64) return b.Convert(x, dtype);
  return b.Convert(b.Convert(x, DType::Float32), dtype);
}

Value StoreResult(Builder& b, const Value& x, DType dtype) {
  if (dtype == DType::Float64 || dtype == DType::Float32 || x.dtype() != DType::Float64) return b.Convert(x, dtype);
  // f64 -> f32 rounded to odd (truncate, set the last bit when inexact), then to nearest even.
  const Value f = b.Convert(x, DType::Float32);
  const Value back = b.Convert(f, DType::Float64);
  const Value inexact = b.Binary("stablehlo.and", b.Compare(back, x, "NE"), b.Compare(x, x, "EQ"));
  const TensorType ut{DType::Int32, x.shape()};
  const Value bits = b.Emit("stablehlo.bitcast_convert", std::span(&f, 1), ut);
  const Value away = b.Compare(b.Unary("stablehlo.abs", back), b.Unary("stablehlo.abs", x), "GT");
  const Value stepped = b.Select(away, b.Sub(bits, b.Splat(ut, 1.0)), bits);
  const Value odd = b.Binary("stablehlo.or", stepped, b.Splat(ut, 1.0));
  const Value rounded = b.Emit("stablehlo.bitcast_convert", std::span(&odd, 1), {DType::Float32, x.shape()});
  return b.Convert(b.Select(inexact, rounded, f), dtype);
}

Value All(Builder& b, const Value& pred) {
  if (pred.rank() == 0) return pred;
  return b.Reduce(pred, Range(pred.rank()), ReduceKind::And);
}

Value Take(Builder& b, const Value& x, int64_t axis, const Value& indices) {
  const int64_t m = indices.shape().at(0);
  const Value idx = b.Reshape(b.Convert(indices, DType::Int64), {m, 1});
  Shape out = x.shape();
  out[static_cast<size_t>(axis)] = m;
  std::vector<int64_t> offset, sizes = x.shape();
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis) offset.push_back(i);
  }
  sizes[static_cast<size_t>(axis)] = 1;
  std::string offs;
  for (size_t i = 0; i < offset.size(); ++i) offs += (i ? ", " : "") + std::to_string(offset[i]);
  const Value ops[] = {x, idx};
  return b.Emit("stablehlo.gather", ops, {x.dtype(), out},
                fmt::format("dimension_numbers = #stablehlo.gather<offset_dims = [{}], collapsed_slice_dims = [{}], "
                            "start_index_map = [{}], index_vector_dim = 1>, indices_are_sorted = false, "
                            "slice_sizes = {}",
                            offs, axis, axis, I64Array(sizes)));
}

Value TakeConst(Builder& b, const Value& x, int64_t axis, std::span<const int64_t> indices) {
  std::vector<double> v(indices.begin(), indices.end());
  return Take(b, x, axis, b.Constant({DType::Int64, {static_cast<int64_t>(v.size())}}, v));
}

Value TakeRows(Builder& b, const Value& table, const Value& indices) {
  const int64_t n = NumElements(indices.shape());
  const Value rows = Take(b, table, 0, b.Reshape(indices, {n}));
  Shape out = indices.shape();
  out.push_back(table.shape()[1]);
  return b.Reshape(rows, out);
}

Value Reverse(Builder& b, const Value& x, std::span<const int64_t> dims) {
  if (dims.empty()) return x;
  return b.Emit("stablehlo.reverse", std::span(&x, 1), x.type, "dimensions = " + I64Array(dims));
}

Value Pad(Builder& b, const Value& x, const Value& scalar, std::span<const int64_t> lo, std::span<const int64_t> hi,
          std::span<const int64_t> interior) {
  const std::vector<int64_t> zeros(lo.size(), 0);
  if (interior.empty()) interior = zeros;
  Shape out = x.shape();
  bool identity = true;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = lo[i] + hi[i] + out[i] + std::max<int64_t>(out[i] - 1, 0) * interior[i];
    identity = identity && lo[i] == 0 && hi[i] == 0 && interior[i] == 0;
  }
  if (identity) return x;
  const Value ops[] = {x, scalar};
  return b.Emit("stablehlo.pad", ops, {x.dtype(), out},
                fmt::format("edge_padding_low = {}, edge_padding_high = {}, interior_padding = {}", I64Array(lo),
                            I64Array(hi), I64Array(interior)));
}

namespace {

std::string PaddingAttr(std::span<const int64_t> lo, std::span<const int64_t> hi) {
  std::string s = "dense<[";
  for (size_t i = 0; i < lo.size(); ++i) s += fmt::format("{}[{}, {}]", i ? ", " : "", lo[i], hi[i]);
  return s + fmt::format("]> : tensor<{}x2xi64>", lo.size());
}

double Identity(DType dt, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum: return 0.0;
    case ReduceKind::Prod: return 1.0;
    case ReduceKind::Max: return IsFloatingPoint(dt) ? -INFINITY : 0.0;
    case ReduceKind::Min: return IsFloatingPoint(dt) ? INFINITY : 0.0;
    default: return 0.0;
  }
}

std::string IntExtreme(DType dt, bool max) {
  const int bits = DTypeBits(dt);
  const bool is_unsigned = ElementType(dt)[0] == 'u';
  if (max) {
    return is_unsigned ? std::to_string(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1)
                       : std::to_string((uint64_t{1} << (bits - 1)) - 1);
  }
  return is_unsigned ? "0" : "-" + std::to_string(uint64_t{1} << (bits - 1));
}

}  // namespace

Value ReduceWindow(Builder& b, const Value& x, ReduceKind kind, const Window& w) {
  const DType dt = x.dtype();
  Value init;
  if (IsInteger(dt) && (kind == ReduceKind::Max || kind == ReduceKind::Min)) {
    init = b.ScalarLiteral(dt, IntExtreme(dt, kind == ReduceKind::Min));
  } else {
    init = b.Scalar(dt, Identity(dt, kind));
  }
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    const size_t a = static_cast<size_t>(i);
    const int64_t padded = x.shape()[a] + w.pad_lo[a] + w.pad_hi[a];
    const int64_t span = w.dilations[a] * (w.dims[a] - 1) + 1;
    out.push_back(padded < span ? 0 : (padded - span) / w.strides[a] + 1);
  }
  const char* op = kind == ReduceKind::Sum ? "stablehlo.add"
                   : kind == ReduceKind::Max ? "stablehlo.maximum"
                   : kind == ReduceKind::Min ? "stablehlo.minimum"
                                             : "stablehlo.multiply";
  const TensorType scalar{dt, {}};
  const TensorType args[] = {scalar, scalar};
  const TensorType result{dt, out};
  const Value ops[] = {x, init};
  return b.EmitRegion(
      "stablehlo.reduce_window", ops, std::span(&result, 1), args,
      [&](Builder& r, std::span<const Value> a) { return std::vector<Value>{r.Binary(op, a[0], a[1])}; },
      fmt::format("window_dimensions = {}, window_strides = {}, window_dilations = {}, padding = {}",
                  I64Array(w.dims), I64Array(w.strides), I64Array(w.dilations), PaddingAttr(w.pad_lo, w.pad_hi)))[0];
}

Value ShiftRight(Builder& b, const Value& x, const Value& bits) { return b.Binary("stablehlo.shift_right_logical", x, bits); }
Value And(Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.and", x, y); }

}  // namespace nn

namespace {

using nn::Has;

// ---- positional -------------------------------------------------------------------------------------
// x [..., S, H, D]: angles theta = (s + start) base^(-2p/D) in f64 on the host (the reference's
// formula), the rotation in f64, one rounding through f32.
std::vector<Value> Rope(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& x = in[0];
  const Shape& s = x.shape();
  const int64_t r = x.rank();
  const int64_t seq = s[static_cast<size_t>(r - 3)], d = s.back(), half = d / 2;
  const double base = ctx.attrs().Float("base");
  const int64_t start = ctx.attrs().Int("position_start");
  std::vector<double> c(static_cast<size_t>(seq * half)), sn(c.size());
  for (int64_t i = 0; i < seq; ++i) {
    const double position = static_cast<double>(i + start);
    for (int64_t p = 0; p < half; ++p) {
      const double exponent = -2.0 * static_cast<double>(p) / static_cast<double>(d);
      const double theta = position * std::pow(base, exponent);
      c[static_cast<size_t>(i * half + p)] = std::cos(theta);
      sn[static_cast<size_t>(i * half + p)] = std::sin(theta);
    }
  }
  // [..., S, H, half, 2] pairs; cos/sin [S, 1, half] broadcast over the heads.
  Shape pairs = s;
  pairs.back() = half;
  pairs.push_back(2);
  const Value xp = b.Reshape(nn::F64(b, x), pairs);
  Shape one = pairs;
  one.back() = 1;
  std::vector<int64_t> st(pairs.size(), 0), lim = pairs, str(pairs.size(), 1);
  lim.back() = 1;
  const Value x0 = b.Reshape(b.Slice(xp, st, lim, str), Shape(pairs.begin(), pairs.end() - 1));
  st.back() = 1;
  lim.back() = 2;
  const Value x1 = b.Reshape(b.Slice(xp, st, lim, str), Shape(pairs.begin(), pairs.end() - 1));
  const Shape half_shape(pairs.begin(), pairs.end() - 1);
  const std::vector<int64_t> dims = {r - 3, r - 1};
  const Value cs = b.BroadcastInDim(b.Constant({DType::Float64, {seq, half}}, c), half_shape, dims);
  const Value ss = b.BroadcastInDim(b.Constant({DType::Float64, {seq, half}}, sn), half_shape, dims);
  const Value y0 = b.Sub(b.Mul(x0, cs), b.Mul(x1, ss));
  const Value y1 = b.Add(b.Mul(x0, ss), b.Mul(x1, cs));
  const Value parts[] = {b.Reshape(y0, one), b.Reshape(y1, one)};
  const Value y = b.Reshape(b.Concatenate(parts, r), s);
  return {nn::StoreAs(b, y, x.dtype())};
}

// x [..., 2h], cos/sin [h]: each row's pairs rotated in f64.
std::vector<Value> RopePairs(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& x = in[0];
  const Shape& s = x.shape();
  const int64_t r = x.rank(), half = s.back() / 2;
  Shape pairs = s;
  pairs.back() = half;
  pairs.push_back(2);
  const Shape half_shape(pairs.begin(), pairs.end() - 1);
  Shape one = pairs;
  one.back() = 1;
  const Value xp = b.Reshape(nn::F64(b, x), pairs);
  std::vector<int64_t> st(pairs.size(), 0), lim = pairs, str(pairs.size(), 1);
  lim.back() = 1;
  const Value x0 = b.Reshape(b.Slice(xp, st, lim, str), half_shape);
  st.back() = 1;
  lim.back() = 2;
  const Value x1 = b.Reshape(b.Slice(xp, st, lim, str), half_shape);
  const std::vector<int64_t> dims = {r - 1};
  const Value cs = b.BroadcastInDim(nn::F64(b, in[1]), half_shape, dims);
  const Value ss = b.BroadcastInDim(nn::F64(b, in[2]), half_shape, dims);
  const Value y0 = b.Sub(b.Mul(x0, cs), b.Mul(x1, ss));
  const Value y1 = b.Add(b.Mul(x0, ss), b.Mul(x1, cs));
  const Value parts[] = {b.Reshape(y0, one), b.Reshape(y1, one)};
  return {nn::StoreAs(b, b.Reshape(b.Concatenate(parts, r), s), x.dtype())};
}

// scores [..., Sq, Sk], slope [1]: s - m (p - k) for k <= p (p = q + Sk - Sq) in the compute type.
std::vector<Value> Alibi(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& x = in[0];
  const DType ct = ComputeType(x.dtype());
  const int64_t r = x.rank();
  const int64_t sq = x.shape()[static_cast<size_t>(r - 2)], sk = x.shape().back();
  const Value slope = b.Reshape(b.Convert(in[1], ct), {});
  ctx.Require(b.Binary("stablehlo.and", b.Emit("stablehlo.is_finite", std::span(&slope, 1), {DType::Bool, {}}),
                       b.Compare(slope, b.Scalar(ct, 0.0), "GE")),
              "argument 'slope' must be finite and >= 0");
  const TensorType it{DType::Int64, {sq, sk}};
  // distance p - k = q + (sk - sq) - k.
  const Value dist = b.Sub(b.Add(b.Iota(it, 0), b.Splat(it, static_cast<double>(sk - sq))), b.Iota(it, 1));
  const Value visible = b.BroadcastInDim(b.Compare(dist, b.Splat(it, 0.0), "GE"), x.shape(), std::vector<int64_t>{r - 2, r - 1});
  // One rounding in the compute type (the reference's fma): the product is exact in f64.
  const Value dist64 = b.BroadcastInDim(b.Convert(dist, DType::Float64), x.shape(), std::vector<int64_t>{r - 2, r - 1});
  const Value m64 = b.BroadcastInDim(b.Convert(slope, DType::Float64), x.shape(), {});
  const Value biased = b.Sub(b.Convert(x, DType::Float64), b.Mul(m64, dist64));
  const Value y = b.Select(visible, b.Convert(biased, ct), b.Convert(x, ct));
  return {b.Convert(y, x.dtype())};
}

// ---- embedding --------------------------------------------------------------------------------------
void RequireIds(LowerContext& ctx, const Value& ids, int64_t vocab, const std::string& arg) {
  Builder& b = ctx.b;
  const Value ok = b.Binary("stablehlo.and", b.Compare(ids, b.SplatLike(ids, 0.0), "GE"),
                            b.Compare(ids, b.SplatLike(ids, static_cast<double>(vocab)), "LT"));
  ctx.Require(nn::All(b, ok), fmt::format("argument '{}' must be in [0, {}) (vocab)", arg, vocab));
}

std::vector<Value> Token(LowerContext& ctx, std::span<const Value> in) {
  RequireIds(ctx, in[0], in[1].shape()[0], "indices");
  return {nn::TakeRows(ctx.b, in[1], in[0])};
}

// ids [n], offsets [bags], table [V, D]: bag b sums rows offsets[b] .. offsets[b+1] (the last to n)
// in f64, as a select over [bags, n, D] reduced over n.
std::vector<Value> Bag(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& ids = in[0];
  const Value& offsets = in[1];
  const Value& table = in[2];
  const int64_t n = ids.shape()[0], bags = offsets.shape()[0], dim = table.shape()[1];
  RequireIds(ctx, ids, table.shape()[0], "indices");
  if (bags > 0) {
    const Value first = b.Reshape(b.Slice(offsets, std::vector<int64_t>{0}, std::vector<int64_t>{1}, std::vector<int64_t>{1}), {});
    ctx.Require(b.Compare(first, b.Scalar(DType::Int32, 0.0), "EQ"),
                "argument 'offsets' must be 0 at position 0 (the first bag starts at index 0)");
    if (bags > 1) {
      const Value lo = b.Slice(offsets, std::vector<int64_t>{0}, std::vector<int64_t>{bags - 1}, std::vector<int64_t>{1});
      const Value hi = b.Slice(offsets, std::vector<int64_t>{1}, std::vector<int64_t>{bags}, std::vector<int64_t>{1});
      ctx.Require(nn::All(b, b.Compare(hi, lo, "GE")), "argument 'offsets' must be non-decreasing");
    }
    ctx.Require(nn::All(b, b.Compare(offsets, b.SplatLike(offsets, static_cast<double>(n)), "LE")),
                fmt::format("argument 'offsets' must be <= count ({})", n));
  }
  const DType dt = table.dtype();
  if (bags == 0 || n == 0) return {b.Splat({dt, {bags, dim}}, 0.0)};
  // Index j is in bag b when offsets[b] <= j < end_b.
  const TensorType jt{DType::Int32, {bags, n}};
  const Value j = b.Iota(jt, 1);
  const Value begin = b.BroadcastInDim(offsets, {bags, n}, std::vector<int64_t>{0});
  const Value ends = [&] {
    if (bags == 1) return b.Splat({DType::Int32, {1}}, static_cast<double>(n));
    const Value tail = b.Slice(offsets, std::vector<int64_t>{1}, std::vector<int64_t>{bags}, std::vector<int64_t>{1});
    const Value parts[] = {tail, b.Splat({DType::Int32, {1}}, static_cast<double>(n))};
    return b.Concatenate(parts, 0);
  }();
  const Value end = b.BroadcastInDim(ends, {bags, n}, std::vector<int64_t>{0});
  const Value member = b.Binary("stablehlo.and", b.Compare(j, begin, "GE"), b.Compare(j, end, "LT"));
  const Value rows = nn::F64(b, nn::TakeRows(b, table, ids));  // [n, D]
  const Shape full{bags, n, dim};
  const Value picked = b.Select(b.BroadcastInDim(member, full, std::vector<int64_t>{0, 1}),
                                b.BroadcastInDim(rows, full, std::vector<int64_t>{1, 2}), b.Splat({DType::Float64, full}, 0.0));
  const int64_t axis1[] = {1};
  return {nn::StoreAs(b, b.Reduce(picked, axis1, ReduceKind::Sum), dt)};
}

// ---- projection -------------------------------------------------------------------------------------
// x [..., in] W^T [in, out] accumulated in the compute type and rounded once, then the bias added in
// the compute type.
Value Project(Builder& b, const Value& x, const Value& w, const Value* bias, DType dt) {
  const Shape& s = x.shape();
  const int64_t k = s.back(), out = w.shape()[0];
  Shape ys(s.begin(), s.end() - 1);
  const int64_t rows = NumElements(ys);
  ys.push_back(out);
  // f32 (and f16/bf16) accumulate in f32 like the CPU's SIMD GEMM; f64 in f64.
  const DType acc = ComputeType(dt);
  const Value x2 = b.Reshape(b.Convert(x, acc), {rows, k});
  const int64_t c1[] = {1};
  const Value y = b.DotGeneral(x2, b.Convert(w, acc), {}, {}, c1, c1, acc);
  Value yr = nn::StoreResult(b, b.Reshape(y, ys), dt);
  if (bias != nullptr) {
    const DType ct = ComputeType(dt);
    yr = b.Convert(b.Add(b.Convert(yr, ct), b.BroadcastTo(b.Convert(*bias, ct), ys)), dt);
  }
  return yr;
}

std::vector<Value> Linear(LowerContext& ctx, std::span<const Value> in) {
  return {Project(ctx.b, in[0], in[1], Has(in, 2) ? &in[2] : nullptr, ctx.out_type(0).dtype)};
}

std::vector<Value> FusedQkv(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value y = Project(b, in[0], in[1], Has(in, 2) ? &in[2] : nullptr, ctx.out_type(0).dtype);
  const int64_t d = ctx.out_type(0).shape.back();
  std::vector<Value> out;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<int64_t> st(static_cast<size_t>(y.rank()), 0), lim = y.shape(), str(static_cast<size_t>(y.rank()), 1);
    st.back() = i * d;
    lim.back() = (i + 1) * d;
    out.push_back(b.Slice(y, st, lim, str));
  }
  return out;
}

// ---- Fused (the fusion pass's kernels) --------------------------------------------------------------
// The reference's stable logistic, in x's (compute) type.
Value Sigmoid(Builder& b, const Value& x) {
  const Value one = b.SplatLike(x, 1.0);
  const Value pos = b.Div(one, b.Add(one, b.Unary("stablehlo.exponential", b.Unary("stablehlo.negate", x))));
  const Value e = b.Unary("stablehlo.exponential", x);
  const Value neg = b.Div(e, b.Add(one, e));
  return b.Select(b.Compare(x, b.SplatLike(x, 0.0), "GE"), pos, neg);
}

// x * gate, a signed zero where the gate is 0.
Value Gated(Builder& b, const Value& x, const Value& gate) {
  const Value zero = b.SplatLike(x, 0.0);
  // copysign(0, x) where it matters: the gate is 0 only for x < 0 (or x = -Inf).
  const Value z = b.Select(b.Compare(x, zero, "LT"), b.SplatLike(x, -0.0), zero);
  return b.Select(b.Compare(gate, zero, "EQ"), z, b.Mul(x, gate));
}

Value Activation(LowerContext& ctx, const std::string& act, const Value& y) {
  Builder& b = ctx.b;
  if (act == "none") return y;
  const DType ct = ComputeType(y.dtype());
  const Value x = b.Convert(y, ct);
  Value r;
  if (act == "relu") {
    r = b.Select(b.Compare(x, b.SplatLike(x, 0.0), "LT"), b.SplatLike(x, 0.0), x);
  } else if (act == "gelu_tanh") {
    const Value cube = b.Mul(b.Mul(b.Mul(b.SplatLike(x, 0.044715), x), x), x);
    const Value u = b.Mul(b.SplatLike(x, 0.79788456080286535588), b.Add(x, cube));
    r = Gated(b, x, Sigmoid(b, b.Mul(b.SplatLike(x, 2.0), u)));
  } else if (act == "gelu") {
    const Value arg = b.Mul(b.Unary("stablehlo.negate", x), b.SplatLike(x, 0.70710678118654752440));
    r = Gated(b, x, b.Mul(b.SplatLike(x, 0.5), b.Unary("chlo.erfc", arg)));
  } else {
    ctx.Unsupported(fmt::format("activation '{}'", act));
  }
  return b.Convert(r, y.dtype());
}

std::vector<Value> Fused(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const std::string& pattern = ctx.attrs().String("pattern");
  const DType dt = ctx.out_type(0).dtype;
  const DType ct = ComputeType(dt);
  if (pattern == "add_layernorm") {
    const Value sum = b.Convert(b.Add(b.Convert(in[0], ct), b.Convert(in[1], ct)), dt);
    const Value y = nn::StoreAs(b, nn::LayerNormF64(b, nn::F64(b, sum), &in[2], &in[3], 1e-5), dt);
    std::vector<Value> out{y};
    if (ctx.num_outputs() > 1) out.push_back(sum);
    return out;
  }
  if (pattern != "matmul_bias_act") ctx.Unsupported(fmt::format("Fused pattern {} (int4 weights stay on the CPU)", pattern));
  // a [..., K] b [K, N]: one f64 dot per output, rounded once; then bias and activation.
  const Shape& as = in[0].shape();
  const int64_t k = as.back(), n = in[1].shape()[1];
  const int64_t rows = NumElements(Shape(as.begin(), as.end() - 1));
  Shape ys = as;
  ys.back() = n;
  const int64_t c1[] = {1}, c0[] = {0};
  const Value y = b.DotGeneral(b.Reshape(nn::F64(b, in[0]), {rows, k}), nn::F64(b, in[1]), {}, {}, c1, c0, DType::Float64);
  Value yr = nn::StoreResult(b, b.Reshape(y, ys), dt);
  if (Has(in, 2)) yr = b.Convert(b.Add(b.Convert(yr, ct), b.BroadcastTo(b.Convert(in[2], ct), ys)), dt);
  return {Activation(ctx, ctx.attrs().String("activation"), yr)};
}

}  // namespace

void RegisterNnLowerings(LoweringTable& t) {
  t.Add("Fused", Fused);
  t.Add("positional.rope", Rope);
  t.Add("positional.rope_pairs", RopePairs);
  t.Add("positional.alibi", Alibi);
  t.Add("embedding.token", Token);
  t.Add("embedding.bag", Bag);
  t.Add("projection.linear", Linear);
  t.Add("projection.fused_qkv", FusedQkv);
  nn::RegisterAttentionLowerings(t);
  nn::RegisterNormLowerings(t);
  nn::RegisterConvPoolLowerings(t);
  nn::RegisterQuantLowerings(t);
  nn::RegisterSpatialLowerings(t);
}

}  // namespace backplane::xla
