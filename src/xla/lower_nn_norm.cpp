// math.rmsnorm / layernorm / groupnorm / instancenorm / batchnorm: statistics and the normalised
// values in f64 (two passes, biased variance), one rounding on store, as the reference.
#include <fmt/format.h>

#include <cmath>

#include "xla/lower_nn_common.hpp"

namespace backplane::xla::nn {
namespace {

// Per-block statistics over axis `axis` of x (f64): (x - mean) / sqrt(var + eps).
Value Standardise(Builder& b, const Value& x, int64_t axis, double eps) {
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  const int64_t dims[] = {axis};
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis) keep.push_back(i);
  }
  auto spread = [&](const Value& stat) { return b.BroadcastInDim(stat, x.shape(), keep); };
  const Value count = b.Splat({DType::Float64, {}}, static_cast<double>(n));
  const Value sum = b.Reduce(x, dims, ReduceKind::Sum);
  const Value mean = b.Div(sum, b.BroadcastTo(count, sum.shape()));
  const Value centred = b.Sub(x, spread(mean));
  const Value squares = b.Reduce(b.Mul(centred, centred), dims, ReduceKind::Sum);
  const Value var = b.Div(squares, b.BroadcastTo(count, squares.shape()));
  const Value rstd = b.Div(b.SplatLike(var, 1.0), b.Unary("stablehlo.sqrt", b.Add(var, b.SplatLike(var, eps))));
  return b.Mul(centred, spread(rstd));
}

// [d] parameter broadcast along axis `axis` of `shape`, f64.
Value Along(Builder& b, const Value& p, const Shape& shape, int64_t axis) {
  return b.BroadcastInDim(F64(b, p), shape, std::vector<int64_t>{axis});
}

std::vector<Value> RmsNorm(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value x = F64(b, in[0]);
  const int64_t axis = x.rank() - 1, n = x.shape().back();
  if (NumElements(x.shape()) == 0) return {in[0]};
  const int64_t dims[] = {axis};
  const Value squares = b.Reduce(b.Mul(x, x), dims, ReduceKind::Sum);
  const Value ms = b.Div(squares, b.SplatLike(squares, static_cast<double>(n)));
  const Value rms = b.Unary("stablehlo.sqrt", b.Add(ms, b.SplatLike(ms, ctx.attrs().Float("eps"))));
  Value y = b.Div(x, b.BroadcastInDim(rms, x.shape(), Range(axis)));
  if (Has(in, 1)) y = b.Mul(y, Along(b, in[1], x.shape(), axis));
  return {StoreAs(b, y, in[0].dtype())};
}

std::vector<Value> LayerNorm(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value x = F64(b, in[0]);
  if (NumElements(x.shape()) == 0) return {in[0]};
  const int64_t axis = x.rank() - 1;
  Value y = Standardise(b, x, axis, ctx.attrs().Float("eps"));
  if (Has(in, 1)) y = b.Mul(y, Along(b, in[1], x.shape(), axis));
  if (Has(in, 2)) y = b.Add(y, Along(b, in[2], x.shape(), axis));
  return {StoreAs(b, y, in[0].dtype())};
}

// x [B, C, spatial...] as [B, C, S]; blocks of `per` channels normalised together.
Value ChannelBlocks(LowerContext& ctx, std::span<const Value> in, int64_t groups, size_t gamma, size_t beta) {
  Builder& b = ctx.b;
  const Shape& s = in[0].shape();
  const int64_t batch = s[0], c = s[1], sp = NumElements(s) / std::max<int64_t>(batch * c, 1);
  const double eps = ctx.attrs().Float("eps");
  const Shape flat{batch, groups, c / groups * sp};
  Value y = Standardise(b, b.Reshape(F64(b, in[0]), flat), 2, eps);
  const Shape bcs{batch, c, sp};
  y = b.Reshape(y, bcs);
  if (Has(in, gamma)) y = b.Mul(y, Along(b, in[gamma], bcs, 1));
  if (Has(in, beta)) y = b.Add(y, Along(b, in[beta], bcs, 1));
  return StoreAs(b, b.Reshape(y, s), in[0].dtype());
}

std::vector<Value> GroupNorm(LowerContext& ctx, std::span<const Value> in) {
  if (NumElements(in[0].shape()) == 0) return {in[0]};
  return {ChannelBlocks(ctx, in, ctx.attrs().Int("groups"), 1, 2)};
}

std::vector<Value> InstanceNorm(LowerContext& ctx, std::span<const Value> in) {
  if (NumElements(in[0].shape()) == 0) return {in[0]};
  return {ChannelBlocks(ctx, in, in[0].shape()[1], 1, 2)};
}

// x [B, C, spatial...], gamma?, beta?, mean, var: per-channel running statistics.
std::vector<Value> BatchNorm(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Shape& s = in[0].shape();
  const double eps = ctx.attrs().Float("eps");
  const Value var = F64(b, in[4]);
  const Value ve = b.Add(var, b.SplatLike(var, eps));
  const std::string bound = eps == 1e-5 ? "1e-5" : fmt::format("{}", eps);
  ctx.Require(All(b, b.Compare(ve, b.SplatLike(ve, 0.0), "GT")),
              fmt::format("argument 'var' must be such that var[c] + {} > 0 for every channel", bound));
  if (NumElements(s) == 0) return {in[0]};
  const Value x = F64(b, in[0]);
  const Value rstd = b.Div(b.SplatLike(ve, 1.0), b.Unary("stablehlo.sqrt", ve));
  Value y = b.Mul(b.Sub(x, Along(b, in[3], s, 1)), b.BroadcastInDim(rstd, s, std::vector<int64_t>{1}));
  if (Has(in, 1)) y = b.Mul(y, Along(b, in[1], s, 1));
  if (Has(in, 2)) y = b.Add(y, Along(b, in[2], s, 1));
  return {StoreAs(b, y, in[0].dtype())};
}

}  // namespace

Value LayerNormF64(Builder& b, const Value& x, const Value* gamma, const Value* beta, double eps) {
  const int64_t axis = x.rank() - 1;
  Value y = Standardise(b, x, axis, eps);
  if (gamma != nullptr) y = b.Mul(y, Along(b, *gamma, x.shape(), axis));
  if (beta != nullptr) y = b.Add(y, Along(b, *beta, x.shape(), axis));
  return y;
}

void RegisterNormLowerings(LoweringTable& t) {
  t.Add("math.rmsnorm", RmsNorm);
  t.Add("math.layernorm", LayerNorm);
  t.Add("math.groupnorm", GroupNorm);
  t.Add("math.instancenorm", InstanceNorm);
  t.Add("math.batchnorm", BatchNorm);
}

}  // namespace backplane::xla::nn
