// Conformance runners for the activation kernel families: UnaryParam1, UnaryParam2, PReLUV,
// GluPacked, GluTensors (Unary is in runners_elementwise.cpp), and MathExt's InvSqrtDimScale.
//
// Each runner compares the fast kernel with the reference on seeded inputs (with +-0, +-Inf, NaN
// and large values mixed in) for every size, with parameters that exercise each method's rules,
// and also checks that:
//  - in the full run, one f32 size over 16 MiB agrees too: the threaded and non-temporal store
//    paths of the fast kernels,
//  - nothing is written past the output (the poison bytes after it are intact),
//  - in-place use (dst == src) gives the same result,
//  - an invalid call throws the same error as the reference (the fast kernels hand those to it).
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/error.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using Param1Fn = BP_RET_UnaryParam1 (*)(BP_PARAMS_UnaryParam1);
using Param2Fn = BP_RET_UnaryParam2 (*)(BP_PARAMS_UnaryParam2);
using PReLUVFn = BP_RET_PReLUV (*)(BP_PARAMS_PReLUV);
using GluPackedFn = BP_RET_GluPacked (*)(BP_PARAMS_GluPacked);
using GluTensorsFn = BP_RET_GluTensors (*)(BP_PARAMS_GluTensors);
using InvSqrtFn = BP_RET_InvSqrtDimScale (*)(BP_PARAMS_InvSqrtDimScale);

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// got and want hold `count` elements followed by guard bytes; compares values, then the guard.
void Check(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType dtype, int64_t count,
           const std::string& where, Measure& m) {
  CompareStorage(got, want, dtype, count, DefaultTolerance(dtype), where, m);
  CheckGuard(got, DTypeStorageBytes(dtype, count), where, m);
}

std::vector<uint8_t> Poisoned(DType dtype, int64_t count) {
  return std::vector<uint8_t>(DTypeStorageBytes(dtype, count) + 8, kGuard);
}

// One large f32 size in the full (non-quick) run: over 16 MiB of output, so the threaded chunks and
// the non-temporal store path of the fast kernels are exercised too (f64 shares that code).
std::vector<int64_t> LargeSizes(const RunContext& c) {
  if (!Quick(c) && c.dtype == DType::Float32) return {(int64_t{1} << 22) + 3};
  return {};
}

// The large case's inputs and reference output depend only on the method, dtype and parameters,
// not on the target: they are computed once and reused while the matrix runs the other targets.
struct LargeCase {
  std::string key;
  std::vector<uint8_t> a, b, want;
};

// Fills the cache for `key` with make() (which sets a, b, want) unless it already holds it.
template <class Make>
const LargeCase& Large(const std::string& key, const Make& make) {
  static LargeCase cache;
  if (cache.key != key) {
    cache = LargeCase{key, {}, {}, {}};
    make(cache);
  }
  return cache;
}

// Parameter sets valid for each method (docs/semantics/activation.md, Parametric).
std::vector<float> Params1(const std::string& method) {
  if (EndsWith(method, "Shrink")) return {0.5f, 0.0f, 1.75f};
  return {0.5f, -0.3f, 1.75f};  // CELUAlpha and Snake need != 0: all are
}

std::vector<std::pair<float, float>> Params2(const std::string& method) {
  if (EndsWith(method, "HardTanhRange")) return {{-0.5f, 0.8f}, {0.25f, 0.25f}, {-2.0f, -1.0f}};
  if (EndsWith(method, "SnakeParametric")) return {{0.7f, 1.3f}, {-1.1f, 0.4f}, {25.0f, 2.0f}};
  if (EndsWith(method, "RReLU")) return {{0.125f, 0.3333f}, {0.0f, 0.0f}, {0.2f, 0.2f}};
  return {{0.1f, 0.3f}};
}

