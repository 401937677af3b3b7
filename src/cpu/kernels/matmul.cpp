// Fast kernels for the Matmul surface: C[rows, cols] = A[rows, inner] * B[inner, cols], row-major.
//
// - Small products (rows * inner * cols <= kExactWork): a Highway kernel that accumulates every
//   dot product in f64 in k order, vectorised over output columns, and rounds once, exactly as
//   the reference does (the products of f32/f16/bf16 values are exact in f64, and f64 uses a
//   separate multiply and add), so small results are bit-identical to the reference.
// - f32 otherwise: our packed GEMM below (6 x 2-vector register tiles accumulating in f32 in k
//   order, tasks over row blocks and column groups), few rows streaming B, one column as dot
//   products; with BACKPLANE_GEMM=openblas (backplane/cpu/gemm_path.hpp) OpenBLAS cblas_sgemm /
//   cblas_sgemv.
// - f64 otherwise: OpenBLAS cblas_dgemm (cblas_dgemv for a single row or column).
// - f16 / bf16 otherwise: the same packed GEMM, operands widened to f32 while packing, and one
//   round-to-nearest-even narrowing at the end; bf16 on the AVX-512 target of a CPU with
//   AVX512-BF16 runs vdpbf16ps instead (matmul_bf16_dot.cpp), accumulating in f32 as well.
// The large paths differ from the reference by the summation order and precision only; the
// conformance runner (src/conformance/runners_nn.cpp) checks them against the GEMM error bound
// tol.rel * sum_k |a_ik||b_kj| + tol.abs. Anything unusual (bad dtype, negative or overflowing
// sizes, null pointers) goes to the reference before anything is written.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/matmul.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"
#include "cpu/kernels/matmul_bf16_dot.hpp"

#ifndef BACKPLANE_CPU_KERNELS_MATMUL_SHARED_
#define BACKPLANE_CPU_KERNELS_MATMUL_SHARED_
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backplane/cpu/threads.hpp"
namespace backplane::cpu::simd::matmul_ops {
enum Storage : int { kF32, kF16, kBF16 };
constexpr size_t kMR = 6;     // rows of a register tile
constexpr size_t kKC = 256;   // inner block (packed panels stay in L1/L2)
constexpr size_t kMC = 96;    // rows of a packed A block (multiple of kMR)
constexpr size_t kNC = 2048;  // columns of a packed B block
}  // namespace backplane::cpu::simd::matmul_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace matmul_ops;  // NOLINT

// Lanes(df) elements of storage kSrc at element i, widened exactly to f32 (convert-inl.h).
template <int kSrc, class DF>
HWY_INLINE hn::Vec<DF> LoadWide(DF df, const void* base, size_t i) {
  if constexpr (kSrc == kF32) {
    return hn::LoadU(df, static_cast<const float*>(base) + i);
  } else {
    return LoadWidenU16<kSrc == kBF16>(df, static_cast<const uint16_t*>(base) + i);
  }
}

template <int kSrc>
HWY_INLINE float LoadWideScalar(const void* base, size_t i) {
  if constexpr (kSrc == kF32) {
    return static_cast<const float*>(base)[i];
  } else if constexpr (kSrc == kBF16) {
    return BF16ToF32(static_cast<const uint16_t*>(base)[i]);
  } else {
    return F16ToF32(static_cast<const uint16_t*>(base)[i]);
  }
}

// ---- Exact small path: f64 accumulation in k order, vectorised over columns
// ----------------------

// c[r, :] (f64) = sum_k a[r, k] * b[k, :] with a, b already widened to f64; b has ldb >= cols
// columns, padded with zeros to a multiple of the lane count.
void ExactRows(const double* a, const double* b, size_t ldb, double* c, size_t rows, size_t inner,
               size_t cols) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    const double* ar = a + r * inner;
    size_t j = 0;
    for (; j + 2 * lanes <= ldb; j += 2 * lanes) {
      auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
      for (size_t k = 0; k < inner; ++k) {
        const auto av = hn::Set(d, ar[k]);
        acc0 = hn::Add(acc0, hn::Mul(av, hn::LoadU(d, b + k * ldb + j)));
        acc1 = hn::Add(acc1, hn::Mul(av, hn::LoadU(d, b + k * ldb + j + lanes)));
      }
      hn::StoreU(acc0, d, c + r * ldb + j);
      hn::StoreU(acc1, d, c + r * ldb + j + lanes);
    }
    for (; j < ldb; j += lanes) {
      auto acc = hn::Zero(d);
      for (size_t k = 0; k < inner; ++k) {
        acc = hn::Add(acc, hn::Mul(hn::Set(d, ar[k]), hn::LoadU(d, b + k * ldb + j)));
      }
      hn::StoreU(acc, d, c + r * ldb + j);
    }
  }
  (void)cols;
}

// ---- Packed f32 GEMM for f16/bf16 (and f32) operands
// ---------------------------------------------

