// BlockQuant.Dequantize and BlockQuant.MatmulT reference kernels (cpu::CreateReferenceBackend).
// Golden data: tests/golden/gen_block_quant.py (data/block_quant/). Expected values come from
// gguf-py 0.19.0's own dequantiser, except Q8_1 and Q8_K, which gguf-py cannot dequantise: those
// come from the script's separate NumPy decoder of ggml-common.h's layout ("source": "numpy").
// Dequantize is compared bit for bit (gguf-py does ggml's f32 operations in ggml's order);
// MatmulT against the float64 NumPy product x @ W.T of the gguf-py-dequantised weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/block_format.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/io.hpp"
#include "support/golden.hpp"

namespace backplane {
namespace {

constexpr uint32_t kSentinel = 0xA5A5A5A5u;

struct GoldenFormat {
  BlockFormat format;
  std::string name;
  int64_t count = 0;            // values
  std::vector<uint8_t> blocks;  // count / elements blocks
  std::vector<float> values;    // the expected dequantised values
};

BlockFormat FormatNamed(const std::string& name) {
  const auto format = BlockFormatFromName(name);
  if (!format) ADD_FAILURE() << "unknown format in golden data: " << name;
  return format.value_or(BlockFormat::F32);
}

GoldenFormat LoadFormat(const std::string& name) {
  GoldenFormat g;
  g.format = FormatNamed(name);
  g.name = name;
  const Tensor blocks = io::ReadNpy(test::GoldenPath("block_quant/" + name + ".blocks.npy"));
  const Tensor values = io::ReadNpy(test::GoldenPath("block_quant/" + name + ".values.npy"));
  EXPECT_EQ(blocks.dtype(), DType::Uint8);
  EXPECT_EQ(values.dtype(), DType::Float32);
  g.blocks.assign(blocks.data_as<uint8_t>(), blocks.data_as<uint8_t>() + blocks.numel());
  g.values.assign(values.data_as<float>(), values.data_as<float>() + values.numel());
  g.count = values.numel();
  EXPECT_EQ(BlockBytes(g.format, g.count, "test", "count"), blocks.numel()) << name;
  return g;
}

std::vector<uint8_t> FromHex(const std::string& hex) {
  EXPECT_EQ(hex.size() % 2, 0u);
  std::vector<uint8_t> bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return bytes;
}

std::vector<float> FloatsFromHex(const std::string& hex) {
  const std::vector<uint8_t> bytes = FromHex(hex);
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t bits = uint32_t{bytes[4 * i]} | (uint32_t{bytes[4 * i + 1]} << 8) |
                          (uint32_t{bytes[4 * i + 2]} << 16) | (uint32_t{bytes[4 * i + 3]} << 24);
    out[i] = std::bit_cast<float>(bits);
  }
  return out;
}

// An f32 output of `count` values plus 16 guard values, every one holding the sentinel bits.
std::vector<float> Poisoned(int64_t count) {
  return std::vector<float>(static_cast<size_t>(count) + 16, std::bit_cast<float>(kSentinel));
}

bool Untouched(const std::vector<float>& out, size_t from = 0) {
  for (size_t i = from; i < out.size(); ++i) {
    if (std::bit_cast<uint32_t>(out[i]) != kSentinel) return false;
  }
  return true;
}

::testing::AssertionResult SameBits(const float* got, const std::vector<float>& want) {
  int64_t bad = 0;
  int64_t first = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i])) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const size_t f = static_cast<size_t>(first);
  return ::testing::AssertionFailure()
         << bad << " of " << want.size() << " values differ; first at " << first << ": got "
         << got[f] << " (0x" << std::hex << std::bit_cast<uint32_t>(got[f]) << "), want " << want[f]
         << " (0x" << std::bit_cast<uint32_t>(want[f]) << ")";
}

class BlockQuantReference : public ::testing::Test {
 public:
  BlockQuantSurface& bq() { return backend_->BlockQuant(); }

  // Dequantizes into a poisoned buffer; checks nothing past `count` was written.
  std::vector<float> Dequantize(const std::vector<uint8_t>& src, int64_t count,
                                BlockFormat format) {
    std::vector<float> out = Poisoned(count);
    bq().Dequantize(out.data(), src.data(), count, format, DType::Float32);
    EXPECT_TRUE(Untouched(out, static_cast<size_t>(count))) << "wrote past count";
    out.resize(static_cast<size_t>(count));
    return out;
  }

  std::unique_ptr<Backend> backend_ = cpu::CreateReferenceBackend();
};

