// Fast kernels for the Causal surface.
// - Cholesky: blocked right-looking (BlockedCholesky): OpenBLAS dpotrf on 128-column diagonal blocks,
//   the panel solve and trailing update in fixed 64-column tiles of serial dtrsm / dgemm / dsyrk on
//   our pool (so results do not depend on the thread count). Every dtype is widened to f64 (spotrf misses the f32 tolerance already at
//   n = 64 on moderately conditioned matrices) and rounded once, as the reference does. Validation
//   (finite, symmetric) is a vector test: each lanes x lanes block of the lower triangle against its
//   mirror, gathered, bitwise-equal values passing; a block that fails it, and the diagonal blocks,
//   take the reference's exact rule. f64 is checked in the input, fused with the copy of the lower
//   triangle into a private f64 buffer (huge pages advised); other formats are widened into it first
//   and checked there. Non-finite, asymmetric, not positive definite (info > 0) or nearly singular
//   (a pivot within rounding of 0, where the reference's pivot order could decide otherwise) inputs
//   go to the reference, so errors are identical and the output is untouched until the factor is
//   complete. A large f64 factor is written with non-temporal stores.
// - CATE: f32/f64 lanes; f16/bf16 widened to f32 (one f32 subtraction then one rounding equals the
//   reference's single rounding: 24 >= 2p + 2 bits).
// - Counterfactual: f64 lanes for every dtype (the reference's arithmetic), rounded once.
// - BackdoorAdjustment, FrontdoorAdjustment: f64 lanes across y, summing in the reference's order;
//   the distribution checks are the reference's sequential f64 row sums (identical decisions).
// - MarkovFlowActive/Internal: f64 lanes, masked row sums of non-negative terms.
// - IVEstimate: the reference's two-pass f64 sums (means, then S_zy, S_zx, S_zz, S_xx) in f64
//   lanes over fixed chunks of 32768, combined in chunk order (f32 promoted in registers, f16/bf16
//   widened in blocks). Non-finite sums, and a weak-instrument statistic within rounding of the
//   1e-12 threshold, go to the reference (identical errors and NaN results).
// - DAGMarkovFactorization: lane-wise products of the factors' significands with their exponent
//   fields summed apart (the reference's log2 bookkeeping), fixed chunks combined in order, one
//   final rounding. A factor outside [0, 1], NaN, zero or f64-subnormal goes to the reference.
// Scalar by design: DoIntervene (a copy plus column zeroing: data movement, no arithmetic).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/causal.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cfloat>
#include <cmath>
#include <type_traits>

#include "cpu/kernels/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out = l - r.
template <class T>
void SubTyped(const T* l, const T* r, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Sub(hn::LoadU(d, l + i), hn::LoadU(d, r + i)), d, out + i);
  for (; i < n; ++i) out[i] = l[i] - r[i];
}

void CateF32(const float* l, const float* r, float* out, size_t n) { SubTyped(l, r, out, n); }
void CateF64(const double* l, const double* r, double* out, size_t n) { SubTyped(l, r, out, n); }

void CateHalf(const uint16_t* l, const uint16_t* r, uint16_t* out, size_t n, bool bf16) {
  constexpr size_t kBlock = 1024;
  HWY_ALIGN float fl[kBlock], fr[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(l + i, fl, m, bf16);
    WidenBlock(r + i, fr, m, bf16);
    SubTyped(fl, fr, fl, m);
    NarrowBlock(fl, out + i, m, bf16);
  }
}

// out = y + b (xp - x) in f64.
void CounterfactualF64(const double* y, const double* x, const double* xp, double b, double* out, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vb = hn::Set(d, b);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto diff = hn::Sub(hn::LoadU(d, xp + i), hn::LoadU(d, x + i));
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::Mul(vb, diff)), d, out + i);
  }
  for (; i < n; ++i) out[i] = y[i] + b * (xp[i] - x[i]);
}

// out[o][0..len) = sum_k w[o*wo + k] * r[o*ro + k*rk + 0..len), k ascending (the reference's order).
void ContractF64(const double* w, size_t wo, const double* r, size_t ro, size_t rk, double* out, size_t outer,
                 size_t inner, size_t len) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t o = 0; o < outer; ++o) {
    const double* wr = w + o * wo;
    const double* rr = r + o * ro;
    double* orow = out + o * len;
    size_t y = 0;
    for (; y + lanes <= len; y += lanes) {
      auto acc = hn::Zero(d);
      for (size_t k = 0; k < inner; ++k) acc = hn::Add(acc, hn::Mul(hn::LoadU(d, rr + k * rk + y), hn::Set(d, wr[k])));
      hn::StoreU(acc, d, orow + y);
    }
    for (; y < len; ++y) {
      double acc = 0.0;
      for (size_t k = 0; k < inner; ++k) acc += rr[k * rk + y] * wr[k];
      orow[y] = acc;
    }
  }
}

// True when every value is finite and >= 0.
bool AllFiniteNonNegF64(const double* v, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto inf = hn::Set(d, HUGE_VAL);
  auto ok = hn::Eq(hn::Zero(d), hn::Zero(d));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::LoadU(d, v + i);
    ok = hn::And(ok, hn::And(hn::Ge(x, hn::Zero(d)), hn::Lt(x, inf)));  // false for NaN
  }
  if (!hn::AllTrue(d, ok)) return false;
  for (; i < n; ++i) {
    if (!(v[i] >= 0.0 && v[i] < HUGE_VAL)) return false;
  }
  return true;
}

// sum_j row[j] * mask[j] (mask 0 or 1, row finite), lane-wise partial sums.
double MaskedSumF64(const double* row, const double* mask, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  auto acc = hn::Zero(d);
  size_t j = 0;
  for (; j + lanes <= n; j += lanes) acc = hn::Add(acc, hn::Mul(hn::LoadU(d, row + j), hn::LoadU(d, mask + j)));
  double sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; j < n; ++j) sum += row[j] * mask[j];
  return sum;
}

