// Physics reference kernels, called through the CPU backend. Oracles: SciPy/NumPy golden data
// (tests/golden/gen_physics.py: scipy.ndimage wrap-mode stencils, numpy.fft), a direct O(n^2) DFT
// in long double written here, analytic derivatives of periodic sin/cos fields (order of
// convergence as the spacing halves), Parseval's identity and hand-computed special values.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::AllClose;
using test::Buffer;
using test::DefaultTolerance;
using test::FloatDTypes;
using test::FromDoubles;
using test::RandomBuffer;
using test::ThrowsError;
using Vec = std::vector<double>;

PhysicsSurface& Physics() {
  static auto backend = cpu::CreateBackend();
  return backend->Physics();
}

nlohmann::json Golden(const std::string& name) {
  std::ifstream in(test::GoldenPath(name));
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  return nlohmann::json::parse(in);
}

DType ParseDType(const nlohmann::json& c) {
  return *DTypeFromName(c.at("dtype").get<std::string>());
}

Vec Doubles(const nlohmann::json& values) { return values.get<Vec>(); }

// The one-input 1-D stencils share a signature.
using Stencil = void (PhysicsSurface::*)(const void*, void*, int64_t, float, DType);
struct StencilMethod {
  const char* key;  // golden-file key
  const char* op;
  Stencil fn;
};
const StencilMethod kStencils[] = {
    {"laplacian4", "Physics.Laplacian4", &PhysicsSurface::Laplacian4},
    {"grad1d", "Physics.Grad1D", &PhysicsSurface::Grad1D},
    {"divergence1d", "Physics.Divergence1D", &PhysicsSurface::Divergence1D},
    {"quantum_potential", "Physics.QuantumPotential", &PhysicsSurface::QuantumPotential},
    {"bohmian_velocity", "Physics.BohmianVelocity", &PhysicsSurface::BohmianVelocity},
};

void RunStencil(Stencil fn, const Buffer& in, Buffer& out, float h) {
  (Physics().*fn)(in.data(), out.data(), in.count(), h, in.dtype());
}

int64_t Wrap(int64_t i, int64_t n) { return ((i % n) + n) % n; }

// ---- float64 oracles written here (used for the > 4096-element cases) --------------------------

Vec OracleLaplacian(const Vec& u, const std::vector<int64_t>& dims, double h) {
  Vec out(u.size(), 0.0);
  const int64_t n = static_cast<int64_t>(u.size());
  int64_t stride = n;
  for (int64_t extent : dims) {
    stride /= extent;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = (i / stride) % extent;
      const int64_t lo = i + (Wrap(c - 1, extent) - c) * stride;
      const int64_t hi = i + (Wrap(c + 1, extent) - c) * stride;
      out[static_cast<size_t>(i)] +=
          u[static_cast<size_t>(lo)] + u[static_cast<size_t>(hi)] - 2.0 * u[static_cast<size_t>(i)];
    }
  }
  for (double& v : out) v /= h * h;
  return out;
}

Vec OracleStencil(const Vec& u, const std::vector<double>& weights, double scale) {
  const int64_t n = static_cast<int64_t>(u.size());
  const int64_t half = static_cast<int64_t>(weights.size()) / 2;
  Vec out(u.size(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int64_t k = 0; k < static_cast<int64_t>(weights.size()); ++k) {
      s += weights[static_cast<size_t>(k)] * u[static_cast<size_t>(Wrap(i + k - half, n))];
    }
    out[static_cast<size_t>(i)] = s / scale;
  }
  return out;
}

Vec OracleFor(const std::string& key, const Vec& u, double h) {
  if (key == "laplacian4") return OracleStencil(u, {-1, 16, -30, 16, -1}, 12.0 * h * h);
  if (key == "quantum_potential") {
    Vec s(u.size());
    for (size_t i = 0; i < u.size(); ++i) s[i] = std::sqrt(u[i]);
    Vec second = OracleStencil(s, {1, -2, 1}, h * h);
    for (size_t i = 0; i < u.size(); ++i) second[i] = s[i] > 0 ? -0.5 * second[i] / s[i] : 0.0;
    return second;
  }
  return OracleStencil(u, {-1, 0, 1}, 2.0 * h);
}

// Direct DFT X_k = sum_j x_j exp(sign 2 pi i jk/n) in long double, exact angle reduction jk mod n.
void DirectDFT(const Vec& re, const Vec& im, int sign, Vec& outRe, Vec& outIm) {
  const size_t n = re.size();
  std::vector<long double> c(n), s(n);
  for (size_t m = 0; m < n; ++m) {
    const long double angle = 2.0L * std::numbers::pi_v<long double> * static_cast<long double>(m) /
                              static_cast<long double>(n);
    c[m] = std::cos(angle);
    s[m] = sign * std::sin(angle);
  }
  outRe.assign(n, 0.0);
  outIm.assign(n, 0.0);
  for (size_t k = 0; k < n; ++k) {
    long double sr = 0, si = 0;
    size_t idx = 0;  // j*k mod n
    for (size_t j = 0; j < n; ++j) {
      sr += re[j] * c[idx] - im[j] * s[idx];
      si += re[j] * s[idx] + im[j] * c[idx];
      idx += k;
      if (idx >= n) idx -= n;
    }
    outRe[k] = static_cast<double>(sr);
    outIm[k] = static_cast<double>(si);
  }
}

