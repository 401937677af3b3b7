// Fast kernels for the Causal surface.
// - Cholesky: LAPACK dpotrf from OpenBLAS (one OpenBLAS thread per call, so results do not depend
//   on the thread count). Every dtype is widened to f64 (spotrf misses the f32 tolerance already at
//   n = 64 on moderately conditioned matrices) and rounded once, as the reference does. Validation
//   (finite, symmetric) runs fused with the copy into a private f64 buffer; non-finite, asymmetric,
//   not positive definite (info > 0) or nearly singular (a pivot within rounding of 0, where the
//   reference's pivot order could decide otherwise) inputs go to the reference, so errors are
//   identical and the output is untouched until the factor is complete.
// - CATE: f32/f64 lanes; f16/bf16 widened to f32 (one f32 subtraction then one rounding equals the
//   reference's single rounding: 24 >= 2p + 2 bits).
// - Counterfactual: f64 lanes for every dtype (the reference's arithmetic), rounded once.
// - BackdoorAdjustment, FrontdoorAdjustment: f64 lanes across y, summing in the reference's order;
//   the distribution checks are the reference's sequential f64 row sums (identical decisions).
// - MarkovFlowActive/Internal: f64 lanes, masked row sums of non-negative terms.
// Scalar by design: DoIntervene (a copy plus column zeroing: data movement, no arithmetic).
// Not yet accelerated (reference): IVEstimate, DAGMarkovFactorization.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/causal.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

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

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"
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

namespace {

constexpr int64_t kGrain = 32768;        // elements per chunk of the elementwise kernels
constexpr int64_t kParallelMin = 65536;  // threads only from this many elements on

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

double LoadD(const void* p, size_t i, DType dtype) { return ref::Load<double>(p, static_cast<int64_t>(i), dtype); }

// double -> float rounding to odd, so that a following round-to-nearest-even into f16/bf16 is one
// correct rounding of the double (as the reference's StoreResult).
float RoundToOddF32(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) --bits;
  return std::bit_cast<float>(bits | 1u);
}

// Stores values[0..n) at out[at..at+n) with one rounding (the reference's StoreResult).
void StoreRounded(const double* v, void* out, size_t at, size_t n, DType dtype) {
  switch (dtype) {
    case DType::Float64: std::memcpy(static_cast<double*>(out) + at, v, n * sizeof(double)); return;
    case DType::Float32: {
      float* o = static_cast<float*>(out) + at;
      for (size_t i = 0; i < n; ++i) o[i] = static_cast<float>(v[i]);
      return;
    }
    case DType::Float16: {
      uint16_t* o = static_cast<uint16_t*>(out) + at;
      for (size_t i = 0; i < n; ++i) o[i] = F32ToF16(RoundToOddF32(v[i]));
      return;
    }
    default: {
      uint16_t* o = static_cast<uint16_t*>(out) + at;
      for (size_t i = 0; i < n; ++i) o[i] = F32ToBF16(RoundToOddF32(v[i]));
      return;
    }
  }
}

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

// OpenBLAS runs one thread per call (its OpenMP build follows the team size), as in matmul.cpp:
// its own threading could make results depend on the thread count.
struct SerialBlas {
  int saved = omp_get_max_threads();
  bool set = saved != 1 && !omp_in_parallel();
  SerialBlas() {
    if (set) omp_set_num_threads(1);
  }
  ~SerialBlas() {
    if (set) omp_set_num_threads(saved);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

double SymmetryTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-4;
    case DType::Float16: return 1e-2;
    default: return 6e-2;
  }
}

