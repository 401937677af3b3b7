// Elementwise reference kernels against golden data (tests/golden/gen_core_math.py, PyTorch
// float64 on inputs rounded to each dtype), closed-form float64 math, special values and every
// validation path. Called through the public CPU Backend so that the registration is tested too.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using BinaryMethod = void (ElementwiseSurface::*)(void*, const void*, const void*, int64_t, DType);
using UnaryMethod = void (ElementwiseSurface::*)(void*, const void*, int64_t, DType);

struct BinaryOp {
  const char* name;
  BinaryMethod method;
  std::function<double(double, double)> oracle;  // closed-form float64
};
struct UnaryOp {
  const char* name;
  UnaryMethod method;
  std::function<double(double)> oracle;
};

const std::vector<BinaryOp>& BinaryOps() {
  static const std::vector<BinaryOp> ops = {
      {"Add", &ElementwiseSurface::Add, [](double l, double r) { return l + r; }},
      {"Sub", &ElementwiseSurface::Sub, [](double l, double r) { return l - r; }},
      {"Mul", &ElementwiseSurface::Mul, [](double l, double r) { return l * r; }},
      {"Div", &ElementwiseSurface::Div, [](double l, double r) { return l / r; }},
      {"Max", &ElementwiseSurface::Max, [](double l, double r) { return l < r ? r : l; }},
      {"Min", &ElementwiseSurface::Min, [](double l, double r) { return r < l ? r : l; }},
  };
  return ops;
}

const std::vector<UnaryOp>& UnaryOps() {
  static const std::vector<UnaryOp> ops = {
      {"Abs", &ElementwiseSurface::Abs, [](double x) { return std::fabs(x); }},
      {"Neg", &ElementwiseSurface::Neg, [](double x) { return -x; }},
      {"Sqrt", &ElementwiseSurface::Sqrt, [](double x) { return std::sqrt(x); }},
      {"ReLU", &ElementwiseSurface::ReLU, [](double x) { return x < 0 ? 0.0 : x; }},
  };
  return ops;
}

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("elementwise.json"));
    EXPECT_TRUE(in.good()) << "missing golden file elementwise.json";
    return json::parse(in);
  }();
  return data;
}

// A buffer holding golden values, which are stored already rounded to `dtype`.
Buffer FromGolden(DType dtype, const json& values) {
  const auto v = values.get<std::vector<double>>();
  Buffer b = FromDoubles(dtype, v);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(b.Get(static_cast<int64_t>(i)), v[i])
        << "golden input not exact in " << DTypeName(dtype);
  }
  return b;
}

// A copy of `src` whose 16 guard bytes are poisoned, for in-place outputs (Axpy's y).
Buffer GuardedCopy(const Buffer& src) {
  Buffer b(src.dtype(), src.count());
  b.Poison();
  for (int64_t i = 0; i < src.count(); ++i) b.Set(i, src.Get(i));
  return b;
}

std::vector<double> Map(const Buffer& in, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double x : in.ToDoubles()) out.push_back(f(x));
  return out;
}

class ElementwiseTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
  ElementwiseSurface& ew() { return backend_->Elementwise(); }

  Buffer Binary(BinaryMethod m, DType dtype, const std::vector<double>& l,
                const std::vector<double>& r) {
    const Buffer lb = FromDoubles(dtype, l), rb = FromDoubles(dtype, r);
    Buffer out(dtype, lb.count());
    out.Poison();
    (ew().*m)(out.data(), lb.data(), rb.data(), lb.count(), dtype);
    EXPECT_TRUE(out.GuardIntact());
    return out;
  }
  Buffer Unary(UnaryMethod m, DType dtype, const std::vector<double>& x) {
    const Buffer xb = FromDoubles(dtype, x);
    Buffer out(dtype, xb.count());
    out.Poison();
    (ew().*m)(out.data(), xb.data(), xb.count(), dtype);
    EXPECT_TRUE(out.GuardIntact());
    return out;
  }
};

