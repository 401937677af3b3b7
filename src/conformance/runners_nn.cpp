// Runners for the nn families: Matmul, MatmulTransB, SingleHeadAttention, MultiHeadAttention, Conv1D, Conv2D
// (Conv2D and ConvTranspose2D), Conv3D, Pool2D and AdaptivePool2D.
//
// Every case runs twice, on inputs with specials (+-0, +-Inf, NaN, +-60, 1e-30 at every 97th
// element) and on plain N(0, 2) inputs (where no row is poisoned, so every output is a finite
// comparison), plus invalid calls whose errors must be identical and must leave the output
// untouched.
//
// Bounds:
// - Pooling: the tolerance table, element by element.
// - Attention: a kernel may compute the scores s_ij = scale q_i . k_j (+ ALiBi) in f32 (as
//   PyTorch does), so the first-order forward error of the output is that of the scores, amplified
//   by the softmax: a score error d_j moves O_i by sum_j p_ij d_j (v_j - O_i), and |d_j| is
//   proportional to the score's condition C_ij = scale sum_d |q_id| |k_jd| (+ |bias|). With
//   C_i = max_j C_ij and |v_j - O_i| <= |v_j| + |O_i|, these runners accept
//       |fast - ref| <= tol.abs + tol.rel * (1 + C_i) * (sum_j p_ij |v_jc| + |O_ic|)
//   where sum_j p_ij |v_jc| is the reference itself run on |V| (same masks and weights), and 1 +
//   covers the exp, the weighted sum and the normalisation. Non-finite outputs must match exactly.
// - Matmul and the convolutions are GEMMs. The reference accumulates each output in f64 in a fixed
//   order and rounds once; a fast kernel may accumulate in f32 (OpenBLAS, our packed f16/bf16
//   GEMM) in another order. The standard forward-error bound of a dot product computed in a
//   different order and precision is proportional to sum_k |a_k b_k|, not to |sum_k a_k b_k|
//   (cancellation), so these runners accept
//       |fast - ref| <= tol.abs + tol.rel * (sum_k |a_k| |b_k| (+ |bias|))
//   with tol = DefaultTolerance(dtype): the table's relative bound applied to the condition of
//   each output instead of to its (possibly cancelled) value. Non-finite outputs must match
//   exactly (NaN for NaN, the same infinity).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using MatmulFn = BP_RET_Matmul (*)(BP_PARAMS_Matmul);
using SingleHeadFn = BP_RET_SingleHeadAttention (*)(BP_PARAMS_SingleHeadAttention);
using MultiHeadFn = BP_RET_MultiHeadAttention (*)(BP_PARAMS_MultiHeadAttention);
using Conv1DFn = BP_RET_Conv1D (*)(BP_PARAMS_Conv1D);
using Conv2DFn = BP_RET_Conv2D (*)(BP_PARAMS_Conv2D);
using Conv3DFn = BP_RET_Conv3D (*)(BP_PARAMS_Conv3D);
using Pool2DFn = BP_RET_Pool2D (*)(BP_PARAMS_Pool2D);
using AdaptivePool2DFn = BP_RET_AdaptivePool2D (*)(BP_PARAMS_AdaptivePool2D);

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

std::vector<uint8_t> Input(DType dtype, int64_t count, uint64_t seed, bool specials) {
  return RandomStorage(dtype, count, seed, 2.0, specials);
}

// ---- Matmul -------------------------------------------------------------------------------------

struct MatmulShape {
  int64_t rows, inner, cols;
};

