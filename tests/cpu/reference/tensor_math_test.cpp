// TensorOps.Trig and TensorOps.BitShift against golden data (tests/golden/gen_tensor_math.py:
// NumPy float64 functions, Python integers) on the reference backend and on the dispatched CPU
// backend; the domain edges and the validation paths.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/tensor.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::ThrowsError;

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("tensor_math.json"));
    if (!in.good()) throw std::runtime_error("missing golden file tensor_math.json");
    return json::parse(in);
  }();
  return data;
}

Backend& Ref() {
  static const std::unique_ptr<Backend> b = cpu::CreateReferenceBackend();
  return *b;
}
Backend& Fast() {
  static const std::unique_ptr<Backend> b = cpu::CreateBackend();
  return *b;
}

TrigOp OpNamed(const std::string& name) {
  static const char* kNames[] = {"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"};
  for (int i = 0; i < 9; ++i) {
    if (name == kNames[i]) return static_cast<TrigOp>(i);
  }
  throw std::runtime_error("unknown op " + name);
}

// got within `ulps` units in the last place of want (NaN matches NaN, infinities exactly).
template <class T>
::testing::AssertionResult Near(T got, T want, double rel) {
  if (std::isnan(got) && std::isnan(want)) return ::testing::AssertionSuccess();
  if (std::isinf(want) || std::isinf(got) || want == 0) {
    if (got == want && std::signbit(got) == std::signbit(want)) return ::testing::AssertionSuccess();
  } else if (std::fabs(static_cast<double>(got) - want) <= rel * std::fabs(static_cast<double>(want))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << got << ", want " << want;
}

template <class T, class U>
std::vector<T> FromBits(const json& v) {
  std::vector<T> out;
  for (const json& b : v) out.push_back(std::bit_cast<T>(static_cast<U>(b.get<uint64_t>())));
  return out;
}

TEST(TensorMath, TrigF64MatchesNumPy) {
  for (const json& c : Golden().at("trig")) {
    const TrigOp op = OpNamed(c.at("op"));
    const auto x = FromBits<double, uint64_t>(c.at("x"));
    const auto want = FromBits<double, uint64_t>(c.at("want"));
    const auto n = static_cast<int64_t>(x.size());
    for (Backend* b : {&Ref(), &Fast()}) {
      std::vector<double> got(x.size() + 2, 7.0);
      b->TensorOps().Trig(TrigConfig{op}, x.data(), got.data(), n, DType::Float64);
      // The reference: libm against NumPy (4 ULP: NumPy may use its own vector code, e.g. SVML);
      // the fast kernels: their stated 1e-14.
      const double rel = b == &Ref() ? 9e-16 : 1e-14;
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(Near(got[i], want[i], rel)) << c.at("op") << "(" << x[i] << ")";
      }
      EXPECT_EQ(got[x.size()], 7.0);  // guard
    }
  }
}

TEST(TensorMath, TrigF32MatchesNumPy) {
  for (const json& c : Golden().at("trig")) {
    const TrigOp op = OpNamed(c.at("op"));
    const auto x = FromBits<float, uint32_t>(c.at("x32"));
    const auto want = FromBits<float, uint32_t>(c.at("want32"));
    const auto n = static_cast<int64_t>(x.size());
    for (Backend* b : {&Ref(), &Fast()}) {
      std::vector<float> got(x.size(), 7.0f);
      b->TensorOps().Trig(TrigConfig{op}, x.data(), got.data(), n, DType::Float32);
      const double rel = b == &Ref() ? 1.2e-7 : 1.3e-6;  // one f32 ULP (double rounding); stated bound
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(Near(got[i], want[i], rel)) << c.at("op") << "(" << x[i] << ")";
      }
    }
  }
}