// ---- golden files -----------------------------------------------------------------------------

TEST(PhysicsGolden, Laplacian) {
  const auto golden = Golden("physics_stencils.json");
  int cases = 0;
  for (const auto& c : golden.at("laplacian")) {
    const DType dtype = ParseDType(c);
    const auto dims = c.at("dims").get<std::vector<int64_t>>();
    const Buffer in = FromDoubles(dtype, Doubles(c.at("input")));
    Buffer out(dtype, in.count());
    out.Poison();
    Physics().Laplacian(in.data(), out.data(), dims.data(), static_cast<int64_t>(dims.size()),
                        c.at("spacing").get<float>(), dtype);
    EXPECT_TRUE(AllClose(out, Doubles(c.at("output")), DefaultTolerance(dtype)))
        << DTypeName(dtype) << " dims " << c.at("dims").dump();
    EXPECT_TRUE(out.GuardIntact());
    ++cases;
  }
  EXPECT_EQ(cases, 60);
}

TEST(PhysicsGolden, Stencils1D) {
  const auto golden = Golden("physics_stencils.json");
  for (const StencilMethod& m : kStencils) {
    int cases = 0;
    for (const auto& c : golden.at(m.key)) {
      const DType dtype = ParseDType(c);
      const Buffer in = FromDoubles(dtype, Doubles(c.at("input")));
      Buffer out(dtype, in.count());
      out.Poison();
      RunStencil(m.fn, in, out, c.at("spacing").get<float>());
      EXPECT_TRUE(AllClose(out, Doubles(c.at("output")), DefaultTolerance(dtype)))
          << m.op << " " << DTypeName(dtype) << " n=" << in.count();
      EXPECT_TRUE(out.GuardIntact());
      ++cases;
    }
    EXPECT_EQ(cases, 40) << m.op;
  }
}

TEST(PhysicsGolden, MadelungContinuity) {
  const auto golden = Golden("physics_stencils.json");
  for (const auto& c : golden.at("madelung")) {
    const DType dtype = ParseDType(c);
    const Buffer rho = FromDoubles(dtype, Doubles(c.at("density")));
    const Buffer v = FromDoubles(dtype, Doubles(c.at("velocity")));
    Buffer out(dtype, rho.count());
    out.Poison();
    Physics().MadelungContinuity(rho.data(), v.data(), out.data(), rho.count(),
                                 c.at("spacing").get<float>(), dtype);
    EXPECT_TRUE(AllClose(out, Doubles(c.at("output")), DefaultTolerance(dtype)))
        << DTypeName(dtype) << " n=" << rho.count();
    EXPECT_TRUE(out.GuardIntact());
  }
}

void CheckFFTGolden(const std::string& file, int expectedCases) {
  const auto golden = Golden(file);
  int cases = 0;
  for (const auto& c : golden.at("cases")) {
    const DType dtype = ParseDType(c);
    const int64_t n = c.at("n").get<int64_t>();
    const Buffer re = FromDoubles(dtype, Doubles(c.at("re")));
    const bool nullImag = c.at("im").is_null();
    const Buffer im = nullImag ? Buffer(dtype, n) : FromDoubles(dtype, Doubles(c.at("im")));
    const void* imData = nullImag ? nullptr : im.data();
    for (const char* name : {"fft", "ifft"}) {
      if (!c.contains(std::string(name) + "_re")) continue;
      Buffer outRe(dtype, n), outIm(dtype, n);
      outRe.Poison();
      outIm.Poison();
      if (std::string(name) == "fft") {
        Physics().FFT1D(re.data(), imData, outRe.data(), outIm.data(), n, dtype);
      } else {
        Physics().IFFT1D(re.data(), imData, outRe.data(), outIm.data(), n, dtype);
      }
      const auto tol = DefaultTolerance(dtype);
      EXPECT_TRUE(AllClose(outRe, Doubles(c.at(std::string(name) + "_re")), tol))
          << name << " real " << DTypeName(dtype) << " n=" << n;
      EXPECT_TRUE(AllClose(outIm, Doubles(c.at(std::string(name) + "_im")), tol))
          << name << " imag " << DTypeName(dtype) << " n=" << n;
      EXPECT_TRUE(outRe.GuardIntact() && outIm.GuardIntact());
    }
    ++cases;
  }
  EXPECT_EQ(cases, expectedCases) << file;
}

TEST(PhysicsGolden, FFTFloat64EveryLength1To64AndPrime1009) {
  CheckFFTGolden("physics_fft_f64.json", 65);
}
TEST(PhysicsGolden, FFTFloat32EveryLength1To64AndPrime1009) {
  CheckFFTGolden("physics_fft_f32.json", 65);
}
TEST(PhysicsGolden, FFTHalfFormats) { CheckFFTGolden("physics_fft_half.json", 50); }

// ---- more than 4096 elements, float64 oracle written here ---------------------------------------

