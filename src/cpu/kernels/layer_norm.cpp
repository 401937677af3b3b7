// Highway kernels for the LayerNorm surface: LayerNorm and RMSNorm over [rows, lastDim].
//
// Per row, like the reference: the statistics in f64 (f32 elements widened into f64 lanes; two
// passes for LayerNorm: the mean, then the squared deviations), then y = (x - mean) * factor *
// scale + bias in f64 lanes, rounded once to f32 (f16/bf16: rows widened to f32, the f32 result
// rounded to nearest even, exactly the reference's double -> f32 -> 16-bit path). Only the order
// of the row sums differs. RMSNorm multiplies by 1 / rms where the reference divides by rms (at
// most one f64 ulp apart). For f32-class rows whose statistics bound the error well inside the
// tolerance (F32AffineIsExactEnough: typical activations), the affine pass runs in f32 lanes,
// twice as wide and without conversions; other rows (large mean against the spread, large bias,
// Inf/NaN) keep f64. Null scale/bias are ones and -0.0, which leave every value (and the
// sign of zeros) unchanged. The next row is prefetched while one is computed, and outputs over
// 8 MiB are written with non-temporal stores. Rows run in parallel when the tensor is large; each row is read in
// full before it is written, so out may alias in as in the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/layer_norm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_LAYER_NORM_SHARED_
#define BACKPLANE_CPU_KERNELS_LAYER_NORM_SHARED_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace backplane::cpu::simd::layer_norm_ops {
constexpr double kLayerNormEps = 1e-5;
constexpr double kRMSNormEps = 1e-6;

// Per call: the per-column parameters (ones and -0.0 where the pointers are null) in f64 and,
// exactly, in f32, their largest magnitudes, and the row length.
struct NormParams {
  const double* s64;
  const double* b64;
  const float* s32;
  const float* b32;
  double smax;
  double bmax;
  size_t n;
  bool rms;
  double eps;
  bool stream;  // non-temporal stores
};
}  // namespace backplane::cpu::simd::layer_norm_ops
#endif  // BACKPLANE_CPU_KERNELS_LAYER_NORM_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace layer_norm_ops;  // NOLINT

// Whether the affine pass may run in f32 lanes for a row: y = fma(x - m, A, b) with m, A =
// f32(factor) * s and the products rounded in f32 differs from the reference's f64 value rounded
// to f32 by at most u (|mean| |A| + 3 |b| + 5 |y|), u = 2^-24 (the rounding of m, x - m, A, the
// product, the fma and the reference's own rounding). So with |mean| factor max|s| + 3 max|b|
// <= 64 the error stays below 64 u + 5 u |y| < 4e-6 + 3e-7 |y|, inside the f32 bound (1e-5 +
// 1.3e-6 |y|) and, through one more rounding, the f16/bf16 ones. The second condition keeps
// x - m, the factor and A finite and normal in f32. NaN/Inf rows fail both and take f64.
inline bool F32AffineIsExactEnough(double mean, double spread, double factor, const NormParams& p) {
  return std::fabs(mean) * factor * p.smax + 3.0 * p.bmax <= 64.0 &&
         std::fabs(mean) + std::sqrt(static_cast<double>(p.n)) * spread <= 1e37 && factor >= 1e-30;
}

// One row: the statistics in f64, then y = (x - mean) * factor * s + b, in f64 lanes (or in f32
// lanes where F32AffineIsExactEnough). `next` (the following row, or null) is prefetched during
// the second pass, so that memory streams while this row is computed.
template <class T>
void NormRow(const T* x, T* y, const T* next, const NormParams& p) {
  const size_t n = p.n;
  const hn::ScalableTag<double> d;
  const hn::Rebind<T, decltype(d)> dt;  // Lanes(d) elements of T
  const size_t lanes = hn::Lanes(d);
  auto load = [&](size_t i) {
    if constexpr (std::is_same_v<T, double>) {
      return hn::LoadU(d, x + i);
    } else {
      return hn::PromoteTo(d, hn::LoadU(dt, x + i));
    }
  };
  auto row_sum = [&](auto term, bool prefetch) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
      if (prefetch) {
        const auto* line = reinterpret_cast<const uint8_t*>(next + i);
        for (size_t k = 0; k < 4 * lanes * sizeof(T); k += 64) hwy::Prefetch(line + k);
      }
      a0 = term(a0, load(i));
      a1 = term(a1, load(i + lanes));
      a2 = term(a2, load(i + 2 * lanes));
      a3 = term(a3, load(i + 3 * lanes));
    }
    for (; i + lanes <= n; i += lanes) a0 = term(a0, load(i));
    double total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; i < n; ++i) total = hn::GetLane(term(hn::Set(d, total), hn::Set(d, static_cast<double>(x[i]))));
    return total;
  };
  const double count = static_cast<double>(n);
  double mean = 0.0;
  if (!p.rms) mean = row_sum([](auto acc, auto v) { return hn::Add(acc, v); }, false) / count;
  const auto vmean = hn::Set(d, mean);
  const double squares = row_sum(
      [&](auto acc, auto v) {
        const auto dev = hn::Sub(v, vmean);
        return hn::Add(acc, hn::Mul(dev, dev));
      },
      next != nullptr);
  const double spread = std::sqrt(squares / count);
  const double factor = 1.0 / std::sqrt(squares / count + p.eps);

  bool stream = p.stream;
