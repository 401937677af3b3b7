// Highway kernels for the BlockQuant surface (ggml block formats, block_format.hpp).
//
// Dequantize: bit-identical to the reference. Each block is decoded into codes q (int8), a scale
// d per 16 values and, for the formats with one, an offset m per 16 values; then y = (q - offset)
// * d, + m or - m, in f32 vector lanes with the reference's formulas (Q6_K: d * sc first). Every
// product is exact in f32 (at most 24 significant bits) except Q8_K's f32 d * q, rounded once, so
// the one rounding of the offset matches with or without FMA contraction. Codes are unpacked 16
// bytes at a time (Q4_0/1, Q5_0/1, Q4_K, Q5_K, Q6_K; Q8_x are copies), Q2_K/Q3_K and the
// one-lane HWY_SCALAR target with plain loops. F32 is a copy, F16/BF16 widen as convert.hpp.
//
// MatmulT (dst[r, o] = sum_i x[r, i] W[o, i]), the weights never expanded to f32 as a whole:
// - Quantised formats: each activation row is quantised once per call to 8-bit codes in blocks of
//   32 (d_x = max|x| / 127, q_x = round(x / d_x), f32 d_x, the code sums kept per 16 values), and
//   every weight block is written as w = d * q + m with unsigned codes q (offset formats: m =
//   -offset * d, exact) or, for the 8-bit formats, signed codes and m = 0. Per block the integer
//   dot sum(q_w q_x) is scaled by d_w d_x in f32 and the offset adds m d_x sum(q_x), as ggml's
//   vec_dot_q4_1_q8_1 (but with f32 d_x, and blocks of 32 for the K formats too). The error
//   against the exact f64 reference is bounded by the activation rounding (d_x / 2 per value) and
//   f32 accumulation; src/conformance/runners_block_quant.cpp states the bound and checks it.
//   x86 (AVX2, AVX-512): intrinsics (block_quant-inl.h) with vpmaddubsw/vpmaddwd or, when the CPU
//   has AVX-512 VNNI (run-time check), vpdpbusd. Fewer than kPanelMinRows activation rows of
//   Q4_0/Q4_1/Q8_0/Q8_1 run fused dots straight from the blocks, four weight rows at a time with
//   prefetching; everything else decodes kPanelRows weight rows into a panel (codes, scales
//   pre-broadcast) and runs 2 x 4 register tiles over it, so each weight row is decoded once per
//   call. The 4-bit and 5-bit formats with one scale per 32 values pair their blocks: the codes
//   of blocks 2k and 2k + 1 share one integer dot and one f32 scaling. Other targets: the same
//   panels with a portable Highway dot (i8 widened to i16, ReorderWidenMulAccumulate).
// - F32/F16/BF16 weights, and activation rows holding Inf or NaN: each weight row is dequantised
//   into a row buffer and dotted in f64, so non-finite results match the reference's.
// Threads split the output features in chunks that depend only on the sizes (multiples of
// kPanelRows); each output is computed by the same instructions whatever chunk or tile holds it.
// Invalid arguments, count 0 and overlapping buffers go to the reference: errors are identical.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/block_quant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/kernels/convert-inl.h"

#ifndef BACKPLANE_CPU_KERNELS_BLOCK_QUANT_SHARED_
#define BACKPLANE_CPU_KERNELS_BLOCK_QUANT_SHARED_
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backplane/block_format.hpp"
#include "backplane/convert.hpp"

