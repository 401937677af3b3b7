// CUDA kernels for TensorOps ArgReduce, CumSum, GatherElements, TopK, ScatterElements, ScatterND
// and GatherND, the Sampling surface (GreedySample, TopKSample, TopPSample) and the Masking
// surface (ApplyMask, CausalMask, ALiBiBias). Semantics: the CPU scalar reference
// (src/cpu/reference/tensor_ops_axis.cpp, tensor_ops_index.cpp, sampling.cpp, masking.cpp) and
// docs/semantics/{tensor_ops,sampling,masking}.md: the same argument checks in the same order with
// the same messages, all before anything is written.
//
// Bit-level agreement with the reference (compiled for x86-64):
// - f16/bf16 are widened and narrowed with ports of src/core/convert.cpp, f32 <-> f64 as x86's
//   cvtss2sd / cvtsd2ss (NaN payloads kept, quiet bit set).
// - Float additions and multiplications whose result is stored (CumSum, the scatter reductions,
//   ApplyMask) follow x86 SSE NaN rules: a NaN left operand is returned (quieted), else a NaN
//   right operand, and an invalid operation (Inf - Inf, 0 * Inf) gives the default NaN (sign set).
//   Every such operation uses the explicit round-to-nearest intrinsics, so nothing is contracted.
// - Order-dependent results are computed in the reference's order:
//   * CumSum: one thread per [outer, inner] column, the running sum kept in f64 (integers in
//     wrapping uint64) along the axis in index order, exactly as the reference.
//   * ScatterElements / ScatterND: the updates hitting one output element are applied by one
//     thread in the reference's order (row-major update order; ScatterND: index-tuple order), each
//     rounded to storage after every update. Two strategies, same result: when the sequence per
//     column is short or there are many columns, one thread per column ((o, j), or the slice
//     position s for ScatterND) walks the updates in order; otherwise the updates are stably
//     radix-sorted by target (CUB, stable), and the first thread of each run of equal targets
//     applies the run in order (parallel over distinct targets).
//   * TopK: a stable radix sort of order-preserving keys (NaN above every number, -0 == +0),
//     descending for Largest, then a stable sort by column: ties keep the lower index first, as
//     the reference's total order.
//   * Sampling: softmax in f64 (the sum of the exponentials sequential in index order, one block
//     staging chunks in shared memory, one thread adding, as the reference's loop), a stable
//     descending radix sort of the probabilities (equal p keep ascending index, as
//     std::stable_sort), then the nucleus / kept total and the cumulative walk sequential in sorted
//     order (the prefix sums are stored and the first one > target found by binary search; they
//     are non-decreasing). The uniform draw u = PhiloxUniformDouble(Seed, 0, 0) is computed with
//     include/backplane/random.hpp's constexpr function on the host (pure integer arithmetic and
//     an exact scaling, so it is the reference's value bit for bit) and passed to the kernel.
//     exp() is CUDA's f64 exp (within 1 ulp; glibc's is also within 1 ulp): p can differ from the
//     reference's in the last bit, which only changes a draw whose target falls within an ulp of
//     a cumulative boundary.
//   * ALiBiBias: one fma in the compute type (IEEE fused multiply-add, as std::fma).
// - Data-dependent index checks run on the device (first bad position by atomicMin), are read
//   back and thrown with the reference's message before anything is written. ALiBiBias's slope is
//   one element of device memory: it is copied to the host and checked there, as the reference.
// Geometry arrays (ScatterND / GatherND `dims`) are host memory; what a kernel needs of them is
// copied to device scratch.

#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "backplane/backend/masking.hpp"
#include "backplane/backend/sampling.hpp"
#include "backplane/backend/tensor_ops.hpp"
#include "backplane/convert.hpp"
#include "backplane/random.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/convert.cuh"
#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

