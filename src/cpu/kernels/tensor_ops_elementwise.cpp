// Highway kernels for the TensorOps elementwise half: Compare, Logical, Where, the common Cast
// pairs and Round (floor, ceil, half-to-even, trunc). Every result equals the reference's bit for
// bit. Bool outputs are produced in 64-element words; the last partial word, the uncommon Cast
// pairs and Round's Erf go to the reference. Pow and Mod stay on the reference (ScalarByDesign).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/tensor_ops_elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_TENSOR_OPS_ELEMENTWISE_OPS_
#define BACKPLANE_CPU_KERNELS_TENSOR_OPS_ELEMENTWISE_OPS_
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
namespace backplane::cpu::simd::tensor_ew {
// Storage kinds the vector paths handle.
enum Kind : int { kF32, kF64, kF16, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kNone };
constexpr size_t kWord = 64;  // elements per packed bool word
}  // namespace backplane::cpu::simd::tensor_ew
#endif

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace tensor_ew;  // NOLINT

// The Lanes(d) mask bits of `word` from bit `shift` on (little-endian, as LoadMaskBits reads).
template <class D>
HWY_INLINE auto TewMaskFromWord(D d, uint64_t word, size_t shift) {
  uint8_t bytes[8];
  const uint64_t w = word >> shift;
  std::memcpy(bytes, &w, 8);
  return hn::LoadMaskBits(d, bytes);
}

template <class D, class M>
HWY_INLINE uint64_t TewWordFromMask(D d, M m) {
  uint8_t bytes[8] = {};
  hn::StoreMaskBits(d, m, bytes);
  uint64_t w;
  std::memcpy(&w, bytes, 8);
  const size_t n = hn::Lanes(d);
  return n >= 64 ? w : w & ((uint64_t{1} << n) - 1);
}

// Lanes(d) elements of storage kind K at p as lanes of d (f16/bf16 widened to f32).
template <int K, class D, class T>
HWY_INLINE hn::Vec<D> TewLoadAs(D d, const T* p) {
  if constexpr (K == kF16 || K == kBF16) {
    return LoadWidenU16<K == kBF16>(d, reinterpret_cast<const uint16_t*>(p));
  } else {
    return hn::LoadU(d, p);
  }
}

// ---- Compare ---------------------------------------------------------------------------------------
// NotEqual is Not(Eq), true for NaN; integer Le/Ge are Not(Gt)/Not(Lt) (no NaN).
template <class D, class V>
HWY_INLINE auto TewCompareMask(D, int op, V a, V b) {
  using T = hn::TFromD<D>;
  switch (op) {
    case 0:
      return hn::Eq(a, b);
    case 1:
      return hn::Not(hn::Eq(a, b));
    case 2:
      return hn::Lt(a, b);
    case 3:
      if constexpr (hwy::IsFloat<T>())
        return hn::Le(a, b);
      else
        return hn::Not(hn::Gt(a, b));
    case 4:
      return hn::Gt(a, b);
    default:
      if constexpr (hwy::IsFloat<T>())
        return hn::Ge(a, b);
      else
        return hn::Not(hn::Lt(a, b));
  }
}

// Compares whole 64-element words; T is the lane type, S the storage element type.
template <int K, class T, class S>
size_t TewCompareWords(int op, const S* a, const S* b, uint8_t* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const size_t words = lanes <= kWord ? n / kWord : 0;
  for (size_t w = 0; w < words; ++w) {
    uint64_t word = 0;
    for (size_t k = 0; k < kWord; k += lanes) {
      const size_t i = w * kWord + k;
      word |= TewWordFromMask(d, TewCompareMask(d, op, TewLoadAs<K>(d, a + i), TewLoadAs<K>(d, b + i))) << k;
    }
    std::memcpy(out + 8 * w, &word, 8);
  }
  return words * kWord;
}

