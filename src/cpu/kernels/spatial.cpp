// Highway kernel of the Spatial surface: GridSample, bilinear and nearest, on f32 and f64.
// - One vector holds consecutive output pixels of a grid row: the (x, y) pairs are deinterleaved,
//   unnormalised, padded (border clip; reflection with the reference's floor-based remainder),
//   floored or rounded (half to even) and weighted in lanes, once per row chunk for all channels.
//   Corner taps are gathered (GatherIndex) from each channel plane with out-of-range taps masked
//   to index 0 and value 0. Flat tap indices are formed in the float type, exact because the
//   plane is at most 2^24 (f32) or 2^53 (f64) elements.
// - The operations and their order are the reference's, and both files are compiled with
//   -ffp-contract=off (CMakeLists.txt), so results are bit-identical to it.
// Bicubic, f16/bf16, planes beyond the exact index range and every invalid call go to the
// reference, so errors are identical. RoiAlign stays on the reference by design (reason below).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/spatial.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#ifndef BACKPLANE_CPU_KERNELS_SPATIAL_SHARED_
#define BACKPLANE_CPU_KERNELS_SPATIAL_SHARED_
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace backplane::cpu::simd::spatial_ops {
// One call's geometry and modes, shared by every row.
struct GridJob {
  bool nearest = false;
  int padding = 0;  // GridSamplePadding
  bool alignCorners = false;
  int64_t channels = 0, inH = 0, inW = 0, outH = 0, outW = 0;
};
}  // namespace backplane::cpu::simd::spatial_ops
#endif  // BACKPLANE_CPU_KERNELS_SPATIAL_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace spatial_ops;  // NOLINT

// The reference's Unnormalize, Pad and Reflect in lanes of T.
template <class T>
struct Axis {
  int64_t size;
  bool align;
  int padding;

  template <class D, class V>
  HWY_INLINE V Unnormalize(D d, V g) const {
    const T s = static_cast<T>(size);
    if (align) return hn::Mul(hn::Div(hn::Add(g, hn::Set(d, T(1))), hn::Set(d, T(2))), hn::Set(d, s - T(1)));
    return hn::Div(hn::Sub(hn::Mul(hn::Add(g, hn::Set(d, T(1))), hn::Set(d, s)), hn::Set(d, T(1))), hn::Set(d, T(2)));
  }

  template <class D, class V>
  HWY_INLINE V Reflect(D d, V in, T twiceLow, T twiceHigh) const {
    if (twiceLow == twiceHigh) return hn::Zero(d);
    const T low = twiceLow / T(2);
    const T span = (twiceHigh - twiceLow) / T(2);
    in = hn::Abs(hn::Sub(in, hn::Set(d, low)));
    const V flips = hn::Floor(hn::Div(in, hn::Set(d, span)));
    const V extra = hn::Sub(in, hn::Mul(flips, hn::Set(d, span)));
    const V half = hn::Floor(hn::Mul(flips, hn::Set(d, T(0.5))));
    const auto even = hn::Eq(hn::Sub(flips, hn::Add(half, half)), hn::Zero(d));
    return hn::IfThenElse(even, hn::Add(extra, hn::Set(d, low)),
                          hn::Add(hn::Sub(hn::Set(d, span), extra), hn::Set(d, low)));
  }

  template <class D, class V>
  HWY_INLINE V Pad(D d, V c) const {
    const T hi = static_cast<T>(size - 1);
    if (padding == 1) return hn::Min(hn::Max(c, hn::Zero(d)), hn::Set(d, hi));
    if (padding == 2) {
      const T s = static_cast<T>(size);
      c = align ? Reflect(d, c, T(0), T(2) * hi) : Reflect(d, c, T(-1), T(2) * s - T(1));
      return hn::Min(hn::Max(c, hn::Zero(d)), hn::Set(d, hi));
    }
    return c;
  }
};

