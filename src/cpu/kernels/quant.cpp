// Highway kernels for the Quant surface (its one method, Quant.Quant, f32/f64/f16/bf16 -> int8):
// q = clamp(round_half_even(x / Scale) + ZeroPoint, -128, 127), bit-identical to the reference.
// Bad arguments, overlapping buffers and NaN sources go to the reference (which throws).
//
// - The quotient is one IEEE division in vector lanes (f32 lanes for f32/f16/bf16, f64 lanes for
//   f64): correctly rounded, so the same bits as the reference's scalar x / scale. It is rounded
//   half to even independently of the floating-point environment: roundps/FRINTN where the
//   target has them, else by hand from trunc(q) and the exact remainder. f16/bf16 are widened to
//   f32 exactly in registers.
//   (A multiply by fl(1 / Scale) with a proven test for the lanes that could round differently
//   near a .5, dividing only those, was tried: the test costs more than the division it saves.)
// - Nothing is written to dst before the whole source is known to be free of NaN. Counts >=
//   kStageMin are read once: the codes go to a per-thread staging buffer (NaN checked on the
//   way; non-temporal stores from kStreamMin on), then are copied to dst once the source is
//   valid: 2 bytes of traffic per element instead of re-reading the 2 to 8 source bytes. The
//   buffer grows to the largest count seen, up to kStageMax bytes per calling thread, and is
//   kept for reuse. Smaller counts (whose source stays in cache) are scanned for NaN first, then
//   quantised into dst.
// Nothing stays on the reference by design (the surface has this one method).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/quant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_QUANT_SHARED_
#define BACKPLANE_CPU_KERNELS_QUANT_SHARED_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backplane/convert.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::quant_ops {

using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)

// The reference's rounding: to nearest, ties to even, on |v| where |v| - floor(|v|) is exact.
template <class T>
T RoundHalfEven(T v) {
  if (!std::isfinite(v)) return v;
  const T a = std::fabs(v);
  const T lower = std::floor(a);
  const T frac = a - lower;
  T r = lower + T{1};
  if (frac < T{0.5} || (frac == T{0.5} && std::fmod(lower, T{2}) == T{0})) r = lower;
  return std::copysign(r, v);
}

template <class T>
int8_t QuantOne(T x, T scale, int zero_point) {
  const double q = static_cast<double>(RoundHalfEven(x / scale)) + static_cast<double>(zero_point);
  return static_cast<int8_t>(std::fmin(std::fmax(q, -128.0), 127.0));
}

}  // namespace backplane::cpu::simd::quant_ops
#endif  // BACKPLANE_CPU_KERNELS_QUANT_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace quant_ops;  // NOLINT

// Prefetches the lines kPrefetchBytes ahead of the k elements at p: enough misses in flight to
// stream at full bandwidth when the loop does more than a load and an add per vector.
constexpr size_t kPrefetchBytes = 4096;
template <class T>
HWY_INLINE void Prefetch(const T* p, size_t k) {
  const auto* line = reinterpret_cast<const uint8_t*>(p) + kPrefetchBytes;
  for (size_t b = 0; b < k * sizeof(T); b += 64) hwy::Prefetch(line + b);
}

// Targets whose Round is one instruction that rounds half to even whatever the floating-point
// environment (SSE4.1 roundps with an explicit mode, Arm FRINTN); elsewhere Highway emulates it
// (SSSE3 through the rounding mode, and HWY_SCALAR mishandles values just below .5).
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_SSE4) ||                                            \
    (HWY_ARCH_ARM_A64 && (HWY_TARGET == HWY_NEON || HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || \
                          HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128))
constexpr bool kNativeRound = true;
#else
constexpr bool kNativeRound = false;
#endif

