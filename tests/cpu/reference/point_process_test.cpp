// PointProcess.HawkesSimulate (Ogata thinning for the exponential-kernel Hawkes process):
// reproducibility, the documented Philox draw mapping, prefix properties, storage formats,
// statistical checks against closed-form results, and every validation path. Called through the
// public reference Backend (cpu::CreateReferenceBackend).
//
// Statistical checks (all seeds fixed, so the outcome is deterministic; the bounds say how
// surprising a failure of a correct simulator would be):
//  * Expected count. For lambda(t) = mu + alpha sum_{t_i < t} exp(-beta (t - t_i)) started empty
//    at 0, m(t) = E lambda(t) solves m' = -(beta - alpha) m + beta mu, m(0) = mu, so with the
//    branching ratio n = alpha / beta < 1
//      m(t)   = mu / (1 - n) - mu n / (1 - n) exp(-(beta - alpha) t),
//      E N(T) = mu T / (1 - n) - mu n (1 - exp(-(beta - alpha) T)) / ((1 - n) (beta - alpha)).
//    The variance of N(T) tends to mu T / (1 - n)^3 (Bartlett spectrum at 0; Hawkes 1971); the
//    mean over S seeds is held to 5 standard errors, 5 sqrt(mu T / (1 - n)^3 / S).
//  * Time rescaling (Brown et al. 2002; Daley & Vere-Jones 2003, Thm 7.4.I): the compensator
//    increments Lambda(t_i) - Lambda(t_{i-1}) of the true model are i.i.d. Exp(1). The test stops
//    each path after a fixed number of events (MaxEvents, huge horizon), so every increment is
//    complete. Mean within 5/sqrt(N), variance within 5 sqrt(8/N), and the Kolmogorov-Smirnov
//    statistic sqrt(N) D < 1.95 (p = 0.001).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/random.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;

HawkesSimulateConfig Config(float mu, float alpha, float beta, float horizon, int64_t max_events,
                            uint64_t seed) {
  HawkesSimulateConfig c;
  c.Mu = mu;
  c.Alpha = alpha;
  c.Beta = beta;
  c.Horizon = horizon;
  c.MaxEvents = max_events;
  c.Seed = seed;
  return c;
}

class PointProcessTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateReferenceBackend();
  PointProcessSurface& pp() { return backend_->PointProcess(); }

  // Runs into a poisoned buffer of `capacity`; checks that the slots past the count and the
  // guard stay poisoned, and returns the event times.
  std::vector<double> Simulate(const HawkesSimulateConfig& config, int64_t capacity,
                               DType dtype = DType::Float64) {
    Buffer times(dtype, capacity);
    times.Poison();
    int64_t count = -7;
    pp().HawkesSimulate(config, times.data(), capacity, &count, dtype);
    EXPECT_GE(count, 0);
    EXPECT_LE(count, capacity);
    const Buffer untouched = [&] {
      Buffer b(dtype, capacity);
      b.Poison();
      return b;
    }();
    const auto* got = static_cast<const uint8_t*>(times.data());
    const auto* poison = static_cast<const uint8_t*>(untouched.data());
    const size_t from = DTypeStorageBytes(dtype, count);
    const size_t to = DTypeStorageBytes(dtype, capacity) + 16;
    EXPECT_TRUE(std::equal(got + from, got + to, poison + from)) << "wrote past the event count";
    std::vector<double> out(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = times.Get(i);
    return out;
  }
};

// Compensator increments Lambda(t_i) - Lambda(t_{i-1}), t_0 = 0, with Lambda(t) = mu t +
// (alpha / beta) sum_{t_j < t} (1 - exp(-beta (t - t_j))); each increment is integrated directly
// from the event list (terms with beta (t - t_j) > 60 contribute < 1e-26 and are skipped).
void AppendCompensatorIncrements(const std::vector<double>& t, double mu, double alpha, double beta,
                                 std::vector<double>* out) {
  size_t first = 0;
  double prev = 0.0;
  for (size_t i = 0; i < t.size(); ++i) {
    double inc = mu * (t[i] - prev);
    while (first < i && beta * (prev - t[first]) > 60.0) ++first;
    for (size_t j = first; j < i; ++j) {
      inc += alpha / beta * (std::exp(-beta * (prev - t[j])) - std::exp(-beta * (t[i] - t[j])));
    }
    out->push_back(inc);
    prev = t[i];
  }
}

