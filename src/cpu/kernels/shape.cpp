// Highway kernels for the Shape surface (pure data movement, bit-exact).
// - Transpose: axes of size 1 dropped and axes that stay adjacent merged; when the innermost axis
//   moves, a 2D transpose per outer index, threaded over row blocks for large tensors; when it
//   stays, contiguous runs are memcpy'd. The 2D transpose moves tiles of one cache line square
//   (16x16 for 4-byte elements) through two L1 buffers, so that every source and destination line
//   is read or written once, whole, even when the row stride maps all rows of a tile to one L1 set;
//   column blocks of 1 KiB keep the destination pages of a block in the TLB. Inside the buffers,
//   4x4 32-bit and 2x2 64-bit SIMD micro-tiles in 128-bit blocks (typed scalar tiles for 1-, 2- and
//   16-byte elements); the edges that do not fill a tile go straight through the micro-tiles.
// - UpsampleNearest2D: the reference copies element by element through a dtype switch; here a
//   typed gather per output row (indices computed once, as the reference), and a repeated source
//   row is a memcpy of the previous output row.
// Reshape, Concat, Split, ViewAsHeads, MergeHeads, LastToken and Slice stay on the reference: it
// already memcpys whole contiguous runs (see RegisterShape; a Slice strided on its last axis is
// the one case it copies element by element). Packed dtypes (Int4, Bool) and every
// unusual call (bad dtype, shapes, pointers, overflow, overlap) go to the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/shape.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#ifndef BACKPLANE_CPU_KERNELS_SHAPE_OPS_
#define BACKPLANE_CPU_KERNELS_SHAPE_OPS_
#include <cstddef>
#include <cstdint>
#include <cstring>
namespace backplane::cpu::simd::shape_ops {
struct Elem16 {
  uint64_t lo, hi;
};
constexpr size_t kTile = 32;          // rows (and columns) of one micro-tile block
constexpr size_t kLineBytes = 64;     // cache line: the side of a line tile, in bytes
constexpr size_t kBlockBytes = 1024;  // rows x element size per parallel item
constexpr size_t kBlockColBytes = 4096;  // bytes per row of a column block
}  // namespace backplane::cpu::simd::shape_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace shape_ops;  // NOLINT

// dst[c * ds + r] = src[r * ss + c] for r < rows, c < cols (strides in elements), block by block.
template <class E>
void TileScalar(const E* src, size_t ss, E* dst, size_t ds, size_t rows, size_t cols) {
  for (size_t c0 = 0; c0 < cols; c0 += kTile) {
    const size_t c1 = c0 + kTile < cols ? c0 + kTile : cols;
    for (size_t r = 0; r < rows; ++r) {
      const E* s = src + r * ss;
      for (size_t c = c0; c < c1; ++c) dst[c * ds + r] = s[c];
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// 4x4 32-bit micro-tiles inside kTile x kTile blocks; edges scalar.
void Tile32(const uint32_t* src, size_t ss, uint32_t* dst, size_t ds, size_t rows, size_t cols) {
  const hn::FixedTag<uint32_t, 4> d;
  const hn::Repartition<uint64_t, decltype(d)> d64;
  const size_t rows4 = rows & ~size_t{3}, cols4 = cols & ~size_t{3};
  for (size_t c0 = 0; c0 < cols4; c0 += kTile) {
    const size_t c1 = c0 + kTile < cols4 ? c0 + kTile : cols4;
    for (size_t r = 0; r < rows4; r += 4) {
      const uint32_t* s = src + r * ss;
      for (size_t c = c0; c < c1; c += 4) {
        const auto r0 = hn::LoadU(d, s + c), r1 = hn::LoadU(d, s + ss + c);
        const auto r2 = hn::LoadU(d, s + 2 * ss + c), r3 = hn::LoadU(d, s + 3 * ss + c);
        const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d, r0, r1));  // r00 r10 r01 r11
        const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d, r2, r3));  // r20 r30 r21 r31
        const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d, r0, r1));  // r02 r12 r03 r13
        const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d, r2, r3));  // r22 r32 r23 r33
        uint32_t* o = dst + c * ds + r;
        hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, t0, t1)), d, o);
        hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, t0, t1)), d, o + ds);
        hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, t2, t3)), d, o + 2 * ds);
        hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, t2, t3)), d, o + 3 * ds);
      }
    }
  }
  if (rows4 < rows) TileScalar(src + rows4 * ss, ss, dst + rows4, ds, rows - rows4, cols);
  if (cols4 < cols) TileScalar(src + cols4, ss, dst + cols4 * ds, ds, rows4, cols - cols4);
}

