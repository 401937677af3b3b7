// Lowerings of ONNX's linear quantisation ops onto elementwise catalog ops, all exact:
//   quantize   q = saturate(round_half_even(x / scale) + zp)   (f32 arithmetic, as ONNX's reference)
//   dequantize y = (f32(q) - f32(zp)) * scale
// Integer products (MatMulInteger, ConvInteger and the QLinear ops' accumulators) run as f64
// math.matmul / convolution on the zero-point-shifted values: every partial sum of 8-bit products
// is an integer below 2^53, so f64 is exact, and the result is cast to int32.
// Scales and zero points are per tensor (scalars) or per axis (1-D along `axis`).
#include <fmt/format.h>

#include <string>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

std::string Cast(Context& ctx, const std::string& v, DType to) {
  if (ctx.Get(v).dtype == to) return v;
  return ctx.Op("tensor.cast", {v}, {{"to", std::string(DTypeName(to))}});
}

// The quantised range of an ONNX quantised dtype; Unsupported for any other.
struct QRange {
  double lo, hi;
};
QRange RangeOf(const Context& ctx, DType d, const std::string& what) {
  if (d == DType::Uint8) return {0.0, 255.0};
  if (d == DType::Int8) return {-128.0, 127.0};
  ctx.Unsupported(fmt::format("{} must be uint8 or int8, got {}", what, DTypeName(d)));
}

// A scalar or a tensor of one element (every dim static 1).
bool OneValue(const Value& v) {
  for (const ir::Dim& d : v.dims) {
    if (!d.symbol.empty() || d.size != 1) return false;
  }
  return true;
}

// A scale or zero point made broadcastable against a rank-`rank` tensor: a scalar (or one-element
// 1-D) as is, a 1-D of length C reshaped to [C, 1, ..., 1] so that it runs along `axis`.
std::string AlongAxis(Context& ctx, const std::string& v, int64_t rank, int64_t axis, int64_t axis_extent,
                      const std::string& what) {
  const Value& p = ctx.Get(v);
  if (p.rank() == 0) return v;
  if (p.rank() != 1) ctx.Invalid(fmt::format("{} must be a scalar or 1-D, got rank {}", what, p.rank()));
  const ir::Dim& n = p.dims[0];
  if (n.symbol.empty() && n.size == 1) return v;
  if (!n.symbol.empty() || n.size != axis_extent) {
    ctx.Invalid(fmt::format("{} has {} entries; axis {} has {}", what, n.symbol.empty() ? std::to_string(n.size) : n.symbol,
                            axis, axis_extent));
  }
  std::vector<ir::Dim> target{n};
  for (int64_t i = axis + 1; i < rank; ++i) target.push_back({1, ""});
  return ReshapeTo(ctx, v, target);
}

int64_t StaticDim(const Context& ctx, const Value& v, int64_t axis, const std::string& what) {
  const ir::Dim& d = v.dims[static_cast<size_t>(axis)];
  if (!d.symbol.empty()) ctx.Unsupported(fmt::format("{} needs a static axis {} (got '{}')", what, axis, d.symbol));
  return d.size;
}

// saturate(round_half_even(q) + zp) cast to `to`; q and zp are f32 values.
std::string Saturate(Context& ctx, const std::string& q, const std::string& zp, DType to, const std::string& out) {
  const QRange r = RangeOf(ctx, to, "the quantised dtype");
  std::string y = ctx.Op("tensor.round", {q});
  if (!zp.empty()) y = ctx.Op("math.add", {y, zp});
  y = ctx.Op("math.maximum", {y, ctx.Scalar(r.lo, DType::Float32)});
  y = ctx.Op("math.minimum", {y, ctx.Scalar(r.hi, DType::Float32)});
  return ctx.Op("tensor.cast", {y}, {{"to", std::string(DTypeName(to))}}, out);
}

// Opsets 10-12 have no 'axis' attribute (per-tensor parameters only).
void AllowAxisFrom13(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  if (ctx.opset() < 13 && ctx.HasAttr("axis")) {
    ctx.Invalid(fmt::format("attribute 'axis' needs opset 13 or later (the model imports opset {})", ctx.opset()));
  }
}