TEST_F(BlockQuantReference, DequantizeMatchesGoldenBitExactly) {
  const nlohmann::json manifest = test::LoadGolden("block_quant/manifest.json");
  std::vector<BlockFormat> covered;
  for (const auto& c : manifest["dequant"]) {
    const GoldenFormat g = LoadFormat(c["format"].get<std::string>());
    covered.push_back(g.format);
    const std::vector<float> got = Dequantize(g.blocks, g.count, g.format);
    EXPECT_TRUE(SameBits(got.data(), g.values))
        << g.name << " (expected values from " << c["source"].get<std::string>() << ")";
  }
  for (BlockFormat format : AllBlockFormats()) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), format), covered.end())
        << "no golden data for " << BlockFormatName(format);
  }
}

// The golden blocks exercise the scale edge cases they are meant to: for each quantised format,
// the first f16 scale field holds +-0, negative and subnormal values in some blocks.
TEST_F(BlockQuantReference, GoldenScalesCoverZeroNegativeAndSubnormal) {
  const std::vector<std::pair<std::string, int>> firstScale = {
      {"q4_0", 0},  {"q4_1", 0},   {"q5_0", 0}, {"q5_1", 0}, {"q8_0", 0},  {"q8_1", 0},
      {"q2_k", 80}, {"q3_k", 108}, {"q4_k", 0}, {"q5_k", 0}, {"q6_k", 208}};
  for (const auto& [name, offset] : firstScale) {
    const GoldenFormat g = LoadFormat(name);
    const int64_t bytes = LayoutOf(g.format).bytes;
    bool zero = false, negative = false, subnormal = false;
    for (size_t b = 0; b + static_cast<size_t>(bytes) <= g.blocks.size();
         b += static_cast<size_t>(bytes)) {
      const uint16_t h =
          static_cast<uint16_t>(g.blocks[b + offset] | (g.blocks[b + offset + 1] << 8));
      zero = zero || (h & 0x7FFF) == 0;
      negative = negative || (h & 0x8000) != 0;
      subnormal = subnormal || ((h & 0x7C00) == 0 && (h & 0x03FF) != 0);
    }
    EXPECT_TRUE(zero && negative && subnormal) << name;
  }
}

// 2^16 values: golden blocks repeated; every copy must decode to the same golden values.
TEST_F(BlockQuantReference, DequantizeLargeCount) {
  for (const std::string name : {"q4_1", "q8_0", "q6_k", "q4_k"}) {
    const GoldenFormat g = LoadFormat(name);
    const int64_t count = int64_t{1} << 16;
    const int64_t elements = LayoutOf(g.format).elements;
    const int64_t bytes = LayoutOf(g.format).bytes;
    const int64_t goldenBlocks = g.count / elements;
    std::vector<uint8_t> src;
    std::vector<float> want;
    for (int64_t b = 0; b < count / elements; ++b) {
      const int64_t k = (b * 7) % goldenBlocks;  // a permutation-like walk over the golden blocks
      src.insert(src.end(), g.blocks.begin() + k * bytes, g.blocks.begin() + (k + 1) * bytes);
      want.insert(want.end(), g.values.begin() + k * elements,
                  g.values.begin() + (k + 1) * elements);
    }
    const std::vector<float> got = Dequantize(src, count, g.format);
    EXPECT_TRUE(SameBits(got.data(), want)) << name;
  }
}

TEST_F(BlockQuantReference, DequantizeCountZeroWritesNothing) {
  for (BlockFormat format : AllBlockFormats()) {
    EXPECT_NO_THROW(bq().Dequantize(nullptr, nullptr, 0, format, DType::Float32));
    std::vector<float> out = Poisoned(0);
    const uint8_t byte = 0;
    bq().Dequantize(out.data(), &byte, 0, format, DType::Float32);
    EXPECT_TRUE(Untouched(out)) << BlockFormatName(format);
  }
}

