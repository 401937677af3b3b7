// Backend surface PointProcess (1 method, added by Backplane): simulation of point processes.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// Univariate Hawkes process with exponential kernel: lambda(t) = Mu + Alpha sum exp(-Beta (t - t_i)).
struct HawkesSimulateConfig {
  float Mu = 1.0f;
  float Alpha = 0.5f;
  float Beta = 1.0f;
  float Horizon = 10.0f;  // simulate on [0, Horizon)
  int64_t MaxEvents = 0;  // stop after this many events; 0 = no maximum
  uint64_t Seed = 0;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_POINT_PROCESS(X) \
  X(PointProcess, HawkesSimulate, HawkesSimulate, kFloatDTypes)

class PointProcessSurface {
 public:
  virtual ~PointProcessSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_POINT_PROCESS(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