// 2x2 64-bit micro-tiles.
void Tile64(const uint64_t* src, size_t ss, uint64_t* dst, size_t ds, size_t rows, size_t cols) {
  const hn::FixedTag<uint64_t, 2> d;
  const size_t rows2 = rows & ~size_t{1}, cols2 = cols & ~size_t{1};
  for (size_t c0 = 0; c0 < cols2; c0 += kTile) {
    const size_t c1 = c0 + kTile < cols2 ? c0 + kTile : cols2;
    for (size_t r = 0; r < rows2; r += 2) {
      const uint64_t* s = src + r * ss;
      for (size_t c = c0; c < c1; c += 2) {
        const auto r0 = hn::LoadU(d, s + c), r1 = hn::LoadU(d, s + ss + c);
        uint64_t* o = dst + c * ds + r;
        hn::StoreU(hn::InterleaveLower(d, r0, r1), d, o);
        hn::StoreU(hn::InterleaveUpper(d, r0, r1), d, o + ds);
      }
    }
  }
  if (rows2 < rows) TileScalar(src + rows2 * ss, ss, dst + rows2, ds, rows - rows2, cols);
  if (cols2 < cols) TileScalar(src + cols2, ss, dst + cols2 * ds, ds, rows2, cols - cols2);
}
#endif

// Tiles of one cache line square copied into an L1 buffer, transposed there by Micro and copied
// out line by line; what does not fill a tile goes to Micro directly.
template <class E, void (*Micro)(const E*, size_t, E*, size_t, size_t, size_t)>
void TileLines(const E* src, size_t ss, E* dst, size_t ds, size_t rows, size_t cols) {
  constexpr size_t kT = kLineBytes / sizeof(E);
  constexpr size_t kBlockCols = kBlockColBytes / sizeof(E);
  alignas(64) E in[kT * kT];
  alignas(64) E out[kT * kT];
  const size_t rowsT = rows / kT * kT, colsT = cols / kT * kT;
  for (size_t c0 = 0; c0 < colsT; c0 += kBlockCols) {
    const size_t c1 = c0 + kBlockCols < colsT ? c0 + kBlockCols : colsT;
    for (size_t r = 0; r < rowsT; r += kT) {
      for (size_t c = c0; c < c1; c += kT) {
        for (size_t i = 0; i < kT; ++i) std::memcpy(in + i * kT, src + (r + i) * ss + c, kLineBytes);
        Micro(in, kT, out, kT, kT, kT);
        for (size_t i = 0; i < kT; ++i) std::memcpy(dst + (c + i) * ds + r, out + i * kT, kLineBytes);
      }
    }
  }
  if (rowsT < rows) Micro(src + rowsT * ss, ss, dst + rowsT, ds, rows - rowsT, cols);
  if (colsT < cols) Micro(src + colsT, ss, dst + colsT * ds, ds, rowsT, cols - colsT);
}

void Transpose2D(const void* src, size_t ss, void* dst, size_t ds, size_t rows, size_t cols, size_t esize) {
  switch (esize) {
    case 1:
      return TileLines<uint8_t, TileScalar<uint8_t>>(static_cast<const uint8_t*>(src), ss,
                                                     static_cast<uint8_t*>(dst), ds, rows, cols);
    case 2:
      return TileLines<uint16_t, TileScalar<uint16_t>>(static_cast<const uint16_t*>(src), ss,
                                                       static_cast<uint16_t*>(dst), ds, rows, cols);
#if HWY_TARGET != HWY_SCALAR
    case 4:
      return TileLines<uint32_t, Tile32>(static_cast<const uint32_t*>(src), ss, static_cast<uint32_t*>(dst), ds,
                                         rows, cols);
    case 8:
      return TileLines<uint64_t, Tile64>(static_cast<const uint64_t*>(src), ss, static_cast<uint64_t*>(dst), ds,
                                         rows, cols);
#else
    case 4:
      return TileLines<uint32_t, TileScalar<uint32_t>>(static_cast<const uint32_t*>(src), ss,
                                                       static_cast<uint32_t*>(dst), ds, rows, cols);
    case 8:
      return TileLines<uint64_t, TileScalar<uint64_t>>(static_cast<const uint64_t*>(src), ss,
                                                       static_cast<uint64_t*>(dst), ds, rows, cols);
#endif
    default:
      return TileLines<Elem16, TileScalar<Elem16>>(static_cast<const Elem16*>(src), ss,
                                                   static_cast<Elem16*>(dst), ds, rows, cols);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(Transpose2D);

namespace {
using namespace shape_ops;  // NOLINT

constexpr int64_t kParallelElems = int64_t{1} << 16;

// Element bytes of a byte-sized dtype; 0 for Int4/Bool/invalid (the reference handles those).
size_t ElemBytes(DType dtype) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kDTypeCount) || dtype == DType::Invalid ||
      dtype == DType::Int4 || dtype == DType::Bool) {
    return 0;
  }
  const int bits = DTypeBits(dtype);
  return bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

// Element count of dims (>= 0 each), or -1 when it or its size in bits overflows int64 (the
// reference throws then).
int64_t CountOf(const int64_t* dims, int64_t rank, DType dtype) {
  for (int64_t i = 0; i < rank; ++i) {
    if (dims[i] == 0) return 0;
  }
  int64_t count = 1, bits = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (__builtin_mul_overflow(count, dims[i], &count)) return -1;
  }
  if (__builtin_mul_overflow(count, static_cast<int64_t>(DTypeBits(dtype)), &bits)) return -1;
  return count;
}