// ---- Cholesky validation ----
// Rows [i0, i1) of a (f64, row-major, row stride ld), in groups of L = lanes rows from i0: true
// when every entry left of column floor(g / L) L (g: the row's group start) is finite and equal to
// its mirror a[j][i] (gathered). Column blocks outside, row groups inside, so each L x L mirror
// block is reused from L1 by the rows that need it.
bool SymCheckBlocksF64(const double* a, size_t ld, size_t i0, size_t i1) {
  constexpr size_t kPrefetchBlocks = 4;
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN int64_t stride[HWY_MAX_BYTES / sizeof(int64_t)];
  for (size_t k = 0; k < lanes; ++k) stride[k] = static_cast<int64_t>(k * ld);
  const auto idx = hn::Load(di, stride);
  const auto zero = hn::Zero(d);
  auto ok = hn::Eq(zero, zero);
  const size_t lastGroup = i0 + (i1 - 1 - i0) / lanes * lanes;
  const size_t jMax = lastGroup / lanes * lanes;
  for (size_t jb = 0; jb + lanes <= jMax; jb += lanes) {
    // The mirror rows a few blocks ahead: in a large matrix each row is on a new page, where no
    // hardware prefetcher follows.
    const size_t ahead = jb + kPrefetchBlocks * lanes;
    if (ahead + lanes <= jMax) {
      for (size_t k = 0; k < lanes; ++k) {
        for (size_t c = i0; c < i1; c += 8) hwy::Prefetch(a + (ahead + k) * ld + c);
        hwy::Prefetch(a + (ahead + k) * ld + i1 - 1);
      }
    }
    // Every row group whose diagonal block lies right of this column block.
    for (size_t g = i0; g < i1; g += lanes) {
      if (jb + lanes > g / lanes * lanes) continue;
      const size_t gEnd = g + lanes < i1 ? g + lanes : i1;
      for (size_t i = g; i < gEnd; ++i) {
        const auto v = hn::LoadU(d, a + i * ld + jb);
        const auto mirror = hn::GatherIndex(d, a + jb * ld + i, idx);
        ok = hn::And(ok, hn::And(hn::Eq(v, mirror), hn::Eq(hn::Sub(v, v), zero)));  // false for Inf, NaN
      }
    }
  }
  return hn::AllTrue(d, ok);
}

size_t LanesF64() { return hn::Lanes(hn::ScalableTag<double>()); }

// dst[0..len) = src[0..count) followed by zeros (count <= len; src readable up to len), with
// non-temporal stores for the vector-aligned middle: a large factor is not read back by us.
void StreamRowF64(const double* src, size_t count, double* dst, size_t len) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const size_t align = lanes * sizeof(double);
  size_t j = 0;
  for (; j < len && reinterpret_cast<uintptr_t>(dst + j) % align != 0; ++j) dst[j] = j < count ? src[j] : 0.0;
  for (; j + lanes <= len; j += lanes) {
    const auto v = j < count ? hn::LoadU(d, src + j) : hn::Zero(d);
    hn::Stream(j + lanes <= count ? v : hn::IfThenElseZero(hn::FirstN(d, j < count ? count - j : 0), v), d, dst + j);
  }
  for (; j < len; ++j) dst[j] = j < count ? src[j] : 0.0;
}

// ---- IVEstimate: two-pass f64 sums ----
template <class T>
HWY_INLINE hn::Vec<hn::ScalableTag<double>> LoadF64(const T* p) {
  const hn::ScalableTag<double> d;
  if constexpr (std::is_same_v<T, double>) {
    return hn::LoadU(d, p);
  } else {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<float, decltype(d)>(), p));
  }
}

// s[0..3) += sum z, sum x, sum y.
template <class T>
void IvSums(const T* z, const T* x, const T* y, size_t n, double* s) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  auto sz = hn::Zero(d), sx = hn::Zero(d), sy = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    sz = hn::Add(sz, LoadF64(z + i));
    sx = hn::Add(sx, LoadF64(x + i));
    sy = hn::Add(sy, LoadF64(y + i));
  }
  double tz = hn::GetLane(hn::SumOfLanes(d, sz)), tx = hn::GetLane(hn::SumOfLanes(d, sx));
  double ty = hn::GetLane(hn::SumOfLanes(d, sy));
  for (; i < n; ++i) {
    tz += static_cast<double>(z[i]);
    tx += static_cast<double>(x[i]);
    ty += static_cast<double>(y[i]);
  }
  s[0] += tz;
  s[1] += tx;
  s[2] += ty;
}

// s[0..4) += S_zy, S_zx, S_zz, S_xx about the means m[0..3) (z, x, y).
template <class T>
void IvCentred(const T* z, const T* x, const T* y, size_t n, const double* m, double* s) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto mz = hn::Set(d, m[0]), mx = hn::Set(d, m[1]), my = hn::Set(d, m[2]);
  auto szy = hn::Zero(d), szx = hn::Zero(d), szz = hn::Zero(d), sxx = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto dz = hn::Sub(LoadF64(z + i), mz), dx = hn::Sub(LoadF64(x + i), mx);
    const auto dy = hn::Sub(LoadF64(y + i), my);
    szy = hn::MulAdd(dz, dy, szy);
    szx = hn::MulAdd(dz, dx, szx);
    szz = hn::MulAdd(dz, dz, szz);
    sxx = hn::MulAdd(dx, dx, sxx);
  }
  double t[4] = {hn::GetLane(hn::SumOfLanes(d, szy)), hn::GetLane(hn::SumOfLanes(d, szx)),
                 hn::GetLane(hn::SumOfLanes(d, szz)), hn::GetLane(hn::SumOfLanes(d, sxx))};
  for (; i < n; ++i) {
    const double dz = static_cast<double>(z[i]) - m[0], dx = static_cast<double>(x[i]) - m[1];
    const double dy = static_cast<double>(y[i]) - m[2];
    t[0] += dz * dy;
    t[1] += dz * dx;
    t[2] += dz * dz;
    t[3] += dx * dx;
  }
  for (int k = 0; k < 4; ++k) s[k] += t[k];
}

