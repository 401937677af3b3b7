// Highway kernels for the VSA surface (docs/semantics/vsa.md). Every method is accelerated:
// - Bind, Bundle: product / sum in the storage's compute type (f32 and f64 lanes; f16/bf16 widened
//   to f32 in blocks and rounded back to nearest even), bit-identical to the reference.
// - Similarity: one pass accumulating l.r, |l|^2 and |r|^2 in f64 lanes over fixed 64K-element
//   chunks, combined in chunk order. For f32/f16/bf16 the reference's power-of-two prescaling
//   changes nothing (every product of two such values is exact and normal in f64, so the scaling
//   is exact), only the summation order differs. f64 vectors whose largest magnitude lies outside
//   [2^-450, 2^450], or that overflow, go to the reference, which prescales.
// - Permute, InversePermute: a rotation of raw storage as two memcpy calls (in place: the
//   shorter part through a buffer) instead of the reference's copy plus element-wise memcpy.
// Invalid arguments go to the reference before anything is written.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/vsa.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_VSA_OPS_
#define BACKPLANE_CPU_KERNELS_VSA_OPS_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::vsa_ops {
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)
enum Op : int { kMul, kAdd };
constexpr size_t kBlock = 1024;
// Partial sums of one chunk (f64 max magnitudes for the f64 range check).
struct SimPart {
  double dot = 0.0, na = 0.0, nb = 0.0, max_a = 0.0, max_b = 0.0;
};
}  // namespace backplane::cpu::simd::vsa_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::vsa_hwy::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace vsa_ops;  // NOLINT
using ::backplane::cpu::simd::HWY_NAMESPACE::NarrowBlock;
using ::backplane::cpu::simd::HWY_NAMESPACE::WidenBlock;

template <class V>
HWY_INLINE V Apply(int op, V a, V b) {
  return op == kMul ? hn::Mul(a, b) : hn::Add(a, b);
}

template <class T>
void BinaryTyped(int op, const T* a, const T* b, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(Apply(op, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  for (; i < n; ++i) out[i] = op == kMul ? a[i] * b[i] : a[i] + b[i];
}

void BinaryChunk(int op, int kind, const void* a, const void* b, void* out, size_t n) {
  if (kind == kF32)
    return BinaryTyped(op, static_cast<const float*>(a), static_cast<const float*>(b),
                       static_cast<float*>(out), n);
  if (kind == kF64)
    return BinaryTyped(op, static_cast<const double*>(a), static_cast<const double*>(b),
                       static_cast<double*>(out), n);
  const bool bf16 = kind == kBF16;
  const auto* ha = static_cast<const uint16_t*>(a);
  const auto* hb = static_cast<const uint16_t*>(b);
  auto* ho = static_cast<uint16_t*>(out);
  HWY_ALIGN float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(ha + i, fa, m, bf16);
    WidenBlock(hb + i, fb, m, bf16);
    BinaryTyped(op, fa, fb, fa, m);
    NarrowBlock(fa, ho + i, m, bf16);
  }
}

// Adds sum(a b), sum(a a), sum(b b) of n elements to p in f64 lanes (two accumulators each), and
// for f64 input the largest magnitudes.
template <class T>
void SimSums(const T* a, const T* b, size_t n, SimPart& p) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;
  const size_t lanes = hn::Lanes(dd);
  auto dot0 = hn::Zero(dd), dot1 = hn::Zero(dd), na0 = hn::Zero(dd), na1 = hn::Zero(dd);
  auto nb0 = hn::Zero(dd), nb1 = hn::Zero(dd), ma = hn::Zero(dd), mb = hn::Zero(dd);
  auto load = [&](const T* x) {
    if constexpr (sizeof(T) == 8) {
      return hn::LoadU(dd, x);
    } else {
      return hn::PromoteTo(dd, hn::LoadU(dt, x));
    }
  };
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto x0 = load(a + i), y0 = load(b + i), x1 = load(a + i + lanes),
               y1 = load(b + i + lanes);
    dot0 = hn::MulAdd(x0, y0, dot0);
    dot1 = hn::MulAdd(x1, y1, dot1);
    na0 = hn::MulAdd(x0, x0, na0);
    na1 = hn::MulAdd(x1, x1, na1);
    nb0 = hn::MulAdd(y0, y0, nb0);
    nb1 = hn::MulAdd(y1, y1, nb1);
    if constexpr (sizeof(T) == 8) {
      ma = hn::Max(ma, hn::Max(hn::Abs(x0), hn::Abs(x1)));
      mb = hn::Max(mb, hn::Max(hn::Abs(y0), hn::Abs(y1)));
    }
  }
  double dot = hn::GetLane(hn::SumOfLanes(dd, hn::Add(dot0, dot1)));
  double na = hn::GetLane(hn::SumOfLanes(dd, hn::Add(na0, na1)));
  double nb = hn::GetLane(hn::SumOfLanes(dd, hn::Add(nb0, nb1)));
  double max_a = hn::GetLane(hn::MaxOfLanes(dd, ma)), max_b = hn::GetLane(hn::MaxOfLanes(dd, mb));
  for (; i < n; ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    dot += x * y;
    na += x * x;
    nb += y * y;
    max_a = max_a < std::abs(x) ? std::abs(x) : max_a;
    max_b = max_b < std::abs(y) ? std::abs(y) : max_b;
  }
  p.dot += dot;
  p.na += na;
  p.nb += nb;
  // NaN makes na/nb NaN, which sends the call to the reference; the maxima need not see it.
  p.max_a = p.max_a < max_a ? max_a : p.max_a;
  p.max_b = p.max_b < max_b ? max_b : p.max_b;
}

