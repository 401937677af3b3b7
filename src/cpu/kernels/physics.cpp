// Highway kernels for the Physics surface.
// - FFT1D / IFFT1D: Stockham FFT in f64 lanes for every dtype (f32 promoted, f16/bf16 widened;
//   in f32 lanes the error, ~u log2(n) rms(X), would exceed the f32 tolerance on the smaller
//   outputs; f32 2^16 still takes ~0.22 ms on AVX-512). Power-of-two n: one transposing radix-L first pass (L = lane count) followed by radix-4
//   passes (a radix-2 last when needed); twiddles computed in f64 and cached per length. Other n:
//   Bluestein's chirp-z through the same power-of-two FFT (chirp FFT precomputed in f64). IFFT is
//   the FFT with real and imaginary parts swapped, scaled by 1/n. Inputs with Inf/NaN (or large
//   enough to overflow an intermediate) go to the reference, whose NaN/Inf pattern is that of its
//   own radix-2 butterflies.
// - Laplacian, Laplacian4, Grad1D, Divergence1D, BohmianVelocity, QuantumPotential,
//   MadelungContinuity: f64 lanes for every dtype (f32 promoted, f16/bf16 widened), the
//   reference's formulas in its order of operations, one rounding to the output format
//   (round-to-odd to f32 then nearest even for f16/bf16, as the reference). f32 arithmetic
//   would not be within the f32 tolerance: the second differences cancel.
// Everything unusual (bad dtype/count/pointers/spacing, negative or non-finite density) goes to
// the reference, so errors are identical. Outputs aliasing inputs are computed into a temporary.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/physics.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_PHYSICS_SHARED_
#define BACKPLANE_CPU_KERNELS_PHYSICS_SHARED_
#include <hwy/aligned_allocator.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <tuple>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::physics_shared {

enum StencilOp : int { kLap4, kCentral, kQuantum, kMadelung };

// exp(-2 pi i j / n), from the exact angle (j reduced mod n in integers).
inline void Twiddle(int64_t j, int64_t n, double& c, double& s) {
  const double a = 2.0 * std::numbers::pi * static_cast<double>(j % n) / static_cast<double>(n);
  c = std::cos(a);
  s = -std::sin(a);
}

struct Stage {
  int radix;     // 4 or 2
  int64_t nt;    // sub-transform length at this stage
  size_t tw;     // offset of its twiddles in Plan::tw: per p, (w^p, w^2p, w^3p) as (re, im) pairs
};

// Forward-FFT plan for a power-of-two n on `lanes` lanes.
template <class T>
struct Plan {
  int64_t n = 0;
  bool first = false;        // transposing radix-`lanes` first pass (n >= lanes^2, lanes >= 2)
  std::vector<Stage> inner;  // the length-`lanes` sub-DFT of the first pass
  std::vector<Stage> outer;  // the remaining passes (all of them without a first pass)
  hwy::AlignedFreeUniquePtr<T[]> tw;
  hwy::AlignedFreeUniquePtr<T[]> w1re, w1im;  // first pass: w_n^{p k} at [k * (n / lanes) + p]
};

inline void AddStages(std::vector<Stage>& list, int64_t len) {
  int64_t nt = len;
  while (nt >= 4) {
    list.push_back({4, nt, 0});
    nt /= 4;
  }
  if (nt == 2) list.push_back({2, 2, 0});
}

template <class T>
const Plan<T>& GetPlan(int64_t n, size_t lanes) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, size_t>, std::unique_ptr<Plan<T>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{n, lanes}];
  if (slot) return *slot;
  auto plan = std::make_unique<Plan<T>>();
  plan->n = n;
  const auto L = static_cast<int64_t>(lanes);
  plan->first = L >= 2 && n >= L * L;
  if (plan->first) {
    AddStages(plan->inner, L);
    AddStages(plan->outer, n / L);
  } else {
    AddStages(plan->outer, n);
  }
  size_t total = 0;
  for (auto* list : {&plan->inner, &plan->outer}) {
    for (Stage& st : *list) {
      st.tw = total;
      total += static_cast<size_t>(st.nt / st.radix) * 2 * static_cast<size_t>(st.radix - 1);
    }
  }
  plan->tw = hwy::AllocateAligned<T>(total + 1);
  for (auto* list : {&plan->inner, &plan->outer}) {
    for (const Stage& st : *list) {
      T* w = plan->tw.get() + st.tw;
      const int64_t m = st.nt / st.radix;
      for (int64_t p = 0; p < m; ++p) {
        for (int k = 1; k < st.radix; ++k) {
          double c, s;
          Twiddle(p * k, st.nt, c, s);
          *w++ = static_cast<T>(c);
          *w++ = static_cast<T>(s);
        }
      }
    }
  }
  if (plan->first) {
    const int64_t m = n / L;
    plan->w1re = hwy::AllocateAligned<T>(static_cast<size_t>(n));
    plan->w1im = hwy::AllocateAligned<T>(static_cast<size_t>(n));
    for (int64_t k = 0; k < L; ++k) {
      for (int64_t p = 0; p < m; ++p) {
        double c, s;
        Twiddle(p * k, n, c, s);
        plan->w1re[static_cast<size_t>(k * m + p)] = static_cast<T>(c);
        plan->w1im[static_cast<size_t>(k * m + p)] = static_cast<T>(s);
      }
    }
  }
  slot = std::move(plan);
  return *slot;
}

// Bluestein data for a length n that is not a power of two: chirp c_k = exp(-i pi k^2 / n) and
// B = FFT_m(conj chirp, circularly placed) / m, both computed in f64 and rounded once to T.
template <class T>
struct Chirp {
  int64_t m = 0;
  hwy::AlignedFreeUniquePtr<T[]> cre, cim, bre, bim;
};

using Fft64Fn = void (*)(const double*, const double*, double*, double*, int64_t);

