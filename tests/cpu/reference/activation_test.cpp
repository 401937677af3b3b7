// Tests of the Activation reference kernels (55 methods), called through the public CPU Backend.
//
// Oracles: golden files written by tests/golden/gen_activation.py (PyTorch float64, or the
// closed-form formula in float64 NumPy, on inputs already rounded to the storage dtype), and for
// the sizes over 4096 elements the textbook formula evaluated in double in this file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FloatDTypes;
using test::FromDoubles;
using test::RandomBuffer;
using test::ThrowsError;
using json = nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kLarge = 4099;  // over 4096 and odd

ActivationSurface& Act() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Activation();
}

// ---- Every method, grouped by signature family (expanded from the surface's method list) --------

using UnaryFn = void (ActivationSurface::*)(BP_PARAMS_Unary);
using Param1Fn = void (ActivationSurface::*)(BP_PARAMS_UnaryParam1);
using Param2Fn = void (ActivationSurface::*)(BP_PARAMS_UnaryParam2);
using PReLUVFn = void (ActivationSurface::*)(BP_PARAMS_PReLUV);
using PackedFn = void (ActivationSurface::*)(BP_PARAMS_GluPacked);
using TensorsFn = void (ActivationSurface::*)(BP_PARAMS_GluTensors);

template <class Fn>
struct Entry {
  Fn fn;
  DTypeSet dtypes;
};

struct Registry {
  std::map<std::string, Entry<UnaryFn>> unary;  // includes Softmax and LogSoftmax
  std::map<std::string, Entry<Param1Fn>> param1;
  std::map<std::string, Entry<Param2Fn>> param2;
  std::map<std::string, Entry<PReLUVFn>> preluv;
  std::map<std::string, Entry<PackedFn>> packed;
  std::map<std::string, Entry<TensorsFn>> tensors;
  size_t size() const {
    return unary.size() + param1.size() + param2.size() + preluv.size() + packed.size() +
           tensors.size();
  }
};

void Add(Registry& r, const char* name, UnaryFn fn, DTypeSet d) { r.unary[name] = {fn, d}; }
void Add(Registry& r, const char* name, Param1Fn fn, DTypeSet d) { r.param1[name] = {fn, d}; }
void Add(Registry& r, const char* name, Param2Fn fn, DTypeSet d) { r.param2[name] = {fn, d}; }
void Add(Registry& r, const char* name, PReLUVFn fn, DTypeSet d) { r.preluv[name] = {fn, d}; }
void Add(Registry& r, const char* name, PackedFn fn, DTypeSet d) { r.packed[name] = {fn, d}; }
void Add(Registry& r, const char* name, TensorsFn fn, DTypeSet d) { r.tensors[name] = {fn, d}; }

const Registry& Methods() {
  static const Registry registry = [] {
    Registry r;
#define BP_ADD_METHOD(S, M, F, D) Add(r, #M, &ActivationSurface::M, D);
    BP_SURFACE_ACTIVATION(BP_ADD_METHOD)
#undef BP_ADD_METHOD
    return r;
  }();
  return registry;
}

std::string Op(const std::string& method) { return "Activation." + method; }

// Valid parameters for every parametric method (used by the validation tests).
constexpr float kGoodParam1 = 0.5f;
constexpr float kGoodLower = 0.25f;
constexpr float kGoodUpper = 0.75f;

// ---- Golden files -------------------------------------------------------------------------------

const json& Golden(const std::string& file) {
  static std::map<std::string, json> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    std::ifstream in(test::GoldenPath(file));
    EXPECT_TRUE(in.good()) << "missing golden file " << file;
    it = cache.emplace(file, in.good() ? json::parse(in) : json::object()).first;
  }
  return it->second;
}

DType DTypeOf(const std::string& name) {
  const auto d = DTypeFromName(name);
  EXPECT_TRUE(d.has_value()) << name;
  return d.value_or(DType::Invalid);
}

std::vector<double> Doubles(const json& j) { return j.get<std::vector<double>>(); }

// Every method of the family has a golden entry with all four dtypes, and vice versa.
template <class Map>
void ExpectCovers(const json& methods, const Map& family) {
  EXPECT_EQ(methods.size(), family.size());
  for (const auto& [name, entry] : family) {
    ASSERT_TRUE(methods.contains(name)) << "no golden data for " << name;
    for (DType d : FloatDTypes()) {
      EXPECT_TRUE(methods[name].contains(std::string(DTypeName(d)))) << name;
    }
  }
}

TEST(ActivationRegistry, EveryMethodReachableAndAcceptsExactlyItsDTypes) {
  const Registry& m = Methods();
  ASSERT_EQ(m.size(), 55u);
  EXPECT_EQ(m.unary.size(), 27u);
  EXPECT_EQ(m.param1.size(), 8u);
  EXPECT_EQ(m.param2.size(), 3u);
  EXPECT_EQ(m.preluv.size(), 1u);
  EXPECT_EQ(m.packed.size(), 8u);
  EXPECT_EQ(m.tensors.size(), 8u);
  // Count 0 with null pointers: an accepted dtype does nothing, any other dtype throws.
  std::vector<DType> dtypes(AllDTypes().begin(), AllDTypes().end());
  dtypes.push_back(DType::Invalid);
  dtypes.push_back(static_cast<DType>(200));
  const float slope = 1.0f;
  for (DType d : dtypes) {
    auto check = [&](const std::string& name, DTypeSet accepted, auto call) {
      if (accepted.Contains(d)) {
        EXPECT_NO_THROW(call()) << name << " " << DTypeName(d);
      } else {
        EXPECT_TRUE(ThrowsError(call, ErrorCode::UnsupportedDType, {Op(name), "'dtype'"}))
            << name << " " << static_cast<int>(d);
      }
    };
    for (const auto& [name, e] : m.unary) {
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, 0, d); });
    }
    for (const auto& [name, e] : m.param1) {
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, 0, d, kGoodParam1); });
    }
    for (const auto& [name, e] : m.param2) {
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, 0, d, kGoodLower, kGoodUpper); });
    }
    for (const auto& [name, e] : m.preluv) {
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, &slope, 0, d, 1); });
    }
    for (const auto& [name, e] : m.packed) {
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, 0, 0, d); });
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, 5, 0, d); });
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, 0, 5, d); });
    }
    for (const auto& [name, e] : m.tensors) {
      check(name, e.dtypes, [&] { (Act().*e.fn)(nullptr, nullptr, nullptr, 0, d); });
    }
  }
}

// Runs a kernel into a poisoned output and checks the values and the guard bytes.
template <class Call>
void ExpectGolden(const std::string& what, DType dtype, int64_t count,
                  const std::vector<double>& want, Call call) {
  Buffer out(dtype, count);
  out.Poison();
  call(out.data());
  EXPECT_TRUE(out.GuardIntact()) << what;
  EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype))) << what;
}