size_t TewCompareBlocks(int kind, int op, const void* a, const void* b, uint8_t* out, size_t n) {
#define BP_CMP(K, T, S) \
  return TewCompareWords<K, T>(op, static_cast<const S*>(a), static_cast<const S*>(b), out, n)
  switch (kind) {
    case kF32:
      BP_CMP(kF32, float, float);
    case kF64:
      BP_CMP(kF64, double, double);
    case kF16:
      BP_CMP(kF16, float, uint16_t);
    case kBF16:
      BP_CMP(kBF16, float, uint16_t);
    case kI8:
      BP_CMP(kI8, int8_t, int8_t);
    case kU8:
      BP_CMP(kU8, uint8_t, uint8_t);
    case kI16:
      BP_CMP(kI16, int16_t, int16_t);
    case kU16:
      BP_CMP(kU16, uint16_t, uint16_t);
    case kI32:
      BP_CMP(kI32, int32_t, int32_t);
    case kU32:
      BP_CMP(kU32, uint32_t, uint32_t);
    case kI64:
      BP_CMP(kI64, int64_t, int64_t);
    default:
      return 0;  // u64: the reference
  }
#undef BP_CMP
}

// ---- Logical, Where ------------------------------------------------------------------------------
// Whole bytes of packed bools (op: And, Or, Xor, Not).
void TewLogicalBytes(int op, const uint8_t* a, const uint8_t* b, uint8_t* out, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= bytes; i += lanes) {
    const auto x = hn::LoadU(d, a + i);
    hn::Vec<decltype(d)> r;
    switch (op) {
      case 0:
        r = hn::And(x, hn::LoadU(d, b + i));
        break;
      case 1:
        r = hn::Or(x, hn::LoadU(d, b + i));
        break;
      case 2:
        r = hn::Xor(x, hn::LoadU(d, b + i));
        break;
      default:
        r = hn::Not(x);
        break;
    }
    hn::StoreU(r, d, out + i);
  }
  for (; i < bytes; ++i) {
    switch (op) {
      case 0:
        out[i] = static_cast<uint8_t>(a[i] & b[i]);
        break;
      case 1:
        out[i] = static_cast<uint8_t>(a[i] | b[i]);
        break;
      case 2:
        out[i] = static_cast<uint8_t>(a[i] ^ b[i]);
        break;
      default:
        out[i] = static_cast<uint8_t>(~a[i]);
        break;
    }
  }
}

template <class T>
size_t TewWhereWords(const uint8_t* cond, const T* a, const T* b, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const size_t words = lanes <= kWord ? n / kWord : 0;
  for (size_t w = 0; w < words; ++w) {
    uint64_t word;
    std::memcpy(&word, cond + 8 * w, 8);
    for (size_t k = 0; k < kWord; k += lanes) {
      const size_t i = w * kWord + k;
      hn::StoreU(hn::IfThenElse(TewMaskFromWord(d, word, k), hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d,
                 out + i);
    }
  }
  return words * kWord;
}

// Element size `bytes` (1, 2, 4, 8: raw bits), or 0 for packed bools (whole bytes only).
size_t TewWhereBlocks(int bytes, const uint8_t* cond, const void* a, const void* b, void* out, size_t n) {
  switch (bytes) {
    case 1:
      return TewWhereWords(cond, static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b),
                           static_cast<uint8_t*>(out), n);
    case 2:
      return TewWhereWords(cond, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                           static_cast<uint16_t*>(out), n);
    case 4:
      return TewWhereWords(cond, static_cast<const uint32_t*>(a), static_cast<const uint32_t*>(b),
                           static_cast<uint32_t*>(out), n);
    case 8:
      return TewWhereWords(cond, static_cast<const uint64_t*>(a), static_cast<const uint64_t*>(b),
                           static_cast<uint64_t*>(out), n);
    default: {
      const hn::ScalableTag<uint8_t> d;
      const size_t lanes = hn::Lanes(d), full = n / 8;
      const auto* pa = static_cast<const uint8_t*>(a);
      const auto* pb = static_cast<const uint8_t*>(b);
      auto* po = static_cast<uint8_t*>(out);
      size_t i = 0;
      for (; i + lanes <= full; i += lanes) {
        const auto c = hn::LoadU(d, cond + i);
        hn::StoreU(hn::Or(hn::And(c, hn::LoadU(d, pa + i)), hn::AndNot(c, hn::LoadU(d, pb + i))), d, po + i);
      }
      for (; i < full; ++i) po[i] = static_cast<uint8_t>((cond[i] & pa[i]) | (~cond[i] & pb[i]));
      return full * 8;
    }
  }
}

