// Scalar reference kernels for the PosPop surface: positional population counts.
//
// For w-bit words, counts[b] += number of words with bit b set (b = 0 is the least significant
// bit). This is the one accumulating method family of the library: counts are added to, never
// cleared, so that a long stream can be counted chunk by chunk. Semantics:
// docs/semantics/pospop.md.
#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "backplane/error.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace pospop {
namespace {

// Counts into a local histogram first, checks that adding it cannot overflow any counter, and only
// then adds it to the caller's counts: on any error the counts are untouched.
template <class Word>
void Count(std::string_view op, int64_t* counts, const Word* buf, int64_t count) {
  constexpr int kBits = std::numeric_limits<Word>::digits;
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "buf", buf, count);
  if (counts == nullptr && count > 0) {
    ThrowInvalidArgument(op, "counts", fmt::format("non-null ({} counters) when count > 0", kBits),
                         "null");
  }
  if (count == 0) return;

  // Visits the set bits of each word, lowest first (w & (w - 1) clears the lowest set bit).
  int64_t local[kBits] = {};
  for (int64_t i = 0; i < count; ++i) {
    for (Word w = buf[i]; w != 0; w = static_cast<Word>(w & (w - 1))) {
      ++local[std::countr_zero(w)];
    }
  }

  for (int b = 0; b < kBits; ++b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(counts[b], local[b], &sum)) {
      ThrowInvalidArgument(
          op, "counts", fmt::format("small enough that counts[{}] + {} fits in int64", b, local[b]),
          fmt::format("counts[{}] = {}", b, counts[b]));
    }
  }
  for (int b = 0; b < kBits; ++b) counts[b] += local[b];
}

}  // namespace

void Count8(BP_PARAMS_PosPop8) { Count<uint8_t>("PosPop.Count8", counts, buf, count); }
void Count16(BP_PARAMS_PosPop16) { Count<uint16_t>("PosPop.Count16", counts, buf, count); }
void Count32(BP_PARAMS_PosPop32) { Count<uint32_t>("PosPop.Count32", counts, buf, count); }
void Count64(BP_PARAMS_PosPop64) { Count<uint64_t>("PosPop.Count64", counts, buf, count); }

// The raw bytes of the string, exactly as Count8 (no UTF-8 decoding, no terminator).
void CountString(BP_PARAMS_PosPopString) {
  Count<uint8_t>("PosPop.CountString", counts, reinterpret_cast<const uint8_t*>(str.data()),
                 static_cast<int64_t>(str.size()));
}

}  // namespace pospop

void RegisterPosPop(KernelTable& table) {
  table.PosPop_Count8 = &pospop::Count8;
  table.PosPop_Count16 = &pospop::Count16;
  table.PosPop_Count32 = &pospop::Count32;
  table.PosPop_Count64 = &pospop::Count64;
  table.PosPop_CountString = &pospop::CountString;
}

}  // namespace backplane::cpu::ref