// pass 0: IvSums, pass 1: IvCentred (m = the means).
void IvPassF64(const double* z, const double* x, const double* y, size_t n, int pass, const double* m, double* s) {
  pass == 0 ? IvSums(z, x, y, n, s) : IvCentred(z, x, y, n, m, s);
}
void IvPassF32(const float* z, const float* x, const float* y, size_t n, int pass, const double* m, double* s) {
  pass == 0 ? IvSums(z, x, y, n, s) : IvCentred(z, x, y, n, m, s);
}
void IvPassHalf(const uint16_t* z, const uint16_t* x, const uint16_t* y, size_t n, int pass, const double* m,
                double* s, bool bf16) {
  constexpr size_t kBlock = 512;
  HWY_ALIGN float fz[kBlock], fx[kBlock], fy[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t b = n - i < kBlock ? n - i : kBlock;
    WidenBlock(z + i, fz, b, bf16);
    WidenBlock(x + i, fx, b, bf16);
    WidenBlock(y + i, fy, b, bf16);
    IvPassF32(fz, fx, fy, b, pass, m, s);
  }
}

// ---- DAGMarkovFactorization: lane-wise products with binary-exponent bookkeeping ----
// (m, e) *= (pm, pe): m stays in [0.5, 1) (frexp), exact apart from the one rounding of m * pm.
inline void MulInto(double& m, int64_t& e, double pm, int64_t pe) {
  int k = 0;
  m = std::frexp(m * pm, &k);
  e += pe + k;
}

// Moves acc's exponent field into fields and leaves its significand in [0.5, 1) (acc normal, > 0).
template <class V, class VU>
HWY_INLINE void Renorm(V& acc, VU& fields) {
  const hn::DFromV<V> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const auto bits = hn::BitCast(du, acc);
  fields = hn::Add(fields, hn::ShiftRight<52>(bits));
  acc = hn::BitCast(d, hn::Or(hn::And(bits, hn::Set(du, 0x000FFFFFFFFFFFFFull)), hn::Set(du, 0x3FE0000000000000ull)));
}

// Multiplies c[0..n) into (m, e). Sets *bad when a factor is outside [0, 1] or NaN, or below
// DBL_MIN (zero or subnormal: left to the caller). Each lane keeps a significand product of
// factors' significands in [0.5, 1) (renormalised every 128 steps, so it stays >= 2^-129) and the
// sum of their exponent fields.
template <class T>
void DagProduct(const T* c, size_t n, double& m, int64_t& e, bool& bad) {
  const hn::ScalableTag<double> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const size_t lanes = hn::Lanes(d);
  const auto mantMask = hn::Set(du, 0x000FFFFFFFFFFFFFull);
  const auto half = hn::Set(du, 0x3FE0000000000000ull);  // 0.5's exponent field
  const auto one = hn::Set(d, 1.0), tiny = hn::Set(d, DBL_MIN);
  auto ok = hn::Eq(one, one);
  auto acc0 = one, acc1 = one;
  auto fields = hn::Zero(du);
  size_t i = 0, steps = 0;
  size_t factorsInFields = 0;  // exponent fields summed, each to be reduced by 1022
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto v0 = LoadF64(c + i), v1 = LoadF64(c + i + lanes);
    ok = hn::And(ok, hn::And(hn::Ge(v0, tiny), hn::Le(v0, one)));  // false for NaN
    ok = hn::And(ok, hn::And(hn::Ge(v1, tiny), hn::Le(v1, one)));
    const auto b0 = hn::BitCast(du, v0), b1 = hn::BitCast(du, v1);
    fields = hn::Add(fields, hn::Add(hn::ShiftRight<52>(b0), hn::ShiftRight<52>(b1)));
    acc0 = hn::Mul(acc0, hn::BitCast(d, hn::Or(hn::And(b0, mantMask), half)));
    acc1 = hn::Mul(acc1, hn::BitCast(d, hn::Or(hn::And(b1, mantMask), half)));
    factorsInFields += 2;
    if (++steps == 128) {
      steps = 0;
      Renorm(acc0, fields);
      Renorm(acc1, fields);
      factorsInFields += 2;
    }
  }
  Renorm(acc0, fields);
  Renorm(acc1, fields);
  factorsInFields += 2;
  if (!hn::AllTrue(d, ok)) {
    bad = true;
    return;
  }
  const auto prod = hn::Mul(acc0, acc1);  // in [0.25, 1): normal
  HWY_ALIGN double pl[HWY_MAX_BYTES / sizeof(double)];
  HWY_ALIGN uint64_t fl[HWY_MAX_BYTES / sizeof(uint64_t)];
  hn::Store(prod, d, pl);
  hn::Store(fields, du, fl);
  int64_t fieldSum = 0;
  for (size_t k = 0; k < lanes; ++k) {
    int pe = 0;
    const double pm = std::frexp(pl[k], &pe);
    MulInto(m, e, pm, pe);
    fieldSum += static_cast<int64_t>(fl[k]);
  }
  e += fieldSum - 1022 * static_cast<int64_t>(factorsInFields * lanes);  // per lane
  for (; i < n; ++i) {
    const double p = static_cast<double>(c[i]);
    if (!(p >= DBL_MIN && p <= 1.0)) {
      bad = true;
      return;
    }
    int pe = 0;
    const double pm = std::frexp(p, &pe);
    MulInto(m, e, pm, pe);
  }
}

