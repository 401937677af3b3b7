// Graph-level lowerings of the training ops: mean losses (scalar outputs), their gradients, and
// the optimizers, which update a parameter in place and keep their state in the node's NodeState.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

// ---- losses and gradients -------------------------------------------------------------------------
// predictions and targets: same float dtype and shape.
void ExpectPair(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectSameDType(attrs, in, {0, 1});
  ExpectShape(attrs, in, 1, in[0].shape);
}

using LossMethod = double (LossesSurface::*)(BP_PARAMS_Loss);

// Mean over all elements -> a scalar [].
OpImpl Loss(LossMethod method) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectPair(in, attrs);
        return std::vector<TensorType>{{in[0].dtype, {}}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        out[0].SetDouble(0, (ctx.backend.Losses().*method)(in[0].data(), in[1].data(), in[0].numel(), in[0].dtype()));
      }};
}

using GradMethod = void (GradientsSurface::*)(BP_PARAMS_MSEGrad);

// d(mean loss)/d(predictions): the predictions' type.
OpImpl LossGradOp(GradMethod method) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectPair(in, attrs);
        return std::vector<TensorType>{in[0]};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        (ctx.backend.Gradients().*method)(in[0].data(), in[1].data(), out[0].data(), in[0].numel(), in[0].dtype());
      }};
}

// logits [B, C] with int32 targets [B], or logits [C] with a scalar target.
void ExpectClasses(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectDType(attrs, in, 1, DTypeSet{DType::Int32});
  const Shape& logits = in[0].shape;
  if (logits.size() != 1 && logits.size() != 2) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("logits must be [batch, classes] or [classes], got {}", ShapeToString(logits)));
  }
  ExpectShape(attrs, in, 1, logits.size() == 2 ? Shape{logits[0]} : Shape{});
  if (logits.back() == 0 && (logits.size() == 1 || logits[0] > 0)) {
    Fail(attrs, ErrorCode::ShapeMismatch, fmt::format("logits {} have no classes", ShapeToString(logits)));
  }
}

int64_t Batch(const Tensor& logits) { return logits.rank() == 2 ? logits.shape()[0] : 1; }

OpImpl CrossEntropyOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectClasses(in, attrs);
        return std::vector<TensorType>{{in[0].dtype, {}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        out[0].SetDouble(0, ctx.backend.Losses().CrossEntropy(in[0].data(), in[1].data_as<int32_t>(), Batch(in[0]),
                                                              in[0].shape().back(), in[0].dtype()));
      }};
}

OpImpl CrossEntropyGradOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectClasses(in, attrs);
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Gradients().CrossEntropyGrad(in[0].data(), in[1].data_as<int32_t>(), out[0].data(), Batch(in[0]),
                                                 in[0].shape().back(), in[0].dtype());
      }};
}

// ---- optimizers: shape rule -------------------------------------------------------------------------
// Every hyper-parameter of the op in its range: rates, eps, decays, momentum and norms finite and
// >= 0; betas, alpha, rho in [0, 1); dampening in [0, 1]; history_size > 0.
void CheckHyperParameters(const Attrs& attrs) {
  for (const catalog::AttrSpec& a : catalog::FindOp(attrs.op())->attrs) {
    if (a.type == catalog::AttrType::Bool) continue;
    if (a.name == "history_size") {
      if (attrs.Int(a.name) < 1) attrs.Fail(a.name, "> 0", std::to_string(attrs.Int(a.name)));
      continue;
    }
    const double v = attrs.Float(a.name);
    const bool unit = a.name == "beta1" || a.name == "beta2" || a.name == "alpha" || a.name == "rho";
    const bool closed_unit = a.name == "dampening";
    const bool ok = std::isfinite(v) && v >= 0 && (!unit || v < 1) && (!closed_unit || v <= 1);
    if (!ok) {
      attrs.Fail(a.name, unit ? "in [0, 1)" : closed_unit ? "in [0, 1]" : "finite and >= 0", fmt::format("{}", v));
    }
  }
  if (attrs.op() == "train.optimizer.sgd" && attrs.Bool("nesterov") &&
      (attrs.Float("momentum") <= 0 || attrs.Float("dampening") != 0)) {
    attrs.Fail("nesterov", "false unless momentum > 0 and dampening = 0", "true");
  }
}

std::vector<TensorType> OptimizerInfer(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectPair(in, attrs);
  CheckHyperParameters(attrs);
  return {in[0]};
}