namespace backplane::cuda {

void RegisterTensorIndex(KernelTable& table);

namespace {

// Copies `bytes` of device memory to the host after the stream's work (synchronising).
void ReadBack(std::string_view op, void* host, const void* device, size_t bytes) {
  CopyAsync(host, device, bytes);
  FinishMethod(op);
}

// The number of bits needed for values in [0, maxValue] (at least 1).
int BitWidth(uint64_t maxValue) {
  int bits = 1;
  while (bits < 64 && (maxValue >> bits) != 0) ++bits;
  return bits;
}

// A stable CUB radix sort of (key, value) pairs on bits [0, endBit) of the keys.
template <bool kDescending, class K, class V>
void RadixSortPairs(const K* keysIn, K* keysOut, const V* valuesIn, V* valuesOut, int64_t n,
                    int endBit) {
  const auto items = static_cast<long long>(n);
  size_t bytes = 0;
  if constexpr (kDescending) {
    CheckCuda(static_cast<int>(cub::DeviceRadixSort::SortPairsDescending(
                  nullptr, bytes, keysIn, keysOut, valuesIn, valuesOut, items, 0, endBit, Stream())),
              "cub::DeviceRadixSort::SortPairsDescending");
  } else {
    CheckCuda(static_cast<int>(cub::DeviceRadixSort::SortPairs(
                  nullptr, bytes, keysIn, keysOut, valuesIn, valuesOut, items, 0, endBit, Stream())),
              "cub::DeviceRadixSort::SortPairs");
  }
  DeviceScratch temp(bytes);
  if constexpr (kDescending) {
    CheckCuda(static_cast<int>(cub::DeviceRadixSort::SortPairsDescending(
                  temp.Get(), bytes, keysIn, keysOut, valuesIn, valuesOut, items, 0, endBit,
                  Stream())),
              "cub::DeviceRadixSort::SortPairsDescending");
  } else {
    CheckCuda(static_cast<int>(cub::DeviceRadixSort::SortPairs(temp.Get(), bytes, keysIn, keysOut,
                                                               valuesIn, valuesOut, items, 0,
                                                               endBit, Stream())),
              "cub::DeviceRadixSort::SortPairs");
  }
  temp.Release();  // stream-ordered: freed after the sort
}

// Two key and two id buffers of n 8-byte entries each (256-byte aligned), for a sort that
// ping-pongs between them.
struct SortBuffers {
  explicit SortBuffers(int64_t n) : stride((static_cast<size_t>(n) * 8 + 255) / 256 * 256), scratch(4 * stride) {
    for (size_t b = 0; b < 2; ++b) {
      keys[b] = scratch.At<unsigned long long>(b * stride);
      ids[b] = scratch.At<long long>((2 + b) * stride);
    }
  }
  size_t stride;
  DeviceScratch scratch;
  unsigned long long* keys[2] = {nullptr, nullptr};
  long long* ids[2] = {nullptr, nullptr};
};

constexpr unsigned long long kNoPosition = ~0ULL;

// ---- x86 SSE arithmetic (NaN propagation as the reference's host code) ---------------------------

__device__ __forceinline__ float Quiet(float a) { return __uint_as_float(__float_as_uint(a) | kF32QuietBit); }
__device__ __forceinline__ double Quiet(double a) {
  return __longlong_as_double(__double_as_longlong(a) | 0x0008000000000000LL);
}
template <class V>
__device__ __forceinline__ V DefaultNaN();
template <>
__device__ __forceinline__ float DefaultNaN<float>() {
  return __uint_as_float(0xFFC00000u);
}
template <>
__device__ __forceinline__ double DefaultNaN<double>() {
  return __longlong_as_double(static_cast<long long>(0xFFF8000000000000ULL));
}

__device__ __forceinline__ float RawAdd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double RawAdd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float RawMul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double RawMul(double a, double b) { return __dmul_rn(a, b); }

// a + b as addss/addsd with a as the first source operand.
template <class V>
__device__ __forceinline__ V X86Add(V a, V b) {
  if (isnan(a)) return Quiet(a);
  if (isnan(b)) return Quiet(b);
  const V r = RawAdd(a, b);
  return isnan(r) ? DefaultNaN<V>() : r;
}

template <class V>
__device__ __forceinline__ V X86Mul(V a, V b) {
  if (isnan(a)) return Quiet(a);
  if (isnan(b)) return Quiet(b);
  const V r = RawMul(a, b);
  return isnan(r) ? DefaultNaN<V>() : r;
}

// ---- Element access over every real dtype --------------------------------------------------------

struct F16Tag {};
struct BF16Tag {};

// Storage type S read and written in its compute type Value (float for f16/bf16, S otherwise:
// integers stay exact), as the reference's elem::Elem.
template <class S>
struct DElem {
  using Storage = S;
  using Value = S;
  static constexpr bool kFloat = std::is_floating_point_v<S>;
  __device__ static Value FromBits(Storage s) { return s; }
  __device__ static Storage ToBits(Value v) { return v; }
};
template <>
struct DElem<F16Tag> {
  using Storage = uint16_t;
  using Value = float;
  static constexpr bool kFloat = true;
  __device__ static Value FromBits(Storage s) { return F16ToF32(s); }
  __device__ static Storage ToBits(Value v) { return F32ToF16(v); }
};
template <>
struct DElem<BF16Tag> {
  using Storage = uint16_t;
  using Value = float;
  static constexpr bool kFloat = true;
  __device__ static Value FromBits(Storage s) { return BF16ToF32(s); }
  __device__ static Storage ToBits(Value v) { return F32ToBF16(v); }
};

template <class E>
__device__ __forceinline__ typename E::Value Get(const void* p, int64_t i) {
  return E::FromBits(static_cast<const typename E::Storage*>(p)[i]);
}
template <class E>
__device__ __forceinline__ void Put(void* p, int64_t i, typename E::Value v) {
  static_cast<typename E::Storage*>(p)[i] = E::ToBits(v);
}

// The reference's Load<double> of a float element (exact; NaN as x86 widens it).
template <class E>
__device__ __forceinline__ double LoadF64(const void* p, int64_t i) {
  const typename E::Value v = Get<E>(p, i);
  if constexpr (std::is_same_v<typename E::Value, double>) {
    return v;
  } else {
    return F32ToF64(v);
  }
}

// The reference's StoreResult: one rounding from a double into the storage format (f16/bf16
// through round-to-odd f32).
template <class E>
__device__ __forceinline__ void StoreF64(void* p, int64_t i, double v) {
  using S = typename E::Storage;
  if constexpr (std::is_same_v<S, double>) {
    static_cast<double*>(p)[i] = v;
  } else if constexpr (std::is_same_v<S, float>) {
    static_cast<float*>(p)[i] = F64ToF32(v);
  } else {
    static_cast<S*>(p)[i] = E::ToBits(RoundToOddF32(v));
  }
}

// Calls fn(DElem<...>{}) for a real dtype (the caller has checked it).
template <class Fn>
void ByElem(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: fn(DElem<double>{}); return;
    case DType::Float32: fn(DElem<float>{}); return;
    case DType::Float16: fn(DElem<F16Tag>{}); return;
    case DType::BFloat16: fn(DElem<BF16Tag>{}); return;
    case DType::Int64: fn(DElem<long long>{}); return;
    case DType::Int32: fn(DElem<int>{}); return;
    case DType::Int16: fn(DElem<short>{}); return;
    case DType::Int8: fn(DElem<signed char>{}); return;
    case DType::Uint64: fn(DElem<unsigned long long>{}); return;
    case DType::Uint32: fn(DElem<unsigned int>{}); return;
    case DType::Uint16: fn(DElem<unsigned short>{}); return;
    case DType::Uint8: fn(DElem<unsigned char>{}); return;
    default: break;
  }
  throw Error(ErrorCode::Internal, "cuda.TensorIndex", "ByElem: not a real dtype");
}

// Calls fn(DElem<...>{}) for a float dtype; UnsupportedDType naming `arg` otherwise.
template <class Fn>
void ByFloatElem(std::string_view op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: fn(DElem<double>{}); return;
    case DType::Float32: fn(DElem<float>{}); return;
    case DType::Float16: fn(DElem<F16Tag>{}); return;
    case DType::BFloat16: fn(DElem<BF16Tag>{}); return;
    default: ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
}

// An unsigned word of `bytes` bytes: elements copied bit for bit.
template <class Fn>
void ByWord(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: fn(static_cast<unsigned char>(0)); return;
    case 2: fn(static_cast<unsigned short>(0)); return;
    case 4: fn(0u); return;
    default: fn(0ULL); return;
  }
}

// ---- Validation helpers (the references', same messages) -----------------------------------------

void CheckTensorDType(std::string_view op, DType dtype, DTypeSet accepted) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kDTypeCount) || !accepted.Contains(dtype)) {
    ThrowUnsupportedDType(op, "dtype", dtype, accepted);
  }
}

void CheckSizes(std::string_view op, std::initializer_list<std::pair<std::string_view, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) CheckNonNegative(op, name, value);
}

// tensor_ops_axis.cpp's CountOf: a * b * c, InvalidArgument naming `arg` on overflow.
int64_t CountOf3(std::string_view op, std::string_view arg, int64_t a, int64_t b, int64_t c, DType dtype) {
  if (a == 0 || b == 0 || c == 0) return 0;
  int64_t ab = 0, abc = 0, bits = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) ||
      __builtin_mul_overflow(abc, int64_t{DTypeBits(dtype)}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         Format("{} * {} * {}", a, b, c));
  }
  return abc;
}

// tensor_ops_index.cpp's CountOf.
int64_t CountOf(std::string_view op, std::string_view arg, std::initializer_list<int64_t> sizes, DType dtype) {
  int64_t n = 1;
  for (const int64_t s : sizes) {
    if (s == 0) return 0;
  }
  for (const int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n)) n = -1;
    if (n < 0) break;
  }
  int64_t bits = 0;
  if (n < 0 || __builtin_mul_overflow(n, int64_t{DTypeBits(dtype)}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64", "an overflowing count");
  }
  return n;
}

void CheckReduction(std::string_view op, ScatterReduction r) {
  if (r != ScatterReduction::None && r != ScatterReduction::Add && r != ScatterReduction::Mul) {
    ThrowInvalidArgument(op, "config.Reduction", "None, Add or Mul", Format("{}", static_cast<int32_t>(r)));
  }
}

// tensor_ops_index.cpp's NDSizes: {element count of dims, slice = product of dims[depth..rank)}.
std::pair<int64_t, int64_t> NDSizes(std::string_view op, const int64_t* dims, int64_t rank, int64_t depth,
                                    DType dtype) {
  CheckNonNegative(op, "rank", rank);
  CheckPointer(op, "dims", dims, rank);
  for (int64_t d = 0; d < rank; ++d) CheckNonNegative(op, "dims", dims[d]);
  if (depth < 0 || depth > rank) {
    ThrowInvalidArgument(op, "depth", Format("in [0, {}] (the rank)", rank), Format("{}", depth));
  }
  int64_t total = 1, slice = 1;
  bool zero = false;
  for (int64_t d = 0; d < rank; ++d) {
    zero = zero || dims[d] == 0;
    if (!zero && __builtin_mul_overflow(total, dims[d], &total)) {
      ThrowInvalidArgument(op, "dims", "small enough for the element count to fit in int64", "an overflowing count");
    }
  }
  if (zero) total = 0;
  for (int64_t d = depth; d < rank && slice > 0; ++d) {
    if (dims[d] == 0) {
      slice = 0;
    } else if (__builtin_mul_overflow(slice, dims[d], &slice)) {
      ThrowInvalidArgument(op, "dims", "small enough for the slice size to fit in int64", "an overflowing slice");
    }
  }
  CountOf(op, "dims", {total == 0 ? 1 : total}, dtype);
  return {total, slice};
}

// ---- Device index validation ---------------------------------------------------------------------

// *firstBad = the smallest p with indices[p] outside [-n, n), n = bounds[p % depth] (bounds
// non-null) or `bound`.
__global__ void FirstBadIndexKernel(const int64_t* indices, int64_t count, const int64_t* bounds,
                                    int64_t depth, int64_t bound, unsigned long long* firstBad) {
  BP_CUDA_GRID_STRIDE(p, count) {
    const int64_t n = bounds != nullptr ? bounds[p % depth] : bound;
    const int64_t v = indices[p];
    if (v < -n || v >= n) atomicMin(firstBad, static_cast<unsigned long long>(p));
  }
}

