// MathExt reference kernels against golden data (tests/golden/gen_math_ext.py: torch.sin,
// torch.cos, numpy.sign, numpy.outer and torch.logsumexp in float64 on inputs rounded to each
// dtype, sizes 0, 1, 2, odd and over 4096 elements), InvSqrtDimScale against the closed form
// x / sqrt(dim) in float64, special values and every validation path. Called through the public
// reference Backend (cpu::CreateReferenceBackend).
//
// Tolerances: DefaultTolerance(dtype) of the storage format for every method; Sign is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <utility>
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

const json& Golden(const std::string& name) {
  static std::map<std::string, json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::ifstream in(test::GoldenPath(name));
    EXPECT_TRUE(in.good()) << "missing golden file " << name;
    it = cache.emplace(name, json::parse(in)).first;
  }
  return it->second;
}

Buffer FromGolden(DType dtype, const json& values) {
  const auto v = values.get<std::vector<double>>();
  Buffer b = FromDoubles(dtype, v);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(b.Get(static_cast<int64_t>(i)), v[i])
        << "golden input not exact in " << DTypeName(dtype);
  }
  return b;
}

using UnaryMethod = void (MathExtSurface::*)(void*, const void*, int64_t, DType);
struct UnaryOp {
  const char* name;
  UnaryMethod method;
};
const std::vector<UnaryOp> kUnaryOps = {
    {"Sin", &MathExtSurface::Sin},
    {"Cos", &MathExtSurface::Cos},
    {"Sign", &MathExtSurface::Sign},
};

class MathExtTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateReferenceBackend();
  MathExtSurface& math() { return backend_->MathExt(); }

  Buffer RunUnary(UnaryMethod m, DType dtype, const Buffer& x) {
    Buffer out(dtype, x.count());
    out.Poison();
    (math().*m)(out.data(), x.data(), x.count(), dtype);
    EXPECT_TRUE(out.GuardIntact());
    return out;
  }
  Buffer RunUnary(UnaryMethod m, DType dtype, const std::vector<double>& x) {
    return RunUnary(m, dtype, FromDoubles(dtype, x));
  }
  Buffer RunLse(DType dtype, const std::vector<double>& x, int64_t rows, int64_t cols) {
    const Buffer src = FromDoubles(dtype, x);
    Buffer dst(dtype, rows);
    dst.Poison();
    math().LogSumExp(src.data(), dst.data(), rows, cols, dtype);
    EXPECT_TRUE(dst.GuardIntact());
    return dst;
  }

  void CheckUnaryCase(DType dtype, const json& c) {
    const Buffer x = FromGolden(dtype, c["x"]);
    for (const UnaryOp& op : kUnaryOps) {
      SCOPED_TRACE(op.name);
      const Buffer out = RunUnary(op.method, dtype, x);
      const auto want = c["results"][op.name].get<std::vector<double>>();
      if (std::string(op.name) == "Sign") {
        ASSERT_EQ(out.count(), static_cast<int64_t>(want.size()));
        for (int64_t i = 0; i < out.count(); ++i) {
          EXPECT_EQ(out.Get(i), want[static_cast<size_t>(i)]) << "at " << i;
          EXPECT_FALSE(std::signbit(out.Get(i)) && out.Get(i) == 0.0) << "sign(+-0) = +0";
        }
      } else {
        EXPECT_TRUE(test::AllClose(out, want, DefaultTolerance(dtype)));
      }
    }
  }

  void CheckOuterCase(DType dtype, const json& c) {
    const int64_t rows = c["rows"], cols = c["cols"];
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" +
                 std::to_string(cols));
    const Buffer a = FromGolden(dtype, c["left"]), b = FromGolden(dtype, c["right"]);
    Buffer out(dtype, rows * cols);
    out.Poison();
    math().Outer(a.data(), b.data(), out.data(), rows, cols, dtype);
    EXPECT_TRUE(test::AllClose(out, c["out"].get<std::vector<double>>(), DefaultTolerance(dtype)));
    EXPECT_TRUE(out.GuardIntact());
  }

  void CheckLseCase(DType dtype, const json& c) {
    const int64_t rows = c["rows"], cols = c["cols"];
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" +
                 std::to_string(cols));
    const Buffer src = FromGolden(dtype, c["src"]);
    Buffer dst(dtype, rows);
    dst.Poison();
    math().LogSumExp(src.data(), dst.data(), rows, cols, dtype);
    EXPECT_TRUE(test::AllClose(dst, c["dst"].get<std::vector<double>>(), DefaultTolerance(dtype)));
    EXPECT_TRUE(dst.GuardIntact());
  }

  void CheckSoftmaxRowsCase(DType dtype, const json& c) {
    const int64_t rows = c["rows"], cols = c["cols"];
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
    const Buffer src = FromGolden(dtype, c["src"]);
    Buffer sm(dtype, rows * cols), lsm(dtype, rows * cols);
    sm.Poison();
    lsm.Poison();
    math().SoftmaxRows(sm.data(), src.data(), rows, cols, dtype);
    math().LogSoftmaxRows(lsm.data(), src.data(), rows, cols, dtype);
    EXPECT_TRUE(test::AllClose(sm, c["softmax"].get<std::vector<double>>(), DefaultTolerance(dtype)));
    EXPECT_TRUE(test::AllClose(lsm, c["log_softmax"].get<std::vector<double>>(), DefaultTolerance(dtype)));
    EXPECT_TRUE(sm.GuardIntact());
    EXPECT_TRUE(lsm.GuardIntact());
  }
};

