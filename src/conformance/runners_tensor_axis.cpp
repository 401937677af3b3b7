// Runners for the TensorOps axis families: ArgReduce, CumSum, Trilu, GatherElements.
//
// Every family must match the reference bit for bit (float CumSum too: both sum each column in
// f64 in index order), over [outer, axis, inner] shapes with inner 1 and > 1 around the vector
// widths, ties, NaN and signed zeros, full-range integers (wrap-around), and 16 guard bytes after
// every output. Invalid calls must throw the reference's error without writing.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/convert.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using ArgReduceFn = BP_RET_ArgReduce (*)(BP_PARAMS_ArgReduce);
using CumSumFn = BP_RET_CumSum (*)(BP_PARAMS_CumSum);
using TriluFn = BP_RET_Trilu (*)(BP_PARAMS_Trilu);
using GatherElementsFn = BP_RET_GatherElements (*)(BP_PARAMS_GatherElements);

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

struct Shape3 {
  int64_t a, b, c;
};

// The input kinds: random (floats with +-0, +-Inf, NaN mixed in; integers over their full range),
// ties (a few small values, zeros of both signs), and ties with NaN every few elements.
enum class Fill { Random, Ties, TiesNaN };

uint32_t Bits32(uint64_t seed, uint64_t stream, int64_t i) {
  return PhiloxBits(seed, stream, static_cast<uint64_t>(i))[0];
}

std::vector<uint8_t> Values(const RunContext& c, DType dt, int64_t count, uint64_t seed, Fill fill) {
  if (IsFloatingPoint(dt)) {
    std::vector<uint8_t> s = Inputs(c, dt, count, seed, 2.0, fill == Fill::Random);
    if (fill == Fill::Random) return s;
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t r = Bits32(seed, 31, i);
      double v = static_cast<double>(static_cast<int>(r % 5) - 2);
      if (v == 0.0 && (r >> 8) % 2 == 1) v = -0.0;
      if (fill == Fill::TiesNaN && (r >> 12) % 11 == 3) v = NAN;
      StoreAsDouble(s, dt, i, v);
    }
    return s;
  }
  std::vector<uint8_t> s(DTypeStorageBytes(dt, count) + 8, 0);
  if (dt == DType::Bool) {
    for (int64_t i = 0; i < count; ++i) StoreBool(s.data(), i, Bits32(seed, 32, i) % 2 == 1);
    return s;
  }
  const auto bytes = static_cast<size_t>(DTypeBits(dt) / 8);
  for (int64_t i = 0; i < count; ++i) {
    uint64_t v = (uint64_t{Bits32(seed, 33, i)} << 32) | Bits32(seed, 34, i);
    if (fill != Fill::Random) v = static_cast<uint64_t>(static_cast<int64_t>(v % 5) - 2);  // -2 .. 2 (wrapped)
    std::memcpy(s.data() + static_cast<size_t>(i) * bytes, &v, bytes);  // little-endian low bytes
  }
  return s;
}

// [a, b, c] shapes per size n: inner 1 (the axis in lanes), inner around the vector widths, and
// an odd mix; n == kLarge only as one long axis and one wide inner.
std::vector<Shape3> Shapes(const RunContext& c) {
  std::vector<Shape3> shapes;
  for (int64_t n : c.sizes) {
    shapes.push_back({2, n, 1});
    shapes.push_back({1, 3, n});
    shapes.push_back({3, n, 5});
    shapes.push_back({2, 4, n + 2});
  }
  shapes.push_back({1, kLarge, 1});
  shapes.push_back({2, 3, kLarge / 6});
  return shapes;
}

std::vector<uint8_t> Output(DType dt, int64_t count) {
  return std::vector<uint8_t>(DTypeStorageBytes(dt, count) + 16, kGuard);
}

// ---- ArgReduce -----------------------------------------------------------------------------------