// Closed-form blocks built here, independent of the golden files.
TEST_F(BlockQuantReference, DequantizeKnownBlocks) {
  // Q4_1: d = 0.5 (0x3800), m = -4 (0xC400); qs[j] = (15 - j) << 4 | j.
  std::vector<uint8_t> q41 = {0x00, 0x38, 0x00, 0xC4};
  for (int j = 0; j < 16; ++j) q41.push_back(static_cast<uint8_t>(((15 - j) << 4) | j));
  std::vector<float> got = Dequantize(q41, 32, BlockFormat::Q4_1);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(got[static_cast<size_t>(j)], 0.5f * static_cast<float>(j) - 4.0f) << j;
    EXPECT_EQ(got[static_cast<size_t>(j + 16)], 0.5f * static_cast<float>(15 - j) - 4.0f) << j;
  }
  // Q8_0: d = 2^-24 (the smallest f16 subnormal, 0x0001), qs = -128..127 step 8.
  std::vector<uint8_t> q80 = {0x01, 0x00};
  for (int j = 0; j < 32; ++j)
    q80.push_back(static_cast<uint8_t>(static_cast<int8_t>(-128 + 8 * j)));
  got = Dequantize(q80, 32, BlockFormat::Q8_0);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(got[static_cast<size_t>(j)], std::ldexp(static_cast<float>(-128 + 8 * j), -24)) << j;
  }
  // Q8_0 with d = +Inf: q = 0 gives NaN (0 * Inf), q = 1 gives +Inf, q = -1 gives -Inf.
  std::vector<uint8_t> inf = {0x00, 0x7C, 0x00, 0x01, 0xFF};
  inf.resize(34, 0);
  got = Dequantize(inf, 32, BlockFormat::Q8_0);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[2], -std::numeric_limits<float>::infinity());
  // F16 and BF16 NaN stay NaN; F32 bits pass through unchanged.
  got = Dequantize({0x00, 0x7E, 0x01, 0x7C}, 2, BlockFormat::F16);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
  got = Dequantize({0xC1, 0x7F, 0x80, 0xFF}, 2, BlockFormat::BF16);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], -std::numeric_limits<float>::infinity());
  got = Dequantize({0x01, 0x00, 0xC0, 0x7F}, 1, BlockFormat::F32);
  EXPECT_EQ(std::bit_cast<uint32_t>(got[0]), 0x7FC00001u);
}

// |got - want| <= one f32 ulp of want (the single final rounding, with slack) + 2^-42 * sum|x*w|
// (the reference and NumPy sum <= 768 exact f64 products in different orders; each differs
// from the exact sum by at most 768 * 2^-53 * sum|x*w|).
TEST_F(BlockQuantReference, MatmulTMatchesFloat64Product) {
  const nlohmann::json manifest = test::LoadGolden("block_quant/manifest.json");
  int cases = 0;
  for (const auto& c : manifest["matmul"]) {
    const BlockFormat format = FormatNamed(c["format"].get<std::string>());
    const int64_t rows = c["rows"].get<int64_t>();
    const int64_t out = c["out"].get<int64_t>();
    const int64_t in = c["in"].get<int64_t>();
    const std::vector<uint8_t> weights = FromHex(c["weights_hex"].get<std::string>());
    const std::vector<float> x = FloatsFromHex(c["x_hex"].get<std::string>());
    const auto want = c["want"].get<std::vector<double>>();
    const auto sumAbs = c["sum_abs"].get<std::vector<double>>();
    ASSERT_EQ(static_cast<int64_t>(weights.size()), out * BlockBytes(format, in, "test", "in"));
    ASSERT_EQ(static_cast<int64_t>(x.size()), rows * in);
    ASSERT_EQ(static_cast<int64_t>(want.size()), rows * out);
    ASSERT_LE(in, 768);

    std::vector<float> dst = Poisoned(rows * out);
    bq().MatmulT(dst.data(), x.data(), weights.data(), rows, out, in, format, DType::Float32);
    EXPECT_TRUE(Untouched(dst, static_cast<size_t>(rows * out)));
    double worstUlps = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const float w32 = static_cast<float>(std::fabs(want[i]));
      const double ulp = static_cast<double>(std::nextafter(w32, INFINITY) - w32);
      const double tol = ulp + std::ldexp(sumAbs[i], -42);
      const double err = std::fabs(static_cast<double>(dst[i]) - want[i]);
      EXPECT_LE(err, tol) << c["format"] << " rows " << rows << " out " << out << " in " << in
                          << " element " << i << ": got " << dst[i] << ", want " << want[i];
      if (std::ldexp(sumAbs[i], -42) < 0.01 * ulp) worstUlps = std::max(worstUlps, err / ulp);
    }
    // Where cancellation cannot matter, the result is the f64 sum rounded once to nearest.
    EXPECT_LE(worstUlps, 0.5 + 1e-6) << c["format"] << ": more than one rounding of the f64 sum";
    ++cases;
  }
  EXPECT_GE(cases, 8);
}

