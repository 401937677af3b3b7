// Optimizer reference kernels, called through the CPU backend. Oracles:
//  * golden trajectories (tests/golden/gen_optimizer.py): torch.optim 1.13 for Adam, AdamW,
//    Adamax, SGD, RMSprop, Adagrad, Adadelta and LBFGS; the papers' update rules written with torch
//    tensor ops for Lion, LARS, LAMB; the spec's rule for Hebbian. Gradients are recomputed here
//    in float64 from the same problem data (same summation order as the script);
//  * convergence of L-BFGS on the Rosenbrock function;
//  * closed-form known values for special cases (NaN, Inf, -0.0, f16 overflow, norm rescaling).
//
// Tolerances (|got - want| <= abs + rel |want|, at steps 1, 10 and 50):
//  f64: DefaultTolerance (1e-10, 1e-10); observed error <= 1.2e-5 of the bound.
//  f32: abs 1e-5, rel 1e-5 after up to 50 steps: torch's vectorised kernels may fuse
//       multiply-adds and order operations differently, and those ulps compound along the
//       trajectory; observed error <= 0.1 of the bound.
//  f16 / bf16 against the torch trajectory run with Backplane's storage contract (f32 compute
//       and state, params rounded after every step): abs 2e-3 / 1.6e-2, rel 4e-3 / 3.2e-2, about
//       four ulps of the storage format, because an f32-ulp difference can flip one rounding of a
//       stored parameter and that ulp is then carried along; observed: bit-identical.
//  f16 / bf16 against the f32 trajectory: 1e-2 / 8e-2 times (1 + |want|), about 20 ulps of the
//       storage format (2^-11 / 2^-8) accumulated over 50 rounded steps (observed maxima 5.8e-3
//       and 4.6e-2, both for Lion, whose sign update amplifies rounding).
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
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
const double kNaN = std::numeric_limits<double>::quiet_NaN();

OptimizerSurface& Opt() {
  static auto backend = cpu::CreateBackend();
  return backend->Optimizer();
}

const json& LoadGolden(const std::string& name) {
  static std::map<std::string, json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::ifstream in(test::GoldenPath(name));
    EXPECT_TRUE(in.good()) << "missing golden file " << name
                           << "; run tests/golden/gen_optimizer.py";
    it = cache.emplace(name, json::parse(in)).first;
  }
  return it->second;
}

