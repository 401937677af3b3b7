// Lowerings of ONNX's remaining elementwise math: the inverse trigonometric and hyperbolic
// functions and Tan (math.* on TensorOps.Trig), IsNaN and IsInf (exact comparisons), BitShift
// (tensor.bitshift_left/right) and Shrink (comparisons and tensor.where).
#include <fmt/format.h>

#include <limits>
#include <string>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

void Unary(Context& ctx, const char* op) {
  ctx.AllowAttrs({});
  ctx.Op(op, {ctx.Input(0)}, {}, ctx.Output(0));
}

DType FloatInput(Context& ctx, const char* what) {
  const DType d = ctx.In(0).dtype;
  if (!IsFloatingPoint(d) || !kFloatDTypes.Contains(d)) {
    ctx.Unsupported(fmt::format("input 'X' of {} must be f64, f32, f16 or bf16, got {}", what, DTypeName(d)));
  }
  return d;
}

// IsNaN: x != x, true exactly for NaN.
void IsNaN(Context& ctx) {
  ctx.AllowAttrs({});
  FloatInput(ctx, "IsNaN");
  ctx.Op("tensor.not_equal", {ctx.Input(0), ctx.Input(0)}, {}, ctx.Output(0));
}

int64_t Flag(Context& ctx, const char* name) {
  const int64_t v = ctx.AttrInt(name, 1);
  if (v != 0 && v != 1) ctx.Invalid(fmt::format("attribute '{}' must be 0 or 1, got {}", name, v));
  return v;
}

// IsInf: x == +inf, x == -inf, or their or; neither flag: x == NaN (false everywhere).
void IsInf(Context& ctx) {
  ctx.AllowAttrs({"detect_positive", "detect_negative"});
  const DType d = FloatInput(ctx, "IsInf");
  const bool pos = Flag(ctx, "detect_positive") == 1, neg = Flag(ctx, "detect_negative") == 1;
  const double inf = std::numeric_limits<double>::infinity();
  const std::string& x = ctx.Input(0);
  if (pos && neg) {
    const std::string p = ctx.Op("tensor.equal", {x, ctx.Scalar(inf, d)});
    const std::string n = ctx.Op("tensor.equal", {x, ctx.Scalar(-inf, d)});
    ctx.Op("tensor.logical_or", {p, n}, {}, ctx.Output(0));
    return;
  }
  const double target = pos ? inf : neg ? -inf : std::numeric_limits<double>::quiet_NaN();
  ctx.Op("tensor.equal", {x, ctx.Scalar(target, d)}, {}, ctx.Output(0));
}

void BitShift(Context& ctx) {
  ctx.AllowAttrs({"direction"});
  if (!ctx.HasAttr("direction")) ctx.Invalid("attribute 'direction' is required ('LEFT' or 'RIGHT')");
  const std::string dir = ctx.AttrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") {
    ctx.Invalid(fmt::format("attribute 'direction' must be 'LEFT' or 'RIGHT', got '{}'", dir));
  }
  ctx.Op(dir == "LEFT" ? "tensor.bitshift_left" : "tensor.bitshift_right", {ctx.Input(0), ctx.Input(1)}, {},
         ctx.Output(0));
}

// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0.
void Shrink(Context& ctx) {
  ctx.AllowAttrs({"lambd", "bias"});
  const DType d = FloatInput(ctx, "Shrink");
  const double lambd = ctx.AttrFloat("lambd", 0.5), bias = ctx.AttrFloat("bias", 0.0);
  const std::string& x = ctx.Input(0);
  const std::string below = ctx.Op("tensor.less", {x, ctx.Scalar(-lambd, d)});
  const std::string above = ctx.Op("tensor.greater", {x, ctx.Scalar(lambd, d)});
  const std::string plus = ctx.Op("math.add", {x, ctx.Scalar(bias, d)});
  const std::string minus = ctx.Op("math.add", {x, ctx.Scalar(-bias, d)});
  const std::string upper = ctx.Op("tensor.where", {above, minus, ctx.Scalar(0.0, d)});
  ctx.Op("tensor.where", {below, plus, upper}, {}, ctx.Output(0));
}

}  // namespace

void AddMathOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"Tan", 7, kMax, [](Context& c) { Unary(c, "math.tan"); }});
  t.push_back({"Asin", 7, kMax, [](Context& c) { Unary(c, "math.asin"); }});
  t.push_back({"Acos", 7, kMax, [](Context& c) { Unary(c, "math.acos"); }});
  t.push_back({"Atan", 7, kMax, [](Context& c) { Unary(c, "math.atan"); }});
  t.push_back({"Sinh", 9, kMax, [](Context& c) { Unary(c, "math.sinh"); }});
  t.push_back({"Cosh", 9, kMax, [](Context& c) { Unary(c, "math.cosh"); }});
  t.push_back({"Asinh", 9, kMax, [](Context& c) { Unary(c, "math.asinh"); }});
  t.push_back({"Acosh", 9, kMax, [](Context& c) { Unary(c, "math.acosh"); }});
  t.push_back({"Atanh", 9, kMax, [](Context& c) { Unary(c, "math.atanh"); }});
  t.push_back({"IsNaN", 9, kMax, IsNaN});
  t.push_back({"IsInf", 10, kMax, IsInf});
  t.push_back({"BitShift", 11, kMax, BitShift});
  t.push_back({"Shrink", 9, kMax, Shrink});
}

}  // namespace backplane::onnx
