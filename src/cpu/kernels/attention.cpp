// Fast kernels for the Attention surface: ScaledDotProductAttention, FlashAttention and
// MultiHeadAttention, one flash-style kernel for all three.
//
// Per head, Q (pre-scaled by 1/sqrt(depth)), K^T and V are packed once (heads in parallel): scores,
// values and the accumulator in f32 lanes for f32/f16/bf16 storage (as PyTorch; the conformance
// bound scales with the scores' condition, see runners_nn.cpp) and f64 lanes for f64. Each
// task takes a block of kBr query rows and walks the key tiles of kBc keys its rows can see: S = Q
// K^T in 6 x 2-vector register tiles, bias (ALiBi) and masks (bottom-right causal, sliding window),
// an online softmax (running max m, normaliser l, accumulator rescaled by exp(m_old - m_new)), then
// O = O * alpha + P V in register tiles. Extra memory is O(seq * headDim). Tiles no row can see are
// skipped (causal and windows). Tasks (head x query block) write disjoint outputs, so results do
// not depend on the thread count.
//
// Semantics as docs/semantics/attention.md: a query that sees no key gets zeros; a visible NaN
// or +Inf score makes the row NaN; all visible scores -Inf gives NaN; masked keys are skipped.
// Masked keys and -Inf scores get weight 0 in the tiles, which is exact only while V is finite
// (0 * Inf is NaN), so a query block whose keys hold a non-finite V value runs the reference's
// algorithm row by row in f64 instead (including FlashAttention's tile rule for -Inf scores).
// Invalid arguments, and f32 problems whose scores could overflow f32, go to the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/attention.cpp"
// foreach_target.h must come first: keep clang-format from sorting these.
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_ATTENTION_SHARED_
#define BACKPLANE_CPU_KERNELS_ATTENTION_SHARED_
#include <hwy/aligned_allocator.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "backplane/dtype.hpp"
namespace backplane::cpu::simd::attention_ops {
constexpr size_t kMR = 6;    // rows of a register tile
constexpr size_t kBr = 48;   // query rows per task (multiple of kMR)
constexpr size_t kBc = 64;   // keys per tile (multiple of every 2-vector width)
constexpr size_t kPad = 32;  // packed rows are padded to a multiple of this many elements

// One attention call, already validated. Storage pointers; head h of Q/O is at column h * depth,
// its KV head g = h / group at column g * depth (K) and g * valueDim (V).
struct Problem {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  DType dtype;
  int64_t seqQ, seqK, depth, valueDim;
  int64_t heads, kvHeads;
  int64_t qStride, kStride, vStride, oStride;  // elements per row
  bool causal;
  int64_t window;      // > 0: last `window` positions up to the query's, and windowRight after
  int64_t windowRight; // with window > 0: keys after the query's that stay visible (-1: all)
  double slope;        // ALiBi base slope (0: none); head h uses slope^(h+1)
  int64_t flashBlock;  // > 0: FlashAttention's tile rule in the exact fallback
  double scale;
};
}  // namespace backplane::cpu::simd::attention_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace attention_ops;  // NOLINT

// ---- Widening
// ------------------------------------------------------------------------------------

// n elements of storage `dtype` starting at element `offset` of `base`, widened to T (exact).
template <class T>
void WidenRow(const void* base, int64_t offset, DType dtype, T* dst, size_t n) {
  if constexpr (std::is_same_v<T, double>) {
    for (size_t i = 0; i < n; ++i) {
      const auto idx = static_cast<size_t>(offset) + i;
      switch (dtype) {
        case DType::Float64:
          dst[i] = static_cast<const double*>(base)[idx];
          break;
        case DType::Float32:
          dst[i] = static_cast<const float*>(base)[idx];
          break;
        case DType::Float16:
          dst[i] = F16ToF32(static_cast<const uint16_t*>(base)[idx]);
          break;
        default:
          dst[i] = BF16ToF32(static_cast<const uint16_t*>(base)[idx]);
          break;
      }
    }
  } else {
    if (dtype == DType::Float32) {
      std::memcpy(dst, static_cast<const float*>(base) + offset, n * sizeof(float));
      return;
    }
    WidenBlock(static_cast<const uint16_t*>(base) + offset, dst, n, dtype == DType::BFloat16);
  }
}

// ---- Register tile
// -------------------------------------------------------------------------------

