// Fast kernels for the PredictiveCoding surface (docs/semantics/predictive_coding.md). Every method
// is accelerated:
// - Prediction (W s) and UpdateRepresentation (s + lr W^T e): f32 / f64 through OpenBLAS
//   cblas_?gemv, one thread per call, on fixed blocks of rows (columns) run by our pool, so results
//   do not depend on the thread count. f16 / bf16: our Highway GEMV on operands widened to f32,
//   f32 accumulation. The accumulation order and precision differ from the reference's f64 sums;
//   the runner bounds the error by tol.rel * sum |w| |x| (as for Matmul). UpdateRepresentation's
//   epilogue s + lr g runs in f64 lanes and rounds once.
// - UpdateWeights (W + lr e s^T): a rank-1 update streamed in f64 lanes with the reference's
//   operations (lr e[o] first, then w + step s[i]), rounded once to the storage.
// - PredictionError: observed - predicted in the compute type (f32 / f64 lanes; f16 / bf16 widened
//   in blocks and rounded to nearest even), bit-identical to the reference.
// Invalid arguments and outputs that partly overlap an input they are computed from (the
// reference allows any alias) go to the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/predictive_coding.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_PREDICTIVE_CODING_OPS_
#define BACKPLANE_CPU_KERNELS_PREDICTIVE_CODING_OPS_
#include <cstddef>
#include <cstdint>
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::predictive_coding_ops {
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)
constexpr size_t kBlock = 1024;
}  // namespace backplane::cpu::simd::predictive_coding_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::predictive_coding_hwy::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace predictive_coding_ops;  // NOLINT
using ::backplane::cpu::simd::HWY_NAMESPACE::NarrowBlock;
using ::backplane::cpu::simd::HWY_NAMESPACE::WidenBlock;

template <class T>
void SubTyped(const T* a, const T* b, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Sub(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  for (; i < n; ++i) out[i] = a[i] - b[i];
}

void SubChunk(int kind, const void* a, const void* b, void* out, size_t n) {
  if (kind == kF32)
    return SubTyped(static_cast<const float*>(a), static_cast<const float*>(b),
                    static_cast<float*>(out), n);
  if (kind == kF64)
    return SubTyped(static_cast<const double*>(a), static_cast<const double*>(b),
                    static_cast<double*>(out), n);
  const bool bf16 = kind == kBF16;
  HWY_ALIGN float fa[kBlock], fb[kBlock];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = n - i < kBlock ? n - i : kBlock;
    WidenBlock(static_cast<const uint16_t*>(a) + i, fa, m, bf16);
    WidenBlock(static_cast<const uint16_t*>(b) + i, fb, m, bf16);
    SubTyped(fa, fb, fa, m);
    NarrowBlock(fa, static_cast<uint16_t*>(out) + i, m, bf16);
  }
}

// out[i] = T(double(s[i]) + lr * double(g[i])), f64 lanes (the reference's epilogue).
template <class T>
void EpilogueTyped(const T* s, const T* g, T* out, size_t n, double lr) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;
  const size_t lanes = hn::Lanes(dd);
  const auto rate = hn::Set(dd, lr);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    if constexpr (sizeof(T) == 8) {
      hn::StoreU(hn::Add(hn::LoadU(dd, s + i), hn::Mul(rate, hn::LoadU(dd, g + i))), dd, out + i);
    } else {
      const auto v = hn::Add(hn::PromoteTo(dd, hn::LoadU(dt, s + i)),
                             hn::Mul(rate, hn::PromoteTo(dd, hn::LoadU(dt, g + i))));
      hn::StoreU(simd::HWY_NAMESPACE::DemoteF32(dt, v), dt, out + i);
    }
  }
  for (; i < n; ++i)
    out[i] = static_cast<T>(static_cast<double>(s[i]) + lr * static_cast<double>(g[i]));
}

void EpilogueF32(const float* s, const float* g, float* out, size_t n, double lr) {
  EpilogueTyped(s, g, out, n, lr);
}
void EpilogueF64(const double* s, const double* g, double* out, size_t n, double lr) {
  EpilogueTyped(s, g, out, n, lr);
}