// Matmul (B [inner, cols]) and MatmulTransB (B [cols, inner]): the same cases.
template <bool kTransB>
Measure RunMatmul(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  // Exact small path (rows*inner*cols <= 2^15), then BLAS / the packed GEMM: single rows and
  // columns (gemv), fewer rows than a register tile, edges of the 6 x 2-vector tiles, inner
  // blocks over 256, column blocks over 2048 and a threaded case.
  std::vector<MatmulShape> shapes = {
      {0, 3, 4},     {3, 0, 4},    {4, 5, 0},     {1, 1, 1},     {2, 3, 4},     {5, 7, 3},
      {7, 9, 17},    {17, 13, 11}, {31, 33, 31},  {33, 65, 17},  {1, 301, 259}, {130, 257, 1},
      {4, 100, 513}, {6, 64, 32},  {67, 300, 95}, {13, 600, 33}, {520, 8, 9},   {2, 16, 4100},
      {8, 517, 301}};  // last: few rows, threaded (MatmulTransB's streaming path)
  if (!Quick(c)) {
    shapes.push_back({100, 40, 2100});
    shapes.push_back({211, 97, 130});
  }
  uint64_t seed = c.seed;
  for (const MatmulShape& s : shapes) {
    for (const InputSet& set : kInputSets) {
      const std::string where = fmt::format("{}x{}x{} {}", s.rows, s.inner, s.cols, set.name);
      const auto a = Input(c.dtype, s.rows * s.inner, ++seed, set.specials);
      const auto b = Input(c.dtype, s.inner * s.cols, ++seed + 7919, set.specials);
      const int64_t count = s.rows * s.cols;
      std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, count) + 16, kGuard), got = want;
      Unerase<MatmulFn>(ref)(want.data(), a.data(), b.data(), s.rows, s.inner, s.cols, c.dtype);
      Unerase<MatmulFn>(fast)(got.data(), a.data(), b.data(), s.rows, s.inner, s.cols, c.dtype);
      CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
      const auto ad = Widened(a, c.dtype, s.rows * s.inner),
                 bd = Widened(b, c.dtype, s.inner * s.cols);
      std::vector<double> cond(static_cast<size_t>(count), 0.0);
      for (int64_t r = 0; r < s.rows; ++r) {
        for (int64_t k = 0; k < s.inner; ++k) {
          const double x = std::fabs(ad[static_cast<size_t>(r * s.inner + k)]);
          for (int64_t j = 0; j < s.cols; ++j) {
            cond[static_cast<size_t>(r * s.cols + j)] +=
                x * std::fabs(bd[static_cast<size_t>(kTransB ? j * s.inner + k : k * s.cols + j)]);
          }
        }
      }
      CompareBounded(got, want, c.dtype, cond, tol, where, m);
    }
  }
  // Aliasing: out == left (square operands), which the reference allows.
  for (int64_t n : {5, 40}) {
    auto a = Input(c.dtype, n * n, ++seed, false);
    const auto b = Input(c.dtype, n * n, ++seed, false);
    const auto ad = Widened(a, c.dtype, n * n), bd = Widened(b, c.dtype, n * n);
    std::vector<uint8_t> want(a.size(), kGuard);
    Unerase<MatmulFn>(ref)(want.data(), a.data(), b.data(), n, n, n, c.dtype);
    Unerase<MatmulFn>(fast)(a.data(), a.data(), b.data(), n, n, n, c.dtype);
    std::vector<double> cond(static_cast<size_t>(n * n), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < n; ++j)
          cond[static_cast<size_t>(r * n + j)] +=
              std::fabs(ad[static_cast<size_t>(r * n + k)] * bd[static_cast<size_t>(kTransB ? j * n + k : k * n + j)]);
    CompareBounded(a, want, c.dtype, cond, tol, fmt::format("alias out=left n={}", n), m);
  }
  // Invalid calls.
  const auto a = Input(c.dtype, 12, 1, false), b = Input(c.dtype, 12, 2, false);
  std::vector<uint8_t> out(64, kGuard);
  auto call = [&](int64_t rows, int64_t inner, int64_t cols, DType dtype, bool nullLeft) {
    return [&, rows, inner, cols, dtype, nullLeft](bool reference) {
      Unerase<MatmulFn>(reference ? ref : fast)(out.data(), nullLeft ? nullptr : a.data(), b.data(),
                                                rows, inner, cols, dtype);
    };
  };
  ExpectSameError("rows=-1", out, call(-1, 3, 2, c.dtype, false), m);
  ExpectSameError("dtype int8", out, call(2, 3, 2, DType::Int8, false), m);
  ExpectSameError("null left", out, call(2, 3, 2, c.dtype, true), m);
  ExpectSameError("rows*inner overflows", out, call(int64_t{1} << 62, 4, 0, c.dtype, false), m);
  return m;
}

// ---- Attention ----------------------------------------------------------------------------------

// The storage with every sign bit cleared: |x| element by element (NaN stays NaN).
std::vector<uint8_t> AbsStorage(std::vector<uint8_t> s, DType dtype) {
  const size_t width = dtype == DType::Float64 ? 8 : dtype == DType::Float32 ? 4 : 2;
  for (size_t i = width - 1; i < s.size(); i += width) s[i] &= 0x7f;  // little-endian: the sign is in the top byte
  return s;
}

// The attention bound's condition per output (i, c) of head h (see the file comment):
// (1 + C_i) (A_ic + |O_ic|), C_i = scale max_j sum_d |q_id| |k_jd| (over the finite ones) + the
// largest ALiBi bias,
// A = the reference on |V| (sum_j p_ij |v_jc|), O = the reference's output. Layouts as
// MultiHeadAttention: row strides heads * depth (q, o) and kvHeads * depth (k, v).
std::vector<double> AttentionCondition(const std::vector<double>& q, const std::vector<double>& k,
                                       const std::vector<double>& absWeighted, const std::vector<double>& out,
                                       int64_t heads, int64_t kvHeads, int64_t seqQ, int64_t seqK, int64_t depth,
                                       int64_t valueDim, double alibiSlope) {
  std::vector<double> cond(static_cast<size_t>(seqQ * heads * valueDim), 0.0);
  const double scale = depth > 0 ? 1.0 / std::sqrt(static_cast<double>(depth)) : 0.0;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / (heads / kvHeads);
    const double bias = alibiSlope == 0.0 ? 0.0 : std::pow(alibiSlope, static_cast<double>(h + 1)) *
                                                      static_cast<double>(seqQ + seqK);
    for (int64_t i = 0; i < seqQ; ++i) {
      double worst = 0.0;
      for (int64_t j = 0; j < seqK; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < depth; ++d) {
          dot += std::fabs(q[static_cast<size_t>((i * heads + h) * depth + d)]) *
                 std::fabs(k[static_cast<size_t>((j * kvHeads + g) * depth + d)]);
        }
        if (std::isfinite(dot)) worst = std::max(worst, dot);  // a visible non-finite score: O is exact (NaN, or weight 0)
      }
      const double c = 1.0 + scale * worst + bias;
      for (int64_t e = 0; e < valueDim; ++e) {
        const auto at = static_cast<size_t>((i * heads + h) * valueDim + e);
        cond[at] = c * (absWeighted[at] + std::fabs(out[at]));
      }
    }
  }
  return cond;
}

struct SingleHeadCase {
  int64_t seqQ, seqK, depth, valueDim;
  bool causal;
  int64_t block;
};