// The reference's CheckIndex over indices[0, count) in order, on the device: throws for the first
// bad index. deviceBounds (depth entries, device) or `bound`; hostBounds mirrors deviceBounds.
void CheckIndicesOnDevice(std::string_view op, const int64_t* indices, int64_t count,
                          const int64_t* deviceBounds, const int64_t* hostBounds, int64_t depth,
                          int64_t bound) {
  if (count <= 0) return;
  DeviceScratch scratch(sizeof(unsigned long long));
  auto* firstBad = static_cast<unsigned long long*>(scratch.Get());
  MemsetAsync(firstBad, 0xFF, sizeof(unsigned long long));
  FirstBadIndexKernel<<<GridFor(count), kThreads, 0, Stream()>>>(indices, count, deviceBounds, depth,
                                                                 bound, firstBad);
  unsigned long long bad = kNoPosition;
  CopyAsync(&bad, firstBad, sizeof(bad));
  scratch.Release();
  FinishMethod(op);
  if (bad == kNoPosition) return;
  int64_t value = 0;
  ReadBack(op, &value, indices + bad, sizeof(value));
  const auto at = static_cast<int64_t>(bad);
  const int64_t size = hostBounds != nullptr ? hostBounds[at % depth] : bound;
  ThrowInvalidArgument(op, "indices", Format("in [{}, {})", -size, size), Format("{} at element {}", value, at));
}

// ================================================================================================
// ArgReduce
// ================================================================================================

// The candidate of an arg-reduction: value (widened), index, NaN flag; index kEmpty: none.
constexpr long long kEmpty = std::numeric_limits<long long>::max();

template <class E>
using WideOf = std::conditional_t<
    E::kFloat, typename E::Value,
    std::conditional_t<std::is_signed_v<typename E::Value>, long long, unsigned long long>>;

template <class W>
struct ArgCand {
  W v;
  long long i;
  int nan;
};

// The better of two candidates in the reference's total order: the first NaN; else the strict
// extreme; equal values (-0 == +0): the lower index, or the higher with SelectLast.
template <class W>
__device__ __forceinline__ ArgCand<W> ArgPick(const ArgCand<W>& a, const ArgCand<W>& b, bool max, bool last) {
  if (a.i == kEmpty) return b;
  if (b.i == kEmpty) return a;
  if (a.nan != 0 || b.nan != 0) {
    if (a.nan != 0 && b.nan != 0) return a.i < b.i ? a : b;
    return a.nan != 0 ? a : b;
  }
  if (a.v != b.v) return (max ? a.v > b.v : a.v < b.v) ? a : b;
  return last ? (a.i > b.i ? a : b) : (a.i < b.i ? a : b);
}

// kGroup consecutive threads per output (1, or 32 = a warp reducing by shuffles).
template <class E, int kGroup>
__global__ void ArgReduceKernel(bool max, bool last, const void* in, int64_t* out, int64_t outer,
                                int64_t axis, int64_t inner) {
  using W = WideOf<E>;
  const int64_t work = outer * inner * kGroup;
  BP_CUDA_GRID_STRIDE(t, work) {
    const int64_t r = t / kGroup;
    const int lane = static_cast<int>(t - r * kGroup);
    const int64_t o = r / inner;
    const int64_t j = r - o * inner;
    const int64_t base = o * axis * inner + j;
    ArgCand<W> c{W(0), kEmpty, 0};
    for (int64_t k = lane; k < axis; k += kGroup) {
      const W x = static_cast<W>(Get<E>(in, base + k * inner));
      int nan = 0;
      if constexpr (E::kFloat) nan = isnan(x) ? 1 : 0;
      c = ArgPick(c, ArgCand<W>{x, static_cast<long long>(k), nan}, max, last);
      if (c.nan != 0) break;  // later NaNs of this lane have higher indices
    }
    if constexpr (kGroup > 1) {
      for (int offset = kGroup / 2; offset > 0; offset >>= 1) {
        ArgCand<W> other;
        other.v = __shfl_down_sync(0xFFFFFFFFu, c.v, offset, kGroup);
        other.i = __shfl_down_sync(0xFFFFFFFFu, c.i, offset, kGroup);
        other.nan = __shfl_down_sync(0xFFFFFFFFu, c.nan, offset, kGroup);
        c = ArgPick(c, other, max, last);
      }
    }
    if (lane == 0) out[r] = c.i;
  }
}

void ArgReduce(const ArgReduceConfig& config, const void* in, int64_t* out, int64_t outer, int64_t axis,
               int64_t inner, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.ArgReduce";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckSizes(kOp, {{"outer", outer}, {"axis", axis}, {"inner", inner}});
  CheckPositive(kOp, "axis", axis);
  const int64_t count = CountOf3(kOp, "axis", outer, axis, inner, dtype);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count == 0 ? 0 : outer * inner);
  if (count == 0) return;
  const int64_t outputs = outer * inner;
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    if (axis >= 64) {
      ArgReduceKernel<E, 32><<<GridFor(outputs * 32), kThreads, 0, Stream()>>>(
          config.Max, config.SelectLast, in, out, outer, axis, inner);
    } else {
      ArgReduceKernel<E, 1><<<GridFor(outputs), kThreads, 0, Stream()>>>(config.Max, config.SelectLast, in,
                                                                         out, outer, axis, inner);
    }
  });
  FinishMethod(kOp);
}

// ================================================================================================
// CumSum: one thread per column, sequential along the axis (the reference's order and precision)
// ================================================================================================

template <class E>
__global__ void CumSumKernel(bool exclusive, bool reverse, const void* in, void* out, int64_t outer,
                             int64_t axis, int64_t inner) {
  const int64_t columns = outer * inner;
  BP_CUDA_GRID_STRIDE(c, columns) {
    const int64_t o = c / inner;
    const int64_t j = c - o * inner;
    const int64_t base = o * axis * inner + j;
    if constexpr (E::kFloat) {
      // -0.0 is the identity of IEEE addition: the first inclusive sum is the element itself.
      double fsum = -0.0;
      for (int64_t s = 0; s < axis; ++s) {
        const int64_t k = reverse ? axis - 1 - s : s;
        const int64_t at = base + k * inner;
        const double x = LoadF64<E>(in, at);  // read before the write (in place)
        if (exclusive) {
          StoreF64<E>(out, at, s == 0 ? 0.0 : fsum);
          fsum = X86Add(fsum, x);
        } else {
          fsum = X86Add(fsum, x);
          StoreF64<E>(out, at, fsum);
        }
      }
    } else {
      using S = typename E::Storage;
      unsigned long long isum = 0;
      for (int64_t s = 0; s < axis; ++s) {
        const int64_t k = reverse ? axis - 1 - s : s;
        const int64_t at = base + k * inner;
        const auto x = static_cast<unsigned long long>(static_cast<const S*>(in)[at]);
        const unsigned long long before = isum;
        isum += x;
        static_cast<S*>(out)[at] = static_cast<S>(exclusive ? before : isum);
      }
    }
  }
}

void CumSum(const CumSumConfig& config, const void* in, void* out, int64_t outer, int64_t axis, int64_t inner,
            DType dtype) {
  constexpr std::string_view kOp = "TensorOps.CumSum";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckSizes(kOp, {{"outer", outer}, {"axis", axis}, {"inner", inner}});
  const int64_t count = CountOf3(kOp, "axis", outer, axis, inner, dtype);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;
  const int64_t columns = outer * inner;
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    CumSumKernel<E><<<GridFor(columns), kThreads, 0, Stream()>>>(config.Exclusive, config.Reverse, in, out,
                                                                 outer, axis, inner);
  });
  FinishMethod(kOp);
}

// ================================================================================================
// GatherElements
// ================================================================================================