TEST_F(BlockQuantReference, MatmulTMayOverwriteX) {
  const nlohmann::json manifest = test::LoadGolden("block_quant/manifest.json");
  for (const auto& c : manifest["matmul"]) {
    const int64_t rows = c["rows"].get<int64_t>(), out = c["out"].get<int64_t>();
    const int64_t in = c["in"].get<int64_t>();
    if (rows < 3 || out > in) continue;
    const BlockFormat format = FormatNamed(c["format"].get<std::string>());
    const std::vector<uint8_t> weights = FromHex(c["weights_hex"].get<std::string>());
    std::vector<float> x = FloatsFromHex(c["x_hex"].get<std::string>());
    std::vector<float> separate(static_cast<size_t>(rows * out));
    bq().MatmulT(separate.data(), x.data(), weights.data(), rows, out, in, format, DType::Float32);
    bq().MatmulT(x.data(), x.data(), weights.data(), rows, out, in, format, DType::Float32);
    x.resize(separate.size());
    EXPECT_TRUE(SameBits(x.data(), separate)) << c["format"];
    return;
  }
  FAIL() << "no golden MatmulT case with rows >= 3 and out <= in";
}

TEST_F(BlockQuantReference, MatmulTEmptyShapes) {
  const uint8_t byte = 0;
  const float one = 1.0f;
  // No rows or no outputs: nothing to write, null pointers allowed where they cover nothing.
  EXPECT_NO_THROW(
      bq().MatmulT(nullptr, nullptr, &byte, 0, 4, 32, BlockFormat::Q8_0, DType::Float32));
  EXPECT_NO_THROW(
      bq().MatmulT(nullptr, &one, nullptr, 1, 0, 32, BlockFormat::Q8_0, DType::Float32));
  std::vector<float> dst = Poisoned(0);
  bq().MatmulT(dst.data(), &one, &byte, 0, 4, 256, BlockFormat::Q4_K, DType::Float32);
  EXPECT_TRUE(Untouched(dst));
  // inFeatures 0: every output is the empty sum, +0.
  dst = Poisoned(6);
  bq().MatmulT(dst.data(), nullptr, nullptr, 2, 3, 0, BlockFormat::Q6_K, DType::Float32);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(dst[i]), 0u) << i;
  EXPECT_TRUE(Untouched(dst, 6));
}

