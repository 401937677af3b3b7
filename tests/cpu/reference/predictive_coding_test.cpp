// PredictiveCoding reference kernels, called through the CPU backend. Oracles: NumPy float64 golden
// data (tests/golden/gen_predictive_coding.py), closed-form float64 math written here, and the
// defining property of both updates: a small step decreases the squared prediction error.
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

PredictiveCodingSurface& Pc() {
  static auto backend = cpu::CreateBackend();
  return backend->PredictiveCoding();
}

const nlohmann::json& Golden() {
  static const nlohmann::json golden = [] {
    std::ifstream in(test::GoldenPath("predictive_coding.json"));
    EXPECT_TRUE(in.good()) << "missing golden file; run tests/golden/gen_predictive_coding.py";
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

// Float64 oracles on the stored values.
std::vector<double> MatVec(const Buffer& w, const Buffer& s, int64_t out_dim, int64_t in_dim) {
  std::vector<double> y(static_cast<size_t>(out_dim), 0.0);
  for (int64_t o = 0; o < out_dim; ++o) {
    for (int64_t i = 0; i < in_dim; ++i)
      y[static_cast<size_t>(o)] += w.Get(o * in_dim + i) * s.Get(i);
  }
  return y;
}

double SquaredError(const Buffer& obs, const Buffer& w, const Buffer& s, int64_t out_dim,
                    int64_t in_dim) {
  const std::vector<double> y = MatVec(w, s, out_dim, in_dim);
  double sum = 0.0;
  for (int64_t o = 0; o < out_dim; ++o) {
    const double d = obs.Get(o) - y[static_cast<size_t>(o)];
    sum += d * d;
  }
  return sum;
}

// ---- Golden
// ---------------------------------------------------------------------------------------

TEST(PredictiveCodingReference, MatchesNumpyGolden) {
  int checked = 0;
  for (const auto& c : Golden()["cases"]) {
    const DType dtype = DTypeOf(c);
    const auto tol = test::DefaultTolerance(dtype);
    const int64_t out_dim = c["outDim"].get<int64_t>(), in_dim = c["inDim"].get<int64_t>();
    const PredictiveCodingConfig config{c["lr"].get<float>()};
    const Buffer w = FromDoubles(dtype, Doubles(c["weights"]));
    const Buffer s = FromDoubles(dtype, Doubles(c["representation"]));
    const Buffer e = FromDoubles(dtype, Doubles(c["error"]));
    Buffer pred(dtype, out_dim);
    pred.Poison();
    Pc().Prediction(w.data(), s.data(), pred.data(), out_dim, in_dim, dtype);
    EXPECT_TRUE(test::AllClose(pred, Doubles(c["prediction"]), tol))
        << DTypeName(dtype) << " " << out_dim << "x" << in_dim;
    EXPECT_TRUE(pred.GuardIntact());
    Buffer rep(dtype, in_dim);
    rep.Poison();
    Pc().UpdateRepresentation(config, w.data(), s.data(), e.data(), rep.data(), out_dim, in_dim,
                              dtype);
    EXPECT_TRUE(test::AllClose(rep, Doubles(c["representation_update"]), tol))
        << DTypeName(dtype) << " " << out_dim << "x" << in_dim << " lr " << config.LearningRate;
    EXPECT_TRUE(rep.GuardIntact());
    Buffer weights(dtype, out_dim * in_dim);
    weights.Poison();
    Pc().UpdateWeights(config, w.data(), s.data(), e.data(), weights.data(), out_dim, in_dim,
                       dtype);
    EXPECT_TRUE(test::AllClose(weights, Doubles(c["weights_update"]), tol))
        << DTypeName(dtype) << " " << out_dim << "x" << in_dim << " lr " << config.LearningRate;
    EXPECT_TRUE(weights.GuardIntact());
    ++checked;
  }
  EXPECT_EQ(checked, 28);
}

// ---- Closed forms, large sizes, aliasing
// ----------------------------------------------------------

TEST(PredictiveCodingReference, LargeSizesMatchFloat64Oracle) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    const int64_t out_dim = 65, in_dim = 70;  // 4550 weights
    const Buffer w = RandomBuffer(dtype, out_dim * in_dim, 1, -1.0, 1.0);
    const Buffer s = RandomBuffer(dtype, in_dim, 2, -1.0, 1.0);
    const Buffer e = RandomBuffer(dtype, out_dim, 3, -1.0, 1.0);
    const float lr = 0.0625f;
    Buffer pred(dtype, out_dim);
    Pc().Prediction(w.data(), s.data(), pred.data(), out_dim, in_dim, dtype);
    EXPECT_TRUE(test::AllClose(pred, MatVec(w, s, out_dim, in_dim), tol)) << DTypeName(dtype);

    std::vector<double> want_rep(static_cast<size_t>(in_dim));
    for (int64_t i = 0; i < in_dim; ++i) {
      double g = 0.0;
      for (int64_t o = 0; o < out_dim; ++o) g += w.Get(o * in_dim + i) * e.Get(o);
      want_rep[static_cast<size_t>(i)] = s.Get(i) + lr * g;
    }
    Buffer rep(dtype, in_dim);
    Pc().UpdateRepresentation({lr}, w.data(), s.data(), e.data(), rep.data(), out_dim, in_dim,
                              dtype);
    EXPECT_TRUE(test::AllClose(rep, want_rep, tol));

    std::vector<double> want_w(static_cast<size_t>(out_dim * in_dim));
    for (int64_t o = 0; o < out_dim; ++o) {
      for (int64_t i = 0; i < in_dim; ++i) {
        want_w[static_cast<size_t>(o * in_dim + i)] =
            w.Get(o * in_dim + i) + lr * e.Get(o) * s.Get(i);
      }
    }
    Buffer nw(dtype, out_dim * in_dim);
    Pc().UpdateWeights({lr}, w.data(), s.data(), e.data(), nw.data(), out_dim, in_dim, dtype);
    EXPECT_TRUE(test::AllClose(nw, want_w, tol));

    // PredictionError: observed - predicted, sizes 0, 1, odd and over 4096.
    for (int64_t n : {0, 1, 7, 4099}) {
      const Buffer a = RandomBuffer(dtype, n, 10 + static_cast<uint64_t>(n));
      const Buffer b = RandomBuffer(dtype, n, 20 + static_cast<uint64_t>(n));
      std::vector<double> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = a.Get(i) - b.Get(i);
      Buffer out(dtype, n);
      out.Poison();
      Pc().PredictionError(a.data(), b.data(), out.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, want, tol));
      EXPECT_TRUE(out.GuardIntact());
      Buffer inplace = a;
      Pc().PredictionError(inplace.data(), b.data(), inplace.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(inplace, want, tol));
    }
  }
}