void DagProductF64(const double* c, size_t n, double* m, int64_t* e, bool* bad) { DagProduct(c, n, *m, *e, *bad); }
void DagProductF32(const float* c, size_t n, double* m, int64_t* e, bool* bad) { DagProduct(c, n, *m, *e, *bad); }
void DagProductHalf(const uint16_t* c, size_t n, double* m, int64_t* e, bool* bad, bool bf16) {
  constexpr size_t kBlock = 1024;
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n && !*bad; i += kBlock) {
    const size_t b = n - i < kBlock ? n - i : kBlock;
    WidenBlock(c + i, f, b, bf16);
    DagProduct(f, b, *m, *e, *bad);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <vector>

#include <cblas.h>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/serial_blas.hpp"
#include "cpu/kernels/simd.hpp"
#include "cpu/kernels/storage.hpp"
#include "cpu/reference/common.hpp"

extern "C" void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t uplo_len);

namespace backplane::cpu::simd {
HWY_EXPORT(CateF32);
HWY_EXPORT(CateF64);
HWY_EXPORT(CateHalf);
HWY_EXPORT(CounterfactualF64);
HWY_EXPORT(ContractF64);
HWY_EXPORT(AllFiniteNonNegF64);
HWY_EXPORT(MaskedSumF64);
HWY_EXPORT(SymCheckBlocksF64);
HWY_EXPORT(LanesF64);
HWY_EXPORT(StreamRowF64);
HWY_EXPORT(IvPassF64);
HWY_EXPORT(IvPassF32);
HWY_EXPORT(IvPassHalf);
HWY_EXPORT(DagProductF64);
HWY_EXPORT(DagProductF32);
HWY_EXPORT(DagProductHalf);

namespace {

constexpr int64_t kGrain = 32768;        // elements per chunk of the elementwise kernels
constexpr int64_t kParallelMin = 65536;  // threads only from this many elements on
constexpr size_t kCheckRows = 8;  // rows per call of the vector symmetry test (a multiple of the lanes)
constexpr size_t kStreamBytes = size_t{4} << 20;  // f64 Cholesky factors this large bypass the cache

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

double LoadD(const void* p, size_t i, DType dtype) { return ref::Load<double>(p, static_cast<int64_t>(i), dtype); }

void WidenTo(const void* src, size_t at, size_t n, DType dtype, double* dst) {
  switch (dtype) {
    case DType::Float64: std::memcpy(dst, static_cast<const double*>(src) + at, n * sizeof(double)); return;
    case DType::Float32: {
      const float* s = static_cast<const float*>(src) + at;
      for (size_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    case DType::Float16: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + at;
      for (size_t i = 0; i < n; ++i) dst[i] = F16ToF32(s[i]);
      return;
    }
    default: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + at;
      for (size_t i = 0; i < n; ++i) dst[i] = BF16ToF32(s[i]);
      return;
    }
  }
}

std::vector<double> Widened(const void* src, size_t n, DType dtype) {
  std::vector<double> v(n);
  if (n > 0) WidenTo(src, 0, n, dtype, v.data());
  return v;
}

// Runs fn(begin, end) over fixed chunks of kGrain elements, threaded from kParallelMin on.
template <class Fn>
void Chunked(int64_t n, Fn&& fn) {
  if (n < kParallelMin) return fn(int64_t{0}, n);
  ParallelFor(n, kGrain, fn);
}

// ---- Cholesky -----------------------------------------------------------------------------------

double SymmetryTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-4;
    case DType::Float16: return 1e-2;
    default: return 6e-2;
  }
}

// The reference's symmetry rule for the pair (i, j) of a (widened values), finiteness included.
bool PairOk(const double* a, size_t n, size_t i, size_t j, double symTol) {
  const double x = a[i * n + j], y = a[j * n + i];
  if (!std::isfinite(x) || !std::isfinite(y)) return false;
  if (x == y) return true;
  const double aii = a[i * n + i], ajj = a[j * n + j];
  if (!std::isfinite(aii) || !std::isfinite(ajj)) return false;
  const double scale = std::max({std::fabs(x), std::fabs(y), std::sqrt(std::fabs(aii) * std::fabs(ajj))});
  return std::fabs(x - y) <= symTol * scale;
}

// Checks every pair (i, j), j <= i, in rows [r0, r1) of a (f64, row stride ld) against the
// reference's finiteness and symmetry rules. Tiles of kCheckRows rows go through the vector test
// (lanes x lanes blocks left of each row group's diagonal block); a tile that fails it, and the
// diagonal blocks, take the exact rule. Returns false on the first violation (the reference then
// reports it).
bool CheckRows(const double* a, size_t ld, size_t r0, size_t r1, double symTol, size_t lanes) {
  for (size_t t0 = r0; t0 < r1; t0 += kCheckRows) {
    const size_t t1 = std::min(r1, t0 + kCheckRows);
    if (!HWY_DYNAMIC_DISPATCH(SymCheckBlocksF64)(a, ld, t0, t1)) {
      for (size_t i = t0; i < t1; ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (!PairOk(a, ld, i, j, symTol)) return false;
        }
      }
    }
    // What the vector test left out: j from the row group's diagonal block to i.
    for (size_t i = t0; i < t1; ++i) {
      const size_t g = t0 + (i - t0) / lanes * lanes;
      for (size_t j = g / lanes * lanes; j <= i; ++j) {
        const double x = a[i * ld + j];
        if (!(x == a[j * ld + i] && x - x == 0.0) && !PairOk(a, ld, i, j, symTol)) return false;
      }
    }
  }
  return true;
}

// A per-thread f64 work matrix, kept between calls up to 64 MiB (a fresh one would cost a page
// fault per 4 KiB on every call), 2 MiB-aligned and advised to use huge pages: the symmetry
// check reads it a column at a time, one 4 KiB page per row otherwise.
struct ScratchBuffer {
  double* data = nullptr;
  size_t bytes = 0;
  ~ScratchBuffer() { std::free(data); }
};