Measure RunArgReduce(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<ArgReduceFn>(ref), fastFn = Unerase<ArgReduceFn>(fast);
  for (const Shape3& s : Shapes(c)) {
    const int64_t count = s.a * s.b * s.c;
    for (const Fill fill : {Fill::Random, Fill::Ties, Fill::TiesNaN}) {
      if (count > 100000 && fill != Fill::Random && Quick(c)) continue;
      const auto x = Values(c, dt, count, c.seed + static_cast<uint64_t>(count), fill);
      for (int flags = 0; flags < 4; ++flags) {
        const ArgReduceConfig cfg{flags % 2 == 0, flags >= 2};
        const std::string where = fmt::format("[{}, {}, {}] fill {} max {} last {}", s.a, s.b, s.c,
                                              static_cast<int>(fill), cfg.Max, cfg.SelectLast);
        auto want = Output(DType::Int64, s.a * s.c), got = want;
        if (!RunBoth([&] { refFn(cfg, x.data(), reinterpret_cast<int64_t*>(want.data()), s.a, s.b, s.c, dt); },
                     [&] { fastFn(cfg, x.data(), reinterpret_cast<int64_t*>(got.data()), s.a, s.b, s.c, dt); }, got,
                     where, m)) {
          continue;
        }
        CompareBytes(got, want, where, m);
      }
    }
  }
  const ArgReduceConfig cfg;
  std::vector<uint8_t> x(64, 0), out = Output(DType::Int64, 4);
  auto call = [&](int64_t outer, int64_t axis, int64_t inner, const void* in, DType d) {
    return [&, outer, axis, inner, in, d](bool r) {
      (r ? refFn : fastFn)(cfg, in, reinterpret_cast<int64_t*>(out.data()), outer, axis, inner, d);
    };
  };
  ExpectSameError("axis 0", out, call(1, 0, 2, x.data(), dt), m);
  ExpectSameError("outer -1", out, call(-1, 2, 2, x.data(), dt), m);
  ExpectSameError("null in", out, call(1, 2, 2, nullptr, dt), m);
  ExpectSameError("overflow", out, call(kMaxI64 / 2, 3, 1, x.data(), dt), m);
  ExpectSameError("dtype bool", out, call(1, 2, 2, x.data(), DType::Bool), m);
  ExpectSameError("dtype invalid", out, call(1, 2, 2, x.data(), DType::Invalid), m);
  return m;
}

// ---- CumSum --------------------------------------------------------------------------------------

Measure RunCumSum(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<CumSumFn>(ref), fastFn = Unerase<CumSumFn>(fast);
  for (const Shape3& s : Shapes(c)) {
    const int64_t count = s.a * s.b * s.c;
    for (const Fill fill : {Fill::Random, Fill::Ties}) {
      if (count > 100000 && fill != Fill::Random && Quick(c)) continue;
      const auto x = Values(c, dt, count, c.seed + 7 + static_cast<uint64_t>(count), fill);
      for (int flags = 0; flags < 4; ++flags) {
        const CumSumConfig cfg{flags % 2 == 1, flags >= 2};
        const std::string where = fmt::format("[{}, {}, {}] fill {} exclusive {} reverse {}", s.a, s.b, s.c,
                                              static_cast<int>(fill), cfg.Exclusive, cfg.Reverse);
        auto want = Output(dt, count), got = want;
        if (!RunBoth([&] { refFn(cfg, x.data(), want.data(), s.a, s.b, s.c, dt); },
                     [&] { fastFn(cfg, x.data(), got.data(), s.a, s.b, s.c, dt); }, got, where, m)) {
          continue;
        }
        CompareBytesAnyNaN(got, want, dt, where, m);
      }
    }
  }
  const CumSumConfig cfg;
  std::vector<uint8_t> x(64, 0), out = Output(dt, 4);
  auto call = [&](int64_t outer, int64_t axis, int64_t inner, const void* in, void* o, DType d) {
    return [&, outer, axis, inner, in, o, d](bool r) { (r ? refFn : fastFn)(cfg, in, o, outer, axis, inner, d); };
  };
  ExpectSameError("inner -1", out, call(1, 2, -1, x.data(), out.data(), dt), m);
  ExpectSameError("null out", out, call(1, 2, 2, x.data(), nullptr, dt), m);
  ExpectSameError("null in", out, call(2, 1, 2, nullptr, out.data(), dt), m);
  ExpectSameError("overflow", out, call(3, kMaxI64 / 2, 1, x.data(), out.data(), dt), m);
  ExpectSameError("dtype bool", out, call(1, 2, 2, x.data(), out.data(), DType::Bool), m);
  ExpectSameError("dtype c64", out, call(1, 2, 2, x.data(), out.data(), DType::Complex64), m);
  return m;
}

// ---- Trilu ---------------------------------------------------------------------------------------

