// Scalar reference kernels of the Spatial surface: GridSample and RoiAlign.
// Semantics: docs/semantics/spatial.md.
//
// Both compute in the compute type (f64 for f64, f32 for f32/f16/bf16) and round once on store.
// GridSample follows torch.nn.functional.grid_sample (4-D), RoiAlign the ONNX RoiAlign-16 reference.
// The arithmetic of GridSample's bilinear and nearest paths is written as the Highway kernel does
// it (same operations, same order; -ffp-contract=off for both files), so that kernel matches bit
// for bit. Every
// argument is checked before anything is written.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "backplane/backend/spatial.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace spatial {
namespace {

// The product of sizes >= 0; InvalidArgument naming `arg` when it (or its size in bits) overflows.
int64_t CountOf(std::string_view op, std::string_view arg, std::initializer_list<int64_t> sizes) {
  for (const int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t n = 1;
  for (const int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n)) {
      n = -1;
      break;
    }
  }
  int64_t bits = 0;
  if (n < 0 || __builtin_mul_overflow(n, int64_t{64}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64", "an overflowing count");
  }
  return n;
}

void CheckSizes(std::string_view op, std::initializer_list<std::pair<std::string_view, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) CheckNonNegative(op, name, value);
}

// ---- GridSample ------------------------------------------------------------------------------------

// [-1, 1] to pixel coordinates (torch's grid_sampler_unnormalize).
template <class T>
T Unnormalize(T coord, int64_t size, bool alignCorners) {
  const T s = static_cast<T>(size);
  if (alignCorners) return ((coord + T(1)) / T(2)) * (s - T(1));
  return ((coord + T(1)) * s - T(1)) / T(2);
}

// Reflects `in` into [twiceLow / 2, twiceHigh / 2] (torch's reflect_coordinates, with the
// remainder written as in - floor(in / span) * span).
template <class T>
T Reflect(T in, T twiceLow, T twiceHigh) {
  if (twiceLow == twiceHigh) return T(0);
  const T low = twiceLow / T(2);
  const T span = (twiceHigh - twiceLow) / T(2);
  in = std::fabs(in - low);
  const T flips = std::floor(in / span);
  const T extra = in - flips * span;
  const bool even = std::fmod(flips, T(2)) == T(0);
  return even ? extra + low : span - extra + low;
}

// The padding rule on a pixel coordinate (torch's compute_coordinates).
template <class T>
T Pad(T coord, int64_t size, GridSamplePadding padding, bool alignCorners) {
  const T hi = static_cast<T>(size - 1);
  if (padding == GridSamplePadding::Border) return std::min(std::max(coord, T(0)), hi);
  if (padding == GridSamplePadding::Reflection) {
    const T s = static_cast<T>(size);
    coord = alignCorners ? Reflect(coord, T(0), T(2) * hi) : Reflect(coord, T(-1), T(2) * s - T(1));
    return std::min(std::max(coord, T(0)), hi);
  }
  return coord;
}

// Tap (x, y) of a plane (integral coordinates as T), 0 outside it.
template <class T>
T Tap(const void* in, DType dtype, int64_t base, int64_t h, int64_t w, T x, T y) {
  if (!(x >= T(0) && x <= static_cast<T>(w - 1) && y >= T(0) && y <= static_cast<T>(h - 1))) return T(0);
  return Load<T>(in, base + static_cast<int64_t>(y) * w + static_cast<int64_t>(x), dtype);
}

template <class T>
T CubicCoefficient(T x, int tap) {
  constexpr T A = T(-0.75);
  auto near = [&](T t) { return ((A + T(2)) * t - (A + T(3))) * t * t + T(1); };
  auto far = [&](T t) { return ((A * t - T(5) * A) * t + T(8) * A) * t - T(4) * A; };
  switch (tap) {
    case 0: return far(x + T(1));
    case 1: return near(x);
    case 2: return near(T(1) - x);
    default: return far((T(1) - x) + T(1));
  }
}

