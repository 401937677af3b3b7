// Winograd F(2x2, 3x3) (convolution_winograd.hpp), per block of tile rows: the input transform
// B^T d B, vectorised over tile columns (deinterleaving loads of the padded rows), into
// V[16][inC][tiles]; the 16 products M[xi] = U[xi] V[xi] on the convolution register tile; the
// output transform A^T m A plus bias, stored interleaved into the output rows.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/convolution_winograd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convolution_tile-inl.h"
#include "cpu/kernels/convolution_winograd.hpp"

#ifndef BACKPLANE_CPU_KERNELS_CONVOLUTION_WINOGRAD_SHARED_
#define BACKPLANE_CPU_KERNELS_CONVOLUTION_WINOGRAD_SHARED_
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace backplane::cpu::simd::winograd {
// Bytes of V and M one block of tile rows should use (half of L2).
constexpr size_t kBlockBytes = 512 * 1024;

// A per-thread buffer of at least n floats (reused across calls, so large blocks are not
// page-faulted in on every call).
inline float* Scratch(size_t n) {
  thread_local hwy::AlignedFreeUniquePtr<float[]> buffer;
  thread_local size_t capacity = 0;
  if (capacity < n) {
    buffer = hwy::AllocateAligned<float>(n);
    capacity = n;
  }
  return buffer.get();
}
}  // namespace backplane::cpu::simd::winograd
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// V[xi][ci][r * tilesW + tw] for tile rows th0 + r, r < rows; ldv is V's row length, plane the
// distance between its xi planes. Each row's last vector runs into the next row's columns, which
// that row then overwrites; past the last row, ldv must leave room for one vector.
void InputTransform(const WinogradShape& s, const float* padded, size_t th0, size_t rows, size_t ldv,
                    size_t plane, float* HWY_RESTRICT v) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t pitch = s.rowPitch;
  for (size_t ci = 0; ci < s.inC; ++ci) {
    for (size_t r = 0; r < rows; ++r) {
      const float* src = padded + ci * s.channelPitch + 2 * (th0 + r) * pitch;
      float* dst = v + ci * ldv + r * s.tilesW;
      for (size_t tw = 0; tw < s.tilesW; tw += lanes) {
        const float* p = src + 2 * tw;
        hn::Vec<decltype(d)> x0, x1, x2, x3, u00, u01, u02, u03, u10, u11, u12, u13;
        hn::Vec<decltype(d)> u20, u21, u22, u23, u30, u31, u32, u33;
        // Row i of the tile: x0..x3 = d[i][0..3]; u[i][j] = (d B)[i][j].
        hn::LoadInterleaved2(d, p, x0, x1);
        hn::LoadInterleaved2(d, p + 2, x2, x3);
        u00 = hn::Sub(x0, x2), u01 = hn::Add(x1, x2), u02 = hn::Sub(x2, x1), u03 = hn::Sub(x1, x3);
        hn::LoadInterleaved2(d, p + pitch, x0, x1);
        hn::LoadInterleaved2(d, p + pitch + 2, x2, x3);
        u10 = hn::Sub(x0, x2), u11 = hn::Add(x1, x2), u12 = hn::Sub(x2, x1), u13 = hn::Sub(x1, x3);
        hn::LoadInterleaved2(d, p + 2 * pitch, x0, x1);
        hn::LoadInterleaved2(d, p + 2 * pitch + 2, x2, x3);
        u20 = hn::Sub(x0, x2), u21 = hn::Add(x1, x2), u22 = hn::Sub(x2, x1), u23 = hn::Sub(x1, x3);
        hn::LoadInterleaved2(d, p + 3 * pitch, x0, x1);
        hn::LoadInterleaved2(d, p + 3 * pitch + 2, x2, x3);
        u30 = hn::Sub(x0, x2), u31 = hn::Add(x1, x2), u32 = hn::Sub(x2, x1), u33 = hn::Sub(x1, x3);
        float* o = dst + tw;
        hn::StoreU(hn::Sub(u00, u20), d, o + 0 * plane);
        hn::StoreU(hn::Sub(u01, u21), d, o + 1 * plane);
        hn::StoreU(hn::Sub(u02, u22), d, o + 2 * plane);
        hn::StoreU(hn::Sub(u03, u23), d, o + 3 * plane);
        hn::StoreU(hn::Add(u10, u20), d, o + 4 * plane);
        hn::StoreU(hn::Add(u11, u21), d, o + 5 * plane);
        hn::StoreU(hn::Add(u12, u22), d, o + 6 * plane);
        hn::StoreU(hn::Add(u13, u23), d, o + 7 * plane);
        hn::StoreU(hn::Sub(u20, u10), d, o + 8 * plane);
        hn::StoreU(hn::Sub(u21, u11), d, o + 9 * plane);
        hn::StoreU(hn::Sub(u22, u12), d, o + 10 * plane);
        hn::StoreU(hn::Sub(u23, u13), d, o + 11 * plane);
        hn::StoreU(hn::Sub(u10, u30), d, o + 12 * plane);
        hn::StoreU(hn::Sub(u11, u31), d, o + 13 * plane);
        hn::StoreU(hn::Sub(u12, u32), d, o + 14 * plane);
        hn::StoreU(hn::Sub(u13, u33), d, o + 15 * plane);
      }
    }
  }
}