template <class T>
const Chirp<T>& GetChirp(int64_t n, Fft64Fn fft64) {
  static std::mutex mu;
  static std::map<int64_t, std::unique_ptr<Chirp<T>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[n];
  if (slot) return *slot;
  auto ch = std::make_unique<Chirp<T>>();
  int64_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  ch->m = m;
  const auto un = static_cast<size_t>(n), um = static_cast<size_t>(m);
  std::vector<double> cr(un), ci(un), br(um, 0.0), bi(um, 0.0), Br(um), Bi(um);
  uint64_t k2 = 0;  // k^2 mod 2n
  const uint64_t twoN = 2 * static_cast<uint64_t>(n);
  for (size_t k = 0; k < un; ++k) {
    const double a = std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
    cr[k] = std::cos(a);
    ci[k] = -std::sin(a);
    k2 = (k2 + 2 * k + 1) % twoN;
  }
  br[0] = cr[0];
  bi[0] = -ci[0];
  for (size_t k = 1; k < un; ++k) {
    br[k] = br[um - k] = cr[k];
    bi[k] = bi[um - k] = -ci[k];
  }
  fft64(br.data(), bi.data(), Br.data(), Bi.data(), m);
  ch->cre = hwy::AllocateAligned<T>(un);
  ch->cim = hwy::AllocateAligned<T>(un);
  ch->bre = hwy::AllocateAligned<T>(um);
  ch->bim = hwy::AllocateAligned<T>(um);
  for (size_t k = 0; k < un; ++k) {
    ch->cre[k] = static_cast<T>(cr[k]);
    ch->cim[k] = static_cast<T>(ci[k]);
  }
  const double inv = 1.0 / static_cast<double>(m);  // exact: m is a power of two
  for (size_t k = 0; k < um; ++k) {
    ch->bre[k] = static_cast<T>(Br[k] * inv);
    ch->bim[k] = static_cast<T>(Bi[k] * inv);
  }
  slot = std::move(ch);
  return *slot;
}

inline int64_t Wrap(int64_t i, int64_t offset, int64_t n) {
  int64_t j = (i + offset) % n;
  return j < 0 ? j + n : j;
}

constexpr int64_t kParallelFft = int64_t{1} << 15;  // complex elements
constexpr int64_t kParallelStencil = int64_t{1} << 16;

}  // namespace backplane::cpu::simd::physics_shared
#endif  // BACKPLANE_CPU_KERNELS_PHYSICS_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace ps = physics_shared;

// Grow-only per-thread scratch, one set per target and element type.
template <class T>
T* Scratch(int slot, size_t count) {
  struct Slot {
    hwy::AlignedFreeUniquePtr<T[]> mem;
    size_t count = 0;
  };
  static thread_local Slot slots[8];
  Slot& b = slots[slot];
  if (b.count < count) {
    b.mem = hwy::AllocateAligned<T>(count);
    b.count = count;
  }
  return b.mem.get();
}

// ---- FFT ----------------------------------------------------------------------------------------

// (r, i) *= (wr, wi)
template <class V>
HWY_INLINE void CMul(V& r, V& i, V wr, V wi) {
  const V t = hn::Mul(i, wi);
  const V u = hn::Mul(i, wr);
  i = hn::MulAdd(r, wi, u);
  r = hn::MulSub(r, wr, t);
}

// One Stockham DIF stage on vectors, s >= lanes: for p in [0, m), q in [0, s) (m = nt / radix),
// a_j = x[q + s (p + j m)], y[q + s (radix p + k)] = DFT_radix(a)_k * w_nt^{p k}. Work units
// u = p * (s / lanes) + q / lanes in [u0, u1). `scale` multiplies the result (last stage only,
// where m = 1 and there are no twiddles).
template <class T>
void VecStage(const T* HWY_RESTRICT xr, const T* HWY_RESTRICT xi, T* HWY_RESTRICT yr,
              T* HWY_RESTRICT yi, int64_t s, const ps::Stage& st, const T* tw, int64_t u0,
              int64_t u1, T scale) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t per = s / L;
  const int64_t m = st.nt / st.radix;
  const bool scaled = scale != T(1);
  const V vs = hn::Set(d, scale);
  for (int64_t u = u0; u < u1;) {
    const int64_t p = u / per;
    const int64_t qb = (u - p * per) * L;
    const int64_t qe = std::min(s, qb + (u1 - u) * L);
    u += (qe - qb) / L;
    const T* w = tw + st.tw + static_cast<size_t>(p) * 2 * static_cast<size_t>(st.radix - 1);
    if (st.radix == 4) {
      const int64_t i0 = s * p, i1 = s * (p + m), i2 = s * (p + 2 * m), i3 = s * (p + 3 * m);
      const int64_t o0 = s * 4 * p;
      const V w1r = hn::Set(d, w[0]), w1i = hn::Set(d, w[1]);
      const V w2r = hn::Set(d, w[2]), w2i = hn::Set(d, w[3]);
      const V w3r = hn::Set(d, w[4]), w3i = hn::Set(d, w[5]);
      for (int64_t q = qb; q < qe; q += L) {
        const V a0r = hn::LoadU(d, xr + i0 + q), a0i = hn::LoadU(d, xi + i0 + q);
        const V a1r = hn::LoadU(d, xr + i1 + q), a1i = hn::LoadU(d, xi + i1 + q);
        const V a2r = hn::LoadU(d, xr + i2 + q), a2i = hn::LoadU(d, xi + i2 + q);
        const V a3r = hn::LoadU(d, xr + i3 + q), a3i = hn::LoadU(d, xi + i3 + q);
        const V t0r = hn::Add(a0r, a2r), t0i = hn::Add(a0i, a2i);
        const V t1r = hn::Sub(a0r, a2r), t1i = hn::Sub(a0i, a2i);
        const V t2r = hn::Add(a1r, a3r), t2i = hn::Add(a1i, a3i);
        const V t3r = hn::Sub(a1r, a3r), t3i = hn::Sub(a1i, a3i);
        V b0r = hn::Add(t0r, t2r), b0i = hn::Add(t0i, t2i);
        V b2r = hn::Sub(t0r, t2r), b2i = hn::Sub(t0i, t2i);
        V b1r = hn::Add(t1r, t3i), b1i = hn::Sub(t1i, t3r);  // t1 - i t3
        V b3r = hn::Sub(t1r, t3i), b3i = hn::Add(t1i, t3r);  // t1 + i t3
        if (p != 0) {
          CMul(b1r, b1i, w1r, w1i);
          CMul(b2r, b2i, w2r, w2i);
          CMul(b3r, b3i, w3r, w3i);
        } else if (scaled) {
          b0r = hn::Mul(b0r, vs), b0i = hn::Mul(b0i, vs), b1r = hn::Mul(b1r, vs), b1i = hn::Mul(b1i, vs);
          b2r = hn::Mul(b2r, vs), b2i = hn::Mul(b2i, vs), b3r = hn::Mul(b3r, vs), b3i = hn::Mul(b3i, vs);
        }
        hn::StoreU(b0r, d, yr + o0 + q), hn::StoreU(b0i, d, yi + o0 + q);
        hn::StoreU(b1r, d, yr + o0 + s + q), hn::StoreU(b1i, d, yi + o0 + s + q);
        hn::StoreU(b2r, d, yr + o0 + 2 * s + q), hn::StoreU(b2i, d, yi + o0 + 2 * s + q);
        hn::StoreU(b3r, d, yr + o0 + 3 * s + q), hn::StoreU(b3i, d, yi + o0 + 3 * s + q);
      }
    } else {
      const int64_t i0 = s * p, i1 = s * (p + m), o0 = s * 2 * p;
      const V w1r = hn::Set(d, w[0]), w1i = hn::Set(d, w[1]);
      for (int64_t q = qb; q < qe; q += L) {
        const V a0r = hn::LoadU(d, xr + i0 + q), a0i = hn::LoadU(d, xi + i0 + q);
        const V a1r = hn::LoadU(d, xr + i1 + q), a1i = hn::LoadU(d, xi + i1 + q);
        V b0r = hn::Add(a0r, a1r), b0i = hn::Add(a0i, a1i);
        V b1r = hn::Sub(a0r, a1r), b1i = hn::Sub(a0i, a1i);
        if (p != 0) {
          CMul(b1r, b1i, w1r, w1i);
        } else if (scaled) {
          b0r = hn::Mul(b0r, vs), b0i = hn::Mul(b0i, vs), b1r = hn::Mul(b1r, vs), b1i = hn::Mul(b1i, vs);
        }
        hn::StoreU(b0r, d, yr + o0 + q), hn::StoreU(b0i, d, yi + o0 + q);
        hn::StoreU(b1r, d, yr + o0 + s + q), hn::StoreU(b1i, d, yi + o0 + s + q);
      }
    }
  }
}