// Packs B[k0 .. k0+kc, j0 .. j0+nc] into panels of NR = 2 vectors: dst[p][k][NR], zero padded.
// With kTransB the source is B^T ([cols, inner], leading dimension ldb).
template <int kSrc, bool kTransB = false>
void PackB(const void* b, size_t ldb, size_t k0, size_t kc, size_t j0, size_t nc, float* dst) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  const size_t nr = 2 * lanes;
  for (size_t p = 0; p * nr < nc; ++p) {
    const size_t jp = j0 + p * nr;
    const size_t width = nc - p * nr < nr ? nc - p * nr : nr;
    float* out = dst + p * kc * nr;
    if constexpr (kTransB) {
      for (size_t j = 0; j < nr; ++j) {
        if (j < width) {
          const size_t row = (jp + j) * ldb + k0;
          for (size_t k = 0; k < kc; ++k) out[k * nr + j] = LoadWideScalar<kSrc>(b, row + k);
        } else {
          for (size_t k = 0; k < kc; ++k) out[k * nr + j] = 0.0f;
        }
      }
      continue;
    }
    for (size_t k = 0; k < kc; ++k) {
      const size_t row = (k0 + k) * ldb;
      if (width == nr) {
        hn::Store(LoadWide<kSrc>(df, b, row + jp), df, out + k * nr);
        hn::Store(LoadWide<kSrc>(df, b, row + jp + lanes), df, out + k * nr + lanes);
      } else {
        for (size_t j = 0; j < nr; ++j)
          out[k * nr + j] = j < width ? LoadWideScalar<kSrc>(b, row + jp + j) : 0.0f;
      }
    }
  }
}

// Packs A[i0 .. i0+mc, k0 .. k0+kc] into panels of kMR rows: dst[p][k][kMR], zero padded.
template <int kSrc>
void PackA(const void* a, size_t lda, size_t i0, size_t mc, size_t k0, size_t kc, float* dst) {
  for (size_t p = 0; p * kMR < mc; ++p) {
    float* out = dst + p * kc * kMR;
    for (size_t r = 0; r < kMR; ++r) {
      const size_t i = p * kMR + r;
      if (i < mc) {
        const size_t row = (i0 + i) * lda + k0;
        for (size_t k = 0; k < kc; ++k) out[k * kMR + r] = LoadWideScalar<kSrc>(a, row + k);
      } else {
        for (size_t k = 0; k < kc; ++k) out[k * kMR + r] = 0.0f;
      }
    }
  }
}

// One kMR x 2-vector register tile: tile = ap^T * bp over kc; then c (+)= tile for the valid
// rows x cols (c has leading dimension ldc).
HWY_NOINLINE void MicroTile(const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp, size_t kc,
                            float* HWY_RESTRICT c, size_t ldc, size_t rows, size_t cols,
                            bool accumulate) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  auto c00 = hn::Zero(df), c01 = hn::Zero(df), c10 = hn::Zero(df), c11 = hn::Zero(df);
  auto c20 = hn::Zero(df), c21 = hn::Zero(df), c30 = hn::Zero(df), c31 = hn::Zero(df);
  auto c40 = hn::Zero(df), c41 = hn::Zero(df), c50 = hn::Zero(df), c51 = hn::Zero(df);
  for (size_t r = 0; r < rows; ++r) {  // the tile's rows of c, while the k loop runs
    __builtin_prefetch(c + r * ldc, 1);
    __builtin_prefetch(c + r * ldc + 2 * lanes - 1, 1);
  }
  for (size_t k = 0; k < kc; ++k) {
    const auto b0 = hn::Load(df, bp + k * 2 * lanes);
    const auto b1 = hn::Load(df, bp + k * 2 * lanes + lanes);
    const float* a = ap + k * kMR;
    auto av = hn::Set(df, a[0]);
    c00 = hn::MulAdd(av, b0, c00);
    c01 = hn::MulAdd(av, b1, c01);
    av = hn::Set(df, a[1]);
    c10 = hn::MulAdd(av, b0, c10);
    c11 = hn::MulAdd(av, b1, c11);
    av = hn::Set(df, a[2]);
    c20 = hn::MulAdd(av, b0, c20);
    c21 = hn::MulAdd(av, b1, c21);
    av = hn::Set(df, a[3]);
    c30 = hn::MulAdd(av, b0, c30);
    c31 = hn::MulAdd(av, b1, c31);
    av = hn::Set(df, a[4]);
    c40 = hn::MulAdd(av, b0, c40);
    c41 = hn::MulAdd(av, b1, c41);
    av = hn::Set(df, a[5]);
    c50 = hn::MulAdd(av, b0, c50);
    c51 = hn::MulAdd(av, b1, c51);
  }
  if (rows == kMR && cols == 2 * lanes) {
    float* r0 = c;
    float* r1 = c + ldc;
    float* r2 = c + 2 * ldc;
    float* r3 = c + 3 * ldc;
    float* r4 = c + 4 * ldc;
    float* r5 = c + 5 * ldc;
    if (accumulate) {
      c00 = hn::Add(c00, hn::LoadU(df, r0));
      c01 = hn::Add(c01, hn::LoadU(df, r0 + lanes));
      c10 = hn::Add(c10, hn::LoadU(df, r1));
      c11 = hn::Add(c11, hn::LoadU(df, r1 + lanes));
      c20 = hn::Add(c20, hn::LoadU(df, r2));
      c21 = hn::Add(c21, hn::LoadU(df, r2 + lanes));
      c30 = hn::Add(c30, hn::LoadU(df, r3));
      c31 = hn::Add(c31, hn::LoadU(df, r3 + lanes));
      c40 = hn::Add(c40, hn::LoadU(df, r4));
      c41 = hn::Add(c41, hn::LoadU(df, r4 + lanes));
      c50 = hn::Add(c50, hn::LoadU(df, r5));
      c51 = hn::Add(c51, hn::LoadU(df, r5 + lanes));
    }
    hn::StoreU(c00, df, r0);
    hn::StoreU(c01, df, r0 + lanes);
    hn::StoreU(c10, df, r1);
    hn::StoreU(c11, df, r1 + lanes);
    hn::StoreU(c20, df, r2);
    hn::StoreU(c21, df, r2 + lanes);
    hn::StoreU(c30, df, r3);
    hn::StoreU(c31, df, r3 + lanes);
    hn::StoreU(c40, df, r4);
    hn::StoreU(c41, df, r4 + lanes);
    hn::StoreU(c50, df, r5);
    hn::StoreU(c51, df, r5 + lanes);
    return;
  }
  HWY_ALIGN float tile[kMR * 2 * hn::MaxLanes(df)];
  const size_t nr = 2 * lanes;
  hn::Store(c00, df, tile + 0 * nr);
  hn::Store(c01, df, tile + 0 * nr + lanes);
  hn::Store(c10, df, tile + 1 * nr);
  hn::Store(c11, df, tile + 1 * nr + lanes);
  hn::Store(c20, df, tile + 2 * nr);
  hn::Store(c21, df, tile + 2 * nr + lanes);
  hn::Store(c30, df, tile + 3 * nr);
  hn::Store(c31, df, tile + 3 * nr + lanes);
  hn::Store(c40, df, tile + 4 * nr);
  hn::Store(c41, df, tile + 4 * nr + lanes);
  hn::Store(c50, df, tile + 5 * nr);
  hn::Store(c51, df, tile + 5 * nr + lanes);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < cols; ++j) {
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + tile[r * nr + j] : tile[r * nr + j];
    }
  }
}

