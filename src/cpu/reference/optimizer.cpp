// Scalar reference kernels for the Optimizer surface: one parameter-update step per call.
//
// Contract shared by every method (docs/semantics/optimizer.md):
//  * params/grads are stored in `dtype` (f32, f64, f16, bf16); state buffers (moments,
//    accumulators, histories) are f32, or f64 when dtype is f64. The update is computed in that
//    state type T and the params are rounded once on store.
//  * Scalar coefficients (1 - beta1, bias corrections, lr / (1 - beta1^t), ...) are computed in
//    float64 from the double config fields and rounded once to T, as torch.optim computes them in
//    Python floats. Norms and dot products accumulate in float64.
//  * *step is incremented at the start of every call (the first call sees step 1), including
//    calls with count == 0.
//  * Everything is validated before anything is written: on an error, params, state and *step
//    are untouched.
//  * Where torch.optim has the optimizer, the update is torch 1.13's single-tensor rule
//    (foreach=False, maximize=False, amsgrad=False), including its operation order.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/error.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace optimizer {
namespace {

// ---- Validation ---------------------------------------------------------------------------------

void CheckNotNull(std::string_view op, std::string_view arg, const void* ptr) {
  if (ptr == nullptr) ThrowInvalidArgument(op, arg, "non-null", "null");
}

// The step counter: non-null, >= 0 (calls so far) and able to advance.
void CheckStep(std::string_view op, std::string_view arg, const int64_t* step) {
  CheckNotNull(op, arg, step);
  if (*step < 0) ThrowInvalidArgument(op, arg, ">= 0 (calls so far)", std::to_string(*step));
  if (*step == std::numeric_limits<int64_t>::max()) {
    ThrowInvalidArgument(op, arg, "< 2^63 - 1 (it is incremented)", std::to_string(*step));
  }
}

// A finite hyper-parameter >= 0.
void CheckNonNegativeParam(std::string_view op, std::string_view arg, double value) {
  CheckFinite(op, arg, value);
  if (!(value >= 0.0f)) ThrowInvalidArgument(op, arg, ">= 0", fmt::format("{}", value));
}

// A hyper-parameter in [0, 1) (closed = false) or [0, 1] (closed = true).
void CheckUnitParam(std::string_view op, std::string_view arg, double value, bool closed) {
  // Also rejects NaN and infinities.
  const bool ok = value >= 0.0f && (closed ? value <= 1.0f : value < 1.0f);
  if (!ok) {
    ThrowInvalidArgument(op, arg, closed ? "in [0, 1]" : "in [0, 1)", fmt::format("{}", value));
  }
}

// count >= 0 and params/grads non-null when count > 0.
void CheckVectors(std::string_view op, const void* params, std::string_view gradsName,
                  const void* grads, int64_t count) {
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "params", params, count);
  CheckPointer(op, gradsName, grads, count);
}

void CheckAdamConfig(std::string_view op, const AdamConfig& c) {
  CheckNonNegativeParam(op, "config.LearningRate", c.LearningRate);
  CheckUnitParam(op, "config.Beta1", c.Beta1, /*closed=*/false);
  CheckUnitParam(op, "config.Beta2", c.Beta2, /*closed=*/false);
  CheckNonNegativeParam(op, "config.Eps", c.Eps);
  CheckNonNegativeParam(op, "config.WeightDecay", c.WeightDecay);
}

// Every AdamStep method: dtype (by the caller), sizes, pointers, step, config.
void CheckAdamStep(std::string_view op, const AdamConfig& config, const void* params,
                   const void* grads, const void* m, const void* v, const int64_t* step,
                   int64_t count) {
  CheckVectors(op, params, "grads", grads, count);
  CheckPointer(op, "m", m, count);
  CheckPointer(op, "v", v, count);
  CheckStep(op, "step", step);
  CheckAdamConfig(op, config);
}

// ---- Element helpers ----------------------------------------------------------------------------

// sign(x) in {-1, 0, +1}; NaN stays NaN (NumPy's np.sign; torch.sign would give 0).
template <class T>
T Sign(T x) {
  if (std::isnan(x)) return x;
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
}

// max(a, b) that propagates NaN, like torch.amax.
template <class T>
T NanMax(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return std::max(a, b);
}