// The same stage in scalar code, for s < lanes (short transforms only).
template <class T>
void ScalarStage(const T* xr, const T* xi, T* yr, T* yi, int64_t s, const ps::Stage& st, const T* tw,
                 T scale) {
  const int64_t m = st.nt / st.radix;
  for (int64_t p = 0; p < m; ++p) {
    const T* w = tw + st.tw + static_cast<size_t>(p) * 2 * static_cast<size_t>(st.radix - 1);
    for (int64_t q = 0; q < s; ++q) {
      if (st.radix == 4) {
        const int64_t i0 = q + s * p, i1 = i0 + s * m, i2 = i1 + s * m, i3 = i2 + s * m;
        const T t0r = xr[i0] + xr[i2], t0i = xi[i0] + xi[i2];
        const T t1r = xr[i0] - xr[i2], t1i = xi[i0] - xi[i2];
        const T t2r = xr[i1] + xr[i3], t2i = xi[i1] + xi[i3];
        const T t3r = xr[i1] - xr[i3], t3i = xi[i1] - xi[i3];
        T br[4] = {t0r + t2r, t1r + t3i, t0r - t2r, t1r - t3i};
        T bi[4] = {t0i + t2i, t1i - t3r, t0i - t2i, t1i + t3r};
        for (int k = 0; k < 4; ++k) {
          T r = br[k], i = bi[k];
          if (p != 0 && k != 0) {
            const T wr = w[2 * k - 2], wi = w[2 * k - 1];
            const T nr = r * wr - i * wi;
            i = r * wi + i * wr;
            r = nr;
          } else if (p == 0) {
            r *= scale;
            i *= scale;
          }
          yr[q + s * (4 * p + k)] = r;
          yi[q + s * (4 * p + k)] = i;
        }
      } else {
        const int64_t i0 = q + s * p, i1 = i0 + s * m;
        T r0 = xr[i0] + xr[i1], j0 = xi[i0] + xi[i1];
        T r1 = xr[i0] - xr[i1], j1 = xi[i0] - xi[i1];
        if (p != 0) {
          const T nr = r1 * w[0] - j1 * w[1];
          j1 = r1 * w[1] + j1 * w[0];
          r1 = nr;
        } else {
          r0 *= scale, j0 *= scale, r1 *= scale, j1 *= scale;
        }
        yr[q + s * 2 * p] = r0, yi[q + s * 2 * p] = j0;
        yr[q + s * (2 * p + 1)] = r1, yi[q + s * (2 * p + 1)] = j1;
      }
    }
  }
}

// The first pass, a radix-L stage with s = 1 (L = lanes, m = n / L): for each block of L
// consecutive p, the L vectors x[p + j m] go through a length-L DFT (vertical, with the inner
// stages), are multiplied by w_n^{p k} and stored transposed at y[L p + k]. Blocks [b0, b1).
template <class T>
void FirstPass(const T* xr, const T* xi, T* yr, T* yi, const ps::Plan<T>& plan, int64_t b0, int64_t b1) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t m = plan.n / L;
  const auto LL = static_cast<size_t>(L * L);
  T* buf = Scratch<T>(4, 4 * LL);
  T* ar = buf;
  T* ai = buf + LL;
  T* cr = buf + 2 * LL;
  T* ci = buf + 3 * LL;
  for (int64_t blk = b0; blk < b1; ++blk) {
    const int64_t p0 = blk * L;
    for (int64_t j = 0; j < L; ++j) {
      hn::Store(xr ? hn::LoadU(d, xr + p0 + j * m) : hn::Zero(d), d, ar + j * L);
      hn::Store(xi ? hn::LoadU(d, xi + p0 + j * m) : hn::Zero(d), d, ai + j * L);
    }
    T *sr = ar, *si = ai, *dr = cr, *di = ci;
    int64_t s = L;
    for (const ps::Stage& st : plan.inner) {
      VecStage(sr, si, dr, di, s, st, plan.tw.get(), 0, (st.nt / st.radix) * (s / L), T(1));
      std::swap(sr, dr);
      std::swap(si, di);
      s *= st.radix;
    }
    // sr/si[k L + lane] = DFT_L(...)_k at p = p0 + lane; twiddle, then transpose into y.
    for (int64_t k = 1; k < L; ++k) {
      V r = hn::Load(d, sr + k * L), i = hn::Load(d, si + k * L);
      CMul(r, i, hn::LoadU(d, plan.w1re.get() + k * m + p0), hn::LoadU(d, plan.w1im.get() + k * m + p0));
      hn::Store(r, d, sr + k * L);
      hn::Store(i, d, si + k * L);
    }
    T* outr = yr + L * p0;
    T* outi = yi + L * p0;
    for (int64_t lane = 0; lane < L; ++lane) {
      for (int64_t k = 0; k < L; ++k) {
        outr[lane * L + k] = sr[k * L + lane];
        outi[lane * L + k] = si[k * L + lane];
      }
    }
  }
}