// Bicubic: 4x4 taps around floor(coordinate) of the unpadded coordinate; each tap coordinate is
// padded on its own (torch's get_value_bounded).
template <class T>
T Bicubic(const GridSampleConfig& cfg, const void* in, DType dtype, int64_t base, int64_t h, int64_t w, T ix, T iy) {
  const T x0 = std::floor(ix), y0 = std::floor(iy);
  const T tx = ix - x0, ty = iy - y0;
  T rows[4];
  for (int i = 0; i < 4; ++i) {
    T acc = T(0);
    for (int j = 0; j < 4; ++j) {
      const T px = Pad(x0 - T(1) + static_cast<T>(j), w, cfg.Padding, cfg.AlignCorners);
      const T py = Pad(y0 - T(1) + static_cast<T>(i), h, cfg.Padding, cfg.AlignCorners);
      acc = acc + Tap<T>(in, dtype, base, h, w, std::trunc(px), std::trunc(py)) * CubicCoefficient(tx, j);
    }
    rows[i] = acc;
  }
  T acc = T(0);
  for (int i = 0; i < 4; ++i) acc = acc + rows[i] * CubicCoefficient(ty, i);
  return acc;
}

void GridSample(const GridSampleConfig& config, const void* in, const void* grid, void* out, int64_t batch,
                int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Spatial.GridSample";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  if (config.Mode != GridSampleMode::Bilinear && config.Mode != GridSampleMode::Nearest &&
      config.Mode != GridSampleMode::Bicubic) {
    ThrowInvalidArgument(kOp, "config.Mode", "Bilinear, Nearest or Bicubic",
                         fmt::format("{}", static_cast<int32_t>(config.Mode)));
  }
  if (config.Padding != GridSamplePadding::Zeros && config.Padding != GridSamplePadding::Border &&
      config.Padding != GridSamplePadding::Reflection) {
    ThrowInvalidArgument(kOp, "config.Padding", "Zeros, Border or Reflection",
                         fmt::format("{}", static_cast<int32_t>(config.Padding)));
  }
  CheckSizes(kOp, {{"batch", batch}, {"channels", channels}, {"inH", inH}, {"inW", inW}, {"outH", outH},
                   {"outW", outW}});
  const int64_t inCount = CountOf(kOp, "inW", {batch, channels, inH, inW});
  const int64_t gridCount = CountOf(kOp, "outW", {batch, outH, outW, 2});
  const int64_t outCount = CountOf(kOp, "outW", {batch, channels, outH, outW});
  if (outCount > 0 && (inH == 0 || inW == 0)) ThrowInvalidArgument(kOp, "inH, inW", "> 0 when there is output", "0");
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "grid", grid, gridCount);
  CheckPointer(kOp, "out", out, outCount);
  if (outCount == 0) return;
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    const bool align = config.AlignCorners;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t p = 0; p < outH * outW; ++p) {
        const int64_t g = (n * outH * outW + p) * 2;
        const T gx = Load<T>(grid, g, dtype), gy = Load<T>(grid, g + 1, dtype);
        const T ux = Unnormalize(gx, inW, align), uy = Unnormalize(gy, inH, align);
        const bool finite = std::isfinite(ux) && std::isfinite(uy);
        const T ix = Pad(ux, inW, config.Padding, align), iy = Pad(uy, inH, config.Padding, align);
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t base = (n * channels + c) * inH * inW;
          T value = std::numeric_limits<T>::quiet_NaN();
          if (finite && config.Mode == GridSampleMode::Nearest) {
            value = Tap<T>(in, dtype, base, inH, inW, std::nearbyint(ix), std::nearbyint(iy));
          } else if (finite && config.Mode == GridSampleMode::Bilinear) {
            const T x0 = std::floor(ix), y0 = std::floor(iy);
            const T x1 = x0 + T(1), y1 = y0 + T(1);
            const T wx1 = ix - x0, wx0 = x1 - ix, wy1 = iy - y0, wy0 = y1 - iy;
            value = T(0);
            value = value + Tap<T>(in, dtype, base, inH, inW, x0, y0) * (wx0 * wy0);
            value = value + Tap<T>(in, dtype, base, inH, inW, x1, y0) * (wx1 * wy0);
            value = value + Tap<T>(in, dtype, base, inH, inW, x0, y1) * (wx0 * wy1);
            value = value + Tap<T>(in, dtype, base, inH, inW, x1, y1) * (wx1 * wy1);
          } else if (finite) {
            value = Bicubic<T>(config, in, dtype, base, inH, inW, ux, uy);
          }
          Store<T>(out, (n * channels + c) * outH * outW + p, dtype, value);
        }
      }
    }
  });
}