TEST(PhysicsLarge, LaplacianRank1And3) {
  for (DType dtype : FloatDTypes()) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{4099}, {17, 16, 17}}) {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      const Buffer in = RandomBuffer(dtype, n, 11 + static_cast<uint64_t>(dims.size()));
      Buffer out(dtype, n);
      out.Poison();
      Physics().Laplacian(in.data(), out.data(), dims.data(), static_cast<int64_t>(dims.size()),
                          0.25f, dtype);
      EXPECT_TRUE(
          AllClose(out, OracleLaplacian(in.ToDoubles(), dims, 0.25), DefaultTolerance(dtype)))
          << DTypeName(dtype) << " rank " << dims.size();
      EXPECT_TRUE(out.GuardIntact());
    }
  }
}

TEST(PhysicsLarge, Stencils1D) {
  constexpr int64_t n = 4099;
  for (DType dtype : FloatDTypes()) {
    for (const StencilMethod& m : kStencils) {
      const bool density = std::string(m.key) == "quantum_potential";
      const Buffer in = RandomBuffer(dtype, n, 21, density ? 0.05 : -4.0, 4.0);
      Buffer out(dtype, n);
      out.Poison();
      RunStencil(m.fn, in, out, 0.3f);
      EXPECT_TRUE(AllClose(out, OracleFor(m.key, in.ToDoubles(), static_cast<double>(0.3f)),
                           DefaultTolerance(dtype)))
          << m.op << " " << DTypeName(dtype);
      EXPECT_TRUE(out.GuardIntact());
    }
    const Buffer rho = RandomBuffer(dtype, n, 22, 0.0, 4.0);
    const Buffer v = RandomBuffer(dtype, n, 23);
    Buffer out(dtype, n);
    Physics().MadelungContinuity(rho.data(), v.data(), out.data(), n, 0.3f, dtype);
    Vec flux(n);
    for (int64_t i = 0; i < n; ++i) flux[static_cast<size_t>(i)] = rho.Get(i) * v.Get(i);
    EXPECT_TRUE(AllClose(out, OracleStencil(flux, {-1, 0, 1}, 2.0 * static_cast<double>(0.3f)),
                         DefaultTolerance(dtype)))
        << "MadelungContinuity " << DTypeName(dtype);
  }
}

TEST(PhysicsLarge, FFTAgainstDirectDFT) {
  struct Case {
    DType dtype;
    int64_t n;
    bool inverse;
  };
  const Case cases[] = {{DType::Float64, 4099, false}, {DType::Float32, 4099, false},
                        {DType::Float16, 4099, false}, {DType::BFloat16, 4099, false},
                        {DType::Float64, 4099, true},  {DType::Float32, 4096, false},
                        {DType::Float64, 4096, true}};
  for (const Case& c : cases) {
    const Buffer re = RandomBuffer(c.dtype, c.n, 31, -1.0, 1.0);
    const Buffer im = RandomBuffer(c.dtype, c.n, 32, -1.0, 1.0);
    Buffer outRe(c.dtype, c.n), outIm(c.dtype, c.n);
    outRe.Poison();
    outIm.Poison();
    if (c.inverse) {
      Physics().IFFT1D(re.data(), im.data(), outRe.data(), outIm.data(), c.n, c.dtype);
    } else {
      Physics().FFT1D(re.data(), im.data(), outRe.data(), outIm.data(), c.n, c.dtype);
    }
    Vec wantRe, wantIm;
    DirectDFT(re.ToDoubles(), im.ToDoubles(), c.inverse ? 1 : -1, wantRe, wantIm);
    if (c.inverse) {
      for (size_t k = 0; k < wantRe.size(); ++k) {
        wantRe[k] /= static_cast<double>(c.n);
        wantIm[k] /= static_cast<double>(c.n);
      }
    }
    const auto tol = DefaultTolerance(c.dtype);
    EXPECT_TRUE(AllClose(outRe, wantRe, tol)) << DTypeName(c.dtype) << " n=" << c.n;
    EXPECT_TRUE(AllClose(outIm, wantIm, tol)) << DTypeName(c.dtype) << " n=" << c.n;
    EXPECT_TRUE(outRe.GuardIntact() && outIm.GuardIntact());
  }
}

// ---- identities ---------------------------------------------------------------------------------

TEST(PhysicsFFT, ParsevalAndRoundTrip) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    for (int64_t n : {1, 2, 3, 12, 64, 97, 1000, 1009, 4099}) {
      const Buffer re = RandomBuffer(dtype, n, 41 + static_cast<uint64_t>(n), -1.0, 1.0);
      const Buffer im = RandomBuffer(dtype, n, 42 + static_cast<uint64_t>(n), -1.0, 1.0);
      Buffer fr(dtype, n), fi(dtype, n), br(dtype, n), bi(dtype, n);
      Physics().FFT1D(re.data(), im.data(), fr.data(), fi.data(), n, dtype);
      Physics().IFFT1D(fr.data(), fi.data(), br.data(), bi.data(), n, dtype);
      double energy = 0, spectral = 0, maxAbs = 0;
      for (int64_t i = 0; i < n; ++i) {
        energy += re.Get(i) * re.Get(i) + im.Get(i) * im.Get(i);
        spectral += fr.Get(i) * fr.Get(i) + fi.Get(i) * fi.Get(i);
        maxAbs = std::max({maxAbs, std::fabs(re.Get(i)), std::fabs(im.Get(i))});
      }
      // Parseval: sum |x|^2 = (1/n) sum |X|^2; the bound covers rounding X to the storage format.
      const double eps = dtype == DType::Float64 ? 1e-15 : 6e-8;
      EXPECT_NEAR(spectral / static_cast<double>(n), energy, 4 * eps * energy + 1e-300)
          << DTypeName(dtype) << " n=" << n;
      // Round trip: IFFT(FFT(x)) = x up to a few roundings of the storage format.
      const test::Tolerance trip{8 * eps * std::sqrt(static_cast<double>(n)) * maxAbs, 0.0};
      EXPECT_TRUE(AllClose(br, re.ToDoubles(), trip)) << DTypeName(dtype) << " n=" << n;
      EXPECT_TRUE(AllClose(bi, im.ToDoubles(), trip)) << DTypeName(dtype) << " n=" << n;
    }
  }
}

