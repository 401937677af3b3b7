// The register tile of the stride-1 and Winograd convolutions: 6 output channels x 2 vectors of
// consecutive columns, C (+)= W B over k, where row k of B starts at b + offsets[k] (unaligned).
// Included per target (inside HWY_NAMESPACE) by the files that use it.
#ifndef BACKPLANE_CPU_KERNELS_CONVOLUTION_TILE_SHARED_
#define BACKPLANE_CPU_KERNELS_CONVOLUTION_TILE_SHARED_
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cpu/kernels/convolution_direct.hpp"

namespace backplane::cpu::simd::direct_conv {
// A run of valid lanes of a tile: lanes [lane, lane + count) go to y offset dst (per channel).
struct Segment {
  size_t lane, count, dst;
};
}  // namespace backplane::cpu::simd::direct_conv
#endif

#if defined(BACKPLANE_CPU_KERNELS_CONVOLUTION_TILE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef BACKPLANE_CPU_KERNELS_CONVOLUTION_TILE_INL_H_
#undef BACKPLANE_CPU_KERNELS_CONVOLUTION_TILE_INL_H_
#else
#define BACKPLANE_CPU_KERNELS_CONVOLUTION_TILE_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One tile: rows output channels starting at y (channel stride outV) over the tile's segments.
// first: start from bias (or 0), else from what y holds (the previous k blocks).
template <class T>
HWY_NOINLINE void DirectTile(const T* HWY_RESTRICT b, const size_t* HWY_RESTRICT offsets,
                             const T* HWY_RESTRICT w, size_t kc, const T* bias, bool first, T* y,
                             size_t outV, size_t rows, const direct_conv::Segment* segments, size_t segmentCount,
                             bool whole) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d), nr = 2 * lanes;
  HWY_ALIGN T tile[kDirectConvTileRows * 2 * hn::MaxLanes(d)];
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  auto c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  if (first) {
    if (bias) {
      c00 = c01 = hn::Set(d, bias[0]);
      if (rows > 1) c10 = c11 = hn::Set(d, bias[1]);
      if (rows > 2) c20 = c21 = hn::Set(d, bias[2]);
      if (rows > 3) c30 = c31 = hn::Set(d, bias[3]);
      if (rows > 4) c40 = c41 = hn::Set(d, bias[4]);
      if (rows > 5) c50 = c51 = hn::Set(d, bias[5]);
    }
  } else {
    // The partial sums y holds, into the tile (lanes no segment covers, and missing rows, are 0).
    if (!whole || rows < kDirectConvTileRows) std::fill(tile, tile + kDirectConvTileRows * nr, T(0));
    for (size_t r = 0; r < rows; ++r) {
      for (size_t s = 0; s < segmentCount; ++s) {
        const direct_conv::Segment& g = segments[s];
        std::memcpy(tile + r * nr + g.lane, y + r * outV + g.dst, g.count * sizeof(T));
      }
    }
    c00 = hn::Load(d, tile + 0 * nr), c01 = hn::Load(d, tile + 0 * nr + lanes);
    c10 = hn::Load(d, tile + 1 * nr), c11 = hn::Load(d, tile + 1 * nr + lanes);
    c20 = hn::Load(d, tile + 2 * nr), c21 = hn::Load(d, tile + 2 * nr + lanes);
    c30 = hn::Load(d, tile + 3 * nr), c31 = hn::Load(d, tile + 3 * nr + lanes);
    c40 = hn::Load(d, tile + 4 * nr), c41 = hn::Load(d, tile + 4 * nr + lanes);
    c50 = hn::Load(d, tile + 5 * nr), c51 = hn::Load(d, tile + 5 * nr + lanes);
  }
  for (size_t k = 0; k < kc; ++k) {
    const T* src = b + offsets[k];
    const auto b0 = hn::LoadU(d, src);
    const auto b1 = hn::LoadU(d, src + lanes);
    const T* a = w + k * kDirectConvTileRows;
    auto av = hn::Set(d, a[0]);
    c00 = hn::MulAdd(av, b0, c00);
    c01 = hn::MulAdd(av, b1, c01);
    av = hn::Set(d, a[1]);
    c10 = hn::MulAdd(av, b0, c10);
    c11 = hn::MulAdd(av, b1, c11);
    av = hn::Set(d, a[2]);
    c20 = hn::MulAdd(av, b0, c20);
    c21 = hn::MulAdd(av, b1, c21);
    av = hn::Set(d, a[3]);
    c30 = hn::MulAdd(av, b0, c30);
    c31 = hn::MulAdd(av, b1, c31);
    av = hn::Set(d, a[4]);
    c40 = hn::MulAdd(av, b0, c40);
    c41 = hn::MulAdd(av, b1, c41);
    av = hn::Set(d, a[5]);
    c50 = hn::MulAdd(av, b0, c50);
    c51 = hn::MulAdd(av, b1, c51);
  }
  if (whole && rows == kDirectConvTileRows) {
    T* out = y + segments[0].dst;
    hn::StoreU(c00, d, out + 0 * outV);
    hn::StoreU(c01, d, out + 0 * outV + lanes);
    hn::StoreU(c10, d, out + 1 * outV);
    hn::StoreU(c11, d, out + 1 * outV + lanes);
    hn::StoreU(c20, d, out + 2 * outV);
    hn::StoreU(c21, d, out + 2 * outV + lanes);
    hn::StoreU(c30, d, out + 3 * outV);
    hn::StoreU(c31, d, out + 3 * outV + lanes);
    hn::StoreU(c40, d, out + 4 * outV);
    hn::StoreU(c41, d, out + 4 * outV + lanes);
    hn::StoreU(c50, d, out + 5 * outV);
    hn::StoreU(c51, d, out + 5 * outV + lanes);
    return;
  }
  hn::Store(c00, d, tile + 0 * nr);
  hn::Store(c01, d, tile + 0 * nr + lanes);
  hn::Store(c10, d, tile + 1 * nr);
  hn::Store(c11, d, tile + 1 * nr + lanes);
  hn::Store(c20, d, tile + 2 * nr);
  hn::Store(c21, d, tile + 2 * nr + lanes);
  hn::Store(c30, d, tile + 3 * nr);
  hn::Store(c31, d, tile + 3 * nr + lanes);
  hn::Store(c40, d, tile + 4 * nr);
  hn::Store(c41, d, tile + 4 * nr + lanes);
  hn::Store(c50, d, tile + 5 * nr);
  hn::Store(c51, d, tile + 5 * nr + lanes);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t s = 0; s < segmentCount; ++s) {
      const direct_conv::Segment& g = segments[s];
      std::memcpy(y + r * outV + g.dst, tile + r * nr + g.lane, g.count * sizeof(T));
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
