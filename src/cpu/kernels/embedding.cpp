// Highway kernels for the Embedding surface.
// - Bag: per bag, the rows are summed in f64 lanes (f32 rows promoted, f16/bf16 rows widened
//   exactly to f32 first) in column blocks on the stack, in the reference's order, so the sums
//   are the reference's bit for bit; stored with one rounding (f16/bf16 via f32, as the reference).
//   Threaded over bags for large outputs.
// - Lookup stays on the reference: it is a row gather that already memmoves whole rows after
//   validating every index (see RegisterEmbedding).
// Unusual calls (bad dtype, sizes <= 0, null or overlapping buffers, bad indices or offsets) go to
// the reference, which validates everything before writing and throws.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/embedding.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_EMBEDDING_OPS_
#define BACKPLANE_CPU_KERNELS_EMBEDDING_OPS_
#include <cstddef>
#include <cstdint>
namespace backplane::cpu::simd::embedding_ops {
enum Storage : int { kF32, kF64, kF16, kBF16 };
constexpr size_t kCols = 512;  // f64 accumulator columns per block (4 KiB)
}  // namespace backplane::cpu::simd::embedding_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace embedding_ops;  // NOLINT

// acc[0, n) += row[0, n) in f64 (f32 promoted; n <= kCols).
HWY_INLINE void AddF32(const float* row, double* acc, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Store(hn::Add(hn::Load(dd, acc + i), hn::PromoteTo(dd, hn::LoadU(df, row + i))), dd, acc + i);
  }
  for (; i < n; ++i) acc[i] += static_cast<double>(row[i]);
}

HWY_INLINE void AddF64(const double* row, double* acc, size_t n) {
  const hn::ScalableTag<double> dd;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Store(hn::Add(hn::Load(dd, acc + i), hn::LoadU(dd, row + i)), dd, acc + i);
  }
  for (; i < n; ++i) acc[i] += row[i];
}

// Sums bags [b0, b1) into out (indices and offsets already validated).
void BagSum(const void* table, int storage, const int32_t* indices, const int32_t* offsets, int64_t bags,
            int64_t count, size_t hidden, void* out, int64_t b0, int64_t b1) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  (void)df;
  (void)lanes;
  HWY_ALIGN double acc[kCols];
  HWY_ALIGN float f[kCols];
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t begin = offsets[b];
    const int64_t end = b + 1 < bags ? offsets[b + 1] : count;
    for (size_t c0 = 0; c0 < hidden; c0 += kCols) {
      const size_t n = hidden - c0 < kCols ? hidden - c0 : kCols;
      for (size_t i = 0; i < n; ++i) acc[i] = 0.0;
      for (int64_t j = begin; j < end; ++j) {
        const size_t row = static_cast<size_t>(indices[j]) * hidden + c0;
        switch (storage) {
          case kF32: AddF32(static_cast<const float*>(table) + row, acc, n); break;
          case kF64: AddF64(static_cast<const double*>(table) + row, acc, n); break;
          default:
            WidenBlock(static_cast<const uint16_t*>(table) + row, f, n, storage == kBF16);
            AddF32(f, acc, n);
        }
      }
      const size_t o = static_cast<size_t>(b) * hidden + c0;
      if (storage == kF64) {
        for (size_t i = 0; i < n; ++i) static_cast<double*>(out)[o + i] = acc[i];
        continue;
      }
      float* dst = storage == kF32 ? static_cast<float*>(out) + o : f;
      size_t i = 0;
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128  // their DemoteTo clamps to +-FLT_MAX
      for (; i + lanes <= n; i += lanes) hn::StoreU(hn::DemoteTo(df, hn::Load(dd, acc + i)), df, dst + i);
#endif
      for (; i < n; ++i) dst[i] = static_cast<float>(acc[i]);
      if (storage != kF32) NarrowBlock(f, static_cast<uint16_t*>(out) + o, n, storage == kBF16);
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(BagSum);

namespace {
using namespace embedding_ops;  // NOLINT

int StorageOf(DType d) {
  switch (d) {
    case DType::Float32: return kF32;
    case DType::Float64: return kF64;
    case DType::Float16: return kF16;
    case DType::BFloat16: return kBF16;
    default: return -1;
  }
}

bool Disjoint(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return !(x < y + bBytes && y < x + aBytes);
}

void Bag(const void* table, const int32_t* indices, const int32_t* offsets, void* out, int64_t vocab, int64_t hidden,
         int64_t bags, int64_t count, DType dtype) {
  const int storage = StorageOf(dtype);
  int64_t tableCount = 0, outCount = 0;
  bool ok = storage >= 0 && vocab > 0 && hidden > 0 && bags > 0 && count >= 0 && table && offsets && out &&
            (count == 0 || indices) && !__builtin_mul_overflow(vocab, hidden, &tableCount) &&
            !__builtin_mul_overflow(bags, hidden, &outCount);
  for (int64_t i = 0; ok && i < count; ++i) ok = indices[i] >= 0 && indices[i] < vocab;
  for (int64_t b = 0; ok && b < bags; ++b) {
    ok = offsets[b] <= count && (b == 0 ? offsets[b] == 0 : offsets[b] >= offsets[b - 1]);
  }
  const size_t outBytes = ok ? DTypeStorageBytes(dtype, outCount) : 0;
  ok = ok && Disjoint(out, outBytes, table, DTypeStorageBytes(dtype, tableCount)) &&
       Disjoint(out, outBytes, offsets, static_cast<size_t>(bags) * 4) &&
       (count == 0 || Disjoint(out, outBytes, indices, static_cast<size_t>(count) * 4));
  if (!ok) return Reference().Embedding_Bag(table, indices, offsets, out, vocab, hidden, bags, count, dtype);
  // Threads over bags when there is enough work (rows summed x hidden).
  const int64_t work = std::max(count, bags) * hidden;
  const int64_t grain = work >= (int64_t{1} << 17) ? std::max<int64_t>(1, bags * (int64_t{1} << 16) / work) : bags;
  ParallelFor(bags, grain, [&](int64_t b0, int64_t b1) {
    HWY_DYNAMIC_DISPATCH(BagSum)(table, storage, indices, offsets, bags, count, static_cast<size_t>(hidden), out,
                                 b0, b1);
  });
}

}  // namespace

void RegisterEmbedding(KernelTable& t) {
  t.Embedding_Bag = &Bag;
  t.ScalarByDesign(catalog::MethodId::Embedding_Lookup,
                   "a row gather: the reference validates every index, then memmoves whole rows");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