// Unnormalised forward DFT of a power-of-two n >= 1, times `scale`. x may have a null component
// (zero); y must not overlap x.
template <class T>
void FftPow2(const T* xr, const T* xi, T* yr, T* yi, int64_t n, T scale) {
  if (n == 1) {
    yr[0] = (xr ? xr[0] : T(0)) * scale;
    yi[0] = (xi ? xi[0] : T(0)) * scale;
    return;
  }
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  const ps::Plan<T>& plan = ps::GetPlan<T>(n, L);
  const auto un = static_cast<size_t>(n);
  if (!plan.first && (!xr || !xi)) {  // short transform: materialise the zero component
    T* z = Scratch<T>(2, 2 * un);
    for (size_t k = 0; k < un; ++k) {
      z[k] = xr ? xr[k] : T(0);
      z[un + k] = xi ? xi[k] : T(0);
    }
    xr = z;
    xi = z + un;
  }
  T* w0 = Scratch<T>(0, 2 * un);
  T* w1 = Scratch<T>(1, 2 * un);
  const int passes = (plan.first ? 1 : 0) + static_cast<int>(plan.outer.size());
  int pass = 0;
  auto dest = [&](T*& dr, T*& di) {
    if (pass == passes - 1) {
      dr = yr, di = yi;
    } else {
      T* w = (passes - 1 - pass) % 2 == 1 ? w0 : w1;
      dr = w, di = w + un;
    }
  };
  const bool parallel = n >= ps::kParallelFft;
  const auto iL = static_cast<int64_t>(L);
  const T* sr = xr;
  const T* si = xi;
  T *dr, *di;
  int64_t s = 1;
  if (plan.first) {
    dest(dr, di);
    const int64_t blocks = n / (iL * iL);
    if (parallel) {
      ParallelFor(blocks, std::max<int64_t>(1, 4096 / iL), [&](int64_t b0, int64_t b1) {
        FirstPass(sr, si, dr, di, plan, b0, b1);
      });
    } else {
      FirstPass(sr, si, dr, di, plan, 0, blocks);
    }
    if (passes == 1 && scale != T(1)) {
      for (size_t k = 0; k < un; ++k) yr[k] *= scale, yi[k] *= scale;
    }
    sr = dr, si = di;
    s = iL;
    ++pass;
  }
  for (const ps::Stage& st : plan.outer) {
    dest(dr, di);
    const T sc = pass == passes - 1 ? scale : T(1);
    if (s >= iL) {
      const int64_t units = (st.nt / st.radix) * (s / iL);
      if (parallel) {
        ParallelFor(units, std::max<int64_t>(1, 2048 / iL), [&](int64_t u0, int64_t u1) {
          VecStage(sr, si, dr, di, s, st, plan.tw.get(), u0, u1, sc);
        });
      } else {
        VecStage(sr, si, dr, di, s, st, plan.tw.get(), 0, units, sc);
      }
    } else {
      ScalarStage(sr, si, dr, di, s, st, plan.tw.get(), sc);
    }
    sr = dr, si = di;
    s *= st.radix;
    ++pass;
  }
}

void Fft64ForChirp(const double* xr, const double* xi, double* yr, double* yi, int64_t n) {
  FftPow2<double>(xr, xi, yr, yi, n, 1.0);
}

// Unnormalised forward DFT of any n >= 2 that is not a power of two (Bluestein), times scale.
template <class T>
void FftBluestein(const T* xr, const T* xi, T* yr, T* yi, int64_t n, T scale) {
  const ps::Chirp<T>& ch = ps::GetChirp<T>(n, &Fft64ForChirp);
  const int64_t m = ch.m;
  const auto um = static_cast<size_t>(m);
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  T* a = Scratch<T>(2, 2 * um);
  T* A = Scratch<T>(3, 2 * um);
  T *ar = a, *ai = a + um, *Ar = A, *Ai = A + um;
  const T* cr = ch.cre.get();
  const T* ci = ch.cim.get();
  // a = x * chirp, zero-padded to m.
  int64_t k = 0;
  for (; k + L <= n; k += L) {
    const V x0 = xr ? hn::LoadU(d, xr + k) : hn::Zero(d);
    const V x1 = xi ? hn::LoadU(d, xi + k) : hn::Zero(d);
    const V wr = hn::LoadU(d, cr + k), wi = hn::LoadU(d, ci + k);
    hn::StoreU(hn::MulSub(x0, wr, hn::Mul(x1, wi)), d, ar + k);
    hn::StoreU(hn::MulAdd(x0, wi, hn::Mul(x1, wr)), d, ai + k);
  }
  for (; k < n; ++k) {
    const T x0 = xr ? xr[k] : T(0), x1 = xi ? xi[k] : T(0);
    ar[k] = x0 * cr[k] - x1 * ci[k];
    ai[k] = x0 * ci[k] + x1 * cr[k];
  }
  std::fill(ar + n, ar + m, T(0));
  std::fill(ai + n, ai + m, T(0));
  FftPow2<T>(ar, ai, Ar, Ai, m, T(1));
  // A *= B (B carries 1/m).
  int64_t j = 0;
  for (; j + L <= m; j += L) {
    V r = hn::LoadU(d, Ar + j), i = hn::LoadU(d, Ai + j);
    CMul(r, i, hn::LoadU(d, ch.bre.get() + j), hn::LoadU(d, ch.bim.get() + j));
    hn::StoreU(r, d, Ar + j);
    hn::StoreU(i, d, Ai + j);
  }
  for (; j < m; ++j) {
    const T r = Ar[j] * ch.bre[j] - Ai[j] * ch.bim[j];
    Ai[j] = Ar[j] * ch.bim[j] + Ai[j] * ch.bre[j];
    Ar[j] = r;
  }
  // Inverse (unscaled) FFT as a forward FFT with real and imaginary parts swapped.
  FftPow2<T>(Ai, Ar, ai, ar, m, T(1));
  const V vs = hn::Set(d, scale);
  for (k = 0; k + L <= n; k += L) {
    V r = hn::LoadU(d, ar + k), i = hn::LoadU(d, ai + k);
    CMul(r, i, hn::LoadU(d, cr + k), hn::LoadU(d, ci + k));
    hn::StoreU(hn::Mul(r, vs), d, yr + k);
    hn::StoreU(hn::Mul(i, vs), d, yi + k);
  }
  for (; k < n; ++k) {
    const T r = ar[k] * cr[k] - ai[k] * ci[k];
    const T i = ar[k] * ci[k] + ai[k] * cr[k];
    yr[k] = r * scale;
    yi[k] = i * scale;
  }
}

