// Backend surface Spatial: sampling of NCHW feature maps at computed positions (ONNX GridSample,
// RoiAlign). Flat row-major buffers. Semantics: docs/semantics/spatial.md.
//   GridSample: out[n, c, h, w] = in[n, c] sampled at grid[n, h, w] = (x, y) in [-1, 1]
//               (torch.nn.functional.grid_sample on 4-D input): bilinear, nearest (half to
//               even) or bicubic (A = -0.75); zeros, border or reflection padding; align_corners.
//   RoiAlign:   out[r, c, ph, pw] = the mean (or max) of bilinear samples of in[batch[r], c] on a
//               sampling grid over bin (ph, pw) of roi r = (x1, y1, x2, y2) (ONNX RoiAlign-16).
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

enum class GridSampleMode : int32_t { Bilinear, Nearest, Bicubic };
enum class GridSamplePadding : int32_t { Zeros, Border, Reflection };
struct GridSampleConfig {
  GridSampleMode Mode = GridSampleMode::Bilinear;
  GridSamplePadding Padding = GridSamplePadding::Zeros;
  bool AlignCorners = false;
};

enum class RoiAlignMode : int32_t { Avg, Max };
struct RoiAlignConfig {
  RoiAlignMode Mode = RoiAlignMode::Avg;
  int64_t OutputHeight = 1;
  int64_t OutputWidth = 1;
  int64_t SamplingRatio = 0;  // 0: adaptive, ceil(roi size / output size) per ROI
  double SpatialScale = 1.0;
  bool HalfPixel = true;  // false: output_half_pixel (no -0.5 shift, ROIs at least 1x1)
};

// in [batch, channels, inH, inW]; grid [batch, outH, outW, 2] (x, y); out [batch, channels, outH, outW].
#define BP_RET_GridSample void
#define BP_PARAMS_GridSample                                                                       \
  const GridSampleConfig &config, const void *in, const void *grid, void *out, int64_t batch,    \
      int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype
#define BP_ARGS_GridSample config, in, grid, out, batch, channels, inH, inW, outH, outW, dtype

// in [batch, channels, height, width]; rois [numRois, 4] (x1, y1, x2, y2) of in's dtype;
// batchIndices [numRois] in [0, batch); out [numRois, channels, OutputHeight, OutputWidth].
#define BP_RET_RoiAlign void
#define BP_PARAMS_RoiAlign                                                                         \
  const RoiAlignConfig &config, const void *in, const void *rois, const int64_t *batchIndices,    \
      void *out, int64_t batch, int64_t channels, int64_t height, int64_t width, int64_t numRois, \
      DType dtype
#define BP_ARGS_RoiAlign config, in, rois, batchIndices, out, batch, channels, height, width, numRois, dtype

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_SPATIAL(X)                        \
  X(Spatial, GridSample, GridSample, kFloatDTypes)   \
  X(Spatial, RoiAlign, RoiAlign, kFloatDTypes)

class SpatialSurface {
 public:
  virtual ~SpatialSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_SPATIAL(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
