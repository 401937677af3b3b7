// Highway kernels for the Masking surface over [seqQ, seqK] score matrices: ApplyMask, CausalMask
// and ALiBiBias, for f64, f32 and f16/bf16 (widened to f32 in blocks, rounded to nearest even).
//
// As the reference (bottom-right alignment: query q sits at p = q + seqK - seqQ):
// - ApplyMask: out = in + mask in the compute type (f64, else f32), bit-identical.
// - CausalMask: per row, +0 for k <= p and -Inf after, stored as bit patterns; bit-identical.
// - ALiBiBias: out = fma(-slope, p - k, scores) for k <= p, copied for k > p, with distances
//   converted exactly as the reference does (exact below 2^24 in f32, 2^53 in f64; larger
//   distances take a scalar loop). Bit-identical on targets with a native fma. Without one
//   (SSE4, SSSE3, scalar) f32-class rows are computed in f64 lanes and rounded to f32 (the
//   product is exact in f64, so at most one f32 rounding apart from fmaf) and f64 rows use
//   std::fma per element.
// Rows run in parallel when the matrix is large. Elementwise reads precede writes, so out may
// equal in/mask/scores; anything else (bad arguments, size 0, partial overlap) goes to the
// reference. Nothing stays scalar by design.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/masking.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_MASKING_SHARED_
#define BACKPLANE_CPU_KERNELS_MASKING_SHARED_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
namespace backplane::cpu::simd::masking_ops {
// Rows [first, first + rows) of a [seq_q, seq_k] matrix; query q sees keys k <= q + shift.
struct MaskRows {
  size_t first;
  size_t rows;
  int64_t seq_k;
  int64_t shift;  // seq_k - seq_q
};
}  // namespace backplane::cpu::simd::masking_ops
#endif  // BACKPLANE_CPU_KERNELS_MASKING_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace masking_ops;  // NOLINT

template <class T>
void AddTyped(const T* a, const T* b, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto v0 = hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i));
    const auto v1 = hn::Add(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes));
    hn::StoreU(v0, d, out + i);
    hn::StoreU(v1, d, out + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// Stores n copies of `bits` (an element's bit pattern, U = its unsigned type).
template <class U>
HWY_INLINE void Fill(U* out, size_t n, U bits) {
  const hn::ScalableTag<U> d;
  const size_t lanes = hn::Lanes(d);
  const auto v = hn::Set(d, bits);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(v, d, out + i);
  for (; i < n; ++i) out[i] = bits;
}

// Keys 0 .. visible - 1 of a row: y = fma(-m, p - k, s) with the distance p - k converted to T
// as the reference does (static_cast<T>(int64)), exact in the vector loop.
template <class T>
HWY_INLINE void BiasRow(const T* s, T* y, size_t visible, int64_t p, T m) {
  // Keys whose distance is not exact in T's significand take the scalar loop first.
  constexpr int64_t kExact = int64_t{1} << (std::is_same_v<T, float> ? 24 : 53);
  size_t k = 0;
  for (; k < visible && p - static_cast<int64_t>(k) >= kExact; ++k) {
    y[k] = std::fma(-m, static_cast<T>(p - static_cast<int64_t>(k)), s[k]);
  }
#if HWY_NATIVE_FMA
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const auto negm = hn::Set(d, -m);
  const auto iota = hn::Iota(d, 0);
  for (; k + lanes <= visible; k += lanes) {
    const auto dist = hn::Sub(hn::Set(d, static_cast<T>(p - static_cast<int64_t>(k))), iota);
    hn::StoreU(hn::MulAdd(negm, dist, hn::LoadU(d, s + k)), d, y + k);
  }
  for (; k < visible; ++k) y[k] = std::fma(-m, static_cast<T>(p - static_cast<int64_t>(k)), s[k]);
#else
  // (Not on HWY_SCALAR/EMU128, whose f64 -> f32 DemoteTo saturates Inf to FLT_MAX.)
  if constexpr (std::is_same_v<T, float> && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128) {
    // s - m * dist in f64: the product of two f32 values is exact, then one f64 and one f32
    // rounding.
    const hn::ScalableTag<double> d;
    const hn::Rebind<float, decltype(d)> df;
    const size_t lanes = hn::Lanes(d);
    const auto vm = hn::Set(d, static_cast<double>(m));
    const auto iota = hn::Iota(d, 0);
    for (; k + lanes <= visible; k += lanes) {
      const auto dist = hn::Sub(hn::Set(d, static_cast<double>(p - static_cast<int64_t>(k))), iota);
      const auto v = hn::Sub(hn::PromoteTo(d, hn::LoadU(df, s + k)), hn::Mul(vm, dist));
      hn::StoreU(hn::DemoteTo(df, v), df, y + k);
    }
  }
  for (; k < visible; ++k) y[k] = std::fma(-m, static_cast<T>(p - static_cast<int64_t>(k)), s[k]);
#endif
}

// One row of T: the visible keys biased, the rest copied (nothing to copy in place).
template <class T>
HWY_INLINE void AlibiRow(const T* s, T* y, int64_t seq_k, int64_t p, T m) {
  const int64_t visible = p < 0 ? 0 : (p + 1 < seq_k ? p + 1 : seq_k);
  BiasRow(s, y, static_cast<size_t>(visible), p, m);
  if (y != s && visible < seq_k) std::memmove(y + visible, s + visible, static_cast<size_t>(seq_k - visible) * sizeof(T));
}

template <class T>
void AlibiTyped(const T* scores, T* out, T m, const MaskRows& r) {
  for (size_t i = 0; i < r.rows; ++i) {
    const size_t off = i * static_cast<size_t>(r.seq_k);
    AlibiRow(scores + off, out + off, r.seq_k, static_cast<int64_t>(r.first + i) + r.shift, m);
  }
}

constexpr size_t kBlock = 1024;

}  // namespace

