// Lowerings of ONNX's comparison, logic, Where, Cast/CastLike, Pow, Mod and rounding ops onto the
// TensorOps elementwise catalog ops (tensor.*, math.erf). Cast, CastLike and Pow already have
// entries in other files (constant folding, constant exponents); this file wraps those entries so
// that runtime values go to tensor.cast / tensor.pow and everything else keeps the old path.
#include <fmt/format.h>

#include <string>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {
namespace {

// The entries this file wraps (null when the table had none).
LowerFn g_cast_before = nullptr;
LowerFn g_cast_like_before = nullptr;
LowerFn g_pow_before = nullptr;

std::string DTypeAttr(DType d) { return std::string(DTypeName(d)); }

// Emits tensor.cast of `value` to `to` (the value itself when it already has that dtype).
std::string CastValue(Context& ctx, const std::string& value, DType to, const std::string& out = "") {
  if (ctx.Get(value).dtype == to && out.empty()) return value;
  return ctx.Op("tensor.cast", {value}, {{"to", DTypeAttr(to)}}, out);
}

void Binary(Context& ctx, const char* op) {
  ctx.AllowAttrs({});
  ctx.Op(op, {ctx.Input(0), ctx.Input(1)}, {}, ctx.Output(0));
}

void Unary(Context& ctx, const char* op) {
  ctx.AllowAttrs({});
  ctx.Op(op, {ctx.Input(0)}, {}, ctx.Output(0));
}

void Where(Context& ctx) {
  ctx.AllowAttrs({});
  ctx.Op("tensor.where", {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, {}, ctx.Output(0));
}

void Mod(Context& ctx) {
  ctx.AllowAttrs({"fmod"});
  const int64_t fmod = ctx.AttrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.Invalid(fmt::format("attribute 'fmod' must be 0 or 1, got {}", fmod));
  // The ONNX spec requires fmod = 1 for floating-point inputs.
  if (fmod == 0 && IsFloatingPoint(ctx.In(0).dtype)) {
    ctx.Invalid(fmt::format("attribute 'fmod' must be 1 for floating-point inputs ({}), got 0", DTypeName(ctx.In(0).dtype)));
  }
  ctx.Op("tensor.mod", {ctx.Input(0), ctx.Input(1)}, {{"fmod", fmod == 1}}, ctx.Output(0));
}

// Runtime values of another dtype become tensor.cast; constants and same-dtype values keep the
// earlier entry's folding and aliasing.
void CastTo(Context& ctx, DType to, LowerFn before) {
  const Value& x = ctx.In(0);
  if ((x.constant || x.dtype == to) && before != nullptr) return before(ctx);
  if (!kTensorDTypesAndBool.Contains(x.dtype) || !kTensorDTypesAndBool.Contains(to)) {
    ctx.Unsupported(fmt::format("cast from {} to {}", DTypeName(x.dtype), DTypeName(to)));
  }
  CastValue(ctx, ctx.Input(0), to, ctx.Output(0));
}

void Cast(Context& ctx) {
  ctx.AllowAttrs({"to", "saturate"});
  const int64_t to = ctx.AttrInt("to", 0);
  const auto dtype = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype) {
    ctx.Unsupported(
        fmt::format("attribute 'to' = {} is not a supported dtype", OnnxTypeName(static_cast<int32_t>(to))));
  }
  CastTo(ctx, *dtype, g_cast_before);
}

void CastLike(Context& ctx) {
  ctx.AllowAttrs({});
  CastTo(ctx, ctx.In(1).dtype, g_cast_like_before);
}

// A constant scalar exponent the earlier Pow entry lowers to products and square roots.
bool SimpleExponent(const Value& x, const Value& e) {
  if (!e.constant || e.constant->numel() != 1 || !IsFloatingPoint(x.dtype)) return false;
  const double p = e.constant->GetDouble(0);
  return p == 1.0 || p == 2.0 || p == 3.0 || p == 0.5 || p == -1.0 || p == -0.5;
}

// Pow(X, Y) with X's dtype: float X takes Y cast to its dtype; integer X is computed in f64 and
// truncated back (exact while the powers stay below 2^53).
void Pow(Context& ctx) {
  ctx.AllowAttrs({});
  const Value& x = ctx.In(0);
  const Value& y = ctx.In(1);
  if (g_pow_before != nullptr && SimpleExponent(x, y)) return g_pow_before(ctx);
  if (!kTensorDTypes.Contains(x.dtype) || !kTensorDTypes.Contains(y.dtype)) {
    ctx.Unsupported(fmt::format("Pow of {} by {}", DTypeName(x.dtype), DTypeName(y.dtype)));
  }
  if (IsFloatingPoint(x.dtype)) {
    ctx.Op("tensor.pow", {ctx.Input(0), CastValue(ctx, ctx.Input(1), x.dtype)}, {}, ctx.Output(0));
    return;
  }
  const DType xd = x.dtype;
  const std::string p = ctx.Op("tensor.pow", {CastValue(ctx, ctx.Input(0), DType::Float64),
                                              CastValue(ctx, ctx.Input(1), DType::Float64)});
  CastValue(ctx, p, xd, ctx.Output(0));
}

// Points the existing entries for `type` at `fn`, remembering the first one's lowering; adds an
// entry over `since`..kMaxOpset when there was none.
void Wrap(std::vector<OpEntry>& t, std::string_view type, int since, LowerFn fn, LowerFn& before) {
  bool found = false;
  for (OpEntry& e : t) {
    if (e.op_type != type) continue;
    if (!found) before = e.lower;
    found = true;
    e.lower = fn;
  }
  if (!found) t.push_back({type, since, kMaxOpset, fn});
}

}  // namespace

void AddTensorElementwiseOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"Equal", 7, kMax, [](Context& c) { Binary(c, "tensor.equal"); }});
  t.push_back({"Less", 7, kMax, [](Context& c) { Binary(c, "tensor.less"); }});
  t.push_back({"LessOrEqual", 12, kMax, [](Context& c) { Binary(c, "tensor.less_equal"); }});
  t.push_back({"Greater", 7, kMax, [](Context& c) { Binary(c, "tensor.greater"); }});
  t.push_back({"GreaterOrEqual", 12, kMax, [](Context& c) { Binary(c, "tensor.greater_equal"); }});
  t.push_back({"And", 7, kMax, [](Context& c) { Binary(c, "tensor.logical_and"); }});
  t.push_back({"Or", 7, kMax, [](Context& c) { Binary(c, "tensor.logical_or"); }});
  t.push_back({"Xor", 7, kMax, [](Context& c) { Binary(c, "tensor.logical_xor"); }});
  t.push_back({"Not", 1, kMax, [](Context& c) { Unary(c, "tensor.logical_not"); }});
  t.push_back({"Where", 9, kMax, Where});
  t.push_back({"Mod", 10, kMax, Mod});
  t.push_back({"Floor", 6, kMax, [](Context& c) { Unary(c, "tensor.floor"); }});
  t.push_back({"Ceil", 6, kMax, [](Context& c) { Unary(c, "tensor.ceil"); }});
  t.push_back({"Round", 11, kMax, [](Context& c) { Unary(c, "tensor.round"); }});
  t.push_back({"Erf", 9, kMax, [](Context& c) { Unary(c, "math.erf"); }});
  // Cast (lower_shape.cpp: constants, same dtype) and Pow (lower_elementwise.cpp: constant
  // exponents 1, 2, 3, 0.5, -1, -0.5) keep those paths; the rest lowers here.
  Wrap(t, "Cast", 6, Cast, g_cast_before);
  Wrap(t, "CastLike", 15, CastLike, g_cast_like_before);
  Wrap(t, "Pow", 7, Pow, g_pow_before);
}

}  // namespace backplane::onnx
