// Highway kernel of the TensorOps index part: TopK; ScatterElements, ScatterND and GatherND stay on
// the reference (scalar by design, reasons below).
// - TopK (f32, f64, i32; k <= 16; inner of at least one vector): lanes over the columns j of each
//   [axis, inner] slab, each lane keeping its k best (value, index) pairs sorted by an insertion
//   network. The order is the reference's total order (NaN above every number, equal values by
//   lower index), so values and indices equal the reference's. Column tails and every other call
//   (other dtypes, larger k, bad arguments) go to the reference, so errors are identical.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/tensor_ops_index.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#ifndef BACKPLANE_CPU_KERNELS_TENSOR_OPS_INDEX_SHARED_
#define BACKPLANE_CPU_KERNELS_TENSOR_OPS_INDEX_SHARED_
#include <cstddef>
#include <cstdint>

namespace backplane::cpu::simd::tensor_index_ops {
enum TopKType : int { kTopKF32, kTopKF64, kTopKI32 };
constexpr size_t kMaxK = 16;
}  // namespace backplane::cpu::simd::tensor_index_ops
#endif  // BACKPLANE_CPU_KERNELS_TENSOR_OPS_INDEX_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace tensor_index_ops;  // NOLINT

// Lanes where (x, ix) comes before (y, iy): a strictly better value (NaN above every number), or
// an equal one (NaN equals NaN) at a lower index.
template <bool kLargest, class D, class DI, class V, class VI>
HWY_INLINE auto Before(D d, DI di, V x, VI ix, V y, VI iy) {
  auto better = kLargest ? hn::Gt(x, y) : hn::Lt(x, y);
  auto equal = hn::Eq(x, y);
  if constexpr (hwy::IsFloat<hn::TFromD<D>>()) {
    const auto nx = hn::IsNaN(x), ny = hn::IsNaN(y);
    better = kLargest ? hn::Or(better, hn::AndNot(ny, nx)) : hn::Or(better, hn::AndNot(nx, ny));
    equal = hn::Or(equal, hn::And(nx, ny));
  } else {
    (void)d;
  }
  (void)di;
  return hn::Or(better, hn::And(equal, hn::RebindMask(d, hn::Lt(ix, iy))));
}

template <class T, bool kLargest>
void TopKOverInner(const T* in, T* values, int64_t* indices, size_t outer, size_t axis, size_t inner, size_t k) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using I = hn::TFromD<decltype(di)>;
  using V = hn::Vec<decltype(d)>;
  using VI = hn::Vec<decltype(di)>;
  const size_t n = hn::Lanes(d);
  // The k slots live in memory: arrays of (sizeless SVE) vectors are not allowed.
  HWY_ALIGN T slotV[kMaxK * hn::MaxLanes(d)];
  HWY_ALIGN I slotI[kMaxK * hn::MaxLanes(di)];
  for (size_t o = 0; o < outer; ++o) {
    const T* slab = in + o * axis * inner;
    for (size_t j = 0; j + n <= inner; j += n) {
      for (size_t a = 0; a < axis; ++a) {
        V cv = hn::LoadU(d, slab + a * inner + j);
        VI ci = hn::Set(di, static_cast<I>(a));
        const size_t filled = a < k ? a : k;
        for (size_t s = 0; s < filled; ++s) {
          const V sv = hn::Load(d, slotV + s * n);
          const VI si = hn::Load(di, slotI + s * n);
          const auto m = Before<kLargest>(d, di, cv, ci, sv, si);
          hn::Store(hn::IfThenElse(m, cv, sv), d, slotV + s * n);
          hn::Store(hn::IfThenElse(hn::RebindMask(di, m), ci, si), di, slotI + s * n);
          cv = hn::IfThenElse(m, sv, cv);
          ci = hn::IfThenElse(hn::RebindMask(di, m), si, ci);
        }
        if (filled < k) {
          hn::Store(cv, d, slotV + filled * n);
          hn::Store(ci, di, slotI + filled * n);
        }
      }
      for (size_t m = 0; m < k; ++m) {
        const size_t at = (o * k + m) * inner + j;
        hn::StoreU(hn::Load(d, slotV + m * n), d, values + at);
        for (size_t l = 0; l < n; ++l) indices[at + l] = static_cast<int64_t>(slotI[m * n + l]);
      }
    }
  }
}

template <class T>
void TopKTyped(bool largest, const void* in, void* values, int64_t* indices, size_t outer, size_t axis, size_t inner,
               size_t k) {
  const T* x = static_cast<const T*>(in);
  T* v = static_cast<T*>(values);
  if (largest) {
    TopKOverInner<T, true>(x, v, indices, outer, axis, inner, k);
  } else {
    TopKOverInner<T, false>(x, v, indices, outer, axis, inner, k);
  }
}

}  // namespace