// Euclidean norm of a stored vector, accumulated in float64.
double StoredNorm(const void* data, int64_t count, DType dtype) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double x = Load<double>(data, i, dtype);
    sum += x * x;
  }
  return std::sqrt(sum);
}

template <class T>
double Dot(const T* a, const T* b, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

template <class T>
double Norm(const std::vector<T>& a) {
  return std::sqrt(Dot(a.data(), a.data(), static_cast<int64_t>(a.size())));
}

// ---- Adam family (torch.optim.Adam / AdamW, torch 1.13 _single_tensor_adam[w]) ------------------

template <class T>
void AdamUpdate(const AdamConfig& c, void* params, const void* grads, T* m, T* v, int64_t t,
                int64_t count, DType dtype, bool decoupled) {
  const double lr = c.LearningRate, b1 = c.Beta1, b2 = c.Beta2, wd = c.WeightDecay;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
  const T beta1 = T(b1), beta2 = T(b2), oneMinusB1 = T(1.0 - b1), oneMinusB2 = T(1.0 - b2);
  const T weightDecay = T(wd), eps = T(c.Eps);
  const T decay = T(1.0 - lr * wd);  // AdamW: p *= 1 - lr wd before the Adam step
  const T negStepSize = T(-(lr / bc1));
  const T bc2Sqrt = T(std::sqrt(bc2));
  for (int64_t i = 0; i < count; ++i) {
    T p = Load<T>(params, i, dtype);
    T g = Load<T>(grads, i, dtype);
    if (decoupled) {
      p = p * decay;
    } else if (wd != 0.0) {
      g = g + weightDecay * p;  // L2: grad.add(param, alpha=wd)
    }
    m[i] = m[i] * beta1 + oneMinusB1 * g;
    v[i] = v[i] * beta2 + oneMinusB2 * g * g;
    const T denom = std::sqrt(v[i]) / bc2Sqrt + eps;
    p = p + negStepSize * m[i] / denom;  // addcdiv: p + value * m / denom
    Store<T>(params, i, dtype, p);
  }
}

void Adam(BP_PARAMS_AdamStep) {
  constexpr std::string_view op = "Optimizer.Adam";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckAdamStep(op, config, params, grads, m, v, step, count);
    const int64_t t = ++*step;
    AdamUpdate<T>(config, params, grads, static_cast<T*>(m), static_cast<T*>(v), t, count, dtype,
                  /*decoupled=*/false);
  });
}

void AdamW(BP_PARAMS_AdamStep) {
  constexpr std::string_view op = "Optimizer.AdamW";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckAdamStep(op, config, params, grads, m, v, step, count);
    const int64_t t = ++*step;
    AdamUpdate<T>(config, params, grads, static_cast<T*>(m), static_cast<T*>(v), t, count, dtype,
                  /*decoupled=*/true);
  });
}

// torch.optim.Adamax (1.13): u = max(beta2 u, |g| + eps) (eps inside the max), no eps in the
// denominator; p -= lr / (1 - beta1^t) * m / u. `v` holds u.
void Adamax(BP_PARAMS_AdamStep) {
  constexpr std::string_view op = "Optimizer.Adamax";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckAdamStep(op, config, params, grads, m, v, step, count);
    const int64_t t = ++*step;
    T* mom = static_cast<T*>(m);
    T* inf = static_cast<T*>(v);
    const double lr = config.LearningRate, b1 = config.Beta1, wd = config.WeightDecay;
    const T beta1 = T(b1), beta2 = T(config.Beta2), oneMinusB1 = T(1.0 - b1);
    const T weightDecay = T(wd), eps = T(config.Eps);
    const T negClr = T(-(lr / (1.0 - std::pow(b1, static_cast<double>(t)))));
    for (int64_t i = 0; i < count; ++i) {
      T p = Load<T>(params, i, dtype);
      T g = Load<T>(grads, i, dtype);
      if (wd != 0.0) g = g + weightDecay * p;
      mom[i] = mom[i] * beta1 + oneMinusB1 * g;
      inf[i] = NanMax(inf[i] * beta2, std::abs(g) + eps);
      p = p + negClr * mom[i] / inf[i];
      Store<T>(params, i, dtype, p);
    }
  });
}

