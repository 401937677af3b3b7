// x86 kernels of the BlockQuant MatmulT integer path on 256-bit vectors (block_quant.cpp). One
// 32-value block of weight codes meets 32 activation codes in one register: DotU8S8 sums four
// adjacent u8 x s8 products into each i32 lane (lane k: bytes 4k .. 4k+3), with AVX2's
// vpmaddubsw + vpmaddwd, or with AVX-512 VNNI's vpdpbusd on 256-bit vectors (BP_BQ_DPBUSD 1);
// Dot2 does the same for two register pairs into the same lanes. All sums are exact: activation
// codes are within +-127 and unsigned weight codes <= 63 (or |w| <= 128 alone, for the signed
// 8-bit formats, which use |w| and sign(x, w)), so no vpmaddubsw pair sum or their Dot2 sum
// leaves int16. Per block (or pair of blocks) the i32 sums are converted to f32 and scaled by
// d_w * d_x. The VNNI variant differs only in DotU8S8 and Dot2.
//
// Included by block_quant.cpp inside a per-target namespace (HWY_AVX2, HWY_AVX3), once per value
// of BP_BQ_DPBUSD, so there is no include guard. The entry points (FusedDots, PanelDots) are not
// inline, so that code compiled for VNNI is only called after the run-time check.

// Sums of four adjacent u8 (u) x s8 (s) products per i32 lane.
HWY_INLINE __m256i DotU8S8(__m256i u, __m256i s) {
#if BP_BQ_DPBUSD
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// As DotU8S8 for two register pairs at once, lane k summing bytes 4k .. 4k+3 of both; u codes
// must be <= 63 (the summed vpmaddubsw pairs stay within 2 x 2 x 63 x 127 < 2^15).
HWY_INLINE __m256i Dot2(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
#if BP_BQ_DPBUSD
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#else
  return _mm256_madd_epi16(
      _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1)),
      _mm256_set1_epi16(1));
#endif
}

HWY_INLINE __m256i Load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The 32 codes of a 4-bit block (16 bytes at p): value j in the low nibble of byte j, value
// 16 + j in its high nibble.
HWY_INLINE __m256i Nibbles(const uint8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Two 4-bit blocks (16 bytes at p0, p1) in the paired layout of QuantizedX::qi: lo holds values
// 0..15 of both blocks, hi values 16..31.
HWY_INLINE void NibblePair(const uint8_t* p0, const uint8_t* p1, __m256i* lo, __m256i* hi) {
  const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0));
  const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1));
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(b0), b1, 1);
  const __m256i mask = _mm256_set1_epi8(0x0F);
  *lo = _mm256_and_si256(v, mask);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
}

// {a0 x 4, a2 x 4} of the f32 lanes of a.
HWY_INLINE __m256 SpreadEven(__m128 a) {
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(a),
                                  _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2));
}

HWY_INLINE uint32_t Bytes4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
HWY_INLINE uint32_t Bytes2(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// {sum of a, sum of b, sum of c, sum of d}.
HWY_INLINE __m128 HorizontalSums4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// The scales of two consecutive blocks of a weight row (at p0, p1), as {d0 d_x0, m0 s0, d1 d_x1,
// m1 s1} with xs = {d_x0, s0, d_x1, s1} (s: d_x times the sum of the block's activation codes).
// Q4_1 holds {f16 d, f16 m}; Q4_0 holds d, and m = -8 d (exact); Q8_0/Q8_1 have no m (0).
enum class Kind { kQ4_0, kQ4_1, kQ8_0, kQ8_1 };

template <Kind K>
HWY_INLINE __m128 PairScales(const uint8_t* p0, const uint8_t* p1, __m128 xs) {
  if constexpr (K == Kind::kQ4_1) {
    const uint64_t halves = (uint64_t{Bytes4(p1)} << 32) | Bytes4(p0);
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(halves))), xs);
  } else if constexpr (K == Kind::kQ4_0) {
    const uint64_t a = Bytes2(p0), b = Bytes2(p1);
    const uint64_t halves = a | (a << 16) | (b << 32) | (b << 48);
    const __m128 dm = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(halves))),
                                 _mm_setr_ps(1.0f, -8.0f, 1.0f, -8.0f));
    return _mm_mul_ps(dm, xs);
  } else {
    const uint64_t halves = (uint64_t{Bytes2(p1)} << 32) | Bytes2(p0);  // {d0, 0, d1, 0}
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(halves))), xs);
  }
}