// The lanes of one vector of the type on this target (the column block of TensorIndexTopK).
size_t TensorIndexTopKLanes(int type) {
  switch (type) {
    case kTopKF32: return hn::Lanes(hn::ScalableTag<float>());
    case kTopKF64: return hn::Lanes(hn::ScalableTag<double>());
    default: return hn::Lanes(hn::ScalableTag<int32_t>());
  }
}

void TensorIndexTopK(int type, bool largest, const void* in, void* values, int64_t* indices, size_t outer,
                     size_t axis, size_t inner, size_t k) {
  switch (type) {
    case kTopKF32: TopKTyped<float>(largest, in, values, indices, outer, axis, inner, k); return;
    case kTopKF64: TopKTyped<double>(largest, in, values, indices, outer, axis, inner, k); return;
    default: TopKTyped<int32_t>(largest, in, values, indices, outer, axis, inner, k); return;
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cstring>
#include <vector>

#include "backplane/backend/tensor_ops.hpp"
#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(TensorIndexTopK);
HWY_EXPORT(TensorIndexTopKLanes);

namespace {
using namespace tensor_index_ops;  // NOLINT

void TopK(const TopKConfig& config, const void* in, void* values, int64_t* indices, int64_t outer, int64_t axis,
          int64_t inner, int64_t k, DType dtype) {
  const int type = dtype == DType::Float32   ? kTopKF32
                   : dtype == DType::Float64 ? kTopKF64
                   : dtype == DType::Int32   ? kTopKI32
                                             : -1;
  int64_t count = 0, bits = 0;
  const bool usual = type >= 0 && outer > 0 && axis > 0 && inner > 0 && k > 0 && k <= axis &&
                     k <= static_cast<int64_t>(kMaxK) && axis <= int64_t{INT32_MAX} &&
                     !__builtin_mul_overflow(outer, axis, &count) && !__builtin_mul_overflow(count, inner, &count) &&
                     !__builtin_mul_overflow(count, int64_t{64}, &bits) && in != nullptr && values != nullptr &&
                     indices != nullptr;
  const auto lanes = usual ? static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(TensorIndexTopKLanes)(type)) : 0;
  if (!usual || inner < lanes) {
    return Reference().TensorOps_TopK(config, in, values, indices, outer, axis, inner, k, dtype);
  }
  const size_t bytes = static_cast<size_t>(DTypeBits(dtype) / 8);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(axis * inner, 1));
  ParallelFor(outer, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(TensorIndexTopK)(
        type, config.Largest, static_cast<const uint8_t*>(in) + static_cast<size_t>(b * axis * inner) * bytes,
        static_cast<uint8_t*>(values) + static_cast<size_t>(b * k * inner) * bytes, indices + b * k * inner,
        static_cast<size_t>(e - b), static_cast<size_t>(axis), static_cast<size_t>(inner), static_cast<size_t>(k));
  });
  // The columns past the last full vector: the reference on each [axis] column, copied in and out.
  std::vector<uint8_t> col(static_cast<size_t>(axis) * bytes), vals(static_cast<size_t>(k) * bytes);
  std::vector<int64_t> idx(static_cast<size_t>(k));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = inner - inner % lanes; j < inner; ++j) {
      for (int64_t a = 0; a < axis; ++a) {
        std::memcpy(col.data() + static_cast<size_t>(a) * bytes,
                    static_cast<const uint8_t*>(in) + static_cast<size_t>((o * axis + a) * inner + j) * bytes, bytes);
      }
      Reference().TensorOps_TopK(config, col.data(), vals.data(), idx.data(), 1, axis, 1, k, dtype);
      for (int64_t m = 0; m < k; ++m) {
        const int64_t at = (o * k + m) * inner + j;
        std::memcpy(static_cast<uint8_t*>(values) + static_cast<size_t>(at) * bytes,
                    vals.data() + static_cast<size_t>(m) * bytes, bytes);
        indices[at] = idx[static_cast<size_t>(m)];
      }
    }
  }
}

}  // namespace

void RegisterTensorOpsIndex(KernelTable& table) {
  table.TensorOps_TopK = &TopK;
  table.ScalarByDesign(catalog::MethodId::TensorOps_ScatterElements,
                       "index-chasing scatter: one indexed read-modify-write per element, applied in order "
                       "(duplicate indices serialise)");
  table.ScalarByDesign(catalog::MethodId::TensorOps_ScatterND,
                       "index-chasing scatter of slices: memcpy-sized runs applied in index order");
  table.ScalarByDesign(catalog::MethodId::TensorOps_GatherND,
                       "index-chasing gather of slices: one memcpy per index tuple, no lane-parallel work");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