TEST(ActivationGolden, UnaryAndSoftmax) {
  const json& methods = Golden("activation_unary.json")["methods"];
  ExpectCovers(methods, Methods().unary);
  for (const auto& [name, e] : Methods().unary) {
    for (const auto& [dtypeName, cases] : methods[name].items()) {
      const DType dtype = DTypeOf(dtypeName);
      for (const json& c : cases) {
        const Buffer x = FromDoubles(dtype, Doubles(c["x"]));
        ExpectGolden(name + " " + dtypeName, dtype, x.count(), Doubles(c["y"]),
                     [&](void* dst) { (Act().*e.fn)(dst, x.data(), x.count(), dtype); });
      }
    }
  }
}

TEST(ActivationGolden, Parametric) {
  const json& methods = Golden("activation_param.json")["methods"];
  EXPECT_EQ(methods.size(), Methods().param1.size() + Methods().param2.size() + 1);
  for (const auto& [dtypeName, cases] : methods["PReLUV"].items()) {
    const DType dtype = DTypeOf(dtypeName);
    for (const json& c : cases) {
      const std::vector<double> s = Doubles(c["slopes"]);
      const std::vector<float> slopes(s.begin(), s.end());
      const Buffer x = FromDoubles(dtype, Doubles(c["x"]));
      ExpectGolden("PReLUV " + dtypeName, dtype, x.count(), Doubles(c["y"]), [&](void* dst) {
        Act().PReLUV(dst, x.data(), slopes.data(), x.count(), dtype,
                     static_cast<int64_t>(slopes.size()));
      });
    }
  }
  auto run = [&](const std::string& name, auto&& call) {
    ASSERT_TRUE(methods.contains(name)) << name;
    for (DType d : FloatDTypes()) ASSERT_TRUE(methods[name].contains(std::string(DTypeName(d))));
    for (const auto& [dtypeName, cases] : methods[name].items()) {
      const DType dtype = DTypeOf(dtypeName);
      for (const json& c : cases) {
        const std::vector<double> p = Doubles(c["params"]);
        const Buffer x = FromDoubles(dtype, Doubles(c["x"]));
        ExpectGolden(name + " " + dtypeName, dtype, x.count(), Doubles(c["y"]),
                     [&](void* dst) { call(dst, x, dtype, p); });
      }
    }
  };
  for (const auto& [name, e] : Methods().param1) {
    run(name, [&](void* dst, const Buffer& x, DType dtype, const std::vector<double>& p) {
      (Act().*e.fn)(dst, x.data(), x.count(), dtype, static_cast<float>(p.at(0)));
    });
  }
  for (const auto& [name, e] : Methods().param2) {
    run(name, [&](void* dst, const Buffer& x, DType dtype, const std::vector<double>& p) {
      (Act().*e.fn)(dst, x.data(), x.count(), dtype, static_cast<float>(p.at(0)),
                    static_cast<float>(p.at(1)));
    });
  }
}

TEST(ActivationGolden, GatedLinearUnits) {
  const json& methods = Golden("activation_glu.json")["methods"];
  ExpectCovers(methods["packed"], Methods().packed);
  ExpectCovers(methods["tensors"], Methods().tensors);
  for (const auto& [name, e] : Methods().packed) {
    for (const auto& [dtypeName, cases] : methods["packed"][name].items()) {
      const DType dtype = DTypeOf(dtypeName);
      for (const json& c : cases) {
        const int64_t batch = c["batch"].get<int64_t>();
        const int64_t half = c["halfCount"].get<int64_t>();
        const Buffer packed = FromDoubles(dtype, Doubles(c["packed"]));
        ASSERT_EQ(packed.count(), batch * 2 * half);
        ExpectGolden(name + " " + dtypeName, dtype, batch * half, Doubles(c["y"]),
                     [&](void* dst) { (Act().*e.fn)(dst, packed.data(), batch, half, dtype); });
      }
    }
  }
  for (const auto& [name, e] : Methods().tensors) {
    for (const auto& [dtypeName, cases] : methods["tensors"][name].items()) {
      const DType dtype = DTypeOf(dtypeName);
      for (const json& c : cases) {
        const Buffer gate = FromDoubles(dtype, Doubles(c["gate"]));
        const Buffer up = FromDoubles(dtype, Doubles(c["up"]));
        ExpectGolden(name + " " + dtypeName, dtype, gate.count(), Doubles(c["y"]), [&](void* dst) {
          (Act().*e.fn)(dst, gate.data(), up.data(), gate.count(), dtype);
        });
      }
    }
  }
}

// ---- Float64 textbook oracles for the large sizes -----------------------------------------------