// C[rows x cols] = A[rows x kLen] * B[kLen x cols]            (kRescale = false), or
// C[rows x cols] = C * alpha[row] + A * B                      (kRescale = true).
// A is row-major with stride lda (rows up to kMR are read), B row-major with stride ldb (two
// full vectors are read per row), C row-major with stride ldc.
template <class T, bool kRescale>
HWY_INLINE void Tile(const T* HWY_RESTRICT a, size_t lda, const T* HWY_RESTRICT b, size_t ldb,
                     size_t kLen, T* HWY_RESTRICT c, size_t ldc, size_t rows, size_t cols,
                     const T* alpha) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  auto c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  const T* a0 = a;
  const T* a1 = a + lda;
  const T* a2 = a + 2 * lda;
  const T* a3 = a + 3 * lda;
  const T* a4 = a + 4 * lda;
  const T* a5 = a + 5 * lda;
  for (size_t k = 0; k < kLen; ++k) {
    const auto b0 = hn::LoadU(d, b + k * ldb);
    const auto b1 = hn::LoadU(d, b + k * ldb + lanes);
    auto av = hn::Set(d, a0[k]);
    c00 = hn::MulAdd(av, b0, c00);
    c01 = hn::MulAdd(av, b1, c01);
    av = hn::Set(d, a1[k]);
    c10 = hn::MulAdd(av, b0, c10);
    c11 = hn::MulAdd(av, b1, c11);
    av = hn::Set(d, a2[k]);
    c20 = hn::MulAdd(av, b0, c20);
    c21 = hn::MulAdd(av, b1, c21);
    av = hn::Set(d, a3[k]);
    c30 = hn::MulAdd(av, b0, c30);
    c31 = hn::MulAdd(av, b1, c31);
    av = hn::Set(d, a4[k]);
    c40 = hn::MulAdd(av, b0, c40);
    c41 = hn::MulAdd(av, b1, c41);
    av = hn::Set(d, a5[k]);
    c50 = hn::MulAdd(av, b0, c50);
    c51 = hn::MulAdd(av, b1, c51);
  }
  HWY_ALIGN T tile[kMR * 2 * hn::MaxLanes(d)];
  const size_t nr = 2 * lanes;
  hn::Store(c00, d, tile + 0 * nr);
  hn::Store(c01, d, tile + 0 * nr + lanes);
  hn::Store(c10, d, tile + 1 * nr);
  hn::Store(c11, d, tile + 1 * nr + lanes);
  hn::Store(c20, d, tile + 2 * nr);
  hn::Store(c21, d, tile + 2 * nr + lanes);
  hn::Store(c30, d, tile + 3 * nr);
  hn::Store(c31, d, tile + 3 * nr + lanes);
  hn::Store(c40, d, tile + 4 * nr);
  hn::Store(c41, d, tile + 4 * nr + lanes);
  hn::Store(c50, d, tile + 5 * nr);
  hn::Store(c51, d, tile + 5 * nr + lanes);
  for (size_t r = 0; r < rows; ++r) {
    T* cr = c + r * ldc;
    const T* tr = tile + r * nr;
    if (cols == nr) {
      for (size_t j = 0; j < nr; j += lanes) {
        auto t = hn::Load(d, tr + j);
        if constexpr (kRescale) t = hn::MulAdd(hn::LoadU(d, cr + j), hn::Set(d, alpha[r]), t);
        hn::StoreU(t, d, cr + j);
      }
    } else {
      for (size_t j = 0; j < cols; ++j) cr[j] = kRescale ? cr[j] * alpha[r] + tr[j] : tr[j];
    }
  }
}

// C[rows x cols] (=, or rescaled +=) A * B over all register tiles.
template <class T, bool kRescale>
void TiledProduct(const T* a, size_t lda, const T* b, size_t ldb, size_t kLen, T* c, size_t ldc,
                  size_t rows, size_t cols, const T* alpha) {
  const hn::ScalableTag<T> d;
  const size_t nr = 2 * hn::Lanes(d);
  for (size_t j = 0; j < cols; j += nr) {
    const size_t w = cols - j < nr ? cols - j : nr;
    for (size_t i = 0; i < rows; i += kMR) {
      const size_t h = rows - i < kMR ? rows - i : kMR;
      Tile<T, kRescale>(a + i * lda, lda, b + j, ldb, kLen, c + i * ldc + j, ldc, h, w,
                        alpha ? alpha + i : nullptr);
    }
  }
}

// ---- The packed problem
// --------------------------------------------------------------------------

// Scores in TS, values and the output accumulator in TV: (f32, f32) for f16/bf16, (f64, f32) for
// f32 (f32 dot products of 64+ terms are off by more than the f32 tolerance once the softmax
// amplifies them; f64 scores keep the result within it), (f64, f64) for f64.
// Grow-only per-thread buffers: the packed operands are rebuilt on every call, and reusing the
// memory avoids page faults on megabytes of fresh allocations.
template <class T>
T* ThreadBuffer(int slot, size_t count) {
  struct Slot {
    hwy::AlignedFreeUniquePtr<uint8_t[]> mem;
    size_t bytes = 0;
  };
  static thread_local Slot slots[4];
  Slot& b = slots[slot];
  const size_t bytes = count * sizeof(T) + 64;
  if (b.bytes < bytes) {
    b.mem = hwy::AllocateAligned<uint8_t>(bytes);
    b.bytes = bytes;
  }
  return reinterpret_cast<T*>(b.mem.get());
}