// True when every value is finite and |x| <= limit.
template <class T>
bool InRange(const T* x, int64_t n, T limit) {
  if (!x) return true;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  V acc = hn::Zero(d);  // NaN once any |x| is NaN or Inf (x * 0)
  V mx = hn::Zero(d);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V v = hn::LoadU(d, x + i);
    acc = hn::Add(acc, hn::Mul(v, hn::Zero(d)));
    mx = hn::Max(mx, hn::Abs(v));
  }
  bool ok = hn::GetLane(hn::SumOfLanes(d, acc)) == T(0);
  ok = ok && hn::GetLane(hn::MaxOfLanes(d, mx)) <= limit;
  for (; i < n; ++i) ok = ok && std::isfinite(x[i]) && std::fabs(x[i]) <= limit;
  return ok;
}

// Forward transform of n >= 1 (inverse: the caller swaps parts). False: hand to the reference.
template <class T>
bool FftAny(const T* xr, const T* xi, T* yr, T* yi, int64_t n, T scale) {
  // Intermediates stay below n * max|x| (4 n^2 max|x| for Bluestein): keep them far from overflow.
  const double growth = (n & (n - 1)) == 0 ? 2.0 * static_cast<double>(n)
                                            : 16.0 * static_cast<double>(n) * static_cast<double>(n);
  const T limit = static_cast<T>(static_cast<double>(std::numeric_limits<T>::max()) / 16.0 / growth);
  if (!InRange(xr, n, limit) || !InRange(xi, n, limit)) return false;
  if ((n & (n - 1)) == 0) {
    FftPow2<T>(xr, xi, yr, yi, n, scale);
  } else {
    FftBluestein<T>(xr, xi, yr, yi, n, scale);
  }
  return true;
}

template <class T>
bool Overlaps(const void* a, size_t abytes, const void* b, size_t bbytes) {
  if (!a || !b) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bbytes && pb < pa + abytes;
}

// Native f32/f64 transform with the output possibly aliasing the input.
template <class T>
bool FftTyped(const T* xr, const T* xi, T* yr, T* yi, int64_t n, bool inverse) {
  const auto un = static_cast<size_t>(n);
  const size_t bytes = un * sizeof(T);
  const T scale = inverse ? static_cast<T>(1.0 / static_cast<double>(n)) : T(1);
  if (inverse) {  // IFFT(x) = swap(FFT(swap(x))) / n
    std::swap(xr, xi);
    std::swap(yr, yi);
  }
  const bool alias = Overlaps<T>(yr, bytes, xr, bytes) || Overlaps<T>(yr, bytes, xi, bytes) ||
                     Overlaps<T>(yi, bytes, xr, bytes) || Overlaps<T>(yi, bytes, xi, bytes);
  if (!alias) return FftAny<T>(xr, xi, yr, yi, n, scale);
  T* tmp = Scratch<T>(6, 2 * un);
  if (!FftAny<T>(xr, xi, tmp, tmp + un, n, scale)) return false;
  std::memcpy(yr, tmp, bytes);
  std::memcpy(yi, tmp + un, bytes);
  return true;
}

// ---- stencils -----------------------------------------------------------------------------------

template <class D>
HWY_INLINE hn::Vec<D> Load64(D d, const double* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> Load64(D d, const float* p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<float, D>(), p));
}
template <class D>
HWY_INLINE void Store64(D d, hn::Vec<D> v, double* p) {
  hn::StoreU(v, d, p);
}
template <class D>
HWY_INLINE void Store64(D d, hn::Vec<D> v, float* p) {
  const hn::Rebind<float, D> df;
  hn::StoreU(DemoteF32(df, v), df, p);
}

bool FftF64(const double* xr, const double* xi, double* yr, double* yi, int64_t n, bool inverse) {
  return FftTyped<double>(xr, xi, yr, yi, n, inverse);
}

// f32, f16 and bf16 run in f64 lanes: the f32-lane FFT error, ~u log2(n) rms(X), exceeds the f32
// tolerance (1e-5 + 1.3e-6 |X_k|) on the smaller outputs; in f64 each output is rounded once.
template <class TIn>
void ToDouble(const TIn* x, double* y, int64_t n) {
  const hn::ScalableTag<double> d;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(Load64(d, x + i), d, y + i);
  for (; i < n; ++i) y[i] = static_cast<double>(x[i]);
}

bool FftF32(const float* xr, const float* xi, float* yr, float* yi, int64_t n, bool inverse) {
  const auto un = static_cast<size_t>(n);
  double* in = Scratch<double>(5, 2 * un);
  double* out = Scratch<double>(7, 2 * un);
  ToDouble(xr, in, n);
  if (xi) ToDouble(xi, in + un, n);
  if (!FftTyped<double>(in, xi ? in + un : nullptr, out, out + un, n, inverse)) return false;
  const hn::ScalableTag<double> d;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    Store64(d, hn::LoadU(d, out + i), yr + i);
    Store64(d, hn::LoadU(d, out + un + i), yi + i);
  }
  for (; i < n; ++i) yr[i] = static_cast<float>(out[i]), yi[i] = static_cast<float>(out[un + i]);
  return true;
}

bool FftHalf(const uint16_t* xr, const uint16_t* xi, uint16_t* yr, uint16_t* yi, int64_t n, bool inverse,
             bool bf16) {
  const auto un = static_cast<size_t>(n);
  float* f = Scratch<float>(5, un);
  double* in = Scratch<double>(5, 2 * un);
  double* out = Scratch<double>(7, 2 * un);
  WidenBlock(xr, f, un, bf16);
  ToDouble(f, in, n);
  if (xi) {
    WidenBlock(xi, f, un, bf16);
    ToDouble(f, in + un, n);
  }
  if (!FftTyped<double>(in, xi ? in + un : nullptr, out, out + un, n, inverse)) return false;
  NarrowFromDouble(out, yr, un, bf16);  // round to odd, then nearest even: one rounding
  NarrowFromDouble(out + un, yi, un, bf16);
  return true;
}

// One cell of a 1-D stencil in f64, the reference's formula (c1 = 1/(2h) or 1/(12h^2), c2 =
// 1/h^2 for kQuantum).
template <class TIn>
HWY_INLINE double StencilCell(int op, const TIn* u, const TIn* v, int64_t n, int64_t i, double c1, double c2) {
  auto at = [&](int64_t off) { return static_cast<double>(u[ps::Wrap(i, off, n)]); };
  switch (op) {
    case ps::kLap4:
      return (-at(-2) + 16.0 * at(-1) - 30.0 * at(0) + 16.0 * at(1) - at(2)) * c1;
    case ps::kCentral:
      return (at(1) - at(-1)) * c1;
    case ps::kQuantum: {
      const double c = at(0);
      if (c == 0.0) return 0.0;
      return -0.5 * ((at(-1) - 2.0 * c + at(1)) * c2) / c;
    }
    default: {  // kMadelung
      const auto fl = [&](int64_t off) {
        const int64_t j = ps::Wrap(i, off, n);
        return static_cast<double>(u[j]) * static_cast<double>(v[j]);
      };
      return (fl(1) - fl(-1)) * c1;
    }
  }
}

