// Tests of the Attention reference kernels (ScaledDotProductAttention, FlashAttention,
// MultiHeadAttention), called through the public CPU Backend.
//
// Oracles: golden files written by tests/golden/gen_attention.py (explicit float64 torch:
// softmax(Q K^T * scale + bias) over a boolean visibility mask, then @ V, on inputs already rounded
// to the storage dtype), closed-form known values, and FlashAttention == ScaledDotProductAttention
// (the same function computed by tiles).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

AttentionSurface& Attn() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Attention();
}

std::string Describe(const json& c) {
  json shown = c;
  for (const char* key : {"q", "k", "v", "o"}) shown.erase(key);
  return shown.dump();
}

using SingleHeadFn = void (AttentionSurface::*)(BP_PARAMS_SingleHeadAttention);
struct SingleHeadMethod {
  const char* name;
  SingleHeadFn fn;
};
const SingleHeadMethod kSingleHead[] = {
    {"Attention.ScaledDotProductAttention", &AttentionSurface::ScaledDotProductAttention},
    {"Attention.FlashAttention", &AttentionSurface::FlashAttention},
};

// Runs both single-head methods on every golden case of `file`.
void CheckSingleHeadGolden(const std::string& file) {
  const json golden = LoadGolden(file);
  ASSERT_FALSE(golden.at("singleHead").empty());
  for (const json& c : golden.at("singleHead")) {
    const DType dtype = DTypeOf(c);
    const int64_t seqQ = c.at("seqQ"), seqK = c.at("seqK");
    const int64_t depth = c.at("depth"), valueDim = c.at("valueDim");
    const FlashAttentionConfig config{.BlockSize = c.at("blockSize"), .Causal = c.at("causal")};
    const Buffer q = Input(dtype, c.at("q"));
    const Buffer k = Input(dtype, c.at("k"));
    const Buffer v = Input(dtype, c.at("v"));
    for (const auto& method : kSingleHead) {
      Buffer o = Poisoned(dtype, seqQ * valueDim);
      (Attn().*method.fn)(config, q.data(), k.data(), v.data(), o.data(), seqQ, seqK, depth,
                          valueDim, dtype);
      EXPECT_TRUE(
          test::AllClose(o, c.at("o").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
          << method.name << " " << Describe(c);
      EXPECT_TRUE(o.GuardIntact()) << method.name << " " << Describe(c);
    }
  }
}

TEST(AttentionGolden, SingleHeadMatchesTorch) { CheckSingleHeadGolden("attention.json"); }

TEST(AttentionGolden, SingleHeadOver4096KeyElements) {
  CheckSingleHeadGolden("attention_large.json");
}

TEST(AttentionGolden, MultiHeadMatchesTorch) {
  const json golden = LoadGolden("attention.json");
  ASSERT_FALSE(golden.at("multiHead").empty());
  for (const json& c : golden.at("multiHead")) {
    const DType dtype = DTypeOf(c);
    const int64_t seqQ = c.at("seqQ"), seqK = c.at("seqK");
    const MultiHeadAttentionConfig config{.NumHeads = c.at("numHeads"),
                                          .HeadDim = c.at("headDim"),
                                          .Causal = c.at("causal"),
                                          .WindowSize = c.at("windowSize"),
                                          .ALiBiSlope = c.at("alibiSlope").get<float>(),
                                          .KVHeadCount = c.at("kvHeadCount")};
    const Buffer q = Input(dtype, c.at("q"));
    const Buffer k = Input(dtype, c.at("k"));
    const Buffer v = Input(dtype, c.at("v"));
    Buffer o = Poisoned(dtype, seqQ * config.NumHeads * config.HeadDim);
    Attn().MultiHeadAttention(config, q.data(), k.data(), v.data(), o.data(), seqQ, seqK, dtype);
    EXPECT_TRUE(
        test::AllClose(o, c.at("o").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
        << Describe(c);
    EXPECT_TRUE(o.GuardIntact()) << Describe(c);
  }
}

// ---- FlashAttention computes the same function as ScaledDotProductAttention ---------------------

TEST(AttentionFlash, EqualsSdpaForEveryBlockSizeAndAlignment) {
  struct Shape {
    int64_t seqQ, seqK, depth, valueDim;
  };
  const Shape shapes[] = {{6, 6, 8, 5}, {3, 17, 7, 4}, {17, 3, 7, 4}, {1, 40, 16, 9}};
  uint64_t seed = 100;
  for (DType dtype : FloatDTypes()) {
    for (const Shape& s : shapes) {
      const Buffer q = RandomBuffer(dtype, s.seqQ * s.depth, ++seed, -3.0, 3.0);
      const Buffer k = RandomBuffer(dtype, s.seqK * s.depth, ++seed, -3.0, 3.0);
      const Buffer v = RandomBuffer(dtype, s.seqK * s.valueDim, ++seed);
      for (bool causal : {false, true}) {
        Buffer want(dtype, s.seqQ * s.valueDim);
        Attn().ScaledDotProductAttention({.BlockSize = 64, .Causal = causal}, q.data(), k.data(),
                                         v.data(), want.data(), s.seqQ, s.seqK, s.depth, s.valueDim,
                                         dtype);
        for (int64_t block : {int64_t{1}, int64_t{2}, int64_t{5}, s.seqK, s.seqK + 1, kMaxInt64}) {
          Buffer got = Poisoned(dtype, s.seqQ * s.valueDim);
          Attn().FlashAttention({.BlockSize = block, .Causal = causal}, q.data(), k.data(),
                                v.data(), got.data(), s.seqQ, s.seqK, s.depth, s.valueDim, dtype);
          // Both round one f64 result to the storage format; the f64 results differ only by
          // the rescaling of the online softmax (a few f64 ulps), so the dtype bound holds.
          EXPECT_TRUE(test::AllClose(got, want.ToDoubles(), test::DefaultTolerance(dtype)))
              << DTypeName(dtype) << " block " << block << " causal " << causal << " " << s.seqQ
              << "x" << s.seqK;
        }
      }
    }
  }
}

// ---- Known values -------------------------------------------------------------------------------

TEST(AttentionKnown, FullyMaskedRowsAreZeroNotNaN) {
  // seqQ = 4 > seqK = 2, causal, bottom-right: query i sees keys j <= i - 2, so queries 0 and 1
  // see nothing and query 2 sees only key 0.
  for (DType dtype : FloatDTypes()) {
    const Buffer q = FromDoubles(dtype, {1, 2, 3, 4});
    const Buffer k = FromDoubles(dtype, {0.5, -1});
    const Buffer v = FromDoubles(dtype, {10, -20});
    for (const auto& method : kSingleHead) {
      Buffer o = Poisoned(dtype, 4);
      (Attn().*method.fn)({.BlockSize = 1, .Causal = true}, q.data(), k.data(), v.data(), o.data(),
                          4, 2, 1, 1, dtype);
      EXPECT_EQ(o.Get(0), 0.0) << method.name;
      EXPECT_EQ(o.Get(1), 0.0) << method.name;
      EXPECT_EQ(o.Get(2), 10.0) << method.name;
      // Query 3 sees both keys: softmax(4 * [0.5, -1]) = [e^2, e^-4] / (e^2 + e^-4).
      const double w0 = std::exp(2.0) / (std::exp(2.0) + std::exp(-4.0));
      EXPECT_TRUE(test::Close(o.Get(3), 10 * w0 - 20 * (1 - w0), test::DefaultTolerance(dtype)))
          << method.name;
    }
    const MultiHeadAttentionConfig mha{.NumHeads = 1, .HeadDim = 1, .Causal = true};
    Buffer o = Poisoned(dtype, 4);
    Attn().MultiHeadAttention(mha, q.data(), k.data(), v.data(), o.data(), 4, 2, dtype);
    EXPECT_EQ(o.Get(0), 0.0);
    EXPECT_EQ(o.Get(1), 0.0);
    EXPECT_EQ(o.Get(2), 10.0);
  }
}

TEST(AttentionKnown, NoKeysGivesZeros) {
  for (DType dtype : FloatDTypes()) {
    const Buffer q = FromDoubles(dtype, {1, 2, 3, 4, 5, 6});
    for (const auto& method : kSingleHead) {
      Buffer o = Poisoned(dtype, 6);
      (Attn().*method.fn)({.BlockSize = 4, .Causal = false}, q.data(), nullptr, nullptr, o.data(),
                          3, 0, 2, 2, dtype);
      EXPECT_TRUE(test::AllClose(o, std::vector<double>(6, 0.0), {0, 0})) << method.name;
    }
    Buffer o = Poisoned(dtype, 6);
    Attn().MultiHeadAttention({.NumHeads = 2, .HeadDim = 1}, q.data(), nullptr, nullptr, o.data(),
                              3, 0, dtype);
    EXPECT_TRUE(test::AllClose(o, std::vector<double>(6, 0.0), {0, 0}));
  }
}

TEST(AttentionKnown, ScoresBeyondHalfRangeDoNotOverflow) {
  // q.k = 4 * 200 * 200 = 160000 > 65504 (f16 max) and exp(160000 / 2) overflows any float:
  // the max-subtracted f64 softmax puts all the weight on key 0.
  for (DType dtype : FloatDTypes()) {
    const Buffer q = FromDoubles(dtype, {200, 200, 200, 200});
    const Buffer k = FromDoubles(dtype, {200, 200, 200, 200, -200, -200, -200, -200});
    const Buffer v = FromDoubles(dtype, {1.5, -2.5, 7, 9});
    for (const auto& method : kSingleHead) {
      Buffer o = Poisoned(dtype, 2);
      (Attn().*method.fn)({.BlockSize = 1, .Causal = false}, q.data(), k.data(), v.data(), o.data(),
                          1, 2, 4, 2, dtype);
      EXPECT_EQ(o.Get(0), 1.5) << method.name << " " << DTypeName(dtype);
      EXPECT_EQ(o.Get(1), -2.5) << method.name << " " << DTypeName(dtype);
    }
  }
}

TEST(AttentionKnown, UniformScoresAverageTheValues) {
  // Q = 0 gives equal weights: each output is the mean of the visible values.
  for (DType dtype : FloatDTypes()) {
    const Buffer q = FromDoubles(dtype, {0, 0, 0});
    const Buffer k = RandomBuffer(dtype, 4, 7);
    const Buffer v = FromDoubles(dtype, {1, 2, 4, 8});
    for (const auto& method : kSingleHead) {
      Buffer o = Poisoned(dtype, 3);
      // seqQ = 3, seqK = 4, causal: query i sees keys 0 .. i + 1.
      (Attn().*method.fn)({.BlockSize = 3, .Causal = true}, q.data(), k.data(), v.data(), o.data(),
                          3, 4, 1, 1, dtype);
      EXPECT_TRUE(test::AllClose(o, {1.5, 7.0 / 3.0, 3.75}, test::DefaultTolerance(dtype)))
          << method.name;
    }
  }
}

TEST(AttentionKnown, NaNPoisonsOnlyTheRowsThatSeeIt) {
  // Causal, seqQ = seqK = 3: a NaN in key 2 reaches only query 2.
  for (DType dtype : FloatDTypes()) {
    const Buffer q = FromDoubles(dtype, {1, 1, 1});
    const Buffer k = FromDoubles(dtype, {0.5, 0.25, kNaN});
    const Buffer v = FromDoubles(dtype, {1, 2, 3});
    for (const auto& method : kSingleHead) {
      for (int64_t block : {1, 2, 8}) {
        Buffer o = Poisoned(dtype, 3);
        (Attn().*method.fn)({.BlockSize = block, .Causal = true}, q.data(), k.data(), v.data(),
                            o.data(), 3, 3, 1, 1, dtype);
        EXPECT_EQ(o.Get(0), 1.0) << method.name;
        EXPECT_FALSE(std::isnan(o.Get(1))) << method.name;
        EXPECT_TRUE(std::isnan(o.Get(2))) << method.name << " block " << block;
      }
    }
    Buffer o = Poisoned(dtype, 3);
    Attn().MultiHeadAttention({.NumHeads = 1, .HeadDim = 1, .Causal = true}, q.data(), k.data(),
                              v.data(), o.data(), 3, 3, dtype);
    EXPECT_EQ(o.Get(0), 1.0);
    EXPECT_TRUE(std::isnan(o.Get(2)));
  }
}

TEST(AttentionKnown, InfiniteScoresFollowSoftmax) {
  for (DType dtype : FloatDTypes()) {
    const Buffer v = FromDoubles(dtype, {1, 2, 3});
    // One +Inf score: softmax gives exp(Inf - Inf) = NaN, as torch.softmax does.
    const Buffer q = FromDoubles(dtype, {1});
    const Buffer kPlus = FromDoubles(dtype, {1, kInf, 1});
    // Every score -Inf: softmax of an all -Inf row is NaN (torch.softmax); a -Inf score among
    // finite ones only gets weight 0, whichever tile it falls in.
    const Buffer kMinus = FromDoubles(dtype, {-kInf, -kInf, -kInf});
    const Buffer kMixed = FromDoubles(dtype, {-kInf, -kInf, 0.5});
    for (const auto& method : kSingleHead) {
      for (int64_t block : {1, 2, 3}) {
        const FlashAttentionConfig config{.BlockSize = block, .Causal = false};
        Buffer o = Poisoned(dtype, 1);
        (Attn().*method.fn)(config, q.data(), kPlus.data(), v.data(), o.data(), 1, 3, 1, 1, dtype);
        EXPECT_TRUE(std::isnan(o.Get(0))) << method.name << " block " << block;
        (Attn().*method.fn)(config, q.data(), kMinus.data(), v.data(), o.data(), 1, 3, 1, 1, dtype);
        EXPECT_TRUE(std::isnan(o.Get(0))) << method.name << " block " << block;
        (Attn().*method.fn)(config, q.data(), kMixed.data(), v.data(), o.data(), 1, 3, 1, 1, dtype);
        EXPECT_EQ(o.Get(0), 3.0) << method.name << " block " << block;
      }
    }
  }
}

TEST(AttentionKnown, InfiniteValuePropagates) {
  for (DType dtype : FloatDTypes()) {
    const Buffer q = FromDoubles(dtype, {0.5, -0.5});
    const Buffer k = FromDoubles(dtype, {1, 2, -1});
    const Buffer v = FromDoubles(dtype, {kInf, 1, 2, 3, 4, 5});
    for (const auto& method : kSingleHead) {
      Buffer o = Poisoned(dtype, 4);
      (Attn().*method.fn)({.BlockSize = 2, .Causal = false}, q.data(), k.data(), v.data(), o.data(),
                          2, 3, 1, 2, dtype);
      EXPECT_EQ(o.Get(0), kInf) << method.name;
      EXPECT_EQ(o.Get(2), kInf) << method.name;
      EXPECT_TRUE(std::isfinite(o.Get(1)) && std::isfinite(o.Get(3))) << method.name;
    }
  }
}

TEST(AttentionKnown, ALiBiUsesGeometricPerHeadSlopes) {
  // Two heads, Q = 0 (all dot products 0), causal, ALiBiSlope 0.5: head h adds
  // 0.5^(h+1) * (j - p), so query 1 (p = 1) weighs keys 0 and 1 by [e^-m, 1] / (e^-m + 1).
  const Buffer q = FromDoubles(DType::Float64, {0, 0, 0, 0});
  const Buffer k = FromDoubles(DType::Float64, {1, -1, 2, 3});
  const Buffer v = FromDoubles(DType::Float64, {10, 100, 20, 200});
  Buffer o = Poisoned(DType::Float64, 4);
  const MultiHeadAttentionConfig config{
      .NumHeads = 2, .HeadDim = 1, .Causal = true, .ALiBiSlope = 0.5f};
  Attn().MultiHeadAttention(config, q.data(), k.data(), v.data(), o.data(), 2, 2, DType::Float64);
  const auto mix = [](double m, double v0, double v1) {
    return (std::exp(-m) * v0 + v1) / (std::exp(-m) + 1.0);
  };
  EXPECT_TRUE(test::AllClose(o, {10, 100, mix(0.5, 10, 20), mix(0.25, 100, 200)},
                             test::DefaultTolerance(DType::Float64)));
}

TEST(AttentionKnown, WindowImpliesTheCausalBound) {
  // WindowSize >= seqK without the Causal flag restricts exactly like Causal.
  for (DType dtype : FloatDTypes()) {
    const Buffer q = RandomBuffer(dtype, 5 * 6, 1);
    const Buffer k = RandomBuffer(dtype, 7 * 3, 2);
    const Buffer v = RandomBuffer(dtype, 7 * 3, 3);
    Buffer causal(dtype, 30), windowed(dtype, 30);
    Attn().MultiHeadAttention({.NumHeads = 2, .HeadDim = 3, .Causal = true, .KVHeadCount = 1},
                              q.data(), k.data(), v.data(), causal.data(), 5, 7, dtype);
    Attn().MultiHeadAttention(
        {.NumHeads = 2, .HeadDim = 3, .Causal = false, .WindowSize = 100, .KVHeadCount = 1},
        q.data(), k.data(), v.data(), windowed.data(), 5, 7, dtype);
    EXPECT_TRUE(test::AllClose(windowed, causal.ToDoubles(), {0, 0})) << DTypeName(dtype);
  }
}

TEST(AttentionKnown, OutputMayAliasTheQueries) {
  // The result is stored once it is complete, so O == Q is safe (here depth == valueDim).
  for (DType dtype : FloatDTypes()) {
    const Buffer k = RandomBuffer(dtype, 5 * 4, 11);
    const Buffer v = RandomBuffer(dtype, 5 * 4, 12);
    for (const auto& method : kSingleHead) {
      Buffer q = RandomBuffer(dtype, 3 * 4, 10);
      Buffer want(dtype, 12);
      (Attn().*method.fn)({.BlockSize = 2, .Causal = true}, q.data(), k.data(), v.data(),
                          want.data(), 3, 5, 4, 4, dtype);
      (Attn().*method.fn)({.BlockSize = 2, .Causal = true}, q.data(), k.data(), v.data(), q.data(),
                          3, 5, 4, 4, dtype);
      EXPECT_TRUE(test::AllClose(q, want.ToDoubles(), {0, 0})) << method.name;
    }
  }
}

TEST(AttentionKnown, ZeroSizesAreValidNoOps) {
  for (DType dtype : FloatDTypes()) {
    for (const auto& method : kSingleHead) {
      EXPECT_NO_THROW((Attn().*method.fn)({.BlockSize = 4, .Causal = true}, nullptr, nullptr,
                                          nullptr, nullptr, 0, 0, 0, 0, dtype));
      // valueDim = 0: nothing to write, Q and K still read-checked only by size.
      const Buffer q = RandomBuffer(dtype, 6, 1), k = RandomBuffer(dtype, 6, 2);
      EXPECT_NO_THROW((Attn().*method.fn)({.BlockSize = 4, .Causal = false}, q.data(), k.data(),
                                          nullptr, nullptr, 2, 2, 3, 0, dtype));
    }
    EXPECT_NO_THROW(Attn().MultiHeadAttention({.NumHeads = 2, .HeadDim = 3}, nullptr, nullptr,
                                              nullptr, nullptr, 0, 0, dtype));
  }
}

// ---- Bad input ----------------------------------------------------------------------------------

TEST(AttentionErrors, SingleHeadRejectsBadArguments) {
  const DType f32 = DType::Float32;
  const Buffer q = RandomBuffer(f32, 12, 1), k = RandomBuffer(f32, 12, 2),
               v = RandomBuffer(f32, 12, 3);
  for (const auto& method : kSingleHead) {
    const std::string op = method.name;
    Buffer o = Poisoned(f32, 12);
    const auto call = [&](FlashAttentionConfig config, const void* qp, const void* kp,
                          const void* vp, void* op_, int64_t seqQ, int64_t seqK, int64_t depth,
                          int64_t valueDim, DType dtype) {
      return [&, config, qp, kp, vp, op_, seqQ, seqK, depth, valueDim, dtype] {
        (Attn().*method.fn)(config, qp, kp, vp, op_, seqQ, seqK, depth, valueDim, dtype);
      };
    };
    const FlashAttentionConfig ok{.BlockSize = 2, .Causal = false};
    for (DType bad : {DType::Int32, DType::Float8E4M3, DType::Bool, DType::Invalid}) {
      EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), 3, 3, 4, 4, bad),
                              ErrorCode::UnsupportedDType, {op, "dtype"}));
      EXPECT_TRUE(ThrowsError(call(ok, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, bad),
                              ErrorCode::UnsupportedDType, {op, "dtype"}));
    }
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), -1, 3, 4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'seqQ'", ">= 0", "-1"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), 3, -2, 4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'seqK'", "-2"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), 3, 3, -4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'depth'", "-4"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), 3, 3, 4, -4, f32),
                            ErrorCode::InvalidArgument, {op, "'valueDim'", "-4"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), 3, 3, 0, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'depth'", "> 0"}));
    EXPECT_TRUE(ThrowsError(call(ok, nullptr, k.data(), v.data(), o.data(), 3, 3, 4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'q'", "null"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), nullptr, v.data(), o.data(), 3, 3, 4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'k'", "null"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), nullptr, o.data(), 3, 3, 4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'v'", "null"}));
    EXPECT_TRUE(ThrowsError(call(ok, q.data(), k.data(), v.data(), nullptr, 3, 3, 4, 4, f32),
                            ErrorCode::InvalidArgument, {op, "'o'", "null"}));
    EXPECT_TRUE(
        ThrowsError(call(ok, q.data(), k.data(), v.data(), o.data(), kMaxInt64 / 2, 3, 4, 4, f32),
                    ErrorCode::InvalidArgument, {op, "'depth'", "int64"}));
    EXPECT_TRUE(o.IsPoisoned()) << op;
  }
  // FlashAttention tiles by BlockSize, which must be > 0.
  Buffer o = Poisoned(f32, 12);
  for (int64_t block : {int64_t{0}, int64_t{-3}}) {
    EXPECT_TRUE(ThrowsError(
        [&] {
          Attn().FlashAttention({.BlockSize = block, .Causal = true}, q.data(), k.data(), v.data(),
                                o.data(), 3, 3, 4, 4, f32);
        },
        ErrorCode::InvalidArgument, {"Attention.FlashAttention", "'BlockSize'", "> 0"}));
  }
  EXPECT_TRUE(o.IsPoisoned());
  // ScaledDotProductAttention does not tile: BlockSize is not used.
  EXPECT_NO_THROW(Attn().ScaledDotProductAttention({.BlockSize = 0, .Causal = true}, q.data(),
                                                   k.data(), v.data(), o.data(), 3, 3, 4, 4, f32));
}