template <class Word>
__global__ void GatherElementsKernel(const void* in, const int64_t* indices, void* out, int64_t inAxis,
                                     int64_t outAxis, int64_t inner, int64_t outCount) {
  BP_CUDA_GRID_STRIDE(at, outCount) {
    const int64_t j = at % inner;
    const int64_t o = at / inner / outAxis;
    const int64_t v = indices[at];
    const int64_t index = v < 0 ? v + inAxis : v;
    static_cast<Word*>(out)[at] = static_cast<const Word*>(in)[(o * inAxis + index) * inner + j];
  }
}

__device__ __forceinline__ bool LoadBit(const void* p, int64_t i) {
  return ((static_cast<const uint8_t*>(p)[i >> 3] >> (i & 7)) & 1u) != 0;
}

// Bool: one thread per output byte; in the last byte only the output's own bits change.
__global__ void GatherElementsBoolKernel(const void* in, const int64_t* indices, void* out, int64_t inAxis,
                                         int64_t outAxis, int64_t inner, int64_t outCount) {
  const int64_t bytes = (outCount + 7) / 8;
  BP_CUDA_GRID_STRIDE(b, bytes) {
    auto* dst = static_cast<uint8_t*>(out);
    unsigned byte = b * 8 + 8 > outCount ? dst[b] : 0u;
    for (int bit = 0; bit < 8; ++bit) {
      const int64_t at = b * 8 + bit;
      if (at >= outCount) break;
      const int64_t j = at % inner;
      const int64_t o = at / inner / outAxis;
      const int64_t v = indices[at];
      const int64_t index = v < 0 ? v + inAxis : v;
      const bool value = LoadBit(in, (o * inAxis + index) * inner + j);
      byte = value ? (byte | (1u << bit)) : (byte & ~(1u << bit));
    }
    dst[b] = static_cast<uint8_t>(byte);
  }
}

void GatherElements(const void* in, const int64_t* indices, void* out, int64_t outer, int64_t inAxis,
                    int64_t outAxis, int64_t inner, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.GatherElements";
  CheckTensorDType(kOp, dtype, kTensorDTypesAndBool);
  CheckSizes(kOp, {{"outer", outer}, {"inAxis", inAxis}, {"outAxis", outAxis}, {"inner", inner}});
  const int64_t inCount = CountOf3(kOp, "inAxis", outer, inAxis, inner, dtype);
  const int64_t outCount = CountOf3(kOp, "outAxis", outer, outAxis, inner, dtype);
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "indices", indices, outCount);
  CheckPointer(kOp, "out", out, outCount);
  if (outCount == 0) return;
  CheckIndicesOnDevice(kOp, indices, outCount, nullptr, nullptr, 1, inAxis);
  if (dtype == DType::Bool) {
    GatherElementsBoolKernel<<<GridFor((outCount + 7) / 8), kThreads, 0, Stream()>>>(in, indices, out, inAxis,
                                                                                    outAxis, inner, outCount);
  } else {
    ByWord(static_cast<size_t>(DTypeBits(dtype) / 8), [&](auto w) {
      using Word = decltype(w);
      GatherElementsKernel<Word><<<GridFor(outCount), kThreads, 0, Stream()>>>(in, indices, out, inAxis, outAxis,
                                                                               inner, outCount);
    });
  }
  FinishMethod(kOp);
}

// ================================================================================================
// TopK: stable radix sorts in the reference's total order
// ================================================================================================

template <class E>
constexpr int KeyBits() {
  if constexpr (E::kFloat) {
    return std::is_same_v<typename E::Value, double> ? 64 : 32;
  } else {
    return sizeof(typename E::Storage) == 8 ? 64 : 32;
  }
}

// An unsigned key whose ascending order is the values' order: NaN above +Inf (every NaN equal),
// -0 equal to +0; integers by value.
template <class E>
__device__ __forceinline__ unsigned long long OrderKey(typename E::Value v) {
  using V = typename E::Value;
  if constexpr (std::is_same_v<V, double>) {
    if (isnan(v)) return ~0ULL;
    if (v == 0.0) v = 0.0;
    const auto bits = static_cast<unsigned long long>(__double_as_longlong(v));
    constexpr unsigned long long kSign = 1ULL << 63;
    return (bits & kSign) != 0 ? ~bits : (bits | kSign);
  } else if constexpr (std::is_same_v<V, float>) {
    if (isnan(v)) return 0xFFFFFFFFULL;
    if (v == 0.0f) v = 0.0f;
    const uint32_t bits = __float_as_uint(v);
    return (bits & 0x80000000u) != 0 ? static_cast<unsigned long long>(~bits)
                                     : static_cast<unsigned long long>(bits | 0x80000000u);
  } else if constexpr (std::is_signed_v<V>) {
    if constexpr (sizeof(V) == 8) {
      return static_cast<unsigned long long>(v) ^ (1ULL << 63);
    } else {
      return static_cast<unsigned long long>(static_cast<uint32_t>(static_cast<int32_t>(v)) ^ 0x80000000u);
    }
  } else {
    return static_cast<unsigned long long>(v);
  }
}

// Item id = s * axis + a (column s = o * inner + j, position a): its key and id.
template <class E>
__global__ void TopKKeysKernel(const void* in, int64_t axis, int64_t inner, int64_t n, unsigned long long* keys,
                               long long* ids) {
  BP_CUDA_GRID_STRIDE(id, n) {
    const int64_t s = id / axis;
    const int64_t a = id - s * axis;
    const int64_t o = s / inner;
    const int64_t j = s - o * inner;
    keys[id] = OrderKey<E>(Get<E>(in, (o * axis + a) * inner + j));
    ids[id] = id;
  }
}

__global__ void ColumnKeysKernel(const long long* ids, int64_t n, int64_t axis, unsigned long long* keys) {
  BP_CUDA_GRID_STRIDE(r, n) { keys[r] = static_cast<unsigned long long>(ids[r] / axis); }
}

// ids: per column s, its items in the reference's order at [s * axis, (s + 1) * axis).
template <class E>
__global__ void TopKWriteKernel(const void* in, const long long* ids, void* values, int64_t* indices, int64_t axis,
                                int64_t inner, int64_t k, int64_t outCount) {
  BP_CUDA_GRID_STRIDE(at, outCount) {
    const int64_t j = at % inner;
    const int64_t t = at / inner;
    const int64_t m = t % k;
    const int64_t o = t / k;
    const int64_t s = o * inner + j;
    const int64_t a = ids[s * axis + m] - s * axis;
    Put<E>(values, at, Get<E>(in, (o * axis + a) * inner + j));
    indices[at] = a;
  }
}

void TopK(const TopKConfig& config, const void* in, void* values, int64_t* indices, int64_t outer, int64_t axis,
          int64_t inner, int64_t k, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.TopK";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckSizes(kOp, {{"outer", outer}, {"axis", axis}, {"inner", inner}, {"k", k}});
  if (k > axis) ThrowInvalidArgument(kOp, "k", Format("in [0, {}] (the axis size)", axis), Format("{}", k));
  const int64_t inCount = CountOf(kOp, "axis", {outer, axis, inner}, dtype);
  const int64_t outCount = CountOf(kOp, "k", {outer, k, inner}, dtype);
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "values", values, outCount);
  CheckPointer(kOp, "indices", indices, outCount);
  if (outCount == 0) return;
  const int64_t n = inCount;  // > 0: k > 0 and k <= axis
  const int64_t columns = outer * inner;
  SortBuffers sort(n);
  auto *kA = sort.keys[0], *kB = sort.keys[1];
  auto *iA = sort.ids[0], *iB = sort.ids[1];
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    TopKKeysKernel<E><<<GridFor(n), kThreads, 0, Stream()>>>(in, axis, inner, n, kA, iA);
    if (config.Largest) {
      RadixSortPairs<true>(kA, kB, iA, iB, n, KeyBits<E>());
    } else {
      RadixSortPairs<false>(kA, kB, iA, iB, n, KeyBits<E>());
    }
    const long long* ordered = iB;
    if (columns > 1) {
      ColumnKeysKernel<<<GridFor(n), kThreads, 0, Stream()>>>(iB, n, axis, kA);
      RadixSortPairs<false>(kA, kB, iB, iA, n, BitWidth(static_cast<uint64_t>(columns - 1)));
      ordered = iA;
    }
    TopKWriteKernel<E><<<GridFor(outCount), kThreads, 0, Stream()>>>(in, ordered, values, indices, axis, inner, k,
                                                                    outCount);
  });
  sort.scratch.Release();
  FinishMethod(kOp);
}

