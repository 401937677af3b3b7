// Highway kernels for the Optimizer surface: one fused pass per step over params, grads and the
// state (updated in place) for Adam, AdamW, Adamax, SGD, Lion, RMSprop, Adagrad, Adadelta and
// LARS; LAMB and Hebbian take a norm pass (f64 lanes) and an update pass; LARS's norm pass runs
// first. LBFGS is the reference's torch.optim.LBFGS iteration with SIMD dots (f64 lanes) and axpys.
// f32 and f64 run in native lanes (state in the same type); f16/bf16 params and grads are
// widened to f32 in blocks and rounded back to nearest even, the state stays f32. The update is
// the reference's expression order with coefficients computed in double and rounded once to the
// state type, so results match it to rounding (bit for bit where the compiler does not contract
// a multiply-add into an FMA; dots and norms differ only in summation order). Unusual calls (bad
// dtype, count <= 0, null or overlapping buffers, invalid config or state) go to the reference,
// which validates and throws.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/optimizer.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_OPTIMIZER_OPS_
#define BACKPLANE_CPU_KERNELS_OPTIMIZER_OPS_
#include <cstddef>
#include <cstdint>
namespace backplane::cpu::simd::optimizer_ops {
// Elementwise kinds write params; the last three are reductions (f64 sums, nothing written
// except LAMB's moments).
enum Kind : int {
  kAdam, kAdamax, kSGD, kLion, kRMSprop, kAdagrad, kAdadelta, kLARS, kLambApply, kHebbianApply,
  kLambMoments, kHebbianNorm, kNorms
};
enum Storage : int { kF32, kF64, kF16, kBF16 };

// Scalar coefficients in double (rounded to the state type once per call, as the reference).
// RMSprop and Adadelta use beta1/omb1 for alpha (rho) and 1 - alpha (1 - rho).
struct Coef {
  double beta1 = 0, beta2 = 0, omb1 = 0, omb2 = 0, wd = 0, eps = 0, decay = 1, negLr = 0, lr = 0;
  double bc1 = 1, bc2 = 1, bc2Sqrt = 1, mu = 0, omDamp = 1, scale = 1;
  bool useWd = false, decoupled = false, first = false, nesterov = false, centered = false,
       momentum = false, scaled = false;
};

struct Job {
  int kind = 0;
  int storage = 0;
  Coef c;
  void* p = nullptr;
  const void* g = nullptr;
  void* s0 = nullptr;
  void* s1 = nullptr;
  void* s2 = nullptr;
  size_t n = 0;
  double sums[2] = {0.0, 0.0};
};
}  // namespace backplane::cpu::simd::optimizer_ops
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace optimizer_ops;  // NOLINT

template <class T>
struct K {
  T beta1, beta2, omb1, omb2, wd, eps, decay, negLr, lr, bc1, bc2, bc2Sqrt, mu, omDamp, scale;
  bool useWd, decoupled, first, nesterov, centered, momentum, scaled;
  explicit K(const Coef& c)
      : beta1(T(c.beta1)), beta2(T(c.beta2)), omb1(T(c.omb1)), omb2(T(c.omb2)), wd(T(c.wd)),
        eps(T(c.eps)), decay(T(c.decay)), negLr(T(c.negLr)), lr(T(c.lr)), bc1(T(c.bc1)),
        bc2(T(c.bc2)), bc2Sqrt(T(c.bc2Sqrt)), mu(T(c.mu)), omDamp(T(c.omDamp)), scale(T(c.scale)),
        useWd(c.useWd), decoupled(c.decoupled), first(c.first), nesterov(c.nesterov),
        centered(c.centered), momentum(c.momentum), scaled(c.scaled) {}
};

template <class P>
HWY_INLINE P* Off(P* ptr, size_t i) {
  return ptr ? ptr + i : ptr;
}

// sign in {-1, 0, +1}, NaN stays NaN.
template <class D, class V>
HWY_INLINE V Sign(D d, V x) {
  const V one = hn::Set(d, 1);
  const V r = hn::IfThenElse(hn::Lt(hn::Zero(d), x), one,
                             hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Neg(one), hn::Zero(d)));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

