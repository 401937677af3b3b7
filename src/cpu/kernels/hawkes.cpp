// Fast kernels for the Hawkes surface. Everything runs in f64 lanes for every storage format (the
// reference computes in double and rounds once on store; results are stored the same way).
// - HawkesIntensity: per query, the sum of exp(-beta (t - t_j)) over the events before it, in
//   lanes (hwy/contrib/math Exp), queries threaded for large work.
// - HawkesKernelMatrix: each row's exponentials in lanes, rows threaded for large matrices.
// - HawkesLogLikelihood: the decay factors exp(-beta (t_i - t_{i-1})), the logs and the compensator
//   terms -expm1(-beta (T - t_i)) in lanes; only Ozaki's recurrence B_i = d_i (B_{i-1} + m) stays
//   sequential (one multiply-add per event).
// - MarkovMutualInformation: checks, marginals and the p ln(p / (p_x p_y)) terms in lanes.
// Scalar by design: MarkovBlanketPartition (boolean graph labelling: edge tests and index chasing).
// Sums are formed lane-wise, so they differ from the reference's sequential sums by rounding only.
// Invalid arguments go to the reference, which throws its documented error; nothing is written
// before every input is read and checked.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/hawkes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_HAWKES_SHARED_
#define BACKPLANE_CPU_KERNELS_HAWKES_SHARED_
#include <algorithm>
#include <cmath>
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// exp(x) for x <= 0 or -Inf (never NaN here): Highway's Exp is valid down to -1000 and 0 below.
template <class D, class V>
HWY_INLINE V ExpNonPos(D d, V x) {
  return hn::Exp(d, hn::Max(x, hn::Set(d, -1001.0)));
}

// sum_{j < n} exp(negb (t - e[j])), lane-wise partial sums.
HWY_INLINE double SumDecay(const double* e, size_t n, double t, double negb) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vt = hn::Set(d, t), vb = hn::Set(d, negb);
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  size_t j = 0;
  for (; j + 2 * lanes <= n; j += 2 * lanes) {
    acc0 = hn::Add(acc0, ExpNonPos(d, hn::Mul(vb, hn::Sub(vt, hn::LoadU(d, e + j)))));
    acc1 = hn::Add(acc1, ExpNonPos(d, hn::Mul(vb, hn::Sub(vt, hn::LoadU(d, e + j + lanes)))));
  }
  for (; j + lanes <= n; j += lanes) acc0 = hn::Add(acc0, ExpNonPos(d, hn::Mul(vb, hn::Sub(vt, hn::LoadU(d, e + j)))));
  if (j < n) {
    HWY_ALIGN double buf[hn::MaxLanes(d)];
    for (size_t k = 0; k < lanes; ++k) buf[k] = j + k < n ? e[j + k] : t;  // padding, not summed
    const auto v = ExpNonPos(d, hn::Mul(vb, hn::Sub(vt, hn::Load(d, buf))));
    hn::Store(v, d, buf);
    double tail = 0.0;
    for (size_t k = 0; j + k < n; ++k) tail += buf[k];
    return hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1))) + tail;
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
}

// out[q] = mu + a * sum_{e_j < query[q]} exp(negb (query[q] - e_j)), for q in [0, nq).
void IntensityF64(const double* events, size_t ne, const double* queries, size_t nq, double mu, double a,
                  double negb, double* out) {
  for (size_t q = 0; q < nq; ++q) {
    const double t = queries[q];
    const size_t end = static_cast<size_t>(std::lower_bound(events, events + ne, t) - events);
    out[q] = mu + a * SumDecay(events, end, t, negb);
  }
}

// row[j] = a exp(negb (ti - t[j])) for j < lo.
void KernelRowF64(const double* t, size_t lo, double ti, double a, double negb, double* row) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vt = hn::Set(d, ti), vb = hn::Set(d, negb), va = hn::Set(d, a);
  size_t j = 0;
  for (; j + lanes <= lo; j += lanes) {
    hn::StoreU(hn::Mul(va, ExpNonPos(d, hn::Mul(vb, hn::Sub(vt, hn::LoadU(d, t + j))))), d, row + j);
  }
  if (j < lo) {
    HWY_ALIGN double buf[hn::MaxLanes(d)];
    for (size_t k = 0; k < lanes; ++k) buf[k] = j + k < lo ? t[j + k] : ti;
    hn::Store(hn::Mul(va, ExpNonPos(d, hn::Mul(vb, hn::Sub(vt, hn::Load(d, buf))))), d, buf);
    for (size_t k = 0; j + k < lo; ++k) row[j + k] = buf[k];
  }
}

