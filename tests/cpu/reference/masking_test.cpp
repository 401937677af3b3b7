// Tests of the Masking reference kernels (ApplyMask, CausalMask, ALiBiBias), called through the
// public CPU Backend.
//
// Oracles: tests/golden/gen_masking.py (float64 NumPy/torch on inputs already rounded to the
// storage dtype; the causal pattern from torch.tril(diagonal = seqK - seqQ)), and for the sizes
// over 4096 elements the defining float64 formulas evaluated in this file.
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

MaskingSurface& Mask() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Masking();
}

// Every element is +0 where visible and -Inf where masked (checked on the value and its sign).
::testing::AssertionResult IsCausalPattern(const Buffer& out, const std::vector<int>& visible) {
  if (out.count() != static_cast<int64_t>(visible.size())) {
    return ::testing::AssertionFailure() << "size " << out.count() << " vs " << visible.size();
  }
  for (int64_t i = 0; i < out.count(); ++i) {
    const double got = out.Get(i);
    const bool ok =
        visible[static_cast<size_t>(i)] != 0 ? (got == 0.0 && !std::signbit(got)) : got == -kInf;
    if (!ok) return ::testing::AssertionFailure() << "element " << i << " is " << got;
  }
  return ::testing::AssertionSuccess();
}

// ---- Golden data --------------------------------------------------------------------------------