// c (f32, [rows, cols], leading dimension ldc) = a * b, or c += a * b with addToC, for storage
// kSrc, packed and blocked (a [rows, inner] with leading dimension lda; b [inner, cols], or
// [cols, inner] with kTransB, leading dimension ldb). Tasks are (row block, column group) pairs,
// so few-row products use every thread too (unless !threads: the caller runs in parallel); each
// output's sum runs over k in the same order whatever the split.
template <int kSrc, bool kTransB = false>
void PackedGemm(const void* a, size_t lda, const void* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t inner,
                size_t cols, bool addToC = false, bool threads = true) {
  const hn::ScalableTag<float> df;
  const size_t nr = 2 * hn::Lanes(df);
  const size_t ncMax = kNC < cols ? kNC : cols;
  const size_t panelsMax = (ncMax + nr - 1) / nr;
  auto bpack = hwy::AllocateAligned<float>(panelsMax * nr * kKC);
  const bool parallel = threads && rows * inner * cols >= (size_t{1} << 21);
  // Row blocks of at most kMC rows, as even as whole tiles allow (so threads get equal work).
  const size_t rowBlocks = (rows + kMC - 1) / kMC;
  const size_t blockRows = ((rows + rowBlocks - 1) / rowBlocks + kMR - 1) / kMR * kMR;
  for (size_t j0 = 0; j0 < cols; j0 += kNC) {
    const size_t nc = cols - j0 < kNC ? cols - j0 : kNC;
    const size_t panels = (nc + nr - 1) / nr;
    // Column groups of at least 4 panels, enough that there are >= 16 tasks where possible.
    size_t groups = rowBlocks >= 16 ? 1 : (16 + rowBlocks - 1) / rowBlocks;
    if (groups > panels / 4) groups = panels / 4 > 0 ? panels / 4 : 1;
    const size_t perGroup = (panels + groups - 1) / groups;
    for (size_t k0 = 0; k0 < inner; k0 += kKC) {
      const size_t kc = inner - k0 < kKC ? inner - k0 : kKC;
      if (parallel && panels >= 8) {  // panels of 4 x 2 vectors per chunk, each packed independently
        ParallelFor(static_cast<int64_t>((panels + 3) / 4), 1, [&](int64_t begin, int64_t end) {
          const size_t p0 = static_cast<size_t>(begin) * 4, p1 = std::min(panels, static_cast<size_t>(end) * 4);
          PackB<kSrc, kTransB>(b, ldb, k0, kc, j0 + p0 * nr, std::min(nc, p1 * nr) - p0 * nr,
                               bpack.get() + p0 * kc * nr);
        });
      } else {
        PackB<kSrc, kTransB>(b, ldb, k0, kc, j0, nc, bpack.get());
      }
      const bool accumulate = addToC || k0 > 0;
      const float* bp = bpack.get();
      auto task = [&](int64_t begin, int64_t end) {
        auto apack = hwy::AllocateAligned<float>(kMC * kKC);
        for (int64_t t = begin; t < end; ++t) {
          const size_t blk = static_cast<size_t>(t) / groups, group = static_cast<size_t>(t) % groups;
          const size_t i0 = blk * blockRows;
          if (i0 >= rows) continue;
          const size_t mc = rows - i0 < blockRows ? rows - i0 : blockRows;
          PackA<kSrc>(a, lda, i0, mc, k0, kc, apack.get());
          const size_t pEnd = (group + 1) * perGroup < panels ? (group + 1) * perGroup : panels;
          for (size_t p = group * perGroup; p < pEnd; ++p) {
            const size_t width = nc - p * nr < nr ? nc - p * nr : nr;
            for (size_t q = 0; q * kMR < mc; ++q) {
              const size_t height = mc - q * kMR < kMR ? mc - q * kMR : kMR;
              MicroTile(apack.get() + q * kc * kMR, bp + p * kc * nr, kc,
                        c + (i0 + q * kMR) * ldc + j0 + p * nr, ldc, height, width, accumulate);
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

// A few rows (rows < kMR): stream B once, row by row, c[r, chunk] += a[r, k] * B[k, chunk] with
// the c chunk in L1. f32 accumulation in k order.
template <int kSrc>
void FewRowsGemm(const void* a, const void* b, float* c, size_t rows, size_t inner, size_t cols) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  const size_t chunkCols = rows == 1 ? 4096 : 2048;
  std::vector<float> af(rows * inner);
  for (size_t i = 0; i < rows * inner; ++i) af[i] = LoadWideScalar<kSrc>(a, i);
  auto chunk = [&](int64_t begin, int64_t end) {
    auto brow = hwy::AllocateAligned<float>(chunkCols);
    for (int64_t ch = begin; ch < end; ++ch) {
      const size_t j0 = static_cast<size_t>(ch) * chunkCols;
      const size_t width = cols - j0 < chunkCols ? cols - j0 : chunkCols;
      const size_t vecEnd = width / lanes * lanes;
      for (size_t r = 0; r < rows; ++r) std::memset(c + r * cols + j0, 0, width * sizeof(float));
      for (size_t k = 0; k < inner; ++k) {
        const size_t row = k * cols + j0;
        if (rows == 1 && k + 4 <= inner) {
          // Four rows of B per pass over the c chunk (in k order: ((c + a0 b0) + a1 b1) + ...).
          const auto a0 = hn::Set(df, af[k]), a1 = hn::Set(df, af[k + 1]);
          const auto a2 = hn::Set(df, af[k + 2]), a3 = hn::Set(df, af[k + 3]);
          float* cr = c + j0;
          for (size_t j = 0; j < vecEnd; j += lanes) {
            auto acc = hn::MulAdd(a0, LoadWide<kSrc>(df, b, row + j), hn::LoadU(df, cr + j));
            acc = hn::MulAdd(a1, LoadWide<kSrc>(df, b, row + cols + j), acc);
            acc = hn::MulAdd(a2, LoadWide<kSrc>(df, b, row + 2 * cols + j), acc);
            acc = hn::MulAdd(a3, LoadWide<kSrc>(df, b, row + 3 * cols + j), acc);
            hn::StoreU(acc, df, cr + j);
          }
          for (size_t j = vecEnd; j < width; ++j) {
            float& cj = c[j0 + j];
            for (size_t kk = 0; kk < 4; ++kk)
              cj = std::fma(af[k + kk], LoadWideScalar<kSrc>(b, row + kk * cols + j), cj);
          }
          k += 3;
          continue;
        }
        if (rows == 1) {
          const auto av = hn::Set(df, af[k]);
          float* cr = c + j0;
          for (size_t j = 0; j < vecEnd; j += lanes) {
            hn::StoreU(hn::MulAdd(av, LoadWide<kSrc>(df, b, row + j), hn::LoadU(df, cr + j)), df,
                       cr + j);
          }
        } else {
          for (size_t j = 0; j < vecEnd; j += lanes)
            hn::Store(LoadWide<kSrc>(df, b, row + j), df, brow.get() + j);
          for (size_t r = 0; r < rows; ++r) {
            const auto av = hn::Set(df, af[r * inner + k]);
            float* cr = c + r * cols + j0;
            for (size_t j = 0; j < vecEnd; j += lanes) {
              hn::StoreU(hn::MulAdd(av, hn::Load(df, brow.get() + j), hn::LoadU(df, cr + j)), df,
                         cr + j);
            }
          }
        }
        for (size_t j = vecEnd; j < width; ++j) {
          const float bv = LoadWideScalar<kSrc>(b, row + j);
          for (size_t r = 0; r < rows; ++r) {
            float& cr = c[r * cols + j0 + j];
            cr = std::fma(af[r * inner + k], bv, cr);
          }
        }
      }
    }
  };
  const auto chunks = static_cast<int64_t>((cols + chunkCols - 1) / chunkCols);
  if (rows * inner * cols >= (size_t{1} << 20)) {
    ParallelFor(chunks, 1, chunk);
  } else {
    chunk(0, chunks);
  }
}

// out (16-bit storage) = a * b through an f32 buffer, narrowed once with round-to-nearest-even.
void HalfGemm(const uint16_t* a, const uint16_t* b, uint16_t* out, size_t rows, size_t inner,
              size_t cols, bool bf16) {
  auto c = hwy::AllocateAligned<float>(rows * cols);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (bf16 && rows >= kMR && HasBf16DotGemm()) {  // vdpbf16ps: twice the multiply-adds per instruction
    Bf16DotGemm(a, b, c.get(), rows, inner, cols);
    return NarrowBlock(c.get(), out, rows * cols, true);
  }
#endif
  if (rows < kMR) {
    if (bf16) {
      FewRowsGemm<kBF16>(a, b, c.get(), rows, inner, cols);
    } else {
      FewRowsGemm<kF16>(a, b, c.get(), rows, inner, cols);
    }
  } else if (bf16) {
    PackedGemm<kBF16>(a, inner, b, cols, c.get(), cols, rows, inner, cols);
  } else {
    PackedGemm<kF16>(a, inner, b, cols, c.get(), cols, rows, inner, cols);
  }
  NarrowBlock(c.get(), out, rows * cols, bf16);
}

// c = a * b (b^T with trans_b) in f32 with our kernels; c must not overlap a or b. Few rows
// stream B (FewRowsGemm / FewRowsTransB), a single column is one dot product per row
// (FewRowsTransB with B read as a row), everything else goes through the packed GEMM.
void FewRowsTransB(const float* a, const float* b, float* c, size_t rows, size_t inner, size_t cols);
void F32Gemm(const float* a, const float* b, float* c, size_t rows, size_t inner, size_t cols, bool trans_b) {
  if (cols == 1) return FewRowsTransB(a, b, c, rows, inner, 1);
  if (trans_b) {
    if (rows < kMR) return FewRowsTransB(a, b, c, rows, inner, cols);
    return PackedGemm<kF32, true>(a, inner, b, inner, c, cols, rows, inner, cols);
  }
  if (rows < kMR) return FewRowsGemm<kF32>(a, b, c, rows, inner, cols);
  PackedGemm<kF32>(a, inner, b, cols, c, cols, rows, inner, cols);
}

// c (+)= a * b with leading dimensions (see PackedGemm), f32, rows >= kMR; c must not overlap a or b.
void F32GemmStrided(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows,
                    size_t inner, size_t cols, bool addToC, bool threads) {
  PackedGemm<kF32>(a, lda, b, ldb, c, ldc, rows, inner, cols, addToC, threads);
}

// c [rows, cols] (f32) = a [rows, inner] * b^T, b [cols, inner], storage kSrc widened to f32, for
// few rows (a stays in L1): tiles of 2 rows x 4 weight rows, each output one f32 dot product in
// lanes plus a scalar tail, so the weight is streamed once per call without packing. Threads split
// the weight rows.
template <int kSrc>
void FewRowsTransBOf(const void* av, const void* bv, float* c, size_t rows, size_t inner, size_t cols) {
  using E = std::conditional_t<kSrc == kF32, float, uint16_t>;
  const E* a = static_cast<const E*>(av);
  const E* b = static_cast<const E*>(bv);
  const hn::ScalableTag<float> d;
  auto Sum = [](auto tag, auto v) { return hn::GetLane(hn::SumOfLanes(tag, v)); };
  const size_t lanes = hn::Lanes(d);
  const size_t vec_end = inner - inner % lanes;
  auto dot_tail = [&](const E* x, const E* w, float sum) {
    for (size_t k = vec_end; k < inner; ++k) sum = std::fma(LoadWideScalar<kSrc>(x, k), LoadWideScalar<kSrc>(w, k), sum);
    return sum;
  };
  auto load = [&](const E* p, size_t k) { return LoadWide<kSrc>(d, p, k); };
  auto block = [&](int64_t j_begin, int64_t j_end) {
    size_t j = static_cast<size_t>(j_begin) * 4;
    const size_t j_stop = std::min(cols, static_cast<size_t>(j_end) * 4);
    for (; j + 4 <= j_stop; j += 4) {
      const E* w0 = b + j * inner;
      const E* w1 = w0 + inner;
      const E* w2 = w1 + inner;
      const E* w3 = w2 + inner;
      size_t r = 0;
      for (; r + 2 <= rows; r += 2) {
        const E* x0 = a + r * inner;
        const E* x1 = x0 + inner;
        auto c00 = hn::Zero(d), c01 = hn::Zero(d), c02 = hn::Zero(d), c03 = hn::Zero(d);
        auto c10 = hn::Zero(d), c11 = hn::Zero(d), c12 = hn::Zero(d), c13 = hn::Zero(d);
        for (size_t k = 0; k < vec_end; k += lanes) {
          const auto v0 = load(x0, k), v1 = load(x1, k);
          const auto u0 = load(w0, k), u1 = load(w1, k);
          const auto u2 = load(w2, k), u3 = load(w3, k);
          c00 = hn::MulAdd(v0, u0, c00), c01 = hn::MulAdd(v0, u1, c01);
          c02 = hn::MulAdd(v0, u2, c02), c03 = hn::MulAdd(v0, u3, c03);
          c10 = hn::MulAdd(v1, u0, c10), c11 = hn::MulAdd(v1, u1, c11);
          c12 = hn::MulAdd(v1, u2, c12), c13 = hn::MulAdd(v1, u3, c13);
        }
        float* o0 = c + r * cols + j;
        float* o1 = o0 + cols;
        o0[0] = dot_tail(x0, w0, Sum(d, c00)), o0[1] = dot_tail(x0, w1, Sum(d, c01));
        o0[2] = dot_tail(x0, w2, Sum(d, c02)), o0[3] = dot_tail(x0, w3, Sum(d, c03));
        o1[0] = dot_tail(x1, w0, Sum(d, c10)), o1[1] = dot_tail(x1, w1, Sum(d, c11));
        o1[2] = dot_tail(x1, w2, Sum(d, c12)), o1[3] = dot_tail(x1, w3, Sum(d, c13));
      }
      for (; r < rows; ++r) {
        const E* x0 = a + r * inner;
        auto c00 = hn::Zero(d), c01 = hn::Zero(d), c02 = hn::Zero(d), c03 = hn::Zero(d);
        for (size_t k = 0; k < vec_end; k += lanes) {
          const auto v0 = load(x0, k);
          c00 = hn::MulAdd(v0, load(w0, k), c00), c01 = hn::MulAdd(v0, load(w1, k), c01);
          c02 = hn::MulAdd(v0, load(w2, k), c02), c03 = hn::MulAdd(v0, load(w3, k), c03);
        }
        float* o0 = c + r * cols + j;
        o0[0] = dot_tail(x0, w0, Sum(d, c00)), o0[1] = dot_tail(x0, w1, Sum(d, c01));
        o0[2] = dot_tail(x0, w2, Sum(d, c02)), o0[3] = dot_tail(x0, w3, Sum(d, c03));
      }
    }
    for (; j < j_stop; ++j) {
      const E* w0 = b + j * inner;
      for (size_t r = 0; r < rows; ++r) {
        const E* x0 = a + r * inner;
        auto acc = hn::Zero(d);
        for (size_t k = 0; k < vec_end; k += lanes) acc = hn::MulAdd(load(x0, k), load(w0, k), acc);
        c[r * cols + j] = dot_tail(x0, w0, Sum(d, acc));
      }
    }
  };
  const auto quads = static_cast<int64_t>((cols + 3) / 4);
  if (rows * inner * cols >= (size_t{1} << 20)) {
    ParallelFor(quads, 16, block);
  } else {
    block(0, quads);
  }
}

void FewRowsTransB(const float* a, const float* b, float* c, size_t rows, size_t inner, size_t cols) {
  FewRowsTransBOf<kF32>(a, b, c, rows, inner, cols);
}

// out (16-bit storage) = a * b^T, b [cols, inner], through an f32 buffer, narrowed once: few rows
// stream b (FewRowsTransBOf), more go through the packed GEMM reading b^T while packing.
void HalfGemmTransB(const uint16_t* a, const uint16_t* b, uint16_t* out, size_t rows, size_t inner, size_t cols,
                    bool bf16) {
  auto c = hwy::AllocateAligned<float>(rows * cols);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (bf16 && rows >= kMR && cols > 1 && HasBf16DotGemm()) {
    Bf16DotGemm(a, b, c.get(), rows, inner, cols, true);
    return NarrowBlock(c.get(), out, rows * cols, true);
  }
#endif
  if (rows < kMR || cols == 1) {
    if (bf16) {
      FewRowsTransBOf<kBF16>(a, b, c.get(), rows, inner, cols);
    } else {
      FewRowsTransBOf<kF16>(a, b, c.get(), rows, inner, cols);
    }
  } else if (bf16) {
    PackedGemm<kBF16, true>(a, inner, b, inner, c.get(), cols, rows, inner, cols);
  } else {
    PackedGemm<kF16, true>(a, inner, b, inner, c.get(), cols, rows, inner, cols);
  }
  NarrowBlock(c.get(), out, rows * cols, bf16);
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "backplane/cpu/gemm_path.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/storage.hpp"
#include "cpu/kernels/serial_blas.hpp"
#include "cpu/kernels/own_gemm.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(ExactRows);
HWY_EXPORT(HalfGemm);
HWY_EXPORT(FewRowsTransB);
HWY_EXPORT(HalfGemmTransB);
HWY_EXPORT(F32Gemm);
HWY_EXPORT(F32GemmStrided);

void OwnGemmF32(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows,
                size_t inner, size_t cols, bool add_to_c, bool threads) {
  HWY_DYNAMIC_DISPATCH(F32GemmStrided)(a, lda, b, ldb, c, ldc, rows, inner, cols, add_to_c, threads);
}

namespace {

// Work (rows * inner * cols) up to which the exact f64-accumulating kernel runs.
constexpr int64_t kExactWork = int64_t{1} << 15;

bool Overlaps(const void* a, size_t abytes, const void* b, size_t bbytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && x < y + bbytes && y < x + abytes;
}

void Exact(void* out, const void* left, const void* right, size_t rows, size_t inner, size_t cols,
           DType dtype) {
  const size_t pad = 8;  // the widest f64 vector
  const size_t ldb = (cols + pad - 1) / pad * pad;
  std::vector<double> a(rows * inner), b(inner * ldb, 0.0), c(rows * ldb);
  for (size_t i = 0; i < rows * inner; ++i) a[i] = LoadAsDouble(left, i, dtype);
  for (size_t k = 0; k < inner; ++k) {
    for (size_t j = 0; j < cols; ++j) b[k * ldb + j] = LoadAsDouble(right, k * cols + j, dtype);
  }
  HWY_DYNAMIC_DISPATCH(ExactRows)(a.data(), b.data(), ldb, c.data(), rows, inner, cols);
  for (size_t r = 0; r < rows; ++r) StoreRounded(c.data() + r * ldb, out, r * cols, cols, dtype);
}

// C[m x n] = A[m x k] * B[k x n] (row-major, leading dimensions lda, ldb, ldc) with beta = 0;
// with trans_b, B is [n x k] and C = A * B^T.
template <class T>
void BlasBlock(size_t m, size_t n, size_t k, const T* a, size_t lda, const T* b, size_t ldb, T* c,
               size_t ldc, bool trans_b) {
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int la = static_cast<int>(lda), lb = static_cast<int>(ldb), lc = static_cast<int>(ldc);
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    if (m == 1) {
      cblas_sgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans, trans_b ? ni : ki, trans_b ? ki : ni, 1.0f,
                  b, lb, a, 1, 0.0f, c, 1);
    } else if (n == 1) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, mi, ki, 1.0f, a, la, b, trans_b ? 1 : lb, 0.0f, c, lc);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, mi, ni, ki, 1.0f, a, la, b, lb, 0.0f, c, lc);
    }
  } else {
    if (m == 1) {
      cblas_dgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans, trans_b ? ni : ki, trans_b ? ki : ni, 1.0,
                  b, lb, a, 1, 0.0, c, 1);
    } else if (n == 1) {
      cblas_dgemv(CblasRowMajor, CblasNoTrans, mi, ki, 1.0, a, la, b, trans_b ? 1 : lb, 0.0, c, lc);
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, tb, mi, ni, ki, 1.0, a, la, b, lb, 0.0, c, lc);
    }
  }
}

template <class T>
void BlasBlock(size_t m, size_t n, size_t k, const T* a, size_t lda, const T* b, size_t ldb, T* c,
               size_t ldc) {
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int la = static_cast<int>(lda), lb = static_cast<int>(ldb), lc = static_cast<int>(ldc);
  if constexpr (std::is_same_v<T, float>) {
    if (m == 1) {
      cblas_sgemv(CblasRowMajor, CblasTrans, ki, ni, 1.0f, b, lb, a, 1, 0.0f, c, 1);
    } else if (n == 1) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, mi, ki, 1.0f, a, la, b, lb, 0.0f, c, lc);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, la, b, lb, 0.0f,
                  c, lc);
    }
  } else {
    if (m == 1) {
      cblas_dgemv(CblasRowMajor, CblasTrans, ki, ni, 1.0, b, lb, a, 1, 0.0, c, 1);
    } else if (n == 1) {
      cblas_dgemv(CblasRowMajor, CblasNoTrans, mi, ki, 1.0, a, la, b, lb, 0.0, c, lc);
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0, a, la, b, lb, 0.0, c,
                  lc);
    }
  }
}