TEST(PhysicsFFT, KnownTransforms) {
  for (DType dtype : FloatDTypes()) {
    for (int64_t n : {1, 5, 8, 12}) {
      // A unit impulse at 0 transforms to all ones; a constant c to n*c at frequency 0.
      Buffer impulse(dtype, n), zero(dtype, n), fr(dtype, n), fi(dtype, n);
      for (int64_t i = 0; i < n; ++i) {
        impulse.Set(i, i == 0 ? 1.0 : 0.0);
        zero.Set(i, 0.0);
      }
      Physics().FFT1D(impulse.data(), zero.data(), fr.data(), fi.data(), n, dtype);
      EXPECT_TRUE(AllClose(fr, Vec(static_cast<size_t>(n), 1.0), DefaultTolerance(dtype)));
      EXPECT_TRUE(AllClose(fi, Vec(static_cast<size_t>(n), 0.0), DefaultTolerance(dtype)));
      Buffer constant = FromDoubles(dtype, Vec(static_cast<size_t>(n), 1.5));
      Physics().FFT1D(constant.data(), nullptr, fr.data(), fi.data(), n, dtype);
      Vec want(static_cast<size_t>(n), 0.0);
      want[0] = 1.5 * static_cast<double>(n);
      EXPECT_TRUE(AllClose(fr, want, DefaultTolerance(dtype)));
      EXPECT_TRUE(AllClose(fi, Vec(static_cast<size_t>(n), 0.0), DefaultTolerance(dtype)));
      Physics().IFFT1D(constant.data(), nullptr, fr.data(), fi.data(), n, dtype);
      Vec wantInverse(static_cast<size_t>(n), 0.0);  // IFFT of a constant: c at index 0
      wantInverse[0] = 1.5;
      EXPECT_TRUE(AllClose(fr, wantInverse, DefaultTolerance(dtype)));
      EXPECT_TRUE(AllClose(fi, Vec(static_cast<size_t>(n), 0.0), DefaultTolerance(dtype)));
    }
  }
}

TEST(PhysicsFFT, NaNPropagatesAndF16Overflows) {
  for (DType dtype : FloatDTypes()) {
    for (int64_t n : {7, 8}) {
      Buffer re = RandomBuffer(dtype, n, 51);
      re.Set(3, std::numeric_limits<double>::quiet_NaN());
      Buffer fr(dtype, n), fi(dtype, n);
      Physics().FFT1D(re.data(), nullptr, fr.data(), fi.data(), n, dtype);
      for (int64_t k = 0; k < n; ++k) EXPECT_TRUE(std::isnan(fr.Get(k))) << k;
    }
  }
  // 4096 * 100 = 409600 exceeds the f16 range (65504): X[0] is +Inf in f16, finite in f32.
  const int64_t n = 4096;
  for (DType dtype : {DType::Float16, DType::Float32}) {
    const Buffer re = FromDoubles(dtype, Vec(n, 100.0));
    Buffer fr(dtype, n), fi(dtype, n);
    Physics().FFT1D(re.data(), nullptr, fr.data(), fi.data(), n, dtype);
    if (dtype == DType::Float16) {
      EXPECT_EQ(fr.Get(0), std::numeric_limits<double>::infinity());
    } else {
      EXPECT_EQ(fr.Get(0), 409600.0);
    }
    EXPECT_EQ(fr.Get(1), 0.0);
  }
}

TEST(PhysicsFFT, InPlaceMatchesOutOfPlace) {
  for (DType dtype : FloatDTypes()) {
    for (int64_t n : {8, 9, 1009}) {
      const Buffer re = RandomBuffer(dtype, n, 61), im = RandomBuffer(dtype, n, 62);
      for (bool inverse : {false, true}) {
        Buffer wantRe(dtype, n), wantIm(dtype, n);
        Buffer re2 = re, im2 = im;
        auto fn = inverse ? &PhysicsSurface::IFFT1D : &PhysicsSurface::FFT1D;
        (Physics().*fn)(re.data(), im.data(), wantRe.data(), wantIm.data(), n, dtype);
        (Physics().*fn)(re2.data(), im2.data(), re2.data(), im2.data(), n, dtype);
        EXPECT_EQ(re2.ToDoubles(), wantRe.ToDoubles()) << DTypeName(dtype) << " n=" << n;
        EXPECT_EQ(im2.ToDoubles(), wantIm.ToDoubles()) << DTypeName(dtype) << " n=" << n;
      }
    }
  }
}

// ---- order of convergence against analytic derivatives ------------------------------------------

