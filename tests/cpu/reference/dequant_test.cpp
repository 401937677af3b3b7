// Dequant.Dequant (int8) and Dequant.Dequant4 (int4) reference kernels: golden data from
// tests/golden/gen_quant.py (torch.Tensor.dequantize and closed-form float64), special values
// and every validation path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;
using test::ThrowsError;

nlohmann::json LoadGolden(const std::string& name) {
  std::ifstream in(test::GoldenPath(name));
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  return nlohmann::json::parse(in);
}

::testing::AssertionResult SameBits(const Buffer& got, const Buffer& want) {
  if (got.count() != want.count()) return ::testing::AssertionFailure() << "size differs";
  for (int64_t i = 0; i < got.count(); ++i) {
    const double g = got.Get(i), w = want.Get(i);
    if (std::memcmp(&g, &w, sizeof g) != 0) {
      return ::testing::AssertionFailure() << DTypeName(got.dtype()) << " element " << i << ": got "
                                           << g << ", want " << w;
    }
  }
  return ::testing::AssertionSuccess();
}

DequantConfig Cfg(float scale, int zp) {
  DequantConfig c;
  c.Scale = scale;
  c.ZeroPoint = static_cast<int8_t>(zp);
  return c;
}

Buffer Int8Buffer(const std::vector<int>& q) {
  Buffer b(DType::Int8, static_cast<int64_t>(q.size()));
  for (size_t i = 0; i < q.size(); ++i) b.as<int8_t>()[i] = static_cast<int8_t>(q[i]);
  return b;
}

Buffer Int4Buffer(const std::vector<int>& packed_bytes, int64_t count) {
  Buffer b(DType::Int4, count);
  EXPECT_EQ(DTypeStorageBytes(DType::Int4, count), packed_bytes.size());
  for (size_t i = 0; i < packed_bytes.size(); ++i) {
    b.as<uint8_t>()[i] = static_cast<uint8_t>(packed_bytes[i]);
  }
  return b;
}

class DequantReference : public ::testing::Test {
 public:
  // Runs Dequant (int8 source) or Dequant4 (int4 source) into a poisoned buffer.
  Buffer Run(const Buffer& q, DequantConfig cfg, DType dst_format) {
    Buffer out(dst_format, q.count());
    out.Poison();
    if (q.dtype() == DType::Int8) {
      d().Dequant(out.data(), q.data(), q.count(), cfg, dst_format, DType::Int8);
    } else {
      d().Dequant4(out.data(), q.data(), q.count(), cfg, dst_format, DType::Int4);
    }
    EXPECT_TRUE(out.GuardIntact());
    return out;
  }
  DequantSurface& d() { return backend_->Dequant(); }
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
};

TEST_F(DequantReference, Int8MatchesGolden) {
  const nlohmann::json golden = LoadGolden("dequant.json");
  bool large = false;
  for (const auto& c : golden["cases"]) {
    const Buffer q = Int8Buffer(c["q"].get<std::vector<int>>());
    large = large || q.count() > 4096;
    for (DType dtype : test::FloatDTypes()) {
      const auto want = c["want"][std::string(DTypeName(dtype))].get<std::vector<double>>();
      EXPECT_TRUE(SameBits(Run(q, Cfg(c["scale"].get<float>(), c["zp"].get<int>()), dtype),
                           FromDoubles(dtype, want)))
          << "count " << q.count() << " scale " << c["scale"] << " zp " << c["zp"];
    }
  }
  EXPECT_TRUE(large);
}

TEST_F(DequantReference, Int4MatchesGolden) {
  const nlohmann::json golden = LoadGolden("dequant4.json");
  bool odd = false;
  for (const auto& c : golden["cases"]) {
    const auto qs = c["q"].get<std::vector<int>>();
    const int64_t n = static_cast<int64_t>(qs.size());
    const Buffer q = Int4Buffer(c["packed"].get<std::vector<int>>(), n);
    odd = odd || (n % 2 == 1);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(LoadInt4(q.data(), i), qs[static_cast<size_t>(i)]);
    for (DType dtype : test::FloatDTypes()) {
      const auto want = c["want"][std::string(DTypeName(dtype))].get<std::vector<double>>();
      EXPECT_TRUE(SameBits(Run(q, Cfg(c["scale"].get<float>(), c["zp"].get<int>()), dtype),
                           FromDoubles(dtype, want)))
          << "count " << n << " scale " << c["scale"] << " zp " << c["zp"];
    }
  }
  EXPECT_TRUE(odd) << "an odd count leaves junk in the last high nibble, which must be ignored";
}