template <class TS, class TV>
struct Packed {
  int64_t depthP = 0, valueP = 0, seqKP = 0;
  TS* q = nullptr;                      // [heads][seqQ + kMR rows][depthP], pre-scaled
  TS* kt = nullptr;                     // [kvHeads][depthP][seqKP]
  TV* v = nullptr;                      // [kvHeads][seqKP][valueP]
  std::vector<int64_t> vBadPrefix;      // [kvHeads][seqK + 1]: keys < j with a non-finite V value
  double maxAbsQ = 0.0, maxAbsK = 0.0;  // over finite values (overflow guard)
};

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// max |x| over the finite values of x[0, n).
template <class T>
double MaxAbsFinite(const T* x, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  auto top = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    top = hn::Max(top, hn::IfThenElseZero(hn::IsFinite(v), hn::Abs(v)));
  }
  T m = hn::GetLane(hn::MaxOfLanes(d, top));
  for (; i < n; ++i) {
    const T a = std::fabs(x[i]);
    m = a <= std::numeric_limits<T>::max() && a > m ? a : m;
  }
  return static_cast<double>(m);
}

// x[0, n) *= scale.
template <class T>
void ScaleRow(T* x, size_t n, T scale) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vs), d, x + i);
  for (; i < n; ++i) x[i] *= scale;
}

// True when every x[0, n) is finite.
template <class T>
bool AllFinite(const T* x, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  auto ok = hn::Eq(hn::Zero(d), hn::Zero(d));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) ok = hn::And(ok, hn::IsFinite(hn::LoadU(d, x + i)));
  bool all = hn::AllTrue(d, ok);
  for (; i < n; ++i) all = all && std::isfinite(x[i]);
  return all;
}

template <class TS, class TV>
void Pack(const Problem& p, Packed<TS, TV>& pk) {
  pk.depthP = RoundUp(p.depth, kPad);
  pk.valueP = RoundUp(p.valueDim, kPad);
  pk.seqKP = RoundUp(p.seqK, kBc) + static_cast<int64_t>(kPad);
  const auto seqQ = static_cast<size_t>(p.seqQ), seqK = static_cast<size_t>(p.seqK);
  const auto depth = static_cast<size_t>(p.depth), valueDim = static_cast<size_t>(p.valueDim);
  const auto dP = static_cast<size_t>(pk.depthP), vP = static_cast<size_t>(pk.valueP),
             kP = static_cast<size_t>(pk.seqKP);
  const auto heads = static_cast<size_t>(p.heads), kvHeads = static_cast<size_t>(p.kvHeads);
  // Register tiles read up to kMR rows past a block: Q has kMR zero rows after the last head.
  pk.q = ThreadBuffer<TS>(0, (heads * seqQ + kMR) * dP);
  pk.kt = ThreadBuffer<TS>(1, kvHeads * dP * kP);
  pk.v = ThreadBuffer<TV>(2, kvHeads * kP * vP);
  pk.vBadPrefix.assign(kvHeads * (seqK + 1), 0);
  const TS scale = static_cast<TS>(p.scale);
  constexpr size_t kKeys = 16;  // keys transposed together
  const size_t widest = std::max(depth, valueDim) + 1;
  // Heads (of Q) and KV heads are packed in parallel; the maxima are combined after.
  std::vector<double> maxQ(heads, 0.0), maxK(kvHeads, 0.0);
  const bool parallel = (heads * seqQ + kvHeads * seqK) * (depth + valueDim) >= (size_t{1} << 16);
  auto packQ = [&](int64_t h0, int64_t h1) {
    for (auto h = static_cast<size_t>(h0); h < static_cast<size_t>(h1); ++h) {
      for (size_t i = 0; i < seqQ; ++i) {
        TS* dst = pk.q + (h * seqQ + i) * dP;
        WidenRow<TS>(p.q, static_cast<int64_t>(i) * p.qStride + static_cast<int64_t>(h) * p.depth, p.dtype, dst,
                     depth);
        maxQ[h] = std::max(maxQ[h], MaxAbsFinite(dst, depth) * p.scale);
        ScaleRow(dst, depth, scale);
        std::fill(dst + depth, dst + dP, TS(0));
      }
    }
  };
  auto packKV = [&](int64_t g0, int64_t g1) {
    std::vector<TS> rows(kKeys * widest);
    for (auto g = static_cast<size_t>(g0); g < static_cast<size_t>(g1); ++g) {
      TS* kt = pk.kt + g * dP * kP;
      TV* vv = pk.v + g * kP * vP;
      int64_t* bad = pk.vBadPrefix.data() + g * (seqK + 1);
      for (size_t j0 = 0; j0 < seqK; j0 += kKeys) {
        const size_t nk = std::min(kKeys, seqK - j0);
        for (size_t jj = 0; jj < nk; ++jj) {
          TS* r = rows.data() + jj * widest;
          WidenRow<TS>(p.k, static_cast<int64_t>(j0 + jj) * p.kStride + static_cast<int64_t>(g) * p.depth, p.dtype,
                       r, depth);
          maxK[g] = std::max(maxK[g], MaxAbsFinite(r, depth));
        }
        for (size_t e = 0; e < depth; ++e) {
          TS* dst = kt + e * kP + j0;
          for (size_t jj = 0; jj < nk; ++jj) dst[jj] = rows[jj * widest + e];
        }
      }
      for (size_t e = 0; e < depth; ++e) std::fill(kt + e * kP + seqK, kt + (e + 1) * kP, TS(0));
      std::fill(kt + depth * kP, kt + dP * kP, TS(0));
      for (size_t j = 0; j < seqK; ++j) {
        TV* vr = vv + j * vP;
        WidenRow<TV>(p.v, static_cast<int64_t>(j) * p.vStride + static_cast<int64_t>(g) * p.valueDim,
                     p.dtype, vr, valueDim);
        std::fill(vr + valueDim, vr + vP, TV(0));
        bad[j + 1] = bad[j] + (AllFinite(vr, valueDim) ? 0 : 1);
      }
      std::fill(vv + seqK * vP, vv + kP * vP, TV(0));
    }
  };
  if (parallel) {
    ParallelFor(static_cast<int64_t>(heads), 1, packQ);
    ParallelFor(static_cast<int64_t>(kvHeads), 1, packKV);
  } else {
    packQ(0, static_cast<int64_t>(heads));
    packKV(0, static_cast<int64_t>(kvHeads));
  }
  std::fill(pk.q + heads * seqQ * dP, pk.q + (heads * seqQ + kMR) * dP, TS(0));
  for (double x : maxQ) pk.maxAbsQ = std::max(pk.maxAbsQ, x);
  for (double x : maxK) pk.maxAbsK = std::max(pk.maxAbsK, x);
}

