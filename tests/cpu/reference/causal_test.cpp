// Causal reference kernels, called through the CPU backend. Oracles: NumPy golden data
// (tests/golden/gen_causal.py: numpy.linalg.cholesky, einsum forms of the adjustment formulas,
// numpy.cov / two-stage least squares), two small structural causal models whose P(y | do(x)) is
// known in closed form (checked there by simulation), an instrumental-variable regression that must
// recover a planted effect, L L^T reconstruction, and float64 / long double formulas written here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::AllClose;
using test::Buffer;
using test::Close;
using test::DefaultTolerance;
using test::FloatDTypes;
using test::FromDoubles;
using test::RandomBuffer;
using test::ThrowsError;
using Vec = std::vector<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

CausalSurface& Causal() {
  static auto backend = cpu::CreateBackend();
  return backend->Causal();
}

const nlohmann::json& Golden() {
  static const nlohmann::json golden = [] {
    std::ifstream in(test::GoldenPath("causal.json"));
    EXPECT_TRUE(in.good()) << "missing golden file causal.json";
    return nlohmann::json::parse(in);
  }();
  return golden;
}

DType ParseDType(const nlohmann::json& c) {
  return *DTypeFromName(c.at("dtype").get<std::string>());
}
Buffer Input(const nlohmann::json& c, const char* key) {
  return FromDoubles(ParseDType(c), c.at(key).get<Vec>());
}

// Rows of `cols` probabilities (flat Dirichlet(1) via normalised exponentials), rounded to dtype.
Buffer RandomDistributions(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> e(1.0);
  Buffer b(dtype, rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    Vec w(static_cast<size_t>(cols));
    double sum = 0;
    for (double& v : w) sum += (v = e(rng));
    for (int64_t c = 0; c < cols; ++c) b.Set(r * cols + c, w[static_cast<size_t>(c)] / sum);
  }
  return b;
}

// ---- golden files -----------------------------------------------------------------------------

TEST(CausalGolden, CholeskyMatchesNumpy) {
  int cases = 0;
  for (const auto& c : Golden().at("cholesky")) {
    const DType dtype = ParseDType(c);
    const int64_t n = c.at("n").get<int64_t>();
    const Buffer a = Input(c, "input");
    Buffer l(dtype, n * n);
    l.Poison();
    Causal().Cholesky(a.data(), l.data(), n, dtype);
    EXPECT_TRUE(AllClose(l, c.at("output").get<Vec>(), DefaultTolerance(dtype)))
        << DTypeName(dtype) << " n=" << n;
    EXPECT_TRUE(l.GuardIntact());
    ++cases;
  }
  EXPECT_EQ(cases, 32);
}

void RunBackdoor(const nlohmann::json& c, Buffer& out) {
  const DType dtype = ParseDType(c);
  const Buffer cond = Input(c, "conditional"), pz = Input(c, "marginalZ");
  Causal().BackdoorAdjustment(cond.data(), pz.data(), out.data(), c.at("x").get<int64_t>(),
                              c.at("z").get<int64_t>(), c.at("y").get<int64_t>(), dtype);
}

void RunFrontdoor(const nlohmann::json& c, Buffer& out) {
  const DType dtype = ParseDType(c);
  const Buffer pmx = Input(c, "mediatorGivenX"), pyxm = Input(c, "outcomeGivenXM"),
               px = Input(c, "marginalX");
  Causal().FrontdoorAdjustment(pmx.data(), pyxm.data(), px.data(), out.data(),
                               c.at("x").get<int64_t>(), c.at("m").get<int64_t>(),
                               c.at("y").get<int64_t>(), dtype);
}

TEST(CausalGolden, BackdoorAndFrontdoorMatchEinsum) {
  for (const char* key : {"backdoor", "frontdoor", "backdoor_dag", "frontdoor_dag"}) {
    const bool back = std::string(key).starts_with("backdoor");
    for (const auto& c : Golden().at(key)) {
      const DType dtype = ParseDType(c);
      Buffer out(dtype, c.at("x").get<int64_t>() * c.at("y").get<int64_t>());
      out.Poison();
      back ? RunBackdoor(c, out) : RunFrontdoor(c, out);
      EXPECT_TRUE(AllClose(out, c.at("output").get<Vec>(), DefaultTolerance(dtype)))
          << key << " " << DTypeName(dtype);
      EXPECT_TRUE(out.GuardIntact());
    }
  }
}

TEST(CausalGolden, IVEstimateMatchesCovarianceRatioAnd2SLS) {
  int cases = 0;
  for (const auto& c : Golden().at("iv")) {
    const DType dtype = ParseDType(c);
    const Buffer z = Input(c, "instrument"), x = Input(c, "treatment"), y = Input(c, "outcome");
    Buffer out(dtype, 1);
    out.Poison();
    Causal().IVEstimate(z.data(), x.data(), y.data(), z.count(), out.data(), dtype);
    EXPECT_TRUE(Close(out.Get(0), c.at("output").get<double>(), DefaultTolerance(dtype)))
        << DTypeName(dtype) << " n=" << z.count();
    EXPECT_TRUE(out.GuardIntact());
    ++cases;
  }
  EXPECT_EQ(cases, 24);
}

// ---- identification on DAGs with a known interventional distribution ---------------------------

TEST(CausalKnownDAG, AdjustmentRecoversDoDistributionNotTheConditional) {
  for (const char* key : {"backdoor_dag", "frontdoor_dag"}) {
    for (const auto& c : Golden().at(key)) {
      const DType dtype = ParseDType(c);
      if (dtype != DType::Float64) continue;  // the truth is exact only for unrounded tables
      Buffer out(dtype, c.at("x").get<int64_t>() * c.at("y").get<int64_t>());
      std::string(key) == "backdoor_dag" ? RunBackdoor(c, out) : RunFrontdoor(c, out);
      const Vec truth = c.at("truth").get<Vec>(), observational = c.at("observational").get<Vec>();
      EXPECT_TRUE(AllClose(out, truth, {1e-12, 1e-12})) << key;
      double gap = 0;
      for (size_t i = 0; i < truth.size(); ++i) {
        gap = std::max(gap, std::fabs(out.Get(static_cast<int64_t>(i)) - observational[i]));
      }
      EXPECT_GT(gap, 0.05) << key << ": P(y|do(x)) should differ from P(y|x) under confounding";
    }
  }
}