double Sigmoid64(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Gelu64(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double GeluTanh64(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double Softplus64(double x) { return x > 20.0 ? x : std::log(1.0 + std::exp(x)); }
double Leaky64(double x, double s) { return x > 0 ? x : s * x; }
double Elu64(double x, double a) { return x > 0 ? x : a * (std::exp(x) - 1.0); }
double Snake64(double x, double a, double b) { return x + std::pow(std::sin(a * x), 2) / b; }

struct UnaryOracle {
  std::function<double(double)> f;
  double lo, hi;
};

const std::map<std::string, UnaryOracle>& UnaryOracles() {
  static const std::map<std::string, UnaryOracle> oracles = {
      {"Exp", {[](double x) { return std::exp(x); }, -10, 10}},
      {"Log", {[](double x) { return std::log(x); }, 1e-3, 1e3}},
      {"Log1p", {[](double x) { return std::log1p(x); }, -0.99, 10}},
      {"Expm1", {[](double x) { return std::expm1(x); }, -5, 5}},
      {"Sigmoid", {Sigmoid64, -12, 12}},
      {"LogSigmoid", {[](double x) { return -Softplus64(-x); }, -30, 30}},
      {"Tanh", {[](double x) { return std::tanh(x); }, -5, 5}},
      {"Silu", {[](double x) { return x * Sigmoid64(x); }, -8, 8}},
      {"Swish", {[](double x) { return x * Sigmoid64(x); }, -8, 8}},
      {"GeluTanh", {GeluTanh64, -6, 6}},
      {"Gelu", {Gelu64, -6, 6}},
      {"ReLU", {[](double x) { return x > 0 ? x : 0.0; }, -4, 4}},
      {"LeakyReLU", {[](double x) { return Leaky64(x, 0.01); }, -4, 4}},
      {"ELU", {[](double x) { return Elu64(x, 1.0); }, -6, 4}},
      {"CELU", {[](double x) { return Elu64(x, 1.0); }, -6, 4}},
      {"SELU", {[](double x) { return 1.0507009873554805 * Elu64(x, 1.6732632423543772); }, -6, 4}},
      {"Softplus", {Softplus64, -30, 30}},
      {"Mish", {[](double x) { return x * std::tanh(Softplus64(x)); }, -8, 8}},
      {"Softsign", {[](double x) { return x / (1.0 + std::fabs(x)); }, -10, 10}},
      {"HardSigmoid", {[](double x) { return std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }, -5, 5}},
      {"HardSwish", {[](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }, -5, 5}},
      {"HardTanh", {[](double x) { return std::clamp(x, -1.0, 1.0); }, -3, 3}},
      {"HardGelu", {[](double x) { return x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0; }, -5, 5}},
      {"QuickGelu", {[](double x) { return x * Sigmoid64(1.702 * x); }, -6, 6}},
      {"TanhShrink", {[](double x) { return x - std::tanh(x); }, -4, 4}},
  };
  return oracles;
}

std::vector<double> Apply(const Buffer& x, const std::function<double(double)>& f) {
  std::vector<double> want;
  for (double v : x.ToDoubles()) want.push_back(f(v));
  return want;
}

TEST(ActivationLarge, Unary) {
  ASSERT_EQ(UnaryOracles().size() + 2, Methods().unary.size());
  uint64_t seed = 100;
  for (const auto& [name, o] : UnaryOracles()) {
    const Entry<UnaryFn>& e = Methods().unary.at(name);
    for (DType dtype : FloatDTypes()) {
      const Buffer x = RandomBuffer(dtype, kLarge, ++seed, o.lo, o.hi);
      ExpectGolden(name + " " + std::string(DTypeName(dtype)), dtype, kLarge, Apply(x, o.f),
                   [&](void* dst) { (Act().*e.fn)(dst, x.data(), kLarge, dtype); });
    }
  }
}

TEST(ActivationLarge, Softmax) {
  for (DType dtype : FloatDTypes()) {
    const int64_t n = 5001;
    const Buffer x = RandomBuffer(dtype, n, 7, -10, 10);
    const std::vector<double> v = x.ToDoubles();
    const double m = *std::max_element(v.begin(), v.end());
    double sum = 0;
    for (double xi : v) sum += std::exp(xi - m);
    std::vector<double> soft, logSoft;
    for (double xi : v) {
      soft.push_back(std::exp(xi - m) / sum);
      logSoft.push_back(xi - m - std::log(sum));
    }
    ExpectGolden("Softmax", dtype, n, soft,
                 [&](void* dst) { Act().Softmax(dst, x.data(), n, dtype); });
    ExpectGolden("LogSoftmax", dtype, n, logSoft,
                 [&](void* dst) { Act().LogSoftmax(dst, x.data(), n, dtype); });
  }
}

struct ParamOracle {
  std::function<double(double, double, double)> f;
  float p1, p2;  // p2 unused by the one-parameter methods
};

TEST(ActivationLarge, Parametric) {
  const std::map<std::string, ParamOracle> oracles = {
      {"PReLU", {[](double x, double p, double) { return Leaky64(x, p); }, -0.3f, 0}},
      {"LeakyReLUSlope", {[](double x, double p, double) { return Leaky64(x, p); }, 0.2f, 0}},
      {"ELUAlpha", {[](double x, double p, double) { return Elu64(x, p); }, 0.7f, 0}},
      {"CELUAlpha",
       {[](double x, double a, double) { return x > 0 ? x : a * std::expm1(x / a); }, 1.3f, 0}},
      {"Threshold", {[](double x, double t, double) { return x > t ? x : 0.0; }, 0.3f, 0}},
      {"Snake", {[](double x, double a, double) { return Snake64(x, a, a); }, 1.7f, 0}},
      {"HardShrink",
       {[](double x, double l, double) { return std::fabs(x) > l ? x : 0.0; }, 0.6f, 0}},
      {"SoftShrink",
       {[](double x, double l, double) { return x > l ? x - l : (x < -l ? x + l : 0.0); }, 0.6f,
        0}},
      {"HardTanhRange",
       {[](double x, double lo, double hi) { return std::clamp(x, lo, hi); }, -0.8f, 1.9f}},
      {"SnakeParametric", {Snake64, 0.9f, -1.4f}},
      {"RReLU", {[](double x, double l, double u) { return Leaky64(x, (l + u) / 2); }, 0.1f, 0.3f}},
  };
  ASSERT_EQ(oracles.size(), Methods().param1.size() + Methods().param2.size());
  uint64_t seed = 300;
  for (const auto& [name, o] : oracles) {
    for (DType dtype : FloatDTypes()) {
      const Buffer x = RandomBuffer(dtype, kLarge, ++seed, -4, 4);
      const std::vector<double> want = Apply(x, [&](double v) { return o.f(v, o.p1, o.p2); });
      ExpectGolden(name + " " + std::string(DTypeName(dtype)), dtype, kLarge, want, [&](void* dst) {
        if (Methods().param1.count(name)) {
          (Act().*Methods().param1.at(name).fn)(dst, x.data(), kLarge, dtype, o.p1);
        } else {
          (Act().*Methods().param2.at(name).fn)(dst, x.data(), kLarge, dtype, o.p1, o.p2);
        }
      });
    }
  }
  // PReLUV: channels-last, element i uses slopes[i % 8].
  const std::vector<float> slopes = {0.25f, -0.5f, 0.0f, 1.0f, 0.1f, 2.0f, -1.0f, 0.75f};
  const int64_t n = 8 * 513;
  for (DType dtype : FloatDTypes()) {
    const Buffer x = RandomBuffer(dtype, n, ++seed, -4, 4);
    std::vector<double> want;
    for (int64_t i = 0; i < n; ++i) want.push_back(Leaky64(x.Get(i), slopes[i % 8]));
    ExpectGolden("PReLUV", dtype, n, want,
                 [&](void* dst) { Act().PReLUV(dst, x.data(), slopes.data(), n, dtype, 8); });
  }
}

const std::map<std::string, std::function<double(double, double)>>& GluOracles() {
  static const std::map<std::string, std::function<double(double, double)>> oracles = {
      {"GLU", [](double g, double u) { return g * Sigmoid64(u); }},
      {"GeGLU", [](double g, double u) { return g * Gelu64(u); }},
      {"GeGLUTanh", [](double g, double u) { return g * GeluTanh64(u); }},
      {"SwiGLU", [](double g, double u) { return g * Sigmoid64(g) * u; }},
      {"ReGLU", [](double g, double u) { return g * std::max(u, 0.0); }},
      {"SiGLU", [](double g, double u) { return Sigmoid64(g) * u; }},
      {"LinGLU", [](double g, double u) { return g * u; }},
      {"SeGLU", [](double g, double u) { return Sigmoid64(g) * u; }},
  };
  return oracles;
}

TEST(ActivationLarge, GatedLinearUnits) {
  ASSERT_EQ(GluOracles().size(), Methods().packed.size());
  uint64_t seed = 500;
  const int64_t batch = 3, half = 1367;  // dst has 4101 elements
  for (const auto& [name, f] : GluOracles()) {
    for (DType dtype : FloatDTypes()) {
      const std::string what = name + " " + std::string(DTypeName(dtype));
      const Buffer packed = RandomBuffer(dtype, batch * 2 * half, ++seed, -5, 5);
      std::vector<double> want;
      for (int64_t r = 0; r < batch; ++r) {
        for (int64_t j = 0; j < half; ++j) {
          want.push_back(f(packed.Get(r * 2 * half + j), packed.Get(r * 2 * half + half + j)));
        }
      }
      ExpectGolden(what, dtype, batch * half, want, [&](void* dst) {
        (Act().*Methods().packed.at(name).fn)(dst, packed.data(), batch, half, dtype);
      });
      const Buffer gate = RandomBuffer(dtype, kLarge, ++seed, -5, 5);
      const Buffer up = RandomBuffer(dtype, kLarge, ++seed, -5, 5);
      want.clear();
      for (int64_t i = 0; i < kLarge; ++i) want.push_back(f(gate.Get(i), up.Get(i)));
      ExpectGolden(what + " Tensors", dtype, kLarge, want, [&](void* dst) {
        (Act().*Methods().tensors.at(name + "Tensors").fn)(dst, gate.data(), up.data(), kLarge,
                                                           dtype);
      });
    }
  }
}

// ---- Known values: +-Inf, NaN, -0.0, f16/bf16 overflow ------------------------------------------

// Exact comparison that also checks the sign of zero and treats NaN == NaN.
::testing::AssertionResult Same(double got, double want) {
  if (std::isnan(want) ? std::isnan(got)
                       : (got == want && std::signbit(got) == std::signbit(want))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << got << ", want " << want;
}

double RunUnary(const std::string& name, double x, DType dtype) {
  const Buffer in = FromDoubles(dtype, {x});
  Buffer out(dtype, 1);
  out.Poison();
  (Act().*Methods().unary.at(name).fn)(out.data(), in.data(), 1, dtype);
  return out.Get(0);
}

struct Known {
  const char* method;
  double x;
  double want;  // exact, in f64 and f32
};

TEST(ActivationSpecial, UnaryKnownValues) {
  const double lambda = 1.0507009873554805, alpha = 1.6732632423543772;
  // clang-format off
  const std::vector<Known> known = {
      {"Exp", kInf, kInf}, {"Exp", -kInf, 0}, {"Exp", kNaN, kNaN}, {"Exp", -0.0, 1},
      {"Exp", 1000, kInf},
      {"Log", 0, -kInf}, {"Log", -0.0, -kInf}, {"Log", -1, kNaN}, {"Log", kInf, kInf},
      {"Log", 1, 0}, {"Log", kNaN, kNaN},
      {"Log1p", -1, -kInf}, {"Log1p", -2, kNaN}, {"Log1p", -0.0, -0.0}, {"Log1p", kInf, kInf},
      {"Expm1", -kInf, -1}, {"Expm1", -0.0, -0.0}, {"Expm1", kInf, kInf},
      {"Sigmoid", kInf, 1}, {"Sigmoid", -kInf, 0}, {"Sigmoid", 0, 0.5}, {"Sigmoid", kNaN, kNaN},
      {"Sigmoid", -1000, 0}, {"Sigmoid", 1000, 1},
      {"LogSigmoid", -kInf, -kInf}, {"LogSigmoid", kInf, 0}, {"LogSigmoid", -1000, -1000},
      {"LogSigmoid", kNaN, kNaN},
      {"Tanh", kInf, 1}, {"Tanh", -kInf, -1}, {"Tanh", -0.0, -0.0}, {"Tanh", kNaN, kNaN},
      {"Silu", -kInf, -0.0}, {"Silu", kInf, kInf}, {"Silu", kNaN, kNaN}, {"Silu", -0.0, -0.0},
      {"Swish", -kInf, -0.0}, {"Swish", kInf, kInf},
      {"Gelu", -kInf, -0.0}, {"Gelu", kInf, kInf}, {"Gelu", kNaN, kNaN}, {"Gelu", 0, 0},
      {"GeluTanh", -kInf, -0.0}, {"GeluTanh", kInf, kInf}, {"GeluTanh", kNaN, kNaN},
      {"GeluTanh", -0x1p100, -0.0}, {"GeluTanh", 0x1p100, 0x1p100},
      {"ReLU", kNaN, kNaN}, {"ReLU", -kInf, 0}, {"ReLU", kInf, kInf}, {"ReLU", -3, 0},
      {"ReLU", -0.0, -0.0}, {"ReLU", 2.5, 2.5},
      {"LeakyReLU", -kInf, -kInf}, {"LeakyReLU", kNaN, kNaN}, {"LeakyReLU", -0.0, -0.0},
      {"ELU", -kInf, -1}, {"ELU", kInf, kInf}, {"ELU", kNaN, kNaN},
      {"CELU", -kInf, -1}, {"CELU", kInf, kInf},
      {"SELU", kInf, kInf}, {"SELU", kNaN, kNaN},
      {"Softplus", kInf, kInf}, {"Softplus", -kInf, 0}, {"Softplus", 20.5, 20.5},
      {"Softplus", 1000, 1000}, {"Softplus", kNaN, kNaN},
      {"Mish", -kInf, -0.0}, {"Mish", kInf, kInf}, {"Mish", kNaN, kNaN},
      {"Softsign", kInf, 1}, {"Softsign", -kInf, -1}, {"Softsign", -0.0, -0.0},
      {"Softsign", 1, 0.5}, {"Softsign", kNaN, kNaN},
      {"HardSigmoid", kNaN, kNaN}, {"HardSigmoid", -kInf, 0}, {"HardSigmoid", kInf, 1},
      {"HardSigmoid", 3, 1}, {"HardSigmoid", -3, 0}, {"HardSigmoid", 0, 0.5},
      // HardSwish(-3) = 0 (the spec's reference gave -1.5), HardSwish(-1.5) = -1.5 * 1.5 / 6.
      {"HardSwish", -3, -0.0}, {"HardSwish", -1.5, -0.375}, {"HardSwish", 3, 3},
      {"HardSwish", -kInf, -0.0}, {"HardSwish", kInf, kInf}, {"HardSwish", kNaN, kNaN},
      {"HardSwish", -5, -0.0},
      {"HardGelu", -3, -0.0}, {"HardGelu", -1.5, -0.375}, {"HardGelu", -kInf, -0.0},
      {"HardGelu", kNaN, kNaN},
      {"HardTanh", kNaN, kNaN}, {"HardTanh", kInf, 1}, {"HardTanh", -kInf, -1},
      {"HardTanh", -0.0, -0.0},
      {"QuickGelu", -kInf, -0.0}, {"QuickGelu", kInf, kInf}, {"QuickGelu", kNaN, kNaN},
      {"TanhShrink", kInf, kInf}, {"TanhShrink", -kInf, -kInf}, {"TanhShrink", kNaN, kNaN},
      {"TanhShrink", -0.0, 0},
  };
  // clang-format on
  for (DType dtype : {DType::Float64, DType::Float32}) {
    for (const Known& k : known) {
      EXPECT_TRUE(Same(RunUnary(k.method, k.x, dtype), k.want))
          << k.method << "(" << k.x << ") " << DTypeName(dtype);
    }
    EXPECT_TRUE(test::Close(RunUnary("SELU", -kInf, dtype), -lambda * alpha,
                            test::DefaultTolerance(dtype)));
    EXPECT_TRUE(
        test::Close(RunUnary("LeakyReLU", -2, dtype), -0.02, test::DefaultTolerance(dtype)));
  }
  // Small-argument accuracy of log1p/expm1 (the spec's reference used the naive forms).
  EXPECT_TRUE(test::Close(RunUnary("Log1p", 1e-20, DType::Float64), 1e-20, {0, 1e-15}));
  EXPECT_TRUE(test::Close(RunUnary("Expm1", 1e-20, DType::Float64), 1e-20, {0, 1e-15}));
  EXPECT_TRUE(test::Close(RunUnary("Log1p", 1e-10, DType::Float32), 1e-10, {0, 1e-6}));
  EXPECT_TRUE(test::Close(RunUnary("Expm1", -1e-10, DType::Float32), -1e-10, {0, 1e-6}));
  // Exact log near 1 (the spec's log32 gave ln(0.99) ~ +0.028).
  EXPECT_TRUE(test::Close(RunUnary("Log", 0.99, DType::Float64), std::log(0.99), {0, 1e-15}));
  // Exp overflows to +Inf (not FLT_MAX) in f32, and underflows gradually.
  EXPECT_TRUE(Same(RunUnary("Exp", 89, DType::Float32), kInf));
  EXPECT_GT(RunUnary("Exp", -100, DType::Float32),
            0.0);  // subnormal, not flushed to 0
}

TEST(ActivationSpecial, HalfFormatsOverflowAndRound) {
  // f16 max is 65504: exp(12) = 162755 overflows to +Inf; exp(11) = 59874.1 stays finite.
  EXPECT_TRUE(Same(RunUnary("Exp", 12, DType::Float16), kInf));
  EXPECT_TRUE(Same(RunUnary("Exp", 11, DType::Float16), F16ToF32(F32ToF16(std::exp(11.0f)))));
  EXPECT_TRUE(Same(RunUnary("Expm1", 12, DType::Float16), kInf));
  EXPECT_TRUE(Same(RunUnary("SELU", 65504, DType::Float16), kInf));
  EXPECT_TRUE(Same(RunUnary("Softplus", 65504, DType::Float16), 65504));
  EXPECT_TRUE(Same(RunUnary("HardSwish", 65504, DType::Float16), 65504));
  // bf16 shares the f32 range: exp(88) = 1.65e38 is finite, exp(89) overflows.
  EXPECT_TRUE(Same(RunUnary("Exp", 88, DType::BFloat16), BF16ToF32(F32ToBF16(std::exp(88.0f)))));
  EXPECT_TRUE(Same(RunUnary("Exp", 89, DType::BFloat16), kInf));
  // One rounding, to nearest even: sigmoid(1) = 0.7310586 in f32, then to 16 bits.
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const float f = 1.0f / (1.0f + std::exp(-1.0f));
    const double want = dtype == DType::Float16 ? F16ToF32(F32ToF16(f)) : BF16ToF32(F32ToBF16(f));
    EXPECT_TRUE(Same(RunUnary("Sigmoid", 1, dtype), want)) << DTypeName(dtype);
    EXPECT_TRUE(Same(RunUnary("Silu", -kInf, dtype), -0.0));
    EXPECT_TRUE(Same(RunUnary("ReLU", kNaN, dtype), kNaN));
  }
}

// f16/bf16 results are the f32 result rounded to nearest: within half a unit in the last place of
// the 16-bit format of the float64 value, plus the f32 compute error (truncation would fail this).
TEST(ActivationSpecial, HalfFormatsRoundToNearest) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const int mantissaBits = dtype == DType::Float16 ? 10 : 7;
    const double minNormal = dtype == DType::Float16 ? 0x1p-14 : 0x1p-126;
    for (const char* name : {"Exp", "Sigmoid", "Tanh", "Gelu", "Silu", "Softplus", "SELU"}) {
      const Buffer x = RandomBuffer(dtype, 2000, 77, -5, 5);
      Buffer out(dtype, x.count());
      (Act().*Methods().unary.at(name).fn)(out.data(), x.data(), x.count(), dtype);
      int bad = 0;
      for (int64_t i = 0; i < x.count(); ++i) {
        const double want = UnaryOracles().at(name).f(x.Get(i));
        if (std::fabs(want) < minNormal) continue;
        int exponent = 0;
        std::frexp(want, &exponent);  // |want| in [2^(exponent-1), 2^exponent)
        const double halfUlp = std::ldexp(0.5, exponent - 1 - mantissaBits);
        if (std::fabs(out.Get(i) - want) > halfUlp + 1e-6 * std::fabs(want)) ++bad;
      }
      EXPECT_EQ(bad, 0) << name << " " << DTypeName(dtype);
    }
  }
}

std::vector<double> RunVector(const std::string& name, const std::vector<double>& x, DType dtype) {
  const Buffer in = FromDoubles(dtype, x);
  Buffer out(dtype, in.count());
  out.Poison();
  (Act().*Methods().unary.at(name).fn)(out.data(), in.data(), in.count(), dtype);
  EXPECT_TRUE(out.GuardIntact());
  return out.ToDoubles();
}

void ExpectSame(const std::vector<double>& got, const std::vector<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(Same(got[i], want[i])) << what << "[" << i << "]";
}

TEST(ActivationSpecial, Softmax) {
  for (DType dtype : FloatDTypes()) {
    const std::string d(DTypeName(dtype));
    ExpectSame(RunVector("Softmax", {0, -kInf, 0}, dtype), {0.5, 0, 0.5}, "masked " + d);
    ExpectSame(RunVector("LogSoftmax", {0, -kInf}, dtype), {0, -kInf}, "masked log " + d);
    ExpectSame(RunVector("Softmax", {-kInf, -kInf, -kInf}, dtype), {kNaN, kNaN, kNaN},
               "all -inf " + d);
    ExpectSame(RunVector("LogSoftmax", {-kInf, -kInf}, dtype), {kNaN, kNaN}, "all -inf " + d);
    ExpectSame(RunVector("Softmax", {kInf, 1}, dtype), {kNaN, kNaN}, "+inf " + d);
    ExpectSame(RunVector("Softmax", {kNaN, 1}, dtype), {kNaN, kNaN}, "nan " + d);
    ExpectSame(RunVector("LogSoftmax", {1, kNaN}, dtype), {kNaN, kNaN}, "nan log " + d);
    ExpectSame(RunVector("Softmax", {60000, 60000}, dtype), {0.5, 0.5}, "large " + d);
    ExpectSame(RunVector("Softmax", {-60000, -60000}, dtype), {0.5, 0.5}, "small " + d);
    ExpectSame(RunVector("Softmax", {3.25}, dtype), {1}, "single " + d);
    ExpectSame(RunVector("LogSoftmax", {-7}, dtype), {0}, "single log " + d);
  }
  // The probabilities are computed in double and rounded once: 1/3 is the nearest f32.
  ExpectSame(RunVector("Softmax", {0, 0, 0}, DType::Float32),
             std::vector<double>(3, static_cast<double>(1.0f / 3.0f)), "thirds");
  // In-place use is safe.
  Buffer x = FromDoubles(DType::Float32, {1, 2, 3});
  Act().Softmax(x.data(), x.data(), 3, DType::Float32);
  const double e = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_TRUE(test::AllClose(x, {std::exp(1.0) / e, std::exp(2.0) / e, std::exp(3.0) / e},
                             test::DefaultTolerance(DType::Float32)));
}

double RunParam(const std::string& name, double x, DType dtype, float p1, float p2 = 0) {
  const Buffer in = FromDoubles(dtype, {x});
  Buffer out(dtype, 1);
  out.Poison();
  if (Methods().param1.count(name)) {
    (Act().*Methods().param1.at(name).fn)(out.data(), in.data(), 1, dtype, p1);
  } else {
    (Act().*Methods().param2.at(name).fn)(out.data(), in.data(), 1, dtype, p1, p2);
  }
  return out.Get(0);
}

TEST(ActivationSpecial, ParametricKnownValues) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    // NaN propagates everywhere (the spec's reference mapped NaN to 0 in Threshold/HardShrink).
    for (const char* name : {"PReLU", "LeakyReLUSlope", "ELUAlpha", "CELUAlpha", "Threshold",
                             "Snake", "HardShrink", "SoftShrink"}) {
      EXPECT_TRUE(Same(RunParam(name, kNaN, dtype, 0.5f), kNaN)) << name;
    }
    for (const char* name : {"HardTanhRange", "SnakeParametric", "RReLU"}) {
      EXPECT_TRUE(Same(RunParam(name, kNaN, dtype, 0.25f, 0.5f), kNaN)) << name;
    }
    EXPECT_TRUE(Same(RunParam("Threshold", 0.5, dtype, 0.5f), 0));  // x <= t gives 0
    EXPECT_TRUE(Same(RunParam("Threshold", 0.75, dtype, 0.5f), 0.75));
    EXPECT_TRUE(Same(RunParam("HardShrink", -0.5, dtype, 0.5f),
                     0));  // |x| <= lambda gives 0
    EXPECT_TRUE(Same(RunParam("HardShrink", -0.75, dtype, 0.5f), -0.75));
    EXPECT_TRUE(Same(RunParam("SoftShrink", -0.75, dtype, 0.5f), -0.25));
    EXPECT_TRUE(Same(RunParam("SoftShrink", kInf, dtype, 0.5f), kInf));
    EXPECT_TRUE(Same(RunParam("Snake", kInf, dtype, 2.0f), kInf));
    EXPECT_TRUE(Same(RunParam("Snake", -kInf, dtype, 2.0f), -kInf));
    EXPECT_TRUE(Same(RunParam("SnakeParametric", kInf, dtype, 2.0f, -3.0f), kInf));
    EXPECT_TRUE(Same(RunParam("Snake", 0, dtype, 2.0f), 0));
    EXPECT_TRUE(Same(RunParam("CELUAlpha", -kInf, dtype, 2.0f), -2));
    EXPECT_TRUE(Same(RunParam("ELUAlpha", -kInf, dtype, 0.5f), -0.5));
    EXPECT_TRUE(Same(RunParam("HardTanhRange", -kInf, dtype, -2.0f, 3.0f), -2));
    EXPECT_TRUE(Same(RunParam("HardTanhRange", 5, dtype, 0.5f, 0.5f),
                     0.5));  // min == max
    EXPECT_TRUE(Same(RunParam("RReLU", -4, dtype, 0.25f, 0.75f),
                     -2));  // slope (l + u) / 2
    EXPECT_TRUE(Same(RunParam("RReLU", -kInf, dtype, 0.25f, 0.75f), -kInf));
    EXPECT_TRUE(Same(RunParam("PReLU", -2, dtype, -0.5f), 1));
  }
  // f64 uses the float parameter widened exactly: 0.1f is 0.100000001490116...
  EXPECT_TRUE(
      Same(RunParam("LeakyReLUSlope", -1, DType::Float64, 0.1f), -static_cast<double>(0.1f)));
}

