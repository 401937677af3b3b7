// Highway kernels of the PoolNd surface (MaxPoolNd, AvgPoolNd), vectorised over the output
// positions of the last spatial axis. Per lane and window tap the input position is
// o * stride + t * dilation - padBegin; out-of-input taps are masked and in-input ones gathered
// (contiguous loads for stride 1 inside the row). Taps run in the reference's order, so the
// results are bit-identical: max keeps the first of equal values (a NaN or a strictly larger tap
// replaces it) with its index, averages add in f64 from +0.0 and divide once by the same count.
// Working lanes: f32 for f32/f16/bf16 max, f64 for f64 max and for every average, i32 for
// i32/i16/i8/u16/u8 max, i64 for i64/u32 max; planes of other widths are widened first. u64 max,
// planes of 2^31 elements or more in 32-bit lanes, and invalid calls (after the same checks) use
// the reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/pool_nd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_POOL_ND_SHARED_
#define BACKPLANE_CPU_KERNELS_POOL_ND_SHARED_
#include <algorithm>
#include <cstdint>

#include "backplane/backend/pool_nd.hpp"
#include "cpu/reference/pool_nd_geometry.hpp"

namespace backplane::cpu::simd::pool_nd_ops {
using ref::pool_nd::Geometry;
// The last spatial axis' window: kernel, stride, dilation and begin padding.
struct LastAxis {
  int64_t kernel = 1, stride = 1, dilation = 1, padBegin = 0;
};
inline LastAxis LastAxisOf(const PoolNdConfig& c) {
  const int i = c.Rank - 1;
  return {c.Kernel[i], c.Stride[i], c.Dilation[i], c.PadBegin[i]};
}
}  // namespace backplane::cpu::simd::pool_nd_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace pool_nd_ops;  // NOLINT

// Visits the window taps of one vector of outputs (ow .. ow + n) at output row (od, oh): for every
// in-input (id, ih) row and last-axis tap t, fn(row offset, tap values, input positions, valid).
template <class T, class Fn>
HWY_INLINE void ForEachTap(const T* HWY_RESTRICT x, const Geometry& g, const LastAxis& w, int64_t od, int64_t oh,
                           int64_t ow, size_t n, Fn&& fn) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using TI = hn::TFromD<decltype(di)>;
  const size_t lanes = hn::Lanes(d);
  const auto& [D, H, W] = g.axes;
  HWY_ALIGN TI steps[hn::MaxLanes(di)];
  for (size_t j = 0; j < lanes; ++j) steps[j] = static_cast<TI>(static_cast<int64_t>(j) * w.stride);
  const auto laneStep = hn::Load(di, steps);
  const auto inRange = hn::FirstN(di, n);
  const auto width = hn::Set(di, static_cast<TI>(W.in));
  for (int64_t a = 0; a < D.Count(od); ++a) {
    for (int64_t b = 0; b < H.Count(oh); ++b) {
      const int64_t rowOff = (D.Taps(od)[a] * H.in + H.Taps(oh)[b]) * W.in;
      const T* row = x + rowOff;
      for (int64_t t = 0; t < w.kernel; ++t) {
        const int64_t start = ow * w.stride - w.padBegin + t * w.dilation;
        const auto pos = hn::Add(hn::Set(di, static_cast<TI>(start)), laneStep);
        if (w.stride == 1 && n == lanes && start >= 0 && start + static_cast<int64_t>(lanes) <= W.in) {
          fn(rowOff, hn::LoadU(d, row + start), pos, hn::FirstN(d, lanes));
          continue;
        }
        const auto validI = hn::And(inRange, hn::AndNot(hn::Lt(pos, hn::Zero(di)), hn::Lt(pos, width)));
        const auto v = hn::GatherIndex(d, row, hn::IfThenElseZero(validI, pos));
        fn(rowOff, v, pos, hn::RebindMask(d, validI));
      }
    }
  }
}

