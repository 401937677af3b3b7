// Highway kernels for the Reduction surface: Sum, Prod, ReduceMin, ReduceMax, L1Norm.
//
// Sum, L1Norm and Prod widen every element to f64 lanes (f16/bf16 through f32) and accumulate in
// f64, like the reference; only the order differs (lanes, then fixed 64K-element chunks combined in
// chunk order), so results do not depend on the thread count. Prod takes the fast path only when
// no order can overflow or underflow (a bound on log2|x| read from the bits, summed over the
// input); otherwise, and for zeros, subnormals, infinities and NaN, it runs the reference, whose
// sequential order decides those cases.
// ReduceMin/ReduceMax compare in the storage's own precision (f32 lanes for f32/f16/bf16), return
// an input element exactly, stop at the first NaN and keep the first of tied zeros, as the
// reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/reduction.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_REDUCTION_SHARED_
#define BACKPLANE_CPU_KERNELS_REDUCTION_SHARED_
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backplane/convert.hpp"
#include "cpu/kernels/storage.hpp"

namespace backplane::cpu::simd::reduction_ops {

using namespace kinds;  // NOLINT: Kind, kF32 .. kBF16, KindOf, KindBytes (storage.hpp)

// Prod of one chunk and the budget that proves the order cannot matter: up >= the sum of
// max(log2|x|, 0) and down >= the sum of max(-log2|x|, 0) over the elements, so every partial
// product of any subset, in any order, lies in [2^-down, 2^up].
struct ProdPart {
  double product = 1.0;
  double up = 0.0;
  double down = 0.0;
  bool special = false;  // a zero, subnormal, infinity or NaN
};

// ReduceMin/ReduceMax of one chunk: the index of the first NaN (or -1), else the extreme value;
// `mixed_zero` when the extreme is a zero and zeros of both signs compete for it, so that the
// first one must be found by index.
struct ExtremePart {
  int64_t nan_index = -1;
  double best = 0.0;
  bool mixed_zero = false;
};

}  // namespace backplane::cpu::simd::reduction_ops
#endif  // BACKPLANE_CPU_KERNELS_REDUCTION_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace reduction_ops;  // NOLINT

// Lanes(df) elements of f32, f16 or bf16 storage at element i, widened exactly to f32 lanes
// (LoadWidenU16 in convert-inl.h).
template <int kKind, class DF>
HWY_INLINE hn::Vec<DF> LoadAsF32(DF df, const void* base, size_t i) {
  if constexpr (kKind == kF32) {
    return hn::LoadU(df, static_cast<const float*>(base) + i);
  } else {
    return LoadWidenU16<kKind == kBF16>(df, static_cast<const uint16_t*>(base) + i);
  }
}

// Lanes(d64) elements at element i widened to f64 lanes.
template <int kKind, class D64>
HWY_INLINE hn::Vec<D64> LoadAsF64(D64 d64, const void* base, size_t i) {
  if constexpr (kKind == kF64) {
    return hn::LoadU(d64, static_cast<const double*>(base) + i);
  } else {
    const hn::Rebind<float, D64> df;
    return hn::PromoteTo(d64, LoadAsF32<kKind>(df, base, i));
  }
}

template <int kKind, bool kAbs>
double SumT(const void* p, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  auto load = [&](size_t i) {
    const auto v = LoadAsF64<kKind>(d, p, i);
    return kAbs ? hn::Abs(v) : v;
  };
  size_t i = 0;
  for (; i + 8 * lanes <= n; i += 8 * lanes) {  // eight loads in flight per iteration
    a0 = hn::Add(a0, hn::Add(load(i), load(i + 4 * lanes)));
    a1 = hn::Add(a1, hn::Add(load(i + lanes), load(i + 5 * lanes)));
    a2 = hn::Add(a2, hn::Add(load(i + 2 * lanes), load(i + 6 * lanes)));
    a3 = hn::Add(a3, hn::Add(load(i + 3 * lanes), load(i + 7 * lanes)));
  }
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, load(i));
    a1 = hn::Add(a1, load(i + lanes));
    a2 = hn::Add(a2, load(i + 2 * lanes));
    a3 = hn::Add(a3, load(i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) a0 = hn::Add(a0, load(i));
  double total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) {
    const double x = LoadKind(kKind, p, i);
    total += kAbs ? std::fabs(x) : x;
  }
  return total;
}

