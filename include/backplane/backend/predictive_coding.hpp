// Backend surface PredictiveCoding (4 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct PredictiveCodingConfig {
  float LearningRate = 0.01f;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_PREDICTIVE_CODING(X) \
  X(PredictiveCoding, Prediction, Prediction, kFloatDTypes) \
  X(PredictiveCoding, PredictionError, BinaryOut, kFloatDTypes) \
  X(PredictiveCoding, UpdateRepresentation, PredictiveUpdate, kFloatDTypes) \
  X(PredictiveCoding, UpdateWeights, PredictiveUpdate, kFloatDTypes)

class PredictiveCodingSurface {
 public:
  virtual ~PredictiveCodingSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_PREDICTIVE_CODING(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
