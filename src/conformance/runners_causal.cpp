// Conformance runners for the Causal and Hawkes families: Cholesky, BackdoorAdjustment,
// FrontdoorAdjustment, Counterfactual, MarkovFlow, IVEstimate, DAGMarkovFactorization,
// HawkesIntensity, HawkesKernelMatrix, HawkesLogLikelihood and MarkovMutualInformation (CATE uses BinaryOut, runners_elementwise.cpp).
//
// Each runner compares valid calls on seeded inputs (odd shapes, unaligned buffers, in place where
// the method allows it) and runs invalid calls whose errors must be identical, with the fast
// kernel's output untouched. Bounds are the tolerance table, except:
// - Cholesky: LAPACK's blocked order differs from the reference's Cholesky-Banachiewicz order.
//   L_ij = (a_ij - sum_k L_ik L_jk) / L_jj; the rounding error of the dot product is bounded by
//   gamma_j sum_k |L_ik L_jk| <= gamma_j ||L_i|| ||L_j|| = gamma_j sqrt(a_ii a_jj) (||L_i||^2 = a_ii),
//   so each element is compared with abs + rel * max(|L_ij|, sqrt(a_ii a_jj) / L_jj) (the diagonal:
//   max(L_ii, sqrt(a_ii))), the table's rel applied to the element's condition. The test matrices
//   are well conditioned (B B^T / n + I), so this is a few ulps away from a plain relative bound.
// - IVEstimate: beta = S_zy / S_zx from centred f64 sums; the fast kernel sums in lanes and fixed
//   chunks, the reference sequentially, so each sum S_ab differs by rounding of at most
//   2 gamma_n sum_i |da_i db_i| <= 2 gamma_n sqrt(S_aa S_bb) (Cauchy-Schwarz; the means' errors
//   enter only to second order). First-order perturbation of the quotient:
//   |d beta| <= e sqrt(S_zz) (sqrt(S_yy) + |beta| sqrt(S_xx)) / |S_zx| = e kappa, with
//   kappa = (sqrt(S_yy / S_xx) + |beta|) / |corr(Z, X)| >= |beta|. So the result is compared with
//   abs + rel * kappa, the table's rel applied to the estimate's condition (a plain relative bound
//   for a strong instrument, looser as the instrument weakens).
// - DAGMarkovFactorization: a product of C factors has relative error <= gamma_{C-1} in either
//   order, so the table's rel (f64: 1e-10 >= 2 gamma_C up to C = 4.5e5) covers the reordering; the
//   single final rounding adds at most one ulp of the output, hence rel * |want| plus the format's
//   smallest subnormal (one ulp in the subnormal range). No abs term: products are often tiny.
// - HawkesLogLikelihood: a difference of two sums (ln lambda_i against the compensator), compared
//   with abs + rel * (sum_i |ln lambda_i| + mu T + (alpha/beta) sum_i (1 - e^{-beta (T - t_i)})).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using CholeskyFn = BP_RET_Cholesky (*)(BP_PARAMS_Cholesky);
using BackdoorFn = BP_RET_BackdoorAdjustment (*)(BP_PARAMS_BackdoorAdjustment);
using FrontdoorFn = BP_RET_FrontdoorAdjustment (*)(BP_PARAMS_FrontdoorAdjustment);
using CounterfactualFn = BP_RET_Counterfactual (*)(BP_PARAMS_Counterfactual);
using MarkovFlowFn = BP_RET_MarkovFlow (*)(BP_PARAMS_MarkovFlow);
using IvFn = BP_RET_IVEstimate (*)(BP_PARAMS_IVEstimate);
using DagFn = BP_RET_DAGMarkovFactorization (*)(BP_PARAMS_DAGMarkovFactorization);
using IntensityFn = BP_RET_HawkesIntensity (*)(BP_PARAMS_HawkesIntensity);
using KernelMatrixFn = BP_RET_HawkesKernelMatrix (*)(BP_PARAMS_HawkesKernelMatrix);
using LogLikFn = BP_RET_HawkesLogLikelihood (*)(BP_PARAMS_HawkesLogLikelihood);
using MutualInfoFn = BP_RET_MarkovMutualInformation (*)(BP_PARAMS_MarkovMutualInformation);

using Bytes = std::vector<uint8_t>;

size_t Elem(DType dtype) { return DTypeStorageBytes(dtype, 1); }

// Storage of `values` in dtype (f32 rounding first for 16-bit formats), after `shift` elements.
Bytes Store(const std::vector<double>& values, DType dtype, size_t shift = 0) {
  const size_t e = Elem(dtype);
  Bytes out((values.size() + shift) * e, kGuard);
  for (size_t i = 0; i < values.size(); ++i) StoreAsDouble(out, dtype, static_cast<int64_t>(i + shift), values[i]);
  return out;
}

// The values a storage holds (from element `shift` on).
std::vector<double> Values(const Bytes& s, DType dtype, size_t count, size_t shift = 0) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = LoadAsDouble(s, dtype, static_cast<int64_t>(i + shift));
  return v;
}

void* At(Bytes& s, DType dtype, size_t shift) { return s.data() + shift * Elem(dtype); }
const void* At(const Bytes& s, DType dtype, size_t shift) { return s.data() + shift * Elem(dtype); }

// Compares count elements from `shift` on with the table tolerance; guard bytes past them must hold.
void CompareOut(const Bytes& got, const Bytes& want, DType dtype, size_t count, size_t shift,
                const std::string& where, Measure& m) {
  const Bytes g(got.begin() + static_cast<std::ptrdiff_t>(shift * Elem(dtype)), got.end());
  const Bytes w(want.begin() + static_cast<std::ptrdiff_t>(shift * Elem(dtype)), want.end());
  CompareStorage(g, w, dtype, static_cast<int64_t>(count), DefaultTolerance(dtype), where, m);
  if (!std::equal(got.begin() + static_cast<std::ptrdiff_t>((shift + count) * Elem(dtype)), got.end(),
                  want.begin() + static_cast<std::ptrdiff_t>((shift + count) * Elem(dtype)))) {
    Fail(m, where + ": wrote outside its output");
  }
}