// 16-bit storage of f64 values: rounded to f32, then to nearest even (the reference's Store).
void StoreHalfF64(const double* v, uint16_t* out, size_t n, bool bf16) {
  constexpr size_t kBlock = 512;
  HWY_ALIGN float f[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    for (size_t k = 0; k < m; ++k) f[k] = static_cast<float>(v[i + k]);
    NarrowBlock(f, out + i, m, bf16);
  }
}

// out[i] = exp(negb (a[i] - b[i])), a[i] >= b[i].
void DecaysF64(const double* a, const double* b, size_t n, double negb, double* out) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vb = hn::Set(d, negb);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(ExpNonPos(d, hn::Mul(vb, hn::Sub(hn::LoadU(d, a + i), hn::LoadU(d, b + i)))), d, out + i);
  }
  for (; i < n; ++i) out[i] = std::exp(negb * (a[i] - b[i]));
}

// sum_i ln v[i] (v finite and > 0) and sum_i -expm1(negb (T - t[i])) (T >= t[i]).
void LogLikTermsF64(const double* v, const double* t, size_t n, double T, double negb, double* sums) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vT = hn::Set(d, T), vb = hn::Set(d, negb), lo = hn::Set(d, -1001.0);
  auto sumLog = hn::Zero(d), sumDecay = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    sumLog = hn::Add(sumLog, hn::Log(d, hn::LoadU(d, v + i)));
    const auto x = hn::Max(hn::Mul(vb, hn::Sub(vT, hn::LoadU(d, t + i))), lo);
    // expm1(-0) is -0 in libm, and -(-0) adds nothing either way.
    sumDecay = hn::Sub(sumDecay, hn::Expm1(d, x));
  }
  double sl = hn::GetLane(hn::SumOfLanes(d, sumLog)), sd = hn::GetLane(hn::SumOfLanes(d, sumDecay));
  for (; i < n; ++i) {
    sl += std::log(v[i]);
    sd += -std::expm1(negb * (T - t[i]));
  }
  sums[0] = sl;
  sums[1] = sd;
}

// Row x of the mutual information: sum_y [v > 0] (v / n) (ln v + logN - lpx - lpy[y]).
double MiRowF64(const double* row, const double* lpy, size_t ny, double n, double logN, double lpx) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vn = hn::Set(d, n), vlogN = hn::Set(d, logN), vlpx = hn::Set(d, lpx), one = hn::Set(d, 1.0);
  auto acc = hn::Zero(d);
  size_t y = 0;
  for (; y + lanes <= ny; y += lanes) {
    const auto v = hn::LoadU(d, row + y);
    const auto pos = hn::Gt(v, hn::Zero(d));
    const auto lv = hn::Log(d, hn::IfThenElse(pos, v, one));
    const auto lp = hn::IfThenElse(pos, hn::LoadU(d, lpy + y), hn::Zero(d));
    const auto inner = hn::Sub(hn::Sub(hn::Add(lv, vlogN), vlpx), lp);
    acc = hn::Add(acc, hn::IfThenElseZero(pos, hn::Mul(hn::Div(v, vn), inner)));
  }
  double sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; y < ny; ++y) {
    const double v = row[y];
    if (v == 0.0) continue;
    sum += (v / n) * (std::log(v) + logN - lpx - lpy[y]);
  }
  return sum;
}

// Checks every value finite and >= 0, returns the largest (or -1 when a check fails).
double CheckedMaxF64(const double* v, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto inf = hn::Set(d, HUGE_VAL);
  auto ok = hn::Eq(hn::Zero(d), hn::Zero(d));
  auto mx = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::LoadU(d, v + i);
    ok = hn::And(ok, hn::And(hn::Ge(x, hn::Zero(d)), hn::Lt(x, inf)));
    mx = hn::Max(mx, x);
  }
  if (!hn::AllTrue(d, ok)) return -1.0;
  double m = hn::GetLane(hn::MaxOfLanes(d, mx));
  for (; i < n; ++i) {
    if (!(v[i] >= 0.0 && v[i] < HUGE_VAL)) return -1.0;
    m = std::max(m, v[i]);
  }
  return m;
}

// v *= s; colSum[y] += v[x][y] over rows in order; rowSum[x] = lane-wise row sums.
void ScaleAndMarginalsF64(double* v, size_t nx, size_t ny, double s, double* rowSum, double* colSum) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  for (size_t x = 0; x < nx; ++x) {
    double* row = v + x * ny;
    auto acc = hn::Zero(d);
    size_t y = 0;
    for (; y + lanes <= ny; y += lanes) {
      const auto p = hn::Mul(hn::LoadU(d, row + y), vs);
      hn::StoreU(p, d, row + y);
      acc = hn::Add(acc, p);
      hn::StoreU(hn::Add(hn::LoadU(d, colSum + y), p), d, colSum + y);
    }
    double sum = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; y < ny; ++y) {
      row[y] *= s;
      sum += row[y];
      colSum[y] += row[y];
    }
    rowSum[x] = sum;
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstring>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"
#include "cpu/reference/common.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(IntensityF64);
HWY_EXPORT(KernelRowF64);
HWY_EXPORT(StoreHalfF64);
HWY_EXPORT(DecaysF64);
HWY_EXPORT(LogLikTermsF64);
HWY_EXPORT(MiRowF64);
HWY_EXPORT(CheckedMaxF64);
HWY_EXPORT(ScaleAndMarginalsF64);

