// The stride-1 convolution tile (convolution_direct.hpp): 6 output channels x 2 vectors of
// consecutive output positions, accumulated in registers over blocks of whole input channels,
// each tap one unaligned load from the padded image. Taps come in blocks of kBlock (the caller's
// choice); blocks after the first add to what y holds, so each output still sums k in order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/convolution_direct.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convolution_direct.hpp"
#include "cpu/kernels/convolution_tile-inl.h"

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using direct_conv::Segment;

template <class T>
void DirectConvRows(const DirectConvShape& s, const T* padded, const T* packedW, const T* bias, T* y,
                    size_t od, size_t oh0, size_t oh1) {
  if (oh0 >= oh1 || s.outW == 0 || s.outC == 0) return;
  const hn::ScalableTag<T> d;
  const size_t nr = 2 * hn::Lanes(d);
  const size_t Wp = s.rowPitch;
  const T* base = padded + od * s.planePitch;
  T* yPlane = y + od * s.outH * s.outW;
  const size_t pBegin = oh0 * Wp, pEnd = (oh1 - 1) * Wp + s.outW;
  const size_t coTiles = (s.outC + kDirectConvTileRows - 1) / kDirectConvTileRows;
  const size_t kBlock = std::max<size_t>(s.kBlock, 1);
  Segment segments[2 * hn::MaxLanes(d) + 1];
  for (size_t p0 = pBegin; p0 < pEnd; p0 += nr) {
    size_t count = 0;
    for (size_t j = 0; j < nr && p0 + j < pEnd;) {
      const size_t p = p0 + j, row = p / Wp, col = p % Wp;
      if (col >= s.outW) {
        j += Wp - col;
        continue;
      }
      const size_t n = std::min({s.outW - col, nr - j, pEnd - p});
      segments[count++] = {j, n, row * s.outW + col};
      j += n;
    }
    const bool whole = count == 1 && segments[0].count == nr;
    for (size_t k0 = 0; k0 < s.K; k0 += kBlock) {
      const size_t kc = std::min(kBlock, s.K - k0);
      for (size_t t = 0; t < coTiles; ++t) {
        const size_t co = t * kDirectConvTileRows;
        DirectTile<T>(base + p0, s.offsets + k0, packedW + (t * s.K + k0) * kDirectConvTileRows, kc,
                      bias ? bias + co : nullptr, k0 == 0, yPlane + co * s.outV, s.outV,
                      std::min(kDirectConvTileRows, s.outC - co), segments, count, whole);
      }
    }
  }
}

void DirectConvRowsF32(const DirectConvShape& s, const float* padded, const float* packedW, const float* bias,
                       float* y, size_t od, size_t oh0, size_t oh1) {
  DirectConvRows<float>(s, padded, packedW, bias, y, od, oh0, oh1);
}
void DirectConvRowsF64(const DirectConvShape& s, const double* padded, const double* packedW, const double* bias,
                       double* y, size_t od, size_t oh0, size_t oh1) {
  DirectConvRows<double>(s, padded, packedW, bias, y, od, oh0, oh1);
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace backplane::cpu::simd {
HWY_EXPORT(DirectConvRowsF32);
HWY_EXPORT(DirectConvRowsF64);

void DirectConvRowsF32(const DirectConvShape& s, const float* padded, const float* packedW, const float* bias,
                       float* y, size_t od, size_t oh0, size_t oh1) {
  HWY_DYNAMIC_DISPATCH(DirectConvRowsF32)(s, padded, packedW, bias, y, od, oh0, oh1);
}
void DirectConvRowsF64(const DirectConvShape& s, const double* padded, const double* packedW, const double* bias,
                       double* y, size_t od, size_t oh0, size_t oh1) {
  HWY_DYNAMIC_DISPATCH(DirectConvRowsF64)(s, padded, packedW, bias, y, od, oh0, oh1);
}
}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