// Bounds on log2|x| from the bits: for a normal x, lo = bits(|x|) / 2^52 - 1023 = e + (m - 1)
// with |x| = m * 2^e, m in [1, 2), and log2|x| lies in [lo, lo + 0.0861] (log2 m - (m - 1) peaks
// at 0.08607). Zeros, subnormals, Inf and NaN fall outside [-1022, 1024).
constexpr double kLogSlack = 0.08608;

inline void AccountScalar(double x, ProdPart& part) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof(bits));
  const double lo = static_cast<double>(bits & 0x7FFFFFFFFFFFFFFFull) * 0x1p-52 - 1023.0;
  if (!(lo >= -1022.0 && lo < 1024.0)) part.special = true;
  part.up += std::max(lo + kLogSlack, 0.0);
  part.down += std::max(-lo, 0.0);
}

template <int kKind>
void ProdT(const void* p, size_t n, ProdPart* out) {
  const hn::ScalableTag<double> d;
  const hn::RebindToSigned<decltype(d)> di;
  const size_t lanes = hn::Lanes(d);
  auto p0 = hn::Set(d, 1.0), p1 = hn::Set(d, 1.0);
  auto up = hn::Zero(d), down = hn::Zero(d), special = hn::Zero(d);
  const auto zero = hn::Zero(d), slack = hn::Set(d, kLogSlack);
  auto account = [&](hn::Vec<decltype(d)> x) {
    const auto lo = hn::Sub(hn::Mul(hn::ConvertTo(d, hn::BitCast(di, hn::Abs(x))), hn::Set(d, 0x1p-52)),
                            hn::Set(d, 1023.0));
    const auto normal = hn::And(hn::Ge(lo, hn::Set(d, -1022.0)), hn::Lt(lo, hn::Set(d, 1024.0)));
    special = hn::Or(special, hn::VecFromMask(d, hn::Not(normal)));
    up = hn::Add(up, hn::Max(hn::Add(lo, slack), zero));
    down = hn::Add(down, hn::Max(hn::Neg(lo), zero));
  };
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto x0 = LoadAsF64<kKind>(d, p, i), x1 = LoadAsF64<kKind>(d, p, i + lanes);
    account(x0);
    account(x1);
    p0 = hn::Mul(p0, x0);
    p1 = hn::Mul(p1, x1);
  }
  HWY_ALIGN double prods[hn::MaxLanes(d)], ups[hn::MaxLanes(d)], downs[hn::MaxLanes(d)];
  ProdPart part;
  hn::Store(hn::Mul(p0, p1), d, prods);
  hn::Store(up, d, ups);
  hn::Store(down, d, downs);
  part.special = !hn::AllFalse(d, hn::MaskFromVec(special));
  for (size_t k = 0; k < lanes; ++k) {
    part.product *= prods[k];
    part.up += ups[k];
    part.down += downs[k];
  }
  for (; i < n; ++i) {
    const double x = LoadKind(kKind, p, i);
    AccountScalar(x, part);
    part.product *= x;
  }
  *out = part;
}

// Scalar reference semantics over [begin, end) continuing from `best`; returns false at a NaN.
template <bool kMax>
bool ExtremeScalar(int kind, const void* p, size_t begin, size_t end, double& best, int64_t& nan_index) {
  for (size_t i = begin; i < end; ++i) {
    const double x = LoadKind(kind, p, i);
    if (std::isnan(x)) {
      nan_index = static_cast<int64_t>(i);
      return false;
    }
    if (kMax ? x > best : x < best) best = x;
  }
  return true;
}

