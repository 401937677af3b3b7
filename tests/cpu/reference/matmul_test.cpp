// Matmul reference kernel against golden data (tests/golden/gen_core_math.py: torch.matmul in
// float64 on operands rounded to each dtype, shapes with 0, 1 and odd sizes, and a 64 x 65 left
// operand), overwrite semantics, single rounding, special values and every validation path.
// Called through the public CPU Backend. Every output element is one f64 dot product rounded once,
// so DefaultTolerance(dtype) applies element by element.
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
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("matmul.json"));
    EXPECT_TRUE(in.good()) << "missing golden file matmul.json";
    return json::parse(in);
  }();
  return data;
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

class MatmulTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
  MatmulSurface& mm() { return backend_->Matmul(); }

  // Runs on a poisoned output (so stale contents would show) and checks the guard bytes.
  Buffer Run(DType dtype, const std::vector<double>& a, const std::vector<double>& b, int64_t rows,
             int64_t inner, int64_t cols) {
    const Buffer ab = FromDoubles(dtype, a), bb = FromDoubles(dtype, b);
    Buffer out(dtype, rows * cols);
    out.Poison();
    mm().Matmul(out.data(), ab.data(), bb.data(), rows, inner, cols, dtype);
    EXPECT_TRUE(out.GuardIntact());
    return out;
  }

  void CheckCase(DType dtype, const json& c) {
    const int64_t rows = c["rows"], inner = c["inner"], cols = c["cols"];
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" +
                 std::to_string(inner) + "x" + std::to_string(cols));
    const Buffer a = FromGolden(dtype, c["left"]), b = FromGolden(dtype, c["right"]);
    Buffer out(dtype, rows * cols);
    out.Poison();
    mm().Matmul(out.data(), a.data(), b.data(), rows, inner, cols, dtype);
    EXPECT_TRUE(test::AllClose(out, c["out"].get<std::vector<double>>(), DefaultTolerance(dtype)));
    EXPECT_TRUE(out.GuardIntact());
  }
};