void ApplyMaskF32(const float* a, const float* b, float* out, size_t n) { AddTyped(a, b, out, n); }
void ApplyMaskF64(const double* a, const double* b, double* out, size_t n) { AddTyped(a, b, out, n); }

void ApplyMaskHalf(const uint16_t* a, const uint16_t* b, uint16_t* out, size_t n, bool bf16) {
  HWY_ALIGN float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(a + i, fa, m, bf16);
    WidenBlock(b + i, fb, m, bf16);
    AddTyped(fa, fb, fa, m);
    NarrowBlock(fa, out + i, m, bf16);
  }
}

// Rows of 0 / -Inf with elements of `bytes` bytes; `neg_inf` is -Inf's bit pattern.
void CausalRows(void* out, const MaskRows& r, size_t bytes, uint64_t neg_inf) {
  const auto k = static_cast<size_t>(r.seq_k);
  for (size_t i = 0; i < r.rows; ++i) {
    const int64_t p = static_cast<int64_t>(r.first + i) + r.shift;
    const size_t visible = p < 0 ? 0 : (p + 1 < r.seq_k ? static_cast<size_t>(p + 1) : k);
    auto* row = static_cast<uint8_t*>(out) + i * k * bytes;
    std::memset(row, 0, visible * bytes);
    switch (bytes) {
      case 8: Fill(reinterpret_cast<uint64_t*>(row) + visible, k - visible, neg_inf); break;
      case 4: Fill(reinterpret_cast<uint32_t*>(row) + visible, k - visible, static_cast<uint32_t>(neg_inf)); break;
      default: Fill(reinterpret_cast<uint16_t*>(row) + visible, k - visible, static_cast<uint16_t>(neg_inf));
    }
  }
}

void AlibiF32(const float* s, float* y, float m, const MaskRows& r) { AlibiTyped(s, y, m, r); }
void AlibiF64(const double* s, double* y, double m, const MaskRows& r) { AlibiTyped(s, y, m, r); }