// ---- RoiAlign --------------------------------------------------------------------------------------

// One bilinear sample point of the ONNX reference: four flat positions and weights (all zero
// outside [-1, height] x [-1, width]).
template <class T>
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  T w[4] = {T(0), T(0), T(0), T(0)};
};

template <class T>
Sample<T> SampleAt(T y, T x, int64_t height, int64_t width) {
  Sample<T> s;
  if (y < T(-1) || y > static_cast<T>(height) || x < T(-1) || x > static_cast<T>(width)) return s;
  y = std::max(y, T(0));
  x = std::max(x, T(0));
  auto yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x);
  int64_t yHigh = yLow + 1, xHigh = xLow + 1;
  if (yLow >= height - 1) {
    yHigh = yLow = height - 1;
    y = static_cast<T>(yLow);
  }
  if (xLow >= width - 1) {
    xHigh = xLow = width - 1;
    x = static_cast<T>(xLow);
  }
  const T ly = y - static_cast<T>(yLow), lx = x - static_cast<T>(xLow);
  const T hy = T(1) - ly, hx = T(1) - lx;
  s.pos[0] = yLow * width + xLow;
  s.pos[1] = yLow * width + xHigh;
  s.pos[2] = yHigh * width + xLow;
  s.pos[3] = yHigh * width + xHigh;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// Adaptive grids: ceil(roi / out) samples per bin, bounded so one bin's grid stays countable.
constexpr int64_t kMaxGrid = int64_t{1} << 20;

