// Backend surface MathExt (14 methods, added by Backplane): math helpers the IR needs.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/backend/normalization.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_MATH_EXT(X)                                   \
  X(MathExt, Sin, Unary, kFloatDTypes)                           \
  X(MathExt, Cos, Unary, kFloatDTypes)                           \
  X(MathExt, Sign, Unary, kFloatDTypes)                          \
  X(MathExt, Outer, Outer, kFloatDTypes)                         \
  X(MathExt, LogSumExp, RowReduce, kFloatDTypes)                 \
  X(MathExt, InvSqrtDimScale, InvSqrtDimScale, kFloatDTypes)   \
  X(MathExt, RMSNormEps, RMSNormEps, kFloatDTypes)               \
  X(MathExt, LayerNormEps, LayerNormEps, kFloatDTypes)           \
  X(MathExt, GroupNormEps, GroupNormEps, kFloatDTypes)           \
  X(MathExt, InstanceNormEps, InstanceNormEps, kFloatDTypes)     \
  X(MathExt, BatchNormEvalEps, BatchNormEvalEps, kFloatDTypes)   \
  X(MathExt, MatmulTransB, MatmulTransB, kFloatDTypes)           \
  X(MathExt, SoftmaxRows, RowMap, kFloatDTypes)                   \
  X(MathExt, LogSoftmaxRows, RowMap, kFloatDTypes)

class MathExtSurface {
 public:
  virtual ~MathExtSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_MATH_EXT(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