// ---- Cast ----------------------------------------------------------------------------------------
// Float lanes to signed integer lanes of the same width: truncation, NaN -> 0, saturation.
template <class DI, class DF>
HWY_INLINE hn::Vec<DI> TewFloatToIntSame(DI di, DF df, hn::Vec<DF> v) {
  using F = hn::TFromD<DF>;
  using I = hn::TFromD<DI>;
  const F hi = static_cast<F>(2.0) * static_cast<F>(static_cast<I>(std::numeric_limits<I>::max() / 2 + 1));
  const F lo = -hi;
  v = hn::IfThenZeroElse(hn::IsNaN(v), v);
  const auto big = hn::RebindMask(di, hn::Ge(v, hn::Set(df, hi)));
  // The largest float below 2^(bits-1) keeps the conversion in range; `big` lanes are fixed after.
  const F below = std::nextafter(hi, F(0));
  const auto clamped = hn::Min(hn::Max(v, hn::Set(df, lo)), hn::Set(df, below));
  return hn::IfThenElse(big, hn::Set(di, std::numeric_limits<I>::max()), hn::ConvertTo(di, clamped));
}

// Narrows n f64 values into f32 (nearest even, as static_cast<float>).
void TewF64ToF32(const double* in, float* out, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(DemoteF32(df, hn::LoadU(dd, in + i)), df, out + i);
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void TewF32ToF64(const float* in, double* out, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::PromoteTo(dd, hn::LoadU(df, in + i)), dd, out + i);
  for (; i < n; ++i) out[i] = static_cast<double>(in[i]);
}

// Float (or integer) storage to packed bools, x != 0 (NaN true).
template <class T>
size_t TewToBoolWords(const T* in, uint8_t* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const size_t words = lanes <= kWord ? n / kWord : 0;
  for (size_t w = 0; w < words; ++w) {
    uint64_t word = 0;
    for (size_t k = 0; k < kWord; k += lanes) {
      word |= TewWordFromMask(d, hn::Not(hn::Eq(hn::LoadU(d, in + w * kWord + k), hn::Zero(d)))) << k;
    }
    std::memcpy(out + 8 * w, &word, 8);
  }
  return words * kWord;
}

constexpr size_t kTewBlock = 1024;

