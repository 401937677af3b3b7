// Backend surface Dequant (2 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct DequantConfig {
  float Scale = 1.0f;
  int8_t ZeroPoint = 0;
};
using DequantInt8Config = DequantConfig;
using DequantInt4Config = DequantConfig;

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_DEQUANT(X) \
  X(Dequant, Dequant, Dequant, DTypeSet{DType::Int8}) \
  X(Dequant, Dequant4, Dequant, DTypeSet{DType::Int4})

class DequantSurface {
 public:
  virtual ~DequantSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_DEQUANT(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
