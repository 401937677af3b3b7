// Backend surface Quant (1 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct QuantConfig {
  float Scale = 1.0f;
  int8_t ZeroPoint = 0;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_QUANT(X) \
  X(Quant, Quant, Quant, DTypeSet{DType::Int8})

class QuantSurface {
 public:
  virtual ~QuantSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_QUANT(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
