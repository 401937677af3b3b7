// ActiveInference reference kernels, called through the CPU backend. Oracles: SciPy golden data
// (tests/golden/gen_active_inference.py: rel_entr, xlogy, entr, softmax in log space), closed-form
// float64 math and hand-computed examples written here.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
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
using test::RandomBuffer;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

ActiveInferenceSurface& Ai() {
  static auto backend = cpu::CreateBackend();
  return backend->ActiveInference();
}

const nlohmann::json& Golden() {
  static const nlohmann::json golden = [] {
    std::ifstream in(test::GoldenPath("active_inference.json"));
    EXPECT_TRUE(in.good()) << "missing golden file; run tests/golden/gen_active_inference.py";
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

void ExpectError(const std::function<void()>& fn, ErrorCode code, const std::string& op,
                 const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << op << " did not throw (expected " << fragments.front() << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.op(), op) << e.what();
    for (const auto& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
    }
  }
}

// A random categorical distribution of n outcomes, rounded to dtype.
Buffer Distribution(DType dtype, int64_t n, uint64_t seed) {
  Buffer b = RandomBuffer(DType::Float64, n, seed, 0.01, 1.0);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += b.Get(i);
  std::vector<double> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = b.Get(i) / sum;
  return FromDoubles(dtype, p);
}

double FreeEnergyOracle(const Buffer& l, const Buffer& q, const Buffer& p) {
  double kl = 0.0, expected_log_lik = 0.0;
  for (int64_t i = 0; i < q.count(); ++i) {
    if (q.Get(i) == 0.0) continue;
    kl += q.Get(i) * std::log(q.Get(i) / p.Get(i));
    expected_log_lik += q.Get(i) * std::log(l.Get(i));
  }
  return kl - expected_log_lik;
}

// ---- FreeEnergy
// -------------------------------------------------------------------------------------

TEST(ActiveInferenceReference, FreeEnergyMatchesScipyGolden) {
  int checked = 0;
  for (const auto& c : Golden()["free_energy"]) {
    const DType dtype = DTypeOf(c);
    const Buffer l = FromDoubles(dtype, Doubles(c["likelihood"]));
    const Buffer q = FromDoubles(dtype, Doubles(c["posterior"]));
    const Buffer p = FromDoubles(dtype, Doubles(c["prior"]));
    Buffer out(dtype, 1);
    out.Poison();
    Ai().FreeEnergy(l.data(), q.data(), p.data(), out.data(), l.count(), dtype);
    EXPECT_TRUE(test::Close(out.Get(0), c["want"].get<double>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " n=" << l.count();
    EXPECT_TRUE(out.GuardIntact());
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

TEST(ActiveInferenceReference, FreeEnergyHandComputedAndIdentities) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    Buffer out(dtype, 1);
    // q = (1/2, 1/2), p = (1/4, 3/4), L = (1/2, 1/4):
    // KL = 1/2 ln 2 + 1/2 ln(2/3); E_q[ln L] = 1/2 ln(1/2) + 1/2 ln(1/4).
    const Buffer q = FromDoubles(dtype, {0.5, 0.5});
    const Buffer p = FromDoubles(dtype, {0.25, 0.75});
    const Buffer l = FromDoubles(dtype, {0.5, 0.25});
    const double kl = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
    const double ell = 0.5 * std::log(0.5) + 0.5 * std::log(0.25);
    Ai().FreeEnergy(l.data(), q.data(), p.data(), out.data(), 2, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), kl - ell, tol)) << DTypeName(dtype);
    // At the exact posterior q* = L p / Z, F = -ln Z (the surprise): here Z = 5/16.
    const Buffer exact = FromDoubles(dtype, {0.4, 0.6});  // (1/8, 3/16) / (5/16)
    Ai().FreeEnergy(l.data(), exact.data(), p.data(), out.data(), 2, dtype);
    const double want = dtype == DType::Float64 ? -std::log(5.0 / 16.0)
                                                : FreeEnergyOracle(l, exact, p);  // 0.4 rounded
    EXPECT_TRUE(test::Close(out.Get(0), want, tol));
    // 0 ln 0 = 0: an outcome with q = 0 contributes nothing, even where p = L = 0.
    const Buffer q0 = FromDoubles(dtype, {1.0, 0.0, -0.0});
    const Buffer p0 = FromDoubles(dtype, {0.5, 0.0, 0.5});
    const Buffer l0 = FromDoubles(dtype, {0.25, 0.0, 0.0});
    Ai().FreeEnergy(l0.data(), q0.data(), p0.data(), out.data(), 3, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), std::log(2.0) - std::log(0.25), tol));
    // q > 0 where the prior or the likelihood is 0: +Inf (no epsilon clamp).
    const Buffer qpos = FromDoubles(dtype, {0.5, 0.5});
    const Buffer pzero = FromDoubles(dtype, {1.0, 0.0});
    Ai().FreeEnergy(l.data(), qpos.data(), pzero.data(), out.data(), 2, dtype);
    EXPECT_EQ(out.Get(0), kInf);
    Ai().FreeEnergy(pzero.data(), qpos.data(), p.data(), out.data(), 2, dtype);
    EXPECT_EQ(out.Get(0), kInf);
    // count 0: the empty sum, 0, is written.
    out.Poison();
    Ai().FreeEnergy(nullptr, nullptr, nullptr, out.data(), 0, dtype);
    EXPECT_EQ(out.Get(0), 0.0);
    // Large: 5000 states against the float64 formula.
    const int64_t n = 5000;
    const Buffer bq = Distribution(dtype, n, 1), bp = Distribution(dtype, n, 2);
    const Buffer bl = RandomBuffer(dtype, n, 3, 0.05, 1.0);
    Ai().FreeEnergy(bl.data(), bq.data(), bp.data(), out.data(), n, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), FreeEnergyOracle(bl, bq, bp), tol)) << DTypeName(dtype);
  }
}

