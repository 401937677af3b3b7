// Highway kernels of the TensorOps axis half: ArgReduce, CumSum and Trilu; GatherElements stays on
// the reference (scalar by design).
// - ArgReduce (f32, f64, i32): lanes over inner (one running best and index per column), or over
//   the axis when inner == 1 (lane-wise first/last extremes combined by index). NaN: the first NaN
//   wins, as the reference; the indices are exact, so the result equals the reference's.
// - CumSum (f32, f64 accumulated in f64 lanes; every integer width with wrapping lanes): lanes over
//   inner; each column's sum is the reference's sequential f64 sum, so results are bit-identical.
//   inner below one vector, f16/bf16 (round-to-odd narrowing) go to the reference.
// - Trilu (every byte-sized dtype): per row, a byte-lane copy masked to the kept columns.
// Bool, the other dtypes, and unusual calls (bad dtype, sizes, pointers, overflow) go to the
// reference, so errors are identical; the column tails run the reference's scalar rule.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/tensor_ops_axis.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_TENSOR_OPS_AXIS_SHARED_
#define BACKPLANE_CPU_KERNELS_TENSOR_OPS_AXIS_SHARED_
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace backplane::cpu::simd::tensor_axis_ops {
enum ArgType : int { kArgF32, kArgF64, kArgI32 };
enum SumType : int { kSumF32, kSumF64, kSumU8, kSumU16, kSumU32, kSumU64 };

// The reference's ArgReduce of one column (stride `inner`) of `axis` elements.
template <class T>
int64_t ArgColumn(const T* p, size_t axis, size_t inner, bool max, bool last) {
  T best = p[0];
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(best)) return 0;
  }
  int64_t index = 0;
  for (size_t k = 1; k < axis; ++k) {
    const T x = p[k * inner];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return static_cast<int64_t>(k);
    }
    if ((max ? x > best : x < best) || (last && x == best)) {
      best = x;
      index = static_cast<int64_t>(k);
    }
  }
  return index;
}
}  // namespace backplane::cpu::simd::tensor_axis_ops
#endif  // BACKPLANE_CPU_KERNELS_TENSOR_OPS_AXIS_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace tensor_axis_ops;  // NOLINT

// Whether x replaces best in a lane: strictly better, or equal under `kLast`; with floats a NaN x
// replaces any non-NaN best (`done` marks lanes already holding a NaN).
template <bool kMax, bool kLast, class D, class V, class M>
HWY_INLINE M Take(D d, V x, V best, M done) {
  M cmp;
  if constexpr (kMax) {
    cmp = kLast ? hn::Not(hn::Lt(x, best)) : hn::Gt(x, best);
  } else {
    cmp = kLast ? hn::Not(hn::Gt(x, best)) : hn::Lt(x, best);
  }
  if constexpr (hwy::IsFloat<hn::TFromD<D>>()) {
    return hn::AndNot(done, hn::Or(cmp, hn::IsNaN(x)));
  } else {
    (void)d;
    return cmp;
  }
}

// inner >= 1: lanes over the columns j of each [axis, inner] slab.
template <class T, bool kMax, bool kLast>
void ArgOverInner(const T* in, int64_t* out, size_t outer, size_t axis, size_t inner) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using I = hn::TFromD<decltype(di)>;
  const size_t n = hn::Lanes(d);
  HWY_ALIGN I idx[hn::MaxLanes(di)];
  for (size_t o = 0; o < outer; ++o) {
    const T* slab = in + o * axis * inner;
    int64_t* dst = out + o * inner;
    size_t j = 0;
    for (; j + n <= inner; j += n) {
      auto best = hn::LoadU(d, slab + j);
      auto index = hn::Zero(di);
      auto done = hn::FirstN(d, 0);
      if constexpr (hwy::IsFloat<T>()) done = hn::IsNaN(best);
      for (size_t k = 1; k < axis; ++k) {
        const auto x = hn::LoadU(d, slab + k * inner + j);
        const auto take = Take<kMax, kLast>(d, x, best, done);
        if constexpr (hwy::IsFloat<T>()) done = hn::Or(done, hn::IsNaN(x));
        best = hn::IfThenElse(take, x, best);
        index = hn::IfThenElse(hn::RebindMask(di, take), hn::Set(di, static_cast<I>(k)), index);
      }
      hn::Store(index, di, idx);
      for (size_t l = 0; l < n; ++l) dst[j + l] = idx[l];
    }
    for (; j < inner; ++j) dst[j] = ArgColumn(slab + j, axis, inner, kMax, kLast);
  }
}