// ---- Golden data -------------------------------------------------------------------------------

TEST_F(MathExtTest, SoftmaxRowsMatchGolden) {
  int cases = 0;
  for (const json& c : Golden("math_ext_softmax_rows.json")["cases"]) {
    CheckSoftmaxRowsCase(*DTypeFromName(c["dtype"].get<std::string>()), c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 6);
}

TEST_F(MathExtTest, SinCosSignMatchGolden) {
  int cases = 0;
  for (const json& c : Golden("math_ext_unary.json")["cases"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(c["n"].get<int>()));
    CheckUnaryCase(dtype, c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 6);
}

TEST_F(MathExtTest, SinCosSignMatchGoldenOver4096Elements) {
  const json& large = Golden("math_ext_unary_large.json")["large"];
  ASSERT_GT(large["n"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    CheckUnaryCase(dtype, large);
  }
}

TEST_F(MathExtTest, OuterMatchesGolden) {
  int cases = 0;
  for (const json& c : Golden("math_ext_outer.json")["cases"]) {
    CheckOuterCase(*DTypeFromName(c["dtype"].get<std::string>()), c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 7);
  const json& large = Golden("math_ext_outer.json")["large"];
  ASSERT_GT(large["rows"].get<int>() * large["cols"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) CheckOuterCase(dtype, large);
}

TEST_F(MathExtTest, LogSumExpMatchesGolden) {
  int cases = 0;
  for (const json& c : Golden("math_ext_lse.json")["cases"]) {
    CheckLseCase(*DTypeFromName(c["dtype"].get<std::string>()), c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 6);
  const json& large = Golden("math_ext_lse.json")["large"];
  ASSERT_GT(large["rows"].get<int>() * large["cols"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) CheckLseCase(dtype, large);
}

// InvSqrtDimScale against the closed form x / sqrt(dim), evaluated in float64 from the rounded
// inputs.
TEST_F(MathExtTest, InvSqrtDimScaleMatchesClosedForm) {
  for (DType dtype : test::FloatDTypes()) {
    for (int64_t n : {0, 1, 2, 7, 33, 4099}) {
      for (int64_t dim : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{64}, int64_t{1000003}}) {
        SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(n) +
                     " dim=" + std::to_string(dim));
        const Buffer x = test::RandomBuffer(dtype, n, 100 + static_cast<uint64_t>(n), -8.0, 8.0);
        std::vector<double> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          want[static_cast<size_t>(i)] = x.Get(i) / std::sqrt(static_cast<double>(dim));
        }
        Buffer out(dtype, n);
        out.Poison();
        math().InvSqrtDimScale(out.data(), x.data(), n, dim, dtype);
        EXPECT_TRUE(test::AllClose(out, want, DefaultTolerance(dtype)));
        EXPECT_TRUE(out.GuardIntact());
      }
    }
  }
}

// ---- Known values -------------------------------------------------------------------------------

TEST_F(MathExtTest, SinCosSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer s = RunUnary(&MathExtSurface::Sin, dtype, {kInf, -kInf, kNaN, -0.0, 0.0});
    EXPECT_TRUE(std::isnan(s.Get(0)));
    EXPECT_TRUE(std::isnan(s.Get(1)));
    EXPECT_TRUE(std::isnan(s.Get(2)));
    EXPECT_EQ(s.Get(3), 0.0);
    EXPECT_TRUE(std::signbit(s.Get(3))) << "sin(-0) = -0";
    EXPECT_FALSE(std::signbit(s.Get(4)));
    const Buffer c = RunUnary(&MathExtSurface::Cos, dtype, {kInf, -kInf, kNaN, -0.0});
    EXPECT_TRUE(std::isnan(c.Get(0)));
    EXPECT_TRUE(std::isnan(c.Get(1)));
    EXPECT_TRUE(std::isnan(c.Get(2)));
    EXPECT_EQ(c.Get(3), 1.0);
  }
  // sin of the largest f16 and of a value near pi (argument reduction), against libm in f64.
  const Buffer big = RunUnary(&MathExtSurface::Sin, DType::Float16, {65504.0});
  EXPECT_TRUE(test::Close(big.Get(0), std::sin(65504.0), DefaultTolerance(DType::Float16)));
  const double pi_f32 = static_cast<double>(static_cast<float>(std::numbers::pi));
  const Buffer near_pi = RunUnary(&MathExtSurface::Sin, DType::Float32, {pi_f32});
  EXPECT_TRUE(test::Close(near_pi.Get(0), std::sin(pi_f32), {1e-12, 1.3e-6}))
      << "relative accuracy near a zero of sin";
}

// Reference: sign(NaN) = 0 (as torch.sign). Backplane: NaN propagates (numpy.sign).
TEST_F(MathExtTest, SignSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer s =
        RunUnary(&MathExtSurface::Sign, dtype, {kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, 1e-40, -3.5});
    EXPECT_TRUE(std::isnan(s.Get(0))) << "sign(NaN) = NaN (numpy.sign)";
    EXPECT_TRUE(std::isnan(s.Get(1)));
    EXPECT_EQ(s.Get(2), 1.0);
    EXPECT_EQ(s.Get(3), -1.0);
    EXPECT_EQ(s.Get(4), 0.0);
    EXPECT_FALSE(std::signbit(s.Get(4)));
    EXPECT_EQ(s.Get(5), 0.0);
    EXPECT_FALSE(std::signbit(s.Get(5))) << "sign(-0) = +0 (torch.sign and numpy.sign)";
    EXPECT_EQ(s.Get(7), -1.0);
  }
  // Subnormals are nonzero: their sign is +-1.
  EXPECT_EQ(RunUnary(&MathExtSurface::Sign, DType::Float64, {1e-310}).Get(0), 1.0);
  EXPECT_EQ(RunUnary(&MathExtSurface::Sign, DType::Float32, {-1e-40}).Get(0), -1.0);
  EXPECT_EQ(RunUnary(&MathExtSurface::Sign, DType::Float16, {std::ldexp(1.0, -24)}).Get(0), 1.0);
}

TEST_F(MathExtTest, OuterSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer a = FromDoubles(dtype, {kInf, -0.0, kNaN}), b = FromDoubles(dtype, {0.0, 2.0});
    Buffer out(dtype, 6);
    math().Outer(a.data(), b.data(), out.data(), 3, 2, dtype);
    EXPECT_TRUE(std::isnan(out.Get(0))) << "Inf * 0";
    EXPECT_EQ(out.Get(1), kInf);
    EXPECT_EQ(out.Get(2), 0.0);
    EXPECT_TRUE(std::signbit(out.Get(3))) << "-0 * 2 = -0";
    EXPECT_TRUE(std::isnan(out.Get(4)));
    EXPECT_TRUE(std::isnan(out.Get(5)));
  }
  // A product that overflows f16 becomes +-Inf (round to nearest); f32 keeps it.
  const Buffer a = FromDoubles(DType::Float16, {300.0}), b = FromDoubles(DType::Float16, {-300.0});
  Buffer out(DType::Float16, 1);
  math().Outer(a.data(), b.data(), out.data(), 1, 1, DType::Float16);
  EXPECT_EQ(out.Get(0), -kInf);
  const Buffer a32 = FromDoubles(DType::Float32, {300.0}),
               b32 = FromDoubles(DType::Float32, {-300.0});
  Buffer out32(DType::Float32, 1);
  math().Outer(a32.data(), b32.data(), out32.data(), 1, 1, DType::Float32);
  EXPECT_EQ(out32.Get(0), -90000.0);
}

// torch.logsumexp: empty rows give -Inf, all -Inf gives -Inf, +Inf dominates, NaN propagates.
TEST_F(MathExtTest, LogSumExpSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer empty = RunLse(dtype, {}, 3, 0);
    for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(empty.Get(r), -kInf) << "empty row";
    const Buffer s = RunLse(dtype,
                            {-kInf, -kInf,  //
                             kInf, 1.0,     //
                             kInf, -kInf,   //
                             kInf, kInf,    //
                             kNaN, kInf,    //
                             -kInf, 0.0,    //
                             1000.0, 1000.0},
                            7, 2);
    EXPECT_EQ(s.Get(0), -kInf);
    EXPECT_EQ(s.Get(1), kInf);
    EXPECT_EQ(s.Get(2), kInf);
    EXPECT_EQ(s.Get(3), kInf);
    EXPECT_TRUE(std::isnan(s.Get(4)));
    EXPECT_EQ(s.Get(5), 0.0) << "exp(-Inf) contributes 0";
    EXPECT_TRUE(test::Close(s.Get(6), 1000.0 + std::log(2.0), DefaultTolerance(dtype)))
        << "stable: exp(1000) overflows without the max shift";
    const Buffer one = RunLse(dtype, {-2.5}, 1, 1);
    EXPECT_EQ(one.Get(0), -2.5) << "a single element is its own log-sum-exp";
  }
  // In f16 the result of a row at the largest finite value stays finite: 65504 + ln 2 rounds to
  // 65504 (f16 spacing 32 there).
  EXPECT_EQ(RunLse(DType::Float16, {65504.0, 65504.0}, 1, 2).Get(0), 65504.0);
  // Long rows accumulate in f64: 100000 equal values give x + ln(100000).
  const std::vector<double> flat(100000, 0.25);
  EXPECT_TRUE(test::Close(RunLse(DType::Float32, flat, 1, 100000).Get(0), 0.25 + std::log(100000.0),
                          DefaultTolerance(DType::Float32)));
}

