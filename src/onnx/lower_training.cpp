// Lowerings of the ai.onnx.preview.training optimizers (opset 1): Adagrad, Momentum (standard and
// Nesterov) and Adam, each updating n tensors at once, as elementwise catalog ops. The update count
// T must be known at import time (it selects the bias corrections); the learning rate R may be a
// runtime scalar. Formulas as in the ONNX operator spec (docs/onnx.md).
#include <fmt/format.h>

#include <cmath>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

// The tensor count n from (2 + groups * n) inputs; Invalid otherwise.
int64_t GroupSize(Context& ctx, int groups, int outputs_per_tensor) {
  const int rest = ctx.NumInputs() - 2;
  if (rest <= 0 || rest % groups != 0) {
    ctx.Invalid(fmt::format("expects R, T and {} inputs per optimised tensor, got {} inputs", groups, ctx.NumInputs()));
  }
  const int n = rest / groups;
  if (ctx.NumOutputs() != outputs_per_tensor * n) {
    ctx.Invalid(fmt::format("expects {} outputs for {} tensors, got {}", outputs_per_tensor * n, n, ctx.NumOutputs()));
  }
  return n;
}

int64_t UpdateCount(Context& ctx) {
  const std::vector<int64_t> t = ctx.ConstInts(1, "T (update count)");
  if (t.size() != 1 || t[0] < 0) ctx.Invalid("input 'T' must be one non-negative count");
  return t[0];
}

std::string Mul(Context& ctx, const std::string& a, const std::string& b) { return ctx.Op("math.mul", {a, b}); }
std::string Add(Context& ctx, const std::string& a, const std::string& b) { return ctx.Op("math.add", {a, b}); }

// G_reg = norm_coefficient * X + G.
std::string Regularised(Context& ctx, const std::string& x, const std::string& g, double norm, DType dt) {
  if (norm == 0) return g;
  return Add(ctx, Mul(ctx, ctx.Scalar(norm, dt), x), g);
}

DType FloatDType(Context& ctx, int i) {
  const DType dt = ctx.In(i).dtype;
  if (dt != DType::Float32 && dt != DType::Float64) {
    ctx.Unsupported(fmt::format("input {} '{}' is {}; f32 and f64 are supported", i, ctx.Input(i), DTypeName(dt)));
  }
  return dt;
}

// r = R / (1 + T decay); G_reg; H_new = H + G_reg^2; X_new = X - r G_reg / (sqrt(H_new) + epsilon).
void Adagrad(Context& ctx) {
  ctx.AllowAttrs({"decay_factor", "epsilon", "norm_coefficient"});
  const int64_t n = GroupSize(ctx, 3, 2);
  const int64_t t = UpdateCount(ctx);
  const double decay = ctx.AttrFloat("decay_factor", 0), eps = ctx.AttrFloat("epsilon", 0);
  const double norm = ctx.AttrFloat("norm_coefficient", 0);
  for (int64_t k = 0; k < n; ++k) {
    const int xi = static_cast<int>(2 + k), gi = static_cast<int>(2 + n + k), hi = static_cast<int>(2 + 2 * n + k);
    const DType dt = FloatDType(ctx, xi);
    const std::string r = Mul(ctx, ctx.Input(0), ctx.Scalar(1.0 / (1.0 + static_cast<double>(t) * decay), dt));
    const std::string g = Regularised(ctx, ctx.Input(xi), ctx.Input(gi), norm, dt);
    const std::string h_new = Add(ctx, ctx.Input(hi), Mul(ctx, g, g));
    const std::string denom = Add(ctx, ctx.Op("math.sqrt", {h_new}), ctx.Scalar(eps, dt));
    const std::string step = ctx.Op("math.div", {Mul(ctx, r, g), denom});
    ctx.Op("math.sub", {ctx.Input(xi), step}, {}, ctx.Output(static_cast<int>(k)));
    ctx.Alias(h_new, ctx.Output(static_cast<int>(n + k)));
  }
}

