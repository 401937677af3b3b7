// Per-target row helpers of CrossEntropy (losses.cpp) and CrossEntropyGrad (gradients.cpp): the
// row maximum with a NaN check, and sum_c exp(z_c - m) accumulated in f64 (optionally storing the
// exponentials). Include inside HWY_NAMESPACE code after hwy/highway.h (re-included once per
// target).
#if defined(BACKPLANE_CPU_KERNELS_CROSS_ENTROPY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef BACKPLANE_CPU_KERNELS_CROSS_ENTROPY_INL_H_
#undef BACKPLANE_CPU_KERNELS_CROSS_ENTROPY_INL_H_
#else
#define BACKPLANE_CPU_KERNELS_CROSS_ENTROPY_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Row maximum in native lanes (n >= lanes: the last vector overlaps, harmless for a maximum);
// returns false when the row has a NaN.
template <class T>
bool RowMax(const T* z, size_t n, T* max) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  auto mx = hn::LoadU(d, z);
  auto nan = hn::VecFromMask(d, hn::IsNaN(mx));
  for (size_t i = lanes; i < n; i += lanes) {
    const auto x = hn::LoadU(d, z + std::min(i, n - lanes));
    mx = hn::Max(mx, x);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(x)));
  }
  *max = hn::GetLane(hn::MaxOfLanes(d, mx));
  return hn::AllFalse(d, hn::MaskFromVec(nan));
}

// sum_c exp(z_c - m) for a finite m, accumulated in f64 lanes; kStore: also g[c] = exp(z_c - m)
// (g may alias z).
template <bool kStore>
double ExpSum(const double* z, double* g, size_t n, double m) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  const auto vm = hn::Set(d, m);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, z + i), vm));
    const auto e1 = hn::Exp(d, hn::Sub(hn::LoadU(d, z + i + lanes), vm));
    if constexpr (kStore) {
      hn::StoreU(e0, d, g + i);
      hn::StoreU(e1, d, g + i + lanes);
    }
    a0 = hn::Add(a0, e0);
    a1 = hn::Add(a1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, z + i), vm));
    if constexpr (kStore) hn::StoreU(e0, d, g + i);
    a0 = hn::Add(a0, e0);
  }
  double sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; i < n; ++i) {
    const double e = std::exp(z[i] - m);
    if constexpr (kStore) g[i] = e;
    sum += e;
  }
  return sum;
}

// f32 exponentials, partially summed in f32 and accumulated in f64 lanes. With kStore the scalar
// tail adds the stored (f32-rounded) exponentials, else the f64 ones.
template <bool kStore>
double ExpSum(const float* z, float* g, size_t n, float m) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> dh;
  const size_t lanes = hn::Lanes(df), dlanes = hn::Lanes(d);
  const auto vm = hn::Set(df, m);
  auto acc = hn::Zero(d);
  HWY_ALIGN float buf[hn::MaxLanes(df)];
  size_t i = 0;
  // Groups of 16 vectors: each f32 lane of s0 + s1 adds 16 exponentials (relative error <=
  // 15 * 2^-24 < 9e-7) before it joins the f64 sum.
  for (; i + 16 * lanes <= n; i += 16 * lanes) {
    auto s0 = hn::Zero(df), s1 = s0;
    for (size_t j = i; j < i + 16 * lanes; j += 2 * lanes) {
      const auto e0 = hn::Exp(df, hn::Sub(hn::LoadU(df, z + j), vm));
      const auto e1 = hn::Exp(df, hn::Sub(hn::LoadU(df, z + j + lanes), vm));
      if constexpr (kStore) {
        hn::StoreU(e0, df, g + j);
        hn::StoreU(e1, df, g + j + lanes);
      }
      s0 = hn::Add(s0, e0);
      s1 = hn::Add(s1, e1);
    }
    hn::Store(hn::Add(s0, s1), df, buf);
    for (size_t k = 0; k < lanes; k += dlanes) acc = hn::Add(acc, hn::PromoteTo(d, hn::Load(dh, buf + k)));
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e0 = hn::Exp(df, hn::Sub(hn::LoadU(df, z + i), vm));
    if constexpr (kStore) hn::StoreU(e0, df, g + i);
    hn::Store(e0, df, buf);
    for (size_t k = 0; k < lanes; k += dlanes) acc = hn::Add(acc, hn::PromoteTo(d, hn::Load(dh, buf + k)));
  }
  double sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) {
    const double e = std::exp(static_cast<double>(z[i]) - static_cast<double>(m));
    if constexpr (kStore) {
      g[i] = static_cast<float>(e);
      sum += g[i];
    } else {
      sum += e;
    }
  }
  return sum;
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // BACKPLANE_CPU_KERNELS_CROSS_ENTROPY_INL_H_