// torch.softmax / log_softmax row by row: a row with NaN or +Inf, or all -Inf, is all NaN; -Inf
// entries of a finite row give 0 (log: -Inf); the other rows are untouched by a bad one.
TEST_F(MathExtTest, SoftmaxRowsSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer x = FromDoubles(dtype, {-kInf, -kInf,  //
                                         kNaN, 1.0,     //
                                         kInf, 0.0,     //
                                         -kInf, 3.0,    //
                                         1000.0, 1000.0});
    Buffer sm(dtype, 10), lsm(dtype, 10);
    math().SoftmaxRows(sm.data(), x.data(), 5, 2, dtype);
    math().LogSoftmaxRows(lsm.data(), x.data(), 5, 2, dtype);
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_TRUE(std::isnan(sm.Get(i))) << i;
      EXPECT_TRUE(std::isnan(lsm.Get(i))) << i;
    }
    EXPECT_EQ(sm.Get(6), 0.0);
    EXPECT_EQ(sm.Get(7), 1.0);
    EXPECT_EQ(lsm.Get(6), -kInf);
    EXPECT_EQ(lsm.Get(7), 0.0);
    EXPECT_EQ(sm.Get(8), 0.5) << "stable: exp(1000) overflows without the max shift";
    EXPECT_TRUE(test::Close(lsm.Get(9), -std::log(2.0), DefaultTolerance(dtype)));
  }
  // In place: dst == src gives the same rows.
  const Buffer x = FromDoubles(DType::Float32, {0.0, 1.0, 2.0, 3.0});
  Buffer y = FromDoubles(DType::Float32, {0.0, 1.0, 2.0, 3.0});
  math().SoftmaxRows(y.data(), y.data(), 2, 2, DType::Float32);
  const double e = std::exp(1.0);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(test::Close(y.Get(i), (i % 2 == 0 ? 1.0 : e) / (1.0 + e), DefaultTolerance(DType::Float32))) << i;
  }
}

