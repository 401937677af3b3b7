// Highway kernels for the PosPop surface (positional population counts), exact.
//
// Every word width reduces to counting, per byte lane of a vector and per bit, how many bytes
// have the bit set: bit b of a w-byte little-endian word is bit b % 8 of its byte b / 8, and a
// vector of N bytes (N a multiple of w) holds byte k % w of some word in lane k. Sixteen vectors
// at a time go through a Harley-Seal carry-save adder tree (ones, twos, fours, eights, sixteens);
// only the sixteens are split into per-bit u8 counters, flushed to u64 every 255 blocks. The tree
// does several operations per load, so the input is prefetched 2 KiB ahead to keep enough misses
// in flight. HWY_SCALAR (1-byte vectors) counts byte by byte. Buffers are split into 1 MiB
// chunks (parallel when there are two or more). The counts are computed into a local array and
// added to the caller's only after the reference's overflow check would pass; anything unusual
// goes to the reference, which throws its errors.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/pospop.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#ifndef BACKPLANE_CPU_KERNELS_POSPOP_SHARED_
#define BACKPLANE_CPU_KERNELS_POSPOP_SHARED_
#include <cstddef>
#include <cstdint>
#endif  // BACKPLANE_CPU_KERNELS_POSPOP_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kPrefetchBytes = 2048;

// Carry-save adder: h:l = a + b + c per bit.
template <class V>
HWY_INLINE void CSA(V& h, V& l, V a, V b, V c) {
  const V u = hn::Xor(a, b);
  h = hn::Or(hn::And(a, b), hn::And(u, c));
  l = hn::Xor(u, c);
}

// Plain per-byte counting for 1-byte vectors (HWY_SCALAR) and the last bytes.
void CountScalar(const uint8_t* p, size_t n, size_t first, size_t word_bytes, uint64_t* counts) {
  for (size_t k = 0; k < n; ++k) {
    const unsigned byte = p[k];
    uint64_t* c = counts + ((first + k) % word_bytes) * 8;
    for (int b = 0; b < 8; ++b) c[b] += (byte >> b) & 1u;
  }
}

}  // namespace