// ---- Golden data (sizes 0, 1, 2, 7, 33, 100 for every dtype) ------------------------------------

TEST_F(ElementwiseTest, MatchesGoldenForEveryMethodAndDType) {
  int checked = 0;
  for (const json& c : Golden()["cases"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    const int64_t n = c["n"].get<int64_t>();
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(n));
    const Buffer left = FromGolden(dtype, c["left"]);
    const Buffer right = FromGolden(dtype, c["right"]);
    const Buffer nonneg = FromGolden(dtype, c["nonneg"]);
    const Tolerance tol = DefaultTolerance(dtype);
    for (const BinaryOp& op : BinaryOps()) {
      Buffer out(dtype, n);
      out.Poison();
      (ew().*op.method)(out.data(), left.data(), right.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, c["out"][op.name].get<std::vector<double>>(), tol))
          << op.name;
      EXPECT_TRUE(out.GuardIntact()) << op.name;
      ++checked;
    }
    for (const UnaryOp& op : UnaryOps()) {
      const Buffer& src = std::string(op.name) == "Sqrt" ? nonneg : left;
      Buffer out(dtype, n);
      out.Poison();
      (ew().*op.method)(out.data(), src.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, c["out"][op.name].get<std::vector<double>>(), tol))
          << op.name;
      EXPECT_TRUE(out.GuardIntact()) << op.name;
      ++checked;
    }
    Buffer y = GuardedCopy(left);
    ew().Axpy(y.data(), right.data(), n, c["alpha"].get<float>(), dtype);
    EXPECT_TRUE(test::AllClose(y, c["out"]["Axpy"].get<std::vector<double>>(), tol)) << "Axpy";
    EXPECT_TRUE(y.GuardIntact()) << "Axpy";
    ++checked;
  }
  EXPECT_EQ(checked, 4 * 6 * 11);
}

// ---- Over 4096 elements: closed-form float64 oracle on the rounded inputs -----------------------

TEST_F(ElementwiseTest, LargeInputsMatchFloat64Math) {
  constexpr int64_t kN = 4099;
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Tolerance tol = DefaultTolerance(dtype);
    const Buffer left = test::RandomBuffer(dtype, kN, 11, -4.0, 4.0);
    const Buffer right = test::RandomBuffer(dtype, kN, 12, 0.25, 4.0);  // away from 0 for Div
    const std::vector<double> l = left.ToDoubles(), r = right.ToDoubles();
    for (const BinaryOp& op : BinaryOps()) {
      std::vector<double> want(kN);
      for (int64_t i = 0; i < kN; ++i) want[i] = op.oracle(l[i], r[i]);
      Buffer out(dtype, kN);
      out.Poison();
      (ew().*op.method)(out.data(), left.data(), right.data(), kN, dtype);
      EXPECT_TRUE(test::AllClose(out, want, tol)) << op.name;
      EXPECT_TRUE(out.GuardIntact()) << op.name;
    }
    for (const UnaryOp& op : UnaryOps()) {
      const Buffer& src = std::string(op.name) == "Sqrt" ? right : left;
      Buffer out(dtype, kN);
      out.Poison();
      (ew().*op.method)(out.data(), src.data(), kN, dtype);
      EXPECT_TRUE(test::AllClose(out, Map(src, op.oracle), tol)) << op.name;
      EXPECT_TRUE(out.GuardIntact()) << op.name;
    }
    const float alpha = -0.37f;
    Buffer y = GuardedCopy(left);
    std::vector<double> want(kN);
    for (int64_t i = 0; i < kN; ++i) want[i] = l[i] + static_cast<double>(alpha) * r[i];
    ew().Axpy(y.data(), right.data(), kN, alpha, dtype);
    EXPECT_TRUE(test::AllClose(y, want, tol)) << "Axpy";
    EXPECT_TRUE(y.GuardIntact());
  }
}

