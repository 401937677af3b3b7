// Tests of the Spatial methods (GridSample, RoiAlign): the float64 NumPy goldens of
// tests/golden/gen_spatial.py on the reference table and through the CPU Backend (the Highway
// GridSample kernel for f32/f64), every dtype with a stated tolerance; closed-form cases (NaN and
// infinite grid points, nearest's ties to even, ONNX's max of weighted corners); and the
// validation paths, which name the method and argument and write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/backend/spatial.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "cpu/reference/reference.hpp"
#include "support/golden.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::ThrowsError;

SpatialSurface& Fast() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Spatial();
}
const cpu::KernelTable& Ref() { return cpu::ref::Table(); }

const json& Golden() {
  static const json data = test::LoadGolden("spatial.json");
  return data;
}

// |got - want| <= tol (1 + |want|): f64 computes in f64; f32 in f32 (a few ulp of the O(1) sums);
// f16 / bf16 in f32 and round once on store (half an ulp: 2^-11, 2^-8), plus the f32 compute.
double Tol(DType dt) {
  switch (dt) {
    case DType::Float64: return 1e-12;
    case DType::Float32: return 2e-5;
    case DType::Float16: return 2e-3;
    default: return 1.6e-2;
  }
}

std::vector<double> Doubles(const json& v) { return v.get<std::vector<double>>(); }

// The first mismatch (index, got, want), or "" when every element is within the tolerance.
std::string Mismatch(const test::Buffer& got, const std::vector<double>& want, DType dt) {
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.Get(static_cast<int64_t>(i));
    if (!(std::fabs(g - want[i]) <= Tol(dt) * (1.0 + std::fabs(want[i])))) {
      return "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(want[i]);
    }
  }
  return "";
}

GridSampleConfig GridConfigOf(const json& r) {
  GridSampleConfig c;
  const std::string mode = r.at("mode"), pad = r.at("padding");
  c.Mode = mode == "bilinear" ? GridSampleMode::Bilinear : mode == "nearest" ? GridSampleMode::Nearest : GridSampleMode::Bicubic;
  c.Padding = pad == "zeros" ? GridSamplePadding::Zeros : pad == "border" ? GridSamplePadding::Border : GridSamplePadding::Reflection;
  c.AlignCorners = r.at("align_corners").get<bool>();
  return c;
}

TEST(SpatialGolden, GridSampleEveryModePaddingAndDType) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "GridSample") continue;
    const DType dt = test::DTypeOf(c);
    const auto s = c.at("shape").get<std::vector<int64_t>>();
    const auto o = c.at("out_hw").get<std::vector<int64_t>>();
    const test::Buffer x = test::Input(dt, c.at("x")), grid = test::Input(dt, c.at("grid"));
    for (const json& r : c.at("results")) {
      const GridSampleConfig cfg = GridConfigOf(r);
      const std::vector<double> want = Doubles(r.at("y"));
      for (const bool fast : {false, true}) {
        test::Buffer y = test::Poisoned(dt, static_cast<int64_t>(want.size()));
        if (fast) {
          Fast().GridSample(cfg, x.data(), grid.data(), y.data(), s[0], s[1], s[2], s[3], o[0], o[1], dt);
        } else {
          Ref().Spatial_GridSample(cfg, x.data(), grid.data(), y.data(), s[0], s[1], s[2], s[3], o[0], o[1], dt);
        }
        EXPECT_EQ(Mismatch(y, want, dt), "") << c.at("dtype") << " " << c.at("shape") << " " << r.at("mode") << " "
                                             << r.at("padding") << " align " << r.at("align_corners")
                                             << (fast ? " (backend)" : " (reference)");
        ++n;
      }
    }
  }
  EXPECT_EQ(n, 4 * 5 * 18 * 2);
}