DType DTypeOf(const json& j) { return *DTypeFromName(j.get<std::string>()); }
std::vector<double> Doubles(const json& j) { return j.get<std::vector<double>>(); }
DType StateDType(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

const std::vector<std::string>& Methods() {
  static const std::vector<std::string> all = {"Adam", "AdamW",   "Adamax",   "SGD",
                                               "Lion", "RMSprop", "Hebbian",  "LARS",
                                               "LAMB", "Adagrad", "Adadelta", "LBFGS"};
  return all;
}

// ---- One call of any method ---------------------------------------------------------------------

// Every argument of every optimizer method; Invoke passes the ones `method` takes. s0..s2 are the
// method's state buffers in signature order (m, v / momentumBuffer / squareAvg, gradAvg,
// momentumBuffer / sum / squareAvg, accDelta).
struct Args {
  std::string method;
  DType dtype = DType::Float32;
  int64_t count = 0;
  void* params = nullptr;
  const void* grads = nullptr;
  void* s0 = nullptr;
  void* s1 = nullptr;
  void* s2 = nullptr;
  int64_t* step = nullptr;
  AdamConfig adam;
  SGDConfig sgd;
  LionConfig lion;
  RMSpropConfig rmsprop;
  HebbianConfig hebbian;
  LARSConfig lars;
  AdagradConfig adagrad;
  AdadeltaConfig adadelta;
  LBFGSConfig lbfgs;
  LBFGSState lbfgsState;
};

void Invoke(const Args& a) {
  OptimizerSurface& o = Opt();
  const std::string& m = a.method;
  if (m == "Adam") return o.Adam(a.adam, a.params, a.grads, a.s0, a.s1, a.step, a.count, a.dtype);
  if (m == "AdamW") return o.AdamW(a.adam, a.params, a.grads, a.s0, a.s1, a.step, a.count, a.dtype);
  if (m == "Adamax") {
    return o.Adamax(a.adam, a.params, a.grads, a.s0, a.s1, a.step, a.count, a.dtype);
  }
  if (m == "LAMB") return o.LAMB(a.adam, a.params, a.grads, a.s0, a.s1, a.step, a.count, a.dtype);
  if (m == "SGD") return o.SGD(a.sgd, a.params, a.grads, a.s0, a.step, a.count, a.dtype);
  if (m == "Lion") return o.Lion(a.lion, a.params, a.grads, a.s0, a.step, a.count, a.dtype);
  if (m == "RMSprop") {
    return o.RMSprop(a.rmsprop, a.params, a.grads, a.s0, a.s1, a.s2, a.step, a.count, a.dtype);
  }
  if (m == "Hebbian") return o.Hebbian(a.hebbian, a.params, a.grads, a.count, a.dtype);
  if (m == "LARS") return o.LARS(a.lars, a.params, a.grads, a.s0, a.step, a.count, a.dtype);
  if (m == "Adagrad")
    return o.Adagrad(a.adagrad, a.params, a.grads, a.s0, a.step, a.count, a.dtype);
  if (m == "Adadelta") {
    return o.Adadelta(a.adadelta, a.params, a.grads, a.s0, a.s1, a.step, a.count, a.dtype);
  }
  if (m == "LBFGS") return o.LBFGS(a.lbfgs, a.params, a.grads, a.lbfgsState, a.count, a.dtype);
  ADD_FAILURE() << "unknown method " << m;
}

double F(const json& c, const char* key) { return c.at(key).get<double>(); }

// Sets the config of a.method from the golden script's field names.
void ApplyConfig(Args& a, const json& c) {
  const std::string& m = a.method;
  if (m == "Adam" || m == "AdamW" || m == "Adamax" || m == "LAMB") {
    a.adam = {F(c, "LearningRate"), F(c, "Beta1"), F(c, "Beta2"), F(c, "Eps"), F(c, "WeightDecay")};
  } else if (m == "SGD") {
    a.sgd = {F(c, "LearningRate"), F(c, "Momentum"), F(c, "Dampening"), F(c, "WeightDecay"),
             c.at("Nesterov").get<bool>()};
  } else if (m == "Lion") {
    a.lion = {F(c, "LearningRate"), F(c, "Beta1"), F(c, "Beta2"), F(c, "WeightDecay")};
  } else if (m == "RMSprop") {
    a.rmsprop = {F(c, "LearningRate"), F(c, "Alpha"),    F(c, "Eps"),
                 F(c, "WeightDecay"),  F(c, "Momentum"), c.at("Centered").get<bool>()};
  } else if (m == "Hebbian") {
    a.hebbian = {F(c, "LearningRate"), F(c, "MaxNorm")};
  } else if (m == "LARS") {
    a.lars = {F(c, "LearningRate"), F(c, "Eta"), F(c, "Momentum"), F(c, "WeightDecay"),
              F(c, "Eps")};
  } else if (m == "Adagrad") {
    a.adagrad = {F(c, "LearningRate"), F(c, "LrDecay"), F(c, "WeightDecay"), F(c, "Eps")};
  } else if (m == "Adadelta") {
    a.adadelta = {F(c, "LearningRate"), F(c, "Rho"), F(c, "Eps"), F(c, "WeightDecay")};
  } else if (m == "LBFGS") {
    a.lbfgs = {F(c, "LearningRate"), c.at("HistorySize").get<int64_t>()};
    if (c.contains("ToleranceGrad")) a.lbfgs.ToleranceGrad = F(c, "ToleranceGrad");
    if (c.contains("ToleranceChange")) a.lbfgs.ToleranceChange = F(c, "ToleranceChange");
  }
}

// An optimizer instance (empty config: the header's defaults): params, grads and zero-initialised
// state, stepped with f64 gradients. Hebbian's signal is the negative gradient (the golden script
// does the same).
class Stepper {
 public:
  Stepper(const std::string& method, const json& config, DType dtype, const std::vector<double>& p0)
      : n_(static_cast<int64_t>(p0.size())),
        params_(FromDoubles(dtype, p0)),
        grads_(dtype, n_),
        s0_(StateDType(dtype), n_),
        s1_(StateDType(dtype), n_),
        s2_(StateDType(dtype), n_) {
    args_.method = method;
    args_.dtype = dtype;
    args_.count = n_;
    if (!config.empty()) ApplyConfig(args_, config);
    const int64_t m = method == "LBFGS" ? args_.lbfgs.HistorySize : 1;
    prevP_ = Buffer(StateDType(dtype), n_);
    prevG_ = Buffer(StateDType(dtype), n_);
    sHist_ = Buffer(StateDType(dtype), m * n_);
    yHist_ = Buffer(StateDType(dtype), m * n_);
    rho_.assign(static_cast<size_t>(m), 0.0);
  }

  Args& args() { return args_; }
  const Buffer& params() const { return params_; }
  std::vector<double> Params() const { return params_.ToDoubles(); }
  int64_t step() const { return step_; }
  int64_t head() const { return head_; }
  int64_t stored() const { return stored_; }

  void Step(const std::vector<double>& grad) {
    for (int64_t i = 0; i < n_; ++i) {
      grads_.Set(i, args_.method == "Hebbian" ? -grad[static_cast<size_t>(i)]
                                              : grad[static_cast<size_t>(i)]);
    }
    args_.params = params_.data();
    args_.grads = grads_.data();
    args_.s0 = s0_.data();
    args_.s1 = s1_.data();
    args_.s2 = s2_.data();
    args_.step = &step_;
    args_.lbfgsState = {prevP_.data(), prevG_.data(), sHist_.data(), yHist_.data(),
                        rho_.data(),   &head_,        &stored_,      &step_};
    Invoke(args_);
  }

 private:
  int64_t n_;
  Buffer params_, grads_, s0_, s1_, s2_;
  Buffer prevP_{DType::Float32, 0}, prevG_{DType::Float32, 0};
  Buffer sHist_{DType::Float32, 0}, yHist_{DType::Float32, 0};
  std::vector<double> rho_;
  int64_t head_ = 0, stored_ = 0, step_ = 0;
  Args args_;
};

// ---- Problems (float64, the golden script's summation order) ------------------------------------

std::vector<double> Gradient(const json& prob, const std::vector<double>& p) {
  const size_t n = p.size();
  std::vector<double> g(n, 0.0);
  if (prob.at("kind") == "quadratic") {  // A p - b
    const json& A = prob.at("A");
    const json& b = prob.at("b");
    for (size_t i = 0; i < n; ++i) {
      double s = 0.0;
      for (size_t j = 0; j < n; ++j) s += A[i][j].get<double>() * p[j];
      g[i] = s - b[i].get<double>();
    }
  } else {  // X'(sigmoid(X w) - y) / N
    const json& X = prob.at("X");
    const json& y = prob.at("y");
    for (size_t i = 0; i < y.size(); ++i) {
      double z = 0.0;
      for (size_t j = 0; j < n; ++j) z += X[i][j].get<double>() * p[j];
      const double r = 1.0 / (1.0 + std::exp(-z)) - y[i].get<double>();
      for (size_t j = 0; j < n; ++j) g[j] += r * X[i][j].get<double>();
    }
    for (double& v : g) v /= static_cast<double>(y.size());
  }
  return g;
}

Tolerance GoldenTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return DefaultTolerance(DType::Float64);
    case DType::Float32:
      return {1e-5, 1e-5};
    case DType::Float16:
      return {2e-3, 4e-3};
    default:
      return {1.6e-2, 3.2e-2};  // bf16
  }
}

// ---- Golden trajectories ------------------------------------------------------------------------