std::vector<double> Normal(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = d(g);
  return v;
}

// Rows of `len` probabilities (some exact zeros), each normalised in f64.
std::vector<double> Distributions(size_t rows, size_t len, uint64_t seed) {
  std::vector<double> v = Normal(rows * len, seed);
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (size_t k = 0; k < len; ++k) {
      double& x = v[r * len + k];
      x = (len > 1 && (r + 3 * k) % 7 == 2) ? 0.0 : std::fabs(x) + 0.05;
      sum += x;
    }
    if (len == 0) continue;
    if (sum == 0.0) v[r * len] = sum = 1.0;
    for (size_t k = 0; k < len; ++k) v[r * len + k] /= sum;
  }
  return v;
}

// ---- Cholesky -----------------------------------------------------------------------------------

std::vector<double> SpdMatrix(size_t n, uint64_t seed, double scale) {
  const std::vector<double> b = Normal(n * n, seed);
  std::vector<double> a(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double s = 0.0;
      for (size_t k = 0; k < n; ++k) s += b[i * n + k] * b[j * n + k];
      a[i * n + j] = a[j * n + i] = scale * (s / static_cast<double>(n) + (i == j ? 1.0 : 0.0));
    }
  }
  return a;
}

void CompareCholesky(const Bytes& got, const Bytes& want, const std::vector<double>& a, DType dtype, size_t n,
                     size_t shift, const std::string& where, Measure& m) {
  const Tolerance tol = DefaultTolerance(dtype);
  const std::vector<double> g = Values(got, dtype, n * n, shift), w = Values(want, dtype, n * n, shift);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const size_t k = i * n + j;
      if (j > i) {
        if (std::memcmp(&g[k], &w[k], sizeof(double)) != 0) {
          Fail(m, fmt::format("{}[{}][{}]: got {} above the diagonal, want {}", where, i, j, g[k], w[k]));
        }
        continue;
      }
      const double cond = j == i ? std::max(std::fabs(w[k]), std::sqrt(a[k]))
                                 : std::max(std::fabs(w[k]), std::sqrt(a[i * n + i] * a[j * n + j]) / std::fabs(w[j * n + j]));
      const double err = std::fabs(g[k] - w[k]);
      if (!std::isfinite(g[k]) || !(err <= tol.abs + tol.rel * cond)) {
        m.max_error = std::max(m.max_error, std::isfinite(err) ? err : INFINITY);
        Fail(m, fmt::format("{}[{}][{}]: got {}, want {} (bound {})", where, i, j, g[k], w[k], tol.abs + tol.rel * cond));
      } else {
        m.max_error = std::max(m.max_error, err);
      }
    }
  }
  const size_t end = (shift + n * n) * Elem(dtype);
  if (!std::equal(got.begin() + static_cast<std::ptrdiff_t>(end), got.end(), want.begin() + static_cast<std::ptrdiff_t>(end))) {
    Fail(m, where + ": wrote outside its output");
  }
}

Measure RunCholesky(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<CholeskyFn>(refk), fast = Unerase<CholeskyFn>(fastk);
  const DType dt = c.dtype;
  std::vector<int64_t> orders = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33};
  if (!Quick(c)) orders.insert(orders.end(), {31, 32, 63, 64, 65, 129, 257});
  if (!Quick(c) && dt == DType::Float64) orders.push_back(730);  // >= 4 MiB: the streamed output
  const double scale = dt == DType::Float16 || dt == DType::BFloat16 ? 3.0 : 3.7e3;
  for (const int64_t order : orders) {
    const auto n = static_cast<size_t>(order);
    const size_t shift = n % 2;
    const std::vector<double> exact = SpdMatrix(n, c.seed + n, scale);
    for (int variant = 0; variant < 3; ++variant) {
      // 0: symmetric storage; 1: the upper triangle off by rounding-level asymmetry; 2: in place.
      std::vector<double> values = exact;
      if (variant == 1) {
        const double asym = dt == DType::Float64 ? 2e-12 : dt == DType::Float32 ? 2e-5 : dt == DType::Float16 ? 2e-3 : 1e-2;
        for (size_t i = 0; i < n; ++i) {
          for (size_t j = i + 1; j < n; ++j) values[i * n + j] *= 1.0 + asym * static_cast<double>(1 + (i + j) % 3);
        }
      }
      const Bytes in = Store(values, dt, shift);
      const std::vector<double> a = Values(in, dt, n * n, shift);
      const std::string where = fmt::format("n={} {}", n, variant == 0 ? "L" : variant == 1 ? "L (asymmetric rounding)" : "L (in place)");
      Bytes want(in.size() + 16, kGuard), got = want;
      if (variant == 2) {
        std::copy(in.begin(), in.end(), want.begin());
        std::copy(in.begin(), in.end(), got.begin());
        if (!RunBoth([&] { ref(At(want, dt, shift), At(want, dt, shift), order, dt); },
                     [&] { fast(At(got, dt, shift), At(got, dt, shift), order, dt); }, where, m)) {
          continue;
        }
      } else if (!RunBoth([&] { ref(At(in, dt, shift), At(want, dt, shift), order, dt); },
                          [&] { fast(At(in, dt, shift), At(got, dt, shift), order, dt); }, where, m)) {
        continue;
      }
      CompareCholesky(got, want, a, dt, n, shift, where, m);
    }
  }
  // Invalid calls (the reference's checks in order) and factorisation failures.
  for (const size_t n : {size_t{3}, size_t{17}, size_t{65}}) {
    const std::vector<double> base = SpdMatrix(n, c.seed + 99 + n, 2.0);
    auto bad = [&](const std::string& what, std::vector<double> v) {
      const Bytes in = Store(v, dt);
      Bytes out(in.size(), 0x5A);
      ExpectSameError(fmt::format("n={} {}", n, what), out,
                      [&](bool r) { (r ? ref : fast)(in.data(), out.data(), static_cast<int64_t>(n), dt); }, m);
    };
    auto with = [&](size_t i, size_t j, double v) {
      std::vector<double> x = base;
      x[i * n + j] = v;
      return x;
    };
    bad("NaN above the diagonal", with(0, n - 1, NAN));
    bad("Inf on the diagonal", with(1, 1, INFINITY));
    bad("asymmetric", with(n - 1, 0, base[n - 1] + 1.0));
    bad("asymmetric above the diagonal", with(n / 3, n - 1, base[(n / 3) * n + n - 1] * 1.5 + 0.25));
    bad("indefinite", with(n - 1, n - 1, -1.0));
    bad("singular (all ones)", std::vector<double>(n * n, 1.0));
  }
  Bytes out(64, 0x5A);
  const Bytes in = Store(std::vector<double>(4, 1.0), dt);
  ExpectSameError("negative order", out, [&](bool r) { (r ? ref : fast)(in.data(), out.data(), -1, dt); }, m);
  ExpectSameError("null input", out, [&](bool r) { (r ? ref : fast)(nullptr, out.data(), 2, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(in.data(), out.data(), 1, DType::Int32); }, m);
  return m;
}