// Closed forms: the exact values at the domain edges, on both backends and every float format.
TEST(TensorMath, TrigEdges) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    TrigOp op;
    double x, want;
  };
  const Case cases[] = {
      {TrigOp::Asin, 1.0, M_PI / 2},   {TrigOp::Acos, -1.0, M_PI},     {TrigOp::Acos, 1.0, 0.0},
      {TrigOp::Atan, inf, M_PI / 2},   {TrigOp::Atanh, 1.0, inf},      {TrigOp::Atanh, -1.0, -inf},
      {TrigOp::Acosh, 1.0, 0.0},       {TrigOp::Cosh, 0.0, 1.0},       {TrigOp::Cosh, -inf, inf},
      {TrigOp::Sinh, -inf, -inf},      {TrigOp::Asinh, -inf, -inf},    {TrigOp::Tan, -0.0, -0.0},
      {TrigOp::Asin, -0.0, -0.0},      {TrigOp::Sinh, -0.0, -0.0},     {TrigOp::Atanh, -0.0, -0.0},
      {TrigOp::Asin, 1.5, NAN},        {TrigOp::Acosh, 0.5, NAN},      {TrigOp::Atanh, 2.0, NAN},
      {TrigOp::Tan, inf, NAN},         {TrigOp::Cosh, NAN, NAN}};
  for (DType d : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    for (const Case& c : cases) {
      // 17 copies: a full vector on every target, so the vector path sees the edge too.
      const Tensor x = Tensor::FromDoubles(d, {17}, std::vector<double>(17, c.x));
      for (Backend* b : {&Ref(), &Fast()}) {
        Tensor y = Tensor::FromDoubles(d, {17}, std::vector<double>(17, 0.0));
        b->TensorOps().Trig(TrigConfig{c.op}, x.data(), y.data(), 17, d);
        const std::vector<double> got = y.ToDoubles();
        const double want = d == DType::Float64 ? c.want : Tensor::FromDoubles(d, {1}, std::vector<double>{c.want}).ToDoubles()[0];
        for (double g : got) {
          EXPECT_TRUE(Near(g, want, 0.0)) << DTypeName(d) << " op " << static_cast<int>(c.op) << " x " << c.x;
        }
      }
    }
  }
}

template <class T>
void CheckShift(const json& c, DType d) {
  std::vector<T> a, b;
  for (const json& v : c.at("a")) a.push_back(static_cast<T>(v.is_number_unsigned() ? v.get<uint64_t>() : v.get<int64_t>()));
  for (const json& v : c.at("b")) b.push_back(static_cast<T>(v.get<int64_t>()));
  for (bool left : {true, false}) {
    const json& want = c.at(left ? "left" : "right");
    for (Backend* be : {&Ref(), &Fast()}) {
      std::vector<T> got(a.size(), T{7});
      be->TensorOps().BitShift(BitShiftConfig{left}, a.data(), b.data(), got.data(),
                               static_cast<int64_t>(a.size()), d);
      for (size_t i = 0; i < a.size(); ++i) {
        const json& w = want[i];
        const T expect = static_cast<T>(w.is_number_unsigned() ? w.get<uint64_t>() : w.get<int64_t>());
        EXPECT_EQ(got[i], expect) << DTypeName(d) << (left ? " << " : " >> ") << "element " << i;
      }
    }
  }
}

TEST(TensorMath, BitShiftMatchesPython) {
  for (const json& c : Golden().at("bitshift")) {
    const std::string name = c.at("dtype");
    const DType d = *DTypeFromName(name);
    switch (d) {
      case DType::Int64: CheckShift<int64_t>(c, d); break;
      case DType::Int32: CheckShift<int32_t>(c, d); break;
      case DType::Int16: CheckShift<int16_t>(c, d); break;
      case DType::Int8: CheckShift<int8_t>(c, d); break;
      case DType::Uint64: CheckShift<uint64_t>(c, d); break;
      case DType::Uint32: CheckShift<uint32_t>(c, d); break;
      case DType::Uint16: CheckShift<uint16_t>(c, d); break;
      default: CheckShift<uint8_t>(c, d); break;
    }
  }
}

TEST(TensorMath, Errors) {
  auto& t = Ref().TensorOps();
  float f[4] = {};
  int32_t i[4] = {1, 2, 3, 4};
  int32_t neg[4] = {1, -2, 3, 4};
  EXPECT_TRUE(ThrowsError([&] { t.Trig({}, f, f, 4, DType::Int32); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Trig", "dtype"}));
  EXPECT_TRUE(ThrowsError([&] { t.Trig(TrigConfig{static_cast<TrigOp>(9)}, f, f, 4, DType::Float32); },
                          ErrorCode::InvalidArgument, {"TensorOps.Trig", "config.Op"}));
  EXPECT_TRUE(ThrowsError([&] { t.Trig({}, nullptr, f, 4, DType::Float32); }, ErrorCode::InvalidArgument,
                          {"TensorOps.Trig", "in"}));
  EXPECT_TRUE(ThrowsError([&] { t.BitShift({}, f, f, f, 4, DType::Float32); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.BitShift", "dtype"}));
  EXPECT_TRUE(ThrowsError([&] { t.BitShift({}, i, neg, i, 4, DType::Int32); }, ErrorCode::InvalidArgument,
                          {"TensorOps.BitShift", "b", "non-negative", "-2 at element 1"}));
  EXPECT_TRUE(ThrowsError([&] { Fast().TensorOps().BitShift({}, i, neg, i, 4, DType::Int32); },
                          ErrorCode::InvalidArgument, {"TensorOps.BitShift", "b"}));
}

}  // namespace
}  // namespace backplane