// Grid x_i = i h on a period L = n h with h a power of two (exact as a float32 spacing).
struct Grid {
  int64_t n;
  double h, k;  // k = 2 pi / L
  double x(int64_t i) const { return static_cast<double>(i) * h; }
};
Grid MakeGrid(int64_t n) {
  const double h = 4.0 / static_cast<double>(n);  // L = 4
  return {n, h, 2.0 * std::numbers::pi / 4.0};
}

double MaxError(const Buffer& got, const Vec& want) {
  double e = 0;
  for (int64_t i = 0; i < got.count(); ++i) {
    e = std::max(e, std::fabs(got.Get(i) - want[static_cast<size_t>(i)]));
  }
  return e;
}

// Error of a 1-D method on field f with exact derivative d, at n and 2n points.
double Ratio1D(Stencil fn, const std::function<double(double, double)>& f,
               const std::function<double(double, double)>& d, int64_t n) {
  double err[2];
  for (int level = 0; level < 2; ++level) {
    const Grid g = MakeGrid(n << level);
    Buffer in(DType::Float64, g.n), out(DType::Float64, g.n);
    Vec want(static_cast<size_t>(g.n));
    for (int64_t i = 0; i < g.n; ++i) {
      in.Set(i, f(g.x(i), g.k));
      want[static_cast<size_t>(i)] = d(g.x(i), g.k);
    }
    RunStencil(fn, in, out, static_cast<float>(g.h));
    err[level] = MaxError(out, want);
  }
  return err[0] / err[1];
}

TEST(PhysicsConvergence, FirstDerivativesAreSecondOrder) {
  auto f = [](double x, double k) { return std::sin(k * x) + 0.5 * std::cos(2 * k * x); };
  auto d = [](double x, double k) { return k * std::cos(k * x) - k * std::sin(2 * k * x); };
  for (Stencil fn :
       {&PhysicsSurface::Grad1D, &PhysicsSurface::Divergence1D, &PhysicsSurface::BohmianVelocity}) {
    const double r = Ratio1D(fn, f, d, 32);
    EXPECT_GT(r, 3.8);
    EXPECT_LT(r, 4.2);
  }
}

TEST(PhysicsConvergence, Laplacian4IsFourthOrder) {
  auto f = [](double x, double k) { return std::sin(k * x) + 0.5 * std::cos(2 * k * x); };
  auto d = [](double x, double k) {
    return -k * k * std::sin(k * x) - 2 * k * k * std::cos(2 * k * x);
  };
  const double r = Ratio1D(&PhysicsSurface::Laplacian4, f, d, 32);
  EXPECT_GT(r, 15.0);
  EXPECT_LT(r, 17.0);
}

TEST(PhysicsConvergence, QuantumPotentialIsSecondOrder) {
  // sqrt(rho) = 2 + sin(kx): Q = -0.5 (sqrt rho)'' / sqrt rho = 0.5 k^2 sin(kx) / (2 + sin(kx)).
  auto rho = [](double x, double k) { return std::pow(2.0 + std::sin(k * x), 2); };
  auto q = [](double x, double k) {
    return 0.5 * k * k * std::sin(k * x) / (2.0 + std::sin(k * x));
  };
  const double r = Ratio1D(&PhysicsSurface::QuantumPotential, rho, q, 32);
  EXPECT_GT(r, 3.8);
  EXPECT_LT(r, 4.2);
}

TEST(PhysicsConvergence, MadelungContinuityIsSecondOrder) {
  double err[2];
  for (int level = 0; level < 2; ++level) {
    const Grid g = MakeGrid(32 << level);
    Buffer rho(DType::Float64, g.n), v(DType::Float64, g.n), out(DType::Float64, g.n);
    Vec want(static_cast<size_t>(g.n));
    for (int64_t i = 0; i < g.n; ++i) {
      const double x = g.x(i), k = g.k;
      rho.Set(i, 2.0 + std::sin(k * x));
      v.Set(i, std::cos(k * x));
      // d(rho v)/dx = k cos^2(kx) - k sin(kx) (2 + sin(kx))
      want[static_cast<size_t>(i)] =
          k * std::cos(k * x) * std::cos(k * x) - k * std::sin(k * x) * (2.0 + std::sin(k * x));
    }
    Physics().MadelungContinuity(rho.data(), v.data(), out.data(), g.n, static_cast<float>(g.h),
                                 DType::Float64);
    err[level] = MaxError(out, want);
  }
  EXPECT_GT(err[0] / err[1], 3.8);
  EXPECT_LT(err[0] / err[1], 4.2);
}