namespace backplane::cpu::simd::block_quant_ops {

// How a format's blocks enter the integer path.
enum class Path : int { kFloat, kUnsigned, kSigned };

struct Traits {
  Path path;
  int offset;  // the decoded code minus `offset` is the signed value (Q4_0: 8)
  bool has_m;  // value = d * q + m
  bool m_sub;  // value = d * q - m (the K formats' mins), as the reference writes it
};

inline Traits TraitsOf(BlockFormat f) {
  switch (f) {
    case BlockFormat::Q4_0:
      return {Path::kUnsigned, 8, false, false};
    case BlockFormat::Q5_0:
      return {Path::kUnsigned, 16, false, false};
    case BlockFormat::Q3_K:
      return {Path::kUnsigned, 4, false, false};
    case BlockFormat::Q6_K:
      return {Path::kUnsigned, 32, false, false};
    case BlockFormat::Q4_1:
    case BlockFormat::Q5_1:
      return {Path::kUnsigned, 0, true, false};
    case BlockFormat::Q2_K:
    case BlockFormat::Q4_K:
    case BlockFormat::Q5_K:
      return {Path::kUnsigned, 0, true, true};
    case BlockFormat::Q8_0:
    case BlockFormat::Q8_1:
    case BlockFormat::Q8_K:
      return {Path::kSigned, 0, false, false};
    default:
      return {Path::kFloat, 0, false, false};
  }
}

// Activation rows quantised to 8-bit codes in blocks of 32 (in = 32 nb values per row).
struct QuantizedX {
  int8_t* q;        // [rows, in] codes in [-127, 127]
  int8_t* qi;       // [rows, in] the codes of each pair of blocks (2k, 2k + 1) as values 0..15
                    // of both, then 16..31 of both; an odd last block in order
  float* dxs;       // [rows, nb] pairs {d_x, d_x * sum of the block's codes}
  float* dx8;       // rows at PairStride(nb): per pair of blocks {d_x0} x 4, {d_x1} x 4
  float* sh;        // rows at MStride(nb): per block {d_x * sum of codes 0..15, .. 16..31}
  uint8_t* finite;  // [rows] 0 when the row holds Inf or NaN (its codes are then 0)
  int64_t in, nb;
};

// Decoded weight rows: row r at q + r * nb * 32, d8 + r * nb * 8, m2 + r * MStride(nb).
struct Panel {
  int8_t* q;  // codes (unsigned formats: 0 .. 63; signed formats: the int8 values); paired:
              // each pair of blocks interleaved as QuantizedX::qi
  float* d8;  // per block {d of values 0..15} x 4, {d of values 16..31} x 4; paired: per pair
              // of blocks {d0} x 4, {d1} x 4
  float* m2;  // per block {m of values 0..15, m of values 16..31} (unsigned formats)
  int64_t nb;
  bool is_signed;
  bool paired;  // x86, unsigned formats with one scale per 32 values
};

// One MatmulT call: dst [rows, out], x [rows, in], weight rows of row_bytes.
struct MatmulArgs {
  float* dst;
  const float* x;
  const uint8_t* w;
  int64_t rows, out, in, row_bytes;
  uint32_t format;
  const QuantizedX* qx;  // null for F32/F16/BF16 weights
};

// Floats per row of the per-16-value offset terms (QuantizedX::sh, Panel::m2): 2 nb, padded with
// zeros to whole 8-lane vectors.
inline int64_t MStride(int64_t nb) { return (2 * nb + 7) / 8 * 8; }
// Floats per row of QuantizedX::dx8: 8 per pair of blocks (an odd last block: its d_x x 8).
inline int64_t PairStride(int64_t nb) { return (nb + 1) / 2 * 8; }

constexpr int64_t kPanelRows = 8;  // weight rows decoded together
// Fewer activation rows: fused row dots where available (on Zen 3 they beat the panels up to 8 to
// 16 rows of Q4_1, and about match them for Q8_0).
constexpr int64_t kPanelMinRows = 8;
constexpr float kMinAmax = 1e-30f;  // blocks of x with a smaller max |x| quantise to 0

}  // namespace backplane::cpu::simd::block_quant_ops
#endif  // BACKPLANE_CPU_KERNELS_BLOCK_QUANT_SHARED_

HWY_BEFORE_NAMESPACE();
namespace backplane::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace block_quant_ops;  // NOLINT

// The VNNI variant needs GCC's target pragma; clang (the fuzz and TSan builds) ignores it and
// refuses the VNNI intrinsics inside Highway's AVX3 functions, so clang builds use the AVX2 dots.
#ifndef BP_BQ_VNNI
#if defined(__clang__)
#define BP_BQ_VNNI 0
#else
#define BP_BQ_VNNI 1
#endif
#endif

#if (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3) && !defined(HWY_DISABLE_F16C)
#define BP_BQ_X86 1
#else
#define BP_BQ_X86 0
#endif

namespace {

// f16 bits at p (any alignment) as f32, exactly as F16ToF32: vcvtph2ps gives the same bits;
// elsewhere the bit operations of LoadWidenU16 (convert-inl.h), inline (NaN quieted, payload kept).
HWY_INLINE float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#if BP_BQ_X86
  return _cvtsh_ss(h);
#else
  const uint32_t em = h & 0x7FFFu, sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t bits;
  if (em >= 0x7C00u) {  // Inf, NaN
    bits = ((em << 13) + 0x70000000u) | (em > 0x7C00u ? 0x00400000u : 0u);
  } else if (em >= 0x0400u) {  // normal: rebias the exponent 15 -> 127
    bits = (em << 13) + 0x38000000u;
  } else {  // subnormal or zero: em * 2^-24 is exact in f32
    bits = std::bit_cast<uint32_t>(static_cast<float>(em) * 0x1.0p-24f);
  }
  return std::bit_cast<float>(sign | bits);
#endif
}

// ---- Decoding: codes q[256 or 32], d and m per 16 values ---------------------------------------

// Sixteen codes at a time: 16-byte vectors (plain loops on HWY_SCALAR, which has one lane).
#if HWY_TARGET != HWY_SCALAR
using Bytes16 = hn::FixedTag<uint8_t, 16>;
HWY_INLINE hn::Vec<Bytes16> Load16(const uint8_t* p) { return hn::LoadU(Bytes16(), p); }
HWY_INLINE void Store16(hn::Vec<Bytes16> v, int8_t* q) {
  hn::StoreU(v, Bytes16(), reinterpret_cast<uint8_t*>(q));
}
HWY_INLINE hn::Vec<Bytes16> Low4(hn::Vec<Bytes16> v) {
  return hn::And(v, hn::Set(Bytes16(), 0x0F));
}
HWY_INLINE hn::Vec<Bytes16> High4(hn::Vec<Bytes16> v) { return hn::ShiftRight<4>(v); }
// 16 where v has any bit of `bit`, else 0.
HWY_INLINE hn::Vec<Bytes16> Sixteen(hn::Vec<Bytes16> v, uint8_t bit) {
  const Bytes16 d;
  return hn::IfThenElseZero(hn::Ne(hn::And(v, hn::Set(d, bit)), hn::Zero(d)), hn::Set(d, 16));
}
#endif

// 4-bit codes: value j in the low nibble of qs[j], value 16 + j in its high nibble.
HWY_INLINE void Nibbles32(const uint8_t* qs, int8_t* q) {
#if HWY_TARGET != HWY_SCALAR
  const auto v = Load16(qs);
  Store16(Low4(v), q);
  Store16(High4(v), q + 16);
#else
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>(qs[j] & 0x0F);
    q[j + 16] = static_cast<int8_t>(qs[j] >> 4);
  }