// Reads rows [r0, r1) of the lower triangle (diagonal included) into w (f64, same layout) and checks
// every pair (i, j), j < i, in those rows against the reference's finiteness and symmetry rules.
// Returns false on the first violation (the reference then reports it).
template <class T>
bool CheckCopyRows(const T* a, double* w, size_t n, size_t r0, size_t r1, DType dtype, double symTol) {
  constexpr size_t kTile = 32;
  auto wide = [&](T v) -> double {
    if constexpr (std::is_same_v<T, uint16_t>) {
      return dtype == DType::Float16 ? F16ToF32(v) : BF16ToF32(v);
    } else {
      return static_cast<double>(v);
    }
  };
  for (size_t i0 = r0; i0 < r1; i0 += kTile) {
    const size_t i1 = std::min(r1, i0 + kTile);
    for (size_t j0 = 0; j0 < i1; j0 += kTile) {
      const size_t j1 = std::min(i1, j0 + kTile);
      // Fast path: each lower entry finite, and bitwise equal to its mirror (so finite too).
      bool bad = false;
      for (size_t i = i0; i < i1; ++i) {
        const size_t jend = std::min(j1, i + 1);
        const T* row = a + i * n;
        double* wrow = w + i * n;
        bool rowBad = false;
        for (size_t j = j0; j < jend; ++j) {
          const double x = wide(row[j]);
          wrow[j] = x;
          rowBad |= !(x - x == 0.0);  // Inf or NaN
        }
        for (size_t j = j0; j < jend; ++j) rowBad |= std::memcmp(&row[j], &a[j * n + i], sizeof(T)) != 0;
        bad |= rowBad;
      }
      if (!bad) continue;
      // Slow path: the reference's exact rules for this tile.
      for (size_t i = i0; i < i1; ++i) {
        const size_t jend = std::min(j1, i + 1);
        for (size_t j = j0; j < jend; ++j) {
          const double x = wide(a[i * n + j]), y = wide(a[j * n + i]);
          if (!std::isfinite(x) || !std::isfinite(y)) return false;
          if (x == y) continue;
          const double aii = wide(a[i * n + i]), ajj = wide(a[j * n + j]);
          if (!std::isfinite(aii) || !std::isfinite(ajj)) return false;
          const double scale = std::max({std::fabs(x), std::fabs(y), std::sqrt(std::fabs(aii) * std::fabs(ajj))});
          if (!(std::fabs(x - y) <= symTol * scale)) return false;
        }
      }
    }
  }
  return true;
}

// A per-thread f64 work matrix, kept between calls up to 64 MiB (a fresh one would cost a page
// fault per 4 KiB on every call).
double* Scratch(size_t count, std::vector<double>& local) {
  constexpr size_t kKeep = size_t{8} << 20;  // doubles
  thread_local std::vector<double> kept;
  if (count <= kKeep) {
    if (kept.size() < count) kept.resize(count);
    return kept.data();
  }
  local.resize(count);
  return local.data();
}

void Cholesky(const void* input, void* output, int64_t matrixOrder, DType dtype) {
  const auto& reference = Reference().Causal_Cholesky;
  if (!FloatDType(dtype) || matrixOrder <= 0 || matrixOrder > (int64_t{1} << 15) || !input || !output) {
    return reference(input, output, matrixOrder, dtype);
  }
  const size_t n = static_cast<size_t>(matrixOrder);
  std::vector<double> local;
  double* w = Scratch(n * n, local);
  const double symTol = SymmetryTolerance(dtype);
  // Rows in blocks of fixed size (a multiple of the tile), threaded for large matrices.
  const int64_t rowGrain = std::max<int64_t>(32, (int64_t{1} << 16) / matrixOrder / 32 * 32);
  std::atomic<bool> ok{true};
  auto pass = [&](int64_t b, int64_t e) {
    const auto r0 = static_cast<size_t>(b), r1 = static_cast<size_t>(e);
    bool good = false;
    switch (dtype) {
      case DType::Float64: good = CheckCopyRows(static_cast<const double*>(input), w, n, r0, r1, dtype, symTol); break;
      case DType::Float32: good = CheckCopyRows(static_cast<const float*>(input), w, n, r0, r1, dtype, symTol); break;
      default: good = CheckCopyRows(static_cast<const uint16_t*>(input), w, n, r0, r1, dtype, symTol); break;
    }
    if (!good) ok.store(false, std::memory_order_relaxed);
  };
  if (matrixOrder * matrixOrder >= kParallelMin) {
    ParallelFor(matrixOrder, rowGrain, pass);
  } else {
    pass(0, matrixOrder);
  }
  if (!ok.load()) return reference(input, output, matrixOrder, dtype);  // throws its error

  // The row-major lower triangle is LAPACK's column-major upper one: w = U with A = U^T U, and the
  // row-major L = U^T has the same layout.
  int info = 0;
  {
    const int ni = static_cast<int>(n);
    SerialBlas serial;
    dpotrf_("U", &ni, w, &ni, &info, 1);
  }
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
  // Output: row r = L[r][0..r], then zeros. An input aliasing the output is no longer read.
  const size_t elem = DTypeStorageBytes(dtype, 1);
  auto store = [&](int64_t b, int64_t e) {
    for (auto r = static_cast<size_t>(b); r < static_cast<size_t>(e); ++r) {
      StoreRounded(w + r * n, output, r * n, r + 1, dtype);
      std::memset(static_cast<unsigned char*>(output) + (r * n + r + 1) * elem, 0, (n - r - 1) * elem);
    }
  };
  if (matrixOrder * matrixOrder >= kParallelMin) {
    ParallelFor(matrixOrder, rowGrain, store);
  } else {
    store(0, matrixOrder);
  }
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
  t.ScalarByDesign(catalog::MethodId::Causal_DoIntervene,
                   "a bit-exact copy plus column zeroing: data movement, no arithmetic");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
