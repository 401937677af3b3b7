// Tests of the RoPE reference kernels (RoPE, RoPEPairs), called through the public CPU Backend.
//
// Oracles: tests/golden/gen_rope.py (a float64 NumPy transcription of GPT-J's rotate_every_two
// rotary embedding, on inputs already rounded to the storage dtype), and for the sizes over 4096
// elements the rotation formula evaluated in float64 in this file.
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

RoPESurface& Rope() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->RoPE();
}

bool SameBytes(const Buffer& a, const Buffer& b) {
  return a.count() == b.count() &&
         std::memcmp(a.data(), b.data(), DTypeStorageBytes(a.dtype(), a.count())) == 0;
}

// ---- Golden data --------------------------------------------------------------------------------

TEST(RoPEGolden, RoPEMatchesGptJ) {
  const json golden = LoadGolden("rope.json");
  ASSERT_FALSE(golden.at("rope").empty());
  for (const json& c : golden.at("rope")) {
    const DType dtype = DTypeOf(c);
    const int64_t seq = c.at("seqLen"), heads = c.at("numHeads"), dim = c.at("headDim");
    const RoPEConfig config{.BaseFreq = c.at("baseFreq"), .StartPosition = c.at("startPosition")};
    const Buffer in = Input(dtype, c.at("in"));
    Buffer out = Poisoned(dtype, seq * heads * dim);
    Rope().RoPE(config, in.data(), out.data(), seq, heads, dim, dtype);
    EXPECT_TRUE(
        test::AllClose(out, c.at("out").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " " << seq << "x" << heads << "x" << dim << " start "
        << config.StartPosition;
    EXPECT_TRUE(out.GuardIntact());
  }
}

TEST(RoPEGolden, RoPEPairs) {
  const json golden = LoadGolden("rope.json");
  ASSERT_FALSE(golden.at("ropePairs").empty());
  for (const json& c : golden.at("ropePairs")) {
    const DType dtype = DTypeOf(c);
    const int64_t half = c.at("halfDim");
    const Buffer in = Input(dtype, c.at("in"));
    const Buffer cos = Input(dtype, c.at("cos")), sin = Input(dtype, c.at("sin"));
    Buffer out = Poisoned(dtype, 2 * half);
    Rope().RoPEPairs(out.data(), in.data(), cos.data(), sin.data(), half, dtype);
    EXPECT_TRUE(
        test::AllClose(out, c.at("out").get<std::vector<double>>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " halfDim " << half;
    EXPECT_TRUE(out.GuardIntact());
  }
}

// ---- Sizes over 4096 elements against the float64 rotation --------------------------------------

TEST(RoPELarge, RoPE) {
  const int64_t seq = 37, heads = 3, dim = 40;  // 4440 elements
  const RoPEConfig config{.BaseFreq = 10000.0, .StartPosition = 5};
  for (DType dtype : FloatDTypes()) {
    const Buffer in = RandomBuffer(dtype, seq * heads * dim, 21);
    std::vector<double> want(static_cast<size_t>(seq * heads * dim));
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t p = 0; p < dim / 2; ++p) {
          const double theta =
              static_cast<double>(s + 5) /
              std::pow(10000.0, static_cast<double>(2 * p) / static_cast<double>(dim));
          const int64_t i = (s * heads + h) * dim + 2 * p;
          const double x0 = in.Get(i), x1 = in.Get(i + 1);
          want[static_cast<size_t>(i)] = x0 * std::cos(theta) - x1 * std::sin(theta);
          want[static_cast<size_t>(i + 1)] = x0 * std::sin(theta) + x1 * std::cos(theta);
        }
      }
    }
    Buffer out = Poisoned(dtype, seq * heads * dim);
    Rope().RoPE(config, in.data(), out.data(), seq, heads, dim, dtype);
    EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
    EXPECT_TRUE(out.GuardIntact());
  }
}

TEST(RoPELarge, RoPEPairs) {
  const int64_t half = 2501;  // 5002 elements
  for (DType dtype : FloatDTypes()) {
    const Buffer in = RandomBuffer(dtype, 2 * half, 31);
    const Buffer cos = RandomBuffer(dtype, half, 32, -1, 1),
                 sin = RandomBuffer(dtype, half, 33, -1, 1);
    std::vector<double> want(static_cast<size_t>(2 * half));
    for (int64_t p = 0; p < half; ++p) {
      const double x0 = in.Get(2 * p), x1 = in.Get(2 * p + 1);
      want[static_cast<size_t>(2 * p)] = x0 * cos.Get(p) - x1 * sin.Get(p);
      want[static_cast<size_t>(2 * p + 1)] = x0 * sin.Get(p) + x1 * cos.Get(p);
    }
    Buffer out = Poisoned(dtype, 2 * half);
    Rope().RoPEPairs(out.data(), in.data(), cos.data(), sin.data(), half, dtype);
    EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
  }
}

// ---- Known values -------------------------------------------------------------------------------

TEST(RoPEKnown, PositionZeroIsTheIdentity) {
  // cos 0 = 1 and sin 0 = 0: every pair at position 0 comes back bit for bit (no -0 inputs).
  for (DType dtype : FloatDTypes()) {
    const Buffer in = RandomBuffer(dtype, 2 * 8, 5);
    Buffer out = Poisoned(dtype, 2 * 8);
    Rope().RoPE({.BaseFreq = 10000.0, .StartPosition = 0}, in.data(), out.data(), 1, 2, 8, dtype);
    EXPECT_TRUE(SameBytes(out, in)) << DTypeName(dtype);
  }
}

TEST(RoPEKnown, QuarterTurnSwapsThePair) {
  // headDim 2, BaseFreq irrelevant for p = 0: theta = position. Position pi/2 is not an integer,
  // so use RoPEPairs with cos = 0, sin = 1: (x0, x1) -> (-x1, x0).
  for (DType dtype : FloatDTypes()) {
    const Buffer in = FromDoubles(dtype, {1.5, -2.25, 3, 4});
    const Buffer cos = FromDoubles(dtype, {0, 0}), sin = FromDoubles(dtype, {1, 1});
    Buffer out = Poisoned(dtype, 4);
    Rope().RoPEPairs(out.data(), in.data(), cos.data(), sin.data(), 2, dtype);
    EXPECT_TRUE(test::AllClose(out, {2.25, 1.5, -4, 3}, {0, 0})) << DTypeName(dtype);
  }
}

TEST(RoPEKnown, EveryHeadUsesTheSameAngles) {
  for (DType dtype : FloatDTypes()) {
    Buffer in(dtype, 3 * 4 * 6);
    const Buffer row = RandomBuffer(dtype, 3 * 6, 8);
    for (int64_t s = 0; s < 3; ++s) {
      for (int64_t h = 0; h < 4; ++h) {
        for (int64_t d = 0; d < 6; ++d) in.Set((s * 4 + h) * 6 + d, row.Get(s * 6 + d));
      }
    }
    Buffer out(dtype, 3 * 4 * 6), single(dtype, 3 * 6);
    const RoPEConfig config{.BaseFreq = 500.0, .StartPosition = 11};
    Rope().RoPE(config, in.data(), out.data(), 3, 4, 6, dtype);
    Rope().RoPE(config, row.data(), single.data(), 3, 1, 6, dtype);
    for (int64_t s = 0; s < 3; ++s) {
      for (int64_t h = 0; h < 4; ++h) {
        for (int64_t d = 0; d < 6; ++d) {
          EXPECT_EQ(out.Get((s * 4 + h) * 6 + d), single.Get(s * 6 + d));
        }
      }
    }
  }
}

TEST(RoPEKnown, InPlaceEqualsOutOfPlace) {
  for (DType dtype : FloatDTypes()) {
    const RoPEConfig config{.BaseFreq = 10000.0, .StartPosition = 3};
    Buffer x = RandomBuffer(dtype, 5 * 2 * 8, 9);
    Buffer want(dtype, 5 * 2 * 8);
    Rope().RoPE(config, x.data(), want.data(), 5, 2, 8, dtype);
    Rope().RoPE(config, x.data(), x.data(), 5, 2, 8, dtype);
    EXPECT_TRUE(SameBytes(x, want)) << DTypeName(dtype);

    Buffer y = RandomBuffer(dtype, 10, 10);
    const Buffer cos = RandomBuffer(dtype, 5, 11, -1, 1), sin = RandomBuffer(dtype, 5, 12, -1, 1);
    Buffer wantPairs(dtype, 10);
    Rope().RoPEPairs(wantPairs.data(), y.data(), cos.data(), sin.data(), 5, dtype);
    Rope().RoPEPairs(y.data(), y.data(), cos.data(), sin.data(), 5, dtype);
    EXPECT_TRUE(SameBytes(y, wantPairs)) << DTypeName(dtype);
  }
}

TEST(RoPEKnown, LargePositionsKeepF64Angles) {
  // theta = 1e6 for p = 0: an f32 angle would be off by up to 0.03 rad; the f64 angle is exact.
  const Buffer in = FromDoubles(DType::Float32, {1, 0});
  Buffer out = Poisoned(DType::Float32, 2);
  Rope().RoPE({.BaseFreq = 10000.0, .StartPosition = 1000000}, in.data(), out.data(), 1, 1, 2,
              DType::Float32);
  EXPECT_TRUE(
      test::AllClose(out, {std::cos(1e6), std::sin(1e6)}, test::DefaultTolerance(DType::Float32)));
}

TEST(RoPEKnown, NonFiniteValuesStayInTheirPair) {
  for (DType dtype : FloatDTypes()) {
    const Buffer in = FromDoubles(dtype, {kNaN, 1, 2, 3, kInf, 0.5});
    Buffer out = Poisoned(dtype, 6);
    Rope().RoPE({.BaseFreq = 10000.0, .StartPosition = 7}, in.data(), out.data(), 1, 3, 2, dtype);
    EXPECT_TRUE(std::isnan(out.Get(0)) && std::isnan(out.Get(1)));
    EXPECT_TRUE(std::isfinite(out.Get(2)) && std::isfinite(out.Get(3)));
    // Inf * cos(7) and Inf * sin(7) (both nonzero) stay infinite.
    EXPECT_TRUE(std::isinf(out.Get(4)) && std::isinf(out.Get(5)));
  }
}

TEST(RoPEKnown, RotationCanOverflowHalf) {
  // (60000, 60000) rotated by 45 degrees has norm 84853 > 65504: the second component overflows
  // f16 to +Inf, the first is ~0.
  const double c = std::sqrt(0.5);
  for (DType dtype : FloatDTypes()) {
    const Buffer in = FromDoubles(dtype, {60000, 60000});
    const Buffer cos = FromDoubles(dtype, {c}), sin = FromDoubles(dtype, {c});
    Buffer out = Poisoned(dtype, 2);
    Rope().RoPEPairs(out.data(), in.data(), cos.data(), sin.data(), 1, dtype);
    const double x = in.Get(0), cq = cos.Get(0);
    EXPECT_TRUE(test::Close(out.Get(0), 0.0, {1e-5, 0})) << DTypeName(dtype);
    if (dtype == DType::Float16) {
      EXPECT_EQ(out.Get(1), kInf);
    } else {
      EXPECT_TRUE(test::Close(out.Get(1), 2 * x * cq, test::DefaultTolerance(dtype)))
          << DTypeName(dtype);
    }
  }
}

TEST(RoPEKnown, ZeroSizesAreValidNoOps) {
  for (DType dtype : FloatDTypes()) {
    EXPECT_NO_THROW(Rope().RoPE({}, nullptr, nullptr, 0, 4, 8, dtype));
    EXPECT_NO_THROW(Rope().RoPE({}, nullptr, nullptr, 3, 0, 8, dtype));
    EXPECT_NO_THROW(Rope().RoPE({}, nullptr, nullptr, 3, 4, 0, dtype));
    EXPECT_NO_THROW(Rope().RoPEPairs(nullptr, nullptr, nullptr, nullptr, 0, dtype));
  }
}

// ---- Bad input ----------------------------------------------------------------------------------

TEST(RoPEErrors, RoPE) {
  const std::string op = "RoPE.RoPE";
  const DType f32 = DType::Float32;
  const Buffer in = RandomBuffer(f32, 2 * 2 * 4, 1);
  Buffer out = Poisoned(f32, 2 * 2 * 4);
  const RoPEConfig good{};
  const auto run = [&](RoPEConfig config, int64_t seq, int64_t heads, int64_t dim,
                       DType dtype = DType::Float32) {
    return [&, config, seq, heads, dim, dtype] {
      Rope().RoPE(config, in.data(), out.data(), seq, heads, dim, dtype);
    };
  };
  for (DType bad : {DType::Int32, DType::Float8E4M3, DType::Complex64}) {
    EXPECT_TRUE(ThrowsError(run(good, 2, 2, 4, bad), ErrorCode::UnsupportedDType, {op, "dtype"}));
    EXPECT_TRUE(ThrowsError(run(good, 0, 0, 0, bad), ErrorCode::UnsupportedDType, {op, "dtype"}));
  }
  EXPECT_TRUE(ThrowsError(run(good, -1, 2, 4), ErrorCode::InvalidArgument, {op, "'seqLen'"}));
  EXPECT_TRUE(ThrowsError(run(good, 2, -1, 4), ErrorCode::InvalidArgument, {op, "'numHeads'"}));
  EXPECT_TRUE(ThrowsError(run(good, 2, 2, -4), ErrorCode::InvalidArgument, {op, "'headDim'"}));
  // Odd headDim throws (the reference silently did nothing), even when nothing would be rotated.
  EXPECT_TRUE(
      ThrowsError(run(good, 2, 2, 3), ErrorCode::InvalidArgument, {op, "'headDim'", "even", "3"}));
  EXPECT_TRUE(ThrowsError(run(good, 0, 2, 5), ErrorCode::InvalidArgument, {op, "'headDim'"}));
  for (double base : {0.0, -10000.0, kNaN, kInf}) {
    EXPECT_TRUE(ThrowsError(run({.BaseFreq = base, .StartPosition = 0}, 2, 2, 4),
                            ErrorCode::InvalidArgument, {op, "'BaseFreq'"}))
        << base;
  }
  EXPECT_TRUE(ThrowsError(run({.BaseFreq = 10000.0, .StartPosition = -1}, 2, 2, 4),
                          ErrorCode::InvalidArgument, {op, "'StartPosition'", ">= 0", "-1"}));
  EXPECT_TRUE(ThrowsError(run({.BaseFreq = 10000.0, .StartPosition = kMaxInt64}, 2, 2, 4),
                          ErrorCode::InvalidArgument, {op, "'StartPosition'", "int64"}));
  EXPECT_TRUE(ThrowsError(run(good, kMaxInt64 / 4, 2, 4), ErrorCode::InvalidArgument,
                          {op, "'headDim'", "int64"}));
  EXPECT_TRUE(ThrowsError([&] { Rope().RoPE(good, nullptr, out.data(), 2, 2, 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'in'", "null"}));
  EXPECT_TRUE(ThrowsError([&] { Rope().RoPE(good, in.data(), nullptr, 2, 2, 4, f32); },
                          ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(RoPEErrors, RoPEPairs) {
  const std::string op = "RoPE.RoPEPairs";
  const DType f16 = DType::Float16;
  const Buffer in = RandomBuffer(f16, 6, 1), cos = RandomBuffer(f16, 3, 2),
               sin = RandomBuffer(f16, 3, 3);
  Buffer out = Poisoned(f16, 6);
  const auto run = [&](void* o, const void* i, const void* c, const void* s, int64_t half,
                       DType dtype) { return [=] { Rope().RoPEPairs(o, i, c, s, half, dtype); }; };
  EXPECT_TRUE(ThrowsError(run(out.data(), in.data(), cos.data(), sin.data(), 3, DType::Int8),
                          ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError(run(nullptr, nullptr, nullptr, nullptr, 0, DType::Uint16),
                          ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError(run(out.data(), in.data(), cos.data(), sin.data(), -3, f16),
                          ErrorCode::InvalidArgument, {op, "'halfDim'", ">= 0"}));
  EXPECT_TRUE(ThrowsError(run(out.data(), in.data(), cos.data(), sin.data(), kMaxInt64, f16),
                          ErrorCode::InvalidArgument, {op, "'halfDim'"}));
  EXPECT_TRUE(ThrowsError(run(nullptr, in.data(), cos.data(), sin.data(), 3, f16),
                          ErrorCode::InvalidArgument, {op, "'out'", "null"}));
  EXPECT_TRUE(ThrowsError(run(out.data(), nullptr, cos.data(), sin.data(), 3, f16),
                          ErrorCode::InvalidArgument, {op, "'in'", "null"}));
  EXPECT_TRUE(ThrowsError(run(out.data(), in.data(), nullptr, sin.data(), 3, f16),
                          ErrorCode::InvalidArgument, {op, "'cos'", "null"}));
  EXPECT_TRUE(ThrowsError(run(out.data(), in.data(), cos.data(), nullptr, 3, f16),
                          ErrorCode::InvalidArgument, {op, "'sin'", "null"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(RoPEErrors, AcceptedDTypesAreExactlyTheFloatFormats) {
  // Zero sizes: the dtype is still validated first.
  for (DType dtype : AllDTypes()) {
    const auto rope = [dtype] { Rope().RoPE({}, nullptr, nullptr, 0, 0, 0, dtype); };
    const auto pairs = [dtype] { Rope().RoPEPairs(nullptr, nullptr, nullptr, nullptr, 0, dtype); };
    if (kFloatDTypes.Contains(dtype)) {
      EXPECT_NO_THROW(rope());
      EXPECT_NO_THROW(pairs());
    } else {
      EXPECT_TRUE(ThrowsError(rope, ErrorCode::UnsupportedDType, {"RoPE.RoPE", "dtype"}));
      EXPECT_TRUE(ThrowsError(pairs, ErrorCode::UnsupportedDType, {"RoPE.RoPEPairs", "dtype"}));
    }
  }
}

}  // namespace
}  // namespace backplane