TEST_F(ElementwiseTest, InPlaceUseGivesTheSameResult) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer left = test::RandomBuffer(dtype, 33, 21),
                 right = test::RandomBuffer(dtype, 33, 22);
    for (const BinaryOp& op : BinaryOps()) {
      Buffer separate(dtype, 33);
      (ew().*op.method)(separate.data(), left.data(), right.data(), 33, dtype);
      Buffer inplace = test::RandomBuffer(dtype, 33, 21);
      (ew().*op.method)(inplace.data(), inplace.data(), right.data(), 33, dtype);
      EXPECT_EQ(inplace.ToDoubles(), separate.ToDoubles()) << op.name << " " << DTypeName(dtype);
    }
  }
}

// ---- Special values
// ------------------------------------------------------------------------------

TEST_F(ElementwiseTest, MaxAndMinPropagateNaNFromEitherOperand) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<double> l = {kNaN, 1.0, kNaN, -kInf, 2.0};
    const std::vector<double> r = {1.0, kNaN, kNaN, kInf, -3.0};
    const Buffer mx = Binary(&ElementwiseSurface::Max, dtype, l, r);
    const Buffer mn = Binary(&ElementwiseSurface::Min, dtype, l, r);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(std::isnan(mx.Get(i))) << i;
      EXPECT_TRUE(std::isnan(mn.Get(i))) << i;
    }
    EXPECT_EQ(mx.Get(3), kInf);
    EXPECT_EQ(mn.Get(3), -kInf);
    EXPECT_EQ(mx.Get(4), 2.0);
    EXPECT_EQ(mn.Get(4), -3.0);
  }
}

TEST_F(ElementwiseTest, MaxAndMinOfEqualZerosReturnTheLeftOperandLikeTorch) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer mx = Binary(&ElementwiseSurface::Max, dtype, {-0.0, 0.0}, {0.0, -0.0});
    const Buffer mn = Binary(&ElementwiseSurface::Min, dtype, {-0.0, 0.0}, {0.0, -0.0});
    EXPECT_TRUE(std::signbit(mx.Get(0)) && !std::signbit(mx.Get(1))) << DTypeName(dtype);
    EXPECT_TRUE(std::signbit(mn.Get(0)) && !std::signbit(mn.Get(1))) << DTypeName(dtype);
  }
}

TEST_F(ElementwiseTest, UnarySpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<double> x = {-0.0, 0.0, -kInf, kInf, kNaN, -2.5, 2.25};
    const Buffer abs = Unary(&ElementwiseSurface::Abs, dtype, x);
    EXPECT_EQ(abs.Get(0), 0.0);
    EXPECT_FALSE(std::signbit(abs.Get(0))) << "Abs(-0) is +0 (torch.abs)";
    EXPECT_EQ(abs.Get(2), kInf);
    EXPECT_TRUE(std::isnan(abs.Get(4)));
    EXPECT_EQ(abs.Get(5), 2.5);

    const Buffer neg = Unary(&ElementwiseSurface::Neg, dtype, x);
    EXPECT_FALSE(std::signbit(neg.Get(0)));
    EXPECT_TRUE(std::signbit(neg.Get(1)));
    EXPECT_EQ(neg.Get(2), kInf);
    EXPECT_TRUE(std::isnan(neg.Get(4)));

    const Buffer sqrt = Unary(&ElementwiseSurface::Sqrt, dtype, x);
    EXPECT_TRUE(std::signbit(sqrt.Get(0)) && sqrt.Get(0) == 0.0) << "Sqrt(-0) = -0 (IEEE)";
    EXPECT_TRUE(std::isnan(sqrt.Get(2))) << "Sqrt(-Inf)";
    EXPECT_EQ(sqrt.Get(3), kInf);
    EXPECT_TRUE(std::isnan(sqrt.Get(4)));
    EXPECT_TRUE(std::isnan(sqrt.Get(5))) << "Sqrt of a negative is NaN";
    EXPECT_EQ(sqrt.Get(6), 1.5);

    const Buffer relu = Unary(&ElementwiseSurface::ReLU, dtype, x);
    EXPECT_TRUE(std::signbit(relu.Get(0))) << "ReLU(-0) = -0 (torch.relu)";
    EXPECT_EQ(relu.Get(2), 0.0);
    EXPECT_FALSE(std::signbit(relu.Get(2)));
    EXPECT_EQ(relu.Get(3), kInf);
    EXPECT_TRUE(std::isnan(relu.Get(4))) << "ReLU propagates NaN (torch.relu)";
    EXPECT_EQ(relu.Get(5), 0.0);
    EXPECT_FALSE(std::signbit(relu.Get(5)));
    EXPECT_EQ(relu.Get(6), 2.25);
  }
}