// LAMB (You et al. 2019, Algorithm 2, phi = identity): Adam moments with bias correction,
// r = m_hat / (sqrt(v_hat) + eps) + wd p, p -= lr * (||p|| / ||r||) * r, ratio 1 when either
// norm is 0. Norms over the whole vector (one layer), in float64.
void LAMB(BP_PARAMS_AdamStep) {
  constexpr std::string_view op = "Optimizer.LAMB";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckAdamStep(op, config, params, grads, m, v, step, count);
    std::vector<T> r(static_cast<size_t>(count));
    const int64_t t = ++*step;
    T* mom = static_cast<T*>(m);
    T* sq = static_cast<T*>(v);
    const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2;
    const double wd = config.WeightDecay;
    const T beta1 = T(b1), beta2 = T(b2), oneMinusB1 = T(1.0 - b1), oneMinusB2 = T(1.0 - b2);
    const T bc1 = T(1.0 - std::pow(b1, static_cast<double>(t)));
    const T bc2 = T(1.0 - std::pow(b2, static_cast<double>(t)));
    const T weightDecay = T(wd), eps = T(config.Eps);
    for (int64_t i = 0; i < count; ++i) {
      const T g = Load<T>(grads, i, dtype);
      mom[i] = mom[i] * beta1 + oneMinusB1 * g;
      sq[i] = sq[i] * beta2 + oneMinusB2 * g * g;
      T ri = (mom[i] / bc1) / (std::sqrt(sq[i] / bc2) + eps);
      if (wd != 0.0) ri = ri + weightDecay * Load<T>(params, i, dtype);
      r[static_cast<size_t>(i)] = ri;
    }
    const double pNorm = StoredNorm(params, count, dtype);
    const double rNorm = Norm(r);
    const double ratio = (pNorm == 0.0 || rNorm == 0.0) ? 1.0 : pNorm / rNorm;
    const T negStep = T(-(lr * ratio));
    for (int64_t i = 0; i < count; ++i) {
      Store<T>(params, i, dtype, Load<T>(params, i, dtype) + negStep * r[static_cast<size_t>(i)]);
    }
  });
}

// ---- SGD (torch.optim.SGD, 1.13 _single_tensor_sgd) ---------------------------------------------
// d = g + wd p; with momentum: b = d on the first step (step == 1), else b = mu b + (1 - damp) d;
// d = d + mu b (Nesterov) or b; p -= lr d. The buffer is not touched (may be null) when
// momentum == 0.
void SGD(BP_PARAMS_SGDStep) {
  constexpr std::string_view op = "Optimizer.SGD";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    const bool useMomentum = config.Momentum != 0.0f;
    if (useMomentum) CheckPointer(op, "momentumBuffer", momentumBuffer, count);
    CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.Momentum", config.Momentum);
    CheckUnitParam(op, "config.Dampening", config.Dampening, /*closed=*/true);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    if (config.Nesterov && !(config.Momentum > 0.0f)) {
      ThrowInvalidArgument(op, "config.Momentum", "> 0 when config.Nesterov is set",
                           fmt::format("{}", config.Momentum));
    }
    if (config.Nesterov && config.Dampening != 0.0f) {
      ThrowInvalidArgument(op, "config.Dampening", "0 when config.Nesterov is set",
                           fmt::format("{}", config.Dampening));
    }
    const int64_t t = ++*step;
    T* buf = static_cast<T*>(momentumBuffer);
    const double wd = config.WeightDecay;
    const T weightDecay = T(wd), mu = T(config.Momentum);
    const T oneMinusDamp = T(1.0 - static_cast<double>(config.Dampening));
    const T negLr = T(-static_cast<double>(config.LearningRate));
    for (int64_t i = 0; i < count; ++i) {
      const T p = Load<T>(params, i, dtype);
      T d = Load<T>(grads, i, dtype);
      if (wd != 0.0) d = d + weightDecay * p;
      if (useMomentum) {
        buf[i] = (t == 1) ? d : buf[i] * mu + oneMinusDamp * d;
        d = config.Nesterov ? d + mu * buf[i] : buf[i];
      }
      Store<T>(params, i, dtype, p + negLr * d);
    }
  });
}