TEST(ActivationSpecial, GatedKnownValues) {
  for (DType dtype : FloatDTypes()) {
    auto run = [&](const std::string& name, double g, double u) {
      const Buffer gate = FromDoubles(dtype, {g});
      const Buffer up = FromDoubles(dtype, {u});
      Buffer out(dtype, 1);
      (Act().*Methods().tensors.at(name + "Tensors").fn)(out.data(), gate.data(), up.data(), 1,
                                                         dtype);
      const Buffer packed = FromDoubles(dtype, {g, u});
      Buffer out2(dtype, 1);
      (Act().*Methods().packed.at(name).fn)(out2.data(), packed.data(), 1, 1, dtype);
      EXPECT_TRUE(Same(out2.Get(0), out.Get(0))) << name;
      return out.Get(0);
    };
    EXPECT_TRUE(Same(run("SwiGLU", -kInf, 2), -0.0));
    EXPECT_TRUE(Same(run("GLU", 3, kInf), 3));
    EXPECT_TRUE(Same(run("GLU", 3, -kInf), 0));
    EXPECT_TRUE(Same(run("ReGLU", 2, kNaN), kNaN));
    EXPECT_TRUE(Same(run("ReGLU", 2, -1), 0));
    EXPECT_TRUE(Same(run("LinGLU", 0, kInf), kNaN));  // 0 * Inf
    EXPECT_TRUE(Same(run("SiGLU", kInf, 4), 4));
    EXPECT_TRUE(Same(run("SeGLU", -kInf, 4), 0));
    EXPECT_TRUE(Same(run("GeGLU", 2, -kInf), -0.0));
    EXPECT_TRUE(Same(run("GeGLUTanh", 2, kInf), kInf));
  }
}