TEST(AttentionErrors, MultiHeadRejectsBadArguments) {
  const std::string op = "Attention.MultiHeadAttention";
  const DType f32 = DType::Float32;
  const Buffer q = RandomBuffer(f32, 2 * 8, 1), k = RandomBuffer(f32, 2 * 8, 2);
  const Buffer v = RandomBuffer(f32, 2 * 8, 3);
  Buffer o = Poisoned(f32, 2 * 8);
  const MultiHeadAttentionConfig good{.NumHeads = 4, .HeadDim = 2, .KVHeadCount = 2};
  const auto run = [&](MultiHeadAttentionConfig config, DType dtype = DType::Float32,
                       int64_t seqQ = 2, int64_t seqK = 2) {
    return [&, config, dtype, seqQ, seqK] {
      Attn().MultiHeadAttention(config, q.data(), k.data(), v.data(), o.data(), seqQ, seqK, dtype);
    };
  };
  const auto with = [&](auto edit) {
    MultiHeadAttentionConfig c = good;
    edit(c);
    return c;
  };
  EXPECT_TRUE(ThrowsError(run(good, DType::Int8), ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(
      ThrowsError(run(good, DType::Complex64, 0, 0), ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError(run(good, f32, -1, 2), ErrorCode::InvalidArgument, {op, "'seqQ'"}));
  EXPECT_TRUE(ThrowsError(run(good, f32, 2, -1), ErrorCode::InvalidArgument, {op, "'seqK'"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.NumHeads = 0; })), ErrorCode::InvalidArgument,
                          {op, "'NumHeads'", "> 0"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.NumHeads = 0; }), f32, 0, 0),
                          ErrorCode::InvalidArgument, {op, "'NumHeads'"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.HeadDim = 0; })), ErrorCode::InvalidArgument,
                          {op, "'HeadDim'", "> 0"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.HeadDim = -2; })), ErrorCode::InvalidArgument,
                          {op, "'HeadDim'"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.KVHeadCount = 8; })), ErrorCode::InvalidArgument,
                          {op, "'KVHeadCount'", "<= NumHeads (4)", "8"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.KVHeadCount = 3; })), ErrorCode::InvalidArgument,
                          {op, "'KVHeadCount'", "divisor", "3"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.WindowSize = -1; })), ErrorCode::InvalidArgument,
                          {op, "'WindowSize'", ">= 0"}));
  for (float slope :
       {-0.5f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_TRUE(ThrowsError(run(with([slope](auto& c) { c.ALiBiSlope = slope; })),
                            ErrorCode::InvalidArgument, {op, "'ALiBiSlope'"}));
  }
  // 1e30^16 overflows f64: the per-head slopes ALiBiSlope^(h+1) would not be finite.
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) {
                            c.ALiBiSlope = 1e30f;
                            c.NumHeads = 16;
                          })),
                          ErrorCode::InvalidArgument, {op, "'ALiBiSlope'", "finite"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Attn().MultiHeadAttention(good, nullptr, k.data(), v.data(), o.data(), 2, 2, f32); },
      ErrorCode::InvalidArgument, {op, "'q'", "null"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Attn().MultiHeadAttention(good, q.data(), nullptr, v.data(), o.data(), 2, 2, f32); },
      ErrorCode::InvalidArgument, {op, "'k'", "null"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Attn().MultiHeadAttention(good, q.data(), k.data(), nullptr, o.data(), 2, 2, f32); },
      ErrorCode::InvalidArgument, {op, "'v'", "null"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Attn().MultiHeadAttention(good, q.data(), k.data(), v.data(), nullptr, 2, 2, f32); },
      ErrorCode::InvalidArgument, {op, "'o'", "null"}));
  EXPECT_TRUE(ThrowsError(run(with([](auto& c) { c.HeadDim = kMaxInt64 / 2; })),
                          ErrorCode::InvalidArgument, {op, "'HeadDim'", "int64"}));
  EXPECT_TRUE(o.IsPoisoned());
  // KVHeadCount <= 0 means NumHeads: a valid configuration.
  EXPECT_NO_THROW(run(with([](auto& c) {
    c.KVHeadCount = -5;
    c.NumHeads = 2;
    c.HeadDim = 4;
  }))());
}