// Round half to even for every target (HWY_SCALAR's Round adds 0.5 and truncates): adding and
// subtracting 2^mantissa rounds in the current (nearest-even) mode; larger values are integers.
template <class D, class V>
HWY_INLINE V RoundEven(D d, V v) {
  const V max = hn::Set(d, hwy::MantissaEnd<hn::TFromD<D>>());
  const V large = hn::CopySignToAbs(max, v);
  return hn::IfThenElse(hn::Lt(hn::Abs(v), max), hn::Sub(hn::Add(large, v), large), v);
}

// One tap: the plane value at integral (x, y), 0 outside the plane.
template <class D, class V, class P>
HWY_INLINE V TapOf(D d, const hn::TFromD<D>* plane, V x, V y, P valid, V width) {
  const hn::RebindToSigned<D> di;
  const V flat = hn::Add(hn::Mul(hn::IfThenElseZero(valid, y), width), hn::IfThenElseZero(valid, x));
  return hn::IfThenElseZero(valid, hn::GatherIndex(d, plane, hn::ConvertTo(di, flat)));
}

// Rows [rowBegin, rowEnd) of the [batch * outH] output rows.
template <class T>
void GridRows(const GridJob& job, const T* in, const T* grid, T* out, int64_t rowBegin, int64_t rowEnd) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const Axis<T> ax{job.inW, job.alignCorners, job.padding}, ay{job.inH, job.alignCorners, job.padding};
  const V width = hn::Set(d, static_cast<T>(job.inW));
  const V hiX = hn::Set(d, static_cast<T>(job.inW - 1)), hiY = hn::Set(d, static_cast<T>(job.inH - 1));
  const V zero = hn::Zero(d), one = hn::Set(d, T(1)), nan = hn::Set(d, std::numeric_limits<T>::quiet_NaN());
  const int64_t plane = job.inH * job.inW, outPlane = job.outH * job.outW;
  HWY_ALIGN T pairs[2 * hn::MaxLanes(d)];
  HWY_ALIGN T tail[hn::MaxLanes(d)];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const int64_t n = row / job.outH, h = row % job.outH;
    const T* g = grid + row * job.outW * 2;
    for (int64_t w = 0; w < job.outW; w += static_cast<int64_t>(lanes)) {
      const auto count = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(lanes), job.outW - w));
      V gx, gy;
      if (count == lanes) {
        hn::LoadInterleaved2(d, g + 2 * w, gx, gy);
      } else {
        std::fill(pairs, pairs + 2 * lanes, T(0));
        std::copy(g + 2 * w, g + 2 * w + 2 * static_cast<int64_t>(count), pairs);
        hn::LoadInterleaved2(d, pairs, gx, gy);
      }
      const V ux = ax.Unnormalize(d, gx), uy = ay.Unnormalize(d, gy);
      const auto bad = hn::Not(hn::And(hn::IsFinite(ux), hn::IsFinite(uy)));
      const V ix = ax.Pad(d, ux), iy = ay.Pad(d, uy);
      // Tap coordinates and weights, shared by every channel (nearest uses (x0, y0) only).
      const V x0 = job.nearest ? RoundEven(d, ix) : hn::Floor(ix);
      const V y0 = job.nearest ? RoundEven(d, iy) : hn::Floor(iy);
      const V x1 = hn::Add(x0, one), y1 = hn::Add(y0, one);
      const V wx1 = hn::Sub(ix, x0), wx0 = hn::Sub(x1, ix), wy1 = hn::Sub(iy, y0), wy0 = hn::Sub(y1, iy);
      const V w00 = hn::Mul(wx0, wy0), w10 = hn::Mul(wx1, wy0), w01 = hn::Mul(wx0, wy1), w11 = hn::Mul(wx1, wy1);
      const auto inX0 = hn::And(hn::Ge(x0, zero), hn::Le(x0, hiX));
      const auto inY0 = hn::And(hn::Ge(y0, zero), hn::Le(y0, hiY));
      const auto inX1 = hn::And(hn::Ge(x1, zero), hn::Le(x1, hiX));
      const auto inY1 = hn::And(hn::Ge(y1, zero), hn::Le(y1, hiY));
      const auto v00 = hn::And(inX0, inY0), v10 = hn::And(inX1, inY0);
      const auto v01 = hn::And(inX0, inY1), v11 = hn::And(inX1, inY1);
      for (int64_t c = 0; c < job.channels; ++c) {
        const T* p = in + (n * job.channels + c) * plane;
        V value = zero;
        if (job.nearest) {
          value = TapOf(d, p, x0, y0, v00, width);
        } else {
          value = hn::Add(value, hn::Mul(TapOf(d, p, x0, y0, v00, width), w00));
          value = hn::Add(value, hn::Mul(TapOf(d, p, x1, y0, v10, width), w10));
          value = hn::Add(value, hn::Mul(TapOf(d, p, x0, y1, v01, width), w01));
          value = hn::Add(value, hn::Mul(TapOf(d, p, x1, y1, v11, width), w11));
        }
        value = hn::IfThenElse(bad, nan, value);
        T* o = out + (n * job.channels + c) * outPlane + h * job.outW + w;
        if (count == lanes) {
          hn::StoreU(value, d, o);
        } else {
          hn::Store(value, d, tail);
          std::copy(tail, tail + count, o);
        }
      }
    }
  }
}

