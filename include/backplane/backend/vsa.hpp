// Backend surface VSA (5 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct VSAConfig {
  int64_t Shift = 1;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_VSA(X) \
  X(VSA, Bind, BinaryOut, kFloatDTypes) \
  X(VSA, Bundle, BinaryOut, kFloatDTypes) \
  X(VSA, Permute, VSAPermute, kFloatDTypes) \
  X(VSA, InversePermute, VSAPermute, kFloatDTypes) \
  X(VSA, Similarity, Similarity, kFloatDTypes)

class VSASurface {
 public:
  virtual ~VSASurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_VSA(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