template <int kKind, bool kMax>
void ExtremeT(const void* p, size_t n, ExtremePart* out) {
  using T = std::conditional_t<kKind == kF64, double, float>;
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  ExtremePart part;
  auto load = [&](size_t i) {
    if constexpr (kKind == kF64) {
      return hn::LoadU(d, static_cast<const double*>(p) + i);
    } else {
      return LoadAsF32<kKind>(d, p, i);
    }
  };
  const size_t nv = n / (2 * lanes) * (2 * lanes);
  if (nv == 0) {
    part.best = LoadKind(kKind, p, 0);
    if (std::isnan(part.best)) {
      part.nan_index = 0;
    } else {
      ExtremeScalar<kMax>(kKind, p, 1, n, part.best, part.nan_index);
    }
    *out = part;
    return;
  }
  // Lane-wise extremes; within a lane the earlier of equal values is kept (strict comparison).
  auto b0 = load(0), b1 = load(lanes);
  constexpr size_t kBlock = 2048;  // NaN is checked once per block
  for (size_t block = 0; block < nv; block += kBlock) {
    const size_t end = block + kBlock < nv ? block + kBlock : nv;
    auto nan = hn::VecFromMask(d, hn::Or(hn::IsNaN(b0), hn::IsNaN(b1)));
    for (size_t i = block; i < end; i += 2 * lanes) {
      const auto x0 = load(i), x1 = load(i + lanes);
      nan = hn::Or(nan, hn::VecFromMask(d, hn::Or(hn::IsNaN(x0), hn::IsNaN(x1))));
      b0 = hn::IfThenElse(kMax ? hn::Gt(x0, b0) : hn::Lt(x0, b0), x0, b0);
      b1 = hn::IfThenElse(kMax ? hn::Gt(x1, b1) : hn::Lt(x1, b1), x1, b1);
    }
    if (!hn::AllFalse(d, hn::MaskFromVec(nan))) {
      double ignored = 0.0;
      ExtremeScalar<kMax>(kKind, p, block, end, ignored, part.nan_index);
      *out = part;
      return;
    }
  }
  HWY_ALIGN T l0[hn::MaxLanes(d)], l1[hn::MaxLanes(d)];
  hn::Store(b0, d, l0);
  hn::Store(b1, d, l1);
  double best = l0[0];
  for (size_t k = 0; k < lanes; ++k) {
    for (const double x : {static_cast<double>(l0[k]), static_cast<double>(l1[k])}) {
      if (kMax ? x > best : x < best) best = x;
    }
  }
  if (best == 0.0) {
    bool pos = false, neg = false;
    for (size_t k = 0; k < lanes; ++k) {
      for (const T x : {l0[k], l1[k]}) {
        if (x == T{0}) (std::signbit(x) ? neg : pos) = true;
      }
    }
    part.mixed_zero = pos && neg;
  }
  const double lane_best = best;
  if (!ExtremeScalar<kMax>(kKind, p, nv, n, best, part.nan_index)) {
    *out = part;
    return;
  }
  if (best != lane_best || std::signbit(best) != std::signbit(lane_best)) part.mixed_zero = false;
  part.best = best;
  *out = part;
}

template <class Fn>
HWY_INLINE auto ByKind(int kind, Fn&& fn) {
  switch (kind) {
    case kF32: return fn(std::integral_constant<int, kF32>());
    case kF64: return fn(std::integral_constant<int, kF64>());
    case kF16: return fn(std::integral_constant<int, kF16>());
    default: return fn(std::integral_constant<int, kBF16>());
  }
}

}  // namespace

double ReductionSumChunk(int kind, bool abs, const void* p, size_t n) {
  return ByKind(kind, [&](auto k) { return abs ? SumT<decltype(k)::value, true>(p, n) : SumT<decltype(k)::value, false>(p, n); });
}

void ReductionProdChunk(int kind, const void* p, size_t n, ProdPart* out) {
  ByKind(kind, [&](auto k) { ProdT<decltype(k)::value>(p, n, out); });
}

