// Training: losses and their gradients (f64 like the CPU reference), optimizers as state updates,
// running metrics. Dropout and the samplers (Philox draws) are in lower_random.cpp.
#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterRandomLowerings(LoweringTable& t);  // lower_random.cpp

namespace {

std::vector<int64_t> AllAxes(int64_t rank) {
  std::vector<int64_t> all;
  for (int64_t i = 0; i < rank; ++i) all.push_back(i);
  return all;
}

// i1 scalar: every element of the i1 tensor `ok` is true.
Value AllTrue(Builder& b, const Value& ok) {
  return b.Reduce(ok, AllAxes(ok.rank()), ReduceKind::And);
}

Value IsNan(Builder& b, const Value& x) { return b.Compare(x, x, "NE"); }

// Sum of every element (a scalar of x's dtype).
Value SumAll(Builder& b, const Value& x) { return b.Reduce(x, AllAxes(x.rank()), ReduceKind::Sum); }

// targets (i32) all in [0, classes).
void RequireClassTargets(LowerContext& ctx, const Value& targets, int64_t classes) {
  Builder& b = ctx.b;
  const Value lo = b.Compare(targets, b.SplatLike(targets, 0.0), "GE");
  const Value hi = b.Compare(targets, b.SplatLike(targets, static_cast<double>(classes)), "LT");
  ctx.Require(AllTrue(b, b.Binary("stablehlo.and", lo, hi)),
              fmt::format("argument 'targets' must be in [0, {})", classes));
}

// [batch, classes] f64 logits (rank-1 logits as one row) and the one-hot of the targets.
struct ClassRows {
  Value logits;
  Value onehot;
  int64_t batch;
};

ClassRows Rows(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Shape& s = in[0].shape();
  const int64_t classes = s.back();
  const int64_t batch = s.size() == 2 ? s[0] : 1;
  RequireClassTargets(ctx, in[1], classes);
  const Value logits = b.Reshape(b.Convert(in[0], DType::Float64), {batch, classes});
  const Value t =
      b.BroadcastInDim(b.Reshape(in[1], {batch}), {batch, classes}, std::vector<int64_t>{0});
  const Value iota = b.Iota({DType::Int32, {batch, classes}}, 1);
  const Value onehot = b.Convert(b.Compare(iota, t, "EQ"), DType::Float64);
  return {logits, onehot, batch};
}

Value RoundLike(Builder& b, const Value& f64, DType out) {
  // The CPU reference rounds losses through f32 before storing them in a narrower dtype.
  return out == DType::Float64 ? f64 : b.Convert(b.Convert(f64, DType::Float32), out);
}

// ---- elementwise losses and gradients
// --------------------------------------------------------------- Both inputs widened to f64
// (exact), the term per element in f64; the loss is the f64 mean rounded through f32, the gradient
// term / count rounded through f32 per element.
using Term = std::function<Value(Builder& b, const Value& p, const Value& t)>;
using DataCheck = std::function<void(LowerContext& ctx, const Value& p, const Value& t)>;

LowerFn MeanLoss(Term term, DataCheck check = nullptr) {
  return [term, check](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value p = b.Convert(in[0], DType::Float64);
    const Value t = b.Convert(in[1], DType::Float64);
    if (check) check(ctx, p, t);
    const double n = static_cast<double>(NumElements(in[0].shape()));
    const Value mean =
        b.Div(SumAll(b, term(b, p, t)), b.Scalar(DType::Float64, n));  // 0 / 0 = NaN when empty
    return std::vector<Value>{RoundLike(b, mean, ctx.out_type(0).dtype)};
  };
}

LowerFn LossGrad(Term term, DataCheck check = nullptr) {
  return [term, check](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value p = b.Convert(in[0], DType::Float64);
    const Value t = b.Convert(in[1], DType::Float64);
    if (check) check(ctx, p, t);
    const double n = static_cast<double>(NumElements(in[0].shape()));
    const Value g = b.Div(term(b, p, t), b.SplatLike(p, n));
    return std::vector<Value>{RoundLike(b, g, ctx.out_type(0).dtype)};
  };
}

// Predictions in [0, 1] (NaN fails), as the binary cross-entropy kernels check.
void CheckProbabilities(LowerContext& ctx, const Value& p, const Value&) {
  Builder& b = ctx.b;
  const Value ok = b.Binary("stablehlo.and", b.Compare(p, b.SplatLike(p, 0.0), "GE"),
                            b.Compare(p, b.SplatLike(p, 1.0), "LE"));
  ctx.Require(AllTrue(b, ok), "argument 'predictions' must be in [0, 1]");
}

// Both >= 0 (NaN passes, as in the KL kernels: it propagates instead).
void CheckNonNegativePair(LowerContext& ctx, const Value& p, const Value& t) {
  Builder& b = ctx.b;
  const Value neg_p = b.Compare(p, b.SplatLike(p, 0.0), "LT");
  ctx.Require(AllTrue(b, b.Unary("stablehlo.not", neg_p)), "argument 'predictions' must be >= 0");
  const Value neg_t = b.Compare(t, b.SplatLike(t, 0.0), "LT");
  ctx.Require(AllTrue(b, b.Unary("stablehlo.not", neg_t)), "argument 'targets' must be >= 0");
}

Value Square(Builder& b, const Value& x) { return b.Mul(x, x); }

Value HuberTerm(Builder& b, const Value& p, const Value& t) {
  const Value z = b.Unary("stablehlo.abs", b.Sub(p, t));
  const Value quad = b.Mul(b.Mul(b.SplatLike(z, 0.5), z), z);
  const Value lin = b.Sub(z, b.SplatLike(z, 0.5));  // delta (z - delta / 2), delta 1
  return b.Select(b.Compare(z, b.SplatLike(z, 1.0), "LT"), quad, lin);
}

Value BceTerm(Builder& b, const Value& p, const Value& t) {
  const Value floor = b.SplatLike(p, -100.0);
  // max(log p, -100) with std::max's rule (a NaN log is impossible after the range check).
  const Value log_p = b.Max(b.Unary("stablehlo.log", p), floor);
  const Value log_1mp =
      b.Max(b.Unary("stablehlo.log_plus_one", b.Unary("stablehlo.negate", p)), floor);
  const Value one = b.SplatLike(p, 1.0);
  return b.Unary("stablehlo.negate", b.Add(b.Mul(t, log_p), b.Mul(b.Sub(one, t), log_1mp)));
}

// NaN if either is NaN, 0 where t == 0, else t (ln t - ln p) / -t / p.
Value KlSelect(Builder& b, const Value& p, const Value& t, const Value& value) {
  const Value nan = b.Binary("stablehlo.or", IsNan(b, p), IsNan(b, t));
  const Value zero = b.Select(b.Compare(t, b.SplatLike(t, 0.0), "EQ"), b.SplatLike(t, 0.0), value);
  return b.Select(nan, b.SplatLike(t, NAN), zero);
}

Value KlTerm(Builder& b, const Value& p, const Value& t) {
  return KlSelect(b, p, t,
                  b.Mul(t, b.Sub(b.Unary("stablehlo.log", t), b.Unary("stablehlo.log", p))));
}

Value KlGradTerm(Builder& b, const Value& p, const Value& t) {
  return KlSelect(b, p, t, b.Div(b.Unary("stablehlo.negate", t), p));
}

Value MaeGradTerm(Builder& b, const Value& p, const Value& t) {
  const Value d = b.Sub(p, t);
  const Value zero = b.SplatLike(d, 0.0);
  const Value rest =
      b.Select(b.Compare(d, zero, "LT"), b.SplatLike(d, -1.0), b.Select(IsNan(b, d), d, zero));
  return b.Select(b.Compare(d, zero, "GT"), b.SplatLike(d, 1.0), rest);
}

Value HuberGradTerm(Builder& b, const Value& p, const Value& t) {
  const Value d = b.Sub(p, t);
  const Value rest = b.Select(b.Compare(d, b.SplatLike(d, -1.0), "LT"), b.SplatLike(d, -1.0), d);
  return b.Select(b.Compare(d, b.SplatLike(d, 1.0), "GT"), b.SplatLike(d, 1.0), rest);
}

Value BceGradTerm(Builder& b, const Value& p, const Value& t) {
  const Value one = b.SplatLike(p, 1.0);
  const Value denom = b.Max(b.Mul(b.Sub(one, p), p), b.SplatLike(p, static_cast<double>(1e-12f)));
  return b.Div(b.Sub(p, t), denom);
}

// ---- optimizers
// --------------------------------------------------------------------------------------- State
// real type: f64 for f64 params, f32 otherwise (the reference's compute type T).
DType StateReal(DType params) { return params == DType::Float64 ? DType::Float64 : DType::Float32; }

// The CPU op's StateType: counters i64 [1]; rho_history f64 [history]; histories [history, ...];
// everything else the params' shape in the real type.
TensorType StateType(const std::string& key, const TensorType& params,
                     const runtime::Attrs& attrs) {
  const DType real = StateReal(params.dtype);
  if (key == "step" || key == "head" || key == "stored") return {DType::Int64, {1}};
  if (key == "rho_history") return {DType::Float64, {attrs.Int("history_size")}};
  if (key == "s_history" || key == "y_history") {
    Shape shape = params.shape;
    shape.insert(shape.begin(), attrs.Int("history_size"));
    return {real, shape};
  }
  return {real, params.shape};
}

// One optimizer step: params and grads in T, the state at the start of the run by key.
struct Step {
  LowerContext& ctx;
  Builder& b;
  DType T;
  TensorType st;  // T, the params' shape
  Value p, g;
  std::map<std::string, Value> state;
  const runtime::Attrs& a;
  double F(const char* name) const { return a.Float(name); }
  // A T constant of the params' shape (the reference's T(v)).
  Value C(double v) const { return b.Splat(st, v); }
  // A device-computed f64 scalar rounded to T and broadcast to the params' shape.
  Value Coef(const Value& f64) const { return b.BroadcastTo(b.Convert(f64, T), st.shape); }
  Value F64(double v) const { return b.Scalar(DType::Float64, v); }
  // ++step: returns the new count t as an f64 scalar (the reference's double(t)).
  Value Advance() {
    const Value s = state.at("step");
    const Value next = b.Add(s, b.SplatLike(s, 1.0));
    ctx.SetState("step", next);
    return b.Reshape(b.Convert(next, DType::Float64), {});
  }
  void Set(const std::string& key, const Value& v) { ctx.SetState(key, v); }
  // g + wd p when wd != 0 (torch's grad.add(param, alpha=wd)).
  Value DecayedGrad(double wd) const { return wd != 0.0 ? b.Add(g, b.Mul(C(wd), p)) : g; }
  // Euclidean norm of a T vector (or the stored params) accumulated in f64: an f64 scalar.
  Value Norm(const Value& x) const {
    const Value x64 = b.Convert(x, DType::Float64);
    return b.Unary("stablehlo.sqrt", SumAll(b, b.Mul(x64, x64)));
  }
};

using Update = std::function<Value(Step& s)>;  // returns the new params in T

// Reads every state key of the CPU op (so the device state has the same tensors), leaves params
// and state unchanged for a frozen parameter, else runs `update`.
LowerFn Optimizer(std::vector<std::string> keys, Update update) {
  return [keys, update](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const DType pd = in[0].dtype();
    const DType T = StateReal(pd);
    Step s{ctx, b, T, {T, in[0].shape()}, {}, {}, {}, ctx.attrs()};
    for (const std::string& key : keys)
      s.state[key] = ctx.State(key, StateType(key, in[0].type, ctx.attrs()));
    if (ctx.input_frozen(0)) return std::vector<Value>{in[0]};
    s.p = b.Convert(in[0], T);
    s.g = b.Convert(in[1], T);
    return std::vector<Value>{b.Convert(update(s), pd)};
  };
}

Value Power(Builder& b, double base, const Value& t) {
  return b.Binary("stablehlo.power", b.Scalar(DType::Float64, base), t);
}

// max that propagates NaN (torch.amax), in T.
Value NanMax(Builder& b, const Value& x, const Value& y) {
  const Value nan = b.Binary("stablehlo.or", IsNan(b, x), IsNan(b, y));
  return b.Select(nan, b.SplatLike(x, NAN), b.Max(x, y));
}

// sign in {-1, 0, 1}; NaN stays NaN.
Value SignKeepNan(Builder& b, const Value& x) {
  const Value zero = b.SplatLike(x, 0.0);
  const Value neg =
      b.Select(b.Compare(x, zero, "LT"), b.SplatLike(x, -1.0), b.Select(IsNan(b, x), x, zero));
  return b.Select(b.Compare(x, zero, "GT"), b.SplatLike(x, 1.0), neg);
}

enum class AdamKind { Adam, AdamW };

Value AdamUpdate(Step& s, AdamKind kind) {
  Builder& b = s.b;
  const Value t = s.Advance();
  const double lr = s.F("lr"), b1 = s.F("beta1"), b2 = s.F("beta2"), wd = s.F("weight_decay");
  // Bias corrections in f64 from the device counter, then rounded to T (the reference's order).
  const Value bc1 = b.Sub(s.F64(1.0), Power(b, b1, t));
  const Value bc2 = b.Sub(s.F64(1.0), Power(b, b2, t));
  const Value neg_step = s.Coef(b.Unary("stablehlo.negate", b.Div(s.F64(lr), bc1)));
  const Value bc2_sqrt = s.Coef(b.Unary("stablehlo.sqrt", bc2));
  Value p = s.p, g = s.g;
  if (kind == AdamKind::AdamW) {
    p = b.Mul(p, s.C(1.0 - lr * wd));
  } else if (wd != 0.0) {
    g = b.Add(g, b.Mul(s.C(wd), p));
  }
  const Value m = b.Add(b.Mul(s.state.at("m"), s.C(b1)), b.Mul(s.C(1.0 - b1), g));
  const Value v = b.Add(b.Mul(s.state.at("v"), s.C(b2)), b.Mul(b.Mul(s.C(1.0 - b2), g), g));
  const Value denom = b.Add(b.Div(b.Unary("stablehlo.sqrt", v), bc2_sqrt), s.C(s.F("eps")));
  s.Set("m", m);
  s.Set("v", v);
  return b.Add(p, b.Div(b.Mul(neg_step, m), denom));
}

// torch.optim.Adamax: u = max(beta2 u, |g| + eps) (NaN propagates); p += -(lr / bc1) m / u.
Value AdamaxUpdate(Step& s) {
  Builder& b = s.b;
  const Value t = s.Advance();
  const double lr = s.F("lr"), b1 = s.F("beta1");
  const Value neg_clr =
      s.Coef(b.Unary("stablehlo.negate", b.Div(s.F64(lr), b.Sub(s.F64(1.0), Power(b, b1, t)))));
  const Value g = s.DecayedGrad(s.F("weight_decay"));
  const Value m = b.Add(b.Mul(s.state.at("m"), s.C(b1)), b.Mul(s.C(1.0 - b1), g));
  const Value u = NanMax(b, b.Mul(s.state.at("v"), s.C(s.F("beta2"))),
                         b.Add(b.Unary("stablehlo.abs", g), s.C(s.F("eps"))));
  s.Set("m", m);
  s.Set("v", u);
  return b.Add(s.p, b.Div(b.Mul(neg_clr, m), u));
}

// LAMB: r = (m / bc1) / (sqrt(v / bc2) + eps) + wd p; p -= lr (||p|| / ||r||) r (ratio 1 when
// either norm is 0), norms in f64.
Value LambUpdate(Step& s) {
  Builder& b = s.b;
  const Value t = s.Advance();
  const double lr = s.F("lr"), b1 = s.F("beta1"), b2 = s.F("beta2"), wd = s.F("weight_decay");
  const Value bc1 = s.Coef(b.Sub(s.F64(1.0), Power(b, b1, t)));
  const Value bc2 = s.Coef(b.Sub(s.F64(1.0), Power(b, b2, t)));
  const Value m = b.Add(b.Mul(s.state.at("m"), s.C(b1)), b.Mul(s.C(1.0 - b1), s.g));
  const Value v = b.Add(b.Mul(s.state.at("v"), s.C(b2)), b.Mul(b.Mul(s.C(1.0 - b2), s.g), s.g));
  Value r = b.Div(b.Div(m, bc1), b.Add(b.Unary("stablehlo.sqrt", b.Div(v, bc2)), s.C(s.F("eps"))));
  if (wd != 0.0) r = b.Add(r, b.Mul(s.C(wd), s.p));
  const Value p_norm = s.Norm(s.p);  // the stored params widen exactly to T and to f64
  const Value r_norm = s.Norm(r);
  const Value zero = s.F64(0.0);
  const Value degenerate =
      b.Binary("stablehlo.or", b.Compare(p_norm, zero, "EQ"), b.Compare(r_norm, zero, "EQ"));
  const Value ratio = b.Select(degenerate, s.F64(1.0), b.Div(p_norm, r_norm));
  const Value neg_step = s.Coef(b.Unary("stablehlo.negate", b.Mul(s.F64(lr), ratio)));
  s.Set("m", m);
  s.Set("v", v);
  return b.Add(s.p, b.Mul(neg_step, r));
}

// torch.optim.SGD: d = g + wd p; momentum: b = d on step 1, else mu b + (1 - damp) d;
// d = d + mu b (Nesterov) or b; p += -lr d.
Value SgdUpdate(Step& s) {
  Builder& b = s.b;
  const Value t = s.Advance();
  const double mu = s.F("momentum");
  Value d = s.DecayedGrad(s.F("weight_decay"));
  if (mu != 0.0) {
    const Value first = b.BroadcastTo(b.Compare(t, s.F64(1.0), "EQ"), s.st.shape);
    const Value running =
        b.Add(b.Mul(s.state.at("momentum_buffer"), s.C(mu)), b.Mul(s.C(1.0 - s.F("dampening")), d));
    const Value buf = b.Select(first, d, running);
    s.Set("momentum_buffer", buf);
    d = s.a.Bool("nesterov") ? b.Add(d, b.Mul(s.C(mu), buf)) : buf;
  }
  return b.Add(s.p, b.Mul(s.C(-s.F("lr")), d));
}

// Lion: p *= 1 - lr wd; c = b1 m + (1 - b1) g; p -= lr sign(c); m = b2 m + (1 - b2) g.
Value LionUpdate(Step& s) {
  Builder& b = s.b;
  (void)s.Advance();
  const double lr = s.F("lr"), b1 = s.F("beta1"), b2 = s.F("beta2");
  const Value m0 = s.state.at("m");
  Value p = b.Mul(s.p, s.C(1.0 - lr * s.F("weight_decay")));
  const Value c = b.Add(b.Mul(m0, s.C(b1)), b.Mul(s.C(1.0 - b1), s.g));
  p = b.Add(p, b.Mul(s.C(-lr), SignKeepNan(b, c)));
  s.Set("m", b.Add(b.Mul(m0, s.C(b2)), b.Mul(s.C(1.0 - b2), s.g)));
  return p;
}

// torch.optim.RMSprop, plain / centered, with or without momentum.
Value RmspropUpdate(Step& s) {
  Builder& b = s.b;
  (void)s.Advance();
  const double alpha = s.F("alpha"), mu = s.F("momentum");
  const Value g = s.DecayedGrad(s.F("weight_decay"));
  const Value sq =
      b.Add(b.Mul(s.state.at("square_avg"), s.C(alpha)), b.Mul(b.Mul(s.C(1.0 - alpha), g), g));
  s.Set("square_avg", sq);
  Value avg;
  if (s.a.Bool("centered")) {
    const Value ga = b.Add(b.Mul(s.state.at("grad_avg"), s.C(alpha)), b.Mul(s.C(1.0 - alpha), g));
    s.Set("grad_avg", ga);
    avg = b.Unary("stablehlo.sqrt", b.Sub(sq, b.Mul(ga, ga)));
  } else {
    avg = b.Unary("stablehlo.sqrt", sq);
  }
  avg = b.Add(avg, s.C(s.F("eps")));
  const Value neg_lr = s.C(-s.F("lr"));
  if (mu > 0.0) {
    const Value buf = b.Add(b.Mul(s.state.at("momentum_buffer"), s.C(mu)), b.Div(g, avg));
    s.Set("momentum_buffer", buf);
    return b.Add(s.p, b.Mul(neg_lr, buf));
  }
  return b.Add(s.p, b.Div(b.Mul(neg_lr, g), avg));
}

// p + lr signal, scaled by max_norm / ||p|| when max_norm > 0 and the norm is larger.
Value HebbianUpdate(Step& s) {
  Builder& b = s.b;
  Value p = b.Add(s.p, b.Mul(s.C(s.F("lr")), s.g));
  const double max_norm = s.F("max_norm");
  if (max_norm > 0.0) {
    const Value norm = s.Norm(p);
    const Value scale = s.Coef(b.Div(s.F64(max_norm), norm));
    const Value clip = b.BroadcastTo(b.Compare(norm, s.F64(max_norm), "GT"), s.st.shape);
    p = b.Select(clip, b.Mul(p, scale), p);
  }
  return p;
}

// LARS: local_lr = eta ||p|| / (||g|| + wd ||p|| + eps) (1 when a norm is 0); v = mu v +
// lr local_lr (g + wd p); p -= v.
Value LarsUpdate(Step& s) {
  Builder& b = s.b;
  (void)s.Advance();
  const double wd = s.F("weight_decay");
  const Value p_norm = s.Norm(s.p);
  const Value g_norm = s.Norm(s.g);
  const Value zero = s.F64(0.0);
  const Value degenerate =
      b.Binary("stablehlo.or", b.Compare(p_norm, zero, "EQ"), b.Compare(g_norm, zero, "EQ"));
  const Value denom = b.Add(b.Add(g_norm, b.Mul(s.F64(wd), p_norm)), s.F64(s.F("eps")));
  const Value local =
      b.Select(degenerate, s.F64(1.0), b.Div(b.Mul(s.F64(s.F("eta")), p_norm), denom));
  const Value scale = s.Coef(b.Mul(s.F64(s.F("lr")), local));
  const Value d = s.DecayedGrad(wd);
  const Value buf =
      b.Add(b.Mul(s.state.at("momentum_buffer"), s.C(s.F("momentum"))), b.Mul(scale, d));
  s.Set("momentum_buffer", buf);
  return b.Sub(s.p, buf);
}

// torch.optim.Adagrad: clr = lr / (1 + (t - 1) lr_decay); G += g^2; p += -clr g / (sqrt(G) + eps).
Value AdagradUpdate(Step& s) {
  Builder& b = s.b;
  const Value t = s.Advance();
  const Value decay = b.Mul(b.Sub(t, s.F64(1.0)), s.F64(s.F("lr_decay")));
  const Value neg_clr =
      s.Coef(b.Unary("stablehlo.negate", b.Div(s.F64(s.F("lr")), b.Add(s.F64(1.0), decay))));
  const Value g = s.DecayedGrad(s.F("weight_decay"));
  const Value acc = b.Add(s.state.at("sum"), b.Mul(g, g));
  s.Set("sum", acc);
  const Value stddev = b.Add(b.Unary("stablehlo.sqrt", acc), s.C(s.F("eps")));
  return b.Add(s.p, b.Div(b.Mul(neg_clr, g), stddev));
}

// torch.optim.Adadelta.
Value AdadeltaUpdate(Step& s) {
  Builder& b = s.b;
  (void)s.Advance();
  const double rho = s.F("rho");
  const Value eps = s.C(s.F("eps"));
  const Value g = s.DecayedGrad(s.F("weight_decay"));
  const Value sq =
      b.Add(b.Mul(s.state.at("square_avg"), s.C(rho)), b.Mul(b.Mul(s.C(1.0 - rho), g), g));
  const Value stddev = b.Unary("stablehlo.sqrt", b.Add(sq, eps));
  const Value acc0 = s.state.at("acc_delta");
  const Value delta = b.Mul(b.Div(b.Unary("stablehlo.sqrt", b.Add(acc0, eps)), stddev), g);
  const Value acc = b.Add(b.Mul(acc0, s.C(rho)), b.Mul(b.Mul(s.C(1.0 - rho), delta), delta));
  s.Set("square_avg", sq);
  s.Set("acc_delta", acc);
  return b.Add(s.p, b.Mul(s.C(-s.F("lr")), delta));
}

// stablehlo.while over `init`; cond and body see only the carried values.
std::vector<Value> While(Builder& b, std::span<const Value> init,
                         const std::function<Value(std::span<const Value>)>& cond,
                         const std::function<std::vector<Value>(std::span<const Value>)>& body) {
  std::vector<TensorType> types;
  for (const Value& v : init) types.push_back(v.type);
  const Builder::Region regions[] = {
      {types, [&](Builder&, std::span<const Value> a) { return std::vector<Value>{cond(a)}; }},
      {types, [&](Builder&, std::span<const Value> a) { return body(a); }},
  };
  return b.EmitRegions("stablehlo.while", init, types, regions);
}

// ---- L-BFGS
// ----------------------------------------------------------------------------------------
// torch.optim.LBFGS's inner iteration (optimizer.cpp): the history is a ring of `history_size`
// (s, y, rho) slots written with dynamic_update_slice at `head`; the two-loop recursion runs as
// two while loops over the stored pairs. A converged gradient (max |g| <= tolerance_grad, no
// NaN) leaves params, state and the counter unchanged.
Value LbfgsUpdate(Step& s) {
  Builder& b = s.b;
  const int64_t m = s.a.Int("history_size");
  const int64_t n = NumElements(s.st.shape);
  const DType T = s.T;
  auto flat = [&](const Value& x) { return b.Reshape(x, {n}); };
  auto dot = [&](const Value& x, const Value& y) {  // f64 accumulation of T products
    return SumAll(b, b.Mul(b.Convert(x, DType::Float64), b.Convert(y, DType::Float64)));
  };
  auto i64 = [&](double v) { return b.Scalar(DType::Int64, v); };
  auto scalar = [&](const Value& one) { return b.Reshape(one, {}); };

  const Value g = flat(s.g);
  const Value p = flat(s.p);
  const Value last_step0 = flat(s.state.at("last_step"));
  const Value prev_grads0 = flat(s.state.at("prev_grads"));
  const Value s_hist0 = b.Reshape(s.state.at("s_history"), {m, n});
  const Value y_hist0 = b.Reshape(s.state.at("y_history"), {m, n});
  const Value rho0 = s.state.at("rho_history");
  const Value head0 = scalar(s.state.at("head"));
  const Value stored0 = scalar(s.state.at("stored"));
  const Value step0 = scalar(s.state.at("step"));

  // Converged: n > 0, no NaN in g and max |g| <= tolerance_grad.
  Value converged = b.ScalarLiteral(DType::Bool, "false");
  if (n > 0) {
    const Value g64 = b.Convert(g, DType::Float64);
    const Value any_nan = b.Reduce(IsNan(b, g64), AllAxes(1), ReduceKind::Or);
    const Value max_abs = b.Reduce(b.Unary("stablehlo.abs", g64), AllAxes(1), ReduceKind::Max);
    converged = b.Binary("stablehlo.and", b.Unary("stablehlo.not", any_nan),
                         b.Compare(max_abs, s.F64(s.F("tolerance_grad")), "LE"));
  }

  const Value k = b.Add(step0, i64(1.0));
  const Value first = b.Compare(k, i64(1.0), "EQ");
  Value head = b.Select(first, i64(0.0), head0);
  Value stored = b.Select(first, i64(0.0), stored0);
  // The new pair (lastStep, y = g - prevGrads) if y's > 1e-10 (never on the first step).
  const Value y = b.Sub(g, prev_grads0);
  const Value ys = dot(y, last_step0);
  const Value accept =
      b.Binary("stablehlo.and", b.Unary("stablehlo.not", first), b.Compare(ys, s.F64(1e-10), "GT"));
  const Value zero_i = i64(0.0);
  auto update_row = [&](const Value& hist, const Value& row, const Value& at) {
    const Value ops[] = {hist, b.Reshape(row, {1, n}), at, zero_i};
    return b.Emit("stablehlo.dynamic_update_slice", ops, hist.type);
  };
  const Value s_hist = b.Select(accept, update_row(s_hist0, last_step0, head), s_hist0);
  const Value y_hist = b.Select(accept, update_row(y_hist0, y, head), y_hist0);
  const Value rho_ops[] = {rho0, b.Reshape(b.Div(s.F64(1.0), ys), {1}), head};
  const Value rho =
      b.Select(accept, b.Emit("stablehlo.dynamic_update_slice", rho_ops, rho0.type), rho0);
  const Value mi = i64(static_cast<double>(m));
  head = b.Select(accept, b.Binary("stablehlo.remainder", b.Add(head, i64(1.0)), mi), head);
  stored = b.Select(accept, b.Min(b.Add(stored, i64(1.0)), mi), stored);

  // The slot of the j-th newest pair and its rows; every constant is made where it is used, so
  // that the loop bodies only see their own block arguments.
  auto slot_of = [&](const Value& head_v, const Value& j) {
    const Value mv = i64(static_cast<double>(m));
    return b.Binary("stablehlo.remainder", b.Add(b.Sub(b.Sub(head_v, i64(1.0)), j), mv), mv);
  };
  auto row = [&](const Value& hist, const Value& slot) {
    const Value ops[] = {hist, slot, i64(0.0)};
    return b.Reshape(b.Emit("stablehlo.dynamic_slice", ops, {T, {1, n}},
                            "slice_sizes = " + I64Array(std::vector<int64_t>{1, n})),
                     {n});
  };
  auto at = [&](const Value& vec1, const Value& i) {  // vec1[i] of a rank-1 tensor as a scalar
    const Value ops[] = {vec1, i};
    return scalar(
        b.Emit("stablehlo.dynamic_slice", ops, {vec1.dtype(), {1}}, "slice_sizes = array<i64: 1>"));
  };
  auto coef = [&](const Value& f64) { return b.BroadcastTo(b.Convert(f64, T), {n}); };

  // Two-loop recursion on q = -g (j = 0 is the newest pair), as stablehlo.while loops over the
  // stored pairs: first j = 0 .. stored - 1, then j = stored - 1 .. 0.
  const Value loop_a_init[] = {i64(0.0),
                               b.Unary("stablehlo.negate", g),
                               b.Splat({DType::Float64, {m}}, 0.0),
                               s_hist,
                               y_hist,
                               rho,
                               head,
                               stored};
  const std::vector<Value> loop_a = While(
      b, loop_a_init, [&](std::span<const Value> c) { return b.Compare(c[0], c[7], "LT"); },
      [&](std::span<const Value> c) {
        const Value slot = slot_of(c[6], c[0]);
        const Value a_j = b.Mul(dot(row(c[3], slot), c[1]), at(c[5], slot));
        const Value upd[] = {c[2], b.Reshape(a_j, {1}), c[0]};
        const Value alpha = b.Emit("stablehlo.dynamic_update_slice", upd, c[2].type);
        const Value q = b.Sub(c[1], b.Mul(coef(a_j), row(c[4], slot)));
        return std::vector<Value>{b.Add(c[0], i64(1.0)), q, alpha, c[3], c[4], c[5], c[6], c[7]};
      });
  const Value q = loop_a[1], alpha = loop_a[2];
  const Value newest = slot_of(head, zero_i);
  const Value y_new = row(y_hist, newest), s_new = row(s_hist, newest);
  const Value h_diag = b.Select(b.Compare(stored, zero_i, "GT"),
                                b.Div(dot(y_new, s_new), dot(y_new, y_new)), s.F64(1.0));
  const Value loop_b_init[] = {
      b.Sub(stored, i64(1.0)), b.Mul(q, coef(h_diag)), alpha, s_hist, y_hist, rho, head};
  const std::vector<Value> loop_b = While(
      b, loop_b_init, [&](std::span<const Value> c) { return b.Compare(c[0], i64(0.0), "GE"); },
      [&](std::span<const Value> c) {
        const Value slot = slot_of(c[6], c[0]);
        const Value beta = b.Mul(dot(row(c[4], slot), c[1]), at(c[5], slot));
        const Value d = b.Add(c[1], b.Mul(coef(b.Sub(at(c[2], c[0]), beta)), row(c[3], slot)));
        return std::vector<Value>{b.Sub(c[0], i64(1.0)), d, c[2], c[3], c[4], c[5], c[6]};
      });
  const Value d = loop_b[1];

  // t = lr, on the first step min(1, 1 / |g|_1) lr (std::min keeps 1 when 1 / |g|_1 is NaN).
  const double lr = s.F("lr");
  const Value l1 = SumAll(b, b.Unary("stablehlo.abs", b.Convert(g, DType::Float64)));
  const Value inv = b.Div(s.F64(1.0), l1);
  const Value first_t =
      b.Mul(b.Select(b.Compare(inv, s.F64(1.0), "LT"), inv, s.F64(1.0)), s.F64(lr));
  const Value t = b.Select(first, first_t, s.F64(lr));
  const Value gtd = dot(g, d);
  const Value last_step = b.Mul(d, coef(t));
  const Value descent =
      b.Unary("stablehlo.not", b.Compare(gtd, s.F64(-s.F("tolerance_change")), "GT"));
  const Value moved = b.Select(descent, b.Add(p, last_step), p);

  // Everything stays as it was when converged.
  auto keep = [&](const Value& next, const Value& old) {
    return b.Select(b.BroadcastTo(converged, next.shape()), old, next);
  };
  auto one = [&](const Value& x) { return b.Reshape(x, {1}); };
  s.Set("last_step", b.Reshape(keep(last_step, last_step0), s.st.shape));
  s.Set("prev_grads", b.Reshape(keep(g, prev_grads0), s.st.shape));
  s.Set("s_history", b.Reshape(keep(s_hist, s_hist0), s.state.at("s_history").shape()));
  s.Set("y_history", b.Reshape(keep(y_hist, y_hist0), s.state.at("y_history").shape()));
  s.Set("rho_history", keep(rho, rho0));
  s.Set("head", one(keep(head, head0)));
  s.Set("stored", one(keep(stored, stored0)));
  s.Set("step", one(keep(k, step0)));
  return b.Reshape(keep(moved, p), s.st.shape);
}

// ---- running metrics
// ---------------------------------------------------------------------------------- Rank-0 f64
// state like the CPU op's scalars; the result rounded through f32 like SetDouble.
Value Accumulate(LowerContext& ctx, const std::string& key, const Value& add) {
  const Value next = ctx.b.Add(ctx.State(key, {DType::Float64, {}}), add);
  ctx.SetState(key, next);
  return next;
}

Value MetricOut(LowerContext& ctx, const Value& f64) {
  return ctx.b.Reshape(RoundLike(ctx.b, f64, ctx.out_type(0).dtype), {1});
}

}  // namespace