// Rows [r0, r1) of out = W + (lr e[o]) s^T; e and s are private copies (f32 for f32/f16/bf16
// storage). f64 lanes, separate multiply and add, one rounding to the storage.
template <class T>
void RankOneRowsTyped(const T* w, const T* e, const T* s, T* out, size_t r0, size_t r1, size_t cols,
                      double lr) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;
  const size_t lanes = hn::Lanes(dd);
  for (size_t o = r0; o < r1; ++o) {
    const double step = lr * static_cast<double>(e[o]);
    const auto st = hn::Set(dd, step);
    const T* wr = w + o * cols;
    T* orow = out + o * cols;
    size_t i = 0;
    for (; i + lanes <= cols; i += lanes) {
      if constexpr (sizeof(T) == 8) {
        hn::StoreU(hn::Add(hn::LoadU(dd, wr + i), hn::Mul(st, hn::LoadU(dd, s + i))), dd, orow + i);
      } else {
        const auto v = hn::Add(hn::PromoteTo(dd, hn::LoadU(dt, wr + i)),
                               hn::Mul(st, hn::PromoteTo(dd, hn::LoadU(dt, s + i))));
        hn::StoreU(simd::HWY_NAMESPACE::DemoteF32(dt, v), dt, orow + i);
      }
    }
    for (; i < cols; ++i)
      orow[i] = static_cast<T>(static_cast<double>(wr[i]) + step * static_cast<double>(s[i]));
  }
}

void RankOneF32(const float* w, const float* e, const float* s, float* out, size_t r0, size_t r1,
                size_t cols, double lr) {
  RankOneRowsTyped(w, e, s, out, r0, r1, cols, lr);
}
void RankOneF64(const double* w, const double* e, const double* s, double* out, size_t r0,
                size_t r1, size_t cols, double lr) {
  RankOneRowsTyped(w, e, s, out, r0, r1, cols, lr);
}
// f16/bf16: rows widened in blocks of columns, computed in f64 lanes into f32, narrowed.
void RankOneHalf(const uint16_t* w, const float* e, const float* s, uint16_t* out, size_t r0,
                 size_t r1, size_t cols, double lr, bool bf16) {
  HWY_ALIGN float f[kBlock];
  for (size_t o = r0; o < r1; ++o) {
    for (size_t j = 0; j < cols; j += kBlock) {
      const size_t m = cols - j < kBlock ? cols - j : kBlock;
      WidenBlock(w + o * cols + j, f, m, bf16);
      const float eo = e[o];
      RankOneRowsTyped(f, &eo, s + j, f, 0, 1, m, lr);
      NarrowBlock(f, out + o * cols + j, m, bf16);
    }
  }
}

// f16/bf16 Prediction rows [r0, r1): y[o] = sum_i W[o][i] s[i], s widened (sf), f32 accumulation.
void GemvRowsHalf(const uint16_t* w, const float* sf, float* y, size_t r0, size_t r1, size_t cols,
                  bool bf16) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  HWY_ALIGN float f[kBlock];
  for (size_t o = r0; o < r1; ++o) {
    auto acc0 = hn::Zero(df), acc1 = hn::Zero(df);
    float tail = 0.0f;
    for (size_t j = 0; j < cols; j += kBlock) {
      const size_t m = cols - j < kBlock ? cols - j : kBlock;
      WidenBlock(w + o * cols + j, f, m, bf16);
      size_t i = 0;
      for (; i + 2 * lanes <= m; i += 2 * lanes) {
        acc0 = hn::MulAdd(hn::Load(df, f + i), hn::LoadU(df, sf + j + i), acc0);
        acc1 = hn::MulAdd(hn::Load(df, f + i + lanes), hn::LoadU(df, sf + j + i + lanes), acc1);
      }
      for (; i < m; ++i) tail += f[i] * sf[j + i];
    }
    y[o] = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1))) + tail;
  }
}

