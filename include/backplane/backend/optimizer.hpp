// Backend surface Optimizer (12 methods, added by Backplane): one parameter-update step each,
// every hyper-parameter an argument. Semantics: docs/semantics/optimizer.md.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// Adam, AdamW, Adamax and LAMB. Adam and Adamax add WeightDecay * p to the gradient (L2, as
// torch.optim); AdamW and LAMB decay decoupled from the gradient.
struct AdamConfig {
  double LearningRate = 1e-3;
  double Beta1 = 0.9;
  double Beta2 = 0.999;
  double Eps = 1e-8;
  double WeightDecay = 0.0;
};

struct SGDConfig {
  double LearningRate = 1e-2;
  double Momentum = 0.0;
  double Dampening = 0.0;
  double WeightDecay = 0.0;
  bool Nesterov = false;
};

struct LionConfig {
  double LearningRate = 1e-4;
  double Beta1 = 0.9;
  double Beta2 = 0.99;
  double WeightDecay = 0.0;
};

struct RMSpropConfig {
  double LearningRate = 1e-2;
  double Alpha = 0.99;
  double Eps = 1e-8;
  double WeightDecay = 0.0;
  double Momentum = 0.0;
  bool Centered = false;
};

// p <- p + LearningRate * signal; then, when MaxNorm > 0, p is rescaled to norm MaxNorm if longer.
struct HebbianConfig {
  double LearningRate = 1e-3;
  double MaxNorm = 0.0;
};

struct LARSConfig {
  double LearningRate = 1e-2;
  double Eta = 1e-3;  // trust coefficient
  double Momentum = 0.9;
  double WeightDecay = 0.0;
  double Eps = 1e-8;
};

struct AdagradConfig {
  double LearningRate = 1e-2;
  double LrDecay = 0.0;
  double WeightDecay = 0.0;
  double Eps = 1e-10;
};

struct AdadeltaConfig {
  double LearningRate = 1.0;
  double Rho = 0.9;
  double Eps = 1e-6;
  double WeightDecay = 0.0;
};

// torch.optim.LBFGS(lr, max_iter, history_size, tolerance_grad, tolerance_change,
// line_search_fn=None): one call is one of its inner iterations, with the gradient at the current
// params (a torch step with max_iter = k is k calls). See docs/semantics/optimizer.md.
struct LBFGSConfig {
  double LearningRate = 1.0;
  int64_t HistorySize = 10;
  double ToleranceGrad = 1e-7;    // max |g| <= this: converged, nothing changes
  double ToleranceChange = 1e-9;  // g.d > -this: no descent, the step is not applied
};

// L-BFGS state, owned by the caller and updated in place. Vectors have `count` elements in the
// state dtype (f32, or f64 for f64 params); sHistory and yHistory hold HistorySize vectors each.
struct LBFGSState {
  void* lastStep = nullptr;  // t d of the previous call (torch's s for the next pair)
  void* prevGrads = nullptr;
  void* sHistory = nullptr;
  void* yHistory = nullptr;
  double* rhoHistory = nullptr;  // HistorySize entries
  int64_t* head = nullptr;       // next slot to write
  int64_t* stored = nullptr;     // pairs stored, <= HistorySize
  int64_t* step = nullptr;       // iterations so far (calls that did not stop at ToleranceGrad)
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_OPTIMIZER(X)                        \
  X(Optimizer, Adam, AdamStep, kFloatDTypes)           \
  X(Optimizer, AdamW, AdamStep, kFloatDTypes)          \
  X(Optimizer, Adamax, AdamStep, kFloatDTypes)         \
  X(Optimizer, SGD, SGDStep, kFloatDTypes)             \
  X(Optimizer, Lion, LionStep, kFloatDTypes)           \
  X(Optimizer, RMSprop, RMSpropStep, kFloatDTypes)     \
  X(Optimizer, Hebbian, HebbianStep, kFloatDTypes)     \
  X(Optimizer, LARS, LARSStep, kFloatDTypes)           \
  X(Optimizer, LAMB, AdamStep, kFloatDTypes)           \
  X(Optimizer, Adagrad, AdagradStep, kFloatDTypes)     \
  X(Optimizer, Adadelta, AdadeltaStep, kFloatDTypes)   \
  X(Optimizer, LBFGS, LBFGSStep, kFloatDTypes)

class OptimizerSurface {
 public:
  virtual ~OptimizerSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_OPTIMIZER(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
