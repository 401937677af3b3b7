// Backend surface Masking (3 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_MASKING(X) \
  X(Masking, ApplyMask, ApplyMask, kFloatDTypes) \
  X(Masking, CausalMask, CausalMask, kFloatDTypes) \
  X(Masking, ALiBiBias, ALiBiBias, kFloatDTypes)

class MaskingSurface {
 public:
  virtual ~MaskingSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_MASKING(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
