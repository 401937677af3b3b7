// Runners for the quantisation and bit-count families: Dequant (Dequant.Dequant, Dequant.Dequant4),
// Quant, and PosPop8/16/32/64/PosPopString. All of them are exact: codes, dequantised values and
// counts must equal the reference's bit for bit, errors must carry the same message, and a call
// that throws must leave its output untouched.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using DequantFn = BP_RET_Dequant (*)(BP_PARAMS_Dequant);
using QuantFn = BP_RET_Quant (*)(BP_PARAMS_Quant);
using PosPopStringFn = BP_RET_PosPopString (*)(BP_PARAMS_PosPopString);

constexpr DType kFloatFormats[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

void SameBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::string& where,
               Measure& m) {
  if (got != want) Fail(m, where + ": bytes differ (outside the output, or after an error)");
}

// ---- Quant -------------------------------------------------------------------------------------

struct QuantCase {
  float scale;
  int8_t zero_point;
};
constexpr QuantCase kQuantCases[] = {{0.05f, 0}, {0.25f, -3}, {1.0f, 100}, {3.0f, -128}, {1e-3f, 127}};

Measure RunQuant(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const auto r = Unerase<QuantFn>(ref), f = Unerase<QuantFn>(fast);
  for (const DType src : kFloatFormats) {
    for (const QuantCase& qc : kQuantCases) {
      const QuantConfig config{qc.scale, qc.zero_point};
      // The chunked, threaded size with the first configuration only: the others test rounding.
      for (const int64_t n : &qc == kQuantCases ? WithLarge(c.sizes) : c.sizes) {
        const uint64_t seed = c.seed + static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(src);
        // Random values with +-0, +-Inf, +-60 and 1e-30 mixed in (NaN replaced), values on and
        // next to the .5 ties of x / Scale, and values that saturate.
        auto random = Inputs(c, src, n, seed, 40.0 * qc.scale);
        auto ties = Inputs(c, src, n, seed + 1, 1.0, false);
        for (int64_t i = 0; i < n; ++i) {
          if (std::isnan(LoadAsDouble(random, src, i))) StoreAsDouble(random, src, i, (i % 2 ? 2.5 : -3.5) * qc.scale);
          const auto k = static_cast<int64_t>(PhiloxBits(seed, 21, static_cast<uint64_t>(i))[0] % 601) - 300;
          StoreAsDouble(ties, src, i, (static_cast<double>(k) + 0.5) * qc.scale);
        }
        for (const auto* x : {&random, &ties}) {
          if (n == kLarge && x == &ties && Quick(c)) continue;
          const std::string where = fmt::format("{} n={} scale={} zp={} {}", DTypeName(src), n, qc.scale,
                                                qc.zero_point, x == &random ? "random" : "ties");
          std::vector<uint8_t> want(static_cast<size_t>(n) + 8, 0x5A), got = want;
          const std::string want_error = ErrorOf([&] { r(want.data(), x->data(), n, config, DType::Int8, src); });
          const std::string got_error = ErrorOf([&] { f(got.data(), x->data(), n, config, DType::Int8, src); });
          if (SameErrors(got_error, want_error, where, m)) continue;
          CompareElements(got, want, DType::Int8, n, kExact, where + " q", m);
          SameBytes(got, want, where, m);
        }
      }
    }
    // Over 4M elements the kernel stages codes with non-temporal stores (full matrix only).
    if (!Quick(c)) {
      const int64_t n = (int64_t{4} << 20) + 5;
      const auto x = Inputs(c, src, n, c.seed + 17, 2.0, false);
      const std::string where = fmt::format("{} n={} (streamed)", DTypeName(src), n);
      std::vector<uint8_t> want(static_cast<size_t>(n) + 8, 0x5A), got = want;
      const std::string want_error = ErrorOf([&] { r(want.data(), x.data(), n, {0.05f, 0}, DType::Int8, src); });
      const std::string got_error = ErrorOf([&] { f(got.data() + 1, x.data(), n, {0.05f, 0}, DType::Int8, src); });
      std::memmove(got.data(), got.data() + 1, static_cast<size_t>(n));  // misaligned output
      if (!SameErrors(got_error, want_error, where, m)) CompareElements(got, want, DType::Int8, n, kExact, where + " q", m);
    }
    // A NaN anywhere throws before anything is written.
    for (const int64_t n : {int64_t{1}, int64_t{40}, !Quick(c) ? kLarge : int64_t{70001}}) {
      for (const int64_t at : {int64_t{0}, n / 2, n - 1}) {
        auto x = Inputs(c, src, n, c.seed + 5, 2.0, false);
        StoreAsDouble(x, src, at, NAN);
        const std::string where = fmt::format("{} NaN at {} of {}", DTypeName(src), at, n);
        std::vector<uint8_t> want(static_cast<size_t>(n) + 8, 0x5A), got = want;
        const std::string want_error = ErrorOf([&] { r(want.data(), x.data(), n, {0.1f, 0}, DType::Int8, src); });
        const std::string got_error = ErrorOf([&] { f(got.data(), x.data(), n, {0.1f, 0}, DType::Int8, src); });
        SameErrors(got_error, want_error, where, m);
        SameBytes(got, want, where, m);
      }
    }
  }
  // Invalid arguments.
  auto x = RandomStorage(DType::Float32, 16, c.seed, 2.0, false);
  std::vector<uint8_t> buf(24, 0x5A);
  const struct {
    const char* what;
    void* dst;
    const void* src;
    int64_t n;
    QuantConfig config;
    DType dst_format, src_format;
  } invalid[] = {
      {"scale 0", buf.data(), x.data(), 16, {0.0f, 0}, DType::Int8, DType::Float32},
      {"scale -1", buf.data(), x.data(), 16, {-1.0f, 0}, DType::Int8, DType::Float32},
      {"scale inf", buf.data(), x.data(), 16, {INFINITY, 0}, DType::Int8, DType::Float32},
      {"scale nan", buf.data(), x.data(), 16, {NAN, 0}, DType::Int8, DType::Float32},
      {"dst u8", buf.data(), x.data(), 16, {1.0f, 0}, DType::Uint8, DType::Float32},
      {"src i8", buf.data(), x.data(), 16, {1.0f, 0}, DType::Int8, DType::Int8},
      {"count -1", buf.data(), x.data(), -1, {1.0f, 0}, DType::Int8, DType::Float32},
      {"null dst", nullptr, x.data(), 16, {1.0f, 0}, DType::Int8, DType::Float32},
      {"null src", buf.data(), nullptr, 16, {1.0f, 0}, DType::Int8, DType::Float32},
      {"count 0, nulls", nullptr, nullptr, 0, {1.0f, 0}, DType::Int8, DType::Float32},
  };
  for (const auto& k : invalid) {
    const auto before = buf;
    const std::string want = ErrorOf([&] { r(k.dst, k.src, k.n, k.config, k.dst_format, k.src_format); });
    buf = before;
    const std::string got = ErrorOf([&] { f(k.dst, k.src, k.n, k.config, k.dst_format, k.src_format); });
    SameErrors(got, want, fmt::format("invalid: {}", k.what), m);
    if (!want.empty()) SameBytes(buf, before, fmt::format("invalid: {}", k.what), m);
  }
  return m;
}

