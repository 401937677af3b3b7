// Highway kernels for the RoPE surface: RoPE ([seq, heads, headDim]) and RoPEPairs (one vector,
// caller-supplied cos/sin), both with interleaved (GPT-J) pairs (x[2p], x[2p+1]), for f64, f32 and
// (widened to f32) f16/bf16.
//
// As the reference, everything is f64: the inverse frequencies BaseFreq^(-2p/headDim) (std::pow,
// once per call, bit-identical), the angles position * invf[p] (once per position and frequency,
// bit-identical), their cosines and sines (hn::Cos/hn::Sin in f64 lanes where every angle of the
// position is within Highway's valid range |theta| <= 39000, measured within 3.4e-16 of std::cos/
// std::sin there; std::cos/std::sin otherwise), and the rotation x0 c - x1 s, x0 s + x1 c on pairs
// split with LoadInterleaved2 and merged with StoreInterleaved2, each output rounded once (f16/bf16
// through f32, round to nearest even). Positions run in parallel when the tensor is large; every
// pair is read before it is written, so out may equal in. Anything else (bad arguments, size 0,
// partially overlapping buffers) goes to the reference. Nothing stays scalar by design.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/rope.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_ROPE_SHARED_
#define BACKPLANE_CPU_KERNELS_ROPE_SHARED_
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
namespace backplane::cpu::simd::rope_ops {
// Highway's documented valid range for Sin/Cos.
constexpr double kMaxVectorAngle = 39000.0;

// One RoPE call: inverse frequencies, their largest value, and the row shape.
struct RoPEParams {
  const double* invf;  // half values
  double invf_max;
  int64_t start;  // the position of row 0
  size_t heads;
  size_t head_dim;
};
}  // namespace backplane::cpu::simd::rope_ops
#endif  // BACKPLANE_CPU_KERNELS_ROPE_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;
using namespace rope_ops;  // NOLINT

// Rotates `half` pairs: y[2p] = x[2p] c[p] - x[2p+1] s[p], y[2p+1] = x[2p] s[p] + x[2p+1] c[p], in
// f64 lanes. Each vector of pairs is loaded before it is stored (y may equal x).
template <class T, class TC>
HWY_INLINE void RotatePairs(const T* x, T* y, const TC* c, const TC* s, size_t half) {
  const hn::ScalableTag<double> d;
  const size_t lanes = hn::Lanes(d);
  size_t p = 0;
  for (; p + lanes <= half; p += lanes) {
    const auto vc = LoadF64(d, c + p), vs = LoadF64(d, s + p);
    if constexpr (std::is_same_v<T, double>) {
      hn::Vec<decltype(d)> x0, x1;
      hn::LoadInterleaved2(d, x + 2 * p, x0, x1);
      const auto y0 = hn::Sub(hn::Mul(x0, vc), hn::Mul(x1, vs));
      const auto y1 = hn::Add(hn::Mul(x0, vs), hn::Mul(x1, vc));
      hn::StoreInterleaved2(y0, y1, d, y + 2 * p);
    } else {
      const hn::Rebind<T, decltype(d)> dt;
      hn::Vec<decltype(dt)> a, b;
      hn::LoadInterleaved2(dt, x + 2 * p, a, b);
      const auto x0 = hn::PromoteTo(d, a), x1 = hn::PromoteTo(d, b);
      const auto y0 = hn::Sub(hn::Mul(x0, vc), hn::Mul(x1, vs));
      const auto y1 = hn::Add(hn::Mul(x0, vs), hn::Mul(x1, vc));
      hn::StoreInterleaved2(DemoteF32(dt, y0), DemoteF32(dt, y1), dt, y + 2 * p);
    }
  }
  for (; p < half; ++p) {
    const double x0 = x[2 * p], x1 = x[2 * p + 1], cp = c[p], sp = s[p];
    y[2 * p] = static_cast<T>(x0 * cp - x1 * sp);
    y[2 * p + 1] = static_cast<T>(x0 * sp + x1 * cp);
  }
}