// ---- Back-door / front-door ---------------------------------------------------------------------

struct Shape3 {
  int64_t x, k, y;
};

std::vector<Shape3> Shapes3(const RunContext& c) {
  std::vector<Shape3> s = {{1, 1, 1}, {2, 3, 4}, {3, 5, 9}, {7, 4, 17}, {5, 2, 33}, {1, 9, 8}, {4, 1, 3}, {0, 2, 3}};
  if (!Quick(c)) s.insert(s.end(), {{16, 8, 1000}, {9, 33, 65}, {300, 3, 257}});
  return s;
}

Measure RunBackdoor(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<BackdoorFn>(refk), fast = Unerase<BackdoorFn>(fastk);
  const DType dt = c.dtype;
  for (const Shape3& s : Shapes3(c)) {
    const auto X = static_cast<size_t>(s.x), Z = static_cast<size_t>(s.k), Y = static_cast<size_t>(s.y);
    const size_t shift = Y % 2;
    const Bytes cond = Store(Distributions(X * Z, Y, c.seed + X * 131 + Z * 7 + Y), dt, shift);
    const Bytes pz = Store(Distributions(1, Z, c.seed + 5 + Z), dt, shift);
    Bytes want((X * Y + shift) * Elem(dt) + 8, kGuard), got = want;
    const std::string where = fmt::format("X={} Z={} Y={} out", X, Z, Y);
    if (!RunBoth([&] { ref(At(cond, dt, shift), At(pz, dt, shift), At(want, dt, shift), s.x, s.k, s.y, dt); },
                 [&] { fast(At(cond, dt, shift), At(pz, dt, shift), At(got, dt, shift), s.x, s.k, s.y, dt); }, where, m)) {
      continue;
    }
    CompareOut(got, want, dt, X * Y, shift, where, m);
  }
  const std::vector<double> good = Distributions(6, 3, c.seed + 77), pzv = Distributions(1, 2, c.seed + 78);
  Bytes out(6 * Elem(dt), 0x5A);
  auto bad = [&](const std::string& what, const std::vector<double>& cv, const std::vector<double>& zv, int64_t z) {
    const Bytes cb = Store(cv, dt), zb = Store(zv, dt);
    ExpectSameError(what, out, [&](bool r) { (r ? ref : fast)(cb.data(), zb.data(), out.data(), 3, z, 3, dt); }, m);
  };
  auto poke = [](std::vector<double> v, size_t i, double x) {
    v[i] = x;
    return v;
  };
  bad("negative entry", poke(good, 4, -0.25), pzv, 2);
  bad("row sum", poke(good, 17, good[17] + 0.1), pzv, 2);
  bad("NaN in P(z)", good, poke(pzv, 1, NAN), 2);
  bad("zCount 0", good, pzv, 0);
  bad("negative zCount", good, pzv, -1);
  const Bytes cb = Store(good, dt), zb = Store(pzv, dt);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(cb.data(), zb.data(), out.data(), 3, 2, 3, DType::Int32); }, m);
  return m;
}

Measure RunFrontdoor(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<FrontdoorFn>(refk), fast = Unerase<FrontdoorFn>(fastk);
  const DType dt = c.dtype;
  for (const Shape3& s : Shapes3(c)) {
    const auto X = static_cast<size_t>(s.x), M = static_cast<size_t>(s.k), Y = static_cast<size_t>(s.y);
    const size_t shift = (X + Y) % 2;
    const Bytes pmx = Store(Distributions(X, M, c.seed + X * 17 + M), dt, shift);
    const Bytes pyxm = Store(Distributions(X * M, Y, c.seed + X * 131 + M * 7 + Y), dt, shift);
    const Bytes px = Store(Distributions(1, X, c.seed + 3 + X), dt, shift);
    Bytes want((X * Y + shift) * Elem(dt) + 8, kGuard), got = want;
    const std::string where = fmt::format("X={} M={} Y={} out", X, M, Y);
    if (!RunBoth([&] { ref(At(pmx, dt, shift), At(pyxm, dt, shift), At(px, dt, shift), At(want, dt, shift), s.x, s.k, s.y, dt); },
                 [&] { fast(At(pmx, dt, shift), At(pyxm, dt, shift), At(px, dt, shift), At(got, dt, shift), s.x, s.k, s.y, dt); },
                 where, m)) {
      continue;
    }
    CompareOut(got, want, dt, X * Y, shift, where, m);
  }
  const std::vector<double> pmx = Distributions(3, 2, c.seed + 1), pyxm = Distributions(6, 3, c.seed + 2),
                            px = Distributions(1, 3, c.seed + 3);
  Bytes out(9 * Elem(dt), 0x5A);
  auto bad = [&](const std::string& what, const std::vector<double>& a, const std::vector<double>& b,
                 const std::vector<double>& x, int64_t mc, DType d) {
    const Bytes ab = Store(a, dt), bb = Store(b, dt), xb = Store(x, dt);
    ExpectSameError(what, out, [&](bool r) { (r ? ref : fast)(ab.data(), bb.data(), xb.data(), out.data(), 3, mc, 3, d); }, m);
  };
  auto poke = [](std::vector<double> v, size_t i, double x) {
    v[i] = x;
    return v;
  };
  bad("negative P(m|x)", poke(pmx, 1, -0.5), pyxm, px, 2, dt);
  bad("row sum P(y|x,m)", pmx, poke(pyxm, 10, pyxm[10] + 0.2), px, 2, dt);
  bad("Inf in P(x)", pmx, pyxm, poke(px, 2, INFINITY), 2, dt);
  bad("mediatorCount 0", pmx, pyxm, px, 0, dt);
  bad("int32 dtype", pmx, pyxm, px, 2, DType::Int32);
  return m;
}