// ---- Dequant -----------------------------------------------------------------------------------

Measure RunDequant(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const auto r = Unerase<DequantFn>(ref), f = Unerase<DequantFn>(fast);
  const bool int4 = c.dtype == DType::Int4;
  // Zero points at both ends of the range; a large Scale overflows f16 to Inf.
  const std::vector<DequantConfig> configs =
      int4 ? std::vector<DequantConfig>{{0.05f, 0}, {3.0f, -8}, {5000.0f, 7}, {0.7f, 3}}
           : std::vector<DequantConfig>{{0.05f, 0}, {3.0f, -128}, {1000.0f, 127}, {1e-3f, 5}};
  for (const DType dst : kFloatFormats) {
    for (const DequantConfig& config : configs) {
      for (const int64_t n : &config == configs.data() || !Quick(c) ? WithLarge(c.sizes) : c.sizes) {
        const auto& q = Inputs(c, c.dtype, n, c.seed + static_cast<uint64_t>(n));
        const std::string where =
            fmt::format("{} n={} scale={} zp={}", DTypeName(dst), n, config.Scale, config.ZeroPoint);
        std::vector<uint8_t> want(DTypeStorageBytes(dst, n) + 8, kGuard), got = want;
        const std::string want_error = ErrorOf([&] { r(want.data(), q.data(), n, config, dst, c.dtype); });
        const std::string got_error = ErrorOf([&] { f(got.data(), q.data(), n, config, dst, c.dtype); });
        if (SameErrors(got_error, want_error, where, m)) continue;
        CompareElements(got, want, dst, n, kExact, where + " y", m);
        SameBytes(got, want, where, m);
      }
    }
  }
  const auto q = RandomStorage(c.dtype, 16, c.seed);
  std::vector<uint8_t> buf(64 + 8, kGuard);
  const struct {
    const char* what;
    void* dst;
    const void* src;
    int64_t n;
    DequantConfig config;
    DType dst_format, src_format;
  } invalid[] = {
      {"scale 0", buf.data(), q.data(), 16, {0.0f, 0}, DType::Float32, c.dtype},
      {"scale nan", buf.data(), q.data(), 16, {NAN, 0}, DType::Float32, c.dtype},
      {"scale -inf", buf.data(), q.data(), 16, {-INFINITY, 0}, DType::Float32, c.dtype},
      {"zero point 8", buf.data(), q.data(), 16, {1.0f, 8}, DType::Float32, c.dtype},
      {"zero point -9", buf.data(), q.data(), 16, {1.0f, -9}, DType::Float32, c.dtype},
      {"dst i8", buf.data(), q.data(), 16, {1.0f, 0}, DType::Int8, c.dtype},
      {"src u8", buf.data(), q.data(), 16, {1.0f, 0}, DType::Float32, DType::Uint8},
      {"count -1", buf.data(), q.data(), -1, {1.0f, 0}, DType::Float32, c.dtype},
      {"null dst", nullptr, q.data(), 16, {1.0f, 0}, DType::Float32, c.dtype},
      {"null src", buf.data(), nullptr, 16, {1.0f, 0}, DType::Float32, c.dtype},
      {"count 0, nulls", nullptr, nullptr, 0, {1.0f, 0}, DType::Float32, c.dtype},
  };
  for (const auto& k : invalid) {
    const auto before = buf;
    const std::string want = ErrorOf([&] { r(k.dst, k.src, k.n, k.config, k.dst_format, k.src_format); });
    const auto after_ref = buf;
    buf = before;
    const std::string got = ErrorOf([&] { f(k.dst, k.src, k.n, k.config, k.dst_format, k.src_format); });
    SameErrors(got, want, fmt::format("invalid: {}", k.what), m);
    SameBytes(buf, after_ref, fmt::format("invalid: {}", k.what), m);
    buf = before;
  }
  return m;
}

