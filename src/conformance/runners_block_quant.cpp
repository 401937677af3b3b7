// Runners for the BlockQuant families, over every format of AllBlockFormats().
//
// BlockDequant (BlockQuant.Dequantize) is exact: values must equal the reference's bit for bit,
// on blocks with finite scales and on blocks of arbitrary bytes (NaN/Inf/subnormal scales
// included); F32/F16/BF16 on values with and without specials. A NaN matches any NaN: when two
// NaN operands meet (d and m both NaN), IEEE 754 leaves open whose payload the result carries.
//
// BlockMatmul (BlockQuant.MatmulT): the reference is y = sum_i x_i w_i in f64 over the dequantised
// weights w (the reference's Dequantize), rounded to f32. A fast kernel may quantise each run of
// 32 activations (block b; the last may be shorter) to d_b q_i with d_b = max_{i in b} |x_i| / 127
// and |q_i| <= 127, which moves x_i by at most d_b / 2, and evaluate the rest in f32 with each
// weight as d q + m. Per output (r, o) the check is
//   |got - want| <= sum_b d_b (1/2 + 2^-13) sum_{i in b} |w_i|                 (activation codes)
//                 + g sum_b 127 d_b sum_{i in b} (|w_i - w0_i| + |w0_i|)       (f32 arithmetic)
//                 + 2^-24 |want|                                                (final rounding)
//                 + 1e-28 (1 + sum_i |w_i|)                   (blocks below 1e-30 taken as zero)
// with g = 2 (nb + 16) 2^-24, nb = ceil(in / 32), and w0 the dequantised weights of the same
// blocks with every code bit zero (the offset term m of w = d q + m; 0 for the 8-bit and float
// formats), so |w_i - w0_i| + |w0_i| bounds |d q_i| + |m|. The 2^-13 covers the f32 rounding of
// d_b and 1 / d_b. Non-finite results (activation rows with Inf/NaN, F32/F16/BF16 weights with
// specials) must match exactly. Quantised weights use finite scales here.
//
// BlockMatmul cases: rows 1, 2, 7 and 9 (fused and panel paths), several block counts and output
// sizes. Both runners: sizes split into several thread chunks (BlockMatmul, full matrix: the same
// bytes at 1 and 3 threads), buffers shifted off alignment, guard bytes around every output, and
// invalid calls that must fail with the reference's error without writing.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/block_format.hpp"
#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::conformance {
namespace {

using DequantizeFn = BP_RET_BlockDequant (*)(BP_PARAMS_BlockDequant);
using MatmulFn = BP_RET_BlockMatmul (*)(BP_PARAMS_BlockMatmul);

// Where a block keeps its scales: float fields (f16, or f32 for Q8_K) and every byte that is not
// a code bit (the fields and the packed 6/8-bit sub-block scales).
struct FloatField {
  int offset;
  int bytes;  // 2: f16, 4: f32
};
struct ScaleLayout {
  std::vector<FloatField> fields;
  std::vector<std::pair<int, int>> kept;  // [begin, end) byte ranges that are not codes
};

ScaleLayout ScalesOf(BlockFormat f) {
  switch (f) {
    case BlockFormat::Q4_0:
    case BlockFormat::Q5_0:
    case BlockFormat::Q8_0:
      return {{{0, 2}}, {{0, 2}}};
    case BlockFormat::Q4_1:
    case BlockFormat::Q5_1:
    case BlockFormat::Q8_1:
      return {{{0, 2}, {2, 2}}, {{0, 4}}};
    case BlockFormat::Q2_K:
      return {{{80, 2}, {82, 2}}, {{0, 16}, {80, 84}}};
    case BlockFormat::Q3_K:
      return {{{108, 2}}, {{96, 110}}};
    case BlockFormat::Q4_K:
    case BlockFormat::Q5_K:
      return {{{0, 2}, {2, 2}}, {{0, 16}}};
    case BlockFormat::Q6_K:
      return {{{208, 2}}, {{192, 210}}};
    case BlockFormat::Q8_K:
      return {{{0, 4}}, {{0, 4}}};
    default:
      return {};  // F32, F16, BF16: values, no scales
  }
}

DType FloatDType(BlockFormat f) {
  return f == BlockFormat::F16    ? DType::Float16
         : f == BlockFormat::BF16 ? DType::BFloat16
                                  : DType::Float32;
}

bool IsFloatFormat(BlockFormat f) { return LayoutOf(f).elements == 1; }

std::string Name(BlockFormat f) { return std::string(BlockFormatName(f)); }

// A random finite scale: random sign, magnitude in [2^-10, 2^-2).
float RandomScale(uint64_t seed, uint64_t index) {
  const auto r = PhiloxBits(seed, 71, index);
  const int e = static_cast<int>(r[0] % 8) - 10;
  const float v = std::ldexp(1.0f + static_cast<float>(r[1] >> 8) * 0x1.0p-24f, e);
  return (r[2] & 1) != 0 ? -v : v;
}

// `count` values of format f as blocks: random bytes; with finite_scales, every scale field
// replaced by a finite random value. Float formats: RandomStorage (specials unless finite_scales).
std::vector<uint8_t> RandomBlocks(BlockFormat f, int64_t count, uint64_t seed, bool finite_scales) {
  if (IsFloatFormat(f)) {
    auto s = RandomStorage(FloatDType(f), count, seed, 1.0, !finite_scales);
    s.resize(static_cast<size_t>(BlockBytes(f, count, "test", "count")));
    return s;
  }
  const BlockLayout layout = LayoutOf(f);
  const int64_t blocks = count / layout.elements;
  std::vector<uint8_t> s(static_cast<size_t>(blocks * layout.bytes));
  for (size_t i = 0; i < s.size(); i += 4) {
    const auto r = PhiloxBits(seed, 70, i / 4)[0];
    for (size_t k = 0; k < 4 && i + k < s.size(); ++k)
      s[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  if (finite_scales) {
    const ScaleLayout scales = ScalesOf(f);
    for (int64_t b = 0; b < blocks; ++b) {
      for (size_t k = 0; k < scales.fields.size(); ++k) {
        const FloatField& field = scales.fields[k];
        const float v = RandomScale(seed, static_cast<uint64_t>(b) * 4 + k);
        uint8_t* p = s.data() + b * layout.bytes + field.offset;
        if (field.bytes == 4) {
          std::memcpy(p, &v, 4);
        } else {
          const uint16_t h = F32ToF16(v);
          std::memcpy(p, &h, 2);
        }
      }
    }
  }
  return s;
}

// The same blocks with every code bit zero.
std::vector<uint8_t> ZeroCodes(BlockFormat f, const std::vector<uint8_t>& blocks) {
  std::vector<uint8_t> out(blocks.size(), 0);
  if (IsFloatFormat(f)) return out;
  const BlockLayout layout = LayoutOf(f);
  for (size_t b = 0; b + static_cast<size_t>(layout.bytes) <= blocks.size();
       b += static_cast<size_t>(layout.bytes)) {
    for (const auto& [begin, end] : ScalesOf(f).kept) {
      std::copy(blocks.begin() + static_cast<std::ptrdiff_t>(b) + begin,
                blocks.begin() + static_cast<std::ptrdiff_t>(b) + end,
                out.begin() + static_cast<std::ptrdiff_t>(b) + begin);
    }
  }
  return out;
}

std::vector<uint8_t> Guarded(size_t offset, size_t bytes) {
  return std::vector<uint8_t>(offset + bytes + 16, kGuard);
}

void SameBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
               const std::string& where, Measure& m) {
  if (got != want) Fail(m, where + ": bytes differ (outside the output, or after an error)");
}

// The bytes before an output at `offset` are untouched, and so are those after its `bytes`.
void Untouched(const std::vector<uint8_t>& got, size_t offset, size_t bytes,
               const std::string& where, Measure& m) {
  for (size_t i = 0; i < offset; ++i) {
    if (got[i] != kGuard)
      return Fail(m, fmt::format("{}: wrote before the output (byte {})", where, i));
  }
  CheckGuard(got, offset + bytes, where, m);
}

// ---- BlockDequant ------------------------------------------------------------------------------

Measure RunBlockDequant(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const auto r = Unerase<DequantizeFn>(ref), f = Unerase<DequantizeFn>(fast);
  const std::vector<int64_t> block_counts =
      Quick(c) ? std::vector<int64_t>{1, 2, 3, 17, 64}
               : std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 17, 33, 64, 255};
  for (const BlockFormat format : AllBlockFormats()) {
    const BlockLayout layout = LayoutOf(format);
    std::vector<int64_t> counts;
    for (const int64_t k : block_counts) counts.push_back(k * layout.elements);
    counts.push_back(3 * 65536 + 7 * layout.elements);  // several thread chunks
    for (const int64_t n : counts) {
      for (const bool finite_scales : {true, false}) {
        const uint64_t seed =
            c.seed + static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(format);
        const auto blocks = RandomBlocks(format, n, seed, finite_scales);
        const int64_t block_count = n / layout.elements;
        // Odd block counts: source one byte off alignment, output one f32 off.
        const size_t src_off = block_count % 2 == 1 ? 1 : 0, dst_off = block_count % 2 == 1 ? 4 : 0;
        const auto src = Shifted(blocks, src_off);
        const std::string where =
            fmt::format("{} n={} {}", Name(format), n,
                        IsFloatFormat(format) ? (finite_scales ? "plain" : "specials")
                                              : (finite_scales ? "finite scales" : "any bits"));
        auto want = Guarded(dst_off, static_cast<size_t>(n) * 4), got = want;
        if (!RunBoth(
                [&] { r(want.data() + dst_off, src.data() + src_off, n, format, DType::Float32); },
                [&] { f(got.data() + dst_off, src.data() + src_off, n, format, DType::Float32); },
                got, where, m)) {
          continue;
        }
        CompareElements(Unshifted(got, dst_off), Unshifted(want, dst_off), DType::Float32, n,
                        kExact, where, m);
        Untouched(got, dst_off, static_cast<size_t>(n) * 4, where, m);
      }
    }
  }
  // In place (the output overlaps the blocks): the fast kernel must give the reference's bytes.
  for (const BlockFormat format : {BlockFormat::F32, BlockFormat::Q8_0, BlockFormat::Q4_K}) {
    const int64_t n = 4 * LayoutOf(format).elements;
    auto want = RandomBlocks(format, n, c.seed + 3, true);
    want.resize(static_cast<size_t>(n) * 4 + 16, kGuard);
    auto got = want;
    const std::string where = fmt::format("{} in place", Name(format));
    if (RunBoth([&] { r(want.data(), want.data(), n, format, DType::Float32); },
                [&] { f(got.data(), got.data(), n, format, DType::Float32); }, where, m)) {
      SameBytes(got, want, where, m);
    }
  }
  // Invalid calls.
  const auto q = RandomBlocks(BlockFormat::Q4_1, 64, c.seed, true);
  std::vector<uint8_t> out(64 * 4 + 16, kGuard);
  const struct {
    const char* what;
    void* dst;
    const void* src;
    int64_t n;
    BlockFormat format;
    DType dst_format;
  } invalid[] = {
      {"count 48 (not whole q4_1 blocks)", out.data(), q.data(), 48, BlockFormat::Q4_1,
       DType::Float32},
      {"count -32", out.data(), q.data(), -32, BlockFormat::Q4_1, DType::Float32},
      {"null dst", nullptr, q.data(), 64, BlockFormat::Q4_1, DType::Float32},
      {"null src", out.data(), nullptr, 64, BlockFormat::Q4_1, DType::Float32},
      {"dst f64", out.data(), q.data(), 32, BlockFormat::Q4_1, DType::Float64},
      {"dst i8", out.data(), q.data(), 32, BlockFormat::Q4_1, DType::Int8},
      {"format 4 (unknown)", out.data(), q.data(), 32, static_cast<BlockFormat>(4), DType::Float32},
      {"format 99 (unknown)", out.data(), q.data(), 32, static_cast<BlockFormat>(99),
       DType::Float32},
      {"count 0, nulls", nullptr, nullptr, 0, BlockFormat::Q4_1, DType::Float32},
      {"count 0", out.data(), q.data(), 0, BlockFormat::Q6_K, DType::Float32},
  };
  for (const auto& k : invalid) {
    const auto before = out;
    const std::string want = ErrorOf([&] { r(k.dst, k.src, k.n, k.format, k.dst_format); });
    const auto after_ref = out;
    out = before;
    const std::string got = ErrorOf([&] { f(k.dst, k.src, k.n, k.format, k.dst_format); });
    SameErrors(got, want, fmt::format("invalid: {}", k.what), m);
    SameBytes(out, after_ref, fmt::format("invalid: {}", k.what), m);
    out = before;
  }
  return m;
}

// ---- BlockMatmul -------------------------------------------------------------------------------

// W [out, in] dequantised by the reference.
std::vector<float> DequantizedWeights(BlockFormat f, const std::vector<uint8_t>& blocks,
                                      int64_t count) {
  std::vector<float> w(static_cast<size_t>(count));
  cpu::ref::Table().BlockQuant_Dequantize(w.data(), blocks.data(), count, f, DType::Float32);
  return w;
}

// The bound of the header comment for every output [rows, out].
std::vector<double> MatmulBounds(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& w0, const std::vector<uint8_t>& want,
                                 int64_t rows, int64_t out, int64_t in) {
  const int64_t nb = (in + 31) / 32;
  const double g = 2.0 * static_cast<double>(nb + 16) * 0x1.0p-24;
  std::vector<double> bound(static_cast<size_t>(rows * out));
  std::vector<double> d(static_cast<size_t>(nb));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      double amax = 0.0;
      for (int64_t i = 32 * b; i < std::min(in, 32 * b + 32); ++i) {
        amax = std::max(amax, std::fabs(static_cast<double>(x[static_cast<size_t>(r * in + i)])));
      }
      d[static_cast<size_t>(b)] = amax / 127.0;
    }
    for (int64_t o = 0; o < out; ++o) {
      double quant = 0.0, arith = 0.0, wsum = 0.0;
      for (int64_t i = 0; i < in; ++i) {
        const double wi = w[static_cast<size_t>(o * in + i)],
                     w0i = w0[static_cast<size_t>(o * in + i)];
        const double db = d[static_cast<size_t>(i / 32)];
        quant += db * std::fabs(wi);
        arith += 127.0 * db * (std::fabs(wi - w0i) + std::fabs(w0i));
        wsum += std::fabs(wi);
      }
      const double y = LoadAsDouble(want, DType::Float32, r * out + o);
      bound[static_cast<size_t>(r * out + o)] =
          (0.5 + 0x1.0p-13) * quant + g * arith + 0x1.0p-24 * std::fabs(y) + 1e-28 * (1.0 + wsum);
    }
  }
  return bound;
}