void RegisterTrainLowerings(LoweringTable& t) {
  t.Add("train.loss.cross_entropy", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const ClassRows r = Rows(ctx, in);
    const int64_t last[] = {1};
    // Per row: logsumexp - logit[target]; then the batch mean.
    const Value lse = b.Reduce(b.Mul(LogSoftmax(b, r.logits, 1), r.onehot), last, ReduceKind::Sum);
    const int64_t rows[] = {0};
    const Value total = b.Unary("stablehlo.negate", b.Reduce(lse, rows, ReduceKind::Sum));
    const Value mean = b.Div(total, b.Scalar(DType::Float64, static_cast<double>(r.batch)));
    return std::vector<Value>{RoundLike(b, mean, ctx.out_type(0).dtype)};
  });
  t.Add("train.loss.cross_entropy_grad", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const ClassRows r = Rows(ctx, in);
    const Value p = Softmax(b, r.logits, 1);
    const Value g = b.Mul(b.Sub(p, r.onehot), b.SplatLike(p, 1.0 / static_cast<double>(r.batch)));
    return std::vector<Value>{b.Convert(b.Reshape(g, in[0].shape()), ctx.out_type(0).dtype)};
  });

  t.Add("train.loss.mse", MeanLoss([](Builder& b, const Value& p, const Value& t) {
          return Square(b, b.Sub(p, t));
        }));
  t.Add("train.loss.mae", MeanLoss([](Builder& b, const Value& p, const Value& t) {
          return b.Unary("stablehlo.abs", b.Sub(p, t));
        }));
  t.Add("train.loss.huber", MeanLoss(HuberTerm));
  t.Add("train.loss.binary_cross_entropy", MeanLoss(BceTerm, CheckProbabilities));
  t.Add("train.loss.kl_divergence", MeanLoss(KlTerm, CheckNonNegativePair));
  t.Add("train.loss.mse_grad", LossGrad([](Builder& b, const Value& p, const Value& t) {
          return b.Mul(b.SplatLike(p, 2.0), b.Sub(p, t));
        }));
  t.Add("train.loss.mae_grad", LossGrad(MaeGradTerm));
  t.Add("train.loss.huber_grad", LossGrad(HuberGradTerm));
  t.Add("train.loss.binary_cross_entropy_grad", LossGrad(BceGradTerm, CheckProbabilities));
  t.Add("train.loss.kl_divergence_grad", LossGrad(KlGradTerm, CheckNonNegativePair));

  const std::vector<std::string> adam_keys = {"m", "v", "step"};
  t.Add("train.optimizer.adam",
        Optimizer(adam_keys, [](Step& s) { return AdamUpdate(s, AdamKind::Adam); }));
  t.Add("train.optimizer.adamw",
        Optimizer(adam_keys, [](Step& s) { return AdamUpdate(s, AdamKind::AdamW); }));
  t.Add("train.optimizer.adamax", Optimizer(adam_keys, AdamaxUpdate));
  t.Add("train.optimizer.lamb", Optimizer(adam_keys, LambUpdate));
  t.Add("train.optimizer.sgd", Optimizer({"momentum_buffer", "step"}, SgdUpdate));
  t.Add("train.optimizer.lion", Optimizer({"m", "step"}, LionUpdate));
  t.Add("train.optimizer.rmsprop",
        Optimizer({"square_avg", "grad_avg", "momentum_buffer", "step"}, RmspropUpdate));
  t.Add("train.optimizer.hebbian", Optimizer({}, HebbianUpdate));
  t.Add("train.optimizer.lars", Optimizer({"momentum_buffer", "step"}, LarsUpdate));
  t.Add("train.optimizer.adagrad", Optimizer({"sum", "step"}, AdagradUpdate));
  t.Add("train.optimizer.adadelta", Optimizer({"square_avg", "acc_delta", "step"}, AdadeltaUpdate));
  t.Add("train.optimizer.lbfgs", Optimizer({"last_step", "prev_grads", "s_history", "y_history",
                                            "rho_history", "head", "stored", "step"},
                                           LbfgsUpdate));

  t.Add("bench.metric.accuracy", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const int64_t n = in[0].shape().back();
    const int64_t rows = NumElements(in[0].shape()) / n;
    const Value pa = ArgMaxLast(b, b.Reshape(in[0], {rows, n}));
    const Value ta = ArgMaxLast(b, b.Reshape(in[1], {rows, n}));
    const int64_t axis0[] = {0};
    const Value hits =
        b.Reduce(b.Convert(b.Compare(pa, ta, "EQ"), DType::Float64), axis0, ReduceKind::Sum);
    const Value correct = Accumulate(ctx, "correct", hits);
    const Value total =
        Accumulate(ctx, "total", b.Scalar(DType::Float64, static_cast<double>(rows)));
    const Value acc = b.Select(b.Compare(total, b.Scalar(DType::Float64, 0.0), "GT"),
                               b.Div(correct, total), b.Scalar(DType::Float64, 0.0));
    return std::vector<Value>{MetricOut(ctx, acc)};
  });
  // exp(mean over rows of -sum_i t_i ln p_i) with 0 ln 0 = 0, running over runs.
  t.Add("bench.metric.perplexity", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const int64_t n = in[0].shape().back();
    const int64_t rows = NumElements(in[0].shape()) / n;
    const Value p = b.Reshape(b.Convert(in[0], DType::Float64), {rows, n});
    const Value t = b.Reshape(b.Convert(in[1], DType::Float64), {rows, n});
    const Value terms = b.Select(b.Compare(t, b.SplatLike(t, 0.0), "EQ"), b.SplatLike(t, 0.0),
                                 b.Mul(t, b.Unary("stablehlo.log", p)));
    const int64_t last[] = {1};
    const Value ce = b.Unary("stablehlo.negate", b.Reduce(terms, last, ReduceKind::Sum));
    const int64_t axis0[] = {0};
    const Value sum = Accumulate(ctx, "cross_entropy_sum", b.Reduce(ce, axis0, ReduceKind::Sum));
    const Value total =
        Accumulate(ctx, "total", b.Scalar(DType::Float64, static_cast<double>(rows)));
    return std::vector<Value>{MetricOut(ctx, b.Unary("stablehlo.exponential", b.Div(sum, total)))};
  });
  // Binary micro F1 with threshold 0.5 on both inputs, counts running over runs.
  t.Add("bench.metric.f1", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value p = b.Convert(in[0], DType::Float64);
    const Value t = b.Convert(in[1], DType::Float64);
    const Value predicted = b.Compare(p, b.SplatLike(p, 0.5), "GE");
    const Value actual = b.Compare(t, b.SplatLike(t, 0.5), "GE");
    auto count = [&](const Value& pred, const Value& act) {
      return SumAll(b, b.Convert(b.Binary("stablehlo.and", pred, act), DType::Float64));
    };
    const Value not_pred = b.Unary("stablehlo.not", predicted),
                not_act = b.Unary("stablehlo.not", actual);
    const Value tp = Accumulate(ctx, "true_positives", count(predicted, actual));
    const Value fp = Accumulate(ctx, "false_positives", count(predicted, not_act));
    const Value fn = Accumulate(ctx, "false_negatives", count(not_pred, actual));
    // 0/0 counts as 0 (scikit-learn's zero_division=0), as on the CPU.
    const Value zero = b.Scalar(DType::Float64, 0.0);
    auto ratio = [&](const Value& num, const Value& den) {
      return b.Select(b.Compare(den, zero, "GT"), b.Div(num, den), zero);
    };
    const Value prec = ratio(tp, b.Add(tp, fp));
    const Value rec = ratio(tp, b.Add(tp, fn));
    const Value f1 = ratio(b.Mul(b.Mul(b.Scalar(DType::Float64, 2.0), prec), rec), b.Add(prec, rec));
    return std::vector<Value>{MetricOut(ctx, f1)};
  });

  RegisterRandomLowerings(t);
}

}  // namespace backplane::xla
