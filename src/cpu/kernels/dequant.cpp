// Highway kernels for the Dequant surface: dst = (q - ZeroPoint) * Scale, bit-identical to the
// reference. q - ZeroPoint is exact in i32 lanes and converted exactly; the product is one f32
// multiplication (f32/f16/bf16 destinations, then one round to nearest even for 16 bits) or one
// f64 multiplication (f64 destination). Dequant4 unpacks each byte into its low (first) and high
// nibble, sign-extended by shifts, and interleaves them on the store.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/dequant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_DEQUANT_SHARED_
#define BACKPLANE_CPU_KERNELS_DEQUANT_SHARED_
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backplane/convert.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::dequant_ops {
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)
}  // namespace backplane::cpu::simd::dequant_ops
#endif  // BACKPLANE_CPU_KERNELS_DEQUANT_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace dequant_ops;  // NOLINT

// (q - zero_point) * scale for i32 lanes q, in the lanes of D (f32 or f64).
template <class D, class VI>
HWY_INLINE hn::Vec<D> Scale(D d, VI q, VI zero_point, hn::Vec<D> scale) {
  if constexpr (std::is_same_v<hn::TFromD<D>, float>) {
    return hn::Mul(hn::ConvertTo(d, hn::Sub(q, zero_point)), scale);
  } else {
    return hn::Mul(hn::PromoteTo(d, hn::Sub(q, zero_point)), scale);
  }
}

template <class T>
void DequantI8(const int8_t* src, T* dst, size_t n, T scale, int zero_point) {
  const hn::ScalableTag<T> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<int8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  const auto vz = hn::Set(di, zero_point);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    hn::StoreU(Scale(d, hn::PromoteTo(di, hn::LoadU(d8, src + i)), vz, vs), d, dst + i);
    hn::StoreU(Scale(d, hn::PromoteTo(di, hn::LoadU(d8, src + i + lanes)), vz, vs), d, dst + i + lanes);
  }
  for (; i < n; ++i) dst[i] = static_cast<T>(int32_t{src[i]} - zero_point) * scale;
}

// n int4 elements from the start of `src` (element 2j in the low nibble of byte j).
template <class T>
void DequantI4(const uint8_t* src, T* dst, size_t n, T scale, int zero_point) {
  const hn::ScalableTag<T> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);  // bytes per step, 2 * lanes elements
  const auto vs = hn::Set(d, scale);
  const auto vz = hn::Set(di, zero_point);
  size_t j = 0;
  for (; 2 * (j + lanes) <= n; j += lanes) {
    const auto bytes = hn::PromoteTo(di, hn::LoadU(d8, src + j));
    const auto lo = hn::ShiftRight<28>(hn::ShiftLeft<28>(bytes));
    const auto hi = hn::ShiftRight<28>(hn::ShiftLeft<24>(bytes));
    hn::StoreInterleaved2(Scale(d, lo, vz, vs), Scale(d, hi, vz, vs), d, dst + 2 * j);
  }
  for (size_t i = 2 * j; i < n; ++i) {
    dst[i] = static_cast<T>(int32_t{LoadInt4(src, static_cast<int64_t>(i))} - zero_point) * scale;
  }
}

template <class T>
void DequantAny(bool int4, const void* src, T* dst, size_t n, T scale, int zero_point) {
  if (int4) {
    DequantI4(static_cast<const uint8_t*>(src), dst, n, scale, zero_point);
  } else {
    DequantI8(static_cast<const int8_t*>(src), dst, n, scale, zero_point);
  }
}

}  // namespace

// n elements from the start of src (for int4, an even element offset) into dst.
void DequantChunk(bool int4, int dst_kind, const void* src, void* dst, size_t n, float scale, int zero_point) {
  switch (dst_kind) {
    case kF32: return DequantAny(int4, src, static_cast<float*>(dst), n, scale, zero_point);
    case kF64: return DequantAny(int4, src, static_cast<double*>(dst), n, static_cast<double>(scale), zero_point);
    default: {
      // f32 products in blocks, rounded to f16/bf16 to nearest even.
      constexpr size_t kBlock = 1024;  // elements; even, so int4 blocks start on a byte
      HWY_ALIGN float block[kBlock];
      auto* out = static_cast<uint16_t*>(dst);
      const auto* bytes = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; i += kBlock) {
        const size_t m = n - i < kBlock ? n - i : kBlock;
        DequantAny(int4, bytes + (int4 ? i / 2 : i), block, m, scale, zero_point);
        NarrowBlock(block, out + i, m, dst_kind == kBF16);
      }
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(DequantChunk);

namespace {
using namespace dequant_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;  // even: int4 chunks start on a byte

template <bool kInt4>
void Dequant(void* dst, const void* src, int64_t count, const DequantConfig& config, DType dstFormat,
             DType srcFormat) {
  const int kind = KindOf(dstFormat);
  const int zp = config.ZeroPoint;
  const bool valid = kind >= 0 && srcFormat == (kInt4 ? DType::Int4 : DType::Int8) && count > 0 && dst != nullptr &&
                     src != nullptr && std::isfinite(config.Scale) && config.Scale > 0.0f &&
                     (!kInt4 || (zp >= -8 && zp <= 7));
  if (!valid) {  // the reference's errors, and count 0
    return kInt4 ? Reference().Dequant_Dequant4(dst, src, count, config, dstFormat, srcFormat)
                 : Reference().Dequant_Dequant(dst, src, count, config, dstFormat, srcFormat);
  }
  const size_t out_bytes = KindBytes(kind);
  const auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(dst);
  const size_t in_bytes = kInt4 ? static_cast<size_t>(count + 1) / 2 : static_cast<size_t>(count);
  if (s < d + static_cast<size_t>(count) * out_bytes && d < s + in_bytes) {  // overlapping: element order matters
    return kInt4 ? Reference().Dequant_Dequant4(dst, src, count, config, dstFormat, srcFormat)
                 : Reference().Dequant_Dequant(dst, src, count, config, dstFormat, srcFormat);
  }
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    const auto offset = static_cast<size_t>(b);
    HWY_DYNAMIC_DISPATCH(DequantChunk)(kInt4, kind, static_cast<const uint8_t*>(src) + (kInt4 ? offset / 2 : offset),
                                       static_cast<uint8_t*>(dst) + offset * out_bytes, static_cast<size_t>(e - b),
                                       config.Scale, zp);
  });
}

}  // namespace

void RegisterDequant(KernelTable& t) {
  t.Dequant_Dequant = &Dequant<false>;
  t.Dequant_Dequant4 = &Dequant<true>;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