TEST_F(MatmulTest, MatchesGoldenAtAwkwardShapesForEveryDType) {
  int cases = 0;
  for (const json& c : Golden()["cases"]) {
    CheckCase(*DTypeFromName(c["dtype"].get<std::string>()), c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 10);
}

TEST_F(MatmulTest, MatchesGoldenWithAnOperandOver4096Elements) {
  const json& large = Golden()["large"];
  ASSERT_GT(large["rows"].get<int>() * large["inner"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) CheckCase(dtype, large);
}

// ---- Semantics
// -----------------------------------------------------------------------------------

TEST_F(MatmulTest, OverwritesTheOutputInEveryDType) {
  for (DType dtype : test::FloatDTypes()) {
    const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1};  // [2,3] x [3,2]
    Buffer out = FromDoubles(dtype, {100, 100, 100, 100});
    const Buffer ab = FromDoubles(dtype, a), bb = FromDoubles(dtype, b);
    mm().Matmul(out.data(), ab.data(), bb.data(), 2, 3, 2, dtype);
    EXPECT_EQ(out.ToDoubles(), (std::vector<double>{4, 5, 10, 11})) << DTypeName(dtype);
  }
}

TEST_F(MatmulTest, InnerZeroGivesZeros) {
  for (DType dtype : test::FloatDTypes()) {
    Buffer out(dtype, 6);
    out.Poison();
    mm().Matmul(out.data(), nullptr, nullptr, 2, 0, 3, dtype);
    EXPECT_EQ(out.ToDoubles(), std::vector<double>(6, 0.0)) << DTypeName(dtype);
    EXPECT_TRUE(out.GuardIntact());
    EXPECT_NO_THROW(mm().Matmul(nullptr, nullptr, nullptr, 0, 5, 0, dtype));
    EXPECT_NO_THROW(mm().Matmul(nullptr, nullptr, nullptr, 0, 0, 0, dtype));
  }
}

TEST_F(MatmulTest, OutputMayAliasAnOperand) {
  for (DType dtype : test::FloatDTypes()) {
    const std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
    Buffer inplace = FromDoubles(dtype, a);
    const Buffer bb = FromDoubles(dtype, b);
    mm().Matmul(inplace.data(), inplace.data(), bb.data(), 2, 2, 2, dtype);
    EXPECT_EQ(inplace.ToDoubles(), (std::vector<double>{19, 22, 43, 50})) << DTypeName(dtype);
  }
}

TEST_F(MatmulTest, HalfOutputsAreRoundedOnceFromFloat64) {
  // 1*1 + e*1 + s*s with e = 2^-11 (f16) and s = 2^-20: the exact sum 1 + 2^-11 + 2^-40 is just
  // above the midpoint of 1 and 1 + 2^-10. One rounding gives 1 + 2^-10; rounding through f32
  // first would land on the midpoint and round to even, 1.
  const double s = std::ldexp(1.0, -20);
  EXPECT_EQ(Run(DType::Float16, {1.0, std::ldexp(1.0, -11), s}, {1.0, 1.0, s}, 1, 3, 1).Get(0),
            1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(Run(DType::BFloat16, {1.0, std::ldexp(1.0, -8), s}, {1.0, 1.0, s}, 1, 3, 1).Get(0),
            1.0 + std::ldexp(1.0, -7));
  // Just below the midpoint rounds down, and an exact midpoint rounds to even.
  EXPECT_EQ(Run(DType::Float16, {1.0, std::ldexp(1.0, -11), -s}, {1.0, 1.0, s}, 1, 3, 1).Get(0),
            1.0);
  EXPECT_EQ(Run(DType::Float16, {1.0, std::ldexp(1.0, -11)}, {1.0, 1.0}, 1, 2, 1).Get(0), 1.0);
  // f32: the f64 dot product rounded once (f32 accumulation would lose the 1).
  EXPECT_EQ(Run(DType::Float32, {1e8, 1.0, -1e8}, {1.0, 1.0, 1.0}, 1, 3, 1).Get(0), 1.0);
}

TEST_F(MatmulTest, HalfOverflowGivesInfinity) {
  EXPECT_EQ(Run(DType::Float16, {300.0}, {300.0}, 1, 1, 1).Get(0), kInf);
  EXPECT_EQ(Run(DType::Float16, {-300.0}, {300.0}, 1, 1, 1).Get(0), -kInf);
  // 65520 is the midpoint between 65504 and 2^16: rounds to even, i.e. to +Inf (as torch).
  EXPECT_EQ(Run(DType::Float16, {65504.0, 16.0}, {1.0, 1.0}, 1, 2, 1).Get(0), kInf);
  EXPECT_EQ(Run(DType::Float16, {65504.0, 15.0}, {1.0, 1.0}, 1, 2, 1).Get(0), 65504.0);
  EXPECT_EQ(Run(DType::BFloat16, {3e38}, {10.0}, 1, 1, 1).Get(0), kInf);
  // f16 intermediate overflow does not matter: the sum is in f64.
  EXPECT_EQ(Run(DType::Float16, {300.0, -300.0}, {300.0, 300.0}, 1, 2, 1).Get(0), 0.0);
}

TEST_F(MatmulTest, SpecialValuesPropagate) {
  for (DType dtype : test::FloatDTypes()) {
    // [2,2] x [2,2] with a NaN in A's row 0 and an Inf in B's column 1.
    const Buffer out = Run(dtype, {kNaN, 1.0, 2.0, 1.0}, {1.0, kInf, 1.0, 0.0}, 2, 2, 2);
    EXPECT_TRUE(std::isnan(out.Get(0)));
    EXPECT_TRUE(std::isnan(out.Get(1)));
    EXPECT_EQ(out.Get(2), 3.0);
    EXPECT_EQ(out.Get(3), kInf);
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(MatmulTest, RejectsBadArgumentsWithoutWriting) {
  const std::string op = "Matmul.Matmul";
  const Buffer a = test::RandomBuffer(DType::Float32, 6, 7),
               b = test::RandomBuffer(DType::Float32, 6, 8);
  Buffer out(DType::Float32, 4);
  out.Poison();
  auto call = [&](void* o, const void* l, const void* r, int64_t m, int64_t k, int64_t n, DType t) {
    return [=, this] { mm().Matmul(o, l, r, m, k, n, t); };
  };
  const DType f = DType::Float32;
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), -2, 3, 2, f),
                                ErrorCode::InvalidArgument, {op, "'rows'", "-2"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), 2, -3, 2, f),
                                ErrorCode::InvalidArgument, {op, "'inner'", "-3"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), 2, 3, -1, f),
                                ErrorCode::InvalidArgument, {op, "'cols'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, a.data(), b.data(), 2, 3, 2, f),
                                ErrorCode::InvalidArgument, {op, "'out'"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), nullptr, b.data(), 2, 3, 2, f),
                                ErrorCode::InvalidArgument, {op, "'left'"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), nullptr, 2, 3, 2, f),
                                ErrorCode::InvalidArgument, {op, "'right'"}));
  // Null operands are fine only where they cover no elements: here `out` still has 4.
  EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, nullptr, 2, 0, 2, f),
                                ErrorCode::InvalidArgument, {op, "'out'"}));
  const int64_t huge = int64_t{1} << 62;
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), huge, 4, 0, f),
                                ErrorCode::InvalidArgument, {op, "'rows*inner'", "overflows"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), 0, 4, huge, f),
                                ErrorCode::InvalidArgument, {op, "'inner*cols'"}));
  EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), huge, 0, 4, f),
                                ErrorCode::InvalidArgument, {op, "'rows*cols'"}));
  for (DType bad : {DType::Int8, DType::Int4, DType::Int32, DType::Float8E4M3, DType::Invalid,
                    static_cast<DType>(kDTypeCount)}) {
    EXPECT_TRUE(test::ThrowsError(call(out.data(), a.data(), b.data(), 2, 3, 2, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, nullptr, 0, 0, 0, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}))
        << "the dtype is validated even when every size is 0";
  }
  EXPECT_TRUE(out.IsPoisoned());
}

}  // namespace
}  // namespace backplane