// out[k] = stencil at cell i0 + k for i0 + k in [i0, i1).
template <class TIn, class TOut>
void StencilRange(int op, const TIn* u, const TIn* v, TOut* out, int64_t n, double c1, double c2,
                  int64_t i0, int64_t i1) {
  const hn::ScalableTag<double> d;
  using V = hn::Vec<decltype(d)>;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t r = op == ps::kLap4 ? 2 : 1;
  const int64_t lo = std::max(i0, r), hi = std::min(i1, n - r);  // interior: no wrap
  int64_t i = i0;
  for (; i < std::min(i1, lo); ++i) out[i - i0] = static_cast<TOut>(StencilCell(op, u, v, n, i, c1, c2));
  const V k1 = hn::Set(d, c1), k2 = hn::Set(d, c2);
  for (; i + L <= hi; i += L) {
    V res;
    switch (op) {
      case ps::kLap4: {
        const V a = Load64(d, u + i - 2), b = Load64(d, u + i - 1), c = Load64(d, u + i);
        const V e = Load64(d, u + i + 1), f = Load64(d, u + i + 2);
        const V s16 = hn::Set(d, 16.0);
        V t = hn::Add(hn::Neg(a), hn::Mul(s16, b));
        t = hn::Sub(t, hn::Mul(hn::Set(d, 30.0), c));
        t = hn::Add(t, hn::Mul(s16, e));
        res = hn::Mul(hn::Sub(t, f), k1);
        break;
      }
      case ps::kCentral:
        res = hn::Mul(hn::Sub(Load64(d, u + i + 1), Load64(d, u + i - 1)), k1);
        break;
      case ps::kQuantum: {
        const V c = Load64(d, u + i);
        const V second = hn::Add(hn::Sub(Load64(d, u + i - 1), hn::Add(c, c)), Load64(d, u + i + 1));
        const V q = hn::Div(hn::Mul(hn::Set(d, -0.5), hn::Mul(second, k2)), c);
        res = hn::IfThenZeroElse(hn::Eq(c, hn::Zero(d)), q);
        break;
      }
      default: {
        const V fr = hn::Mul(Load64(d, u + i + 1), Load64(d, v + i + 1));
        const V fl = hn::Mul(Load64(d, u + i - 1), Load64(d, v + i - 1));
        res = hn::Mul(hn::Sub(fr, fl), k1);
        break;
      }
    }
    Store64(d, res, out + (i - i0));
  }
  for (; i < i1; ++i) out[i - i0] = static_cast<TOut>(StencilCell(op, u, v, n, i, c1, c2));
}

template <class TIn, class TOut>
void StencilAll(int op, const TIn* u, const TIn* v, TOut* out, int64_t n, double c1, double c2) {
  if (n >= ps::kParallelStencil) {
    ParallelFor(n, ps::kParallelStencil / 2, [&](int64_t i0, int64_t i1) {
      StencilRange(op, u, v, out + i0, n, c1, c2, i0, i1);
    });
  } else {
    StencilRange(op, u, v, out, n, c1, c2, 0, n);
  }
}

// Factors for op and spacing h (the reference divides; multiplying by the f64 reciprocal differs
// by at most one f64 rounding).
void StencilFactors(int op, double h, double& c1, double& c2) {
  c1 = op == ps::kLap4 ? 1.0 / (12.0 * h * h) : 1.0 / (2.0 * h);
  c2 = 1.0 / (h * h);
}

// QuantumPotential works on s = sqrt(rho) (f64), after checking every density is finite >= 0.
template <class TIn>
bool SqrtDensity(const TIn* rho, double* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(rho[i]);
    if (!(x >= 0.0) || !std::isfinite(x)) return false;
  }
  const hn::ScalableTag<double> d;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Sqrt(Load64(d, rho + i)), d, s + i);
  for (; i < n; ++i) s[i] = std::sqrt(static_cast<double>(rho[i]));
  return true;
}

template <class T>
bool StencilTyped(int op, const T* u, const T* v, T* out, int64_t n, double h) {
  double c1, c2;
  StencilFactors(op, h, c1, c2);
  if (op == ps::kQuantum) {
    double* s = Scratch<double>(0, static_cast<size_t>(n));
    if (!SqrtDensity(u, s, n)) return false;
    StencilAll<double, T>(op, s, nullptr, out, n, c1, c2);
    return true;
  }
  StencilAll<T, T>(op, u, v, out, n, c1, c2);
  return true;
}

bool StencilF32(int op, const float* u, const float* v, float* out, int64_t n, double h) {
  return StencilTyped<float>(op, u, v, out, n, h);
}
bool StencilF64(int op, const double* u, const double* v, double* out, int64_t n, double h) {
  return StencilTyped<double>(op, u, v, out, n, h);
}

bool StencilHalf(int op, const uint16_t* u, const uint16_t* v, uint16_t* out, int64_t n, double h, bool bf16) {
  const auto un = static_cast<size_t>(n);
  float* fu = Scratch<float>(0, 2 * un);
  float* fv = fu + un;
  WidenBlock(u, fu, un, bf16);
  if (v) WidenBlock(v, fv, un, bf16);
  double c1, c2;
  StencilFactors(op, h, c1, c2);
  const double* s = nullptr;
  if (op == ps::kQuantum) {
    double* sq = Scratch<double>(0, un);
    if (!SqrtDensity(fu, sq, n)) return false;
    s = sq;
  }
  constexpr int64_t kBlock = 1024;
  auto chunk = [&](int64_t i0, int64_t i1) {
    HWY_ALIGN double buf[kBlock];
    for (int64_t b = i0; b < i1; b += kBlock) {
      const int64_t e = std::min(i1, b + kBlock);
      if (s) {
        StencilRange<double, double>(op, s, nullptr, buf, n, c1, c2, b, e);
      } else {
        StencilRange<float, double>(op, fu, fv, buf, n, c1, c2, b, e);
      }
      NarrowFromDouble(buf, out + b, static_cast<size_t>(e - b), bf16);
    }
  };
  if (n >= ps::kParallelStencil) {
    ParallelFor(n, ps::kParallelStencil / 2, chunk);
  } else {
    chunk(0, n);
  }
  return true;
}