#endif
}

// Byte k of kFifthBits[v] is 16 when bit k of v is set, else 0.
constexpr auto kFifthBits = [] {
  std::array<uint64_t, 256> t{};
  for (int v = 0; v < 256; ++v) {
    for (int k = 0; k < 8; ++k) t[v] |= uint64_t{((v >> k) & 1) != 0 ? 16u : 0u} << (8 * k);
  }
  return t;
}();

// Q5 codes: Nibbles32 plus 16 for value j when bit j of the four bytes qh is set.
HWY_INLINE void Fives32(const uint8_t* qs, const uint8_t* qh, int8_t* q) {
  uint8_t high[32];
  for (int k = 0; k < 4; ++k)
    std::memcpy(high + 8 * k, &kFifthBits[qh[k]], 8);  // little-endian bytes
#if HWY_TARGET != HWY_SCALAR
  const auto v = Load16(qs);
  Store16(hn::Or(Low4(v), Load16(high)), q);
  Store16(hn::Or(High4(v), Load16(high + 16)), q + 16);
#else
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>((qs[j] & 0x0F) | high[j]);
    q[j + 16] = static_cast<int8_t>((qs[j] >> 4) | high[j + 16]);
  }
#endif
}

// ggml's get_scale_min_k4: 6-bit scale and min j of the 12 packed bytes.
HWY_INLINE void ScaleMinK4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

template <BlockFormat F>
HWY_INLINE void DecodeBlock(const uint8_t* b, int8_t* q, float* d, float* m) {
  if constexpr (F == BlockFormat::Q4_0) {
    d[0] = d[1] = Half(b);
    Nibbles32(b + 2, q);
  } else if constexpr (F == BlockFormat::Q4_1) {
    d[0] = d[1] = Half(b);
    m[0] = m[1] = Half(b + 2);
    Nibbles32(b + 4, q);
  } else if constexpr (F == BlockFormat::Q5_0) {
    d[0] = d[1] = Half(b);
    Fives32(b + 6, b + 2, q);
  } else if constexpr (F == BlockFormat::Q5_1) {
    d[0] = d[1] = Half(b);
    m[0] = m[1] = Half(b + 2);
    Fives32(b + 8, b + 4, q);
  } else if constexpr (F == BlockFormat::Q8_0 || F == BlockFormat::Q8_1) {
    constexpr int kCodes = F == BlockFormat::Q8_0 ? 2 : 4;
    d[0] = d[1] = Half(b);
    std::memcpy(q, b + kCodes, 32);
  } else if constexpr (F == BlockFormat::Q2_K) {
    // scales[16], qs[64], d, dmin. Group g of 16 values: qs half (g % 2) of 32-byte part g / 8,
    // bits 2 * ((g % 8) / 2); d * (scale & 15), m = dmin * (scale >> 4) (subtracted).
    const float dall = Half(b + 80), dmin = Half(b + 82);
    for (int g = 0; g < 16; ++g) {
      const uint8_t sc = b[g];
      d[g] = dall * static_cast<float>(sc & 0xF);
      m[g] = dmin * static_cast<float>(sc >> 4);
      const uint8_t* qs = b + 16 + 32 * (g / 8) + 16 * (g % 2);
      const int shift = 2 * ((g % 8) / 2);
      for (int l = 0; l < 16; ++l) q[16 * g + l] = static_cast<int8_t>((qs[l] >> shift) & 3);
    }
  } else if constexpr (F == BlockFormat::Q3_K) {
    // hmask[32], qs[64], scales[12], d. Codes 0..7 (offset 4): the high bit set means "no -4".
    const float dall = Half(b + 108);
    uint32_t aux[4];
    std::memcpy(aux, b + 96, 12);
    const uint32_t tmp = aux[2];
    constexpr uint32_t kMask1 = 0x03030303, kMask2 = 0x0f0f0f0f;
    aux[2] = ((aux[0] >> 4) & kMask2) | (((tmp >> 4) & kMask1) << 4);
    aux[3] = ((aux[1] >> 4) & kMask2) | (((tmp >> 6) & kMask1) << 4);
    aux[0] = (aux[0] & kMask2) | (((tmp >> 0) & kMask1) << 4);
    aux[1] = (aux[1] & kMask2) | (((tmp >> 2) & kMask1) << 4);
    int8_t scales[16];
    std::memcpy(scales, aux, 16);
    for (int g = 0; g < 16; ++g) {
      d[g] = dall * static_cast<float>(scales[g] - 32);
      const int n = g / 8, j = (g % 8) / 2, half = g % 2;
      const uint8_t* qs = b + 32 + 32 * n + 16 * half;
      const uint8_t* hm = b + 16 * half;
      const uint8_t bit = static_cast<uint8_t>(1u << (4 * n + j));
      for (int l = 0; l < 16; ++l) {
        q[16 * g + l] = static_cast<int8_t>(((qs[l] >> (2 * j)) & 3) | ((hm[l] & bit) ? 4 : 0));
      }
    }
  } else if constexpr (F == BlockFormat::Q4_K || F == BlockFormat::Q5_K) {
    // d, dmin, scales[12], (Q5_K: qh[32]), qs[128]; 64 values per pair of 6-bit scales/mins.
    const float dall = Half(b), dmin = Half(b + 2);
    const uint8_t* qh = b + 16;
    const uint8_t* ql = b + (F == BlockFormat::Q5_K ? 48 : 16);
    for (int j = 0; j < 4; ++j) {
      for (int h = 0; h < 2; ++h) {
        int sc, mn;
        ScaleMinK4(2 * j + h, b + 4, &sc, &mn);
        const int g = 4 * j + 2 * h;
        d[g] = d[g + 1] = dall * static_cast<float>(sc);
        m[g] = m[g + 1] = dmin * static_cast<float>(mn);
        const uint8_t hbit = static_cast<uint8_t>(1u << (2 * j + h));
#if HWY_TARGET != HWY_SCALAR
        for (int k = 0; k < 2; ++k) {
          const auto v = Load16(ql + 32 * j + 16 * k);
          auto c = h == 0 ? Low4(v) : High4(v);
          if constexpr (F == BlockFormat::Q5_K) c = hn::Or(c, Sixteen(Load16(qh + 16 * k), hbit));
          Store16(c, q + 64 * j + 32 * h + 16 * k);
        }
#else
        for (int l = 0; l < 32; ++l) {
          int v = h == 0 ? (ql[32 * j + l] & 0xF) : (ql[32 * j + l] >> 4);
          if constexpr (F == BlockFormat::Q5_K) v |= (qh[l] & hbit) ? 16 : 0;
          q[64 * j + 32 * h + l] = static_cast<int8_t>(v);
        }
#endif
      }
    }
  } else if constexpr (F == BlockFormat::Q6_K) {
    // ql[128], qh[64], scales[16] (int8), d. Codes 0..63 (offset 32), scale of value i: i / 16.
    const float dall = Half(b + 208);
    for (int g = 0; g < 16; ++g) d[g] = dall * static_cast<float>(static_cast<int8_t>(b[192 + g]));
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = b + 64 * n;
      const uint8_t* qh = b + 128 + 32 * n;
      int8_t* out = q + 128 * n;
#if HWY_TARGET != HWY_SCALAR
      const Bytes16 d8;
      const auto three = hn::Set(d8, 3);
      for (int k = 0; k < 32; k += 16) {
        const auto l0 = Load16(ql + k), l1 = Load16(ql + 32 + k), h = Load16(qh + k);
        Store16(hn::Or(Low4(l0), hn::ShiftLeft<4>(hn::And(h, three))), out + k);
        Store16(hn::Or(Low4(l1), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(h), three))),
                out + 32 + k);
        Store16(hn::Or(High4(l0), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(h), three))),
                out + 64 + k);
        Store16(hn::Or(High4(l1), hn::ShiftLeft<4>(hn::ShiftRight<6>(h))), out + 96 + k);
      }
