// Scalar reference kernels for the BlockQuant surface: ggml's block formats (block_format.hpp),
// decoded as ggml's dequantize_row_* (ggml/src/ggml-quants.c) compute them, so results are
// bit-identical to ggml's scalar code. Layouts and semantics: docs/semantics/block_quant.md.
//
// Exact float formulas (what a fast kernel must reproduce bit for bit). Everything is f32, each
// operation rounded to nearest even, in the order written. Multi-byte fields are little-endian;
// f16 fields go through F16ToF32 (exact; subnormals kept). Block element k is y[k].
// Every product below is exact in f32 except Q8_K's d*q (f32 d): an f16 value has an 11-bit
// significand, the integer factors have at most 8 bits, and no chain exceeds 24 bits (Q6_K:
// d*sc*q = 11 + 7 + 5). So only the adds (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) and Q8_K's product round,
// and an FMA or any regrouping of the products gives the same bits.
//   F32   y = the f32 value;  F16 y = F16ToF32(h);  BF16 y = BF16ToF32(h) (h << 16, NaN made quiet)
//   Q4_0  {f16 d; u8 qs[16]}        k<16: y[k] = ((qs[k]&15) - 8)*d;  y[k+16] = ((qs[k]>>4) - 8)*d
//   Q4_1  {f16 d, m; u8 qs[16]}     y[k] = (qs[k]&15)*d + m;  y[k+16] = (qs[k]>>4)*d + m
//   Q5_0  {f16 d; u32 qh; u8 qs[16]}  h(k) = bit k of qh:  y[k] = (((qs[k]&15) | h(k)<<4) - 16)*d,
//                                   y[k+16] = (((qs[k]>>4) | h(k+16)<<4) - 16)*d
//   Q5_1  {f16 d, m; u32 qh; u8 qs[16]}  y = ((nibble | h<<4))*d + m, same bit layout as Q5_0
//   Q8_0  {f16 d; i8 qs[32]}        y[k] = qs[k]*d
//   Q8_1  {f16 d, s; i8 qs[32]}     y[k] = qs[k]*d (s = d*sum(qs) is not read; ggml has no
//                                   dequantize_row_q8_1, this is the format's definition)
//   Q2_K  {u8 scales[16]; u8 qs[64]; f16 d, dmin}  sub-block s (16 values) = element 16s..16s+15:
//         dl = d*(scales[s]&15), ml = dmin*(scales[s]>>4); half h = s/8, shift = 2*((s%8)/2),
//         byte = qs[32h + 16*(s%2) + l]: y = dl*((byte>>shift)&3) - ml
//   Q3_K  {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}  6-bit scale sc(s) (s<16) unpacked as in
//         ggml (low 4 bits: scales[s%8] >> 4*(s/8); high 2 bits: scales[8 + s%4] >> 2*(s/4));
//         dl = d*(sc(s) - 32); with h, shift, l as Q2_K and mask bit b = 4h + (s%8)/2:
//         y = dl*(((qs[32h + 16*(s%2) + l]>>shift)&3) - (hmask[16*(s%2) + l] bit b ? 0 : 4))
//   Q4_K  {f16 d, dmin; u8 scales[12]; u8 qs[128]}  8 sub-blocks of 32; get_scale_min_k4(j):
//         j<4: sc = scales[j]&63, m = scales[j+4]&63; else sc = (scales[j+4]&15) |
//         (scales[j-4]>>6)<<4, m = (scales[j+4]>>4) | (scales[j]>>6)<<4.  dj = d*sc, mj = dmin*m;
//         pair p = j/2: y = dj*(j even ? qs[32p+l]&15 : qs[32p+l]>>4) - mj
//   Q5_K  {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}  as Q4_K, with
//         q = nibble + 16*(bit j of qh[l]):  y = dj*q - mj
//   Q6_K  {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}  half h (128 values), l<32, quarter t<4:
//         q = ((ql[64h + l + 32*(t%2)] >> 4*(t/2)) & 15 | ((qh[32h + l] >> 2t) & 3) << 4) - 32,
//         element 128h + 32t + l:  y = (d*scales[8h + 2t + l/16])*q
//   Q8_K  {f32 d; i8 qs[256]; i16 bsums[16]}  y[k] = d*qs[k] (bsums not read)
// MatmulT: dst[r, o] = f32(sum_i f64(x[r, i]) * f64(W[o, i])), W decoded one block at a time,
// the sum taken in i order in f64 (each product is exact there, so an FMA gives the same sum),
// rounded once to f32.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/block_format.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace block_quant {
namespace {

constexpr std::string_view kDequantize = "BlockQuant.Dequantize";
constexpr std::string_view kMatmulT = "BlockQuant.MatmulT";
constexpr int64_t kMaxBlockElements = 256;  // QK_K, the largest block

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
float LoadF16(const uint8_t* p) { return F16ToF32(LoadU16(p)); }
float LoadF32(const uint8_t* p) { return std::bit_cast<float>(LoadU32(p)); }

void DecodeQ4_0(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void DecodeQ4_1(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const float m = LoadF16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// The 5-bit values of a Q5_0/Q5_1 block (qh: the 32 high bits, qs: 16 bytes of nibbles).
std::array<int, 32> Unpack5(uint32_t qh, const uint8_t* qs) {
  std::array<int, 32> q{};
  for (int j = 0; j < 16; ++j) {
    const int xh0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    q[j] = (qs[j] & 0x0F) | xh0;
    q[j + 16] = (qs[j] >> 4) | xh1;
  }
  return q;
}

void DecodeQ5_0(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const std::array<int, 32> q = Unpack5(LoadU32(b + 2), b + 6);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
}

void DecodeQ5_1(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const float m = LoadF16(b + 2);
  const std::array<int, 32> q = Unpack5(LoadU32(b + 4), b + 8);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
}

// Q8_0 (d at 0, qs at 2) and Q8_1 (d at 0, s at 2, qs at 4).
void DecodeQ8(const uint8_t* b, int qsOffset, float* y) {
  const float d = LoadF16(b);
  const uint8_t* qs = b + qsOffset;
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(qs[j])) * d;
}

void DecodeQ2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = LoadF16(b + 80);
  const float min = LoadF16(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0x0F);
        const float ml = min * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l) {
          *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
        }
      }
      shift += 2;
    }
    q += 32;
  }
}