Measure RunSingleHead(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  // seqQ <, =, > seqK (bottom-right causal alignment, fully masked rows), no keys, block sizes
  // 1, 5, 64, seqK + 1 and INT64_MAX, head sizes off the vector widths.
  std::vector<SingleHeadCase> cases = {
      {0, 0, 0, 0, false, 4},        {3, 0, 2, 2, true, 4},
      {1, 1, 1, 1, false, 1},        {5, 7, 3, 4, false, 2},
      {5, 7, 3, 4, true, 5},         {7, 5, 8, 8, true, 3},
      {17, 33, 16, 9, false, 5},     {17, 33, 16, 9, true, 64},
      {33, 17, 17, 33, true, 1},     {64, 64, 64, 64, true, 64},
      {1, 300, 40, 33, false, 301},  {100, 130, 32, 20, true, kMaxI64},
      {129, 257, 64, 64, false, 64}, {129, 257, 64, 64, true, 16},
      {300, 2, 8, 8, true, 1}};
  if (!Quick(c)) {
    cases.push_back({257, 600, 64, 64, true, 64});
    cases.push_back({600, 600, 128, 64, false, 128});
  }
  uint64_t seed = c.seed;
  for (const SingleHeadCase& s : cases) {
    for (const InputSet& set : kInputSets) {
      const std::string where =
          fmt::format("seqQ={} seqK={} depth={} valueDim={} causal={} block={} {}", s.seqQ, s.seqK,
                      s.depth, s.valueDim, s.causal, s.block, set.name);
      const auto q = Input(c.dtype, s.seqQ * s.depth, ++seed, set.specials);
      const auto k = Input(c.dtype, s.seqK * s.depth, ++seed, set.specials);
      const auto v = Input(c.dtype, s.seqK * s.valueDim, ++seed, set.specials);
      const int64_t count = s.seqQ * s.valueDim;
      std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, count) + 16, kGuard), got = want;
      const FlashAttentionConfig config{.BlockSize = s.block, .Causal = s.causal};
      Unerase<SingleHeadFn>(ref)(config, q.data(), k.data(), v.data(), want.data(), s.seqQ, s.seqK,
                                 s.depth, s.valueDim, c.dtype);
      Unerase<SingleHeadFn>(fast)(config, q.data(), k.data(), v.data(), got.data(), s.seqQ, s.seqK,
                                  s.depth, s.valueDim, c.dtype);
      CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
      const auto absV = AbsStorage(v, c.dtype);
      std::vector<uint8_t> weighted = want;
      Unerase<SingleHeadFn>(ref)(config, q.data(), k.data(), absV.data(), weighted.data(), s.seqQ, s.seqK,
                                 s.depth, s.valueDim, c.dtype);
      const auto cond = AttentionCondition(Widened(q, c.dtype, s.seqQ * s.depth), Widened(k, c.dtype, s.seqK * s.depth),
                                           Widened(weighted, c.dtype, count), Widened(want, c.dtype, count), 1, 1,
                                           s.seqQ, s.seqK, s.depth, s.valueDim, 0.0);
      CompareBounded(got, want, c.dtype, cond, tol, where, m);
    }
  }
  // o aliases q (depth == valueDim).
  {
    auto q = Input(c.dtype, 20 * 16, ++seed, false);
    const auto k = Input(c.dtype, 30 * 16, ++seed, false),
               v = Input(c.dtype, 30 * 16, ++seed, false);
    std::vector<uint8_t> want(q.size(), kGuard);
    const FlashAttentionConfig config{.BlockSize = 7, .Causal = true};
    Unerase<SingleHeadFn>(ref)(config, q.data(), k.data(), v.data(), want.data(), 20, 30, 16, 16,
                               c.dtype);
    Unerase<SingleHeadFn>(fast)(config, q.data(), k.data(), v.data(), q.data(), 20, 30, 16, 16,
                                c.dtype);
    CompareStorage(q, want, c.dtype, 20 * 16, tol, "alias o=q", m);
  }
  const auto q = Input(c.dtype, 12, 1, false), k = Input(c.dtype, 12, 2, false),
             v = Input(c.dtype, 12, 3, false);
  std::vector<uint8_t> out(64, kGuard);
  auto call = [&](FlashAttentionConfig config, int64_t seqQ, int64_t depth, DType dtype,
                  bool nullK) {
    return [&, config, seqQ, depth, dtype, nullK](bool reference) {
      Unerase<SingleHeadFn>(reference ? ref : fast)(config, q.data(), nullK ? nullptr : k.data(),
                                                    v.data(), out.data(), seqQ, 3, depth, 2, dtype);
    };
  };
  ExpectSameError("seqQ=-1", out, call({}, -1, 2, c.dtype, false), m);
  ExpectSameError("depth=0", out, call({}, 2, 0, c.dtype, false), m);
  ExpectSameError("dtype int8", out, call({}, 2, 2, DType::Int8, false), m);
  ExpectSameError("null k", out, call({}, 2, 2, c.dtype, true), m);
  if (c.method == "Attention.FlashAttention") {
    ExpectSameError("BlockSize=0", out, call({.BlockSize = 0}, 2, 2, c.dtype, false), m);
  }
  return m;
}

struct MultiHeadCase {
  MultiHeadAttentionConfig config;
  int64_t seqQ, seqK;
};