TEST(OptimizerGolden, TrajectoriesMatchTorchAndPapers) {
  const json& golden = LoadGolden("optimizer.json");
  const json& problems = golden.at("problems");
  const int steps = golden.at("steps").get<int>();
  std::map<std::string, int> casesPerMethod;
  for (const json& c : golden.at("cases")) {
    const std::string method = c.at("method");
    const DType dtype = DTypeOf(c.at("dtype"));
    SCOPED_TRACE(method + " setting " + std::to_string(c.at("setting").get<int>()) + " on " +
                 c.at("problem").get<std::string>() + " " + std::string(DTypeName(dtype)));
    const json& prob = problems.at(c.at("problem").get<std::string>());
    Stepper opt(method, c.at("config"), dtype, Doubles(c.at("p0")));
    for (int k = 1; k <= steps; ++k) {
      opt.Step(Gradient(prob, opt.Params()));
      const std::string key = std::to_string(k);
      if (c.at("params").contains(key)) {
        EXPECT_TRUE(
            test::AllClose(opt.params(), Doubles(c.at("params").at(key)), GoldenTolerance(dtype)))
            << "after step " << k;
      }
    }
    if (method == "LBFGS") {  // stops counting once max |g| <= ToleranceGrad, as torch
      EXPECT_LE(opt.step(), steps);
    } else if (method != "Hebbian") {  // Hebbian has no step counter
      EXPECT_EQ(opt.step(), steps);
    }
    ++casesPerMethod[method];
  }
  for (const std::string& m : Methods()) {
    // >= 2 settings x 3 problems x 4 dtypes.
    EXPECT_GE(casesPerMethod[m], 24) << m;
  }
}

TEST(OptimizerGolden, HalfPrecisionTracksFloat32Trajectory) {
  const json& golden = LoadGolden("optimizer.json");
  std::map<std::string, const json*> f32;
  auto key = [](const json& c) {
    return c.at("method").get<std::string>() + "/" + std::to_string(c.at("setting").get<int>()) +
           "/" + c.at("problem").get<std::string>();
  };
  for (const json& c : golden.at("cases")) {
    if (c.at("dtype") == "f32") f32[key(c)] = &c;
  }
  const json& problems = golden.at("problems");
  for (const json& c : golden.at("cases")) {
    const DType dtype = DTypeOf(c.at("dtype"));
    if (dtype != DType::Float16 && dtype != DType::BFloat16) continue;
    SCOPED_TRACE(key(c) + " " + std::string(DTypeName(dtype)));
    const double bound = dtype == DType::Float16 ? 1e-2 : 8e-2;
    const json& ref = *f32.at(key(c));
    const json& prob = problems.at(c.at("problem").get<std::string>());
    Stepper opt(c.at("method").get<std::string>(), c.at("config"), dtype, Doubles(c.at("p0")));
    for (int k = 1; k <= 50; ++k) {
      opt.Step(Gradient(prob, opt.Params()));
      if (k == 10 || k == 50) {
        EXPECT_TRUE(test::AllClose(opt.params(), Doubles(ref.at("params").at(std::to_string(k))),
                                   {bound, bound}))
            << "after step " << k;
      }
    }
  }
}

// torch.optim.LBFGS(max_iter > 1) in f64: each torch step() runs n_iter iterations, each one call
// here with the gradient at the current params; the params after every step agree to 1e-12
// (dot products differ from torch's only in summation order).
TEST(OptimizerGolden, LbfgsMatchesTorchWithMaxIter) {
  const json& golden = LoadGolden("optimizer.json");
  const json& problems = golden.at("problems");
  ASSERT_GE(golden.at("lbfgs_max_iter").size(), 4u);
  for (const json& c : golden.at("lbfgs_max_iter")) {
    SCOPED_TRACE(c.at("problem").get<std::string>() + " " + c.at("config").dump());
    const json& prob = problems.at(c.at("problem").get<std::string>());
    Stepper opt("LBFGS", c.at("config"), DType::Float64, Doubles(c.at("p0")));
    int64_t calls = 0;
    for (const json& st : c.at("steps")) {
      for (; calls < st.at("n_iter").get<int64_t>(); ++calls) opt.Step(Gradient(prob, opt.Params()));
      EXPECT_EQ(opt.step(), calls);
      EXPECT_TRUE(test::AllClose(opt.params(), Doubles(st.at("params")), {1e-12, 1e-12})) << "after call " << calls;
    }
  }
}

// 4099 elements (over 4096, odd), 3 steps on f = 0.5 sum a_i (p_i - c_i)^2 with exact rational
// data; compared at sampled indices and through the float64 sum of all parameters.
TEST(OptimizerGolden, LargeVector) {
  const json& golden = LoadGolden("optimizer_large.json");
  const int64_t n = golden.at("count").get<int64_t>();
  ASSERT_GT(n, 4096);
  std::vector<double> p0(static_cast<size_t>(n)), a(p0.size()), c(p0.size());
  for (int64_t i = 0; i < n; ++i) {
    p0[static_cast<size_t>(i)] = static_cast<double>((i * 37) % 101) / 25.0 - 2.0;
    a[static_cast<size_t>(i)] = 0.5 + static_cast<double>((i * 53) % 89) / 32.0;
    c[static_cast<size_t>(i)] = static_cast<double>((i * 71) % 97) / 48.0 - 1.0;
  }
  const auto samples = golden.at("sample_indices").get<std::vector<int64_t>>();
  for (const json& cs : golden.at("cases")) {
    const DType dtype = DTypeOf(cs.at("dtype"));
    SCOPED_TRACE(cs.at("method").get<std::string>() + " " + std::string(DTypeName(dtype)));
    Stepper opt(cs.at("method").get<std::string>(), cs.at("config"), dtype,
                FromDoubles(dtype, p0).ToDoubles());
    for (int k = 0; k < golden.at("steps").get<int>(); ++k) {
      const std::vector<double> p = opt.Params();
      std::vector<double> g(p.size());
      for (size_t i = 0; i < p.size(); ++i) g[i] = a[i] * (p[i] - c[i]);
      opt.Step(g);
    }
    const std::vector<double> got = opt.Params();
    const Tolerance tol = GoldenTolerance(dtype);
    const std::vector<double> want = Doubles(cs.at("samples"));
    ASSERT_EQ(want.size(), samples.size());
    for (size_t k = 0; k < samples.size(); ++k) {
      EXPECT_TRUE(test::Close(got[static_cast<size_t>(samples[k])], want[k], tol))
          << "index " << samples[k];
    }
    double sum = 0.0;
    for (double v : got) sum += v;
    const double sumAbs = cs.at("sum_abs").get<double>();
    EXPECT_NEAR(sum, cs.at("sum").get<double>(),
                tol.abs * static_cast<double>(n) + tol.rel * sumAbs);
  }
}