void DecodeQ3_K(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const float dAll = LoadF16(b + 108);
  // ggml's unpacking of the twelve scale bytes into sixteen 6-bit scales (kmask1/kmask2).
  constexpr uint32_t kmask1 = 0x03030303u;
  constexpr uint32_t kmask2 = 0x0f0f0f0fu;
  std::array<uint32_t, 4> aux{LoadU32(b + 96), LoadU32(b + 100), LoadU32(b + 104), 0};
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::array<int, 16> scales{};
  for (int s = 0; s < 16; ++s) scales[s] = static_cast<int>((aux[s / 4] >> (8 * (s % 4))) & 0xFF);

  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const float dl = dAll * static_cast<float>(scales[is++] - 32);
        for (int l = 0; l < 16; ++l) {
          const int low = (q[l + 16 * half] >> shift) & 3;
          const int value = low - ((hm[l + 16 * half] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(value);
        }
      }
      shift += 2;
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}

// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block.
void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q4_K (qh == nullptr) and Q5_K.
void DecodeQ45_K(const uint8_t* b, const uint8_t* qh, const uint8_t* ql, float* y) {
  const float d = LoadF16(b);
  const float min = LoadF16(b + 2);
  const uint8_t* scales = b + 4;
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    uint8_t sc = 0, m = 0;
    ScaleMinK4(is + 0, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = min * static_cast<float>(m);
    ScaleMinK4(is + 1, scales, &sc, &m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = min * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      const int high = (qh != nullptr && (qh[l] & u1)) ? 16 : 0;
      *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + high) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      const int high = (qh != nullptr && (qh[l] & u2)) ? 16 : 0;
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + high) - m2;
    }
    ql += 32;
    is += 2;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

void DecodeQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = LoadF16(b + 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l + 0] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

void DecodeQ8_K(const uint8_t* b, float* y) {
  const float d = LoadF32(b);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 256; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(qs[j]));
}

// Decodes one block (LayoutOf(format).elements values) of a validated format.
void DecodeBlock(BlockFormat format, const uint8_t* b, float* y) {
  switch (format) {
    case BlockFormat::F32:
      *y = LoadF32(b);
      return;
    case BlockFormat::F16:
      *y = LoadF16(b);
      return;
    case BlockFormat::BF16:
      *y = BF16ToF32(LoadU16(b));
      return;
    case BlockFormat::Q4_0:
      DecodeQ4_0(b, y);
      return;
    case BlockFormat::Q4_1:
      DecodeQ4_1(b, y);
      return;
    case BlockFormat::Q5_0:
      DecodeQ5_0(b, y);
      return;
    case BlockFormat::Q5_1:
      DecodeQ5_1(b, y);
      return;
    case BlockFormat::Q8_0:
      DecodeQ8(b, 2, y);
      return;
    case BlockFormat::Q8_1:
      DecodeQ8(b, 4, y);
      return;
    case BlockFormat::Q2_K:
      DecodeQ2_K(b, y);
      return;
    case BlockFormat::Q3_K:
      DecodeQ3_K(b, y);
      return;
    case BlockFormat::Q4_K:
      DecodeQ45_K(b, nullptr, b + 16, y);
      return;
    case BlockFormat::Q5_K:
      DecodeQ45_K(b, b + 16, b + 48, y);
      return;
    case BlockFormat::Q6_K:
      DecodeQ6_K(b, y);
      return;
    case BlockFormat::Q8_K:
      DecodeQ8_K(b, y);
      return;
  }
  throw Error(ErrorCode::Internal, "BlockQuant.DecodeBlock", "unvalidated block format");
}