// ---- Aliases and layouts ------------------------------------------------------------------------

std::vector<double> RunU(const std::string& name, const Buffer& x) {
  Buffer out(x.dtype(), x.count());
  (Act().*Methods().unary.at(name).fn)(out.data(), x.data(), x.count(), x.dtype());
  return out.ToDoubles();
}

std::vector<double> RunP(const std::string& name, const Buffer& x, float p1, float p2 = 0) {
  Buffer out(x.dtype(), x.count());
  if (Methods().param1.count(name)) {
    (Act().*Methods().param1.at(name).fn)(out.data(), x.data(), x.count(), x.dtype(), p1);
  } else {
    (Act().*Methods().param2.at(name).fn)(out.data(), x.data(), x.count(), x.dtype(), p1, p2);
  }
  return out.ToDoubles();
}

TEST(ActivationAliases, SameFunctions) {
  for (DType dtype : FloatDTypes()) {
    const Buffer x = RandomBuffer(dtype, 257, 42, -6, 6);
    ExpectSame(RunU("Swish", x), RunU("Silu", x), "Swish");
    ExpectSame(RunU("CELU", x), RunU("ELU", x), "CELU");
    ExpectSame(RunU("HardGelu", x), RunU("HardSwish", x), "HardGelu");
    ExpectSame(RunP("CELUAlpha", x, 1.0f), RunU("ELU", x), "CELUAlpha(1)");
    ExpectSame(RunP("ELUAlpha", x, 1.0f), RunU("ELU", x), "ELUAlpha(1)");
    if (dtype != DType::Float64) {  // f64 LeakyReLU uses 0.01, the float param is 0.01f
      ExpectSame(RunP("LeakyReLUSlope", x, 0.01f), RunU("LeakyReLU", x), "LeakyReLUSlope");
    }
    ExpectSame(RunP("PReLU", x, 0.3f), RunP("LeakyReLUSlope", x, 0.3f), "PReLU");
    ExpectSame(RunP("HardTanhRange", x, -1.0f, 1.0f), RunU("HardTanh", x), "HardTanhRange");
    ExpectSame(RunP("SnakeParametric", x, 0.7f, 0.7f), RunP("Snake", x, 0.7f), "Snake");
    ExpectSame(RunP("RReLU", x, 0.2f, 0.2f), RunP("LeakyReLUSlope", x, 0.2f), "RReLU");
    Buffer out(dtype, x.count());
    const float slope = 0.3f;
    Act().PReLUV(out.data(), x.data(), &slope, x.count(), dtype, 1);
    ExpectSame(out.ToDoubles(), RunP("PReLU", x, 0.3f), "PReLUV shared slope");
    // SeGLU is SiGLU (a kept convention, not SELU-gated).
    const Buffer packed = RandomBuffer(dtype, 2 * 2 * 33, 43, -5, 5);
    Buffer se(dtype, 66), si(dtype, 66);
    Act().SeGLU(se.data(), packed.data(), 2, 33, dtype);
    Act().SiGLU(si.data(), packed.data(), 2, 33, dtype);
    ExpectSame(se.ToDoubles(), si.ToDoubles(), "SeGLU");
  }
}