#else
      for (int l = 0; l < 32; ++l) {
        out[l] = static_cast<int8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
        out[l + 32] = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
        out[l + 64] = static_cast<int8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        out[l + 96] = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
      }
#endif
    }
  } else if constexpr (F == BlockFormat::Q8_K) {
    float dall;
    std::memcpy(&dall, b, 4);
    for (int g = 0; g < 16; ++g) d[g] = dall;
    std::memcpy(q, b + 4, 256);
  }
}

// Decodes `blocks` blocks of a quantised format: codes q[blocks * elements], d and m per 16
// values (m only for formats with has_m; subtracted for m_sub).
template <BlockFormat F>
void DecodeAll(const uint8_t* src, int64_t blocks, int8_t* q, float* d, float* m) {
  constexpr int64_t kElements =
      (F == BlockFormat::Q2_K || F == BlockFormat::Q3_K || F == BlockFormat::Q4_K ||
       F == BlockFormat::Q5_K || F == BlockFormat::Q6_K || F == BlockFormat::Q8_K)
          ? 256
          : 32;
  const int64_t bytes = LayoutOf(F).bytes;
  for (int64_t i = 0; i < blocks; ++i) {
    DecodeBlock<F>(src + i * bytes, q + i * kElements, d + i * (kElements / 16),
                   m + i * (kElements / 16));
  }
}

void Decode(BlockFormat f, const uint8_t* src, int64_t blocks, int8_t* q, float* d, float* m) {
  switch (f) {
    case BlockFormat::Q4_0:
      return DecodeAll<BlockFormat::Q4_0>(src, blocks, q, d, m);
    case BlockFormat::Q4_1:
      return DecodeAll<BlockFormat::Q4_1>(src, blocks, q, d, m);
    case BlockFormat::Q5_0:
      return DecodeAll<BlockFormat::Q5_0>(src, blocks, q, d, m);
    case BlockFormat::Q5_1:
      return DecodeAll<BlockFormat::Q5_1>(src, blocks, q, d, m);
    case BlockFormat::Q8_0:
      return DecodeAll<BlockFormat::Q8_0>(src, blocks, q, d, m);
    case BlockFormat::Q8_1:
      return DecodeAll<BlockFormat::Q8_1>(src, blocks, q, d, m);
    case BlockFormat::Q2_K:
      return DecodeAll<BlockFormat::Q2_K>(src, blocks, q, d, m);
    case BlockFormat::Q3_K:
      return DecodeAll<BlockFormat::Q3_K>(src, blocks, q, d, m);
    case BlockFormat::Q4_K:
      return DecodeAll<BlockFormat::Q4_K>(src, blocks, q, d, m);
    case BlockFormat::Q5_K:
      return DecodeAll<BlockFormat::Q5_K>(src, blocks, q, d, m);
    case BlockFormat::Q6_K:
      return DecodeAll<BlockFormat::Q6_K>(src, blocks, q, d, m);
    case BlockFormat::Q8_K:
      return DecodeAll<BlockFormat::Q8_K>(src, blocks, q, d, m);
    default:
      return;
  }
}

