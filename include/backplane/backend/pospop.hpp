// Backend surface PosPop (5 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_POSPOP(X) \
  X(PosPop, Count8, PosPop8, DTypeSet{DType::Uint8}) \
  X(PosPop, Count16, PosPop16, DTypeSet{DType::Uint16}) \
  X(PosPop, Count32, PosPop32, DTypeSet{DType::Uint32}) \
  X(PosPop, Count64, PosPop64, DTypeSet{DType::Uint64}) \
  X(PosPop, CountString, PosPopString, DTypeSet{DType::Uint8})

class PosPopSurface {
 public:
  virtual ~PosPopSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_POSPOP(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