// f16/bf16 rows in blocks of kBlock keys, widened exactly, computed in f32 and rounded to nearest
// even (the copied keys go through the same round trip as in the reference).
void AlibiHalf(const uint16_t* s, uint16_t* y, float m, const MaskRows& r, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < r.rows; ++i) {
    const size_t off = i * static_cast<size_t>(r.seq_k);
    const int64_t p = static_cast<int64_t>(r.first + i) + r.shift;
    for (int64_t k0 = 0; k0 < r.seq_k; k0 += static_cast<int64_t>(kBlock)) {
      const int64_t m_keys = r.seq_k - k0 < static_cast<int64_t>(kBlock) ? r.seq_k - k0 : static_cast<int64_t>(kBlock);
      const auto n = static_cast<size_t>(m_keys);
      WidenBlock(s + off + static_cast<size_t>(k0), f, n, bf16);
      AlibiRow(f, f, m_keys, p - k0, m);
      NarrowBlock(f, y + off + static_cast<size_t>(k0), n, bf16);
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
using masking_ops::MaskRows;
HWY_EXPORT(ApplyMaskF32);
HWY_EXPORT(ApplyMaskF64);
HWY_EXPORT(ApplyMaskHalf);
HWY_EXPORT(CausalRows);
HWY_EXPORT(AlibiF32);
HWY_EXPORT(AlibiF64);
HWY_EXPORT(AlibiHalf);

namespace {

constexpr int64_t kMinChunkElements = int64_t{1} << 16;

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// Whether two buffers of `bytes` overlap without being the same buffer.
bool PartialOverlap(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a != b && x < y + bytes && y < x + bytes;
}

// Calls fn(first, rows) for chunks of whole rows of a [seq_q, seq_k] matrix.
template <class Fn>
void ForRows(int64_t seq_q, int64_t seq_k, Fn&& fn) {
  const int64_t grain = std::max<int64_t>(1, kMinChunkElements / seq_k);
  ParallelFor(seq_q, grain, [&](int64_t r0, int64_t r1) {
    fn(MaskRows{static_cast<size_t>(r0), static_cast<size_t>(r1 - r0), seq_k, seq_k - seq_q});
  });
}

bool ApplyMask(const void* in, const void* mask, void* out, int64_t count, DType dtype) {
  if (!FloatDType(dtype) || count <= 0 || in == nullptr || mask == nullptr || out == nullptr) return false;
  const size_t bytes = DTypeStorageBytes(dtype, count);
  if (PartialOverlap(in, out, bytes) || PartialOverlap(mask, out, bytes)) return false;
  ParallelFor(count, kMinChunkElements, [&](int64_t i0, int64_t i1) {
    const auto i = static_cast<size_t>(i0), n = static_cast<size_t>(i1 - i0);
    switch (dtype) {
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(ApplyMaskF32)(static_cast<const float*>(in) + i, static_cast<const float*>(mask) + i,
                                           static_cast<float*>(out) + i, n);
        break;
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(ApplyMaskF64)(static_cast<const double*>(in) + i, static_cast<const double*>(mask) + i,
                                           static_cast<double*>(out) + i, n);
        break;
      default:
        HWY_DYNAMIC_DISPATCH(ApplyMaskHalf)(static_cast<const uint16_t*>(in) + i,
                                            static_cast<const uint16_t*>(mask) + i, static_cast<uint16_t*>(out) + i,
                                            n, dtype == DType::BFloat16);
    }
  });
  return true;
}

bool CausalMask(void* out, int64_t seq_q, int64_t seq_k, DType dtype) {
  int64_t count = 0;
  if (!FloatDType(dtype) || seq_q < 0 || seq_k < 0 || __builtin_mul_overflow(seq_q, seq_k, &count)) return false;
  if (count == 0 || out == nullptr) return false;
  size_t bytes = 2;
  uint64_t neg_inf = 0xFC00;  // f16
  switch (dtype) {
    case DType::Float64: bytes = 8, neg_inf = 0xFFF0000000000000ull; break;
    case DType::Float32: bytes = 4, neg_inf = 0xFF800000u; break;
    case DType::BFloat16: neg_inf = 0xFF80; break;
    default: break;
  }
  ForRows(seq_q, seq_k, [&](const MaskRows& r) {
    HWY_DYNAMIC_DISPATCH(CausalRows)(static_cast<uint8_t*>(out) + r.first * static_cast<size_t>(seq_k) * bytes, r,
                                     bytes, neg_inf);
  });
  return true;
}

bool ALiBiBias(const void* scores, const void* slope, void* out, int64_t seq_q, int64_t seq_k, DType dtype) {
  int64_t count = 0;
  if (!FloatDType(dtype) || seq_q < 0 || seq_k < 0 || __builtin_mul_overflow(seq_q, seq_k, &count)) return false;
  if (count == 0 || scores == nullptr || slope == nullptr || out == nullptr) return false;
  // Distances up to seq_k must be exact in f64 for the f64 lanes (2^53).
  if (seq_k > (int64_t{1} << 52) || PartialOverlap(scores, out, DTypeStorageBytes(dtype, count))) return false;
  // The slope in the compute type; the reference rejects non-finite and negative slopes.
  double m = 0.0;
  switch (dtype) {
    case DType::Float64: m = *static_cast<const double*>(slope); break;
    case DType::Float32: m = *static_cast<const float*>(slope); break;
    case DType::Float16: m = F16ToF32(*static_cast<const uint16_t*>(slope)); break;
    default: m = BF16ToF32(*static_cast<const uint16_t*>(slope)); break;
  }
  if (!std::isfinite(m) || m < 0.0) return false;
  ForRows(seq_q, seq_k, [&](const MaskRows& r) {
    const size_t off = r.first * static_cast<size_t>(seq_k);
    switch (dtype) {
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(AlibiF32)(static_cast<const float*>(scores) + off, static_cast<float*>(out) + off,
                                       static_cast<float>(m), r);
        break;
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(AlibiF64)(static_cast<const double*>(scores) + off, static_cast<double*>(out) + off, m,
                                       r);
        break;
      default:
        HWY_DYNAMIC_DISPATCH(AlibiHalf)(static_cast<const uint16_t*>(scores) + off,
                                        static_cast<uint16_t*>(out) + off, static_cast<float>(m), r,
                                        dtype == DType::BFloat16);
    }
  });
  return true;
}

}  // namespace

void RegisterMasking(KernelTable& t) {
  t.Masking_ApplyMask = [](const void* in, const void* mask, void* out, int64_t count, DType dtype) {
    if (!ApplyMask(in, mask, out, count, dtype)) Reference().Masking_ApplyMask(in, mask, out, count, dtype);
  };
  t.Masking_CausalMask = [](void* out, int64_t seq_q, int64_t seq_k, DType dtype) {
    if (!CausalMask(out, seq_q, seq_k, dtype)) Reference().Masking_CausalMask(out, seq_q, seq_k, dtype);
  };
  t.Masking_ALiBiBias = [](const void* scores, const void* slope, void* out, int64_t seq_q, int64_t seq_k,
                           DType dtype) {
    if (!ALiBiBias(scores, slope, out, seq_q, seq_k, dtype)) {
      Reference().Masking_ALiBiBias(scores, slope, out, seq_q, seq_k, dtype);
    }
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
