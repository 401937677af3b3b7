// Backend surface Reduction (5 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_REDUCTION(X) \
  X(Reduction, Sum, Reduce, kFloatDTypes) \
  X(Reduction, Prod, Reduce, kFloatDTypes) \
  X(Reduction, ReduceMin, Reduce, kFloatDTypes) \
  X(Reduction, ReduceMax, Reduce, kFloatDTypes) \
  X(Reduction, L1Norm, Reduce, kFloatDTypes)

class ReductionSurface {
 public:
  virtual ~ReductionSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_REDUCTION(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
