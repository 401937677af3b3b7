// Runner for the PoolNd family (MaxPoolNd, AvgPoolNd): the fast kernel must match the reference bit
// for bit, values and indices, over 1- to 3-D windows with strides 1 to 3, dilations, asymmetric
// pads, ceil mode, count_include_pad and both index layouts, on random values with specials and on
// ties (-2 .. 2, both zeros, NaN), with guard bytes after every output. Invalid calls must throw the
// reference's error without writing.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using PoolNdFn = BP_RET_PoolNd (*)(BP_PARAMS_PoolNd);

struct PoolCase {
  int64_t planes;
  int32_t rank;
  int64_t in[3], kernel[3], stride[3], dilation[3], padBegin[3], padEnd[3];
  bool ceil;
};

std::vector<PoolCase> Cases(const RunContext& c) {
  std::vector<PoolCase> cases;
  for (const int64_t n : c.sizes) {
    if (n < 1 || n > 4096) continue;
    const int64_t w = std::min<int64_t>(n, 300);
    // 1-D over the sizes; 2-D and 3-D with the size folded into the last axis.
    cases.push_back({3, 1, {w}, {3}, {1}, {1}, {1}, {1}, false});
    cases.push_back({2, 1, {w + 2}, {2}, {2}, {2}, {0}, {1}, true});
    cases.push_back({2, 2, {5, w % 61 + 1}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {0, 1}, n % 2 == 0});
    cases.push_back({1, 2, {7, w % 97 + 3}, {2, 3}, {1, 3}, {2, 1}, {0, 2}, {1, 1}, true});
    cases.push_back({2, 3, {3, 4, w % 33 + 2}, {2, 2, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}, n % 3 == 0});
  }
  // A threaded case over more than 64 Ki elements: many planes of a 3x3 stride-2 pool (ResNet's).
  cases.push_back({64, 2, {56, 57}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false});
  return cases;
}

PoolNdConfig ConfigOf(const PoolCase& k) {
  PoolNdConfig cfg;
  cfg.Rank = k.rank;
  cfg.CeilMode = k.ceil;
  for (int i = 0; i < k.rank; ++i) {
    cfg.In[i] = k.in[i];
    cfg.Kernel[i] = k.kernel[i];
    cfg.Stride[i] = k.stride[i];
    cfg.Dilation[i] = k.dilation[i];
    cfg.PadBegin[i] = k.padBegin[i];
    cfg.PadEnd[i] = k.padEnd[i];
    cfg.Out[i] = PoolNdExtent(k.in[i], k.kernel[i], k.stride[i], k.dilation[i], k.padBegin[i], k.padEnd[i], k.ceil);
  }
  return cfg;
}

int64_t Count(const PoolNdConfig& cfg, const int64_t* sizes) {
  int64_t n = 1;
  for (int i = 0; i < cfg.Rank; ++i) n *= sizes[i];
  return n;
}

// Random values (floats with specials, integers over their full range) or ties.
std::vector<uint8_t> Values(const RunContext& c, DType dt, int64_t count, uint64_t seed, bool ties) {
  if (IsFloatingPoint(dt)) {
    std::vector<uint8_t> s = Inputs(c, dt, count, seed, 2.0, !ties);
    if (!ties) return s;
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t r = PhiloxBits(seed, 51, static_cast<uint64_t>(i))[0];
      double v = static_cast<double>(static_cast<int>(r % 5) - 2);
      if (v == 0.0 && (r >> 8) % 2 == 1) v = -0.0;
      if ((r >> 12) % 13 == 3) v = NAN;
      StoreAsDouble(s, dt, i, v);
    }
    return s;
  }
  const auto bytes = static_cast<size_t>(DTypeBits(dt) / 8);
  std::vector<uint8_t> s(bytes * static_cast<size_t>(count) + 8, 0);
  for (int64_t i = 0; i < count; ++i) {
    const auto bits = PhiloxBits(seed, 52, static_cast<uint64_t>(i));
    uint64_t v = (uint64_t{bits[0]} << 32) | bits[1];
    if (ties) v = static_cast<uint64_t>(static_cast<int64_t>(v % 5) - 2);
    std::memcpy(s.data() + static_cast<size_t>(i) * bytes, &v, bytes);
  }
  return s;
}

