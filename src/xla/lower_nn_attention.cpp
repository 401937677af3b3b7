// attention.*: softmax(Q K^T / sqrt(d) + bias) V over the visible keys, in f64 like the reference
// (every dtype widened, one rounding on store). Causal and window masks are bottom-right aligned
// (query i sits at p = i + Sk - Sq); a query that sees no key gives a zero row; a NaN score or
// all-(-Inf) visible scores give a NaN row, as the reference's two-pass softmax.
#include <fmt/format.h>

#include <cmath>

#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {
namespace {

struct Visibility {
  bool causal = false;
  int64_t window = 0;  // > 0: keys with p - j < window (and j - p <= right when right >= 0)
  int64_t right = 0;
  std::vector<double> alibi;  // per head (the head axis is batch axis `head_axis`), empty: none
  int64_t head_axis = -1;
};

// q [G..., Sq, D], k [G..., Sk, D], v [G..., Sk, Dv], all f64 -> [G..., Sq, Dv] f64.
Value Attend(Builder& b, const Value& q, const Value& k, const Value& v, const Visibility& vis) {
  const int64_t r = q.rank();
  const int64_t sq = q.shape()[static_cast<size_t>(r - 2)], d = q.shape().back();
  const int64_t sk = k.shape()[static_cast<size_t>(r - 2)];
  const std::vector<int64_t> batch = Range(r - 2);
  const int64_t cq[] = {r - 1};
  Value s = b.DotGeneral(q, k, batch, batch, cq, cq, DType::Float64);  // [G..., Sq, Sk]
  const Shape& ss = s.shape();
  s = b.Mul(s, b.Splat(s.type, d > 0 ? 1.0 / std::sqrt(static_cast<double>(d)) : 0.0));
  const TensorType it{DType::Int64, {sq, sk}};
  const Value j = b.Iota(it, 1);
  const Value p = b.Add(b.Iota(it, 0), b.Splat(it, static_cast<double>(sk - sq)));
  const std::vector<int64_t> last2 = {r - 2, r - 1};
  if (!vis.alibi.empty()) {
    const Value dist = b.BroadcastInDim(b.Convert(b.Sub(j, p), DType::Float64), ss, last2);
    const int64_t h = static_cast<int64_t>(vis.alibi.size());
    const std::vector<int64_t> hd = {vis.head_axis};
    const Value slope = b.BroadcastInDim(b.Constant({DType::Float64, {h}}, vis.alibi), ss, hd);
    s = b.Add(s, b.Mul(slope, dist));
  }
  Value sees = b.Splat({DType::Bool, {sq, sk}}, 1.0);
  auto both = [&](const Value& x, const Value& y) { return b.Binary("stablehlo.and", x, y); };
  if (vis.causal) sees = both(sees, b.Compare(j, p, "LE"));
  if (vis.window > 0) {
    sees = both(sees, b.Compare(b.Sub(p, j), b.Splat(it, static_cast<double>(vis.window)), "LT"));
    if (vis.right >= 0) sees = both(sees, b.Compare(b.Sub(j, p), b.Splat(it, static_cast<double>(vis.right)), "LE"));
  }
  const int64_t last[] = {r - 1};
  const Value any = b.Reduce(sees, std::vector<int64_t>{1}, ReduceKind::Or);  // [Sq]
  const Value visible = b.BroadcastInDim(sees, ss, last2);
  const Value neg_inf = b.Splat(s.type, -INFINITY);
  // The max propagates NaN (a NaN score poisons its row).
  const Value masked = b.Select(visible, s, neg_inf);
  Value m = b.Reduce(masked, last, ReduceKind::Max);
  const Value has_nan = b.Reduce(b.Binary("stablehlo.and", visible, b.Compare(s, s, "NE")), last, ReduceKind::Or);
  m = b.Select(has_nan, b.Splat(m.type, NAN), m);
  const Value mb = b.BroadcastInDim(m, ss, Range(r - 1));
  const Value w = b.Select(visible, b.Unary("stablehlo.exponential", b.Sub(s, mb)), b.Splat(s.type, 0.0));
  const Value sum = b.Reduce(w, last, ReduceKind::Sum);  // [G..., Sq]
  const int64_t cw[] = {r - 1};
  const int64_t cv[] = {r - 2};
  // sum_j w_ij v_jd over the visible keys: one dot when every value is finite; otherwise a masked
  // sum, so a NaN or Inf value of a key that a query does not see stays out of its row.
  const Shape os = [&] {
    Shape t = ss;
    t.back() = v.shape().back();
    return t;
  }();
  const Value finite = All(b, b.Emit("stablehlo.is_finite", std::span(&v, 1), {DType::Bool, v.shape()}));
  const Value branch = b.Select(finite, b.Scalar(DType::Int32, 0.0), b.Scalar(DType::Int32, 1.0));
  // The dot runs in the main computation: inside a case branch the CPU plugin's dot is far slower.
  const Value dense_value = b.DotGeneral(w, v, batch, batch, cw, cv, DType::Float64);
  const Builder::Region dense{{}, [&](Builder&, std::span<const Value>) { return std::vector<Value>{dense_value}; }};
  const Builder::Region sparse{{}, [&](Builder& rb, std::span<const Value>) {
                                 Shape full = ss;  // [G..., Sq, Sk, Dv]
                                 full.push_back(v.shape().back());
                                 std::vector<int64_t> wd = Range(r), vd = Range(r - 2);
                                 vd.push_back(r - 1);
                                 vd.push_back(r);
                                 const Value terms = rb.Mul(rb.BroadcastInDim(w, full, wd), rb.BroadcastInDim(v, full, vd));
                                 const Value seen = rb.BroadcastInDim(sees, full, std::vector<int64_t>{r - 2, r - 1});
                                 const Value kept = rb.Select(seen, terms, rb.Splat(terms.type, 0.0));
                                 return std::vector<Value>{rb.Reduce(kept, std::vector<int64_t>{r - 1}, ReduceKind::Sum)};
                               }};
  const Builder::Region regions[] = {dense, sparse};
  const TensorType ot{DType::Float64, os};
  const Value o = b.EmitRegions("stablehlo.case", std::span(&branch, 1), std::span(&ot, 1), regions)[0];
  const Value y = b.Div(o, b.BroadcastInDim(sum, os, Range(r - 1)));
  const std::vector<int64_t> qd = {r - 2};
  return b.Select(b.BroadcastInDim(any, os, qd), y, b.Splat(o.type, 0.0));
}

std::vector<Value> Sdpa(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const int64_t r = in[0].rank();
  if (in[0].shape().back() == 0 && in[0].shape()[static_cast<size_t>(r - 2)] > 0 && in[1].shape()[static_cast<size_t>(r - 2)] > 0) {
    ctx.Unsupported("depth 0 with queries and keys (the CPU kernel rejects it: the scale is 1/sqrt(depth))");
  }
  Visibility vis;
  vis.causal = ctx.attrs().Bool("causal");
  const Value y = Attend(b, F64(b, in[0]), F64(b, in[1]), F64(b, in[2]), vis);
  return {StoreAs(b, y, in[0].dtype())};
}

enum class HeadsKind { kMqa, kGqa, kSlidingWindow };

// q [B, H, Sq, D], k and v [B, KV, Sk, D]: query head h uses KV head h / (H / KV).
LowerFn Heads(HeadsKind kind) {
  return [kind](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const runtime::Attrs& a = ctx.attrs();
    const Shape& qs = in[0].shape();
    const int64_t batch = qs[0], h = qs[1], kv = in[1].shape()[1], sk = in[1].shape()[2], d = qs[3];
    Visibility vis;
    if (kind == HeadsKind::kSlidingWindow) {
      vis.window = a.Int("window");
      vis.right = a.Int("window_right");
    } else {
      vis.causal = a.Bool("causal");
    }
    if (kind == HeadsKind::kGqa) {
      vis.window = a.Int("window");
      vis.right = a.Int("window_right");
      // The kernel takes the slope as f32 and raises it to h + 1 in f64.
      const double slope = static_cast<double>(static_cast<float>(a.Float("alibi_slope")));
      if (slope > 1.0 && !std::isfinite(std::pow(slope, static_cast<double>(h)))) {
        ctx.Unsupported("alibi_slope^num_heads overflows (the CPU kernel rejects it)");
      }
      if (slope != 0.0) {
        for (int64_t i = 0; i < h; ++i) vis.alibi.push_back(std::pow(slope, static_cast<double>(i + 1)));
        vis.head_axis = 1;
      }
    }
    auto expand = [&](const Value& t) {
      const Value t64 = F64(b, t);
      if (kv == h) return t64;
      const Shape full{batch, kv, h / kv, sk, d};
      const std::vector<int64_t> dims = {0, 1, 3, 4};
      return b.Reshape(b.BroadcastInDim(t64, full, dims), {batch, h, sk, d});
    };
    const Value y = Attend(b, F64(b, in[0]), expand(in[1]), expand(in[2]), vis);
    return std::vector<Value>{StoreAs(b, y, in[0].dtype())};
  };
}

}  // namespace

void RegisterAttentionLowerings(LoweringTable& t) {
  t.Add("attention.sdpa", Sdpa);
  t.Add("attention.mqa", Heads(HeadsKind::kMqa));
  t.Add("attention.gqa", Heads(HeadsKind::kGqa));
  t.Add("attention.sliding_window", Heads(HeadsKind::kSlidingWindow));
}

}  // namespace backplane::xla::nn