Measure RunParam1(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const auto r = Unerase<Param1Fn>(ref);
  const auto f = Unerase<Param1Fn>(fast);
  for (float p : Params1(c.method)) {
    for (int64_t n : c.sizes) {
      const auto x = RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));
      auto want = Poisoned(c.dtype, n);
      auto got = want;
      r(want.data(), x.data(), n, c.dtype, p);
      f(got.data(), x.data(), n, c.dtype, p);
      Check(got, want, c.dtype, n, fmt::format("param={} n={} y", p, n), m);
      auto inplace = x;
      f(inplace.data(), inplace.data(), n, c.dtype, p);
      CompareStorage(inplace, want, c.dtype, n, DefaultTolerance(c.dtype), fmt::format("in place param={} n={} y", p, n), m);
    }
  }
  for (int64_t n : LargeSizes(c)) {
    const float p = Params1(c.method)[0];
    const LargeCase& big = Large(fmt::format("{} {} {}", c.method, DTypeName(c.dtype), n), [&](LargeCase& l) {
      l.a = RandomStorage(c.dtype, n, c.seed + 1);
      l.want = Poisoned(c.dtype, n);
      r(l.want.data(), l.a.data(), n, c.dtype, p);
    });
    auto got = Poisoned(c.dtype, n);
    f(got.data(), big.a.data(), n, c.dtype, p);
    Check(got, big.want, c.dtype, n, fmt::format("param={} n={} y", p, n), m);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto y = Poisoned(c.dtype, 4);
  const auto x = RandomStorage(c.dtype, 4, c.seed);
  RunBoth([&] { r(y.data(), x.data(), 4, c.dtype, nan); }, [&] { f(y.data(), x.data(), 4, c.dtype, nan); },
            "param=NaN", m);
  RunBoth([&] { r(y.data(), x.data(), 4, c.dtype, -1.0f); }, [&] { f(y.data(), x.data(), 4, c.dtype, -1.0f); },
            "param=-1", m);
  RunBoth([&] { r(y.data(), x.data(), 4, c.dtype, 0.0f); }, [&] { f(y.data(), x.data(), 4, c.dtype, 0.0f); },
            "param=0", m);
  RunBoth([&] { r(y.data(), x.data(), -1, c.dtype, 0.5f); }, [&] { f(y.data(), x.data(), -1, c.dtype, 0.5f); },
            "count=-1", m);
  RunBoth([&] { r(nullptr, x.data(), 4, c.dtype, 0.5f); }, [&] { f(nullptr, x.data(), 4, c.dtype, 0.5f); },
            "dst=null", m);
  RunBoth([&] { r(y.data(), x.data(), 0, DType::Int8, 0.5f); }, [&] { f(y.data(), x.data(), 0, DType::Int8, 0.5f); },
            "dtype=int8", m);
  return m;
}

