// Highway kernels for the Normalization surface over [batch, channels, spatial]: GroupNorm,
// InstanceNorm and BatchNormEval, all three for f64, f32 and (widened to f32 per block) f16/bf16,
// with eps 1e-5 or (MathExt.GroupNormEps, InstanceNormEps, BatchNormEvalEps) the caller's.
//
// As the reference: the statistics of each block (GroupNorm: a (batch, group) slice; InstanceNorm:
// a (batch, channel) plane) in f64 lanes, two passes (the mean, then the squared deviations);
// BatchNormEval uses the given mean and rstd = 1 / sqrt(var + eps), computed per channel exactly
// as the reference does. The affine step y = (x - mean) * rstd * scale + bias runs in f64 lanes
// in the reference's order and is rounded once (f16/bf16 through f32, round to nearest even), so
// only the order of the block sums differs. For f32-class data, a channel segment whose
// parameters pass F32AffineIsExactEnough (typical activations) is computed instead as one f32
// fma per element, y = x * A + B with A = rstd * scale and B = bias - mean * A formed in f64.
// Null scale/bias are 1 and -0.0, which leave every value (and the sign of zeros) unchanged.
// The next block is prefetched during the second statistics pass. Blocks (BatchNormEval: planes)
// run in parallel when the tensor is large; each block is read in full before it is written, so
// out may equal in. Anything else (bad arguments or eps, size 0, partially overlapping in/out)
// goes to the reference. Nothing stays scalar by design.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/normalization.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_NORMALIZATION_SHARED_
#define BACKPLANE_CPU_KERNELS_NORMALIZATION_SHARED_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace backplane::cpu::simd::normalization_ops {
constexpr double kEps = 1e-5;

// One call's parameters. Blocks hold `block_channels` consecutive channel planes of `spatial`
// elements; block b starts at channel (b * block_channels) % channels.
struct NormParams {
  const double* scale;  // per channel, 1 where absent
  const double* bias;   // per channel, -0.0 where absent
  const double* mean;   // BatchNormEval: per channel; null: the statistics of each block
  const double* rstd;   // BatchNormEval: 1 / sqrt(var + eps) per channel
  double eps;           // finite, >= 0
  size_t channels;
  size_t block_channels;
  size_t spatial;
};

// Whether a channel segment may be computed as y = fma(x, A, B) in f32, with A = rstd * s and
// B = b - mean * A formed in f64 and rounded to f32. Against the reference's f64 value rounded
// to f32, the error is at most u (|x A| + |B| + 2 |y|) from the roundings of A, B, the fma (two
// more without a native fma: + u |x A|) and the reference itself, u = 2^-24, and |x A| <= |y| +
// |B|; so with |B| <= |b| + |mean| |A| <= 32 it stays below 96 u + 4 u |y| < 5.8e-6 +
// 2.4e-7 |y|, inside the f32 bound (1e-5 + 1.3e-6 |y|) and, after one more rounding, the
// f16/bf16 ones. A is kept normal and finite in f32; NaN/Inf statistics fail the test.
inline bool F32AffineIsExactEnough(double mean, double a, double b) {
  const double absA = std::fabs(a);
  return std::fabs(b) + std::fabs(mean) * absA <= 32.0 && absA <= 1e30 && (absA >= 1e-30 || a == 0.0);
}
}  // namespace backplane::cpu::simd::normalization_ops
#endif  // BACKPLANE_CPU_KERNELS_NORMALIZATION_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace normalization_ops;  // NOLINT