TEST(SpatialGolden, RoiAlignAvgAndMaxEveryDType) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "RoiAlign") continue;
    const DType dt = test::DTypeOf(c);
    const auto s = c.at("shape").get<std::vector<int64_t>>();
    const auto o = c.at("output").get<std::vector<int64_t>>();
    const test::Buffer x = test::Input(dt, c.at("x")), rois = test::Input(dt, c.at("rois"));
    const auto batch = c.at("batch_indices").get<std::vector<int64_t>>();
    RoiAlignConfig cfg;
    cfg.Mode = c.at("mode") == "max" ? RoiAlignMode::Max : RoiAlignMode::Avg;
    cfg.OutputHeight = o[0];
    cfg.OutputWidth = o[1];
    cfg.SamplingRatio = c.at("sampling_ratio").get<int64_t>();
    cfg.SpatialScale = c.at("spatial_scale").get<double>();
    cfg.HalfPixel = c.at("half_pixel").get<bool>();
    const std::vector<double> want = Doubles(c.at("y"));
    for (const bool fast : {false, true}) {
      test::Buffer y = test::Poisoned(dt, static_cast<int64_t>(want.size()));
      const auto r = static_cast<int64_t>(batch.size());
      if (fast) {
        Fast().RoiAlign(cfg, x.data(), rois.data(), batch.data(), y.data(), s[0], s[1], s[2], s[3], r, dt);
      } else {
        Ref().Spatial_RoiAlign(cfg, x.data(), rois.data(), batch.data(), y.data(), s[0], s[1], s[2], s[3], r, dt);
      }
      EXPECT_EQ(Mismatch(y, want, dt), "") << c.at("dtype") << " " << c.at("shape") << " " << c.at("mode")
                                           << " half_pixel " << c.at("half_pixel");
      ++n;
    }
  }
  EXPECT_EQ(n, 4 * 4 * 4 * 2);
}

// Closed form: a 1x1x2x3 map [[0, 1, 2], [3, 4, 5]] sampled at pixel coordinates.
TEST(SpatialGridSample, NearestTiesToEvenAndNonFiniteGridPoints) {
  for (const DType dt : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    const test::Buffer x = test::FromDoubles(dt, {0, 1, 2, 3, 4, 5});
    // align_corners: x = (gx + 1) / 2 * 2, y = (gy + 1) / 2 * 1. Pixel x 0.5 -> 0, 1.5 -> 2, y 0.5 -> 0.
    const double inf = std::numeric_limits<double>::infinity();
    const test::Buffer grid = test::FromDoubles(dt, {-0.5, 0.0, 0.5, 0.0, 0.5, 1.0, NAN, 0.0, 0.0, inf});
    for (const bool fast : {false, true}) {
      test::Buffer y = test::Poisoned(dt, 5);
      const GridSampleConfig cfg{GridSampleMode::Nearest, GridSamplePadding::Zeros, true};
      if (fast) {
        Fast().GridSample(cfg, x.data(), grid.data(), y.data(), 1, 1, 2, 3, 1, 5, dt);
      } else {
        Ref().Spatial_GridSample(cfg, x.data(), grid.data(), y.data(), 1, 1, 2, 3, 1, 5, dt);
      }
      EXPECT_EQ(y.Get(0), 0.0) << DTypeName(dt);
      EXPECT_EQ(y.Get(1), 2.0) << DTypeName(dt);
      EXPECT_EQ(y.Get(2), 5.0) << DTypeName(dt);  // y 1 -> row 1, x 1.5 -> 2
      EXPECT_TRUE(std::isnan(y.Get(3))) << DTypeName(dt);
      EXPECT_TRUE(std::isnan(y.Get(4))) << DTypeName(dt);
    }
  }
}

TEST(SpatialGridSample, BilinearZerosFadesAtTheBorder) {
  // align_corners false on a 1x1 map of 8: pixel x = gx / 2. The centre (weight 1), half a pixel
  // to the right (weight 1/2 on the only tap inside), a full pixel (0).
  const test::Buffer x = test::FromDoubles(DType::Float32, {8});
  const test::Buffer grid = test::FromDoubles(DType::Float32, {0.0, 0.0, 1.0, 0.0, 2.0, 0.0});
  for (const bool fast : {false, true}) {
    test::Buffer y = test::Poisoned(DType::Float32, 3);
    const GridSampleConfig cfg{};
    if (fast) {
      Fast().GridSample(cfg, x.data(), grid.data(), y.data(), 1, 1, 1, 1, 1, 3, DType::Float32);
    } else {
      Ref().Spatial_GridSample(cfg, x.data(), grid.data(), y.data(), 1, 1, 1, 1, 1, 3, DType::Float32);
    }
    EXPECT_EQ(y.Get(0), 8.0);
    EXPECT_EQ(y.Get(1), 4.0);
    EXPECT_EQ(y.Get(2), 0.0);
  }
}

