// Conformance runners for the Physics families: Laplacian, Stencil1D, FFT, MadelungContinuity.
//
// Stencils compare against the reference with the tolerance table. FFTs compare per element
// against an FFT error bound (below), check the normwise error, Parseval's identity and the round
// trip through the same kernel. Every runner also checks error parity (RunBoth), in-place calls
// and shifted (unaligned) buffers.
//
// FFT error bound. For a radix-2/4 FFT of length m in a format with unit roundoff u, with
// twiddles correct to within mu <= u (computed in f64, rounded once), Higham ("Accuracy and
// Stability of Numerical Algorithms", 2nd ed., Thm 24.2) gives
//   ||y_hat - y||_2 <= log2(m) eta / (1 - log2(m) eta) ||y||_2,  eta = mu + gamma_4 (sqrt 2 + mu)
// so eta ~= (1 + 4 sqrt 2) u ~= 6.7 u, i.e. rms(error) <= 6.7 u log2(m) rms(y) (radix-4 stages
// do the same operations as two radix-2 stages). Bluestein (n not a power of two, m >= 2n-1) runs
// two length-m FFTs and three complex products (sqrt(2) gamma_2 ~= 2.9 u each) plus the rounding
// of the precomputed chirp transform: rms(error) <= (13.4 log2(m) + 10) u rms(y) (the chirp's
// transform has |B_k| ~ sqrt(n), so the convolution does not amplify the error). The test:
//   normwise:    ||got - want||_2 <= K u ||want||_2 + (storage rounding, both sides)
//   per element: |got_k - want_k| <= tol.abs + tol.rel (|want_k| + E) + E,  E = K u rms(want)
// with K = 6.7 log2(m) or 13.4 log2(m) + 10 and u of the compute format: 2^-53, since the fast
// kernel computes every dtype in f64 lanes (in f32 lanes E would exceed the f32 table bound on the
// smaller outputs), so in practice the tolerance table decides. The per-element test uses the
// rms-level bound (not the looser ||e||_2): rounding errors add like a random walk, and the
// measured maximum stays about 10x below it (max |error| ~= 10 u rms(y) at n = 2^16). Parseval and
// the round trip IFFT(FFT(x)) = x allow twice that relative error plus the storage rounding.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using LaplacianFn = BP_RET_Laplacian (*)(BP_PARAMS_Laplacian);
using Stencil1DFn = BP_RET_Stencil1D (*)(BP_PARAMS_Stencil1D);
using FFTFn = BP_RET_FFT (*)(BP_PARAMS_FFT);
using MadelungFn = BP_RET_MadelungContinuity (*)(BP_PARAMS_MadelungContinuity);

// Input variants: 0 random with specials, 1 random, 2 |random| (a valid density), 3 |random| with
// every fifth value 0 (wavefunction nodes).
std::vector<uint8_t> Variant(DType dtype, int64_t n, uint64_t seed, int variant) {
  auto s = RandomStorage(dtype, n, seed, 2.0, variant == 0);
  if (variant >= 2) {
    for (int64_t i = 0; i < n; ++i) {
      const double v = std::fabs(LoadAsDouble(s, dtype, i));
      StoreAsDouble(s, dtype, i, variant == 3 && i % 5 == 2 ? 0.0 : v);
    }
  }
  return s;
}