TEST(PhysicsConvergence, LaplacianIsSecondOrderInRank1To3) {
  for (int64_t rank = 1; rank <= 3; ++rank) {
    double err[2];
    for (int level = 0; level < 2; ++level) {
      const Grid g = MakeGrid(16 << level);
      std::vector<int64_t> dims(static_cast<size_t>(rank), g.n);
      int64_t count = 1;
      for (int64_t d : dims) count *= d;
      Buffer in(DType::Float64, count), out(DType::Float64, count);
      Vec want(static_cast<size_t>(count));
      // u = prod over axes of a per-axis factor: sin(kx), cos(2ky), sin(kz) (slowest axis first).
      for (int64_t idx = 0; idx < count; ++idx) {
        double u = 1.0, lap = 0.0;
        double factor[3], second[3];
        int64_t rest = idx;
        for (int64_t a = rank - 1; a >= 0; --a) {
          const double x = g.x(rest % g.n);
          rest /= g.n;
          const double m = (a == 1) ? 2.0 : 1.0;
          factor[a] = a == 1 ? std::cos(m * g.k * x) : std::sin(m * g.k * x);
          second[a] = -m * m * g.k * g.k * factor[a];
        }
        for (int64_t a = 0; a < rank; ++a) u *= factor[a];
        for (int64_t a = 0; a < rank; ++a) {
          double term = second[a];
          for (int64_t b = 0; b < rank; ++b) {
            if (b != a) term *= factor[b];
          }
          lap += term;
        }
        in.Set(idx, u);
        want[static_cast<size_t>(idx)] = lap;
      }
      Physics().Laplacian(in.data(), out.data(), dims.data(), rank, static_cast<float>(g.h),
                          DType::Float64);
      err[level] = MaxError(out, want);
    }
    EXPECT_GT(err[0] / err[1], 3.8) << "rank " << rank;
    EXPECT_LT(err[0] / err[1], 4.2) << "rank " << rank;
  }
}

// ---- special values -----------------------------------------------------------------------------

TEST(PhysicsKnown, LaplacianSmallExtentsAndDivisionByH2) {
  for (DType dtype : FloatDTypes()) {
    // n = 1: the neighbours are the cell itself, so 0. n = 2: both neighbours are the other cell.
    const int64_t one = 1, two = 2;
    Buffer a = FromDoubles(dtype, {3.0}), out1(dtype, 1);
    Physics().Laplacian(a.data(), out1.data(), &one, 1, 0.5f, dtype);
    EXPECT_EQ(out1.Get(0), 0.0);
    Buffer b = FromDoubles(dtype, {1.0, 4.0}), out2(dtype, 2);
    Physics().Laplacian(b.data(), out2.data(), &two, 1, 0.5f, dtype);
    EXPECT_EQ(out2.Get(0), 24.0);  // 2 (4 - 1) / 0.25: divided by h^2, not multiplied
    EXPECT_EQ(out2.Get(1), -24.0);
    // An axis of extent 1 contributes nothing: [1, 5] equals the rank-1 result on 5 cells.
    const Buffer u = RandomBuffer(dtype, 5, 71);
    const int64_t dims2[] = {1, 5}, dims1[] = {5};
    Buffer r2(dtype, 5), r1(dtype, 5);
    Physics().Laplacian(u.data(), r2.data(), dims2, 2, 0.7f, dtype);
    Physics().Laplacian(u.data(), r1.data(), dims1, 1, 0.7f, dtype);
    EXPECT_EQ(r1.ToDoubles(), r2.ToDoubles());
  }
}

TEST(PhysicsKnown, NonFiniteValuesPropagateLocally) {
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t n = 7;
  for (DType dtype : FloatDTypes()) {
    Buffer u = FromDoubles(dtype, {1, 2, 3, 0, 5, 6, 7});
    u.Set(3, std::numeric_limits<double>::quiet_NaN());
    Buffer out(dtype, n);
    Physics().Laplacian(u.data(), out.data(), &n, 1, 1.0f, dtype);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(std::isnan(out.Get(i)), i >= 2 && i <= 4) << i;
    u.Set(3, inf);
    Physics().Laplacian(u.data(), out.data(), &n, 1, 1.0f, dtype);
    EXPECT_EQ(out.Get(2), inf);
    EXPECT_EQ(out.Get(3), -inf);
    EXPECT_EQ(out.Get(4), inf);
    EXPECT_EQ(out.Get(0), 2.0 + 7.0 - 2.0);  // periodic: neighbours of cell 0 are cells 6 and 1
    Physics().Grad1D(u.data(), out.data(), n, 1.0f, dtype);
    EXPECT_EQ(out.Get(2), inf);
    EXPECT_EQ(out.Get(4), -inf);
    EXPECT_EQ(out.Get(3), (5.0 - 3.0) / 2.0);
    // -0.0 everywhere: every derivative is zero.
    const Buffer negZero = FromDoubles(dtype, Vec(n, -0.0));
    for (const StencilMethod& m : kStencils) {
      RunStencil(m.fn, negZero, out, 1.0f);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out.Get(i), 0.0) << m.op;
    }
  }
}

TEST(PhysicsKnown, F16OverflowGivesInfinity) {
  // Alternating +-60000: the second difference is -+240000, beyond the f16 range (65504).
  const int64_t n = 4;
  const Vec values = {60000, -60000, 60000, -60000};
  for (DType dtype : {DType::Float16, DType::Float32}) {
    const Buffer u = FromDoubles(dtype, values);
    Buffer out(dtype, n);
    Physics().Laplacian(u.data(), out.data(), &n, 1, 1.0f, dtype);
    const double big = dtype == DType::Float16 ? std::numeric_limits<double>::infinity() : 240000;
    EXPECT_EQ(out.Get(0), -big);
    EXPECT_EQ(out.Get(1), big);
  }
}

