// Sampling reference kernels: golden tokens from tests/golden/gen_sampling.py (torch.argmax,
// torch.softmax in float64, NumPy stable sort and an independent Python Philox4x32-10), a
// frequency test against the renormalised top-k / top-p distribution computed here in float64,
// special values and every validation path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
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

SamplingConfig Config(float t, int64_t k, float p, uint64_t seed) {
  SamplingConfig c;
  c.Temperature = t;
  c.TopK = k;
  c.TopP = p;
  c.Seed = seed;
  return c;
}

class SamplingReference : public ::testing::Test {
 public:
  int32_t Greedy(const Buffer& x) { return s().GreedySample(x.data(), x.count(), x.dtype()); }
  int32_t TopK(const Buffer& x, float t, int64_t k, uint64_t seed) {
    return s().TopKSample(Config(t, k, 1.0f, seed), x.data(), x.count(), x.dtype());
  }
  int32_t TopP(const Buffer& x, float t, float p, uint64_t seed) {
    return s().TopPSample(Config(t, 0, p, seed), x.data(), x.count(), x.dtype());
  }
  SamplingSurface& s() { return backend_->Sampling(); }
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
};

void CheckGoldenRow(SamplingReference* self, const Buffer& x, const nlohmann::json& c, int* n) {
  const std::string dt(DTypeName(x.dtype()));
  EXPECT_EQ(self->s().GreedySample(x.data(), x.count(), x.dtype()), c["greedy"].get<int>())
      << dt << " vocab " << x.count();
  for (const auto& d : c["topk"]) {
    const SamplingConfig cfg = Config(d["t"].get<float>(), d["k"].get<int64_t>(), 1.0f,
                                      std::stoull(d["seed"].get<std::string>()));
    EXPECT_EQ(self->s().TopKSample(cfg, x.data(), x.count(), x.dtype()), d["token"].get<int>())
        << dt << " vocab " << x.count() << " " << d.dump();
    ++*n;
  }
  for (const auto& d : c["topp"]) {
    const SamplingConfig cfg = Config(d["t"].get<float>(), 0, d["p"].get<float>(),
                                      std::stoull(d["seed"].get<std::string>()));
    EXPECT_EQ(self->s().TopPSample(cfg, x.data(), x.count(), x.dtype()), d["token"].get<int>())
        << dt << " vocab " << x.count() << " " << d.dump();
    ++*n;
  }
}

TEST_F(SamplingReference, MatchesGoldenTokens) {
  const nlohmann::json golden = LoadGolden("sampling.json");
  int draws = 0;
  for (const auto& c : golden["cases"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    CheckGoldenRow(this, FromDoubles(dtype, c["logits"].get<std::vector<double>>()), c, &draws);
  }
  const auto big = golden["large"][0]["logits"].get<std::vector<double>>();
  ASSERT_GT(big.size(), 4096u);
  for (const auto& c : golden["large"]) {
    const DType dtype = *DTypeFromName(c["dtype"].get<std::string>());
    CheckGoldenRow(this, FromDoubles(dtype, big), c, &draws);
  }
  EXPECT_GE(draws, 400);
}

TEST_F(SamplingReference, GreedyTakesTheFirstMaximum) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_EQ(Greedy(FromDoubles(dtype, {1.0, 3.0, 2.0, 3.0})), 1);
    EXPECT_EQ(Greedy(FromDoubles(dtype, {-kInf, -5.0, -kInf})), 1);
    EXPECT_EQ(Greedy(FromDoubles(dtype, {-kInf, -kInf, -kInf})), 0) << "all -Inf: the first";
    EXPECT_EQ(Greedy(FromDoubles(dtype, {1.0, kInf, 7.0, kInf})), 1);
    EXPECT_EQ(Greedy(FromDoubles(dtype, {-0.0, 0.0, -1.0})), 0) << "-0.0 ties with +0.0";
    EXPECT_EQ(Greedy(FromDoubles(dtype, {5.0})), 0);
  }
  // 70000 overflows f16 to +Inf, so it beats 60000 there; in the other dtypes it is just larger.
  EXPECT_EQ(Greedy(FromDoubles(DType::Float16, {60000.0, 70000.0, 1e6})), 1);
  EXPECT_EQ(Greedy(FromDoubles(DType::Float32, {60000.0, 70000.0, 1e6})), 2);
}