void ExpectExponentialOne(std::vector<double> x) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= n;
  double var = 0.0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n - 1.0;
  EXPECT_NEAR(mean, 1.0, 5.0 / std::sqrt(n)) << "Exp(1) mean";
  EXPECT_NEAR(var, 1.0, 5.0 * std::sqrt(8.0 / n)) << "Exp(1) variance";
  std::sort(x.begin(), x.end());
  double d = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = -std::expm1(-x[i]);
    d = std::max({d, std::fabs(f - static_cast<double>(i) / n),
                  std::fabs(static_cast<double>(i + 1) / n - f)});
  }
  EXPECT_LT(std::sqrt(n) * d, 1.95) << "Kolmogorov-Smirnov against Exp(1), N = " << x.size();
}

// ---- Reproducibility and the draw mapping ------------------------------------------------------

TEST_F(PointProcessTest, SameSeedSameEventsAndDifferentSeedsDiffer) {
  const auto cfg = Config(1.0f, 0.5f, 1.0f, 50.0f, 0, 12345);
  const auto a = Simulate(cfg, 1000), b = Simulate(cfg, 1000);
  ASSERT_GT(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_GE(a.front(), 0.0);
  EXPECT_LT(a.back(), 50.0);
  for (uint64_t other : {uint64_t{12346}, uint64_t{12345} + (uint64_t{1} << 32)}) {
    auto c = cfg;
    c.Seed = other;
    EXPECT_NE(Simulate(c, 1000), a) << "seed " << other << " (all 64 bits key the generator)";
  }
}

// Candidate k draws U_w = PhiloxUniformDouble(seed, 0, 2k) and U_a = PhiloxUniformDouble(seed, 0,
// 2k + 1); waiting time -log1p(-U_w) / bound; accept iff U_a * bound < lambda(candidate).
TEST_F(PointProcessTest, FollowsTheDocumentedPhiloxMapping) {
  const double mu = 0.75, alpha = 0.5, beta = 2.0;
  for (uint64_t seed : {uint64_t{0}, uint64_t{7}, uint64_t{0xDEADBEEFCAFEULL}}) {
    SCOPED_TRACE(seed);
    const auto events = Simulate(Config(0.75f, 0.5f, 2.0f, 1e6f, 2, seed), 2);
    ASSERT_EQ(events.size(), 2u);
    // The first candidate is always accepted (lambda = mu = bound before any event).
    const double t1 = -std::log1p(-PhiloxUniformDouble(seed, 0, 0)) / mu;
    EXPECT_EQ(events[0], t1);
    // Replay the thinning from there with the documented draws.
    double t = t1, excitation = alpha;
    for (uint64_t k = 1;; ++k) {
      const double bound = mu + excitation;
      const double wait = -std::log1p(-PhiloxUniformDouble(seed, 0, 2 * k)) / bound;
      excitation *= std::exp(-beta * wait);
      t += wait;
      if (PhiloxUniformDouble(seed, 0, 2 * k + 1) * bound < mu + excitation) break;
    }
    EXPECT_EQ(events[1], t);
  }
}

// The draws do not depend on the horizon or the maximum, so a shorter run is a prefix.
TEST_F(PointProcessTest, ShorterHorizonsAndMaximaGivePrefixes) {
  const auto full = Simulate(Config(2.0f, 1.2f, 2.0f, 40.0f, 0, 99), 2000);
  ASSERT_GT(full.size(), 100u);
  const auto short_run = Simulate(Config(2.0f, 1.2f, 2.0f, 20.0f, 0, 99), 2000);
  const auto expected_short =
      std::vector<double>(full.begin(), std::lower_bound(full.begin(), full.end(), 20.0));
  EXPECT_EQ(short_run, expected_short);
  const auto capped = Simulate(Config(2.0f, 1.2f, 2.0f, 40.0f, 37, 99), 37);
  EXPECT_EQ(capped, std::vector<double>(full.begin(), full.begin() + 37));
  EXPECT_TRUE(Simulate(Config(2.0f, 1.2f, 2.0f, 0.0f, 0, 99), 0).empty()) << "empty horizon";
}

// Times are computed in f64 and rounded once to the storage format.
TEST_F(PointProcessTest, StorageFormatsHoldTheRoundedF64Times) {
  const auto cfg = Config(1.5f, 0.9f, 1.8f, 300.0f, 0, 2024);
  const auto ref = Simulate(cfg, 4000, DType::Float64);
  ASSERT_GT(ref.size(), 500u);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const auto got = Simulate(cfg, 4000, dtype);
    ASSERT_EQ(got.size(), ref.size());
    const Buffer rounded = test::FromDoubles(dtype, ref);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], rounded.Get(static_cast<int64_t>(i))) << i;
    }
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end())) << "rounding is monotone";
  }
}