template <class T>
void Blas(T* out, const T* a, const T* b, size_t rows, size_t inner, size_t cols, bool trans_b = false) {
  const size_t bytes = rows * cols * sizeof(T);
  const bool alias = Overlaps(out, bytes, a, rows * inner * sizeof(T)) ||
                     Overlaps(out, bytes, b, inner * cols * sizeof(T));
  std::vector<T> tmp(alias ? rows * cols : 0);
  T* c = alias ? tmp.data() : out;
  // gemm with beta = 0 stores zeros before accumulating; gemv's beta = 0 goes through ?scal,
  // which has multiplied stale NaNs by 0 in some OpenBLAS versions: clear the (short) vector.
  if (rows == 1 || cols == 1) std::memset(c, 0, bytes);
  // Blocks of 256 rows, else of 2048 columns (a multiple of every kernel width), else one call.
  constexpr size_t kRows = 256, kCols = 2048;
  const bool byRows = rows >= 2 * kRows, byCols = !byRows && cols >= 2 * kCols;
  const size_t blocks = byRows   ? (rows + kRows - 1) / kRows
                        : byCols ? (cols + kCols - 1) / kCols
                                 : 1;
  SerialBlas serial;
  const size_t ldb = trans_b ? inner : cols;
  auto run = [&](int64_t b0, int64_t b1) {
    for (auto blk = static_cast<size_t>(b0); blk < static_cast<size_t>(b1); ++blk) {
      if (byRows) {
        const size_t r0 = blk * kRows, nr = std::min(kRows, rows - r0);
        BlasBlock(nr, cols, inner, a + r0 * inner, inner, b, ldb, c + r0 * cols, cols, trans_b);
      } else if (byCols) {
        const size_t j0 = blk * kCols, nc = std::min(kCols, cols - j0);
        BlasBlock(rows, nc, inner, a, inner, trans_b ? b + j0 * inner : b + j0, ldb, c + j0, cols, trans_b);
      } else {
        BlasBlock(rows, cols, inner, a, inner, b, ldb, c, cols, trans_b);
      }
    }
  };
  if (blocks > 1 &&
      static_cast<double>(rows) * static_cast<double>(inner) * static_cast<double>(cols) >= 1e7) {
    ParallelFor(static_cast<int64_t>(blocks), 1, run);
  } else {
    run(0, static_cast<int64_t>(blocks));
  }
  if (alias) std::memcpy(out, c, bytes);
}