Measure RunStencil1D(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  const auto R = Unerase<Stencil1DFn>(ref);
  const auto F = Unerase<Stencil1DFn>(fast);
  for (int64_t n : c.sizes) {
    for (int variant = 0; variant < 4; ++variant) {
      for (float h : {1.0f, 0.37f}) {
        const size_t off = Offset(c.dtype, n);
        const auto x = Shifted(Variant(c.dtype, n, c.seed + static_cast<uint64_t>(n) + 101 * variant, variant), off);
        auto want = std::vector<uint8_t>(x.size(), kGuard);
        auto got = want;
        const std::string where = fmt::format("n={} variant={} h={} y", n, variant, h);
        if (!RunBoth([&] { R(x.data() + off, want.data() + off, n, h, c.dtype); },
                     [&] { F(x.data() + off, got.data() + off, n, h, c.dtype); }, where, m)) {
          continue;
        }
        CompareStorage(Unshifted(got, off), Unshifted(want, off), c.dtype, n, tol, where, m);
        if (variant == 1 || variant == 3) {  // in place: output = input
          auto inplace = x;
          F(inplace.data() + off, inplace.data() + off, n, h, c.dtype);
          CompareStorage(Unshifted(inplace, off), Unshifted(want, off), c.dtype, n, tol, where + " (in place)", m);
        }
      }
    }
  }
  // Invalid arguments: the same error as the reference, nothing else.
  const auto x = RandomStorage(c.dtype, 8, c.seed);
  auto y = x;
  for (float h : {0.0f, -1.0f, NAN, INFINITY}) {
    RunBoth([&] { R(x.data(), y.data(), 8, h, c.dtype); }, [&] { F(x.data(), y.data(), 8, h, c.dtype); },
            fmt::format("spacing {}", h), m);
  }
  RunBoth([&] { R(x.data(), y.data(), -1, 1.0f, c.dtype); }, [&] { F(x.data(), y.data(), -1, 1.0f, c.dtype); },
          "count -1", m);
  RunBoth([&] { R(nullptr, y.data(), 8, 1.0f, c.dtype); }, [&] { F(nullptr, y.data(), 8, 1.0f, c.dtype); },
          "null input", m);
  return m;
}

Measure RunMadelung(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  const auto R = Unerase<MadelungFn>(ref);
  const auto F = Unerase<MadelungFn>(fast);
  for (int64_t n : c.sizes) {
    for (int variant = 0; variant < 3; ++variant) {
      const float h = variant == 1 ? 0.37f : 1.0f;
      const size_t off = Offset(c.dtype, n);
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) + 101 * variant;
      const auto rho = Shifted(Variant(c.dtype, n, seed, variant), off);
      const auto v = Shifted(Variant(c.dtype, n, seed + 7919, variant == 2 ? 1 : variant), off);
      auto want = std::vector<uint8_t>(rho.size(), kGuard);
      auto got = want;
      const std::string where = fmt::format("n={} variant={} residual", n, variant);
      if (!RunBoth([&] { R(rho.data() + off, v.data() + off, want.data() + off, n, h, c.dtype); },
                   [&] { F(rho.data() + off, v.data() + off, got.data() + off, n, h, c.dtype); }, where, m)) {
        continue;
      }
      CompareStorage(Unshifted(got, off), Unshifted(want, off), c.dtype, n, tol, where, m);
      auto inplace = v;  // residual aliases the velocity
      F(rho.data() + off, inplace.data() + off, inplace.data() + off, n, h, c.dtype);
      CompareStorage(Unshifted(inplace, off), Unshifted(want, off), c.dtype, n, tol, where + " (in place)", m);
    }
  }
  const auto x = RandomStorage(c.dtype, 8, c.seed);
  auto y = x;
  RunBoth([&] { R(x.data(), x.data(), y.data(), 8, 0.0f, c.dtype); },
          [&] { F(x.data(), x.data(), y.data(), 8, 0.0f, c.dtype); }, "spacing 0", m);
  RunBoth([&] { R(x.data(), nullptr, y.data(), 8, 1.0f, c.dtype); },
          [&] { F(x.data(), nullptr, y.data(), 8, 1.0f, c.dtype); }, "null velocity", m);
  return m;
}