template <Kind K>
constexpr int64_t kBlockBytes = K == Kind::kQ4_0   ? 18
                                : K == Kind::kQ4_1 ? 20
                                : K == Kind::kQ8_0 ? 34
                                                   : 36;

// i32 lane sums of one block's codes (at p) times 32 activation codes x.
template <Kind K>
HWY_INLINE __m256i BlockDot(const uint8_t* p, __m256i x) {
  if constexpr (K == Kind::kQ4_0) {
    return DotU8S8(Nibbles(p + 2), x);
  } else if constexpr (K == Kind::kQ4_1) {
    return DotU8S8(Nibbles(p + 4), x);
  } else {
    const __m256i w = Load256(p + (K == Kind::kQ8_0 ? 2 : 4));
    return DotU8S8(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
  }
}

// Rows ahead that the fused dots prefetch (measured on Zen 3: 4 to 16 are alike, none is 2x slower
// on matrices past the caches).
constexpr int64_t kPrefetchRows = 8;

// Fused dots of NR consecutive weight rows (at w, row_bytes apart) with one quantised activation
// row c of x: res[r] = sum over blocks of d d_x sum(q q_x) + m s. Two blocks per step, so one f16
// conversion serves both; the 4-bit formats take the paired codes (QuantizedX::qi) and one
// DotU8S8 pass for both blocks.
template <Kind K, int NR>
HWY_INLINE void FusedRowDots(const uint8_t* w, int64_t row_bytes, const QuantizedX& x, int64_t c,
                             float* res) {
  constexpr int64_t kBytes = kBlockBytes<K>;
  constexpr bool kNibbles = K == Kind::kQ4_0 || K == Kind::kQ4_1;
  constexpr int64_t kCodes = K == Kind::kQ4_0 || K == Kind::kQ8_0 ? 2 : 4;
  const int64_t nb = x.nb;
  const int8_t* xq = x.q + c * x.in;
  const int8_t* xi = x.qi + c * x.in;
  const float* xds = x.dxs + c * 2 * nb;
  __m256 acc[NR];
  __m128 acc_m[NR];  // lanes 1 and 3: the m terms
  for (int r = 0; r < NR; ++r) {
    acc[r] = _mm256_setzero_ps();
    acc_m[r] = _mm_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m128 xs = _mm_loadu_ps(xds + 2 * b);
    // The weight rows stream from memory: fetch the same blocks kPrefetchRows rows ahead (a hint
    // that never faults; the address is computed as an integer, as it may lie past the weights).
    for (int r = 0; r < NR; ++r) {
      const uintptr_t ahead = reinterpret_cast<uintptr_t>(w) +
                              static_cast<uintptr_t>((r + kPrefetchRows) * row_bytes + b * kBytes);
      _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
    }
    if constexpr (kNibbles) {
      const __m256i xlo = Load256(xi + 32 * b), xhi = Load256(xi + 32 * b + 32);
      for (int r = 0; r < NR; ++r) {
        const uint8_t* p0 = w + r * row_bytes + b * kBytes;
        const __m128 s = PairScales<K>(p0, p0 + kBytes, xs);
        acc_m[r] = _mm_add_ps(acc_m[r], s);
        __m256i lo, hi;
        NibblePair(p0 + kCodes, p0 + kBytes + kCodes, &lo, &hi);
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Dot2(lo, xlo, hi, xhi)), SpreadEven(s), acc[r]);
      }
    } else {
      const __m256i x0 = Load256(xq + 32 * b), x1 = Load256(xq + 32 * b + 32);
      for (int r = 0; r < NR; ++r) {
        const uint8_t* p0 = w + r * row_bytes + b * kBytes;
        const __m128 s = PairScales<K>(p0, p0 + kBytes, xs);
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockDot<K>(p0, x0)), _mm256_broadcastss_ps(s),
                                 acc[r]);
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockDot<K>(p0 + kBytes, x1)),
                                 _mm256_broadcastss_ps(_mm_movehl_ps(s, s)), acc[r]);
      }
    }
  }
  if (b < nb) {  // the last block: {d_x, s, 0, 0}; block "b + 1" reads p0 itself, times 0
    const __m256i x0 = Load256(xq + 32 * b);
    const __m128 xs =
        _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(xds + 2 * b)));
    for (int r = 0; r < NR; ++r) {
      const uint8_t* p0 = w + r * row_bytes + b * kBytes;
      const __m128 s = PairScales<K>(p0, p0, xs);
      if constexpr (kNibbles) acc_m[r] = _mm_add_ps(acc_m[r], s);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockDot<K>(p0, x0)), _mm256_broadcastss_ps(s),
                               acc[r]);
    }
  }
  if constexpr (NR == 4) {
    __m128 sums = HorizontalSums4(acc[0], acc[1], acc[2], acc[3]);
    if constexpr (kNibbles) {
      const __m128 odd01 = _mm_shuffle_ps(acc_m[0], acc_m[1], _MM_SHUFFLE(3, 1, 3, 1));
      const __m128 odd23 = _mm_shuffle_ps(acc_m[2], acc_m[3], _MM_SHUFFLE(3, 1, 3, 1));
      sums = _mm_add_ps(sums, _mm_hadd_ps(odd01, odd23));
    }
    _mm_storeu_ps(res, sums);
  } else {
    // The same sums as a lane of the four-row case.
    const __m256 zero = _mm256_setzero_ps();
    for (int r = 0; r < NR; ++r) {
      __m128 sums = HorizontalSums4(acc[r], zero, zero, zero);
      if constexpr (kNibbles) {
        const __m128 odd = _mm_shuffle_ps(acc_m[r], acc_m[r], _MM_SHUFFLE(3, 1, 3, 1));
        sums = _mm_add_ps(sums, _mm_hadd_ps(odd, odd));
      }
      res[r] = _mm_cvtss_f32(sums);
    }
  }
}

