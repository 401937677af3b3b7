// Hawkes reference kernels, called through the CPU backend. Oracles: float64 direct evaluation of
// the textbook formulas (Laub, Taimre & Pollett 2015) and SciPy entropies in golden data
// (tests/golden/gen_hawkes.py), closed-form float64 math and hand-computed cases written here, and
// consistency between intensity, kernel matrix and log-likelihood.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

HawkesSurface& Hawkes() {
  static auto backend = cpu::CreateBackend();
  return backend->Hawkes();
}

const nlohmann::json& Golden() {
  static const nlohmann::json golden = [] {
    std::ifstream in(test::GoldenPath("hawkes.json"));
    EXPECT_TRUE(in.good()) << "missing golden file; run tests/golden/gen_hawkes.py";
    return nlohmann::json::parse(in);
  }();
  return golden;
}

DType DTypeOf(const nlohmann::json& c) { return *DTypeFromName(c["dtype"].get<std::string>()); }
std::vector<double> Doubles(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

std::vector<DType> RejectedDTypes() {
  std::vector<DType> out = {DType::Invalid, static_cast<DType>(25), static_cast<DType>(99)};
  for (DType d : AllDTypes()) {
    if (!kFloatDTypes.Contains(d)) out.push_back(d);
  }
  return out;
}

// Checks that fn throws InvalidArgument from `op` with every fragment in the message.
void ExpectInvalidArgument(const std::function<void()>& fn, const std::string& op,
                           const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << op << " did not throw (expected " << fragments.front() << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_EQ(e.op(), op) << e.what();
    for (const auto& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
    }
  }
}

// Sorted event times with exponential gaps (and one exact tie), rounded to dtype.
std::vector<double> EventTimes(DType dtype, int64_t n, uint64_t seed, double mean_gap = 0.7) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(1.0 / mean_gap);
  std::vector<double> t(static_cast<size_t>(n));
  double now = 0.0;
  for (auto& v : t) v = (now += gap(rng));
  if (n >= 4) t[2] = t[1];
  return FromDoubles(dtype, t).ToDoubles();  // rounding keeps the order (non-strictly)
}

// ---- Textbook oracles in float64
// ------------------------------------------------------------------

double IntensityOracle(const std::vector<double>& events, double t, double mu, double alpha,
                       double beta) {
  double sum = 0.0;
  for (double tj : events) {
    if (tj < t) sum += std::exp(-beta * (t - tj));
  }
  return mu + alpha * sum;
}

double LogLikelihoodOracle(const std::vector<double>& events, double total, double mu, double alpha,
                           double beta) {
  double sum_log = 0.0;
  double compensator = mu * total;
  for (size_t i = 0; i < events.size(); ++i) {
    double excitation = 0.0;
    for (size_t j = i; j-- > 0;) {
      if (events[j] == events[i]) continue;
      const double term = std::exp(-beta * (events[i] - events[j]));
      if (term == 0.0) break;  // every earlier term underflows too
      excitation += term;
    }
    sum_log += std::log(mu + alpha * excitation);
    compensator += (alpha / beta) * (1.0 - std::exp(-beta * (total - events[i])));
  }
  return sum_log - compensator;
}

// ---- Intensity
// --------------------------------------------------------------------------------------