struct MatmulCase {
  int64_t rows, out, in;
};

std::vector<MatmulCase> MatmulCases(BlockFormat f, bool quick) {
  const int64_t e = LayoutOf(f).elements;
  std::vector<int64_t> ins;
  if (e == 1) {
    ins = {1, 7, 33, 100};
  } else if (e == 32) {
    ins = quick ? std::vector<int64_t>{32, 96, 288} : std::vector<int64_t>{32, 64, 96, 288, 1536};
  } else {
    ins = quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{256, 512, 1536};
  }
  std::vector<MatmulCase> cases;
  for (const int64_t rows : {1, 2, 7, 9}) {
    for (const int64_t in : ins) {
      for (const int64_t out : {1, 5, 19}) cases.push_back({rows, out, in});
    }
  }
  // Several thread chunks (about 2^16 multiply-adds each).
  const int64_t in = e == 1 ? 32 : e;
  cases.push_back({1, 2 * 65536 / in + 9, in});
  cases.push_back({5, 4 * 65536 / (5 * in) + 3, in});
  return cases;
}

void CompareMatmul(MatmulFn r, MatmulFn f, BlockFormat format, const MatmulCase& k,
                   const std::vector<uint8_t>& blocks, const std::vector<float>& x,
                   const std::string& where, Measure& m) {
  const int64_t rows = k.rows, out = k.out, in = k.in;
  // Odd sizes: weights one byte off alignment, x and dst one f32 off.
  const size_t w_off = out % 2 == 1 ? 1 : 0, x_off = (rows * in) % 2 == 1 ? 4 : 0,
               y_off = (rows * out) % 2 == 1 ? 4 : 0;
  const auto wbuf = Shifted(blocks, w_off);
  std::vector<uint8_t> xbytes(x.size() * 4);
  std::memcpy(xbytes.data(), x.data(), xbytes.size());
  const auto xbuf = Shifted(xbytes, x_off);
  auto want = Guarded(y_off, static_cast<size_t>(rows * out) * 4), got = want;
  if (!RunBoth(
          [&] {
            r(want.data() + y_off, xbuf.data() + x_off, wbuf.data() + w_off, rows, out, in, format,
              DType::Float32);
          },
          [&] {
            f(got.data() + y_off, xbuf.data() + x_off, wbuf.data() + w_off, rows, out, in, format,
              DType::Float32);
          },
          got, where, m)) {
    return;
  }
  const auto w = DequantizedWeights(format, blocks, out * in);
  const auto w0 = DequantizedWeights(format, ZeroCodes(format, blocks), out * in);
  const auto want_y = Unshifted(want, y_off);
  CompareBounded(Unshifted(got, y_off), want_y, DType::Float32,
                 MatmulBounds(x, w, w0, want_y, rows, out, in), {0.0, 1.0}, where, m);
  Untouched(got, y_off, static_cast<size_t>(rows * out) * 4, where, m);
}