// ---- optimizers: state ----------------------------------------------------------------------------
// The type of state tensor `key`: counters int64 [1]; L-BFGS's rho f64 [history]; histories
// [history, ...params]; everything else the params' shape. Real state is f32 (f64 for f64 params).
TensorType StateType(const std::string& key, const Tensor& params, const Attrs& attrs) {
  const DType real = params.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  if (key == "step" || key == "head" || key == "stored") return {DType::Int64, {1}};
  if (key == "rho_history") return {DType::Float64, {attrs.Int("history_size")}};
  if (key == "s_history" || key == "y_history") {
    Shape shape = params.shape();
    shape.insert(shape.begin(), attrs.Int("history_size"));
    return {real, shape};
  }
  return {real, params.shape()};
}

// Creates state `key` zeroed unless it is already there (from an earlier run, or pre-filled by
// LoadState, which keeps a rank-0 f64 entry as a scalar); checks its type.
void EnsureState(OpContext& ctx, const std::string& key, const TensorType& type) {
  auto it = ctx.state.tensors.find(key);
  if (it == ctx.state.tensors.end()) {
    Tensor t(type.dtype, type.shape);
    if (const auto s = ctx.state.scalars.find(key); s != ctx.state.scalars.end() && t.numel() == 1) {
      t.SetDouble(0, s->second);
      ctx.state.scalars.erase(s);
    }
    it = ctx.state.tensors.emplace(key, std::move(t)).first;
  }
  const TensorType have{it->second.dtype(), it->second.shape()};
  if (have != type) {
    ctx.Fail(ErrorCode::ShapeMismatch,
             fmt::format("state '{}' must be {}, got {}", key, TypeToString(type), TypeToString(have)));
  }
}

void* State(OpContext& ctx, const std::string& key) { return ctx.state.tensors.at(key).data(); }
int64_t* Counter(OpContext& ctx, const std::string& key) { return ctx.state.tensors.at(key).data_as<int64_t>(); }
double F(const Attrs& attrs, const std::string& name) { return attrs.Float(name); }

// ---- optimizers: lowering ---------------------------------------------------------------------------
// One step on `params` (count elements of dtype) with the node's state tensors.
using Update = std::function<void(OpContext& ctx, void* params, const void* grads, int64_t count, DType dtype)>;

// The step updates a graph parameter in place (the output shares its storage) and a computed
// value in a copy; a frozen parameter is left as it is and its step counter does not advance.
OpImpl Optimizer(std::vector<std::string> keys, Update update) {
  OpImpl impl{OptimizerInfer, nullptr, keys};
  impl.run = [keys, update](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
    const std::string& name = ctx.input_names[0];
    const bool is_param = ctx.params.tensors.contains(name);
    if (is_param) {
      out[0] = in[0];
    } else {
      std::memcpy(out[0].data(), in[0].data(), in[0].nbytes());
    }
    for (const std::string& key : keys) EnsureState(ctx, key, StateType(key, in[0], ctx.attrs));
    const auto frozen = ctx.params.frozen.find(name);
    if (is_param && frozen != ctx.params.frozen.end() && frozen->second) return;
    update(ctx, out[0].data(), in[1].data(), in[0].numel(), in[0].dtype());
  };
  return impl;
}

using AdamMethod = void (OptimizerSurface::*)(BP_PARAMS_AdamStep);

// Adam, AdamW, Adamax, LAMB.
OpImpl AdamFamily(AdamMethod method) {
  return Optimizer({"m", "v", "step"}, [method](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const Attrs& a = ctx.attrs;
    const AdamConfig config{F(a, "lr"), F(a, "beta1"), F(a, "beta2"), F(a, "eps"), F(a, "weight_decay")};
    (ctx.backend.Optimizer().*method)(config, p, g, State(ctx, "m"), State(ctx, "v"), Counter(ctx, "step"), n, d);
  });
}

OpImpl SGD() {
  return Optimizer({"momentum_buffer", "step"}, [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const Attrs& a = ctx.attrs;
    const SGDConfig config{F(a, "lr"), F(a, "momentum"), F(a, "dampening"), F(a, "weight_decay"), a.Bool("nesterov")};
    ctx.backend.Optimizer().SGD(config, p, g, State(ctx, "momentum_buffer"), Counter(ctx, "step"), n, d);
  });
}

OpImpl Lion() {
  return Optimizer({"m", "step"}, [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const Attrs& a = ctx.attrs;
    const LionConfig config{F(a, "lr"), F(a, "beta1"), F(a, "beta2"), F(a, "weight_decay")};
    ctx.backend.Optimizer().Lion(config, p, g, State(ctx, "m"), Counter(ctx, "step"), n, d);
  });
}

OpImpl RMSprop() {
  return Optimizer({"square_avg", "grad_avg", "momentum_buffer", "step"},
                   [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
                     const Attrs& a = ctx.attrs;
                     const RMSpropConfig config{F(a, "lr"),           F(a, "alpha"),    F(a, "eps"),
                                                F(a, "weight_decay"), F(a, "momentum"), a.Bool("centered")};
                     ctx.backend.Optimizer().RMSprop(config, p, g, State(ctx, "square_avg"), State(ctx, "grad_avg"),
                                                     State(ctx, "momentum_buffer"), Counter(ctx, "step"), n, d);
                   });
}