TEST(HawkesReference, IntensityMatchesGolden) {
  int checked = 0;
  for (const auto& c : Golden()["intensity"]) {
    const DType dtype = DTypeOf(c);
    const Buffer events = FromDoubles(dtype, Doubles(c["events"]));
    const Buffer queries = FromDoubles(dtype, Doubles(c["queries"]));
    Buffer out(dtype, queries.count());
    out.Poison();
    Hawkes().HawkesIntensity(events.data(), queries.data(), out.data(), events.count(),
                             queries.count(), c["mu"].get<float>(), c["alpha"].get<float>(),
                             c["beta"].get<float>(), dtype);
    EXPECT_TRUE(test::AllClose(out, Doubles(c["want"]), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " E=" << events.count();
    EXPECT_TRUE(out.GuardIntact());
    ++checked;
  }
  EXPECT_EQ(checked, 24);
}

TEST(HawkesReference, IntensityLargeSizesMatchDirectSum) {
  for (DType dtype : test::FloatDTypes()) {
    for (auto [e, q] : {std::pair<int64_t, int64_t>{4500, 9}, {5, 4099}}) {
      const std::vector<double> events = EventTimes(dtype, e, 31 + static_cast<uint64_t>(e));
      const double horizon = events.back() + 2.0;
      const Buffer queries =
          test::RandomBuffer(dtype, q, 17 + static_cast<uint64_t>(q), -1.0, horizon);
      const float mu = 0.8f, alpha = 0.6f, beta = 1.3f;
      std::vector<double> want(static_cast<size_t>(q));
      for (int64_t i = 0; i < q; ++i) {
        want[static_cast<size_t>(i)] = IntensityOracle(events, queries.Get(i), mu, alpha, beta);
      }
      const Buffer ev = FromDoubles(dtype, events);
      Buffer out(dtype, q);
      Hawkes().HawkesIntensity(ev.data(), queries.data(), out.data(), e, q, mu, alpha, beta, dtype);
      EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
    }
  }
}

TEST(HawkesReference, IntensityHandComputedStrictlyBefore) {
  // Events at 0, 1, 1, 3; mu 0.5, alpha 1, beta 1.
  for (DType dtype : test::FloatDTypes()) {
    const Buffer events = FromDoubles(dtype, {0.0, 1.0, 1.0, 3.0});
    const Buffer queries = FromDoubles(dtype, {-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 5.0});
    const double e = std::exp(1.0);
    const std::vector<double> want = {
        0.5,                                          // before every event
        0.5,                                          // at t = 0: no self-excitation
        0.5 + std::exp(-0.5),                         //
        0.5 + 1.0 / e,                                // the two events at 1 excluded
        0.5 + std::exp(-2.0) + 2.0 / e,               //
        0.5 + std::exp(-3.0) + 2.0 * std::exp(-2.0),  // the event at 3 excluded
        0.5 + std::exp(-5.0) + 2.0 * std::exp(-4.0) + std::exp(-2.0)};
    Buffer out(dtype, 7);
    Hawkes().HawkesIntensity(events.data(), queries.data(), out.data(), 4, 7, 0.5f, 1.0f, 1.0f,
                             dtype);
    EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
    // No events: mu everywhere (eventTimes may be null).
    Hawkes().HawkesIntensity(nullptr, queries.data(), out.data(), 0, 7, 0.25f, 1.0f, 1.0f, dtype);
    EXPECT_TRUE(test::AllClose(out, std::vector<double>(7, 0.25), {0.0, 0.0}));
    // In place: output aliases queryTimes.
    Buffer inplace = queries;
    Hawkes().HawkesIntensity(events.data(), inplace.data(), inplace.data(), 4, 7, 0.5f, 1.0f, 1.0f,
                             dtype);
    EXPECT_TRUE(test::AllClose(inplace, want, test::DefaultTolerance(dtype)));
  }
  // Values beyond float16's range become Inf on store.
  const Buffer q16 = FromDoubles(DType::Float16, {1.0});
  Buffer out16(DType::Float16, 1);
  Hawkes().HawkesIntensity(nullptr, q16.data(), out16.data(), 0, 1, 70000.0f, 0.0f, 1.0f,
                           DType::Float16);
  EXPECT_EQ(out16.Get(0), kInf);
}

// ---- Kernel matrix
// --------------------------------------------------------------------------------

TEST(HawkesReference, KernelMatrixMatchesGolden) {
  int checked = 0;
  for (const auto& c : Golden()["kernel_matrix"]) {
    const DType dtype = DTypeOf(c);
    const Buffer events = FromDoubles(dtype, Doubles(c["events"]));
    const int64_t e = events.count();
    Buffer out(dtype, e * e);
    out.Poison();
    Hawkes().HawkesKernelMatrix(events.data(), out.data(), e, c["alpha"].get<float>(),
                                c["beta"].get<float>(), dtype);
    EXPECT_TRUE(test::AllClose(out, Doubles(c["want"]), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " E=" << e;
    EXPECT_TRUE(out.GuardIntact());
    if (e == 0) {
      EXPECT_TRUE(out.IsPoisoned());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

TEST(HawkesReference, KernelMatrixLargeAndRowSumsEqualIntensity) {
  for (DType dtype : test::FloatDTypes()) {
    const int64_t e = 70;  // 4900 cells
    const std::vector<double> t = EventTimes(dtype, e, 5);
    const float alpha = 0.9f, beta = 0.7f, mu = 0.3f;
    std::vector<double> want(static_cast<size_t>(e * e), 0.0);
    for (int64_t i = 0; i < e; ++i) {
      for (int64_t j = 0; j < i; ++j) {
        const double ti = t[static_cast<size_t>(i)], tj = t[static_cast<size_t>(j)];
        if (tj < ti) want[static_cast<size_t>(i * e + j)] = alpha * std::exp(-beta * (ti - tj));
      }
    }
    const Buffer events = FromDoubles(dtype, t);
    Buffer k(dtype, e * e);
    Hawkes().HawkesKernelMatrix(events.data(), k.data(), e, alpha, beta, dtype);
    EXPECT_TRUE(test::AllClose(k, want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
    EXPECT_EQ(k.Get(2 * e + 1), 0.0) << "the tie t_2 == t_1 does not excite";
    // mu + row sum of K equals the intensity at the event time (float64 storage: exact terms).
    if (dtype == DType::Float64) {
      Buffer lambda(dtype, e);
      Hawkes().HawkesIntensity(events.data(), events.data(), lambda.data(), e, e, mu, alpha, beta,
                               dtype);
      for (int64_t i = 0; i < e; ++i) {
        double row = mu;
        for (int64_t j = 0; j < e; ++j) row += k.Get(i * e + j);
        EXPECT_TRUE(test::Close(lambda.Get(i), row, test::DefaultTolerance(dtype))) << i;
      }
    }
  }
}

// ---- Log-likelihood
// -------------------------------------------------------------------------------

TEST(HawkesReference, LogLikelihoodMatchesGolden) {
  int checked = 0;
  for (const auto& c : Golden()["log_likelihood"]) {
    const DType dtype = DTypeOf(c);
    const Buffer events = FromDoubles(dtype, Doubles(c["events"]));
    Buffer out(dtype, 1);
    out.Poison();
    Hawkes().HawkesLogLikelihood(events.data(), events.count(), c["total"].get<float>(),
                                 c["mu"].get<float>(), c["alpha"].get<float>(),
                                 c["beta"].get<float>(), out.data(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), c["want"].get<double>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " E=" << events.count();
    EXPECT_TRUE(out.GuardIntact());
    ++checked;
  }
  EXPECT_EQ(checked, 24);
}

TEST(HawkesReference, LogLikelihoodLargeMatchesDirectEvaluation) {
  for (DType dtype : test::FloatDTypes()) {
    const int64_t e = 4097;
    const std::vector<double> t = EventTimes(dtype, e, 77);
    const float total = static_cast<float>(t.back()) + 1.0f;
    const float mu = 0.9f, alpha = 0.5f, beta = 2.0f;
    const double want = LogLikelihoodOracle(t, total, mu, alpha, beta);
    const Buffer events = FromDoubles(dtype, t);
    Buffer out(dtype, 1);
    Hawkes().HawkesLogLikelihood(events.data(), e, total, mu, alpha, beta, out.data(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), want, test::DefaultTolerance(dtype))) << DTypeName(dtype);
  }
}

TEST(HawkesReference, LogLikelihoodHandComputedAndEdgeCases) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    // Events 0, 1, 1, 3 on [0, 4]; mu 0.5, alpha 1, beta 1.
    const Buffer events = FromDoubles(dtype, {0.0, 1.0, 1.0, 3.0});
    const double l1 = 0.5, l2 = 0.5 + std::exp(-1.0),
                 l4 = 0.5 + std::exp(-3.0) + 2 * std::exp(-2.0);
    const double compensator =
        0.5 * 4.0 + (1.0 - std::exp(-4.0)) + 2 * (1.0 - std::exp(-3.0)) + (1.0 - std::exp(-1.0));
    const double want = std::log(l1) + 2 * std::log(l2) + std::log(l4) - compensator;
    Buffer out(dtype, 1);
    Hawkes().HawkesLogLikelihood(events.data(), 4, 4.0f, 0.5f, 1.0f, 1.0f, out.data(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), want, tol)) << DTypeName(dtype);
    // No events: -mu T is written.
    out.Poison();
    Hawkes().HawkesLogLikelihood(nullptr, 0, 3.0f, 1.5f, 1.0f, 1.0f, out.data(), dtype);
    EXPECT_EQ(out.Get(0), -4.5);
    // alpha = 0 is a Poisson process: E ln mu - mu T.
    Hawkes().HawkesLogLikelihood(events.data(), 4, 4.0f, 0.5f, 0.0f, 1.0f, out.data(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), 4 * std::log(0.5) - 2.0, tol));
    // Events exactly at 0 and at T are inside [0, T]; T = 0 with all events at 0.
    const Buffer zeros = FromDoubles(dtype, {0.0, 0.0});
    Hawkes().HawkesLogLikelihood(zeros.data(), 2, 0.0f, 2.0f, 1.0f, 1.0f, out.data(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), 2 * std::log(2.0), tol)) << "a tie does not excite";
  }
  // A value below float16's range becomes -Inf on store.
  Buffer out16(DType::Float16, 1);
  Hawkes().HawkesLogLikelihood(nullptr, 0, 100.0f, 1000.0f, 0.0f, 1.0f, out16.data(),
                               DType::Float16);
  EXPECT_EQ(out16.Get(0), -kInf);
}

// The log-likelihood's lambda_i is the intensity at the event times, and its compensator is the
// integral of the intensity over [0, T] (Gauss-Legendre on each inter-event piece, where the
// intensity is smooth).
TEST(HawkesReference, LogLikelihoodAgreesWithIntensity) {
  const DType dtype = DType::Float64;
  for (uint64_t seed : {1u, 2u, 3u}) {
    const std::vector<double> t = EventTimes(dtype, 40, seed);
    const float total_f = static_cast<float>(t.back() + 1.5);
    const double total = total_f;
    const float mu = 0.7f, alpha = 0.8f, beta = 1.1f;
    const Buffer events = FromDoubles(dtype, t);
    const int64_t e = events.count();

    Buffer at_events(dtype, e);
    Hawkes().HawkesIntensity(events.data(), events.data(), at_events.data(), e, e, mu, alpha, beta,
                             dtype);
    double sum_log = 0.0;
    for (int64_t i = 0; i < e; ++i) sum_log += std::log(at_events.Get(i));

    static const double kNodes[] = {-0.9061798459386640, -0.5384693101056831, 0.0,
                                    0.5384693101056831, 0.9061798459386640};
    static const double kWeights[] = {0.2369268850561891, 0.4786286704993665, 0.5688888888888889,
                                      0.4786286704993665, 0.2369268850561891};
    std::vector<double> edges = {0.0};
    for (double v : t) edges.push_back(v);
    edges.push_back(total);
    std::vector<double> nodes;
    std::vector<double> weights;
    for (size_t k = 0; k + 1 < edges.size(); ++k) {
      const double a = edges[k], b = edges[k + 1];
      if (b <= a) continue;
      for (int piece = 0; piece < 8; ++piece) {
        const double lo = a + (b - a) * piece / 8.0, hi = a + (b - a) * (piece + 1) / 8.0;
        for (int g = 0; g < 5; ++g) {
          nodes.push_back(0.5 * (lo + hi) + 0.5 * (hi - lo) * kNodes[g]);
          weights.push_back(0.5 * (hi - lo) * kWeights[g]);
        }
      }
    }
    const Buffer q = FromDoubles(dtype, nodes);
    Buffer lambda(dtype, q.count());
    Hawkes().HawkesIntensity(events.data(), q.data(), lambda.data(), e, q.count(), mu, alpha, beta,
                             dtype);
    double integral = 0.0;
    for (int64_t i = 0; i < q.count(); ++i)
      integral += weights[static_cast<size_t>(i)] * lambda.Get(i);

    Buffer ll(dtype, 1);
    Hawkes().HawkesLogLikelihood(events.data(), e, total_f, mu, alpha, beta, ll.data(), dtype);
    // The quadrature error of 5-point Gauss-Legendre on pieces of length < 0.5 is far below 1e-9.
    EXPECT_TRUE(test::Close(ll.Get(0), sum_log - integral, {1e-9, 1e-9}))
        << "seed " << seed << ": integral " << integral;
  }
}

// ---- Mutual information
// ---------------------------------------------------------------------------

TEST(HawkesReference, MutualInformationMatchesScipyGolden) {
  int checked = 0;
  for (const auto& c : Golden()["mutual_info"]) {
    const DType dtype = DTypeOf(c);
    const Buffer joint = FromDoubles(dtype, Doubles(c["joint"]));
    Buffer out(dtype, 1);
    out.Poison();
    Hawkes().MarkovMutualInformation(joint.data(), out.data(), c["x"].get<int64_t>(),
                                     c["y"].get<int64_t>(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), c["want"].get<double>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " " << c["x"] << "x" << c["y"];
    EXPECT_TRUE(out.GuardIntact());
    ++checked;
  }
  EXPECT_EQ(checked, 32);
}

TEST(HawkesReference, MutualInformationClosedForms) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    Buffer out(dtype, 1);
    // Uniform on the diagonal of a k x k table: I = ln k (unnormalised input is normalised).
    for (int64_t k : {1, 2, 3, 8}) {
      std::vector<double> diag(static_cast<size_t>(k * k), 0.0);
      for (int64_t i = 0; i < k; ++i) diag[static_cast<size_t>(i * k + i)] = 5.0;
      const Buffer joint = FromDoubles(dtype, diag);
      Hawkes().MarkovMutualInformation(joint.data(), out.data(), k, k, dtype);
      EXPECT_TRUE(test::Close(out.Get(0), std::log(static_cast<double>(k)), tol)) << k;
    }
    // Independent: exactly 0 (never negative).
    const Buffer indep = FromDoubles(dtype, {0.06, 0.14, 0.24, 0.56});  // (0.2,0.8) x (0.3,0.7)
    Hawkes().MarkovMutualInformation(indep.data(), out.data(), 2, 2, dtype);
    EXPECT_GE(out.Get(0), 0.0);
    EXPECT_TRUE(test::Close(out.Get(0), 0.0, {2e-3, 0.0}))
        << "rounding the inputs to the storage dtype breaks exact independence";
    // A hand-computed 2 x 2 table: p = [[1/2, 0], [1/4, 1/4]].
    const Buffer hand = FromDoubles(dtype, {0.5, 0.0, 0.25, 0.25});
    Hawkes().MarkovMutualInformation(hand.data(), out.data(), 2, 2, dtype);
    const double want = 0.5 * std::log(0.5 / (0.5 * 0.75)) + 0.25 * std::log(0.25 / (0.5 * 0.75)) +
                        0.25 * std::log(0.25 / (0.5 * 0.25));
    EXPECT_TRUE(test::Close(out.Get(0), want, tol));
    // Empty table: 0 is written.
    out.Poison();
    Hawkes().MarkovMutualInformation(nullptr, out.data(), 0, 5, dtype);
    EXPECT_EQ(out.Get(0), 0.0);
    // Large: 64 x 65 random table against H(X) + H(Y) - H(X, Y).
    const int64_t x = 64, y = 65;
    const Buffer big = test::RandomBuffer(dtype, x * y, 9, 0.0, 1.0);
    std::vector<double> px(x, 0.0), py(y, 0.0);
    double n = 0.0;
    for (int64_t i = 0; i < x; ++i) {
      for (int64_t j = 0; j < y; ++j) {
        const double v = big.Get(i * y + j);
        px[static_cast<size_t>(i)] += v;
        py[static_cast<size_t>(j)] += v;
        n += v;
      }
    }
    auto entropy = [n](double v) { return v > 0 ? -(v / n) * std::log(v / n) : 0.0; };
    double h = 0.0;
    for (double v : px) h += entropy(v);
    for (double v : py) h += entropy(v);
    for (int64_t i = 0; i < x * y; ++i) h -= entropy(big.Get(i));
    Hawkes().MarkovMutualInformation(big.data(), out.data(), x, y, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), h, tol)) << DTypeName(dtype);
  }
  // float64 entries near the top of the range: the total must not overflow.
  const Buffer huge = FromDoubles(DType::Float64, {1e308, 0.0, 0.0, 1e308});
  Buffer out(DType::Float64, 1);
  Hawkes().MarkovMutualInformation(huge.data(), out.data(), 2, 2, DType::Float64);
  EXPECT_TRUE(test::Close(out.Get(0), std::log(2.0), test::DefaultTolerance(DType::Float64)));
}

// ---- Markov blanket partition
// --------------------------------------------------------------------

std::vector<int32_t> Partition(DType dtype, const std::vector<double>& adjacency,
                               const std::vector<int32_t>& internal, int64_t n) {
  const Buffer adj = FromDoubles(dtype, adjacency);
  std::vector<int32_t> labels(static_cast<size_t>(n), -7);
  Hawkes().MarkovBlanketPartition(adj.data(), internal.data(), labels.data(), n,
                                  static_cast<int64_t>(internal.size()), dtype);
  return labels;
}

TEST(HawkesReference, MarkovBlanketMatchesGolden) {
  int checked = 0;
  for (const auto& c : Golden()["blanket"]) {
    const DType dtype = DTypeOf(c);
    EXPECT_EQ(Partition(dtype, Doubles(c["adjacency"]), c["internal"].get<std::vector<int32_t>>(),
                        c["n"].get<int64_t>()),
              c["want"].get<std::vector<int32_t>>())
        << DTypeName(dtype) << " n=" << c["n"];
    ++checked;
  }
  EXPECT_EQ(checked, 24);
}

TEST(HawkesReference, MarkovBlanketHandExample) {
  // 5 -> 0 -> 1 -> 2 -> 4, 3 -> 2, 1 -> 7, 1 <-> 8, 6 isolated, self-loop on 4; internal {1}.
  // Parents of 1: {0, 8}; children: {2, 7, 8}; co-parent (other parent of a child): {3}.
  const int64_t n = 9;
  for (DType dtype : test::FloatDTypes()) {
    std::vector<double> adj(n * n, 0.0);
    auto edge = [&](int u, int v, double w) { adj[static_cast<size_t>(u * n + v)] = w; };
    edge(5, 0, 1.0);
    edge(0, 1, 0.5);
    edge(1, 2, -2.0);  // negative weights are edges
    edge(2, 4, 1.0);
    edge(3, 2, 3.0);
    edge(1, 7, 1.0);
    edge(1, 8, 1.0);
    edge(8, 1, 1.0);
    edge(4, 4, 1.0);   // self-loops are ignored
    edge(6, 1, -0.0);  // -0.0 is not an edge
    EXPECT_EQ(Partition(dtype, adj, {1}, n), (std::vector<int32_t>{1, 0, 2, 1, 3, 3, 3, 2, 2}))
        << DTypeName(dtype);
    // Two internal nodes {1, 2}: 2 is internal now, 4 becomes its child (active), 3 a parent.
    EXPECT_EQ(Partition(dtype, adj, {2, 1}, n), (std::vector<int32_t>{1, 0, 0, 1, 2, 3, 3, 2, 2}));
    // No internal nodes: everything external.
    EXPECT_EQ(Partition(dtype, adj, {}, n), std::vector<int32_t>(n, 3));
    // Every node internal.
    EXPECT_EQ(Partition(dtype, adj, {8, 7, 6, 5, 4, 3, 2, 1, 0}, n), std::vector<int32_t>(n, 0));
  }
  // N = 0: nothing written, null pointers allowed.
  EXPECT_NO_THROW(Hawkes().MarkovBlanketPartition(nullptr, nullptr, nullptr, 0, 0, DType::Float32));
}

TEST(HawkesReference, MarkovBlanketLargeMatchesSetOracle) {
  const int64_t n = 70;  // 4900 adjacency entries
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> adj(static_cast<size_t>(n * n), 0.0);
  for (auto& v : adj) v = u(rng) < 0.03 ? 1.0 + u(rng) : 0.0;
  const std::vector<int32_t> internal = {3, 14, 15, 9, 26, 53};
  const std::set<int> inside(internal.begin(), internal.end());
  auto has = [&](int a, int b) { return a != b && adj[static_cast<size_t>(a * n + b)] != 0.0; };
  std::set<int> children, blanket;
  for (int i : inside) {
    for (int v = 0; v < n; ++v) {
      if (inside.count(v)) continue;
      if (has(i, v)) children.insert(v);
      if (has(v, i)) blanket.insert(v);
    }
  }
  for (int c : children) {
    blanket.insert(c);
    for (int v = 0; v < n; ++v) {
      if (!inside.count(v) && has(v, c)) blanket.insert(v);
    }
  }
  std::vector<int32_t> want(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    want[static_cast<size_t>(v)] = inside.count(v)     ? 0
                                   : children.count(v) ? 2
                                   : blanket.count(v)  ? 1
                                                       : 3;
  }
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_EQ(Partition(dtype, adj, internal, n), want) << DTypeName(dtype);
  }
}