// ---- Lion (Chen et al. 2023, Algorithm 1; lion-pytorch) -----------------------------------------
// p *= 1 - lr wd; c = b1 m + (1 - b1) g; p -= lr sign(c); m = b2 m + (1 - b2) g.
void Lion(BP_PARAMS_LionStep) {
  constexpr std::string_view op = "Optimizer.Lion";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "m", m, count);
    CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckUnitParam(op, "config.Beta1", config.Beta1, /*closed=*/false);
    CheckUnitParam(op, "config.Beta2", config.Beta2, /*closed=*/false);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    ++*step;
    T* mom = static_cast<T*>(m);
    const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2;
    const T decay = T(1.0 - lr * static_cast<double>(config.WeightDecay));
    const T beta1 = T(b1), beta2 = T(b2), oneMinusB1 = T(1.0 - b1), oneMinusB2 = T(1.0 - b2);
    const T negLr = T(-lr);
    for (int64_t i = 0; i < count; ++i) {
      const T g = Load<T>(grads, i, dtype);
      T p = Load<T>(params, i, dtype) * decay;
      const T c = mom[i] * beta1 + oneMinusB1 * g;
      p = p + negLr * Sign(c);
      mom[i] = mom[i] * beta2 + oneMinusB2 * g;
      Store<T>(params, i, dtype, p);
    }
  });
}

// ---- RMSprop (torch.optim.RMSprop, 1.13 _single_tensor_rmsprop) ---------------------------------
// g += wd p; v = a v + (1 - a) g^2; centered: ga = a ga + (1 - a) g, avg = sqrt(v - ga^2) + eps,
// else avg = sqrt(v) + eps; momentum: b = mu b + g / avg, p -= lr b; else p -= lr g / avg.
// gradAvg is used (and must be non-null) only when centered, momentumBuffer only when momentum > 0.
void RMSprop(BP_PARAMS_RMSpropStep) {
  constexpr std::string_view op = "Optimizer.RMSprop";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "squareAvg", squareAvg, count);
    const bool useMomentum = config.Momentum > 0.0f;
    if (config.Centered) CheckPointer(op, "gradAvg", gradAvg, count);
    if (useMomentum) CheckPointer(op, "momentumBuffer", momentumBuffer, count);
    CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckUnitParam(op, "config.Alpha", config.Alpha, /*closed=*/false);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    CheckNonNegativeParam(op, "config.Momentum", config.Momentum);
    ++*step;
    T* sq = static_cast<T*>(squareAvg);
    T* ga = static_cast<T*>(gradAvg);
    T* buf = static_cast<T*>(momentumBuffer);
    const double a = config.Alpha, wd = config.WeightDecay;
    const T alpha = T(a), oneMinusAlpha = T(1.0 - a), weightDecay = T(wd), eps = T(config.Eps);
    const T mu = T(config.Momentum), negLr = T(-static_cast<double>(config.LearningRate));
    for (int64_t i = 0; i < count; ++i) {
      T p = Load<T>(params, i, dtype);
      T g = Load<T>(grads, i, dtype);
      if (wd != 0.0) g = g + weightDecay * p;
      sq[i] = sq[i] * alpha + oneMinusAlpha * g * g;
      T avg;
      if (config.Centered) {
        ga[i] = ga[i] * alpha + oneMinusAlpha * g;
        avg = std::sqrt(sq[i] - ga[i] * ga[i]);
      } else {
        avg = std::sqrt(sq[i]);
      }
      avg = avg + eps;
      if (useMomentum) {
        buf[i] = buf[i] * mu + g / avg;
        p = p + negLr * buf[i];
      } else {
        p = p + negLr * g / avg;
      }
      Store<T>(params, i, dtype, p);
    }
  });
}

// ---- Hebbian (the spec's template rule) ---------------------------------------------------------
// p += lr signal; then, when MaxNorm > 0 and ||p|| > MaxNorm, p *= MaxNorm / ||p|| (norm of the
// updated values in the compute type, float64 accumulation, before the one rounding on store).
void Hebbian(BP_PARAMS_HebbianStep) {
  constexpr std::string_view op = "Optimizer.Hebbian";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "signal", signal, count);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.MaxNorm", config.MaxNorm);
    const T lr = T(config.LearningRate);
    std::vector<T> p(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      p[static_cast<size_t>(i)] = Load<T>(params, i, dtype) + lr * Load<T>(signal, i, dtype);
    }
    const double maxNorm = config.MaxNorm;
    if (maxNorm > 0.0) {
      const double norm = Norm(p);
      if (norm > maxNorm) {
        const T scale = T(maxNorm / norm);
        for (T& x : p) x = x * scale;
      }
    }
    Narrow(p, params, dtype);
  });
}