// f32 on our packed GEMM; an output that overlaps an operand is computed into a buffer first.
void OwnF32(float* out, const float* a, const float* b, size_t rows, size_t inner, size_t cols, bool trans_b) {
  const size_t bytes = rows * cols * sizeof(float);
  const bool alias = Overlaps(out, bytes, a, rows * inner * sizeof(float)) ||
                     Overlaps(out, bytes, b, inner * cols * sizeof(float));
  std::vector<float> tmp(alias ? rows * cols : 0);
  HWY_DYNAMIC_DISPATCH(F32Gemm)(a, b, alias ? tmp.data() : out, rows, inner, cols, trans_b);
  if (alias) std::memcpy(out, tmp.data(), bytes);
}

void Matmul(void* out, const void* left, const void* right, int64_t rows, int64_t inner,
            int64_t cols, DType dtype) {
  const bool floating = dtype == DType::Float32 || dtype == DType::Float64 ||
                        dtype == DType::Float16 || dtype == DType::BFloat16;
  int64_t leftCount = 0, rightCount = 0, outCount = 0, work = 0;
  if (!floating || rows < 0 || inner < 0 || cols < 0 ||
      __builtin_mul_overflow(rows, inner, &leftCount) ||
      __builtin_mul_overflow(inner, cols, &rightCount) ||
      __builtin_mul_overflow(rows, cols, &outCount) ||
      __builtin_mul_overflow(outCount, inner, &work) || (outCount > 0 && out == nullptr) ||
      (leftCount > 0 && left == nullptr) || (rightCount > 0 && right == nullptr) ||
      rows > INT_MAX || inner > INT_MAX || cols > INT_MAX) {
    return Reference().Matmul_Matmul(out, left, right, rows, inner, cols, dtype);
  }
  if (outCount == 0) return;
  const auto m = static_cast<size_t>(rows), k = static_cast<size_t>(inner),
             n = static_cast<size_t>(cols);
  if (inner == 0) {
    std::memset(out, 0,
                static_cast<size_t>(DTypeStorageBytes(dtype, outCount)));  // +0 in every format
    return;
  }
  if (work <= kExactWork) return Exact(out, left, right, m, k, n, dtype);
  switch (dtype) {
    case DType::Float32:
      if (CurrentGemmPath() == GemmPath::Own) {
        return OwnF32(static_cast<float*>(out), static_cast<const float*>(left), static_cast<const float*>(right), m,
                      k, n, false);
      }
      return Blas(static_cast<float*>(out), static_cast<const float*>(left),
                  static_cast<const float*>(right), m, k, n);
    case DType::Float64:
      return Blas(static_cast<double*>(out), static_cast<const double*>(left),
                  static_cast<const double*>(right), m, k, n);
    default:
      return HWY_DYNAMIC_DISPATCH(HalfGemm)(
          static_cast<const uint16_t*>(left), static_cast<const uint16_t*>(right),
          static_cast<uint16_t*>(out), m, k, n, dtype == DType::BFloat16);
  }
}

