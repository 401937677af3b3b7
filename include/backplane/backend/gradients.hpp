// Backend surface Gradients (6 methods, added by Backplane): exact derivatives of the mean losses
// with respect to the predictions (torch.autograd of the torch loss with reduction='mean').
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_GRADIENTS(X)                                \
  X(Gradients, MSEGrad, MSEGrad, kFloatDTypes)                 \
  X(Gradients, MAEGrad, MSEGrad, kFloatDTypes)                 \
  X(Gradients, HuberGrad, MSEGrad, kFloatDTypes)               \
  X(Gradients, BinaryCrossEntropyGrad, MSEGrad, kFloatDTypes)  \
  X(Gradients, KLDivergenceGrad, MSEGrad, kFloatDTypes)        \
  X(Gradients, CrossEntropyGrad, CrossEntropyGrad, kFloatDTypes)

class GradientsSurface {
 public:
  virtual ~GradientsSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_GRADIENTS(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