// The fast kernel's bytes at 1 and at 3 threads are the same (several thread chunks; full
// matrix only, as the quick one runs single-threaded).
void SameForAnyThreadCount(MatmulFn f, BlockFormat format, const MatmulCase& k,
                           const std::vector<uint8_t>& blocks, const std::vector<float>& x,
                           const std::string& where, Measure& m) {
  const int previous = cpu::NumThreads();
  std::vector<float> one(static_cast<size_t>(k.rows * k.out)), three(one.size());
  cpu::SetNumThreads(1);
  const std::string e1 = ErrorOf(
      [&] { f(one.data(), x.data(), blocks.data(), k.rows, k.out, k.in, format, DType::Float32); });
  cpu::SetNumThreads(3);
  const std::string e3 = ErrorOf([&] {
    f(three.data(), x.data(), blocks.data(), k.rows, k.out, k.in, format, DType::Float32);
  });
  cpu::SetNumThreads(previous);
  if (!e1.empty() || !e3.empty() || std::memcmp(one.data(), three.data(), one.size() * 4) != 0) {
    Fail(m, where + ": results differ between 1 and 3 threads");
  }
}

std::vector<float> Activations(int64_t n, uint64_t seed, double scale, bool specials) {
  const auto s = RandomStorage(DType::Float32, n, seed, scale, specials);
  std::vector<float> x(static_cast<size_t>(n));
  std::memcpy(x.data(), s.data(), x.size() * 4);
  return x;
}