TEST_F(DequantReference, KnownValues) {
  // Nibbles 0x7 (7), 0x8 (-8), 0xF (-1), 0x0 (0): bytes 0x87, 0x0F.
  const Buffer q4 = Int4Buffer({0x87, 0x0F}, 4);
  const Buffer q8 = Int8Buffer({127, -128, -1, 0});
  for (DType dtype : test::FloatDTypes()) {
    const Buffer a = Run(q4, Cfg(0.5f, -1), dtype);
    EXPECT_EQ(a.ToDoubles(), (std::vector<double>{4.0, -3.5, 0.0, 0.5}));
    EXPECT_FALSE(std::signbit(a.Get(2))) << "q == zp gives +0.0";
    const Buffer b = Run(q8, Cfg(2.0f, 0), dtype);
    EXPECT_EQ(b.ToDoubles(), (std::vector<double>{254.0, -256.0, -2.0, 0.0}));
  }
  // 255 * 1000 overflows f16 (max 65504) to +Inf; bf16 rounds 255000 to 254976.
  const Buffer big = Int8Buffer({127, -128});
  const Buffer h = Run(big, Cfg(1000.0f, -128), DType::Float16);
  EXPECT_EQ(h.Get(0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(h.Get(1), 0.0);
  EXPECT_EQ(Run(big, Cfg(1000.0f, -128), DType::BFloat16).Get(0), 254976.0);
  EXPECT_EQ(Run(big, Cfg(1000.0f, -128), DType::Float32).Get(0), 255000.0);
  // f64: the f32 scale widened exactly, one rounding in f64.
  const float s = 0.1f;
  EXPECT_EQ(Run(Int8Buffer({3}), Cfg(s, 0), DType::Float64).Get(0),
            3.0 * static_cast<double>(s));
  EXPECT_EQ(Run(Int8Buffer({3}), Cfg(s, 0), DType::Float32).Get(0),
            static_cast<double>(3.0f * s));
  // A tiny scale gives f16 subnormals (rounded once from the f32 product).
  Buffer want(DType::Float16, 1);
  want.Set(0, static_cast<double>(5.0f * 1e-7f));
  EXPECT_EQ(Run(Int8Buffer({5}), Cfg(1e-7f, 0), DType::Float16).Get(0), want.Get(0));
}

TEST_F(DequantReference, ZeroCountIsValidButFormatsAreStillChecked) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_NO_THROW(d().Dequant(nullptr, nullptr, 0, {}, dtype, DType::Int8));
    EXPECT_NO_THROW(d().Dequant4(nullptr, nullptr, 0, {}, dtype, DType::Int4));
  }
  EXPECT_TRUE(ThrowsError([&] { d().Dequant(nullptr, nullptr, 0, {}, DType::Int8, DType::Int8); },
                          ErrorCode::UnsupportedDType, {"Dequant.Dequant", "'dstFormat'"}));
  EXPECT_TRUE(
      ThrowsError([&] { d().Dequant4(nullptr, nullptr, 0, {}, DType::Float32, DType::Int8); },
                  ErrorCode::UnsupportedDType, {"Dequant.Dequant4", "'srcFormat'"}));
}

TEST_F(DequantReference, BadInputsThrowAndLeaveOutputPoisoned) {
  const Buffer q8 = Int8Buffer({1, 2, 3, 4, 5});
  const Buffer q4 = Int4Buffer({0x21, 0x43, 0x05}, 5);
  Buffer out(DType::Float32, 5);
  out.Poison();
  struct Method {
    std::string op;
    DType src_format;
    const void* src;
  };
  for (const Method& m : {Method{"Dequant.Dequant", DType::Int8, q8.data()},
                          Method{"Dequant.Dequant4", DType::Int4, q4.data()}}) {
    auto call = [&](void* dst, const void* src, int64_t n, DequantConfig cfg, DType df, DType sf) {
      return [this, &m, dst, src, n, cfg, df, sf] {
        if (m.src_format == DType::Int8) {
          d().Dequant(dst, src, n, cfg, df, sf);
        } else {
          d().Dequant4(dst, src, n, cfg, df, sf);
        }
      };
    };
    const DequantConfig ok = Cfg(0.5f, 1);
    const DType f32 = DType::Float32;
    for (DType bad : {DType::Float32, DType::Uint8, DType::Int16, DType::Invalid,
                      m.src_format == DType::Int8 ? DType::Int4 : DType::Int8}) {
      EXPECT_TRUE(ThrowsError(call(out.data(), m.src, 5, ok, f32, bad),
                              ErrorCode::UnsupportedDType, {m.op, "'srcFormat'"}));
    }
    for (DType bad : {DType::Int8, DType::Int32, DType::Float8E4M3, DType::Complex128}) {
      EXPECT_TRUE(ThrowsError(call(out.data(), m.src, 5, ok, bad, m.src_format),
                              ErrorCode::UnsupportedDType, {m.op, "'dstFormat'"}));
    }
    EXPECT_TRUE(ThrowsError(call(out.data(), m.src, -2, ok, f32, m.src_format),
                            ErrorCode::InvalidArgument, {m.op, "'count'"}));
    EXPECT_TRUE(ThrowsError(call(nullptr, m.src, 5, ok, f32, m.src_format),
                            ErrorCode::InvalidArgument, {m.op, "'dst'"}));
    EXPECT_TRUE(ThrowsError(call(out.data(), nullptr, 5, ok, f32, m.src_format),
                            ErrorCode::InvalidArgument, {m.op, "'src'"}));
    for (float s : {0.0f, -0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
      EXPECT_TRUE(ThrowsError(call(out.data(), m.src, 5, Cfg(s, 0), f32, m.src_format),
                              ErrorCode::InvalidArgument, {m.op, "'config.Scale'"}))
          << s;
    }
  }
  // Dequant4's zero point must itself be an int4 value.
  for (int zp : {8, -9, 127, -128}) {
    EXPECT_TRUE(ThrowsError(
        [&] { d().Dequant4(out.data(), q4.data(), 5, Cfg(1.0f, zp), DType::Float32, DType::Int4); },
        ErrorCode::InvalidArgument, {"Dequant.Dequant4", "'config.ZeroPoint'", "[-8, 7]"}));
  }
  EXPECT_NO_THROW(Run(q8, Cfg(1.0f, -128), DType::Float32)) << "int8 zero points are all valid";
  EXPECT_TRUE(out.IsPoisoned());
}

}  // namespace
}  // namespace backplane