// One vector of an elementwise update at the given pointers (null: unused state).
template <int kKind, class D, class T = hn::TFromD<D>>
HWY_INLINE void UpdateVec(D d, const K<T>& k, T* pp, const T* gp, T* s0, T* s1, T* s2) {
  using V = hn::Vec<D>;
  V p = hn::LoadU(d, pp);
  if constexpr (kKind == kLambApply) {
    V r = hn::Div(hn::Div(hn::LoadU(d, s0), hn::Set(d, k.bc1)),
                  hn::Add(hn::Sqrt(hn::Div(hn::LoadU(d, s1), hn::Set(d, k.bc2))), hn::Set(d, k.eps)));
    if (k.useWd) r = hn::Add(r, hn::Mul(hn::Set(d, k.wd), p));
    hn::StoreU(hn::Add(p, hn::Mul(hn::Set(d, k.negLr), r)), d, pp);
    return;
  } else if constexpr (kKind == kHebbianApply) {
    V q = hn::Add(p, hn::Mul(hn::Set(d, k.lr), hn::LoadU(d, gp)));
    if (k.scaled) q = hn::Mul(q, hn::Set(d, k.scale));
    hn::StoreU(q, d, pp);
    return;
  } else {
    V g = hn::LoadU(d, gp);
    if constexpr (kKind == kAdam) {
      if (k.decoupled) {
        p = hn::Mul(p, hn::Set(d, k.decay));
      } else if (k.useWd) {
        g = hn::Add(g, hn::Mul(hn::Set(d, k.wd), p));
      }
    } else if constexpr (kKind != kLion) {
      if (k.useWd) g = hn::Add(g, hn::Mul(hn::Set(d, k.wd), p));
    }
    if constexpr (kKind == kAdam || kKind == kAdamax) {
      const V m = hn::Add(hn::Mul(hn::LoadU(d, s0), hn::Set(d, k.beta1)), hn::Mul(hn::Set(d, k.omb1), g));
      hn::StoreU(m, d, s0);
      V denom;
      if constexpr (kKind == kAdam) {
        const V v = hn::Add(hn::Mul(hn::LoadU(d, s1), hn::Set(d, k.beta2)),
                            hn::Mul(hn::Mul(hn::Set(d, k.omb2), g), g));
        hn::StoreU(v, d, s1);
        denom = hn::Add(hn::Div(hn::Sqrt(v), hn::Set(d, k.bc2Sqrt)), hn::Set(d, k.eps));
      } else {
        // u = max(beta2 u, |g| + eps), NaN in either gives NaN.
        const V a = hn::Mul(hn::LoadU(d, s1), hn::Set(d, k.beta2));
        const V b = hn::Add(hn::Abs(g), hn::Set(d, k.eps));
        denom = hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), hn::Max(a, b));
        hn::StoreU(denom, d, s1);
      }
      p = hn::Add(p, hn::Div(hn::Mul(hn::Set(d, k.negLr), m), denom));
    } else if constexpr (kKind == kSGD) {
      if (k.momentum) {
        const V mu = hn::Set(d, k.mu);
        const V b = k.first ? g : hn::Add(hn::Mul(hn::LoadU(d, s0), mu), hn::Mul(hn::Set(d, k.omDamp), g));
        hn::StoreU(b, d, s0);
        g = k.nesterov ? hn::Add(g, hn::Mul(mu, b)) : b;
      }
      p = hn::Add(p, hn::Mul(hn::Set(d, k.negLr), g));
    } else if constexpr (kKind == kLion) {
      p = hn::Mul(p, hn::Set(d, k.decay));
      const V m = hn::LoadU(d, s0);
      const V c = hn::Add(hn::Mul(m, hn::Set(d, k.beta1)), hn::Mul(hn::Set(d, k.omb1), g));
      p = hn::Add(p, hn::Mul(hn::Set(d, k.negLr), Sign(d, c)));
      hn::StoreU(hn::Add(hn::Mul(m, hn::Set(d, k.beta2)), hn::Mul(hn::Set(d, k.omb2), g)), d, s0);
    } else if constexpr (kKind == kRMSprop) {
      const V alpha = hn::Set(d, k.beta1), oma = hn::Set(d, k.omb1);
      const V sq = hn::Add(hn::Mul(hn::LoadU(d, s0), alpha), hn::Mul(hn::Mul(oma, g), g));
      hn::StoreU(sq, d, s0);
      V avg;
      if (k.centered) {
        const V ga = hn::Add(hn::Mul(hn::LoadU(d, s1), alpha), hn::Mul(oma, g));
        hn::StoreU(ga, d, s1);
        avg = hn::Sqrt(hn::Sub(sq, hn::Mul(ga, ga)));
      } else {
        avg = hn::Sqrt(sq);
      }
      avg = hn::Add(avg, hn::Set(d, k.eps));
      if (k.momentum) {
        const V b = hn::Add(hn::Mul(hn::LoadU(d, s2), hn::Set(d, k.mu)), hn::Div(g, avg));
        hn::StoreU(b, d, s2);
        p = hn::Add(p, hn::Mul(hn::Set(d, k.negLr), b));
      } else {
        p = hn::Add(p, hn::Div(hn::Mul(hn::Set(d, k.negLr), g), avg));
      }
    } else if constexpr (kKind == kAdagrad) {
      const V acc = hn::Add(hn::LoadU(d, s0), hn::Mul(g, g));
      hn::StoreU(acc, d, s0);
      p = hn::Add(p, hn::Div(hn::Mul(hn::Set(d, k.negLr), g), hn::Add(hn::Sqrt(acc), hn::Set(d, k.eps))));
    } else if constexpr (kKind == kAdadelta) {
      const V rho = hn::Set(d, k.beta1), omr = hn::Set(d, k.omb1), eps = hn::Set(d, k.eps);
      const V sq = hn::Add(hn::Mul(hn::LoadU(d, s0), rho), hn::Mul(hn::Mul(omr, g), g));
      hn::StoreU(sq, d, s0);
      const V acc = hn::LoadU(d, s1);
      const V delta = hn::Mul(hn::Div(hn::Sqrt(hn::Add(acc, eps)), hn::Sqrt(hn::Add(sq, eps))), g);
      hn::StoreU(hn::Add(hn::Mul(acc, rho), hn::Mul(hn::Mul(omr, delta), delta)), d, s1);
      p = hn::Add(p, hn::Mul(hn::Set(d, k.negLr), delta));
    } else if constexpr (kKind == kLARS) {
      const V b = hn::Add(hn::Mul(hn::LoadU(d, s0), hn::Set(d, k.mu)), hn::Mul(hn::Set(d, k.scale), g));
      hn::StoreU(b, d, s0);
      p = hn::Sub(p, b);
    }
    hn::StoreU(p, d, pp);
  }
}