// With a maximum, a supercritical (alpha/beta >= 1) process is allowed and stops there.
TEST_F(PointProcessTest, MaxEventsStopsExplosiveProcesses) {
  for (float alpha : {1.0f, 3.0f}) {
    const auto events = Simulate(Config(1.0f, alpha, 1.0f, 1e30f, 500, 5), 800);
    EXPECT_EQ(events.size(), 500u);
    EXPECT_TRUE(std::is_sorted(events.begin(), events.end()));
  }
}

// ---- Statistics ---------------------------------------------------------------------------------

TEST_F(PointProcessTest, MeanCountMatchesTheClosedForm) {
  struct Case {
    double mu, alpha, beta, horizon;
  };
  const int seeds = 400;
  for (const Case& c :
       {Case{1.0, 0.5, 1.0, 200.0}, Case{0.5, 1.6, 2.0, 200.0}, Case{2.0, 0.0, 1.0, 100.0}}) {
    SCOPED_TRACE("mu " + std::to_string(c.mu) + " alpha " + std::to_string(c.alpha));
    const double n = c.alpha / c.beta;
    const double expected =
        c.mu * c.horizon / (1 - n) -
        c.mu * n * (1 - std::exp(-(c.beta - c.alpha) * c.horizon)) / ((1 - n) * (c.beta - c.alpha));
    const double variance = c.mu * c.horizon / std::pow(1 - n, 3);
    double sum = 0.0, sum_sq = 0.0;
    for (int s = 0; s < seeds; ++s) {
      const auto cfg =
          Config(static_cast<float>(c.mu), static_cast<float>(c.alpha), static_cast<float>(c.beta),
                 static_cast<float>(c.horizon), 0, 1000 + static_cast<uint64_t>(s));
      const auto count = static_cast<double>(Simulate(cfg, 20000).size());
      sum += count;
      sum_sq += count * count;
    }
    const double mean = sum / seeds;
    const double sample_var = (sum_sq - seeds * mean * mean) / (seeds - 1);
    EXPECT_NEAR(mean, expected, 5.0 * std::sqrt(variance / seeds));
    // Clustering: the variance exceeds the Poisson value by 1/(1-n)^2. The sample variance of 400
    // counts has a relative standard error of about 7%; 35% is 5 of those.
    EXPECT_NEAR(sample_var / variance, 1.0, 0.35);
  }
}