TEST(ActivationLayout, PReLUVChannelsLastAndGluRows) {
  // [2, 3] channels-last: element (r, c) uses slopes[c].
  const std::vector<float> slopes = {0.5f, -1.0f, 2.0f};
  const Buffer x = FromDoubles(DType::Float64, {-2, -2, -2, 4, -4, -1});
  Buffer out(DType::Float64, 6);
  Act().PReLUV(out.data(), x.data(), slopes.data(), 6, DType::Float64, 3);
  ExpectSame(out.ToDoubles(), {-1, 2, -4, 4, 4, -2}, "PReLUV");
  // LinGLU on [2, 2*2]: gate = first half of each row.
  const Buffer packed = FromDoubles(DType::Float32, {1, 2, 10, 20, 3, 4, 30, 40});
  Buffer glu(DType::Float32, 4);
  Act().LinGLU(glu.data(), packed.data(), 2, 2, DType::Float32);
  ExpectSame(glu.ToDoubles(), {10, 40, 90, 160}, "LinGLU");
  // In-place use is safe, also for the packed form (row r writes before its own inputs).
  Buffer inPlace = FromDoubles(DType::Float32, {1, 2, 10, 20, 3, 4, 30, 40});
  Act().LinGLU(inPlace.data(), inPlace.data(), 2, 2, DType::Float32);
  ExpectSame({inPlace.Get(0), inPlace.Get(1), inPlace.Get(2), inPlace.Get(3)}, {10, 40, 90, 160},
             "in-place LinGLU");
  Buffer y = FromDoubles(DType::Float16, {0, 1, -1});
  Act().ReLU(y.data(), y.data(), 3, DType::Float16);
  ExpectSame(y.ToDoubles(), {0, 1, 0}, "in-place ReLU");
}