// ---- Counterfactual -----------------------------------------------------------------------------

Measure RunCounterfactual(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<CounterfactualFn>(refk), fast = Unerase<CounterfactualFn>(fastk);
  const DType dt = c.dtype;
  for (const int64_t count : c.sizes) {
    for (const bool specials : {false, true}) {
      const auto n = static_cast<size_t>(count);
      const size_t shift = n % 2;
      const uint64_t seed = c.seed + n + (specials ? 31 : 0);
      auto shifted = [&](uint64_t s) {
        Bytes b = RandomStorage(dt, count, s, 2.0, specials);
        b.insert(b.begin(), shift * Elem(dt), kGuard);
        return b;
      };
      const Bytes y = shifted(seed), x = shifted(seed + 7919), xp = shifted(seed + 104729);
      const float slope = specials ? -3.5f : 0.75f;
      Bytes want(y.size() + 8, kGuard), got = want;
      const std::string where = fmt::format("n={}{} out", n, specials ? " (specials)" : "");
      if (!RunBoth([&] { ref(At(y, dt, shift), At(x, dt, shift), At(xp, dt, shift), At(want, dt, shift), count, slope, dt); },
                   [&] { fast(At(y, dt, shift), At(x, dt, shift), At(xp, dt, shift), At(got, dt, shift), count, slope, dt); },
                   where, m)) {
        continue;
      }
      CompareOut(got, want, dt, n, shift, where, m);
      if (n == 1000 && !specials) {  // in place over observedY
        Bytes w2 = y, g2 = y;
        ref(At(w2, dt, shift), At(x, dt, shift), At(xp, dt, shift), At(w2, dt, shift), count, slope, dt);
        fast(At(g2, dt, shift), At(x, dt, shift), At(xp, dt, shift), At(g2, dt, shift), count, slope, dt);
        CompareOut(g2, w2, dt, n, shift, "n=1000 in place", m);
      }
    }
  }
  const Bytes v = RandomStorage(dt, 4, c.seed, 2.0, false);
  Bytes out(4 * Elem(dt), 0x5A);
  ExpectSameError("NaN slope", out, [&](bool r) { (r ? ref : fast)(v.data(), v.data(), v.data(), out.data(), 4, NAN, dt); }, m);
  ExpectSameError("negative count", out, [&](bool r) { (r ? ref : fast)(v.data(), v.data(), v.data(), out.data(), -1, 1.0f, dt); }, m);
  ExpectSameError("null input", out, [&](bool r) { (r ? ref : fast)(v.data(), nullptr, v.data(), out.data(), 4, 1.0f, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(v.data(), v.data(), v.data(), out.data(), 1, 1.0f, DType::Int32); }, m);
  return m;
}

// ---- Markov flows -------------------------------------------------------------------------------

Measure RunMarkovFlow(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<MarkovFlowFn>(refk), fast = Unerase<MarkovFlowFn>(fastk);
  const DType dt = c.dtype;
  std::vector<int64_t> nodes = {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 65};
  if (!Quick(c)) nodes.insert(nodes.end(), {300, 1000});
  for (const int64_t count : nodes) {
    const auto n = static_cast<size_t>(count);
    const size_t shift = n % 2;
    std::vector<double> mi = Normal(n * n, c.seed + n);
    for (double& v : mi) v = std::fabs(v);
    std::vector<int32_t> part(n);
    for (size_t i = 0; i < n; ++i) part[i] = static_cast<int32_t>((i * 7 + n) % 4 == 1 ? 2 : (i * 5 + 3) % 4);
    const Bytes in = Store(mi, dt, shift);
    Bytes want((n + shift) * Elem(dt) + 8, kGuard), got = want;
    const std::string where = fmt::format("n={} out", n);
    if (!RunBoth([&] { ref(At(in, dt, shift), part.data(), At(want, dt, shift), count, dt); },
                 [&] { fast(At(in, dt, shift), part.data(), At(got, dt, shift), count, dt); }, where, m)) {
      continue;
    }
    CompareOut(got, want, dt, n, shift, where, m);
  }
  std::vector<double> mi(9, 0.5);
  std::vector<int32_t> part = {0, 2, 0};
  Bytes out(3 * Elem(dt), 0x5A);
  auto bad = [&](const std::string& what, const std::vector<double>& v, const std::vector<int32_t>& p, DType d) {
    const Bytes b = Store(v, dt);
    ExpectSameError(what, out, [&](bool r) { (r ? ref : fast)(b.data(), p.data(), out.data(), 3, d); }, m);
  };
  bad("label 4", mi, {0, 4, 2}, dt);
  bad("negative MI", [&] { auto v = mi; v[5] = -1.0; return v; }(), part, dt);
  bad("NaN MI", [&] { auto v = mi; v[8] = NAN; return v; }(), part, dt);
  bad("int32 dtype", mi, part, DType::Int32);
  return m;
}

// ---- IVEstimate ---------------------------------------------------------------------------------

// A compared scalar result: equal (NaN, Inf included) or within the bound.
void CompareBound(double g, double w, double bound, const std::string& where, Measure& m) {
  if (g == w || (std::isnan(g) && std::isnan(w))) return;
  const double err = std::fabs(g - w);
  m.max_error = std::max(m.max_error, std::isfinite(err) ? err : INFINITY);
  if (!(err <= bound)) Fail(m, fmt::format("{}: got {}, want {} (bound {})", where, g, w, bound));
}

// kappa = sqrt(S_zz) (sqrt(S_yy) + |beta| sqrt(S_xx)) / |S_zx| (two-pass f64 sums of the stored values).
double IvCondition(const std::vector<double>& z, const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(z.size());
  double mz = 0, mx = 0, my = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    mz += z[i];
    mx += x[i];
    my += y[i];
  }
  mz /= n;
  mx /= n;
  my /= n;
  double szy = 0, szx = 0, szz = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    const double dz = z[i] - mz, dx = x[i] - mx, dy = y[i] - my;
    szy += dz * dy;
    szx += dz * dx;
    szz += dz * dz;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return std::sqrt(szz) * (std::sqrt(syy) + std::fabs(szy / szx) * std::sqrt(sxx)) / std::fabs(szx);
}

