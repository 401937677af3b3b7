// Backend surface Embedding (2 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_EMBEDDING(X) \
  X(Embedding, Lookup, EmbeddingLookup, kFloatDTypes) \
  X(Embedding, Bag, EmbeddingBag, kFloatDTypes)

class EmbeddingSurface {
 public:
  virtual ~EmbeddingSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_EMBEDDING(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