TEST_F(SamplingReference, TemperatureZeroAndK1AndTinyPAreGreedy) {
  for (DType dtype : test::FloatDTypes()) {
    for (int64_t vocab : {1, 2, 7, 100, 4099}) {
      const Buffer x = test::RandomBuffer(dtype, vocab, 100 + static_cast<uint64_t>(vocab));
      const int32_t g = Greedy(x);
      for (uint64_t seed : {0ull, 1ull, 0xFFFFFFFF00000000ull}) {
        EXPECT_EQ(TopK(x, 0.0f, 0, seed), g);
        EXPECT_EQ(TopP(x, 0.0f, 1.0f, seed), g);
        EXPECT_EQ(TopK(x, 1.0f, 1, seed), g);
        EXPECT_EQ(TopK(x, 5.0f, 1, seed), g);
        EXPECT_EQ(TopP(x, 1.0f, 1e-7f, seed), g);
      }
    }
    // Ties at the top: the stable order puts the lowest index first, as greedy does.
    const Buffer tie = FromDoubles(dtype, {0.0, 2.0, 1.0, 2.0});
    EXPECT_EQ(TopK(tie, 1.0f, 1, 9), 1);
    EXPECT_EQ(TopP(tie, 1.0f, 0.01f, 9), 1);
  }
}

TEST_F(SamplingReference, DeterministicAndDTypeIndependent) {
  // Multiples of 1/8 are exact in every dtype, so the token may not depend on the dtype.
  std::vector<double> v;
  for (int i = 0; i < 300; ++i) v.push_back(static_cast<double>((i * 37) % 64 - 32) / 8.0);
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const int32_t k = TopK(FromDoubles(DType::Float32, v), 1.0f, 50, seed);
    const int32_t p = TopP(FromDoubles(DType::Float32, v), 1.0f, 0.8f, seed);
    for (DType dtype : test::FloatDTypes()) {
      const Buffer x = FromDoubles(dtype, v);
      EXPECT_EQ(TopK(x, 1.0f, 50, seed), k);
      EXPECT_EQ(TopK(x, 1.0f, 50, seed), k) << "same seed, same token";
      EXPECT_EQ(TopP(x, 1.0f, 0.8f, seed), p);
    }
  }
}

// Renormalised top-k (k > 0) or top-p (k == 0) distribution of softmax(x / t), in float64.
std::vector<double> TruncatedDistribution(const std::vector<double>& x, double t, size_t k,
                                          double top_p) {
  const double mx = *std::max_element(x.begin(), x.end());
  std::vector<double> p(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += p[i] = std::exp((x[i] - mx) / t);
  for (double& q : p) q /= sum;
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  size_t kept = k;
  if (k == 0) {
    double c = 0;
    for (kept = 0; kept < order.size() && c < top_p;) c += p[order[kept++]];
  }
  std::vector<double> q(x.size(), 0.0);
  double total = 0;
  for (size_t r = 0; r < kept; ++r) total += p[order[r]];
  for (size_t r = 0; r < kept; ++r) q[order[r]] = p[order[r]] / total;
  return q;
}

// Pearson chi-square of observed counts against q; tokens with q == 0 must never be drawn.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& q, int draws,
                 int* dof) {
  double chi = 0;
  *dof = -1;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the kept set";
      continue;
    }
    const double e = draws * q[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
    ++*dof;
  }
  return chi;
}

