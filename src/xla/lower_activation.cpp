// Activations and row-wise softmax family.
#include <cmath>

#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

Value Relu(Builder& b, const Value& x) {
  return b.Select(b.Compare(x, b.SplatLike(x, 0.0), "GT"), x, b.SplatLike(x, 0.0));
}

}  // namespace

Value Softmax(Builder& b, const Value& x, int64_t axis) {
  const int64_t dims[] = {axis};
  const Value m = b.BroadcastTo(b.ReduceKeep(x, dims, ReduceKind::Max), x.shape());
  const Value e = b.Unary("stablehlo.exponential", b.Sub(x, m));
  const Value s = b.BroadcastTo(b.ReduceKeep(e, dims, ReduceKind::Sum), x.shape());
  return b.Div(e, s);
}

Value LogSoftmax(Builder& b, const Value& x, int64_t axis) {
  const int64_t dims[] = {axis};
  const Value m = b.BroadcastTo(b.ReduceKeep(x, dims, ReduceKind::Max), x.shape());
  const Value shifted = b.Sub(x, m);
  const Value s = b.ReduceKeep(b.Unary("stablehlo.exponential", shifted), dims, ReduceKind::Sum);
  return b.Sub(shifted, b.BroadcastTo(b.Unary("stablehlo.log", s), x.shape()));
}

void RegisterActivationLowerings(LoweringTable& t) {
  t.Add("activation.relu", [](LowerContext& ctx, std::span<const Value> in) {
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    return std::vector<Value>{ctx.b.Convert(Relu(ctx.b, x), ctx.out_type(0).dtype)};
  });
  t.Add("math.softmax", [](LowerContext& ctx, std::span<const Value> in) {
    const int64_t axis = Axis(ctx, "axis", ctx.attrs().Int("axis"), in[0].rank());
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    return std::vector<Value>{ctx.b.Convert(Softmax(ctx.b, x, axis), ctx.out_type(0).dtype)};
  });
}

}  // namespace backplane::xla
