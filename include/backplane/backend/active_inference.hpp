// Backend surface ActiveInference (4 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_ACTIVE_INFERENCE(X) \
  X(ActiveInference, FreeEnergy, FreeEnergy, kFloatDTypes) \
  X(ActiveInference, ExpectedFreeEnergy, ExpectedFreeEnergy, kFloatDTypes) \
  X(ActiveInference, BeliefUpdate, BinaryOut, kFloatDTypes) \
  X(ActiveInference, PrecisionWeight, BinaryOut, kFloatDTypes)

class ActiveInferenceSurface {
 public:
  virtual ~ActiveInferenceSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_ACTIVE_INFERENCE(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