// y[planeOut + lanes] (working type) and off[planeOut + lanes] (row-major offsets in the plane).
template <class T>
void MaxPlane(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, hwy::MakeSigned<T>* HWY_RESTRICT off, const Geometry& g,
              const LastAxis& w) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using TI = hn::TFromD<decltype(di)>;
  const size_t lanes = hn::Lanes(d);
  const auto& [D, H, W] = g.axes;
  size_t at = 0;
  for (int64_t od = 0; od < D.out; ++od) {
    for (int64_t oh = 0; oh < H.out; ++oh) {
      for (int64_t ow = 0; ow < W.out; ow += static_cast<int64_t>(lanes)) {
        const size_t n = std::min(lanes, static_cast<size_t>(W.out - ow));
        auto best = hn::Zero(d);
        auto bestOff = hn::Zero(di);
        auto have = hn::FirstN(d, 0);
        ForEachTap<T>(x, g, w, od, oh, ow, n, [&](int64_t rowOff, auto v, auto pos, auto valid) {
          auto wins = hn::Or(hn::Not(have), hn::Gt(v, best));
          if constexpr (hwy::IsFloat<T>()) wins = hn::Or(wins, hn::IsNaN(v));
          wins = hn::And(valid, wins);
          best = hn::IfThenElse(wins, v, best);
          bestOff = hn::IfThenElse(hn::RebindMask(di, wins), hn::Add(pos, hn::Set(di, static_cast<TI>(rowOff))), bestOff);
          have = hn::Or(have, valid);
        });
        hn::StoreU(best, d, y + at);
        hn::StoreU(bestOff, di, off + at);
        at += n;
      }
    }
  }
}

// y[planeOut + lanes] = the window means of the f64 plane x.
void AvgPlane(const double* HWY_RESTRICT x, double* HWY_RESTRICT y, const double* HWY_RESTRICT countW,
              const Geometry& g, const LastAxis& w, bool includePad) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto& [D, H, W] = g.axes;
  size_t at = 0;
  for (int64_t od = 0; od < D.out; ++od) {
    for (int64_t oh = 0; oh < H.out; ++oh) {
      const int64_t outer = includePad ? D.padded[static_cast<size_t>(od)] * H.padded[static_cast<size_t>(oh)]
                                       : D.Count(od) * H.Count(oh);
      for (int64_t ow = 0; ow < W.out; ow += static_cast<int64_t>(lanes)) {
        const size_t n = std::min(lanes, static_cast<size_t>(W.out - ow));
        auto sum = hn::Zero(d);
        ForEachTap<double>(x, g, w, od, oh, ow, n,
                           [&](int64_t, auto v, auto, auto valid) { sum = hn::Add(sum, hn::IfThenElseZero(valid, v)); });
        const auto count = hn::Mul(hn::Set(d, static_cast<double>(outer)), hn::LoadU(d, countW + ow));
        hn::StoreU(hn::Div(sum, count), d, y + at);
        at += n;
      }
    }
  }
}

size_t PoolNdLanes(int bytes) {
  return bytes == 4 ? hn::Lanes(hn::ScalableTag<float>()) : hn::Lanes(hn::ScalableTag<double>());
}
void PoolNdMaxF32(const float* x, float* y, int32_t* off, const Geometry& g, const LastAxis& w) { MaxPlane(x, y, off, g, w); }
void PoolNdMaxF64(const double* x, double* y, int64_t* off, const Geometry& g, const LastAxis& w) { MaxPlane(x, y, off, g, w); }
void PoolNdMaxI32(const int32_t* x, int32_t* y, int32_t* off, const Geometry& g, const LastAxis& w) { MaxPlane(x, y, off, g, w); }
void PoolNdMaxI64(const int64_t* x, int64_t* y, int64_t* off, const Geometry& g, const LastAxis& w) { MaxPlane(x, y, off, g, w); }
void PoolNdAvg(const double* x, double* y, const double* countW, const Geometry& g, const LastAxis& w, bool includePad) {
  AvgPlane(x, y, countW, g, w, includePad);
}
void PoolNdWiden16(const uint16_t* src, float* dst, size_t n, bool bf16) { WidenBlock(src, dst, n, bf16); }
void PoolNdNarrow16(const float* src, uint16_t* dst, size_t n, bool bf16) { NarrowBlock(src, dst, n, bf16); }

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <hwy/aligned_allocator.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(PoolNdLanes);
HWY_EXPORT(PoolNdMaxF32);
HWY_EXPORT(PoolNdMaxF64);
HWY_EXPORT(PoolNdMaxI32);
HWY_EXPORT(PoolNdMaxI64);
HWY_EXPORT(PoolNdAvg);
HWY_EXPORT(PoolNdWiden16);
HWY_EXPORT(PoolNdNarrow16);