// ---- L-BFGS on Rosenbrock -----------------------------------------------------------------------

double Rosenbrock(const std::vector<double>& x) {
  double f = 0.0;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    f += 100.0 * std::pow(x[i + 1] - x[i] * x[i], 2) + std::pow(1.0 - x[i], 2);
  }
  return f;
}

std::vector<double> RosenbrockGrad(const std::vector<double>& x) {
  std::vector<double> g(x.size(), 0.0);
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    const double t = x[i + 1] - x[i] * x[i];
    g[i] += -400.0 * x[i] * t - 2.0 * (1.0 - x[i]);
    g[i + 1] += 200.0 * t;
  }
  return g;
}

// Fixed lr = 1 (the quasi-Newton unit step), HistorySize 10, no line search; the very first call
// takes lr min(1, 1 / |g|_1), torch.optim.LBFGS's first-step rule. From
// (-1.2, 1, -1.2, 1, ...) this reaches (1, ..., 1) within 1e-6 in under 200 calls (f64).
int LbfgsRosenbrock(size_t dims, DType dtype, double tol, int maxCalls) {
  std::vector<double> x0(dims);
  for (size_t i = 0; i < dims; ++i) x0[i] = i % 2 == 0 ? -1.2 : 1.0;
  Stepper opt("LBFGS", json{{"LearningRate", 1.0}, {"HistorySize", 10}}, dtype, x0);
  for (int call = 1; call <= maxCalls; ++call) {
    const std::vector<double> g = RosenbrockGrad(opt.Params());
    opt.Step(g);
    const std::vector<double> x = opt.Params();
    double err = 0.0;
    for (double v : x) err = std::max(err, std::abs(v - 1.0));
    if (!(err <= kInf)) return -1;  // diverged
    if (err <= tol) return call;
  }
  return 0;
}

TEST(OptimizerLBFGS, ConvergesOnRosenbrock2D) {
  const int calls = LbfgsRosenbrock(2, DType::Float64, 1e-6, 200);
  EXPECT_GT(calls, 0);
  EXPECT_LT(Rosenbrock({1.0, 1.0}), 1e-30);
}

// Without a line search the last digits are chaotic: torch.optim.LBFGS(max_iter=1) in f64 reaches
// 1e-6 in 131 calls from this start, but stalls near 6e-6 when x0 moves by 1e-16. So 1e-4 here.
TEST(OptimizerLBFGS, ConvergesOnRosenbrock10D) {
  EXPECT_GT(LbfgsRosenbrock(10, DType::Float64, 1e-4, 300), 0);
}

// f32 params and state: the same run reaches the minimum to within 1e-4 (observed: 1e-5 after 88
// calls; f32 gradients of Rosenbrock near (1, 1) carry noise of about 400 * 2^-24 ~ 2e-5).
TEST(OptimizerLBFGS, ConvergesOnRosenbrockFloat32) {
  EXPECT_GT(LbfgsRosenbrock(2, DType::Float32, 1e-4, 300), 0);
}

// The ring: HistorySize 2 over many steps keeps head in [0, 2) and stored == 2, and the first
// step is torch's damped gradient descent p -= lr min(1, 1 / |g|_1) g (|g|_1 = 10 here).
TEST(OptimizerLBFGS, FirstStepIsGradientDescentAndRingWraps) {
  const std::vector<double> diag = {1.0, 2.0, 3.0, 4.0};
  Stepper opt("LBFGS", json{{"LearningRate", 0.25}, {"HistorySize", 2}}, DType::Float64,
              {1.0, 1.0, 1.0, 1.0});
  auto grad = [&](const std::vector<double>& p) {
    std::vector<double> g(p.size());
    for (size_t i = 0; i < p.size(); ++i) g[i] = diag[i] * p[i];
    return g;
  };
  opt.Step(grad(opt.Params()));
  EXPECT_TRUE(
      test::AllClose(opt.params(), {0.975, 0.95, 0.925, 0.9}, DefaultTolerance(DType::Float64)));
  EXPECT_EQ(opt.stored(), 0);
  for (int k = 0; k < 6; ++k) opt.Step(grad(opt.Params()));
  // Calls 2..7 each stored a pair (y's = s'Ds > 0): 6 pairs in a ring of 2.
  EXPECT_EQ(opt.stored(), 2);
  EXPECT_EQ(opt.head(), 0);
  // Converging on a diagonal quadratic: every coordinate shrinks.
  for (double v : opt.Params()) EXPECT_LT(std::abs(v), 0.5);
}

// ---- Step counter, zero sizes -------------------------------------------------------------------

TEST(OptimizerStep, CountZeroIsValidAndAdvancesTheStep) {
  for (const std::string& method : Methods()) {
    for (DType dtype : test::FloatDTypes()) {
      SCOPED_TRACE(method + " " + std::string(DTypeName(dtype)));
      Args a;
      a.method = method;
      a.dtype = dtype;
      a.count = 0;
      int64_t step = 3, head = 0, stored = 0;
      double rho[10] = {};
      a.step = &step;
      a.lbfgsState = {nullptr, nullptr, nullptr, nullptr, rho, &head, &stored, &step};
      EXPECT_NO_THROW(Invoke(a));
      if (method != "Hebbian") {
        EXPECT_EQ(step, 4);
      }
    }
  }
}