Measure RunBlockMatmul(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const auto r = Unerase<MatmulFn>(ref), f = Unerase<MatmulFn>(fast);
  for (const BlockFormat format : AllBlockFormats()) {
    for (const MatmulCase& k : MatmulCases(format, Quick(c))) {
      const uint64_t seed = c.seed +
                            static_cast<uint64_t>(k.rows * 1000003 + k.out * 1009 + k.in) * 16 +
                            static_cast<uint64_t>(format);
      const auto blocks = RandomBlocks(format, k.out * k.in, seed, true);
      auto x = Activations(k.rows * k.in, seed + 1, 2.0, false);
      std::fill(x.begin(), x.begin() + std::min<int64_t>(k.in, 32), 0.0f);  // an all-zero block
      const std::string shape =
          fmt::format("{} rows={} out={} in={}", Name(format), k.rows, k.out, k.in);
      CompareMatmul(r, f, format, k, blocks, x, shape, m);
      if (k.rows >= 7 || k.in == 1536) {
        // Tiny activations, then activation rows with +-Inf, NaN, 1e-30 and +-60 among them.
        CompareMatmul(r, f, format, k, blocks, Activations(k.rows * k.in, seed + 2, 1e-20, false),
                      shape + " tiny x", m);
        CompareMatmul(r, f, format, k, blocks, Activations(k.rows * k.in, seed + 3, 2.0, true),
                      shape + " x specials", m);
      }
      if (IsFloatFormat(format) && k.rows == 2) {
        CompareMatmul(r, f, format, k, RandomBlocks(format, k.out * k.in, seed + 4, false), x,
                      shape + " w specials", m);
      }
      if (!Quick(c) && k.out > 64) SameForAnyThreadCount(f, format, k, blocks, x, shape, m);
    }
  }
  // dst overlapping x: the fast kernel must give the reference's bytes.
  {
    constexpr int64_t rows = 2, n = 64;
    constexpr size_t kXBytes = rows * n * 4;
    const auto blocks = RandomBlocks(BlockFormat::Q8_0, n * n, c.seed + 5, true);
    std::vector<uint8_t> want = RandomStorage(DType::Float32, rows * n, c.seed + 6, 2.0, false);
    want.resize(kXBytes + 16, kGuard);
    auto got = want;
    if (RunBoth(
            [&] {
              r(want.data(), want.data(), blocks.data(), rows, n, n, BlockFormat::Q8_0,
                DType::Float32);
            },
            [&] {
              f(got.data(), got.data(), blocks.data(), rows, n, n, BlockFormat::Q8_0,
                DType::Float32);
            },
            "q8_0 dst = x", m)) {
      SameBytes(got, want, "q8_0 dst = x", m);
    }
  }
  // Invalid calls.
  const auto w = RandomBlocks(BlockFormat::Q4_1, 64 * 4, c.seed, true);
  const auto x = Activations(2 * 64, c.seed + 7, 2.0, false);
  std::vector<uint8_t> out(2 * 4 * 4 + 16, kGuard);
  const struct {
    const char* what;
    void* dst;
    const void* x;
    const void* w;
    int64_t rows, out, in;
    BlockFormat format;
    DType dtype;
  } invalid[] = {
      {"in 48 (not whole q4_1 blocks)", out.data(), x.data(), w.data(), 2, 4, 48, BlockFormat::Q4_1,
       DType::Float32},
      {"in -64", out.data(), x.data(), w.data(), 2, 4, -64, BlockFormat::Q4_1, DType::Float32},
      {"rows -1", out.data(), x.data(), w.data(), -1, 4, 64, BlockFormat::Q4_1, DType::Float32},
      {"out -4", out.data(), x.data(), w.data(), 2, -4, 64, BlockFormat::Q4_1, DType::Float32},
      {"null dst", nullptr, x.data(), w.data(), 2, 4, 64, BlockFormat::Q4_1, DType::Float32},
      {"null x", out.data(), nullptr, w.data(), 2, 4, 64, BlockFormat::Q4_1, DType::Float32},
      {"null weights", out.data(), x.data(), nullptr, 2, 4, 64, BlockFormat::Q4_1, DType::Float32},
      {"dtype f64", out.data(), x.data(), w.data(), 2, 4, 64, BlockFormat::Q4_1, DType::Float64},
      {"dtype f16", out.data(), x.data(), w.data(), 2, 4, 64, BlockFormat::Q4_1, DType::Float16},
      {"format 4 (unknown)", out.data(), x.data(), w.data(), 2, 4, 64, static_cast<BlockFormat>(4),
       DType::Float32},
      {"in 64 for q6_k", out.data(), x.data(), w.data(), 2, 4, 64, BlockFormat::Q6_K,
       DType::Float32},
      {"rows 0", out.data(), x.data(), w.data(), 0, 4, 64, BlockFormat::Q4_1, DType::Float32},
      {"out 0", out.data(), x.data(), w.data(), 2, 0, 64, BlockFormat::Q4_1, DType::Float32},
      {"in 0", out.data(), x.data(), w.data(), 2, 4, 0, BlockFormat::Q4_1, DType::Float32},
      {"rows 0, nulls", nullptr, nullptr, nullptr, 0, 4, 64, BlockFormat::Q4_1, DType::Float32},
      {"overflowing sizes", out.data(), x.data(), w.data(), int64_t{1} << 40, int64_t{1} << 40, 64,
       BlockFormat::Q4_1, DType::Float32},
  };
  for (const auto& k : invalid) {
    const auto before = out;
    const std::string want =
        ErrorOf([&] { r(k.dst, k.x, k.w, k.rows, k.out, k.in, k.format, k.dtype); });
    const auto after_ref = out;
    out = before;
    const std::string got =
        ErrorOf([&] { f(k.dst, k.x, k.w, k.rows, k.out, k.in, k.format, k.dtype); });
    SameErrors(got, want, fmt::format("invalid: {}", k.what), m);
    SameBytes(out, after_ref, fmt::format("invalid: {}", k.what), m);
    out = before;
  }
  return m;
}

}  // namespace

void RegisterBlockQuantRunners(RunnerRegistry& r) {
  r["BlockDequant"] = RunBlockDequant;
  r["BlockMatmul"] = RunBlockMatmul;
}

}  // namespace backplane::conformance