Measure RunParam2(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const auto r = Unerase<Param2Fn>(ref);
  const auto f = Unerase<Param2Fn>(fast);
  for (const auto& params : Params2(c.method)) {
    const float p1 = params.first, p2 = params.second;
    for (int64_t n : c.sizes) {
      const auto x = RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));
      auto want = Poisoned(c.dtype, n);
      auto got = want;
      r(want.data(), x.data(), n, c.dtype, p1, p2);
      f(got.data(), x.data(), n, c.dtype, p1, p2);
      Check(got, want, c.dtype, n, fmt::format("params=({}, {}) n={} y", p1, p2, n), m);
      auto inplace = x;
      f(inplace.data(), inplace.data(), n, c.dtype, p1, p2);
      CompareStorage(inplace, want, c.dtype, n, DefaultTolerance(c.dtype),
                     fmt::format("in place params=({}, {}) n={} y", p1, p2, n), m);
    }
  }
  for (int64_t n : LargeSizes(c)) {
    const float p1 = Params2(c.method)[0].first, p2 = Params2(c.method)[0].second;
    const LargeCase& big = Large(fmt::format("{} {} {}", c.method, DTypeName(c.dtype), n), [&](LargeCase& l) {
      l.a = RandomStorage(c.dtype, n, c.seed + 1);
      l.want = Poisoned(c.dtype, n);
      r(l.want.data(), l.a.data(), n, c.dtype, p1, p2);
    });
    auto got = Poisoned(c.dtype, n);
    f(got.data(), big.a.data(), n, c.dtype, p1, p2);
    Check(got, big.want, c.dtype, n, fmt::format("params=({}, {}) n={} y", p1, p2, n), m);
  }
  const float inf = std::numeric_limits<float>::infinity();
  auto y = Poisoned(c.dtype, 4);
  const auto x = RandomStorage(c.dtype, 4, c.seed);
  for (const auto& params : std::vector<std::pair<float, float>>{{1.0f, 0.5f}, {0.0f, 0.0f}, {-1.0f, 1.0f},
                                                                 {0.5f, inf}, {0.5f, 0.0f}}) {
    const float p1 = params.first, p2 = params.second;
    RunBoth([&] { r(y.data(), x.data(), 4, c.dtype, p1, p2); }, [&] { f(y.data(), x.data(), 4, c.dtype, p1, p2); },
              fmt::format("params=({}, {})", p1, p2), m);
  }
  RunBoth([&] { r(y.data(), nullptr, 4, c.dtype, 0.1f, 0.3f); }, [&] { f(y.data(), nullptr, 4, c.dtype, 0.1f, 0.3f); },
            "src=null", m);
  return m;
}

Measure RunPReLUV(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const auto r = Unerase<PReLUVFn>(ref);
  const auto f = Unerase<PReLUVFn>(fast);
  for (int64_t n : c.sizes) {
    const auto x = RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));
    for (int64_t period : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{17}, int64_t{40},
                           int64_t{125}, int64_t{241}, n}) {
      if (period <= 0 || n % period != 0) continue;
      const auto raw = RandomStorage(DType::Float32, period, c.seed + 31 + static_cast<uint64_t>(period), 0.5);
      std::vector<float> slopes(static_cast<size_t>(period));
      std::memcpy(slopes.data(), raw.data(), slopes.size() * sizeof(float));
      auto want = Poisoned(c.dtype, n);
      auto got = want;
      r(want.data(), x.data(), slopes.data(), n, c.dtype, period);
      f(got.data(), x.data(), slopes.data(), n, c.dtype, period);
      Check(got, want, c.dtype, n, fmt::format("n={} slopeCount={} y", n, period), m);
      auto inplace = x;
      f(inplace.data(), inplace.data(), slopes.data(), n, c.dtype, period);
      CompareStorage(inplace, want, c.dtype, n, DefaultTolerance(c.dtype),
                     fmt::format("in place n={} slopeCount={} y", n, period), m);
    }
  }
  for (int64_t n : LargeSizes(c)) {
    const int64_t period = 3, count = n / period * period;
    const LargeCase& big = Large(fmt::format("{} {} {}", c.method, DTypeName(c.dtype), n), [&](LargeCase& l) {
      l.a = RandomStorage(c.dtype, count, c.seed + 1);
      l.b = RandomStorage(DType::Float32, period, c.seed + 2, 0.5);
      l.want = Poisoned(c.dtype, count);
      r(l.want.data(), l.a.data(), reinterpret_cast<const float*>(l.b.data()), count, c.dtype, period);
    });
    auto got = Poisoned(c.dtype, count);
    f(got.data(), big.a.data(), reinterpret_cast<const float*>(big.b.data()), count, c.dtype, period);
    Check(got, big.want, c.dtype, count, fmt::format("n={} slopeCount={} y", count, period), m);
  }
  auto y = Poisoned(c.dtype, 6);
  const auto x = RandomStorage(c.dtype, 6, c.seed);
  const float slopes[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  RunBoth([&] { r(y.data(), x.data(), slopes, 6, c.dtype, 4); }, [&] { f(y.data(), x.data(), slopes, 6, c.dtype, 4); },
            "count not a multiple", m);
  RunBoth([&] { r(y.data(), x.data(), slopes, 6, c.dtype, 0); }, [&] { f(y.data(), x.data(), slopes, 6, c.dtype, 0); },
            "slopeCount=0", m);
  RunBoth([&] { r(y.data(), x.data(), nullptr, 6, c.dtype, 2); }, [&] { f(y.data(), x.data(), nullptr, 6, c.dtype, 2); },
            "slopes=null", m);
  return m;
}