// Visible keys of query i: [lo, hi] (empty when lo > hi).
struct Range {
  int64_t lo, hi;
};
Range Visible(const Problem& p, int64_t i) {
  const int64_t pos = i + (p.seqK - p.seqQ);
  int64_t hi = p.seqK - 1, lo = 0;
  if (p.causal) hi = std::min(hi, pos);
  if (p.window > 0) {
    lo = std::max<int64_t>(0, pos - p.window + 1);
    if (p.windowRight >= 0 && p.windowRight < p.seqK) hi = std::min(hi, pos + p.windowRight);
  }
  return {lo, hi};
}

// ---- Exact row fallback (the reference's algorithms in f64 on the packed operands)
// ----------------

template <class TS, class TV>
void ExactRow(const Problem& p, const Packed<TS, TV>& pk, int64_t h, int64_t i, double alibi,
              double* out) {
  const int64_t g = h / (p.heads / p.kvHeads);
  const auto dP = static_cast<size_t>(pk.depthP), vP = static_cast<size_t>(pk.valueP),
             kP = static_cast<size_t>(pk.seqKP);
  const TS* qi = pk.q + (static_cast<size_t>(h * p.seqQ + i)) * dP;
  const TS* kt = pk.kt + static_cast<size_t>(g) * dP * kP;
  const TV* vv = pk.v + static_cast<size_t>(g) * kP * vP;
  const int64_t pos = i + (p.seqK - p.seqQ);
  const Range r = Visible(p, i);
  const auto valueDim = static_cast<size_t>(p.valueDim);
  std::fill(out, out + valueDim, 0.0);
  if (r.lo > r.hi) return;
  const double inf = std::numeric_limits<double>::infinity();
  auto score = [&](int64_t j) {
    double dot = 0.0;
    for (size_t e = 0; e < static_cast<size_t>(p.depth); ++e) {
      dot += static_cast<double>(qi[e]) * static_cast<double>(kt[e * kP + static_cast<size_t>(j)]);
    }
    return dot + (alibi == 0.0 ? 0.0 : alibi * static_cast<double>(j - pos));
  };
  auto maxNaN = [](double a, double b) {
    return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
  };
  auto addWeighted = [&](double* acc, double w, int64_t j) {
    const TV* vj = vv + static_cast<size_t>(j) * vP;
    for (size_t e = 0; e < valueDim; ++e) acc[e] += w * static_cast<double>(vj[e]);
  };
  std::vector<double> s(static_cast<size_t>(r.hi - r.lo + 1));
  for (int64_t j = r.lo; j <= r.hi; ++j) s[static_cast<size_t>(j - r.lo)] = score(j);
  if (p.flashBlock <= 0) {
    double m = -inf;
    for (double x : s) m = maxNaN(m, x);
    double sum = 0.0;
    for (int64_t j = r.lo; j <= r.hi; ++j) {
      const double w = std::exp(s[static_cast<size_t>(j - r.lo)] - m);
      sum += w;
      addWeighted(out, w, j);
    }
    for (size_t e = 0; e < valueDim; ++e) out[e] /= sum;
    return;
  }
  // FlashAttention's tiles of flashBlock keys from key 0, online softmax.
  double m = -inf, l = 0.0;
  for (int64_t start = 0; start < p.seqK; start += std::min(p.flashBlock, p.seqK - start)) {
    const int64_t end = start + std::min(p.flashBlock, p.seqK - start);
    const int64_t a = std::max(start, r.lo), b = std::min(end - 1, r.hi);
    if (a > b) continue;
    double tm = -inf;
    for (int64_t j = a; j <= b; ++j) tm = maxNaN(tm, s[static_cast<size_t>(j - r.lo)]);
    const double nm = maxNaN(m, tm);
    if (nm == -inf) continue;
    const double rescale = std::exp(m - nm);
    l *= rescale;
    for (size_t e = 0; e < valueDim; ++e) out[e] *= rescale;
    for (int64_t j = a; j <= b; ++j) {
      const double w = std::exp(s[static_cast<size_t>(j - r.lo)] - nm);
      l += w;
      addWeighted(out, w, j);
    }
    m = nm;
  }
  for (size_t e = 0; e < valueDim; ++e) out[e] = m == -inf ? NAN : out[e] / l;
}