// cos and sin of theta[p] = position * invf[p] for p < half.
void AngleTable(double position, const RoPEParams& rp, double* c, double* s) {
  const size_t half = rp.head_dim / 2;
  size_t p = 0;
  if (position * rp.invf_max <= kMaxVectorAngle) {
    const hn::ScalableTag<double> d;
    const size_t lanes = hn::Lanes(d);
    const auto vpos = hn::Set(d, position);
    for (; p + lanes <= half; p += lanes) {
      const auto theta = hn::Mul(vpos, hn::LoadU(d, rp.invf + p));
      // Highway's f64 Cos(0) is 1 - 2^-53; angle 0 (position 0) must rotate by exactly nothing.
      const auto zero = hn::Eq(theta, hn::Zero(d));
      hn::StoreU(hn::IfThenElse(zero, hn::Set(d, 1.0), hn::Cos(d, theta)), d, c + p);
      hn::StoreU(hn::Sin(d, theta), d, s + p);
    }
  }
  for (; p < half; ++p) {
    const double theta = position * rp.invf[p];
    c[p] = std::cos(theta);
    s[p] = std::sin(theta);
  }
}

template <class T>
void RoPERows(const T* in, T* out, size_t first, size_t rows, const RoPEParams& rp, double* table) {
  const size_t half = rp.head_dim / 2, row = rp.heads * rp.head_dim;
  for (size_t r = 0; r < rows; ++r) {
    AngleTable(static_cast<double>(rp.start + static_cast<int64_t>(first + r)), rp, table, table + half);
    for (size_t h = 0; h < rp.heads; ++h) {
      const size_t off = r * row + h * rp.head_dim;
      RotatePairs(in + off, out + off, table, table + half, half);
    }
  }
}

}  // namespace

// Rows (positions) first .. first + rows - 1 of the tensor; `table` holds head_dim doubles.
void RoPERowsF32(const float* in, float* out, size_t first, size_t rows, const RoPEParams& rp, double* table) {
  RoPERows(in, out, first, rows, rp, table);
}

void RoPERowsF64(const double* in, double* out, size_t first, size_t rows, const RoPEParams& rp, double* table) {
  RoPERows(in, out, first, rows, rp, table);
}

// f16/bf16 rows through `buf` (one row of floats), widened exactly and rounded to nearest even.
void RoPERowsHalf(const uint16_t* in, uint16_t* out, size_t first, size_t rows, const RoPEParams& rp, double* table,
                  bool bf16, float* buf) {
  const size_t row = rp.heads * rp.head_dim;
  for (size_t r = 0; r < rows; ++r) {
    WidenBlock(in + r * row, buf, row, bf16);
    RoPERows<float>(buf, buf, first + r, 1, rp, table);
    NarrowBlock(buf, out + r * row, row, bf16);
  }
}

void RoPEPairsF32(float* out, const float* in, const float* c, const float* s, size_t half) {
  RotatePairs(in, out, c, s, half);
}

void RoPEPairsF64(double* out, const double* in, const double* c, const double* s, size_t half) {
  RotatePairs(in, out, c, s, half);
}

constexpr size_t kBlock = 512;  // pairs

void RoPEPairsHalf(uint16_t* out, const uint16_t* in, const uint16_t* c, const uint16_t* s, size_t half, bool bf16) {
  HWY_ALIGN float fx[2 * kBlock], fc[kBlock], fs[kBlock];
  for (size_t p = 0; p < half; p += kBlock) {
    const size_t m = half - p < kBlock ? half - p : kBlock;
    WidenBlock(in + 2 * p, fx, 2 * m, bf16);
    WidenBlock(c + p, fc, m, bf16);
    WidenBlock(s + p, fs, m, bf16);
    RotatePairs(fx, fx, fc, fs, m);
    NarrowBlock(fx, out + 2 * p, 2 * m, bf16);
  }
}

}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
using rope_ops::RoPEParams;
HWY_EXPORT(RoPERowsF32);
HWY_EXPORT(RoPERowsF64);
HWY_EXPORT(RoPERowsHalf);
HWY_EXPORT(RoPEPairsF32);
HWY_EXPORT(RoPEPairsF64);
HWY_EXPORT(RoPEPairsHalf);

