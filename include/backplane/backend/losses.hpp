// Backend surface Losses (6 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_LOSSES(X) \
  X(Losses, MSE, Loss, kFloatDTypes) \
  X(Losses, MAE, Loss, kFloatDTypes) \
  X(Losses, Huber, Loss, kFloatDTypes) \
  X(Losses, BinaryCrossEntropy, Loss, kFloatDTypes) \
  X(Losses, KLDivergence, Loss, kFloatDTypes) \
  X(Losses, CrossEntropy, CrossEntropy, kFloatDTypes)

class LossesSurface {
 public:
  virtual ~LossesSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_LOSSES(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
