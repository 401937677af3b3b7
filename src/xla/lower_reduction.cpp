// reduction.*: sums and products accumulate in f64 like the CPU reference; min/max are exact.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

std::vector<int64_t> ReducedAxes(const LowerContext& ctx, int64_t rank) {
  std::vector<int64_t> axes = ctx.attrs().Ints("axis");
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = Axis(ctx, "axis", a, rank);
  std::sort(axes.begin(), axes.end());
  return axes;
}

LowerFn Reduction(ReduceKind kind, bool f64_accumulation, bool abs_first) {
  return [=](LowerContext& ctx, std::span<const Value> in) {
    const std::vector<int64_t> axes = ReducedAxes(ctx, in[0].rank());
    Value x = ctx.b.Convert(in[0], f64_accumulation ? DType::Float64 : in[0].dtype());
    if (abs_first) x = ctx.b.Unary("stablehlo.abs", x);
    Value r = ctx.b.Reduce(x, axes, kind);  // max/min propagate NaN (Builder::Reduce)
    // Totals are rounded once to f32 for the f32-class formats (the reference), then stored.
    if (f64_accumulation && ctx.out_type(0).dtype != DType::Float64) r = ctx.b.Convert(r, DType::Float32);
    return std::vector<Value>{ctx.b.Convert(r, ctx.out_type(0).dtype)};
  };
}

}  // namespace

Value ArgMaxLast(Builder& b, const Value& x) {
  const int64_t last = x.rank() - 1;
  const int64_t n = x.shape().back();
  const int64_t dims[] = {last};
  const Value is_nan = b.Compare(x, x, "NE");
  const Value clean = b.Select(is_nan, b.SplatLike(x, -INFINITY), x);
  const Value best = b.BroadcastTo(b.ReduceKeep(clean, dims, ReduceKind::Max), x.shape());
  const Value iota = b.Iota({DType::Int64, x.shape()}, last);
  const Value candidates = b.Select(b.Compare(clean, best, "EQ"), iota, b.Splat({DType::Int64, x.shape()}, static_cast<double>(n)));
  const Value index = b.Reduce(candidates, dims, ReduceKind::Min);
  // A leading NaN is never displaced.
  Shape start(static_cast<size_t>(x.rank()), 0), limit = x.shape(), strides(static_cast<size_t>(x.rank()), 1);
  limit[static_cast<size_t>(last)] = 1;
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  const Value first_nan = b.Reshape(b.Slice(is_nan, start, limit, strides), out_shape);
  return b.Select(first_nan, b.Splat({DType::Int64, out_shape}, 0.0), index);
}

void RegisterReductionLowerings(LoweringTable& t) {
  t.Add("reduction.sum", Reduction(ReduceKind::Sum, true, false));
  t.Add("reduction.prod", Reduction(ReduceKind::Prod, true, false));
  t.Add("reduction.max", Reduction(ReduceKind::Max, false, false));
  t.Add("reduction.min", Reduction(ReduceKind::Min, false, false));
  t.Add("reduction.l1_norm", Reduction(ReduceKind::Sum, true, true));
}

}  // namespace backplane::xla