// inner == 1: lanes over the axis of each row, combined by value and then by index.
template <class T, bool kMax, bool kLast>
void ArgOverAxis(const T* in, int64_t* out, size_t outer, size_t axis) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using I = hn::TFromD<decltype(di)>;
  const size_t n = hn::Lanes(d);
  HWY_ALIGN T vals[hn::MaxLanes(d)];
  HWY_ALIGN I idx[hn::MaxLanes(di)];
  for (size_t o = 0; o < outer; ++o) {
    const T* row = in + o * axis;
    if (axis < 2 * n) {
      out[o] = ArgColumn(row, axis, 1, kMax, kLast);
      continue;
    }
    auto best = hn::LoadU(d, row);
    auto index = hn::Iota(di, 0);
    auto nan = hn::FirstN(d, 0);
    if constexpr (hwy::IsFloat<T>()) nan = hn::IsNaN(best);
    size_t k = n;
    for (; k + n <= axis; k += n) {
      const auto x = hn::LoadU(d, row + k);
      const auto take = Take<kMax, kLast>(d, x, best, hn::FirstN(d, 0));
      if constexpr (hwy::IsFloat<T>()) nan = hn::Or(nan, hn::IsNaN(x));
      best = hn::IfThenElse(take, x, best);
      index = hn::IfThenElse(hn::RebindMask(di, take), hn::Iota(di, static_cast<I>(k)), index);
    }
    if (!hn::AllFalse(d, nan)) {  // the first NaN lies in [0, k)
      size_t first = 0;
      while (!std::isnan(static_cast<double>(row[first]))) ++first;
      out[o] = static_cast<int64_t>(first);
      continue;
    }
    hn::Store(best, d, vals);
    hn::Store(index, di, idx);
    T b = vals[0];
    int64_t bi = idx[0];
    for (size_t l = 1; l < n; ++l) {
      const bool better = kMax ? vals[l] > b : vals[l] < b;
      if (better || (vals[l] == b && (kLast ? idx[l] > bi : idx[l] < bi))) {
        b = vals[l];
        bi = idx[l];
      }
    }
    for (; k < axis; ++k) {  // the tail continues the reference's scan
      const T x = row[k];
      if constexpr (hwy::IsFloat<T>()) {
        if (std::isnan(x)) {
          bi = static_cast<int64_t>(k);
          break;
        }
      }
      if ((kMax ? x > b : x < b) || (kLast && x == b)) {
        b = x;
        bi = static_cast<int64_t>(k);
      }
    }
    out[o] = bi;
  }
}

template <class T, bool kMax, bool kLast>
void ArgT(const void* in, int64_t* out, size_t outer, size_t axis, size_t inner) {
  if (inner == 1) {
    ArgOverAxis<T, kMax, kLast>(static_cast<const T*>(in), out, outer, axis);
  } else {
    ArgOverInner<T, kMax, kLast>(static_cast<const T*>(in), out, outer, axis, inner);
  }
}

template <class T>
void ArgByFlags(bool max, bool last, const void* in, int64_t* out, size_t outer, size_t axis, size_t inner) {
  if (max) {
    last ? ArgT<T, true, true>(in, out, outer, axis, inner) : ArgT<T, true, false>(in, out, outer, axis, inner);
  } else {
    last ? ArgT<T, false, true>(in, out, outer, axis, inner) : ArgT<T, false, false>(in, out, outer, axis, inner);
  }
}