double* Scratch(size_t count, ScratchBuffer& local) {
  constexpr size_t kKeepBytes = size_t{64} << 20;
  constexpr size_t kHuge = size_t{2} << 20;
  thread_local ScratchBuffer kept;
  const size_t bytes = (count * sizeof(double) + kHuge - 1) / kHuge * kHuge;
  ScratchBuffer& buf = bytes <= kKeepBytes ? kept : local;
  if (buf.bytes < bytes) {
    std::free(buf.data);
    buf.data = static_cast<double*>(std::aligned_alloc(kHuge, bytes));
    if (!buf.data) throw std::bad_alloc();
    buf.bytes = bytes;
#ifdef MADV_HUGEPAGE
    madvise(buf.data, bytes, MADV_HUGEPAGE);  // advice only; failure is harmless
#endif
  }
  return buf.data;
}

// Right-looking blocked Cholesky of a column-major upper triangle (LAPACK's "U", A = U^T U;
// element (i, j) at a[i + j * n]) in steps of kCholeskyStep columns: dpotrf on the diagonal block,
// then the panel solve A12 = U11^-T A12 and the update A22 -= A12^T A12 in fixed column tiles on
// our pool. Each tile is one serial BLAS call whose shape depends only on n, so the factor does
// not depend on the thread count. Returns dpotrf's info for the whole matrix (0: success).
constexpr size_t kCholeskyStep = 128, kCholeskyTile = 64;
int BlockedCholesky(double* a, size_t n, bool threaded) {
  const int ld = static_cast<int>(n);
  auto tiles = [&](size_t count, const std::function<void(size_t)>& tile) {
    auto run = [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) tile(static_cast<size_t>(i));
    };
    if (threaded && count > 1) {
      ParallelFor(static_cast<int64_t>(count), 1, run);
    } else {
      SerialBlas serial;
      run(0, static_cast<int64_t>(count));
    }
  };
  for (size_t k = 0; k < n; k += kCholeskyStep) {
    const size_t kb = std::min(kCholeskyStep, n - k);
    double* a11 = a + k + k * n;
    int info = 0;
    {
      SerialBlas serial;
      const int kbi = static_cast<int>(kb);
      dpotrf_("U", &kbi, a11, &ld, &info, 1);
    }
    if (info != 0) return static_cast<int>(k) + info;
    const size_t j0 = k + kb;
    if (j0 >= n) break;
    const size_t count = (n - j0 + kCholeskyTile - 1) / kCholeskyTile;
    auto columns = [&](size_t t, size_t* jc, int* width) {
      *jc = j0 + t * kCholeskyTile;
      *width = static_cast<int>(std::min(kCholeskyTile, n - *jc));
    };
    tiles(count, [&](size_t t) {
      size_t jc = 0;
      int width = 0;
      columns(t, &jc, &width);
      cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, static_cast<int>(kb), width, 1.0,
                  a11, ld, a + k + jc * n, ld);
    });
    // Tile t updates rows [j0, jc + width) of its columns, so the work grows with t: tasks take
    // tiles from both ends in turn, so that contiguous halves of the tasks weigh the same.
    tiles(count, [&](size_t task) {
      const size_t t = task % 2 == 0 ? task / 2 : count - 1 - task / 2;
      size_t jc = 0;
      int width = 0;
      columns(t, &jc, &width);
      const double* panel = a + k + j0 * n;  // A12, kb x (n - j0)
      if (jc > j0) {
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(jc - j0), width, static_cast<int>(kb),
                    -1.0, panel, ld, a + k + jc * n, ld, 1.0, a + j0 + jc * n, ld);
      }
      cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, width, static_cast<int>(kb), -1.0, a + k + jc * n, ld, 1.0,
                  a + jc + jc * n, ld);
    });
  }
  return 0;
}

void Cholesky(const void* input, void* output, int64_t matrixOrder, DType dtype) {
  const auto& reference = Reference().Causal_Cholesky;
  if (!FloatDType(dtype) || matrixOrder <= 0 || matrixOrder > (int64_t{1} << 15) || !input || !output) {
    return reference(input, output, matrixOrder, dtype);
  }
  const size_t n = static_cast<size_t>(matrixOrder);
  ScratchBuffer local;
  double* w = Scratch(n * n, local);
  const double symTol = SymmetryTolerance(dtype);
  // Rows in blocks of fixed size (a multiple of the check's tile), threaded for large matrices.
  const int64_t rowGrain = std::max<int64_t>(64, (int64_t{1} << 16) / matrixOrder / 64 * 64);
  const bool threaded = matrixOrder * matrixOrder >= kParallelMin;
  auto rows = [&](auto&& fn) {
    if (threaded) {
      ParallelFor(matrixOrder, rowGrain, fn);
    } else {
      fn(int64_t{0}, matrixOrder);
    }
  };
  const size_t lanes = HWY_DYNAMIC_DISPATCH(LanesF64)();
  std::atomic<bool> ok{true};
  if (dtype == DType::Float64) {
    // The lower triangle is copied into w in row tiles, each checked in the input right after
    // (its rows are then in cache; one pass over the input).
    const double* a = static_cast<const double*>(input);
    rows([&](int64_t b, int64_t e) {
      for (auto t0 = static_cast<size_t>(b); t0 < static_cast<size_t>(e); t0 += kCheckRows) {
        const size_t t1 = std::min(static_cast<size_t>(e), t0 + kCheckRows);
        for (size_t r = t0; r < t1; ++r) std::memcpy(w + r * n, a + r * n, (r + 1) * sizeof(double));
        if (!CheckRows(a, n, t0, t1, symTol, lanes)) ok.store(false, std::memory_order_relaxed);
      }
    });
  } else {
    // Other formats are widened whole into w (exactly), then checked there, as the reference
    // checks the widened values.
    rows([&](int64_t b, int64_t e) {
      WidenTo(input, static_cast<size_t>(b) * n, static_cast<size_t>(e - b) * n, dtype, w + static_cast<size_t>(b) * n);
    });
    rows([&](int64_t b, int64_t e) {
      if (!CheckRows(w, n, static_cast<size_t>(b), static_cast<size_t>(e), symTol, lanes)) {
        ok.store(false, std::memory_order_relaxed);
      }
    });
  }
  if (!ok.load()) return reference(input, output, matrixOrder, dtype);  // throws its error

  // The row-major lower triangle is LAPACK's column-major upper one: w = U with A = U^T U, and the
  // row-major L = U^T has the same layout.
  const int info = BlockedCholesky(w, n, threaded && n >= 2 * kCholeskyStep);
  if (info != 0) return reference(input, output, matrixOrder, dtype);
  // A pivot L_ii^2 within rounding of zero could be <= 0 in the reference's order (it would throw):
  // let the reference decide. Its pivot differs from LAPACK's by about n eps a_ii.
  const double guard = 256.0 * static_cast<double>(n + 1) * DBL_EPSILON;
  for (size_t i = 0; i < n; ++i) {
    const double lii = w[i * n + i];
    if (!(lii * lii > guard * std::fabs(LoadD(input, i * n + i, dtype)))) {
      return reference(input, output, matrixOrder, dtype);
    }
  }
  // Output: row r = L[r][0..r], then zeros. An input aliasing the output is no longer read. A large
  // f64 factor is written with non-temporal stores (about 30% faster here at n = 1024).
  const size_t elem = DTypeStorageBytes(dtype, 1);
  const bool stream = dtype == DType::Float64 && n * n * sizeof(double) >= kStreamBytes;
  auto store = [&](int64_t b, int64_t e) {
    if (stream) {
      for (auto r = static_cast<size_t>(b); r < static_cast<size_t>(e); ++r) {
        HWY_DYNAMIC_DISPATCH(StreamRowF64)(w + r * n, r + 1, static_cast<double*>(output) + r * n, n);
      }
      hwy::FlushStream();
      return;
    }
    for (auto r = static_cast<size_t>(b); r < static_cast<size_t>(e); ++r) {
      StoreRounded(w + r * n, output, r * n, r + 1, dtype);
      std::memset(static_cast<unsigned char*>(output) + (r * n + r + 1) * elem, 0, (n - r - 1) * elem);
    }
  };
  rows(store);
}

