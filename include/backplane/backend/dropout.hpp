// Backend surface Dropout (1 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct DropoutConfig {
  float Rate = 0.1f;
  uint64_t Seed = 0xC0FFEE;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_DROPOUT(X) \
  X(Dropout, Dropout, Dropout, kFloatDTypes)

class DropoutSurface {
 public:
  virtual ~DropoutSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_DROPOUT(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
