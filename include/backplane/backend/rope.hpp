// Backend surface RoPE (2 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct RoPEConfig {
  double BaseFreq = 10000.0;
  int64_t StartPosition = 0;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_ROPE(X) \
  X(RoPE, RoPE, RoPE, kFloatDTypes) \
  X(RoPE, RoPEPairs, RoPEPairs, kFloatDTypes)

class RoPESurface {
 public:
  virtual ~RoPESurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_ROPE(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
