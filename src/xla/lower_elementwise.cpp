// Elementwise math: math.* binaries and unaries, elementwise.relu, the Trig functions and erf,
// math.axpy, math.outer, math.dot.
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

// f(x) computed in f64 (the Trig / erf reference: the C library function in f64, one rounding).
LowerFn UnaryF64(Fn1 f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    const Value x = ctx.b.Convert(in[0], DType::Float64);
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, x), ctx.out_type(0).dtype)};
  };
}

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
  // Trig and erf: f64 like the reference (chlo ops, which the plugin legalises; checked to compile).
  t.Add("math.erf", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.erf", x); }));
  t.Add("math.tan", UnaryF64([](Builder& b, const Value& x) { return Op(b, "stablehlo.tan", x); }));
  t.Add("math.asin", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.asin", x); }));
  t.Add("math.acos", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.acos", x); }));
  t.Add("math.atan", UnaryF64([](Builder& b, const Value& x) { return b.Binary("stablehlo.atan2", x, b.SplatLike(x, 1.0)); }));
  t.Add("math.sinh", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.sinh", x); }));
  t.Add("math.cosh", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.cosh", x); }));
  t.Add("math.asinh", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.asinh", x); }));
  t.Add("math.acosh", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.acosh", x); }));
  t.Add("math.atanh", UnaryF64([](Builder& b, const Value& x) { return Op(b, "chlo.atanh", x); }));
  // y + alpha x in the compute type, alpha rounded to f32 first (the kernel takes a float).
  t.Add("math.axpy", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const DType ct = ComputeType(out.dtype);
    const Value y = b.Convert(in[0], ct);
    const Value x = b.Convert(Broadcast(b, in[1], out.shape), ct);
    const double alpha = static_cast<double>(static_cast<float>(ctx.attrs().Float("alpha")));
    return std::vector<Value>{b.Convert(b.Add(y, b.Mul(b.SplatLike(x, alpha), x)), out.dtype)};
  });
  // a [M] x b [N] -> [M, N], each product in the compute type, rounded once.
  t.Add("math.outer", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const DType ct = ComputeType(out.dtype);
    const int64_t d0[] = {0}, d1[] = {1};
    const Value a = b.BroadcastInDim(b.Convert(in[0], ct), out.shape, d0);
    const Value c = b.BroadcastInDim(b.Convert(in[1], ct), out.shape, d1);
    return std::vector<Value>{b.Convert(b.Mul(a, c), out.dtype)};
  });
  // Floats: products and sum in f64, rounded once to f32 (then stored) for f32/f16/bf16; i8:
  // exact i64.
  t.Add("math.dot", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const DType out = ctx.out_type(0).dtype;
    const DType acc = in[0].dtype() == DType::Int8 ? DType::Int64 : DType::Float64;
    const int64_t d0[] = {0};
    Value total = b.Reduce(b.Mul(b.Convert(in[0], acc), b.Convert(in[1], acc)), d0, ReduceKind::Sum);
    if (acc == DType::Float64 && out != DType::Float64) total = b.Convert(total, DType::Float32);
    return std::vector<Value>{b.Convert(total, out)};
  });
}

}  // namespace backplane::xla
