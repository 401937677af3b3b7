// Backend surface Convolution (4 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct Conv1DConfig {
  int64_t Stride = 1, Padding = 0, Dilation = 1;
};
struct Conv2DConfig {
  int64_t StrideH = 1, StrideW = 1;
  int64_t PaddingH = 0, PaddingW = 0;
  int64_t DilationH = 1, DilationW = 1;
};
struct Conv3DConfig {
  int64_t StrideD = 1, StrideH = 1, StrideW = 1;
  int64_t PaddingD = 0, PaddingH = 0, PaddingW = 0;
  int64_t DilationD = 1, DilationH = 1, DilationW = 1;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_CONVOLUTION(X) \
  X(Convolution, Conv2D, Conv2D, kFloatDTypes) \
  X(Convolution, Conv1D, Conv1D, kFloatDTypes) \
  X(Convolution, Conv3D, Conv3D, kFloatDTypes) \
  X(Convolution, ConvTranspose2D, Conv2D, kFloatDTypes)

class ConvolutionSurface {
 public:
  virtual ~ConvolutionSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_CONVOLUTION(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
