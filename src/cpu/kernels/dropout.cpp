// Highway kernel for the Dropout surface, bit-identical to the reference.
//
// The mask is Philox4x32-10 evaluated in u32 lanes, one element per lane (32x32->64 products
// from MulEven on the even and the odd lanes), the same bits as backplane/random.hpp. Element i
// is kept iff (word0 >> 8) * 2^-24 >= Rate, i.e. iff (word0 >> 8) >= ceil(Rate * 2^24), an exact
// integer test. Kept values are multiplied by the scale in the reference's compute type (f32 for
// f32/f16/bf16, f64 for f64), one rounding, then f16/bf16 are narrowed to nearest even with the
// convert-inl.h helpers; dropped values are +0.0. Rate 0 copies, Rate 1 zero-fills. The scalar
// target (one lane) evaluates Philox with the scalar reference function.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/dropout.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_DROPOUT_SHARED_
#define BACKPLANE_CPU_KERNELS_DROPOUT_SHARED_
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backplane/random.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::dropout_ops {
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)
}  // namespace backplane::cpu::simd::dropout_ops
#endif  // BACKPLANE_CPU_KERNELS_DROPOUT_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace dropout_ops;  // NOLINT

constexpr size_t kBlock = 1024;

// bits[k] = Philox word 0 of element first + k, shifted right by 8 (24 random bits), k < n.
void PhiloxBlock(uint64_t seed, uint64_t first, size_t n, uint32_t* bits) {
  size_t k = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<uint32_t> du;
  const hn::Repartition<uint64_t, decltype(du)> dw;
  const size_t lanes = hn::Lanes(du);
  const auto m0 = hn::Set(du, 0xD2511F53u), m1 = hn::Set(du, 0xCD9E8D57u);
  // hi and lo halves of a * m for every u32 lane, from the 64-bit products of the even lanes
  // and of the odd lanes (shifted down).
  auto mul_hi_lo = [&](hn::Vec<decltype(du)> a, hn::Vec<decltype(du)> m, hn::Vec<decltype(du)>& lo) {
    const auto even = hn::MulEven(a, m);
    const auto odd = hn::MulEven(hn::BitCast(du, hn::ShiftRight<32>(hn::BitCast(dw, a))), m);
    lo = hn::OddEven(hn::BitCast(du, hn::ShiftLeft<32>(odd)), hn::BitCast(du, even));
    return hn::OddEven(hn::BitCast(du, odd), hn::BitCast(du, hn::ShiftRight<32>(even)));
  };
  const auto key_lo = static_cast<uint32_t>(seed), key_hi = static_cast<uint32_t>(seed >> 32);
  for (; k + lanes <= n; k += lanes) {
    const uint64_t index = first + k;
    const auto lo = static_cast<uint32_t>(index);
    if (lo > UINT32_MAX - lanes) break;  // the low word would wrap inside the vector: scalar below
    auto c0 = hn::Add(hn::Set(du, lo), hn::Iota(du, 0));
    auto c1 = hn::Set(du, static_cast<uint32_t>(index >> 32));
    auto c2 = hn::Zero(du), c3 = hn::Zero(du);  // stream 0
    uint32_t k0 = key_lo, k1 = key_hi;
    for (int round = 0; round < 10; ++round) {
      auto lo0 = c0, lo1 = c2;
      const auto hi0 = mul_hi_lo(c0, m0, lo0);
      const auto hi1 = mul_hi_lo(c2, m1, lo1);
      c0 = hn::Xor(hn::Xor(hi1, c1), hn::Set(du, k0));
      c1 = lo1;
      c2 = hn::Xor(hn::Xor(hi0, c3), hn::Set(du, k1));
      c3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    hn::StoreU(hn::ShiftRight<8>(c0), du, bits + k);
  }
#endif
  for (; k < n; ++k) bits[k] = PhiloxBits(seed, 0, first + k)[0] >> 8;
}

// dst = keep ? src * scale : +0 over one block of native f32 or f64 values.
template <class T>
void ApplyBlock(const T* src, T* dst, const uint32_t* bits, size_t n, uint32_t threshold, T scale) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<int32_t, decltype(d)> d32;
  const size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, scale);
  const auto th = hn::Set(di, static_cast<hn::TFromD<decltype(di)>>(threshold));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    // bits < 2^24, so a signed compare is exact.
    const auto b = hn::LoadU(d32, reinterpret_cast<const int32_t*>(bits + i));
    hn::Mask<decltype(di)> drop;
    if constexpr (sizeof(T) == 4) {
      drop = hn::Lt(b, th);
    } else {
      drop = hn::Lt(hn::PromoteTo(di, b), th);
    }
    const auto v = hn::Mul(hn::LoadU(d, src + i), s);
    hn::StoreU(hn::IfThenZeroElse(hn::RebindMask(d, drop), v), d, dst + i);
  }
  for (; i < n; ++i) dst[i] = bits[i] >= threshold ? src[i] * scale : T{0};
}

}  // namespace

void DropoutChunk(int kind, const void* src, void* dst, uint64_t first, size_t n, uint64_t seed, uint32_t threshold,
                  double scale) {
  HWY_ALIGN uint32_t bits[kBlock];
  HWY_ALIGN float buf[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    PhiloxBlock(seed, first + i, m, bits);
    switch (kind) {
      case kF32:
        ApplyBlock(static_cast<const float*>(src) + i, static_cast<float*>(dst) + i, bits, m, threshold,
                   static_cast<float>(scale));
        break;
      case kF64:
        ApplyBlock(static_cast<const double*>(src) + i, static_cast<double*>(dst) + i, bits, m, threshold, scale);
        break;
      default:
        WidenBlock(static_cast<const uint16_t*>(src) + i, buf, m, kind == kBF16);
        ApplyBlock(buf, buf, bits, m, threshold, static_cast<float>(scale));
        NarrowBlock(buf, static_cast<uint16_t*>(dst) + i, m, kind == kBF16);
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cmath>
#include <cstring>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(DropoutChunk);

namespace {
using namespace dropout_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;

void Dropout(void* dst, const void* src, int64_t count, const DropoutConfig& config, DType dtype) {
  const int kind = KindOf(dtype);
  const float rate = config.Rate;
  const bool usual = kind >= 0 && count > 0 && dst && src;
  const size_t bytes = KindBytes(kind);
  if (usual && rate == 1.0f) {  // nothing kept: +0.0 everywhere (all-zero bits in every format)
    std::memset(dst, 0, static_cast<size_t>(count) * bytes);
    return;
  }
  if (!usual || !(rate > 0.0f && rate < 1.0f)) {
    return Reference().Dropout_Dropout(dst, src, count, config, dtype);  // errors; Rate 0 copies
  }
  // keep iff u >= rate with u = bits * 2^-24 exact, i.e. bits >= rate * 2^24 (exact in f64).
  const auto threshold = static_cast<uint32_t>(std::ceil(static_cast<double>(rate) * 16777216.0));
  // The scale in the compute type, as the reference: 1 / (1 - rate) in f32 or f64.
  const double scale = kind == kF64 ? 1.0 / (1.0 - static_cast<double>(rate))
                                    : static_cast<double>(1.0f / (1.0f - rate));
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(DropoutChunk)(kind, static_cast<const uint8_t*>(src) + b * bytes,
                                       static_cast<uint8_t*>(dst) + b * bytes, static_cast<uint64_t>(b),
                                       static_cast<size_t>(e - b), config.Seed, threshold, scale);
  });
}

}  // namespace

void RegisterDropout(KernelTable& t) { t.Dropout_Dropout = &Dropout; }

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
