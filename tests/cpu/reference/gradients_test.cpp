// Gradients reference kernels against central finite differences of the corresponding mean loss,
// evaluated in the test from the loss formula, plus known values (PyTorch autograd of mse_loss /
// cross_entropy), consistency with the library's own Losses methods, and every validation path.
// Called through the public reference Backend (cpu::CreateReferenceBackend).
//
// The oracle: L = (1/n) sum_j l_j, and perturbing one input changes only its own term (MSE) or its
// own row's term (cross-entropy), so dL/dx = (1/n) (l(x + h) - l(x - h)) / (2h) for that term. The
// difference is evaluated in long double (>= 64-bit significand) with h = 2^-20: for MSE the
// central difference of a quadratic is exact up to rounding; for cross-entropy the truncation
// error h^2/6 |l'''| <= 2e-14 (|l'''| < 0.1 for log-sum-exp) and the rounding error
// ~ eps_ld |l| / h < 1e-13 |l| stay far below every tolerance. Results are compared with
// DefaultTolerance(dtype) of the storage format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

static_assert(std::numeric_limits<long double>::digits >= 64,
              "the finite-difference oracle needs an extended-precision long double");

using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr long double kStep = 0x1.0p-20L;

// Per-element MSE term (p - t)^2.
long double MseTerm(long double p, long double t) { return (p - t) * (p - t); }

// Cross-entropy row term logsumexp(z) - z[target], max-shifted.
long double CeRowTerm(const std::vector<long double>& z, int32_t target) {
  long double m = z[0];
  for (long double v : z) m = std::max(m, v);
  long double sum = 0.0L;
  for (long double v : z) sum += std::exp(v - m);
  return m + std::log(sum) - z[static_cast<size_t>(target)];
}

std::vector<double> MseOracle(const Buffer& p, const Buffer& t) {
  const int64_t n = p.count();
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const long double pi = p.Get(i), ti = t.Get(i);
    const long double fd = (MseTerm(pi + kStep, ti) - MseTerm(pi - kStep, ti)) / (2 * kStep);
    want[static_cast<size_t>(i)] = static_cast<double>(fd / static_cast<long double>(n));
  }
  return want;
}

std::vector<double> CeOracle(const Buffer& logits, const std::vector<int32_t>& targets,
                             int64_t batch, int64_t classes) {
  std::vector<double> want(static_cast<size_t>(batch * classes));
  std::vector<long double> row(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < classes; ++c) row[static_cast<size_t>(c)] = logits.Get(b * classes + c);
    for (int64_t c = 0; c < classes; ++c) {
      const long double z = row[static_cast<size_t>(c)];
      row[static_cast<size_t>(c)] = z + kStep;
      const long double up = CeRowTerm(row, targets[static_cast<size_t>(b)]);
      row[static_cast<size_t>(c)] = z - kStep;
      const long double down = CeRowTerm(row, targets[static_cast<size_t>(b)]);
      row[static_cast<size_t>(c)] = z;
      want[static_cast<size_t>(b * classes + c)] =
          static_cast<double>((up - down) / (2 * kStep) / static_cast<long double>(batch));
    }
  }
  return want;
}

std::vector<int32_t> RandomTargets(int64_t batch, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(
      0, static_cast<int32_t>(std::max<int64_t>(classes, 1) - 1));
  std::vector<int32_t> targets(static_cast<size_t>(batch));
  for (auto& t : targets) t = dist(rng);
  return targets;
}

class GradientsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateReferenceBackend();
  GradientsSurface& grad() { return backend_->Gradients(); }

  Buffer Mse(DType dtype, const std::vector<double>& p, const std::vector<double>& t) {
    const Buffer pb = FromDoubles(dtype, p), tb = FromDoubles(dtype, t);
    Buffer g(dtype, pb.count());
    g.Poison();
    grad().MSEGrad(pb.data(), tb.data(), g.data(), pb.count(), dtype);
    EXPECT_TRUE(g.GuardIntact());
    return g;
  }
  Buffer Ce(DType dtype, const std::vector<double>& logits, const std::vector<int32_t>& targets,
            int64_t classes) {
    const Buffer lb = FromDoubles(dtype, logits);
    const auto batch = static_cast<int64_t>(targets.size());
    Buffer g(dtype, batch * classes);
    g.Poison();
    grad().CrossEntropyGrad(lb.data(), targets.data(), g.data(), batch, classes, dtype);
    EXPECT_TRUE(g.GuardIntact());
    return g;
  }
};