TEST_F(SamplingReference, FrequenciesMatchTheTruncatedDistribution) {
  const std::vector<double> logits = {0.5, 2.0, -1.0, 1.25, 1.75, 0.0, -3.0, 1.0};
  constexpr int kDraws = 20000;
  // Chi-square critical values at p = 1e-4 for 1..7 degrees of freedom.
  const double critical[] = {0, 15.14, 18.42, 21.11, 23.51, 25.74, 27.86, 29.88};
  struct Setting {
    float t;
    int64_t k;
    float p;
  };
  for (const Setting& st : {Setting{1.0f, 4, 1.0f}, Setting{0.7f, 0, 0.8f},
                            Setting{2.0f, 0, 1.0f}, Setting{1.5f, 6, 1.0f},
                            Setting{1.0f, 0, 0.5f}}) {
    const Buffer x = FromDoubles(DType::Float32, logits);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < kDraws; ++i) {
      const uint64_t seed = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
      const SamplingConfig cfg = Config(st.t, st.k, st.p, seed);
      const int32_t tok = st.k > 0 ? s().TopKSample(cfg, x.data(), x.count(), x.dtype())
                                   : s().TopPSample(cfg, x.data(), x.count(), x.dtype());
      ASSERT_GE(tok, 0);
      ASSERT_LT(tok, static_cast<int32_t>(logits.size()));
      ++counts[static_cast<size_t>(tok)];
    }
    const std::vector<double> q = TruncatedDistribution(
        logits, st.t, st.k > 0 ? static_cast<size_t>(st.k) : 0, static_cast<double>(st.p));
    int dof = 0;
    const double chi = ChiSquare(counts, q, kDraws, &dof);
    ASSERT_GE(dof, 1);
    EXPECT_LT(chi, critical[dof]) << "T " << st.t << " K " << st.k << " P " << st.p;
  }
}

TEST_F(SamplingReference, InfiniteLogits) {
  for (DType dtype : test::FloatDTypes()) {
    // -Inf logits have probability 0 and are never drawn.
    const Buffer masked = FromDoubles(dtype, {-kInf, 0.0, -kInf, 0.0, -kInf});
    // +Inf logits share the whole mass equally (the limit of the softmax).
    const Buffer inf = FromDoubles(dtype, {1.0, kInf, 3.0, kInf});
    std::map<int32_t, int> seen_masked, seen_inf;
    for (uint64_t seed = 0; seed < 400; ++seed) {
      ++seen_masked[TopK(masked, 1.0f, 0, seed)];
      ++seen_masked[TopP(masked, 1.0f, 1.0f, seed)];
      ++seen_inf[TopK(inf, 1.0f, 0, seed)];
      ++seen_inf[TopP(inf, 0.5f, 1.0f, seed)];
    }
    EXPECT_EQ(seen_masked.size(), 2u);
    EXPECT_GT(seen_masked[1], 300);
    EXPECT_GT(seen_masked[3], 300);
    EXPECT_EQ(seen_inf.size(), 2u);
    EXPECT_GT(seen_inf[1], 300);
    EXPECT_GT(seen_inf[3], 300);
    // TopP 0.5 over two equal +Inf entries keeps only the first.
    EXPECT_EQ(TopP(inf, 1.0f, 0.5f, 123), 1);
  }
}

TEST_F(SamplingReference, IgnoredConfigFieldsAreNotValidated) {
  const Buffer x = test::RandomBuffer(DType::Float32, 50, 3);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(s().TopKSample(Config(1.0f, 5, 0.0f, seed), x.data(), 50, DType::Float32),
              TopK(x, 1.0f, 5, seed))
        << "TopKSample ignores TopP";
    EXPECT_EQ(s().TopPSample(Config(1.0f, -3, 0.9f, seed), x.data(), 50, DType::Float32),
              TopP(x, 1.0f, 0.9f, seed))
        << "TopPSample ignores TopK";
  }
  // K larger than the vocabulary is the whole vocabulary, like K == 0.
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(TopK(x, 1.0f, 51, seed), TopK(x, 1.0f, 0, seed));
  }
}