// Full vectors in place; the tail through aligned stack buffers (no masked loads).
template <int kKind, class T>
void Drive(const K<T>& k, T* p, const T* g, T* s0, T* s1, T* s2, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) UpdateVec<kKind>(d, k, p + i, Off(g, i), Off(s0, i), Off(s1, i), Off(s2, i));
  if (i == n) return;
  const size_t rem = n - i;
  HWY_ALIGN T bp[hn::MaxLanes(d)] = {}, bg[hn::MaxLanes(d)] = {}, b0[hn::MaxLanes(d)] = {},
                                   b1[hn::MaxLanes(d)] = {}, b2[hn::MaxLanes(d)] = {};
  T* const src[5] = {p + i, const_cast<T*>(Off(g, i)), Off(s0, i), Off(s1, i), Off(s2, i)};
  T* const buf[5] = {bp, bg, b0, b1, b2};
  for (int a = 0; a < 5; ++a) {
    if (src[a]) {
      for (size_t e = 0; e < rem; ++e) buf[a][e] = src[a][e];
    }
  }
  UpdateVec<kKind>(d, k, bp, g ? bg : nullptr, s0 ? b0 : nullptr, s1 ? b1 : nullptr, s2 ? b2 : nullptr);
  for (int a = 0; a < 5; ++a) {
    if (a != 1 && src[a]) {
      for (size_t e = 0; e < rem; ++e) src[a][e] = buf[a][e];
    }
  }
}

template <class DD, class V>
HWY_INLINE hn::Vec<DD> ToF64(DD dd, V v) {
  if constexpr (sizeof(hn::TFromV<V>) == 8) {
    return v;
  } else {
    return hn::PromoteTo(dd, v);
  }
}

// One vector of a reduction (f64 lanes; T lanes of the same count). Lanes >= valid add nothing.
template <int kKind, class DT, class DD, class T = hn::TFromD<DT>>
HWY_INLINE void ReduceVec(DT dt, DD dd, const K<T>& k, const T* pp, const T* gp, T* m, T* v, size_t valid,
                          hn::Vec<DD>& acc0, hn::Vec<DD>& acc1) {
  const auto p = hn::LoadU(dt, pp);
  hn::Vec<DD> x0, x1;
  if constexpr (kKind == kLambMoments) {
    const auto g = hn::LoadU(dt, gp);
    const auto mm = hn::Add(hn::Mul(hn::LoadU(dt, m), hn::Set(dt, k.beta1)), hn::Mul(hn::Set(dt, k.omb1), g));
    const auto vv = hn::Add(hn::Mul(hn::LoadU(dt, v), hn::Set(dt, k.beta2)),
                            hn::Mul(hn::Mul(hn::Set(dt, k.omb2), g), g));
    hn::StoreU(mm, dt, m);
    hn::StoreU(vv, dt, v);
    auto r = hn::Div(hn::Div(mm, hn::Set(dt, k.bc1)),
                     hn::Add(hn::Sqrt(hn::Div(vv, hn::Set(dt, k.bc2))), hn::Set(dt, k.eps)));
    if (k.useWd) r = hn::Add(r, hn::Mul(hn::Set(dt, k.wd), p));
    x0 = ToF64(dd, r);
    x1 = ToF64(dd, p);
  } else if constexpr (kKind == kHebbianNorm) {
    x0 = ToF64(dd, hn::Add(p, hn::Mul(hn::Set(dt, k.lr), hn::LoadU(dt, gp))));
    x1 = hn::Zero(dd);
  } else {
    x0 = ToF64(dd, p);
    x1 = ToF64(dd, hn::LoadU(dt, gp));
  }
  x0 = hn::Mul(x0, x0);
  x1 = hn::Mul(x1, x1);
  if (valid < hn::Lanes(dd)) {
    const auto keep = hn::FirstN(dd, valid);
    x0 = hn::IfThenElseZero(keep, x0);
    x1 = hn::IfThenElseZero(keep, x1);
  }
  acc0 = hn::Add(acc0, x0);
  acc1 = hn::Add(acc1, x1);
}

template <int kKind, class T>
void Reduce(const K<T>& k, const T* p, const T* g, T* m, T* v, size_t n, double* sums) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;
  const size_t lanes = hn::Lanes(dd);
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    ReduceVec<kKind>(dt, dd, k, p + i, g + i, Off(m, i), Off(v, i), lanes, acc0, acc1);
  }
  if (i < n) {
    const size_t rem = n - i;
    HWY_ALIGN T bp[hn::MaxLanes(dd)] = {}, bg[hn::MaxLanes(dd)] = {}, bm[hn::MaxLanes(dd)] = {},
                                      bv[hn::MaxLanes(dd)] = {};
    for (size_t e = 0; e < rem; ++e) {
      bp[e] = p[i + e];
      bg[e] = g[i + e];
      if (m) bm[e] = m[i + e];
      if (v) bv[e] = v[i + e];
    }
    ReduceVec<kKind>(dt, dd, k, bp, bg, bm, bv, rem, acc0, acc1);
    for (size_t e = 0; e < rem && m; ++e) {
      m[i + e] = bm[e];
      v[i + e] = bv[e];
    }
  }
  sums[0] += hn::GetLane(hn::SumOfLanes(dd, acc0));
  sums[1] += hn::GetLane(hn::SumOfLanes(dd, acc1));
}