void ReductionExtremeChunk(int kind, bool is_max, const void* p, size_t n, ExtremePart* out) {
  ByKind(kind, [&](auto k) { is_max ? ExtremeT<decltype(k)::value, true>(p, n, out) : ExtremeT<decltype(k)::value, false>(p, n, out); });
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(ReductionSumChunk);
HWY_EXPORT(ReductionProdChunk);
HWY_EXPORT(ReductionExtremeChunk);

namespace {
using namespace reduction_ops;  // NOLINT

// Fixed chunking: boundaries depend only on the count, so results are the same for any number
// of threads; chunks run in parallel when there are at least two.
constexpr int64_t kChunk = int64_t{1} << 16;

const void* At(const void* p, int kind, int64_t i) {
  return static_cast<const uint8_t*>(p) + static_cast<size_t>(i) * KindBytes(kind);
}

// Runs chunk(begin, end, part) over fixed chunks and returns the parts in chunk order.
template <class Part, class Fn>
std::vector<Part> Chunks(int64_t n, const Fn& chunk) {
  std::vector<Part> parts(static_cast<size_t>((n + kChunk - 1) / kChunk));
  ParallelFor(n, kChunk, [&](int64_t b, int64_t e) { chunk(b, e, parts[static_cast<size_t>(b / kChunk)]); });
  return parts;
}

double Finish(double total, DType dtype) {
  return dtype == DType::Float64 ? total : static_cast<double>(static_cast<float>(total));
}

bool Unusual(const void* values, int64_t count, int kind) {
  return kind < 0 || count < 0 || (count > 0 && values == nullptr);
}

template <bool kAbs>
double SumOrL1(const void* values, int64_t count, DType dtype, double (*fallback)(const void*, int64_t, DType)) {
  const int kind = KindOf(dtype);
  if (Unusual(values, count, kind)) return fallback(values, count, dtype);
  const auto parts = Chunks<double>(count, [&](int64_t b, int64_t e, double& part) {
    part = HWY_DYNAMIC_DISPATCH(ReductionSumChunk)(kind, kAbs, At(values, kind, b), static_cast<size_t>(e - b));
  });
  double total = 0.0;
  for (const double p : parts) total += p;
  return Finish(total, dtype);
}

double Prod(const void* values, int64_t count, DType dtype) {
  const int kind = KindOf(dtype);
  if (Unusual(values, count, kind)) return Reference().Reduction_Prod(values, count, dtype);
  const auto parts = Chunks<ProdPart>(count, [&](int64_t b, int64_t e, ProdPart& part) {
    HWY_DYNAMIC_DISPATCH(ReductionProdChunk)(kind, At(values, kind, b), static_cast<size_t>(e - b), &part);
  });
  // Within these bounds no order overflows or underflows (f64 normals span [2^-1022, 2^1024)).
  constexpr double kBudget = 1000.0;
  ProdPart total;
  for (const ProdPart& p : parts) {
    total.product *= p.product;
    total.up += p.up;
    total.down += p.down;
    total.special = total.special || p.special;
  }
  if (total.special || total.up > kBudget || total.down > kBudget) {
    return Reference().Reduction_Prod(values, count, dtype);  // the sequential order decides
  }
  return Finish(total.product, dtype);
}

template <bool kMax>
double Extreme(const void* values, int64_t count, DType dtype, double (*fallback)(const void*, int64_t, DType)) {
  const int kind = KindOf(dtype);
  if (Unusual(values, count, kind) || count == 0) return fallback(values, count, dtype);
  const auto parts = Chunks<ExtremePart>(count, [&](int64_t b, int64_t e, ExtremePart& part) {
    HWY_DYNAMIC_DISPATCH(ReductionExtremeChunk)(kind, kMax, At(values, kind, b), static_cast<size_t>(e - b), &part);
  });
  double best = 0.0;
  for (size_t c = 0; c < parts.size(); ++c) {
    const ExtremePart& p = parts[c];
    const int64_t begin = static_cast<int64_t>(c) * kChunk;
    if (p.nan_index >= 0) return LoadKind(kind, values, static_cast<size_t>(begin + p.nan_index));
    double x = p.best;
    if (p.mixed_zero) {  // the first zero of the chunk, by index
      const int64_t end = std::min(count, begin + kChunk);
      for (int64_t i = begin; i < end; ++i) {
        const double v = LoadKind(kind, values, static_cast<size_t>(i));
        if (v == 0.0) {
          x = v;
          break;
        }
      }
    }
    if (c == 0 || (kMax ? x > best : x < best)) best = x;
  }
  return best;
}

}  // namespace

void RegisterReduction(KernelTable& t) {
  t.Reduction_Sum = [](const void* v, int64_t n, DType dt) { return SumOrL1<false>(v, n, dt, Reference().Reduction_Sum); };
  t.Reduction_L1Norm = [](const void* v, int64_t n, DType dt) {
    return SumOrL1<true>(v, n, dt, Reference().Reduction_L1Norm);
  };
  t.Reduction_Prod = &Prod;
  t.Reduction_ReduceMin = [](const void* v, int64_t n, DType dt) {
    return Extreme<false>(v, n, dt, Reference().Reduction_ReduceMin);
  };
  t.Reduction_ReduceMax = [](const void* v, int64_t n, DType dt) {
    return Extreme<true>(v, n, dt, Reference().Reduction_ReduceMax);
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
