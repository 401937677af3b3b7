// Activations, gated linear units, row-wise softmax family, masking, logsumexp.
//
// Every elementwise lowering mirrors the scalar reference (src/cpu/reference/activation.cpp)
// step by step in the compute type T (f64 for f64, f32 for f32/f16/bf16) and rounds once to the
// output dtype. Each libm call of the reference (exp, log1p, expm1, tanh, sin) is one "Libm"
// value: f64 natively, f32 evaluated in f64 and rounded once to f32 (glibc's float functions
// are correctly rounded or within an ulp; XLA's own f32 approximations are less accurate).
// Branches of the reference become selects with the same comparisons, so NaN takes the same
// path as on the CPU. Parameters are floats on the CPU (static_cast<float> of the attribute);
// invalid ones (the kernel's checks) throw Unlowerable so the CPU reports the error.
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>

#include <fmt/format.h>

#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

using Elem = std::function<Value(Builder&, const Value&)>;
using Elem2 = std::function<Value(Builder&, const Value&, const Value&)>;

Value C(Builder& b, const Value& like, double v) { return b.SplatLike(like, v); }
Value Lt(Builder& b, const Value& x, double v) { return b.Compare(x, C(b, x, v), "LT"); }
Value Le(Builder& b, const Value& x, double v) { return b.Compare(x, C(b, x, v), "LE"); }
Value Gt(Builder& b, const Value& x, double v) { return b.Compare(x, C(b, x, v), "GT"); }
Value Ge(Builder& b, const Value& x, double v) { return b.Compare(x, C(b, x, v), "GE"); }
Value And(Builder& b, const Value& p, const Value& q) { return b.Binary("stablehlo.and", p, q); }
Value IsNan(Builder& b, const Value& x) { return b.Compare(x, x, "NE"); }
Value IsInf(Builder& b, const Value& x) {
  return b.Compare(b.Unary("stablehlo.abs", x), C(b, x, INFINITY), "EQ");
}
Value Neg(Builder& b, const Value& x) { return b.Unary("stablehlo.negate", x); }

// One libm call of the reference in the compute type of x.
Value Libm(Builder& b, const char* op, const Value& x) {
  if (x.dtype() == DType::Float32) return b.Convert(b.Unary(op, b.Convert(x, DType::Float64)), DType::Float32);
  return b.Unary(op, x);
}
Value Exp(Builder& b, const Value& x) { return Libm(b, "stablehlo.exponential", x); }
Value Log1p(Builder& b, const Value& x) { return Libm(b, "stablehlo.log_plus_one", x); }
Value Expm1(Builder& b, const Value& x) { return Libm(b, "stablehlo.exponential_minus_one", x); }
Value Tanh(Builder& b, const Value& x) { return Libm(b, "stablehlo.tanh", x); }
Value Sin(Builder& b, const Value& x) { return Libm(b, "stablehlo.sine", x); }

// Horner evaluation of c[0] x^n + ... + c[n] (Cephes polevl); `monic` prepends a leading 1.
Value Poly(Builder& b, const Value& x, std::initializer_list<double> c, bool monic) {
  auto it = c.begin();
  Value y = monic ? b.Add(x, C(b, x, *it++)) : C(b, x, *it++);
  for (; it != c.end(); ++it) y = b.Add(b.Mul(y, x), C(b, x, *it));
  return y;
}