namespace {

// Work (exponentials) from which the pool is used.
constexpr int64_t kParallelWork = 65536;

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool Param(float v, bool strict) { return std::isfinite(v) && (strict ? v > 0.0f : v >= 0.0f); }

// Widened values, or false when one is not finite (the reference's ReadFinite).
bool ReadFinite(const void* data, int64_t count, DType dtype, std::vector<double>& out) {
  out = ref::Widen<double>(data, count, dtype);
  for (double v : out) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

bool ReadEventTimes(const void* data, int64_t count, DType dtype, std::vector<double>& out) {
  if (!ReadFinite(data, count, dtype, out)) return false;
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] < out[i - 1]) return false;
  }
  return true;
}

// Stores f64 values as the reference's Store<double> does.
void StoreValues(const double* v, void* out, size_t at, size_t n, DType dtype) {
  switch (dtype) {
    case DType::Float64: std::memcpy(static_cast<double*>(out) + at, v, n * sizeof(double)); return;
    case DType::Float32: {
      float* o = static_cast<float*>(out) + at;
      for (size_t i = 0; i < n; ++i) o[i] = static_cast<float>(v[i]);
      return;
    }
    default:
      return HWY_DYNAMIC_DISPATCH(StoreHalfF64)(v, static_cast<uint16_t*>(out) + at, n, dtype == DType::BFloat16);
  }
}

void Intensity(BP_PARAMS_HawkesIntensity) {
  auto fallback = [&] {
    Reference().Hawkes_HawkesIntensity(eventTimes, queryTimes, output, eventCount, queryCount, mu, alpha, beta,
                                       dtype);
  };
  if (!FloatDType(dtype) || eventCount < 0 || queryCount <= 0 || (eventCount > 0 && !eventTimes) || !queryTimes ||
      !output || !Param(mu, false) || !Param(alpha, false) || !Param(beta, true)) {
    return fallback();
  }
  std::vector<double> events, queries;
  if (!ReadEventTimes(eventTimes, eventCount, dtype, events) || !ReadFinite(queryTimes, queryCount, dtype, queries)) {
    return fallback();
  }
  std::vector<double> result(queries.size());
  const double m = mu, a = alpha, negb = -static_cast<double>(beta);
  const auto ne = events.size();
  auto run = [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(IntensityF64)(events.data(), ne, queries.data() + b, static_cast<size_t>(e - b), m, a, negb,
                                       result.data() + b);
  };
  const int64_t work = queryCount * std::max<int64_t>(eventCount, 1);
  if (work >= kParallelWork) {
    ParallelFor(queryCount, std::max<int64_t>(1, 16384 / std::max<int64_t>(eventCount, 1)), run);
  } else {
    run(0, queryCount);
  }
  StoreValues(result.data(), output, 0, result.size(), dtype);
}

void KernelMatrix(BP_PARAMS_HawkesKernelMatrix) {
  auto fallback = [&] { Reference().Hawkes_HawkesKernelMatrix(eventTimes, output, eventCount, alpha, beta, dtype); };
  if (!FloatDType(dtype) || eventCount <= 0 || eventCount > (int64_t{1} << 31) || !eventTimes || !output ||
      !Param(alpha, false) || !Param(beta, true)) {
    return fallback();
  }
  std::vector<double> t;
  if (!ReadEventTimes(eventTimes, eventCount, dtype, t)) return fallback();
  const auto n = static_cast<size_t>(eventCount);
  const double a = alpha, negb = -static_cast<double>(beta);
  auto rows = [&](int64_t b, int64_t e) {
    std::vector<double> buf(dtype == DType::Float64 ? 0 : n);
    for (auto i = static_cast<size_t>(b); i < static_cast<size_t>(e); ++i) {
      // Columns j < lo have t_j < t_i (sorted); the rest (ties, diagonal, upper) are 0.
      const size_t lo = static_cast<size_t>(std::lower_bound(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(i),
                                                             t[i]) - t.begin());
      double* row = dtype == DType::Float64 ? static_cast<double*>(output) + i * n : buf.data();
      HWY_DYNAMIC_DISPATCH(KernelRowF64)(t.data(), lo, t[i], a, negb, row);
      std::fill(row + lo, row + n, 0.0);
      if (dtype != DType::Float64) StoreValues(row, output, i * n, n, dtype);
    }
  };
  if (eventCount * eventCount >= kParallelWork) {
    ParallelFor(eventCount, std::max<int64_t>(1, 16384 / eventCount), rows);
  } else {
    rows(0, eventCount);
  }
}