// ================================================================================================
// ScatterElements, ScatterND: every output element's updates applied in order by one thread
// ================================================================================================

// One combine step on storage bits: out (op)= upd, rounded to storage.
template <class E>
__device__ __forceinline__ typename E::Storage Combine(ScatterReduction r, typename E::Storage o,
                                                       typename E::Storage u) {
  using V = typename E::Value;
  const V uv = E::FromBits(u);
  if (r == ScatterReduction::None) return E::ToBits(uv);
  const V ov = E::FromBits(o);
  if constexpr (std::is_integral_v<V>) {
    const auto a = static_cast<unsigned long long>(ov), b = static_cast<unsigned long long>(uv);
    return static_cast<typename E::Storage>(r == ScatterReduction::Add ? a + b : a * b);
  } else {
    return E::ToBits(r == ScatterReduction::Add ? X86Add(ov, uv) : X86Mul(ov, uv));
  }
}

// Columns are independent and one column's updates are applied in order; sequences of at most
// this length, or at least this many columns, run one thread per column.
constexpr int64_t kMaxColumnSequence = 256;
constexpr int64_t kManyColumns = 16384;

// The flat output element of ScatterElements update u = (o * updAxis + k) * inner + j.
struct ElementsTargets {
  const int64_t* indices;
  int64_t dataAxis, updAxis, inner;
  __device__ int64_t operator()(int64_t u) const {
    const int64_t j = u % inner;
    const int64_t o = u / inner / updAxis;
    const int64_t v = indices[u];
    const int64_t index = v < 0 ? v + dataAxis : v;
    return (o * dataAxis + index) * inner + j;
  }
};

// The flat element offset (times slice) of ScatterND / GatherND tuple `tuple` in dims (checked).
__device__ __forceinline__ int64_t TupleOffset(const int64_t* tuple, const int64_t* dims, int64_t depth) {
  int64_t offset = 0;
  for (int64_t d = 0; d < depth; ++d) {
    const int64_t v = tuple[d];
    offset = offset * dims[d] + (v < 0 ? v + dims[d] : v);
  }
  return offset;
}

// The flat output element of ScatterND update u = n * slice + s.
struct NDTargets {
  const int64_t* indices;
  const int64_t* dims;  // device, depth entries
  int64_t depth, slice;
  __device__ int64_t operator()(int64_t u) const {
    const int64_t n = u / slice;
    const int64_t s = u - n * slice;
    return TupleOffset(indices + n * depth, dims, depth) * slice + s;
  }
};

// One thread per ScatterElements column (o, j): the updates k = 0, 1, ... in order.
template <class E>
__global__ void ScatterElementsColumnsKernel(ScatterReduction r, ElementsTargets targets, const void* updates,
                                             void* out, int64_t outer) {
  using S = typename E::Storage;
  const int64_t columns = outer * targets.inner;
  BP_CUDA_GRID_STRIDE(c, columns) {
    const int64_t o = c / targets.inner;
    const int64_t j = c - o * targets.inner;
    for (int64_t k = 0; k < targets.updAxis; ++k) {
      const int64_t from = (o * targets.updAxis + k) * targets.inner + j;
      const int64_t at = targets(from);
      S* dst = static_cast<S*>(out) + at;
      *dst = Combine<E>(r, *dst, static_cast<const S*>(updates)[from]);
    }
  }
}

// One thread per ScatterND slice position s: the tuples n = 0, 1, ... in order.
template <class E>
__global__ void ScatterNDColumnsKernel(ScatterReduction r, NDTargets targets, const void* updates, void* out,
                                       int64_t count) {
  using S = typename E::Storage;
  BP_CUDA_GRID_STRIDE(s, targets.slice) {
    for (int64_t n = 0; n < count; ++n) {
      const int64_t from = n * targets.slice + s;
      S* dst = static_cast<S*>(out) + targets(from);
      *dst = Combine<E>(r, *dst, static_cast<const S*>(updates)[from]);
    }
  }
}

template <class Targets>
__global__ void ScatterKeysKernel(Targets targets, int64_t n, unsigned long long* keys, long long* ids) {
  BP_CUDA_GRID_STRIDE(u, n) {
    keys[u] = static_cast<unsigned long long>(targets(u));
    ids[u] = u;
  }
}

// keys/ids sorted stably by target: the first thread of each run applies the run in order.
template <class E>
__global__ void ScatterRunsKernel(ScatterReduction r, const unsigned long long* keys, const long long* ids,
                                  int64_t n, const void* updates, void* out) {
  using S = typename E::Storage;
  BP_CUDA_GRID_STRIDE(i, n) {
    const unsigned long long target = keys[i];
    if (i > 0 && keys[i - 1] == target) continue;
    S* dst = static_cast<S*>(out) + target;
    S value = *dst;
    for (int64_t q = i; q < n && keys[q] == target; ++q) {
      value = Combine<E>(r, value, static_cast<const S*>(updates)[ids[q]]);
    }
    *dst = value;
  }
}

// The sort path: updates 0..n-1 (in application order) to targets in [0, total).
template <class E, class Targets>
void ScatterSorted(ScatterReduction r, const Targets& targets, int64_t n, int64_t total, const void* updates,
                   void* out) {
  SortBuffers sort(n);
  auto *kA = sort.keys[0], *kB = sort.keys[1];
  auto *iA = sort.ids[0], *iB = sort.ids[1];
  ScatterKeysKernel<Targets><<<GridFor(n), kThreads, 0, Stream()>>>(targets, n, kA, iA);
  RadixSortPairs<false>(kA, kB, iA, iB, n, BitWidth(static_cast<uint64_t>(total - 1)));
  ScatterRunsKernel<E><<<GridFor(n), kThreads, 0, Stream()>>>(r, kB, iB, n, updates, out);
  sort.scratch.Release();
}

void ScatterElements(const ScatterConfig& config, const void* data, const int64_t* indices, const void* updates,
                     void* out, int64_t outer, int64_t dataAxis, int64_t updAxis, int64_t inner, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.ScatterElements";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckReduction(kOp, config.Reduction);
  CheckSizes(kOp, {{"outer", outer}, {"dataAxis", dataAxis}, {"updAxis", updAxis}, {"inner", inner}});
  const int64_t dataCount = CountOf(kOp, "dataAxis", {outer, dataAxis, inner}, dtype);
  const int64_t updCount = CountOf(kOp, "updAxis", {outer, updAxis, inner}, dtype);
  if (updCount > 0 && dataAxis == 0) ThrowInvalidArgument(kOp, "dataAxis", "> 0 when there are updates", "0");
  CheckPointer(kOp, "data", data, dataCount);
  CheckPointer(kOp, "indices", indices, updCount);
  CheckPointer(kOp, "updates", updates, updCount);
  CheckPointer(kOp, "out", out, dataCount);
  CheckIndicesOnDevice(kOp, indices, updCount, nullptr, nullptr, 1, dataAxis);
  if (out != data && dataCount > 0) CopyAsync(out, data, DTypeStorageBytes(dtype, dataCount));
  if (updCount > 0) {
    const ElementsTargets targets{indices, dataAxis, updAxis, inner};
    const int64_t columns = outer * inner;
    ByElem(dtype, [&](auto e) {
      using E = decltype(e);
      if (updAxis <= kMaxColumnSequence || columns >= kManyColumns) {
        ScatterElementsColumnsKernel<E><<<GridFor(columns), kThreads, 0, Stream()>>>(config.Reduction, targets,
                                                                                      updates, out, outer);
      } else {
        ScatterSorted<E>(config.Reduction, targets, updCount, dataCount, updates, out);
      }
    });
  }
  FinishMethod(kOp);
}

