// Backend surface Physics (9 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_PHYSICS(X) \
  X(Physics, Laplacian, Laplacian, kFloatDTypes) \
  X(Physics, Laplacian4, Stencil1D, kFloatDTypes) \
  X(Physics, Grad1D, Stencil1D, kFloatDTypes) \
  X(Physics, Divergence1D, Stencil1D, kFloatDTypes) \
  X(Physics, FFT1D, FFT, kFloatDTypes) \
  X(Physics, IFFT1D, FFT, kFloatDTypes) \
  X(Physics, QuantumPotential, Stencil1D, kFloatDTypes) \
  X(Physics, BohmianVelocity, Stencil1D, kFloatDTypes) \
  X(Physics, MadelungContinuity, MadelungContinuity, kFloatDTypes)

class PhysicsSurface {
 public:
  virtual ~PhysicsSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_PHYSICS(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