// erfc in f64 (Cephes ndtr.c rational approximations, relative error ~1e-15 where erfc is a
// normal number): 1 - erf(a) for |a| < 1, exp(-a^2) P(|a|)/Q(|a|) beyond, 2 - erfc(|a|) for
// negative a. std::erfc is the reference; this keeps its relative accuracy for large a.
Value ErfcF64(Builder& b, const Value& a) {
  const Value x = b.Unary("stablehlo.abs", a);
  // Small |a|: erf(a) = a T(a^2) / U(a^2).
  const Value z2 = b.Mul(a, a);
  const Value erf = b.Div(b.Mul(a, Poly(b, z2,
                                        {9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
                                         7.00332514112805075473E3, 5.55923013010394962768E4},
                                        false)),
                          Poly(b, z2,
                               {3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
                                2.26290000613890934246E4, 4.92673942608635921086E4},
                               true));
  const Value small = b.Sub(C(b, a, 1.0), erf);
  // Large |a| (clamped: exp(-40^2) is 0 already, and Inf would give Inf/Inf in P/Q).
  const Value xc = b.Min(x, C(b, x, 40.0));
  const Value e = b.Unary("stablehlo.exponential", Neg(b, b.Mul(xc, xc)));
  const Value p1 = Poly(b, xc,
                        {2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
                         4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
                         9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2},
                        false);
  const Value q1 = Poly(b, xc,
                        {1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
                         9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
                         1.65666309194161350182E3, 5.57535340817727675546E2},
                        true);
  const Value p2 = Poly(b, xc,
                        {5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
                         6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0},
                        false);
  const Value q2 = Poly(b, xc,
                        {2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
                         1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0},
                        true);
  const Value mid = b.Select(Lt(b, xc, 8.0), b.Div(b.Mul(e, p1), q1), b.Div(b.Mul(e, p2), q2));
  const Value large = b.Select(Lt(b, a, 0.0), b.Sub(C(b, a, 2.0), mid), mid);
  return b.Select(Lt(b, x, 1.0), small, large);  // NaN: the large branch, NaN
}

// std::erfc in the compute type: f32 through the f64 function, rounded once.
Value Erfc(Builder& b, const Value& x) {
  if (x.dtype() == DType::Float32) return b.Convert(ErfcF64(b, b.Convert(x, DType::Float64)), DType::Float32);
  return ErfcF64(b, x);
}

// ---- Element functions (math:: in the reference), on the compute type --------------------------

// x * gate, signed zero where the gate is exactly 0.
Value Gated(Builder& b, const Value& x, const Value& gate) {
  const Value zero = b.Select(Lt(b, x, 0.0), C(b, x, -0.0), C(b, x, 0.0));
  return b.Select(b.Compare(gate, C(b, gate, 0.0), "EQ"), zero, b.Mul(x, gate));
}

// x < lo ? lo : (x > hi ? hi : x): NaN passes.
Value Clamp(Builder& b, const Value& x, double lo, double hi) {
  return b.Select(Lt(b, x, lo), C(b, x, lo), b.Select(Gt(b, x, hi), C(b, x, hi), x));
}

Value Sigmoid(Builder& b, const Value& x) {
  const Value one = C(b, x, 1.0);
  const Value pos = b.Div(one, b.Add(one, Exp(b, Neg(b, x))));
  const Value e = Exp(b, x);
  const Value neg = b.Div(e, b.Add(one, e));
  return b.Select(Ge(b, x, 0.0), pos, neg);
}

Value LogSigmoid(Builder& b, const Value& x) {
  const Value lower = b.Select(Lt(b, x, 0.0), x, C(b, x, 0.0));
  return b.Sub(lower, Log1p(b, Exp(b, Neg(b, b.Unary("stablehlo.abs", x)))));
}

Value Softplus(Builder& b, const Value& x) { return b.Select(Gt(b, x, 20.0), x, Log1p(b, Exp(b, x))); }

Value Silu(Builder& b, const Value& x) { return Gated(b, x, Sigmoid(b, x)); }

Value Gelu(Builder& b, const Value& x) {
  const Value arg = b.Mul(Neg(b, x), C(b, x, 0.70710678118654752440));
  return Gated(b, x, b.Mul(C(b, x, 0.5), Erfc(b, arg)));
}

Value GeluTanh(Builder& b, const Value& x) {
  const Value cube = b.Mul(b.Mul(b.Mul(C(b, x, 0.044715), x), x), x);
  const Value u = b.Mul(C(b, x, 0.79788456080286535588), b.Add(x, cube));
  return Gated(b, x, Sigmoid(b, b.Mul(C(b, x, 2.0), u)));
}

// x < 0 ? 0 : x (NaN and -0 pass, as torch.relu).
Value Relu(Builder& b, const Value& x) { return b.Select(Lt(b, x, 0.0), C(b, x, 0.0), x); }