TEST(OptimizerStep, StepAdvancesAndBiasCorrectionProgresses) {
  // Adam with a constant gradient g: m_t = (1 - b1^t) g and v_t = (1 - b2^t) g^2, so the
  // bias-corrected step is lr * g / (|g| + eps) at every t (a fixed t = 1 would over-correct).
  const double lr = 0.1, g = 0.5;
  Stepper opt("Adam",
              json{{"LearningRate", lr},
                   {"Beta1", 0.9},
                   {"Beta2", 0.999},
                   {"Eps", 0.0},
                   {"WeightDecay", 0.0}},
              DType::Float64, {1.0});
  for (int t = 1; t <= 5; ++t) {
    opt.Step({g});
    EXPECT_EQ(opt.step(), t);
    EXPECT_NEAR(opt.Params()[0], 1.0 - t * lr, 1e-12);  // lr is used as the double it is
  }
}

// ---- Known values -------------------------------------------------------------------------------

// One step of a.method with a's configs on `dtype` data; for Hebbian `g` is the signal.
std::vector<double> OneStep(Args a, const std::vector<double>& p, const std::vector<double>& g,
                            DType dtype = DType::Float32) {
  Stepper opt(a.method, json::object(), dtype, p);
  Args& b = opt.args();
  b.adam = a.adam;
  b.sgd = a.sgd;
  b.lion = a.lion;
  b.rmsprop = a.rmsprop;
  b.hebbian = a.hebbian;
  b.lars = a.lars;
  b.adagrad = a.adagrad;
  b.adadelta = a.adadelta;
  b.lbfgs = a.lbfgs;
  std::vector<double> grad = g;
  if (a.method == "Hebbian") {
    for (double& v : grad) v = -v;  // Stepper::Step negates it back into the signal
  }
  opt.Step(grad);
  return opt.Params();
}

Args MethodArgs(const std::string& method) {
  Args a;
  a.method = method;
  a.hebbian.MaxNorm = 1e6f;
  a.sgd.Momentum = 0.9f;
  a.rmsprop.Centered = true;
  a.rmsprop.Momentum = 0.5f;
  a.lars.WeightDecay = 0.01f;
  a.adam.WeightDecay = 0.01f;
  return a;
}

TEST(OptimizerSpecial, NanGradientReachesTheParameter) {
  for (const std::string& method : Methods()) {
    for (DType dtype : test::FloatDTypes()) {
      SCOPED_TRACE(method + " " + std::string(DTypeName(dtype)));
      const std::vector<double> p =
          OneStep(MethodArgs(method), {1.0, 2.0, -1.5}, {0.5, kNaN, 0.25}, dtype);
      EXPECT_TRUE(std::isnan(p[1]));
      // Elementwise methods leave the other elements finite; norm-based ones may not.
      if (method != "LARS" && method != "LAMB") {
        EXPECT_TRUE(std::isfinite(p[0]) && std::isfinite(p[2]));
      }
    }
  }
}

TEST(OptimizerSpecial, InfinityAsTorch) {
  // torch.optim: SGD moves to -inf; Adam, Adagrad and RMSprop give NaN (inf / inf).
  const std::vector<double> p = {1.0, 2.0, 3.0}, g = {0.5, kInf, -1.0};
  Args sgd;
  sgd.method = "SGD";
  sgd.sgd.LearningRate = 0.1f;
  const auto s = OneStep(sgd, p, g);
  EXPECT_EQ(s[1], -kInf);
  EXPECT_FLOAT_EQ(static_cast<float>(s[0]), 0.95f);
  for (const char* m : {"Adam", "Adagrad", "RMSprop"}) {
    Args a;
    a.method = m;
    EXPECT_TRUE(std::isnan(OneStep(a, p, g)[1])) << m;
    EXPECT_TRUE(std::isfinite(OneStep(a, p, g)[0])) << m;
  }
}

TEST(OptimizerSpecial, NegativeZeroIsKept) {
  for (const char* m : {"SGD", "Adam", "AdamW", "Lion", "Adagrad", "RMSprop", "Adadelta"}) {
    for (DType dtype : test::FloatDTypes()) {
      Args a;
      a.method = m;
      const double p = OneStep(a, {-0.0}, {0.0}, dtype)[0];
      EXPECT_EQ(p, 0.0) << m;
      EXPECT_TRUE(std::signbit(p)) << m << " " << DTypeName(dtype);
    }
  }
}

TEST(OptimizerSpecial, Float16OverflowRoundsToInfinity) {
  Args sgd;
  sgd.method = "SGD";
  sgd.sgd.LearningRate = 1.0f;
  EXPECT_EQ(OneStep(sgd, {65504.0}, {-1000.0}, DType::Float16)[0], kInf);
  EXPECT_EQ(OneStep(sgd, {65504.0}, {-1000.0}, DType::BFloat16)[0], 66560.0);  // bf16 of 66504
  Args heb;
  heb.method = "Hebbian";
  heb.hebbian = {1.0f, 0.0f};
  EXPECT_EQ(OneStep(heb, {60000.0}, {10000.0}, DType::Float16)[0], kInf);
}

