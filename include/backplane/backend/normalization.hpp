// Backend surface Normalization (3 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct GroupNormConfig {
  int64_t Groups = 32;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_NORMALIZATION(X) \
  X(Normalization, GroupNorm, GroupNorm, kFloatDTypes) \
  X(Normalization, InstanceNorm, InstanceNorm, kFloatDTypes) \
  X(Normalization, BatchNormEval, BatchNormEval, kFloatDTypes)

class NormalizationSurface {
 public:
  virtual ~NormalizationSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_NORMALIZATION(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