TEST_F(MathExtTest, InvSqrtDimScaleSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer x = FromDoubles(dtype, {kInf, -kInf, kNaN, -0.0, 3.0});
    Buffer out(dtype, 5);
    math().InvSqrtDimScale(out.data(), x.data(), 5, 4, dtype);
    EXPECT_EQ(out.Get(0), kInf);
    EXPECT_EQ(out.Get(1), -kInf);
    EXPECT_TRUE(std::isnan(out.Get(2)));
    EXPECT_TRUE(std::signbit(out.Get(3)));
    EXPECT_EQ(out.Get(4), 1.5);
  }
  // f64 end to end: 1 / sqrt(3) to full double precision.
  const Buffer x = FromDoubles(DType::Float64, {1.0});
  Buffer out(DType::Float64, 1);
  math().InvSqrtDimScale(out.data(), x.data(), 1, 3, DType::Float64);
  EXPECT_NEAR(out.Get(0), 0.57735026918962576451, 2e-16);
}

// ---- Validation ---------------------------------------------------------------------------------

// Every method accepts exactly the catalog's DTypes column (kFloatDTypes), also at size 0.
TEST_F(MathExtTest, AcceptedDTypesAreExactlyTheFloatFormats) {
  const Buffer v(DType::Float64, 4), w(DType::Float64, 4);
  Buffer o(DType::Float64, 16);
  std::vector<std::pair<std::string, std::function<void(DType)>>> calls = {
      {"MathExt.Sin", [&](DType d) { math().Sin(o.data(), v.data(), 4, d); }},
      {"MathExt.Cos", [&](DType d) { math().Cos(o.data(), v.data(), 4, d); }},
      {"MathExt.Sign", [&](DType d) { math().Sign(o.data(), v.data(), 4, d); }},
      {"MathExt.Outer", [&](DType d) { math().Outer(v.data(), w.data(), o.data(), 4, 4, d); }},
      {"MathExt.LogSumExp", [&](DType d) { math().LogSumExp(v.data(), o.data(), 2, 2, d); }},
      {"MathExt.InvSqrtDimScale",
       [&](DType d) { math().InvSqrtDimScale(o.data(), v.data(), 4, 8, d); }},
      {"MathExt.SoftmaxRows", [&](DType d) { math().SoftmaxRows(o.data(), v.data(), 2, 2, d); }},
      {"MathExt.LogSoftmaxRows", [&](DType d) { math().LogSoftmaxRows(o.data(), v.data(), 2, 2, d); }},
  };
  std::vector<std::pair<std::string, std::function<void(DType)>>> empty_calls = {
      {"MathExt.Sin", [&](DType d) { math().Sin(nullptr, nullptr, 0, d); }},
      {"MathExt.Cos", [&](DType d) { math().Cos(nullptr, nullptr, 0, d); }},
      {"MathExt.Sign", [&](DType d) { math().Sign(nullptr, nullptr, 0, d); }},
      {"MathExt.Outer", [&](DType d) { math().Outer(nullptr, nullptr, nullptr, 0, 0, d); }},
      {"MathExt.LogSumExp", [&](DType d) { math().LogSumExp(nullptr, nullptr, 0, 0, d); }},
      {"MathExt.InvSqrtDimScale",
       [&](DType d) { math().InvSqrtDimScale(nullptr, nullptr, 0, 1, d); }},
      {"MathExt.SoftmaxRows", [&](DType d) { math().SoftmaxRows(nullptr, nullptr, 0, 0, d); }},
      {"MathExt.LogSoftmaxRows", [&](DType d) { math().LogSoftmaxRows(nullptr, nullptr, 0, 0, d); }},
  };
  std::vector<DType> dtypes(AllDTypes().begin(), AllDTypes().end());
  dtypes.push_back(DType::Invalid);
  dtypes.push_back(static_cast<DType>(kDTypeCount));
  for (auto* list : {&calls, &empty_calls}) {
    for (const auto& [name, call] : *list) {
      for (DType d : dtypes) {
        SCOPED_TRACE(name + " " + std::to_string(static_cast<int>(d)));
        if (kFloatDTypes.Contains(d)) {
          EXPECT_NO_THROW(call(d));
        } else {
          EXPECT_TRUE(
              test::ThrowsError([&] { call(d); }, ErrorCode::UnsupportedDType, {name, "'dtype'"}));
        }
      }
    }
  }
}