// round_half_even(x / scale) (x not NaN), as an integral value in the lanes' own type (clamped
// to +-512 on the targets without a native Round: those results saturate all the same).
template <class D, class V>
HWY_INLINE V RoundedQuotient(D d, V x, V scale) {
  using T = hn::TFromD<D>;
  const V q = hn::Div(x, scale);
  if constexpr (kNativeRound) {
    return hn::Round(q);  // +-Inf stay infinite and saturate below
  } else {
    // Rounded by hand: t = trunc(q), the exact remainder |q - t| and the parity of t
    // (t / 2 - trunc(t / 2)) decide.
    const V c = hn::Min(hn::Max(q, hn::Set(d, T{-512})), hn::Set(d, T{512}));
    const V t = hn::Trunc(c);
    const V frac = hn::Abs(hn::Sub(c, t));  // exact
    const V half_t = hn::Mul(t, hn::Set(d, T{0.5}));
    const auto odd = hn::Ne(hn::Trunc(half_t), half_t);
    const auto up = hn::Or(hn::Gt(frac, hn::Set(d, T{0.5})), hn::And(hn::Eq(frac, hn::Set(d, T{0.5})), odd));
    return hn::IfThenElse(up, hn::Add(t, hn::CopySign(hn::Set(d, T{1}), c)), t);
  }
}

// The code of a rounded quotient r: r + zero_point clamped to [-128, 127].
template <class D, class V>
HWY_INLINE V Codes(D d, V r, V zero_point) {
  using T = hn::TFromD<D>;
  return hn::Min(hn::Max(hn::Add(r, zero_point), hn::Set(d, T{-128})), hn::Set(d, T{127}));
}

// Stores four f32 vectors of codes (integral, in [-128, 127]) as 4 * lanes bytes at dst; stream:
// with a non-temporal store (dst aligned to a full vector). On x86 they are packed into one
// vector with saturating packs (exact here) and one lane permutation; elsewhere converted and
// demoted one vector at a time.
template <class DF, class VF>
HWY_INLINE void StoreCodes(DF df, VF c0, VF c1, VF c2, VF c3, int8_t* HWY_RESTRICT dst, bool stream) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  const hn::Repartition<int8_t, DF> d8;
#if HWY_TARGET <= HWY_AVX3
  // packs work within 128-bit blocks: block j holds lanes 4j..4j+3 of c0, c1, c2, c3 in turn.
  const __m512i ab = _mm512_packs_epi32(_mm512_cvttps_epi32(c0.raw), _mm512_cvttps_epi32(c1.raw));
  const __m512i cd = _mm512_packs_epi32(_mm512_cvttps_epi32(c2.raw), _mm512_cvttps_epi32(c3.raw));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const hn::Vec<decltype(d8)> bytes{_mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd))};
#elif HWY_TARGET == HWY_AVX2
  const __m256i ab = _mm256_packs_epi32(_mm256_cvttps_epi32(c0.raw), _mm256_cvttps_epi32(c1.raw));
  const __m256i cd = _mm256_packs_epi32(_mm256_cvttps_epi32(c2.raw), _mm256_cvttps_epi32(c3.raw));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const hn::Vec<decltype(d8)> bytes{_mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), order)};
#else
  const __m128i ab = _mm_packs_epi32(_mm_cvttps_epi32(c0.raw), _mm_cvttps_epi32(c1.raw));
  const __m128i cd = _mm_packs_epi32(_mm_cvttps_epi32(c2.raw), _mm_cvttps_epi32(c3.raw));
  const hn::Vec<decltype(d8)> bytes{_mm_packs_epi16(ab, cd)};
#endif
  if (stream) {
    hn::Stream(bytes, d8, dst);
  } else {
    hn::StoreU(bytes, d8, dst);
  }
#else
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const size_t lanes = hn::Lanes(df);
  (void)stream;
  hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, c0)), d8, dst);
  hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, c1)), d8, dst + lanes);
  hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, c2)), d8, dst + 2 * lanes);
  hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, c3)), d8, dst + 3 * lanes);
#endif
}

// Loads lanes f32 values from element i of a kKind (f32, f16 or bf16) source, exactly
// (convert-inl.h).
template <int kKind, class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const void* src, size_t i) {
  if constexpr (kKind == kF32) {
    return hn::LoadU(df, static_cast<const float*>(src) + i);
  } else {
    return LoadWidenU16<kKind == kBF16>(df, static_cast<const uint16_t*>(src) + i);
  }
}