Measure RunMultiHead(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  // MHA / GQA / MQA, causal and not, sliding windows (which imply the causal bound), ALiBi with
  // per-head slopes, seqQ <, =, > seqK.
  std::vector<MultiHeadCase> cases = {
      {{.NumHeads = 2, .HeadDim = 4}, 0, 5},
      {{.NumHeads = 2, .HeadDim = 4}, 3, 0},
      {{.NumHeads = 2, .HeadDim = 4}, 5, 5},
      {{.NumHeads = 4, .HeadDim = 8, .Causal = true, .KVHeadCount = 2}, 9, 13},
      {{.NumHeads = 8, .HeadDim = 16, .WindowSize = 4, .KVHeadCount = 1}, 33, 33},
      {{.NumHeads = 3, .HeadDim = 5, .Causal = true, .ALiBiSlope = 0.5f, .KVHeadCount = 3}, 7, 4},
      {{.NumHeads = 4, .HeadDim = 9, .ALiBiSlope = 0.7f}, 17, 17},
      {{.NumHeads = 8,
        .HeadDim = 64,
        .Causal = true,
        .WindowSize = 50,
        .ALiBiSlope = 0.5f,
        .KVHeadCount = 2},
       100,
       130},
      {{.NumHeads = 2, .HeadDim = 32}, 130, 257},
      {{.NumHeads = 2, .HeadDim = 64, .Causal = true}, 257, 129},
      {{.NumHeads = 4, .HeadDim = 16, .Causal = true, .WindowSize = 1}, 20, 20},
      // Two-sided windows (WindowRight), without and with the causal cut.
      {{.NumHeads = 2, .HeadDim = 8, .WindowSize = 3, .WindowRight = 2}, 17, 17},
      {{.NumHeads = 2, .HeadDim = 8, .WindowSize = 5, .KVHeadCount = 1, .WindowRight = -1}, 9, 21},
      {{.NumHeads = 4, .HeadDim = 16, .WindowSize = 7, .ALiBiSlope = 0.5f, .WindowRight = 40}, 33, 33},
      {{.NumHeads = 2, .HeadDim = 8, .Causal = true, .WindowSize = 4, .WindowRight = 3}, 12, 12}};
  if (!Quick(c)) {
    cases.push_back({{.NumHeads = 8, .HeadDim = 64, .Causal = true}, 300, 300});
    cases.push_back(
        {{.NumHeads = 4, .HeadDim = 128, .WindowSize = 100, .KVHeadCount = 2}, 200, 500});
  }
  uint64_t seed = c.seed;
  for (const MultiHeadCase& s : cases) {
    const MultiHeadAttentionConfig& cfg = s.config;
    const int64_t kv = cfg.KVHeadCount > 0 ? cfg.KVHeadCount : cfg.NumHeads;
    for (const InputSet& set : kInputSets) {
      const std::string where = fmt::format(
          "heads={} dim={} kv={} causal={} window={} right={} alibi={} seqQ={} seqK={} {}", cfg.NumHeads,
          cfg.HeadDim, kv, cfg.Causal, cfg.WindowSize, cfg.WindowRight, cfg.ALiBiSlope, s.seqQ, s.seqK, set.name);
      const auto q = Input(c.dtype, s.seqQ * cfg.NumHeads * cfg.HeadDim, ++seed, set.specials);
      const auto k = Input(c.dtype, s.seqK * kv * cfg.HeadDim, ++seed, set.specials);
      const auto v = Input(c.dtype, s.seqK * kv * cfg.HeadDim, ++seed + 31, set.specials);
      const int64_t count = s.seqQ * cfg.NumHeads * cfg.HeadDim;
      std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, count) + 16, kGuard), got = want;
      Unerase<MultiHeadFn>(ref)(cfg, q.data(), k.data(), v.data(), want.data(), s.seqQ, s.seqK,
                                c.dtype);
      Unerase<MultiHeadFn>(fast)(cfg, q.data(), k.data(), v.data(), got.data(), s.seqQ, s.seqK,
                                 c.dtype);
      CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
      const auto absV = AbsStorage(v, c.dtype);
      std::vector<uint8_t> weighted = want;
      Unerase<MultiHeadFn>(ref)(cfg, q.data(), k.data(), absV.data(), weighted.data(), s.seqQ, s.seqK, c.dtype);
      const auto cond = AttentionCondition(
          Widened(q, c.dtype, s.seqQ * cfg.NumHeads * cfg.HeadDim), Widened(k, c.dtype, s.seqK * kv * cfg.HeadDim),
          Widened(weighted, c.dtype, count), Widened(want, c.dtype, count), cfg.NumHeads, kv, s.seqQ, s.seqK,
          cfg.HeadDim, cfg.HeadDim, cfg.ALiBiSlope);
      CompareBounded(got, want, c.dtype, cond, tol, where, m);
    }
  }
  const auto q = Input(c.dtype, 64, 1, false), k = Input(c.dtype, 64, 2, false),
             v = Input(c.dtype, 64, 3, false);
  std::vector<uint8_t> out(300, kGuard);
  auto call = [&](MultiHeadAttentionConfig config, DType dtype) {
    return [&, config, dtype](bool reference) {
      Unerase<MultiHeadFn>(reference ? ref : fast)(config, q.data(), k.data(), v.data(), out.data(),
                                                   2, 2, dtype);
    };
  };
  ExpectSameError("KVHeadCount=3", out,
                  call({.NumHeads = 4, .HeadDim = 2, .KVHeadCount = 3}, c.dtype), m);
  ExpectSameError("KVHeadCount>NumHeads", out,
                  call({.NumHeads = 2, .HeadDim = 2, .KVHeadCount = 4}, c.dtype), m);
  ExpectSameError("HeadDim=0", out, call({.NumHeads = 2, .HeadDim = 0}, c.dtype), m);
  ExpectSameError("WindowSize<0", out,
                  call({.NumHeads = 2, .HeadDim = 2, .WindowSize = -1}, c.dtype), m);
  ExpectSameError("WindowRight<-1", out,
                  call({.NumHeads = 2, .HeadDim = 2, .WindowSize = 1, .WindowRight = -2}, c.dtype), m);
  ExpectSameError("ALiBiSlope<0", out,
                  call({.NumHeads = 2, .HeadDim = 2, .ALiBiSlope = -1.0f}, c.dtype), m);
  ExpectSameError("ALiBiSlope NaN", out,
                  call({.NumHeads = 2, .HeadDim = 2, .ALiBiSlope = NAN}, c.dtype), m);
  ExpectSameError("dtype int8", out, call({.NumHeads = 2, .HeadDim = 2}, DType::Int8), m);
  return m;
}