namespace {

constexpr int64_t kMinChunkElements = int64_t{1} << 16;

bool FloatDType(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// false: the reference handles the call (it throws, or the size is 0, or in/out overlap partially).
bool RoPE(const RoPEConfig& config, const void* in, void* out, int64_t seq, int64_t heads, int64_t head_dim,
          DType dtype) {
  int64_t last = 0, rows = 0, count = 0;
  if (!FloatDType(dtype) || seq < 0 || heads < 0 || head_dim < 0 || head_dim % 2 != 0 ||
      !std::isfinite(config.BaseFreq) || !(config.BaseFreq > 0.0) || config.StartPosition < 0 ||
      __builtin_add_overflow(config.StartPosition, seq, &last) || __builtin_mul_overflow(seq, heads, &rows) ||
      __builtin_mul_overflow(rows, head_dim, &count)) {
    return false;
  }
  if (count == 0 || in == nullptr || out == nullptr) return false;
  const size_t bytes = DTypeStorageBytes(dtype, count);
  if (in != out && Overlap(in, bytes, out, bytes)) return false;

  const auto half = static_cast<size_t>(head_dim / 2);
  std::vector<double> invf(half);
  double invf_max = 0.0;
  for (size_t p = 0; p < half; ++p) {
    const double exponent = -2.0 * static_cast<double>(p) / static_cast<double>(head_dim);
    invf[p] = std::pow(config.BaseFreq, exponent);
    invf_max = std::max(invf_max, invf[p]);
  }
  const RoPEParams rp{invf.data(), invf_max, config.StartPosition, static_cast<size_t>(heads),
                      static_cast<size_t>(head_dim)};
  const int64_t row = heads * head_dim;
  const int64_t grain = std::max<int64_t>(1, kMinChunkElements / row);
  ParallelFor(seq, grain, [&](int64_t r0, int64_t r1) {
    const auto first = static_cast<size_t>(r0), nrows = static_cast<size_t>(r1 - r0);
    const size_t offset = first * static_cast<size_t>(row);
    std::vector<double> table(2 * half);
    switch (dtype) {
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(RoPERowsF32)(static_cast<const float*>(in) + offset, static_cast<float*>(out) + offset,
                                          first, nrows, rp, table.data());
        break;
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(RoPERowsF64)(static_cast<const double*>(in) + offset,
                                          static_cast<double*>(out) + offset, first, nrows, rp, table.data());
        break;
      default: {
        std::vector<float> buf(static_cast<size_t>(row));
        HWY_DYNAMIC_DISPATCH(RoPERowsHalf)(static_cast<const uint16_t*>(in) + offset,
                                           static_cast<uint16_t*>(out) + offset, first, nrows, rp, table.data(),
                                           dtype == DType::BFloat16, buf.data());
      }
    }
  });
  return true;
}

bool RoPEPairs(void* out, const void* in, const void* cos, const void* sin, int64_t half, DType dtype) {
  if (!FloatDType(dtype) || half <= 0 || half > INT64_MAX / 2) return false;
  if (out == nullptr || in == nullptr || cos == nullptr || sin == nullptr) return false;
  const size_t vec = DTypeStorageBytes(dtype, 2 * half), table = DTypeStorageBytes(dtype, half);
  if ((in != out && Overlap(in, vec, out, vec)) || Overlap(out, vec, cos, table) || Overlap(out, vec, sin, table)) {
    return false;
  }
  const int64_t grain = kMinChunkElements / 2;  // pairs
  ParallelFor(half, grain, [&](int64_t p0, int64_t p1) {
    const auto p = static_cast<size_t>(p0), m = static_cast<size_t>(p1 - p0);
    switch (dtype) {
      case DType::Float32:
        HWY_DYNAMIC_DISPATCH(RoPEPairsF32)(static_cast<float*>(out) + 2 * p, static_cast<const float*>(in) + 2 * p,
                                           static_cast<const float*>(cos) + p, static_cast<const float*>(sin) + p, m);
        break;
      case DType::Float64:
        HWY_DYNAMIC_DISPATCH(RoPEPairsF64)(static_cast<double*>(out) + 2 * p, static_cast<const double*>(in) + 2 * p,
                                           static_cast<const double*>(cos) + p, static_cast<const double*>(sin) + p,
                                           m);
        break;
      default:
        HWY_DYNAMIC_DISPATCH(RoPEPairsHalf)(
            static_cast<uint16_t*>(out) + 2 * p, static_cast<const uint16_t*>(in) + 2 * p,
            static_cast<const uint16_t*>(cos) + p, static_cast<const uint16_t*>(sin) + p, m, dtype == DType::BFloat16);
    }
  });
  return true;
}

}  // namespace

void RegisterRoPE(KernelTable& t) {
  t.RoPE_RoPE = [](const RoPEConfig& config, const void* in, void* out, int64_t seq, int64_t heads, int64_t head_dim,
                   DType dtype) {
    if (!RoPE(config, in, out, seq, heads, head_dim, dtype)) {
      Reference().RoPE_RoPE(config, in, out, seq, heads, head_dim, dtype);
    }
  };
  t.RoPE_RoPEPairs = [](void* out, const void* in, const void* cos, const void* sin, int64_t half, DType dtype) {
    if (!RoPEPairs(out, in, cos, sin, half, dtype)) Reference().RoPE_RoPEPairs(out, in, cos, sin, half, dtype);
  };
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