// ---- Bad input
// ------------------------------------------------------------------------------------

TEST(HawkesReference, IntensityAndKernelMatrixBadInput) {
  const DType f32 = DType::Float32;
  const Buffer events = FromDoubles(f32, {0.0, 1.0, 2.0});
  const Buffer unsorted = FromDoubles(f32, {0.0, 2.0, 1.0});
  const Buffer nan_event = FromDoubles(f32, {0.0, kNaN, 2.0});
  const Buffer queries = FromDoubles(f32, {0.5, 1.5, 2.5});
  const Buffer inf_query = FromDoubles(f32, {0.5, kInf, 2.5});
  Buffer out(f32, 9);
  out.Poison();
  const std::string op = "Hawkes.HawkesIntensity";
  auto intensity = [&](const void* e, const void* q, void* o, int64_t ne, int64_t nq, float mu,
                       float alpha, float beta, DType d) {
    return [=] { Hawkes().HawkesIntensity(e, q, o, ne, nq, mu, alpha, beta, d); };
  };
  const void* ev = events.data();
  const void* qv = queries.data();
  void* ov = out.data();
  for (DType bad : RejectedDTypes()) {
    EXPECT_TRUE(test::ThrowsError(intensity(ev, qv, ov, 3, 3, 1, 1, 1, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(intensity(ev, qv, ov, 0, 0, 1, 1, 1, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
  }
  const std::vector<std::pair<std::function<void()>, std::vector<std::string>>> cases = {
      {intensity(ev, qv, ov, -1, 3, 1, 1, 1, f32), {"'eventCount'", ">= 0"}},
      {intensity(ev, qv, ov, 3, -2, 1, 1, 1, f32), {"'queryCount'", ">= 0"}},
      {intensity(nullptr, qv, ov, 3, 3, 1, 1, 1, f32), {"'eventTimes'", "null"}},
      {intensity(ev, nullptr, ov, 3, 3, 1, 1, 1, f32), {"'queryTimes'", "null"}},
      {intensity(ev, qv, nullptr, 3, 3, 1, 1, 1, f32), {"'output'", "null"}},
      {intensity(ev, qv, ov, 3, 3, -0.5f, 1, 1, f32), {"'mu'", ">= 0"}},
      {intensity(ev, qv, ov, 3, 3, NAN, 1, 1, f32), {"'mu'", "finite"}},
      {intensity(ev, qv, ov, 3, 3, 1, -1, 1, f32), {"'alpha'", ">= 0"}},
      {intensity(ev, qv, ov, 3, 3, 1, INFINITY, 1, f32), {"'alpha'", "finite"}},
      {intensity(ev, qv, ov, 3, 3, 1, 1, 0, f32), {"'beta'", "> 0"}},
      {intensity(ev, qv, ov, 3, 3, 1, 1, -2, f32), {"'beta'", "> 0"}},
      {intensity(ev, qv, ov, 3, 3, 1, 1, INFINITY, f32), {"'beta'", "finite"}},
      {intensity(unsorted.data(), qv, ov, 3, 3, 1, 1, 1, f32),
       {"'eventTimes'", "sorted", "eventTimes[2] = 1 < eventTimes[1] = 2"}},
      {intensity(nan_event.data(), qv, ov, 3, 3, 1, 1, 1, f32), {"'eventTimes'", "finite"}},
      {intensity(ev, inf_query.data(), ov, 3, 3, 1, 1, 1, f32), {"'queryTimes'", "finite"}},
  };
  for (const auto& [fn, fragments] : cases) ExpectInvalidArgument(fn, op, fragments);
  EXPECT_TRUE(out.IsPoisoned());

  const std::string kop = "Hawkes.HawkesKernelMatrix";
  auto kernel = [&](const void* e, void* o, int64_t n, float alpha, float beta, DType d) {
    return [=] { Hawkes().HawkesKernelMatrix(e, o, n, alpha, beta, d); };
  };
  for (DType bad : RejectedDTypes()) {
    EXPECT_TRUE(test::ThrowsError(kernel(ev, ov, 3, 1, 1, bad), ErrorCode::UnsupportedDType,
                                  {kop, "'dtype'"}));
  }
  EXPECT_TRUE(test::ThrowsError(kernel(ev, ov, -3, 1, 1, f32), ErrorCode::InvalidArgument,
                                {kop, "'eventCount'"}));
  EXPECT_TRUE(test::ThrowsError(kernel(ev, ov, int64_t{1} << 32, 1, 1, f32),
                                ErrorCode::InvalidArgument, {kop, "'eventCount'", "fits"}));
  EXPECT_TRUE(test::ThrowsError(kernel(nullptr, ov, 3, 1, 1, f32), ErrorCode::InvalidArgument,
                                {kop, "'eventTimes'"}));
  EXPECT_TRUE(test::ThrowsError(kernel(ev, nullptr, 3, 1, 1, f32), ErrorCode::InvalidArgument,
                                {kop, "'output'"}));
  EXPECT_TRUE(test::ThrowsError(kernel(ev, ov, 3, -1, 1, f32), ErrorCode::InvalidArgument,
                                {kop, "'alpha'"}));
  EXPECT_TRUE(
      test::ThrowsError(kernel(ev, ov, 3, 1, 0, f32), ErrorCode::InvalidArgument, {kop, "'beta'"}));
  EXPECT_TRUE(test::ThrowsError(kernel(ev, ov, 3, 1, NAN, f32), ErrorCode::InvalidArgument,
                                {kop, "'beta'"}));
  EXPECT_TRUE(test::ThrowsError(kernel(unsorted.data(), ov, 3, 1, 1, f32),
                                ErrorCode::InvalidArgument, {kop, "'eventTimes'", "sorted"}));
  EXPECT_TRUE(test::ThrowsError(kernel(nan_event.data(), ov, 3, 1, 1, f32),
                                ErrorCode::InvalidArgument, {kop, "'eventTimes'", "finite"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(HawkesReference, LogLikelihoodBadInput) {
  const DType f32 = DType::Float32;
  const Buffer events = FromDoubles(f32, {0.5, 1.0, 2.0});
  const Buffer unsorted = FromDoubles(f32, {0.5, 2.0, 1.0});
  const Buffer negative = FromDoubles(f32, {-0.5, 1.0, 2.0});
  const Buffer inf_event = FromDoubles(f32, {0.5, 1.0, kInf});
  Buffer out(f32, 1);
  out.Poison();
  const std::string op = "Hawkes.HawkesLogLikelihood";
  auto ll = [&](const void* e, int64_t n, float total, float mu, float alpha, float beta, void* o,
                DType d) {
    return [=] { Hawkes().HawkesLogLikelihood(e, n, total, mu, alpha, beta, o, d); };
  };
  const void* ev = events.data();
  void* ov = out.data();
  for (DType bad : RejectedDTypes()) {
    EXPECT_TRUE(test::ThrowsError(ll(ev, 3, 3, 1, 1, 1, ov, bad), ErrorCode::UnsupportedDType,
                                  {op, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(ll(ev, 0, 3, 1, 1, 1, ov, bad), ErrorCode::UnsupportedDType,
                                  {op, "'dtype'"}));
  }
  const std::vector<std::pair<std::function<void()>, std::vector<std::string>>> cases = {
      {ll(ev, -1, 3, 1, 1, 1, ov, f32), {"'eventCount'"}},
      {ll(nullptr, 3, 3, 1, 1, 1, ov, f32), {"'eventTimes'", "null"}},
      {ll(ev, 3, 3, 1, 1, 1, nullptr, f32), {"'output'", "null"}},
      {ll(ev, 0, 3, 1, 1, 1, nullptr, f32), {"'output'", "null"}},
      {ll(ev, 3, -1, 1, 1, 1, ov, f32), {"'totalTime'", ">= 0"}},
      {ll(ev, 3, INFINITY, 1, 1, 1, ov, f32), {"'totalTime'", "finite"}},
      {ll(ev, 3, 3, 0, 1, 1, ov, f32), {"'mu'", "> 0"}},
      {ll(ev, 3, 3, -1, 1, 1, ov, f32), {"'mu'", "> 0"}},
      {ll(ev, 3, 3, NAN, 1, 1, ov, f32), {"'mu'", "finite"}},
      {ll(ev, 3, 3, 1, -0.1f, 1, ov, f32), {"'alpha'", ">= 0"}},
      {ll(ev, 3, 3, 1, 1, 0, ov, f32), {"'beta'", "> 0"}},
      {ll(ev, 3, 3, 1, 1, -1, ov, f32), {"'beta'", "> 0"}},
      {ll(unsorted.data(), 3, 3, 1, 1, 1, ov, f32), {"'eventTimes'", "sorted"}},
      {ll(inf_event.data(), 3, 3, 1, 1, 1, ov, f32), {"'eventTimes'", "finite"}},
      {ll(negative.data(), 3, 3, 1, 1, 1, ov, f32), {"'eventTimes'", "within [0, totalTime]"}},
      {ll(ev, 3, 1.5f, 1, 1, 1, ov, f32),
       {"'eventTimes'", "within [0, totalTime = 1.5]", "eventTimes[2] = 2"}},
  };
  for (const auto& [fn, fragments] : cases) ExpectInvalidArgument(fn, op, fragments);
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(HawkesReference, MutualInformationAndBlanketBadInput) {
  const DType f32 = DType::Float32;
  const Buffer joint = FromDoubles(f32, {0.25, 0.25, 0.25, 0.25});
  const Buffer negative = FromDoubles(f32, {0.5, -0.1, 0.3, 0.3});
  const Buffer nan = FromDoubles(f32, {0.5, kNaN, 0.3, 0.2});
  const Buffer zeros = FromDoubles(f32, {0.0, -0.0, 0.0, 0.0});
  Buffer out(f32, 1);
  out.Poison();
  const std::string op = "Hawkes.MarkovMutualInformation";
  auto mi = [&](const void* j, void* o, int64_t x, int64_t y, DType d) {
    return [=] { Hawkes().MarkovMutualInformation(j, o, x, y, d); };
  };
  for (DType bad : RejectedDTypes()) {
    EXPECT_TRUE(test::ThrowsError(mi(joint.data(), out.data(), 2, 2, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(mi(joint.data(), out.data(), 0, 0, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
  }
  EXPECT_TRUE(test::ThrowsError(mi(joint.data(), out.data(), -1, 2, f32),
                                ErrorCode::InvalidArgument, {op, "'xCount'"}));
  EXPECT_TRUE(test::ThrowsError(mi(joint.data(), out.data(), 2, -1, f32),
                                ErrorCode::InvalidArgument, {op, "'yCount'"}));
  EXPECT_TRUE(
      test::ThrowsError(mi(joint.data(), out.data(), int64_t{1} << 40, int64_t{1} << 40, f32),
                        ErrorCode::InvalidArgument, {op, "fits in int64"}));
  EXPECT_TRUE(test::ThrowsError(mi(nullptr, out.data(), 2, 2, f32), ErrorCode::InvalidArgument,
                                {op, "'joint'", "null"}));
  EXPECT_TRUE(test::ThrowsError(mi(joint.data(), nullptr, 2, 2, f32), ErrorCode::InvalidArgument,
                                {op, "'output'", "null"}));
  EXPECT_TRUE(test::ThrowsError(mi(negative.data(), out.data(), 2, 2, f32),
                                ErrorCode::InvalidArgument,
                                {op, "'joint'", ">= 0", "joint[0][1]"}));
  EXPECT_TRUE(test::ThrowsError(mi(nan.data(), out.data(), 2, 2, f32), ErrorCode::InvalidArgument,
                                {op, "'joint'", "finite"}));
  EXPECT_TRUE(test::ThrowsError(mi(zeros.data(), out.data(), 2, 2, f32), ErrorCode::InvalidArgument,
                                {op, "'joint'", "positive total"}));
  EXPECT_TRUE(out.IsPoisoned());

  const std::string bop = "Hawkes.MarkovBlanketPartition";
  const Buffer adj = FromDoubles(f32, {0, 1, 0, 0, 0, 1, 1, 0, 0});
  const Buffer adj_nan = FromDoubles(f32, {0, 1, 0, 0, kNaN, 1, 1, 0, 0});
  Buffer labels(DType::Int32, 3);
  labels.Poison();
  int32_t* lv = labels.as<int32_t>();
  auto mb = [&](const void* a, std::vector<int32_t> ids, int32_t* o, int64_t n, DType d) {
    return [=] {
      Hawkes().MarkovBlanketPartition(a, ids.data(), o, n, static_cast<int64_t>(ids.size()), d);
    };
  };
  for (DType bad : RejectedDTypes()) {
    EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {0}, lv, 3, bad), ErrorCode::UnsupportedDType,
                                  {bop, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {}, lv, 0, bad), ErrorCode::UnsupportedDType,
                                  {bop, "'dtype'"}));
  }
  EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {0}, lv, -3, f32), ErrorCode::InvalidArgument,
                                {bop, "'nodeCount'"}));
  EXPECT_TRUE(
      test::ThrowsError([&] { Hawkes().MarkovBlanketPartition(adj.data(), lv, lv, 3, -1, f32); },
                        ErrorCode::InvalidArgument, {bop, "'internalCount'"}));
  EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {0}, lv, int64_t{1} << 33, f32),
                                ErrorCode::InvalidArgument, {bop, "'nodeCount'", "fits"}));
  EXPECT_TRUE(test::ThrowsError(mb(nullptr, {0}, lv, 3, f32), ErrorCode::InvalidArgument,
                                {bop, "'adjacency'", "null"}));
  EXPECT_TRUE(test::ThrowsError(
      [&] { Hawkes().MarkovBlanketPartition(adj.data(), nullptr, lv, 3, 1, f32); },
      ErrorCode::InvalidArgument, {bop, "'internal'", "null"}));
  EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {0}, nullptr, 3, f32), ErrorCode::InvalidArgument,
                                {bop, "'output'", "null"}));
  EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {0, 3}, lv, 3, f32), ErrorCode::InvalidArgument,
                                {bop, "'internal'", "[0, 3)", "internal[1] = 3"}));
  EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {-1}, lv, 3, f32), ErrorCode::InvalidArgument,
                                {bop, "'internal'", "internal[0] = -1"}));
  EXPECT_TRUE(
      test::ThrowsError(mb(adj.data(), {2, 0, 2}, lv, 3, f32), ErrorCode::InvalidArgument,
                        {bop, "'internal'", "distinct", "internal[2] = 2 repeats internal[0]"}));
  EXPECT_TRUE(test::ThrowsError(mb(adj.data(), {0}, lv, 0, f32), ErrorCode::InvalidArgument,
                                {bop, "'internal'", "[0, 0)"}));
  EXPECT_TRUE(test::ThrowsError(mb(adj_nan.data(), {0}, lv, 3, f32), ErrorCode::InvalidArgument,
                                {bop, "'adjacency'", "finite", "adjacency[1][1]"}));
  EXPECT_TRUE(labels.IsPoisoned());
}

}  // namespace
}  // namespace backplane