template <int kKind>
float LoadOne(const void* src, size_t i) {
  if constexpr (kKind == kF32) return static_cast<const float*>(src)[i];
  if constexpr (kKind == kF16) return F16ToF32(static_cast<const uint16_t*>(src)[i]);
  return BF16ToF32(static_cast<const uint16_t*>(src)[i]);
}

// Quantises src[0, n) (f32, f16 or bf16, computed in f32 lanes) into dst. kStage (the staging
// pass): returns true as soon as a group of elements holds a NaN (the codes are then incomplete,
// and unused); otherwise the source is known to be NaN-free. stream: non-temporal stores (dst
// vector-aligned).
template <int kKind, bool kStage>
bool QuantF32Lanes(const void* HWY_RESTRICT src, int8_t* HWY_RESTRICT dst, size_t n, float scale, int zero_point,
                   bool stream) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  const auto vs = hn::Set(df, scale), vz = hn::Set(df, static_cast<float>(zero_point));
  using TS = std::conditional_t<kKind == kF32, float, uint16_t>;
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    Prefetch(static_cast<const TS*>(src) + i, 4 * lanes);
    const auto x0 = LoadF32<kKind>(df, src, i), x1 = LoadF32<kKind>(df, src, i + lanes);
    const auto x2 = LoadF32<kKind>(df, src, i + 2 * lanes), x3 = LoadF32<kKind>(df, src, i + 3 * lanes);
    if constexpr (kStage) {
      const auto nan = hn::Or(hn::Or(hn::IsNaN(x0), hn::IsNaN(x1)), hn::Or(hn::IsNaN(x2), hn::IsNaN(x3)));
      if (HWY_UNLIKELY(!hn::AllFalse(df, nan))) return true;
    }
    const auto r0 = RoundedQuotient(df, x0, vs), r1 = RoundedQuotient(df, x1, vs);
    const auto r2 = RoundedQuotient(df, x2, vs), r3 = RoundedQuotient(df, x3, vs);
    StoreCodes(df, Codes(df, r0, vz), Codes(df, r1, vz), Codes(df, r2, vz), Codes(df, r3, vz), dst + i, stream);
  }
  for (; i < n; ++i) {
    const float x = LoadOne<kKind>(src, i);
    if (kStage && std::isnan(x)) return true;
    dst[i] = QuantOne(x, scale, zero_point);
  }
  return false;
}

template <bool kStage>
bool QuantF64Lanes(const double* HWY_RESTRICT src, int8_t* HWY_RESTRICT dst, size_t n, double scale, int zero_point) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<int8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, scale), vz = hn::Set(d, static_cast<double>(zero_point));
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    Prefetch(src + i, 2 * lanes);
    const auto x0 = hn::LoadU(d, src + i), x1 = hn::LoadU(d, src + i + lanes);
    if (kStage && HWY_UNLIKELY(!hn::AllFalse(d, hn::Or(hn::IsNaN(x0), hn::IsNaN(x1))))) return true;
    hn::StoreU(hn::DemoteTo(d8, hn::DemoteTo(di, Codes(d, RoundedQuotient(d, x0, vs), vz))), d8, dst + i);
    hn::StoreU(hn::DemoteTo(d8, hn::DemoteTo(di, Codes(d, RoundedQuotient(d, x1, vs), vz))), d8, dst + i + lanes);
  }
  for (; i < n; ++i) {
    if (kStage && std::isnan(src[i])) return true;
    dst[i] = QuantOne(src[i], scale, zero_point);
  }
  return false;
}