// ---- PosPop ------------------------------------------------------------------------------------

// Words of one pattern: random, all ones, alternating bits, sparse, or a ramp.
template <class Word>
std::vector<Word> Words(int pattern, int64_t n, uint64_t seed) {
  std::vector<Word> w(static_cast<size_t>(n) + 1);
  for (int64_t i = 0; i < n; ++i) {
    const auto idx = static_cast<uint64_t>(i);
    const auto r = PhiloxBits(seed, 31, idx);
    const uint64_t bits = (uint64_t{r[0]} << 32) | r[1];
    const uint64_t sparse = bits & ((uint64_t{r[2]} << 32) | r[3]) & (bits >> 7);
    const uint64_t v = pattern == 0   ? bits
                       : pattern == 1 ? ~uint64_t{0}
                       : pattern == 2 ? 0x5555555555555555ull << (i % 2)
                       : pattern == 3 ? sparse
                                      : idx * 0x9E3779B97F4A7C15ull;
    w[static_cast<size_t>(i)] = static_cast<Word>(v);
  }
  return w;
}

template <class Word, class Call>
void ComparePosPop(const Call& call_ref, const Call& call_fast, int64_t n, uint64_t seed, Measure& m) {
  constexpr int kBits = std::numeric_limits<Word>::digits;
  for (int pattern = 0; pattern < 5; ++pattern) {
    const std::vector<Word> buf = Words<Word>(pattern, n, seed + static_cast<uint64_t>(pattern));
    std::vector<int64_t> want(kBits + 1), got;
    for (int b = 0; b <= kBits; ++b) want[static_cast<size_t>(b)] = static_cast<int64_t>(PhiloxBits(seed, 41, b)[0]);
    got = want;
    const std::string where = fmt::format("n={} pattern {}", n, pattern);
    const std::string want_error = ErrorOf([&] { call_ref(want.data(), buf.data(), n); });
    const std::string got_error = ErrorOf([&] { call_fast(got.data(), buf.data(), n); });
    if (SameErrors(got_error, want_error, where, m)) continue;
    for (int b = 0; b <= kBits; ++b) {
      const double err = std::fabs(static_cast<double>(got[static_cast<size_t>(b)] - want[static_cast<size_t>(b)]));
      m.max_error = std::max(m.max_error, err);
    }
    if (got != want) Fail(m, fmt::format("{}: counts differ", where));
  }
}