// sum_i term(x[i]) over n elements in f64 lanes (four accumulators); `next` (or null) is
// prefetched meanwhile.
template <class T, class Term>
HWY_INLINE double BlockSum(const T* x, size_t n, const T* next, Term term) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    if (next != nullptr) {
      const auto* line = reinterpret_cast<const uint8_t*>(next + i);
      for (size_t k = 0; k < 4 * lanes * sizeof(T); k += 64) hwy::Prefetch(line + k);
    }
    a0 = hn::Add(a0, term(d, LoadF64(d, x + i)));
    a1 = hn::Add(a1, term(d, LoadF64(d, x + i + lanes)));
    a2 = hn::Add(a2, term(d, LoadF64(d, x + i + 2 * lanes)));
    a3 = hn::Add(a3, term(d, LoadF64(d, x + i + 3 * lanes)));
  }
  for (; i + lanes <= n; i += lanes) a0 = hn::Add(a0, term(d, LoadF64(d, x + i)));
  double total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  const hn::CappedTag<double, 1> d1;
  for (; i < n; ++i) total += hn::GetLane(term(d1, hn::Set(d1, static_cast<double>(x[i]))));
  return total;
}

// y = (x - mean) * rstd * s + b over one channel segment of n elements.
template <class T>
HWY_INLINE void AffineSegment(const T* x, T* y, size_t n, double mean, double rstd, double s, double b) {
  size_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    const double a = rstd * s;
    if (std::isfinite(mean) && F32AffineIsExactEnough(mean, a, b)) {
      const float a32 = static_cast<float>(a), b32 = static_cast<float>(b - mean * a);
      const hn::ScalableTag<float> df;
      const size_t lanes = hn::Lanes(df);
      const auto va = hn::Set(df, a32), vb = hn::Set(df, b32);
      for (; i + 2 * lanes <= n; i += 2 * lanes) {
        const auto v0 = hn::MulAdd(hn::LoadU(df, x + i), va, vb);
        const auto v1 = hn::MulAdd(hn::LoadU(df, x + i + lanes), va, vb);
        hn::StoreU(v0, df, y + i);
        hn::StoreU(v1, df, y + i + lanes);
      }
      for (; i + lanes <= n; i += lanes) hn::StoreU(hn::MulAdd(hn::LoadU(df, x + i), va, vb), df, y + i);
      for (; i < n; ++i) y[i] = std::fma(x[i], a32, b32);
      return;
    }
  }
  // The reference's order: ((x - mean) * rstd) * s + b.
  const hn::ScalableTag<double> d;
  const hn::Rebind<T, decltype(d)> dt;
  const size_t lanes = hn::Lanes(d);
  const auto vm = hn::Set(d, mean), vr = hn::Set(d, rstd), vs = hn::Set(d, s), vb = hn::Set(d, b);
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::Add(hn::Mul(hn::Mul(hn::Sub(LoadF64(d, x + i), vm), vr), vs), vb);
    if constexpr (std::is_same_v<T, double>) {
      hn::StoreU(v, d, y + i);
    } else {
      hn::StoreU(DemoteF32(dt, v), dt, y + i);
    }
  }
  for (; i < n; ++i) y[i] = static_cast<T>((static_cast<double>(x[i]) - mean) * rstd * s + b);
}

// Normalises `blocks` consecutive blocks starting with block index `first`.
template <class T>
void NormBlocks(const T* in, T* out, size_t first, size_t blocks, const NormParams& p) {
  const size_t n = p.block_channels * p.spatial;
  for (size_t k = 0; k < blocks; ++k) {
    const T* x = in + k * n;
    T* y = out + k * n;
    const size_t c0 = ((first + k) * p.block_channels) % p.channels;
    double mean = 0.0, rstd = 0.0;
    if (p.mean == nullptr) {
      mean = BlockSum(x, n, static_cast<const T*>(nullptr), [](auto, auto v) { return v; }) / static_cast<double>(n);
      const double squares = BlockSum(x, n, k + 1 < blocks ? x + n : nullptr, [mean](auto dd, auto v) {
        const auto dev = hn::Sub(v, hn::Set(dd, mean));
        return hn::Mul(dev, dev);
      });
      rstd = 1.0 / std::sqrt(squares / static_cast<double>(n) + p.eps);
    }
    for (size_t j = 0; j < p.block_channels; ++j) {
      const size_t c = c0 + j;
      const size_t off = j * p.spatial;
      if (p.mean != nullptr) {
        mean = p.mean[c];
        rstd = p.rstd[c];
      }
      AffineSegment(x + off, y + off, p.spatial, mean, rstd, p.scale[c], p.bias[c]);
    }
  }
}

}  // namespace

