// Quant.Quant reference kernel: golden data from tests/golden/gen_quant.py (closed-form
// round-half-even of x / scale, cross-checked there against torch.quantize_per_tensor), ties,
// saturation, special values and every validation path.
#include <gtest/gtest.h>

#include <cmath>
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

constexpr double kInf = std::numeric_limits<double>::infinity();

nlohmann::json LoadGolden(const std::string& name) {
  std::ifstream in(test::GoldenPath(name));
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  return nlohmann::json::parse(in);
}

QuantConfig Cfg(float scale, int zp) {
  QuantConfig c;
  c.Scale = scale;
  c.ZeroPoint = static_cast<int8_t>(zp);
  return c;
}

class QuantReference : public ::testing::Test {
 public:
  std::vector<int> Run(const Buffer& x, QuantConfig cfg) {
    Buffer out(DType::Int8, x.count());
    out.Poison();
    q().Quant(out.data(), x.data(), x.count(), cfg, DType::Int8, x.dtype());
    EXPECT_TRUE(out.GuardIntact());
    std::vector<int> r;
    for (int64_t i = 0; i < x.count(); ++i) r.push_back(out.as<int8_t>()[i]);
    return r;
  }
  QuantSurface& q() { return backend_->Quant(); }
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
};

TEST_F(QuantReference, MatchesGolden) {
  const nlohmann::json golden = LoadGolden("quant.json");
  int cases = 0;
  bool large = false;
  for (const auto& c : golden["cases"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    const Buffer x = FromDoubles(dtype, c["x"].get<std::vector<double>>());
    large = large || x.count() > 4096;
    const auto want = c["q"].get<std::vector<int>>();
    const auto got = Run(x, Cfg(c["scale"].get<float>(), c["zp"].get<int>()));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << DTypeName(dtype) << " element " << i << " x "
                                 << x.Get(static_cast<int64_t>(i)) << " scale " << c["scale"]
                                 << " zp " << c["zp"];
    }
    ++cases;
  }
  EXPECT_EQ(cases, 32);
  EXPECT_TRUE(large);
}

TEST_F(QuantReference, TiesRoundHalfToEvenBeforeAddingTheZeroPoint) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer x = FromDoubles(dtype, {0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 126.5, -127.5});
    EXPECT_EQ(Run(x, Cfg(1.0f, 0)), (std::vector<int>{0, 2, 2, 4, 0, -2, -2, 126, -128}));
    // Odd zero point: rounding happens first (2.5 -> 2, + 1 = 3), as torch does.
    EXPECT_EQ(Run(x, Cfg(1.0f, 1)), (std::vector<int>{1, 3, 3, 5, 1, -1, -1, 127, -127}));
    // Quarter scale: x / 0.25 = 4x.
    const Buffer y = FromDoubles(dtype, {0.125, 0.375, -0.625});
    EXPECT_EQ(Run(y, Cfg(0.25f, -3)), (std::vector<int>{-3, -1, -5}));
  }
}

TEST_F(QuantReference, SaturatesAndHandlesSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer x = FromDoubles(dtype, {kInf, -kInf, -0.0, 0.0, 1e4, -1e4, 200.0, -200.0});
    EXPECT_EQ(Run(x, Cfg(1.0f, 5)), (std::vector<int>{127, -128, 5, 5, 127, -128, 127, -128}));
  }
  // 70000 overflows f16 to +Inf before quantisation; it saturates all the same.
  EXPECT_EQ(Run(FromDoubles(DType::Float16, {70000.0, -70000.0}), Cfg(1000.0f, 0)),
            (std::vector<int>{127, -128}));
  EXPECT_EQ(Run(FromDoubles(DType::Float32, {70000.0, -70000.0}), Cfg(1000.0f, 0)),
            (std::vector<int>{70, -70}));
  // x / scale overflowing f32 to Inf saturates; f64 does not overflow here but still clamps.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    EXPECT_EQ(Run(FromDoubles(dtype, {3e38, -3e38}), Cfg(1e-30f, 0)),
              (std::vector<int>{127, -128}));
  }
  // The smallest positive scale is valid.
  EXPECT_EQ(Run(FromDoubles(DType::Float32, {0.0, 1e-45}), Cfg(1e-45f, 0)),
            (std::vector<int>{0, 1}));
}