// ---- The flash kernel
// ----------------------------------------------------------------------------

// Stores one output row (valueDim values of T) into the output storage.
template <class T>
void StoreRow(const Problem& p, int64_t h, int64_t i, const T* src, float* scratch) {
  const auto n = static_cast<size_t>(p.valueDim);
  const auto offset = static_cast<size_t>(i * p.oStride + h * p.valueDim);
  switch (p.dtype) {
    case DType::Float64:
      for (size_t e = 0; e < n; ++e)
        static_cast<double*>(p.o)[offset + e] = static_cast<double>(src[e]);
      return;
    case DType::Float32:
      for (size_t e = 0; e < n; ++e)
        static_cast<float*>(p.o)[offset + e] = static_cast<float>(src[e]);
      return;
    default:
      for (size_t e = 0; e < n; ++e) scratch[e] = static_cast<float>(src[e]);
      NarrowBlock(scratch, static_cast<uint16_t*>(p.o) + offset, n, p.dtype == DType::BFloat16);
      return;
  }
}

// Per-task scratch.
template <class TS, class TV>
struct Scratch {
  hwy::AlignedFreeUniquePtr<TS[]> s;   // [kBr][kBc] scores
  hwy::AlignedFreeUniquePtr<TV[]> pv;  // [kBr][kBc] weights
  hwy::AlignedFreeUniquePtr<TV[]> o;   // [kBr][valueP] accumulator
  std::vector<float> narrow;
  std::vector<double> exact;
};