namespace {
using namespace pool_nd_ops;  // NOLINT

// Planes per parallel task: about 64 Ki input elements.
int64_t PlaneGrain(const Geometry& g) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(g.planeIn, 1)); }

// The index of the winning tap from its row-major plane offset.
int64_t IndexOf(int64_t off, const Geometry& g, bool columnMajor) {
  if (!columnMajor) return off;
  const auto& [D, H, W] = g.axes;
  const int64_t iw = off % W.in, r = off / W.in;
  return (r / H.in) * g.indexStride[0] + (r % H.in) * g.indexStride[1] + iw * g.indexStride[2];
}

// Max over planes [p0, p1) with working type T (the storage S itself, or S widened into T).
template <class S, class T>
void MaxPlanes(const PoolNdConfig& c, const void* in, void* out, int64_t* indices, const Geometry& g, int64_t p0,
               int64_t p1, DType dtype) {
  using TI = hwy::MakeSigned<T>;
  const auto lanes = static_cast<size_t>(HWY_DYNAMIC_DISPATCH(PoolNdLanes)(static_cast<int>(sizeof(T))));
  const auto planeIn = static_cast<size_t>(g.planeIn), planeOut = static_cast<size_t>(g.planeOut);
  constexpr bool kSame = std::is_same_v<S, T>;
  constexpr bool kHalf = std::is_same_v<S, uint16_t> && std::is_same_v<T, float>;
  const bool bf16 = dtype == DType::BFloat16;
  auto work = hwy::AllocateAligned<T>(kSame ? 1 : planeIn);
  auto y = hwy::AllocateAligned<T>(planeOut + lanes);
  auto off = hwy::AllocateAligned<TI>(planeOut + lanes);
  const LastAxis w = LastAxisOf(c);
  for (int64_t p = p0; p < p1; ++p) {
    const S* src = static_cast<const S*>(in) + static_cast<size_t>(p) * planeIn;
    const T* x = nullptr;
    if constexpr (kSame) {
      x = src;
    } else if constexpr (kHalf) {
      HWY_DYNAMIC_DISPATCH(PoolNdWiden16)(src, work.get(), planeIn, bf16);
      x = work.get();
    } else {
      for (size_t i = 0; i < planeIn; ++i) work[i] = static_cast<T>(src[i]);
      x = work.get();
    }
    if constexpr (std::is_same_v<T, float>) {
      HWY_DYNAMIC_DISPATCH(PoolNdMaxF32)(x, y.get(), off.get(), g, w);
    } else if constexpr (std::is_same_v<T, double>) {
      HWY_DYNAMIC_DISPATCH(PoolNdMaxF64)(x, y.get(), off.get(), g, w);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      HWY_DYNAMIC_DISPATCH(PoolNdMaxI32)(x, y.get(), off.get(), g, w);
    } else {
      HWY_DYNAMIC_DISPATCH(PoolNdMaxI64)(x, y.get(), off.get(), g, w);
    }
    S* dst = static_cast<S*>(out) + static_cast<size_t>(p) * planeOut;
    if constexpr (kSame) {
      std::memcpy(dst, y.get(), planeOut * sizeof(T));
    } else if constexpr (kHalf) {
      HWY_DYNAMIC_DISPATCH(PoolNdNarrow16)(y.get(), dst, planeOut, bf16);
    } else {
      for (size_t i = 0; i < planeOut; ++i) dst[i] = static_cast<S>(y[i]);
    }
    if (indices != nullptr) {
      const int64_t base = c.IndicesOverTensor ? p * g.planeIn : 0;
      int64_t* idx = indices + static_cast<size_t>(p) * planeOut;
      for (size_t i = 0; i < planeOut; ++i) idx[i] = base + IndexOf(off[i], g, c.ColumnMajorIndices);
    }
  }
}

template <class S, class T>
void MaxAll(const PoolNdConfig& c, const void* in, void* out, int64_t* indices, const Geometry& g, DType dtype) {
  ParallelFor(g.planes, PlaneGrain(g),
              [&](int64_t b, int64_t e) { MaxPlanes<S, T>(c, in, out, indices, g, b, e, dtype); });
}