// ---- LARS (You et al. 2017, Algorithm 1) --------------------------------------------------------
// local_lr = eta ||p|| / (||g|| + wd ||p|| + eps), or 1 when ||p|| or ||g|| is 0 (norms of the
// stored vectors in float64); v = mu v + lr local_lr (g + wd p); p -= v. The buffer starts at 0.
void LARS(BP_PARAMS_LARSStep) {
  constexpr std::string_view op = "Optimizer.LARS";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "momentumBuffer", momentumBuffer, count);
    CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.Eta", config.Eta);
    CheckNonNegativeParam(op, "config.Momentum", config.Momentum);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    ++*step;
    T* buf = static_cast<T*>(momentumBuffer);
    const double wd = config.WeightDecay;
    const double pNorm = StoredNorm(params, count, dtype);
    const double gNorm = StoredNorm(grads, count, dtype);
    const double localLr = (pNorm == 0.0 || gNorm == 0.0)
                               ? 1.0
                               : static_cast<double>(config.Eta) * pNorm /
                                     (gNorm + wd * pNorm + static_cast<double>(config.Eps));
    const T scale = T(static_cast<double>(config.LearningRate) * localLr);
    const T mu = T(config.Momentum), weightDecay = T(wd);
    for (int64_t i = 0; i < count; ++i) {
      const T p = Load<T>(params, i, dtype);
      T d = Load<T>(grads, i, dtype);
      if (wd != 0.0) d = d + weightDecay * p;
      buf[i] = buf[i] * mu + scale * d;
      Store<T>(params, i, dtype, p - buf[i]);
    }
  });
}

// ---- Adagrad (torch.optim.Adagrad, 1.13 _single_tensor_adagrad) ---------------------------------
// g += wd p; clr = lr / (1 + (t - 1) lr_decay); G += g^2; p -= clr g / (sqrt(G) + eps). The
// caller initialises G (torch's initial_accumulator_value).
void Adagrad(BP_PARAMS_AdagradStep) {
  constexpr std::string_view op = "Optimizer.Adagrad";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "sum", sum, count);
    CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.LrDecay", config.LrDecay);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    const int64_t t = ++*step;
    T* acc = static_cast<T*>(sum);
    const double wd = config.WeightDecay;
    const double clr = static_cast<double>(config.LearningRate) /
                       (1.0 + static_cast<double>(t - 1) * static_cast<double>(config.LrDecay));
    const T negClr = T(-clr), weightDecay = T(wd), eps = T(config.Eps);
    for (int64_t i = 0; i < count; ++i) {
      T p = Load<T>(params, i, dtype);
      T g = Load<T>(grads, i, dtype);
      if (wd != 0.0) g = g + weightDecay * p;
      acc[i] = acc[i] + g * g;
      const T stddev = std::sqrt(acc[i]) + eps;
      Store<T>(params, i, dtype, p + negClr * g / stddev);
    }
  });
}

// ---- Adadelta (torch.optim.Adadelta, 1.13 _single_tensor_adadelta) ------------------------------
// g += wd p; E[g2] = rho E[g2] + (1 - rho) g^2; delta = sqrt(E[dx2] + eps) / sqrt(E[g2] + eps) g;
// E[dx2] = rho E[dx2] + (1 - rho) delta^2; p -= lr delta.
void Adadelta(BP_PARAMS_AdadeltaStep) {
  constexpr std::string_view op = "Optimizer.Adadelta";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "squareAvg", squareAvg, count);
    CheckPointer(op, "accDelta", accDelta, count);
    CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckUnitParam(op, "config.Rho", config.Rho, /*closed=*/false);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    ++*step;
    T* sq = static_cast<T*>(squareAvg);
    T* acc = static_cast<T*>(accDelta);
    const double r = config.Rho, wd = config.WeightDecay;
    const T rho = T(r), oneMinusRho = T(1.0 - r), eps = T(config.Eps), weightDecay = T(wd);
    const T negLr = T(-static_cast<double>(config.LearningRate));
    for (int64_t i = 0; i < count; ++i) {
      const T p = Load<T>(params, i, dtype);
      T g = Load<T>(grads, i, dtype);
      if (wd != 0.0) g = g + weightDecay * p;
      sq[i] = sq[i] * rho + oneMinusRho * g * g;
      const T stddev = std::sqrt(sq[i] + eps);
      const T delta = std::sqrt(acc[i] + eps) / stddev * g;
      acc[i] = acc[i] * rho + oneMinusRho * delta * delta;
      Store<T>(params, i, dtype, p + negLr * delta);
    }
  });
}