template <class T>
void RunTyped(int kind, const K<T>& k, T* p, const T* g, T* s0, T* s1, T* s2, size_t n, double* sums) {
  switch (kind) {
    case kAdam: return Drive<kAdam>(k, p, g, s0, s1, s2, n);
    case kAdamax: return Drive<kAdamax>(k, p, g, s0, s1, s2, n);
    case kSGD: return Drive<kSGD>(k, p, g, s0, s1, s2, n);
    case kLion: return Drive<kLion>(k, p, g, s0, s1, s2, n);
    case kRMSprop: return Drive<kRMSprop>(k, p, g, s0, s1, s2, n);
    case kAdagrad: return Drive<kAdagrad>(k, p, g, s0, s1, s2, n);
    case kAdadelta: return Drive<kAdadelta>(k, p, g, s0, s1, s2, n);
    case kLARS: return Drive<kLARS>(k, p, g, s0, s1, s2, n);
    case kLambApply: return Drive<kLambApply>(k, p, g, s0, s1, s2, n);
    case kHebbianApply: return Drive<kHebbianApply>(k, p, g, s0, s1, s2, n);
    case kLambMoments: return Reduce<kLambMoments>(k, p, g, s0, s1, n, sums);
    case kHebbianNorm: return Reduce<kHebbianNorm>(k, p, g, static_cast<T*>(nullptr), static_cast<T*>(nullptr), n, sums);
    case kNorms: return Reduce<kNorms>(k, p, g, static_cast<T*>(nullptr), static_cast<T*>(nullptr), n, sums);
  }
}

constexpr size_t kBlock = 1024;

// bf16 -> f32 in lanes, identical to BF16ToF32 (a shift; NaN made quiet). convert-inl.h's
// WidenBlock converts element by element; this helper could move there.
void WidenBF16(const uint16_t* src, float* dst, size_t n) {
  const hn::ScalableTag<int32_t> di;
  const hn::Rebind<uint16_t, decltype(di)> d16;
  const hn::RebindToUnsigned<decltype(di)> du;
  const hn::RebindToFloat<decltype(di)> df;
  const size_t lanes = hn::Lanes(di);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::BitCast(di, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, src + i))));
    const auto nan = hn::Gt(hn::And(x, hn::Set(di, 0x7FFFFFFF)), hn::Set(di, 0x7F800000));
    hn::StoreU(hn::BitCast(df, hn::IfThenElse(nan, hn::Or(x, hn::Set(di, 0x00400000)), x)), df, dst + i);
  }
  for (; i < n; ++i) dst[i] = BF16ToF32(src[i]);
}

void Widen(const uint16_t* src, float* dst, size_t n, bool bf16) {
  if (bf16) return WidenBF16(src, dst, n);
  WidenBlock(src, dst, n, false);
}

void RunJob(Job* j) {
  switch (j->storage) {
    case kF32:
      return RunTyped<float>(j->kind, K<float>(j->c), static_cast<float*>(j->p), static_cast<const float*>(j->g),
                             static_cast<float*>(j->s0), static_cast<float*>(j->s1), static_cast<float*>(j->s2), j->n,
                             j->sums);
    case kF64:
      return RunTyped<double>(j->kind, K<double>(j->c), static_cast<double*>(j->p), static_cast<const double*>(j->g),
                              static_cast<double*>(j->s0), static_cast<double*>(j->s1), static_cast<double*>(j->s2),
                              j->n, j->sums);
    default: break;
  }
  // f16/bf16: params and grads widened per block, the f32 state used in place.
  const bool bf16 = j->storage == kBF16;
  const bool writes = j->kind < kLambMoments;
  const K<float> k(j->c);
  auto* p = static_cast<uint16_t*>(j->p);
  const auto* g = static_cast<const uint16_t*>(j->g);
  auto* s0 = static_cast<float*>(j->s0);
  auto* s1 = static_cast<float*>(j->s1);
  auto* s2 = static_cast<float*>(j->s2);
  HWY_ALIGN float fp[kBlock], fg[kBlock];
  for (size_t i = 0; i < j->n; i += kBlock) {
    const size_t m = j->n - i < kBlock ? j->n - i : kBlock;
    Widen(p + i, fp, m, bf16);
    if (g) Widen(g + i, fg, m, bf16);
    RunTyped<float>(j->kind, k, fp, g ? fg : nullptr, Off(s0, i), Off(s1, i), Off(s2, i), m, j->sums);
    if (writes) NarrowBlock(fp, p + i, m, bf16);
  }
}

// ---- L-BFGS vector primitives (T lanes; dots accumulate in f64 lanes) ----------------------------

template <class T>
double DotTyped(const T* a, const T* b, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<T, decltype(dd)> dt;
  const size_t lanes = hn::Lanes(dd);
  auto acc = hn::Zero(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    acc = hn::MulAdd(ToF64(dd, hn::LoadU(dt, a + i)), ToF64(dd, hn::LoadU(dt, b + i)), acc);
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, acc));
  for (; i < n; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

// kind 0: out = y + a x; 1: out = a x; 2: out = x - y (out may be y).
template <class T>
void LinTyped(int kind, T a, const T* x, const T* y, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const auto va = hn::Set(d, a);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto vx = hn::LoadU(d, x + i);
    hn::StoreU(kind == 0   ? hn::Add(hn::LoadU(d, y + i), hn::Mul(va, vx))
               : kind == 1 ? hn::Mul(va, vx)
                           : hn::Sub(vx, hn::LoadU(d, y + i)),
               d, out + i);
  }
  for (; i < n; ++i) out[i] = kind == 0 ? y[i] + a * x[i] : kind == 1 ? a * x[i] : x[i] - y[i];
}

