// Backend surface Hawkes (5 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_HAWKES(X) \
  X(Hawkes, HawkesIntensity, HawkesIntensity, kFloatDTypes) \
  X(Hawkes, HawkesKernelMatrix, HawkesKernelMatrix, kFloatDTypes) \
  X(Hawkes, HawkesLogLikelihood, HawkesLogLikelihood, kFloatDTypes) \
  X(Hawkes, MarkovMutualInformation, MarkovMutualInformation, kFloatDTypes) \
  X(Hawkes, MarkovBlanketPartition, MarkovBlanketPartition, kFloatDTypes)

class HawkesSurface {
 public:
  virtual ~HawkesSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_HAWKES(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