TEST(AttentionErrors, AcceptedDTypesAreExactlyTheFloatFormats) {
  // Zero sizes: the dtype is still validated first.
  for (DType dtype : AllDTypes()) {
    const auto sdpa = [dtype] {
      Attn().ScaledDotProductAttention({}, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, dtype);
    };
    const auto flash = [dtype] {
      Attn().FlashAttention({}, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, dtype);
    };
    const auto mha = [dtype] {
      Attn().MultiHeadAttention({}, nullptr, nullptr, nullptr, nullptr, 0, 0, dtype);
    };
    if (kFloatDTypes.Contains(dtype)) {
      EXPECT_NO_THROW(sdpa());
      EXPECT_NO_THROW(flash());
      EXPECT_NO_THROW(mha());
    } else {
      EXPECT_TRUE(ThrowsError(sdpa, ErrorCode::UnsupportedDType,
                              {"Attention.ScaledDotProductAttention", "dtype"}));
      EXPECT_TRUE(
          ThrowsError(flash, ErrorCode::UnsupportedDType, {"Attention.FlashAttention", "dtype"}));
      EXPECT_TRUE(
          ThrowsError(mha, ErrorCode::UnsupportedDType, {"Attention.MultiHeadAttention", "dtype"}));
    }
  }
}

}  // namespace
}  // namespace backplane