// ---- Finite differences
// --------------------------------------------------------------------------

TEST_F(GradientsTest, MSEGradEqualsCentralDifferencesOfTheMeanLoss) {
  for (DType dtype : test::FloatDTypes()) {
    for (int64_t n : {0, 1, 2, 7, 33, 4099}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(n));
      const auto seed = static_cast<uint64_t>(n) * 2;
      const Buffer p = test::RandomBuffer(dtype, n, seed, -4.0, 4.0);
      const Buffer t = test::RandomBuffer(dtype, n, seed + 1, -4.0, 4.0);
      Buffer g(dtype, n);
      g.Poison();
      grad().MSEGrad(p.data(), t.data(), g.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(g, MseOracle(p, t), DefaultTolerance(dtype)));
      EXPECT_TRUE(g.GuardIntact());
    }
  }
}

TEST_F(GradientsTest, CrossEntropyGradEqualsCentralDifferencesOfTheMeanLoss) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{0, 5}, {0, 0},  {1, 1},   {1, 4},
                                                           {3, 7}, {8, 33}, {37, 113}};
  for (DType dtype : test::FloatDTypes()) {
    for (const auto& [batch, classes] : shapes) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(batch) + "x" +
                   std::to_string(classes));
      const auto seed = static_cast<uint64_t>(batch * 1000 + classes);
      const Buffer logits = test::RandomBuffer(dtype, batch * classes, seed, -6.0, 6.0);
      const auto targets = RandomTargets(batch, classes, seed + 1);
      Buffer g(dtype, batch * classes);
      g.Poison();
      grad().CrossEntropyGrad(logits.data(), targets.data(), g.data(), batch, classes, dtype);
      EXPECT_TRUE(
          test::AllClose(g, CeOracle(logits, targets, batch, classes), DefaultTolerance(dtype)));
      EXPECT_TRUE(g.GuardIntact());
    }
  }
}

// The gradients are the derivatives of this library's own Losses.MSE and Losses.CrossEntropy:
// central differences of those methods in f64 (h = 1e-5; f64 rounding in the loss limits the
// difference quotient to about 1e-16 * |L| / h, hence the bound 1e-9).
TEST_F(GradientsTest, MatchTheLibraryLossesByFiniteDifferences) {
  const DType f64 = DType::Float64;
  const double h = 1e-5;
  const Tolerance loose{1e-9, 1e-7};
  {
    Buffer p = test::RandomBuffer(f64, 9, 5, -2.0, 2.0);
    const Buffer t = test::RandomBuffer(f64, 9, 6, -2.0, 2.0);
    Buffer g(f64, 9);
    grad().MSEGrad(p.data(), t.data(), g.data(), 9, f64);
    for (int64_t i = 0; i < 9; ++i) {
      const double x = p.Get(i);
      p.Set(i, x + h);
      const double up = backend_->Losses().MSE(p.data(), t.data(), 9, f64);
      p.Set(i, x - h);
      const double down = backend_->Losses().MSE(p.data(), t.data(), 9, f64);
      p.Set(i, x);
      EXPECT_TRUE(test::Close(g.Get(i), (up - down) / (2 * h), loose)) << "MSE at " << i;
    }
  }
  {
    const int64_t batch = 4, classes = 5;
    Buffer z = test::RandomBuffer(f64, batch * classes, 7, -3.0, 3.0);
    const auto targets = RandomTargets(batch, classes, 8);
    Buffer g(f64, batch * classes);
    grad().CrossEntropyGrad(z.data(), targets.data(), g.data(), batch, classes, f64);
    for (int64_t i = 0; i < batch * classes; ++i) {
      const double x = z.Get(i);
      z.Set(i, x + h);
      const double up =
          backend_->Losses().CrossEntropy(z.data(), targets.data(), batch, classes, f64);
      z.Set(i, x - h);
      const double down =
          backend_->Losses().CrossEntropy(z.data(), targets.data(), batch, classes, f64);
      z.Set(i, x);
      EXPECT_TRUE(test::Close(g.Get(i), (up - down) / (2 * h), loose)) << "CE at " << i;
    }
  }
}

// ---- Known values (PyTorch autograd of mse_loss / cross_entropy, reduction='mean') --------------