TEST(PredictiveCodingReference, OutputsMayAliasInputs) {
  for (DType dtype : test::FloatDTypes()) {
    const auto tol = test::DefaultTolerance(dtype);
    const int64_t n = 9;  // square W so that a prediction can overwrite s
    const Buffer w = RandomBuffer(dtype, n * n, 4, -1.0, 1.0);
    const Buffer s = RandomBuffer(dtype, n, 5, -1.0, 1.0);
    const Buffer e = RandomBuffer(dtype, n, 6, -1.0, 1.0);
    Buffer want(dtype, n);
    Pc().Prediction(w.data(), s.data(), want.data(), n, n, dtype);
    Buffer s_alias = s;
    Pc().Prediction(w.data(), s_alias.data(), s_alias.data(), n, n, dtype);
    EXPECT_TRUE(test::AllClose(s_alias, want.ToDoubles(), {0.0, 0.0})) << DTypeName(dtype);

    Buffer rep(dtype, n);
    Pc().UpdateRepresentation({0.1f}, w.data(), s.data(), e.data(), rep.data(), n, n, dtype);
    s_alias = s;
    Pc().UpdateRepresentation({0.1f}, w.data(), s_alias.data(), e.data(), s_alias.data(), n, n,
                              dtype);
    EXPECT_TRUE(test::AllClose(s_alias, rep.ToDoubles(), {0.0, 0.0}));
    Buffer e_alias = e;  // output over the error vector
    Pc().UpdateRepresentation({0.1f}, w.data(), s.data(), e_alias.data(), e_alias.data(), n, n,
                              dtype);
    EXPECT_TRUE(test::AllClose(e_alias, rep.ToDoubles(), {0.0, 0.0}));

    Buffer nw(dtype, n * n);
    Pc().UpdateWeights({0.1f}, w.data(), s.data(), e.data(), nw.data(), n, n, dtype);
    Buffer w_alias = w;
    Pc().UpdateWeights({0.1f}, w_alias.data(), s.data(), e.data(), w_alias.data(), n, n, dtype);
    EXPECT_TRUE(test::AllClose(w_alias, nw.ToDoubles(), {0.0, 0.0}));
    (void)tol;
  }
}