// ---- ExpectedFreeEnergy
// ---------------------------------------------------------------------------

TEST(ActiveInferenceReference, ExpectedFreeEnergyMatchesScipyGolden) {
  int checked = 0;
  for (const auto& c : Golden()["expected_free_energy"]) {
    const DType dtype = DTypeOf(c);
    const Buffer qo = FromDoubles(dtype, Doubles(c["predictedObs"]));
    const Buffer pref = FromDoubles(dtype, Doubles(c["preferredObs"]));
    const Buffer qs = FromDoubles(dtype, Doubles(c["predictedState"]));
    Buffer out(dtype, 1);
    out.Poison();
    Ai().ExpectedFreeEnergy(qo.data(), pref.data(), qs.data(), out.data(), qo.count(), qs.count(),
                            dtype);
    EXPECT_TRUE(test::Close(out.Get(0), c["want"].get<double>(), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " O=" << qo.count() << " S=" << qs.count();
    EXPECT_TRUE(out.GuardIntact());
    ++checked;
  }
  EXPECT_EQ(checked, 24);
}

TEST(ActiveInferenceReference, ExpectedFreeEnergyHandComputedAndRiskIdentity) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    Buffer out(dtype, 1);
    // Q(o) = (1/2, 1/2), C = (0.75, 0.25), Q(s) = (1/4, 3/4):
    // G = -(1/2 ln 0.75 + 1/2 ln 0.25) - H(Q(s)).
    const Buffer qo = FromDoubles(dtype, {0.5, 0.5});
    const Buffer pref = FromDoubles(dtype, {0.75, 0.25});
    const Buffer qs = FromDoubles(dtype, {0.25, 0.75});
    const double entropy = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));
    const double cost = -(0.5 * std::log(0.75) + 0.5 * std::log(0.25));
    Ai().ExpectedFreeEnergy(qo.data(), pref.data(), qs.data(), out.data(), 2, 2, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), cost - entropy, tol)) << DTypeName(dtype);
    // Risk + ambiguity with ambiguity H[Q(o)] - H[Q(s)]: when the outcome is the state
    // (Q(o) = Q(s)), the ambiguity is 0 and G is the risk KL(Q(o) || C).
    Ai().ExpectedFreeEnergy(qs.data(), pref.data(), qs.data(), out.data(), 2, 2, dtype);
    const double risk = 0.25 * std::log(0.25 / 0.75) + 0.75 * std::log(0.75 / 0.25);
    EXPECT_TRUE(test::Close(out.Get(0), risk, tol));
    // Preferences matched exactly and a certain state: G = H(Q(o)) + 0.
    const Buffer certain = FromDoubles(dtype, {0.0, 1.0, 0.0});
    Ai().ExpectedFreeEnergy(qo.data(), qo.data(), certain.data(), out.data(), 2, 3, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), std::log(2.0), tol));
    // Q(o) > 0 on an outcome with C = 0: +Inf.
    const Buffer never = FromDoubles(dtype, {1.0, 0.0});
    Ai().ExpectedFreeEnergy(qo.data(), never.data(), qs.data(), out.data(), 2, 2, dtype);
    EXPECT_EQ(out.Get(0), kInf);
    // ...but C = 0 where Q(o) = 0 is fine (0 ln 0 = 0).
    const Buffer onehot = FromDoubles(dtype, {1.0, 0.0});
    Ai().ExpectedFreeEnergy(onehot.data(), never.data(), nullptr, out.data(), 2, 0, dtype);
    EXPECT_EQ(out.Get(0), 0.0);
    // Empty sums are 0: obsCount 0 gives -H(Q(s)); both empty give 0 (written).
    Ai().ExpectedFreeEnergy(nullptr, nullptr, qs.data(), out.data(), 0, 2, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), -entropy, tol));
    out.Poison();
    Ai().ExpectedFreeEnergy(nullptr, nullptr, nullptr, out.data(), 0, 0, dtype);
    EXPECT_EQ(out.Get(0), 0.0);
    // Large: 4100 outcomes and 4097 states against the float64 formula.
    const Buffer bo = Distribution(dtype, 4100, 4), bc = Distribution(dtype, 4100, 5);
    const Buffer bs = Distribution(dtype, 4097, 6);
    double want = 0.0;
    for (int64_t i = 0; i < 4100; ++i) want -= bo.Get(i) * std::log(bc.Get(i));
    for (int64_t i = 0; i < 4097; ++i) want += bs.Get(i) * std::log(bs.Get(i));
    Ai().ExpectedFreeEnergy(bo.data(), bc.data(), bs.data(), out.data(), 4100, 4097, dtype);
    EXPECT_TRUE(test::Close(out.Get(0), want, tol)) << DTypeName(dtype);
  }
}