#if HWY_TARGET == HWY_SCALAR
  stream = false;
#endif
  auto scalar = [&](size_t i) {
    y[i] = static_cast<T>((static_cast<double>(x[i]) - mean) * factor * p.s64[i] + p.b64[i]);
  };
  size_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (F32AffineIsExactEnough(mean, spread, factor, p)) {
      const hn::ScalableTag<float> df;
      const size_t lanes32 = hn::Lanes(df);
      const auto m = hn::Set(df, static_cast<float>(mean)), f = hn::Set(df, static_cast<float>(factor));
      auto affine = [&](size_t k) {
        const auto a = hn::Mul(f, hn::LoadU(df, p.s32 + k));
        return hn::MulAdd(hn::Sub(hn::LoadU(df, x + k), m), a, hn::LoadU(df, p.b32 + k));
      };
      auto scalar32 = [&](size_t k) {
        y[k] = std::fma(x[k] - static_cast<float>(mean), static_cast<float>(factor) * p.s32[k], p.b32[k]);
      };
      if (stream) {
        for (; i < n && reinterpret_cast<uintptr_t>(y + i) % (lanes32 * sizeof(float)) != 0; ++i) scalar32(i);
        for (; i + lanes32 <= n; i += lanes32) hn::Stream(affine(i), df, y + i);
      } else {
        for (; i + lanes32 <= n; i += lanes32) hn::StoreU(affine(i), df, y + i);
      }
      for (; i < n; ++i) scalar32(i);
      return;
    }
  }
  const auto vfactor = hn::Set(d, factor);
  auto affine = [&](size_t k) {
    const auto v = hn::Mul(hn::Sub(load(k), vmean), vfactor);
    const auto w = hn::Add(hn::Mul(v, hn::LoadU(d, p.s64 + k)), hn::LoadU(d, p.b64 + k));
    if constexpr (std::is_same_v<T, double>) {
      return w;
    } else {
      return DemoteF32(dt, w);
    }
  };
  if (stream) {
    // Whole vectors of T, aligned for Stream; scalar elements before and after.
    const hn::ScalableTag<T> dfull;
    const size_t full = hn::Lanes(dfull);
    for (; i < n && reinterpret_cast<uintptr_t>(y + i) % (full * sizeof(T)) != 0; ++i) scalar(i);
    for (; i + full <= n; i += full) {
      if constexpr (std::is_same_v<T, double>) {
        hn::Stream(affine(i), dfull, y + i);
      } else {
#if HWY_TARGET != HWY_SCALAR
        const hn::Half<decltype(dfull)> dh;
        hn::Stream(hn::Combine(dfull, hn::BitCast(dh, affine(i + lanes)), hn::BitCast(dh, affine(i))), dfull, y + i);
#endif
      }
    }
  } else {
    for (; i + lanes <= n; i += lanes) hn::StoreU(affine(i), dt, y + i);
  }
  for (; i < n; ++i) scalar(i);
}

template <class T>
void NormRows(const T* in, T* out, size_t rows, const NormParams& p) {
  for (size_t r = 0; r < rows; ++r) {
    NormRow(in + r * p.n, out + r * p.n, r + 1 < rows ? in + (r + 1) * p.n : nullptr, p);
  }
  if (p.stream) hwy::FlushStream();
}

}  // namespace

void LayerNormRowsF32(const float* in, float* out, size_t rows, const NormParams& p) { NormRows(in, out, rows, p); }

void LayerNormRowsF64(const double* in, double* out, size_t rows, const NormParams& p) { NormRows(in, out, rows, p); }