// ---- Convolutions -------------------------------------------------------------------------------

// One spatial axis of a convolution case.
struct ConvAxis {
  int64_t in, kernel, stride, padding, dilation;
  int64_t Out() const {  // stride 0 (an invalid case) gives 1
    return stride > 0 ? (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1 : 1;
  }
  // Transposed: out = (in-1)s - 2p + d(k-1) + 1 + outputPadding (outputPadding = 0 here).
  int64_t OutT() const { return (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1; }
};

template <size_t R>
struct ConvCase {
  int64_t batch, inC, outC;
  std::array<ConvAxis, R> axes;
  bool bias;
};

template <size_t R>
int64_t Volume(const std::array<int64_t, R>& e) {
  int64_t v = 1;
  for (int64_t x : e) v *= x;
  return v;
}

// sum |bias| + sum |x| |w| over the taps each output of a forward convolution reads (the GEMM
// condition of that output), or of a transposed one.
template <size_t R>
std::vector<double> ConvCondition(const ConvCase<R>& s, bool transposed,
                                  const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& b) {
  std::array<int64_t, R> in{}, out{}, ker{};
  for (size_t r = 0; r < R; ++r) {
    in[r] = s.axes[r].in;
    ker[r] = s.axes[r].kernel;
    out[r] = transposed ? s.axes[r].OutT() : s.axes[r].Out();
  }
  const int64_t inV = Volume(in), outV = Volume(out), kV = Volume(ker);
  std::vector<double> cond(static_cast<size_t>(s.batch * s.outC * outV), 0.0);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t co = 0; co < s.outC; ++co) {
      for (int64_t o = 0; o < outV; ++o) {
        std::array<int64_t, R> oi{};
        for (int64_t f = o, r = R; r-- > 0;) {
          oi[static_cast<size_t>(r)] = f % out[static_cast<size_t>(r)];
          f /= out[static_cast<size_t>(r)];
        }
        double acc = b.empty() ? 0.0 : std::fabs(b[static_cast<size_t>(co)]);
        for (int64_t ci = 0; ci < s.inC; ++ci) {
          for (int64_t kk = 0; kk < kV; ++kk) {
            std::array<int64_t, R> ki{};
            for (int64_t f = kk, r = R; r-- > 0;) {
              ki[static_cast<size_t>(r)] = f % ker[static_cast<size_t>(r)];
              f /= ker[static_cast<size_t>(r)];
            }
            int64_t offset = 0;
            bool inside = true;
            for (size_t r = 0; r < R && inside; ++r) {
              const ConvAxis& a = s.axes[r];
              int64_t i = 0;
              if (transposed) {
                const int64_t t = oi[r] + a.padding - ki[r] * a.dilation;
                inside = t >= 0 && t % a.stride == 0 && t / a.stride < a.in;
                i = inside ? t / a.stride : 0;
              } else {
                i = oi[r] * a.stride + ki[r] * a.dilation - a.padding;
                inside = i >= 0 && i < a.in;
              }
              offset = offset * a.in + i;
            }
            if (!inside) continue;
            const double xv = x[static_cast<size_t>((n * s.inC + ci) * inV + offset)];
            const double wv = transposed ? w[static_cast<size_t>((ci * s.outC + co) * kV + kk)]
                                         : w[static_cast<size_t>((co * s.inC + ci) * kV + kk)];
            acc += std::fabs(xv) * std::fabs(wv);
          }
        }
        cond[static_cast<size_t>((n * s.outC + co) * outV + o)] = acc;
      }
    }
  }
  return cond;
}

// Calls a convolution kernel of rank R (Conv1D, Conv2D / ConvTranspose2D, Conv3D).
template <size_t R>
void CallConv(ErasedKernel k, const ConvCase<R>& s, bool transposed, const void* x, const void* w,
              const void* b, void* y, DType dtype) {
  const auto& a = s.axes;
  auto out = [&](size_t r) { return transposed ? a[r].OutT() : a[r].Out(); };
  if constexpr (R == 1) {
    const Conv1DConfig cfg{
        .Stride = a[0].stride, .Padding = a[0].padding, .Dilation = a[0].dilation};
    Unerase<Conv1DFn>(k)(cfg, x, w, b, y, s.batch, s.inC, a[0].in, s.outC, a[0].kernel, out(0),
                         dtype);
  } else if constexpr (R == 2) {
    const Conv2DConfig cfg{.StrideH = a[0].stride,
                           .StrideW = a[1].stride,
                           .PaddingH = a[0].padding,
                           .PaddingW = a[1].padding,
                           .DilationH = a[0].dilation,
                           .DilationW = a[1].dilation};
    Unerase<Conv2DFn>(k)(cfg, x, w, b, y, s.batch, s.inC, a[0].in, a[1].in, s.outC, a[0].kernel,
                         a[1].kernel, out(0), out(1), dtype);
  } else {
    const Conv3DConfig cfg{.StrideD = a[0].stride,
                           .StrideH = a[1].stride,
                           .StrideW = a[2].stride,
                           .PaddingD = a[0].padding,
                           .PaddingH = a[1].padding,
                           .PaddingW = a[2].padding,
                           .DilationD = a[0].dilation,
                           .DilationH = a[1].dilation,
                           .DilationW = a[2].dilation};
    Unerase<Conv3DFn>(k)(cfg, x, w, b, y, s.batch, s.inC, a[0].in, a[1].in, a[2].in, s.outC,
                         a[0].kernel, a[1].kernel, a[2].kernel, out(0), out(1), out(2), dtype);
  }
}

