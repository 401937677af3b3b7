// Highway kernels for the Dot surface. f32/f16/bf16 elements are widened to f64 lanes, where their
// products are exact, and summed in f64 like the reference; f64 multiplies and adds in f64 lanes
// (two roundings, as the reference). Only the order differs: lanes, then fixed 64K-element
// chunks combined in chunk order, so the result does not depend on the thread count. int8 is
// exact: i16 products summed pairwise into i32 lanes, flushed to int64 well before they could
// overflow.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/dot.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_DOT_SHARED_
#define BACKPLANE_CPU_KERNELS_DOT_SHARED_
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backplane/convert.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::dot_ops {

using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)

}  // namespace backplane::cpu::simd::dot_ops
#endif  // BACKPLANE_CPU_KERNELS_DOT_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace dot_ops;  // NOLINT

// Lanes(df) elements of f32, f16 or bf16 storage at element i, widened exactly to f32 lanes
// (LoadWidenU16 in convert-inl.h).
template <int kKind, class DF>
HWY_INLINE hn::Vec<DF> LoadAsF32(DF df, const void* base, size_t i) {
  if constexpr (kKind == kF32) {
    return hn::LoadU(df, static_cast<const float*>(base) + i);
  } else {
    return LoadWidenU16<kKind == kBF16>(df, static_cast<const uint16_t*>(base) + i);
  }
}

template <int kKind, class D64>
HWY_INLINE hn::Vec<D64> LoadAsF64(D64 d64, const void* base, size_t i) {
  if constexpr (kKind == kF64) {
    return hn::LoadU(d64, static_cast<const double*>(base) + i);
  } else {
    const hn::Rebind<float, D64> df;
    return hn::PromoteTo(d64, LoadAsF32<kKind>(df, base, i));
  }
}

template <int kKind>
double DotT(const void* a, const void* b, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  // f32-class products are exact in f64, so a fused multiply-add rounds once like the reference's
  // add; f64 keeps the reference's separate multiply and add.
  auto step = [&](hn::Vec<decltype(d)> acc, size_t i) {
    const auto x = LoadAsF64<kKind>(d, a, i), y = LoadAsF64<kKind>(d, b, i);
    return kKind == kF64 ? hn::Add(acc, hn::Mul(x, y)) : hn::MulAdd(x, y, acc);
  };
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    s0 = step(s0, i);
    s1 = step(s1, i + lanes);
    s2 = step(s2, i + 2 * lanes);
    s3 = step(s3, i + 3 * lanes);
  }
  for (; i + lanes <= n; i += lanes) s0 = step(s0, i);
  double total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) total += LoadKind(kKind, a, i) * LoadKind(kKind, b, i);
  return total;
}

}  // namespace

double DotFloatChunk(int kind, const void* a, const void* b, size_t n) {
  switch (kind) {
    case kF32: return DotT<kF32>(a, b, n);
    case kF64: return DotT<kF64>(a, b, n);
    case kF16: return DotT<kF16>(a, b, n);
    default: return DotT<kBF16>(a, b, n);
  }
}

// Exact int8 dot of n <= 2^16 elements: every i32 lane receives at most 2 * 2^14 per step and
// at most 2^16 / 2 steps, far below 2^31.
int64_t DotInt8Chunk(const int8_t* a, const int8_t* b, size_t n) {
  const hn::ScalableTag<int32_t> d32;
#if HWY_TARGET == HWY_SCALAR
  const hn::Rebind<int16_t, decltype(d32)> d16;  // one lane, as the scalar op expects
#else
  const hn::Repartition<int16_t, decltype(d32)> d16;
#endif
  const hn::Rebind<int8_t, decltype(d16)> d8;
  const size_t lanes = hn::Lanes(d16);
  auto s0 = hn::Zero(d32), s1 = hn::Zero(d32), s2 = hn::Zero(d32), s3 = hn::Zero(d32);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto x0 = hn::PromoteTo(d16, hn::LoadU(d8, a + i)), y0 = hn::PromoteTo(d16, hn::LoadU(d8, b + i));
    const auto x1 = hn::PromoteTo(d16, hn::LoadU(d8, a + i + lanes));
    const auto y1 = hn::PromoteTo(d16, hn::LoadU(d8, b + i + lanes));
    s0 = hn::ReorderWidenMulAccumulate(d32, x0, y0, s0, s1);
    s2 = hn::ReorderWidenMulAccumulate(d32, x1, y1, s2, s3);
  }
  HWY_ALIGN int32_t lanes32[hn::MaxLanes(d32)];
  hn::Store(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), d32, lanes32);
  int64_t total = 0;
  for (size_t k = 0; k < hn::Lanes(d32); ++k) total += lanes32[k];
  for (; i < n; ++i) total += int64_t{a[i]} * int64_t{b[i]};
  return total;
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(DotFloatChunk);
HWY_EXPORT(DotInt8Chunk);

namespace {
using namespace dot_ops;  // NOLINT

// Fixed chunks: boundaries depend only on the count; chunks run in parallel when there are two
// or more and their partial sums are added in chunk order.
constexpr int64_t kChunk = int64_t{1} << 16;

template <class T, class Fn>
T ChunkedSum(int64_t n, const Fn& chunk) {
  if (n <= kChunk) return chunk(0, n);
  std::vector<T> parts(static_cast<size_t>((n + kChunk - 1) / kChunk));
  ParallelFor(n, kChunk, [&](int64_t b, int64_t e) { parts[static_cast<size_t>(b / kChunk)] = chunk(b, e); });
  T total = 0;
  for (const T p : parts) total += p;
  return total;
}

double Dot(const void* left, const void* right, int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if ((kind < 0 && dtype != DType::Int8) || count < 0 || (count > 0 && (left == nullptr || right == nullptr))) {
    return Reference().Dot_Dot(left, right, count, dtype);  // throws the reference's error
  }
  if (dtype == DType::Int8) {
    const auto* a = static_cast<const int8_t*>(left);
    const auto* b = static_cast<const int8_t*>(right);
    return static_cast<double>(ChunkedSum<int64_t>(count, [&](int64_t s, int64_t e) {
      return HWY_DYNAMIC_DISPATCH(DotInt8Chunk)(a + s, b + s, static_cast<size_t>(e - s));
    }));
  }
  const size_t bytes = KindBytes(kind);
  const double total = ChunkedSum<double>(count, [&](int64_t s, int64_t e) {
    const size_t offset = static_cast<size_t>(s) * bytes;
    return HWY_DYNAMIC_DISPATCH(DotFloatChunk)(kind, static_cast<const uint8_t*>(left) + offset,
                                               static_cast<const uint8_t*>(right) + offset, static_cast<size_t>(e - s));
  });
  return dtype == DType::Float64 ? total : static_cast<double>(static_cast<float>(total));
}

}  // namespace

void RegisterDot(KernelTable& t) { t.Dot_Dot = &Dot; }

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