TEST_F(GradientsTest, MSEGradKnownValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer g = Mse(dtype, {1.5, 0.0, 3.0, -2.0}, {1.0, 1.0, 1.0, -2.0});
    EXPECT_TRUE(test::AllClose(g, {0.25, -0.5, 1.0, 0.0}, {0.0, 0.0}));
    const Buffer s = Mse(dtype, {kInf, kNaN, kInf, -0.0}, {0.0, 0.0, kInf, 0.0});
    EXPECT_EQ(s.Get(0), kInf);
    EXPECT_TRUE(std::isnan(s.Get(1)));
    EXPECT_TRUE(std::isnan(s.Get(2))) << "Inf - Inf";
    EXPECT_EQ(s.Get(3), 0.0);
  }
  // 2 (p - t) / n overflows f16 (max 65504) for p - t = 60000 - (-60000) and n = 1: +Inf.
  EXPECT_EQ(Mse(DType::Float16, {60000.0}, {-60000.0}).Get(0), kInf);
  EXPECT_EQ(Mse(DType::Float32, {60000.0}, {-60000.0}).Get(0), 240000.0);
}

TEST_F(GradientsTest, CrossEntropyGradKnownValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // Uniform logits, batch 2: (1/4 - onehot) / 2.
    EXPECT_TRUE(test::AllClose(Ce(dtype, {3.0, 3.0, 3.0, 3.0, -1.0, -1.0, -1.0, -1.0}, {2, 0}, 4),
                               {0.125, 0.125, -0.375, 0.125, -0.375, 0.125, 0.125, 0.125},
                               {0.0, 0.0}));
    // One class: p = 1 = onehot, so the gradient is 0 whatever the logit.
    EXPECT_TRUE(test::AllClose(Ce(dtype, {7.5, -2.0}, {0, 0}, 1), {0.0, 0.0}, {0.0, 0.0}));
    // Stable for large logits (exp(1000) overflows without the max shift).
    EXPECT_TRUE(test::AllClose(Ce(dtype, {1000.0, 0.0}, {1}, 2), {1.0, -1.0}, {0.0, 0.0}));
    // A masked (-Inf) class has probability 0; targeting it still gives p - 1 = -1 (torch).
    EXPECT_TRUE(test::AllClose(Ce(dtype, {0.0, -kInf, 0.0}, {0}, 3), {-0.5, 0.0, 0.5}, {0.0, 0.0}));
    EXPECT_TRUE(test::AllClose(Ce(dtype, {0.0, -kInf, 0.0}, {1}, 3), {0.5, -1.0, 0.5}, {0.0, 0.0}));
    // NaN, +Inf and an all -Inf row make the whole row NaN (torch); other rows are unaffected.
    const Buffer g = Ce(dtype, {0.0, kNaN, kInf, 0.0, -kInf, -kInf, 0.0, 0.0}, {0, 1, 0, 1}, 2);
    for (int64_t i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(g.Get(i))) << i;
    EXPECT_EQ(g.Get(6), 0.125);
    EXPECT_EQ(g.Get(7), -0.125);
  }
}

TEST_F(GradientsTest, CrossEntropyGradRowsSumToZero) {
  const int64_t batch = 6, classes = 50;
  const Buffer z = test::RandomBuffer(DType::Float64, batch * classes, 3, -20.0, 20.0);
  const auto targets = RandomTargets(batch, classes, 4);
  Buffer g(DType::Float64, batch * classes);
  grad().CrossEntropyGrad(z.data(), targets.data(), g.data(), batch, classes, DType::Float64);
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += g.Get(b * classes + c);
    EXPECT_NEAR(sum, 0.0, 1e-14) << b;
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(GradientsTest, MSEGradRejectsBadArguments) {
  const std::string name = "Gradients.MSEGrad";
  const Buffer v = test::RandomBuffer(DType::Float32, 4, 9);
  Buffer g(DType::Float32, 4);
  g.Poison();
  auto call = [&](const void* p, const void* t, void* out, int64_t n, DType d) {
    return [=, this] { grad().MSEGrad(p, t, out, n, d); };
  };
  EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), g.data(), -1, DType::Float32),
                                ErrorCode::InvalidArgument, {name, "'count'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, v.data(), g.data(), 4, DType::Float32),
                                ErrorCode::InvalidArgument, {name, "'predictions'"}));
  EXPECT_TRUE(test::ThrowsError(call(v.data(), nullptr, g.data(), 4, DType::Float32),
                                ErrorCode::InvalidArgument, {name, "'targets'"}));
  EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), nullptr, 4, DType::Float32),
                                ErrorCode::InvalidArgument, {name, "'grad'"}));
  std::vector<DType> dtypes(AllDTypes().begin(), AllDTypes().end());
  dtypes.push_back(DType::Invalid);
  dtypes.push_back(static_cast<DType>(kDTypeCount));
  for (DType d : dtypes) {
    if (kFloatDTypes.Contains(d)) continue;
    EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), g.data(), 4, d),
                                  ErrorCode::UnsupportedDType, {name, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, nullptr, 0, d),
                                  ErrorCode::UnsupportedDType, {name, "'dtype'"}));
  }
  EXPECT_TRUE(g.IsPoisoned());
  for (DType d : test::FloatDTypes())
    EXPECT_NO_THROW(grad().MSEGrad(nullptr, nullptr, nullptr, 0, d));
}

