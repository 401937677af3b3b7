// Runners for the TensorOps index families: TopK, ScatterElements, ScatterND, GatherND.
//
// Every family must match the reference bit for bit over [outer, axis, inner] (or N-d) shapes with
// ties, NaN and signed zeros, full-range integers (wrap-around under add/mul), negative and
// duplicate indices, and 16 guard bytes after every output. Invalid calls (an index out of range,
// a bad size, an invalid dtype) must throw the reference's error without writing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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

using TopKFn = BP_RET_TopK (*)(BP_PARAMS_TopK);
using ScatterElementsFn = BP_RET_ScatterElements (*)(BP_PARAMS_ScatterElements);
using ScatterNDFn = BP_RET_ScatterND (*)(BP_PARAMS_ScatterND);
using GatherNDFn = BP_RET_GatherND (*)(BP_PARAMS_GatherND);

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

struct Shape3 {
  int64_t a, b, c;
};

uint32_t Bits32(uint64_t seed, uint64_t stream, int64_t i) {
  return PhiloxBits(seed, stream, static_cast<uint64_t>(i))[0];
}

// Random values (floats with specials; integers over their full range), or ties (-2 .. 2, both
// zeros, NaN every few elements for floats).
std::vector<uint8_t> Values(const RunContext& c, DType dt, int64_t count, uint64_t seed, bool ties) {
  if (IsFloatingPoint(dt)) {
    std::vector<uint8_t> s = Inputs(c, dt, count, seed, 2.0, !ties);
    if (!ties) return s;
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t r = Bits32(seed, 41, i);
      double v = static_cast<double>(static_cast<int>(r % 5) - 2);
      if (v == 0.0 && (r >> 8) % 2 == 1) v = -0.0;
      if ((r >> 12) % 11 == 3) v = NAN;
      StoreAsDouble(s, dt, i, v);
    }
    return s;
  }
  std::vector<uint8_t> s(DTypeStorageBytes(dt, count) + 8, 0);
  if (dt == DType::Bool) {
    for (int64_t i = 0; i < count; ++i) StoreBool(s.data(), i, Bits32(seed, 42, i) % 2 == 1);
    return s;
  }
  const auto bytes = static_cast<size_t>(DTypeBits(dt) / 8);
  for (int64_t i = 0; i < count; ++i) {
    uint64_t v = (uint64_t{Bits32(seed, 43, i)} << 32) | Bits32(seed, 44, i);
    if (ties) v = static_cast<uint64_t>(static_cast<int64_t>(v % 5) - 2);
    std::memcpy(s.data() + static_cast<size_t>(i) * bytes, &v, bytes);
  }
  return s;
}

std::vector<uint8_t> Output(DType dt, int64_t count) {
  return std::vector<uint8_t>(DTypeStorageBytes(dt, count) + 16, kGuard);
}

std::vector<Shape3> Shapes(const RunContext& c) {
  std::vector<Shape3> shapes;
  for (int64_t n : c.sizes) {
    if (n > 4096) continue;
    shapes.push_back({2, n, 1});
    shapes.push_back({1, 3, n});
    shapes.push_back({3, n, 5});
    if (n <= 65) shapes.push_back({2, n, 37});  // several vectors of columns and a tail
  }
  shapes.push_back({1, kLarge, 1});
  return shapes;
}

// Indices in [-size, size) (negative ones count from the end), dense enough to repeat.
std::vector<int64_t> Indices(const RunContext& c, int64_t count, int64_t size, uint64_t stream) {
  std::vector<int64_t> idx(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    idx[static_cast<size_t>(i)] =
        static_cast<int64_t>(Bits32(c.seed, stream, i) % static_cast<uint64_t>(2 * size)) - size;
  }
  return idx;
}

// ---- TopK ----------------------------------------------------------------------------------------

