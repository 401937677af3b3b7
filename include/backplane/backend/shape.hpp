// Backend surface Shape (9 methods, added by Backplane): layout changes that move elements of any
// dtype. Semantics: docs/semantics/shape.md.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// Nearest-neighbour scale factors as torch.nn.functional.interpolate(scale_factor=...): source
// index = floor(dst_index / scale), clamped. A factor <= 0 means "derive from the sizes"
// (scale = out / in, as interpolate(size=...)).
struct UpsampleConfig {
  double ScaleH = 0.0;
  double ScaleW = 0.0;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_SHAPE(X)                          \
  X(Shape, Reshape, Reshape, kAnyDType)              \
  X(Shape, Transpose, Transpose, kAnyDType)          \
  X(Shape, Concat, Concat, kAnyDType)                \
  X(Shape, Split, Split, kAnyDType)                  \
  X(Shape, UpsampleNearest2D, UpsampleNearest2D, kAnyDType) \
  X(Shape, ViewAsHeads, HeadsLayout, kAnyDType)      \
  X(Shape, MergeHeads, HeadsLayout, kAnyDType)       \
  X(Shape, LastToken, LastToken, kAnyDType)          \
  X(Shape, Slice, Slice, kAnyDType)

class ShapeSurface {
 public:
  virtual ~ShapeSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_SHAPE(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