TEST_F(ElementwiseTest, DivisionByZeroIsIEEE) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer q = Binary(&ElementwiseSurface::Div, dtype, {1.0, -1.0, 0.0, 1.0, kInf},
                            {0.0, 0.0, 0.0, -0.0, kInf});
    EXPECT_EQ(q.Get(0), kInf);
    EXPECT_EQ(q.Get(1), -kInf);
    EXPECT_TRUE(std::isnan(q.Get(2)));
    EXPECT_EQ(q.Get(3), -kInf);
    EXPECT_TRUE(std::isnan(q.Get(4)));
  }
}

TEST_F(ElementwiseTest, InfinitiesAndNaNPropagateThroughArithmetic) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer s = Binary(&ElementwiseSurface::Add, dtype, {kInf, kInf, kNaN}, {1.0, -kInf, 1.0});
    EXPECT_EQ(s.Get(0), kInf);
    EXPECT_TRUE(std::isnan(s.Get(1)));
    EXPECT_TRUE(std::isnan(s.Get(2)));
    const Buffer p = Binary(&ElementwiseSurface::Mul, dtype, {kInf, 0.0}, {-2.0, kInf});
    EXPECT_EQ(p.Get(0), -kInf);
    EXPECT_TRUE(std::isnan(p.Get(1)));
  }
}

TEST_F(ElementwiseTest, Float16OverflowGivesInfinity) {
  const DType h = DType::Float16;
  EXPECT_EQ(Binary(&ElementwiseSurface::Mul, h, {300.0}, {300.0}).Get(0), kInf);
  EXPECT_EQ(Binary(&ElementwiseSurface::Mul, h, {-300.0}, {300.0}).Get(0), -kInf);
  // 65504 + 16 = 65520 is the midpoint to 2^16 and rounds to even, i.e. to +Inf (as torch).
  EXPECT_EQ(Binary(&ElementwiseSurface::Add, h, {65504.0}, {16.0}).Get(0), kInf);
  EXPECT_EQ(Binary(&ElementwiseSurface::Add, h, {65504.0}, {8.0}).Get(0), 65504.0);
  EXPECT_EQ(Binary(&ElementwiseSurface::Div, h, {1000.0}, {0.001}).Get(0), kInf);
  Buffer y = FromDoubles(h, {60000.0});
  const Buffer x = FromDoubles(h, {1000.0});
  backend_->Elementwise().Axpy(y.data(), x.data(), 1, 10.0f, h);
  EXPECT_EQ(y.Get(0), kInf);
  EXPECT_EQ(Binary(&ElementwiseSurface::Mul, DType::BFloat16, {3e38}, {10.0}).Get(0), kInf);
}