void RequireF32(const Context& ctx, const Value& v, const std::string& what) {
  if (v.dtype != DType::Float32) ctx.Unsupported(fmt::format("{} must be float32, got {}", what, DTypeName(v.dtype)));
}

// QuantizeLinear(x, y_scale, y_zero_point = uint8 0), axis (opset 13) for 1-D scales.
void QuantizeLinear(Context& ctx) {
  AllowAxisFrom13(ctx);
  const Value& x = ctx.In(0);
  RequireF32(ctx, ctx.In(1), "input 'y_scale'");
  if (x.dtype != DType::Float32 && x.dtype != DType::Int32) {
    ctx.Unsupported(fmt::format("input 'x' must be float32 or int32, got {}", DTypeName(x.dtype)));
  }
  const DType to = ctx.HasInput(2) ? ctx.In(2).dtype : DType::Uint8;
  RangeOf(ctx, to, "input 'y_zero_point'");
  const int64_t rank = x.rank();
  const bool per_axis = rank > 0 && (ctx.In(1).rank() == 1 || (ctx.HasInput(2) && ctx.In(2).rank() == 1));
  const int64_t axis = per_axis ? NormalizeAxis(ctx, ctx.AttrInt("axis", 1), rank, "attribute 'axis'") : 0;
  const int64_t extent = per_axis ? StaticDim(ctx, x, axis, "a per-axis scale") : 1;
  const std::string scale = AlongAxis(ctx, ctx.Input(1), rank, axis, extent, "input 'y_scale'");
  const std::string q = ctx.Op("math.div", {Cast(ctx, ctx.Input(0), DType::Float32), scale});
  std::string zp;
  if (ctx.HasInput(2)) zp = AlongAxis(ctx, Cast(ctx, ctx.Input(2), DType::Float32), rank, axis, extent, "input 'y_zero_point'");
  Saturate(ctx, q, zp, to, ctx.Output(0));
}

// DequantizeLinear(x, x_scale, x_zero_point = 0), axis (opset 13) for 1-D scales.
void DequantizeLinear(Context& ctx) {
  AllowAxisFrom13(ctx);
  const Value& x = ctx.In(0);
  RequireF32(ctx, ctx.In(1), "input 'x_scale'");
  if (x.dtype != DType::Uint8 && x.dtype != DType::Int8 && x.dtype != DType::Int32) {
    ctx.Unsupported(fmt::format("input 'x' must be uint8, int8 or int32, got {}", DTypeName(x.dtype)));
  }
  const int64_t rank = x.rank();
  const bool per_axis = rank > 0 && (ctx.In(1).rank() == 1 || (ctx.HasInput(2) && ctx.In(2).rank() == 1));
  const int64_t axis = per_axis ? NormalizeAxis(ctx, ctx.AttrInt("axis", 1), rank, "attribute 'axis'") : 0;
  const int64_t extent = per_axis ? StaticDim(ctx, x, axis, "a per-axis scale") : 1;
  std::string v = Cast(ctx, ctx.Input(0), DType::Float32);
  if (ctx.HasInput(2)) {
    if (ctx.In(2).dtype != x.dtype) {
      ctx.Invalid(fmt::format("input 'x_zero_point' is {}, input 'x' is {}", DTypeName(ctx.In(2).dtype), DTypeName(x.dtype)));
    }
    v = ctx.Op("math.sub", {v, AlongAxis(ctx, Cast(ctx, ctx.Input(2), DType::Float32), rank, axis, extent,
                                         "input 'x_zero_point'")});
  }
  const std::string scale = AlongAxis(ctx, ctx.Input(1), rank, axis, extent, "input 'x_scale'");
  ctx.Op("math.mul", {v, scale}, {}, ctx.Output(0));
}

// DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point): uint8 over [min(0, min x), max(0, max x)].
void DynamicQuantizeLinear(Context& ctx) {
  ctx.AllowAttrs({});
  const Value& x = ctx.In(0);
  RequireF32(ctx, x, "input 'x'");
  std::vector<int64_t> all;
  for (int64_t i = 0; i < x.rank(); ++i) all.push_back(i);
  std::string lo = ctx.Input(0), hi = ctx.Input(0);
  if (!all.empty()) {
    lo = ctx.Op("reduction.min", {lo}, {{"axis", all}});
    hi = ctx.Op("reduction.max", {hi}, {{"axis", all}});
  }
  const std::string zero = ctx.Scalar(0.0, DType::Float32);
  lo = ctx.Op("math.minimum", {lo, zero});
  hi = ctx.Op("math.maximum", {hi, zero});
  const std::string scale =
      ctx.Op("math.div", {ctx.Op("math.sub", {hi, lo}), ctx.Scalar(255.0, DType::Float32)}, {}, ctx.Output(1));
  const std::string zp = Saturate(ctx, ctx.Op("math.div", {ctx.Op("math.neg", {lo}), scale}), "", DType::Uint8,
                                  ctx.HasOutput(2) ? ctx.Output(2) : "");
  Saturate(ctx, ctx.Op("math.div", {ctx.Input(0), scale}), Cast(ctx, zp, DType::Float32), DType::Uint8, ctx.Output(0));
}

// An 8-bit integer operand minus its zero point, in f64. Per-row / per-column zero points are
// 1-D along `axis` of the operand.
std::string Shifted(Context& ctx, int input, int zp_input, int64_t axis, const std::string& what) {
  const Value& v = ctx.In(input);
  RangeOf(ctx, v.dtype, fmt::format("input '{}'", what));
  std::string s = Cast(ctx, ctx.Input(input), DType::Float64);
  if (!ctx.HasInput(zp_input)) return s;
  if (ctx.In(zp_input).dtype != v.dtype) {
    ctx.Invalid(fmt::format("the zero point of '{}' is {}, '{}' is {}", what, DTypeName(ctx.In(zp_input).dtype), what,
                            DTypeName(v.dtype)));
  }
  const int64_t rank = v.rank();
  const int64_t a = NormalizeAxis(ctx, axis, rank, "zero-point axis");
  const int64_t extent = ctx.In(zp_input).rank() == 1 ? StaticDim(ctx, v, a, "a per-axis zero point") : 1;
  const std::string zp = AlongAxis(ctx, Cast(ctx, ctx.Input(zp_input), DType::Float64), rank, a, extent,
                                   fmt::format("the zero point of '{}'", what));
  return ctx.Op("math.sub", {s, zp});
}

// MatMulInteger(A, B, a_zero_point, b_zero_point) -> int32 (A - a_zp) @ (B - b_zp).
void MatMulInteger(Context& ctx) {
  ctx.AllowAttrs({});
  if (ctx.In(0).rank() < 2 || ctx.In(1).rank() < 2) ctx.Unsupported("inputs 'A' and 'B' must have rank >= 2");
  const std::string a = Shifted(ctx, 0, 2, -2, "A");  // a_zero_point: per row of A
  const std::string b = Shifted(ctx, 1, 3, -1, "B");  // b_zero_point: per column of B
  ctx.Op("tensor.cast", {ctx.Op("math.matmul", {a, b})}, {{"to", std::string("i32")}}, ctx.Output(0));
}

void AllowConvAttrs(Context& ctx) {
  ctx.AllowAttrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
}

// ConvInteger(x, w, x_zero_point, w_zero_point) -> int32 conv(x - x_zp, w - w_zp); the padding
// is zero after the shift (x_zp before it), as ONNX's.
void ConvInteger(Context& ctx) {
  AllowConvAttrs(ctx);
  if (ctx.HasInput(2) && !OneValue(ctx.In(2))) {
    ctx.Unsupported("input 'x_zero_point' must be a scalar");
  }
  const std::string x = Shifted(ctx, 0, 2, 0, "x");
  const std::string w = Shifted(ctx, 1, 3, 0, "w");  // w_zero_point: per output channel
  const std::string y = ctx.Fresh("conv");
  EmitConv(ctx, x, w, "", y);
  ctx.Op("tensor.cast", {y}, {{"to", std::string("i32")}}, ctx.Output(0));
}

