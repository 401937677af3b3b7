// bf16 GEMM on vdpbf16ps (see matmul_bf16_dot.hpp). Packing and blocking follow the f32 packed
// GEMM in matmul.cpp: B in panels of 32 columns (two 16-lane vectors), k in pairs, so a panel
// row holds (b[2p][j], b[2p + 1][j]) per 32-bit lane; A in panels of 6 rows, one 32-bit pair
// (a[i][2p], a[i][2p + 1]) per row and pair, broadcast to every lane; a 6 x 32 tile of f32
// accumulators (12 registers) per 256-deep block.
#include "cpu/kernels/matmul_bf16_dot.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "backplane/cpu/threads.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <hwy/aligned_allocator.h>

#define BP_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

namespace backplane::cpu::simd {
namespace {

constexpr size_t kMR = 6;     // rows of a register tile
constexpr size_t kNR = 32;    // columns of a register tile (two vectors of 16 f32)
constexpr size_t kKC = 256;   // k per block (even: whole pairs)
constexpr size_t kMC = 96;    // rows of a packed A block
constexpr size_t kNC = 2048;  // columns of a packed B block

uint32_t Pair(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }

// B[k0 .. k0+kc, j0 .. j0+nc] into panels of kNR columns: dst[panel][pair][kNR] as 32-bit pairs,
// zero padded (a missing k or column is +0, which adds nothing).
BP_BF16_TARGET void PackB(const uint16_t* b, size_t ldb, size_t inner, size_t k0, size_t kc, size_t j0, size_t nc,
                          uint32_t* dst) {
  const size_t pairs = (kc + 1) / 2;
  // Interleaves the 16-bit lanes of two rows: lo takes columns 0..15, hi 16..31.
  const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37,
                                      5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i hi = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24, 55, 23, 54, 22,
                                      53, 21, 52, 20, 51, 19, 50, 18, 49, 17, 48, 16);
  for (size_t p = 0; p * kNR < nc; ++p) {
    const size_t jp = j0 + p * kNR;
    const size_t width = std::min(kNR, nc - p * kNR);
    uint32_t* out = dst + p * pairs * kNR;
    for (size_t q = 0; q < pairs; ++q) {
      const size_t k = k0 + 2 * q;
      const uint16_t* r0 = b + k * ldb + jp;
      const bool second = k + 1 < inner && 2 * q + 1 < kc;
      if (width == kNR) {
        const __m512i x0 = _mm512_loadu_si512(r0);
        const __m512i x1 = second ? _mm512_loadu_si512(r0 + ldb) : _mm512_setzero_si512();
        _mm512_store_si512(out + q * kNR, _mm512_permutex2var_epi16(x0, lo, x1));
        _mm512_store_si512(out + q * kNR + 16, _mm512_permutex2var_epi16(x0, hi, x1));
        continue;
      }
      for (size_t j = 0; j < kNR; ++j) {
        out[q * kNR + j] = j < width ? Pair(r0[j], second ? r0[ldb + j] : uint16_t{0}) : 0u;
      }
    }
  }
}

// The same panels from B^T [cols, inner] (leading dimension ldb): a pair is two adjacent
// elements of a row of B^T, so each panel entry is one 32-bit copy.
void PackBTrans(const uint16_t* bt, size_t ldb, size_t k0, size_t kc, size_t j0, size_t nc, uint32_t* dst) {
  const size_t pairs = (kc + 1) / 2;
  const size_t full = kc / 2;
  for (size_t p = 0; p * kNR < nc; ++p) {
    const size_t width = std::min(kNR, nc - p * kNR);
    uint32_t* out = dst + p * pairs * kNR;
    for (size_t j = 0; j < kNR; ++j) {
      if (j >= width) {
        for (size_t q = 0; q < pairs; ++q) out[q * kNR + j] = 0u;
        continue;
      }
      const uint16_t* row = bt + (j0 + p * kNR + j) * ldb + k0;
      for (size_t q = 0; q < full; ++q) {
        uint32_t v;
        std::memcpy(&v, row + 2 * q, sizeof v);
        out[q * kNR + j] = v;
      }
      if (full < pairs) out[full * kNR + j] = Pair(row[kc - 1], 0);
    }
  }
}

// A[i0 .. i0+mc, k0 .. k0+kc] into panels of kMR rows: dst[panel][pair][kMR], zero padded.
void PackA(const uint16_t* a, size_t lda, size_t i0, size_t mc, size_t k0, size_t kc, uint32_t* dst) {
  const size_t pairs = (kc + 1) / 2;
  const size_t full = kc / 2;
  for (size_t p = 0; p * kMR < mc; ++p) {
    uint32_t* out = dst + p * pairs * kMR;
    for (size_t r = 0; r < kMR; ++r) {
      const size_t i = p * kMR + r;
      if (i >= mc) {
        for (size_t q = 0; q < pairs; ++q) out[q * kMR + r] = 0u;
        continue;
      }
      const uint16_t* row = a + (i0 + i) * lda + k0;
      for (size_t q = 0; q < full; ++q) {
        uint32_t v;
        std::memcpy(&v, row + 2 * q, sizeof v);
        out[q * kMR + r] = v;
      }
      if (full < pairs) out[full * kMR + r] = Pair(row[kc - 1], 0);
    }
  }
}

// One kMR x kNR tile: c (+)= ap^T bp over `pairs` k pairs, for the valid rows x cols.
BP_BF16_TARGET __attribute__((noinline)) void MicroTile(const uint32_t* __restrict ap, const uint32_t* __restrict bp,
                                                        size_t pairs, float* __restrict c, size_t ldc, size_t rows,
                                                        size_t cols, bool accumulate) {
  __m512 acc[kMR][2];
  for (size_t r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; ++r) {
    __builtin_prefetch(c + r * ldc, 1);
    __builtin_prefetch(c + r * ldc + kNR - 1, 1);
  }
  for (size_t q = 0; q < pairs; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(bp + q * kNR);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(bp + q * kNR + 16);
    const uint32_t* a = ap + q * kMR;
#pragma GCC unroll 6
    for (size_t r = 0; r < kMR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  if (rows == kMR && cols == kNR) {
    for (size_t r = 0; r < kMR; ++r) {
      float* row = c + r * ldc;
      __m512 v0 = acc[r][0], v1 = acc[r][1];
      if (accumulate) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(row));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(row + 16));
      }
      _mm512_storeu_ps(row, v0);
      _mm512_storeu_ps(row + 16, v1);
    }
    return;
  }
  alignas(64) float tile[kMR * kNR];
  for (size_t r = 0; r < kMR; ++r) {
    _mm512_store_ps(tile + r * kNR, acc[r][0]);
    _mm512_store_ps(tile + r * kNR + 16, acc[r][1]);
  }
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < cols; ++j) {
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tile[r * kNR + j] : tile[r * kNR + j];
    }
  }
}

}  // namespace