// dims[0..depth) on the device (nullptr when depth is 0).
class DeviceDims {
 public:
  DeviceDims(const int64_t* dims, int64_t depth)
      : scratch_(depth > 0 ? static_cast<size_t>(depth) * sizeof(int64_t) : 0) {
    if (depth > 0) CopyAsync(scratch_.Get(), dims, static_cast<size_t>(depth) * sizeof(int64_t));
  }
  const int64_t* Get(int64_t depth) const {
    return depth > 0 ? static_cast<const int64_t*>(scratch_.Get()) : nullptr;
  }
  void Release() { scratch_.Release(); }

 private:
  DeviceScratch scratch_;
};

void ScatterND(const ScatterConfig& config, const void* data, const int64_t* indices, const void* updates,
               void* out, const int64_t* dims, int64_t rank, int64_t count, int64_t depth, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.ScatterND";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckReduction(kOp, config.Reduction);
  CheckNonNegative(kOp, "count", count);
  const std::pair<int64_t, int64_t> sizes = NDSizes(kOp, dims, rank, depth, dtype);
  const int64_t total = sizes.first, slice = sizes.second;
  const int64_t idxCount = CountOf(kOp, "count", {count, depth == 0 ? 1 : depth}, DType::Int64);
  const int64_t updCount = CountOf(kOp, "count", {count, slice}, dtype);
  CheckPointer(kOp, "data", data, total);
  CheckPointer(kOp, "indices", indices, depth == 0 ? 0 : idxCount);
  CheckPointer(kOp, "updates", updates, updCount);
  CheckPointer(kOp, "out", out, total);
  if (total == 0 && count > 0 && slice > 0) {
    ThrowInvalidArgument(kOp, "dims", "no zero dim when there are updates", "a zero dim");
  }
  DeviceDims deviceDims(dims, total > 0 ? depth : 0);
  const int64_t* dDims = deviceDims.Get(total > 0 ? depth : 0);
  if (total > 0 && depth > 0) CheckIndicesOnDevice(kOp, indices, count * depth, dDims, dims, depth, 0);
  if (out != data && total > 0) CopyAsync(out, data, DTypeStorageBytes(dtype, total));
  if (total > 0 && slice > 0 && count > 0) {
    const NDTargets targets{indices, dDims, depth, slice};
    ByElem(dtype, [&](auto e) {
      using E = decltype(e);
      if (count <= kMaxColumnSequence || slice >= kManyColumns) {
        ScatterNDColumnsKernel<E><<<GridFor(slice), kThreads, 0, Stream()>>>(config.Reduction, targets, updates,
                                                                              out, count);
      } else {
        ScatterSorted<E>(config.Reduction, targets, updCount, total, updates, out);
      }
    });
  }
  deviceDims.Release();
  FinishMethod(kOp);
}

// ================================================================================================
// GatherND
// ================================================================================================

template <class Word>
__global__ void GatherNDKernel(const void* in, const int64_t* indices, void* out, const int64_t* dims, int64_t depth,
                               int64_t total, int64_t count, int64_t slice, int64_t outCount) {
  BP_CUDA_GRID_STRIDE(e, outCount) {
    const int64_t t = e / slice;
    const int64_t s = e - t * slice;
    const int64_t b = t / count;
    const int64_t from = b * total + TupleOffset(indices + t * depth, dims, depth) * slice + s;
    static_cast<Word*>(out)[e] = static_cast<const Word*>(in)[from];
  }
}

__global__ void GatherNDBoolKernel(const void* in, const int64_t* indices, void* out, const int64_t* dims,
                                   int64_t depth, int64_t total, int64_t count, int64_t slice, int64_t outCount) {
  const int64_t bytes = (outCount + 7) / 8;
  BP_CUDA_GRID_STRIDE(byteIndex, bytes) {
    auto* dst = static_cast<uint8_t*>(out);
    unsigned byte = byteIndex * 8 + 8 > outCount ? dst[byteIndex] : 0u;
    for (int bit = 0; bit < 8; ++bit) {
      const int64_t e = byteIndex * 8 + bit;
      if (e >= outCount) break;
      const int64_t t = e / slice;
      const int64_t s = e - t * slice;
      const int64_t b = t / count;
      const int64_t from = b * total + TupleOffset(indices + t * depth, dims, depth) * slice + s;
      byte = LoadBit(in, from) ? (byte | (1u << bit)) : (byte & ~(1u << bit));
    }
    dst[byteIndex] = static_cast<uint8_t>(byte);
  }
}

void GatherND(const void* in, const int64_t* indices, void* out, const int64_t* dims, int64_t rank, int64_t batch,
              int64_t count, int64_t depth, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.GatherND";
  CheckTensorDType(kOp, dtype, kTensorDTypesAndBool);
  CheckSizes(kOp, {{"batch", batch}, {"count", count}});
  const std::pair<int64_t, int64_t> sizes = NDSizes(kOp, dims, rank, depth, dtype);
  const int64_t total = sizes.first, slice = sizes.second;
  const int64_t inCount = CountOf(kOp, "batch", {batch, total}, dtype);
  const int64_t idxCount = CountOf(kOp, "count", {batch, count, depth == 0 ? 1 : depth}, DType::Int64);
  const int64_t outCount = CountOf(kOp, "count", {batch, count, slice}, dtype);
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "indices", indices, depth == 0 ? 0 : idxCount);
  CheckPointer(kOp, "out", out, outCount);
  if (outCount == 0) return;
  if (total == 0) ThrowInvalidArgument(kOp, "dims", "no zero dim when there is something to gather", "a zero dim");
  DeviceDims deviceDims(dims, depth);
  const int64_t* dDims = deviceDims.Get(depth);
  if (depth > 0) CheckIndicesOnDevice(kOp, indices, batch * count * depth, dDims, dims, depth, 0);
  if (dtype == DType::Bool) {
    GatherNDBoolKernel<<<GridFor((outCount + 7) / 8), kThreads, 0, Stream()>>>(in, indices, out, dDims, depth,
                                                                              total, count, slice, outCount);
  } else {
    ByWord(static_cast<size_t>(DTypeBits(dtype) / 8), [&](auto w) {
      using Word = decltype(w);
      GatherNDKernel<Word><<<GridFor(outCount), kThreads, 0, Stream()>>>(in, indices, out, dDims, depth, total,
                                                                         count, slice, outCount);
    });
  }
  deviceDims.Release();
  FinishMethod(kOp);
}

// ================================================================================================
// Sampling
// ================================================================================================

constexpr int64_t kMaxVocab = std::numeric_limits<int32_t>::max();
constexpr int kStatsBlocks = 256;

// The first NaN of the row, and its first maximum (NaN skipped).
struct LogitStats {
  long long firstNaN;  // kEmpty: none
  long long argmax;    // kEmpty: none
  double max;
};

__device__ __forceinline__ LogitStats CombineStats(const LogitStats& a, const LogitStats& b) {
  LogitStats r;
  r.firstNaN = a.firstNaN < b.firstNaN ? a.firstNaN : b.firstNaN;
  if (a.argmax == kEmpty) {
    r.argmax = b.argmax;
    r.max = b.max;
  } else if (b.argmax == kEmpty) {
    r.argmax = a.argmax;
    r.max = a.max;
  } else if (a.max != b.max) {
    const bool takeA = a.max > b.max;
    r.argmax = takeA ? a.argmax : b.argmax;
    r.max = takeA ? a.max : b.max;
  } else {  // equal (-0 == +0): the first
    const bool takeA = a.argmax < b.argmax;
    r.argmax = takeA ? a.argmax : b.argmax;
    r.max = takeA ? a.max : b.max;
  }
  return r;
}