template <class Word, class Call>
void PosPopErrors(const Call& call_ref, const Call& call_fast, Measure& m) {
  constexpr int kBits = std::numeric_limits<Word>::digits;
  const std::vector<Word> ones(9, static_cast<Word>(~uint64_t{0}));
  std::vector<int64_t> counts(kBits, 5);
  counts[kBits / 2] = std::numeric_limits<int64_t>::max() - 3;  // overflows after 4 words
  const struct {
    const char* what;
    int64_t* counts;
    const Word* buf;
    int64_t n;
  } cases[] = {
      {"count -1", counts.data(), ones.data(), -1},
      {"null buf", counts.data(), nullptr, 3},
      {"null counts", nullptr, ones.data(), 3},
      {"null counts, count 0", nullptr, ones.data(), 0},
      {"overflow", counts.data(), ones.data(), 9},
      {"no overflow", counts.data(), ones.data(), 3},
  };
  for (const auto& k : cases) {
    const auto before = counts;
    const std::string want = ErrorOf([&] { call_ref(k.counts, k.buf, k.n); });
    const auto after_ref = counts;
    counts = before;
    const std::string got = ErrorOf([&] { call_fast(k.counts, k.buf, k.n); });
    SameErrors(got, want, fmt::format("invalid: {}", k.what), m);
    if (counts != after_ref) Fail(m, fmt::format("invalid: {}: counts differ", k.what));
    counts = before;
  }
}

// Sizes in words, plus over 261 KiB (255 blocks of 16 64-byte vectors: the u8 counters are
// flushed on every target); the full matrix adds more than 64K words and about 1 MiB.
template <class Word>
std::vector<int64_t> PosPopSizes(const RunContext& c) {
  auto sizes = !Quick(c) ? WithLarge(c.sizes) : c.sizes;
  sizes.push_back(static_cast<int64_t>((!Quick(c) ? (1u << 20) : 300000u) / sizeof(Word)) + 3);
  return sizes;
}

template <class Word>
Measure RunPosPop(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  using Fn = void (*)(int64_t*, const Word*, int64_t);
  using Call = std::function<void(int64_t*, const Word*, int64_t)>;
  const Call r = Unerase<Fn>(ref), f = Unerase<Fn>(fast);
  Measure m;
  for (const int64_t n : PosPopSizes<Word>(c)) ComparePosPop<Word>(r, f, n, c.seed + static_cast<uint64_t>(n), m);
  PosPopErrors<Word>(r, f, m);
  return m;
}

Measure RunPosPopString(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  const auto rs = Unerase<PosPopStringFn>(ref), fs = Unerase<PosPopStringFn>(fast);
  using Call = std::function<void(int64_t*, const uint8_t*, int64_t)>;
  auto as_string = [](PosPopStringFn fn) {
    return Call([fn](int64_t* counts, const uint8_t* buf, int64_t n) {
      const auto* chars = reinterpret_cast<const char*>(buf);
      fn(counts, n > 0 ? std::string_view(chars, static_cast<size_t>(n)) : std::string_view());
    });
  };
  const Call r = as_string(rs), f = as_string(fs);
  Measure m;
  for (const int64_t n : PosPopSizes<uint8_t>(c)) ComparePosPop<uint8_t>(r, f, n, c.seed + static_cast<uint64_t>(n), m);
  // Empty strings with null counts are valid; a non-empty one with null counts throws.
  const std::string want = ErrorOf([&] { rs(nullptr, std::string_view("abc")); });
  const std::string got = ErrorOf([&] { fs(nullptr, std::string_view("abc")); });
  SameErrors(got, want, "null counts", m);
  const std::string want_empty = ErrorOf([&] { rs(nullptr, std::string_view()); });
  const std::string got_empty = ErrorOf([&] { fs(nullptr, std::string_view()); });
  SameErrors(got_empty, want_empty, "empty string, null counts", m);
  return m;
}

}  // namespace

void RegisterQuantRunners(RunnerRegistry& r) {
  r["Quant"] = RunQuant;
  r["Dequant"] = RunDequant;
  r["PosPop8"] = RunPosPop<uint8_t>;
  r["PosPop16"] = RunPosPop<uint16_t>;
  r["PosPop32"] = RunPosPop<uint32_t>;
  r["PosPop64"] = RunPosPop<uint64_t>;
  r["PosPopString"] = RunPosPopString;
}

}  // namespace backplane::conformance