// f16/bf16 UpdateRepresentation: g[j0, j1) = sum_o W[o][j] e[o] (ef widened), f32 accumulation
// in o order.
void GemvTransHalf(const uint16_t* w, const float* ef, float* g, size_t rows, size_t cols,
                   size_t j0, size_t j1, bool bf16) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  HWY_ALIGN float f[kBlock];
  for (size_t j = j0; j < j1; j += kBlock) {
    const size_t m = j1 - j < kBlock ? j1 - j : kBlock;
    for (size_t i = 0; i < m; ++i) g[j + i] = 0.0f;
    for (size_t o = 0; o < rows; ++o) {
      WidenBlock(w + o * cols + j, f, m, bf16);
      const auto eo = hn::Set(df, ef[o]);
      size_t i = 0;
      for (; i + lanes <= m; i += lanes)
        hn::StoreU(hn::MulAdd(eo, hn::Load(df, f + i), hn::LoadU(df, g + j + i)), df, g + j + i);
      for (; i < m; ++i) g[j + i] += ef[o] * f[i];
    }
  }
}

}  // namespace backplane::cpu::simd::predictive_coding_hwy::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/storage.hpp"
#include "cpu/kernels/serial_blas.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
namespace predictive_coding_hwy {
HWY_EXPORT(SubChunk);
HWY_EXPORT(EpilogueF32);
HWY_EXPORT(EpilogueF64);
HWY_EXPORT(RankOneF32);
HWY_EXPORT(RankOneF64);
HWY_EXPORT(RankOneHalf);
HWY_EXPORT(GemvRowsHalf);
HWY_EXPORT(GemvTransHalf);

namespace {
using namespace predictive_coding_ops;  // NOLINT

constexpr int64_t kChunk = int64_t{1} << 16;  // elements per parallel chunk (fixed boundaries)
constexpr int64_t kGemvRows = 256;            // rows per Prediction block
constexpr int64_t kGemvCols = 1024;  // columns per UpdateRepresentation block (multiple of kBlock)

bool Ok(const void* p, int64_t n) { return n == 0 || p != nullptr; }

bool Overlap(const void* a, size_t abytes, const void* b, size_t bbytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && x < y + bbytes && y < x + abytes;
}

// Validates like the reference (dtype, sizes, product, pointers) without throwing; cells out.
bool ValidShape(int kind, int64_t outDim, int64_t inDim, int64_t& cells) {
  return kind >= 0 && outDim >= 0 && inDim >= 0 && !__builtin_mul_overflow(outDim, inDim, &cells);
}

// Runs fn(begin, end) over blocks of `grain` items, in parallel only when the work is large.
template <class Fn>
void Blocks(int64_t items, int64_t grain, int64_t work, const Fn& fn) {
  if (work < kChunk) return fn(int64_t{0}, items);
  ParallelFor(items, grain, [&](int64_t b, int64_t e) { fn(b, e); });
}

// y[rows] = W[rows x cols] x (row-major) through gemv on blocks of kGemvRows rows.
template <class T>
void BlasGemv(const T* w, const T* x, T* y, int64_t rows, int64_t cols) {
  std::memset(y, 0, static_cast<size_t>(rows) * sizeof(T));  // gemv's beta = 0 may scale stale NaNs
  SerialBlas serial;
  Blocks((rows + kGemvRows - 1) / kGemvRows, 1, rows * cols, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t r0 = blk * kGemvRows, nr = std::min(kGemvRows, rows - r0);
      const auto m = static_cast<blasint>(nr), n = static_cast<blasint>(cols);
      if constexpr (std::is_same_v<T, float>) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, m, n, 1.0f, w + r0 * cols, n, x, 1, 0.0f, y + r0,
                    1);
      } else {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, m, n, 1.0, w + r0 * cols, n, x, 1, 0.0, y + r0, 1);
      }
    }
  });
}

// g[cols] = W^T e through gemv on blocks of kGemvCols columns.
template <class T>
void BlasGemvTrans(const T* w, const T* e, T* g, int64_t rows, int64_t cols) {
  std::memset(g, 0, static_cast<size_t>(cols) * sizeof(T));
  if (rows == 0) return;
  SerialBlas serial;
  Blocks((cols + kGemvCols - 1) / kGemvCols, 1, rows * cols, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kGemvCols, nc = std::min(kGemvCols, cols - j0);
      const auto m = static_cast<blasint>(rows), n = static_cast<blasint>(nc),
                 ld = static_cast<blasint>(cols);
      if constexpr (std::is_same_v<T, float>) {
        cblas_sgemv(CblasRowMajor, CblasTrans, m, n, 1.0f, w + j0, ld, e, 1, 0.0f, g + j0, 1);
      } else {
        cblas_dgemv(CblasRowMajor, CblasTrans, m, n, 1.0, w + j0, ld, e, 1, 0.0, g + j0, 1);
      }
    }
  });
}

