// Fast kernels for the Pool surface (NCHW): MaxPool2D, AvgPool2D, AdaptiveMaxPool2D and
// AdaptiveAvgPool2D, vectorised over output columns.
//
// Every window, fixed or adaptive, is a row range [rowBegin, rowEnd) and per output column a
// column range [colStart, colStart + colLen) (clipped to the input: padding never takes part).
// One vector holds consecutive output columns; the taps are gathered in the reference's
// row-major order, lanes whose window is shorter are masked. So results are bit-identical to the
// reference: max uses its rule (a NaN tap or a strictly larger one replaces the running max, so
// the first of equal values wins and the last NaN stays), and averages sum the taps in f64 in
// the same order from +0.0 and divide once. Max runs in f32 lanes for f32/f16/bf16 (exact) and f64
// lanes for f64; averages run in f64 lanes. f16/bf16 planes are widened to f32 first and results
// narrowed with round-to-nearest-even (through f32, as the reference). Invalid calls go to the
// reference before anything is written.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/pool.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_POOL_SHARED_
#define BACKPLANE_CPU_KERNELS_POOL_SHARED_
#include <hwy/aligned_allocator.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::pool_ops {
using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)
// The windows of one call, shared by every plane. Column arrays are padded with empty windows
// (start 0, length 0) to a multiple of 16 entries.
struct Geometry {
  int64_t inH = 0, inW = 0, outH = 0, outW = 0, outWPadded = 0;
  std::vector<int64_t> rowBegin, rowEnd;
  std::vector<int64_t> colStart64, colLen64;
  std::vector<int32_t> colStart32, colLen32;
  int64_t maxColLen = 0;
  // Fixed windows (MaxPool2D/AvgPool2D): column kernel, stride and padding, for the contiguous
  // fast path of strides 1 and 2 (0 for adaptive windows).
  int64_t kernelW = 0, strideW = 0, padW = 0;
};
}  // namespace backplane::cpu::simd::pool_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace pool_ops;  // NOLINT

template <class TI>
const TI* ColStart(const Geometry& g) {
  if constexpr (sizeof(TI) == 4) {
    return g.colStart32.data();
  } else {
    return g.colStart64.data();
  }
}
template <class TI>
const TI* ColLen(const Geometry& g) {
  if constexpr (sizeof(TI) == 4) {
    return g.colLen32.data();
  } else {
    return g.colLen64.data();
  }
}

// y[oh, ow] (padded rows of g.outWPadded) = max or mean of the window over plane x [inH, inW].
template <class T, bool kMax>
void PoolPlane(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, const Geometry& g) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using TI = hwy::MakeSigned<T>;
  const size_t lanes = hn::Lanes(d);
  const TI* starts = ColStart<TI>(g);
  const TI* lens = ColLen<TI>(g);
  for (int64_t oh = 0; oh < g.outH; ++oh) {
    const int64_t h0 = g.rowBegin[static_cast<size_t>(oh)], h1 = g.rowEnd[static_cast<size_t>(oh)];
    T* yrow = y + oh * g.outWPadded;
    for (int64_t ow = 0; ow < g.outW; ow += static_cast<int64_t>(lanes)) {
#if HWY_TARGET != HWY_SCALAR
      // Interior vectors of stride-1/2 windows: every lane's window lies inside the row and the
      // taps are contiguous loads (stride 1) or the even/odd lanes of two loads (stride 2).
      const int64_t base = ow * g.strideW - g.padW;
      const auto L = static_cast<int64_t>(lanes);
      if ((g.strideW == 1 || g.strideW == 2) && ow + L <= g.outW && base >= 0 &&
          base + g.strideW * L + g.kernelW <= g.inW) {
        auto acc = kMax ? hn::Set(d, -std::numeric_limits<T>::infinity()) : hn::Zero(d);
        for (int64_t h = h0; h < h1; ++h) {
          const T* row = x + h * g.inW + base;
          for (int64_t kw = 0; kw < g.kernelW; ++kw) {
            hn::Vec<decltype(d)> v;
            if (g.strideW == 1) {
              v = hn::LoadU(d, row + kw);
            } else {
              const T* p = row + (kw & ~int64_t{1});
              const auto lo = hn::LoadU(d, p), hi = hn::LoadU(d, p + L);
              v = (kw & 1) ? hn::ConcatOdd(d, hi, lo) : hn::ConcatEven(d, hi, lo);
            }
            if constexpr (kMax) {
              acc = hn::IfThenElse(hn::Or(hn::IsNaN(v), hn::Gt(v, acc)), v, acc);
            } else {
              acc = hn::Add(acc, v);
            }
          }
        }
        if constexpr (!kMax) acc = hn::Div(acc, hn::Set(d, static_cast<T>((h1 - h0) * g.kernelW)));
        hn::StoreU(acc, d, yrow + ow);
        continue;
      }
#endif
      const auto start = hn::LoadU(di, starts + ow);
      const auto len = hn::LoadU(di, lens + ow);
      auto acc = kMax ? hn::Set(d, -std::numeric_limits<T>::infinity()) : hn::Zero(d);
      for (int64_t h = h0; h < h1; ++h) {
        const T* row = x + h * g.inW;
        for (int64_t kw = 0; kw < g.maxColLen; ++kw) {
          const auto k = hn::Set(di, static_cast<TI>(kw));
          const auto validI = hn::Lt(k, len);
          const auto valid = hn::RebindMask(d, validI);
          const auto v = hn::GatherIndex(d, row, hn::IfThenElse(validI, hn::Add(start, k), start));
          if constexpr (kMax) {
            acc = hn::IfThenElse(hn::And(valid, hn::Or(hn::IsNaN(v), hn::Gt(v, acc))), v, acc);
          } else {
            acc = hn::Add(acc, hn::IfThenElseZero(valid, v));
          }
        }
      }
      if constexpr (!kMax) {
        acc = hn::Div(acc, hn::Mul(hn::ConvertTo(d, len), hn::Set(d, static_cast<T>(h1 - h0))));
      }
      hn::StoreU(acc, d, yrow + ow);
    }
  }
}