// ---- Dequantize --------------------------------------------------------------------------------

// dst[16 g + i] = (q - offset) * d[g] (+ m[g], or - m[g]) for `groups` groups of 16 values.
void ScaleGroups(const int8_t* q, const float* d, const float* m, int64_t groups, Traits t,
                 float* dst) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t lanes = hn::Lanes(df);
  const auto offset = hn::Set(di, t.offset);
  for (int64_t g = 0; g < groups; ++g) {
    const auto vd = hn::Set(df, d[g]);
    for (size_t k = 0; k < 16; k += lanes) {
      const auto code = hn::Sub(hn::PromoteTo(di, hn::LoadU(d8, q + 16 * g + k)), offset);
      auto y = hn::Mul(hn::ConvertTo(df, code), vd);
      if (t.has_m) y = t.m_sub ? hn::Sub(y, hn::Set(df, m[g])) : hn::Add(y, hn::Set(df, m[g]));
      hn::StoreU(y, df, dst + 16 * g + k);
    }
  }
}

}  // namespace

// `blocks` blocks of `format` at src (any alignment) into dst, exactly as the reference.
void DequantizeBlocks(uint32_t format, const uint8_t* src, float* dst, int64_t blocks) {
  const auto f = static_cast<BlockFormat>(format);
  if (f == BlockFormat::F32) {
    std::memcpy(dst, src, static_cast<size_t>(blocks) * 4);
    return;
  }
  if (f == BlockFormat::F16 || f == BlockFormat::BF16) {
    constexpr int64_t kBatch = 1024;
    HWY_ALIGN uint16_t h[kBatch];
    for (int64_t i = 0; i < blocks; i += kBatch) {
      const int64_t n = std::min(kBatch, blocks - i);
      std::memcpy(h, src + 2 * i, static_cast<size_t>(n) * 2);
      WidenBlock(h, dst + i, static_cast<size_t>(n), f == BlockFormat::BF16);
    }
    return;
  }
  const Traits t = TraitsOf(f);
  const int64_t elements = LayoutOf(f).elements, bytes = LayoutOf(f).bytes;
  constexpr int64_t kBatch = 2048;  // values per batch: a multiple of 256
  HWY_ALIGN int8_t q[kBatch];
  HWY_ALIGN float d[kBatch / 16], m[kBatch / 16];
  const int64_t per_batch = kBatch / elements;
  for (int64_t i = 0; i < blocks; i += per_batch) {
    const int64_t n = std::min(per_batch, blocks - i);
    Decode(f, src + i * bytes, n, q, d, m);
    ScaleGroups(q, d, m, n * elements / 16, t, dst + i * elements);
  }
}

// ---- Activation quantisation -------------------------------------------------------------------

// Rows [r_begin, r_end) of x [rows, in] (in = 32 qx.nb) into qx.
void QuantizeRows(const float* x, const QuantizedX& qx, int64_t r_begin, int64_t r_end) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t lanes = hn::Lanes(df);
  const int64_t in = qx.in, nb = qx.nb;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const float* xr = x + r * in;
    int8_t* qr = qx.q + r * in;
    int8_t* qi = qx.qi + r * in;
    float* ds = qx.dxs + r * 2 * nb;
    float* dx8 = qx.dx8 + r * PairStride(nb);
    float* s = qx.sh + r * MStride(nb);
    std::fill(s, s + MStride(nb), 0.0f);
    auto probe = hn::Zero(df);  // NaN when any value is Inf or NaN
    for (int64_t i = 0; i < in; i += static_cast<int64_t>(lanes)) {
      probe = hn::Add(probe, hn::Mul(hn::LoadU(df, xr + i), hn::Zero(df)));
    }
    qx.finite[r] = hn::AllTrue(df, hn::Eq(probe, probe)) ? 1 : 0;
    if (qx.finite[r] == 0) {
      std::memset(qr, 0, static_cast<size_t>(in));
      std::memset(qi, 0, static_cast<size_t>(in));
      std::fill(ds, ds + 2 * nb, 0.0f);
      std::fill(dx8, dx8 + PairStride(nb), 0.0f);
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = xr + 32 * b;
      auto vmax = hn::Zero(df);
      for (size_t k = 0; k < 32; k += lanes) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, xb + k)));
      const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
      const float d = amax >= kMinAmax ? amax / 127.0f : 0.0f;
      const auto id = hn::Set(df, d != 0.0f ? 1.0f / d : 0.0f);
      int32_t sums[2];
      for (size_t h = 0; h < 2; ++h) {
        auto acc = hn::Zero(di);
        for (size_t k = 16 * h; k < 16 * h + 16; k += lanes) {
          auto code = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + k), id));
          code = hn::Min(hn::Max(code, hn::Set(di, -127)), hn::Set(di, 127));
          acc = hn::Add(acc, code);
          hn::StoreU(hn::DemoteTo(d8, code), d8, qr + 32 * b + k);
        }
        sums[h] = hn::GetLane(hn::SumOfLanes(di, acc));
      }
      ds[2 * b] = d;
      ds[2 * b + 1] = d * static_cast<float>(sums[0] + sums[1]);
      s[2 * b] = d * static_cast<float>(sums[0]);
      s[2 * b + 1] = d * static_cast<float>(sums[1]);
      // Paired layout: block b is half (b % 2) of pair b / 2, or the odd last block in order.
      const int64_t pair = b / 2;
      if (b % 2 == 1 || b + 1 < nb) {
        std::memcpy(qi + 64 * pair + 16 * (b % 2), qr + 32 * b, 16);
        std::memcpy(qi + 64 * pair + 32 + 16 * (b % 2), qr + 32 * b + 16, 16);
        std::fill(dx8 + 8 * pair + 4 * (b % 2), dx8 + 8 * pair + 4 * (b % 2) + 4, d);
      } else {
        std::memcpy(qi + 64 * pair, qr + 32 * b, 32);
        std::fill(dx8 + 8 * pair, dx8 + 8 * pair + 8, d);
      }
    }
  }
}