void RoiAlign(const RoiAlignConfig& config, const void* in, const void* rois, const int64_t* batchIndices, void* out,
              int64_t batch, int64_t channels, int64_t height, int64_t width, int64_t numRois, DType dtype) {
  constexpr std::string_view kOp = "Spatial.RoiAlign";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  if (config.Mode != RoiAlignMode::Avg && config.Mode != RoiAlignMode::Max) {
    ThrowInvalidArgument(kOp, "config.Mode", "Avg or Max", fmt::format("{}", static_cast<int32_t>(config.Mode)));
  }
  CheckPositive(kOp, "config.OutputHeight", config.OutputHeight);
  CheckPositive(kOp, "config.OutputWidth", config.OutputWidth);
  CheckNonNegative(kOp, "config.SamplingRatio", config.SamplingRatio);
  if (config.SamplingRatio > kMaxGrid) {
    ThrowInvalidArgument(kOp, "config.SamplingRatio", fmt::format("at most {}", kMaxGrid),
                         fmt::format("{}", config.SamplingRatio));
  }
  CheckFinite(kOp, "config.SpatialScale", config.SpatialScale);
  CheckSizes(kOp, {{"batch", batch}, {"channels", channels}, {"height", height}, {"width", width},
                   {"numRois", numRois}});
  const int64_t inCount = CountOf(kOp, "width", {batch, channels, height, width});
  const int64_t roiCount = CountOf(kOp, "numRois", {numRois, 4});
  const int64_t outCount = CountOf(kOp, "config.OutputWidth", {numRois, channels, config.OutputHeight, config.OutputWidth});
  if (outCount > 0 && (height == 0 || width == 0)) {
    ThrowInvalidArgument(kOp, "height, width", "> 0 when there is output", "0");
  }
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "rois", rois, roiCount);
  CheckPointer(kOp, "batchIndices", batchIndices, numRois);
  CheckPointer(kOp, "out", out, outCount);
  for (int64_t r = 0; r < numRois; ++r) {
    if (batchIndices[r] < 0 || batchIndices[r] >= batch) {
      ThrowInvalidArgument(kOp, "batchIndices", fmt::format("in [0, {})", batch),
                           fmt::format("{} at element {}", batchIndices[r], r));
    }
  }
  if (outCount == 0) return;
  WithComputeType(kOp, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    const int64_t oh = config.OutputHeight, ow = config.OutputWidth;
    const T scale = static_cast<T>(config.SpatialScale);
    const T offset = config.HalfPixel ? T(0.5) : T(0);
    // Samples per bin: the ratio, or ceil(size / out) for an adaptive grid (at least 0, bounded).
    auto gridOf = [&](T size, int64_t bins) -> int64_t {
      if (config.SamplingRatio > 0) return config.SamplingRatio;
      const T g = std::ceil(size / static_cast<T>(bins));
      if (!(g > T(0))) return 0;
      if (!(g <= static_cast<T>(kMaxGrid))) {
        ThrowInvalidArgument(kOp, "rois", fmt::format("small enough for at most {} adaptive samples per bin", kMaxGrid),
                             "a larger roi");
      }
      return static_cast<int64_t>(g);
    };
    std::vector<Sample<T>> samples;
    for (int64_t r = 0; r < numRois; ++r) {
      const T x1 = Load<T>(rois, r * 4, dtype) * scale - offset;
      const T y1 = Load<T>(rois, r * 4 + 1, dtype) * scale - offset;
      const T x2 = Load<T>(rois, r * 4 + 2, dtype) * scale - offset;
      const T y2 = Load<T>(rois, r * 4 + 3, dtype) * scale - offset;
      T roiW = x2 - x1, roiH = y2 - y1;
      if (!config.HalfPixel) {
        roiW = std::max(roiW, T(1));
        roiH = std::max(roiH, T(1));
      }
      const T binH = roiH / static_cast<T>(oh), binW = roiW / static_cast<T>(ow);
      const int64_t gh = gridOf(roiH, oh), gw = gridOf(roiW, ow);
      const int64_t count = std::max<int64_t>(gh * gw, 1);
      int64_t total = 0;
      if (__builtin_mul_overflow(oh * ow, gh * gw, &total) || total > (int64_t{1} << 26)) {
        ThrowInvalidArgument(kOp, "rois", "small enough for at most 2^26 samples per roi", "a larger roi");
      }
      samples.assign(static_cast<size_t>(total), Sample<T>{});
      size_t k = 0;
      for (int64_t ph = 0; ph < oh; ++ph) {
        for (int64_t pw = 0; pw < ow; ++pw) {
          for (int64_t iy = 0; iy < gh; ++iy) {
            const T y = y1 + static_cast<T>(ph) * binH +
                        (static_cast<T>(iy) + T(0.5)) * binH / static_cast<T>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const T x = x1 + static_cast<T>(pw) * binW +
                          (static_cast<T>(ix) + T(0.5)) * binW / static_cast<T>(gw);
              samples[k++] = SampleAt<T>(y, x, height, width);
            }
          }
        }
      }
      const int64_t b = batchIndices[r];
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t base = (b * channels + c) * height * width;
        k = 0;
        for (int64_t bin = 0; bin < oh * ow; ++bin) {
          T value = T(0);
          for (int64_t s = 0; s < gh * gw; ++s, ++k) {
            const Sample<T>& p = samples[k];
            T v[4];
            for (int q = 0; q < 4; ++q) v[q] = p.w[q] * Load<T>(in, base + p.pos[q], dtype);
            if (config.Mode == RoiAlignMode::Avg) {
              value = value + (v[0] + v[1] + v[2] + v[3]);
            } else {
              // ONNX's max: the largest weighted corner term over all sample points.
              const T m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
              value = s == 0 ? m : std::max(value, m);
            }
          }
          if (config.Mode == RoiAlignMode::Avg) value = value / static_cast<T>(count);
          Store<T>(out, (r * channels + c) * oh * ow + bin, dtype, value);
        }
      }
    }
  });
}

}  // namespace
}  // namespace spatial

void RegisterSpatial(KernelTable& table) {
  table.Spatial_GridSample = &spatial::GridSample;
  table.Spatial_RoiAlign = &spatial::RoiAlign;
}

}  // namespace backplane::cpu::ref