Value LeakyRelu(Builder& b, const Value& x, const Value& slope) {
  return b.Select(Gt(b, x, 0.0), x, b.Mul(x, slope));
}
Value LeakyRelu(Builder& b, const Value& x, double slope) { return LeakyRelu(b, x, C(b, x, slope)); }

Value Elu(Builder& b, const Value& x, double alpha) {
  return b.Select(Gt(b, x, 0.0), x, b.Mul(C(b, x, alpha), Expm1(b, x)));
}

Value Celu(Builder& b, const Value& x, double alpha) {
  return b.Select(Gt(b, x, 0.0), x, b.Mul(C(b, x, alpha), Expm1(b, b.Div(x, C(b, x, alpha)))));
}

Value Selu(Builder& b, const Value& x) {
  const Value inner = b.Select(Gt(b, x, 0.0), x, b.Mul(C(b, x, 1.6732632423543772848170429916717), Expm1(b, x)));
  return b.Mul(C(b, x, 1.0507009873554804934193349852946), inner);
}

Value Mish(Builder& b, const Value& x) { return Gated(b, x, Tanh(b, Softplus(b, x))); }

Value Softsign(Builder& b, const Value& x) {
  const Value limit = b.Select(Lt(b, x, 0.0), C(b, x, -1.0), C(b, x, 1.0));
  const Value v = b.Div(x, b.Add(C(b, x, 1.0), b.Unary("stablehlo.abs", x)));
  return b.Select(IsInf(b, x), limit, v);
}

Value HardSigmoid(Builder& b, const Value& x) {
  return b.Div(Clamp(b, b.Add(x, C(b, x, 3.0)), 0.0, 6.0), C(b, x, 6.0));
}

Value HardSwish(Builder& b, const Value& x) { return Gated(b, x, HardSigmoid(b, x)); }

Value QuickGelu(Builder& b, const Value& x) { return Gated(b, x, Sigmoid(b, b.Mul(C(b, x, 1.702), x))); }

Value TanhShrink(Builder& b, const Value& x) { return b.Sub(x, Tanh(b, x)); }

Value Threshold(Builder& b, const Value& x, double t) { return b.Select(Le(b, x, t), C(b, x, 0.0), x); }

Value HardShrink(Builder& b, const Value& x, double lambda) {
  return b.Select(And(b, Ge(b, x, -lambda), Le(b, x, lambda)), C(b, x, 0.0), x);
}

Value SoftShrink(Builder& b, const Value& x, double lambda) {
  const Value inner = b.Select(IsNan(b, x), x, C(b, x, 0.0));
  const Value below = b.Select(Lt(b, x, -lambda), b.Add(x, C(b, x, lambda)), inner);
  return b.Select(Gt(b, x, lambda), b.Sub(x, C(b, x, lambda)), below);
}

Value Snake(Builder& b, const Value& x, double alpha, double beta) {
  const Value s = Sin(b, b.Mul(C(b, x, alpha), x));
  return b.Select(IsInf(b, x), x, b.Add(x, b.Div(b.Mul(s, s), C(b, x, beta))));
}

// ---- Parameters ------------------------------------------------------------------------------------

// The attribute as the kernel sees it (a float), widened exactly.
double Param(const LowerContext& ctx, const char* name) {
  return static_cast<double>(static_cast<float>(ctx.attrs().Float(name)));
}

// The kernel's parameter checks: an invalid parameter runs on the CPU, which reports it.
double CheckedParam(const LowerContext& ctx, const char* name, bool nonzero = false, bool nonnegative = false) {
  const double v = Param(ctx, name);
  if (!std::isfinite(v)) ctx.Unsupported(fmt::format("attribute '{}' is not finite as a float (the CPU kernel reports it)", name));
  if (nonzero && v == 0.0) ctx.Unsupported(fmt::format("attribute '{}' is 0 (the CPU kernel reports it)", name));
  if (nonnegative && v < 0.0) ctx.Unsupported(fmt::format("attribute '{}' is negative (the CPU kernel reports it)", name));
  return v;
}

// ---- Lowering shapes -------------------------------------------------------------------------------

// f(x) in ComputeType, rounded once to the output dtype.
LowerFn Map(Elem f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, x), ctx.out_type(0).dtype)};
  };
}