// True if any of the n elements is NaN.
template <int kKind>
bool HasNaNT(const void* src, size_t n) {
  if constexpr (kKind == kF32 || kKind == kF64) {
    using T = std::conditional_t<kKind == kF32, float, double>;
    const T* p = static_cast<const T*>(src);
    const hn::ScalableTag<T> d;
    const size_t lanes = hn::Lanes(d);
    auto nan = hn::Zero(d);
    size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
      Prefetch(p + i, 4 * lanes);
      const auto a = hn::LoadU(d, p + i), b = hn::LoadU(d, p + i + lanes);
      const auto c = hn::LoadU(d, p + i + 2 * lanes), e = hn::LoadU(d, p + i + 3 * lanes);
      nan = hn::Or(nan, hn::VecFromMask(d, hn::Or(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Or(hn::IsNaN(c), hn::IsNaN(e)))));
    }
    for (; i + lanes <= n; i += lanes) {
      const auto a = hn::LoadU(d, p + i);
      nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(a)));
    }
    bool any = !hn::AllFalse(d, hn::MaskFromVec(nan));
    for (; i < n; ++i) any = any || std::isnan(p[i]);
    return any;
  } else {
    // 16-bit: NaN when the magnitude bits exceed those of Inf.
    const auto* p = static_cast<const int16_t*>(src);
    const hn::ScalableTag<int16_t> d;
    const size_t lanes = hn::Lanes(d);
    const int16_t inf = kKind == kF16 ? 0x7C00 : 0x7F80;
    const auto mask = hn::Set(d, int16_t{0x7FFF}), vinf = hn::Set(d, inf);
    auto nan = hn::Zero(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
      nan = hn::Or(nan, hn::VecFromMask(d, hn::Gt(hn::And(hn::LoadU(d, p + i), mask), vinf)));
    }
    bool any = !hn::AllFalse(d, hn::MaskFromVec(nan));
    for (; i < n; ++i) any = any || (p[i] & 0x7FFF) > inf;
    return any;
  }
}

// Quantises n elements of any source kind into dst; kStage and stream as in QuantF32Lanes (f64
// ignores stream).
template <bool kStage>
bool QuantT(int kind, const void* src, int8_t* dst, size_t n, float scale, int zero_point, bool stream) {
  switch (kind) {
    case kF32: return QuantF32Lanes<kF32, kStage>(src, dst, n, scale, zero_point, stream);
    case kF16: return QuantF32Lanes<kF16, kStage>(src, dst, n, scale, zero_point, stream);
    case kBF16: return QuantF32Lanes<kBF16, kStage>(src, dst, n, scale, zero_point, stream);
    default: return QuantF64Lanes<kStage>(static_cast<const double*>(src), dst, n, static_cast<double>(scale), zero_point);
  }
}

}  // namespace

bool QuantHasNaN(int kind, const void* src, size_t n) {
  switch (kind) {
    case kF32: return HasNaNT<kF32>(src, n);
    case kF64: return HasNaNT<kF64>(src, n);
    case kF16: return HasNaNT<kF16>(src, n);
    default: return HasNaNT<kBF16>(src, n);
  }
}

// Quantises a NaN-free chunk straight into dst.
void QuantChunk(int kind, const void* src, int8_t* dst, size_t n, float scale, int zero_point) {
  QuantT<false>(kind, src, dst, n, scale, zero_point, false);
}

// Quantises a chunk into the (vector-aligned) staging buffer; true if it holds a NaN.
bool QuantStage(int kind, const void* src, int8_t* stage, size_t n, float scale, int zero_point, bool stream) {
  const bool nan = QuantT<true>(kind, src, stage, n, scale, zero_point, stream);
  if (stream) hwy::FlushStream();  // orders the non-temporal stores before other threads read them
  return nan;
}