Measure RunTrilu(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<TriluFn>(ref), fastFn = Unerase<TriluFn>(fast);
  std::vector<Shape3> shapes;
  for (int64_t n : c.sizes) {
    shapes.push_back({2, n, 5});
    shapes.push_back({1, 3, n});
    shapes.push_back({1, n, n % 37 + 1});
  }
  shapes.push_back({3, 257, 259});
  for (const Shape3& s : shapes) {
    const int64_t count = s.a * s.b * s.c;
    const auto x = Values(c, dt, count, c.seed + 11 + static_cast<uint64_t>(count), Fill::Random);
    for (const int64_t k : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{3}, -s.b, s.c + 2, kMaxI64,
                            std::numeric_limits<int64_t>::min()}) {
      for (const bool upper : {true, false}) {
        const TriluConfig cfg{upper, k};
        const std::string where = fmt::format("[{}, {}, {}] upper {} k {}", s.a, s.b, s.c, upper, k);
        auto want = Output(dt, count), got = want;
        if (!RunBoth([&] { refFn(cfg, x.data(), want.data(), s.a, s.b, s.c, dt); },
                     [&] { fastFn(cfg, x.data(), got.data(), s.a, s.b, s.c, dt); }, got, where, m)) {
          continue;
        }
        CompareBytes(got, want, where, m);
      }
    }
  }
  const TriluConfig cfg;
  std::vector<uint8_t> x(64, 0), out = Output(dt, 4);
  auto call = [&](int64_t b, int64_t r, int64_t cols, const void* in, void* o, DType d) {
    return [&, b, r, cols, in, o, d](bool isRef) { (isRef ? refFn : fastFn)(cfg, in, o, b, r, cols, d); };
  };
  ExpectSameError("rows -1", out, call(1, -1, 2, x.data(), out.data(), dt), m);
  ExpectSameError("null in", out, call(1, 2, 2, nullptr, out.data(), dt), m);
  ExpectSameError("overflow", out, call(kMaxI64 / 2, 2, 2, x.data(), out.data(), dt), m);
  ExpectSameError("dtype invalid", out, call(1, 2, 2, x.data(), out.data(), DType::Invalid), m);
  return m;
}

// ---- GatherElements ------------------------------------------------------------------------------

Measure RunGatherElements(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<GatherElementsFn>(ref), fastFn = Unerase<GatherElementsFn>(fast);
  for (const Shape3& s : Shapes(c)) {
    const int64_t outAxis = s.b == 0 ? 0 : s.b % 7 + 1;
    const int64_t inCount = s.a * s.b * s.c, outCount = s.a * outAxis * s.c;
    const auto x = Values(c, dt, inCount, c.seed + 13 + static_cast<uint64_t>(inCount), Fill::Random);
    std::vector<int64_t> idx(static_cast<size_t>(outCount));
    for (int64_t i = 0; i < outCount; ++i) {
      idx[static_cast<size_t>(i)] = static_cast<int64_t>(Bits32(c.seed, 35, i) % static_cast<uint64_t>(2 * s.b)) - s.b;
    }
    const std::string where = fmt::format("[{}, {} -> {}, {}]", s.a, s.b, outAxis, s.c);
    auto want = Output(dt, outCount), got = want;
    if (!RunBoth([&] { refFn(x.data(), idx.data(), want.data(), s.a, s.b, outAxis, s.c, dt); },
                 [&] { fastFn(x.data(), idx.data(), got.data(), s.a, s.b, outAxis, s.c, dt); }, got, where, m)) {
      continue;
    }
    CompareBytes(got, want, where, m);
  }
  std::vector<uint8_t> x(64, 0), out = Output(dt, 4);
  for (const int64_t bad : {int64_t{3}, int64_t{-4}, kMaxI64}) {
    const std::vector<int64_t> idx = {0, 1, bad, 2};
    ExpectSameError(fmt::format("index {}", bad), out,
                    [&](bool r) { (r ? refFn : fastFn)(x.data(), idx.data(), out.data(), 1, 3, 4, 1, dt); }, m);
  }
  const std::vector<int64_t> idx = {0, 0, 0, 0};
  ExpectSameError("null indices", out,
                  [&](bool r) { (r ? refFn : fastFn)(x.data(), nullptr, out.data(), 1, 3, 4, 1, dt); }, m);
  ExpectSameError("inAxis 0", out,
                  [&](bool r) { (r ? refFn : fastFn)(x.data(), idx.data(), out.data(), 1, 0, 4, 1, dt); }, m);
  ExpectSameError("dtype invalid", out,
                  [&](bool r) { (r ? refFn : fastFn)(x.data(), idx.data(), out.data(), 1, 3, 4, 1, DType::Invalid); },
                  m);
  return m;
}

}  // namespace

void RegisterTensorAxisRunners(RunnerRegistry& registry) {
  registry["ArgReduce"] = RunArgReduce;
  registry["CumSum"] = RunCumSum;
  registry["Trilu"] = RunTrilu;
  registry["GatherElements"] = RunGatherElements;
}

}  // namespace backplane::conformance