// Requantises an exact integer accumulator `acc` (f64): saturate(round(acc * (sa * sb / sy)) + zy),
// the multiplier in f32 as ONNX's reference. `sb` may be per output channel along `axis` of acc.
void Requantize(Context& ctx, const std::string& acc, int64_t axis, int sa, int sb, int sy, int zy) {
  for (int i : {sa, sb, sy}) RequireF32(ctx, ctx.In(i), fmt::format("scale input {}", i));
  const Value& a = ctx.Get(acc);
  const int64_t rank = a.rank();
  const int64_t ax = NormalizeAxis(ctx, axis, rank, "scale axis");
  const int64_t extent = ctx.In(sb).rank() == 1 ? StaticDim(ctx, a, ax, "a per-channel scale") : 1;
  if (!OneValue(ctx.In(sa))) ctx.Unsupported(fmt::format("input {} must be a scalar scale", sa));
  if (!OneValue(ctx.In(sy))) ctx.Unsupported(fmt::format("input {} must be a scalar scale", sy));
  const std::string sbv = AlongAxis(ctx, ctx.Input(sb), rank, ax, extent, fmt::format("scale input {}", sb));
  const std::string m = ctx.Op("math.div", {ctx.Op("math.mul", {ctx.Input(sa), sbv}), ctx.Input(sy)});
  const std::string q = ctx.Op("math.mul", {Cast(ctx, acc, DType::Float32), m});
  const DType to = ctx.In(zy).dtype;
  if (!OneValue(ctx.In(zy))) ctx.Unsupported("the output zero point must be a scalar");
  Saturate(ctx, q, Cast(ctx, ctx.Input(zy), DType::Float32), to, ctx.Output(0));
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
void QLinearMatMul(Context& ctx) {
  ctx.AllowAttrs({});
  if (ctx.In(0).rank() < 2 || ctx.In(3).rank() < 2) ctx.Unsupported("inputs 'a' and 'b' must have rank >= 2");
  if (!OneValue(ctx.In(1))) ctx.Unsupported("input 'a_scale' must be a scalar");
  const std::string a = Shifted(ctx, 0, 2, -2, "a");
  const std::string b = Shifted(ctx, 3, 5, -1, "b");
  Requantize(ctx, ctx.Op("math.matmul", {a, b}), -1, 1, 4, 6, 7);
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): B is int32, added to the
// accumulator before requantisation.
void QLinearConv(Context& ctx) {
  AllowConvAttrs(ctx);
  if (!OneValue(ctx.In(2))) ctx.Unsupported("input 'x_zero_point' must be a scalar");
  const std::string x = Shifted(ctx, 0, 2, 0, "x");
  const std::string w = Shifted(ctx, 3, 5, 0, "w");
  std::string bias;
  if (ctx.HasInput(8)) {
    if (ctx.In(8).dtype != DType::Int32) ctx.Invalid(fmt::format("input 'B' must be int32, got {}", DTypeName(ctx.In(8).dtype)));
    bias = Cast(ctx, ctx.Input(8), DType::Float64);
  }
  const std::string y = ctx.Fresh("conv");
  EmitConv(ctx, x, w, bias, y);
  Requantize(ctx, y, 1, 1, 4, 6, 7);
}

}  // namespace

void AddQuantOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"QuantizeLinear", 10, kMax, QuantizeLinear});
  t.push_back({"DequantizeLinear", 10, kMax, DequantizeLinear});
  t.push_back({"DynamicQuantizeLinear", 11, kMax, DynamicQuantizeLinear});
  t.push_back({"MatMulInteger", 10, kMax, MatMulInteger});
  t.push_back({"ConvInteger", 10, kMax, ConvInteger});
  t.push_back({"QLinearMatMul", 10, kMax, QLinearMatMul});
  t.push_back({"QLinearConv", 10, kMax, QLinearConv});
}

}  // namespace backplane::onnx