// Like Map with f built from the node's attributes.
LowerFn MapWith(std::function<Elem(const LowerContext&)> make) {
  return [make](LowerContext& ctx, std::span<const Value> in) {
    const Elem f = make(ctx);
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, x), ctx.out_type(0).dtype)};
  };
}

// Packed gated unit: gate = first half of the last axis, up = second half.
LowerFn Packed(Elem2 f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value& x = in[0];
    const size_t r = static_cast<size_t>(x.rank());
    const int64_t h = x.shape().back() / 2;
    Shape start(r, 0), mid = x.shape(), strides(r, 1);
    mid[r - 1] = h;
    Shape start2 = start;
    start2[r - 1] = h;
    const DType ct = ComputeType(x.dtype());
    const Value gate = b.Convert(b.Slice(x, start, mid, strides), ct);
    const Value up = b.Convert(b.Slice(x, start2, x.shape(), strides), ct);
    return std::vector<Value>{b.Convert(f(b, gate, up), ctx.out_type(0).dtype)};
  };
}

// Two-tensor gated unit, broadcast to the output shape.
LowerFn Tensors(Elem2 f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const DType ct = ComputeType(out.dtype);
    const Value gate = b.Convert(Broadcast(b, in[0], out.shape), ct);
    const Value up = b.Convert(Broadcast(b, in[1], out.shape), ct);
    return std::vector<Value>{b.Convert(f(b, gate, up), out.dtype)};
  };
}

// An f64 result stored like the reference's Store<double>: through f32 for narrower dtypes.
Value StoreF64(Builder& b, const Value& f64, DType out) {
  return out == DType::Float64 ? f64 : b.Convert(b.Convert(f64, DType::Float32), out);
}