// ---- Validation: every path throws before writing anything --------------------------------------

// Runs a call that must throw; the output buffer must stay fully poisoned.
template <class Call>
void ExpectRejected(const std::string& method, ErrorCode code, const std::string& arg, Buffer& out,
                    Call call) {
  out.Poison();
  EXPECT_TRUE(ThrowsError(call, code, {Op(method), "'" + arg + "'"})) << method << " " << arg;
  EXPECT_TRUE(out.IsPoisoned()) << method << " wrote before throwing (" << arg << ")";
}

TEST(ActivationValidation, UnaryFamilies) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    const Buffer x = RandomBuffer(dtype, 4, 1);
    Buffer out(dtype, 4);
    const auto kInv = ErrorCode::InvalidArgument;
    auto common = [&](const std::string& name, auto call) {
      ExpectRejected(name, kInv, "count", out, [&] { call(out.data(), x.data(), -1, dtype); });
      ExpectRejected(name, kInv, "dst", out, [&] { call(nullptr, x.data(), 4, dtype); });
      ExpectRejected(name, kInv, "src", out, [&] { call(out.data(), nullptr, 4, dtype); });
      ExpectRejected(name, ErrorCode::UnsupportedDType, "dtype", out,
                     [&] { call(out.data(), x.data(), 4, DType::Int32); });
      ExpectRejected(name, ErrorCode::UnsupportedDType, "dtype", out,
                     [&] { call(out.data(), x.data(), 4, DType::Float8E4M3); });
      EXPECT_NO_THROW(call(nullptr, nullptr, 0, dtype)) << name;
    };
    for (const auto& [name, e] : Methods().unary) {
      common(name, [&](void* d, const void* s, int64_t n, DType t) { (Act().*e.fn)(d, s, n, t); });
    }
    for (const auto& [name, e] : Methods().param1) {
      auto call = [&](float p) {
        return [&, p](void* d, const void* s, int64_t n, DType t) { (Act().*e.fn)(d, s, n, t, p); };
      };
      common(name, call(kGoodParam1));
      for (float bad : {kNaNF, kInfF, -kInfF}) {
        ExpectRejected(name, kInv, "param", out,
                       [&] { call(bad)(out.data(), x.data(), 4, dtype); });
        // Parameters are validated even when there is nothing to compute.
        ExpectRejected(name, kInv, "param", out, [&] { call(bad)(nullptr, nullptr, 0, dtype); });
      }
    }
    for (const auto& [name, e] : Methods().param2) {
      auto call = [&](float p1, float p2) {
        return [&, p1, p2](void* d, const void* s, int64_t n, DType t) {
          (Act().*e.fn)(d, s, n, t, p1, p2);
        };
      };
      common(name, call(kGoodLower, kGoodUpper));
      for (float bad : {kNaNF, kInfF, -kInfF}) {
        ExpectRejected(name, kInv, "param1", out,
                       [&] { call(bad, kGoodUpper)(out.data(), x.data(), 4, dtype); });
        ExpectRejected(name, kInv, "param2", out,
                       [&] { call(kGoodLower, bad)(out.data(), x.data(), 4, dtype); });
      }
    }
    auto param1 = [&](const std::string& name, float p, const std::string& fragment) {
      ExpectRejected(name, kInv, "param", out, [&] {
        (Act().*Methods().param1.at(name).fn)(out.data(), x.data(), 4, dtype, p);
      });
      EXPECT_TRUE(ThrowsError(
          [&] { (Act().*Methods().param1.at(name).fn)(out.data(), x.data(), 4, dtype, p); }, kInv,
          {fragment}));
    };
    param1("CELUAlpha", 0.0f, "non-zero");
    param1("CELUAlpha", -0.0f, "non-zero");
    param1("Snake", 0.0f, "non-zero");
    param1("HardShrink", -0.5f, ">= 0");
    param1("SoftShrink", -0.5f, ">= 0");
    auto param2 = [&](const std::string& name, float p1, float p2, const std::string& arg) {
      ExpectRejected(name, kInv, arg, out, [&] {
        (Act().*Methods().param2.at(name).fn)(out.data(), x.data(), 4, dtype, p1, p2);
      });
    };
    param2("HardTanhRange", 1.0f, -1.0f, "param1");
    param2("SnakeParametric", 0.0f, 1.0f, "param1");
    param2("SnakeParametric", 1.0f, 0.0f, "param2");
    param2("RReLU", -0.1f, 0.5f, "param1");
    param2("RReLU", 0.6f, 0.5f, "param1");
  }
}

