// Backend surface Sampling (3 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct SamplingConfig {
  float Temperature = 1.0f;  // 0 means greedy
  int64_t TopK = 0;          // 0: the whole vocabulary; > vocabSize is clamped; < 0 throws
  float TopP = 1.0f;         // nucleus mass in (0, 1]
  uint64_t Seed = 0xFEEDFACE;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_SAMPLING(X) \
  X(Sampling, GreedySample, GreedySample, kFloatDTypes) \
  X(Sampling, TopKSample, ConfiguredSample, kFloatDTypes) \
  X(Sampling, TopPSample, ConfiguredSample, kFloatDTypes)

class SamplingSurface {
 public:
  virtual ~SamplingSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_SAMPLING(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
