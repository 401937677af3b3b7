// Tests of the Embedding reference kernels (Lookup, Bag), called through the public CPU Backend.
//
// Oracles: tests/golden/gen_embedding.py (torch.nn.functional.embedding and embedding_bag with
// mode="sum" and offsets, float64, on tables already rounded to the storage dtype), and for the
// sizes over 4096 elements the defining row copy / float64 row sum evaluated in this file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/golden.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using json = nlohmann::json;
using test::Buffer;
using test::FloatDTypes;
using test::FromDoubles;
using test::RandomBuffer;
using test::ThrowsError;
using test::LoadGolden;
using test::DTypeOf;
using test::Input;
using test::Poisoned;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

EmbeddingSurface& Emb() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Embedding();
}

// The first `count` elements of both buffers are bit-identical.
::testing::AssertionResult SameBytes(const Buffer& got, const Buffer& want) {
  if (got.count() != want.count()) {
    return ::testing::AssertionFailure() << "size " << got.count() << " vs " << want.count();
  }
  if (std::memcmp(got.data(), want.data(), DTypeStorageBytes(got.dtype(), got.count())) != 0) {
    return ::testing::AssertionFailure() << "bytes differ (" << DTypeName(got.dtype()) << ")";
  }
  return ::testing::AssertionSuccess();
}

// ---- Golden data --------------------------------------------------------------------------------

TEST(EmbeddingGolden, LookupCopiesRowsExactly) {
  const json golden = LoadGolden("embedding.json");
  ASSERT_FALSE(golden.at("lookup").empty());
  for (const json& c : golden.at("lookup")) {
    const DType dtype = DTypeOf(c);
    const int64_t vocab = c.at("vocab"), hidden = c.at("hidden"), count = c.at("count");
    const Buffer table = Input(dtype, c.at("table"));
    const std::vector<int32_t> indices = c.at("indices").get<std::vector<int32_t>>();
    Buffer out = Poisoned(dtype, count * hidden);
    Emb().Lookup(table.data(), indices.data(), out.data(), vocab, hidden, count, dtype);
    EXPECT_TRUE(SameBytes(out, Input(dtype, c.at("out"))))
        << DTypeName(dtype) << " vocab " << vocab << " hidden " << hidden << " count " << count;
    EXPECT_TRUE(out.GuardIntact());
  }
}