void SpatialGridRows(bool f64, const GridJob& job, const void* in, const void* grid, void* out, int64_t rowBegin,
                     int64_t rowEnd) {
  if (f64) {
    GridRows(job, static_cast<const double*>(in), static_cast<const double*>(grid), static_cast<double*>(out),
             rowBegin, rowEnd);
  } else {
    GridRows(job, static_cast<const float*>(in), static_cast<const float*>(grid), static_cast<float*>(out), rowBegin,
             rowEnd);
  }
}

}  // namespace
}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "backplane/backend/spatial.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(SpatialGridRows);

namespace {
using namespace spatial_ops;  // NOLINT

bool Mul(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

void GridSample(const GridSampleConfig& config, const void* in, const void* grid, void* out, int64_t batch,
                int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const bool f64 = dtype == DType::Float64;
  const bool mode = config.Mode == GridSampleMode::Bilinear || config.Mode == GridSampleMode::Nearest;
  const bool padding = config.Padding == GridSamplePadding::Zeros || config.Padding == GridSamplePadding::Border ||
                       config.Padding == GridSamplePadding::Reflection;
  int64_t plane = 0, rows = 0, inCount = 0, outCount = 0, bits = 0;
  const int64_t exact = f64 ? (int64_t{1} << 53) : (int64_t{1} << 24);
  const bool usual = (f64 || dtype == DType::Float32) && mode && padding && batch > 0 && channels > 0 && inH > 0 &&
                     inW > 0 && outH > 0 && outW > 0 && Mul(inH, inW, plane) && plane <= exact &&
                     Mul(batch, outH, rows) && Mul(rows, outW, outCount) && Mul(outCount, 2, bits) &&
                     Mul(outCount, channels, outCount) && Mul(outCount, 64, bits) && Mul(plane, channels, inCount) &&
                     Mul(inCount, batch, inCount) && Mul(inCount, 64, bits) && in != nullptr && grid != nullptr &&
                     out != nullptr;
  if (!usual) {
    return Reference().Spatial_GridSample(config, in, grid, out, batch, channels, inH, inW, outH, outW, dtype);
  }
  const GridJob job{config.Mode == GridSampleMode::Nearest, static_cast<int>(config.Padding), config.AlignCorners,
                    channels, inH, inW, outH, outW};
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(outW * channels, 1));
  ParallelFor(rows, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(SpatialGridRows)(f64, job, in, grid, out, b, e);
  });
}

}  // namespace

void RegisterSpatial(KernelTable& table) {
  table.Spatial_GridSample = &GridSample;
  table.ScalarByDesign(catalog::MethodId::Spatial_RoiAlign,
                       "per-ROI sampling grids (adaptive size per ROI) of four-corner bilinear taps: "
                       "index-chasing gathers with a data-dependent trip count per bin, no fixed lane-parallel work");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