// (batch, halfCount) shapes for an output of about n elements: one long row, a few rows, and many
// short rows.
std::vector<std::pair<int64_t, int64_t>> GluShapes(int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1, n}};
  if (n >= 3) shapes.emplace_back(3, n / 3);
  if (n >= 2 && n <= 1000) shapes.emplace_back(n, 1);
  if (n >= 17) shapes.emplace_back(n / 17, 17);
  return shapes;
}

Measure RunGluPacked(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const auto r = Unerase<GluPackedFn>(ref);
  const auto f = Unerase<GluPackedFn>(fast);
  for (int64_t n : c.sizes) {
    for (const auto& [batch, half] : GluShapes(n)) {
      const auto packed = RandomStorage(c.dtype, batch * 2 * half, c.seed + static_cast<uint64_t>(n + batch));
      auto want = Poisoned(c.dtype, batch * half);
      auto got = want;
      r(want.data(), packed.data(), batch, half, c.dtype);
      f(got.data(), packed.data(), batch, half, c.dtype);
      Check(got, want, c.dtype, batch * half, fmt::format("batch={} halfCount={} y", batch, half), m);
      auto inplace = packed;  // dst == packed: row r's output overwrites earlier rows' inputs only
      f(inplace.data(), inplace.data(), batch, half, c.dtype);
      CompareStorage(inplace, want, c.dtype, batch * half, DefaultTolerance(c.dtype),
                     fmt::format("in place batch={} halfCount={} y", batch, half), m);
    }
  }
  for (int64_t n : LargeSizes(c)) {  // threaded rows
    const int64_t half = 1001, batch = n / 4 / half;
    const LargeCase& big = Large(fmt::format("{} {} {}", c.method, DTypeName(c.dtype), n), [&](LargeCase& l) {
      l.a = RandomStorage(c.dtype, batch * 2 * half, c.seed + 1);
      l.want = Poisoned(c.dtype, batch * half);
      r(l.want.data(), l.a.data(), batch, half, c.dtype);
    });
    auto got = Poisoned(c.dtype, batch * half);
    f(got.data(), big.a.data(), batch, half, c.dtype);
    Check(got, big.want, c.dtype, batch * half, fmt::format("batch={} halfCount={} y", batch, half), m);
  }
  auto y = Poisoned(c.dtype, 4);
  const auto packed = RandomStorage(c.dtype, 8, c.seed);
  RunBoth([&] { r(y.data(), packed.data(), -1, 4, c.dtype); }, [&] { f(y.data(), packed.data(), -1, 4, c.dtype); },
            "batch=-1", m);
  RunBoth([&] { r(y.data(), packed.data(), 2, std::numeric_limits<int64_t>::max() / 2, c.dtype); },
            [&] { f(y.data(), packed.data(), 2, std::numeric_limits<int64_t>::max() / 2, c.dtype); }, "overflow", m);
  RunBoth([&] { r(y.data(), nullptr, 1, 4, c.dtype); }, [&] { f(y.data(), nullptr, 1, 4, c.dtype); }, "packed=null",
            m);
  return m;
}