double DotF32(const float* a, const float* b, size_t n) { return DotTyped(a, b, n); }
double DotF64(const double* a, const double* b, size_t n) { return DotTyped(a, b, n); }
void LinF32(int kind, float a, const float* x, const float* y, float* out, size_t n) {
  LinTyped(kind, a, x, y, out, n);
}
void LinF64(int kind, double a, const double* x, const double* y, double* out, size_t n) {
  LinTyped(kind, a, x, y, out, n);
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(RunJob);
HWY_EXPORT(DotF32);
HWY_EXPORT(DotF64);
HWY_EXPORT(LinF32);
HWY_EXPORT(LinF64);

namespace {
using namespace optimizer_ops;  // NOLINT

constexpr int64_t kGrain = int64_t{1} << 16;

int StorageOf(DType d) {
  switch (d) {
    case DType::Float32: return kF32;
    case DType::Float64: return kF64;
    case DType::Float16: return kF16;
    case DType::BFloat16: return kBF16;
    default: return -1;
  }
}

bool NonNeg(double x) { return std::isfinite(x) && x >= 0.0f; }
bool Unit(double x, bool closed) { return x >= 0.0f && (closed ? x <= 1.0f : x < 1.0f); }
bool StepOk(const int64_t* s) { return s && *s >= 0 && *s < std::numeric_limits<int64_t>::max(); }

struct Span {
  const void* ptr;
  size_t bytes;
};

// True when no two of the non-null spans share a byte.
bool Disjoint(std::initializer_list<Span> spans) {
  for (auto a = spans.begin(); a != spans.end(); ++a) {
    for (auto b = a + 1; b != spans.end(); ++b) {
      if (!a->ptr || !b->ptr) continue;
      const auto x = reinterpret_cast<uintptr_t>(a->ptr), y = reinterpret_cast<uintptr_t>(b->ptr);
      if (x < y + b->bytes && y < x + a->bytes) return false;
    }
  }
  return true;
}

// The common fast-path preconditions: a float dtype, count > 0, non-null params/grads and
// pairwise disjoint buffers. `state` lists the state buffers in use; null entries are unused ones
// (the caller checks that the required ones are non-null).
bool Common(DType dtype, int64_t count, const void* params, const void* grads,
            std::initializer_list<const void*> state) {
  if (StorageOf(dtype) < 0 || count <= 0 || !params || !grads) return false;
  const size_t io = DTypeStorageBytes(dtype, count);
  const size_t st = static_cast<size_t>(count) * (dtype == DType::Float64 ? 8 : 4);
  std::vector<Span> spans = {{params, io}, {grads, io}};
  for (const void* s : state) spans.push_back({s, st});
  for (size_t a = 0; a < spans.size(); ++a) {
    for (size_t b = a + 1; b < spans.size(); ++b) {
      if (!Disjoint({spans[a], spans[b]})) return false;
    }
  }
  return true;
}

void* Advance(void* p, size_t bytes) { return p ? static_cast<uint8_t*>(p) + bytes : p; }

// Runs a job over fixed chunks of kGrain elements (in parallel when there are several); the sums
// of a reduction are combined in chunk order, so they do not depend on the thread count.
void Launch(Job& job) {
  const auto n = static_cast<int64_t>(job.n);
  const size_t io = job.storage == kF64 ? 8 : job.storage == kF32 ? 4 : 2;
  const size_t st = job.storage == kF64 ? 8 : 4;
  const int64_t chunks = (n + kGrain - 1) / kGrain;
  std::vector<Job> parts(static_cast<size_t>(chunks));
  ParallelFor(n, kGrain, [&](int64_t b, int64_t e) {
    Job& c = parts[static_cast<size_t>(b / kGrain)];
    c = job;
    const auto o = static_cast<size_t>(b);
    c.p = Advance(job.p, o * io);
    c.g = Advance(const_cast<void*>(job.g), o * io);
    c.s0 = Advance(job.s0, o * st);
    c.s1 = Advance(job.s1, o * st);
    c.s2 = Advance(job.s2, o * st);
    c.n = static_cast<size_t>(e - b);
    c.sums[0] = c.sums[1] = 0.0;
    HWY_DYNAMIC_DISPATCH(RunJob)(&c);
  });
  job.sums[0] = job.sums[1] = 0.0;
  for (const Job& c : parts) {
    job.sums[0] += c.sums[0];
    job.sums[1] += c.sums[1];
  }
}

Job MakeJob(int kind, DType dtype, void* p, const void* g, void* s0, void* s1, void* s2, int64_t count) {
  Job j;
  j.kind = kind;
  j.storage = StorageOf(dtype);
  j.p = p;
  j.g = g;
  j.s0 = s0;
  j.s1 = s1;
  j.s2 = s2;
  j.n = static_cast<size_t>(count);
  return j;
}

bool AdamConfigOk(const AdamConfig& c) {
  return NonNeg(c.LearningRate) && Unit(c.Beta1, false) && Unit(c.Beta2, false) && NonNeg(c.Eps) &&
         NonNeg(c.WeightDecay);
}

// Adam (decoupled = false), AdamW (true) and Adamax (max = true).
void AdamFamily(BP_PARAMS_AdamStep, bool decoupled, bool max, decltype(KernelTable::Optimizer_Adam) fallback) {
  if (!m || !v || !Common(dtype, count, params, grads, {m, v}) || !StepOk(step) || !AdamConfigOk(config)) {
    return fallback(BP_ARGS_AdamStep);
  }
  const int64_t t = ++*step;
  Job j = MakeJob(max ? kAdamax : kAdam, dtype, params, grads, m, v, nullptr, count);
  Coef& c = j.c;
  const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2, wd = config.WeightDecay;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  c.beta1 = b1;
  c.beta2 = b2;
  c.omb1 = 1.0 - b1;
  c.omb2 = 1.0 - b2;
  c.wd = wd;
  c.eps = config.Eps;
  c.useWd = wd != 0.0;
  c.decoupled = decoupled;
  c.decay = 1.0 - lr * wd;
  c.negLr = -(lr / bc1);
  c.bc2Sqrt = std::sqrt(1.0 - std::pow(b2, static_cast<double>(t)));
  Launch(j);
}

void Adam(BP_PARAMS_AdamStep) { AdamFamily(BP_ARGS_AdamStep, false, false, Reference().Optimizer_Adam); }
void AdamW(BP_PARAMS_AdamStep) { AdamFamily(BP_ARGS_AdamStep, true, false, Reference().Optimizer_AdamW); }
void Adamax(BP_PARAMS_AdamStep) { AdamFamily(BP_ARGS_AdamStep, false, true, Reference().Optimizer_Adamax); }

void LAMB(BP_PARAMS_AdamStep) {
  if (!m || !v || !Common(dtype, count, params, grads, {m, v}) || !StepOk(step) || !AdamConfigOk(config)) {
    return Reference().Optimizer_LAMB(BP_ARGS_AdamStep);
  }
  const int64_t t = ++*step;
  Job j = MakeJob(kLambMoments, dtype, params, grads, m, v, nullptr, count);
  Coef& c = j.c;
  const double b1 = config.Beta1, b2 = config.Beta2, wd = config.WeightDecay;
  c.beta1 = b1;
  c.beta2 = b2;
  c.omb1 = 1.0 - b1;
  c.omb2 = 1.0 - b2;
  c.bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  c.bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
  c.wd = wd;
  c.eps = config.Eps;
  c.useWd = wd != 0.0;
  Launch(j);  // moments updated; sums = (||r||^2, ||p||^2)
  const double rNorm = std::sqrt(j.sums[0]), pNorm = std::sqrt(j.sums[1]);
  const double ratio = (pNorm == 0.0 || rNorm == 0.0) ? 1.0 : pNorm / rNorm;
  j.kind = kLambApply;
  j.g = nullptr;  // r is recomputed from the updated moments
  j.c.negLr = -(static_cast<double>(config.LearningRate) * ratio);
  Launch(j);
}

void SGD(BP_PARAMS_SGDStep) {
  const bool useMomentum = config.Momentum != 0.0f;
  const bool ok = (!useMomentum || momentumBuffer) &&
                  Common(dtype, count, params, grads, {useMomentum ? momentumBuffer : nullptr}) && StepOk(step) &&
                  NonNeg(config.LearningRate) && NonNeg(config.Momentum) && Unit(config.Dampening, true) &&
                  NonNeg(config.WeightDecay) && (!config.Nesterov || (config.Momentum > 0.0f && config.Dampening == 0.0f));
  if (!ok) return Reference().Optimizer_SGD(BP_ARGS_SGDStep);
  const int64_t t = ++*step;
  Job j = MakeJob(kSGD, dtype, params, grads, useMomentum ? momentumBuffer : nullptr, nullptr, nullptr, count);
  j.c.wd = config.WeightDecay;
  j.c.useWd = config.WeightDecay != 0.0f;
  j.c.mu = config.Momentum;
  j.c.omDamp = 1.0 - static_cast<double>(config.Dampening);
  j.c.negLr = -static_cast<double>(config.LearningRate);
  j.c.momentum = useMomentum;
  j.c.first = t == 1;
  j.c.nesterov = config.Nesterov;
  Launch(j);
}

void Lion(BP_PARAMS_LionStep) {
  if (!m || !Common(dtype, count, params, grads, {m}) || !StepOk(step) || !NonNeg(config.LearningRate) ||
      !Unit(config.Beta1, false) || !Unit(config.Beta2, false) || !NonNeg(config.WeightDecay)) {
    return Reference().Optimizer_Lion(BP_ARGS_LionStep);
  }
  ++*step;
  Job j = MakeJob(kLion, dtype, params, grads, m, nullptr, nullptr, count);
  const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2;
  j.c.decay = 1.0 - lr * static_cast<double>(config.WeightDecay);
  j.c.beta1 = b1;
  j.c.beta2 = b2;
  j.c.omb1 = 1.0 - b1;
  j.c.omb2 = 1.0 - b2;
  j.c.negLr = -lr;
  Launch(j);
}

void RMSprop(BP_PARAMS_RMSpropStep) {
  const bool useMomentum = config.Momentum > 0.0f;
  const bool ok = squareAvg && (!config.Centered || gradAvg) && (!useMomentum || momentumBuffer) &&
                  Common(dtype, count, params, grads,
                         {squareAvg, config.Centered ? gradAvg : nullptr, useMomentum ? momentumBuffer : nullptr}) &&
                  StepOk(step) && NonNeg(config.LearningRate) && Unit(config.Alpha, false) && NonNeg(config.Eps) &&
                  NonNeg(config.WeightDecay) && NonNeg(config.Momentum);
  if (!ok) return Reference().Optimizer_RMSprop(BP_ARGS_RMSpropStep);
  ++*step;
  Job j = MakeJob(kRMSprop, dtype, params, grads, squareAvg, config.Centered ? gradAvg : nullptr,
                  useMomentum ? momentumBuffer : nullptr, count);
  const double a = config.Alpha;
  j.c.beta1 = a;
  j.c.omb1 = 1.0 - a;
  j.c.wd = config.WeightDecay;
  j.c.useWd = config.WeightDecay != 0.0f;
  j.c.eps = config.Eps;
  j.c.mu = config.Momentum;
  j.c.negLr = -static_cast<double>(config.LearningRate);
  j.c.centered = config.Centered;
  j.c.momentum = useMomentum;
  Launch(j);
}

void Hebbian(BP_PARAMS_HebbianStep) {
  if (!Common(dtype, count, params, signal, {}) || !NonNeg(config.LearningRate) || !NonNeg(config.MaxNorm)) {
    return Reference().Optimizer_Hebbian(BP_ARGS_HebbianStep);
  }
  Job j = MakeJob(kHebbianNorm, dtype, params, signal, nullptr, nullptr, nullptr, count);
  j.c.lr = config.LearningRate;
  const double maxNorm = config.MaxNorm;
  if (maxNorm > 0.0) {
    Launch(j);
    const double norm = std::sqrt(j.sums[0]);
    if (norm > maxNorm) {
      j.c.scaled = true;
      j.c.scale = maxNorm / norm;
    }
  }
  j.kind = kHebbianApply;
  Launch(j);
}

void LARS(BP_PARAMS_LARSStep) {
  if (!momentumBuffer || !Common(dtype, count, params, grads, {momentumBuffer}) || !StepOk(step) || !NonNeg(config.LearningRate) ||
      !NonNeg(config.Eta) || !NonNeg(config.Momentum) || !NonNeg(config.WeightDecay) || !NonNeg(config.Eps)) {
    return Reference().Optimizer_LARS(BP_ARGS_LARSStep);
  }
  ++*step;
  Job j = MakeJob(kNorms, dtype, params, grads, momentumBuffer, nullptr, nullptr, count);
  Launch(j);
  const double wd = config.WeightDecay;
  const double pNorm = std::sqrt(j.sums[0]), gNorm = std::sqrt(j.sums[1]);
  const double localLr = (pNorm == 0.0 || gNorm == 0.0) ? 1.0
                                                        : static_cast<double>(config.Eta) * pNorm /
                                                              (gNorm + wd * pNorm + static_cast<double>(config.Eps));
  j.kind = kLARS;
  j.c.scale = static_cast<double>(config.LearningRate) * localLr;
  j.c.mu = config.Momentum;
  j.c.wd = wd;
  j.c.useWd = wd != 0.0;
  Launch(j);
}

void Adagrad(BP_PARAMS_AdagradStep) {
  if (!sum || !Common(dtype, count, params, grads, {sum}) || !StepOk(step) || !NonNeg(config.LearningRate) ||
      !NonNeg(config.LrDecay) || !NonNeg(config.WeightDecay) || !NonNeg(config.Eps)) {
    return Reference().Optimizer_Adagrad(BP_ARGS_AdagradStep);
  }
  const int64_t t = ++*step;
  Job j = MakeJob(kAdagrad, dtype, params, grads, sum, nullptr, nullptr, count);
  j.c.negLr = -(static_cast<double>(config.LearningRate) /
                (1.0 + static_cast<double>(t - 1) * static_cast<double>(config.LrDecay)));
  j.c.wd = config.WeightDecay;
  j.c.useWd = config.WeightDecay != 0.0f;
  j.c.eps = config.Eps;
  Launch(j);
}

void Adadelta(BP_PARAMS_AdadeltaStep) {
  if (!squareAvg || !accDelta || !Common(dtype, count, params, grads, {squareAvg, accDelta}) || !StepOk(step) || !NonNeg(config.LearningRate) ||
      !Unit(config.Rho, false) || !NonNeg(config.Eps) || !NonNeg(config.WeightDecay)) {
    return Reference().Optimizer_Adadelta(BP_ARGS_AdadeltaStep);
  }
  ++*step;
  Job j = MakeJob(kAdadelta, dtype, params, grads, squareAvg, accDelta, nullptr, count);
  const double r = config.Rho;
  j.c.beta1 = r;
  j.c.omb1 = 1.0 - r;
  j.c.eps = config.Eps;
  j.c.wd = config.WeightDecay;
  j.c.useWd = config.WeightDecay != 0.0f;
  j.c.negLr = -static_cast<double>(config.LearningRate);
  Launch(j);
}

// ---- L-BFGS: the reference's algorithm with SIMD dots (f64 lanes) and axpys ---------------------

double Dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotF32)(a, b, n); }
double Dot(const double* a, const double* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotF64)(a, b, n); }
void Lin(int kind, float a, const float* x, const float* y, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(LinF32)(kind, a, x, y, out, n);
}
void Lin(int kind, double a, const double* x, const double* y, double* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(LinF64)(kind, a, x, y, out, n);
}