// y rows of tile rows th0 + r from M[xi][co][r * tilesW + tw] (ldm: M's row length, plane: the
// distance between its xi planes).
void OutputTransform(const WinogradShape& s, const float* HWY_RESTRICT m, const float* bias, size_t th0,
                     size_t rows, size_t ldm, size_t plane, float* y) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t outV = s.outH * s.outW;
  HWY_ALIGN float tail[2 * hn::MaxLanes(d)];
  for (size_t co = 0; co < s.outC; ++co) {
    const auto b = hn::Set(d, bias ? bias[co] : 0.0f);
    float* yc = y + co * outV;
    for (size_t r = 0; r < rows; ++r) {
      const size_t oh = 2 * (th0 + r);
      const float* src = m + co * ldm + r * s.tilesW;
      for (size_t tw = 0; tw < s.tilesW; tw += lanes) {
        const float* q = src + tw;
        // s[a][j] = (A^T m)[a][j], then Y[a][0] = s[a][0] + s[a][1] + s[a][2], Y[a][1] = s[a][1] - s[a][2] - s[a][3].
        const auto m0 = hn::LoadU(d, q + 0 * plane), m1 = hn::LoadU(d, q + 1 * plane);
        const auto m2 = hn::LoadU(d, q + 2 * plane), m3 = hn::LoadU(d, q + 3 * plane);
        const auto m4 = hn::LoadU(d, q + 4 * plane), m5 = hn::LoadU(d, q + 5 * plane);
        const auto m6 = hn::LoadU(d, q + 6 * plane), m7 = hn::LoadU(d, q + 7 * plane);
        const auto m8 = hn::LoadU(d, q + 8 * plane), m9 = hn::LoadU(d, q + 9 * plane);
        const auto m10 = hn::LoadU(d, q + 10 * plane), m11 = hn::LoadU(d, q + 11 * plane);
        const auto m12 = hn::LoadU(d, q + 12 * plane), m13 = hn::LoadU(d, q + 13 * plane);
        const auto m14 = hn::LoadU(d, q + 14 * plane), m15 = hn::LoadU(d, q + 15 * plane);
        const auto s00 = hn::Add(hn::Add(m0, m4), m8), s01 = hn::Add(hn::Add(m1, m5), m9);
        const auto s02 = hn::Add(hn::Add(m2, m6), m10), s03 = hn::Add(hn::Add(m3, m7), m11);
        const auto s10 = hn::Sub(hn::Sub(m4, m8), m12), s11 = hn::Sub(hn::Sub(m5, m9), m13);
        const auto s12 = hn::Sub(hn::Sub(m6, m10), m14), s13 = hn::Sub(hn::Sub(m7, m11), m15);
        const auto y00 = hn::Add(hn::Add(hn::Add(s00, s01), s02), b);
        const auto y01 = hn::Add(hn::Sub(hn::Sub(s01, s02), s03), b);
        const auto y10 = hn::Add(hn::Add(hn::Add(s10, s11), s12), b);
        const auto y11 = hn::Add(hn::Sub(hn::Sub(s11, s12), s13), b);
        const size_t col = 2 * tw, valid = std::min(2 * lanes, s.outW - col);
        for (size_t a = 0; a < 2 && oh + a < s.outH; ++a) {
          float* out = yc + (oh + a) * s.outW + col;
          const auto e = a == 0 ? y00 : y10, o = a == 0 ? y01 : y11;
          if (valid == 2 * lanes) {
            hn::StoreInterleaved2(e, o, d, out);
          } else {
            hn::StoreInterleaved2(e, o, d, tail);
            std::memcpy(out, tail, valid * sizeof(float));
          }
        }
      }
    }
  }
}