template <size_t R>
void RunConvCases(ErasedKernel ref, ErasedKernel fast, const RunContext& c, bool transposed,
                  const std::vector<ConvCase<R>>& cases, Measure& m) {
  const Tolerance tol = DefaultTolerance(c.dtype);
  uint64_t seed = c.seed;
  for (const ConvCase<R>& s : cases) {
    int64_t inV = 1, outV = 1, kV = 1;
    std::string shape;
    for (const ConvAxis& a : s.axes) {
      inV *= a.in;
      outV *= transposed ? a.OutT() : a.Out();
      kV *= a.kernel;
      shape += fmt::format("[in {} k {} s {} p {} d {}]", a.in, a.kernel, a.stride, a.padding,
                           a.dilation);
    }
    for (const InputSet& set : kInputSets) {
      const std::string where = fmt::format("N={} Cin={} Cout={} {} bias={} {}", s.batch, s.inC,
                                            s.outC, shape, s.bias, set.name);
      const auto x = Input(c.dtype, s.batch * s.inC * inV, ++seed, set.specials);
      const auto w = Input(c.dtype, s.outC * s.inC * kV, ++seed + 101, set.specials);
      const auto b = Input(c.dtype, s.outC, ++seed + 202, set.specials);
      const int64_t count = s.batch * s.outC * outV;
      std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, count) + 16, kGuard), got = want;
      const void* bias = s.bias ? b.data() : nullptr;
      CallConv<R>(ref, s, transposed, x.data(), w.data(), bias, want.data(), c.dtype);
      CallConv<R>(fast, s, transposed, x.data(), w.data(), bias, got.data(), c.dtype);
      CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
      const auto cond =
          ConvCondition<R>(s, transposed, Widened(x, c.dtype, s.batch * s.inC * inV),
                           Widened(w, c.dtype, s.outC * s.inC * kV),
                           s.bias ? Widened(b, c.dtype, s.outC) : std::vector<double>{});
      CompareBounded(got, want, c.dtype, cond, tol, where, m);
    }
  }
}

template <size_t R>
void ConvErrors(ErasedKernel ref, ErasedKernel fast, const RunContext& c, bool transposed,
                Measure& m) {
  const auto x = Input(c.dtype, 256, 1, false), w = Input(c.dtype, 256, 2, false);
  std::vector<uint8_t> out(2048, kGuard);
  auto call = [&](ConvCase<R> s, DType dtype, int64_t outDelta) {
    return [&, s, dtype, outDelta](bool reference) {
      const auto& a = s.axes;  // outDelta != 0: a wrong output extent (Conv2D only)
      if constexpr (R == 2) {
        const Conv2DConfig cfg{.StrideH = a[0].stride,
                               .StrideW = a[1].stride,
                               .PaddingH = a[0].padding,
                               .PaddingW = a[1].padding,
                               .DilationH = a[0].dilation,
                               .DilationW = a[1].dilation};
        const int64_t oh = (transposed ? a[0].OutT() : a[0].Out()) + outDelta;
        const int64_t ow = transposed ? a[1].OutT() : a[1].Out();
        Unerase<Conv2DFn>(reference ? ref : fast)(cfg, x.data(), w.data(), nullptr, out.data(),
                                                  s.batch, s.inC, a[0].in, a[1].in, s.outC,
                                                  a[0].kernel, a[1].kernel, oh, ow, dtype);
      } else {
        (void)outDelta;
        CallConv<R>(reference ? ref : fast, s, transposed, x.data(), w.data(), nullptr, out.data(),
                    dtype);
      }
    };
  };
  ConvCase<R> good{1, 2, 2, {}, false};
  for (auto& a : good.axes) a = {4, 3, 1, 1, 1};
  ExpectSameError("dtype int8", out, call(good, DType::Int8, 0), m);
  ConvCase<R> bad = good;
  bad.axes[0].stride = 0;
  ExpectSameError("stride 0", out, call(bad, c.dtype, 0), m);
  bad = good;
  bad.batch = -1;
  ExpectSameError("batch -1", out, call(bad, c.dtype, 0), m);
  if constexpr (R == 2) ExpectSameError("wrong outH", out, call(good, c.dtype, 1), m);
}

Measure RunConv1D(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  std::vector<ConvCase<1>> cases = {
      {1, 1, 1, {{{5, 3, 1, 0, 1}}}, false},    {2, 3, 4, {{{17, 3, 1, 1, 1}}}, true},
      {1, 2, 3, {{{9, 4, 2, 2, 1}}}, true},     {3, 5, 2, {{{33, 3, 3, 0, 2}}}, false},
      {0, 2, 3, {{{9, 3, 1, 1, 1}}}, true},     {2, 0, 3, {{{9, 3, 1, 1, 1}}}, true},
      {2, 16, 24, {{{100, 5, 1, 2, 1}}}, true}, {1, 8, 8, {{{1, 1, 1, 0, 1}}}, true}};
  if (!Quick(c)) cases.push_back({4, 32, 48, {{{500, 7, 2, 3, 2}}}, true});
  RunConvCases<1>(ref, fast, c, false, cases, m);
  ConvErrors<1>(ref, fast, c, false, m);
  return m;
}