TEST_F(ElementwiseTest, HalfFormatsRoundToNearestEvenOnce) {
  // bf16: 1 + 3*2^-9 lies between 1 and 1 + 2^-7, nearer the latter (truncation would give 1).
  EXPECT_EQ(Binary(&ElementwiseSurface::Add, DType::BFloat16, {1.0}, {3.0 / 512}).Get(0),
            1.0078125);
  // bf16 tie: 1 + 2^-8 rounds to the even neighbour 1.
  EXPECT_EQ(Binary(&ElementwiseSurface::Add, DType::BFloat16, {1.0}, {1.0 / 256}).Get(0), 1.0);
  // f16: 1 + 3*2^-12 rounds up to 1 + 2^-10.
  EXPECT_EQ(Binary(&ElementwiseSurface::Add, DType::Float16, {1.0}, {3.0 / 4096}).Get(0),
            1.0009765625);
}

TEST_F(ElementwiseTest, Float64IsComputedInFloat64) {
  const DType d = DType::Float64;
  const double tiny = std::ldexp(1.0, -40);  // below f32 resolution at 1
  EXPECT_EQ(Binary(&ElementwiseSurface::Sub, d, {1.0 + tiny}, {1.0}).Get(0), tiny);
  EXPECT_EQ(Binary(&ElementwiseSurface::Mul, d, {1.0 + tiny}, {3.0}).Get(0), (1.0 + tiny) * 3.0);
  EXPECT_EQ(Binary(&ElementwiseSurface::Div, d, {1.0}, {3.0}).Get(0), 1.0 / 3.0);
  EXPECT_EQ(Binary(&ElementwiseSurface::Max, d, {1.0 + tiny}, {1.0}).Get(0), 1.0 + tiny);
  EXPECT_EQ(Binary(&ElementwiseSurface::Min, d, {1.0 - tiny}, {1.0}).Get(0), 1.0 - tiny);
  EXPECT_EQ(Unary(&ElementwiseSurface::Neg, d, {1.0 + tiny}).Get(0), -(1.0 + tiny));
  EXPECT_EQ(Unary(&ElementwiseSurface::Abs, d, {-(1.0 + tiny)}).Get(0), 1.0 + tiny);
  EXPECT_EQ(Unary(&ElementwiseSurface::Sqrt, d, {2.0}).Get(0), std::sqrt(2.0));
  EXPECT_EQ(Unary(&ElementwiseSurface::ReLU, d, {1.0 + tiny}).Get(0), 1.0 + tiny);
  // Axpy widens the f32 alpha exactly: 0.1f, not 0.1.
  Buffer y = FromDoubles(d, {tiny});
  const Buffer x = FromDoubles(d, {1.0});
  ew().Axpy(y.data(), x.data(), 1, 0.1f, d);
  EXPECT_EQ(y.Get(0), tiny + static_cast<double>(0.1f));
}