TEST(CausalKnownDAG, HandComputedBackdoor) {
  // Binary Z, X, Y with P(z) = (0.25, 0.75) and P(Y=1 | x, z) = 0.1 + 0.4x + 0.3z:
  // P(Y=1 | do(x)) = 0.1 + 0.4x + 0.3 * 0.75.
  Vec cond;
  for (int x = 0; x < 2; ++x) {
    for (int z = 0; z < 2; ++z) {
      const double p1 = 0.1 + 0.4 * x + 0.3 * z;
      cond.push_back(1 - p1);
      cond.push_back(p1);
    }
  }
  for (DType dtype : FloatDTypes()) {
    const Buffer c = FromDoubles(dtype, cond), pz = FromDoubles(dtype, {0.25, 0.75});
    Buffer out(dtype, 4);
    Causal().BackdoorAdjustment(c.data(), pz.data(), out.data(), 2, 2, 2, dtype);
    // Oracle from the rounded inputs.
    Vec want(4, 0.0);
    for (int x = 0; x < 2; ++x) {
      for (int y = 0; y < 2; ++y) {
        for (int z = 0; z < 2; ++z) want[x * 2 + y] += c.Get((x * 2 + z) * 2 + y) * pz.Get(z);
      }
    }
    EXPECT_TRUE(AllClose(out, want, DefaultTolerance(dtype)));
    // A -0.0 probability is a valid zero.
    Buffer withNegZero = FromDoubles(dtype, {1.0, -0.0, 0.5, 0.5, 1.0, -0.0, 0.5, 0.5});
    Causal().BackdoorAdjustment(withNegZero.data(), pz.data(), out.data(), 2, 2, 2, dtype);
    EXPECT_TRUE(AllClose(out, {0.625, 0.375, 0.625, 0.375}, DefaultTolerance(dtype)));
    Causal().BackdoorAdjustment(c.data(), pz.data(), out.data(), 2, 2, 2, dtype);
    if (dtype == DType::Float64) {
      EXPECT_NEAR(out.Get(1), 0.325, 1e-15);
      EXPECT_NEAR(out.Get(3), 0.725, 1e-15);
    }
  }
}

// ---- Cholesky -----------------------------------------------------------------------------------

// A = B B^T / n + I, symmetric by construction, rounded to the storage format.
Buffer RandomSPD(DType dtype, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Vec b(static_cast<size_t>(n * n));
  for (double& v : b) v = u(rng);
  Buffer a(dtype, n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += b[i * n + k] * b[j * n + k];
      s = s / static_cast<double>(n) + (i == j ? 1.0 : 0.0);
      a.Set(i * n + j, s);
      a.Set(j * n + i, s);
    }
  }
  return a;
}

TEST(CausalCholesky, LargeMatrixReconstructsInput) {
  const int64_t n = 65;  // 4225 elements
  for (DType dtype : FloatDTypes()) {
    const Buffer a = RandomSPD(dtype, n, 101);
    Buffer l(dtype, n * n);
    l.Poison();
    Causal().Cholesky(a.data(), l.data(), n, dtype);
    EXPECT_TRUE(l.GuardIntact());
    // L is lower triangular with a positive diagonal, and L L^T = A up to rounding L once:
    // |(L L^T - A)_ij| <= 2u sqrt(a_ii a_jj) with u the unit roundoff (Cauchy-Schwarz), plus slack.
    const double u = dtype == DType::Float64   ? 1.2e-16
                     : dtype == DType::Float32 ? 6.0e-8
                     : dtype == DType::Float16 ? 4.9e-4
                                               : 3.9e-3;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_GT(l.Get(i * n + i), 0.0);
      for (int64_t j = 0; j < n; ++j) {
        if (j > i) {
          ASSERT_EQ(l.Get(i * n + j), 0.0);
          continue;
        }
        long double s = 0;
        for (int64_t k = 0; k <= j; ++k)
          s += static_cast<long double>(l.Get(i * n + k)) * l.Get(j * n + k);
        const double err = std::fabs(static_cast<double>(s) - a.Get(i * n + j)) /
                           std::sqrt(a.Get(i * n + i) * a.Get(j * n + j));
        worst = std::max(worst, err);
      }
    }
    EXPECT_LE(worst, 3 * u + 1e-15) << DTypeName(dtype);
  }
}

TEST(CausalCholesky, InPlaceAndSmallCases) {
  for (DType dtype : FloatDTypes()) {
    Buffer a = RandomSPD(dtype, 9, 102);
    Buffer want(dtype, 81);
    Causal().Cholesky(a.data(), want.data(), 9, dtype);
    Causal().Cholesky(a.data(), a.data(), 9, dtype);
    EXPECT_EQ(a.ToDoubles(), want.ToDoubles());
    // [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]].
    const Buffer m = FromDoubles(dtype, {4, 2, 2, 5});
    Buffer l(dtype, 4);
    Causal().Cholesky(m.data(), l.data(), 2, dtype);
    EXPECT_EQ(l.ToDoubles(), Vec({2, 0, 1, 2}));
    Causal().Cholesky(nullptr, nullptr, 0, dtype);  // empty matrix: nothing to do
  }
}