Measure RunConv2D(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const bool transposed = c.method == "Convolution.ConvTranspose2D";
  using A = ConvAxis;
  std::vector<ConvCase<2>> cases = {
      {1, 1, 1, {A{3, 3, 1, 0, 1}, A{3, 3, 1, 0, 1}}, false},
      {2, 3, 4, {A{7, 3, 1, 1, 1}, A{9, 3, 1, 1, 1}}, true},
      {1, 2, 5, {A{8, 3, 2, 1, 1}, A{11, 2, 2, 0, 1}}, true},
      {2, 4, 3, {A{10, 3, 1, 2, 2}, A{12, 3, 2, 1, 3}}, false},
      {1, 3, 2, {A{5, 5, 1, 2, 1}, A{1, 1, 1, 0, 1}}, true},
      {0, 3, 2, {A{5, 3, 1, 1, 1}, A{5, 3, 1, 1, 1}}, true},
      {2, 0, 2, {A{5, 3, 1, 1, 1}, A{5, 3, 1, 1, 1}}, true},
      {2, 8, 0, {A{5, 3, 1, 1, 1}, A{5, 3, 1, 1, 1}}, true},
      {2, 16, 17, {A{15, 3, 1, 1, 1}, A{19, 3, 1, 1, 1}}, true},
      {1, 9, 33, {A{20, 1, 1, 0, 1}, A{21, 1, 1, 0, 1}}, true},
      {1, 5, 7, {A{12, 4, 3, 2, 1}, A{13, 4, 3, 2, 1}}, true},
      // Long rows: the forward im2col is built in chunks of output rows.
      {1, 32, 1, {A{2, 5, 1, 2, 1}, A{1400, 5, 1, 2, 1}}, true},
      // Stride 1 (the direct tiles): more channels than one k block, output channels not a
      // multiple of the 6-row tile, dilation, padding wider than the kernel's reach.
      {1, 100, 7, {A{6, 3, 1, 1, 1}, A{9, 3, 1, 1, 1}}, true},
      {2, 5, 13, {A{7, 3, 1, 3, 2}, A{33, 2, 1, 0, 1}}, false},
      {1, 3, 8, {A{4, 3, 1, 2, 1}, A{3, 1, 1, 1, 1}}, true},
      // 3x3 stride 1 with 16+ channels each way (Winograd F(2x2, 3x3) on plain inputs): odd
      // output rows, odd output columns, no padding.
      {1, 16, 16, {A{9, 3, 1, 1, 1}, A{30, 3, 1, 1, 1}}, true},
      {2, 17, 20, {A{8, 3, 1, 0, 1}, A{25, 3, 1, 0, 1}}, false}};
  if (!Quick(c)) {
    cases.push_back({2, 32, 32, {A{28, 3, 1, 1, 1}, A{28, 3, 1, 1, 1}}, true});
    // One image spread over the threads by rows.
    cases.push_back({1, 64, 20, {A{30, 3, 1, 1, 1}, A{30, 3, 1, 1, 1}}, true});
  }
  RunConvCases<2>(ref, fast, c, transposed, cases, m);
  ConvErrors<2>(ref, fast, c, transposed, m);
  return m;
}

Measure RunConv3D(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  using A = ConvAxis;
  std::vector<ConvCase<3>> cases = {
      {1, 1, 1, {A{3, 3, 1, 0, 1}, A{3, 3, 1, 0, 1}, A{3, 3, 1, 0, 1}}, false},
      {2, 3, 4, {A{5, 3, 1, 1, 1}, A{6, 3, 1, 1, 1}, A{7, 3, 1, 1, 1}}, true},
      {1, 2, 3, {A{6, 2, 2, 1, 1}, A{7, 3, 2, 1, 1}, A{9, 3, 1, 0, 2}}, true},
      {1, 8, 9, {A{4, 1, 1, 0, 1}, A{5, 3, 1, 1, 1}, A{17, 3, 1, 1, 1}}, true},
      {1, 30, 7, {A{4, 3, 1, 1, 1}, A{5, 3, 1, 1, 2}, A{6, 2, 1, 0, 1}}, true}};
  if (!Quick(c))
    cases.push_back({2, 16, 16, {A{8, 3, 1, 1, 1}, A{12, 3, 1, 1, 1}, A{12, 3, 1, 1, 1}}, true});
  RunConvCases<3>(ref, fast, c, false, cases, m);
  ConvErrors<3>(ref, fast, c, false, m);
  return m;
}

// ---- Pooling ------------------------------------------------------------------------------------

struct PoolCase {
  int64_t batch, channels, inH, inW;
  PoolConfig config;
};

int64_t PoolOut(int64_t in, int64_t k, int64_t s, int64_t p) {
  return in == 0 ? 0 : (in + 2 * p - k) / s + 1;
}

