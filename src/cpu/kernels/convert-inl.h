// Per-target helpers for kernels: f16/bf16 storage widened to f32 lanes and narrowed back with
// round-to-nearest-even, identical to the scalar conversions in backplane/convert.hpp; f32 <-> f64
// lanes. Scalar (not per-target) helpers are in storage.hpp.
// Include inside HWY_NAMESPACE code after hwy/highway.h (re-included once per target).
#if defined(BACKPLANE_CPU_KERNELS_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
#undef BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
#else
#define BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
#endif

#include <hwy/highway.h>

#include <type_traits>

#include "backplane/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes(df) f16 (kBF16 false) or bf16 values at p widened exactly to f32 lanes, NaN quieted with
// its payload kept, as backplane/convert.hpp. f16 uses F16C on AVX2/AVX-512 (vcvtph2ps: the same
// bits, checked for all 65536 inputs); elsewhere integer operations, as Highway 1.0.3's software
// f16 PromoteTo (SSE4/SSSE3/SCALAR) turns Inf/NaN into finite values.
template <bool kBF16, class DF>
HWY_INLINE hn::Vec<DF> LoadWidenU16(DF df, const uint16_t* p) {
#if (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)
  if constexpr (!kBF16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  }
#endif
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> dh;
  const auto h = hn::PromoteTo(du, hn::LoadU(dh, p));
  if constexpr (kBF16) {
    const auto bits = hn::ShiftLeft<16>(h);
    const auto nan = hn::RebindMask(du, hn::IsNaN(hn::BitCast(df, bits)));
    return hn::BitCast(df, hn::Or(bits, hn::And(hn::VecFromMask(du, nan), hn::Set(du, 0x00400000u))));
  } else {
    const auto em = hn::And(h, hn::Set(du, 0x7FFFu));
    const auto sign = hn::ShiftLeft<16>(hn::Xor(h, em));
    const auto shifted = hn::ShiftLeft<13>(em);
    const auto normal = hn::Add(shifted, hn::Set(du, 0x38000000u));  // exponent bias 15 -> 127
    const auto subnormal =
        hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, em)), hn::Set(df, 1.0f / 16777216.0f)));
    const auto emi = hn::BitCast(di, em);
    const auto is_nan = hn::RebindMask(du, hn::Gt(emi, hn::Set(di, 0x7C00)));
    const auto inf_nan = hn::Or(hn::Add(shifted, hn::Set(du, 0x70000000u)),
                                hn::And(hn::VecFromMask(du, is_nan), hn::Set(du, 0x00400000u)));
    const auto is_sub = hn::RebindMask(du, hn::Lt(emi, hn::Set(di, 0x0400)));
    const auto is_top = hn::RebindMask(du, hn::Gt(emi, hn::Set(di, 0x7BFF)));
    const auto bits = hn::IfThenElse(is_sub, subnormal, hn::IfThenElse(is_top, inf_nan, normal));
    return hn::BitCast(df, hn::Or(sign, bits));
  }
}

// Lanes(d) f32 or f64 elements at p as f64 lanes (exact).
template <class T, class D>
HWY_INLINE hn::Vec<D> LoadF64(D d, const T* p) {
  if constexpr (std::is_same_v<T, double>) {
    return hn::LoadU(d, p);
  } else {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<T, D>(), p));
  }
}

// f64 lanes -> f32 lanes rounded to nearest even, Inf and overflow included. Highway 1.0.3's
// DemoteTo on HWY_SCALAR and HWY_EMU128 saturates +-Inf and overflow to +-FLT_MAX, so those
// targets convert lane by lane.
template <class DF, class V>
HWY_INLINE hn::Vec<DF> DemoteF32(DF df, V v) {
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
  HWY_ALIGN double wide[hn::MaxLanes(df)];
  HWY_ALIGN float narrow[hn::MaxLanes(df)];
  hn::Store(v, hn::Rebind<double, DF>(), wide);
  for (size_t i = 0; i < hn::Lanes(df); ++i) narrow[i] = static_cast<float>(wide[i]);
  return hn::Load(df, narrow);
#else
  return hn::DemoteTo(df, v);
#endif
}

// dst[i] = src[i] (f16 or bf16 storage) widened exactly to f32, as F16ToF32 / BF16ToF32.
inline void WidenBlock(const uint16_t* src, float* dst, size_t n, bool bf16) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  if (bf16) {
    for (; i + lanes <= n; i += lanes) hn::StoreU(LoadWidenU16<true>(df, src + i), df, dst + i);
    for (; i < n; ++i) dst[i] = BF16ToF32(src[i]);
  } else {
    for (; i + lanes <= n; i += lanes) hn::StoreU(LoadWidenU16<false>(df, src + i), df, dst + i);
    for (; i < n; ++i) dst[i] = F16ToF32(src[i]);
  }
}

// dst[i] = src[i] rounded to f16/bf16 to nearest even, exactly as F32ToF16 / F32ToBF16. f16 uses
// F16C on AVX2/AVX-512 (vcvtps2ph: the same bits, checked for all 2^32 inputs), else scalar; bf16
// rounds the f32 bits in vector lanes.
inline void NarrowBlock(const float* src, uint16_t* dst, size_t n, bool bf16) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  if (bf16) {
    const hn::RebindToUnsigned<decltype(df)> du;
    // NaN becomes the quiet NaN with the same top bits, exactly as F32ToBF16.
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
#if (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    auto* h = reinterpret_cast<hwy::float16_t*>(dst);
    for (; i + lanes <= n; i += lanes) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, src + i)), dh, h + i);
#endif
    for (; i < n; ++i) dst[i] = F32ToF16(src[i]);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // BACKPLANE_CPU_KERNELS_CONVERT_INL_H_