TEST(MaskingGolden, ApplyMask) {
  const json golden = LoadGolden("masking.json");
  ASSERT_FALSE(golden.at("applyMask").empty());
  for (const json& c : golden.at("applyMask")) {
    const DType dtype = DTypeOf(c);
    const int64_t count = c.at("count");
    const Buffer in = Input(dtype, c.at("in")), mask = Input(dtype, c.at("mask"));
    Buffer out = Poisoned(dtype, count);
    Mask().ApplyMask(in.data(), mask.data(), out.data(), count, dtype);
    EXPECT_TRUE(
        test::AllClose(out, c.at("out").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " count " << count;
    EXPECT_TRUE(out.GuardIntact());
  }
}

TEST(MaskingGolden, CausalMaskIsBottomRightAligned) {
  const json golden = LoadGolden("masking.json");
  ASSERT_FALSE(golden.at("causalMask").empty());
  for (const json& c : golden.at("causalMask")) {
    const int64_t seqQ = c.at("seqQ"), seqK = c.at("seqK");
    const std::vector<int> visible = c.at("visible").get<std::vector<int>>();
    for (DType dtype : FloatDTypes()) {
      Buffer out = Poisoned(dtype, seqQ * seqK);
      Mask().CausalMask(out.data(), seqQ, seqK, dtype);
      EXPECT_TRUE(IsCausalPattern(out, visible)) << DTypeName(dtype) << " " << seqQ << "x" << seqK;
      EXPECT_TRUE(out.GuardIntact());
    }
  }
}

TEST(MaskingGolden, ALiBiBias) {
  const json golden = LoadGolden("masking.json");
  ASSERT_FALSE(golden.at("alibiBias").empty());
  for (const json& c : golden.at("alibiBias")) {
    const DType dtype = DTypeOf(c);
    const int64_t seqQ = c.at("seqQ"), seqK = c.at("seqK");
    const Buffer scores = Input(dtype, c.at("scores"));
    const Buffer slope = FromDoubles(dtype, {c.at("slope").get<double>()});
    Buffer out = Poisoned(dtype, seqQ * seqK);
    Mask().ALiBiBias(scores.data(), slope.data(), out.data(), seqQ, seqK, dtype);
    EXPECT_TRUE(
        test::AllClose(out, c.at("out").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " " << seqQ << "x" << seqK;
    EXPECT_TRUE(out.GuardIntact());
  }
}

// ---- Sizes over 4096 elements against the float64 definitions -----------------------------------

TEST(MaskingLarge, ApplyMask) {
  const int64_t count = 5003;
  for (DType dtype : FloatDTypes()) {
    const Buffer in = RandomBuffer(dtype, count, 1), mask = RandomBuffer(dtype, count, 2, -50, 0);
    std::vector<double> want(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) want[static_cast<size_t>(i)] = in.Get(i) + mask.Get(i);
    Buffer out = Poisoned(dtype, count);
    Mask().ApplyMask(in.data(), mask.data(), out.data(), count, dtype);
    EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
    EXPECT_TRUE(out.GuardIntact());
  }
}

TEST(MaskingLarge, CausalMaskAndALiBiBias) {
  for (const auto& [seqQ, seqK] : {std::pair<int64_t, int64_t>{70, 65}, {65, 70}}) {
    std::vector<int> visible;
    for (int64_t q = 0; q < seqQ; ++q) {
      for (int64_t k = 0; k < seqK; ++k) visible.push_back(k <= q + (seqK - seqQ) ? 1 : 0);
    }
    for (DType dtype : FloatDTypes()) {
      Buffer mask = Poisoned(dtype, seqQ * seqK);
      Mask().CausalMask(mask.data(), seqQ, seqK, dtype);
      EXPECT_TRUE(IsCausalPattern(mask, visible)) << DTypeName(dtype);

      const Buffer scores = RandomBuffer(dtype, seqQ * seqK, 3);
      const Buffer slope = FromDoubles(dtype, {0.0625});
      std::vector<double> want(visible.size());
      for (int64_t q = 0; q < seqQ; ++q) {
        for (int64_t k = 0; k < seqK; ++k) {
          const int64_t i = q * seqK + k;
          const double distance = static_cast<double>(q + (seqK - seqQ) - k);
          want[static_cast<size_t>(i)] = visible[static_cast<size_t>(i)] != 0
                                             ? scores.Get(i) - 0.0625 * distance
                                             : scores.Get(i);
        }
      }
      Buffer out = Poisoned(dtype, seqQ * seqK);
      Mask().ALiBiBias(scores.data(), slope.data(), out.data(), seqQ, seqK, dtype);
      EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
    }
  }
}

// ---- Known values -------------------------------------------------------------------------------

TEST(MaskingKnown, ApplyMaskSpecialValues) {
  const std::vector<double> in = {1.5, -2, kNaN, kInf, -0.0, -0.0, 0.0, 60000, 3};
  const std::vector<double> mask = {-kInf, 0, 0, -kInf, -0.0, 0.0, -0.0, 10000, kInf};
  for (DType dtype : FloatDTypes()) {
    const Buffer a = FromDoubles(dtype, in), m = FromDoubles(dtype, mask);
    Buffer out = Poisoned(dtype, 9);
    Mask().ApplyMask(a.data(), m.data(), out.data(), 9, dtype);
    EXPECT_EQ(out.Get(0), -kInf);
    EXPECT_EQ(out.Get(1), -2.0);
    EXPECT_TRUE(std::isnan(out.Get(2)));     // NaN propagates
    EXPECT_TRUE(std::isnan(out.Get(3)));     // Inf + -Inf
    EXPECT_TRUE(std::signbit(out.Get(4)));   // -0 + -0 = -0
    EXPECT_FALSE(std::signbit(out.Get(5)));  // -0 + 0 = +0
    EXPECT_FALSE(std::signbit(out.Get(6)));
    // 70000 overflows f16 (max 65504) to +Inf; the other formats hold it (bf16 rounded).
    if (dtype == DType::Float16) {
      EXPECT_EQ(out.Get(7), kInf);
    } else {
      EXPECT_TRUE(test::Close(out.Get(7), 70000.0, test::DefaultTolerance(dtype)));
    }
    EXPECT_EQ(out.Get(8), kInf);
  }
}

TEST(MaskingKnown, ApplyMaskInPlace) {
  for (DType dtype : FloatDTypes()) {
    Buffer x = FromDoubles(dtype, {1, 2, 3});
    const Buffer m = FromDoubles(dtype, {0, -kInf, 0.5});
    Mask().ApplyMask(x.data(), m.data(), x.data(), 3, dtype);
    EXPECT_TRUE(test::AllClose(x, {1, -kInf, 3.5}, {0, 0}));
  }
}

TEST(MaskingKnown, CausalMaskStorageBits) {
  // seqQ = 1, seqK = 3: the single query is the last position and sees every key.
  Buffer last = Poisoned(DType::Float16, 3);
  Mask().CausalMask(last.data(), 1, 3, DType::Float16);
  EXPECT_TRUE(IsCausalPattern(last, {1, 1, 1}));
  // 2 x 2: row 0 = [0, -Inf], row 1 = [0, 0]; f16 -Inf is 0xFC00, bf16 -Inf is 0xFF80.
  Buffer f16 = Poisoned(DType::Float16, 4), bf16 = Poisoned(DType::BFloat16, 4);
  Mask().CausalMask(f16.data(), 2, 2, DType::Float16);
  Mask().CausalMask(bf16.data(), 2, 2, DType::BFloat16);
  const uint16_t wantF16[] = {0x0000, 0xFC00, 0x0000, 0x0000};
  const uint16_t wantBF16[] = {0x0000, 0xFF80, 0x0000, 0x0000};
  EXPECT_EQ(std::memcmp(f16.data(), wantF16, sizeof(wantF16)), 0);
  EXPECT_EQ(std::memcmp(bf16.data(), wantBF16, sizeof(wantBF16)), 0);
}

TEST(MaskingKnown, ALiBiBiasSpecialValues) {
  // seqQ = 2, seqK = 3: p = q + 1. Row 0 sees k <= 1, row 1 sees every key.
  for (DType dtype : FloatDTypes()) {
    const Buffer scores = FromDoubles(dtype, {-kInf, kNaN, kInf, -65000, 2, -0.0});
    const Buffer slope = FromDoubles(dtype, {1000});
    Buffer out = Poisoned(dtype, 6);
    Mask().ALiBiBias(scores.data(), slope.data(), out.data(), 2, 3, dtype);
    EXPECT_EQ(out.Get(0), -kInf);         // masked stays masked
    EXPECT_TRUE(std::isnan(out.Get(1)));  // NaN propagates
    EXPECT_EQ(out.Get(2), kInf);          // future position (k = 2 > p = 1) unchanged
    // -65000 - 1000 * 2 = -67000: overflows f16 to -Inf, exact elsewhere (bf16 rounds).
    if (dtype == DType::Float16) {
      EXPECT_EQ(out.Get(3), -kInf);
    } else {
      EXPECT_TRUE(test::Close(out.Get(3), -67000, test::DefaultTolerance(dtype)));
    }
    EXPECT_TRUE(test::Close(out.Get(4), 2 - 1000.0, test::DefaultTolerance(dtype)));
    EXPECT_EQ(out.Get(5), 0.0);  // k == p: no bias; -0 - 0 -> -0 or +0
  }
  // A zero slope leaves every score unchanged, in place.
  Buffer scores = FromDoubles(DType::Float32, {1, 2, 3, 4});
  const Buffer zero = FromDoubles(DType::Float32, {0});
  Mask().ALiBiBias(scores.data(), zero.data(), scores.data(), 2, 2, DType::Float32);
  EXPECT_TRUE(test::AllClose(scores, {1, 2, 3, 4}, {0, 0}));
}

TEST(MaskingKnown, ZeroSizesAreValidNoOps) {
  for (DType dtype : FloatDTypes()) {
    EXPECT_NO_THROW(Mask().ApplyMask(nullptr, nullptr, nullptr, 0, dtype));
    EXPECT_NO_THROW(Mask().CausalMask(nullptr, 0, 5, dtype));
    EXPECT_NO_THROW(Mask().CausalMask(nullptr, 5, 0, dtype));
    EXPECT_NO_THROW(Mask().ALiBiBias(nullptr, nullptr, nullptr, 3, 0, dtype));
  }
}

// ---- Bad input ----------------------------------------------------------------------------------

TEST(MaskingErrors, ApplyMask) {
  const std::string op = "Masking.ApplyMask";
  const Buffer a = RandomBuffer(DType::Float32, 4, 1), m = RandomBuffer(DType::Float32, 4, 2);
  Buffer out = Poisoned(DType::Float32, 4);
  for (DType bad : {DType::Int32, DType::Uint8, DType::Float8E5M2, DType::Complex128}) {
    EXPECT_TRUE(ThrowsError([&] { Mask().ApplyMask(a.data(), m.data(), out.data(), 4, bad); },
                            ErrorCode::UnsupportedDType, {op, "dtype"}));
    EXPECT_TRUE(ThrowsError([&] { Mask().ApplyMask(nullptr, nullptr, nullptr, 0, bad); },
                            ErrorCode::UnsupportedDType, {op, "dtype"}));
  }
  const DType f32 = DType::Float32;
  EXPECT_TRUE(ThrowsError([&] { Mask().ApplyMask(a.data(), m.data(), out.data(), -1, f32); },
                          ErrorCode::InvalidArgument, {op, "'count'", ">= 0", "-1"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().ApplyMask(nullptr, m.data(), out.data(), 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'in'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().ApplyMask(a.data(), nullptr, out.data(), 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'mask'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().ApplyMask(a.data(), m.data(), nullptr, 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(MaskingErrors, CausalMask) {
  const std::string op = "Masking.CausalMask";
  Buffer out = Poisoned(DType::Float32, 4);
  EXPECT_TRUE(ThrowsError([&] { Mask().CausalMask(out.data(), 2, 2, DType::Int64); },
                          ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().CausalMask(nullptr, 0, 0, DType::Bool); },
                          ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().CausalMask(out.data(), -2, 2, DType::Float32); },
                          ErrorCode::InvalidArgument, {op, "'seqQ'", "-2"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().CausalMask(out.data(), 2, -2, DType::Float32); },
                          ErrorCode::InvalidArgument, {op, "'seqK'", "-2"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().CausalMask(nullptr, 2, 2, DType::Float32); },
                          ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().CausalMask(out.data(), kMaxInt64 / 2, 3, DType::Float32); },
                          ErrorCode::InvalidArgument, {op, "'seqK'", "int64"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(MaskingErrors, ALiBiBias) {
  const std::string op = "Masking.ALiBiBias";
  const DType f32 = DType::Float32;
  const Buffer scores = RandomBuffer(f32, 6, 1);
  const Buffer slope = FromDoubles(f32, {0.5});
  Buffer out = Poisoned(f32, 6);
  EXPECT_TRUE(ThrowsError(
      [&] { Mask().ALiBiBias(scores.data(), slope.data(), out.data(), 2, 3, DType::Int16); },
      ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().ALiBiBias(nullptr, nullptr, nullptr, 0, 0, DType::Int4); },
                          ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(
      ThrowsError([&] { Mask().ALiBiBias(scores.data(), slope.data(), out.data(), -1, 3, f32); },
                  ErrorCode::InvalidArgument, {op, "'seqQ'"}));
  EXPECT_TRUE(
      ThrowsError([&] { Mask().ALiBiBias(scores.data(), slope.data(), out.data(), 2, -3, f32); },
                  ErrorCode::InvalidArgument, {op, "'seqK'"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().ALiBiBias(nullptr, slope.data(), out.data(), 2, 3, f32); },
                          ErrorCode::InvalidArgument, {op, "'scores'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Mask().ALiBiBias(scores.data(), nullptr, out.data(), 2, 3, f32); },
                          ErrorCode::InvalidArgument, {op, "'slope'", "null"}));
  EXPECT_TRUE(
      ThrowsError([&] { Mask().ALiBiBias(scores.data(), slope.data(), nullptr, 2, 3, f32); },
                  ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  for (double bad : {kNaN, kInf, -kInf}) {
    const Buffer badSlope = FromDoubles(f32, {bad});
    EXPECT_TRUE(ThrowsError(
        [&] { Mask().ALiBiBias(scores.data(), badSlope.data(), out.data(), 2, 3, f32); },
        ErrorCode::InvalidArgument, {op, "'slope'", "finite"}));
  }
  const Buffer negative = FromDoubles(DType::BFloat16, {-0.5});
  Buffer outBF16 = Poisoned(DType::BFloat16, 6);
  const Buffer scoresBF16 = RandomBuffer(DType::BFloat16, 6, 2);
  EXPECT_TRUE(ThrowsError(
      [&] {
        Mask().ALiBiBias(scoresBF16.data(), negative.data(), outBF16.data(), 2, 3, DType::BFloat16);
      },
      ErrorCode::InvalidArgument, {op, "'slope'", ">= 0", "-0.5"}));
  EXPECT_TRUE(out.IsPoisoned());
  EXPECT_TRUE(outBF16.IsPoisoned());
}

TEST(MaskingErrors, AcceptedDTypesAreExactlyTheFloatFormats) {
  // Zero sizes: the dtype is still validated first.
  for (DType dtype : AllDTypes()) {
    const auto apply = [dtype] { Mask().ApplyMask(nullptr, nullptr, nullptr, 0, dtype); };
    const auto causal = [dtype] { Mask().CausalMask(nullptr, 0, 0, dtype); };
    const auto alibi = [dtype] { Mask().ALiBiBias(nullptr, nullptr, nullptr, 0, 0, dtype); };
    if (kFloatDTypes.Contains(dtype)) {
      EXPECT_NO_THROW(apply());
      EXPECT_NO_THROW(causal());
      EXPECT_NO_THROW(alibi());
    } else {
      EXPECT_TRUE(ThrowsError(apply, ErrorCode::UnsupportedDType, {"Masking.ApplyMask", "dtype"}));
      EXPECT_TRUE(
          ThrowsError(causal, ErrorCode::UnsupportedDType, {"Masking.CausalMask", "dtype"}));
      EXPECT_TRUE(ThrowsError(alibi, ErrorCode::UnsupportedDType, {"Masking.ALiBiBias", "dtype"}));
    }
  }
}

}  // namespace
}  // namespace backplane