Measure RunIvEstimate(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<IvFn>(refk), fast = Unerase<IvFn>(fastk);
  const DType dt = c.dtype;
  const Tolerance tol = DefaultTolerance(dt);
  std::vector<int64_t> counts = c.sizes;
  if (!Quick(c)) counts.push_back(200003);  // several threaded chunks and a tail
  // Variants: strong instrument; weak (corr ~ 0.03) with a negative effect; offsets (means >> sd);
  // specials (NaN / Inf data: NaN, or identical errors); in place over instrument[0].
  for (const int64_t count : counts) {
    for (int variant = 0; variant < 5; ++variant) {
      const auto n = static_cast<size_t>(count);
      const size_t shift = (n + static_cast<size_t>(variant)) % 2;
      const uint64_t seed = c.seed + n * 5 + static_cast<size_t>(variant);
      Bytes zb, xb, yb;
      if (variant == 3) {
        auto shifted = [&](uint64_t sd) {
          Bytes b = RandomStorage(dt, count, sd, 2.0, true);
          b.insert(b.begin(), shift * Elem(dt), kGuard);
          return b;
        };
        zb = shifted(seed);
        xb = shifted(seed + 1);
        yb = shifted(seed + 2);
      } else {
        const std::vector<double> z0 = Normal(n, seed), u = Normal(n, seed + 1), v = Normal(n, seed + 2);
        std::vector<double> z(n), x(n), y(n);
        const double a = variant == 1 ? 0.03 : 0.8, beta = variant == 1 ? -1.75 : 2.5;
        const double off = variant == 2 ? (dt == DType::Float64 || dt == DType::Float32 ? 100.0 : 8.0) : 0.0;
        for (size_t i = 0; i < n; ++i) {
          z[i] = z0[i] + off;
          x[i] = a * z0[i] + u[i] - off / 2;
          y[i] = beta * x[i] + 0.5 * v[i] + off;
        }
        zb = Store(z, dt, shift);
        xb = Store(x, dt, shift);
        yb = Store(y, dt, shift);
      }
      const std::string where = fmt::format("n={} variant {} beta", n, variant);
      Bytes want(Elem(dt) + 8, kGuard), got = want;
      if (variant == 4) {  // output aliases instrument[0]
        Bytes zw = zb, zg = zb;
        if (!RunBoth([&] { ref(At(zw, dt, shift), At(xb, dt, shift), At(yb, dt, shift), count, At(zw, dt, shift), dt); },
                     [&] { fast(At(zg, dt, shift), At(xb, dt, shift), At(yb, dt, shift), count, At(zg, dt, shift), dt); },
                     where + " (in place)", m)) {
          continue;
        }
        // Element 0 is the result; every other byte must be untouched.
        const auto at0 = static_cast<std::ptrdiff_t>(shift * Elem(dt)), at1 = at0 + static_cast<std::ptrdiff_t>(Elem(dt));
        std::copy(zw.begin() + at0, zw.begin() + at1, want.begin());
        std::copy(zg.begin() + at0, zg.begin() + at1, got.begin());
        std::copy(zw.begin() + at0, zw.begin() + at1, zg.begin() + at0);
        if (zw != zg) Fail(m, where + ": wrote outside its output");
      } else if (!RunBoth([&] { ref(At(zb, dt, shift), At(xb, dt, shift), At(yb, dt, shift), count, want.data(), dt); },
                          [&] { fast(At(zb, dt, shift), At(xb, dt, shift), At(yb, dt, shift), count, got.data(), dt); },
                          where, m)) {
        continue;
      }
      if (!std::equal(got.begin() + static_cast<std::ptrdiff_t>(Elem(dt)), got.end(),
                      want.begin() + static_cast<std::ptrdiff_t>(Elem(dt)))) {
        Fail(m, where + ": wrote outside its output");
      }
      const double g = LoadAsDouble(got, dt, 0), w = LoadAsDouble(want, dt, 0);
      const double cond = IvCondition(Values(zb, dt, n, shift), Values(xb, dt, n, shift), Values(yb, dt, n, shift));
      const double kappa = std::isfinite(cond) ? std::max(std::fabs(w), cond) : std::fabs(w);
      CompareBound(g, w, tol.abs + tol.rel * kappa, where, m);
    }
  }
  // Invalid calls: count < 2, a constant or uncorrelated instrument, null pointers, bad dtype.
  const Bytes z = Store({1.0, -1.0, 1.0, -1.0}, dt), x = Store({1.0, 1.0, 2.0, 2.0}, dt), y = Store({0.5, 1.5, 2.0, 3.0}, dt);
  const Bytes k = Store({2.0, 2.0, 2.0, 2.0}, dt);
  Bytes out(Elem(dt), 0x5A);
  ExpectSameError("count 1", out, [&](bool r) { (r ? ref : fast)(z.data(), x.data(), y.data(), 1, out.data(), dt); }, m);
  ExpectSameError("uncorrelated instrument", out, [&](bool r) { (r ? ref : fast)(z.data(), x.data(), y.data(), 4, out.data(), dt); }, m);
  ExpectSameError("constant instrument", out, [&](bool r) { (r ? ref : fast)(k.data(), y.data(), x.data(), 4, out.data(), dt); }, m);
  ExpectSameError("constant treatment", out, [&](bool r) { (r ? ref : fast)(y.data(), k.data(), x.data(), 4, out.data(), dt); }, m);
  ExpectSameError("null outcome", out, [&](bool r) { (r ? ref : fast)(z.data(), x.data(), nullptr, 4, out.data(), dt); }, m);
  ExpectSameError("null output", out, [&](bool r) { (r ? ref : fast)(z.data(), y.data(), x.data(), 4, nullptr, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(z.data(), y.data(), x.data(), 4, out.data(), DType::Int32); }, m);
  return m;
}

// ---- DAGMarkovFactorization ---------------------------------------------------------------------

double SmallestSubnormal(DType dt) {
  switch (dt) {
    case DType::Float64: return 4.9406564584124654e-324;
    case DType::Float32: return 1.401298464324817e-45;
    case DType::Float16: return 5.9604644775390625e-8;
    default: return 9.183549615799121e-41;  // bf16
  }
}

Measure RunDagMarkov(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<DagFn>(refk), fast = Unerase<DagFn>(fastk);
  const DType dt = c.dtype;
  const Tolerance tol = DefaultTolerance(dt);
  std::vector<int64_t> counts = c.sizes;
  if (!Quick(c)) counts.push_back(200003);
  // log2 of the target product per variant: moderate; near the output format's subnormal range;
  // far below every range (0). Variant 3 holds exact ones and one exact zero; variant 4 has f64
  // subnormal factors (f64 only).
  const double subLog2 = dt == DType::Float64 ? -1060 : dt == DType::Float32 ? -140 : dt == DType::Float16 ? -20 : -130;
  for (const int64_t count : counts) {
    for (int variant = 0; variant < 5; ++variant) {
      const auto n = static_cast<size_t>(count);
      const size_t shift = (n + static_cast<size_t>(variant)) % 2;
      std::mt19937_64 g(c.seed + n * 7 + static_cast<size_t>(variant));
      std::uniform_real_distribution<double> u(0.0, 1.0);
      const double target = variant == 0 ? -20.0 : variant == 1 ? subLog2 : -3000.0;
      std::vector<double> v(n);
      for (size_t i = 0; i < n; ++i) {
        v[i] = std::exp2(target / static_cast<double>(n) * 2.0 * u(g));
        if (variant == 3) v[i] = (i % 3 == 0) ? 1.0 : std::exp2(-0.01 * u(g));
        if (variant == 4) v[i] = (i % 5 == 2 && dt == DType::Float64) ? 1e-310 : std::sqrt(v[i]);
      }
      if (variant == 3 && n > 2) v[n / 2] = 0.0;
      const Bytes in = Store(v, dt, shift);
      Bytes want(Elem(dt) + 8, kGuard), got = want;
      const std::string where = fmt::format("C={} variant {} product", n, variant);
      if (!RunBoth([&] { ref(At(in, dt, shift), count, want.data(), dt); },
                   [&] { fast(At(in, dt, shift), count, got.data(), dt); }, where, m)) {
        continue;
      }
      if (!std::equal(got.begin() + static_cast<std::ptrdiff_t>(Elem(dt)), got.end(),
                      want.begin() + static_cast<std::ptrdiff_t>(Elem(dt)))) {
        Fail(m, where + ": wrote outside its output");
      }
      const double gv = LoadAsDouble(got, dt, 0), wv = LoadAsDouble(want, dt, 0);
      if (std::signbit(gv) != std::signbit(wv)) Fail(m, fmt::format("{}: got {}, want {} (sign)", where, gv, wv));
      CompareBound(gv, wv, tol.rel * std::fabs(wv) + SmallestSubnormal(dt), where, m);
    }
  }
  // Invalid calls (the reference's checks in order).
  Bytes out(Elem(dt), 0x5A);
  auto bad = [&](const std::string& what, const std::vector<double>& v, int64_t count, DType d) {
    const Bytes b = Store(v, dt);
    ExpectSameError(what, out, [&](bool r) { (r ? ref : fast)(b.data(), count, out.data(), d); }, m);
  };
  std::vector<double> ok(37, 0.75);
  bad("factor above 1", [&] { auto v = ok; v[33] = 1.5; return v; }(), 37, dt);
  bad("negative factor", [&] { auto v = ok; v[3] = -0.25; return v; }(), 37, dt);
  bad("NaN factor", [&] { auto v = ok; v[20] = NAN; return v; }(), 37, dt);
  bad("Inf factor", [&] { auto v = ok; v[36] = INFINITY; return v; }(), 37, dt);
  bad("negative count", ok, -1, dt);
  bad("int32 dtype", ok, 37, DType::Int32);
  const Bytes b = Store(ok, dt);
  ExpectSameError("null output", out, [&](bool r) { (r ? ref : fast)(b.data(), 37, nullptr, dt); }, m);
  ExpectSameError("null conditionals", out, [&](bool r) { (r ? ref : fast)(nullptr, 37, out.data(), dt); }, m);
  return m;
}

// ---- Hawkes -------------------------------------------------------------------------------------

// Sorted event times with exponential gaps (mean 0.05) and some ties, starting at `start`.
std::vector<double> EventTimes(size_t n, uint64_t seed, double start) {
  std::mt19937_64 g(seed);
  std::exponential_distribution<double> gap(20.0);
  std::vector<double> t(n);
  double now = start;
  for (size_t i = 0; i < n; ++i) {
    if (i % 9 != 4) now += gap(g);
    t[i] = now;
  }
  return t;
}

struct HawkesParams {
  float mu, alpha, beta;
};
constexpr HawkesParams kParams[] = {{0.3f, 0.8f, 1.7f}, {1.25f, 0.0f, 40.0f}, {0.0f, 2.5f, 0.01f}};

Measure RunIntensity(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<IntensityFn>(refk), fast = Unerase<IntensityFn>(fastk);
  const DType dt = c.dtype;
  for (const int64_t ecount : c.sizes) {
    const auto ne = static_cast<size_t>(ecount);
    const size_t shift = ne % 2;
    const Bytes events = Store(EventTimes(ne, c.seed + ne, -0.5), dt, shift);
    const std::vector<double> ev = Values(events, dt, ne, shift);
    // Queries: unsorted, before, between, at and after the events.
    const size_t nq = ne > 4096 ? 37 : 41;
    std::vector<double> q = Normal(nq, c.seed + 3 * ne);
    const double span = ne > 0 ? ev.back() + 1.0 : 2.0;
    for (size_t k = 0; k < nq; ++k) q[k] = (k % 5 == 0 && ne > 0) ? ev[(k * 7919) % ne] : std::fabs(q[k]) * span / 2.0 - 0.75;
    const Bytes queries = Store(q, dt, shift);
    for (const HawkesParams& p : kParams) {
      Bytes want((nq + shift) * Elem(dt) + 8, kGuard), got = want;
      const std::string where = fmt::format("E={} Q={} mu={} alpha={} beta={} out", ne, nq, p.mu, p.alpha, p.beta);
      if (!RunBoth([&] { ref(At(events, dt, shift), At(queries, dt, shift), At(want, dt, shift), ecount, static_cast<int64_t>(nq), p.mu, p.alpha, p.beta, dt); },
                   [&] { fast(At(events, dt, shift), At(queries, dt, shift), At(got, dt, shift), ecount, static_cast<int64_t>(nq), p.mu, p.alpha, p.beta, dt); },
                   where, m)) {
        continue;
      }
      CompareOut(got, want, dt, nq, shift, where, m);
    }
  }
  const Bytes ev = Store({0.5, 1.0, 2.0}, dt), unsorted = Store({0.5, 2.0, 1.0}, dt);
  const Bytes q = Store({1.5, NAN}, dt);
  Bytes out(2 * Elem(dt), 0x5A);
  ExpectSameError("unsorted events", out, [&](bool r) { (r ? ref : fast)(unsorted.data(), q.data(), out.data(), 3, 1, 0.1f, 1.0f, 1.0f, dt); }, m);
  ExpectSameError("NaN query", out, [&](bool r) { (r ? ref : fast)(ev.data(), q.data(), out.data(), 3, 2, 0.1f, 1.0f, 1.0f, dt); }, m);
  ExpectSameError("beta 0", out, [&](bool r) { (r ? ref : fast)(ev.data(), q.data(), out.data(), 3, 1, 0.1f, 1.0f, 0.0f, dt); }, m);
  ExpectSameError("negative mu", out, [&](bool r) { (r ? ref : fast)(ev.data(), q.data(), out.data(), 3, 1, -0.1f, 1.0f, 1.0f, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(ev.data(), q.data(), out.data(), 3, 1, 0.1f, 1.0f, 1.0f, DType::Int32); }, m);
  return m;
}

Measure RunKernelMatrix(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<KernelMatrixFn>(refk), fast = Unerase<KernelMatrixFn>(fastk);
  const DType dt = c.dtype;
  std::vector<int64_t> counts = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 65};
  if (!Quick(c)) counts.insert(counts.end(), {257, 1000});
  for (const int64_t count : counts) {
    const auto n = static_cast<size_t>(count);
    const size_t shift = n % 2;
    const Bytes events = Store(EventTimes(n, c.seed + n, 0.0), dt, shift);
    for (const HawkesParams& p : kParams) {
      Bytes want((n * n + shift) * Elem(dt) + 8, kGuard), got = want;
      const std::string where = fmt::format("E={} alpha={} beta={} K", n, p.alpha, p.beta);
      if (!RunBoth([&] { ref(At(events, dt, shift), At(want, dt, shift), count, p.alpha, p.beta, dt); },
                   [&] { fast(At(events, dt, shift), At(got, dt, shift), count, p.alpha, p.beta, dt); }, where, m)) {
        continue;
      }
      CompareOut(got, want, dt, n * n, shift, where, m);
    }
  }
  const Bytes unsorted = Store({0.5, 2.0, 1.0}, dt), inf = Store({0.5, 1.0, INFINITY}, dt);
  Bytes out(9 * Elem(dt), 0x5A);
  ExpectSameError("unsorted events", out, [&](bool r) { (r ? ref : fast)(unsorted.data(), out.data(), 3, 1.0f, 1.0f, dt); }, m);
  ExpectSameError("Inf event", out, [&](bool r) { (r ? ref : fast)(inf.data(), out.data(), 3, 1.0f, 1.0f, dt); }, m);
  ExpectSameError("negative alpha", out, [&](bool r) { (r ? ref : fast)(unsorted.data(), out.data(), 2, -1.0f, 1.0f, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(unsorted.data(), out.data(), 2, 1.0f, 1.0f, DType::Int32); }, m);
  return m;
}

// sum_i |ln lambda_i| + mu T + (alpha / beta) sum_i (1 - exp(-beta (T - t_i))) (strictly-before rule).
double LogLikCondition(const std::vector<double>& t, double T, double mu, double a, double b) {
  double cond = mu * T, excitation = 0.0, groupTime = 0.0, groupSize = 0.0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 0) {
      groupTime = t[0];
      groupSize = 1.0;
    } else if (t[i] > groupTime) {
      excitation = std::exp(-b * (t[i] - groupTime)) * (excitation + groupSize);
      groupTime = t[i];
      groupSize = 1.0;
    } else {
      groupSize += 1.0;
    }
    cond += std::fabs(std::log(mu + a * excitation)) + (a / b) * -std::expm1(-b * (T - t[i]));
  }
  return cond;
}