TEST(OptimizerSpecial, ClosedFormSteps) {
  const Tolerance tol = DefaultTolerance(DType::Float64);
  // Hebbian: (3, 0) + 1 * (0, 4) = (3, 4), norm 5 > MaxNorm 1: rescaled to (0.6, 0.8).
  Args heb;
  heb.method = "Hebbian";
  heb.hebbian = {1.0f, 1.0f};
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64, OneStep(heb, {3.0, 0.0}, {0.0, 4.0}, DType::Float64)), {0.6, 0.8},
      tol));
  // Lion: sign(c) with m = 0: c = (1 - b1) g; sign(0) = 0 leaves that element alone.
  Args lion;
  lion.method = "Lion";
  lion.lion = {0.5f, 0.9f, 0.99f, 0.0f};
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64,
                  OneStep(lion, {1.0, 1.0, 1.0}, {3.0, 0.0, -1e-30}, DType::Float64)),
      {0.5, 1.0, 1.5}, tol));
  // LARS with p = 0: local lr 1, v = lr g, p = -lr g.
  Args lars;
  lars.method = "LARS";
  lars.lars = {0.5f, 1e-3f, 0.9f, 0.0f, 1e-8f};
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64, OneStep(lars, {0.0, 0.0}, {1.0, -2.0}, DType::Float64)),
      {-0.5, 1.0}, tol));
  // LARS with p = (3, 4), g = (0, 1), eta 0.1, wd 0: local lr = 0.1 * 5 / 1, v = lr * 0.5 * g.
  lars.lars = {1.0f, 0.125f, 0.0f, 0.0f, 0.0f};
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64, OneStep(lars, {3.0, 4.0}, {0.0, 1.0}, DType::Float64)),
      {3.0, 4.0 - 0.625}, tol));
  // LAMB at t = 1 with eps 0: r = sign(g), ratio ||p|| / ||r|| = 5 / sqrt(2).
  Args lamb;
  lamb.method = "LAMB";
  lamb.adam = {0.1f, 0.9f, 0.999f, 0.0f, 0.0f};
  const double s = static_cast<double>(0.1f) * 5.0 / std::sqrt(2.0);
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64, OneStep(lamb, {3.0, 4.0}, {2.0, -0.5}, DType::Float64)),
      {3.0 - s, 4.0 + s}, {1e-12, 1e-12}));
  // SGD momentum: the buffer starts as the gradient (no dampening on the first step).
  Args sgd;
  sgd.method = "SGD";
  sgd.sgd = {0.5f, 0.9f, 0.5f, 0.0f, false};
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64, OneStep(sgd, {1.0, 1.0}, {1.0, -2.0}, DType::Float64)),
      {0.5, 2.0}, tol));
  // Adagrad, first step: p -= lr g / (|g| + eps).
  Args ada;
  ada.method = "Adagrad";
  ada.adagrad = {0.5f, 0.0f, 0.0f, 0.0f};
  EXPECT_TRUE(test::AllClose(
      FromDoubles(DType::Float64, OneStep(ada, {1.0, 1.0}, {4.0, -0.25}, DType::Float64)),
      {0.5, 1.5}, tol));
}

// ---- Bad input ----------------------------------------------------------------------------------

// A valid call of `method` on 4 f32 elements whose params and state are poisoned; each bad-input
// case changes one thing and must throw without touching params, state or the step counter.
class BadInput {
 public:
  explicit BadInput(const std::string& method)
      : params_(DType::Float32, kN),
        grads_(FromDoubles(DType::Float32, {0.5, -1.0, 2.0, 0.25})),
        s0_(DType::Float32, kN),
        s1_(DType::Float32, kN),
        s2_(DType::Float32, kN),
        sHist_(DType::Float32, kM * kN),
        yHist_(DType::Float32, kM * kN),
        prevP_(DType::Float32, kN),
        prevG_(DType::Float32, kN),
        rho_(DType::Float64, kM) {
    for (Buffer* b : Buffers()) b->Poison();
    args_.method = method;
    args_.dtype = DType::Float32;
    args_.count = kN;
    args_.params = params_.data();
    args_.grads = grads_.data();
    args_.s0 = s0_.data();
    args_.s1 = s1_.data();
    args_.s2 = s2_.data();
    args_.step = &step_;
    args_.sgd.Momentum = 0.9f;
    args_.rmsprop.Centered = true;
    args_.rmsprop.Momentum = 0.5f;
    args_.lbfgs.HistorySize = kM;
    args_.lbfgsState = {prevP_.data(),     prevG_.data(), sHist_.data(), yHist_.data(),
                        rho_.as<double>(), &head_,        &stored_,      &step_};
  }

  Args& args() { return args_; }

  void Expect(ErrorCode code, const std::vector<std::string>& fragments) {
    try {
      Invoke(args_);
      ADD_FAILURE() << "did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(e.op(), "Optimizer." + args_.method) << e.what();
      for (const std::string& f : fragments) {
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
      }
    }
    for (Buffer* b : Buffers()) EXPECT_TRUE(b->IsPoisoned());
    EXPECT_EQ(step_, kStep);
    EXPECT_EQ(head_, 1);
    EXPECT_EQ(stored_, 2);
  }

  static constexpr int64_t kN = 4;
  static constexpr int64_t kM = 3;
  static constexpr int64_t kStep = 5;

 private:
  std::vector<Buffer*> Buffers() {
    return {&params_, &s0_, &s1_, &s2_, &sHist_, &yHist_, &prevP_, &prevG_, &rho_};
  }
  Buffer params_, grads_, s0_, s1_, s2_, sHist_, yHist_, prevP_, prevG_, rho_;
  int64_t step_ = kStep, head_ = 1, stored_ = 2;
  Args args_;
};

// Runs `mutate` on a fresh valid call of every method for which `applies` holds.
void ForMethods(const std::function<bool(const std::string&)>& applies,
                const std::function<void(BadInput&)>& mutate,
                std::initializer_list<std::string> fragments,
                ErrorCode code = ErrorCode::InvalidArgument) {
  for (const std::string& m : Methods()) {
    if (!applies(m)) continue;
    SCOPED_TRACE(m);
    BadInput bad(m);
    mutate(bad);
    bad.Expect(code, fragments);
  }
}

bool All(const std::string&) { return true; }
bool HasStep(const std::string& m) { return m != "Hebbian" && m != "LBFGS"; }
bool AdamLike(const std::string& m) {
  return m == "Adam" || m == "AdamW" || m == "Adamax" || m == "LAMB";
}

TEST(OptimizerBadInput, ValidCallSucceeds) {
  for (const std::string& m : Methods()) {
    BadInput ok(m);
    EXPECT_NO_THROW(Invoke(ok.args())) << m;
  }
}