TEST(CausalCholesky, RejectsBadMatricesWithoutWriting) {
  struct Case {
    Vec a;
    const char* fragment;
  };
  const Case cases[] = {
      {{1, 2, 2, 1}, "positive definite"},   // indefinite
      {{1, 1, 1, 1}, "positive definite"},   // semidefinite: pivot exactly 0
      {{-1, 0, 0, 1}, "positive definite"},  // negative first pivot
      {{4, 2, 3, 5}, "symmetric"},           // A[1][0] != A[0][1]
      {{4, 2, 0, 5}, "symmetric"},           // upper triangle garbage
      {{4, kNaN, kNaN, 5}, "finite"},       {{kInf, 0, 0, 1}, "finite"},
  };
  for (DType dtype : FloatDTypes()) {
    for (const Case& c : cases) {
      const Buffer a = FromDoubles(dtype, c.a);
      Buffer l(dtype, 4);
      l.Poison();
      EXPECT_TRUE(ThrowsError([&] { Causal().Cholesky(a.data(), l.data(), 2, dtype); },
                              ErrorCode::InvalidArgument, {"Causal.Cholesky", "input", c.fragment}))
          << c.fragment;
      EXPECT_TRUE(l.IsPoisoned());
    }
    // Asymmetry at the level of rounding is accepted (the lower triangle is factorised).
    const double eps = dtype == DType::Float64   ? 1e-12
                       : dtype == DType::Float32 ? 1e-6
                       : dtype == DType::Float16 ? 4e-3
                                                 : 1e-2;
    Buffer a = FromDoubles(dtype, {4, 2 * (1 + eps), 2, 5});
    ASSERT_NE(a.Get(1), a.Get(2));
    Buffer l(dtype, 4);
    Causal().Cholesky(a.data(), l.data(), 2, dtype);
    EXPECT_EQ(l.Get(2), 1.0);
  }
  Buffer out(DType::Float32, 4);
  out.Poison();
  const Buffer a = FromDoubles(DType::Float32, {4, 2, 2, 5});
  const ErrorCode bad = ErrorCode::InvalidArgument;
  auto expect = [&](const void* in, void* o, int64_t n, DType dtype, ErrorCode code,
                    const char* arg) {
    EXPECT_TRUE(
        ThrowsError([&] { Causal().Cholesky(in, o, n, dtype); }, code, {"Causal.Cholesky", arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  expect(a.data(), out.data(), 2, DType::Int64, ErrorCode::UnsupportedDType, "dtype");
  expect(nullptr, nullptr, 0, DType::Bool, ErrorCode::UnsupportedDType, "dtype");
  expect(a.data(), out.data(), -2, DType::Float32, bad, "matrixOrder");
  expect(a.data(), out.data(), int64_t{1} << 40, DType::Float32, bad, "matrixOrder");
  expect(nullptr, out.data(), 2, DType::Float32, bad, "input");
  expect(a.data(), nullptr, 2, DType::Float32, bad, "output");
}

// ---- back-door / front-door: large case and validation ------------------------------------------

TEST(CausalAdjustment, LargeTablesAgainstFloat64Formula) {
  const int64_t X = 16, Z = 17, Y = 16, M = 17;  // 4352 conditional entries
  for (DType dtype : FloatDTypes()) {
    const Buffer cond = RandomDistributions(dtype, X * Z, Y, 111);
    const Buffer pz = RandomDistributions(dtype, 1, Z, 112);
    Buffer out(dtype, X * Y);
    out.Poison();
    Causal().BackdoorAdjustment(cond.data(), pz.data(), out.data(), X, Z, Y, dtype);
    Vec want(static_cast<size_t>(X * Y), 0.0);
    for (int64_t x = 0; x < X; ++x) {
      for (int64_t y = 0; y < Y; ++y) {
        for (int64_t z = 0; z < Z; ++z)
          want[x * Y + y] += cond.Get((x * Z + z) * Y + y) * pz.Get(z);
      }
    }
    EXPECT_TRUE(AllClose(out, want, DefaultTolerance(dtype))) << DTypeName(dtype);

    const Buffer pmx = RandomDistributions(dtype, X, M, 113);
    const Buffer pyxm = RandomDistributions(dtype, X * M, Y, 114);
    const Buffer px = RandomDistributions(dtype, 1, X, 115);
    Causal().FrontdoorAdjustment(pmx.data(), pyxm.data(), px.data(), out.data(), X, M, Y, dtype);
    std::fill(want.begin(), want.end(), 0.0);
    for (int64_t x = 0; x < X; ++x) {
      for (int64_t y = 0; y < Y; ++y) {
        for (int64_t m = 0; m < M; ++m) {
          double inner = 0;
          for (int64_t xp = 0; xp < X; ++xp) inner += pyxm.Get((xp * M + m) * Y + y) * px.Get(xp);
          want[x * Y + y] += pmx.Get(x * M + m) * inner;
        }
      }
    }
    EXPECT_TRUE(AllClose(out, want, DefaultTolerance(dtype))) << DTypeName(dtype);
  }
}

TEST(CausalAdjustment, RejectsInvalidDistributions) {
  const char* op = "Causal.BackdoorAdjustment";
  const ErrorCode bad = ErrorCode::InvalidArgument;
  for (DType dtype : FloatDTypes()) {
    const Buffer good = RandomDistributions(dtype, 2 * 3, 2, 121);
    const Buffer pz = RandomDistributions(dtype, 1, 3, 122);
    Buffer out(dtype, 4);
    out.Poison();
    auto expect = [&](const Buffer& c, const Buffer& z, const char* arg, const char* fragment) {
      EXPECT_TRUE(ThrowsError(
          [&] { Causal().BackdoorAdjustment(c.data(), z.data(), out.data(), 2, 3, 2, dtype); }, bad,
          {op, arg, fragment}))
          << arg << " " << fragment << " " << DTypeName(dtype);
      EXPECT_TRUE(out.IsPoisoned());
    };
    for (double v : {-0.25, kNaN, kInf}) {
      Buffer c = good;
      c.Set(7, v);
      expect(c, pz, "conditional", ">= 0");
      Buffer z = pz;
      z.Set(1, v);
      expect(good, z, "marginalZ", ">= 0");
    }
    Buffer c = good;
    c.Set(6, c.Get(6) + 0.05);  // row (x=1, z=0) sums to 1.05
    expect(c, pz, "conditional", "x=1, z=0");
    Buffer z = FromDoubles(dtype, {0.5, 0.25, 0.125});  // sums to 0.875
    expect(good, z, "marginalZ", "summing to 0.875");
    // All-zero evidence is not a distribution either.
    expect(good, FromDoubles(dtype, {0, 0, 0}), "marginalZ", "summing to 0");
  }
  // Counts, pointers, dtype.
  const Buffer c = RandomDistributions(DType::Float32, 2, 2, 123),
               z = FromDoubles(DType::Float32, {1});
  Buffer out(DType::Float32, 4);
  out.Poison();
  auto expect = [&](const void* cp, const void* zp, void* o, int64_t x, int64_t zc, int64_t y,
                    DType dtype, ErrorCode code, const char* arg) {
    EXPECT_TRUE(ThrowsError([&] { Causal().BackdoorAdjustment(cp, zp, o, x, zc, y, dtype); }, code,
                            {op, arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  expect(c.data(), z.data(), out.data(), 2, 1, 2, DType::Int32, ErrorCode::UnsupportedDType,
         "dtype");
  expect(c.data(), z.data(), out.data(), -2, 1, 2, DType::Float32, bad, "xCount");
  expect(c.data(), z.data(), out.data(), 2, -1, 2, DType::Float32, bad, "zCount");
  expect(c.data(), z.data(), out.data(), 2, 1, -2, DType::Float32, bad, "yCount");
  expect(nullptr, z.data(), out.data(), 2, 1, 2, DType::Float32, bad, "conditional");
  expect(c.data(), nullptr, out.data(), 2, 1, 2, DType::Float32, bad, "marginalZ");
  expect(c.data(), z.data(), nullptr, 2, 1, 2, DType::Float32, bad, "output");
  expect(nullptr, nullptr, out.data(), 2, 0, 2, DType::Float32, bad,
         "zCount");  // P(z) over nothing
  expect(c.data(), z.data(), out.data(), int64_t{1} << 30, int64_t{1} << 30, 1 << 20,
         DType::Float32, bad, "conditional");
  // An empty output is valid: nothing is read or written.
  Causal().BackdoorAdjustment(nullptr, z.data(), nullptr, 0, 1, 5, DType::Float16);
}

TEST(CausalAdjustment, FrontdoorRejectsInvalidDistributions) {
  const char* op = "Causal.FrontdoorAdjustment";
  const ErrorCode bad = ErrorCode::InvalidArgument;
  for (DType dtype : FloatDTypes()) {
    const Buffer pmx = RandomDistributions(dtype, 2, 3, 131);
    const Buffer pyxm = RandomDistributions(dtype, 2 * 3, 2, 132);
    const Buffer px = RandomDistributions(dtype, 1, 2, 133);
    Buffer out(dtype, 4);
    out.Poison();
    auto expect = [&](const Buffer& a, const Buffer& b, const Buffer& c, const char* arg,
                      const char* fragment) {
      EXPECT_TRUE(ThrowsError(
          [&] {
            Causal().FrontdoorAdjustment(a.data(), b.data(), c.data(), out.data(), 2, 3, 2, dtype);
          },
          bad, {op, arg, fragment}))
          << arg << " " << DTypeName(dtype);
      EXPECT_TRUE(out.IsPoisoned());
    };
    Buffer a = pmx;
    a.Set(4, -0.5);
    expect(a, pyxm, px, "mediatorGivenX", ">= 0");
    a = pmx;
    a.Set(3, a.Get(3) + 0.1);
    expect(a, pyxm, px, "mediatorGivenX", "row x=1");
    Buffer b = pyxm;
    b.Set(9, kNaN);
    expect(pmx, b, px, "outcomeGivenXM", ">= 0");
    b = pyxm;
    b.Set(10, b.Get(10) + 0.3);
    expect(pmx, b, px, "outcomeGivenXM", "x=1, m=2");
    expect(pmx, pyxm, FromDoubles(dtype, {0.75, 0.5}), "marginalX", "summing to 1.25");
  }
  const Buffer one = FromDoubles(DType::Float64, {1.0});
  Buffer out(DType::Float64, 1);
  out.Poison();
  auto expect = [&](const void* a, const void* b, const void* c, void* o, int64_t x, int64_t m,
                    int64_t y, DType dtype, ErrorCode code, const char* arg) {
    EXPECT_TRUE(ThrowsError([&] { Causal().FrontdoorAdjustment(a, b, c, o, x, m, y, dtype); }, code,
                            {op, arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  const void* p = one.data();
  expect(p, p, p, out.data(), 1, 1, 1, DType::Float8E4M3, ErrorCode::UnsupportedDType, "dtype");
  expect(p, p, p, out.data(), -1, 1, 1, DType::Float64, bad, "xCount");
  expect(p, p, p, out.data(), 1, -1, 1, DType::Float64, bad, "mediatorCount");
  expect(p, p, p, out.data(), 1, 1, -1, DType::Float64, bad, "yCount");
  expect(nullptr, p, p, out.data(), 1, 1, 1, DType::Float64, bad, "mediatorGivenX");
  expect(p, nullptr, p, out.data(), 1, 1, 1, DType::Float64, bad, "outcomeGivenXM");
  expect(p, p, nullptr, out.data(), 1, 1, 1, DType::Float64, bad, "marginalX");
  expect(p, p, p, nullptr, 1, 1, 1, DType::Float64, bad, "output");
  expect(p, nullptr, p, out.data(), 1, 0, 1, DType::Float64, bad, "mediatorCount");
  Causal().FrontdoorAdjustment(nullptr, nullptr, nullptr, nullptr, 0, 3, 2, DType::Float64);
  // Single states: P(y | do(x)) = 1.
  Causal().FrontdoorAdjustment(p, p, p, out.data(), 1, 1, 1, DType::Float64);
  EXPECT_EQ(out.Get(0), 1.0);
}

// ---- DoIntervene --------------------------------------------------------------------------------

TEST(CausalDoIntervene, ZeroesIncomingEdgesOnly) {
  const int64_t n = 65;  // 4225 entries
  const std::vector<int32_t> ids = {0, 7, 64, 31};
  for (DType dtype : FloatDTypes()) {
    Buffer adj = RandomBuffer(dtype, n * n, 141);
    adj.Set(5 * n + 7, kNaN);  // an incoming NaN edge is removed, an outgoing one kept
    adj.Set(7 * n + 5, kNaN);
    adj.Set(3 * n + 3, -0.0);
    Buffer out(dtype, n * n);
    out.Poison();
    Causal().DoIntervene(adj.data(), ids.data(), out.data(), n, static_cast<int64_t>(ids.size()),
                         dtype);
    EXPECT_TRUE(out.GuardIntact());
    const size_t elem = DTypeStorageBytes(dtype, 1);
    int wrong = 0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        const bool cut = std::find(ids.begin(), ids.end(), c) != ids.end();
        const auto* got = static_cast<const unsigned char*>(out.data()) + (r * n + c) * elem;
        if (cut) {  // +0.0, whatever the entry was
          wrong += out.Get(r * n + c) != 0.0 || std::signbit(out.Get(r * n + c));
        } else {  // a bit-exact copy (NaN and -0.0 included)
          const auto* want = static_cast<const unsigned char*>(adj.data()) + (r * n + c) * elem;
          wrong += std::memcmp(got, want, elem) != 0;
        }
      }
    }
    EXPECT_EQ(wrong, 0) << DTypeName(dtype);
    // In place and with no intervention (a plain copy).
    Buffer inPlace = adj;
    Causal().DoIntervene(inPlace.data(), ids.data(), inPlace.data(), n,
                         static_cast<int64_t>(ids.size()), dtype);
    EXPECT_EQ(std::memcmp(inPlace.data(), out.data(), DTypeStorageBytes(dtype, n * n)), 0);
    Causal().DoIntervene(adj.data(), nullptr, out.data(), n, 0, dtype);
    EXPECT_EQ(std::memcmp(adj.data(), out.data(), DTypeStorageBytes(dtype, n * n)), 0);
  }
}

TEST(CausalDoIntervene, RejectsBadIds) {
  const char* op = "Causal.DoIntervene";
  const ErrorCode bad = ErrorCode::InvalidArgument;
  const Buffer adj = RandomBuffer(DType::Float32, 9, 151);
  Buffer out(DType::Float32, 9);
  out.Poison();
  auto expect = [&](const void* a, const std::vector<int32_t>& ids, const int32_t* idp, void* o,
                    int64_t n, int64_t k, DType dtype, ErrorCode code, const char* arg,
                    const char* fragment) {
    EXPECT_TRUE(
        ThrowsError([&] { Causal().DoIntervene(a, idp ? idp : ids.data(), o, n, k, dtype); }, code,
                    {op, arg, fragment}))
        << arg << " " << fragment;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  const std::vector<int32_t> none;
  expect(adj.data(), {3}, nullptr, out.data(), 3, 1, DType::Float32, bad, "intervened", "[0, 3)");
  expect(adj.data(), {-1}, nullptr, out.data(), 3, 1, DType::Float32, bad, "intervened", "= -1");
  expect(adj.data(), {0, 2, 0}, nullptr, out.data(), 3, 3, DType::Float32, bad, "intervened",
         "distinct");
  expect(nullptr, {0}, nullptr, nullptr, 0, 1, DType::Float32, bad, "intervened", "[0, 0)");
  expect(adj.data(), {0}, nullptr, out.data(), 3, 1, DType::Uint8, ErrorCode::UnsupportedDType,
         "dtype", "unsupported");
  expect(adj.data(), {0}, nullptr, out.data(), -3, 1, DType::Float32, bad, "nodeCount", ">= 0");
  expect(adj.data(), {0}, nullptr, out.data(), 3, -1, DType::Float32, bad, "intervenedCount",
         ">= 0");
  expect(nullptr, {0}, nullptr, out.data(), 3, 1, DType::Float32, bad, "adjacency", "null");
  expect(adj.data(), none, nullptr, out.data(), 3, 1, DType::Float32, bad, "intervened", "null");
  expect(adj.data(), {0}, nullptr, nullptr, 3, 1, DType::Float32, bad, "output", "null");
  Causal().DoIntervene(nullptr, nullptr, nullptr, 0, 0, DType::BFloat16);
}

// ---- CATE and Counterfactual --------------------------------------------------------------------

TEST(CausalElementwise, CATEIsPerUnitDifference) {
  for (DType dtype : FloatDTypes()) {
    for (int64_t n : {0, 1, 7, 4099}) {
      const Buffer t = RandomBuffer(dtype, n, 161), c = RandomBuffer(dtype, n, 162);
      Buffer out(dtype, n);
      out.Poison();
      Causal().CATE(t.data(), c.data(), out.data(), n, dtype);
      Vec want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = t.Get(i) - c.Get(i);
      EXPECT_TRUE(AllClose(out, want, DefaultTolerance(dtype))) << DTypeName(dtype) << " n=" << n;
      EXPECT_TRUE(out.GuardIntact());
      Buffer inPlace = t;
      Causal().CATE(inPlace.data(), c.data(), inPlace.data(), n, dtype);
      EXPECT_EQ(inPlace.ToDoubles(), out.ToDoubles());
    }
    const Buffer t = FromDoubles(dtype, {kInf, kNaN, 59904, -0.0, 1});  // 59904: exact in bf16
    const Buffer c = FromDoubles(dtype, {kInf, 1, -59904, 0.0, kInf});
    Buffer out(dtype, 5);
    Causal().CATE(t.data(), c.data(), out.data(), 5, dtype);
    EXPECT_TRUE(std::isnan(out.Get(0)));
    EXPECT_TRUE(std::isnan(out.Get(1)));
    EXPECT_EQ(out.Get(2), dtype == DType::Float16 ? kInf : 119808.0);  // f16 overflows
    EXPECT_EQ(out.Get(3), 0.0);
    EXPECT_TRUE(std::signbit(out.Get(3)));  // -0 - +0 = -0
    EXPECT_EQ(out.Get(4), -kInf);
  }
}

TEST(CausalElementwise, CounterfactualLinearSCM) {
  for (DType dtype : FloatDTypes()) {
    for (int64_t n : {0, 1, 7, 4099}) {
      for (float slope : {0.0f, 0.1f, -2.5f}) {
        const Buffer y = RandomBuffer(dtype, n, 171), x = RandomBuffer(dtype, n, 172),
                     xp = RandomBuffer(dtype, n, 173);
        Buffer out(dtype, n);
        out.Poison();
        Causal().Counterfactual(y.data(), x.data(), xp.data(), out.data(), n, slope, dtype);
        Vec want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          // Abduction U = y - b x; action X := x'; prediction b x' + U.
          const double b = static_cast<double>(slope);
          const double noise = y.Get(i) - b * x.Get(i);
          want[static_cast<size_t>(i)] = b * xp.Get(i) + noise;
        }
        EXPECT_TRUE(AllClose(out, want, DefaultTolerance(dtype))) << DTypeName(dtype);
        EXPECT_TRUE(out.GuardIntact());
        if (slope == 0.0f) {
          EXPECT_TRUE(AllClose(out, y.ToDoubles(), {0, 0}));  // nothing changes
        }
      }
    }
  }
  // Special values: Inf and NaN propagate; f16 overflows to Inf.
  for (DType dtype : FloatDTypes()) {
    const Buffer y = FromDoubles(dtype, {kInf, 1.0, 39936.0, -0.0});  // 39936: exact in bf16
    const Buffer x = FromDoubles(dtype, {0.0, kNaN, 0.0, 1.0});
    const Buffer xp = FromDoubles(dtype, {1.0, 0.0, 16384.0, 1.0});
    Buffer out(dtype, 4);
    Causal().Counterfactual(y.data(), x.data(), xp.data(), out.data(), 4, 2.0f, dtype);
    EXPECT_EQ(out.Get(0), kInf);
    EXPECT_TRUE(std::isnan(out.Get(1)));
    EXPECT_EQ(out.Get(2), dtype == DType::Float16 ? kInf : 72704.0);  // 39936 + 2 * 16384
    EXPECT_EQ(out.Get(3), 0.0);
  }
  // f64 uses the float32 slope exactly, in float64.
  const Buffer y = FromDoubles(DType::Float64, {1.0}), x = FromDoubles(DType::Float64, {0.0}),
               xp = FromDoubles(DType::Float64, {3.0});
  Buffer out(DType::Float64, 1);
  Causal().Counterfactual(y.data(), x.data(), xp.data(), out.data(), 1, 0.1f, DType::Float64);
  EXPECT_EQ(out.Get(0), 1.0 + 3.0 * static_cast<double>(0.1f));
}

TEST(CausalElementwise, RejectsBadArguments) {
  const Buffer a = RandomBuffer(DType::Float16, 4, 181);
  Buffer out(DType::Float16, 4);
  out.Poison();
  const ErrorCode bad = ErrorCode::InvalidArgument;
  auto cate = [&](const void* l, const void* r, void* o, int64_t n, DType d, ErrorCode code,
                  const char* arg) {
    EXPECT_TRUE(ThrowsError([&] { Causal().CATE(l, r, o, n, d); }, code, {"Causal.CATE", arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned());
  };
  cate(a.data(), a.data(), out.data(), 4, DType::Int16, ErrorCode::UnsupportedDType, "dtype");
  cate(a.data(), a.data(), out.data(), -4, DType::Float16, bad, "count");
  cate(nullptr, a.data(), out.data(), 4, DType::Float16, bad, "left");
  cate(a.data(), nullptr, out.data(), 4, DType::Float16, bad, "right");
  cate(a.data(), a.data(), nullptr, 4, DType::Float16, bad, "output");
  auto cf = [&](const void* y, const void* x, const void* xp, void* o, int64_t n, float s, DType d,
                ErrorCode code, const char* arg) {
    EXPECT_TRUE(ThrowsError([&] { Causal().Counterfactual(y, x, xp, o, n, s, d); }, code,
                            {"Causal.Counterfactual", arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned());
  };
  const void* p = a.data();
  cf(p, p, p, out.data(), 4, 1.0f, DType::Int4, ErrorCode::UnsupportedDType, "dtype");
  cf(p, p, p, out.data(), -1, 1.0f, DType::Float16, bad, "count");
  cf(nullptr, p, p, out.data(), 4, 1.0f, DType::Float16, bad, "observedY");
  cf(p, nullptr, p, out.data(), 4, 1.0f, DType::Float16, bad, "observedX");
  cf(p, p, nullptr, out.data(), 4, 1.0f, DType::Float16, bad, "counterfactualX");
  cf(p, p, p, nullptr, 4, 1.0f, DType::Float16, bad, "output");
  for (float s :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    cf(p, p, p, out.data(), 4, s, DType::Float16, bad, "slope");
    cf(nullptr, nullptr, nullptr, nullptr, 0, s, DType::Float16, bad, "slope");
  }
}

// ---- IVEstimate ---------------------------------------------------------------------------------

TEST(CausalIV, RecoversPlantedEffectUnderConfounding) {
  // Z -> X -> Y with an unobserved confounder U of X and Y. OLS of Y on X is biased; the IV
  // estimate recovers the planted effect 2.5.
  const int64_t n = 20000;
  std::mt19937_64 rng(191);
  std::normal_distribution<double> g(0.0, 1.0);
  Vec z(n), x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    const double u = g(rng);
    z[i] = g(rng);
    x[i] = 0.8 * z[i] + u + 0.3 * g(rng);
    y[i] = 2.5 * x[i] - 1.5 * u + 0.5 * g(rng);
  }
  for (DType dtype : FloatDTypes()) {
    const Buffer zb = FromDoubles(dtype, z), xb = FromDoubles(dtype, x), yb = FromDoubles(dtype, y);
    Buffer out(dtype, 1);
    out.Poison();
    Causal().IVEstimate(zb.data(), xb.data(), yb.data(), n, out.data(), dtype);
    // Float64 two-pass oracle on the rounded data (long double sums).
    long double mz = 0, mx = 0, my = 0;
    for (int64_t i = 0; i < n; ++i) {
      mz += zb.Get(i);
      mx += xb.Get(i);
      my += yb.Get(i);
    }
    mz /= n;
    mx /= n;
    my /= n;
    long double szy = 0, szx = 0, sxy = 0, sxx = 0;
    for (int64_t i = 0; i < n; ++i) {
      szy += (zb.Get(i) - mz) * (yb.Get(i) - my);
      szx += (zb.Get(i) - mz) * (xb.Get(i) - mx);
      sxy += (xb.Get(i) - mx) * (yb.Get(i) - my);
      sxx += (xb.Get(i) - mx) * (xb.Get(i) - mx);
    }
    EXPECT_TRUE(Close(out.Get(0), static_cast<double>(szy / szx), DefaultTolerance(dtype)))
        << DTypeName(dtype);
    EXPECT_NEAR(out.Get(0), 2.5, 0.05) << DTypeName(dtype);
    EXPECT_GT(std::fabs(static_cast<double>(sxy / sxx) - 2.5), 0.3);  // OLS is confounded
  }
}

TEST(CausalIV, SpecialCasesAndErrors) {
  const char* op = "Causal.IVEstimate";
  const ErrorCode bad = ErrorCode::InvalidArgument;
  for (DType dtype : FloatDTypes()) {
    // n = 2: beta = (y1 - y0) / (x1 - x0).
    const Buffer z = FromDoubles(dtype, {0, 1}), x = FromDoubles(dtype, {1, 3}),
                 y = FromDoubles(dtype, {2, 7});
    Buffer out(dtype, 1);
    Causal().IVEstimate(z.data(), x.data(), y.data(), 2, out.data(), dtype);
    EXPECT_EQ(out.Get(0), 2.5);
    // NaN data propagates.
    const Buffer yn = FromDoubles(dtype, {2, kNaN});
    Causal().IVEstimate(z.data(), x.data(), yn.data(), 2, out.data(), dtype);
    EXPECT_TRUE(std::isnan(out.Get(0)));
    // Weak or constant instruments throw instead of returning 0.
    out.Poison();
    auto iv = [&](const Buffer& a, const Buffer& b, const Buffer& c, int64_t n, const char* arg,
                  ErrorCode code = ErrorCode::InvalidArgument) {
      EXPECT_TRUE(ThrowsError(
          [&] { Causal().IVEstimate(a.data(), b.data(), c.data(), n, out.data(), dtype); }, code,
          {op, arg}))
          << arg << " " << DTypeName(dtype);
      EXPECT_TRUE(out.IsPoisoned()) << arg;
    };
    const Buffer constant = FromDoubles(dtype, {1, 1, 1, 1});
    const Buffer alternating = FromDoubles(dtype, {1, -1, 1, -1});
    const Buffer steps = FromDoubles(dtype, {1, 1, 2, 2});  // orthogonal to `alternating`
    const Buffer any = FromDoubles(dtype, {1, 2, 3, 4});
    iv(constant, any, any, 4, "instrument");
    iv(any, constant, any, 4, "instrument");
    iv(alternating, steps, any, 4, "instrument");
    iv(any, any, any, 1, "count");
    iv(any, any, any, 0, "count");
    iv(any, any, any, -3, "count");
  }
  Buffer out(DType::Float32, 1);
  out.Poison();
  const Buffer a = FromDoubles(DType::Float32, {1, 2, 4});
  auto expect = [&](const void* z, const void* x, const void* y, void* o, DType d, ErrorCode code,
                    const char* arg) {
    EXPECT_TRUE(ThrowsError([&] { Causal().IVEstimate(z, x, y, 3, o, d); }, code, {op, arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  const void* p = a.data();
  expect(p, p, p, out.data(), DType::Int32, ErrorCode::UnsupportedDType, "dtype");
  expect(nullptr, p, p, out.data(), DType::Float32, bad, "instrument");
  expect(p, nullptr, p, out.data(), DType::Float32, bad, "treatment");
  expect(p, p, nullptr, out.data(), DType::Float32, bad, "outcome");
  expect(p, p, p, nullptr, DType::Float32, bad, "output");
}

// ---- DAGMarkovFactorization ---------------------------------------------------------------------

TEST(CausalDAGMarkov, ProductOfConditionals) {
  for (DType dtype : FloatDTypes()) {
    for (int64_t n : {1, 2, 7, 64, 4099}) {
      // Factors near 1 for the long product so that its value (about 1e-9) stays representable.
      const double lo = n > 1000 ? 0.99 : 0.5;
      const Buffer c = RandomBuffer(dtype, n, 201 + static_cast<uint64_t>(n), lo, 1.0);
      Buffer out(dtype, 1);
      out.Poison();
      Causal().DAGMarkovFactorization(c.data(), n, out.data(), dtype);
      long double want = 1;  // long double: 64-bit significand, exponent down to 1e-4951
      for (int64_t i = 0; i < n; ++i) want *= c.Get(i);
      EXPECT_TRUE(Close(out.Get(0), static_cast<double>(want), DefaultTolerance(dtype)))
          << DTypeName(dtype) << " n=" << n;
      EXPECT_TRUE(out.GuardIntact());
    }
    // Empty product, zero factor, exact values.
    Buffer out(dtype, 1);
    Causal().DAGMarkovFactorization(nullptr, 0, out.data(), dtype);
    EXPECT_EQ(out.Get(0), 1.0);
    const Buffer withZero = FromDoubles(dtype, {0.5, -0.0, 0.25});
    Causal().DAGMarkovFactorization(withZero.data(), 3, out.data(), dtype);
    EXPECT_EQ(out.Get(0), 0.0);
    EXPECT_FALSE(std::signbit(out.Get(0)));
    const Buffer exact = FromDoubles(dtype, {0.5, 0.25, 1.0, 0.75});
    Causal().DAGMarkovFactorization(exact.data(), 4, out.data(), dtype);
    EXPECT_EQ(out.Get(0), 0.09375);
  }
}

TEST(CausalDAGMarkov, UnderflowsOnlyWhenTheTrueValueDoes) {
  // 0.5^1074 is the smallest f64 subnormal; 0.5^1075 rounds (ties to even) to 0.
  for (int64_t k : {1000, 1074, 1075}) {
    const Buffer c = FromDoubles(DType::Float64, Vec(static_cast<size_t>(k), 0.5));
    Buffer out(DType::Float64, 1);
    Causal().DAGMarkovFactorization(c.data(), k, out.data(), DType::Float64);
    EXPECT_EQ(out.Get(0), k == 1075 ? 0.0 : std::ldexp(1.0, static_cast<int>(-k))) << k;
  }
  // 0.1^44 = 1e-44 is an f32 subnormal (not 0); 0.1^46 is below the f32 range.
  for (int64_t k : {38, 44, 46}) {
    const Buffer c = FromDoubles(DType::Float64, Vec(static_cast<size_t>(k), 0.1));
    Buffer out32(DType::Float32, 1);
    const Buffer c32 = FromDoubles(DType::Float32, Vec(static_cast<size_t>(k), 0.1));
    Causal().DAGMarkovFactorization(c32.data(), k, out32.data(), DType::Float32);
    long double want = 1;
    for (int64_t i = 0; i < k; ++i) want *= c32.Get(i);
    const float expected = static_cast<float>(static_cast<double>(want));
    EXPECT_EQ(out32.Get(0), static_cast<double>(expected)) << k;
    EXPECT_EQ(out32.Get(0) == 0.0, k == 46) << k;
  }
  // A product that leaves the f64 range through subnormal intermediates keeps full precision:
  // (0.75 * 2^-540)^2 = 0.5625 * 2^-1080 underflows; 0.75^2 * 2^-1000 is a normal number.
  const Buffer c =
      FromDoubles(DType::Float64, {0.75 * std::ldexp(1.0, -500), 0.75 * std::ldexp(1.0, -500)});
  Buffer out(DType::Float64, 1);
  Causal().DAGMarkovFactorization(c.data(), 2, out.data(), DType::Float64);
  EXPECT_EQ(out.Get(0), 0.5625 * std::ldexp(1.0, -1000));
  // 3 * 2^-1074 * 0.5 * 0.75 = 1.125 * 2^-1074 rounds once to 2^-1074; a running product in
  // double rounds the subnormal intermediate 1.5 * 2^-1074 up to 2^-1073 first and ends at 2^-1073.
  const Buffer tiny = FromDoubles(DType::Float64, {std::ldexp(3.0, -1074), 0.5, 0.75});
  Causal().DAGMarkovFactorization(tiny.data(), 3, out.data(), DType::Float64);
  EXPECT_EQ(out.Get(0), std::ldexp(1.0, -1074));
}

TEST(CausalDAGMarkov, RejectsNonProbabilities) {
  const char* op = "Causal.DAGMarkovFactorization";
  for (DType dtype : FloatDTypes()) {
    for (double v : {1.5, -0.25, kNaN, kInf}) {
      const Buffer c = FromDoubles(dtype, {0.5, v});
      Buffer out(dtype, 1);
      out.Poison();
      EXPECT_TRUE(
          ThrowsError([&] { Causal().DAGMarkovFactorization(c.data(), 2, out.data(), dtype); },
                      ErrorCode::InvalidArgument, {op, "conditionals", "[0, 1]"}));
      EXPECT_TRUE(out.IsPoisoned());
    }
  }
  Buffer out(DType::Float32, 1);
  out.Poison();
  const Buffer c = FromDoubles(DType::Float32, {0.5});
  EXPECT_TRUE(
      ThrowsError([&] { Causal().DAGMarkovFactorization(c.data(), 1, out.data(), DType::Int32); },
                  ErrorCode::UnsupportedDType, {op, "dtype"}));
  EXPECT_TRUE(ThrowsError(
      [&] { Causal().DAGMarkovFactorization(c.data(), -1, out.data(), DType::Float32); },
      ErrorCode::InvalidArgument, {op, "conditionalCount"}));
  EXPECT_TRUE(
      ThrowsError([&] { Causal().DAGMarkovFactorization(nullptr, 1, out.data(), DType::Float32); },
                  ErrorCode::InvalidArgument, {op, "conditionals"}));
  EXPECT_TRUE(
      ThrowsError([&] { Causal().DAGMarkovFactorization(c.data(), 1, nullptr, DType::Float32); },
                  ErrorCode::InvalidArgument, {op, "output"}));
  EXPECT_TRUE(
      ThrowsError([&] { Causal().DAGMarkovFactorization(nullptr, 0, nullptr, DType::Float32); },
                  ErrorCode::InvalidArgument, {op, "output"}));
  EXPECT_TRUE(out.IsPoisoned());
}

// ---- Markov flows -------------------------------------------------------------------------------

TEST(CausalMarkovFlow, HandExample) {
  // Labels: 0 internal, 1 sensory, 2 active, 3 external.
  const std::vector<int32_t> labels = {0, 2, 0, 1, 3, 2};
  Vec mi(36);
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) mi[i * 6 + j] = i == j ? 9.0 : 0.125 * (i + 1) + 0.0625 * j;
  }
  for (DType dtype : FloatDTypes()) {
    const Buffer m = FromDoubles(dtype, mi);
    Buffer out(dtype, 6);
    Causal().MarkovFlowActive(m.data(), labels.data(), out.data(), 6, dtype);
    // Active nodes 1 and 5 sum their row over the internal columns 0 and 2.
    const Vec active = {0, m.Get(6 + 0) + m.Get(6 + 2), 0, 0, 0, m.Get(30 + 0) + m.Get(30 + 2)};
    EXPECT_TRUE(AllClose(out, active, DefaultTolerance(dtype)));
    Causal().MarkovFlowInternal(m.data(), labels.data(), out.data(), 6, dtype);
    // Internal nodes 0 and 2 sum over the other internal node only: the diagonal (9) is excluded.
    const Vec internal = {m.Get(0 * 6 + 2), 0, m.Get(2 * 6 + 0), 0, 0, 0};
    EXPECT_TRUE(AllClose(out, internal, DefaultTolerance(dtype)));
  }
}

TEST(CausalMarkovFlow, LargeRandomAgainstFormula) {
  const int64_t n = 65;
  std::vector<int32_t> labels(n);
  std::mt19937_64 rng(211);
  for (int32_t& l : labels) l = static_cast<int32_t>(rng() % 4);
  for (DType dtype : FloatDTypes()) {
    const Buffer mi = RandomBuffer(dtype, n * n, 212, 0.0, 2.0);
    for (bool active : {true, false}) {
      Buffer out(dtype, n);
      out.Poison();
      (Causal().*(active ? &CausalSurface::MarkovFlowActive : &CausalSurface::MarkovFlowInternal))(
          mi.data(), labels.data(), out.data(), n, dtype);
      Vec want(n, 0.0);
      for (int64_t i = 0; i < n; ++i) {
        if (labels[i] != (active ? 2 : 0)) continue;
        for (int64_t j = 0; j < n; ++j) {
          if (j != i && labels[j] == 0) want[i] += mi.Get(i * n + j);
        }
      }
      EXPECT_TRUE(AllClose(out, want, DefaultTolerance(dtype))) << DTypeName(dtype) << active;
      EXPECT_TRUE(out.GuardIntact());
    }
  }
}

TEST(CausalMarkovFlow, RejectsBadLabelsAndInformation) {
  for (bool active : {true, false}) {
    const char* op = active ? "Causal.MarkovFlowActive" : "Causal.MarkovFlowInternal";
    auto fn = active ? &CausalSurface::MarkovFlowActive : &CausalSurface::MarkovFlowInternal;
    for (DType dtype : FloatDTypes()) {
      const Buffer mi = RandomBuffer(dtype, 9, 221, 0.0, 1.0);
      Buffer out(dtype, 3);
      out.Poison();
      auto expect = [&](const void* m, const int32_t* p, void* o, int64_t n, DType d,
                        ErrorCode code, const char* arg) {
        EXPECT_TRUE(ThrowsError([&] { (Causal().*fn)(m, p, o, n, d); }, code, {op, arg}))
            << op << " " << arg;
        EXPECT_TRUE(out.IsPoisoned()) << arg;
      };
      const ErrorCode bad = ErrorCode::InvalidArgument;
      const int32_t good[] = {0, 2, 0}, high[] = {0, 4, 0}, low[] = {-1, 2, 0};
      expect(mi.data(), high, out.data(), 3, dtype, bad, "partition");
      expect(mi.data(), low, out.data(), 3, dtype, bad, "partition");
      for (double v : {-0.5, kNaN, kInf}) {
        Buffer m = mi;
        m.Set(4, v);
        expect(m.data(), good, out.data(), 3, dtype, bad, "mutualInformation");
      }
      expect(mi.data(), good, out.data(), 3, DType::Int32, ErrorCode::UnsupportedDType, "dtype");
      expect(mi.data(), good, out.data(), -3, dtype, bad, "nodeCount");
      expect(nullptr, good, out.data(), 3, dtype, bad, "mutualInformation");
      expect(mi.data(), nullptr, out.data(), 3, dtype, bad, "partition");
      expect(mi.data(), good, nullptr, 3, dtype, bad, "output");
      (Causal().*fn)(nullptr, nullptr, nullptr, 0, dtype);
    }
  }
}

}  // namespace
}  // namespace backplane