template <class T>
void LBFGSTyped(const LBFGSConfig& config, void* params, const void* grads, const LBFGSState& state, int64_t count,
                DType dtype) {
  const size_t n = static_cast<size_t>(count);
  const int64_t m = config.HistorySize;
  // f32/f64 params and grads are used in place (params is written last); f16/bf16 are widened.
  const bool native = dtype == DType::Float32 || dtype == DType::Float64;
  std::vector<T> pw(native ? 0 : n), gw(native ? 0 : n), q(n);
  for (size_t i = 0; i < pw.size(); ++i) {
    const bool f16 = dtype == DType::Float16;
    const uint16_t pb = static_cast<const uint16_t*>(params)[i], gb = static_cast<const uint16_t*>(grads)[i];
    pw[i] = f16 ? F16ToF32(pb) : BF16ToF32(pb);
    gw[i] = f16 ? F16ToF32(gb) : BF16ToF32(gb);
  }
  const T* g = native ? static_cast<const T*>(grads) : gw.data();
  double maxAbs = 0.0;
  bool nan = false;
  for (size_t i = 0; i < n; ++i) {
    nan = nan || std::isnan(g[i]);
    maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(g[i])));
  }
  if (!nan && maxAbs <= config.ToleranceGrad) return;
  T* lastStep = static_cast<T*>(state.lastStep);
  T* prevGrads = static_cast<T*>(state.prevGrads);
  T* sHistory = static_cast<T*>(state.sHistory);
  T* yHistory = static_cast<T*>(state.yHistory);
  auto slotS = [&](int64_t slot) { return sHistory + slot * count; };
  auto slotY = [&](int64_t slot) { return yHistory + slot * count; };

  const int64_t k = ++*state.step;
  if (k == 1) {
    *state.head = 0;
    *state.stored = 0;
  } else {
    T* yv = q.data();  // y lives in q until the recursion needs it
    Lin(2, T(0), g, prevGrads, yv, n);
    const double ys = Dot(yv, lastStep, n);
    if (ys > 1e-10) {
      const int64_t slot = *state.head;
      std::memcpy(slotS(slot), lastStep, n * sizeof(T));
      std::memcpy(slotY(slot), yv, n * sizeof(T));
      state.rhoHistory[slot] = 1.0 / ys;
      *state.head = (slot + 1) % m;
      *state.stored = std::min(*state.stored + 1, m);
    }
  }
  const int64_t stored = *state.stored;
  auto slotOf = [&](int64_t j) { return (*state.head - 1 - j + m) % m; };
  std::vector<double> alpha(static_cast<size_t>(std::max<int64_t>(stored, 1)));
  Lin(1, T(-1), g, nullptr, q.data(), n);  // q = -g
  for (int64_t j = 0; j < stored; ++j) {
    const int64_t slot = slotOf(j);
    alpha[static_cast<size_t>(j)] = Dot(slotS(slot), q.data(), n) * state.rhoHistory[slot];
    Lin(0, -T(alpha[static_cast<size_t>(j)]), slotY(slot), q.data(), q.data(), n);  // q -= a y
  }
  double hDiag = 1.0;
  if (stored > 0) {
    const int64_t newest = slotOf(0);
    hDiag = Dot(slotY(newest), slotS(newest), n) / Dot(slotY(newest), slotY(newest), n);
  }
  T* d = q.data();
  Lin(1, T(hDiag), d, nullptr, d, n);
  for (int64_t j = stored - 1; j >= 0; --j) {
    const int64_t slot = slotOf(j);
    const double beta = Dot(slotY(slot), d, n) * state.rhoHistory[slot];
    Lin(0, T(alpha[static_cast<size_t>(j)] - beta), slotS(slot), d, d, n);
  }
  double t = config.LearningRate;
  if (k == 1) {
    double l1 = 0.0;
    for (size_t i = 0; i < n; ++i) l1 += std::fabs(static_cast<double>(g[i]));
    t = std::min(1.0, 1.0 / l1) * config.LearningRate;
  }
  const double gtd = Dot(g, d, n);
  std::memcpy(prevGrads, g, n * sizeof(T));
  Lin(1, T(t), d, nullptr, lastStep, n);
  if (gtd > -config.ToleranceChange) return;
  if (native) {
    Lin(0, T(1), lastStep, static_cast<T*>(params), static_cast<T*>(params), n);
    return;
  }
  Lin(0, T(1), lastStep, pw.data(), pw.data(), n);
  auto* out = static_cast<uint16_t*>(params);
  for (size_t i = 0; i < n; ++i) {
    out[i] = dtype == DType::Float16 ? F32ToF16(static_cast<float>(pw[i])) : F32ToBF16(static_cast<float>(pw[i]));
  }
}