TEST(PredictiveCodingReference, LearningRateZeroNegativeAndSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer w = RandomBuffer(dtype, 12, 7, -1.0, 1.0);
    const Buffer s = RandomBuffer(dtype, 4, 8, -1.0, 1.0);
    const Buffer e = RandomBuffer(dtype, 3, 9, -1.0, 1.0);
    // lr = 0 copies exactly; outDim = 0 (no error terms) copies s.
    Buffer rep(dtype, 4);
    Pc().UpdateRepresentation({0.0f}, w.data(), s.data(), e.data(), rep.data(), 3, 4, dtype);
    EXPECT_TRUE(test::AllClose(rep, s.ToDoubles(), {0.0, 0.0}));
    Pc().UpdateRepresentation({0.5f}, nullptr, s.data(), nullptr, rep.data(), 0, 4, dtype);
    EXPECT_TRUE(test::AllClose(rep, s.ToDoubles(), {0.0, 0.0}));
    Buffer nw(dtype, 12);
    Pc().UpdateWeights({0.0f}, w.data(), s.data(), e.data(), nw.data(), 3, 4, dtype);
    EXPECT_TRUE(test::AllClose(nw, w.ToDoubles(), {0.0, 0.0}));
    // A negative rate is a step of the opposite sign (gradient ascent), not an error.
    Buffer up(dtype, 12), down(dtype, 12);
    Pc().UpdateWeights({0.25f}, w.data(), s.data(), e.data(), up.data(), 3, 4, dtype);
    Pc().UpdateWeights({-0.25f}, w.data(), s.data(), e.data(), down.data(), 3, 4, dtype);
    for (int64_t k = 0; k < 12; ++k) {
      EXPECT_TRUE(test::Close(up.Get(k) + down.Get(k), 2 * w.Get(k), {4e-2, 0.0})) << k;
    }
    // inDim = 0: the prediction is the empty sum, zeros are written.
    Buffer pred(dtype, 3);
    pred.Poison();
    Pc().Prediction(nullptr, nullptr, pred.data(), 3, 0, dtype);
    EXPECT_TRUE(test::AllClose(pred, {0.0, 0.0, 0.0}, {0.0, 0.0}));
    // NaN and Inf propagate IEEE-style; -0 - +0 = -0.
    const Buffer wn = FromDoubles(dtype, {1.0, kNaN, 2.0, 3.0, kInf, 1.0});
    const Buffer sn = FromDoubles(dtype, {1.0, 1.0});
    Pc().Prediction(wn.data(), sn.data(), pred.data(), 3, 2, dtype);
    EXPECT_TRUE(std::isnan(pred.Get(0)));
    EXPECT_EQ(pred.Get(1), 5.0);
    EXPECT_EQ(pred.Get(2), kInf);
    const Buffer a = FromDoubles(dtype, {-0.0, kInf, 1.0});
    const Buffer b = FromDoubles(dtype, {0.0, kInf, kNaN});
    Buffer diff(dtype, 3);
    Pc().PredictionError(a.data(), b.data(), diff.data(), 3, dtype);
    EXPECT_TRUE(diff.Get(0) == 0.0 && std::signbit(diff.Get(0)));
    EXPECT_TRUE(std::isnan(diff.Get(1)));
    EXPECT_TRUE(std::isnan(diff.Get(2)));
  }
  // float16 overflow of a prediction rounds to Inf on store.
  const Buffer w16 = FromDoubles(DType::Float16, {300.0, 300.0});
  const Buffer s16 = FromDoubles(DType::Float16, {200.0, 200.0});
  Buffer p16(DType::Float16, 1);
  Pc().Prediction(w16.data(), s16.data(), p16.data(), 1, 2, DType::Float16);
  EXPECT_EQ(p16.Get(0), kInf);
}

// ---- Gradient descent
// ------------------------------------------------------------------------------