// Laplacian, rank 1..3, on row-major dims; out[k] = cell (row, i0 + k) for i0 + k in [i0, i1).
template <class TIn, class TOut>
void LaplacianRange(const TIn* u, TOut* out, const int64_t* dims, int64_t rank, double inv_h2, int64_t row,
                    int64_t i0, int64_t i1) {
  const int64_t nl = dims[rank - 1];
  // Neighbour rows along the leading axes, in the reference's order of axes.
  const TIn* up[2] = {nullptr, nullptr};
  const TIn* down[2] = {nullptr, nullptr};
  {
    int64_t rem = row, stride_rows = 1;
    int64_t coord[2] = {0, 0}, strides[2] = {0, 0};
    for (int64_t a = rank - 2; a >= 0; --a) {
      coord[a] = rem % dims[a];
      rem /= dims[a];
      strides[a] = stride_rows;
      stride_rows *= dims[a];
    }
    for (int64_t a = 0; a + 1 < rank; ++a) {
      const int64_t base = row - coord[a] * strides[a];
      up[a] = u + (base + ps::Wrap(coord[a], -1, dims[a]) * strides[a]) * nl;
      down[a] = u + (base + ps::Wrap(coord[a], 1, dims[a]) * strides[a]) * nl;
    }
  }
  const TIn* c = u + row * nl;
  const hn::ScalableTag<double> d;
  using V = hn::Vec<decltype(d)>;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  auto cell = [&](int64_t i) {
    double acc = 0.0;
    const double ci = static_cast<double>(c[i]);
    for (int64_t a = 0; a + 1 < rank; ++a) {
      acc += static_cast<double>(up[a][i]) - 2.0 * ci + static_cast<double>(down[a][i]);
    }
    acc += static_cast<double>(c[ps::Wrap(i, -1, nl)]) - 2.0 * ci + static_cast<double>(c[ps::Wrap(i, 1, nl)]);
    return acc * inv_h2;
  };
  const int64_t lo = std::max<int64_t>(i0, 1), hi = std::min(i1, nl - 1);
  int64_t i = i0;
  for (; i < std::min(i1, lo); ++i) out[i - i0] = static_cast<TOut>(cell(i));
  const V two = hn::Set(d, 2.0), k = hn::Set(d, inv_h2);
  for (; i + L <= hi; i += L) {
    const V cv = Load64(d, c + i);
    const V c2 = hn::Mul(two, cv);
    V acc = hn::Zero(d);
    for (int64_t a = 0; a + 1 < rank; ++a) {
      acc = hn::Add(acc, hn::Add(hn::Sub(Load64(d, up[a] + i), c2), Load64(d, down[a] + i)));
    }
    acc = hn::Add(acc, hn::Add(hn::Sub(Load64(d, c + i - 1), c2), Load64(d, c + i + 1)));
    Store64(d, hn::Mul(acc, k), out + (i - i0));
  }
  for (; i < i1; ++i) out[i - i0] = static_cast<TOut>(cell(i));
}

template <class TIn, class TOut>
void LaplacianAll(const TIn* u, TOut* out, const int64_t* dims, int64_t rank, double inv_h2, int64_t count,
                  bool bf16) {
  const int64_t nl = dims[rank - 1];
  const int64_t rows = count / nl;
  // Work in units of (row, piece of at most kPiece cells): independent of the thread count.
  constexpr int64_t kPiece = 1024;
  const int64_t pieces = (nl + kPiece - 1) / kPiece;
  auto run = [&](int64_t w0, int64_t w1) {
    HWY_ALIGN double buf[kPiece];
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t row = w / pieces, b = (w % pieces) * kPiece, e = std::min(nl, b + kPiece);
      if constexpr (std::is_same_v<TOut, uint16_t>) {
        LaplacianRange<TIn, double>(u, buf, dims, rank, inv_h2, row, b, e);
        NarrowFromDouble(buf, out + row * nl + b, static_cast<size_t>(e - b), bf16);
      } else {
        LaplacianRange<TIn, TOut>(u, out + row * nl + b, dims, rank, inv_h2, row, b, e);
      }
    }
  };
  const int64_t work = rows * pieces;
  if (count >= ps::kParallelStencil) {
    ParallelFor(work, std::max<int64_t>(1, ps::kParallelStencil / 2 / std::min(nl, kPiece)), run);
  } else {
    run(0, work);
  }
}