// Adds to counts[(k % word_bytes) * 8 + b] the number of bytes k in [0, n) with bit b set; p
// starts a word.
void PosPopBytes(const uint8_t* p, size_t n, size_t word_bytes, uint64_t* counts) {
  const hn::ScalableTag<uint8_t> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  if (lanes < 8 || lanes % word_bytes != 0) return CountScalar(p, n, 0, word_bytes, counts);

  constexpr size_t kMaxLanes = hn::MaxLanes(d);
  uint64_t lane_counts[kMaxLanes * 8] = {};
  HWY_ALIGN uint8_t tmp[kMaxLanes];
  V ones = hn::Zero(d), twos = hn::Zero(d), fours = hn::Zero(d), eights = hn::Zero(d);
  // Per-bit u8 counters of the sixteens (separate variables: SVE vectors cannot form arrays).
  V acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
  V acc4 = hn::Zero(d), acc5 = hn::Zero(d), acc6 = hn::Zero(d), acc7 = hn::Zero(d);
  auto count_bits = [&](V s) {  // a set bit gives 0xFF = -1, so subtract
    auto bit = [&](int b) { return hn::VecFromMask(d, hn::TestBit(s, hn::Set(d, static_cast<uint8_t>(1u << b)))); };
    acc0 = hn::Sub(acc0, bit(0));
    acc1 = hn::Sub(acc1, bit(1));
    acc2 = hn::Sub(acc2, bit(2));
    acc3 = hn::Sub(acc3, bit(3));
    acc4 = hn::Sub(acc4, bit(4));
    acc5 = hn::Sub(acc5, bit(5));
    acc6 = hn::Sub(acc6, bit(6));
    acc7 = hn::Sub(acc7, bit(7));
  };
  auto flush = [&] {  // the sixteens counters, weight 16
    auto one = [&](V& acc, int b) {
      hn::Store(acc, d, tmp);
      for (size_t k = 0; k < lanes; ++k) lane_counts[k * 8 + b] += 16u * tmp[k];
      acc = hn::Zero(d);
    };
    one(acc0, 0);
    one(acc1, 1);
    one(acc2, 2);
    one(acc3, 3);
    one(acc4, 4);
    one(acc5, 5);
    one(acc6, 6);
    one(acc7, 7);
  };
  size_t i = 0, blocks = 0;
  for (; i + 16 * lanes <= n; i += 16 * lanes) {
    const uint8_t* q = p + i;
    // The CSA tree has many operations per load; prefetching keeps enough misses in flight.
    for (size_t k = 0; k < 16 * lanes; k += 64) hwy::Prefetch(q + kPrefetchBytes + k);
    auto v = [&](size_t k) { return hn::LoadU(d, q + k * lanes); };
    V twos_a, twos_b, fours_a, fours_b, eights_a, eights_b, sixteens;
    CSA(twos_a, ones, ones, v(0), v(1));
    CSA(twos_b, ones, ones, v(2), v(3));
    CSA(fours_a, twos, twos, twos_a, twos_b);
    CSA(twos_a, ones, ones, v(4), v(5));
    CSA(twos_b, ones, ones, v(6), v(7));
    CSA(fours_b, twos, twos, twos_a, twos_b);
    CSA(eights_a, fours, fours, fours_a, fours_b);
    CSA(twos_a, ones, ones, v(8), v(9));
    CSA(twos_b, ones, ones, v(10), v(11));
    CSA(fours_a, twos, twos, twos_a, twos_b);
    CSA(twos_a, ones, ones, v(12), v(13));
    CSA(twos_b, ones, ones, v(14), v(15));
    CSA(fours_b, twos, twos, twos_a, twos_b);
    CSA(eights_b, fours, fours, fours_a, fours_b);
    CSA(sixteens, eights, eights, eights_a, eights_b);
    count_bits(sixteens);
    if (++blocks == 255) {
      flush();
      blocks = 0;
    }
  }
  flush();
  // The remaining whole vectors (fewer than 16) go through the same adders; a carry out of the
  // eights counts 16 (fewer than 16 such carries, so the u8 counters cannot overflow).
  for (; i + lanes <= n; i += lanes) {
    V carry, sixteens;
    CSA(carry, ones, ones, hn::LoadU(d, p + i), hn::Zero(d));
    CSA(carry, twos, twos, carry, hn::Zero(d));
    CSA(carry, fours, fours, carry, hn::Zero(d));
    CSA(sixteens, eights, eights, carry, hn::Zero(d));
    count_bits(sixteens);
  }
  flush();
  // ones + 2 twos + 4 fours + 8 eights is at most 15 per bit and lane: counted in u8 lanes.
  const auto one = hn::Set(d, uint8_t{1});
  for (int b = 0; b < 8; ++b) {
    auto bit = [&](V v) { return hn::And(hn::ShiftRightSame(v, b), one); };
    const V sum = hn::Add(hn::Add(bit(ones), hn::ShiftLeft<1>(bit(twos))),
                          hn::Add(hn::ShiftLeft<2>(bit(fours)), hn::ShiftLeft<3>(bit(eights))));
    hn::Store(sum, d, tmp);
    for (size_t k = 0; k < lanes; ++k) lane_counts[k * 8 + b] += tmp[k];
  }
  for (size_t k = 0; k < lanes; ++k) {
    uint64_t* c = counts + (k % word_bytes) * 8;
    for (int b = 0; b < 8; ++b) c[b] += lane_counts[k * 8 + b];
  }
  CountScalar(p + i, n - i, i, word_bytes, counts);
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <array>
#include <bit>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(PosPopBytes);

namespace {

// 1 MiB chunks (whole words); chunks run in parallel when there are two or more.
constexpr int64_t kChunkBytes = int64_t{1} << 20;

// Counts `count` words of kBytes bytes into `counts` (8 * kBytes counters); false when the
// reference must run instead (invalid arguments, an overflowing counter, a big-endian host).
template <size_t kBytes>
bool Count(int64_t* counts, const void* buf, int64_t count) {
  if constexpr (std::endian::native != std::endian::little) return false;
  if (count < 0 || (count > 0 && (buf == nullptr || counts == nullptr))) return false;
  if (count == 0) return true;
  constexpr size_t kBits = 8 * kBytes;
  constexpr int64_t kChunkWords = kChunkBytes / static_cast<int64_t>(kBytes);
  const int64_t chunks = (count + kChunkWords - 1) / kChunkWords;
  std::vector<std::array<uint64_t, kBits>> parts(static_cast<size_t>(chunks));
  ParallelFor(count, kChunkWords, [&](int64_t b, int64_t e) {
    auto& part = parts[static_cast<size_t>(b / kChunkWords)];
    part.fill(0);
    HWY_DYNAMIC_DISPATCH(PosPopBytes)(static_cast<const uint8_t*>(buf) + static_cast<size_t>(b) * kBytes,
                                      static_cast<size_t>(e - b) * kBytes, kBytes, part.data());
  });
  int64_t local[kBits] = {};
  for (const auto& part : parts) {
    for (size_t b = 0; b < kBits; ++b) local[b] += static_cast<int64_t>(part[b]);
  }
  for (size_t b = 0; b < kBits; ++b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(counts[b], local[b], &sum)) return false;  // the reference throws
  }
  for (size_t b = 0; b < kBits; ++b) counts[b] += local[b];
  return true;
}

}  // namespace

void RegisterPosPop(KernelTable& t) {
  t.PosPop_Count8 = [](int64_t* counts, const uint8_t* buf, int64_t count) {
    if (!Count<1>(counts, buf, count)) Reference().PosPop_Count8(counts, buf, count);
  };
  t.PosPop_Count16 = [](int64_t* counts, const uint16_t* buf, int64_t count) {
    if (!Count<2>(counts, buf, count)) Reference().PosPop_Count16(counts, buf, count);
  };
  t.PosPop_Count32 = [](int64_t* counts, const uint32_t* buf, int64_t count) {
    if (!Count<4>(counts, buf, count)) Reference().PosPop_Count32(counts, buf, count);
  };
  t.PosPop_Count64 = [](int64_t* counts, const uint64_t* buf, int64_t count) {
    if (!Count<8>(counts, buf, count)) Reference().PosPop_Count64(counts, buf, count);
  };
  t.PosPop_CountString = [](int64_t* counts, std::string_view str) {
    if (!Count<1>(counts, str.data(), static_cast<int64_t>(str.size()))) Reference().PosPop_CountString(counts, str);
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