// ---- CumSum -----------------------------------------------------------------------------------------

// Lanes over inner, whole vectors only (the caller runs the tail columns on the reference).
// Floats: T is the storage (f32 or f64), sums in f64 lanes starting from -0.0 (the identity);
// integers: T is the unsigned type of the width, sums wrap.
template <class T>
void SumOverInner(const T* in, T* out, size_t outer, size_t axis, size_t inner, bool exclusive, bool reverse) {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const hn::ScalableTag<A> da;
  const hn::Rebind<T, decltype(da)> dt;
  const size_t n = hn::Lanes(da);
  const size_t columns = inner / n * n;
  for (size_t o = 0; o < outer; ++o) {
    const T* slab = in + o * axis * inner;
    T* dst = out + o * axis * inner;
    for (size_t j = 0; j < columns; j += n) {
      auto acc = std::is_floating_point_v<T> ? hn::Set(da, A(-0.0)) : hn::Zero(da);
      for (size_t s = 0; s < axis; ++s) {
        const size_t at = (reverse ? axis - 1 - s : s) * inner + j;
        hn::Vec<decltype(da)> x;
        if constexpr (std::is_same_v<T, float>) {
          x = hn::PromoteTo(da, hn::LoadU(dt, slab + at));
        } else {
          x = hn::LoadU(da, slab + at);
        }
        const auto before = s == 0 ? hn::Zero(da) : acc;
        acc = hn::Add(acc, x);
        const auto value = exclusive ? before : acc;
        if constexpr (std::is_same_v<T, float>) {
          hn::StoreU(DemoteF32(dt, value), dt, dst + at);  // NaN and Inf kept on every target
        } else {
          hn::StoreU(value, da, dst + at);
        }
      }
    }
  }
}

// ---- Trilu ------------------------------------------------------------------------------------------

// Rows of `cols` elements of `bytes` bytes; row r of every matrix keeps columns [lo, hi).
void TriluRows(bool upper, int64_t k, const uint8_t* in, uint8_t* out, size_t batch, size_t rows, size_t cols,
               size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t n = hn::Lanes(d);
  const size_t rowBytes = cols * bytes;
  const auto clampCol = [&](int64_t c) {
    return c < 0 ? size_t{0} : std::min(static_cast<size_t>(c), cols);
  };
  // j - i lies in (-rows, cols): clamping k keeps every comparison and keeps i + k in range.
  const int64_t lim = static_cast<int64_t>(rows + cols) + 1;
  const int64_t kc = k < -lim ? -lim : k > lim ? lim : k;
  for (size_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < rows; ++i) {
      const size_t row = (b * rows + i) * rowBytes;
      const auto ii = static_cast<int64_t>(i);
      const size_t lo = (upper ? clampCol(ii + kc) : 0) * bytes;
      const size_t hi = (upper ? cols : clampCol(ii + kc + 1)) * bytes;
      // FirstN's count must stay within the lanes (it is compared in the lane type).
      const auto firstN = [&](size_t bound, size_t p) {
        return hn::FirstN(d, bound <= p ? 0 : std::min(bound - p, n));
      };
      size_t p = 0;
      for (; p + n <= rowBytes; p += n) {
        const auto keep = hn::AndNot(firstN(lo, p), firstN(hi, p));
        hn::StoreU(hn::IfThenElseZero(keep, hn::LoadU(d, in + row + p)), d, out + row + p);
      }
      for (; p < rowBytes; ++p) out[row + p] = p >= lo && p < hi ? in[row + p] : uint8_t{0};
    }
  }
}

}  // namespace

void TensorAxisArg(int type, bool max, bool last, const void* in, int64_t* out, size_t outer, size_t axis,
                   size_t inner) {
  switch (type) {
    case kArgF32: ArgByFlags<float>(max, last, in, out, outer, axis, inner); return;
    case kArgF64: ArgByFlags<double>(max, last, in, out, outer, axis, inner); return;
    default: ArgByFlags<int32_t>(max, last, in, out, outer, axis, inner); return;
  }
}

