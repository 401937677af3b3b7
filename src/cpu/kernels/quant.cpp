// Highway kernels for the Quant surface: q = clamp(round_half_even(x / Scale) + ZeroPoint, -128,
// 127), bit-identical to the reference.
//
// The quotient is one IEEE division in vector lanes (f32 lanes for f32/f16/bf16, f64 lanes for
// f64): a correctly rounded division gives the same bits as the reference's scalar x / scale
// (a multiply by 1 / scale would not). It is rounded half to even independently of the
// floating-point environment: by roundps/FRINTN where the target has them, else by hand from
// trunc(q) and the exact remainder. f16/bf16 are widened to f32 exactly. The reference throws on
// a NaN before writing anything, so the whole source is scanned first (one extra read pass: the
// price of never writing a partial output).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/quant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#ifndef BACKPLANE_CPU_KERNELS_QUANT_SHARED_
#define BACKPLANE_CPU_KERNELS_QUANT_SHARED_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backplane/convert.hpp"

namespace backplane::cpu::simd::quant_ops {

enum Kind : int { kF32, kF64, kF16, kBF16 };

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

// round_half_even(x / scale) + zero_point, clamped to [-128, 127], as an integral value in the
// lanes' own type.
template <class D, class V>
HWY_INLINE V QuantLanes(D d, V x, V scale, V zero_point) {
  using T = hn::TFromD<D>;
  const V q = hn::Div(x, scale);
  V r;
  if constexpr (kNativeRound) {
    r = hn::Round(q);  // +-Inf stay infinite and saturate below
  } else {
    // Clamped to +-512 (every saturating result stays saturating), then rounded by hand: t =
    // trunc(q), the exact remainder |q - t| and the parity of t (t / 2 - trunc(t / 2)) decide.
    const V c = hn::Min(hn::Max(q, hn::Set(d, T{-512})), hn::Set(d, T{512}));
    const V t = hn::Trunc(c);
    const V frac = hn::Abs(hn::Sub(c, t));  // exact
    const V half_t = hn::Mul(t, hn::Set(d, T{0.5}));
    const auto odd = hn::Ne(hn::Trunc(half_t), half_t);
    const auto up = hn::Or(hn::Gt(frac, hn::Set(d, T{0.5})), hn::And(hn::Eq(frac, hn::Set(d, T{0.5})), odd));
    r = hn::IfThenElse(up, hn::Add(t, hn::CopySign(hn::Set(d, T{1}), c)), t);
  }
  return hn::Min(hn::Max(hn::Add(r, zero_point), hn::Set(d, T{-128})), hn::Set(d, T{127}));
}

void QuantF32Lanes(const float* src, int8_t* dst, size_t n, float scale, int zero_point) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const size_t lanes = hn::Lanes(df);
  const auto vs = hn::Set(df, scale), vz = hn::Set(df, static_cast<float>(zero_point));
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    Prefetch(src + i, 2 * lanes);
    const auto q0 = hn::ConvertTo(di, QuantLanes(df, hn::LoadU(df, src + i), vs, vz));
    const auto q1 = hn::ConvertTo(di, QuantLanes(df, hn::LoadU(df, src + i + lanes), vs, vz));
    hn::StoreU(hn::DemoteTo(d8, q0), d8, dst + i);
    hn::StoreU(hn::DemoteTo(d8, q1), d8, dst + i + lanes);
  }
  for (; i < n; ++i) dst[i] = QuantOne(src[i], scale, zero_point);
}

void QuantF64Lanes(const double* src, int8_t* dst, size_t n, double scale, int zero_point) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<int8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, scale), vz = hn::Set(d, static_cast<double>(zero_point));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto q = hn::DemoteTo(di, QuantLanes(d, hn::LoadU(d, src + i), vs, vz));
    hn::StoreU(hn::DemoteTo(d8, q), d8, dst + i);
  }
  for (; i < n; ++i) dst[i] = QuantOne(src[i], scale, zero_point);
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

}  // namespace

bool QuantHasNaN(int kind, const void* src, size_t n) {
  switch (kind) {
    case kF32: return HasNaNT<kF32>(src, n);
    case kF64: return HasNaNT<kF64>(src, n);
    case kF16: return HasNaNT<kF16>(src, n);
    default: return HasNaNT<kBF16>(src, n);
  }
}

void QuantChunk(int kind, const void* src, int8_t* dst, size_t n, float scale, int zero_point) {
  switch (kind) {
    case kF32: return QuantF32Lanes(static_cast<const float*>(src), dst, n, scale, zero_point);
    case kF64: return QuantF64Lanes(static_cast<const double*>(src), dst, n, static_cast<double>(scale), zero_point);
    default: {
      constexpr size_t kBlock = 1024;
      HWY_ALIGN float block[kBlock];
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; i += kBlock) {
        const size_t m = n - i < kBlock ? n - i : kBlock;
        for (size_t k = 0; k < m; ++k) block[k] = kind == kF16 ? F16ToF32(h[i + k]) : BF16ToF32(h[i + k]);
        QuantF32Lanes(block, dst + i, m, scale, zero_point);
      }
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <atomic>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(QuantHasNaN);
HWY_EXPORT(QuantChunk);

namespace {
using namespace quant_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;

int KindOf(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kF32;
    case DType::Float64: return kF64;
    case DType::Float16: return kF16;
    case DType::BFloat16: return kBF16;
    default: return -1;
  }
}

void Quant(void* dst, const void* src, int64_t count, const QuantConfig& config, DType dstFormat, DType srcFormat) {
  const int kind = KindOf(srcFormat);
  if (dstFormat != DType::Int8 || kind < 0 || count <= 0 || dst == nullptr || src == nullptr ||
      !(std::isfinite(config.Scale) && config.Scale > 0.0f)) {
    return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);  // errors, count 0
  }
  const size_t bytes = kind == kF64 ? 8 : kind == kF32 ? 4 : 2;
  const auto* base = static_cast<const uint8_t*>(src);
  const auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(dst);
  if (s < d + static_cast<size_t>(count) && d < s + static_cast<size_t>(count) * bytes) {  // overlapping
    return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);
  }
  // Nothing is written before the whole source is known to be free of NaN.
  std::atomic<bool> nan{false};
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    if (HWY_DYNAMIC_DISPATCH(QuantHasNaN)(kind, base + static_cast<size_t>(b) * bytes, static_cast<size_t>(e - b))) {
      nan.store(true);
    }
  });
  if (nan.load()) return Reference().Quant_Quant(dst, src, count, config, dstFormat, srcFormat);  // throws
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(QuantChunk)(kind, base + static_cast<size_t>(b) * bytes, static_cast<int8_t*>(dst) + b,
                                     static_cast<size_t>(e - b), config.Scale, config.ZeroPoint);
  });
}

}  // namespace

void RegisterQuant(KernelTable& t) { t.Quant_Quant = &Quant; }

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