TEST_F(QuantReference, F64DividesInF64) {
  // 2.5000000001 / 1 rounds to 3 in f64; the same value stored as f32 is 2.5, which rounds to 2.
  EXPECT_EQ(Run(FromDoubles(DType::Float64, {2.5000000001}), Cfg(1.0f, 0)), std::vector<int>{3});
  EXPECT_EQ(Run(FromDoubles(DType::Float32, {2.5000000001}), Cfg(1.0f, 0)), std::vector<int>{2});
  // x / scale is one correctly rounded division, not x times a rounded reciprocal.
  const float x = 0.273939937f, s = 0.00214854861f;
  ASSERT_LT(x / s, 127.5f);
  EXPECT_EQ(Run(FromDoubles(DType::Float32, {x}), Cfg(s, 0)), std::vector<int>{127});
}

TEST_F(QuantReference, ZeroCountIsValidButFormatsAreStillChecked) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_NO_THROW(q().Quant(nullptr, nullptr, 0, {}, DType::Int8, dtype));
  }
  EXPECT_TRUE(ThrowsError([&] { q().Quant(nullptr, nullptr, 0, {}, DType::Int4, DType::Float32); },
                          ErrorCode::UnsupportedDType, {"Quant.Quant", "'dstFormat'"}));
  EXPECT_TRUE(ThrowsError([&] { q().Quant(nullptr, nullptr, 0, {}, DType::Int8, DType::Int8); },
                          ErrorCode::UnsupportedDType, {"Quant.Quant", "'srcFormat'"}));
}

TEST_F(QuantReference, BadInputsThrowAndLeaveOutputPoisoned) {
  const Buffer x = test::RandomBuffer(DType::Float32, 6, 3);
  Buffer out(DType::Int8, 6);
  out.Poison();
  auto call = [&](void* dst, const void* src, int64_t n, QuantConfig cfg, DType df, DType sf) {
    return [this, dst, src, n, cfg, df, sf] { q().Quant(dst, src, n, cfg, df, sf); };
  };
  const QuantConfig ok = Cfg(0.1f, 0);
  const DType i8 = DType::Int8, f32 = DType::Float32;
  for (DType bad : {DType::Float32, DType::Int4, DType::Uint8, DType::Int32, DType::Invalid}) {
    EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), 6, ok, bad, f32),
                            ErrorCode::UnsupportedDType, {"Quant.Quant", "'dstFormat'"}));
  }
  for (DType bad : {DType::Int8, DType::Float8E4M3, DType::Complex64, DType::Bool}) {
    EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), 6, ok, i8, bad),
                            ErrorCode::UnsupportedDType, {"Quant.Quant", "'srcFormat'"}));
  }
  EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), -1, ok, i8, f32), ErrorCode::InvalidArgument,
                          {"Quant.Quant", "'count'"}));
  EXPECT_TRUE(ThrowsError(call(nullptr, x.data(), 6, ok, i8, f32), ErrorCode::InvalidArgument,
                          {"Quant.Quant", "'dst'"}));
  EXPECT_TRUE(ThrowsError(call(out.data(), nullptr, 6, ok, i8, f32), ErrorCode::InvalidArgument,
                          {"Quant.Quant", "'src'"}));
  for (float s : {0.0f, -0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity()}) {
    EXPECT_TRUE(ThrowsError(call(out.data(), x.data(), 6, Cfg(s, 0), i8, f32),
                            ErrorCode::InvalidArgument, {"Quant.Quant", "'config.Scale'"}))
        << s;
  }
  // A NaN anywhere (here the last element) throws before the first element is written.
  for (DType dtype : test::FloatDTypes()) {
    const Buffer with_nan = FromDoubles(dtype, {1.0, 2.0, 3.0, 4.0, 5.0, std::nan("")});
    EXPECT_TRUE(ThrowsError(call(out.data(), with_nan.data(), 6, ok, i8, dtype),
                            ErrorCode::InvalidArgument,
                            {"Quant.Quant", "'src'", "NaN at index 5"}));
  }
  EXPECT_TRUE(out.IsPoisoned());
}

}  // namespace
}  // namespace backplane