template <class TS, class TV>
void AttendBlock(const Problem& p, const Packed<TS, TV>& pk, int64_t h, int64_t i0,
                 Scratch<TS, TV>& w) {
  const hn::ScalableTag<TS> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<TV, decltype(d)> dv;  // same lane count, TV lanes
  using TI = hwy::MakeSigned<TS>;
  const size_t lanes = hn::Lanes(d);
  const TS inf = std::numeric_limits<TS>::infinity();
  const int64_t g = h / (p.heads / p.kvHeads);
  const auto dP = static_cast<size_t>(pk.depthP), vP = static_cast<size_t>(pk.valueP),
             kP = static_cast<size_t>(pk.seqKP);
  const int64_t i1 = std::min(i0 + static_cast<int64_t>(kBr), p.seqQ);
  const auto rows = static_cast<size_t>(i1 - i0);
  const double alibi = p.slope == 0.0 ? 0.0 : std::pow(p.slope, static_cast<double>(h + 1));
  const TS slope = static_cast<TS>(alibi);
  TS* S = w.s.get();
  TV* P = w.pv.get();
  TV* O = w.o.get();

  Range rng[kBr];
  int64_t blockLo = p.seqK, blockHi = -1;
  for (size_t r = 0; r < rows; ++r) {
    rng[r] = Visible(p, i0 + static_cast<int64_t>(r));
    if (rng[r].lo <= rng[r].hi) {
      blockLo = std::min(blockLo, rng[r].lo);
      blockHi = std::max(blockHi, rng[r].hi);
    }
  }
  const int64_t* bad =
      pk.vBadPrefix.data() + static_cast<size_t>(g) * static_cast<size_t>(p.seqK + 1);
  if (blockLo <= blockHi && bad[blockHi + 1] - bad[blockLo] > 0) {
    // A non-finite V value among the keys: the reference's algorithm, row by row.
    w.exact.resize(static_cast<size_t>(p.valueDim));
    for (size_t r = 0; r < rows; ++r) {
      ExactRow<TS, TV>(p, pk, h, i0 + static_cast<int64_t>(r), alibi, w.exact.data());
      StoreRow<double>(p, h, i0 + static_cast<int64_t>(r), w.exact.data(), w.narrow.data());
    }
    return;
  }

  TS m[kBr], l[kBr];
  TV alpha[kBr];
  bool poisoned[kBr];
  for (size_t r = 0; r < rows; ++r) {
    m[r] = -inf;
    l[r] = 0;
    poisoned[r] = false;
  }
  std::fill(O, O + kBr * vP, TV(0));
  const TS* q = pk.q + (static_cast<size_t>(h * p.seqQ + i0)) * dP;
  const TS* kt = pk.kt + static_cast<size_t>(g) * dP * kP;
  const TV* vv = pk.v + static_cast<size_t>(g) * kP * vP;
  const auto depth = static_cast<size_t>(p.depth), valueDim = static_cast<size_t>(p.valueDim);
  const auto iota = hn::Iota(di, 0);  // once: Highway's Iota goes through memory
  for (int64_t j0 = blockLo; j0 <= blockHi; j0 += static_cast<int64_t>(kBc)) {
    const int64_t j1 = std::min(j0 + static_cast<int64_t>(kBc), blockHi + 1);  // keys [j0, j1)
    const auto width = static_cast<size_t>(j1 - j0);
    const size_t widthV =
        static_cast<size_t>(RoundUp(static_cast<int64_t>(width), static_cast<int64_t>(lanes)));
    // S = Q K^T over the whole tile width (rounded up to vectors; extra columns are masked).
    TiledProduct<TS, false>(
        q, dP, kt + j0, kP, depth, S, kBc, rows,
        static_cast<size_t>(RoundUp(static_cast<int64_t>(width), 2 * static_cast<int64_t>(lanes))),
        nullptr);
    for (size_t r = 0; r < rows; ++r) {
      TS* s = S + r * kBc;
      TV* pr = P + r * kBc;
      const int64_t lo = std::max(rng[r].lo, j0), hi = std::min(rng[r].hi, j1 - 1);
      if (lo > hi || poisoned[r]) {  // nothing visible in this tile, or a NaN row already
        std::fill(pr, pr + width, TV(0));
        alpha[r] = 1;
        continue;
      }
      const auto vlo = hn::Set(di, static_cast<TI>(lo - j0 - 1)),
                 vhi = hn::Set(di, static_cast<TI>(hi - j0 + 1));
      const bool full = lo == j0 && hi == j1 - 1 && width == widthV;
      // Bias relative to the row's last visible key keeps the scores small near the keys that
      // carry the weight (softmax is invariant to a shift per row).
      const TS biasBase = static_cast<TS>(j0 - rng[r].hi);
      auto vmax = hn::Set(d, -inf);
      auto badLanes = hn::Lt(hn::Zero(d), hn::Zero(d));  // all false
      for (size_t c = 0; c < widthV; c += lanes) {
        auto sv = hn::LoadU(d, s + c);
        const auto col = hn::Add(iota, hn::Set(di, static_cast<TI>(c)));
        if (alibi != 0.0)
          sv = hn::MulAdd(hn::Set(d, slope), hn::Add(hn::ConvertTo(d, col), hn::Set(d, biasBase)),
                          sv);
        if (!full)
          sv = hn::IfThenElse(hn::RebindMask(d, hn::And(hn::Gt(col, vlo), hn::Lt(col, vhi))), sv,
                              hn::Set(d, -inf));
        badLanes = hn::Or(badLanes, hn::Or(hn::IsNaN(sv), hn::Eq(sv, hn::Set(d, inf))));
        vmax = hn::Max(vmax, sv);
        hn::StoreU(sv, d, s + c);
      }
      if (!hn::AllFalse(d, badLanes)) poisoned[r] = true;
      const TS tileMax = hn::GetLane(hn::MaxOfLanes(d, vmax));
      const TS newMax = std::max(m[r], tileMax);
      if (newMax == -inf || poisoned[r]) {
        std::fill(pr, pr + width, TV(0));
        alpha[r] = 1;
        continue;
      }
      alpha[r] = m[r] == -inf ? TV(0) : static_cast<TV>(std::exp(m[r] - newMax));
      const auto vm = hn::Set(d, newMax);
      auto sum = hn::Zero(d);
      for (size_t c = 0; c < widthV; c += lanes) {
        const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + c), vm));
        sum = hn::Add(sum, e);
        if constexpr (std::is_same_v<TS, TV>) {
          hn::StoreU(e, d, pr + c);
        } else {
          hn::StoreU(hn::DemoteTo(dv, e), dv, pr + c);  // weights in [0, 1]: no overflow
        }
      }
      l[r] = l[r] * static_cast<TS>(alpha[r]) + hn::GetLane(hn::SumOfLanes(d, sum));
      m[r] = newMax;
    }
    // O = O * alpha + P V (masked columns carry weight 0).
    TiledProduct<TV, true>(P, kBc, vv + static_cast<size_t>(j0) * vP, vP, width, O, vP, rows,
                           valueDim, alpha);
  }
  for (size_t r = 0; r < rows; ++r) {
    TV* orow = O + r * vP;
    if (rng[r].lo > rng[r].hi) {
      std::fill(orow, orow + valueDim, TV(0));
    } else if (poisoned[r] || l[r] == 0) {
      std::fill(orow, orow + valueDim, std::numeric_limits<TV>::quiet_NaN());
    } else {
      const TS inv = TS(1) / l[r];
      for (size_t e = 0; e < valueDim; ++e)
        orow[e] = static_cast<TV>(static_cast<TS>(orow[e]) * inv);
    }
    StoreRow<TV>(p, h, i0 + static_cast<int64_t>(r), orow, w.narrow.data());
  }
}