// ---- BeliefUpdate
// -----------------------------------------------------------------------------------

TEST(ActiveInferenceReference, BeliefUpdateMatchesLogSpaceGolden) {
  int checked = 0;
  for (const auto& c : Golden()["belief_update"]) {
    const DType dtype = DTypeOf(c);
    const Buffer l = FromDoubles(dtype, Doubles(c["likelihood"]));
    const Buffer p = FromDoubles(dtype, Doubles(c["prior"]));
    Buffer out(dtype, l.count());
    out.Poison();
    Ai().BeliefUpdate(l.data(), p.data(), out.data(), l.count(), dtype);
    EXPECT_TRUE(test::AllClose(out, Doubles(c["want"]), test::DefaultTolerance(dtype)))
        << DTypeName(dtype) << " n=" << l.count();
    EXPECT_TRUE(out.GuardIntact());
    // In place over the likelihood.
    Buffer inplace = l;
    Ai().BeliefUpdate(inplace.data(), p.data(), inplace.data(), l.count(), dtype);
    EXPECT_TRUE(test::AllClose(inplace, Doubles(c["want"]), test::DefaultTolerance(dtype)));
    ++checked;
  }
  EXPECT_EQ(checked, 24);
}

TEST(ActiveInferenceReference, BeliefUpdateClosedForms) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    // Bayes by hand: L = (1/2, 1/4), p = (1/4, 3/4) -> (1/8, 3/16) / (5/16) = (0.4, 0.6).
    const Buffer l = FromDoubles(dtype, {0.5, 0.25});
    const Buffer p = FromDoubles(dtype, {0.25, 0.75});
    Buffer out(dtype, 2);
    Ai().BeliefUpdate(l.data(), p.data(), out.data(), 2, dtype);
    EXPECT_TRUE(test::AllClose(out, {0.4, 0.6}, tol)) << DTypeName(dtype);
    // A likelihood that rules out all but one state gives a one-hot posterior.
    const Buffer rule = FromDoubles(dtype, {0.0, 0.0, 0.3});
    const Buffer prior = FromDoubles(dtype, {0.2, 0.5, 0.3});
    Buffer three(dtype, 3);
    Ai().BeliefUpdate(rule.data(), prior.data(), three.data(), 3, dtype);
    EXPECT_TRUE(test::AllClose(three, {0.0, 0.0, 1.0}, {0.0, 0.0}));
    // Unnormalised inputs: only ratios matter. Scales whose naive products overflow or underflow
    // float32 (float64 for f64 storage) still normalise correctly; f16 checks its range ends.
    const double big = dtype == DType::Float16 ? 6e4 : dtype == DType::Float64 ? 1e300 : 3e38;
    const double small = dtype == DType::Float16 ? 1e-7 : dtype == DType::Float64 ? 1e-300 : 1e-38;
    const Buffer lb = FromDoubles(dtype, {big, big});
    const Buffer pb = FromDoubles(dtype, {big, big / 4});
    Ai().BeliefUpdate(lb.data(), pb.data(), out.data(), 2, dtype);
    EXPECT_TRUE(test::AllClose(
        out, {pb.Get(0) / (pb.Get(0) + pb.Get(1)), pb.Get(1) / (pb.Get(0) + pb.Get(1))}, tol));
    const Buffer ls = FromDoubles(dtype, {small, small});
    const Buffer ps = FromDoubles(dtype, {small, small});
    Ai().BeliefUpdate(ls.data(), ps.data(), out.data(), 2, dtype);
    EXPECT_TRUE(test::AllClose(out, {0.5, 0.5}, tol));
    // Large: 5000 states, sums to 1, matches L p / sum(L p) in float64.
    const int64_t n = 5000;
    const Buffer bl = RandomBuffer(dtype, n, 7, 0.0, 1.0);
    const Buffer bp = Distribution(dtype, n, 8);
    double z = 0.0;
    for (int64_t i = 0; i < n; ++i) z += bl.Get(i) * bp.Get(i);
    std::vector<double> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = bl.Get(i) * bp.Get(i) / z;
    Buffer big_out(dtype, n);
    Ai().BeliefUpdate(bl.data(), bp.data(), big_out.data(), n, dtype);
    EXPECT_TRUE(test::AllClose(big_out, want, tol));
    // count 0: nothing written.
    Buffer none(dtype, 0);
    none.Poison();
    Ai().BeliefUpdate(nullptr, nullptr, none.data(), 0, dtype);
    EXPECT_TRUE(none.IsPoisoned());
  }
}