bool HasBf16DotGemm() {
  static const bool has = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

void Bf16DotGemm(const uint16_t* a, const uint16_t* b, float* c, size_t rows, size_t inner, size_t cols,
                 bool trans_b) {
  auto pack = [&](size_t k0, size_t kc, size_t j, size_t n, uint32_t* dst) {
    if (trans_b) return PackBTrans(b, inner, k0, kc, j, n, dst);
    PackB(b, cols, inner, k0, kc, j, n, dst);
  };
  const size_t ncMax = std::min(kNC, cols);
  const size_t panelsMax = (ncMax + kNR - 1) / kNR;
  auto bpack = hwy::AllocateAligned<uint32_t>(panelsMax * kNR * (kKC / 2));
  const bool parallel = rows * inner * cols >= (size_t{1} << 21);
  const size_t rowBlocks = (rows + kMC - 1) / kMC;
  const size_t blockRows = ((rows + rowBlocks - 1) / rowBlocks + kMR - 1) / kMR * kMR;
  for (size_t j0 = 0; j0 < cols; j0 += kNC) {
    const size_t nc = std::min(kNC, cols - j0);
    const size_t panels = (nc + kNR - 1) / kNR;
    size_t groups = rowBlocks >= 16 ? 1 : (16 + rowBlocks - 1) / rowBlocks;
    if (groups > panels / 4) groups = panels / 4 > 0 ? panels / 4 : 1;
    const size_t perGroup = (panels + groups - 1) / groups;
    for (size_t k0 = 0; k0 < inner; k0 += kKC) {
      const size_t kc = std::min(kKC, inner - k0);
      const size_t pairs = (kc + 1) / 2;
      if (parallel && panels >= 8) {
        ParallelFor(static_cast<int64_t>((panels + 3) / 4), 1, [&](int64_t begin, int64_t end) {
          const size_t p0 = static_cast<size_t>(begin) * 4, p1 = std::min(panels, static_cast<size_t>(end) * 4);
          pack(k0, kc, j0 + p0 * kNR, std::min(nc, p1 * kNR) - p0 * kNR, bpack.get() + p0 * pairs * kNR);
        });
      } else {
        pack(k0, kc, j0, nc, bpack.get());
      }
      const bool accumulate = k0 > 0;
      auto task = [&](int64_t begin, int64_t end) {
        auto apack = hwy::AllocateAligned<uint32_t>(kMC * (kKC / 2));
        for (int64_t t = begin; t < end; ++t) {
          const size_t blk = static_cast<size_t>(t) / groups, group = static_cast<size_t>(t) % groups;
          const size_t i0 = blk * blockRows;
          if (i0 >= rows) continue;
          const size_t mc = std::min(blockRows, rows - i0);
          PackA(a, inner, i0, mc, k0, kc, apack.get());
          const size_t pEnd = std::min(panels, (group + 1) * perGroup);
          for (size_t p = group * perGroup; p < pEnd; ++p) {
            const size_t width = std::min(kNR, nc - p * kNR);
            for (size_t q = 0; q * kMR < mc; ++q) {
              MicroTile(apack.get() + q * pairs * kMR, bpack.get() + p * pairs * kNR, pairs,
                        c + (i0 + q * kMR) * cols + j0 + p * kNR, cols, std::min(kMR, mc - q * kMR), width,
                        accumulate);
            }
          }
        }
      };
      const auto tasks = static_cast<int64_t>(rowBlocks * groups);
      if (parallel) {
        ParallelFor(tasks, 1, task);
      } else {
        task(0, tasks);
      }
    }
  }
}

}  // namespace backplane::cpu::simd

#else  // not x86-64

#include <stdexcept>

namespace backplane::cpu::simd {
bool HasBf16DotGemm() { return false; }
void Bf16DotGemm(const uint16_t*, const uint16_t*, float*, size_t, size_t, size_t, bool) {
  throw std::logic_error("Bf16DotGemm: this build has no AVX512-BF16 kernel (check HasBf16DotGemm first)");
}
}  // namespace backplane::cpu::simd

#endif