template <class TS, class TV>
bool RunTyped(const Problem& p) {
  Packed<TS, TV> pk;
  Pack<TS, TV>(p, pk);
  if constexpr (std::is_same_v<TS, float>) {
    // Scores must not overflow f32 where the reference's f64 scores do not.
    const double bound = pk.maxAbsQ * pk.maxAbsK * static_cast<double>(p.depth) +
                         (p.slope == 0.0 ? 0.0
                                         : std::pow(p.slope, static_cast<double>(p.heads)) *
                                               static_cast<double>(p.seqK + p.seqQ));
    if (!(bound < 1e30)) return false;
  }
  const int64_t blocks = (p.seqQ + static_cast<int64_t>(kBr) - 1) / static_cast<int64_t>(kBr);
  const int64_t tasks = p.heads * blocks;
  const size_t vP = static_cast<size_t>(pk.valueP);
  auto body = [&](int64_t t0, int64_t t1) {
    Scratch<TS, TV> w;
    w.s = hwy::AllocateAligned<TS>(kBr * kBc + kPad);
    w.pv = hwy::AllocateAligned<TV>(kBr * kBc + kPad);
    w.o = hwy::AllocateAligned<TV>(kBr * vP + kPad);
    std::fill(w.s.get(), w.s.get() + kBr * kBc + kPad, TS(0));
    std::fill(w.pv.get(), w.pv.get() + kBr * kBc + kPad, TV(0));
    w.narrow.resize(vP + kPad);
    for (int64_t t = t0; t < t1; ++t) {
      // Query blocks from both ends of the head in turn: causal blocks grow with their index, and
      // the pool hands out contiguous ranges of tasks.
      const int64_t i = t % blocks, block = i % 2 == 0 ? i / 2 : blocks - 1 - i / 2;
      AttendBlock<TS, TV>(p, pk, t / blocks, block * static_cast<int64_t>(kBr), w);
    }
  };
  const double work = static_cast<double>(p.heads) * static_cast<double>(p.seqQ) *
                      static_cast<double>(p.seqK) * static_cast<double>(p.depth + p.valueDim);
  if (work >= 1e6 && tasks > 1) {
    ParallelFor(tasks, 1, body);
  } else {
    body(0, tasks);
  }
  return true;
}