Measure RunTopK(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<TopKFn>(ref), fastFn = Unerase<TopKFn>(fast);
  for (const Shape3& s : Shapes(c)) {
    const int64_t count = s.a * s.b * s.c;
    for (const bool ties : {false, true}) {
      const auto x = Values(c, dt, count, c.seed + static_cast<uint64_t>(count), ties);
      for (const int64_t k : {int64_t{1}, std::min<int64_t>(s.b, 5), s.b}) {
        if (count > 100000 && k == s.b) continue;  // a full sort of the long axis once is enough
        for (const bool largest : {true, false}) {
          const std::string where = fmt::format("[{}, {}, {}] k {} ties {} largest {}", s.a, s.b, s.c, k, ties, largest);
          const int64_t outCount = s.a * k * s.c;
          auto wantV = Output(dt, outCount), gotV = wantV;
          auto wantI = Output(DType::Int64, outCount), gotI = wantI;
          const TopKConfig cfg{largest};
          if (!RunBoth([&] { refFn(cfg, x.data(), wantV.data(), reinterpret_cast<int64_t*>(wantI.data()), s.a, s.b, s.c, k, dt); },
                       [&] { fastFn(cfg, x.data(), gotV.data(), reinterpret_cast<int64_t*>(gotI.data()), s.a, s.b, s.c, k, dt); },
                       gotV, where, m)) {
            continue;
          }
          CompareBytes(gotV, wantV, where + " values", m);
          CompareBytes(gotI, wantI, where + " indices", m);
        }
      }
    }
  }
  std::vector<uint8_t> x(64, 0), out = Output(dt, 4), idx = Output(DType::Int64, 4);
  auto call = [&](int64_t axis, int64_t k, const void* in, DType d) {
    return [&, axis, k, in, d](bool r) {
      (r ? refFn : fastFn)(TopKConfig{}, in, out.data(), reinterpret_cast<int64_t*>(idx.data()), 1, axis, 1, k, d);
    };
  };
  ExpectSameError("k > axis", out, call(3, 4, x.data(), dt), m);
  ExpectSameError("k -1", out, call(3, -1, x.data(), dt), m);
  ExpectSameError("null in", out, call(3, 2, nullptr, dt), m);
  ExpectSameError("overflow", out, [&](bool r) {
    (r ? refFn : fastFn)(TopKConfig{}, x.data(), out.data(), reinterpret_cast<int64_t*>(idx.data()), kMaxI64 / 2, 4, 2, 1, dt);
  }, m);
  ExpectSameError("dtype invalid", out, call(3, 2, x.data(), DType::Invalid), m);
  return m;
}

// ---- ScatterElements -----------------------------------------------------------------------------

Measure RunScatterElements(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<ScatterElementsFn>(ref), fastFn = Unerase<ScatterElementsFn>(fast);
  for (const Shape3& s : Shapes(c)) {
    if (s.b == 0) continue;
    const int64_t updAxis = s.b % 7 + 1;
    const int64_t dataCount = s.a * s.b * s.c, updCount = s.a * updAxis * s.c;
    const auto data = Values(c, dt, dataCount, c.seed + 17 + static_cast<uint64_t>(dataCount), false);
    const auto upd = Values(c, dt, updCount, c.seed + 19 + static_cast<uint64_t>(updCount), false);
    const auto idx = Indices(c, updCount, s.b, 45);
    for (const auto red : {ScatterReduction::None, ScatterReduction::Add, ScatterReduction::Mul}) {
      const std::string where = fmt::format("[{}, {} <- {}, {}] reduction {}", s.a, s.b, updAxis, s.c, static_cast<int>(red));
      auto want = Output(dt, dataCount), got = want;
      const ScatterConfig cfg{red};
      if (!RunBoth([&] { refFn(cfg, data.data(), idx.data(), upd.data(), want.data(), s.a, s.b, updAxis, s.c, dt); },
                   [&] { fastFn(cfg, data.data(), idx.data(), upd.data(), got.data(), s.a, s.b, updAxis, s.c, dt); },
                   got, where, m)) {
        continue;
      }
      CompareBytes(got, want, where, m);
    }
  }
  std::vector<uint8_t> x(64, 0), out = Output(dt, 3);
  for (const int64_t bad : {int64_t{3}, int64_t{-4}, kMaxI64}) {
    const std::vector<int64_t> idx = {0, 1, bad, 2};
    ExpectSameError(fmt::format("index {}", bad), out, [&](bool r) {
      (r ? refFn : fastFn)(ScatterConfig{}, x.data(), idx.data(), x.data(), out.data(), 1, 3, 4, 1, dt);
    }, m);
  }
  const std::vector<int64_t> idx = {0, 0, 0, 0};
  ExpectSameError("null indices", out, [&](bool r) {
    (r ? refFn : fastFn)(ScatterConfig{}, x.data(), nullptr, x.data(), out.data(), 1, 3, 4, 1, dt);
  }, m);
  ExpectSameError("reduction 7", out, [&](bool r) {
    (r ? refFn : fastFn)(ScatterConfig{static_cast<ScatterReduction>(7)}, x.data(), idx.data(), x.data(), out.data(), 1, 3, 4, 1, dt);
  }, m);
  ExpectSameError("dtype invalid", out, [&](bool r) {
    (r ? refFn : fastFn)(ScatterConfig{}, x.data(), idx.data(), x.data(), out.data(), 1, 3, 4, 1, DType::Invalid);
  }, m);
  return m;
}