void AddGlu(LoweringTable& t, const std::string& name, Elem2 f) {
  t.Add("activation." + name, Packed(f));
  t.Add("activation." + name + "_tensors", Tensors(f));
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
  t.Add("activation.relu", Map(Relu));
  t.Add("math.softmax", [](LowerContext& ctx, std::span<const Value> in) {
    const int64_t axis = Axis(ctx, "axis", ctx.attrs().Int("axis"), in[0].rank());
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    return std::vector<Value>{ctx.b.Convert(Softmax(ctx.b, x, axis), ctx.out_type(0).dtype)};
  });

  // ---- Unary ----
  t.Add("activation.tanh", Map(Tanh));
  t.Add("activation.sigmoid", Map(Sigmoid));
  t.Add("activation.log1p", Map(Log1p));
  t.Add("activation.expm1", Map(Expm1));
  t.Add("activation.log_sigmoid", Map(LogSigmoid));
  t.Add("activation.silu", Map(Silu));
  t.Add("activation.swish", Map(Silu));
  t.Add("activation.gelu", Map(Gelu));
  t.Add("activation.gelu_tanh", Map(GeluTanh));
  t.Add("activation.elu", Map([](Builder& b, const Value& x) { return Elu(b, x, 1.0); }));
  t.Add("activation.celu", Map([](Builder& b, const Value& x) { return Celu(b, x, 1.0); }));
  t.Add("activation.selu", Map(Selu));
  t.Add("activation.softplus", Map(Softplus));
  t.Add("activation.mish", Map(Mish));
  t.Add("activation.softsign", Map(Softsign));
  t.Add("activation.hard_sigmoid", Map(HardSigmoid));
  t.Add("activation.hard_swish", Map(HardSwish));
  t.Add("activation.hard_gelu", Map(HardSwish));
  t.Add("activation.hard_tanh", Map([](Builder& b, const Value& x) { return Clamp(b, x, -1.0, 1.0); }));
  t.Add("activation.quick_gelu", Map(QuickGelu));
  t.Add("activation.tanh_shrink", Map(TanhShrink));

  // ---- Parametric ----
  auto leaky = [](const char* attr) {
    return MapWith([attr](const LowerContext& ctx) -> Elem {
      const double slope = CheckedParam(ctx, attr);
      return [slope](Builder& b, const Value& x) { return LeakyRelu(b, x, slope); };
    });
  };
  // As the CPU lowering: the default alpha 0.01 is the fixed-slope kernel, exact in the compute type.
  t.Add("activation.leaky_relu", MapWith([](const LowerContext& ctx) -> Elem {
          const double slope = ctx.attrs().Float("alpha") == 0.01 ? 0.01 : CheckedParam(ctx, "alpha");
          return [slope](Builder& b, const Value& x) { return LeakyRelu(b, x, slope); };
        }));
  t.Add("activation.leaky_relu_slope", leaky("slope"));
  t.Add("activation.prelu", leaky("slope"));
  t.Add("activation.elu_alpha", MapWith([](const LowerContext& ctx) -> Elem {
          const double alpha = CheckedParam(ctx, "alpha");
          return [alpha](Builder& b, const Value& x) { return Elu(b, x, alpha); };
        }));
  t.Add("activation.celu_alpha", MapWith([](const LowerContext& ctx) -> Elem {
          const double alpha = CheckedParam(ctx, "alpha", true);
          return [alpha](Builder& b, const Value& x) { return Celu(b, x, alpha); };
        }));
  t.Add("activation.threshold", MapWith([](const LowerContext& ctx) -> Elem {
          const double th = CheckedParam(ctx, "threshold");
          return [th](Builder& b, const Value& x) { return Threshold(b, x, th); };
        }));
  t.Add("activation.snake", MapWith([](const LowerContext& ctx) -> Elem {
          const double alpha = CheckedParam(ctx, "alpha", true);
          return [alpha](Builder& b, const Value& x) { return Snake(b, x, alpha, alpha); };
        }));
  t.Add("activation.hard_shrink", MapWith([](const LowerContext& ctx) -> Elem {
          const double lambda = CheckedParam(ctx, "lambda", false, true);
          return [lambda](Builder& b, const Value& x) { return HardShrink(b, x, lambda); };
        }));
  t.Add("activation.soft_shrink", MapWith([](const LowerContext& ctx) -> Elem {
          const double lambda = CheckedParam(ctx, "lambda", false, true);
          return [lambda](Builder& b, const Value& x) { return SoftShrink(b, x, lambda); };
        }));
  t.Add("activation.hard_tanh_range", MapWith([](const LowerContext& ctx) -> Elem {
          const double lo = CheckedParam(ctx, "min"), hi = CheckedParam(ctx, "max");
          if (lo > hi) ctx.Unsupported("attribute 'min' > 'max' (the CPU kernel reports it)");
          return [lo, hi](Builder& b, const Value& x) { return Clamp(b, x, lo, hi); };
        }));
  t.Add("activation.snake_beta", MapWith([](const LowerContext& ctx) -> Elem {
          const double alpha = CheckedParam(ctx, "alpha", true), beta = CheckedParam(ctx, "beta", true);
          return [alpha, beta](Builder& b, const Value& x) { return Snake(b, x, alpha, beta); };
        }));
  t.Add("activation.rrelu", MapWith([](const LowerContext& ctx) -> Elem {
          const double lo = CheckedParam(ctx, "lower", false, true), hi = CheckedParam(ctx, "upper");
          if (lo > hi) ctx.Unsupported("attribute 'lower' > 'upper' (the CPU kernel reports it)");
          // The eval-mode slope in double, then used in the compute type.
          const double slope = (lo + hi) / 2.0;
          return [slope](Builder& b, const Value& x) { return LeakyRelu(b, x, slope); };
        }));
  // x [N, C, ...] with slopes [C] or [1] (f32) along axis 1.
  t.Add("activation.prelu_channels", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const DType ct = ComputeType(in[0].dtype());
    const Value x = b.Convert(in[0], ct);
    const Value s = b.Convert(in[1], ct);
    Value slope;
    if (in[1].shape()[0] == 1 || x.rank() < 2) {
      slope = b.BroadcastInDim(b.Reshape(s, {}), x.shape(), {});
    } else {
      const int64_t dims[] = {1};
      slope = b.BroadcastInDim(s, x.shape(), dims);
    }
    return std::vector<Value>{b.Convert(LeakyRelu(b, x, slope), ctx.out_type(0).dtype)};
  });

  // ---- Gated linear units: f(gate, up) ----
  AddGlu(t, "glu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(g, Sigmoid(b, u)); });
  AddGlu(t, "geglu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(g, Gelu(b, u)); });
  AddGlu(t, "geglu_tanh", [](Builder& b, const Value& g, const Value& u) { return b.Mul(g, GeluTanh(b, u)); });
  AddGlu(t, "swiglu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(Silu(b, g), u); });
  AddGlu(t, "reglu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(g, Relu(b, u)); });
  AddGlu(t, "siglu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(Sigmoid(b, g), u); });
  AddGlu(t, "linglu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(g, u); });
  AddGlu(t, "seglu", [](Builder& b, const Value& g, const Value& u) { return b.Mul(Sigmoid(b, g), u); });

  // ---- Softmax family, masking, scales: f64 like the reference ----
  t.Add("activation.log_softmax", [](LowerContext& ctx, std::span<const Value> in) {
    const int64_t axis = Axis(ctx, "axis", ctx.attrs().Int("axis"), in[0].rank());
    const Value x = ctx.b.Convert(in[0], DType::Float64);
    return std::vector<Value>{StoreF64(ctx.b, LogSoftmax(ctx.b, x, axis), ctx.out_type(0).dtype)};
  });
  // m + log(sum exp(x - m)); NaN anywhere in the row gives NaN, an infinite maximum is the result.
  t.Add("math.logsumexp", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const int64_t axis = Axis(ctx, "axis", ctx.attrs().Int("axis"), in[0].rank());
    const int64_t dims[] = {axis};
    const Value x = b.Convert(in[0], DType::Float64);
    const Value has_nan = b.Reduce(IsNan(b, x), dims, ReduceKind::Or);
    const Value clean = b.Select(IsNan(b, x), C(b, x, -INFINITY), x);
    const Value m = b.Reduce(clean, dims, ReduceKind::Max);
    const Value mb = b.BroadcastTo(b.Reshape(m, KeepDims(x.shape(), dims)), x.shape());
    const Value sum = b.Reduce(b.Unary("stablehlo.exponential", b.Sub(clean, mb)), dims, ReduceKind::Sum);
    const Value finite = b.Add(m, b.Unary("stablehlo.log", sum));
    const Value r = b.Select(b.Emit("stablehlo.is_finite", std::span(&m, 1), {DType::Bool, m.shape()}), finite, m);
    const Value y = b.Select(has_nan, C(b, r, std::numeric_limits<double>::quiet_NaN()), r);
    return std::vector<Value>{StoreF64(b, y, ctx.out_type(0).dtype)};
  });
  t.Add("math.inv_sqrt_dim_scale", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    int64_t dim = ctx.attrs().Int("dim");
    if (dim == 0 && in[0].rank() > 0) dim = in[0].shape().back();
    if (dim <= 0) ctx.Unsupported("no positive dim (the CPU shape rule reports it)");
    const Value x = b.Convert(in[0], DType::Float64);
    const Value y = b.Div(x, C(b, x, std::sqrt(static_cast<double>(dim))));
    return std::vector<Value>{StoreF64(b, y, ctx.out_type(0).dtype)};
  });
  t.Add("masking.apply", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const DType ct = ComputeType(out.dtype);
    const Value x = b.Convert(in[0], ct);
    const Value m = b.Convert(Broadcast(b, in[1], out.shape), ct);
    return std::vector<Value>{b.Convert(b.Add(x, m), out.dtype)};
  });
  // [Sq, Sk]: -Inf where k > q + (Sk - Sq), else +0 (bottom-right aligned).
  t.Add("masking.causal", [](LowerContext& ctx, std::span<const Value>) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const int64_t sq = out.shape[0], sk = out.shape[1];
    const Value q = b.Iota({DType::Int64, out.shape}, 0);
    const Value k = b.Iota({DType::Int64, out.shape}, 1);
    const Value p = b.Add(q, b.Splat({DType::Int64, out.shape}, static_cast<double>(sk - sq)));
    const Value masked = b.Compare(k, p, "GT");
    return std::vector<Value>{b.Select(masked, b.Splat(out, -INFINITY), b.Splat(out, 0.0))};
  });
}

}  // namespace backplane::xla