// ---- MatmulT -----------------------------------------------------------------------------------

#if BP_BQ_X86
namespace x86 {
#define BP_BQ_DPBUSD 0
#include "cpu/kernels/block_quant-inl.h"
#undef BP_BQ_DPBUSD
}  // namespace x86
#if HWY_TARGET == HWY_AVX3 && BP_BQ_VNNI
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")
namespace vnni {
#define BP_BQ_DPBUSD 1
#include "cpu/kernels/block_quant-inl.h"
#undef BP_BQ_DPBUSD
}  // namespace vnni
#pragma GCC pop_options
#endif
#endif

namespace {

#if BP_BQ_X86 && HWY_TARGET == HWY_AVX3 && BP_BQ_VNNI
bool UseVnni() {
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  return vnni;
}
#endif

#if !BP_BQ_X86
// Portable panel dot: sum over blocks of d_w d_x sum(q_w q_x) + the m terms, i8 codes widened to
// i16 and multiplied pairwise into i32 lanes, one 16-value half at a time.
float PortablePanelDot(const Panel& p, int64_t r, const QuantizedX& x, int64_t c) {
  const hn::CappedTag<int16_t, 16> d16;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  const hn::Rebind<float, decltype(d32)> df;
  const hn::Rebind<int8_t, decltype(d16)> d8;
  const size_t lanes = hn::Lanes(d16);
  const int64_t nb = p.nb;
  const int8_t* wq = p.q + r * nb * 32;
  const float* wd = p.d8 + r * nb * 8;
  const int8_t* xq = x.q + c * x.in;
  const float* xds = x.dxs + c * 2 * nb;
  auto acc = hn::Zero(df);
  for (int64_t b = 0; b < nb; ++b) {
    for (size_t h = 0; h < 2; ++h) {
      auto sum0 = hn::Zero(d32), sum1 = hn::Zero(d32);
      for (size_t k = 16 * h; k < 16 * h + 16; k += lanes) {
        const auto w = hn::PromoteTo(d16, hn::LoadU(d8, wq + 32 * b + k));
        const auto v = hn::PromoteTo(d16, hn::LoadU(d8, xq + 32 * b + k));
        sum0 = hn::ReorderWidenMulAccumulate(d32, w, v, sum0, sum1);
      }
      const auto isum = hn::ConvertTo(df, hn::Add(sum0, sum1));
      acc = hn::MulAdd(isum, hn::Set(df, wd[8 * b + 4 * h] * xds[2 * b]), acc);
    }
  }
  float v = hn::GetLane(hn::SumOfLanes(df, acc));
  if (!p.is_signed) {
    const float* m = p.m2 + r * MStride(nb);
    const float* s = x.sh + c * MStride(nb);
    float mt = 0.0f;
    for (int64_t k = 0; k < 2 * nb; ++k) mt += m[k] * s[k];
    v += mt;
  }
  return v;
}
#endif

// Decodes weight rows [o0, o0 + n) into p.
void BuildPanel(BlockFormat f, const uint8_t* w, int64_t row_bytes, int64_t o0, int64_t n, Traits t,
                Panel& p) {
  const int64_t nb = p.nb;
  thread_local std::vector<float> d16, m16;
  thread_local std::vector<int8_t> natural;
  d16.resize(static_cast<size_t>(2 * nb));
  m16.resize(static_cast<size_t>(2 * nb));
  natural.resize(static_cast<size_t>(32 * nb));
  const int64_t blocks = nb * 32 / LayoutOf(f).elements;
  for (int64_t r = 0; r < n; ++r) {
    int8_t* q = p.q + r * nb * 32;
    float* d8 = p.d8 + r * nb * 8;
    float* m2 = p.m2 + r * MStride(nb);
    std::fill(m2 + 2 * nb, m2 + MStride(nb), 0.0f);
    Decode(f, w + (o0 + r) * row_bytes, blocks, p.paired ? natural.data() : q, d16.data(),
           m16.data());
    for (int64_t g = 0; g < 2 * nb; ++g) {
      // value = d q + m2: m2 = -offset * d (exact) for the offset formats.
      const float m = m16[static_cast<size_t>(g)];
      m2[g] = t.has_m ? (t.m_sub ? -m : m)
                      : -static_cast<float>(t.offset) * d16[static_cast<size_t>(g)];
    }
    if (!p.paired) {
      for (int64_t g = 0; g < 2 * nb; ++g)
        std::fill(d8 + 4 * g, d8 + 4 * g + 4, d16[static_cast<size_t>(g)]);
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) {  // as QuantizeRows lays out QuantizedX::qi and dx8
      const int8_t* src = natural.data() + 32 * b;
      const float d = d16[static_cast<size_t>(2 * b)];
      const int64_t pair = b / 2, half = b % 2;
      if (half == 1 || b + 1 < nb) {
        std::memcpy(q + 64 * pair + 16 * half, src, 16);
        std::memcpy(q + 64 * pair + 32 + 16 * half, src + 16, 16);
        std::fill(d8 + 8 * pair + 4 * half, d8 + 8 * pair + 4 * half + 4, d);
      } else {
        std::memcpy(q + 64 * pair, src, 32);
        std::fill(d8 + 8 * pair, d8 + 8 * pair + 8, d);
      }
    }
  }
}

double DotF64(const float* a, const float* b, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const auto lanes = static_cast<int64_t>(hn::Lanes(dd));
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(df, a + i)),
                      hn::PromoteTo(dd, hn::LoadU(df, b + i)), acc0);
    acc1 = hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(df, a + i + lanes)),
                      hn::PromoteTo(dd, hn::LoadU(df, b + i + lanes)), acc1);
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
  for (; i < n; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

// Outputs [o_begin, o_end) of the rows c with all_rows or !finite[c]: weight rows dequantised,
// f64 dots.
void GenericRows(BlockFormat f, const float* x, const uint8_t* w, int64_t row_bytes, int64_t rows,
                 int64_t out, int64_t in, const uint8_t* finite, bool all_rows, int64_t o_begin,
                 int64_t o_end, float* dst) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(in));
  const int64_t blocks = in / LayoutOf(f).elements;
  for (int64_t o = o_begin; o < o_end; ++o) {
    DequantizeBlocks(static_cast<uint32_t>(f), w + o * row_bytes, row.data(), blocks);
    for (int64_t c = 0; c < rows; ++c) {
      if (all_rows || finite[c] == 0)
        dst[c * out + o] = static_cast<float>(DotF64(x + c * in, row.data(), in));
    }
  }
}

}  // namespace