// ---- PrecisionWeight
// --------------------------------------------------------------------------------

TEST(ActiveInferenceReference, PrecisionWeightMatchesFloat64Oracle) {
  for (DType dtype : test::FloatDTypes()) {
    for (int64_t n : {0, 1, 2, 7, 33, 4099}) {
      const Buffer e = RandomBuffer(dtype, n, 40 + static_cast<uint64_t>(n));
      const Buffer w = RandomBuffer(dtype, n, 50 + static_cast<uint64_t>(n), 0.0, 10.0);
      std::vector<double> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = e.Get(i) * w.Get(i);
      Buffer out(dtype, n);
      out.Poison();
      Ai().PrecisionWeight(e.data(), w.data(), out.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype)));
      EXPECT_TRUE(out.GuardIntact());
      Buffer inplace = w;
      Ai().PrecisionWeight(e.data(), inplace.data(), inplace.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(inplace, want, test::DefaultTolerance(dtype)));
    }
    // Special values: errors propagate, precision 0 silences a finite error, -0 keeps its sign.
    const Buffer e = FromDoubles(dtype, {kInf, kInf, kNaN, -0.0, -2.0});
    const Buffer w = FromDoubles(dtype, {2.0, 0.0, 1.0, 1.0, 0.0});
    Buffer out(dtype, 5);
    Ai().PrecisionWeight(e.data(), w.data(), out.data(), 5, dtype);
    EXPECT_EQ(out.Get(0), kInf);
    EXPECT_TRUE(std::isnan(out.Get(1))) << "Inf * 0";
    EXPECT_TRUE(std::isnan(out.Get(2)));
    EXPECT_TRUE(out.Get(3) == 0.0 && std::signbit(out.Get(3)));
    EXPECT_TRUE(out.Get(4) == 0.0 && std::signbit(out.Get(4))) << "-2 * 0 = -0";
  }
  // float16 overflow rounds to Inf on store.
  const Buffer e16 = FromDoubles(DType::Float16, {300.0});
  Buffer out16(DType::Float16, 1);
  Ai().PrecisionWeight(e16.data(), e16.data(), out16.data(), 1, DType::Float16);
  EXPECT_EQ(out16.Get(0), kInf);
}