// Four weight rows at a time (then single rows), each against every activation row while it is in
// L1.
template <Kind K>
HWY_INLINE void FusedDotsOf(const uint8_t* w, int64_t row_bytes, int64_t o_begin, int64_t o_end,
                            const QuantizedX& x, int64_t rows, float* dst, int64_t out) {
  float res[4];
  int64_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) {
    for (int64_t c = 0; c < rows; ++c) {
      FusedRowDots<K, 4>(w + o * row_bytes, row_bytes, x, c, res);
      std::memcpy(dst + c * out + o, res, sizeof(res));
    }
  }
  for (; o < o_end; ++o) {
    for (int64_t c = 0; c < rows; ++c) {
      FusedRowDots<K, 1>(w + o * row_bytes, row_bytes, x, c, dst + c * out + o);
    }
  }
}

// dst[c * out + o] for o in [o_begin, o_end) and every activation row c, for Q4_0, Q4_1, Q8_0 or
// Q8_1 weights (row_bytes per weight row).
HWY_NOINLINE void FusedDots(BlockFormat format, const uint8_t* w, int64_t row_bytes,
                            int64_t o_begin, int64_t o_end, const QuantizedX& x, int64_t rows,
                            float* dst, int64_t out) {
  switch (format) {
    case BlockFormat::Q4_0:
      return FusedDotsOf<Kind::kQ4_0>(w, row_bytes, o_begin, o_end, x, rows, dst, out);
    case BlockFormat::Q4_1:
      return FusedDotsOf<Kind::kQ4_1>(w, row_bytes, o_begin, o_end, x, rows, dst, out);
    case BlockFormat::Q8_0:
      return FusedDotsOf<Kind::kQ8_0>(w, row_bytes, o_begin, o_end, x, rows, dst, out);
    default:
      return FusedDotsOf<Kind::kQ8_1>(w, row_bytes, o_begin, o_end, x, rows, dst, out);
  }
}