// f16/bf16 rows through a row buffer of n floats: widened exactly, normalised to f32 (never
// streamed), rounded to nearest even.
void LayerNormRowsHalf(const uint16_t* in, uint16_t* out, size_t rows, const NormParams& p, bool bf16, float* row) {
  NormParams q = p;
  q.stream = false;
  for (size_t r = 0; r < rows; ++r) {
    WidenBlock(in + r * p.n, row, p.n, bf16);
    NormRow<float>(row, row, nullptr, q);
    NarrowBlock(row, out + r * p.n, p.n, bf16);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/storage.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
using layer_norm_ops::NormParams;
HWY_EXPORT(LayerNormRowsF32);
HWY_EXPORT(LayerNormRowsF64);
HWY_EXPORT(LayerNormRowsHalf);

namespace {

// Rows are split into chunks of at least this many elements; chunks run in parallel.
constexpr int64_t kMinChunkElements = int64_t{1} << 16;
constexpr size_t kStreamBytes = size_t{8} << 20;

bool Overlap(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

// Runs the fast path, or returns false for anything the reference must handle (it throws the
// reference's errors and computes partially overlapping in/out in full before writing).
bool Norm(const void* in, const void* scale, const void* bias, void* out, int64_t rows, int64_t n, DType dtype,
          bool rms, double eps) {
  const bool floating =
      dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 || dtype == DType::BFloat16;
  int64_t count = 0;
  if (!floating || rows < 0 || n < 0 || __builtin_mul_overflow(rows, n, &count)) return false;
  if (count == 0 || in == nullptr || out == nullptr || !(std::isfinite(eps) && eps >= 0.0)) return false;
  const size_t bytes = DTypeStorageBytes(dtype, count);
  if (in != out && Overlap(in, out, bytes)) return false;
  const std::vector<double> s = ColumnF64(scale, n, dtype, 1.0);
  const std::vector<double> b = ColumnF64(rms ? nullptr : bias, n, dtype, -0.0);
  const std::vector<float> s32(s.begin(), s.end()), b32(b.begin(), b.end());  // exact: f32-class values
  double smax = 0.0, bmax = 0.0;
  for (const double v : s) smax = std::max(smax, std::fabs(v));
  for (const double v : b) bmax = std::max(bmax, std::fabs(v));
  const auto un = static_cast<size_t>(n);
  // Outputs too large to stay cached are written around the cache (no read for ownership).
  const NormParams params{s.data(), b.data(), s32.data(), b32.data(), smax, bmax, un, rms, eps,
                          in != out && bytes >= kStreamBytes};
  const int64_t grain = std::max<int64_t>(1, kMinChunkElements / n);
  ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    const auto nrows = static_cast<size_t>(r1 - r0);
    const size_t offset = static_cast<size_t>(r0) * un;
    switch (dtype) {
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(LayerNormRowsF32)(static_cast<const float*>(in) + offset,
                                               static_cast<float*>(out) + offset, nrows, params);
        break;
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(LayerNormRowsF64)(static_cast<const double*>(in) + offset,
                                               static_cast<double*>(out) + offset, nrows, params);
        break;
      default: {
        std::vector<float> row(un);
        HWY_DYNAMIC_DISPATCH(LayerNormRowsHalf)(static_cast<const uint16_t*>(in) + offset,
                                                static_cast<uint16_t*>(out) + offset, nrows, params,
                                                dtype == DType::BFloat16, row.data());
      }
    }
  });
  return true;
}

}  // namespace

void RegisterLayerNorm(KernelTable& t) {
  t.LayerNorm_LayerNorm = [](const void* in, const void* scale, const void* bias, void* out, int64_t rows,
                             int64_t n, DType dtype) {
    if (!Norm(in, scale, bias, out, rows, n, dtype, false, layer_norm_ops::kLayerNormEps)) {
      Reference().LayerNorm_LayerNorm(in, scale, bias, out, rows, n, dtype);
    }
  };
  t.LayerNorm_RMSNorm = [](const void* in, const void* scale, void* out, int64_t rows, int64_t n, DType dtype) {
    if (!Norm(in, scale, nullptr, out, rows, n, dtype, true, layer_norm_ops::kRMSNormEps)) {
      Reference().LayerNorm_RMSNorm(in, scale, out, rows, n, dtype);
    }
  };
  t.MathExt_LayerNormEps = [](const void* in, const void* scale, const void* bias, void* out, int64_t rows,
                              int64_t n, double eps, DType dtype) {
    if (!Norm(in, scale, bias, out, rows, n, dtype, false, eps)) {
      Reference().MathExt_LayerNormEps(in, scale, bias, out, rows, n, eps, dtype);
    }
  };
  t.MathExt_RMSNormEps = [](const void* in, const void* scale, void* out, int64_t rows, int64_t n, double eps,
                              DType dtype) {
    if (!Norm(in, scale, nullptr, out, rows, n, dtype, true, eps)) {
      Reference().MathExt_RMSNormEps(in, scale, out, rows, n, eps, dtype);
    }
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