// ---- CATE, Counterfactual -----------------------------------------------------------------------

void Cate(const void* left, const void* right, void* output, int64_t count, DType dtype) {
  if (!FloatDType(dtype) || count < 0 || (count > 0 && (!left || !right || !output))) {
    return Reference().Causal_CATE(left, right, output, count, dtype);
  }
  Chunked(count, [&](int64_t b, int64_t e) {
    const auto n = static_cast<size_t>(e - b), at = static_cast<size_t>(b);
    switch (dtype) {
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(CateF32)(static_cast<const float*>(left) + at,
                                            static_cast<const float*>(right) + at, static_cast<float*>(output) + at, n);
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(CateF64)(static_cast<const double*>(left) + at,
                                            static_cast<const double*>(right) + at, static_cast<double*>(output) + at, n);
      default:
        return HWY_DYNAMIC_DISPATCH(CateHalf)(static_cast<const uint16_t*>(left) + at,
                                             static_cast<const uint16_t*>(right) + at,
                                             static_cast<uint16_t*>(output) + at, n, dtype == DType::BFloat16);
    }
  });
}

void Counterfactual(const void* observedY, const void* observedX, const void* counterfactualX, void* output,
                    int64_t count, float slope, DType dtype) {
  if (!FloatDType(dtype) || count < 0 || !std::isfinite(slope) ||
      (count > 0 && (!observedY || !observedX || !counterfactualX || !output))) {
    return Reference().Causal_Counterfactual(observedY, observedX, counterfactualX, output, count, slope, dtype);
  }
  const double b = slope;
  Chunked(count, [&](int64_t cb, int64_t ce) {
    constexpr size_t kBlock = 1024;
    double y[kBlock], x[kBlock], xp[kBlock];
    for (auto i = static_cast<size_t>(cb); i < static_cast<size_t>(ce); i += kBlock) {
      const size_t m = std::min(kBlock, static_cast<size_t>(ce) - i);
      WidenTo(observedY, i, m, dtype, y);
      WidenTo(observedX, i, m, dtype, x);
      WidenTo(counterfactualX, i, m, dtype, xp);
      HWY_DYNAMIC_DISPATCH(CounterfactualF64)(y, x, xp, b, y, m);
      StoreRounded(y, output, i, m, dtype);
    }
  });
}

// ---- Back-door / front-door adjustment ----------------------------------------------------------

// The reference's CheckDistribution decision (sequential f64 sum), without formatting messages.
bool IsDistribution(const double* p, size_t length, double tol) {
  double sum = 0.0;
  for (size_t k = 0; k < length; ++k) {
    if (!std::isfinite(p[k]) || !(p[k] >= 0.0)) return false;
    sum += p[k];
  }
  return std::fabs(sum - 1.0) <= tol;
}

double SumTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-6;
    case DType::Float16: return 1e-3;
    default: return 1e-2;
  }
}

// a * b * c for non-negative factors, or -1 when it exceeds the reference's limit.
int64_t Product(int64_t a, int64_t b, int64_t c = 1) {
  constexpr int64_t kMax = INT64_MAX / 8;
  int64_t p = 1;
  for (int64_t f : {a, b, c}) {
    if (f != 0 && p > kMax / f) return -1;
    p *= f;
  }
  return p;
}