// One tile of R panel rows x C activation rows over all nb blocks: res[r * 4 + c] = sum over
// blocks of d_w d_x sum(q_w q_x), plus (unsigned formats) the offset terms sum(m2 * sh).
template <int R, int C, bool kSigned>
HWY_INLINE void Tile(const Panel& p, int64_t r0, const QuantizedX& x, int64_t c0, float* res) {
  const int64_t nb = p.nb, ms = MStride(nb);
  const int8_t* wq = p.q + r0 * nb * 32;
  const float* wd = p.d8 + r0 * nb * 8;
  const int8_t* xq = x.q + c0 * x.in;
  const float* xds = x.dxs + c0 * 2 * nb;
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wv[R], wu[R];
    __m256 ws[R];
    for (int r = 0; r < R; ++r) {
      wv[r] = Load256(wq + r * nb * 32 + 32 * b);
      wu[r] = kSigned ? _mm256_abs_epi8(wv[r]) : wv[r];
      ws[r] = _mm256_loadu_ps(wd + r * nb * 8 + 8 * b);
    }
    for (int c = 0; c < C; ++c) {
      const __m256i xv = Load256(xq + c * x.in + 32 * b);
      const __m256 dx = _mm256_broadcast_ss(xds + c * 2 * nb + 2 * b);
      for (int r = 0; r < R; ++r) {
        const __m256i i = DotU8S8(wu[r], kSigned ? _mm256_sign_epi8(xv, wv[r]) : xv);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(ws[r], dx), acc[r][c]);
      }
    }
  }
  if constexpr (!kSigned) {
    for (int64_t k = 0; k < ms; k += 8) {
      for (int r = 0; r < R; ++r) {
        const __m256 mv = _mm256_loadu_ps(p.m2 + (r0 + r) * ms + k);
        for (int c = 0; c < C; ++c)
          acc[r][c] = _mm256_fmadd_ps(mv, _mm256_loadu_ps(x.sh + (c0 + c) * ms + k), acc[r][c]);
      }
    }
  }
  const __m256 zero = _mm256_setzero_ps();
  for (int r = 0; r < R; ++r) {
    _mm_storeu_ps(res + 4 * r, HorizontalSums4(acc[r][0], C > 1 ? acc[r][C > 1 ? 1 : 0] : zero,
                                               C > 2 ? acc[r][C > 2 ? 2 : 0] : zero,
                                               C > 3 ? acc[r][C > 3 ? 3 : 0] : zero));
  }
}

// Tile for paired panels: per pair of blocks, one Dot2 pass over both blocks' codes (weights and
// activations in the paired layout) and one conversion and scaling with {d0 d_x0} x 4,
// {d1 d_x1} x 4; an odd last block as Tile does.
template <int R, int C>
HWY_INLINE void PairedTile(const Panel& p, int64_t r0, const QuantizedX& x, int64_t c0,
                           float* res) {
  const int64_t nb = p.nb, ms = MStride(nb), ps = PairStride(nb);
  const int8_t* wq = p.q + r0 * nb * 32;
  const float* wd = p.d8 + r0 * nb * 8;
  const int8_t* xq = x.qi + c0 * x.in;
  const float* xd = x.dx8 + c0 * ps;
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const int64_t pairs = nb / 2;
  for (int64_t k = 0; k < pairs; ++k) {
    __m256i lo[R], hi[R];
    __m256 ws[R];
    for (int r = 0; r < R; ++r) {
      lo[r] = Load256(wq + r * nb * 32 + 64 * k);
      hi[r] = Load256(wq + r * nb * 32 + 64 * k + 32);
      ws[r] = _mm256_loadu_ps(wd + r * nb * 8 + 8 * k);
    }
    for (int c = 0; c < C; ++c) {
      const int8_t* xc = xq + c * x.in + 64 * k;
      const __m256i xlo = Load256(xc), xhi = Load256(xc + 32);
      const __m256 dx = _mm256_loadu_ps(xd + c * ps + 8 * k);
      for (int r = 0; r < R; ++r) {
        const __m256i i = Dot2(lo[r], xlo, hi[r], xhi);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(ws[r], dx), acc[r][c]);
      }
    }
  }
  if (nb % 2 == 1) {
    __m256i wv[R];
    __m256 ws[R];
    for (int r = 0; r < R; ++r) {
      wv[r] = Load256(wq + r * nb * 32 + 64 * pairs);
      ws[r] = _mm256_loadu_ps(wd + r * nb * 8 + 8 * pairs);
    }
    for (int c = 0; c < C; ++c) {
      const __m256i xv = Load256(xq + c * x.in + 64 * pairs);
      const __m256 dx = _mm256_loadu_ps(xd + c * ps + 8 * pairs);
      for (int r = 0; r < R; ++r) {
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DotU8S8(wv[r], xv)),
                                    _mm256_mul_ps(ws[r], dx), acc[r][c]);
      }
    }
  }
  for (int64_t k = 0; k < ms; k += 8) {
    for (int r = 0; r < R; ++r) {
      const __m256 mv = _mm256_loadu_ps(p.m2 + (r0 + r) * ms + k);
      for (int c = 0; c < C; ++c)
        acc[r][c] = _mm256_fmadd_ps(mv, _mm256_loadu_ps(x.sh + (c0 + c) * ms + k), acc[r][c]);
    }
  }
  const __m256 zero = _mm256_setzero_ps();
  for (int r = 0; r < R; ++r) {
    _mm_storeu_ps(res + 4 * r, HorizontalSums4(acc[r][0], C > 1 ? acc[r][C > 1 ? 1 : 0] : zero,
                                               C > 2 ? acc[r][C > 2 ? 2 : 0] : zero,
                                               C > 3 ? acc[r][C > 3 ? 3 : 0] : zero));
  }
}