// ---- ScatterND and GatherND ----------------------------------------------------------------------

// N-d cases: dims, depth; the index count scales with n.
struct NDCase {
  std::vector<int64_t> dims;
  int64_t depth;
};
std::vector<NDCase> NDCases(const RunContext& c) {
  std::vector<NDCase> cases;
  for (int64_t n : c.sizes) {
    if (n == 0 || n > 4096) continue;
    cases.push_back({{n}, 1});
    cases.push_back({{3, n}, 1});
    cases.push_back({{3, n}, 2});
    cases.push_back({{2, 3, n}, 2});
    cases.push_back({{2, 3, n}, 0});
  }
  cases.push_back({{kLarge}, 1});
  return cases;
}

std::vector<int64_t> Tuples(const RunContext& c, const NDCase& k, int64_t count, uint64_t stream) {
  std::vector<int64_t> idx(static_cast<size_t>(count * k.depth));
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t d = 0; d < k.depth; ++d) {
      const int64_t size = k.dims[static_cast<size_t>(d)];
      idx[static_cast<size_t>(t * k.depth + d)] =
          static_cast<int64_t>(Bits32(c.seed, stream, t * k.depth + d) % static_cast<uint64_t>(2 * size)) - size;
    }
  }
  return idx;
}

int64_t Prod(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

Measure RunScatterND(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<ScatterNDFn>(ref), fastFn = Unerase<ScatterNDFn>(fast);
  for (const NDCase& k : NDCases(c)) {
    const auto rank = static_cast<int64_t>(k.dims.size());
    const int64_t total = Prod(k.dims, 0), slice = Prod(k.dims, static_cast<size_t>(k.depth));
    const int64_t count = std::min<int64_t>(total / slice + 3, 4096);
    const auto data = Values(c, dt, total, c.seed + 23 + static_cast<uint64_t>(total), false);
    const auto upd = Values(c, dt, count * slice, c.seed + 29 + static_cast<uint64_t>(count), false);
    const auto idx = Tuples(c, k, count, 46);
    for (const auto red : {ScatterReduction::None, ScatterReduction::Add, ScatterReduction::Mul}) {
      const std::string where = fmt::format("dims {} depth {} count {} reduction {}", fmt::join(k.dims, "x"), k.depth,
                                            count, static_cast<int>(red));
      auto want = Output(dt, total), got = want;
      const ScatterConfig cfg{red};
      if (!RunBoth([&] { refFn(cfg, data.data(), idx.data(), upd.data(), want.data(), k.dims.data(), rank, count, k.depth, dt); },
                   [&] { fastFn(cfg, data.data(), idx.data(), upd.data(), got.data(), k.dims.data(), rank, count, k.depth, dt); },
                   got, where, m)) {
        continue;
      }
      CompareBytes(got, want, where, m);
    }
  }
  std::vector<uint8_t> x(64, 0), out = Output(dt, 6);
  const std::vector<int64_t> dims = {2, 3};
  for (const int64_t bad : {int64_t{3}, int64_t{-4}, kMaxI64}) {
    const std::vector<int64_t> idx = {0, 1, 1, bad};
    ExpectSameError(fmt::format("index {}", bad), out, [&](bool r) {
      (r ? refFn : fastFn)(ScatterConfig{}, x.data(), idx.data(), x.data(), out.data(), dims.data(), 2, 2, 2, dt);
    }, m);
  }
  const std::vector<int64_t> idx = {0, 0, 0, 0};
  ExpectSameError("depth 3", out, [&](bool r) {
    (r ? refFn : fastFn)(ScatterConfig{}, x.data(), idx.data(), x.data(), out.data(), dims.data(), 2, 1, 3, dt);
  }, m);
  ExpectSameError("null dims", out, [&](bool r) {
    (r ? refFn : fastFn)(ScatterConfig{}, x.data(), idx.data(), x.data(), out.data(), nullptr, 2, 1, 1, dt);
  }, m);
  ExpectSameError("dtype invalid", out, [&](bool r) {
    (r ? refFn : fastFn)(ScatterConfig{}, x.data(), idx.data(), x.data(), out.data(), dims.data(), 2, 1, 1, DType::Invalid);
  }, m);
  return m;
}

Measure RunGatherND(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  auto refFn = Unerase<GatherNDFn>(ref), fastFn = Unerase<GatherNDFn>(fast);
  for (const NDCase& k : NDCases(c)) {
    const auto rank = static_cast<int64_t>(k.dims.size());
    const int64_t total = Prod(k.dims, 0), slice = Prod(k.dims, static_cast<size_t>(k.depth));
    for (const int64_t batch : {int64_t{1}, int64_t{3}}) {
      const int64_t count = std::min<int64_t>(total / slice + 3, 4096);
      if (batch * total > 400000) continue;
      const auto x = Values(c, dt, batch * total, c.seed + 31 + static_cast<uint64_t>(total), false);
      const auto idx = Tuples(c, k, batch * count, 47);
      const std::string where = fmt::format("batch {} dims {} depth {} count {}", batch, fmt::join(k.dims, "x"), k.depth, count);
      auto want = Output(dt, batch * count * slice), got = want;
      if (!RunBoth([&] { refFn(x.data(), idx.data(), want.data(), k.dims.data(), rank, batch, count, k.depth, dt); },
                   [&] { fastFn(x.data(), idx.data(), got.data(), k.dims.data(), rank, batch, count, k.depth, dt); },
                   got, where, m)) {
        continue;
      }
      CompareBytes(got, want, where, m);
    }
  }
  std::vector<uint8_t> x(64, 0), out = Output(dt, 6);
  const std::vector<int64_t> dims = {2, 3};
  for (const int64_t bad : {int64_t{3}, int64_t{-4}, kMaxI64}) {
    const std::vector<int64_t> idx = {0, 1, 1, bad};
    ExpectSameError(fmt::format("index {}", bad), out, [&](bool r) {
      (r ? refFn : fastFn)(x.data(), idx.data(), out.data(), dims.data(), 2, 1, 2, 2, dt);
    }, m);
  }
  const std::vector<int64_t> idx = {0, 0, 0, 0};
  ExpectSameError("depth -1", out, [&](bool r) {
    (r ? refFn : fastFn)(x.data(), idx.data(), out.data(), dims.data(), 2, 1, 1, -1, dt);
  }, m);
  ExpectSameError("null in", out, [&](bool r) {
    (r ? refFn : fastFn)(nullptr, idx.data(), out.data(), dims.data(), 2, 1, 1, 1, dt);
  }, m);
  ExpectSameError("dtype invalid", out, [&](bool r) {
    (r ? refFn : fastFn)(x.data(), idx.data(), out.data(), dims.data(), 2, 1, 1, 1, DType::Invalid);
  }, m);
  return m;
}

}  // namespace

void RegisterTensorIndexRunners(RunnerRegistry& registry) {
  registry["TopK"] = RunTopK;
  registry["ScatterElements"] = RunScatterElements;
  registry["ScatterND"] = RunScatterND;
  registry["GatherND"] = RunGatherND;
}

}  // namespace backplane::conformance