TEST(EmbeddingGolden, BagSumsLikeTorchEmbeddingBag) {
  const json golden = LoadGolden("embedding.json");
  ASSERT_FALSE(golden.at("bag").empty());
  for (const json& c : golden.at("bag")) {
    const DType dtype = DTypeOf(c);
    const int64_t vocab = c.at("vocab"), hidden = c.at("hidden");
    const int64_t bags = c.at("bags"), count = c.at("count");
    const Buffer table = Input(dtype, c.at("table"));
    const std::vector<int32_t> indices = c.at("indices").get<std::vector<int32_t>>();
    const std::vector<int32_t> offsets = c.at("offsets").get<std::vector<int32_t>>();
    // Prefilled with finite garbage: the result must overwrite it, never accumulate into it.
    Buffer out = FromDoubles(dtype, std::vector<double>(static_cast<size_t>(bags * hidden), 7.0));
    Emb().Bag(table.data(), indices.data(), offsets.data(), out.data(), vocab, hidden, bags, count,
              dtype);
    EXPECT_TRUE(
        test::AllClose(out, c.at("out").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " bags " << bags << " count " << count;
  }
}

// ---- Sizes over 4096 elements against the defining copy and float64 sum -------------------------

TEST(EmbeddingLarge, LookupAndBag) {
  const int64_t vocab = 50, hidden = 96, count = 101;  // table 4800, lookup output 9696 elements
  std::vector<int32_t> indices(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    indices[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + 11) % vocab);
  const std::vector<int32_t> offsets = {0, 1, 1, 40, 77, 100};  // one empty bag, a 1-index last bag
  const int64_t bags = static_cast<int64_t>(offsets.size());
  for (DType dtype : FloatDTypes()) {
    const Buffer table = RandomBuffer(dtype, vocab * hidden, 41);
    Buffer out = Poisoned(dtype, count * hidden);
    Emb().Lookup(table.data(), indices.data(), out.data(), vocab, hidden, count, dtype);
    const size_t rowBytes = DTypeStorageBytes(dtype, hidden);
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_EQ(std::memcmp(static_cast<const uint8_t*>(out.data()) + i * rowBytes,
                            static_cast<const uint8_t*>(table.data()) +
                                indices[static_cast<size_t>(i)] * rowBytes,
                            rowBytes),
                0)
          << DTypeName(dtype) << " row " << i;
    }

    std::vector<double> want(static_cast<size_t>(bags * hidden), 0.0);
    for (int64_t b = 0; b < bags; ++b) {
      const int64_t end = b + 1 < bags ? offsets[static_cast<size_t>(b + 1)] : count;
      for (int64_t j = offsets[static_cast<size_t>(b)]; j < end; ++j) {
        for (int64_t d = 0; d < hidden; ++d) {
          want[static_cast<size_t>(b * hidden + d)] +=
              table.Get(indices[static_cast<size_t>(j)] * hidden + d);
        }
      }
    }
    Buffer sums = Poisoned(dtype, bags * hidden);
    Emb().Bag(table.data(), indices.data(), offsets.data(), sums.data(), vocab, hidden, bags, count,
              dtype);
    EXPECT_TRUE(test::AllClose(sums, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
  }
}

// ---- Known values -------------------------------------------------------------------------------

TEST(EmbeddingKnown, LookupCopiesSpecialBitPatterns) {
  // f32 NaN with a payload, -0, +-Inf and a subnormal; f16/bf16 signalling NaNs. All copied as is.
  Buffer f32(DType::Float32, 6);
  const uint32_t f32Bits[] = {0x7FC01234u, 0x80000000u, 0x7F800000u,
                              0xFF800000u, 0x00000001u, 0x3F800000u};
  std::memcpy(f32.data(), f32Bits, sizeof(f32Bits));
  const std::vector<int32_t> indices = {2, 0, 1, 0};
  Buffer out = Poisoned(DType::Float32, 8);
  Emb().Lookup(f32.data(), indices.data(), out.data(), 3, 2, 4, DType::Float32);
  const uint32_t want[] = {0x00000001u, 0x3F800000u, 0x7FC01234u, 0x80000000u,
                           0x7F800000u, 0xFF800000u, 0x7FC01234u, 0x80000000u};
  EXPECT_EQ(std::memcmp(out.data(), want, sizeof(want)), 0);
  for (DType half : {DType::Float16, DType::BFloat16}) {
    Buffer table(half, 2);
    const uint16_t bits[] = {static_cast<uint16_t>(half == DType::Float16 ? 0x7C01 : 0x7F81),
                             0x8000};
    std::memcpy(table.data(), bits, sizeof(bits));
    Buffer got = Poisoned(half, 2);
    const std::vector<int32_t> one = {0};
    Emb().Lookup(table.data(), one.data(), got.data(), 1, 2, 1, half);
    EXPECT_EQ(std::memcmp(got.data(), bits, sizeof(bits)), 0) << DTypeName(half);
  }
}

TEST(EmbeddingKnown, BagAccumulatesInF64AndRoundsOnce) {
  // 1 + 2^-8 + 2^-8 = 1 + 2^-7 is exact in bf16; summing in bf16 would round 1 + 2^-8 back to 1
  // (ties to even) twice and return 1.
  const Buffer table = FromDoubles(DType::BFloat16, {1.0, std::ldexp(1.0, -8)});
  const std::vector<int32_t> indices = {0, 1, 1};
  const std::vector<int32_t> offsets = {0};
  Buffer out = Poisoned(DType::BFloat16, 1);
  Emb().Bag(table.data(), indices.data(), offsets.data(), out.data(), 2, 1, 1, 3, DType::BFloat16);
  EXPECT_EQ(out.Get(0), 1.0 + std::ldexp(1.0, -7));
}

TEST(EmbeddingKnown, BagSpecialValues) {
  // Columns: 40000 + 40000 overflows f16 only; Inf + -Inf = NaN; NaN propagates; -0 rows sum to
  // +0 (the sum starts at +0, as torch.embedding_bag's does).
  for (DType dtype : FloatDTypes()) {
    const Buffer table = FromDoubles(dtype, {40000, kInf, 1, -0.0, 40000, -kInf, kNaN, -0.0});
    const std::vector<int32_t> indices = {0, 1};
    const std::vector<int32_t> offsets = {0, 2};  // bag 1 is empty
    Buffer out = Poisoned(dtype, 8);
    Emb().Bag(table.data(), indices.data(), offsets.data(), out.data(), 2, 4, 2, 2, dtype);
    if (dtype == DType::Float16) {
      EXPECT_EQ(out.Get(0), kInf);
    } else {
      EXPECT_TRUE(test::Close(out.Get(0), 80000, test::DefaultTolerance(dtype)));
    }
    EXPECT_TRUE(std::isnan(out.Get(1)));
    EXPECT_TRUE(std::isnan(out.Get(2)));
    EXPECT_EQ(out.Get(3), 0.0);
    EXPECT_FALSE(std::signbit(out.Get(3)));
    for (int64_t d = 4; d < 8; ++d) {
      EXPECT_EQ(out.Get(d), 0.0) << "empty bag";
      EXPECT_FALSE(std::signbit(out.Get(d)));
    }
  }
}

TEST(EmbeddingKnown, ZeroSizesAreValidNoOps) {
  const std::vector<int32_t> indices = {0, 1};
  for (DType dtype : FloatDTypes()) {
    EXPECT_NO_THROW(Emb().Lookup(nullptr, nullptr, nullptr, 0, 0, 0, dtype));
    EXPECT_NO_THROW(Emb().Lookup(nullptr, nullptr, nullptr, 10, 0, 0, dtype));
    // hidden == 0: nothing to copy, but the indices are still checked against vocab.
    EXPECT_NO_THROW(Emb().Lookup(nullptr, indices.data(), nullptr, 2, 0, 2, dtype));
    EXPECT_NO_THROW(Emb().Bag(nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, dtype));
    EXPECT_NO_THROW(Emb().Bag(nullptr, indices.data(), nullptr, nullptr, 2, 0, 0, 2, dtype));
  }
}

// ---- Bad input ----------------------------------------------------------------------------------

TEST(EmbeddingErrors, Lookup) {
  const std::string op = "Embedding.Lookup";
  const DType f32 = DType::Float32;
  const Buffer table = RandomBuffer(f32, 5 * 3, 1);
  Buffer out = Poisoned(f32, 4 * 3);
  const auto run = [&](std::vector<int32_t> idx, int64_t vocab, int64_t hidden, int64_t count,
                       DType dtype = DType::Float32) {
    return [&, idx, vocab, hidden, count, dtype] {
      Emb().Lookup(table.data(), idx.data(), out.data(), vocab, hidden, count, dtype);
    };
  };
  const std::vector<int32_t> good = {0, 4, 2, 1};
  for (DType bad : {DType::Int32, DType::Int4, DType::Float8E4M3}) {
    EXPECT_TRUE(ThrowsError(run(good, 5, 3, 4, bad), ErrorCode::UnsupportedDType, {op, "dtype"}));
    EXPECT_TRUE(ThrowsError([&] { Emb().Lookup(nullptr, nullptr, nullptr, 0, 0, 0, bad); },
                            ErrorCode::UnsupportedDType, {op, "dtype"}));
  }
  EXPECT_TRUE(ThrowsError(run(good, -5, 3, 4), ErrorCode::InvalidArgument, {op, "'vocab'"}));
  EXPECT_TRUE(ThrowsError(run(good, 5, -3, 4), ErrorCode::InvalidArgument, {op, "'hidden'"}));
  EXPECT_TRUE(ThrowsError(run(good, 5, 3, -4), ErrorCode::InvalidArgument, {op, "'count'"}));
  // The bad index is the last one: nothing may have been written before the check.
  EXPECT_TRUE(ThrowsError(run({0, 4, 2, 5}, 5, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'indices'", "[0, 5)", "indices[3] = 5"}));
  EXPECT_TRUE(ThrowsError(run({0, 1, -1, 2}, 5, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'indices'", "indices[2] = -1"}));
  EXPECT_TRUE(ThrowsError(run({0}, 0, 3, 1), ErrorCode::InvalidArgument,
                          {op, "'indices'", "[0, 0)", "indices[0] = 0"}));
  EXPECT_TRUE(ThrowsError(run(good, 5, kMaxInt64 / 2, 4), ErrorCode::InvalidArgument,
                          {op, "'hidden'", "int64"}));
  EXPECT_TRUE(ThrowsError([&] { Emb().Lookup(nullptr, good.data(), out.data(), 5, 3, 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'table'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Emb().Lookup(table.data(), nullptr, out.data(), 5, 3, 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'indices'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Emb().Lookup(table.data(), good.data(), nullptr, 5, 3, 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  EXPECT_TRUE(out.IsPoisoned());
  // hidden == 0 writes nothing but still rejects a bad index.
  EXPECT_TRUE(ThrowsError(run({7}, 5, 0, 1), ErrorCode::InvalidArgument, {op, "indices[0] = 7"}));
}

TEST(EmbeddingErrors, Bag) {
  const std::string op = "Embedding.Bag";
  const DType bf16 = DType::BFloat16;
  const Buffer table = RandomBuffer(bf16, 5 * 3, 1);
  Buffer out = Poisoned(bf16, 3 * 3);
  const std::vector<int32_t> goodIdx = {0, 4, 2, 1};
  const std::vector<int32_t> goodOff = {0, 1, 3};
  const auto run = [&](std::vector<int32_t> idx, std::vector<int32_t> off, int64_t vocab,
                       int64_t hidden, int64_t bags, int64_t count, DType dtype = DType::BFloat16) {
    return [&, idx, off, vocab, hidden, bags, count, dtype] {
      Emb().Bag(table.data(), idx.data(), off.data(), out.data(), vocab, hidden, bags, count,
                dtype);
    };
  };
  EXPECT_TRUE(ThrowsError(run(goodIdx, goodOff, 5, 3, 3, 4, DType::Int64),
                          ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(
      ThrowsError([&] { Emb().Bag(nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, DType::Uint8); },
                  ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(
      ThrowsError(run(goodIdx, goodOff, -5, 3, 3, 4), ErrorCode::InvalidArgument, {op, "'vocab'"}));
  EXPECT_TRUE(ThrowsError(run(goodIdx, goodOff, 5, -3, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'hidden'"}));
  EXPECT_TRUE(
      ThrowsError(run(goodIdx, goodOff, 5, 3, -3, 4), ErrorCode::InvalidArgument, {op, "'bags'"}));
  EXPECT_TRUE(
      ThrowsError(run(goodIdx, goodOff, 5, 3, 3, -4), ErrorCode::InvalidArgument, {op, "'count'"}));
  EXPECT_TRUE(ThrowsError(run({0, 4, 2, 9}, goodOff, 5, 3, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'indices'", "indices[3] = 9"}));
  EXPECT_TRUE(ThrowsError(run(goodIdx, {1, 2, 3}, 5, 3, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'offsets'", "offsets[0] = 1"}));
  EXPECT_TRUE(ThrowsError(run(goodIdx, {0, 3, 2}, 5, 3, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'offsets'", "non-decreasing", "offsets[2] = 2"}));
  EXPECT_TRUE(ThrowsError(run(goodIdx, {0, 1, 5}, 5, 3, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'offsets'", "<= count (4)", "offsets[2] = 5"}));
  EXPECT_TRUE(ThrowsError(run(goodIdx, {0, -1, 2}, 5, 3, 3, 4), ErrorCode::InvalidArgument,
                          {op, "'offsets'", "offsets[1] = -1"}));
  EXPECT_TRUE(ThrowsError(run(goodIdx, goodOff, 5, 3, kMaxInt64 / 2, 4), ErrorCode::InvalidArgument,
                          {op, "'hidden'", "int64"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Emb().Bag(nullptr, goodIdx.data(), goodOff.data(), out.data(), 5, 3, 3, 4, bf16); },
      ErrorCode::InvalidArgument, {op, "'table'", "null"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Emb().Bag(table.data(), nullptr, goodOff.data(), out.data(), 5, 3, 3, 4, bf16); },
      ErrorCode::InvalidArgument, {op, "'indices'", "null"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Emb().Bag(table.data(), goodIdx.data(), nullptr, out.data(), 5, 3, 3, 4, bf16); },
      ErrorCode::InvalidArgument, {op, "'offsets'", "null"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Emb().Bag(table.data(), goodIdx.data(), goodOff.data(), nullptr, 5, 3, 3, 4, bf16); },
      ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(EmbeddingErrors, AcceptedDTypesAreExactlyTheFloatFormats) {
  // Zero sizes: the dtype is still validated first.
  for (DType dtype : AllDTypes()) {
    const auto lookup = [dtype] { Emb().Lookup(nullptr, nullptr, nullptr, 0, 0, 0, dtype); };
    const auto bag = [dtype] { Emb().Bag(nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, dtype); };
    if (kFloatDTypes.Contains(dtype)) {
      EXPECT_NO_THROW(lookup());
      EXPECT_NO_THROW(bag());
    } else {
      EXPECT_TRUE(ThrowsError(lookup, ErrorCode::UnsupportedDType, {"Embedding.Lookup", "dtype"}));
      EXPECT_TRUE(ThrowsError(bag, ErrorCode::UnsupportedDType, {"Embedding.Bag", "dtype"}));
    }
  }
}

}  // namespace
}  // namespace backplane
