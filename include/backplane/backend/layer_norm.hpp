// Backend surface LayerNorm (2 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_LAYER_NORM(X) \
  X(LayerNorm, LayerNorm, LayerNorm, kFloatDTypes) \
  X(LayerNorm, RMSNorm, RMSNorm, kFloatDTypes)

class LayerNormSurface {
 public:
  virtual ~LayerNormSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_LAYER_NORM(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