// dst[0, n) = src[0, n); stream: with non-temporal stores where dst is vector-aligned.
void CopyStream(const int8_t* HWY_RESTRICT src, int8_t* HWY_RESTRICT dst, size_t n, bool stream) {
#if HWY_TARGET == HWY_SCALAR
  (void)stream;
  std::memcpy(dst, src, n);
#else
  if (!stream) {
    std::memcpy(dst, src, n);
    return;
  }
  const hn::ScalableTag<int8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  const size_t misaligned = reinterpret_cast<uintptr_t>(dst) % (lanes * sizeof(int8_t));
  if (misaligned != 0) {
    i = lanes - misaligned < n ? lanes - misaligned : n;
    std::memcpy(dst, src, i);
  }
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    hn::Stream(hn::LoadU(d, src + i), d, dst + i);
    hn::Stream(hn::LoadU(d, src + i + lanes), d, dst + i + lanes);
    hn::Stream(hn::LoadU(d, src + i + 2 * lanes), d, dst + i + 2 * lanes);
    hn::Stream(hn::LoadU(d, src + i + 3 * lanes), d, dst + i + 3 * lanes);
  }
  for (; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(d, src + i), d, dst + i);
  std::memcpy(dst + i, src + i, n - i);
  hwy::FlushStream();
#endif
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <atomic>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(QuantHasNaN);
HWY_EXPORT(QuantChunk);
HWY_EXPORT(QuantStage);
HWY_EXPORT(CopyStream);

namespace {
using namespace quant_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;
// Counts from which the staged (single read) path runs, from which it uses non-temporal stores
// (the codes no longer fit in the caches), and up to which it may hold a buffer.
constexpr int64_t kStageMin = 2 * kChunk, kStreamMin = int64_t{1} << 22, kStageMax = int64_t{1} << 26;

// Grow-only per-thread staging buffer (reused: fresh pages would cost a fault and a zeroing each).
int8_t* StageBuffer(size_t bytes) {
  static thread_local hwy::AlignedFreeUniquePtr<int8_t[]> mem;
  static thread_local size_t size = 0;
  if (size < bytes) {
    mem = hwy::AllocateAligned<int8_t>(bytes);
    size = mem ? bytes : 0;
  }
  return mem.get();
}

void Quant(void* dst, const void* src, int64_t count, const QuantConfig& config, DType dstFormat, DType srcFormat) {
  const int kind = KindOf(srcFormat);
  if (dstFormat != DType::Int8 || kind < 0 || count <= 0 || dst == nullptr || src == nullptr ||
      !(std::isfinite(config.Scale) && config.Scale > 0.0f)) {
    return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);  // errors, count 0
  }
  const size_t bytes = KindBytes(kind);
  const auto* base = static_cast<const uint8_t*>(src);
  auto* out = static_cast<int8_t*>(dst);
  const auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(dst);
  if (s < d + static_cast<size_t>(count) && d < s + static_cast<size_t>(count) * bytes) {  // overlapping
    return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);
  }
  // Nothing is written to dst before the whole source is known to be free of NaN (see the file
  // comment): large sources through the staging buffer, small ones scanned first.
  std::atomic<bool> nan{false};
  int8_t* stage = count >= kStageMin && count <= kStageMax ? StageBuffer(static_cast<size_t>(count)) : nullptr;
  if (stage != nullptr) {
    const bool stream = count >= kStreamMin;
    ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
      if (!nan.load(std::memory_order_relaxed) &&
          HWY_DYNAMIC_DISPATCH(QuantStage)(kind, base + static_cast<size_t>(b) * bytes, stage + b,
                                           static_cast<size_t>(e - b), config.Scale, config.ZeroPoint, stream)) {
        nan.store(true);
      }
    });
    if (nan.load()) return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);  // throws
    ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
      HWY_DYNAMIC_DISPATCH(CopyStream)(stage + b, out + b, static_cast<size_t>(e - b), stream);
    });
    return;
  }
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    if (HWY_DYNAMIC_DISPATCH(QuantHasNaN)(kind, base + static_cast<size_t>(b) * bytes, static_cast<size_t>(e - b))) {
      nan.store(true);
    }
  });
  if (nan.load()) return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);  // throws
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(QuantChunk)(kind, base + static_cast<size_t>(b) * bytes, out + b,
                                     static_cast<size_t>(e - b), config.Scale, config.ZeroPoint);
  });
}

}  // namespace

void RegisterQuant(KernelTable& t) { t.Quant_Quant = &Quant; }

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