bool Disjoint(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return !(x < y + bBytes && y < x + aBytes);
}

// ---- Transpose ----------------------------------------------------------------------------------

void Transpose(const void* src, void* dst, const int64_t* shape, int64_t rank, const int64_t* perm, DType dtype) {
  const size_t e = ElemBytes(dtype);
  bool ok = e != 0 && rank > 0 && rank <= 64 && shape && perm;
  uint64_t seen = 0;
  for (int64_t i = 0; ok && i < rank; ++i) {
    ok = shape[i] >= 0 && perm[i] >= 0 && perm[i] < rank && !(seen >> perm[i] & 1);
    if (ok) seen |= uint64_t{1} << perm[i];
  }
  const int64_t count = ok ? CountOf(shape, rank, dtype) : -1;
  ok = ok && count > 0 && src && dst && Disjoint(src, static_cast<size_t>(count) * e, dst, static_cast<size_t>(count) * e);
  if (!ok) return Reference().Shape_Transpose(src, dst, shape, rank, perm, dtype);

  // Drop size-1 axes, renumber the rest in input order, then merge runs of output axes that are
  // consecutive input axes.
  std::vector<int64_t> newId(static_cast<size_t>(rank), -1), keptDims;
  for (int64_t a = 0; a < rank; ++a) {
    if (shape[a] != 1) {
      newId[static_cast<size_t>(a)] = static_cast<int64_t>(keptDims.size());
      keptDims.push_back(shape[a]);
    }
  }
  std::vector<int64_t> order;  // kept input axes in output order
  for (int64_t i = 0; i < rank; ++i) {
    if (newId[static_cast<size_t>(perm[i])] >= 0) order.push_back(newId[static_cast<size_t>(perm[i])]);
  }
  std::vector<std::pair<int64_t, int64_t>> groups;  // [first, last] kept axis, in output order
  for (int64_t a : order) {
    if (!groups.empty() && groups.back().second + 1 == a) {
      groups.back().second = a;
    } else {
      groups.emplace_back(a, a);
    }
  }
  std::vector<size_t> byInput(groups.size());  // group indices sorted by input position
  for (size_t g = 0; g < groups.size(); ++g) byInput[g] = g;
  std::sort(byInput.begin(), byInput.end(), [&](size_t x, size_t y) { return groups[x].first < groups[y].first; });
  const size_t r = groups.size();
  std::vector<int64_t> dims(r), p(r), inPos(r);  // merged input dims; output axis i = input axis p[i]
  for (size_t k = 0; k < r; ++k) {
    const auto& g = groups[byInput[k]];
    int64_t size = 1;
    for (int64_t a = g.first; a <= g.second; ++a) size *= keptDims[static_cast<size_t>(a)];
    dims[k] = size;
    inPos[byInput[k]] = static_cast<int64_t>(k);
  }
  for (size_t i = 0; i < r; ++i) p[i] = inPos[i];

  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  if (r <= 1) {
    std::memcpy(dst, src, static_cast<size_t>(count) * e);
    return;
  }
  std::vector<int64_t> inStride(r, 1), outStride(r, 1);
  for (size_t k = r - 1; k-- > 0;) inStride[k] = inStride[k + 1] * dims[k + 1];
  for (size_t i = r - 1; i-- > 0;) outStride[i] = outStride[i + 1] * dims[static_cast<size_t>(p[i + 1])];

  // Outer axes (output positions) walked by an odometer; the rest is one 2D transpose or a run.
  const bool innerMoves = p[r - 1] != static_cast<int64_t>(r - 1);
  size_t j = 0;  // output position of the input's innermost axis
  while (p[j] != static_cast<int64_t>(r - 1)) ++j;
  std::vector<size_t> outer;
  for (size_t i = 0; i + 1 < r; ++i) {
    if (!innerMoves || i != j) outer.push_back(i);
  }
  int64_t outerCount = 1;
  for (size_t i : outer) outerCount *= dims[static_cast<size_t>(p[i])];

  const size_t rows = innerMoves ? static_cast<size_t>(dims[static_cast<size_t>(p[r - 1])]) : 1;
  const size_t cols = static_cast<size_t>(dims[r - 1]);
  const size_t srcRowStride = innerMoves ? static_cast<size_t>(inStride[static_cast<size_t>(p[r - 1])]) : 0;
  const size_t dstColStride = static_cast<size_t>(outStride[j]);
  const size_t blockRows = kBlockBytes / e;  // a multiple of the line tile's side
  const size_t rowBlocks = (rows + blockRows - 1) / blockRows;
  const int64_t items = outerCount * static_cast<int64_t>(rowBlocks);
  const int64_t perItem = static_cast<int64_t>(std::min(rows, blockRows) * cols);
  const int64_t grain = count >= 2 * kParallelElems ? std::max<int64_t>(1, kParallelElems / perItem) : items;
  ParallelFor(items, grain, [&](int64_t b, int64_t end) {
    // Decompose the first item once, then step the odometer.
    std::vector<int64_t> idx(outer.size());
    int64_t o = b / static_cast<int64_t>(rowBlocks);
    size_t block = static_cast<size_t>(b % static_cast<int64_t>(rowBlocks));
    int64_t sOff = 0, dOff = 0;
    for (size_t k = outer.size(); k-- > 0;) {
      const size_t i = outer[k];
      const int64_t n = dims[static_cast<size_t>(p[i])];
      idx[k] = o % n;
      o /= n;
      sOff += idx[k] * inStride[static_cast<size_t>(p[i])];
      dOff += idx[k] * outStride[i];
    }
    for (int64_t it = b; it < end; ++it) {
      if (innerMoves) {
        const size_t r0 = block * blockRows;
        HWY_DYNAMIC_DISPATCH(Transpose2D)(s + (static_cast<size_t>(sOff) + r0 * srcRowStride) * e, srcRowStride,
                                          d + (static_cast<size_t>(dOff) + r0) * e, dstColStride,
                                          std::min(blockRows, rows - r0), cols, e);
      } else {
        std::memcpy(d + static_cast<size_t>(dOff) * e, s + static_cast<size_t>(sOff) * e, cols * e);
      }
      if (++block < rowBlocks) continue;
      block = 0;
      for (size_t k = outer.size(); k-- > 0;) {
        const size_t i = outer[k];
        const int64_t n = dims[static_cast<size_t>(p[i])];
        sOff += inStride[static_cast<size_t>(p[i])];
        dOff += outStride[i];
        if (++idx[k] < n) break;
        sOff -= n * inStride[static_cast<size_t>(p[i])];
        dOff -= n * outStride[i];
        idx[k] = 0;
      }
    }
  });
}