Measure RunLaplacian(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  const auto R = Unerase<LaplacianFn>(ref);
  const auto F = Unerase<LaplacianFn>(fast);
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t n : c.sizes) shapes.push_back({n});
  for (std::vector<int64_t> s : std::vector<std::vector<int64_t>>{
           {1, 7}, {2, 2}, {3, 17}, {17, 5}, {7, 1}, {16, 33}, {9, 1001}, {1, 1, 9}, {9, 1, 1}, {2, 3, 4}, {3, 4, 5},
           {5, 17, 33}, {2, 2, 2}, {3, 1, 31}, {0, 5}, {4, 0, 3}}) {
    shapes.push_back(s);
  }
  if (!Quick(c)) shapes.push_back({3, 50, 501});  // > 64K cells: threaded
  for (const auto& dims : shapes) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    for (int variant = 0; variant < 2; ++variant) {
      const float h = variant == 0 ? 1.0f : 0.37f;
      const size_t off = Offset(c.dtype, count);
      const auto x = Shifted(Variant(c.dtype, count, c.seed + static_cast<uint64_t>(count) + 101 * variant, variant), off);
      auto want = std::vector<uint8_t>(x.size(), kGuard);
      auto got = want;
      const auto rank = static_cast<int64_t>(dims.size());
      const std::string where = fmt::format("dims=[{}] variant={} y", fmt::join(dims, ","), variant);
      if (!RunBoth([&] { R(x.data() + off, want.data() + off, dims.data(), rank, h, c.dtype); },
                   [&] { F(x.data() + off, got.data() + off, dims.data(), rank, h, c.dtype); }, where, m)) {
        continue;
      }
      CompareStorage(Unshifted(got, off), Unshifted(want, off), c.dtype, count, tol, where, m);
      if (variant == 1) {
        auto inplace = x;
        F(inplace.data() + off, inplace.data() + off, dims.data(), rank, h, c.dtype);
        CompareStorage(Unshifted(inplace, off), Unshifted(want, off), c.dtype, count, tol, where + " (in place)", m);
      }
    }
  }
  const auto x = RandomStorage(c.dtype, 8, c.seed);
  auto y = x;
  const int64_t dims[4] = {2, 4, 1, 1};
  const int64_t bad[2] = {-2, 4};
  RunBoth([&] { R(x.data(), y.data(), dims, 4, 1.0f, c.dtype); }, [&] { F(x.data(), y.data(), dims, 4, 1.0f, c.dtype); },
          "rank 4", m);
  RunBoth([&] { R(x.data(), y.data(), dims, 0, 1.0f, c.dtype); }, [&] { F(x.data(), y.data(), dims, 0, 1.0f, c.dtype); },
          "rank 0", m);
  RunBoth([&] { R(x.data(), y.data(), bad, 2, 1.0f, c.dtype); }, [&] { F(x.data(), y.data(), bad, 2, 1.0f, c.dtype); },
          "negative dim", m);
  RunBoth([&] { R(x.data(), y.data(), dims, 2, NAN, c.dtype); }, [&] { F(x.data(), y.data(), dims, 2, NAN, c.dtype); },
          "spacing NaN", m);
  return m;
}

// ---- FFT ----------------------------------------------------------------------------------------

double ComputeUnit(DType) { return 0x1p-53; }  // every dtype runs in f64 lanes

double StorageUnit(DType dtype) {
  switch (dtype) {
    case DType::Float64: return 0x1p-53;
    case DType::Float32: return 0x1p-24;
    case DType::Float16: return 0x1p-11;
    default: return 0x1p-8;
  }
}

// K u of the bound above for length n.
double FftBound(DType dtype, int64_t n) {
  const bool pow2 = n > 0 && (n & (n - 1)) == 0;
  int64_t len = 1;
  while (len < (pow2 ? n : 2 * n - 1)) len <<= 1;
  const double lg = std::max(1.0, std::log2(static_cast<double>(len)));
  return (pow2 ? 6.7 * lg : 13.4 * lg + 10.0) * ComputeUnit(dtype);
}

struct Complex {
  std::vector<uint8_t> re, im;
};

std::vector<double> ToDoubles(const std::vector<uint8_t>& s, DType dtype, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = LoadAsDouble(s, dtype, i);
  return v;
}