void TensorAxisSum(int type, bool exclusive, bool reverse, const void* in, void* out, size_t outer, size_t axis,
                   size_t inner) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    SumOverInner<T>(static_cast<const T*>(in), static_cast<T*>(out), outer, axis, inner, exclusive, reverse);
  };
  switch (type) {
    case kSumF32: run(float{}); return;
    case kSumF64: run(double{}); return;
    case kSumU8: run(uint8_t{}); return;
    case kSumU16: run(uint16_t{}); return;
    case kSumU32: run(uint32_t{}); return;
    default: run(uint64_t{}); return;
  }
}

size_t TensorAxisSumLanes(int type) {
  switch (type) {
    case kSumF32:
    case kSumF64: return hn::Lanes(hn::ScalableTag<double>());
    case kSumU8: return hn::Lanes(hn::ScalableTag<uint8_t>());
    case kSumU16: return hn::Lanes(hn::ScalableTag<uint16_t>());
    case kSumU32: return hn::Lanes(hn::ScalableTag<uint32_t>());
    default: return hn::Lanes(hn::ScalableTag<uint64_t>());
  }
}

void TensorAxisTrilu(bool upper, int64_t k, const uint8_t* in, uint8_t* out, size_t batch, size_t rows,
                     size_t cols, size_t bytes) {
  TriluRows(upper, k, in, out, batch, rows, cols, bytes);
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "backplane/backend/tensor_ops.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(TensorAxisArg);
HWY_EXPORT(TensorAxisSum);
HWY_EXPORT(TensorAxisSumLanes);
HWY_EXPORT(TensorAxisTrilu);

namespace {
using namespace tensor_axis_ops;  // NOLINT

// The element count a * b * c when every size is positive and the count and its size in bits fit
// in int64; -1 otherwise (the reference then decides, zero sizes included).
int64_t UsualCount(int64_t a, int64_t b, int64_t c, int bits) {
  int64_t ab = 0, abc = 0, total = 0;
  if (a <= 0 || b <= 0 || c <= 0) return -1;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) ||
      __builtin_mul_overflow(abc, int64_t{bits}, &total)) {
    return -1;
  }
  return abc;
}

// Outer slabs per thread chunk: at least ~64K elements of work each.
int64_t Grain(int64_t perOuter) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(perOuter, 1)); }

void ArgReduce(const ArgReduceConfig& config, const void* in, int64_t* out, int64_t outer, int64_t axis,
               int64_t inner, DType dtype) {
  const int type = dtype == DType::Float32   ? kArgF32
                   : dtype == DType::Float64 ? kArgF64
                   : dtype == DType::Int32   ? kArgI32
                                             : -1;
  const int64_t count = type < 0 ? -1 : UsualCount(outer, axis, inner, DTypeBits(dtype));
  // Lane indices are of the element width: i32 lanes hold axis positions below 2^31.
  if (count < 0 || in == nullptr || out == nullptr || axis > int64_t{INT32_MAX}) {
    return Reference().TensorOps_ArgReduce(config, in, out, outer, axis, inner, dtype);
  }
  const size_t bytes = static_cast<size_t>(DTypeBits(dtype) / 8);
  ParallelFor(outer, Grain(axis * inner), [&](int64_t b, int64_t e) {
    const uint8_t* slab = static_cast<const uint8_t*>(in) + static_cast<size_t>(b * axis * inner) * bytes;
    HWY_DYNAMIC_DISPATCH(TensorAxisArg)(type, config.Max, config.SelectLast, slab, out + b * inner,
                                        static_cast<size_t>(e - b), static_cast<size_t>(axis),
                                        static_cast<size_t>(inner));
  });
}

int SumType(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kSumF32;
    case DType::Float64: return kSumF64;
    case DType::Int8:
    case DType::Uint8: return kSumU8;
    case DType::Int16:
    case DType::Uint16: return kSumU16;
    case DType::Int32:
    case DType::Uint32: return kSumU32;
    case DType::Int64:
    case DType::Uint64: return kSumU64;
    default: return -1;
  }
}