void NormBlocksF32(const float* in, float* out, size_t first, size_t blocks, const NormParams& p) {
  NormBlocks(in, out, first, blocks, p);
}

void NormBlocksF64(const double* in, double* out, size_t first, size_t blocks, const NormParams& p) {
  NormBlocks(in, out, first, blocks, p);
}

// f16/bf16 blocks through `buf` (one block of floats): widened exactly, normalised to f32,
// rounded to nearest even.
void NormBlocksHalf(const uint16_t* in, uint16_t* out, size_t first, size_t blocks, const NormParams& p, bool bf16,
                    float* buf) {
  const size_t n = p.block_channels * p.spatial;
  for (size_t k = 0; k < blocks; ++k) {
    WidenBlock(in + k * n, buf, n, bf16);
    NormBlocks<float>(buf, buf, first + k, 1, p);
    NarrowBlock(buf, out + k * n, n, bf16);
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
using normalization_ops::kEps;
using normalization_ops::NormParams;
HWY_EXPORT(NormBlocksF32);
HWY_EXPORT(NormBlocksF64);
HWY_EXPORT(NormBlocksHalf);

namespace {

// Blocks are grouped into chunks of at least this many elements; chunks run in parallel.
constexpr int64_t kMinChunkElements = int64_t{1} << 16;

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool Overlap(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

// The element count when the fast path applies, else 0 (the reference then throws, or handles
// size 0 and partially overlapping buffers).
int64_t FastCount(const void* in, const void* out, int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
  int64_t planes = 0, count = 0;
  if (!FloatDType(dtype) || batch < 0 || channels < 0 || spatial < 0 ||
      __builtin_mul_overflow(batch, channels, &planes) || __builtin_mul_overflow(planes, spatial, &count)) {
    return 0;
  }
  if (count == 0 || in == nullptr || out == nullptr) return 0;
  if (in != out && Overlap(in, out, DTypeStorageBytes(dtype, count))) return 0;
  return count;
}

// Normalises count / (block_channels * spatial) blocks (see NormParams).
void Run(const void* in, void* out, int64_t count, DType dtype, const NormParams& p) {
  const auto n = static_cast<int64_t>(p.block_channels * p.spatial);
  const int64_t grain = std::max<int64_t>(1, kMinChunkElements / n);
  ParallelFor(count / n, grain, [&](int64_t b0, int64_t b1) {
    const auto first = static_cast<size_t>(b0), blocks = static_cast<size_t>(b1 - b0);
    const size_t offset = first * static_cast<size_t>(n);
    switch (dtype) {
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(NormBlocksF32)(static_cast<const float*>(in) + offset, static_cast<float*>(out) + offset,
                                            first, blocks, p);
        break;
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(NormBlocksF64)(static_cast<const double*>(in) + offset,
                                            static_cast<double*>(out) + offset, first, blocks, p);
        break;
      default: {
        std::vector<float> buf(static_cast<size_t>(n));
        HWY_DYNAMIC_DISPATCH(NormBlocksHalf)(static_cast<const uint16_t*>(in) + offset,
                                             static_cast<uint16_t*>(out) + offset, first, blocks, p,
                                             dtype == DType::BFloat16, buf.data());
      }
    }
  });
}

// GroupNorm (groups > 0) and InstanceNorm (groups == channels); false: use the reference.
bool BlockNorm(const void* in, const void* scale, const void* bias, void* out, int64_t batch, int64_t channels,
               int64_t spatial, int64_t groups, double eps, DType dtype) {
  const int64_t count = FastCount(in, out, batch, channels, spatial, dtype);
  if (count == 0 || groups <= 0 || channels % groups != 0) return false;
  if (!(std::isfinite(eps) && eps >= 0.0)) return false;  // the reference names 'eps'
  const std::vector<double> s = ColumnF64(scale, channels, dtype, 1.0), b = ColumnF64(bias, channels, dtype, -0.0);
  const NormParams p{s.data(),
                     b.data(),
                     nullptr,
                     nullptr,
                     eps,
                     static_cast<size_t>(channels),
                     static_cast<size_t>(channels / groups),
                     static_cast<size_t>(spatial)};
  Run(in, out, count, dtype, p);
  return true;
}

bool BatchNorm(const void* in, const void* scale, const void* bias, const void* mean, const void* var, void* out,
               int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype) {
  const int64_t count = FastCount(in, out, batch, channels, spatial, dtype);
  if (count == 0 || mean == nullptr || var == nullptr) return false;
  if (!(std::isfinite(eps) && eps >= 0.0)) return false;  // the reference names 'eps'
  const std::vector<double> mu = ColumnF64(mean, channels, dtype, 0.0), v = ColumnF64(var, channels, dtype, 0.0);
  std::vector<double> rstd(v.size());
  for (size_t c = 0; c < v.size(); ++c) {
    if (!(v[c] + eps > 0.0)) return false;  // the reference names the channel
    rstd[c] = 1.0 / std::sqrt(v[c] + eps);
  }
  const std::vector<double> s = ColumnF64(scale, channels, dtype, 1.0), b = ColumnF64(bias, channels, dtype, -0.0);
  const NormParams p{s.data(), b.data(), mu.data(), rstd.data(), eps, static_cast<size_t>(channels), 1,
                     static_cast<size_t>(spatial)};
  Run(in, out, count, dtype, p);
  return true;
}

}  // namespace

void RegisterNormalization(KernelTable& t) {
  t.Normalization_GroupNorm = [](const GroupNormConfig& config, const void* in, const void* scale, const void* bias,
                                 void* out, int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
    if (!BlockNorm(in, scale, bias, out, batch, channels, spatial, config.Groups, kEps, dtype)) {
      Reference().Normalization_GroupNorm(config, in, scale, bias, out, batch, channels, spatial, dtype);
    }
  };
  t.Normalization_InstanceNorm = [](const void* in, const void* scale, const void* bias, void* out, int64_t batch,
                                    int64_t channels, int64_t spatial, DType dtype) {
    if (!BlockNorm(in, scale, bias, out, batch, channels, spatial, channels, kEps, dtype)) {
      Reference().Normalization_InstanceNorm(in, scale, bias, out, batch, channels, spatial, dtype);
    }
  };
  t.Normalization_BatchNormEval = [](const void* in, const void* scale, const void* bias, const void* mean,
                                     const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial,
                                     DType dtype) {
    if (!BatchNorm(in, scale, bias, mean, var, out, batch, channels, spatial, kEps, dtype)) {
      Reference().Normalization_BatchNormEval(in, scale, bias, mean, var, out, batch, channels, spatial, dtype);
    }
  };
  t.MathExt_GroupNormEps = [](const GroupNormConfig& config, const void* in, const void* scale, const void* bias,
                              void* out, int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype) {
    if (!BlockNorm(in, scale, bias, out, batch, channels, spatial, config.Groups, eps, dtype)) {
      Reference().MathExt_GroupNormEps(config, in, scale, bias, out, batch, channels, spatial, eps, dtype);
    }
  };
  t.MathExt_InstanceNormEps = [](const void* in, const void* scale, const void* bias, void* out, int64_t batch,
                                 int64_t channels, int64_t spatial, double eps, DType dtype) {
    if (!BlockNorm(in, scale, bias, out, batch, channels, spatial, channels, eps, dtype)) {
      Reference().MathExt_InstanceNormEps(in, scale, bias, out, batch, channels, spatial, eps, dtype);
    }
  };
  t.MathExt_BatchNormEvalEps = [](const void* in, const void* scale, const void* bias, const void* mean,
                                  const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial,
                                  double eps, DType dtype) {
    if (!BatchNorm(in, scale, bias, mean, var, out, batch, channels, spatial, eps, dtype)) {
      Reference().MathExt_BatchNormEvalEps(in, scale, bias, mean, var, out, batch, channels, spatial, eps, dtype);
    }
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