// Runs the problem; false when it must go to the reference (f32 score overflow risk).
bool Attend(const Problem& p) {
  switch (p.dtype) {
    case DType::Float64:
      return RunTyped<double, double>(p);
    default:  // f32, f16, bf16: f32 lanes
      return RunTyped<float, float>(p);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <fmt/format.h>

#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(Attend);

namespace {

using namespace attention_ops;  // NOLINT

bool Floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool MulOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

void ZeroOutput(void* o, int64_t count, DType dtype) {
  if (count > 0) std::memset(o, 0, DTypeStorageBytes(dtype, count));  // +0 in every format
}

// The fast path for valid calls; anything else goes to the reference (which throws).
template <bool kFlash>
void SingleHead(const FlashAttentionConfig& config, const void* q, const void* k, const void* v,
                void* o, int64_t seqQ, int64_t seqK, int64_t depth, int64_t valueDim, DType dtype) {
  int64_t qc = 0, kc = 0, vc = 0, oc = 0;
  const bool ok = Floating(dtype) && (!kFlash || config.BlockSize > 0) && seqQ >= 0 && seqK >= 0 &&
                  depth >= 0 && valueDim >= 0 && !(depth == 0 && seqQ > 0 && seqK > 0) &&
                  MulOk(seqQ, depth, &qc) && MulOk(seqK, depth, &kc) &&
                  MulOk(seqK, valueDim, &vc) && MulOk(seqQ, valueDim, &oc) && !(qc > 0 && !q) &&
                  !(kc > 0 && !k) && !(vc > 0 && !v) && !(oc > 0 && !o);
  auto reference = [&] {
    const auto fn = kFlash ? Reference().Attention_FlashAttention
                           : Reference().Attention_ScaledDotProductAttention;
    fn(config, q, k, v, o, seqQ, seqK, depth, valueDim, dtype);
  };
  if (!ok) return reference();
  if (oc == 0) return;
  if (seqK == 0) return ZeroOutput(o, oc, dtype);
  const Problem p{.q = q,
                  .k = k,
                  .v = v,
                  .o = o,
                  .dtype = dtype,
                  .seqQ = seqQ,
                  .seqK = seqK,
                  .depth = depth,
                  .valueDim = valueDim,
                  .heads = 1,
                  .kvHeads = 1,
                  .qStride = depth,
                  .kStride = depth,
                  .vStride = valueDim,
                  .oStride = valueDim,
                  .causal = config.Causal,
                  .window = 0,
                  .windowRight = 0,
                  .slope = 0.0,
                  .flashBlock = kFlash ? config.BlockSize : 0,
                  .scale = 1.0 / std::sqrt(static_cast<double>(depth))};
  if (!HWY_DYNAMIC_DISPATCH(Attend)(p)) reference();
}

void MultiHead(const MultiHeadAttentionConfig& config, const void* q, const void* k, const void* v,
               void* o, int64_t seqQ, int64_t seqK, DType dtype) {
  const int64_t heads = config.NumHeads, dim = config.HeadDim;
  const int64_t kvHeads = config.KVHeadCount > 0 ? config.KVHeadCount : heads;
  const double slope = static_cast<double>(config.ALiBiSlope);
  int64_t qWidth = 0, kvWidth = 0, qc = 0, kvc = 0;
  const bool ok =
      Floating(dtype) && seqQ >= 0 && seqK >= 0 && heads > 0 && dim > 0 && kvHeads <= heads &&
      heads % kvHeads == 0 && config.WindowSize >= 0 && config.WindowRight >= -1 && std::isfinite(slope) && slope >= 0.0 &&
      !(slope > 1.0 && !std::isfinite(std::pow(slope, static_cast<double>(heads)))) &&
      MulOk(heads, dim, &qWidth) && MulOk(kvHeads, dim, &kvWidth) && MulOk(qWidth, seqQ, &qc) &&
      MulOk(kvWidth, seqK, &kvc) && !(qc > 0 && !q) && !(kvc > 0 && (!k || !v)) && !(qc > 0 && !o);
  auto reference = [&] {
    Reference().Attention_MultiHeadAttention(config, q, k, v, o, seqQ, seqK, dtype);
  };
  if (!ok) return reference();
  if (qc == 0) return;
  if (seqK == 0) return ZeroOutput(o, qc, dtype);
  const Problem p{.q = q,
                  .k = k,
                  .v = v,
                  .o = o,
                  .dtype = dtype,
                  .seqQ = seqQ,
                  .seqK = seqK,
                  .depth = dim,
                  .valueDim = dim,
                  .heads = heads,
                  .kvHeads = kvHeads,
                  .qStride = qWidth,
                  .kStride = kvWidth,
                  .vStride = kvWidth,
                  .oStride = qWidth,
                  .causal = config.Causal,
                  .window = config.WindowSize,
                  .windowRight = config.WindowRight,
                  .slope = slope,
                  .flashBlock = 0,
                  .scale = 1.0 / std::sqrt(static_cast<double>(dim))};
  if (!HWY_DYNAMIC_DISPATCH(Attend)(p)) reference();
}

// True when some catalog op links `id` (directly or as part of a composite link), so that the
// conformance matrix (which runs the catalog's ops and their linked methods) verifies its fast kernel.
bool RunByAnOp(catalog::MethodId id) {
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty()) continue;
    for (catalog::MethodId m : op.methods) {
      if (m == id) return true;
    }
  }
  return false;
}

}  // namespace

void RegisterAttention(KernelTable& t) {
  t.Attention_ScaledDotProductAttention = &SingleHead<false>;
  t.Attention_MultiHeadAttention = &MultiHead;
  // FlashAttention (the same kernel with the reference's tile rule in the exact fallback) is
  // registered only while an op links it (attention.mqa/gqa on long sequences), so that the matrix
  // verifies it.
  if (RunByAnOp(catalog::MethodId::Attention_FlashAttention))
    t.Attention_FlashAttention = &SingleHead<true>;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