Measure RunLogLikelihood(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<LogLikFn>(refk), fast = Unerase<LogLikFn>(fastk);
  const DType dt = c.dtype;
  const Tolerance tol = DefaultTolerance(dt);
  constexpr HawkesParams kLikParams[] = {{0.3f, 0.8f, 1.7f}, {1.25f, 0.0f, 40.0f}, {0.05f, 2.5f, 0.01f}};
  for (const int64_t count : c.sizes) {
    const auto n = static_cast<size_t>(count);
    const size_t shift = n % 2;
    const Bytes events = Store(EventTimes(n, c.seed + n, 0.25), dt, shift);
    const std::vector<double> t = Values(events, dt, n, shift);
    const float total = static_cast<float>((n > 0 ? t.back() : 0.0) + 0.5);
    for (const HawkesParams& p : kLikParams) {
      Bytes want(Elem(dt), kGuard), got = want;
      const std::string where = fmt::format("E={} mu={} alpha={} beta={} loglik", n, p.mu, p.alpha, p.beta);
      if (!RunBoth([&] { ref(At(events, dt, shift), count, total, p.mu, p.alpha, p.beta, want.data(), dt); },
                   [&] { fast(At(events, dt, shift), count, total, p.mu, p.alpha, p.beta, got.data(), dt); }, where, m)) {
        continue;
      }
      const double g = LoadAsDouble(got, dt, 0), w = LoadAsDouble(want, dt, 0);
      const double bound = tol.abs + tol.rel * std::max(std::fabs(w), LogLikCondition(t, total, p.mu, p.alpha, p.beta));
      if (g == w) continue;  // equal, infinities included (f16 overflows at E = 4097)
      const double err = std::fabs(g - w);
      m.max_error = std::max(m.max_error, std::isfinite(err) ? err : INFINITY);
      if (!(err <= bound)) Fail(m, fmt::format("{}: got {}, want {} (bound {})", where, g, w, bound));
    }
  }
  const Bytes ev = Store({0.5, 1.0, 2.0}, dt), unsorted = Store({0.5, 2.0, 1.0}, dt);
  Bytes out(Elem(dt), 0x5A);
  ExpectSameError("unsorted events", out, [&](bool r) { (r ? ref : fast)(unsorted.data(), 3, 3.0f, 0.5f, 1.0f, 1.0f, out.data(), dt); }, m);
  ExpectSameError("event after T", out, [&](bool r) { (r ? ref : fast)(ev.data(), 3, 1.5f, 0.5f, 1.0f, 1.0f, out.data(), dt); }, m);
  ExpectSameError("mu 0", out, [&](bool r) { (r ? ref : fast)(ev.data(), 3, 3.0f, 0.0f, 1.0f, 1.0f, out.data(), dt); }, m);
  ExpectSameError("null output", out, [&](bool r) { (r ? ref : fast)(ev.data(), 3, 3.0f, 0.5f, 1.0f, 1.0f, nullptr, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(ev.data(), 3, 3.0f, 0.5f, 1.0f, 1.0f, out.data(), DType::Int32); }, m);
  return m;
}

Measure RunMutualInformation(ErasedKernel refk, ErasedKernel fastk, const RunContext& c) {
  Measure m;
  const auto ref = Unerase<MutualInfoFn>(refk), fast = Unerase<MutualInfoFn>(fastk);
  const DType dt = c.dtype;
  std::vector<std::pair<int64_t, int64_t>> shapes = {{0, 3}, {1, 1}, {1, 7}, {2, 2}, {3, 5}, {4, 8}, {7, 9}, {17, 16}, {33, 5}, {8, 65}};
  if (!Quick(c)) shapes.insert(shapes.end(), {{300, 257}, {1000, 70}});
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [xc_binding, yc_binding] : shapes) {
    const auto& xc = xc_binding;
    const auto& yc = yc_binding;
    const auto X = static_cast<size_t>(xc), Y = static_cast<size_t>(yc);
    for (int variant = 0; variant < 3; ++variant) {
      // 0: a probability table with zeros (a zero row and column too); 1: counts; 2: independent.
      std::vector<double> v = Normal(X * Y, c.seed + X * 31 + Y + variant);
      for (size_t x = 0; x < X; ++x) {
        for (size_t y = 0; y < Y; ++y) {
          double& e = v[x * Y + y];
          if (variant == 0) e = ((x * 3 + y) % 5 == 1 || (X > 2 && x == 1) || (Y > 2 && y == 2)) ? 0.0 : std::fabs(e) * 1e-3;
          if (variant == 1) e = std::floor(std::fabs(e) * 40.0) * (dt == DType::Float64 || dt == DType::BFloat16 ? 1e30 : 1.0);
          if (variant == 2) e = (1.0 + static_cast<double>(x % 3)) * (2.0 + static_cast<double>(y % 4)) / 64.0;
        }
      }
      if (!v.empty()) v[0] = std::max(v[0], 0.5);
      const size_t shift = (X * Y) % 2;
      const Bytes in = Store(v, dt, shift);
      Bytes want(Elem(dt), kGuard), got = want;
      const std::string where = fmt::format("{}x{} variant {} MI", X, Y, variant);
      if (!RunBoth([&] { ref(At(in, dt, shift), want.data(), xc, yc, dt); },
                   [&] { fast(At(in, dt, shift), got.data(), xc, yc, dt); }, where, m)) {
        continue;
      }
      CompareStorage(got, want, dt, 1, DefaultTolerance(dt), where, m);
    }
  }
  Bytes out(Elem(dt), 0x5A);
  const Bytes zeros = Store(std::vector<double>(6, 0.0), dt), neg = Store({0.5, -0.1, 0.2, 0.2}, dt);
  const Bytes nan = Store({0.5, NAN, 0.2, 0.2}, dt);
  ExpectSameError("all zeros", out, [&](bool r) { (r ? ref : fast)(zeros.data(), out.data(), 2, 3, dt); }, m);
  ExpectSameError("negative entry", out, [&](bool r) { (r ? ref : fast)(neg.data(), out.data(), 2, 2, dt); }, m);
  ExpectSameError("NaN entry", out, [&](bool r) { (r ? ref : fast)(nan.data(), out.data(), 2, 2, dt); }, m);
  ExpectSameError("negative count", out, [&](bool r) { (r ? ref : fast)(nan.data(), out.data(), -2, 2, dt); }, m);
  ExpectSameError("int32 dtype", out, [&](bool r) { (r ? ref : fast)(neg.data(), out.data(), 2, 2, DType::Int32); }, m);
  return m;
}

}  // namespace

void RegisterCausalRunners(RunnerRegistry& r) {
  r["Cholesky"] = RunCholesky;
  r["BackdoorAdjustment"] = RunBackdoor;
  r["FrontdoorAdjustment"] = RunFrontdoor;
  r["Counterfactual"] = RunCounterfactual;
  r["MarkovFlow"] = RunMarkovFlow;
  r["IVEstimate"] = RunIvEstimate;
  r["DAGMarkovFactorization"] = RunDagMarkov;
  r["HawkesIntensity"] = RunIntensity;
  r["HawkesKernelMatrix"] = RunKernelMatrix;
  r["HawkesLogLikelihood"] = RunLogLikelihood;
  r["MarkovMutualInformation"] = RunMutualInformation;
}

}  // namespace backplane::conformance