TEST(OptimizerBadInput, UnsupportedDTypeIsCheckedFirst) {
  std::vector<DType> rejected = {DType::Invalid, static_cast<DType>(99)};
  for (DType d : AllDTypes()) {
    if (!kFloatDTypes.Contains(d)) rejected.push_back(d);
  }
  for (DType d : rejected) {
    ForMethods(
        All,
        [d](BadInput& b) {
          b.args().dtype = d;
          b.args().count = -1;
        },
        {"dtype"}, ErrorCode::UnsupportedDType);
  }
}

TEST(OptimizerBadInput, SizesAndPointers) {
  ForMethods(All, [](BadInput& b) { b.args().count = -1; }, {"count", ">= 0"});
  ForMethods(All, [](BadInput& b) { b.args().params = nullptr; }, {"params", "non-null"});
  ForMethods([](const std::string& m) { return m != "Hebbian"; },
             [](BadInput& b) { b.args().grads = nullptr; }, {"grads", "non-null"});
  ForMethods([](const std::string& m) { return m == "Hebbian"; },
             [](BadInput& b) { b.args().grads = nullptr; }, {"signal", "non-null"});
  ForMethods(AdamLike, [](BadInput& b) { b.args().s0 = nullptr; }, {"'m'"});
  ForMethods(AdamLike, [](BadInput& b) { b.args().s1 = nullptr; }, {"'v'"});
  ForMethods([](const std::string& m) { return m == "Lion"; },
             [](BadInput& b) { b.args().s0 = nullptr; }, {"'m'"});
  ForMethods([](const std::string& m) { return m == "SGD" || m == "LARS"; },
             [](BadInput& b) { b.args().s0 = nullptr; }, {"momentumBuffer"});
  ForMethods([](const std::string& m) { return m == "RMSprop" || m == "Adadelta"; },
             [](BadInput& b) { b.args().s0 = nullptr; }, {"squareAvg"});
  ForMethods([](const std::string& m) { return m == "RMSprop"; },
             [](BadInput& b) { b.args().s1 = nullptr; }, {"gradAvg"});
  ForMethods([](const std::string& m) { return m == "RMSprop"; },
             [](BadInput& b) { b.args().s2 = nullptr; }, {"momentumBuffer"});
  ForMethods([](const std::string& m) { return m == "Adadelta"; },
             [](BadInput& b) { b.args().s1 = nullptr; }, {"accDelta"});
  ForMethods([](const std::string& m) { return m == "Adagrad"; },
             [](BadInput& b) { b.args().s0 = nullptr; }, {"'sum'"});
  ForMethods(HasStep, [](BadInput& b) { b.args().step = nullptr; }, {"'step'", "non-null"});
  ForMethods(HasStep,
             [](BadInput& b) {
               static int64_t negative = -1;
               b.args().step = &negative;
             },
             {"'step'", ">= 0"});
}

// Unused state may be null: SGD without momentum, RMSprop neither centered nor with momentum.
TEST(OptimizerBadInput, UnusedStateMayBeNull) {
  BadInput sgd("SGD");
  sgd.args().sgd.Momentum = 0.0f;
  sgd.args().s0 = nullptr;
  EXPECT_NO_THROW(Invoke(sgd.args()));
  BadInput rms("RMSprop");
  rms.args().rmsprop.Centered = false;
  rms.args().rmsprop.Momentum = 0.0f;
  rms.args().s1 = nullptr;
  rms.args().s2 = nullptr;
  EXPECT_NO_THROW(Invoke(rms.args()));
}

TEST(OptimizerBadInput, StepCounterCannotOverflow) {
  for (const std::string& m : Methods()) {
    if (!HasStep(m)) continue;
    BadInput bad(m);
    int64_t step = std::numeric_limits<int64_t>::max();
    bad.args().step = &step;
    EXPECT_TRUE(test::ThrowsError([&] { Invoke(bad.args()); }, ErrorCode::InvalidArgument,
                                  {"Optimizer." + m, "'step'"}));
    EXPECT_EQ(step, std::numeric_limits<int64_t>::max());
  }
}

// Sets a float config field of every method that has one with that meaning.
void SetLearningRate(Args& a, float v) {
  a.adam.LearningRate = a.sgd.LearningRate = a.lion.LearningRate = a.rmsprop.LearningRate = v;
  a.hebbian.LearningRate = a.lars.LearningRate = a.adagrad.LearningRate = v;
  a.adadelta.LearningRate = a.lbfgs.LearningRate = v;
}

TEST(OptimizerBadInput, LearningRate) {
  for (float v : {-1.0f, -1e-30f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity()}) {
    ForMethods(All, [v](BadInput& b) { SetLearningRate(b.args(), v); }, {"config.LearningRate"});
  }
}

TEST(OptimizerBadInput, BetasAlphaRho) {
  for (float v : {1.0f, 1.5f, -0.1f, std::numeric_limits<float>::quiet_NaN()}) {
    ForMethods(AdamLike, [v](BadInput& b) { b.args().adam.Beta1 = v; }, {"config.Beta1", "[0, 1)"});
    ForMethods(AdamLike, [v](BadInput& b) { b.args().adam.Beta2 = v; }, {"config.Beta2"});
    ForMethods([](const std::string& m) { return m == "Lion"; },
               [v](BadInput& b) { b.args().lion.Beta1 = v; }, {"config.Beta1"});
    ForMethods([](const std::string& m) { return m == "Lion"; },
               [v](BadInput& b) { b.args().lion.Beta2 = v; }, {"config.Beta2"});
    ForMethods([](const std::string& m) { return m == "RMSprop"; },
               [v](BadInput& b) { b.args().rmsprop.Alpha = v; }, {"config.Alpha", "[0, 1)"});
    ForMethods([](const std::string& m) { return m == "Adadelta"; },
               [v](BadInput& b) { b.args().adadelta.Rho = v; }, {"config.Rho", "[0, 1)"});
  }
}