// Elements converted (0: the pair has no vector path; bool outputs: whole words only).
size_t TewCastBlocks(int from, int to, const void* in, void* out, size_t n) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<double> dd;
  const hn::ScalableTag<int32_t> di;
  const hn::ScalableTag<int64_t> dl;
  const hn::Rebind<int32_t, decltype(dd)> di_d;
  const hn::Rebind<float, decltype(dd)> df_d;
  if (to == kNone) {  // -> bool
    switch (from) {
      case kF32:
        return TewToBoolWords(static_cast<const float*>(in), static_cast<uint8_t*>(out), n);
      case kF64:
        return TewToBoolWords(static_cast<const double*>(in), static_cast<uint8_t*>(out), n);
      case kI32:
        return TewToBoolWords(static_cast<const int32_t*>(in), static_cast<uint8_t*>(out), n);
      case kI64:
        return TewToBoolWords(static_cast<const int64_t*>(in), static_cast<uint8_t*>(out), n);
      default:
        return 0;
    }
  }
  const size_t lf = hn::Lanes(df), ld = hn::Lanes(dd);
  size_t i = 0;
  if (from == kF32 && to == kF64) {
    TewF32ToF64(static_cast<const float*>(in), static_cast<double*>(out), n);
  } else if (from == kF64 && to == kF32) {
    TewF64ToF32(static_cast<const double*>(in), static_cast<float*>(out), n);
  } else if ((from == kF16 || from == kBF16) && to == kF32) {
    WidenBlock(static_cast<const uint16_t*>(in), static_cast<float*>(out), n, from == kBF16);
  } else if (from == kF32 && (to == kF16 || to == kBF16)) {
    NarrowBlock(static_cast<const float*>(in), static_cast<uint16_t*>(out), n, to == kBF16);
  } else if ((from == kF16 || from == kBF16) && to == kF64) {
    HWY_ALIGN float f[kTewBlock];
    for (; i < n; i += kTewBlock) {
      const size_t m = n - i < kTewBlock ? n - i : kTewBlock;
      WidenBlock(static_cast<const uint16_t*>(in) + i, f, m, from == kBF16);
      TewF32ToF64(f, static_cast<double*>(out) + i, m);
    }
  } else if (from == kF32 && to == kI32) {
    const auto* p = static_cast<const float*>(in);
    auto* o = static_cast<int32_t*>(out);
    for (; i + lf <= n; i += lf) hn::StoreU(TewFloatToIntSame(di, df, hn::LoadU(df, p + i)), di, o + i);
    return i;  // the tail: the reference
  } else if (from == kF64 && to == kI64) {
    const auto* p = static_cast<const double*>(in);
    auto* o = static_cast<int64_t*>(out);
    for (; i + ld <= n; i += ld) hn::StoreU(TewFloatToIntSame(dl, dd, hn::LoadU(dd, p + i)), dl, o + i);
    return i;
  } else if (from == kF32 && to == kI64) {
    const auto* p = static_cast<const float*>(in);
    auto* o = static_cast<int64_t*>(out);
    for (; i + ld <= n; i += ld) {
      hn::StoreU(TewFloatToIntSame(dl, dd, hn::PromoteTo(dd, hn::LoadU(df_d, p + i))), dl, o + i);
    }
    return i;
  } else if (from == kF64 && to == kI32) {
    // In f64 both int32 bounds are exact: zero NaN, clamp, truncate.
    const auto* p = static_cast<const double*>(in);
    auto* o = static_cast<int32_t*>(out);
    for (; i + ld <= n; i += ld) {
      auto v = hn::LoadU(dd, p + i);
      v = hn::IfThenZeroElse(hn::IsNaN(v), v);
      v = hn::Min(hn::Max(v, hn::Set(dd, -2147483648.0)), hn::Set(dd, 2147483647.0));
      hn::StoreU(hn::DemoteTo(di_d, v), di_d, o + i);
    }
    return i;
  } else if (from == kI32 && to == kF32) {
    const auto* p = static_cast<const int32_t*>(in);
    auto* o = static_cast<float*>(out);
    for (; i + lf <= n; i += lf) hn::StoreU(hn::ConvertTo(df, hn::LoadU(di, p + i)), df, o + i);
    return i;
  } else if (from == kI32 && to == kF64) {
    const auto* p = static_cast<const int32_t*>(in);
    auto* o = static_cast<double*>(out);
    for (; i + ld <= n; i += ld) hn::StoreU(hn::PromoteTo(dd, hn::LoadU(di_d, p + i)), dd, o + i);
    return i;
  } else if (from == kI32 && to == kI64) {
    const hn::Rebind<int32_t, decltype(dl)> di_l;
    const auto* p = static_cast<const int32_t*>(in);
    auto* o = static_cast<int64_t*>(out);
    for (; i + ld <= n; i += ld) hn::StoreU(hn::PromoteTo(dl, hn::LoadU(di_l, p + i)), dl, o + i);
    return i;
  } else {
    return 0;
  }
  return n;
}

// ---- Round ---------------------------------------------------------------------------------------
// The result takes the sign of x, as IEEE roundToIntegral (ceil(-0.5) = -0); Highway 1.0.3's
// SSSE3 and scalar paths lose the sign of zero results.
template <class V>
HWY_INLINE V TewApplyRound(int op, V x) {
  V r;
  switch (op) {
    case 0:
      r = hn::Floor(x);
      break;
    case 1:
      r = hn::Ceil(x);
      break;
    case 2:
      r = hn::Round(x);
      break;  // nearest, ties to even
    default:
      r = hn::Trunc(x);
      break;
  }
  return hn::CopySign(r, x);
}