// One inference step and one learning step with a small rate both decrease |o - W s|^2: the full
// loop Prediction -> PredictionError -> Update* through the backend.
TEST(PredictiveCodingReference, OneUpdateDecreasesSquaredPredictionError) {
  for (DType dtype : test::FloatDTypes()) {
    const int64_t out_dim = 12, in_dim = 7;
    const Buffer w = RandomBuffer(dtype, out_dim * in_dim, 21, -1.0, 1.0);
    const Buffer s = RandomBuffer(dtype, in_dim, 22, -1.0, 1.0);
    const Buffer obs = RandomBuffer(dtype, out_dim, 23, -2.0, 2.0);
    Buffer pred(dtype, out_dim), err(dtype, out_dim);
    Pc().Prediction(w.data(), s.data(), pred.data(), out_dim, in_dim, dtype);
    Pc().PredictionError(obs.data(), pred.data(), err.data(), out_dim, dtype);
    const double before = SquaredError(obs, w, s, out_dim, in_dim);

    // A safe step for both problems: lr < 2 / L with L bounded by |W|_F^2 resp. |s|^2.
    double frob = 0.0, norm_s = 0.0;
    for (int64_t k = 0; k < out_dim * in_dim; ++k) frob += w.Get(k) * w.Get(k);
    for (int64_t i = 0; i < in_dim; ++i) norm_s += s.Get(i) * s.Get(i);

    const PredictiveCodingConfig rep_config{static_cast<float>(0.5 / frob)};
    Buffer s_new(dtype, in_dim);
    Pc().UpdateRepresentation(rep_config, w.data(), s.data(), err.data(), s_new.data(), out_dim,
                              in_dim, dtype);
    const double after_inference = SquaredError(obs, w, s_new, out_dim, in_dim);
    EXPECT_LT(after_inference, before * 0.99) << DTypeName(dtype);

    const PredictiveCodingConfig w_config{static_cast<float>(0.5 / norm_s)};
    Buffer w_new(dtype, out_dim * in_dim);
    Pc().UpdateWeights(w_config, w.data(), s.data(), err.data(), w_new.data(), out_dim, in_dim,
                       dtype);
    const double after_learning = SquaredError(obs, w_new, s, out_dim, in_dim);
    EXPECT_LT(after_learning, before * 0.99) << DTypeName(dtype);
    // For the weights the decrease is exact in closed form: the error shrinks by (1 - lr |s|^2).
    if (dtype == DType::Float64) {
      const double f = 1.0 - w_config.LearningRate * norm_s;
      EXPECT_TRUE(test::Close(after_learning, before * f * f, {1e-10, 1e-10}));
    }
  }
}

// ---- Bad input
// ------------------------------------------------------------------------------------