// Outputs [o_begin, o_end) of every row.
void MatmulRows(const MatmulArgs& a, int64_t o_begin, int64_t o_end) {
  const auto f = static_cast<BlockFormat>(a.format);
  const Traits t = TraitsOf(f);
  if (t.path == Path::kFloat) {
    return GenericRows(f, a.x, a.w, a.row_bytes, a.rows, a.out, a.in, nullptr, true, o_begin, o_end,
                       a.dst);
  }
  const QuantizedX& x = *a.qx;
  bool done = false;
#if BP_BQ_X86
  const bool fused = a.rows < kPanelMinRows && (f == BlockFormat::Q4_0 || f == BlockFormat::Q4_1 ||
                                                f == BlockFormat::Q8_0 || f == BlockFormat::Q8_1);
  if (fused) {
#if HWY_TARGET == HWY_AVX3 && BP_BQ_VNNI
    if (UseVnni()) {
      vnni::FusedDots(f, a.w, a.row_bytes, o_begin, o_end, x, a.rows, a.dst, a.out);
    } else {
      x86::FusedDots(f, a.w, a.row_bytes, o_begin, o_end, x, a.rows, a.dst, a.out);
    }
#else
    x86::FusedDots(f, a.w, a.row_bytes, o_begin, o_end, x, a.rows, a.dst, a.out);
#endif
    done = true;
  }
#endif
  if (!done) {
    const int64_t nb = x.nb;
    thread_local std::vector<int8_t> q;
    thread_local std::vector<float> d8, m2;
    q.resize(static_cast<size_t>(kPanelRows * nb * 32));
    d8.resize(static_cast<size_t>(kPanelRows * nb * 8));
    m2.resize(static_cast<size_t>(kPanelRows * MStride(nb)));
    // Paired panels (x86): the unsigned formats with one scale per 32 values.
    const bool paired =
        BP_BQ_X86 && (f == BlockFormat::Q4_0 || f == BlockFormat::Q4_1 || f == BlockFormat::Q5_0 ||
                      f == BlockFormat::Q5_1 || f == BlockFormat::Q4_K || f == BlockFormat::Q5_K);
    Panel p{q.data(), d8.data(), m2.data(), nb, t.path == Path::kSigned, paired};
    for (int64_t o0 = o_begin; o0 < o_end; o0 += kPanelRows) {
      const int64_t n = std::min(kPanelRows, o_end - o0);
      BuildPanel(f, a.w, a.row_bytes, o0, n, t, p);
#if BP_BQ_X86
#if HWY_TARGET == HWY_AVX3 && BP_BQ_VNNI
      if (UseVnni()) {
        vnni::PanelDots(p, n, x, a.rows, a.dst, a.out, o0);
      } else {
        x86::PanelDots(p, n, x, a.rows, a.dst, a.out, o0);
      }
#else
      x86::PanelDots(p, n, x, a.rows, a.dst, a.out, o0);
#endif
#else
      for (int64_t c = 0; c < a.rows; ++c) {
        for (int64_t r = 0; r < n; ++r) a.dst[c * a.out + o0 + r] = PortablePanelDot(p, r, x, c);
      }
#endif
    }
  }
  bool all_finite = true;
  for (int64_t c = 0; c < a.rows; ++c) all_finite = all_finite && x.finite[c] != 0;
  if (!all_finite) {
    GenericRows(f, a.x, a.w, a.row_bytes, a.rows, a.out, a.in, x.finite, false, o_begin, o_end,
                a.dst);
  }
}