void LaplacianF32(const float* u, float* out, const int64_t* dims, int64_t rank, double inv_h2, int64_t count) {
  LaplacianAll<float, float>(u, out, dims, rank, inv_h2, count, false);
}
void LaplacianF64(const double* u, double* out, const int64_t* dims, int64_t rank, double inv_h2, int64_t count) {
  LaplacianAll<double, double>(u, out, dims, rank, inv_h2, count, false);
}
void LaplacianHalf(const uint16_t* u, uint16_t* out, const int64_t* dims, int64_t rank, double inv_h2,
                   int64_t count, bool bf16) {
  float* fu = Scratch<float>(0, static_cast<size_t>(count));
  WidenBlock(u, fu, static_cast<size_t>(count), bf16);
  LaplacianAll<float, uint16_t>(fu, out, dims, rank, inv_h2, count, bf16);
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(FftF32);
HWY_EXPORT(FftF64);
HWY_EXPORT(FftHalf);
HWY_EXPORT(StencilF32);
HWY_EXPORT(StencilF64);
HWY_EXPORT(StencilHalf);
HWY_EXPORT(LaplacianF32);
HWY_EXPORT(LaplacianF64);
HWY_EXPORT(LaplacianHalf);

namespace {
namespace ps = physics_shared;

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool Overlap(const void* a, const void* b, size_t bytes) {
  if (!a || !b) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bytes && pb < pa + bytes;
}

// Output aliasing an input: compute into a temporary (the reference is safe in place).
struct OutBuffer {
  void* target;
  size_t bytes;
  std::vector<uint8_t> tmp;
  void* ptr() { return tmp.empty() ? target : tmp.data(); }
  void Commit() {
    if (!tmp.empty()) std::memcpy(target, tmp.data(), bytes);
  }
};

OutBuffer MakeOut(void* out, size_t bytes, const void* in1, const void* in2) {
  OutBuffer o{out, bytes, {}};
  if (Overlap(out, in1, bytes) || Overlap(out, in2, bytes)) o.tmp.resize(bytes);
  return o;
}

template <bool kInverse>
void Fft(const void* realIn, const void* imagIn, void* realOut, void* imagOut, int64_t count, DType dtype) {
  auto fallback = kInverse ? Reference().Physics_IFFT1D : Reference().Physics_FFT1D;
  if (!FloatDType(dtype) || count <= 0 || !realIn || !realOut || !imagOut ||
      Overlap(realOut, imagOut, DTypeStorageBytes(dtype, count))) {
    return fallback(realIn, imagIn, realOut, imagOut, count, dtype);
  }
  bool done;
  switch (dtype) {
    case DType::Float32:
      done = HWY_DYNAMIC_DISPATCH(FftF32)(static_cast<const float*>(realIn), static_cast<const float*>(imagIn),
                                          static_cast<float*>(realOut), static_cast<float*>(imagOut), count,
                                          kInverse);
      break;
    case DType::Float64:
      done = HWY_DYNAMIC_DISPATCH(FftF64)(static_cast<const double*>(realIn), static_cast<const double*>(imagIn),
                                          static_cast<double*>(realOut), static_cast<double*>(imagOut), count,
                                          kInverse);
      break;
    default:
      done = HWY_DYNAMIC_DISPATCH(FftHalf)(static_cast<const uint16_t*>(realIn),
                                           static_cast<const uint16_t*>(imagIn), static_cast<uint16_t*>(realOut),
                                           static_cast<uint16_t*>(imagOut), count, kInverse,
                                           dtype == DType::BFloat16);
      break;
  }
  // Non-finite or huge input: nothing was written; the reference gives its NaN/Inf pattern.
  if (!done) fallback(realIn, imagIn, realOut, imagOut, count, dtype);
}

bool ValidSpacing(float h) { return std::isfinite(h) && h > 0.0f; }

template <int kOp>
void Stencil(const void* input, const void* input2, void* output, int64_t count, float spacing, DType dtype,
             const std::function<void()>& fallback) {
  if (!FloatDType(dtype) || count <= 0 || !input || !output || (kOp == ps::kMadelung && !input2) ||
      !ValidSpacing(spacing)) {
    return fallback();
  }
  const size_t bytes = DTypeStorageBytes(dtype, count);
  OutBuffer o = MakeOut(output, bytes, input, input2);
  const double h = static_cast<double>(spacing);
  bool done;
  switch (dtype) {
    case DType::Float32:
      done = HWY_DYNAMIC_DISPATCH(StencilF32)(kOp, static_cast<const float*>(input),
                                              static_cast<const float*>(input2), static_cast<float*>(o.ptr()),
                                              count, h);
      break;
    case DType::Float64:
      done = HWY_DYNAMIC_DISPATCH(StencilF64)(kOp, static_cast<const double*>(input),
                                              static_cast<const double*>(input2), static_cast<double*>(o.ptr()),
                                              count, h);
      break;
    default:
      done = HWY_DYNAMIC_DISPATCH(StencilHalf)(kOp, static_cast<const uint16_t*>(input),
                                               static_cast<const uint16_t*>(input2),
                                               static_cast<uint16_t*>(o.ptr()), count, h,
                                               dtype == DType::BFloat16);
      break;
  }
  if (!done) return fallback();  // invalid density: nothing written, the reference throws
  o.Commit();
}

template <int kOp, void (*Slot)(const void*, void*, int64_t, float, DType)>
void Stencil1(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  Stencil<kOp>(input, nullptr, output, count, spacing, dtype, [&] { Slot(input, output, count, spacing, dtype); });
}

void Laplacian(const void* input, void* output, const int64_t* dims, int64_t rank, float spacing, DType dtype) {
  auto fallback = [&] { Reference().Physics_Laplacian(input, output, dims, rank, spacing, dtype); };
  if (!FloatDType(dtype) || rank < 1 || rank > 3 || !dims || !input || !output || !ValidSpacing(spacing)) {
    return fallback();
  }
  int64_t count = 1;
  for (int64_t a = 0; a < rank; ++a) {
    if (dims[a] <= 0 || count > std::numeric_limits<int64_t>::max() / 8 / dims[a]) return fallback();
    count *= dims[a];
  }
  const size_t bytes = DTypeStorageBytes(dtype, count);
  OutBuffer o = MakeOut(output, bytes, input, nullptr);
  const double h = static_cast<double>(spacing);
  const double inv_h2 = 1.0 / (h * h);
  switch (dtype) {
    case DType::Float32:
      HWY_DYNAMIC_DISPATCH(LaplacianF32)(static_cast<const float*>(input), static_cast<float*>(o.ptr()), dims,
                                         rank, inv_h2, count);
      break;
    case DType::Float64:
      HWY_DYNAMIC_DISPATCH(LaplacianF64)(static_cast<const double*>(input), static_cast<double*>(o.ptr()), dims,
                                         rank, inv_h2, count);
      break;
    default:
      HWY_DYNAMIC_DISPATCH(LaplacianHalf)(static_cast<const uint16_t*>(input), static_cast<uint16_t*>(o.ptr()),
                                          dims, rank, inv_h2, count, dtype == DType::BFloat16);
      break;
  }
  o.Commit();
}

void Madelung(const void* density, const void* velocity, void* residual, int64_t count, float spacing,
              DType dtype) {
  Stencil<ps::kMadelung>(density, velocity, residual, count, spacing, dtype, [&] {
    Reference().Physics_MadelungContinuity(density, velocity, residual, count, spacing, dtype);
  });
}

void Lap4Ref(const void* i, void* o, int64_t n, float h, DType d) { Reference().Physics_Laplacian4(i, o, n, h, d); }
void GradRef(const void* i, void* o, int64_t n, float h, DType d) { Reference().Physics_Grad1D(i, o, n, h, d); }
void DivRef(const void* i, void* o, int64_t n, float h, DType d) { Reference().Physics_Divergence1D(i, o, n, h, d); }
void BohmRef(const void* i, void* o, int64_t n, float h, DType d) {
  Reference().Physics_BohmianVelocity(i, o, n, h, d);
}
void QuantRef(const void* i, void* o, int64_t n, float h, DType d) {
  Reference().Physics_QuantumPotential(i, o, n, h, d);
}

}  // namespace

void RegisterPhysics(KernelTable& t) {
  t.Physics_FFT1D = &Fft<false>;
  t.Physics_IFFT1D = &Fft<true>;
  t.Physics_Laplacian = &Laplacian;
  t.Physics_Laplacian4 = &Stencil1<ps::kLap4, &Lap4Ref>;
  t.Physics_Grad1D = &Stencil1<ps::kCentral, &GradRef>;
  t.Physics_Divergence1D = &Stencil1<ps::kCentral, &DivRef>;
  t.Physics_BohmianVelocity = &Stencil1<ps::kCentral, &BohmRef>;
  t.Physics_QuantumPotential = &Stencil1<ps::kQuantum, &QuantRef>;
  t.Physics_MadelungContinuity = &Madelung;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