void LBFGS(BP_PARAMS_LBFGSStep) {
  const int64_t m = config.HistorySize;
  int64_t historyCount = 0;
  bool ok = StorageOf(dtype) >= 0 && count > 0 && params && grads && NonNeg(config.LearningRate) && m > 0 &&
            !std::isnan(config.ToleranceGrad) && !std::isnan(config.ToleranceChange) &&
            !__builtin_mul_overflow(m, count, &historyCount) && state.lastStep && state.prevGrads &&
            state.sHistory && state.yHistory && state.rhoHistory && state.head && state.stored && StepOk(state.step);
  ok = ok && *state.head >= 0 && *state.head < m && *state.stored >= 0 && *state.stored <= m &&
       !(*state.step == 0 && *state.stored != 0);
  if (ok) {
    const size_t io = DTypeStorageBytes(dtype, count);
    const size_t st = dtype == DType::Float64 ? 8 : 4;
    const auto n = static_cast<size_t>(count), h = static_cast<size_t>(historyCount);
    const Span spans[] = {{params, io},
                          {grads, io},
                          {state.lastStep, n * st},
                          {state.prevGrads, n * st},
                          {state.sHistory, h * st},
                          {state.yHistory, h * st},
                          {state.rhoHistory, static_cast<size_t>(m) * 8},
                          {state.head, 8},
                          {state.stored, 8},
                          {state.step, 8}};
    for (size_t a = 0; ok && a < std::size(spans); ++a) {
      for (size_t b = a + 1; ok && b < std::size(spans); ++b) ok = Disjoint({spans[a], spans[b]});
    }
  }
  if (!ok) return Reference().Optimizer_LBFGS(BP_ARGS_LBFGSStep);
  if (dtype == DType::Float64) return LBFGSTyped<double>(BP_ARGS_LBFGSStep);
  LBFGSTyped<float>(BP_ARGS_LBFGSStep);
}

}  // namespace

void RegisterOptimizer(KernelTable& t) {
  t.Optimizer_Adam = &Adam;
  t.Optimizer_AdamW = &AdamW;
  t.Optimizer_Adamax = &Adamax;
  t.Optimizer_LAMB = &LAMB;
  t.Optimizer_SGD = &SGD;
  t.Optimizer_Lion = &Lion;
  t.Optimizer_RMSprop = &RMSprop;
  t.Optimizer_Hebbian = &Hebbian;
  t.Optimizer_LARS = &LARS;
  t.Optimizer_Adagrad = &Adagrad;
  t.Optimizer_Adadelta = &Adadelta;
  t.Optimizer_LBFGS = &LBFGS;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