// ---- UpsampleNearest2D --------------------------------------------------------------------------

// The reference's source index (PyTorch's float arithmetic), copied exactly.
int64_t NearestIndex(int64_t dst, int64_t in, int64_t out, double scale) {
  const float s = scale > 0.0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
  const float real = std::floor(static_cast<float>(dst) * s);
  if (!(real < static_cast<float>(in - 1))) return in - 1;
  return std::min(static_cast<int64_t>(real), in - 1);
}

bool AxisOk(double scale, int64_t in, int64_t out) {
  if (!std::isfinite(scale) || in <= 0 || out <= 0) return false;
  if (scale > 0.0) {
    const double want = std::floor(static_cast<double>(in) * scale);
    return want < 9.2e18 && static_cast<int64_t>(want) == out;
  }
  return true;
}

template <class E>
void UpsamplePlanes(const E* src, E* dst, int64_t planes0, int64_t planes1, int64_t inH, int64_t inW,
                    int64_t outH, int64_t outW, const std::vector<int64_t>& rowIndex,
                    const std::vector<int64_t>& colIndex) {
  const auto ow = static_cast<size_t>(outW);
  for (int64_t plane = planes0; plane < planes1; ++plane) {
    const E* sp = src + plane * inH * inW;
    E* dp = dst + plane * outH * outW;
    for (int64_t r = 0; r < outH; ++r) {
      E* row = dp + r * outW;
      if (r > 0 && rowIndex[static_cast<size_t>(r)] == rowIndex[static_cast<size_t>(r - 1)]) {
        std::memcpy(row, row - outW, ow * sizeof(E));
        continue;
      }
      const E* sr = sp + rowIndex[static_cast<size_t>(r)] * inW;
      for (size_t c = 0; c < ow; ++c) row[c] = sr[colIndex[c]];
    }
  }
}