// Reduces one LogitStats per thread across the block (kThreads threads); thread 0 gets the result.
__device__ LogitStats BlockStats(LogitStats value) {
  __shared__ LogitStats buffer[kThreads];
  buffer[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) {
      buffer[threadIdx.x] = CombineStats(buffer[threadIdx.x], buffer[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  return buffer[0];
}

template <class E>
__global__ void LogitStatsPartialKernel(const void* logits, int64_t n, LogitStats* partials) {
  LogitStats s{kEmpty, kEmpty, 0.0};
  BP_CUDA_GRID_STRIDE(i, n) {
    const double x = LoadF64<E>(logits, i);
    LogitStats e{kEmpty, kEmpty, 0.0};
    if (isnan(x)) {
      e.firstNaN = i;
    } else {
      e.argmax = i;
      e.max = x;
    }
    s = CombineStats(s, e);
  }
  s = BlockStats(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void LogitStatsFinalKernel(const LogitStats* partials, int64_t n, LogitStats* result) {
  LogitStats s{kEmpty, kEmpty, 0.0};
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s = CombineStats(s, partials[i]);
  s = BlockStats(s);
  if (threadIdx.x == 0) *result = s;
}

// p[i] = exp((x_i - max) / t), or, when max is +Inf, 1 for the +Inf entries and 0 elsewhere.
template <class E>
__global__ void ExpKernel(const void* logits, int64_t n, double max, double t, bool infinite, double* p) {
  BP_CUDA_GRID_STRIDE(i, n) {
    const double x = LoadF64<E>(logits, i);
    p[i] = infinite ? (x == max ? 1.0 : 0.0) : exp(__ddiv_rn(__dsub_rn(x, max), t));
  }
}

constexpr int kChunk = 4096;

// *sum = p[0] + p[1] + ... in index order (one block: chunks staged in shared memory, thread 0
// adds them in order).
__global__ void SequentialSumKernel(const double* p, int64_t n, double* sum) {
  __shared__ double chunk[kChunk];
  double running = 0.0;
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t len = n - base < kChunk ? n - base : kChunk;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) chunk[i] = p[base + i];
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int64_t i = 0; i < len; ++i) running = __dadd_rn(running, chunk[i]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *sum = running;
}

__global__ void NormalizeKernel(double* p, int32_t* order, int64_t n, const double* sum) {
  const double total = *sum;
  BP_CUDA_GRID_STRIDE(i, n) {
    p[i] = __ddiv_rn(p[i], total);
    order[i] = static_cast<int32_t>(i);
  }
}

// The draw over the sorted probabilities ps (order: their token ids). kept > 0: the first `kept`
// (TopK); kept == 0: the nucleus, the shortest prefix whose running sum is >= topP (all when
// rounding keeps it below). cumulative[r] = ps[0] + ... + ps[r] in order; the result is the first
// kept token whose running sum is > u * total, else the last kept token.
__global__ void DrawKernel(const double* ps, const int32_t* order, int64_t n, int64_t kept, double topP, double u,
                           double* cumulative, int32_t* result) {
  __shared__ double chunk[kChunk];
  __shared__ long long sharedKept;
  __shared__ int done;
  const bool nucleus = kept == 0;
  const int64_t limit = nucleus ? n : kept;
  if (threadIdx.x == 0) {
    sharedKept = nucleus ? n : kept;
    done = 0;
  }
  double running = 0.0;
  for (int64_t base = 0; base < limit; base += kChunk) {
    __syncthreads();
    if (done != 0) break;
    const int64_t len = limit - base < kChunk ? limit - base : kChunk;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) chunk[i] = ps[base + i];
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int64_t i = 0; i < len; ++i) {
        running = __dadd_rn(running, chunk[i]);
        cumulative[base + i] = running;
        if (nucleus && running >= topP) {
          sharedKept = base + i + 1;
          done = 1;
          break;
        }
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const int64_t k = sharedKept;
    const double target = __dmul_rn(u, cumulative[k - 1]);
    int64_t lo = 0, hi = k;  // the first r in [0, k) with cumulative[r] > target (k: none)
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (cumulative[mid] > target) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    *result = order[lo < k ? lo : k - 1];
  }
}

// LoadLogits's checks, then the row's stats (first NaN, first maximum) on the device; throws for a
// NaN. Returns the stats.
LogitStats LoadLogits(std::string_view op, const void* logits, int64_t vocabSize, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckPositive(op, "vocabSize", vocabSize);
  if (vocabSize > kMaxVocab) {
    ThrowInvalidArgument(op, "vocabSize", Format("<= {} (token ids are int32)", kMaxVocab),
                         std::to_string(vocabSize));
  }
  CheckPointer(op, "logits", logits, vocabSize);
  int64_t blocks = (vocabSize + kThreads - 1) / kThreads;
  if (blocks > kStatsBlocks) blocks = kStatsBlocks;
  ScratchLayout layout;
  const size_t partialsAt = layout.Add(static_cast<size_t>(blocks) * sizeof(LogitStats));
  const size_t resultAt = layout.Add(sizeof(LogitStats));
  DeviceScratch scratch(layout.Size());
  auto* partials = scratch.At<LogitStats>(partialsAt);
  auto* result = scratch.At<LogitStats>(resultAt);
  ByFloatElem(op, dtype, [&](auto e) {
    using E = decltype(e);
    LogitStatsPartialKernel<E><<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(logits, vocabSize,
                                                                                        partials);
  });
  LogitStatsFinalKernel<<<1, kThreads, 0, Stream()>>>(partials, blocks, result);
  LogitStats stats{};
  CopyAsync(&stats, result, sizeof(stats));
  scratch.Release();
  FinishMethod(op);
  if (stats.firstNaN != kEmpty) {
    ThrowInvalidArgument(op, "logits", "free of NaN", Format("NaN at index {}", stats.firstNaN));
  }
  return stats;
}

void CheckTemperature(std::string_view op, float t) {
  if (!(std::isfinite(t) && t >= 0.0f)) {
    ThrowInvalidArgument(op, "config.Temperature", "finite and >= 0 (0 means greedy)", Format("{}", t));
  }
}

// softmax(x / T), the stable descending sort and the draw; kept > 0 (TopK) or 0 (nucleus, topP).
int32_t SampleOnDevice(std::string_view op, const void* logits, int64_t n, DType dtype, const LogitStats& stats,
                       const SamplingConfig& config, int64_t kept, double topP) {
  const double mx = stats.max;  // the row has no NaN and n > 0: argmax exists
  if (mx == -std::numeric_limits<double>::infinity()) {
    ThrowInvalidArgument(op, "logits", "not all -Inf when Temperature > 0", "all -Inf");
  }
  const bool infinite = std::isinf(mx);
  const double t = static_cast<double>(config.Temperature);
  const double u = PhiloxUniformDouble(config.Seed, 0, 0);
  const auto doubles = static_cast<size_t>(n) * sizeof(double);
  const auto ints = static_cast<size_t>(n) * sizeof(int32_t);
  ScratchLayout layout;
  const size_t pAt = layout.Add(doubles), psAt = layout.Add(doubles), cumAt = layout.Add(doubles);
  const size_t orderAt = layout.Add(ints), sortedAt = layout.Add(ints);
  const size_t sumAt = layout.Add(sizeof(double)), resultAt = layout.Add(sizeof(int32_t));
  DeviceScratch scratch(layout.Size());
  auto* p = scratch.At<double>(pAt);
  auto* ps = scratch.At<double>(psAt);
  auto* cumulative = scratch.At<double>(cumAt);
  auto* order = scratch.At<int32_t>(orderAt);
  auto* sorted = scratch.At<int32_t>(sortedAt);
  auto* sum = scratch.At<double>(sumAt);
  auto* result = scratch.At<int32_t>(resultAt);
  ByFloatElem(op, dtype, [&](auto e) {
    using E = decltype(e);
    ExpKernel<E><<<GridFor(n), kThreads, 0, Stream()>>>(logits, n, mx, t, infinite, p);
  });
  SequentialSumKernel<<<1, kThreads, 0, Stream()>>>(p, n, sum);
  NormalizeKernel<<<GridFor(n), kThreads, 0, Stream()>>>(p, order, n, sum);
  RadixSortPairs<true>(p, ps, order, sorted, n, 64);
  DrawKernel<<<1, kThreads, 0, Stream()>>>(ps, sorted, n, kept, topP, u, cumulative, result);
  int32_t token = 0;
  CopyAsync(&token, result, sizeof(token));
  scratch.Release();
  FinishMethod(op);
  return token;
}

int32_t GreedySample(const void* logits, int64_t vocabSize, DType dtype) {
  return static_cast<int32_t>(LoadLogits("Sampling.GreedySample", logits, vocabSize, dtype).argmax);
}

int32_t TopKSample(const SamplingConfig& config, const void* logits, int64_t vocabSize, DType dtype) {
  constexpr std::string_view kOp = "Sampling.TopKSample";
  const LogitStats stats = LoadLogits(kOp, logits, vocabSize, dtype);
  CheckTemperature(kOp, config.Temperature);
  if (config.TopK < 0) {
    ThrowInvalidArgument(kOp, "config.TopK", ">= 0 (0 means the whole vocabulary)", std::to_string(config.TopK));
  }
  if (config.Temperature == 0.0f) return static_cast<int32_t>(stats.argmax);
  const int64_t k = config.TopK == 0 || config.TopK > vocabSize ? vocabSize : config.TopK;
  return SampleOnDevice(kOp, logits, vocabSize, dtype, stats, config, k, 0.0);
}

int32_t TopPSample(const SamplingConfig& config, const void* logits, int64_t vocabSize, DType dtype) {
  constexpr std::string_view kOp = "Sampling.TopPSample";
  const LogitStats stats = LoadLogits(kOp, logits, vocabSize, dtype);
  CheckTemperature(kOp, config.Temperature);
  if (!(config.TopP > 0.0f && config.TopP <= 1.0f)) {
    ThrowInvalidArgument(kOp, "config.TopP", "in (0, 1]", Format("{}", config.TopP));
  }
  if (config.Temperature == 0.0f) return static_cast<int32_t>(stats.argmax);
  return SampleOnDevice(kOp, logits, vocabSize, dtype, stats, config, 0, static_cast<double>(config.TopP));
}

// ================================================================================================
// Masking
// ================================================================================================

// seqQ * seqK, throwing instead of overflowing.
int64_t ScoreCount(std::string_view op, int64_t seqQ, int64_t seqK) {
  int64_t product = 0;
  if (__builtin_mul_overflow(seqQ, seqK, &product)) {
    ThrowInvalidArgument(op, "seqK", Format("such that seqQ*seqK fits in int64 (seqQ = {})", seqQ),
                         std::to_string(seqK));
  }
  return product;
}

template <class E>
__global__ void ApplyMaskKernel(const void* in, const void* mask, void* out, int64_t count) {
  BP_CUDA_GRID_STRIDE(i, count) { Put<E>(out, i, X86Add(Get<E>(in, i), Get<E>(mask, i))); }
}

void ApplyMask(const void* in, const void* mask, void* out, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Masking.ApplyMask";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "mask", mask, count);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;
  ByFloatElem(kOp, dtype, [&](auto e) {
    using E = decltype(e);
    ApplyMaskKernel<E><<<GridFor(count), kThreads, 0, Stream()>>>(in, mask, out, count);
  });
  FinishMethod(kOp);
}

template <class E>
__global__ void CausalMaskKernel(void* out, int64_t seqQ, int64_t seqK, int64_t count) {
  using V = typename E::Value;
  BP_CUDA_GRID_STRIDE(i, count) {
    const int64_t q = i / seqK;
    const int64_t k = i - q * seqK;
    const int64_t p = q + (seqK - seqQ);
    Put<E>(out, i, k > p ? -std::numeric_limits<V>::infinity() : V(0));
  }
}

void CausalMask(void* out, int64_t seqQ, int64_t seqK, DType dtype) {
  constexpr std::string_view kOp = "Masking.CausalMask";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqQ", seqQ);
  CheckNonNegative(kOp, "seqK", seqK);
  const int64_t count = ScoreCount(kOp, seqQ, seqK);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;
  ByFloatElem(kOp, dtype, [&](auto e) {
    using E = decltype(e);
    CausalMaskKernel<E><<<GridFor(count), kThreads, 0, Stream()>>>(out, seqQ, seqK, count);
  });
  FinishMethod(kOp);
}

// static_cast<T>(int64) (round to nearest even) and std::fma in the compute type T.
__device__ __forceinline__ float ToCompute(int64_t v, float) { return __ll2float_rn(static_cast<long long>(v)); }
__device__ __forceinline__ double ToCompute(int64_t v, double) { return __ll2double_rn(static_cast<long long>(v)); }
__device__ __forceinline__ float Fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double Fma(double a, double b, double c) { return fma(a, b, c); }

// out[q, k] = fma(-m, p - k, scores[q, k]) for k <= p, scores[q, k] otherwise.
template <class E>
__global__ void ALiBiKernel(const void* scores, void* out, typename E::Value m, int64_t seqQ, int64_t seqK,
                            int64_t count) {
  using V = typename E::Value;
  BP_CUDA_GRID_STRIDE(i, count) {
    const int64_t q = i / seqK;
    const int64_t k = i - q * seqK;
    const int64_t p = q + (seqK - seqQ);
    const V s = Get<E>(scores, i);
    // -m and p - k are finite: a NaN result comes only from a NaN s, which x86's fma returns
    // quieted (the GPU's fma would give its canonical NaN instead).
    Put<E>(out, i, k <= p ? (isnan(s) ? Quiet(s) : Fma(-m, ToCompute(p - k, V{}), s)) : s);
  }
}

void ALiBiBias(const void* scores, const void* slope, void* out, int64_t seqQ, int64_t seqK, DType dtype) {
  constexpr std::string_view kOp = "Masking.ALiBiBias";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqQ", seqQ);
  CheckNonNegative(kOp, "seqK", seqK);
  const int64_t count = ScoreCount(kOp, seqQ, seqK);
  CheckPointer(kOp, "scores", scores, count);
  CheckPointer(kOp, "slope", slope, count > 0 ? 1 : 0);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;
  // The slope element, read on the host and converted as the reference's Load.
  unsigned char raw[8] = {};
  ReadBack(kOp, raw, slope, DTypeStorageBytes(dtype, 1));
  ByFloatElem(kOp, dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::Value;
    T m{};
    if constexpr (std::is_same_v<T, double>) {
      std::memcpy(&m, raw, sizeof(double));
    } else if (dtype == DType::Float32) {
      std::memcpy(&m, raw, sizeof(float));
    } else {
      uint16_t bits = 0;
      std::memcpy(&bits, raw, sizeof(bits));
      m = dtype == DType::Float16 ? ::backplane::F16ToF32(bits) : ::backplane::BF16ToF32(bits);
    }
    CheckFinite(kOp, "slope", static_cast<double>(m));
    if (m < T(0)) ThrowInvalidArgument(kOp, "slope", ">= 0", Format("{}", m));
    ALiBiKernel<E><<<GridFor(count), kThreads, 0, Stream()>>>(scores, out, m, seqQ, seqK, count);
  });
  FinishMethod(kOp);
}

}  // namespace

void RegisterTensorIndex(KernelTable& table) {
  table.TensorOps_ArgReduce = &ArgReduce;
  table.TensorOps_CumSum = &CumSum;
  table.TensorOps_GatherElements = &GatherElements;
  table.TensorOps_TopK = &TopK;
  table.TensorOps_ScatterElements = &ScatterElements;
  table.TensorOps_ScatterND = &ScatterND;
  table.TensorOps_GatherND = &GatherND;
  table.Sampling_GreedySample = &GreedySample;
  table.Sampling_TopKSample = &TopKSample;
  table.Sampling_TopPSample = &TopPSample;
  table.Masking_ApplyMask = &ApplyMask;
  table.Masking_CausalMask = &CausalMask;
  table.Masking_ALiBiBias = &ALiBiBias;
}

}  // namespace backplane::cuda