void Backdoor(const void* conditional, const void* marginalZ, void* output, int64_t xCount, int64_t zCount,
              int64_t yCount, DType dtype) {
  auto fallback = [&] {
    Reference().Causal_BackdoorAdjustment(conditional, marginalZ, output, xCount, zCount, yCount, dtype);
  };
  if (!FloatDType(dtype) || xCount < 0 || zCount <= 0 || yCount < 0) return fallback();
  const int64_t condCount = Product(xCount, zCount, yCount), outCount = Product(xCount, yCount);
  if (condCount < 0 || outCount <= 0 || !conditional || !marginalZ || !output) return fallback();
  const auto X = static_cast<size_t>(xCount), Z = static_cast<size_t>(zCount), Y = static_cast<size_t>(yCount);
  const std::vector<double> pz = Widened(marginalZ, Z, dtype);
  const std::vector<double> cond = Widened(conditional, static_cast<size_t>(condCount), dtype);
  const double tol = SumTolerance(dtype);
  if (!IsDistribution(pz.data(), Z, tol)) return fallback();
  for (size_t row = 0; row < X * Z; ++row) {
    if (!IsDistribution(cond.data() + row * Y, Y, tol)) return fallback();
  }
  std::vector<double> out(X * Y);
  HWY_DYNAMIC_DISPATCH(ContractF64)(pz.data(), 0, cond.data(), Z * Y, Y, out.data(), X, Z, Y);
  StoreRounded(out.data(), output, 0, out.size(), dtype);
}

void Frontdoor(const void* mediatorGivenX, const void* outcomeGivenXM, const void* marginalX, void* output,
               int64_t xCount, int64_t mediatorCount, int64_t yCount, DType dtype) {
  auto fallback = [&] {
    Reference().Causal_FrontdoorAdjustment(mediatorGivenX, outcomeGivenXM, marginalX, output, xCount, mediatorCount,
                                           yCount, dtype);
  };
  if (!FloatDType(dtype) || xCount < 0 || mediatorCount <= 0 || yCount < 0) return fallback();
  const int64_t mxCount = Product(xCount, mediatorCount), oCount = Product(xCount, mediatorCount, yCount);
  const int64_t outCount = Product(xCount, yCount);
  if (mxCount < 0 || oCount < 0 || outCount <= 0 || !mediatorGivenX || !outcomeGivenXM || !marginalX || !output) {
    return fallback();
  }
  const auto X = static_cast<size_t>(xCount), M = static_cast<size_t>(mediatorCount), Y = static_cast<size_t>(yCount);
  const std::vector<double> pmx = Widened(mediatorGivenX, X * M, dtype);
  const std::vector<double> pyxm = Widened(outcomeGivenXM, X * M * Y, dtype);
  const std::vector<double> px = Widened(marginalX, X, dtype);
  const double tol = SumTolerance(dtype);
  for (size_t x = 0; x < X; ++x) {
    if (!IsDistribution(pmx.data() + x * M, M, tol)) return fallback();
  }
  for (size_t row = 0; row < X * M; ++row) {
    if (!IsDistribution(pyxm.data() + row * Y, Y, tol)) return fallback();
  }
  if (!IsDistribution(px.data(), X, tol)) return fallback();
  // inner[m][y] = sum_x' P(y | x', m) P(x'); out[x][y] = sum_m P(m | x) inner[m][y].
  std::vector<double> inner(M * Y), out(X * Y);
  HWY_DYNAMIC_DISPATCH(ContractF64)(px.data(), 0, pyxm.data(), Y, M * Y, inner.data(), M, X, Y);
  HWY_DYNAMIC_DISPATCH(ContractF64)(pmx.data(), M, inner.data(), 0, Y, out.data(), X, M, Y);
  StoreRounded(out.data(), output, 0, out.size(), dtype);
}

// ---- IVEstimate ----------------------------------------------------------------------------------

// Runs pass 0 (sums) or 1 (centred sums about mean) over fixed chunks; part[k * 4 ..] gets chunk k.
void IvPass(const void* z, const void* x, const void* y, int64_t count, DType dtype, int pass, const double* mean,
            std::vector<double>& part) {
  std::fill(part.begin(), part.end(), 0.0);
  Chunked(count, [&](int64_t b, int64_t e) {
    double* s = part.data() + static_cast<size_t>(b / kGrain) * 4;
    const auto at = static_cast<size_t>(b), len = static_cast<size_t>(e - b);
    switch (dtype) {
      case DType::Float64:
        return HWY_DYNAMIC_DISPATCH(IvPassF64)(static_cast<const double*>(z) + at, static_cast<const double*>(x) + at,
                                               static_cast<const double*>(y) + at, len, pass, mean, s);
      case DType::Float32:
        return HWY_DYNAMIC_DISPATCH(IvPassF32)(static_cast<const float*>(z) + at, static_cast<const float*>(x) + at,
                                               static_cast<const float*>(y) + at, len, pass, mean, s);
      default:
        return HWY_DYNAMIC_DISPATCH(IvPassHalf)(static_cast<const uint16_t*>(z) + at,
                                                static_cast<const uint16_t*>(x) + at,
                                                static_cast<const uint16_t*>(y) + at, len, pass, mean, s,
                                                dtype == DType::BFloat16);
    }
  });
}

void IvEstimate(const void* instrument, const void* treatment, const void* outcome, int64_t count, void* output,
                DType dtype) {
  auto ref = [&] { Reference().Causal_IVEstimate(instrument, treatment, outcome, count, output, dtype); };
  if (!FloatDType(dtype) || count < 2 || !instrument || !treatment || !outcome || !output) return ref();
  const int64_t chunks = count < kParallelMin ? 1 : (count + kGrain - 1) / kGrain;
  std::vector<double> part(static_cast<size_t>(chunks) * 4);
  const double n = static_cast<double>(count);
  double mean[3] = {0.0, 0.0, 0.0}, s[4] = {0.0, 0.0, 0.0, 0.0};
  IvPass(instrument, treatment, outcome, count, dtype, 0, nullptr, part);
  for (int64_t k = 0; k < chunks; ++k) {
    for (int q = 0; q < 3; ++q) mean[q] += part[static_cast<size_t>(k) * 4 + q];
  }
  for (double& m : mean) m /= n;
  if (!std::isfinite(mean[0]) || !std::isfinite(mean[1]) || !std::isfinite(mean[2])) return ref();
  IvPass(instrument, treatment, outcome, count, dtype, 1, mean, part);
  for (int64_t k = 0; k < chunks; ++k) {
    for (int q = 0; q < 4; ++q) s[q] += part[static_cast<size_t>(k) * 4 + q];
  }
  const double szy = s[0], szx = s[1], szz = s[2], sxx = s[3];
  const double scale = std::sqrt(szz) * std::sqrt(sxx);
  if (!std::isfinite(szy) || !std::isfinite(szx) || !std::isfinite(scale)) return ref();  // NaN/Inf data
  // Weak-instrument decision: S_zx here and in the reference differ by the rounding of the sums,
  // <= 2 gamma_n sqrt(S_zz S_xx) (Cauchy-Schwarz on sum |dz dx|), plus n dmz dmx from the means'
  // errors (dm <= gamma_n rms). Within that margin of the threshold the reference decides.
  const double g = 16.0 * n * DBL_EPSILON;
  const double rms = std::sqrt((szz / n + mean[0] * mean[0]) * (sxx / n + mean[1] * mean[1]));
  if (std::fabs(szx) <= (1e-12 + g) * scale + g * g * n * rms) return ref();
  const double beta = szy / szx;
  StoreRounded(&beta, output, 0, 1, dtype);
}

