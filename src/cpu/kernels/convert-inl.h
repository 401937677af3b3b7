// Per-target helpers for kernels: f16/bf16 storage widened to f32 lanes and narrowed back with
// round-to-nearest-even, identical to the scalar conversions in backplane/convert.hpp.
// Include inside HWY_NAMESPACE code after hwy/highway.h (re-included once per target).
#if defined(BACKPLANE_CPU_KERNELS_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
#undef BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
#else
#define BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
#endif

#include <hwy/highway.h>

#include "backplane/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Converts n <= kBlock elements of 16-bit storage to f32 and back (scalar, exact; used on the
// block buffers of the f16/bf16 paths).
inline void WidenBlock(const uint16_t* src, float* dst, size_t n, bool bf16) {
  if (bf16) {
    for (size_t i = 0; i < n; ++i) dst[i] = BF16ToF32(src[i]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = F16ToF32(src[i]);
  }
}

inline void NarrowBlock(const float* src, uint16_t* dst, size_t n, bool bf16) {
  if (bf16) {
    const hn::ScalableTag<float> df;
    const hn::RebindToUnsigned<decltype(df)> du;
    const size_t lanes = hn::Lanes(df);
    size_t i = 0;
    // Vector round-to-nearest-even on the f32 bits; NaN becomes the quiet NaN with the same top
    // bits, exactly as F32ToBF16.
    HWY_ALIGN uint32_t tmp[hn::MaxLanes(du)];
    for (; i + lanes <= n; i += lanes) {
      const auto v = hn::LoadU(df, src + i);
      const auto bits = hn::BitCast(du, v);
      const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1));
      const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7FFF), lsb)));
      const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40));
      const auto out = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
      hn::Store(out, du, tmp);
      for (size_t k = 0; k < lanes; ++k) dst[i + k] = static_cast<uint16_t>(tmp[k]);
    }
    for (; i < n; ++i) dst[i] = F32ToBF16(src[i]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = F32ToF16(src[i]);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