TEST(OptimizerBadInput, NonNegativeHyperParameters) {
  const float neg = -1e-3f;
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {neg, inf}) {
    ForMethods(AdamLike, [v](BadInput& b) { b.args().adam.Eps = v; }, {"config.Eps"});
    ForMethods(AdamLike, [v](BadInput& b) { b.args().adam.WeightDecay = v; },
               {"config.WeightDecay"});
    ForMethods([](const std::string& m) { return m == "SGD"; },
               [v](BadInput& b) { b.args().sgd.WeightDecay = v; }, {"config.WeightDecay"});
    ForMethods([](const std::string& m) { return m == "SGD"; },
               [v](BadInput& b) { b.args().sgd.Momentum = v; }, {"config.Momentum"});
    ForMethods([](const std::string& m) { return m == "Lion"; },
               [v](BadInput& b) { b.args().lion.WeightDecay = v; }, {"config.WeightDecay"});
    ForMethods([](const std::string& m) { return m == "RMSprop"; },
               [v](BadInput& b) { b.args().rmsprop.Eps = v; }, {"config.Eps"});
    ForMethods([](const std::string& m) { return m == "RMSprop"; },
               [v](BadInput& b) { b.args().rmsprop.WeightDecay = v; }, {"config.WeightDecay"});
    ForMethods([](const std::string& m) { return m == "RMSprop"; },
               [v](BadInput& b) { b.args().rmsprop.Momentum = v; }, {"config.Momentum"});
    ForMethods([](const std::string& m) { return m == "Hebbian"; },
               [v](BadInput& b) { b.args().hebbian.MaxNorm = v; }, {"config.MaxNorm"});
    ForMethods([](const std::string& m) { return m == "LARS"; },
               [v](BadInput& b) { b.args().lars.Eta = v; }, {"config.Eta"});
    ForMethods([](const std::string& m) { return m == "LARS"; },
               [v](BadInput& b) { b.args().lars.Momentum = v; }, {"config.Momentum"});
    ForMethods([](const std::string& m) { return m == "LARS"; },
               [v](BadInput& b) { b.args().lars.WeightDecay = v; }, {"config.WeightDecay"});
    ForMethods([](const std::string& m) { return m == "LARS"; },
               [v](BadInput& b) { b.args().lars.Eps = v; }, {"config.Eps"});
    ForMethods([](const std::string& m) { return m == "Adagrad"; },
               [v](BadInput& b) { b.args().adagrad.LrDecay = v; }, {"config.LrDecay"});
    ForMethods([](const std::string& m) { return m == "Adagrad"; },
               [v](BadInput& b) { b.args().adagrad.WeightDecay = v; }, {"config.WeightDecay"});
    ForMethods([](const std::string& m) { return m == "Adagrad"; },
               [v](BadInput& b) { b.args().adagrad.Eps = v; }, {"config.Eps"});
    ForMethods([](const std::string& m) { return m == "Adadelta"; },
               [v](BadInput& b) { b.args().adadelta.Eps = v; }, {"config.Eps"});
    ForMethods([](const std::string& m) { return m == "Adadelta"; },
               [v](BadInput& b) { b.args().adadelta.WeightDecay = v; }, {"config.WeightDecay"});
  }
}

TEST(OptimizerBadInput, SgdDampeningAndNesterov) {
  auto sgd = [](const std::string& m) { return m == "SGD"; };
  ForMethods(sgd, [](BadInput& b) { b.args().sgd.Dampening = 1.5f; },
             {"config.Dampening", "[0, 1]"});
  ForMethods(sgd, [](BadInput& b) { b.args().sgd.Dampening = -0.5f; }, {"config.Dampening"});
  ForMethods(sgd,
             [](BadInput& b) {
               b.args().sgd.Nesterov = true;
               b.args().sgd.Momentum = 0.0f;
             },
             {"config.Momentum", "Nesterov"});
  ForMethods(sgd,
             [](BadInput& b) {
               b.args().sgd.Nesterov = true;
               b.args().sgd.Dampening = 0.1f;
             },
             {"config.Dampening", "Nesterov"});
}

TEST(OptimizerBadInput, LbfgsState) {
  auto lbfgs = [](const std::string& m) { return m == "LBFGS"; };
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgs.HistorySize = 0; }, {"config.HistorySize"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgs.HistorySize = -2; }, {"config.HistorySize"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgs.HistorySize = int64_t{1} << 62; },
             {"config.HistorySize", "fits in int64"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.lastStep = nullptr; },
             {"state.lastStep"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.prevGrads = nullptr; },
             {"state.prevGrads"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.sHistory = nullptr; },
             {"state.sHistory"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.yHistory = nullptr; },
             {"state.yHistory"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.rhoHistory = nullptr; },
             {"state.rhoHistory"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.head = nullptr; }, {"state.head"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.stored = nullptr; }, {"state.stored"});
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgsState.step = nullptr; }, {"state.step"});
  // head in [0, HistorySize) (head is 1), stored in [0, HistorySize] (stored is 2).
  ForMethods(lbfgs, [](BadInput& b) { b.args().lbfgs.HistorySize = 1; }, {"state.head"});
  ForMethods(lbfgs,
             [](BadInput& b) {
               static int64_t head = -1;
               b.args().lbfgsState.head = &head;
             },
             {"state.head"});
  ForMethods(lbfgs,
             [](BadInput& b) {
               static int64_t negative = -1;
               b.args().lbfgsState.step = &negative;
             },
             {"state.step", ">= 0"});
  ForMethods(lbfgs,
             [](BadInput& b) {
               static int64_t last = std::numeric_limits<int64_t>::max();
               b.args().lbfgsState.step = &last;
             },
             {"state.step"});
  ForMethods(lbfgs,
             [](BadInput& b) {
               static int64_t stored = 4;
               b.args().lbfgsState.stored = &stored;
             },
             {"state.stored", "[0, 3]"});
  ForMethods(lbfgs,
             [](BadInput& b) {
               static int64_t step = 0;
               b.args().lbfgsState.step = &step;
             },
             {"state.stored", "before the first step"});
}

}  // namespace
}  // namespace backplane
