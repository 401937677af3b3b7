// Backend surface Causal (10 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_CAUSAL(X) \
  X(Causal, Cholesky, Cholesky, kFloatDTypes) \
  X(Causal, BackdoorAdjustment, BackdoorAdjustment, kFloatDTypes) \
  X(Causal, FrontdoorAdjustment, FrontdoorAdjustment, kFloatDTypes) \
  X(Causal, DoIntervene, DoIntervene, kFloatDTypes) \
  X(Causal, CATE, BinaryOut, kFloatDTypes) \
  X(Causal, Counterfactual, Counterfactual, kFloatDTypes) \
  X(Causal, IVEstimate, IVEstimate, kFloatDTypes) \
  X(Causal, DAGMarkovFactorization, DAGMarkovFactorization, kFloatDTypes) \
  X(Causal, MarkovFlowActive, MarkovFlow, kFloatDTypes) \
  X(Causal, MarkovFlowInternal, MarkovFlow, kFloatDTypes)

class CausalSurface {
 public:
  virtual ~CausalSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_CAUSAL(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