TEST_F(ElementwiseTest, ZeroCountWritesNothingAndAcceptsNullPointers) {
  for (DType dtype : test::FloatDTypes()) {
    for (const BinaryOp& op : BinaryOps()) {
      EXPECT_NO_THROW((ew().*op.method)(nullptr, nullptr, nullptr, 0, dtype)) << op.name;
    }
    for (const UnaryOp& op : UnaryOps()) {
      EXPECT_NO_THROW((ew().*op.method)(nullptr, nullptr, 0, dtype)) << op.name;
    }
    EXPECT_NO_THROW(ew().Axpy(nullptr, nullptr, 0, 2.0f, dtype));
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(ElementwiseTest, BinaryMethodsRejectBadArgumentsWithoutWriting) {
  const Buffer l = test::RandomBuffer(DType::Float32, 5, 1),
               r = test::RandomBuffer(DType::Float32, 5, 2);
  for (const BinaryOp& op : BinaryOps()) {
    const std::string name = std::string("Elementwise.") + op.name;
    SCOPED_TRACE(name);
    auto m = op.method;
    Buffer out(DType::Float32, 5);
    out.Poison();
    auto call = [&](void* d, const void* a, const void* b, int64_t n, DType t) {
      return [=, this] { (ew().*m)(d, a, b, n, t); };
    };
    EXPECT_TRUE(test::ThrowsError(call(out.data(), l.data(), r.data(), -1, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'count'", "-1"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, l.data(), r.data(), 5, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'dst'"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), nullptr, r.data(), 5, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'left'"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), l.data(), nullptr, 5, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'right'"}));
    for (DType bad : {DType::Int8, DType::Int32, DType::Float8E4M3, DType::Invalid,
                      static_cast<DType>(kDTypeCount)}) {
      EXPECT_TRUE(test::ThrowsError(call(out.data(), l.data(), r.data(), 5, bad),
                                    ErrorCode::UnsupportedDType, {name, "'dtype'"}));
      EXPECT_TRUE(test::ThrowsError(call(out.data(), l.data(), r.data(), 0, bad),
                                    ErrorCode::UnsupportedDType, {name, "'dtype'"}))
          << "the dtype is validated even when count is 0";
    }
    EXPECT_TRUE(out.IsPoisoned());
  }
}

TEST_F(ElementwiseTest, UnaryMethodsRejectBadArgumentsWithoutWriting) {
  const Buffer x = test::RandomBuffer(DType::Float16, 5, 3);
  for (const UnaryOp& op : UnaryOps()) {
    const std::string name = std::string("Elementwise.") + op.name;
    SCOPED_TRACE(name);
    auto m = op.method;
    Buffer out(DType::Float16, 5);
    out.Poison();
    auto call = [&](void* d, const void* s, int64_t n, DType t) {
      return [=, this] { (ew().*m)(d, s, n, t); };
    };
    EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), -3, DType::Float16),
                                  ErrorCode::InvalidArgument, {name, "'count'", "-3"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, x.data(), 5, DType::Float16),
                                  ErrorCode::InvalidArgument, {name, "'dst'"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), nullptr, 5, DType::Float16),
                                  ErrorCode::InvalidArgument, {name, "'src'"}));
    for (DType bad :
         {DType::Int8, DType::Uint16, DType::Complex64, static_cast<DType>(kDTypeCount)}) {
      EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), 5, bad), ErrorCode::UnsupportedDType,
                                    {name, "'dtype'"}));
      EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), 0, bad), ErrorCode::UnsupportedDType,
                                    {name, "'dtype'"}));
    }
    EXPECT_TRUE(out.IsPoisoned());
  }
}

TEST_F(ElementwiseTest, AxpyRejectsBadArgumentsWithoutWriting) {
  const std::string name = "Elementwise.Axpy";
  const Buffer x = test::RandomBuffer(DType::BFloat16, 5, 4);
  Buffer y(DType::BFloat16, 5);
  y.Poison();
  auto call = [&](void* yy, const void* xx, int64_t n, float alpha, DType t) {
    return [=, this] { ew().Axpy(yy, xx, n, alpha, t); };
  };
  const DType bf = DType::BFloat16;
  EXPECT_TRUE(test::ThrowsError(call(y.data(), x.data(), -1, 1.0f, bf), ErrorCode::InvalidArgument,
                                {name, "'count'"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, x.data(), 5, 1.0f, bf), ErrorCode::InvalidArgument,
                                {name, "'y'"}));
  EXPECT_TRUE(test::ThrowsError(call(y.data(), nullptr, 5, 1.0f, bf), ErrorCode::InvalidArgument,
                                {name, "'x'"}));
  for (float alpha :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    EXPECT_TRUE(test::ThrowsError(call(y.data(), x.data(), 5, alpha, bf),
                                  ErrorCode::InvalidArgument, {name, "'alpha'", "finite"}));
  }
  EXPECT_TRUE(test::ThrowsError(call(y.data(), x.data(), 5, 1.0f, DType::Int8),
                                ErrorCode::UnsupportedDType, {name, "'dtype'"}));
  EXPECT_TRUE(test::ThrowsError(call(y.data(), x.data(), 0, 1.0f, DType::Int64),
                                ErrorCode::UnsupportedDType, {name, "'dtype'"}));
  EXPECT_TRUE(y.IsPoisoned());
}

}  // namespace
}  // namespace backplane