// ---- DAGMarkovFactorization ---------------------------------------------------------------------

void DagMarkov(const void* conditionals, int64_t count, void* output, DType dtype) {
  auto ref = [&] { Reference().Causal_DAGMarkovFactorization(conditionals, count, output, dtype); };
  if (!FloatDType(dtype) || count <= 0 || !conditionals || !output) return ref();
  const auto chunks = static_cast<size_t>(count < kParallelMin ? 1 : (count + kGrain - 1) / kGrain);
  std::vector<double> mant(chunks, 1.0);
  std::vector<int64_t> expo(chunks, 0);
  std::vector<char> bad(chunks, 0);
  Chunked(count, [&](int64_t b, int64_t e) {
    const auto k = static_cast<size_t>(b / kGrain), at = static_cast<size_t>(b), len = static_cast<size_t>(e - b);
    double m = 1.0;
    int64_t x = 0;
    bool bd = false;
    switch (dtype) {
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(DagProductF64)(static_cast<const double*>(conditionals) + at, len, &m, &x, &bd);
        break;
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(DagProductF32)(static_cast<const float*>(conditionals) + at, len, &m, &x, &bd);
        break;
      default:
        HWY_DYNAMIC_DISPATCH(DagProductHalf)(static_cast<const uint16_t*>(conditionals) + at, len, &m, &x, &bd,
                                             dtype == DType::BFloat16);
        break;
    }
    mant[k] = m;
    expo[k] = x;
    bad[k] = bd;
  });
  // A factor outside [0, 1] (the reference throws), or zero or subnormal (rare; the reference's
  // frexp loop handles them).
  for (char b : bad) {
    if (b) return ref();
  }
  double m = 1.0;
  int64_t e = 0;
  for (size_t k = 0; k < chunks; ++k) {
    int pe = 0, q = 0;
    const double pm = std::frexp(mant[k], &pe);
    m = std::frexp(m * pm, &q);
    e += expo[k] + pe + q;
  }
  // One rounding, as the reference: exponents below -2000 underflow to 0 anyway.
  const double result = std::ldexp(m, static_cast<int>(std::max<int64_t>(e, -2000)));
  StoreRounded(&result, output, 0, 1, dtype);
}

// ---- Markov flows -------------------------------------------------------------------------------

void MarkovFlow(int32_t sourceLabel, const void* mutualInformation, const int32_t* partition, void* output,
                int64_t nodeCount, DType dtype, decltype(KernelTable::Causal_MarkovFlowActive) fallback) {
  auto ref = [&] { fallback(mutualInformation, partition, output, nodeCount, dtype); };
  if (!FloatDType(dtype) || nodeCount <= 0 || nodeCount > (int64_t{1} << 29) || !mutualInformation || !partition ||
      !output) {
    return ref();
  }
  const auto n = static_cast<size_t>(nodeCount);
  std::vector<double> mask(n);
  for (size_t i = 0; i < n; ++i) {
    if (partition[i] < 0 || partition[i] > 3) return ref();
    mask[i] = partition[i] == 0 ? 1.0 : 0.0;
  }
  std::vector<double> wide;
  const double* mi = nullptr;
  if (dtype == DType::Float64) {
    mi = static_cast<const double*>(mutualInformation);
  } else {
    wide = Widened(mutualInformation, n * n, dtype);
    mi = wide.data();
  }
  if (!HWY_DYNAMIC_DISPATCH(AllFiniteNonNegF64)(mi, n * n)) return ref();
  std::vector<double> out(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (partition[i] != sourceLabel) continue;
    const double saved = mask[i];
    mask[i] = 0.0;  // no self term
    out[i] = HWY_DYNAMIC_DISPATCH(MaskedSumF64)(mi + i * n, mask.data(), n);
    mask[i] = saved;
  }
  StoreRounded(out.data(), output, 0, n, dtype);
}

}  // namespace

void RegisterCausal(KernelTable& t) {
  t.Causal_Cholesky = &Cholesky;
  t.Causal_CATE = &Cate;
  t.Causal_Counterfactual = &Counterfactual;
  t.Causal_BackdoorAdjustment = &Backdoor;
  t.Causal_FrontdoorAdjustment = &Frontdoor;
  t.Causal_MarkovFlowActive = [](const void* mi, const int32_t* p, void* out, int64_t n, DType dt) {
    MarkovFlow(2, mi, p, out, n, dt, Reference().Causal_MarkovFlowActive);
  };
  t.Causal_MarkovFlowInternal = [](const void* mi, const int32_t* p, void* out, int64_t n, DType dt) {
    MarkovFlow(0, mi, p, out, n, dt, Reference().Causal_MarkovFlowInternal);
  };
  t.Causal_IVEstimate = &IvEstimate;
  t.Causal_DAGMarkovFactorization = &DagMarkov;
  t.ScalarByDesign(catalog::MethodId::Causal_DoIntervene,
                   "a bit-exact copy plus column zeroing: data movement, no arithmetic");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