void UpsampleNearest2D(const UpsampleConfig& config, const void* src, void* dst, int64_t batch, int64_t channels,
                       int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const size_t e = ElemBytes(dtype);
  bool ok = e != 0 && batch > 0 && channels > 0 && AxisOk(config.ScaleH, inH, outH) &&
            AxisOk(config.ScaleW, inW, outW) && src && dst;
  const int64_t inDims[4] = {batch, channels, inH, inW}, outDims[4] = {batch, channels, outH, outW};
  const int64_t inCount = ok ? CountOf(inDims, 4, dtype) : -1;
  const int64_t outCount = ok ? CountOf(outDims, 4, dtype) : -1;
  ok = ok && inCount > 0 && outCount > 0 &&
       Disjoint(src, static_cast<size_t>(inCount) * e, dst, static_cast<size_t>(outCount) * e);
  if (!ok) {
    return Reference().Shape_UpsampleNearest2D(config, src, dst, batch, channels, inH, inW, outH, outW, dtype);
  }
  std::vector<int64_t> rowIndex(static_cast<size_t>(outH)), colIndex(static_cast<size_t>(outW));
  for (int64_t r = 0; r < outH; ++r) rowIndex[static_cast<size_t>(r)] = NearestIndex(r, inH, outH, config.ScaleH);
  for (int64_t c = 0; c < outW; ++c) colIndex[static_cast<size_t>(c)] = NearestIndex(c, inW, outW, config.ScaleW);
  const int64_t planes = batch * channels;
  const int64_t grain = outCount >= 2 * kParallelElems ? std::max<int64_t>(1, kParallelElems / (outH * outW)) : planes;
  ParallelFor(planes, grain, [&](int64_t b, int64_t end) {
    switch (e) {
      case 1:
        return UpsamplePlanes(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), b, end, inH, inW, outH,
                              outW, rowIndex, colIndex);
      case 2:
        return UpsamplePlanes(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), b, end, inH, inW, outH,
                              outW, rowIndex, colIndex);
      case 4:
        return UpsamplePlanes(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), b, end, inH, inW, outH,
                              outW, rowIndex, colIndex);
      case 8:
        return UpsamplePlanes(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), b, end, inH, inW, outH,
                              outW, rowIndex, colIndex);
      default:
        return UpsamplePlanes(static_cast<const Elem16*>(src), static_cast<Elem16*>(dst), b, end, inH, inW, outH,
                              outW, rowIndex, colIndex);
    }
  });
}

}  // namespace

void RegisterShape(KernelTable& t) {
  t.Shape_Transpose = &Transpose;
  t.Shape_UpsampleNearest2D = &UpsampleNearest2D;
  using catalog::MethodId;
  t.ScalarByDesign(MethodId::Shape_Reshape, "a copy: one memmove in the reference");
  t.ScalarByDesign(MethodId::Shape_Concat, "contiguous runs: memcpy per input run in the reference");
  t.ScalarByDesign(MethodId::Shape_Split, "contiguous runs: memcpy per output run in the reference");
  t.ScalarByDesign(MethodId::Shape_ViewAsHeads, "contiguous head rows: memcpy per row in the reference");
  t.ScalarByDesign(MethodId::Shape_MergeHeads, "contiguous head rows: memcpy per row in the reference");
  t.ScalarByDesign(MethodId::Shape_LastToken, "one contiguous row per batch: memcpy in the reference");
  t.ScalarByDesign(MethodId::Shape_Slice, "strided gather: the reference memcpys each contiguous run (single elements when the last axis is strided)");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