void WinogradRowsF32(const WinogradShape& s, const float* padded, const float* packedU, const float* bias, float* y,
                     size_t th0, size_t th1) {
  if (th0 >= th1 || s.outC == 0 || s.tilesW == 0) return;
  const hn::ScalableTag<float> d;
  const size_t nr = 2 * hn::Lanes(d);
  const size_t lanes = hn::Lanes(d);
  const size_t perRow = 16 * (s.inC + s.outC) * s.tilesW * sizeof(float);
  const size_t blockRows = std::clamp<size_t>(winograd::kBlockBytes / perRow, 1, th1 - th0);
  const size_t ldv = (blockRows * s.tilesW + lanes + nr - 1) / nr * nr;  // whole register tiles, one vector spare
  const size_t coTiles = (s.outC + kDirectConvTileRows - 1) / kDirectConvTileRows;
  // The 16 planes of V and M are staggered by a few cache lines more than their size, so that the
  // transforms' 16 streams do not fall into one L1 set (plane sizes are often multiples of 4 KiB).
  const size_t stagger = std::max<size_t>(16, hn::Lanes(d));
  const size_t vPlane = s.inC * ldv + stagger, mPlane = s.outC * ldv + stagger;
  float* v = winograd::Scratch(16 * (vPlane + mPlane));
  float* m = v + 16 * vPlane;
  // Offsets of the k rows (input channels) of V[xi], as the register tile takes them.
  thread_local std::vector<size_t> offsets;
  offsets.resize(s.inC);
  for (size_t ci = 0; ci < s.inC; ++ci) offsets[ci] = ci * ldv;
  // Columns past the block's tiles take part in the products; keep them finite.
  auto zeroColumns = [&](size_t from) {
    for (size_t xi = 0; xi < 16; ++xi)
      for (size_t ci = 0; ci < s.inC; ++ci) std::fill(v + xi * vPlane + ci * ldv + from, v + xi * vPlane + ci * ldv + ldv, 0.0f);
  };
  zeroColumns(blockRows * s.tilesW);
  for (size_t t0 = th0; t0 < th1; t0 += blockRows) {
    const size_t rows = std::min(blockRows, th1 - t0), width = (rows * s.tilesW + nr - 1) / nr * nr;
    if (rows < blockRows) zeroColumns(rows * s.tilesW);  // a shorter last block
    InputTransform(s, padded, t0, rows, ldv, vPlane, v);
    for (size_t xi = 0; xi < 16; ++xi) {
      const float* vx = v + xi * vPlane;
      float* mx = m + xi * mPlane;
      const float* ux = packedU + xi * coTiles * s.inC * kDirectConvTileRows;
      for (size_t p0 = 0; p0 < width; p0 += nr) {
        const direct_conv::Segment seg[1] = {{0, nr, p0}};
        for (size_t t = 0; t < coTiles; ++t) {
          const size_t co = t * kDirectConvTileRows;
          DirectTile<float>(vx + p0, offsets.data(), ux + t * s.inC * kDirectConvTileRows, s.inC, nullptr, true,
                            mx + co * ldv, ldv, std::min(kDirectConvTileRows, s.outC - co), seg, 1, true);
        }
      }
    }
    OutputTransform(s, m, bias, t0, rows, ldv, mPlane, y);
  }
}

float CopyMaxAbsF32(const float* x, float* copy, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const auto inf = hn::Set(d, HUGE_VALF);
  auto top = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {  // NaN and +-Inf count as +Inf
    const auto v = hn::LoadU(d, x + i);
    if (copy) hn::StoreU(v, d, copy + i);
    top = hn::Max(top, hn::IfThenElse(hn::IsFinite(v), hn::Abs(v), inf));
  }
  float result = hn::GetLane(hn::MaxOfLanes(d, top));
  for (; i < n; ++i) {
    if (copy) copy[i] = x[i];
    result = std::isfinite(x[i]) ? std::max(result, std::fabs(x[i])) : HUGE_VALF;
  }
  return result;
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace backplane::cpu::simd {
HWY_EXPORT(WinogradRowsF32);
HWY_EXPORT(CopyMaxAbsF32);

void WinogradRowsF32(const WinogradShape& s, const float* padded, const float* packedU, const float* bias, float* y,
                     size_t th0, size_t th1) {
  HWY_DYNAMIC_DISPATCH(WinogradRowsF32)(s, padded, packedU, bias, y, th0, th1);
}

float CopyMaxAbsF32(const float* x, float* copy, size_t n) { return HWY_DYNAMIC_DISPATCH(CopyMaxAbsF32)(x, copy, n); }

size_t WinogradPackedCount(size_t outC, size_t inC) {
  return 16 * ((outC + kDirectConvTileRows - 1) / kDirectConvTileRows) * inC * kDirectConvTileRows;
}

void WinogradPackWeights(const float* w, size_t outC, size_t inC, float* packed) {
  const size_t coTiles = (outC + kDirectConvTileRows - 1) / kDirectConvTileRows;
  std::fill(packed, packed + WinogradPackedCount(outC, inC), 0.0f);
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (size_t co = 0; co < outC; ++co) {
    for (size_t ci = 0; ci < inC; ++ci) {
      const float* g = w + (co * inC + ci) * 9;
      double gt[4][3];  // G g
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
          gt[i][j] = G[i][0] * g[0 * 3 + j] + G[i][1] * g[1 * 3 + j] + G[i][2] * g[2 * 3 + j];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const double u = gt[i][0] * G[j][0] + gt[i][1] * G[j][1] + gt[i][2] * G[j][2];  // (G g G^T)[i][j]
          const size_t xi = static_cast<size_t>(4 * i + j), t = co / kDirectConvTileRows;
          packed[((xi * coTiles + t) * inC + ci) * kDirectConvTileRows + co % kDirectConvTileRows] =
              static_cast<float>(u);
        }
      }
    }
  }
}
}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