// Stateless: p + lr * signal (the "grads" input), optionally norm-clipped.
OpImpl Hebbian() {
  return Optimizer({}, [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const HebbianConfig config{F(ctx.attrs, "lr"), F(ctx.attrs, "max_norm")};
    ctx.backend.Optimizer().Hebbian(config, p, g, n, d);
  });
}

OpImpl LARS() {
  return Optimizer({"momentum_buffer", "step"}, [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const Attrs& a = ctx.attrs;
    const LARSConfig config{F(a, "lr"), F(a, "eta"), F(a, "momentum"), F(a, "weight_decay"), F(a, "eps")};
    ctx.backend.Optimizer().LARS(config, p, g, State(ctx, "momentum_buffer"), Counter(ctx, "step"), n, d);
  });
}

OpImpl Adagrad() {
  return Optimizer({"sum", "step"}, [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const Attrs& a = ctx.attrs;
    const AdagradConfig config{F(a, "lr"), F(a, "lr_decay"), F(a, "weight_decay"), F(a, "eps")};
    ctx.backend.Optimizer().Adagrad(config, p, g, State(ctx, "sum"), Counter(ctx, "step"), n, d);
  });
}

OpImpl Adadelta() {
  return Optimizer({"square_avg", "acc_delta", "step"}, [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
    const Attrs& a = ctx.attrs;
    const AdadeltaConfig config{F(a, "lr"), F(a, "rho"), F(a, "eps"), F(a, "weight_decay")};
    ctx.backend.Optimizer().Adadelta(config, p, g, State(ctx, "square_avg"), State(ctx, "acc_delta"),
                                     Counter(ctx, "step"), n, d);
  });
}

OpImpl LBFGS() {
  return Optimizer({"last_step", "prev_grads", "s_history", "y_history", "rho_history", "head", "stored", "step"},
                   [](OpContext& ctx, void* p, const void* g, int64_t n, DType d) {
                     const LBFGSConfig config{F(ctx.attrs, "lr"), ctx.attrs.Int("history_size"),
                                              F(ctx.attrs, "tolerance_grad"), F(ctx.attrs, "tolerance_change")};
                     const LBFGSState state{State(ctx, "last_step"),
                                            State(ctx, "prev_grads"),
                                            State(ctx, "s_history"),
                                            State(ctx, "y_history"),
                                            ctx.state.tensors.at("rho_history").data_as<double>(),
                                            Counter(ctx, "head"),
                                            Counter(ctx, "stored"),
                                            Counter(ctx, "step")};
                     ctx.backend.Optimizer().LBFGS(config, p, g, state, n, d);
                   });
}

}  // namespace

void RegisterTrainOps(OpRegistry& r) {
  using L = LossesSurface;
  r.Add("train.loss.mse", Loss(&L::MSE));
  r.Add("train.loss.mae", Loss(&L::MAE));
  r.Add("train.loss.huber", Loss(&L::Huber));
  r.Add("train.loss.binary_cross_entropy", Loss(&L::BinaryCrossEntropy));
  r.Add("train.loss.kl_divergence", Loss(&L::KLDivergence));
  r.Add("train.loss.cross_entropy", CrossEntropyOp());
  using G = GradientsSurface;
  r.Add("train.loss.mse_grad", LossGradOp(&G::MSEGrad));
  r.Add("train.loss.mae_grad", LossGradOp(&G::MAEGrad));
  r.Add("train.loss.huber_grad", LossGradOp(&G::HuberGrad));
  r.Add("train.loss.binary_cross_entropy_grad", LossGradOp(&G::BinaryCrossEntropyGrad));
  r.Add("train.loss.kl_divergence_grad", LossGradOp(&G::KLDivergenceGrad));
  r.Add("train.loss.cross_entropy_grad", CrossEntropyGradOp());

  using O = OptimizerSurface;
  r.Add("train.optimizer.adam", AdamFamily(&O::Adam));
  r.Add("train.optimizer.adamw", AdamFamily(&O::AdamW));
  r.Add("train.optimizer.adamax", AdamFamily(&O::Adamax));
  r.Add("train.optimizer.lamb", AdamFamily(&O::LAMB));
  r.Add("train.optimizer.sgd", SGD());
  r.Add("train.optimizer.lion", Lion());
  r.Add("train.optimizer.rmsprop", RMSprop());
  r.Add("train.optimizer.hebbian", Hebbian());
  r.Add("train.optimizer.lars", LARS());
  r.Add("train.optimizer.adagrad", Adagrad());
  r.Add("train.optimizer.adadelta", Adadelta());
  r.Add("train.optimizer.lbfgs", LBFGS());
}

}  // namespace backplane::runtime::ops
