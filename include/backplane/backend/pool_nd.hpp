// Backend surface PoolNd: max and average pooling over 1 to 3 spatial axes with the options
// exported graphs and torch.nn use: per-axis kernel, stride, dilation, begin/end padding, ceil
// mode, count_include_pad, and the argmax indices of a max pool. Layout [planes, spatial...]
// (planes = N * C). Semantics: docs/semantics/pool_nd.md.
//   MaxPoolNd: y[p, o] = max of x[p, o * stride + t * dilation - padBegin] over the window taps t
//              inside the input (padding never wins); a NaN tap or a strictly larger one replaces
//              the running max, so the first of equal values wins. Optional int64 indices of the
//              winning tap: flat over the plane (torch) or over the whole input (ONNX), row- or
//              column-major.
//   AvgPoolNd: y[p, o] = sum of the window's in-input taps / their count, or / the count of taps
//              inside the padded extent [-padBegin, in + padEnd) under CountIncludePad.
// Output sizes: floor((in + padBegin + padEnd - dilation * (kernel - 1) - 1) / stride) + 1 (ceil
// under CeilMode, dropping a last window that would start in the end padding, as torch).
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

inline constexpr int kPoolNdMaxRank = 3;

struct PoolNdConfig {
  int32_t Rank = 2;  // spatial axes, 1 to 3
  int64_t In[kPoolNdMaxRank] = {1, 1, 1};
  int64_t Out[kPoolNdMaxRank] = {1, 1, 1};
  int64_t Kernel[kPoolNdMaxRank] = {1, 1, 1};
  int64_t Stride[kPoolNdMaxRank] = {1, 1, 1};
  int64_t Dilation[kPoolNdMaxRank] = {1, 1, 1};
  int64_t PadBegin[kPoolNdMaxRank] = {0, 0, 0};
  int64_t PadEnd[kPoolNdMaxRank] = {0, 0, 0};
  bool CeilMode = false;
  bool CountIncludePad = false;    // AvgPoolNd
  bool IndicesOverTensor = false;  // MaxPoolNd: plane * planeSize + offset (ONNX), else the offset (torch)
  bool ColumnMajorIndices = false; // MaxPoolNd: offsets with the first spatial axis fastest (ONNX storage_order 1)
};

// floor((in + padBegin + padEnd - dilation (kernel - 1) - 1) / stride) + 1, or ceil under ceil mode
// without a last window that starts in the end padding (torch's rule); -1 when the padded input is
// shorter than the dilated window.
inline int64_t PoolNdExtent(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
                            int64_t padEnd, bool ceilMode) {
  const int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0) return -1;
  int64_t out = (ceilMode ? span + stride - 1 : span) / stride + 1;
  if (ceilMode && (out - 1) * stride >= in + padBegin) --out;
  return out;
}

#define BP_RET_PoolNd void
#define BP_PARAMS_PoolNd \
  const PoolNdConfig &config, const void *in, void *out, int64_t *indices, int64_t planes, DType dtype
#define BP_ARGS_PoolNd config, in, out, indices, planes, dtype

// The dtypes of MaxPoolNd: every real dtype with an order (floats and integers).
inline constexpr DTypeSet kPoolNdMaxDTypes{DType::Float64, DType::Float32, DType::Float16, DType::BFloat16,
                                           DType::Int64,   DType::Int32,   DType::Int16,   DType::Int8,
                                           DType::Uint64,  DType::Uint32,  DType::Uint16,  DType::Uint8};

// X(Surface, Method, Family, accepted DTypes). AvgPoolNd takes no indices (nullptr).
#define BP_SURFACE_POOL_ND(X)                         \
  X(PoolNd, MaxPoolNd, PoolNd, kPoolNdMaxDTypes) \
  X(PoolNd, AvgPoolNd, PoolNd, kFloatDTypes)

class PoolNdSurface {
 public:
  virtual ~PoolNdSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_POOL_ND(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