// Each bad argument throws, naming the method and the argument, before anything is written.
TEST_F(BlockQuantReference, DequantizeValidation) {
  const std::string op = "BlockQuant.Dequantize";
  const std::vector<uint8_t> src(4096, 0x11);
  std::vector<float> dst = Poisoned(512);
  auto call = [&](void* d, const void* s, int64_t count, BlockFormat f, DType t) {
    return [=, this] { bq().Dequantize(d, s, count, f, t); };
  };
  struct Case {
    std::function<void()> fn;
    ErrorCode code;
    std::string arg;
  };
  const auto bad = [](uint32_t v) { return static_cast<BlockFormat>(v); };
  const std::vector<Case> cases = {
      {call(dst.data(), src.data(), -32, BlockFormat::Q4_1, DType::Float32),
       ErrorCode::InvalidArgument, "'count'"},
      {call(dst.data(), src.data(), -1, BlockFormat::F32, DType::Float32),
       ErrorCode::InvalidArgument, "'count'"},
      {call(dst.data(), src.data(), 33, BlockFormat::Q4_1, DType::Float32),
       ErrorCode::InvalidArgument, "'count'"},
      {call(dst.data(), src.data(), 288, BlockFormat::Q6_K, DType::Float32),
       ErrorCode::InvalidArgument, "'count'"},
      {call(nullptr, src.data(), 32, BlockFormat::Q8_0, DType::Float32), ErrorCode::InvalidArgument,
       "'dst'"},
      {call(dst.data(), nullptr, 256, BlockFormat::Q2_K, DType::Float32),
       ErrorCode::InvalidArgument, "'src'"},
      {call(dst.data(), src.data(), 32, bad(4), DType::Float32), ErrorCode::InvalidArgument,
       "'srcFormat'"},
      {call(dst.data(), src.data(), 32, bad(16), DType::Float32), ErrorCode::InvalidArgument,
       "'srcFormat'"},
      {call(dst.data(), src.data(), 32, bad(0xFFFFFFFFu), DType::Float32),
       ErrorCode::InvalidArgument, "'srcFormat'"},
      {call(dst.data(), src.data(), 32, BlockFormat::Q8_0, DType::Float16),
       ErrorCode::UnsupportedDType, "'dstFormat'"},
      {call(dst.data(), src.data(), 32, BlockFormat::Q8_0, DType::Float64),
       ErrorCode::UnsupportedDType, "'dstFormat'"},
      {call(dst.data(), src.data(), 32, BlockFormat::Q8_0, DType::Int8),
       ErrorCode::UnsupportedDType, "'dstFormat'"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(test::ThrowsError(cases[i].fn, cases[i].code, {op, cases[i].arg})) << "case " << i;
    EXPECT_TRUE(Untouched(dst)) << "case " << i << " wrote to dst";
  }
  EXPECT_TRUE(test::ThrowsError(call(dst.data(), src.data(), 33, BlockFormat::Q4_1, DType::Float32),
                                ErrorCode::InvalidArgument, {"multiple of 32", "33"}));
}

TEST_F(BlockQuantReference, MatmulTValidation) {
  const std::string op = "BlockQuant.MatmulT";
  const std::vector<uint8_t> w(8192, 0x22);
  const std::vector<float> x(1024, 1.0f);
  std::vector<float> dst = Poisoned(512);
  float* d = dst.data();
  const int64_t big = int64_t{1} << 40;
  const int64_t maxMultiple256 = std::numeric_limits<int64_t>::max() / 256 * 256;
  auto call = [&](void* out, const void* xs, const void* ws, int64_t rows, int64_t o, int64_t in,
                  BlockFormat f,
                  DType t) { return [=, this] { bq().MatmulT(out, xs, ws, rows, o, in, f, t); }; };
  struct Case {
    std::function<void()> fn;
    ErrorCode code;
    std::string arg;
  };
  const auto bad = [](uint32_t v) { return static_cast<BlockFormat>(v); };
  const auto q80 = BlockFormat::Q8_0;
  const auto f32 = DType::Float32;
  const std::vector<Case> cases = {
      {call(d, x.data(), w.data(), -1, 2, 32, q80, f32), ErrorCode::InvalidArgument, "'rows'"},
      {call(d, x.data(), w.data(), 1, -2, 32, q80, f32), ErrorCode::InvalidArgument,
       "'outFeatures'"},
      {call(d, x.data(), w.data(), 1, 2, -32, q80, f32), ErrorCode::InvalidArgument,
       "'inFeatures'"},
      {call(d, x.data(), w.data(), 1, 2, 33, q80, f32), ErrorCode::InvalidArgument, "'inFeatures'"},
      {call(d, x.data(), w.data(), 1, 2, 128, BlockFormat::Q4_K, f32), ErrorCode::InvalidArgument,
       "'inFeatures'"},
      {call(d, x.data(), w.data(), 1, 1, maxMultiple256, BlockFormat::Q8_K, f32),
       ErrorCode::InvalidArgument, "'inFeatures'"},
      {call(nullptr, x.data(), w.data(), 1, 2, 32, q80, f32), ErrorCode::InvalidArgument, "'dst'"},
      {call(d, nullptr, w.data(), 1, 2, 32, q80, f32), ErrorCode::InvalidArgument, "'x'"},
      {call(d, x.data(), nullptr, 1, 2, 32, q80, f32), ErrorCode::InvalidArgument, "'weights'"},
      {call(d, x.data(), w.data(), 1, 2, 32, bad(5), f32), ErrorCode::InvalidArgument,
       "'weightFormat'"},
      {call(d, x.data(), w.data(), 1, 2, 32, bad(1000), f32), ErrorCode::InvalidArgument,
       "'weightFormat'"},
      {call(d, x.data(), w.data(), 1, 2, 32, q80, DType::Float16), ErrorCode::UnsupportedDType,
       "'dtype'"},
      {call(d, x.data(), w.data(), 1, 2, 32, q80, DType::Float64), ErrorCode::UnsupportedDType,
       "'dtype'"},
      {call(d, x.data(), w.data(), big, 2, big, BlockFormat::F32, f32), ErrorCode::InvalidArgument,
       "'rows*inFeatures'"},
      {call(d, x.data(), w.data(), big, big, 0, q80, f32), ErrorCode::InvalidArgument,
       "'rows*outFeatures'"},
      {call(d, x.data(), w.data(), 1, big, big, BlockFormat::Q8_K, f32), ErrorCode::InvalidArgument,
       "'outFeatures*rowBytes'"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(test::ThrowsError(cases[i].fn, cases[i].code, {op, cases[i].arg})) << "case " << i;
    EXPECT_TRUE(Untouched(dst)) << "case " << i << " wrote to dst";
  }
}

}  // namespace
}  // namespace backplane
