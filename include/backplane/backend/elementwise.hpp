// Backend surface Elementwise (11 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_ELEMENTWISE(X) \
  X(Elementwise, Add, Binary, kFloatDTypes) \
  X(Elementwise, Sub, Binary, kFloatDTypes) \
  X(Elementwise, Mul, Binary, kFloatDTypes) \
  X(Elementwise, Div, Binary, kFloatDTypes) \
  X(Elementwise, Max, Binary, kFloatDTypes) \
  X(Elementwise, Min, Binary, kFloatDTypes) \
  X(Elementwise, Abs, Unary, kFloatDTypes) \
  X(Elementwise, Neg, Unary, kFloatDTypes) \
  X(Elementwise, Sqrt, Unary, kFloatDTypes) \
  X(Elementwise, ReLU, Unary, kFloatDTypes) \
  X(Elementwise, Axpy, Axpy, kFloatDTypes)

class ElementwiseSurface {
 public:
  virtual ~ElementwiseSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_ELEMENTWISE(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