TEST(PhysicsKnown, QuantumPotentialIsZeroWhereDensityIsZero) {
  for (DType dtype : FloatDTypes()) {
    const Buffer rho = FromDoubles(dtype, {0.0, 1.0, 4.0, 1.0, 0.0, -0.0});
    Buffer out(dtype, 6);
    Physics().QuantumPotential(rho.data(), out.data(), 6, 1.0f, dtype);
    // sqrt(rho) = 0 1 2 1 0 0: Q[1] = -0.5 (0 - 2 + 2) / 1 = 0, Q[2] = -0.5 (1 - 4 + 1) / 2 = 0.5,
    // Q[3] = -0.5 (2 - 2 + 0) / 1 = 0; the zero-density cells give 0.
    EXPECT_TRUE(AllClose(out, {0.0, 0.0, 0.5, 0.0, 0.0, 0.0}, DefaultTolerance(dtype)));
  }
}

TEST(PhysicsKnown, StencilsAreSafeInPlace) {
  for (DType dtype : FloatDTypes()) {
    const int64_t n = 33;
    const Buffer u = RandomBuffer(dtype, n, 81, 0.0, 4.0);
    for (const StencilMethod& m : kStencils) {
      Buffer want(dtype, n), inPlace = u;
      RunStencil(m.fn, u, want, 0.5f);
      RunStencil(m.fn, inPlace, inPlace, 0.5f);
      EXPECT_EQ(inPlace.ToDoubles(), want.ToDoubles()) << m.op;
    }
    Buffer want(dtype, n), inPlace = u;
    Physics().Laplacian(u.data(), want.data(), &n, 1, 0.5f, dtype);
    Physics().Laplacian(inPlace.data(), inPlace.data(), &n, 1, 0.5f, dtype);
    EXPECT_EQ(inPlace.ToDoubles(), want.ToDoubles());
    const Buffer v = RandomBuffer(dtype, n, 82);
    Buffer rho = u;
    Physics().MadelungContinuity(u.data(), v.data(), want.data(), n, 0.5f, dtype);
    Physics().MadelungContinuity(rho.data(), v.data(), rho.data(), n, 0.5f, dtype);
    EXPECT_EQ(rho.ToDoubles(), want.ToDoubles());
  }
}

// ---- bad input ----------------------------------------------------------------------------------

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(PhysicsBadInput, Stencils1D) {
  for (const StencilMethod& m : kStencils) {
    auto expect = [&](DType dtype, const void* in, void* outData, int64_t n, float h,
                      ErrorCode code, const char* arg, Buffer& out) {
      EXPECT_TRUE(
          ThrowsError([&] { (Physics().*m.fn)(in, outData, n, h, dtype); }, code, {m.op, arg}))
          << m.op << " " << arg;
      EXPECT_TRUE(out.IsPoisoned()) << m.op << " " << arg;
    };
    const Buffer in = RandomBuffer(DType::Float32, 8, 91, 0.0, 1.0);
    Buffer out(DType::Float32, 8);
    out.Poison();
    expect(DType::Int32, in.data(), out.data(), 8, 1.0f, ErrorCode::UnsupportedDType, "dtype", out);
    expect(static_cast<DType>(200), in.data(), out.data(), 8, 1.0f, ErrorCode::UnsupportedDType,
           "dtype", out);
    expect(DType::Int32, nullptr, nullptr, 0, 1.0f, ErrorCode::UnsupportedDType, "dtype", out);
    expect(DType::Float32, in.data(), out.data(), -1, 1.0f, ErrorCode::InvalidArgument, "count",
           out);
    expect(DType::Float32, nullptr, out.data(), 8, 1.0f, ErrorCode::InvalidArgument, "input", out);
    expect(DType::Float32, in.data(), nullptr, 8, 1.0f, ErrorCode::InvalidArgument, "output", out);
    for (float h : {0.0f, -0.0f, -1.0f, kNaN, kInf, -kInf}) {
      expect(DType::Float32, in.data(), out.data(), 8, h, ErrorCode::InvalidArgument, "spacing",
             out);
      expect(DType::Float32, nullptr, nullptr, 0, h, ErrorCode::InvalidArgument, "spacing", out);
    }
    // Zero length with null pointers is valid and does nothing.
    (Physics().*m.fn)(nullptr, nullptr, 0, 1.0f, DType::BFloat16);
  }
}