#undef BP_BQ_X86
}  // namespace backplane::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <limits>

#include "backplane/cpu/threads.hpp"
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {
HWY_EXPORT(DequantizeBlocks);
HWY_EXPORT(QuantizeRows);
HWY_EXPORT(MatmulRows);

namespace {
using namespace block_quant_ops;  // NOLINT

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// a * b, or -1 when an operand is negative or the product overflows int64.
int64_t CheckedMul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return -1;
  if (a != 0 && b > kMax / a) return -1;
  return a * b;
}

bool Overlap(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + static_cast<uint64_t>(b_bytes) && pb < pa + static_cast<uint64_t>(a_bytes);
}

void Dequantize(BP_PARAMS_BlockDequant) {
  const auto ref = [&] { Reference().BlockQuant_Dequantize(BP_ARGS_BlockDequant); };
  if (!BlockFormatFromGgmlType(static_cast<uint32_t>(srcFormat)) || dstFormat != DType::Float32 ||
      count <= 0 || dst == nullptr || src == nullptr) {
    return ref();
  }
  const BlockLayout layout = LayoutOf(srcFormat);
  const int64_t blocks = count / layout.elements;
  const int64_t in_bytes = CheckedMul(blocks, layout.bytes), out_bytes = CheckedMul(count, 4);
  if (count % layout.elements != 0 || in_bytes < 0 || out_bytes < 0 ||
      Overlap(dst, out_bytes, src, in_bytes)) {
    return ref();
  }
  const int64_t grain = std::max<int64_t>(1, 65536 / layout.elements);  // blocks per chunk
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<float*>(dst);
  ParallelFor(blocks, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(DequantizeBlocks)
    (static_cast<uint32_t>(srcFormat), s + b * layout.bytes, d + b * layout.elements, e - b);
  });
}

void MatmulT(BP_PARAMS_BlockMatmul) {
  const auto ref = [&] { Reference().BlockQuant_MatmulT(BP_ARGS_BlockMatmul); };
  if (!BlockFormatFromGgmlType(static_cast<uint32_t>(weightFormat)) || dtype != DType::Float32 ||
      rows <= 0 || outFeatures <= 0 || inFeatures <= 0 || dst == nullptr || x == nullptr ||
      weights == nullptr) {
    return ref();
  }
  const BlockLayout layout = LayoutOf(weightFormat);
  if (inFeatures % layout.elements != 0) return ref();
  const int64_t row_bytes = CheckedMul(inFeatures / layout.elements, layout.bytes);
  const int64_t w_bytes = CheckedMul(row_bytes, outFeatures);
  const int64_t x_bytes = CheckedMul(CheckedMul(rows, inFeatures), 4);
  const int64_t y_bytes = CheckedMul(CheckedMul(rows, outFeatures), 4);
  if (row_bytes < 0 || w_bytes < 0 || x_bytes < 0 || y_bytes < 0 ||
      Overlap(dst, y_bytes, x, x_bytes) || Overlap(dst, y_bytes, weights, w_bytes)) {
    return ref();
  }
  const auto* xf = static_cast<const float*>(x);
  const bool quantised = TraitsOf(weightFormat).path != Path::kFloat;
  // The activation codes of this call (32 | inFeatures for every quantised format). The workers
  // see them through qx: inside the lambda a thread_local name would be the worker's own buffer.
  thread_local std::vector<int8_t> q, qi;
  thread_local std::vector<float> dxs, dx8, sh;
  thread_local std::vector<uint8_t> finite;
  QuantizedX qx{};
  if (quantised) {
    const int64_t nb = inFeatures / 32;
    q.resize(static_cast<size_t>(rows * inFeatures));
    qi.resize(static_cast<size_t>(rows * inFeatures));
    dxs.resize(static_cast<size_t>(rows * 2 * nb));
    dx8.resize(static_cast<size_t>(rows * PairStride(nb)));
    sh.resize(static_cast<size_t>(rows * MStride(nb)));
    finite.resize(static_cast<size_t>(rows));
    qx = {q.data(), qi.data(), dxs.data(), dx8.data(), sh.data(), finite.data(), inFeatures, nb};
    ParallelFor(rows, std::max<int64_t>(1, 32768 / inFeatures), [&](int64_t b, int64_t e) {
      HWY_DYNAMIC_DISPATCH(QuantizeRows)(xf, qx, b, e);
    });
  }
  const MatmulArgs args{static_cast<float*>(dst),
                        xf,
                        static_cast<const uint8_t*>(weights),
                        rows,
                        outFeatures,
                        inFeatures,
                        row_bytes,
                        static_cast<uint32_t>(weightFormat),
                        quantised ? &qx : nullptr};
  // Output features per chunk: a multiple of the panel height, about 2^16 multiply-adds or more.
  const int64_t work = std::max<int64_t>(1, rows * inFeatures);
  const int64_t grain = std::clamp<int64_t>(
      (65536 / work + kPanelRows - 1) / kPanelRows * kPanelRows, kPanelRows, 4096);
  ParallelFor(outFeatures, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(MatmulRows)(args, b, e);
  });
}

}  // namespace

void RegisterBlockQuant(KernelTable& t) {
  t.BlockQuant_Dequantize = &Dequantize;
  t.BlockQuant_MatmulT = &MatmulT;
}

}  // namespace backplane::cpu::simd
#endif  // HWY_ONCE
