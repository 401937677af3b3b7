// Elementwise math: math.* binaries and unaries, elementwise.relu, math.axpy.
#include <cmath>

#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

using Fn1 = Value (*)(Builder&, const Value&);
using Fn2 = Value (*)(Builder&, const Value&, const Value&);

// f(x) computed in ComputeType(dtype), rounded once to the output dtype (the CPU kernels' rule).
LowerFn UnaryFloat(Fn1 f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    const DType out = ctx.out_type(0).dtype;
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, x), out)};
  };
}

LowerFn BinaryFloat(Fn2 f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    const TensorType& out = ctx.out_type(0);
    const DType ct = ComputeType(out.dtype);
    const Value a = ctx.b.Convert(Broadcast(ctx.b, in[0], out.shape), ct);
    const Value b = ctx.b.Convert(Broadcast(ctx.b, in[1], out.shape), ct);
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, a, b), out.dtype)};
  };
}

Value Op(Builder& b, const char* name, const Value& x) { return b.Unary(name, x); }

Value Relu(Builder& b, const Value& x) {
  // torch.relu: x < 0 -> 0, otherwise x (NaN and -0 pass through), like the reference.
  return b.Select(b.Compare(x, b.SplatLike(x, 0.0), "LT"), b.SplatLike(x, 0.0), x);
}

Value Sign(Builder& b, const Value& x) {
  // numpy.sign: +1, -1, +0 for either zero, NaN for NaN (the reference's rule).
  const Value zero = b.SplatLike(x, 0.0);
  const Value pos = b.Select(b.Compare(x, zero, "GT"), b.SplatLike(x, 1.0), b.Select(b.Compare(x, zero, "EQ"), zero, x));
  return b.Select(b.Compare(x, zero, "LT"), b.SplatLike(x, -1.0), pos);
}

}  // namespace

void RegisterElementwiseLowerings(LoweringTable& t) {
  t.Add("math.add", BinaryFloat([](Builder& b, const Value& x, const Value& y) { return b.Add(x, y); }));
  t.Add("math.sub", BinaryFloat([](Builder& b, const Value& x, const Value& y) { return b.Sub(x, y); }));
  t.Add("math.mul", BinaryFloat([](Builder& b, const Value& x, const Value& y) { return b.Mul(x, y); }));
  t.Add("math.div", BinaryFloat([](Builder& b, const Value& x, const Value& y) { return b.Div(x, y); }));
  t.Add("math.maximum", BinaryFloat([](Builder& b, const Value& x, const Value& y) { return b.Max(x, y); }));
  t.Add("math.minimum", BinaryFloat([](Builder& b, const Value& x, const Value& y) { return b.Min(x, y); }));
  t.Add("math.exp", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.exponential", x); }));
  t.Add("math.log", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.log", x); }));
  t.Add("math.sin", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.sine", x); }));
  t.Add("math.cos", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.cosine", x); }));
  t.Add("math.abs", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.abs", x); }));
  t.Add("math.neg", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.negate", x); }));
  t.Add("math.sqrt", UnaryFloat([](Builder& b, const Value& x) { return Op(b, "stablehlo.sqrt", x); }));
  t.Add("math.sign", UnaryFloat(Sign));
  t.Add("elementwise.relu", UnaryFloat(Relu));
}

}  // namespace backplane::xla