TEST(PhysicsBadInput, QuantumPotentialNeedsADensity) {
  for (double bad : {-1e-30, -1.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    for (DType dtype : FloatDTypes()) {
      Buffer rho = FromDoubles(dtype, {1.0, 2.0, 3.0, 4.0});
      rho.Set(2, bad);
      if (dtype != DType::Float64 && bad == -1e-30) rho.Set(2, -1e-3);
      Buffer out(dtype, 4);
      out.Poison();
      EXPECT_TRUE(ThrowsError(
          [&] { Physics().QuantumPotential(rho.data(), out.data(), 4, 1.0f, dtype); },
          ErrorCode::InvalidArgument, {"Physics.QuantumPotential", "input", "density"}));
      EXPECT_TRUE(out.IsPoisoned());
    }
  }
}

TEST(PhysicsBadInput, Laplacian) {
  const Buffer in = RandomBuffer(DType::Float64, 12, 92);
  Buffer out(DType::Float64, 12);
  out.Poison();
  const char* op = "Physics.Laplacian";
  auto expect = [&](const int64_t* dims, int64_t rank, float h, DType dtype, const void* i, void* o,
                    ErrorCode code, const char* arg) {
    EXPECT_TRUE(
        ThrowsError([&] { Physics().Laplacian(i, o, dims, rank, h, dtype); }, code, {op, arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  const int64_t dims[] = {3, 4, 1, 1};
  const int64_t negative[] = {3, -4};
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  const ErrorCode bad = ErrorCode::InvalidArgument;
  expect(dims, 2, 1.0f, DType::Int8, in.data(), out.data(), ErrorCode::UnsupportedDType, "dtype");
  expect(dims, 0, 1.0f, DType::Float64, in.data(), out.data(), bad, "rank");
  expect(dims, 4, 1.0f, DType::Float64, in.data(), out.data(), bad, "rank");
  expect(dims, -1, 1.0f, DType::Float64, in.data(), out.data(), bad, "rank");
  expect(nullptr, 2, 1.0f, DType::Float64, in.data(), out.data(), bad, "dims");
  expect(negative, 2, 1.0f, DType::Float64, in.data(), out.data(), bad, "dims[1]");
  expect(huge, 2, 1.0f, DType::Float64, in.data(), out.data(), bad, "dims");
  expect(dims, 2, 1.0f, DType::Float64, nullptr, out.data(), bad, "input");
  expect(dims, 2, 1.0f, DType::Float64, in.data(), nullptr, bad, "output");
  for (float h : {0.0f, -2.0f, kNaN, kInf}) {
    expect(dims, 2, h, DType::Float64, in.data(), out.data(), bad, "spacing");
  }
  // A zero extent is a valid empty grid: nothing is read or written.
  const int64_t empty[] = {3, 0, 5};
  Physics().Laplacian(nullptr, nullptr, empty, 3, 1.0f, DType::Float16);
}

TEST(PhysicsBadInput, MadelungContinuity) {
  const Buffer rho = RandomBuffer(DType::Float16, 6, 93, 0.0, 1.0);
  const Buffer v = RandomBuffer(DType::Float16, 6, 94);
  Buffer out(DType::Float16, 6);
  out.Poison();
  const char* op = "Physics.MadelungContinuity";
  auto expect = [&](const void* r, const void* vel, void* o, int64_t n, float h, DType dtype,
                    ErrorCode code, const char* arg) {
    EXPECT_TRUE(
        ThrowsError([&] { Physics().MadelungContinuity(r, vel, o, n, h, dtype); }, code, {op, arg}))
        << arg;
    EXPECT_TRUE(out.IsPoisoned()) << arg;
  };
  const ErrorCode bad = ErrorCode::InvalidArgument;
  expect(rho.data(), v.data(), out.data(), 6, 1.0f, DType::Uint16, ErrorCode::UnsupportedDType,
         "dtype");
  expect(rho.data(), v.data(), out.data(), -6, 1.0f, DType::Float16, bad, "count");
  expect(nullptr, v.data(), out.data(), 6, 1.0f, DType::Float16, bad, "density");
  expect(rho.data(), nullptr, out.data(), 6, 1.0f, DType::Float16, bad, "velocity");
  expect(rho.data(), v.data(), nullptr, 6, 1.0f, DType::Float16, bad, "residual");
  expect(rho.data(), v.data(), out.data(), 6, 0.0f, DType::Float16, bad, "spacing");
  expect(rho.data(), v.data(), out.data(), 6, kNaN, DType::Float16, bad, "spacing");
}

TEST(PhysicsBadInput, FFT) {
  for (bool inverse : {false, true}) {
    const char* op = inverse ? "Physics.IFFT1D" : "Physics.FFT1D";
    auto fn = inverse ? &PhysicsSurface::IFFT1D : &PhysicsSurface::FFT1D;
    const Buffer re = RandomBuffer(DType::BFloat16, 5, 95),
                 im = RandomBuffer(DType::BFloat16, 5, 96);
    Buffer outRe(DType::BFloat16, 5), outIm(DType::BFloat16, 5);
    outRe.Poison();
    outIm.Poison();
    auto expect = [&](const void* r, const void* i, void* orr, void* oi, int64_t n, DType dtype,
                      ErrorCode code, const char* arg) {
      EXPECT_TRUE(ThrowsError([&] { (Physics().*fn)(r, i, orr, oi, n, dtype); }, code, {op, arg}))
          << op << " " << arg;
      EXPECT_TRUE(outRe.IsPoisoned() && outIm.IsPoisoned()) << op << " " << arg;
    };
    const ErrorCode bad = ErrorCode::InvalidArgument;
    expect(re.data(), im.data(), outRe.data(), outIm.data(), 5, DType::Complex64,
           ErrorCode::UnsupportedDType, "dtype");
    expect(nullptr, nullptr, nullptr, nullptr, 0, DType::Int32, ErrorCode::UnsupportedDType,
           "dtype");
    expect(re.data(), im.data(), outRe.data(), outIm.data(), -5, DType::BFloat16, bad, "count");
    expect(nullptr, im.data(), outRe.data(), outIm.data(), 5, DType::BFloat16, bad, "realIn");
    expect(re.data(), im.data(), nullptr, outIm.data(), 5, DType::BFloat16, bad, "realOut");
    expect(re.data(), im.data(), outRe.data(), nullptr, 5, DType::BFloat16, bad, "imagOut");
    (Physics().*fn)(nullptr, nullptr, nullptr, nullptr, 0, DType::Float64);  // empty: no-op
  }
}

}  // namespace
}  // namespace backplane