TEST_F(GradientsTest, CrossEntropyGradRejectsBadArguments) {
  const std::string name = "Gradients.CrossEntropyGrad";
  const Buffer z = test::RandomBuffer(DType::Float32, 6, 9);
  const std::vector<int32_t> targets = {0, 2};
  Buffer g(DType::Float32, 6);
  g.Poison();
  auto call = [&](const void* l, const int32_t* t, void* out, int64_t b, int64_t c, DType d) {
    return [=, this] { grad().CrossEntropyGrad(l, t, out, b, c, d); };
  };
  const DType f32 = DType::Float32;
  EXPECT_TRUE(test::ThrowsError(call(z.data(), targets.data(), g.data(), -1, 3, f32),
                                ErrorCode::InvalidArgument, {name, "'batch'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(z.data(), targets.data(), g.data(), 2, -3, f32),
                                ErrorCode::InvalidArgument, {name, "'classes'", "-3"}));
  EXPECT_TRUE(test::ThrowsError(call(z.data(), targets.data(), g.data(), 2, 0, f32),
                                ErrorCode::InvalidArgument, {name, "'classes'"}));
  EXPECT_TRUE(test::ThrowsError(
      call(z.data(), targets.data(), g.data(), int64_t{1} << 40, int64_t{1} << 40, f32),
      ErrorCode::InvalidArgument, {name, "'batch*classes'"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, targets.data(), g.data(), 2, 3, f32),
                                ErrorCode::InvalidArgument, {name, "'logits'"}));
  EXPECT_TRUE(test::ThrowsError(call(z.data(), nullptr, g.data(), 2, 3, f32),
                                ErrorCode::InvalidArgument, {name, "'targets'"}));
  EXPECT_TRUE(test::ThrowsError(call(z.data(), targets.data(), nullptr, 2, 3, f32),
                                ErrorCode::InvalidArgument, {name, "'grad'"}));
  for (const std::vector<int32_t>& bad :
       {std::vector<int32_t>{0, 3}, std::vector<int32_t>{-1, 0}}) {
    EXPECT_TRUE(test::ThrowsError(call(z.data(), bad.data(), g.data(), 2, 3, f32),
                                  ErrorCode::InvalidArgument, {name, "'targets'", "[0, 3)"}));
  }
  std::vector<DType> dtypes(AllDTypes().begin(), AllDTypes().end());
  dtypes.push_back(DType::Invalid);
  dtypes.push_back(static_cast<DType>(kDTypeCount));
  for (DType d : dtypes) {
    if (kFloatDTypes.Contains(d)) continue;
    EXPECT_TRUE(test::ThrowsError(call(z.data(), targets.data(), g.data(), 2, 3, d),
                                  ErrorCode::UnsupportedDType, {name, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, nullptr, 0, 3, d),
                                  ErrorCode::UnsupportedDType, {name, "'dtype'"}));
  }
  EXPECT_TRUE(g.IsPoisoned()) << "a bad target found late leaves the output untouched";
  for (DType d : test::FloatDTypes()) {
    EXPECT_NO_THROW(grad().CrossEntropyGrad(nullptr, nullptr, nullptr, 0, 0, d));
    EXPECT_NO_THROW(grad().CrossEntropyGrad(nullptr, nullptr, nullptr, 0, 7, d));
  }
}

}  // namespace
}  // namespace backplane