TEST_F(MathExtTest, UnaryRejectsBadArguments) {
  const Buffer x = test::RandomBuffer(DType::Float32, 4, 1);
  for (const UnaryOp& op : kUnaryOps) {
    const std::string name = std::string("MathExt.") + op.name;
    SCOPED_TRACE(name);
    auto m = op.method;
    Buffer out(DType::Float32, 4);
    out.Poison();
    auto call = [&](void* dst, const void* src, int64_t n) {
      return [=, this] { (math().*m)(dst, src, n, DType::Float32); };
    };
    EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), -1), ErrorCode::InvalidArgument,
                                  {name, "'count'", "-1"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), nullptr, 4), ErrorCode::InvalidArgument,
                                  {name, "'src'"}));
    EXPECT_TRUE(
        test::ThrowsError(call(nullptr, x.data(), 4), ErrorCode::InvalidArgument, {name, "'dst'"}));
    EXPECT_TRUE(out.IsPoisoned());
  }
}

TEST_F(MathExtTest, InvSqrtDimScaleRejectsBadArguments) {
  const std::string name = "MathExt.InvSqrtDimScale";
  const Buffer x = test::RandomBuffer(DType::Float32, 4, 1);
  Buffer out(DType::Float32, 4);
  out.Poison();
  auto call = [&](void* dst, const void* src, int64_t n, int64_t dim) {
    return [=, this] { math().InvSqrtDimScale(dst, src, n, dim, DType::Float32); };
  };
  EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), 4, 0), ErrorCode::InvalidArgument,
                                {name, "'dim'", "0"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), 4, -3), ErrorCode::InvalidArgument,
                                {name, "'dim'", "-3"}));
  EXPECT_TRUE(
      test::ThrowsError(call(nullptr, nullptr, 0, 0), ErrorCode::InvalidArgument, {name, "'dim'"}))
      << "dim is validated also for an empty input";
  EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), -1, 4), ErrorCode::InvalidArgument,
                                {name, "'count'"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), nullptr, 4, 4), ErrorCode::InvalidArgument,
                                {name, "'src'"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, x.data(), 4, 4), ErrorCode::InvalidArgument,
                                {name, "'dst'"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST_F(MathExtTest, OuterRejectsBadArguments) {
  const std::string name = "MathExt.Outer";
  const Buffer a = test::RandomBuffer(DType::Float32, 3, 1),
               b = test::RandomBuffer(DType::Float32, 2, 2);
  Buffer out(DType::Float32, 6);
  out.Poison();
  auto call = [&](const void* l, const void* r, void* o, int64_t rows, int64_t cols) {
    return [=, this] { math().Outer(l, r, o, rows, cols, DType::Float32); };
  };
  EXPECT_TRUE(test::ThrowsError(call(a.data(), b.data(), out.data(), -1, 2),
                                ErrorCode::InvalidArgument, {name, "'rows'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(a.data(), b.data(), out.data(), 3, -2),
                                ErrorCode::InvalidArgument, {name, "'cols'", "-2"}));
  EXPECT_TRUE(
      test::ThrowsError(call(a.data(), b.data(), out.data(), int64_t{1} << 40, int64_t{1} << 40),
                        ErrorCode::InvalidArgument, {name, "'rows*cols'"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, b.data(), out.data(), 3, 2),
                                ErrorCode::InvalidArgument, {name, "'left'"}));
  EXPECT_TRUE(test::ThrowsError(call(a.data(), nullptr, out.data(), 3, 2),
                                ErrorCode::InvalidArgument, {name, "'right'"}));
  EXPECT_TRUE(test::ThrowsError(call(a.data(), b.data(), nullptr, 3, 2), ErrorCode::InvalidArgument,
                                {name, "'out'"}));
  EXPECT_TRUE(out.IsPoisoned());
  // An empty side needs no buffer on either side of the product: [0, 2] and [3, 0].
  EXPECT_NO_THROW(math().Outer(nullptr, b.data(), nullptr, 0, 2, DType::Float32));
  EXPECT_NO_THROW(math().Outer(a.data(), nullptr, nullptr, 3, 0, DType::Float32));
}

TEST_F(MathExtTest, SoftmaxRowsRejectBadArguments) {
  const Buffer x = test::RandomBuffer(DType::Float32, 6, 1);
  Buffer out(DType::Float32, 6);
  out.Poison();
  for (const bool lg : {false, true}) {
    const std::string name = lg ? "MathExt.LogSoftmaxRows" : "MathExt.SoftmaxRows";
    SCOPED_TRACE(name);
    auto call = [&](void* d, const void* s, int64_t rows, int64_t cols, DType dtype) {
      return [=, this] {
        lg ? math().LogSoftmaxRows(d, s, rows, cols, dtype) : math().SoftmaxRows(d, s, rows, cols, dtype);
      };
    };
    EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), -1, 3, DType::Float32), ErrorCode::InvalidArgument,
                                  {name, "'rows'", "-1"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), 2, -3, DType::Float32), ErrorCode::InvalidArgument,
                                  {name, "'cols'", "-3"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), int64_t{1} << 40, int64_t{1} << 40, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'rows*cols'"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), nullptr, 2, 3, DType::Float32), ErrorCode::InvalidArgument,
                                  {name, "'src'"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, x.data(), 2, 3, DType::Float32), ErrorCode::InvalidArgument,
                                  {name, "'dst'"}));
    EXPECT_TRUE(test::ThrowsError(call(out.data(), x.data(), 2, 3, DType::Int32), ErrorCode::UnsupportedDType,
                                  {name, "'dtype'"}));
    EXPECT_TRUE(out.IsPoisoned());
  }
}