void SimilarityChunk(int kind, const void* a, const void* b, size_t n, SimPart* part) {
  if (kind == kF32)
    return SimSums(static_cast<const float*>(a), static_cast<const float*>(b), n, *part);
  if (kind == kF64)
    return SimSums(static_cast<const double*>(a), static_cast<const double*>(b), n, *part);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(a) + i, fa, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(b) + i, fb, m, bf16);
    SimSums(fa, fb, m, *part);
  }
}

}  // namespace backplane::cpu::simd::vsa_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace vsa_hwy {
HWY_EXPORT(BinaryChunk);
HWY_EXPORT(SimilarityChunk);

namespace {
using namespace vsa_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;  // fixed chunks: results independent of thread count

const uint8_t* At(const void* p, int kind, int64_t i) {
  return static_cast<const uint8_t*>(p) + static_cast<size_t>(i) * KindBytes(kind);
}

template <int kOp>
void BinaryOut(const void* left, const void* right, void* output, int64_t count, DType dtype,
               void (*fallback)(const void*, const void*, void*, int64_t, DType)) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count < 0 || (count > 0 && (!left || !right || !output))) {
    return fallback(left, right, output, count, dtype);
  }
  // Element i is read before it is written: in-place calls work chunk by chunk too.
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(BinaryChunk)
    (kOp, kind, At(left, kind, b), At(right, kind, b), const_cast<uint8_t*>(At(output, kind, b)),
     static_cast<size_t>(e - b));
  });
}

double Similarity(const void* left, const void* right, int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count <= 0 || !left || !right)
    return Reference().VSA_Similarity(left, right, count, dtype);
  std::vector<SimPart> parts(static_cast<size_t>((count + kChunk - 1) / kChunk));
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(SimilarityChunk)
    (kind, At(left, kind, b), At(right, kind, b), static_cast<size_t>(e - b),
     &parts[static_cast<size_t>(b / kChunk)]);
  });
  SimPart t;
  for (const SimPart& p : parts) {
    t.dot += p.dot;
    t.na += p.na;
    t.nb += p.nb;
    t.max_a = std::max(t.max_a, p.max_a);
    t.max_b = std::max(t.max_b, p.max_b);
  }
  if (kind == kF64) {
    // Unscaled f64 sums are exact up to order when no square overflows and none that matters
    // underflows: maxima in [2^-450, 2^450] (or 0). Otherwise the reference prescales.
    auto in_range = [](double m) { return m == 0.0 || (m >= 0x1p-450 && m <= 0x1p450); };
    if (!std::isfinite(t.na) || !std::isfinite(t.nb) || !in_range(t.max_a) || !in_range(t.max_b)) {
      return Reference().VSA_Similarity(left, right, count, dtype);
    }
  } else if (!std::isfinite(t.na) || !std::isfinite(t.nb)) {
    return std::numeric_limits<double>::quiet_NaN();  // an Inf or NaN element (no finite sum
                                                      // overflows)
  }
  if (t.na == 0.0 || t.nb == 0.0) return 0.0;
  return std::clamp(t.dot / (std::sqrt(t.na) * std::sqrt(t.nb)), -1.0, 1.0);
}

bool Overlap(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

// numpy.roll(input, Shift) (inverse: -Shift) on raw storage.
template <bool kInverse>
void Permute(const VSAConfig& config, const void* input, void* output, int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count < 0 || (count > 0 && (!input || !output))) {
    return (kInverse ? Reference().VSA_InversePermute : Reference().VSA_Permute)(
        config, input, output, count, dtype);
  }
  if (count == 0) return;
  const int64_t s = ((config.Shift % count) + count) % count;
  const auto offset = static_cast<size_t>(kInverse ? (count - s) % count
                                                   : s);  // output[(i + offset) mod n] = input[i]
  const size_t elem = KindBytes(kind), n = static_cast<size_t>(count), bytes = n * elem;
  const auto* src = static_cast<const uint8_t*>(input);
  auto* dst = static_cast<uint8_t*>(output);
  const size_t head = (n - offset) * elem,
               tail = offset * elem;  // input[0, n - offset) and the rest
  if (!Overlap(src, dst, bytes)) {
    std::memcpy(dst + tail, src, head);
    std::memcpy(dst, src + head, tail);
  } else if (src == dst) {
    if (offset == 0) return;
    if (tail <= head) {  // keep the tail, move the head up
      std::vector<uint8_t> keep(src + head, src + bytes);
      std::memmove(dst + tail, src, head);
      std::memcpy(dst, keep.data(), tail);
    } else {  // keep the head, move the tail down
      std::vector<uint8_t> keep(src, src + head);
      std::memmove(dst, src + head, tail);
      std::memcpy(dst + tail, keep.data(), head);
    }
  } else {  // partial overlap: rotate from a copy
    const std::vector<uint8_t> copy(src, src + bytes);
    std::memcpy(dst + tail, copy.data(), head);
    std::memcpy(dst, copy.data() + head, tail);
  }
}

}  // namespace
}  // namespace vsa_hwy

void RegisterVSA(KernelTable& t) {
  using namespace vsa_ops;  // NOLINT
  namespace k = vsa_hwy;
  t.VSA_Bind = [](const void* l, const void* r, void* o, int64_t n, DType dt) {
    k::BinaryOut<kMul>(l, r, o, n, dt, Reference().VSA_Bind);
  };
  t.VSA_Bundle = [](const void* l, const void* r, void* o, int64_t n, DType dt) {
    k::BinaryOut<kAdd>(l, r, o, n, dt, Reference().VSA_Bundle);
  };
  t.VSA_Permute = &k::Permute<false>;
  t.VSA_InversePermute = &k::Permute<true>;
  t.VSA_Similarity = &k::Similarity;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