HWY_INLINE void PairedTileAny(int rn, int cn, const Panel& p, int64_t r0, const QuantizedX& x,
                              int64_t c0, float* res) {
  if (rn == 2) {
    switch (cn) {
      case 4:
        return PairedTile<2, 4>(p, r0, x, c0, res);
      case 3:
        return PairedTile<2, 3>(p, r0, x, c0, res);
      case 2:
        return PairedTile<2, 2>(p, r0, x, c0, res);
      default:
        return PairedTile<2, 1>(p, r0, x, c0, res);
    }
  }
  switch (cn) {
    case 4:
      return PairedTile<1, 4>(p, r0, x, c0, res);
    case 3:
      return PairedTile<1, 3>(p, r0, x, c0, res);
    case 2:
      return PairedTile<1, 2>(p, r0, x, c0, res);
    default:
      return PairedTile<1, 1>(p, r0, x, c0, res);
  }
}

template <bool kSigned>
HWY_INLINE void TileAny(int rn, int cn, const Panel& p, int64_t r0, const QuantizedX& x, int64_t c0,
                        float* res) {
  if (rn == 2) {
    switch (cn) {
      case 4:
        return Tile<2, 4, kSigned>(p, r0, x, c0, res);
      case 3:
        return Tile<2, 3, kSigned>(p, r0, x, c0, res);
      case 2:
        return Tile<2, 2, kSigned>(p, r0, x, c0, res);
      default:
        return Tile<2, 1, kSigned>(p, r0, x, c0, res);
    }
  }
  switch (cn) {
    case 4:
      return Tile<1, 4, kSigned>(p, r0, x, c0, res);
    case 3:
      return Tile<1, 3, kSigned>(p, r0, x, c0, res);
    case 2:
      return Tile<1, 2, kSigned>(p, r0, x, c0, res);
    default:
      return Tile<1, 1, kSigned>(p, r0, x, c0, res);
  }
}

// dst[c * out + o0 + r] for the panel rows r in [0, panel_rows) and every activation row c.
HWY_NOINLINE void PanelDots(const Panel& p, int64_t panel_rows, const QuantizedX& x, int64_t rows,
                            float* dst, int64_t out, int64_t o0) {
  constexpr int kR = 2, kC = 4;
  float res[kR * 4];
  for (int64_t c0 = 0; c0 < rows; c0 += kC) {
    const int cn = static_cast<int>(std::min<int64_t>(kC, rows - c0));
    for (int64_t r0 = 0; r0 < panel_rows; r0 += kR) {
      const int rn = static_cast<int>(std::min<int64_t>(kR, panel_rows - r0));
      if (p.paired) {
        PairedTileAny(rn, cn, p, r0, x, c0, res);
      } else if (p.is_signed) {
        TileAny<true>(rn, cn, p, r0, x, c0, res);
      } else {
        TileAny<false>(rn, cn, p, r0, x, c0, res);
      }
      for (int r = 0; r < rn; ++r) {
        for (int c = 0; c < cn; ++c) dst[(c0 + c) * out + o0 + r0 + r] = res[4 * r + c];
      }
    }
  }
}