Measure RunGluTensors(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const auto r = Unerase<GluTensorsFn>(ref);
  const auto f = Unerase<GluTensorsFn>(fast);
  for (int64_t n : c.sizes) {
    const auto gate = RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));
    const auto up = RandomStorage(c.dtype, n, c.seed + 7919 + static_cast<uint64_t>(n));
    auto want = Poisoned(c.dtype, n);
    auto got = want;
    r(want.data(), gate.data(), up.data(), n, c.dtype);
    f(got.data(), gate.data(), up.data(), n, c.dtype);
    Check(got, want, c.dtype, n, fmt::format("n={} y", n), m);
    auto inplace = up;
    f(inplace.data(), gate.data(), inplace.data(), n, c.dtype);
    CompareStorage(inplace, want, c.dtype, n, DefaultTolerance(c.dtype), fmt::format("in place n={} y", n), m);
  }
  for (int64_t n : LargeSizes(c)) {
    const LargeCase& big = Large(fmt::format("{} {} {}", c.method, DTypeName(c.dtype), n), [&](LargeCase& l) {
      l.a = RandomStorage(c.dtype, n, c.seed + 1);
      l.b = RandomStorage(c.dtype, n, c.seed + 2);
      l.want = Poisoned(c.dtype, n);
      r(l.want.data(), l.a.data(), l.b.data(), n, c.dtype);
    });
    auto got = Poisoned(c.dtype, n);
    f(got.data(), big.a.data(), big.b.data(), n, c.dtype);
    Check(got, big.want, c.dtype, n, fmt::format("n={} y", n), m);
  }
  auto y = Poisoned(c.dtype, 4);
  const auto x = RandomStorage(c.dtype, 4, c.seed);
  RunBoth([&] { r(y.data(), x.data(), nullptr, 4, c.dtype); }, [&] { f(y.data(), x.data(), nullptr, 4, c.dtype); },
            "up=null", m);
  RunBoth([&] { r(y.data(), x.data(), x.data(), -2, c.dtype); }, [&] { f(y.data(), x.data(), x.data(), -2, c.dtype); },
            "count=-2", m);
  return m;
}

Measure RunInvSqrtDimScale(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const auto r = Unerase<InvSqrtFn>(ref);
  const auto f = Unerase<InvSqrtFn>(fast);
  for (int64_t dim : {int64_t{1}, int64_t{3}, int64_t{64}, int64_t{1000}}) {
    for (int64_t n : c.sizes) {
      const auto x = RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));
      auto want = Poisoned(c.dtype, n);
      auto got = want;
      r(want.data(), x.data(), n, dim, c.dtype);
      f(got.data(), x.data(), n, dim, c.dtype);
      Check(got, want, c.dtype, n, fmt::format("dim={} n={} y", dim, n), m);
    }
  }
  for (int64_t n : LargeSizes(c)) {
    const LargeCase& big = Large(fmt::format("{} {} {}", c.method, DTypeName(c.dtype), n), [&](LargeCase& l) {
      l.a = RandomStorage(c.dtype, n, c.seed + 1);
      l.want = Poisoned(c.dtype, n);
      r(l.want.data(), l.a.data(), n, 64, c.dtype);
    });
    auto got = Poisoned(c.dtype, n);
    f(got.data(), big.a.data(), n, 64, c.dtype);
    Check(got, big.want, c.dtype, n, fmt::format("dim=64 n={} y", n), m);
  }
  auto y = Poisoned(c.dtype, 4);
  const auto x = RandomStorage(c.dtype, 4, c.seed);
  RunBoth([&] { r(y.data(), x.data(), 4, 0, c.dtype); }, [&] { f(y.data(), x.data(), 4, 0, c.dtype); }, "dim=0", m);
  return m;
}

}  // namespace

void RegisterActivationRunners(RunnerRegistry& r) {
  r["UnaryParam1"] = RunParam1;
  r["UnaryParam2"] = RunParam2;
  r["PReLUV"] = RunPReLUV;
  r["GluPacked"] = RunGluPacked;
  r["GluTensors"] = RunGluTensors;
  r["InvSqrtDimScale"] = RunInvSqrtDimScale;
}

}  // namespace backplane::conformance