std::vector<uint8_t> Output(DType dt, int64_t count) {
  return std::vector<uint8_t>(DTypeStorageBytes(dt, count) + 16, kGuard);
}

Measure RunPoolNd(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  const bool isMax = c.method == "PoolNd.MaxPoolNd";
  auto refFn = Unerase<PoolNdFn>(ref), fastFn = Unerase<PoolNdFn>(fast);
  int variant = 0;
  for (const PoolCase& k : Cases(c)) {
    const PoolNdConfig base = ConfigOf(k);
    const int64_t inCount = k.planes * Count(base, base.In), outCount = k.planes * Count(base, base.Out);
    for (const bool ties : {false, true}) {
      const auto x = Values(c, dt, inCount, c.seed + static_cast<uint64_t>(inCount) + (ties ? 7 : 0), ties);
      PoolNdConfig cfg = base;
      ++variant;
      if (isMax) {
        cfg.IndicesOverTensor = variant % 2 == 0;
        cfg.ColumnMajorIndices = variant % 3 == 0;
      } else {
        cfg.CountIncludePad = variant % 2 == 0;
      }
      const std::string where =
          fmt::format("planes {} rank {} in [{}, {}, {}] kernel [{}, {}, {}] ceil {} ties {} tensor-indices {} "
                      "column-major {} include-pad {}",
                      k.planes, k.rank, base.In[0], base.In[1], base.In[2], base.Kernel[0], base.Kernel[1],
                      base.Kernel[2], k.ceil, ties, cfg.IndicesOverTensor, cfg.ColumnMajorIndices, cfg.CountIncludePad);
      auto want = Output(dt, outCount), got = want;
      auto wantI = Output(DType::Int64, outCount), gotI = wantI;
      const bool withIndices = isMax && variant % 4 != 1;
      auto idx = [&](std::vector<uint8_t>& v) { return withIndices ? reinterpret_cast<int64_t*>(v.data()) : nullptr; };
      if (!RunBoth([&] { refFn(cfg, x.data(), want.data(), idx(wantI), k.planes, dt); },
                   [&] { fastFn(cfg, x.data(), got.data(), idx(gotI), k.planes, dt); }, got, where, m)) {
        continue;
      }
      CompareBytes(got, want, where + " values", m);
      CompareBytes(gotI, wantI, where + " indices", m);
    }
  }
  // Invalid calls.
  std::vector<uint8_t> x(256, 0), out = Output(dt, 16);
  std::vector<int64_t> idx(16);
  auto call = [&](PoolNdConfig cfg, const void* in, int64_t* indices, DType d) {
    return [&, cfg, in, indices, d](bool r) { (r ? refFn : fastFn)(cfg, in, out.data(), indices, 1, d); };
  };
  PoolNdConfig good;
  good.Rank = 1;
  good.In[0] = 4;
  good.Kernel[0] = 2;
  good.Stride[0] = 2;
  good.Out[0] = 2;
  PoolNdConfig bad = good;
  bad.Rank = 0;
  ExpectSameError("rank 0", out, call(bad, x.data(), nullptr, dt), m);
  bad = good;
  bad.Kernel[0] = 0;
  ExpectSameError("kernel 0", out, call(bad, x.data(), nullptr, dt), m);
  bad = good;
  bad.Out[0] = 3;
  ExpectSameError("out mismatch", out, call(bad, x.data(), nullptr, dt), m);
  bad = good;
  bad.PadBegin[0] = 2;
  bad.Out[0] = 3;
  ExpectSameError("window in padding", out, call(bad, x.data(), nullptr, dt), m);
  ExpectSameError("null in", out, call(good, nullptr, nullptr, dt), m);
  ExpectSameError("dtype invalid", out, call(good, x.data(), nullptr, DType::Invalid), m);
  if (!isMax) ExpectSameError("indices on an average", out, call(good, x.data(), idx.data(), dt), m);
  return m;
}

}  // namespace

void RegisterPoolNdRunners(RunnerRegistry& registry) { registry["PoolNd"] = RunPoolNd; }

}  // namespace backplane::conformance