void LogLikelihood(BP_PARAMS_HawkesLogLikelihood) {
  auto fallback = [&] {
    Reference().Hawkes_HawkesLogLikelihood(eventTimes, eventCount, totalTime, mu, alpha, beta, output, dtype);
  };
  if (!FloatDType(dtype) || eventCount < 0 || (eventCount > 0 && !eventTimes) || !output ||
      !Param(totalTime, false) || !Param(mu, true) || !Param(alpha, false) || !Param(beta, true)) {
    return fallback();
  }
  std::vector<double> t;
  if (!ReadEventTimes(eventTimes, eventCount, dtype, t)) return fallback();
  const double total = totalTime, m = mu, a = alpha, negb = -static_cast<double>(beta);
  if (!t.empty() && (t.front() < 0.0 || t.back() > total)) return fallback();
  const size_t n = t.size();
  double sums[2] = {0.0, 0.0};
  if (n > 0) {
    // d[i] = exp(-beta (t_i - t_{i-1})); Ozaki's recurrence over groups of tied times (a tie's d
    // is unused), then lambda_i = mu + alpha B_i in place.
    std::vector<double> lam(n);
    HWY_DYNAMIC_DISPATCH(DecaysF64)(t.data() + 1, t.data(), n - 1, negb, lam.data() + 1);
    double excitation = 0.0, groupSize = 1.0;
    lam[0] = m;
    for (size_t i = 1; i < n; ++i) {
      if (t[i] > t[i - 1]) {
        excitation = lam[i] * (excitation + groupSize);
        groupSize = 1.0;
      } else {
        groupSize += 1.0;
      }
      lam[i] = m + a * excitation;
    }
    HWY_DYNAMIC_DISPATCH(LogLikTermsF64)(lam.data(), t.data(), n, total, negb, sums);
  }
  const double compensator = m * total + (a / static_cast<double>(beta)) * sums[1];
  const double value = sums[0] - compensator;
  StoreValues(&value, output, 0, 1, dtype);
}

void MutualInformation(BP_PARAMS_MarkovMutualInformation) {
  auto fallback = [&] { Reference().Hawkes_MarkovMutualInformation(joint, output, xCount, yCount, dtype); };
  if (!FloatDType(dtype) || xCount <= 0 || yCount <= 0 || !joint || !output) return fallback();
  int64_t cells = 0;
  if (__builtin_mul_overflow(xCount, yCount, &cells)) return fallback();
  std::vector<double> p = ref::Widen<double>(joint, cells, dtype);
  const double largest = HWY_DYNAMIC_DISPATCH(CheckedMaxF64)(p.data(), p.size());
  if (!(largest > 0.0)) return fallback();  // a bad entry (-1) or an all-zero table
  int exponent = 0;
  std::frexp(largest, &exponent);
  if (exponent < -1000 || exponent > 1000) return fallback();  // 2^-exponent must be a normal double
  const auto nx = static_cast<size_t>(xCount), ny = static_cast<size_t>(yCount);
  std::vector<double> px(nx), py(ny, 0.0);
  HWY_DYNAMIC_DISPATCH(ScaleAndMarginalsF64)(p.data(), nx, ny, std::ldexp(1.0, -exponent), px.data(), py.data());
  double n = 0.0;
  for (double v : px) n += v;
  const double logN = std::log(n);
  std::vector<double> lpy(ny);
  for (size_t y = 0; y < ny; ++y) lpy[y] = std::log(py[y]);
  double info = 0.0;
  for (size_t x = 0; x < nx; ++x) {
    if (px[x] == 0.0) continue;  // an all-zero row adds nothing
    info += HWY_DYNAMIC_DISPATCH(MiRowF64)(p.data() + x * ny, lpy.data(), ny, n, logN, std::log(px[x]));
  }
  const double value = std::max(info, 0.0);
  StoreValues(&value, output, 0, 1, dtype);
}

}  // namespace

void RegisterHawkes(KernelTable& t) {
  t.Hawkes_HawkesIntensity = &Intensity;
  t.Hawkes_HawkesKernelMatrix = &KernelMatrix;
  t.Hawkes_HawkesLogLikelihood = &LogLikelihood;
  t.Hawkes_MarkovMutualInformation = &MutualInformation;
  t.ScalarByDesign(catalog::MethodId::Hawkes_MarkovBlanketPartition,
                   "boolean graph labelling (edge tests and index chasing), int32 labels: no arithmetic to vectorise");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