TEST(SpatialRoiAlign, MaxTakesTheLargestWeightedCornerTerm) {
  // A 1x1x2x2 map [[1, 2], [3, 4]] and one roi whose single sample (sampling_ratio 1, output 1x1)
  // sits at (0.5, 0.5): the corner terms are 1/4 of each value, so max = 1, avg = 2.5.
  const test::Buffer x = test::FromDoubles(DType::Float64, {1, 2, 3, 4});
  const test::Buffer rois = test::FromDoubles(DType::Float64, {0, 0, 1, 1});
  const std::vector<int64_t> batch = {0};
  RoiAlignConfig cfg;
  cfg.SamplingRatio = 1;
  cfg.HalfPixel = false;
  for (const auto mode : {RoiAlignMode::Max, RoiAlignMode::Avg}) {
    cfg.Mode = mode;
    test::Buffer y = test::Poisoned(DType::Float64, 1);
    Ref().Spatial_RoiAlign(cfg, x.data(), rois.data(), batch.data(), y.data(), 1, 1, 2, 2, 1, DType::Float64);
    EXPECT_EQ(y.Get(0), mode == RoiAlignMode::Max ? 1.0 : 2.5);
  }
}

TEST(SpatialErrors, NameTheMethodAndArgumentAndWriteNothing) {
  const test::Buffer x = test::FromDoubles(DType::Float32, {1, 2, 3, 4});
  const test::Buffer grid = test::FromDoubles(DType::Float32, {0, 0});
  test::Buffer y = test::Poisoned(DType::Float32, 4);
  auto grid_call = [&](GridSampleConfig cfg, int64_t inH, DType dt) {
    return [&, cfg, inH, dt] { Fast().GridSample(cfg, x.data(), grid.data(), y.data(), 1, 1, inH, 2, 1, 1, dt); };
  };
  EXPECT_TRUE(ThrowsError(grid_call(GridSampleConfig{static_cast<GridSampleMode>(7)}, 2, DType::Float32),
                          ErrorCode::InvalidArgument, {"Spatial.GridSample", "config.Mode", "Bilinear, Nearest or Bicubic"}));
  EXPECT_TRUE(ThrowsError(
      grid_call(GridSampleConfig{GridSampleMode::Bilinear, static_cast<GridSamplePadding>(7)}, 2, DType::Float32),
      ErrorCode::InvalidArgument, {"Spatial.GridSample", "config.Padding"}));
  EXPECT_TRUE(ThrowsError(grid_call(GridSampleConfig{}, -1, DType::Float32), ErrorCode::InvalidArgument,
                          {"Spatial.GridSample", "inH"}));
  EXPECT_TRUE(ThrowsError(grid_call(GridSampleConfig{}, 0, DType::Float32), ErrorCode::InvalidArgument,
                          {"Spatial.GridSample", "inH, inW", "> 0 when there is output"}));
  EXPECT_TRUE(ThrowsError(grid_call(GridSampleConfig{}, 2, DType::Int32), ErrorCode::UnsupportedDType,
                          {"Spatial.GridSample", "dtype"}));
  const test::Buffer rois = test::FromDoubles(DType::Float32, {0, 0, 1, 1});
  RoiAlignConfig cfg;
  auto roi_call = [&](RoiAlignConfig c, std::vector<int64_t> batch) {
    return [&, c, batch] { Fast().RoiAlign(c, x.data(), rois.data(), batch.data(), y.data(), 1, 1, 2, 2, 1, DType::Float32); };
  };
  EXPECT_TRUE(ThrowsError(roi_call(cfg, {1}), ErrorCode::InvalidArgument,
                          {"Spatial.RoiAlign", "batchIndices", "in [0, 1)", "1 at element 0"}));
  EXPECT_TRUE(ThrowsError(roi_call(cfg, {-1}), ErrorCode::InvalidArgument, {"Spatial.RoiAlign", "batchIndices"}));
  RoiAlignConfig bad = cfg;
  bad.OutputHeight = 0;
  EXPECT_TRUE(ThrowsError(roi_call(bad, {0}), ErrorCode::InvalidArgument, {"Spatial.RoiAlign", "config.OutputHeight"}));
  bad = cfg;
  bad.SamplingRatio = -2;
  EXPECT_TRUE(ThrowsError(roi_call(bad, {0}), ErrorCode::InvalidArgument, {"Spatial.RoiAlign", "config.SamplingRatio"}));
  bad = cfg;
  bad.Mode = static_cast<RoiAlignMode>(5);
  EXPECT_TRUE(ThrowsError(roi_call(bad, {0}), ErrorCode::InvalidArgument, {"Spatial.RoiAlign", "config.Mode", "Avg or Max"}));
  bad = cfg;
  bad.SpatialScale = NAN;
  EXPECT_TRUE(ThrowsError(roi_call(bad, {0}), ErrorCode::InvalidArgument, {"Spatial.RoiAlign", "config.SpatialScale"}));
  EXPECT_TRUE(y.IsPoisoned());
}

}  // namespace
}  // namespace backplane