void CumSum(const CumSumConfig& config, const void* in, void* out, int64_t outer, int64_t axis, int64_t inner,
            DType dtype) {
  const int type = SumType(dtype);
  const int64_t count = type < 0 ? -1 : UsualCount(outer, axis, inner, DTypeBits(dtype));
  const auto lanes = type < 0 ? 0 : static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(TensorAxisSumLanes)(type));
  // inner below one vector (a sequential scan per row): the reference.
  if (count < 0 || in == nullptr || out == nullptr || inner < lanes) {
    return Reference().TensorOps_CumSum(config, in, out, outer, axis, inner, dtype);
  }
  const size_t bytes = static_cast<size_t>(DTypeBits(dtype) / 8);
  ParallelFor(outer, Grain(axis * inner), [&](int64_t b, int64_t e) {
    const size_t at = static_cast<size_t>(b * axis * inner) * bytes;
    HWY_DYNAMIC_DISPATCH(TensorAxisSum)(type, config.Exclusive, config.Reverse, static_cast<const uint8_t*>(in) + at,
                                        static_cast<uint8_t*>(out) + at, static_cast<size_t>(e - b),
                                        static_cast<size_t>(axis), static_cast<size_t>(inner));
  });
  const int64_t tail = inner % lanes;
  if (tail == 0) return;
  // The tail columns: the reference on a gathered [outer * axis, tail] copy (no reduction order
  // changes: each column is summed on its own).
  std::vector<uint8_t> src(static_cast<size_t>(outer * axis * tail) * bytes), dst(src.size());
  const size_t run = static_cast<size_t>(tail) * bytes;
  for (int64_t r = 0; r < outer * axis; ++r) {
    std::memcpy(src.data() + static_cast<size_t>(r) * run,
                static_cast<const uint8_t*>(in) + static_cast<size_t>(r * inner + inner - tail) * bytes, run);
  }
  Reference().TensorOps_CumSum(config, src.data(), dst.data(), outer, axis, tail, dtype);
  for (int64_t r = 0; r < outer * axis; ++r) {
    std::memcpy(static_cast<uint8_t*>(out) + static_cast<size_t>(r * inner + inner - tail) * bytes,
                dst.data() + static_cast<size_t>(r) * run, run);
  }
}

void Trilu(const TriluConfig& config, const void* in, void* out, int64_t batch, int64_t rows, int64_t cols,
           DType dtype) {
  const bool byteSized = static_cast<unsigned>(dtype) < kDTypeCount && kTensorDTypes.Contains(dtype);
  const int64_t count = byteSized ? UsualCount(batch, rows, cols, DTypeBits(dtype)) : -1;
  if (count < 0 || in == nullptr || out == nullptr) {
    return Reference().TensorOps_Trilu(config, in, out, batch, rows, cols, dtype);
  }
  ParallelFor(batch, Grain(rows * cols), [&](int64_t b, int64_t e) {
    const size_t bytes = static_cast<size_t>(DTypeBits(dtype) / 8);
    const size_t at = static_cast<size_t>(b * rows * cols) * bytes;
    HWY_DYNAMIC_DISPATCH(TensorAxisTrilu)(config.Upper, config.K, static_cast<const uint8_t*>(in) + at,
                                          static_cast<uint8_t*>(out) + at, static_cast<size_t>(e - b),
                                          static_cast<size_t>(rows), static_cast<size_t>(cols), bytes);
  });
}

}  // namespace

void RegisterTensorOpsAxis(KernelTable& table) {
  table.TensorOps_ArgReduce = &ArgReduce;
  table.TensorOps_CumSum = &CumSum;
  table.TensorOps_Trilu = &Trilu;
  table.ScalarByDesign(catalog::MethodId::TensorOps_GatherElements,
                       "index-chasing gather: one indexed load per element, no contiguous run to vectorise");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
