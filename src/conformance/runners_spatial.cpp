// Runner for the Spatial family GridSample (RoiAlign is scalar by design: no fast kernel to compare).
//
// The fast kernel must equal the reference exactly (tolerance 0 in every dtype, NaN equal to NaN):
// it performs the reference's operations in the reference's order. Inputs carry specials (NaN,
// +-Inf, +-0, large values); grids mix uniform points in [-1.25, 1.25] with points on a 1/16
// lattice (exact rounding ties for nearest, taps exactly on the border), NaN and +-Inf, and values
// far outside. Every mode, padding and align_corners setting runs over widths from the size list,
// with 16 guard bytes after the output. Invalid calls must throw the reference's error unwritten.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using GridSampleFn = BP_RET_GridSample (*)(BP_PARAMS_GridSample);

struct GridCase {
  int64_t batch, channels, inH, inW, outH, outW;
};

std::vector<GridCase> GridCases(const RunContext& c) {
  std::vector<GridCase> cases;
  for (const int64_t n : c.sizes) {
    if (n == 0) {
      cases.push_back({2, 3, 4, 5, 2, 0});
      continue;
    }
    cases.push_back({2, 3, 5, n, 2, n});
    cases.push_back({1, 2, n % 7 + 1, 3, 1, n});
  }
  cases.push_back({2, 2, 9, 11, 64, 1000});  // many rows: several threaded chunks
  cases.push_back({1, 1, 1, 1, 3, 17});      // a single-pixel plane
  return cases;
}

// Grid coordinates: uniform, lattice, specials and far-out values by a seeded choice per element.
std::vector<uint8_t> Grid(const RunContext& c, DType dt, int64_t count, uint64_t seed) {
  std::vector<uint8_t> s = Inputs(c, dt, count, seed, 1.0, false);
  for (int64_t i = 0; i < count; ++i) {
    const auto bits = PhiloxBits(seed, 51, static_cast<uint64_t>(i));
    const double u = static_cast<double>(bits[0]) / 4294967296.0;
    double v = -1.25 + 2.5 * u;
    switch (bits[1] % 16) {
      case 0: case 1: case 2: case 3: v = std::round(v * 16.0) / 16.0; break;
      case 4: v = NAN; break;
      case 5: v = (bits[2] % 2 == 0) ? INFINITY : -INFINITY; break;
      case 6: v = (bits[2] % 2 == 0 ? 1.0 : -1.0) * (3.0 + 40.0 * u); break;
      case 7: v = (bits[2] % 2 == 0 ? 1.0 : -1.0) * 1e30; break;
      default: break;
    }
    StoreAsDouble(s, dt, i, v);
  }
  return s;
}

std::vector<uint8_t> Output(DType dt, int64_t count) {
  return std::vector<uint8_t>(DTypeStorageBytes(dt, count) + 16, kGuard);
}

Measure RunGridSample(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<GridSampleFn>(ref), fastFn = Unerase<GridSampleFn>(fast);
  for (const GridCase& k : GridCases(c)) {
    const int64_t inCount = k.batch * k.channels * k.inH * k.inW;
    const int64_t gridCount = k.batch * k.outH * k.outW * 2;
    const int64_t outCount = k.batch * k.channels * k.outH * k.outW;
    const auto grid = Grid(c, dt, gridCount, c.seed + static_cast<uint64_t>(gridCount));
    for (const InputSet& set : kInputSets) {
      const auto x = Inputs(c, dt, inCount, c.seed + 7 + static_cast<uint64_t>(inCount), 2.0, set.specials);
      for (const auto mode : {GridSampleMode::Bilinear, GridSampleMode::Nearest, GridSampleMode::Bicubic}) {
        if (mode == GridSampleMode::Bicubic && outCount > 20000) continue;  // reference on both sides
        for (const auto pad : {GridSamplePadding::Zeros, GridSamplePadding::Border, GridSamplePadding::Reflection}) {
          for (const bool align : {false, true}) {
            const GridSampleConfig cfg{mode, pad, align};
            const std::string where =
                fmt::format("[{}, {}, {}, {}] -> [{}, {}] {} mode {} padding {} align {}", k.batch, k.channels, k.inH,
                            k.inW, k.outH, k.outW, set.name, static_cast<int>(mode), static_cast<int>(pad), align);
            auto want = Output(dt, outCount), got = want;
            if (!RunBoth([&] { refFn(cfg, x.data(), grid.data(), want.data(), k.batch, k.channels, k.inH, k.inW, k.outH, k.outW, dt); },
                         [&] { fastFn(cfg, x.data(), grid.data(), got.data(), k.batch, k.channels, k.inH, k.inW, k.outH, k.outW, dt); },
                         got, where, m)) {
              continue;
            }
            CompareElements(got, want, dt, outCount, kExact, where, m);
            CheckGuard(got, DTypeStorageBytes(dt, outCount), where, m);
          }
        }
      }
    }
  }
  std::vector<uint8_t> x(256, 0), out = Output(dt, 8);
  auto call = [&](GridSampleConfig cfg, int64_t inH, const void* in, DType d) {
    return [&, cfg, inH, in, d](bool r) {
      (r ? refFn : fastFn)(cfg, in, x.data(), out.data(), 1, 2, inH, 3, 2, 2, d);
    };
  };
  ExpectSameError("mode 9", out, call(GridSampleConfig{static_cast<GridSampleMode>(9)}, 2, x.data(), dt), m);
  ExpectSameError("padding 9", out,
                  call(GridSampleConfig{GridSampleMode::Bilinear, static_cast<GridSamplePadding>(9)}, 2, x.data(), dt), m);
  ExpectSameError("inH -1", out, call(GridSampleConfig{}, -1, x.data(), dt), m);
  ExpectSameError("inH 0", out, call(GridSampleConfig{}, 0, x.data(), dt), m);
  ExpectSameError("null in", out, call(GridSampleConfig{}, 2, nullptr, dt), m);
  ExpectSameError("dtype i32", out, call(GridSampleConfig{}, 2, x.data(), DType::Int32), m);
  ExpectSameError("dtype invalid", out, call(GridSampleConfig{}, 2, x.data(), DType::Invalid), m);
  return m;
}

}  // namespace

void RegisterSpatialRunners(RunnerRegistry& registry) { registry["GridSample"] = RunGridSample; }

}  // namespace backplane::conformance
