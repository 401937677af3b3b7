// Backend surface Pool (4 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct PoolConfig {
  int64_t KernelH = 2, KernelW = 2;
  int64_t StrideH = 2, StrideW = 2;
  int64_t PaddingH = 0, PaddingW = 0;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_POOL(X) \
  X(Pool, MaxPool2D, Pool2D, kFloatDTypes) \
  X(Pool, AvgPool2D, Pool2D, kFloatDTypes) \
  X(Pool, AdaptiveMaxPool2D, AdaptivePool2D, kFloatDTypes) \
  X(Pool, AdaptiveAvgPool2D, AdaptivePool2D, kFloatDTypes)

class PoolSurface {
 public:
  virtual ~PoolSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_POOL(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