void F32ToF64(const float* src, double* dst, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::PromoteTo(dd, hn::LoadU(df, src + i)), dd, dst + i);
  for (; i < n; ++i) dst[i] = src[i];
}

// Plain casts: Highway 1.0.3's HWY_SCALAR DemoteTo(f64 -> f32) saturates +-Inf to +-FLT_MAX.
void F64ToF32(const double* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// Pools planes [p0, p1) of in into out (storage `storage`), max or mean.
void PoolPlanes(const void* in, void* out, int storage, bool isMax, size_t p0, size_t p1,
                const Geometry& g) {
  const size_t inCount = static_cast<size_t>(g.inH * g.inW);
  const size_t outCount = static_cast<size_t>(g.outH * g.outW);
  const size_t padCount = static_cast<size_t>(g.outH * g.outWPadded);
  const size_t outW = static_cast<size_t>(g.outW), outWP = static_cast<size_t>(g.outWPadded);
  const bool half = storage == kF16 || storage == kBF16;
  const bool bf16 = storage == kBF16;
  auto f32 = hwy::AllocateAligned<float>(half ? inCount : 1);
  auto f64 = hwy::AllocateAligned<double>(isMax && storage != kF64 ? 1 : inCount + padCount);
  auto y32 = hwy::AllocateAligned<float>(padCount + 1);
  for (size_t p = p0; p < p1; ++p) {
    if (storage == kF64) {
      const double* x = static_cast<const double*>(in) + p * inCount;
      double* y = f64.get() + inCount;
      if (isMax) {
        PoolPlane<double, true>(x, y, g);
      } else {
        PoolPlane<double, false>(x, y, g);
      }
      double* dst = static_cast<double*>(out) + p * outCount;
      for (size_t r = 0; r < static_cast<size_t>(g.outH); ++r) {
        for (size_t j = 0; j < outW; ++j) dst[r * outW + j] = y[r * outWP + j];
      }
      continue;
    }
    // f32 values of the plane: the input itself, or widened f16/bf16.
    const float* x32 = static_cast<const float*>(in) + p * inCount;
    if (half) {
      WidenBlock(static_cast<const uint16_t*>(in) + p * inCount, f32.get(), inCount, bf16);
      x32 = f32.get();
    }
    if (isMax) {
      PoolPlane<float, true>(x32, y32.get(), g);
    } else {
      F32ToF64(x32, f64.get(), inCount);
      double* y = f64.get() + inCount;
      PoolPlane<double, false>(f64.get(), y, g);
      F64ToF32(y, y32.get(), padCount);
    }
    for (size_t r = 0; r < static_cast<size_t>(g.outH); ++r) {
      const float* src = y32.get() + r * outWP;
      if (half) {
        NarrowBlock(src, static_cast<uint16_t*>(out) + p * outCount + r * outW, outW, bf16);
      } else {
        float* dst = static_cast<float*>(out) + p * outCount + r * outW;
        for (size_t j = 0; j < outW; ++j) dst[j] = src[j];
      }
    }
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cstring>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(PoolPlanes);

namespace {

using namespace pool_ops;  // NOLINT

bool MulOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
bool AddOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }

// Sizes >= 0, element counts fit in int64, pointers non-null where they cover elements, and
// int32 column indices suffice. Fills planes / counts.
bool CommonOk(const void* in, const void* out, int64_t batch, int64_t channels, int64_t inH,
              int64_t inW, int64_t outH, int64_t outW, int64_t* planes, int64_t* inCount,
              int64_t* outCount) {
  if (batch < 0 || channels < 0 || inH < 0 || inW < 0 || outH < 0 || outW < 0) return false;
  int64_t a = 0, b = 0;
  if (!MulOk(batch, channels, planes) || !MulOk(*planes, inH, &a) || !MulOk(a, inW, inCount) ||
      !MulOk(*planes, outH, &b) || !MulOk(b, outW, outCount)) {
    return false;
  }
  if ((*inCount > 0 && in == nullptr) || (*outCount > 0 && out == nullptr)) return false;
  return inW < (int64_t{1} << 30) && outW < (int64_t{1} << 30);
}

// Fixed-window axis: kernel, stride > 0, 0 <= padding <= kernel / 2, out = the formula.
bool FixedAxisOk(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  if (kernel <= 0 || stride <= 0 || padding < 0 || padding > kernel / 2) return false;
  if (in == 0) return out == 0;
  int64_t padded = 0;
  if (__builtin_add_overflow(in, 2 * padding, &padded) || padded < kernel) return false;
  return out == (padded - kernel) / stride + 1;
}

void SetColumns(Geometry& g, const std::vector<int64_t>& start, const std::vector<int64_t>& len) {
  const auto padded = static_cast<size_t>((g.outW + 15) / 16 * 16);
  g.outWPadded = static_cast<int64_t>(padded);
  g.colStart64.assign(padded, 0);
  g.colLen64.assign(padded, 0);
  std::copy(start.begin(), start.end(), g.colStart64.begin());
  std::copy(len.begin(), len.end(), g.colLen64.begin());
  g.colStart32.assign(g.colStart64.begin(), g.colStart64.end());
  g.colLen32.assign(g.colLen64.begin(), g.colLen64.end());
  g.maxColLen = len.empty() ? 0 : *std::max_element(len.begin(), len.end());
}

bool Overlaps(const void* a, size_t abytes, const void* b, size_t bbytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return abytes > 0 && bbytes > 0 && x < y + bbytes && y < x + abytes;
}

void Run(const void* in, void* out, DType dtype, bool isMax, int64_t planes, int64_t inCount,
         int64_t outCount, const Geometry& g) {
  if (outCount == 0) return;
  const int storage = KindOf(dtype);
  const size_t inBytes = DTypeStorageBytes(dtype, inCount),
               outBytes = DTypeStorageBytes(dtype, outCount);
  std::vector<uint8_t> tmp(Overlaps(in, inBytes, out, outBytes) ? outBytes : 0);
  void* dst = tmp.empty() ? out : tmp.data();
  const int64_t perPlane = g.inH * g.inW + g.outH * g.outW;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(perPlane, 1));
  auto body = [&](int64_t p0, int64_t p1) {
    HWY_DYNAMIC_DISPATCH(PoolPlanes)
    (in, dst, storage, isMax, static_cast<size_t>(p0), static_cast<size_t>(p1), g);
  };
  if (planes * perPlane >= (int64_t{1} << 16)) {
    ParallelFor(planes, grain, body);
  } else {
    body(0, planes);
  }
  if (!tmp.empty()) std::memcpy(out, tmp.data(), outBytes);
}

template <bool kMax>
void Fixed(const PoolConfig& config, const void* in, void* out, int64_t batch, int64_t channels,
           int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype,
           void (*fallback)(const PoolConfig&, const void*, void*, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int64_t, DType)) {
  int64_t planes = 0, inCount = 0, outCount = 0;
  if (KindOf(dtype) < 0 ||
      !CommonOk(in, out, batch, channels, inH, inW, outH, outW, &planes, &inCount, &outCount) ||
      !FixedAxisOk(inH, outH, config.KernelH, config.StrideH, config.PaddingH) ||
      !FixedAxisOk(inW, outW, config.KernelW, config.StrideW, config.PaddingW)) {
    return fallback(config, in, out, batch, channels, inH, inW, outH, outW, dtype);
  }
  Geometry g;
  g.inH = inH;
  g.inW = inW;
  g.outH = outH;
  g.outW = outW;
  for (int64_t oh = 0; oh < outH; ++oh) {
    const int64_t s = oh * config.StrideH - config.PaddingH;
    g.rowBegin.push_back(std::max<int64_t>(s, 0));
    g.rowEnd.push_back(std::min(s + config.KernelH, inH));
  }
  std::vector<int64_t> start, len;
  for (int64_t ow = 0; ow < outW; ++ow) {
    const int64_t s = ow * config.StrideW - config.PaddingW;
    start.push_back(std::max<int64_t>(s, 0));
    len.push_back(std::min(s + config.KernelW, inW) - start.back());
  }
  SetColumns(g, start, len);
  g.kernelW = config.KernelW;
  g.strideW = config.StrideW;
  g.padW = config.PaddingW;
  Run(in, out, dtype, kMax, planes, inCount, outCount, g);
}

template <bool kMax>
void Adaptive(const void* in, void* out, int64_t batch, int64_t channels, int64_t inH, int64_t inW,
              int64_t outH, int64_t outW, DType dtype,
              void (*fallback)(const void*, void*, int64_t, int64_t, int64_t, int64_t, int64_t,
                               int64_t, DType)) {
  int64_t planes = 0, inCount = 0, outCount = 0;
  int64_t t = 0, inH1 = 0, inW1 = 0;
  if (KindOf(dtype) < 0 ||
      !CommonOk(in, out, batch, channels, inH, inW, outH, outW, &planes, &inCount, &outCount) ||
      (planes > 0 && (inH == 0 || inW == 0 || outH == 0 || outW == 0 || !AddOk(inH, 1, &inH1) ||
                      !AddOk(inW, 1, &inW1) || !MulOk(outH, inH1, &t) || !MulOk(outW, inW1, &t)))) {
    return fallback(in, out, batch, channels, inH, inW, outH, outW, dtype);
  }
  if (planes == 0) return;
  Geometry g;
  g.inH = inH;
  g.inW = inW;
  g.outH = outH;
  g.outW = outW;
  for (int64_t oh = 0; oh < outH; ++oh) {
    g.rowBegin.push_back((oh * inH) / outH);
    g.rowEnd.push_back(((oh + 1) * inH + outH - 1) / outH);
  }
  std::vector<int64_t> start, len;
  for (int64_t ow = 0; ow < outW; ++ow) {
    start.push_back((ow * inW) / outW);
    len.push_back(((ow + 1) * inW + outW - 1) / outW - start.back());
  }
  SetColumns(g, start, len);
  Run(in, out, dtype, kMax, planes, inCount, outCount, g);
}

}  // namespace

void RegisterPool(KernelTable& t) {
  t.Pool_MaxPool2D = [](const PoolConfig& c, const void* in, void* out, int64_t n, int64_t ch,
                        int64_t ih, int64_t iw, int64_t oh, int64_t ow, DType dt) {
    Fixed<true>(c, in, out, n, ch, ih, iw, oh, ow, dt, Reference().Pool_MaxPool2D);
  };
  t.Pool_AvgPool2D = [](const PoolConfig& c, const void* in, void* out, int64_t n, int64_t ch,
                        int64_t ih, int64_t iw, int64_t oh, int64_t ow, DType dt) {
    Fixed<false>(c, in, out, n, ch, ih, iw, oh, ow, dt, Reference().Pool_AvgPool2D);
  };
  t.Pool_AdaptiveMaxPool2D = [](const void* in, void* out, int64_t n, int64_t ch, int64_t ih,
                                int64_t iw, int64_t oh, int64_t ow, DType dt) {
    Adaptive<true>(in, out, n, ch, ih, iw, oh, ow, dt, Reference().Pool_AdaptiveMaxPool2D);
  };
  t.Pool_AdaptiveAvgPool2D = [](const void* in, void* out, int64_t n, int64_t ch, int64_t ih,
                                int64_t iw, int64_t oh, int64_t ow, DType dt) {
    Adaptive<false>(in, out, n, ch, ih, iw, oh, ow, dt, Reference().Pool_AdaptiveAvgPool2D);
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