// Up to this many rows, f32 A B^T streams B through FewRowsTransB instead of BLAS (which would
// pack all of B for a handful of rows).
constexpr int64_t kFewRowsTransB = 32;

// C = A B^T, B [cols, inner]: few f32 rows stream B (FewRowsTransB); other f32 products take the
// own GEMM (or BLAS), f64 BLAS, reading B transposed; large f16/bf16 products HalfGemmTransB (no
// copy of B); small products transpose B once and take Matmul's exact path (so small results match
// the reference bit for bit), as do half products whose output overlaps an operand. Invalid
// arguments go to the reference.
void MatmulTransB(void* out, const void* left, const void* right, int64_t rows, int64_t inner, int64_t cols,
                  DType dtype) {
  const bool floating = dtype == DType::Float32 || dtype == DType::Float64 ||
                        dtype == DType::Float16 || dtype == DType::BFloat16;
  int64_t leftCount = 0, rightCount = 0, outCount = 0, work = 0;
  if (!floating || rows < 0 || inner < 0 || cols < 0 || __builtin_mul_overflow(rows, inner, &leftCount) ||
      __builtin_mul_overflow(inner, cols, &rightCount) || __builtin_mul_overflow(rows, cols, &outCount) ||
      __builtin_mul_overflow(outCount, inner, &work) || (outCount > 0 && out == nullptr) ||
      (leftCount > 0 && left == nullptr) || (rightCount > 0 && right == nullptr) || rows > INT_MAX ||
      inner > INT_MAX || cols > INT_MAX) {
    return Reference().MathExt_MatmulTransB(out, left, right, rows, inner, cols, dtype);
  }
  if (outCount == 0) return;
  const auto m = static_cast<size_t>(rows), k = static_cast<size_t>(inner), n = static_cast<size_t>(cols);
  if (work > kExactWork && dtype == DType::Float32 && rows <= kFewRowsTransB &&
      !Overlaps(out, m * n * 4, left, m * k * 4) && !Overlaps(out, m * n * 4, right, n * k * 4)) {
    return HWY_DYNAMIC_DISPATCH(FewRowsTransB)(static_cast<const float*>(left), static_cast<const float*>(right),
                                               static_cast<float*>(out), m, k, n);
  }
  if (work > kExactWork && dtype == DType::Float32 && CurrentGemmPath() == GemmPath::Own) {
    return OwnF32(static_cast<float*>(out), static_cast<const float*>(left), static_cast<const float*>(right), m, k, n,
                  true);
  }
  if (work > kExactWork && dtype == DType::Float32) {
    return Blas(static_cast<float*>(out), static_cast<const float*>(left), static_cast<const float*>(right), m, k, n,
                true);
  }
  if (work > kExactWork && dtype == DType::Float64) {
    return Blas(static_cast<double*>(out), static_cast<const double*>(left), static_cast<const double*>(right), m, k,
                n, true);
  }
  if (work > kExactWork && (dtype == DType::Float16 || dtype == DType::BFloat16) &&
      !Overlaps(out, m * n * 2, left, m * k * 2) && !Overlaps(out, m * n * 2, right, n * k * 2)) {
    return HWY_DYNAMIC_DISPATCH(HalfGemmTransB)(static_cast<const uint16_t*>(left),
                                                static_cast<const uint16_t*>(right), static_cast<uint16_t*>(out), m,
                                                k, n, dtype == DType::BFloat16);
  }
  const size_t bytes = static_cast<size_t>(DTypeStorageBytes(dtype, 1));
  std::vector<uint8_t> transposed(static_cast<size_t>(rightCount) * bytes);
  const auto* src = static_cast<const uint8_t*>(right);
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < k; ++i) std::memcpy(&transposed[(i * n + j) * bytes], src + (j * k + i) * bytes, bytes);
  }
  Matmul(out, left, transposed.data(), rows, inner, cols, dtype);
}

}  // namespace

void RegisterMatmul(KernelTable& t) {
  t.Matmul_Matmul = &Matmul;
  t.MathExt_MatmulTransB = &MatmulTransB;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