TEST_F(SamplingReference, BadInputsThrow) {
  const Buffer x = test::RandomBuffer(DType::Float32, 16, 2);
  const void* px = x.data();
  const std::vector<std::string> ops = {"Sampling.GreedySample", "Sampling.TopKSample",
                                        "Sampling.TopPSample"};
  // Calls method m (0 greedy, 1 top-k, 2 top-p) with the given row and config.
  auto call = [this](int m, const void* p, int64_t n, DType dt, SamplingConfig c) {
    return [this, m, p, n, dt, c] {
      if (m == 0) s().GreedySample(p, n, dt);
      if (m == 1) s().TopKSample(c, p, n, dt);
      if (m == 2) s().TopPSample(c, p, n, dt);
    };
  };
  const SamplingConfig ok = Config(1.0f, 0, 1.0f, 1);
  const Buffer with_nan = FromDoubles(DType::BFloat16, {1.0, 2.0, std::nan(""), 0.0});
  const Buffer all_neg_inf = FromDoubles(DType::Float16, {-kInf, -kInf});
  for (int m = 0; m < 3; ++m) {
    const auto& op = ops[static_cast<size_t>(m)];
    for (DType bad : {DType::Int32, DType::Int8, DType::Float8E5M2, DType::Invalid}) {
      EXPECT_TRUE(ThrowsError(call(m, px, 16, bad, ok), ErrorCode::UnsupportedDType,
                              {op, "'dtype'"}));
      EXPECT_TRUE(ThrowsError(call(m, nullptr, 0, bad, ok), ErrorCode::UnsupportedDType,
                              {op, "'dtype'"}))
          << "dtype is checked before the size";
    }
    for (int64_t n : {int64_t{0}, int64_t{-1}}) {
      EXPECT_TRUE(ThrowsError(call(m, px, n, DType::Float32, ok), ErrorCode::InvalidArgument,
                              {op, "'vocabSize'", "> 0"}));
    }
    EXPECT_TRUE(ThrowsError(call(m, px, int64_t{1} << 31, DType::Float32, ok),
                            ErrorCode::InvalidArgument, {op, "'vocabSize'", "int32"}));
    EXPECT_TRUE(ThrowsError(call(m, nullptr, 16, DType::Float32, ok), ErrorCode::InvalidArgument,
                            {op, "'logits'", "null"}));
    EXPECT_TRUE(ThrowsError(call(m, with_nan.data(), 4, DType::BFloat16, ok),
                            ErrorCode::InvalidArgument, {op, "'logits'", "NaN at index 2"}));
    EXPECT_TRUE(ThrowsError(call(m, with_nan.data(), 4, DType::BFloat16, Config(0, 0, 1, 1)),
                            ErrorCode::InvalidArgument, {op, "'logits'", "NaN"}))
        << "NaN throws at temperature 0 too";
    if (m == 0) continue;
    for (float t : {-1.0f, -0.0001f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
      EXPECT_TRUE(ThrowsError(call(m, px, 16, DType::Float32, Config(t, 0, 1.0f, 1)),
                              ErrorCode::InvalidArgument, {op, "'config.Temperature'"}))
          << t;
    }
    EXPECT_TRUE(ThrowsError(call(m, all_neg_inf.data(), 2, DType::Float16, ok),
                            ErrorCode::InvalidArgument, {op, "'logits'", "all -Inf"}));
    EXPECT_EQ(s().TopKSample(Config(0, 0, 1, 1), all_neg_inf.data(), 2, DType::Float16), 0)
        << "temperature 0 is greedy, which is defined for all -Inf";
  }
  for (int64_t k : {int64_t{-1}, int64_t{-100}}) {
    EXPECT_TRUE(ThrowsError(call(1, px, 16, DType::Float32, Config(1, k, 1, 1)),
                            ErrorCode::InvalidArgument, {ops[1], "'config.TopK'"}));
  }
  for (float p : {0.0f, -0.5f, 1.0001f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity()}) {
    EXPECT_TRUE(ThrowsError(call(2, px, 16, DType::Float32, Config(1, 0, p, 1)),
                            ErrorCode::InvalidArgument, {ops[2], "'config.TopP'"}))
        << p;
  }
}

}  // namespace
}  // namespace backplane
