// Training: losses and their gradients (f64 like the CPU reference), optimizers as state updates,
// running metrics.
#include <cmath>

#include <fmt/format.h>

#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

// targets (i32) all in [0, classes).
void RequireClassTargets(LowerContext& ctx, const Value& targets, int64_t classes) {
  Builder& b = ctx.b;
  const Value lo = b.Compare(targets, b.SplatLike(targets, 0.0), "GE");
  const Value hi = b.Compare(targets, b.SplatLike(targets, static_cast<double>(classes)), "LT");
  const Value ok = b.Binary("stablehlo.and", lo, hi);
  std::vector<int64_t> all;
  for (int64_t i = 0; i < ok.rank(); ++i) all.push_back(i);
  ctx.Require(b.Reduce(ok, all, ReduceKind::And), fmt::format("argument 'targets' must be in [0, {})", classes));
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
  const Value t = b.BroadcastInDim(b.Reshape(in[1], {batch}), {batch, classes}, std::vector<int64_t>{0});
  const Value iota = b.Iota({DType::Int32, {batch, classes}}, 1);
  const Value onehot = b.Convert(b.Compare(iota, t, "EQ"), DType::Float64);
  return {logits, onehot, batch};
}

Value RoundLike(Builder& b, const Value& f64, DType out) {
  // The CPU reference rounds losses through f32 before storing them in a narrower dtype.
  return out == DType::Float64 ? f64 : b.Convert(b.Convert(f64, DType::Float32), out);
}

// m/v-style state in the optimizer's real type (f64 for f64 params, f32 otherwise).
DType StateReal(DType params) { return params == DType::Float64 ? DType::Float64 : DType::Float32; }

// The state step counter: i64 [1], incremented; returns (new counter, t as `real`).
Value Step(LowerContext& ctx, DType real, Value* t_out) {
  Builder& b = ctx.b;
  const Value step = ctx.State("step", {DType::Int64, {1}});
  const Value next = b.Add(step, b.SplatLike(step, 1.0));
  ctx.SetState("step", next);
  *t_out = b.Reshape(b.Convert(next, DType::Float64), {});
  return next;
}

enum class AdamKind { Adam, AdamW };

LowerFn Adam(AdamKind kind) {
  return [kind](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const runtime::Attrs& a = ctx.attrs();
    const DType pd = in[0].dtype();
    const DType T = StateReal(pd);
    const TensorType st{T, in[0].shape()};
    const Value m0 = ctx.State("m", st);
    const Value v0 = ctx.State("v", st);
    if (ctx.input_frozen(0)) {
      (void)ctx.State("step", {DType::Int64, {1}});
      return std::vector<Value>{in[0]};
    }
    Value t;
    Step(ctx, T, &t);
    const double lr = a.Float("lr"), b1 = a.Float("beta1"), b2 = a.Float("beta2"), wd = a.Float("weight_decay");
    // Bias corrections in f64 from the device counter, then rounded to T (the reference's order).
    auto pow_t = [&](double base) {
      return b.Binary("stablehlo.power", b.Scalar(DType::Float64, base), t);
    };
    const Value bc1 = b.Sub(b.Scalar(DType::Float64, 1.0), pow_t(b1));
    const Value bc2 = b.Sub(b.Scalar(DType::Float64, 1.0), pow_t(b2));
    const Value neg_step = b.BroadcastTo(
        b.Convert(b.Div(b.Scalar(DType::Float64, -lr), bc1), T), in[0].shape());
    const Value bc2_sqrt = b.BroadcastTo(b.Convert(b.Unary("stablehlo.sqrt", bc2), T), in[0].shape());
    Value p = b.Convert(in[0], T);
    Value g = b.Convert(in[1], T);
    auto c = [&](double v) { return b.Splat(st, static_cast<double>(T == DType::Float32 ? static_cast<float>(v) : v)); };
    if (kind == AdamKind::AdamW) {
      p = b.Mul(p, c(1.0 - lr * wd));
    } else if (wd != 0.0) {
      g = b.Add(g, b.Mul(c(wd), p));
    }
    const Value m = b.Add(b.Mul(m0, c(b1)), b.Mul(c(1.0 - b1), g));
    const Value v = b.Add(b.Mul(v0, c(b2)), b.Mul(b.Mul(c(1.0 - b2), g), g));
    const Value denom = b.Add(b.Div(b.Unary("stablehlo.sqrt", v), bc2_sqrt), c(a.Float("eps")));
    p = b.Add(p, b.Div(b.Mul(neg_step, m), denom));
    ctx.SetState("m", m);
    ctx.SetState("v", v);
    return std::vector<Value>{b.Convert(p, pd)};
  };
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
  t.Add("train.optimizer.adam", Adam(AdamKind::Adam));
  t.Add("train.optimizer.adamw", Adam(AdamKind::AdamW));
  t.Add("bench.metric.accuracy", [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const int64_t n = in[0].shape().back();
    const int64_t rows = NumElements(in[0].shape()) / n;
    const Value pa = ArgMaxLast(b, b.Reshape(in[0], {rows, n}));
    const Value ta = ArgMaxLast(b, b.Reshape(in[1], {rows, n}));
    const int64_t axis0[] = {0};
    const Value hits = b.Reduce(b.Convert(b.Compare(pa, ta, "EQ"), DType::Float64), axis0, ReduceKind::Sum);
    const Value correct = b.Add(ctx.State("correct", {DType::Float64, {}}), hits);
    const Value total = b.Add(ctx.State("total", {DType::Float64, {}}), b.Scalar(DType::Float64, static_cast<double>(rows)));
    ctx.SetState("correct", correct);
    ctx.SetState("total", total);
    const Value acc = b.Select(b.Compare(total, b.Scalar(DType::Float64, 0.0), "GT"), b.Div(correct, total),
                               b.Scalar(DType::Float64, 0.0));
    return std::vector<Value>{b.Convert(b.Reshape(acc, {1}), ctx.out_type(0).dtype)};
  });
}

}  // namespace backplane::xla