Measure RunPool2D(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  auto cfg = [](int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    return PoolConfig{
        .KernelH = kh, .KernelW = kw, .StrideH = sh, .StrideW = sw, .PaddingH = ph, .PaddingW = pw};
  };
  std::vector<PoolCase> cases = {
      {1, 1, 1, 1, cfg(1, 1, 1, 1, 0, 0)},   {1, 1, 4, 4, cfg(2, 2, 2, 2, 0, 0)},
      {2, 3, 9, 17, cfg(3, 3, 2, 2, 1, 1)},  {1, 2, 7, 33, cfg(3, 3, 1, 1, 1, 1)},
      {1, 1, 8, 65, cfg(2, 3, 2, 3, 1, 1)},  {2, 2, 16, 16, cfg(4, 4, 4, 4, 2, 2)},
      {1, 3, 11, 40, cfg(5, 3, 3, 1, 2, 0)}, {0, 3, 5, 5, cfg(2, 2, 2, 2, 0, 0)},
      {2, 2, 0, 0, cfg(2, 2, 2, 2, 0, 0)},   {1, 4, 3, 100, cfg(3, 7, 1, 2, 0, 3)},
      {3, 5, 57, 57, cfg(3, 3, 2, 2, 1, 1)}};
  if (!Quick(c)) cases.push_back({4, 16, 112, 112, cfg(3, 3, 2, 2, 1, 1)});
  uint64_t seed = c.seed;
  for (const PoolCase& s : cases) {
    const PoolConfig& p = s.config;
    const int64_t outH = PoolOut(s.inH, p.KernelH, p.StrideH, p.PaddingH);
    const int64_t outW = PoolOut(s.inW, p.KernelW, p.StrideW, p.PaddingW);
    for (const InputSet& set : kInputSets) {
      const std::string where =
          fmt::format("{}x{}x{}x{} k {}x{} s {}x{} p {}x{} {}", s.batch, s.channels, s.inH, s.inW,
                      p.KernelH, p.KernelW, p.StrideH, p.StrideW, p.PaddingH, p.PaddingW, set.name);
      const auto x = Input(c.dtype, s.batch * s.channels * s.inH * s.inW, ++seed, set.specials);
      const int64_t count = s.batch * s.channels * outH * outW;
      std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, count) + 16, kGuard), got = want;
      Unerase<Pool2DFn>(ref)(p, x.data(), want.data(), s.batch, s.channels, s.inH, s.inW, outH,
                             outW, c.dtype);
      Unerase<Pool2DFn>(fast)(p, x.data(), got.data(), s.batch, s.channels, s.inH, s.inW, outH,
                              outW, c.dtype);
      CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
      CompareStorage(got, want, c.dtype, count, tol, where, m);
    }
  }
  // In place: out aliases in.
  {
    auto x = Input(c.dtype, 2 * 9 * 10, ++seed, false);
    std::vector<uint8_t> want(x.size(), kGuard);
    const PoolConfig p = cfg(3, 3, 2, 2, 1, 1);
    Unerase<Pool2DFn>(ref)(p, x.data(), want.data(), 1, 2, 9, 10, 5, 5, c.dtype);
    Unerase<Pool2DFn>(fast)(p, x.data(), x.data(), 1, 2, 9, 10, 5, 5, c.dtype);
    CompareStorage(x, want, c.dtype, 50, tol, "alias out=in", m);
  }
  const auto x = Input(c.dtype, 64, 1, false);
  std::vector<uint8_t> out(256, kGuard);
  auto call = [&](PoolConfig p, int64_t outH, int64_t outW, DType dtype) {
    return [&, p, outH, outW, dtype](bool reference) {
      Unerase<Pool2DFn>(reference ? ref : fast)(p, x.data(), out.data(), 1, 1, 8, 8, outH, outW,
                                                dtype);
    };
  };
  ExpectSameError("padding > kernel/2", out, call(cfg(2, 2, 2, 2, 2, 0), 5, 4, c.dtype), m);
  ExpectSameError("wrong outW", out, call(cfg(2, 2, 2, 2, 0, 0), 4, 5, c.dtype), m);
  ExpectSameError("stride 0", out, call(cfg(2, 2, 0, 2, 0, 0), 4, 4, c.dtype), m);
  ExpectSameError("dtype int8", out, call(cfg(2, 2, 2, 2, 0, 0), 4, 4, DType::Int8), m);
  return m;
}

Measure RunAdaptivePool2D(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  struct Case {
    int64_t batch, channels, inH, inW, outH, outW;
  };
  // Dividing and non-dividing windows, out > in (repeated inputs), global pooling.
  std::vector<Case> cases = {{1, 1, 1, 1, 1, 1}, {1, 2, 4, 4, 2, 2},   {2, 3, 7, 9, 3, 4},
                             {1, 2, 5, 5, 7, 8}, {2, 4, 17, 33, 1, 1}, {1, 3, 10, 40, 5, 17},
                             {0, 3, 4, 4, 2, 2}, {2, 8, 14, 14, 7, 7}, {1, 2, 33, 65, 6, 9}};
  if (!Quick(c)) cases.push_back({4, 16, 56, 56, 7, 7});
  uint64_t seed = c.seed;
  for (const Case& s : cases) {
    for (const InputSet& set : kInputSets) {
      const std::string where = fmt::format("{}x{}x{}x{} -> {}x{} {}", s.batch, s.channels, s.inH,
                                            s.inW, s.outH, s.outW, set.name);
      const auto x = Input(c.dtype, s.batch * s.channels * s.inH * s.inW, ++seed, set.specials);
      const int64_t count = s.batch * s.channels * s.outH * s.outW;
      std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, count) + 16, kGuard), got = want;
      Unerase<AdaptivePool2DFn>(ref)(x.data(), want.data(), s.batch, s.channels, s.inH, s.inW,
                                     s.outH, s.outW, c.dtype);
      Unerase<AdaptivePool2DFn>(fast)(x.data(), got.data(), s.batch, s.channels, s.inH, s.inW,
                                      s.outH, s.outW, c.dtype);
      CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
      CompareStorage(got, want, c.dtype, count, tol, where, m);
    }
  }
  const auto x = Input(c.dtype, 64, 1, false);
  std::vector<uint8_t> out(256, kGuard);
  auto call = [&](int64_t inH, int64_t outH, DType dtype) {
    return [&, inH, outH, dtype](bool reference) {
      Unerase<AdaptivePool2DFn>(reference ? ref : fast)(x.data(), out.data(), 1, 1, inH, 8, outH, 2,
                                                        dtype);
    };
  };
  ExpectSameError("outH=0", out, call(8, 0, c.dtype), m);
  ExpectSameError("inH=-1", out, call(-1, 2, c.dtype), m);
  ExpectSameError("dtype int8", out, call(8, 2, DType::Int8), m);
  return m;
}

}  // namespace

void RegisterNnRunners(RunnerRegistry& r) {
  r["Matmul"] = RunMatmul<false>;
  r["MatmulTransB"] = RunMatmul<true>;
  r["SingleHeadAttention"] = RunSingleHead;
  r["MultiHeadAttention"] = RunMultiHead;
  r["Conv1D"] = RunConv1D;
  r["Conv2D"] = RunConv2D;
  r["Conv3D"] = RunConv3D;
  r["Pool2D"] = RunPool2D;
  r["AdaptivePool2D"] = RunAdaptivePool2D;
}

}  // namespace backplane::conformance
