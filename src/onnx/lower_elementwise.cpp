// Lowerings of ONNX's elementwise ops: broadcasting arithmetic (integer constants folded on the
// host for shape arithmetic), unary math and the activations, Clip, Pow with a constant exponent.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string_view>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

// NumPy broadcast of two static shapes.
Shape Broadcast(const Context& ctx, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      ctx.Invalid(fmt::format("shapes {} and {} do not broadcast", ShapeToString(a), ShapeToString(b)));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Flat index into `shape` (right-aligned in `out`) of output element `flat`.
int64_t BroadcastIndex(const Shape& out, const Shape& shape, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (size_t k = out.size(); k-- > 0;) {
    const int64_t coord = flat % out[k];
    flat /= out[k];
    const size_t off = out.size() - shape.size();
    if (k >= off) {
      const int64_t d = shape[k - off];
      index += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
  }
  return index;
}

// Integer arithmetic of two constants (shape computations: Shape -> Mul -> Reshape and the like).
Tensor HostIntBinary(const Context& ctx, const Tensor& a, const Tensor& b, char op) {
  const Shape shape = Broadcast(ctx, a.shape(), b.shape());
  const std::vector<int64_t> va = TensorInts(a), vb = TensorInts(b);
  std::vector<int64_t> out(static_cast<size_t>(NumElements(shape)));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = va[static_cast<size_t>(BroadcastIndex(shape, a.shape(), static_cast<int64_t>(i)))];
    const int64_t y = vb[static_cast<size_t>(BroadcastIndex(shape, b.shape(), static_cast<int64_t>(i)))];
    switch (op) {
      case '+': out[i] = x + y; break;
      case '-': out[i] = x - y; break;
      case '*': out[i] = x * y; break;
      case '/':
        if (y == 0) ctx.Invalid("integer division by zero in a constant");
        out[i] = x / y;  // truncates, as ONNX's integer Div
        break;
      case '>': out[i] = std::max(x, y); break;
      default: out[i] = std::min(x, y); break;
    }
  }
  return CastTensor(IntsTensor(out, shape), a.dtype());
}

bool IntConstants(const Value& a, const Value& b) {
  return a.constant && b.constant && IsInteger(a.dtype) && a.dtype == b.dtype;
}

void Binary(Context& ctx, const char* op, char host) {
  ctx.AllowAttrs({});
  const Value& a = ctx.In(0);
  const Value& b = ctx.In(1);
  if (IntConstants(a, b)) {
    ctx.DefineConstant(ctx.Output(0), HostIntBinary(ctx, *a.constant, *b.constant, host));
    return;
  }
  ctx.Op(op, {ctx.Input(0), ctx.Input(1)}, {}, ctx.Output(0));
}

// Max, Min, Sum: a chain over one or more inputs.
void Variadic(Context& ctx, const char* op, char host) {
  ctx.AllowAttrs({});
  if (ctx.NumInputs() < 1) ctx.Invalid("needs at least one input");
  std::string acc = ctx.Input(0);
  for (int i = 1; i < ctx.NumInputs(); ++i) {
    const std::string out = i + 1 == ctx.NumInputs() ? ctx.Output(0) : ctx.Fresh(ctx.Output(0));
    const Value& a = ctx.Get(acc);
    const Value& b = ctx.In(i);
    if (IntConstants(a, b)) {
      ctx.DefineConstant(out, HostIntBinary(ctx, *a.constant, *b.constant, host));
    } else {
      ctx.Op(op, {acc, ctx.Input(i)}, {}, out);
    }
    acc = out;
  }
  if (ctx.NumInputs() == 1) ctx.Alias(acc, ctx.Output(0));
}

void Mean(Context& ctx) {
  ctx.AllowAttrs({});
  if (ctx.NumInputs() < 1) ctx.Invalid("needs at least one input");
  std::string acc = ctx.Input(0);
  for (int i = 1; i < ctx.NumInputs(); ++i) acc = ctx.Op("math.add", {acc, ctx.Input(i)});
  ctx.Op("math.div", {acc, ctx.Scalar(ctx.NumInputs(), ctx.In(0).dtype)}, {}, ctx.Output(0));
}

void Unary(Context& ctx, const char* op) {
  ctx.AllowAttrs({});
  const Value& x = ctx.In(0);
  const std::string_view id = op;
  if (x.constant && IsInteger(x.dtype) && (id == "math.neg" || id == "math.abs")) {
    std::vector<int64_t> v = TensorInts(*x.constant);  // shape arithmetic on integer constants
    for (int64_t& e : v) e = id == "math.neg" ? -e : (e < 0 ? -e : e);
    ctx.DefineConstant(ctx.Output(0), CastTensor(IntsTensor(v, x.constant->shape()), x.dtype));
    return;
  }
  ctx.Op(op, {ctx.Input(0)}, {}, ctx.Output(0));
}

void WithAlpha(Context& ctx, const char* op, const char* attr, double fallback) {
  ctx.AllowAttrs({"alpha"});
  ctx.Op(op, {ctx.Input(0)}, {{attr, ctx.AttrFloat("alpha", fallback)}}, ctx.Output(0));
}

// Selu(x) = gamma * elu(x, alpha): the catalog's fixed-constant selu for the defaults.
void Selu(Context& ctx) {
  ctx.AllowAttrs({"alpha", "gamma"});
  const double alpha = ctx.AttrFloat("alpha", 1.67326319217681884765625);
  const double gamma = ctx.AttrFloat("gamma", 1.05070102214813232421875);
  if (static_cast<float>(alpha) == 1.67326319217681884765625f && static_cast<float>(gamma) == 1.05070102214813232421875f) {
    ctx.Op("activation.selu", {ctx.Input(0)}, {}, ctx.Output(0));
    return;
  }
  const std::string elu = ctx.Op("activation.elu_alpha", {ctx.Input(0)}, {{"alpha", alpha}});
  ctx.Op("math.mul", {elu, ctx.Scalar(gamma, ctx.In(0).dtype)}, {}, ctx.Output(0));
}

// HardSigmoid(x) = clamp(alpha x + beta, 0, 1).
void HardSigmoid(Context& ctx) {
  ctx.AllowAttrs({"alpha", "beta"});
  const DType d = ctx.In(0).dtype;
  const std::string ax = ctx.Op("math.mul", {ctx.Input(0), ctx.Scalar(ctx.AttrFloat("alpha", 0.2), d)});
  const std::string y = ctx.Op("math.add", {ax, ctx.Scalar(ctx.AttrFloat("beta", 0.5), d)});
  ctx.Op("activation.hard_tanh_range", {y}, {{"min", 0.0}, {"max", 1.0}}, ctx.Output(0));
}

void ThresholdedRelu(Context& ctx) {
  ctx.AllowAttrs({"alpha"});
  ctx.Op("activation.threshold", {ctx.Input(0)}, {{"threshold", ctx.AttrFloat("alpha", 1.0)}}, ctx.Output(0));
}

// PRelu: a scalar constant slope is activation.prelu; otherwise max(x, 0) + slope min(x, 0).
void PRelu(Context& ctx) {
  ctx.AllowAttrs({});
  const Value& slope = ctx.In(1);
  if (slope.constant && slope.constant->numel() == 1 && IsFloatingPoint(slope.dtype)) {
    ctx.Op("activation.prelu", {ctx.Input(0)}, {{"slope", slope.constant->GetDouble(0)}}, ctx.Output(0));
    return;
  }
  const std::string zero = ctx.Scalar(0.0, ctx.In(0).dtype);
  const std::string pos = ctx.Op("math.maximum", {ctx.Input(0), zero});
  const std::string neg = ctx.Op("math.minimum", {ctx.Input(0), zero});
  const std::string scaled = ctx.Op("math.mul", {neg, ctx.Input(1)});
  ctx.Op("math.add", {pos, scaled}, {}, ctx.Output(0));
}

// Clip(x, lo, hi) = min(max(x, lo), hi) for the bounds given: constants (attributes before opset
// 11) or scalar tensors, which broadcast.
void ClipWith(Context& ctx, const std::string& lo, const std::string& hi) {
  std::string y = ctx.Input(0);
  if (lo.empty() && hi.empty()) {
    ctx.Alias(y, ctx.Output(0));
    return;
  }
  if (IsInteger(ctx.In(0).dtype)) {
    // Integers: selects (math.maximum / minimum take floats only).
    if (!lo.empty()) {
      y = ctx.Op("tensor.where", {ctx.Op("tensor.less", {y, lo}), lo, y}, {}, hi.empty() ? ctx.Output(0) : "");
    }
    if (!hi.empty()) ctx.Op("tensor.where", {ctx.Op("tensor.greater", {y, hi}), hi, y}, {}, ctx.Output(0));
    return;
  }
  if (!lo.empty()) y = ctx.Op("math.maximum", {y, lo}, {}, hi.empty() ? ctx.Output(0) : "");
  if (!hi.empty()) ctx.Op("math.minimum", {y, hi}, {}, ctx.Output(0));
}

void Clip6(Context& ctx) {
  ctx.AllowAttrs({"min", "max"});
  const DType d = ctx.In(0).dtype;
  ClipWith(ctx, ctx.HasAttr("min") ? ctx.Scalar(ctx.AttrFloat("min", 0.0), d) : "",
           ctx.HasAttr("max") ? ctx.Scalar(ctx.AttrFloat("max", 0.0), d) : "");
}

void Clip11(Context& ctx) {
  ctx.AllowAttrs({});
  for (int i = 1; i <= 2; ++i) {
    if (ctx.HasInput(i) && ctx.In(i).rank() != 0) ctx.Invalid(fmt::format("input {} must be a scalar", i == 1 ? "min" : "max"));
  }
  ClipWith(ctx, ctx.HasInput(1) ? ctx.Input(1) : "", ctx.HasInput(2) ? ctx.Input(2) : "");
}

// Pow with a constant scalar exponent in {1, 2, 3, 0.5, -1, -0.5}.
void Pow(Context& ctx) {
  ctx.AllowAttrs({});
  const Value& e = ctx.In(1);
  if (!e.constant || e.constant->numel() != 1) {
    ctx.Unsupported("exponent must be a constant scalar (the catalog has no general pow)");
  }
  const double p = e.constant->GetDouble(0);
  const std::string x = ctx.Input(0);
  const std::string& out = ctx.Output(0);
  const DType d = ctx.In(0).dtype;
  if (p == 1.0) {
    ctx.Alias(x, out);
  } else if (p == 2.0) {
    ctx.Op("math.mul", {x, x}, {}, out);
  } else if (p == 3.0) {
    ctx.Op("math.mul", {ctx.Op("math.mul", {x, x}), x}, {}, out);
  } else if (p == 0.5) {
    ctx.Op("math.sqrt", {x}, {}, out);
  } else if (p == -1.0) {
    ctx.Op("math.div", {ctx.Scalar(1.0, d), x}, {}, out);
  } else if (p == -0.5) {
    ctx.Op("math.div", {ctx.Scalar(1.0, d), ctx.Op("math.sqrt", {x})}, {}, out);
  } else {
    ctx.Unsupported(fmt::format("exponent {} (supported constants: 1, 2, 3, 0.5, -1, -0.5)", p));
  }
}

void Reciprocal(Context& ctx) {
  ctx.AllowAttrs({});
  ctx.Op("math.div", {ctx.Scalar(1.0, ctx.In(0).dtype), ctx.Input(0)}, {}, ctx.Output(0));
}

}  // namespace

void AddElementwiseOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"Add", 7, kMax, [](Context& c) { Binary(c, "math.add", '+'); }});
  t.push_back({"Sub", 7, kMax, [](Context& c) { Binary(c, "math.sub", '-'); }});
  t.push_back({"Mul", 7, kMax, [](Context& c) { Binary(c, "math.mul", '*'); }});
  t.push_back({"Div", 7, kMax, [](Context& c) { Binary(c, "math.div", '/'); }});
  t.push_back({"Max", 8, kMax, [](Context& c) { Variadic(c, "math.maximum", '>'); }});
  t.push_back({"Min", 8, kMax, [](Context& c) { Variadic(c, "math.minimum", '<'); }});
  t.push_back({"Sum", 8, kMax, [](Context& c) { Variadic(c, "math.add", '+'); }});
  t.push_back({"Mean", 8, kMax, Mean});
  t.push_back({"Abs", 6, kMax, [](Context& c) { Unary(c, "math.abs"); }});
  t.push_back({"Neg", 6, kMax, [](Context& c) { Unary(c, "math.neg"); }});
  t.push_back({"Sqrt", 6, kMax, [](Context& c) { Unary(c, "math.sqrt"); }});
  t.push_back({"Exp", 6, kMax, [](Context& c) { Unary(c, "math.exp"); }});
  t.push_back({"Log", 6, kMax, [](Context& c) { Unary(c, "math.log"); }});
  t.push_back({"Sin", 7, kMax, [](Context& c) { Unary(c, "math.sin"); }});
  t.push_back({"Cos", 7, kMax, [](Context& c) { Unary(c, "math.cos"); }});
  t.push_back({"Sign", 9, kMax, [](Context& c) { Unary(c, "math.sign"); }});
  t.push_back({"Tanh", 6, kMax, [](Context& c) { Unary(c, "activation.tanh"); }});
  t.push_back({"Sigmoid", 6, kMax, [](Context& c) { Unary(c, "activation.sigmoid"); }});
  t.push_back({"Relu", 6, kMax, [](Context& c) { Unary(c, "activation.relu"); }});
  t.push_back({"Softplus", 1, kMax, [](Context& c) { Unary(c, "activation.softplus"); }});
  t.push_back({"Softsign", 1, kMax, [](Context& c) { Unary(c, "activation.softsign"); }});
  t.push_back({"HardSwish", 14, kMax, [](Context& c) { Unary(c, "activation.hard_swish"); }});
  t.push_back({"Reciprocal", 6, kMax, Reciprocal});
  t.push_back({"LeakyRelu", 6, kMax, [](Context& c) { WithAlpha(c, "activation.leaky_relu", "alpha", 0.01); }});
  t.push_back({"Elu", 6, kMax, [](Context& c) { WithAlpha(c, "activation.elu_alpha", "alpha", 1.0); }});
  t.push_back({"Celu", 12, kMax, [](Context& c) { WithAlpha(c, "activation.celu_alpha", "alpha", 1.0); }});
  t.push_back({"Selu", 6, kMax, Selu});
  t.push_back({"HardSigmoid", 6, kMax, HardSigmoid});
  t.push_back({"ThresholdedRelu", 10, kMax, ThresholdedRelu});
  t.push_back({"PRelu", 7, kMax, PRelu});
  t.push_back({"Clip", 6, 10, Clip6});
  t.push_back({"Clip", 11, kMax, Clip11});
  t.push_back({"Pow", 7, kMax, Pow});
}

}  // namespace backplane::onnx