// The layout of `format`; InvalidArgument naming op and arg for a value outside AllBlockFormats().
BlockLayout CheckedLayout(std::string_view op, std::string_view arg, BlockFormat format) {
  const uint32_t value = static_cast<uint32_t>(format);
  if (!BlockFormatFromGgmlType(value)) {
    ThrowInvalidArgument(op, arg, "a ggml type Backplane reads (block_format.hpp)",
                         std::to_string(value));
  }
  return LayoutOf(format);
}

// a * b for non-negative sizes; throws instead of overflowing int64.
int64_t CheckedProduct(std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(kMatmulT, arg, "representable in int64",
                         std::to_string(a) + " * " + std::to_string(b) + " overflows");
  }
  return product;
}

}  // namespace

// Writes dst[0, count); dst must not overlap src.
void Dequantize(void* dst, const void* src, int64_t count, BlockFormat srcFormat, DType dstFormat) {
  CheckDType(kDequantize, "dstFormat", dstFormat, DTypeSet{DType::Float32});
  const BlockLayout layout = CheckedLayout(kDequantize, "srcFormat", srcFormat);
  const int64_t bytes = BlockBytes(srcFormat, count, kDequantize, "count");
  CheckPointer(kDequantize, "dst", dst, count);
  CheckPointer(kDequantize, "src", src, bytes);
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<float*>(dst);
  const int64_t blocks = count / layout.elements;
  for (int64_t i = 0; i < blocks; ++i) {
    DecodeBlock(srcFormat, in + i * layout.bytes, out + i * layout.elements);
  }
}

// The whole [rows, outFeatures] result is computed before dst is written, so dst may alias x.
void MatmulT(void* dst, const void* x, const void* weights, int64_t rows, int64_t outFeatures,
             int64_t inFeatures, BlockFormat weightFormat, DType dtype) {
  CheckDType(kMatmulT, "dtype", dtype, DTypeSet{DType::Float32});
  const BlockLayout layout = CheckedLayout(kMatmulT, "weightFormat", weightFormat);
  CheckNonNegative(kMatmulT, "rows", rows);
  CheckNonNegative(kMatmulT, "outFeatures", outFeatures);
  CheckNonNegative(kMatmulT, "inFeatures", inFeatures);
  const int64_t rowBytes = BlockBytes(weightFormat, inFeatures, kMatmulT, "inFeatures");
  const int64_t xCount = CheckedProduct("rows*inFeatures", rows, inFeatures);
  const int64_t dstCount = CheckedProduct("rows*outFeatures", rows, outFeatures);
  const int64_t weightBytes = CheckedProduct("outFeatures*rowBytes", outFeatures, rowBytes);
  CheckPointer(kMatmulT, "dst", dst, dstCount);
  CheckPointer(kMatmulT, "x", x, xCount);
  CheckPointer(kMatmulT, "weights", weights, weightBytes);
  if (layout.elements > kMaxBlockElements) {
    throw Error(ErrorCode::Internal, kMatmulT, "block larger than QK_K");
  }
  if (dstCount == 0) return;  // no rows or no outputs: the weights are not read

  const auto* xs = static_cast<const float*>(x);
  const auto* w = static_cast<const uint8_t*>(weights);
  const int64_t blocks = inFeatures / layout.elements;
  std::vector<float> result(static_cast<size_t>(dstCount));
  std::vector<double> acc(static_cast<size_t>(rows));
  std::array<float, kMaxBlockElements> block{};
  for (int64_t o = 0; o < outFeatures; ++o) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t b = 0; b < blocks; ++b) {
      DecodeBlock(weightFormat, w + o * rowBytes + b * layout.bytes, block.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = xs + r * inFeatures + b * layout.elements;
        double sum = acc[static_cast<size_t>(r)];
        for (int64_t j = 0; j < layout.elements; ++j) {
          sum += static_cast<double>(xr[j]) * static_cast<double>(block[static_cast<size_t>(j)]);
        }
        acc[static_cast<size_t>(r)] = sum;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      result[static_cast<size_t>(r * outFeatures + o)] =
          static_cast<float>(acc[static_cast<size_t>(r)]);
    }
  }
  for (int64_t i = 0; i < dstCount; ++i)
    static_cast<float*>(dst)[i] = result[static_cast<size_t>(i)];
}

}  // namespace block_quant

void RegisterBlockQuant(KernelTable& table) {
  table.BlockQuant_Dequantize = &block_quant::Dequantize;
  table.BlockQuant_MatmulT = &block_quant::MatmulT;
}

}  // namespace backplane::cpu::ref