TEST_F(MathExtTest, LogSumExpRejectsBadArguments) {
  const std::string name = "MathExt.LogSumExp";
  const Buffer x = test::RandomBuffer(DType::Float32, 6, 1);
  Buffer out(DType::Float32, 2);
  out.Poison();
  auto call = [&](const void* s, void* d, int64_t rows, int64_t cols) {
    return [=, this] { math().LogSumExp(s, d, rows, cols, DType::Float32); };
  };
  EXPECT_TRUE(test::ThrowsError(call(x.data(), out.data(), -1, 3), ErrorCode::InvalidArgument,
                                {name, "'rows'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(x.data(), out.data(), 2, -3), ErrorCode::InvalidArgument,
                                {name, "'cols'", "-3"}));
  EXPECT_TRUE(test::ThrowsError(call(x.data(), out.data(), int64_t{1} << 40, int64_t{1} << 40),
                                ErrorCode::InvalidArgument, {name, "'rows*cols'"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, out.data(), 2, 3), ErrorCode::InvalidArgument,
                                {name, "'src'"}));
  EXPECT_TRUE(test::ThrowsError(call(x.data(), nullptr, 2, 3), ErrorCode::InvalidArgument,
                                {name, "'dst'"}));
  EXPECT_TRUE(
      test::ThrowsError(call(nullptr, nullptr, 2, 0), ErrorCode::InvalidArgument, {name, "'dst'"}))
      << "rows > 0 with cols == 0 still writes -Inf per row";
  EXPECT_TRUE(out.IsPoisoned());
}

}  // namespace
}  // namespace backplane
