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
  float LearningRate = 1e-3f;
  float Beta1 = 0.9f;
  float Beta2 = 0.999f;
  float Eps = 1e-8f;
  float WeightDecay = 0.0f;
};

struct SGDConfig {
  float LearningRate = 1e-2f;
  float Momentum = 0.0f;
  float Dampening = 0.0f;
  float WeightDecay = 0.0f;
  bool Nesterov = false;
};

struct LionConfig {
  float LearningRate = 1e-4f;
  float Beta1 = 0.9f;
  float Beta2 = 0.99f;
  float WeightDecay = 0.0f;
};

struct RMSpropConfig {
  float LearningRate = 1e-2f;
  float Alpha = 0.99f;
  float Eps = 1e-8f;
  float WeightDecay = 0.0f;
  float Momentum = 0.0f;
  bool Centered = false;
};

// p <- p + LearningRate * signal; then, when MaxNorm > 0, p is rescaled to norm MaxNorm if longer.
struct HebbianConfig {
  float LearningRate = 1e-3f;
  float MaxNorm = 0.0f;
};

struct LARSConfig {
  float LearningRate = 1e-2f;
  float Eta = 1e-3f;  // trust coefficient
  float Momentum = 0.9f;
  float WeightDecay = 0.0f;
  float Eps = 1e-8f;
};

struct AdagradConfig {
  float LearningRate = 1e-2f;
  float LrDecay = 0.0f;
  float WeightDecay = 0.0f;
  float Eps = 1e-10f;
};

struct AdadeltaConfig {
  float LearningRate = 1.0f;
  float Rho = 0.9f;
  float Eps = 1e-6f;
  float WeightDecay = 0.0f;
};

struct LBFGSConfig {
  float LearningRate = 1.0f;
  int64_t HistorySize = 10;
};

// L-BFGS state, owned by the caller and updated in place. Vectors have `count` elements in the
// state dtype (f32, or f64 for f64 params); sHistory and yHistory hold HistorySize vectors each.
struct LBFGSState {
  void* prevParams = nullptr;
  void* prevGrads = nullptr;
  void* sHistory = nullptr;
  void* yHistory = nullptr;
  double* rhoHistory = nullptr;  // HistorySize entries
  int64_t* head = nullptr;       // next slot to write
  int64_t* stored = nullptr;     // pairs stored, <= HistorySize
  int64_t* step = nullptr;       // calls so far
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