void Prediction(const void* weights, const void* representation, void* output, int64_t outDim,
                int64_t inDim, DType dtype) {
  const int kind = KindOf(dtype);
  int64_t cells = 0;
  if (!ValidShape(kind, outDim, inDim, cells) || !Ok(weights, cells) ||
      !Ok(representation, inDim) || !Ok(output, outDim)) {
    return Reference().PredictiveCoding_Prediction(weights, representation, output, outDim, inDim,
                                                   dtype);
  }
  if (outDim == 0) return;
  const size_t elem = KindBytes(kind), out_bytes = static_cast<size_t>(outDim) * elem;
  if (inDim == 0) {
    std::memset(output, 0, out_bytes);  // the empty sum, +0 in every format
    return;
  }
  // The output may alias an input (e.g. s for a square W): compute into a buffer then.
  const bool alias = Overlap(output, out_bytes, weights, static_cast<size_t>(cells) * elem) ||
                     Overlap(output, out_bytes, representation, static_cast<size_t>(inDim) * elem);
  if (kind == kF32 || kind == kF64) {
    std::vector<uint8_t> tmp(alias ? out_bytes : 0);
    void* y = alias ? tmp.data() : output;
    if (kind == kF32) {
      BlasGemv(static_cast<const float*>(weights), static_cast<const float*>(representation),
               static_cast<float*>(y), outDim, inDim);
    } else {
      BlasGemv(static_cast<const double*>(weights), static_cast<const double*>(representation),
               static_cast<double*>(y), outDim, inDim);
    }
    if (alias) std::memcpy(output, tmp.data(), out_bytes);
    return;
  }
  const bool bf16 = kind == kBF16;
  const std::vector<float> sf = WidenAll(representation, inDim, bf16);
  std::vector<float> y(static_cast<size_t>(outDim));
  Blocks((outDim + kGemvRows - 1) / kGemvRows, 1, cells, [&](int64_t b0, int64_t b1) {
    const int64_t r1 = std::min(outDim, b1 * kGemvRows);
    HWY_DYNAMIC_DISPATCH(GemvRowsHalf)
    (static_cast<const uint16_t*>(weights), sf.data(), y.data(),
     static_cast<size_t>(b0 * kGemvRows), static_cast<size_t>(r1), static_cast<size_t>(inDim),
     bf16);
  });
  NarrowAll(y, output, bf16);  // after every input is read
}

void PredictionError(const void* left, const void* right, void* output, int64_t count,
                     DType dtype) {
  const int kind = KindOf(dtype);
  if (kind < 0 || count < 0 || !Ok(left, count) || !Ok(right, count) || !Ok(output, count)) {
    return Reference().PredictiveCoding_PredictionError(left, right, output, count, dtype);
  }
  const size_t elem = KindBytes(kind);
  ParallelFor(count, kChunk, [&](int64_t b, int64_t e) {  // element i is read before it is written
    const size_t off = static_cast<size_t>(b) * elem;
    HWY_DYNAMIC_DISPATCH(SubChunk)
    (kind, static_cast<const uint8_t*>(left) + off, static_cast<const uint8_t*>(right) + off,
     static_cast<uint8_t*>(output) + off, static_cast<size_t>(e - b));
  });
}

double LearningRate(const PredictiveCodingConfig& config) {
  return static_cast<double>(config.LearningRate);
}

void UpdateRepresentation(const PredictiveCodingConfig& config, const void* weights,
                          const void* representation, const void* predictionError, void* output,
                          int64_t outDim, int64_t inDim, DType dtype) {
  const int kind = KindOf(dtype);
  int64_t cells = 0;
  auto reference = [&] {
    Reference().PredictiveCoding_UpdateRepresentation(
        config, weights, representation, predictionError, output, outDim, inDim, dtype);
  };
  if (!ValidShape(kind, outDim, inDim, cells) || !Ok(weights, cells) ||
      !Ok(representation, inDim) || !Ok(predictionError, outDim) || !Ok(output, inDim) ||
      !std::isfinite(config.LearningRate)) {
    return reference();
  }
  if (inDim == 0) return;
  const size_t elem = KindBytes(kind), out_bytes = static_cast<size_t>(inDim) * elem;
  // The output is written only by the epilogue (after W and e are read), which reads s[i] before
  // writing out[i]: any alias works except a shifted overlap with s.
  if (output != representation && Overlap(output, out_bytes, representation, out_bytes))
    return reference();
  const double lr = LearningRate(config);
  const auto n = static_cast<size_t>(inDim);
  if (kind == kF32) {
    std::vector<float> g(n);
    BlasGemvTrans(static_cast<const float*>(weights), static_cast<const float*>(predictionError),
                  g.data(), outDim, inDim);
    HWY_DYNAMIC_DISPATCH(EpilogueF32)
    (static_cast<const float*>(representation), g.data(), static_cast<float*>(output), n, lr);
  } else if (kind == kF64) {
    std::vector<double> g(n);
    BlasGemvTrans(static_cast<const double*>(weights), static_cast<const double*>(predictionError),
                  g.data(), outDim, inDim);
    HWY_DYNAMIC_DISPATCH(EpilogueF64)
    (static_cast<const double*>(representation), g.data(), static_cast<double*>(output), n, lr);
  } else {
    const bool bf16 = kind == kBF16;
    const std::vector<float> ef = WidenAll(predictionError, outDim, bf16);
    std::vector<float> sf = WidenAll(representation, inDim, bf16), g(n, 0.0f);
    Blocks((inDim + kGemvCols - 1) / kGemvCols, 1, cells, [&](int64_t b0, int64_t b1) {
      HWY_DYNAMIC_DISPATCH(GemvTransHalf)
      (static_cast<const uint16_t*>(weights), ef.data(), g.data(), static_cast<size_t>(outDim), n,
       static_cast<size_t>(b0 * kGemvCols), std::min(n, static_cast<size_t>(b1 * kGemvCols)), bf16);
    });
    HWY_DYNAMIC_DISPATCH(EpilogueF32)(sf.data(), g.data(), sf.data(), n, lr);
    NarrowAll(sf, output, bf16);
  }
}