void MaxPoolNd(const PoolNdConfig& c, const void* in, void* out, int64_t* indices, int64_t planes, DType dtype) {
  const Geometry g =
      ref::pool_nd::BuildPoolNdGeometry("PoolNd.MaxPoolNd", c, in, out, indices, planes, dtype, kPoolNdMaxDTypes, true);
  if (g.planes == 0 || g.planeOut == 0) return;
  const bool fits32 = g.planeIn < (int64_t{1} << 31);
  switch (dtype) {
    case DType::Float32: if (fits32) return MaxAll<float, float>(c, in, out, indices, g, dtype); break;
    case DType::Float16:
    case DType::BFloat16: if (fits32) return MaxAll<uint16_t, float>(c, in, out, indices, g, dtype); break;
    case DType::Float64: return MaxAll<double, double>(c, in, out, indices, g, dtype);
    case DType::Int32: if (fits32) return MaxAll<int32_t, int32_t>(c, in, out, indices, g, dtype); break;
    case DType::Int16: if (fits32) return MaxAll<int16_t, int32_t>(c, in, out, indices, g, dtype); break;
    case DType::Int8: if (fits32) return MaxAll<int8_t, int32_t>(c, in, out, indices, g, dtype); break;
    case DType::Uint16: if (fits32) return MaxAll<uint16_t, int32_t>(c, in, out, indices, g, dtype); break;
    case DType::Uint8: if (fits32) return MaxAll<uint8_t, int32_t>(c, in, out, indices, g, dtype); break;
    case DType::Int64: return MaxAll<int64_t, int64_t>(c, in, out, indices, g, dtype);
    case DType::Uint32: return MaxAll<uint32_t, int64_t>(c, in, out, indices, g, dtype);
    default: break;
  }
  Reference().PoolNd_MaxPoolNd(c, in, out, indices, planes, dtype);
}

void AvgPoolNd(const PoolNdConfig& c, const void* in, void* out, int64_t* indices, int64_t planes, DType dtype) {
  const Geometry g =
      ref::pool_nd::BuildPoolNdGeometry("PoolNd.AvgPoolNd", c, in, out, indices, planes, dtype, kFloatDTypes, false);
  if (g.planes == 0 || g.planeOut == 0) return;
  const auto lanes = static_cast<size_t>(HWY_DYNAMIC_DISPATCH(PoolNdLanes)(8));
  const auto& W = g.axes[2];
  std::vector<double> countW(static_cast<size_t>(W.out) + lanes, 1.0);
  for (int64_t o = 0; o < W.out; ++o) {
    countW[static_cast<size_t>(o)] =
        static_cast<double>(c.CountIncludePad ? W.padded[static_cast<size_t>(o)] : W.Count(o));
  }
  const auto planeIn = static_cast<size_t>(g.planeIn), planeOut = static_cast<size_t>(g.planeOut);
  const LastAxis w = LastAxisOf(c);
  ParallelFor(g.planes, PlaneGrain(g), [&](int64_t b, int64_t e) {
    auto work = hwy::AllocateAligned<double>(dtype == DType::Float64 ? 1 : planeIn);
    auto y = hwy::AllocateAligned<double>(planeOut + lanes);
    for (int64_t p = b; p < e; ++p) {
      const size_t first = static_cast<size_t>(p) * planeIn;
      const double* x = work.get();
      if (dtype == DType::Float64) {
        x = static_cast<const double*>(in) + first;
      } else {
        for (size_t i = 0; i < planeIn; ++i) work[i] = LoadAsDouble(in, first + i, dtype);
      }
      HWY_DYNAMIC_DISPATCH(PoolNdAvg)(x, y.get(), countW.data(), g, w, c.CountIncludePad);
      StoreRounded(y.get(), out, static_cast<size_t>(p) * planeOut, planeOut, dtype);
    }
  });
}

}  // namespace

void RegisterPoolNd(KernelTable& table) {
  table.PoolNd_MaxPoolNd = &MaxPoolNd;
  table.PoolNd_AvgPoolNd = &AvgPoolNd;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