bool AllFinite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

double Energy(const std::vector<double>& re, const std::vector<double>& im) {
  double e = 0.0;
  for (size_t i = 0; i < re.size(); ++i) e += re[i] * re[i] + im[i] * im[i];
  return e;
}

void CheckRelative(double got, double want, double bound, const std::string& where, Measure& m) {
  const double err = std::fabs(got - want) / std::max(want, 1e-300);
  if (!(err <= bound) && m.ok) {
    m.ok = false;
    m.note = fmt::format("{}: relative error {} > bound {}", where, err, bound);
  }
}

Measure RunFFT(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  const bool inverse = c.method.find("IFFT") != std::string::npos;
  const auto R = Unerase<FFTFn>(ref);
  const auto F = Unerase<FFTFn>(fast);
  std::vector<int64_t> sizes = c.sizes;
  // Every plan shape (first pass from 16 lanes^2 on); the full run adds 2^16 (> 64 KiB, threaded).
  const bool quick = Quick(c);
  for (int64_t n : {128, 256, 1024, 4096}) sizes.push_back(n);
  if (!quick) sizes.push_back(65536);
  for (int64_t n : sizes) {
    for (int variant = 0; variant < 3; ++variant) {  // 0: specials, 1: random, 2: null imagIn
      const size_t off = Offset(c.dtype, n);
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) + 101 * variant;
      const auto xr = Shifted(RandomStorage(c.dtype, n, seed, 2.0, variant == 0), off);
      const auto xi = Shifted(RandomStorage(c.dtype, n, seed + 7919, 2.0, variant == 0), off);
      const void* xip = variant == 2 ? nullptr : xi.data() + off;
      Complex want{std::vector<uint8_t>(xr.size(), kGuard), std::vector<uint8_t>(xr.size(), kGuard)};
      Complex got = want;
      const std::string where = fmt::format("n={} variant={}", n, variant);
      if (!RunBoth([&] { R(xr.data() + off, xip, want.re.data() + off, want.im.data() + off, n, c.dtype); },
                   [&] { F(xr.data() + off, xip, got.re.data() + off, got.im.data() + off, n, c.dtype); }, where,
                   m)) {
        continue;
      }
      got.re = Unshifted(got.re, off), got.im = Unshifted(got.im, off);
      want.re = Unshifted(want.re, off), want.im = Unshifted(want.im, off);
      const auto wr = ToDoubles(want.re, c.dtype, n), wi = ToDoubles(want.im, c.dtype, n);
      const auto gr = ToDoubles(got.re, c.dtype, n), gi = ToDoubles(got.im, c.dtype, n);
      const auto x0 = ToDoubles(Unshifted(xr, off), c.dtype, n);
      const auto x1 = variant == 2 ? std::vector<double>(x0.size(), 0.0) : ToDoubles(Unshifted(xi, off), c.dtype, n);
      if (!AllFinite(x0) || !AllFinite(x1) || !AllFinite(wr) || !AllFinite(wi)) {
        CompareStorage(got.re, want.re, c.dtype, n, tol, where + " re", m);  // same NaN/Inf pattern
        CompareStorage(got.im, want.im, c.dtype, n, tol, where + " im", m);
        continue;
      }
      const double k = FftBound(c.dtype, n);
      const double wantEnergy = Energy(wr, wi);
      const double rms = std::sqrt(wantEnergy / static_cast<double>(n));
      const double e = k * rms;
      const Tolerance elem{tol.abs + e + tol.rel * e, tol.rel};
      CompareStorage(got.re, want.re, c.dtype, n, elem, where + " re", m);
      CompareStorage(got.im, want.im, c.dtype, n, elem, where + " im", m);
      // Normwise error, Parseval, round trip.
      double err2 = 0.0;
      for (size_t i = 0; i < wr.size(); ++i) err2 += (gr[i] - wr[i]) * (gr[i] - wr[i]) + (gi[i] - wi[i]) * (gi[i] - wi[i]);
      const double us = StorageUnit(c.dtype);
      if (!(std::sqrt(err2) <= (k + 2 * us) * std::sqrt(wantEnergy) + 1e-300) && m.ok) {
        m.ok = false;
        m.note = fmt::format("{}: normwise error {} > {}", where, std::sqrt(err2), (k + 2 * us) * std::sqrt(wantEnergy));
      }
      const double nd = static_cast<double>(n);
      const double inEnergy = Energy(x0, x1);
      if (inEnergy == 0.0) continue;
      CheckRelative(Energy(gr, gi), inverse ? inEnergy / nd : inEnergy * nd, 2 * (k + us) + (k + us) * (k + us),
                    where + " Parseval", m);
      // Round trip with the same kernel: x = conj(F(conj(F(x)))) scaled by 1/n (FFT) or n (IFFT).
      // The scaling is applied between the calls, so that f16 does not overflow (n x ~ 1e5).
      const double scale = inverse ? nd : 1.0 / nd;
      Complex back{got.re, got.im};
      for (int64_t i = 0; i < n; ++i) {
        StoreAsDouble(back.re, c.dtype, i, gr[static_cast<size_t>(i)] * scale);
        StoreAsDouble(back.im, c.dtype, i, -gi[static_cast<size_t>(i)] * scale);
      }
      Complex rt{std::vector<uint8_t>(got.re.size()), std::vector<uint8_t>(got.re.size())};
      F(back.re.data(), back.im.data(), rt.re.data(), rt.im.data(), n, c.dtype);
      const auto rr = ToDoubles(rt.re, c.dtype, n), ri = ToDoubles(rt.im, c.dtype, n);
      double rt2 = 0.0;
      for (size_t i = 0; i < rr.size(); ++i) {
        const double dr = rr[i] - x0[i], di = -ri[i] - x1[i];
        rt2 += dr * dr + di * di;
      }
      const double rtBound = 2 * k + 3 * us;
      if (!(std::sqrt(rt2) <= rtBound * std::sqrt(inEnergy)) && m.ok) {
        m.ok = false;
        m.note = fmt::format("{}: round trip error {} > {}", where, std::sqrt(rt2 / inEnergy), rtBound);
      }
      if (variant == 1) {  // in place: outputs are the input arrays
        Complex io{xr, xi};
        F(io.re.data() + off, io.im.data() + off, io.re.data() + off, io.im.data() + off, n, c.dtype);
        CompareStorage(Unshifted(io.re, off), got.re, c.dtype, n, tol, where + " re (in place)", m);
        CompareStorage(Unshifted(io.im, off), got.im, c.dtype, n, tol, where + " im (in place)", m);
      }
    }
  }
  const auto x = RandomStorage(c.dtype, 8, c.seed);
  auto y0 = x, y1 = x;
  RunBoth([&] { R(x.data(), x.data(), y0.data(), y1.data(), -1, c.dtype); },
          [&] { F(x.data(), x.data(), y0.data(), y1.data(), -1, c.dtype); }, "count -1", m);
  RunBoth([&] { R(x.data(), x.data(), nullptr, y1.data(), 8, c.dtype); },
          [&] { F(x.data(), x.data(), nullptr, y1.data(), 8, c.dtype); }, "null realOut", m);
  RunBoth([&] { R(x.data(), x.data(), y0.data(), y1.data(), 8, DType::Int8); },
          [&] { F(x.data(), x.data(), y0.data(), y1.data(), 8, DType::Int8); }, "dtype int8", m);
  return m;
}

}  // namespace

void RegisterPhysicsRunners(RunnerRegistry& r) {
  r["Laplacian"] = RunLaplacian;
  r["Stencil1D"] = RunStencil1D;
  r["FFT"] = RunFFT;
  r["MadelungContinuity"] = RunMadelung;
}

}  // namespace backplane::conformance