// G_reg; V_new = alpha V + beta' G_reg (beta' = 1 on the first update, T = 0); standard:
// X_new = X - R V_new; nesterov: X_new = X - R (G_reg + alpha V_new).
void Momentum(Context& ctx) {
  ctx.AllowAttrs({"alpha", "beta", "mode", "norm_coefficient"});
  for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"}) {
    if (!ctx.HasAttr(a)) ctx.Invalid(fmt::format("attribute '{}' is required", a));
  }
  const std::string mode = ctx.AttrString("mode", "");
  if (mode != "standard" && mode != "nesterov") ctx.Invalid(fmt::format("attribute 'mode' must be standard or nesterov, got '{}'", mode));
  const int64_t n = GroupSize(ctx, 3, 2);
  const int64_t t = UpdateCount(ctx);
  const double alpha = ctx.AttrFloat("alpha", 0), beta = t > 0 ? ctx.AttrFloat("beta", 0) : 1.0;
  const double norm = ctx.AttrFloat("norm_coefficient", 0);
  for (int64_t k = 0; k < n; ++k) {
    const int xi = static_cast<int>(2 + k), gi = static_cast<int>(2 + n + k), vi = static_cast<int>(2 + 2 * n + k);
    const DType dt = FloatDType(ctx, xi);
    const std::string g = Regularised(ctx, ctx.Input(xi), ctx.Input(gi), norm, dt);
    const std::string v_new = Add(ctx, Mul(ctx, ctx.Scalar(alpha, dt), ctx.Input(vi)), Mul(ctx, ctx.Scalar(beta, dt), g));
    const std::string dir = mode == "standard" ? v_new : Add(ctx, g, Mul(ctx, ctx.Scalar(alpha, dt), v_new));
    ctx.Op("math.sub", {ctx.Input(xi), Mul(ctx, ctx.Input(0), dir)}, {}, ctx.Output(static_cast<int>(k)));
    ctx.Alias(v_new, ctx.Output(static_cast<int>(n + k)));
  }
}

// G_reg; V_new = alpha V + (1 - alpha) G_reg; H_new = beta H + (1 - beta) G_reg^2;
// R' = R sqrt(1 - beta^T) / (1 - alpha^T) for T > 0 (R at T = 0);
// X_new = (1 - norm_coefficient_post) (X - R' V_new / (sqrt(H_new) + epsilon)).
void Adam(Context& ctx) {
  ctx.AllowAttrs({"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"});
  const int64_t n = GroupSize(ctx, 4, 3);
  const int64_t t = UpdateCount(ctx);
  const double alpha = ctx.AttrFloat("alpha", 0.9), beta = ctx.AttrFloat("beta", 0.999);
  const double eps = ctx.AttrFloat("epsilon", 0), norm = ctx.AttrFloat("norm_coefficient", 0);
  const double post = ctx.AttrFloat("norm_coefficient_post", 0);
  const double td = static_cast<double>(t);
  const double correction = t > 0 ? std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td)) : 1.0;
  if (!std::isfinite(correction)) ctx.Invalid(fmt::format("the bias correction at T = {} is not finite (alpha = {})", t, alpha));
  for (int64_t k = 0; k < n; ++k) {
    const int xi = static_cast<int>(2 + k), gi = static_cast<int>(2 + n + k);
    const int vi = static_cast<int>(2 + 2 * n + k), hi = static_cast<int>(2 + 3 * n + k);
    const DType dt = FloatDType(ctx, xi);
    const std::string g = Regularised(ctx, ctx.Input(xi), ctx.Input(gi), norm, dt);
    const std::string v_new =
        Add(ctx, Mul(ctx, ctx.Scalar(alpha, dt), ctx.Input(vi)), Mul(ctx, ctx.Scalar(1 - alpha, dt), g));
    const std::string h_new =
        Add(ctx, Mul(ctx, ctx.Scalar(beta, dt), ctx.Input(hi)), Mul(ctx, ctx.Scalar(1 - beta, dt), Mul(ctx, g, g)));
    const std::string denom = Add(ctx, ctx.Op("math.sqrt", {h_new}), ctx.Scalar(eps, dt));
    const std::string r = Mul(ctx, ctx.Input(0), ctx.Scalar(correction, dt));
    const std::string x_new = ctx.Op("math.sub", {ctx.Input(xi), Mul(ctx, r, ctx.Op("math.div", {v_new, denom}))});
    if (post == 0) {
      ctx.Alias(x_new, ctx.Output(static_cast<int>(k)));
    } else {
      ctx.Op("math.mul", {x_new, ctx.Scalar(1 - post, dt)}, {}, ctx.Output(static_cast<int>(k)));
    }
    ctx.Alias(v_new, ctx.Output(static_cast<int>(n + k)));
    ctx.Alias(h_new, ctx.Output(static_cast<int>(2 * n + k)));
  }
}

}  // namespace

void LowerTrainingNode(Context& ctx, int64_t version) {
  if (version != 1) ctx.Unsupported(fmt::format("ai.onnx.preview.training opset {} (opset 1 is supported)", version));
  const std::string& type = ctx.node().op_type();
  if (type == "Adagrad") return Adagrad(ctx);
  if (type == "Momentum") return Momentum(ctx);
  if (type == "Adam") return Adam(ctx);
  ctx.Unsupported("op type is not supported in domain ai.onnx.preview.training (Adagrad, Momentum, Adam are)");
}

}  // namespace backplane::onnx