// ---- Bad input
// ------------------------------------------------------------------------------------

TEST(ActiveInferenceReference, BadInputThrowsAndLeavesOutputUntouched) {
  const DType f32 = DType::Float32;
  const Buffer good = FromDoubles(f32, {0.25, 0.75});
  const Buffer neg = FromDoubles(f32, {0.5, -0.25});
  const Buffer nan = FromDoubles(f32, {kNaN, 0.5});
  const Buffer inf = FromDoubles(f32, {0.5, kInf});
  const Buffer zero = FromDoubles(f32, {0.0, 0.0});
  Buffer out(f32, 2);
  out.Poison();
  const void* g = good.data();
  void* o = out.data();
  const auto invalid = ErrorCode::InvalidArgument;

  const std::string fe = "ActiveInference.FreeEnergy";
  auto free_energy = [](const void* l, const void* q, const void* p, void* out_, int64_t n,
                        DType d) { return [=] { Ai().FreeEnergy(l, q, p, out_, n, d); }; };
  for (DType bad : RejectedDTypes()) {
    ExpectError(free_energy(g, g, g, o, 2, bad), ErrorCode::UnsupportedDType, fe, {"'dtype'"});
    ExpectError(free_energy(g, g, g, o, 0, bad), ErrorCode::UnsupportedDType, fe, {"'dtype'"});
  }
  ExpectError(free_energy(g, g, g, o, -1, f32), invalid, fe, {"'count'", ">= 0"});
  ExpectError(free_energy(nullptr, g, g, o, 2, f32), invalid, fe, {"'likelihood'", "null"});
  ExpectError(free_energy(g, nullptr, g, o, 2, f32), invalid, fe, {"'posterior'", "null"});
  ExpectError(free_energy(g, g, nullptr, o, 2, f32), invalid, fe, {"'prior'", "null"});
  ExpectError(free_energy(g, g, g, nullptr, 2, f32), invalid, fe, {"'output'", "null"});
  ExpectError(free_energy(g, g, g, nullptr, 0, f32), invalid, fe, {"'output'", "null"});
  ExpectError(free_energy(neg.data(), g, g, o, 2, f32), invalid, fe,
              {"'likelihood'", ">= 0", "likelihood[1] = -0.25"});
  ExpectError(free_energy(g, neg.data(), g, o, 2, f32), invalid, fe, {"'posterior'", ">= 0"});
  ExpectError(free_energy(g, g, neg.data(), o, 2, f32), invalid, fe, {"'prior'", ">= 0"});
  ExpectError(free_energy(g, nan.data(), g, o, 2, f32), invalid, fe, {"'posterior'", "finite"});
  ExpectError(free_energy(g, g, inf.data(), o, 2, f32), invalid, fe, {"'prior'", "finite"});
  EXPECT_TRUE(out.IsPoisoned());

  const std::string efe = "ActiveInference.ExpectedFreeEnergy";
  auto expected = [](const void* qo, const void* c, const void* qs, void* out_, int64_t no,
                     int64_t ns, DType d) {
    return [=] { Ai().ExpectedFreeEnergy(qo, c, qs, out_, no, ns, d); };
  };
  for (DType bad : RejectedDTypes()) {
    ExpectError(expected(g, g, g, o, 2, 2, bad), ErrorCode::UnsupportedDType, efe, {"'dtype'"});
    ExpectError(expected(g, g, g, o, 0, 0, bad), ErrorCode::UnsupportedDType, efe, {"'dtype'"});
  }
  ExpectError(expected(g, g, g, o, -1, 2, f32), invalid, efe, {"'obsCount'"});
  ExpectError(expected(g, g, g, o, 2, -1, f32), invalid, efe, {"'stateCount'"});
  ExpectError(expected(nullptr, g, g, o, 2, 2, f32), invalid, efe, {"'predictedObs'", "null"});
  ExpectError(expected(g, nullptr, g, o, 2, 2, f32), invalid, efe, {"'preferredObs'", "null"});
  ExpectError(expected(g, g, nullptr, o, 2, 2, f32), invalid, efe, {"'predictedState'", "null"});
  ExpectError(expected(g, g, g, nullptr, 2, 2, f32), invalid, efe, {"'output'", "null"});
  ExpectError(expected(neg.data(), g, g, o, 2, 2, f32), invalid, efe, {"'predictedObs'", ">= 0"});
  ExpectError(expected(g, neg.data(), g, o, 2, 2, f32), invalid, efe, {"'preferredObs'"});
  ExpectError(expected(g, g, neg.data(), o, 2, 2, f32), invalid, efe, {"'predictedState'"});
  ExpectError(expected(g, nan.data(), g, o, 2, 2, f32), invalid, efe, {"'preferredObs'", "finite"});
  ExpectError(expected(g, g, inf.data(), o, 2, 2, f32), invalid, efe,
              {"'predictedState'", "finite"});
  EXPECT_TRUE(out.IsPoisoned());

  const std::string bu = "ActiveInference.BeliefUpdate";
  auto update = [](const void* l, const void* p, void* out_, int64_t n, DType d) {
    return [=] { Ai().BeliefUpdate(l, p, out_, n, d); };
  };
  for (DType bad : RejectedDTypes()) {
    ExpectError(update(g, g, o, 2, bad), ErrorCode::UnsupportedDType, bu, {"'dtype'"});
    ExpectError(update(g, g, o, 0, bad), ErrorCode::UnsupportedDType, bu, {"'dtype'"});
  }
  ExpectError(update(g, g, o, -2, f32), invalid, bu, {"'count'"});
  ExpectError(update(nullptr, g, o, 2, f32), invalid, bu, {"'likelihood'", "null"});
  ExpectError(update(g, nullptr, o, 2, f32), invalid, bu, {"'prior'", "null"});
  ExpectError(update(g, g, nullptr, 2, f32), invalid, bu, {"'output'", "null"});
  ExpectError(update(neg.data(), g, o, 2, f32), invalid, bu, {"'likelihood'", ">= 0"});
  ExpectError(update(g, neg.data(), o, 2, f32), invalid, bu, {"'prior'", ">= 0"});
  ExpectError(update(nan.data(), g, o, 2, f32), invalid, bu, {"'likelihood'", "finite"});
  ExpectError(update(g, inf.data(), o, 2, f32), invalid, bu, {"'prior'", "finite"});
  ExpectError(update(zero.data(), g, o, 2, f32), invalid, bu, {"'likelihood'", "evidence"});
  // Disjoint supports: every product is 0.
  const Buffer left_only = FromDoubles(f32, {1.0, 0.0});
  const Buffer right_only = FromDoubles(f32, {0.0, 1.0});
  ExpectError(update(left_only.data(), right_only.data(), o, 2, f32), invalid, bu, {"evidence"});
  EXPECT_TRUE(out.IsPoisoned());

  const std::string pw = "ActiveInference.PrecisionWeight";
  auto weight = [](const void* e, const void* w, void* out_, int64_t n, DType d) {
    return [=] { Ai().PrecisionWeight(e, w, out_, n, d); };
  };
  for (DType bad : RejectedDTypes()) {
    ExpectError(weight(g, g, o, 2, bad), ErrorCode::UnsupportedDType, pw, {"'dtype'"});
    ExpectError(weight(g, g, o, 0, bad), ErrorCode::UnsupportedDType, pw, {"'dtype'"});
  }
  ExpectError(weight(g, g, o, -1, f32), invalid, pw, {"'count'"});
  ExpectError(weight(nullptr, g, o, 2, f32), invalid, pw, {"'errors'", "null"});
  ExpectError(weight(g, nullptr, o, 2, f32), invalid, pw, {"'precision'", "null"});
  ExpectError(weight(g, g, nullptr, 2, f32), invalid, pw, {"'output'", "null"});
  ExpectError(weight(g, neg.data(), o, 2, f32), invalid, pw, {"'precision'", ">= 0"});
  ExpectError(weight(g, nan.data(), o, 2, f32), invalid, pw, {"'precision'", "finite"});
  ExpectError(weight(g, inf.data(), o, 2, f32), invalid, pw, {"'precision'", "finite"});
  EXPECT_TRUE(out.IsPoisoned());
}

}  // namespace
}  // namespace backplane