TEST(ActivationValidation, PReLUV) {
  const Buffer x = RandomBuffer(DType::Float32, 6, 2);
  Buffer out(DType::Float32, 6);
  const std::vector<float> slopes = {0.1f, 0.2f, 0.3f};
  const std::string m = "PReLUV";
  const auto kInv = ErrorCode::InvalidArgument;
  auto call = [&](void* d, const void* s, const float* w, int64_t n, DType t, int64_t c) {
    Act().PReLUV(d, s, w, n, t, c);
  };
  const float* w = slopes.data();
  ExpectRejected(m, kInv, "slopeCount", out,
                 [&] { call(out.data(), x.data(), w, 6, DType::Float32, 0); });
  ExpectRejected(m, kInv, "slopeCount", out,
                 [&] { call(out.data(), x.data(), w, 6, DType::Float32, -3); });
  ExpectRejected(m, kInv, "slopeCount", out,
                 [&] { call(nullptr, nullptr, nullptr, 0, DType::Float32, 0); });
  ExpectRejected(m, ErrorCode::ShapeMismatch, "count", out,
                 [&] { call(out.data(), x.data(), w, 5, DType::Float32, 3); });
  ExpectRejected(m, kInv, "slopes", out,
                 [&] { call(out.data(), x.data(), nullptr, 6, DType::Float32, 3); });
  ExpectRejected(m, kInv, "count", out,
                 [&] { call(out.data(), x.data(), w, -3, DType::Float32, 3); });
  ExpectRejected(m, kInv, "dst", out, [&] { call(nullptr, x.data(), w, 6, DType::Float32, 3); });
  ExpectRejected(m, kInv, "src", out, [&] { call(out.data(), nullptr, w, 6, DType::Float32, 3); });
  ExpectRejected(m, ErrorCode::UnsupportedDType, "dtype", out,
                 [&] { call(out.data(), x.data(), w, 6, DType::Int8, 3); });
  EXPECT_NO_THROW(call(nullptr, nullptr, nullptr, 0, DType::Float32, 4));
}

TEST(ActivationValidation, GatedFamilies) {
  const auto kInv = ErrorCode::InvalidArgument;
  const Buffer packed = RandomBuffer(DType::Float16, 2 * 2 * 3, 3);
  const Buffer gate = RandomBuffer(DType::Float16, 6, 4);
  Buffer out(DType::Float16, 6);
  const DType f16 = DType::Float16;
  for (const auto& [name, e] : Methods().packed) {
    auto call = [&](void* d, const void* p, int64_t b, int64_t h, DType t) {
      (Act().*e.fn)(d, p, b, h, t);
    };
    ExpectRejected(name, kInv, "batch", out, [&] { call(out.data(), packed.data(), -1, 3, f16); });
    ExpectRejected(name, kInv, "halfCount", out,
                   [&] { call(out.data(), packed.data(), 2, -1, f16); });
    ExpectRejected(name, kInv, "dst", out, [&] { call(nullptr, packed.data(), 2, 3, f16); });
    ExpectRejected(name, kInv, "packed", out, [&] { call(out.data(), nullptr, 2, 3, f16); });
    ExpectRejected(name, ErrorCode::UnsupportedDType, "dtype", out,
                   [&] { call(out.data(), packed.data(), 2, 3, DType::Int64); });
    // batch * 2 * halfCount must fit in int64.
    const int64_t big = int64_t{1} << 40;
    ExpectRejected(name, kInv, "batch", out,
                   [&] { call(out.data(), packed.data(), big, big, f16); });
    ExpectRejected(name, kInv, "halfCount", out, [&] {
      call(out.data(), packed.data(), 1, std::numeric_limits<int64_t>::max(), f16);
    });
    EXPECT_NO_THROW(call(nullptr, nullptr, 0, 3, f16));
    EXPECT_NO_THROW(call(nullptr, nullptr, 3, 0, f16));
  }
  for (const auto& [name, e] : Methods().tensors) {
    auto call = [&](void* d, const void* g, const void* u, int64_t n, DType t) {
      (Act().*e.fn)(d, g, u, n, t);
    };
    ExpectRejected(name, kInv, "count", out,
                   [&] { call(out.data(), gate.data(), gate.data(), -1, f16); });
    ExpectRejected(name, kInv, "dst", out,
                   [&] { call(nullptr, gate.data(), gate.data(), 6, f16); });
    ExpectRejected(name, kInv, "gate", out,
                   [&] { call(out.data(), nullptr, gate.data(), 6, f16); });
    ExpectRejected(name, kInv, "up", out, [&] { call(out.data(), gate.data(), nullptr, 6, f16); });
    ExpectRejected(name, ErrorCode::UnsupportedDType, "dtype", out,
                   [&] { call(out.data(), gate.data(), gate.data(), 6, DType::Bool); });
    EXPECT_NO_THROW(call(nullptr, nullptr, nullptr, 0, f16));
  }
}

}  // namespace
}  // namespace backplane