template <class T>
void TewRoundTyped(int op, const T* x, T* out, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(TewApplyRound(op, hn::LoadU(d, x + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN T t[hn::MaxLanes(d)] = {};
    for (size_t k = 0; i + k < n; ++k) t[k] = x[i + k];
    hn::Store(TewApplyRound(op, hn::Load(d, t)), d, t);
    for (size_t k = 0; i + k < n; ++k) out[i + k] = t[k];
  }
}

void TewRoundF32(int op, const float* x, float* out, size_t n) { TewRoundTyped(op, x, out, n); }
void TewRoundF64(int op, const double* x, double* out, size_t n) { TewRoundTyped(op, x, out, n); }

// f16/bf16: widened exactly, rounded (an integer of at most the input's magnitude is exact in its
// format), narrowed exactly.
void TewRoundHalf(int op, const uint16_t* x, uint16_t* out, size_t n, bool bf16) {
  HWY_ALIGN float f[kTewBlock];
  for (size_t i = 0; i < n; i += kTewBlock) {
    const size_t m = n - i < kTewBlock ? n - i : kTewBlock;
    WidenBlock(x + i, f, m, bf16);
    TewRoundTyped(op, f, f, m);
    NarrowBlock(f, out + i, m, bf16);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(TewCompareBlocks);
HWY_EXPORT(TewLogicalBytes);
HWY_EXPORT(TewWhereBlocks);
HWY_EXPORT(TewCastBlocks);
HWY_EXPORT(TewRoundF32);
HWY_EXPORT(TewRoundF64);
HWY_EXPORT(TewRoundHalf);

namespace {
using namespace tensor_ew;  // NOLINT

int KindOf(DType d) {
  switch (d) {
    case DType::Float32:
      return kF32;
    case DType::Float64:
      return kF64;
    case DType::Float16:
      return kF16;
    case DType::BFloat16:
      return kBF16;
    case DType::Int8:
      return kI8;
    case DType::Uint8:
      return kU8;
    case DType::Int16:
      return kI16;
    case DType::Uint16:
      return kU16;
    case DType::Int32:
      return kI32;
    case DType::Uint32:
      return kU32;
    case DType::Int64:
      return kI64;
    case DType::Uint64:
      return kU64;
    default:
      return kNone;
  }
}

// Bytes of element i (i a multiple of 8 for Bool).
const void* Skip(const void* p, DType d, size_t i) {
  return static_cast<const char*>(p) + DTypeStorageBytes(d, static_cast<int64_t>(i));
}
void* Skip(void* p, DType d, size_t i) {
  return static_cast<char*>(p) + DTypeStorageBytes(d, static_cast<int64_t>(i));
}

bool Bad(int64_t count, std::initializer_list<const void*> ptrs) {
  if (count < 0) return true;
  if (count == 0) return false;
  for (const void* p : ptrs) {
    if (p == nullptr) return true;
  }
  return false;
}

void Compare(const CompareConfig& config, const void* a, const void* b, void* out, int64_t count,
             DType dtype) {
  const auto op = static_cast<int32_t>(config.Op);
  const int kind = KindOf(dtype);
  if (kind == kNone || op < 0 || op > 5 || Bad(count, {a, b, out})) {
    return Reference().TensorOps_Compare(config, a, b, out, count, dtype);
  }
  const auto n = static_cast<size_t>(count);
  const size_t done = HWY_DYNAMIC_DISPATCH(TewCompareBlocks)(kind, op, a, b, static_cast<uint8_t*>(out), n);
  if (done < n) {
    Reference().TensorOps_Compare(config, Skip(a, dtype, done), Skip(b, dtype, done),
                                  Skip(out, DType::Bool, done), static_cast<int64_t>(n - done), dtype);
  }
}

void Logical(const LogicalConfig& config, const void* a, const void* b, void* out, int64_t count,
             DType dtype) {
  const auto op = static_cast<int32_t>(config.Op);
  const bool needs_b = config.Op != LogicalOp::Not;
  if (dtype != DType::Bool || op < 0 || op > 3 || Bad(count, {a, out}) || (needs_b && Bad(count, {b}))) {
    return Reference().TensorOps_Logical(config, a, b, out, count, dtype);
  }
  const auto n = static_cast<size_t>(count);
  const size_t full = n / 8;
  HWY_DYNAMIC_DISPATCH(TewLogicalBytes)
  (op, static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<uint8_t*>(out), full);
  if (full * 8 < n) {
    const size_t done = full * 8;
    Reference().TensorOps_Logical(config, Skip(a, DType::Bool, done),
                                  needs_b ? Skip(b, DType::Bool, done) : nullptr,
                                  Skip(out, DType::Bool, done), static_cast<int64_t>(n - done), dtype);
  }
}

void Where(const void* cond, const void* a, const void* b, void* out, int64_t count, DType dtype) {
  if (!kTensorDTypesAndBool.Contains(dtype) || Bad(count, {cond, a, b, out})) {
    return Reference().TensorOps_Where(cond, a, b, out, count, dtype);
  }
  const auto n = static_cast<size_t>(count);
  const int bytes = dtype == DType::Bool ? 0 : static_cast<int>(DTypeStorageBytes(dtype, 1));
  const size_t done =
      HWY_DYNAMIC_DISPATCH(TewWhereBlocks)(bytes, static_cast<const uint8_t*>(cond), a, b, out, n);
  if (done < n) {
    Reference().TensorOps_Where(Skip(cond, DType::Bool, done), Skip(a, dtype, done), Skip(b, dtype, done),
                                Skip(out, dtype, done), static_cast<int64_t>(n - done), dtype);
  }
}

void Cast(const void* in, DType from, void* out, DType to, int64_t count) {
  const int kf = KindOf(from);
  const int kt = to == DType::Bool ? kNone : KindOf(to);
  if (kf == kNone || (kt == kNone && to != DType::Bool) || from == to || Bad(count, {in, out})) {
    return Reference().TensorOps_Cast(in, from, out, to, count);
  }
  const auto n = static_cast<size_t>(count);
  const size_t done = HWY_DYNAMIC_DISPATCH(TewCastBlocks)(kf, kt, in, out, n);
  if (done < n) {
    Reference().TensorOps_Cast(Skip(in, from, done), from, Skip(out, to, done), to,
                               static_cast<int64_t>(n - done));
  }
}

void Round(const RoundConfig& config, const void* in, void* out, int64_t count, DType dtype) {
  const auto op = static_cast<int32_t>(config.Op);
  const int kind = KindOf(dtype);
  if (kind > kBF16 || op < 0 || op > 3 || Bad(count, {in, out})) {  // Erf: the reference
    return Reference().TensorOps_Round(config, in, out, count, dtype);
  }
  const auto n = static_cast<size_t>(count);
  switch (kind) {
    case kF32:
      return HWY_DYNAMIC_DISPATCH(TewRoundF32)(op, static_cast<const float*>(in), static_cast<float*>(out),
                                               n);
    case kF64:
      return HWY_DYNAMIC_DISPATCH(TewRoundF64)(op, static_cast<const double*>(in), static_cast<double*>(out),
                                               n);
    default:
      return HWY_DYNAMIC_DISPATCH(TewRoundHalf)(op, static_cast<const uint16_t*>(in),
                                                static_cast<uint16_t*>(out), n, kind == kBF16);
  }
}

}  // namespace

void RegisterTensorOpsElementwise(KernelTable& t) {
  t.TensorOps_Compare = &Compare;
  t.TensorOps_Logical = &Logical;
  t.TensorOps_Where = &Where;
  t.TensorOps_Cast = &Cast;
  t.TensorOps_Round = &Round;
  t.ScalarByDesign(catalog::MethodId::TensorOps_Pow,
                   "std::pow in f64, rounded once: Highway has no vector pow, and exp(b log a) in lanes is "
                   "not within one rounding of the oracle");
  t.ScalarByDesign(
      catalog::MethodId::TensorOps_Mod,
      "C fmod is exact and Highway has no vector fmod or integer division; a - trunc(a / b) b in "
      "lanes is not exact");
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