void UpdateWeights(const PredictiveCodingConfig& config, const void* weights,
                   const void* representation, const void* predictionError, void* output,
                   int64_t outDim, int64_t inDim, DType dtype) {
  const int kind = KindOf(dtype);
  int64_t cells = 0;
  auto reference = [&] {
    Reference().PredictiveCoding_UpdateWeights(config, weights, representation, predictionError,
                                               output, outDim, inDim, dtype);
  };
  if (!ValidShape(kind, outDim, inDim, cells) || !Ok(weights, cells) ||
      !Ok(representation, inDim) || !Ok(predictionError, outDim) || !Ok(output, cells) ||
      !std::isfinite(config.LearningRate)) {
    return reference();
  }
  if (cells == 0) return;
  const size_t elem = KindBytes(kind), bytes = static_cast<size_t>(cells) * elem;
  // In place (output == W) works row by row; a shifted overlap with W does not.
  if (output != weights && Overlap(output, bytes, weights, bytes)) return reference();
  const double lr = LearningRate(config);
  const auto rows = static_cast<size_t>(outDim), cols = static_cast<size_t>(inDim);
  const int64_t grain = std::max<int64_t>(1, kChunk / inDim);
  // s and e are copied first: the output may overlap them.
  if (kind == kF64) {
    const auto* s = static_cast<const double*>(representation);
    const auto* e = static_cast<const double*>(predictionError);
    const std::vector<double> sc(s, s + cols), ec(e, e + rows);
    Blocks(outDim, grain, cells, [&](int64_t r0, int64_t r1) {
      HWY_DYNAMIC_DISPATCH(RankOneF64)
      (static_cast<const double*>(weights), ec.data(), sc.data(), static_cast<double*>(output),
       static_cast<size_t>(r0), static_cast<size_t>(r1), cols, lr);
    });
    return;
  }
  std::vector<float> sc, ec;
  if (kind == kF32) {
    const auto* s = static_cast<const float*>(representation);
    const auto* e = static_cast<const float*>(predictionError);
    sc.assign(s, s + cols);
    ec.assign(e, e + rows);
  } else {
    sc = WidenAll(representation, inDim, kind == kBF16);
    ec = WidenAll(predictionError, outDim, kind == kBF16);
  }
  Blocks(outDim, grain, cells, [&](int64_t r0, int64_t r1) {
    if (kind == kF32) {
      HWY_DYNAMIC_DISPATCH(RankOneF32)
      (static_cast<const float*>(weights), ec.data(), sc.data(), static_cast<float*>(output),
       static_cast<size_t>(r0), static_cast<size_t>(r1), cols, lr);
    } else {
      HWY_DYNAMIC_DISPATCH(RankOneHalf)
      (static_cast<const uint16_t*>(weights), ec.data(), sc.data(), static_cast<uint16_t*>(output),
       static_cast<size_t>(r0), static_cast<size_t>(r1), cols, lr, kind == kBF16);
    }
  });
}

}  // namespace
}  // namespace predictive_coding_hwy

void RegisterPredictiveCoding(KernelTable& t) {
  namespace k = predictive_coding_hwy;
  t.PredictiveCoding_Prediction = &k::Prediction;
  t.PredictiveCoding_PredictionError = &k::PredictionError;
  t.PredictiveCoding_UpdateRepresentation = &k::UpdateRepresentation;
  t.PredictiveCoding_UpdateWeights = &k::UpdateWeights;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