// ---- L-BFGS: torch.optim.LBFGS's inner iteration (no line search) ------------------------------
// On each call, with g the gradient at the current p:
//   if max|g| <= ToleranceGrad: return (nothing changes, step included);
//   k = ++step; k == 1: empty the history, d = -g;
//   else: y = g - prevGrads, s = lastStep; if y's > 1e-10 the pair goes into the ring (oldest
//   evicted, rho = 1 / y's); d = -H g by the two-loop recursion (first loop newest -> oldest,
//   second oldest -> newest), H0 = s'y / y'y of the newest stored pair (1 when none);
//   prevGrads = g; t = k == 1 ? min(1, 1 / |g|_1) lr : lr; lastStep = t d;
//   if g'd > -ToleranceChange: return (no descent; torch breaks before the update); p += lastStep.
// Dot products accumulate in f64; vectors are T.
void LBFGS(BP_PARAMS_LBFGSStep) {
  constexpr std::string_view op = "Optimizer.LBFGS";
  WithComputeType(op, "dtype", dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckVectors(op, params, "grads", grads, count);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    if (std::isnan(config.ToleranceGrad)) {
      ThrowInvalidArgument(op, "config.ToleranceGrad", "not NaN", "nan");
    }
    if (std::isnan(config.ToleranceChange)) {
      ThrowInvalidArgument(op, "config.ToleranceChange", "not NaN", "nan");
    }
    const int64_t m = config.HistorySize;
    CheckPositive(op, "config.HistorySize", m);
    int64_t historyCount = 0;
    if (__builtin_mul_overflow(m, count, &historyCount)) {
      ThrowInvalidArgument(op, "config.HistorySize",
                           "small enough that HistorySize * count fits in int64",
                           fmt::format("{} x {}", m, count));
    }
    CheckPointer(op, "state.lastStep", state.lastStep, count);
    CheckPointer(op, "state.prevGrads", state.prevGrads, count);
    CheckPointer(op, "state.sHistory", state.sHistory, historyCount);
    CheckPointer(op, "state.yHistory", state.yHistory, historyCount);
    CheckNotNull(op, "state.rhoHistory", state.rhoHistory);
    CheckNotNull(op, "state.head", state.head);
    CheckNotNull(op, "state.stored", state.stored);
    CheckStep(op, "state.step", state.step);
    if (*state.head < 0 || *state.head >= m) {
      ThrowInvalidArgument(op, "state.head", fmt::format("in [0, {}) (config.HistorySize)", m),
                           std::to_string(*state.head));
    }
    if (*state.stored < 0 || *state.stored > m) {
      ThrowInvalidArgument(op, "state.stored", fmt::format("in [0, {}] (config.HistorySize)", m),
                           std::to_string(*state.stored));
    }
    if (*state.step == 0 && *state.stored != 0) {
      ThrowInvalidArgument(op, "state.stored", "0 before the first step (state.step = 0)",
                           std::to_string(*state.stored));
    }

    const size_t n = static_cast<size_t>(count);
    const std::vector<T> p = Widen<T>(params, count, dtype);
    const std::vector<T> g = Widen<T>(grads, count, dtype);
    double maxAbs = 0.0;  // torch: flat_grad.abs().max() <= tolerance_grad (NaN never converges)
    bool nan = false;
    for (size_t i = 0; i < n; ++i) {
      nan = nan || std::isnan(g[i]);
      maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(g[i])));
    }
    if (n > 0 && !nan && maxAbs <= config.ToleranceGrad) return;

    std::vector<T> y(n), q(n);
    std::vector<double> alpha(static_cast<size_t>(m));
    T* lastStep = static_cast<T*>(state.lastStep);
    T* prevGrads = static_cast<T*>(state.prevGrads);
    T* sHistory = static_cast<T*>(state.sHistory);
    T* yHistory = static_cast<T*>(state.yHistory);
    auto slotS = [&](int64_t slot) { return sHistory + slot * count; };
    auto slotY = [&](int64_t slot) { return yHistory + slot * count; };

    const int64_t k = ++*state.step;
    if (k == 1) {
      *state.head = 0;
      *state.stored = 0;
    } else {
      for (size_t i = 0; i < n; ++i) y[i] = g[i] - prevGrads[i];
      const double ys = Dot(y.data(), lastStep, count);
      if (ys > 1e-10) {  // curvature condition; otherwise the pair is skipped
        const int64_t slot = *state.head;
        std::copy(lastStep, lastStep + n, slotS(slot));
        std::copy(y.begin(), y.end(), slotY(slot));
        state.rhoHistory[slot] = 1.0 / ys;
        *state.head = (slot + 1) % m;
        *state.stored = std::min(*state.stored + 1, m);
      }
    }

    // Two-loop recursion on q = -g; j = 0 is the newest pair.
    for (size_t i = 0; i < n; ++i) q[i] = -g[i];
    const int64_t stored = *state.stored;
    auto slotOf = [&](int64_t j) { return (*state.head - 1 - j + m) % m; };
    for (int64_t j = 0; j < stored; ++j) {
      const int64_t slot = slotOf(j);
      alpha[static_cast<size_t>(j)] = Dot(slotS(slot), q.data(), count) * state.rhoHistory[slot];
      const T a = T(alpha[static_cast<size_t>(j)]);
      const T* yj = slotY(slot);
      for (size_t i = 0; i < n; ++i) q[i] = q[i] - a * yj[i];
    }
    double hDiag = 1.0;
    if (stored > 0) {
      const int64_t newest = slotOf(0);
      hDiag = Dot(slotY(newest), slotS(newest), count) / Dot(slotY(newest), slotY(newest), count);
    }
    std::vector<T>& d = q;
    for (size_t i = 0; i < n; ++i) d[i] = q[i] * T(hDiag);
    for (int64_t j = stored - 1; j >= 0; --j) {
      const int64_t slot = slotOf(j);
      const double beta = Dot(slotY(slot), d.data(), count) * state.rhoHistory[slot];
      const T c = T(alpha[static_cast<size_t>(j)] - beta);
      const T* sj = slotS(slot);
      for (size_t i = 0; i < n; ++i) d[i] = d[i] + c * sj[i];
    }

    double t = config.LearningRate;
    if (k == 1) {
      double l1 = 0.0;
      for (size_t i = 0; i < n; ++i) l1 += std::fabs(static_cast<double>(g[i]));
      t = std::min(1.0, 1.0 / l1) * config.LearningRate;
    }
    const double gtd = Dot(g.data(), d.data(), count);
    const T tt = T(t);
    for (size_t i = 0; i < n; ++i) {
      prevGrads[i] = g[i];
      lastStep[i] = d[i] * tt;
    }
    if (gtd > -config.ToleranceChange) return;  // not a descent direction: no update
    for (size_t i = 0; i < n; ++i) {
      Store<T>(params, static_cast<int64_t>(i), dtype, p[i] + lastStep[i]);
    }
  });
}

}  // namespace
}  // namespace optimizer

void RegisterOptimizer(KernelTable& table) {
  table.Optimizer_Adam = &optimizer::Adam;
  table.Optimizer_AdamW = &optimizer::AdamW;
  table.Optimizer_Adamax = &optimizer::Adamax;
  table.Optimizer_SGD = &optimizer::SGD;
  table.Optimizer_Lion = &optimizer::Lion;
  table.Optimizer_RMSprop = &optimizer::RMSprop;
  table.Optimizer_Hebbian = &optimizer::Hebbian;
  table.Optimizer_LARS = &optimizer::LARS;
  table.Optimizer_LAMB = &optimizer::LAMB;
  table.Optimizer_Adagrad = &optimizer::Adagrad;
  table.Optimizer_Adadelta = &optimizer::Adadelta;
  table.Optimizer_LBFGS = &optimizer::LBFGS;
}

}  // namespace backplane::cpu::ref