TEST(PredictiveCodingReference, BadInputThrowsAndLeavesOutputUntouched) {
  const DType f32 = DType::Float32;
  const Buffer w = RandomBuffer(f32, 6, 1);
  const Buffer s = RandomBuffer(f32, 3, 2);
  const Buffer e = RandomBuffer(f32, 2, 3);
  Buffer out(f32, 6);
  out.Poison();
  void* o = out.data();
  const auto invalid = ErrorCode::InvalidArgument;
  const int64_t huge = int64_t{1} << 32;

  const std::string pr = "PredictiveCoding.Prediction";
  auto prediction = [](const void* w_, const void* s_, void* o_, int64_t od, int64_t id, DType d) {
    return [=] { Pc().Prediction(w_, s_, o_, od, id, d); };
  };
  for (DType bad : RejectedDTypes()) {
    ExpectError(prediction(w.data(), s.data(), o, 2, 3, bad), ErrorCode::UnsupportedDType, pr,
                {"'dtype'"});
    ExpectError(prediction(w.data(), s.data(), o, 0, 0, bad), ErrorCode::UnsupportedDType, pr,
                {"'dtype'"});
  }
  ExpectError(prediction(w.data(), s.data(), o, -2, 3, f32), invalid, pr, {"'outDim'", ">= 0"});
  ExpectError(prediction(w.data(), s.data(), o, 2, -3, f32), invalid, pr, {"'inDim'", ">= 0"});
  ExpectError(prediction(w.data(), s.data(), o, huge, huge, f32), invalid, pr, {"'inDim'", "fits"});
  ExpectError(prediction(nullptr, s.data(), o, 2, 3, f32), invalid, pr, {"'weights'", "null"});
  ExpectError(prediction(w.data(), nullptr, o, 2, 3, f32), invalid, pr,
              {"'representation'", "null"});
  ExpectError(prediction(w.data(), s.data(), nullptr, 2, 3, f32), invalid, pr,
              {"'output'", "null"});
  EXPECT_TRUE(out.IsPoisoned());

  const std::string pe = "PredictiveCoding.PredictionError";
  auto error = [](const void* a, const void* b, void* o_, int64_t n, DType d) {
    return [=] { Pc().PredictionError(a, b, o_, n, d); };
  };
  for (DType bad : RejectedDTypes()) {
    ExpectError(error(s.data(), s.data(), o, 3, bad), ErrorCode::UnsupportedDType, pe, {"'dtype'"});
    ExpectError(error(s.data(), s.data(), o, 0, bad), ErrorCode::UnsupportedDType, pe, {"'dtype'"});
  }
  ExpectError(error(s.data(), s.data(), o, -1, f32), invalid, pe, {"'count'"});
  ExpectError(error(nullptr, s.data(), o, 3, f32), invalid, pe, {"'observed'", "null"});
  ExpectError(error(s.data(), nullptr, o, 3, f32), invalid, pe, {"'predicted'", "null"});
  ExpectError(error(s.data(), s.data(), nullptr, 3, f32), invalid, pe, {"'output'", "null"});
  EXPECT_TRUE(out.IsPoisoned());

  using UpdateFn =
      void (PredictiveCodingSurface::*)(const PredictiveCodingConfig&, const void*, const void*,
                                        const void*, void*, int64_t, int64_t, DType);
  const std::pair<std::string, UpdateFn> updates[] = {
      {"PredictiveCoding.UpdateRepresentation", &PredictiveCodingSurface::UpdateRepresentation},
      {"PredictiveCoding.UpdateWeights", &PredictiveCodingSurface::UpdateWeights}};
  for (const auto& [op, fn] : updates) {
    auto update = [fn = fn](float lr, const void* w_, const void* s_, const void* e_, void* o_,
                            int64_t od, int64_t id, DType d) {
      return [=] { (Pc().*fn)(PredictiveCodingConfig{lr}, w_, s_, e_, o_, od, id, d); };
    };
    const void* wv = w.data();
    const void* sv = s.data();
    const void* ev = e.data();
    for (DType bad : RejectedDTypes()) {
      ExpectError(update(0.1f, wv, sv, ev, o, 2, 3, bad), ErrorCode::UnsupportedDType, op,
                  {"'dtype'"});
      ExpectError(update(0.1f, wv, sv, ev, o, 0, 0, bad), ErrorCode::UnsupportedDType, op,
                  {"'dtype'"});
    }
    ExpectError(update(0.1f, wv, sv, ev, o, -1, 3, f32), invalid, op, {"'outDim'"});
    ExpectError(update(0.1f, wv, sv, ev, o, 2, -1, f32), invalid, op, {"'inDim'"});
    ExpectError(update(0.1f, wv, sv, ev, o, huge, huge, f32), invalid, op, {"fits"});
    ExpectError(update(0.1f, nullptr, sv, ev, o, 2, 3, f32), invalid, op, {"'weights'", "null"});
    ExpectError(update(0.1f, wv, nullptr, ev, o, 2, 3, f32), invalid, op,
                {"'representation'", "null"});
    ExpectError(update(0.1f, wv, sv, nullptr, o, 2, 3, f32), invalid, op,
                {"'predictionError'", "null"});
    ExpectError(update(0.1f, wv, sv, ev, nullptr, 2, 3, f32), invalid, op, {"'output'", "null"});
    ExpectError(update(NAN, wv, sv, ev, o, 2, 3, f32), invalid, op,
                {"'config.LearningRate'", "finite"});
    ExpectError(update(INFINITY, wv, sv, ev, o, 2, 3, f32), invalid, op,
                {"'config.LearningRate'", "finite"});
    ExpectError(update(-INFINITY, wv, sv, ev, o, 2, 3, f32), invalid, op,
                {"'config.LearningRate'"});
    EXPECT_TRUE(out.IsPoisoned()) << op;
  }
}

}  // namespace
}  // namespace backplane