TEST_F(PointProcessTest, CompensatorIncrementsAreExponentialOne) {
  struct Case {
    double mu, alpha, beta;
    int64_t events;
    int seeds;
  };
  for (const Case& c : {Case{1.0, 0.5, 1.0, 400, 200}, Case{0.3, 2.4, 3.0, 400, 200},
                        Case{1.0, 1.5, 1.0, 100, 400}}) {
    SCOPED_TRACE("alpha/beta " + std::to_string(c.alpha / c.beta));
    std::vector<double> increments;
    for (int s = 0; s < c.seeds; ++s) {
      const auto cfg =
          Config(static_cast<float>(c.mu), static_cast<float>(c.alpha), static_cast<float>(c.beta),
                 1e30f, c.events, 77 + static_cast<uint64_t>(s));
      const auto t = Simulate(cfg, c.events);
      ASSERT_EQ(static_cast<int64_t>(t.size()), c.events);
      AppendCompensatorIncrements(t, c.mu, c.alpha, c.beta, &increments);
    }
    ExpectExponentialOne(increments);
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(PointProcessTest, RejectsBadArguments) {
  const std::string name = "PointProcess.HawkesSimulate";
  Buffer times(DType::Float32, 8);
  times.Poison();
  int64_t count = -7;
  const auto ok = Config(1.0f, 0.5f, 1.0f, 10.0f, 0, 1);
  auto run = [&](HawkesSimulateConfig cfg, int64_t capacity = 8, DType dtype = DType::Float32,
                 void* out = nullptr, int64_t* n = nullptr) {
    return [=, &times, &count, this] {
      pp().HawkesSimulate(cfg, out ? out : times.data(), capacity, n ? n : &count, dtype);
    };
  };
  auto with = [&](auto edit) {
    auto c = ok;
    edit(c);
    return c;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Bad {
    HawkesSimulateConfig cfg;
    const char* arg;
  };
  const std::vector<Bad> bad_configs = {
      {with([](auto& c) { c.Mu = 0.0f; }), "'config.Mu'"},
      {with([](auto& c) { c.Mu = -1.0f; }), "'config.Mu'"},
      {with([&](auto& c) { c.Mu = nan; }), "'config.Mu'"},
      {with([&](auto& c) { c.Mu = inf; }), "'config.Mu'"},
      {with([](auto& c) { c.Alpha = -0.1f; }), "'config.Alpha'"},
      {with([&](auto& c) { c.Alpha = nan; }), "'config.Alpha'"},
      {with([](auto& c) { c.Beta = 0.0f; }), "'config.Beta'"},
      {with([&](auto& c) { c.Beta = inf; }), "'config.Beta'"},
      {with([](auto& c) { c.Horizon = -1.0f; }), "'config.Horizon'"},
      {with([&](auto& c) { c.Horizon = inf; }), "'config.Horizon'"},
      {with([&](auto& c) { c.Horizon = nan; }), "'config.Horizon'"},
      {with([](auto& c) { c.MaxEvents = -1; }), "'config.MaxEvents'"},
      {with([](auto& c) { c.MaxEvents = 9; }), "'config.MaxEvents'"},  // > capacity 8
      // Critical and supercritical without a maximum: the event count is unbounded.
      {with([](auto& c) { c.Alpha = 1.0f; }), "'config.Alpha'"},
      {with([](auto& c) { c.Alpha = 2.0f; }), "'config.Alpha'"},
  };
  for (const Bad& b : bad_configs) {
    SCOPED_TRACE(b.arg);
    EXPECT_TRUE(test::ThrowsError(run(b.cfg), ErrorCode::InvalidArgument, {name, b.arg}));
  }
  EXPECT_TRUE(test::ThrowsError(run(ok, -1), ErrorCode::InvalidArgument, {name, "'capacity'"}));
  EXPECT_TRUE(
      test::ThrowsError([&] { pp().HawkesSimulate(ok, nullptr, 8, &count, DType::Float32); },
                        ErrorCode::InvalidArgument, {name, "'times'"}));
  EXPECT_TRUE(
      test::ThrowsError([&] { pp().HawkesSimulate(ok, times.data(), 8, nullptr, DType::Float32); },
                        ErrorCode::InvalidArgument, {name, "'eventCount'"}));
  // More events than the capacity without a maximum: detected during the simulation, before
  // anything is written (about 20 events are expected here).
  EXPECT_TRUE(test::ThrowsError(run(ok, 8), ErrorCode::InvalidArgument, {name, "'capacity'"}));
  EXPECT_TRUE(test::ThrowsError(run(ok, 0), ErrorCode::InvalidArgument, {name, "'capacity'"}));
  // f16 cannot hold times beyond 65504.
  Buffer half(DType::Float16, 8);
  half.Poison();
  EXPECT_TRUE(test::ThrowsError(
      [&] {
        pp().HawkesSimulate(with([](auto& c) { c.Horizon = 70000.0f; }), half.data(), 8, &count,
                            DType::Float16);
      },
      ErrorCode::InvalidArgument, {name, "'config.Horizon'", "65504"}));
  EXPECT_TRUE(half.IsPoisoned());
  std::vector<DType> dtypes(AllDTypes().begin(), AllDTypes().end());
  dtypes.push_back(DType::Invalid);
  dtypes.push_back(static_cast<DType>(kDTypeCount));
  for (DType d : dtypes) {
    if (kFloatDTypes.Contains(d)) continue;
    EXPECT_TRUE(test::ThrowsError(run(ok, 8, d), ErrorCode::UnsupportedDType, {name, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          pp().HawkesSimulate(with([](auto& c) { c.Horizon = 0.0f; }), nullptr, 0, &count, d);
        },
        ErrorCode::UnsupportedDType, {name, "'dtype'"}));
  }
  EXPECT_TRUE(times.IsPoisoned());
  EXPECT_EQ(count, -7) << "eventCount untouched on error";
  // Valid edge cases: no events over an empty horizon, with no buffer at all; alpha = 0 is a
  // Poisson process; the largest f16 horizon is accepted.
  for (DType d : test::FloatDTypes()) {
    pp().HawkesSimulate(with([](auto& c) { c.Horizon = 0.0f; }), nullptr, 0, &count, d);
    EXPECT_EQ(count, 0);
  }
  EXPECT_FALSE(Simulate(with([](auto& c) { c.Alpha = 0.0f; }), 100).empty());
  EXPECT_FALSE(Simulate(Config(0.01f, 0.0f, 1.0f, 65504.0f, 0, 3), 2000, DType::Float16).empty());
}

}  // namespace
}  // namespace backplane
