#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backplane/backend/attention.hpp"
#include "backplane/backend/convolution.hpp"
#include "backplane/backend/pool.hpp"
#include "backplane/backend/pool_nd.hpp"
#include "cpu/reference/pool_nd_geometry.hpp"
#include "checks/convolution.hpp"
#include "checks/pool.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/exact_math.cuh"

namespace backplane::cuda {

void RegisterNn(KernelTable& table);

namespace {

// ---- Shared helpers --------------------------------------------------------------------------

constexpr double kInf = std::numeric_limits<double>::infinity();

// The reference's StoreResult: one rounding from double. For f16/bf16 the double is rounded to
// odd into f32 first (RoundToOddF32), after which the round to nearest even into the narrow format
// equals one correct rounding of the double.
template <class S>
__device__ __forceinline__ void StOnce(void* p, int64_t i, double v) {
  if constexpr (std::is_same_v<S, double>) {
    static_cast<double*>(p)[i] = v;
  } else if constexpr (std::is_same_v<S, float>) {
    static_cast<float*>(p)[i] = __double2float_rn(v);
  } else {
    float f = __double2float_rn(v);
    if (!isnan(v) && static_cast<double>(f) != v) {
      unsigned bits = __float_as_uint(f);
      if (fabs(static_cast<double>(f)) > fabs(v)) --bits;  // one step towards zero
      f = __uint_as_float(bits | 1u);
    }
    St<S>(p, i, f);
  }
}

// Where a kernel writes an output that may alias one of its inputs: the output itself, or (when
// `staged`) a device buffer of the same size that Commit() copies over the output once every
// kernel that reads the inputs has been launched.
class OutputTarget {
 public:
  OutputTarget(void* out, size_t bytes, bool staged) : out_(out), bytes_(bytes) {
    if (staged && bytes > 0) scratch_.emplace(bytes);
  }
  void* Get() const { return scratch_ ? scratch_->Get() : out_; }
  void Commit() {
    if (!scratch_) return;
    CheckCuda(static_cast<int>(cudaMemcpyAsync(out_, scratch_->Get(), bytes_,
                                               cudaMemcpyDeviceToDevice, Stream())),
              "cudaMemcpyAsync");
    scratch_->Release();
  }

 private:
  void* out_;
  size_t bytes_;
  std::optional<DeviceScratch> scratch_;
};

// Narrow<double>: o[i] = the f64 result rounded as the reference's Store<double>.
template <class S>
__global__ void NarrowKernel(const double* src, void* dst, int64_t n) {
  BP_CUDA_GRID_STRIDE(i, n) { StD<S>(dst, i, src[i]); }
}

// =================================================================================================
// Attention
// =================================================================================================

// a * b, throwing instead of overflowing; `arg` is the argument blamed (attention.cpp's Product).
int64_t AttnProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "small enough that the buffer size fits in int64",
                         std::to_string(b));
  }
  return product;
}

// One launch: `numHeads` query heads over the same rows. Query head h reads columns
// [h * qHeadCols, + depth) of Q, KV head g = h / groupSize columns [g * kvHeadCols, + depth) of K
// and [g * kvHeadCols, + valueDim) of V, and accumulates into columns [h * oHeadCols, + valueDim)
// of `acc` (row stride oStride).
struct AttnParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  double* acc = nullptr;
  int64_t qStride = 0, kStride = 0, vStride = 0, oStride = 0;
  int64_t qHeadCols = 0, kvHeadCols = 0, oHeadCols = 0;
  int64_t depth = 0, valueDim = 0;
  int64_t seqQ = 0, seqK = 0;
  int64_t numHeads = 1, groupSize = 1;
  // The reference's key tiles [t * blockSize, (t + 1) * blockSize); INT64_MAX: one tile of every
  // key (the two-pass algorithm).
  int64_t blockSize = std::numeric_limits<int64_t>::max();
  double scale = 0.0;
  bool causal = false;
  int64_t window = 0;  // > 0: only the last `window` positions up to p, and `right` after it
  int64_t right = 0;   // -1: no bound after p
  const double* alibi = nullptr;  // [numHeads] slopes, or null (no bias)
};

constexpr int kAttnRows = 16;     // query rows per block
constexpr int kAttnKeys = 32;     // keys per shared-memory sub-tile
constexpr int kAttnCols = 32;     // depth / value columns per shared-memory chunk
constexpr int kAttnThreads = 256;

struct AttnShared {
  double q[kAttnRows][kAttnCols];
  double k[kAttnKeys][kAttnCols + 1];  // padded against bank conflicts
  double v[kAttnKeys][kAttnCols];
  double s[kAttnRows][kAttnKeys];  // scores, then (pass B) the weights exp(s - max)
  bool vis[kAttnRows][kAttnKeys];  // the key is visible to the row (and both exist)
  double runningMax[kAttnRows], normaliser[kAttnRows];
  double tileMax[kAttnRows], newMax[kAttnRows], rescale[kAttnRows];
  bool anyVisible[kAttnRows], tileAny[kAttnRows], active[kAttnRows];
};

// max(a, b) that returns NaN when either is NaN (the reference's MaxPropagatingNaN).
__device__ __forceinline__ double MaxPropagatingNaN(double a, double b) {
  if (isnan(a) || isnan(b)) return __longlong_as_double(0x7ff8000000000000LL);
  return a > b ? a : b;
}

// The reference's Visibility::Sees for absolute query position p and key j.
__device__ __forceinline__ bool Sees(const AttnParams& a, int64_t p, int64_t j) {
  if (a.causal && j > p) return false;
  if (a.window > 0 && p - j >= a.window) return false;
  if (a.window > 0 && a.right >= 0 && j - p > a.right) return false;
  return true;
}

// sh.s[r][c] = score of query row i0 + r with key j0 + c (r < nRows, c < nKeys) and sh.vis[r][c]
// whether that key is visible: dot (a sequential f64 chain over the depth, from +0.0) * scale +
// bias. Reached by every thread of the block; starts and ends with a barrier.
template <class S>
__device__ void AttnScores(AttnShared& sh, const AttnParams& P, int64_t h, int64_t g, int64_t i0,
                           int nRows, int64_t j0, int nKeys, double alibi) {
  const int t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(blockDim.x);
  __syncthreads();  // earlier users of sh.s, sh.q and sh.k are done
  for (int e = t; e < kAttnRows * kAttnKeys; e += n) sh.s[e / kAttnKeys][e % kAttnKeys] = 0.0;
  for (int64_t d0 = 0; d0 < P.depth; d0 += kAttnCols) {
    const int nCols = static_cast<int>(min(static_cast<int64_t>(kAttnCols), P.depth - d0));
    __syncthreads();  // the previous chunk's products are done
    for (int e = t; e < kAttnRows * kAttnCols; e += n) {
      const int r = e / kAttnCols, c = e % kAttnCols;
      sh.q[r][c] = (r < nRows && c < nCols)
                       ? LdD<S>(P.q, (i0 + r) * P.qStride + h * P.qHeadCols + d0 + c)
                       : 0.0;
    }
    for (int e = t; e < kAttnKeys * kAttnCols; e += n) {
      const int r = e / kAttnCols, c = e % kAttnCols;
      sh.k[r][c] = (r < nKeys && c < nCols)
                       ? LdD<S>(P.k, (j0 + r) * P.kStride + g * P.kvHeadCols + d0 + c)
                       : 0.0;
    }
    __syncthreads();
    for (int e = t; e < kAttnRows * kAttnKeys; e += n) {
      const int r = e / kAttnKeys, c = e % kAttnKeys;
      if (r >= nRows || c >= nKeys) continue;
      double dot = sh.s[r][c];
      for (int d = 0; d < nCols; ++d) dot = Add(dot, Mul(sh.q[r][d], sh.k[c][d]));
      sh.s[r][c] = dot;
    }
  }
  __syncthreads();
  const int64_t shift = P.seqK - P.seqQ;
  for (int e = t; e < kAttnRows * kAttnKeys; e += n) {
    const int r = e / kAttnKeys, c = e % kAttnKeys;
    bool visible = false;
    if (r < nRows && c < nKeys) {
      const int64_t p = i0 + r + shift;
      const int64_t j = j0 + c;
      visible = Sees(P, p, j);
      if (visible) {
        const double bias = alibi == 0.0 ? 0.0 : Mul(alibi, static_cast<double>(j - p));
        sh.s[r][c] = Add(Mul(sh.s[r][c], P.scale), bias);
      }
    }
    sh.vis[r][c] = visible;
  }
  __syncthreads();
}

// The rows' results into P.acc: every query row i of a block's tile gets
//   acc[i, :] = sum over visible j of exp(s_ij - m) v[j, :] / sum exp(s_ij - m)
// computed over the reference's key tiles with the online-softmax rescale between tiles (the
// reference's AttendRowTiled; with one tile this is AttendRowTwoPass exactly). Rows that see no
// key get zeros, rows whose visible scores are all -Inf get NaN.
template <class S>
__global__ void __launch_bounds__(kAttnThreads) AttentionKernel(AttnParams P) {
  __shared__ AttnShared sh;
  const int t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(blockDim.x);
  const int64_t rowTiles = (P.seqQ + kAttnRows - 1) / kAttnRows;
  const int64_t items = P.numHeads * rowTiles;
  const int64_t shift = P.seqK - P.seqQ;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t h = item / rowTiles;
    const int64_t g = h / P.groupSize;
    const int64_t i0 = (item % rowTiles) * kAttnRows;
    const int nRows = static_cast<int>(min(static_cast<int64_t>(kAttnRows), P.seqQ - i0));
    const int64_t vd = P.valueDim;
    const double alibi = P.alibi != nullptr ? P.alibi[h] : 0.0;
    double* acc = P.acc + h * P.oHeadCols;  // row i, column d at acc[i * oStride + d]

    __syncthreads();  // the previous item's rows are finished
    if (t < kAttnRows) {
      sh.runningMax[t] = -kInf;
      sh.normaliser[t] = 0.0;
      sh.anyVisible[t] = false;
    }
    for (int64_t e = t; e < nRows * vd; e += n) acc[(i0 + e / vd) * P.oStride + e % vd] = 0.0;

    // The keys some row of the tile may see: [lo, hi).
    const int64_t pFirst = i0 + shift;
    const int64_t pLast = i0 + nRows - 1 + shift;
    int64_t lo = 0;
    int64_t hi = P.seqK;
    if (P.causal) hi = min(hi, pLast + 1);
    if (P.window > 0) {
      if (pFirst + 1 > P.window) lo = pFirst + 1 - P.window;
      if (P.right >= 0 && P.right < P.seqK) hi = min(hi, pLast + P.right + 1);
    }

    const int64_t bs = P.blockSize;
    for (int64_t start = (lo / bs) * bs, end = 0; start < hi; start = end) {
      end = start + min(bs, P.seqK - start);
      const int64_t a = max(start, lo);
      const int64_t b = min(end, hi);
      if (a >= b) continue;
      const bool oneSubTile = b - a <= kAttnKeys;  // pass A's scores serve pass B

      // Pass A: the tile's max over the visible scores, per row.
      __syncthreads();  // the previous tile's statistics are read
      if (t < kAttnRows) {
        sh.tileMax[t] = -kInf;
        sh.tileAny[t] = false;
      }
      for (int64_t j0 = a; j0 < b; j0 += kAttnKeys) {
        const int nKeys = static_cast<int>(min(static_cast<int64_t>(kAttnKeys), b - j0));
        AttnScores<S>(sh, P, h, g, i0, nRows, j0, nKeys, alibi);
        if (t < nRows) {
          for (int c = 0; c < nKeys; ++c) {
            if (!sh.vis[t][c]) continue;
            sh.tileAny[t] = true;
            sh.tileMax[t] = MaxPropagatingNaN(sh.tileMax[t], sh.s[t][c]);
          }
        }
      }
      __syncthreads();
      if (t < nRows) {
        sh.active[t] = false;
        if (sh.tileAny[t]) {
          sh.anyVisible[t] = true;
          const double newMax = MaxPropagatingNaN(sh.runningMax[t], sh.tileMax[t]);
          // Every score so far is -Inf: nothing carries weight relative to a later finite score.
          if (newMax != -kInf) {
            sh.active[t] = true;
            sh.newMax[t] = newMax;
            sh.rescale[t] = exp(Sub(sh.runningMax[t], newMax));  // 0 on the first tile
            sh.normaliser[t] = Mul(sh.normaliser[t], sh.rescale[t]);
          }
        }
      }
      __syncthreads();
      for (int64_t e = t; e < nRows * vd; e += n) {
        const int r = static_cast<int>(e / vd);
        if (!sh.active[r]) continue;
        double* x = acc + (i0 + r) * P.oStride + e % vd;
        *x = Mul(*x, sh.rescale[r]);
      }

      // Pass B: weights, their sum and the weighted sum of V, in key order.
      for (int64_t j0 = a; j0 < b; j0 += kAttnKeys) {
        const int nKeys = static_cast<int>(min(static_cast<int64_t>(kAttnKeys), b - j0));
        if (oneSubTile) {
          __syncthreads();  // the rescale above is done
        } else {
          AttnScores<S>(sh, P, h, g, i0, nRows, j0, nKeys, alibi);
        }
        for (int e = t; e < kAttnRows * kAttnKeys; e += n) {
          const int r = e / kAttnKeys, c = e % kAttnKeys;
          if (sh.vis[r][c] && sh.active[r]) sh.s[r][c] = exp(Sub(sh.s[r][c], sh.newMax[r]));
        }
        __syncthreads();
        if (t < nRows && sh.active[t]) {
          double sum = sh.normaliser[t];
          for (int c = 0; c < nKeys; ++c) {
            if (sh.vis[t][c]) sum = Add(sum, sh.s[t][c]);
          }
          sh.normaliser[t] = sum;
        }
        for (int64_t d0 = 0; d0 < vd; d0 += kAttnCols) {
          const int nCols = static_cast<int>(min(static_cast<int64_t>(kAttnCols), vd - d0));
          __syncthreads();  // the previous chunk of V is used
          for (int e = t; e < kAttnKeys * kAttnCols; e += n) {
            const int r = e / kAttnCols, c = e % kAttnCols;
            sh.v[r][c] = (r < nKeys && c < nCols)
                             ? LdD<S>(P.v, (j0 + r) * P.vStride + g * P.kvHeadCols + d0 + c)
                             : 0.0;
          }
          __syncthreads();
          for (int e = t; e < kAttnRows * kAttnCols; e += n) {
            const int r = e / kAttnCols, c = e % kAttnCols;
            if (r >= nRows || c >= nCols || !sh.active[r]) continue;
            double* x = acc + (i0 + r) * P.oStride + d0 + c;
            double value = *x;
            for (int key = 0; key < nKeys; ++key) {
              if (sh.vis[r][key]) value = Add(value, Mul(sh.s[r][key], sh.v[key][c]));
            }
            *x = value;
          }
        }
      }
      __syncthreads();
      if (t < nRows && sh.active[t]) sh.runningMax[t] = sh.newMax[t];
    }

    __syncthreads();
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    for (int64_t e = t; e < nRows * vd; e += n) {
      const int r = static_cast<int>(e / vd);
      double* x = acc + (i0 + r) * P.oStride + e % vd;
      if (!sh.anyVisible[r]) {
        *x = 0.0;  // fully masked row: zeros
      } else if (sh.runningMax[r] == -kInf) {
        *x = nan;  // every visible score is -Inf: softmax is undefined
      } else {
        *x = Div(*x, sh.normaliser[r]);
      }
    }
  }
}

// Runs the attention kernel into an f64 buffer shaped like O (outCount elements), then narrows it
// into o. `slopes` (empty, or one per head) are the ALiBi slopes.
void RunAttention(std::string_view op, AttnParams params, void* o, int64_t outCount,
                  const std::vector<double>& slopes, DType dtype) {
  const size_t accBytes = static_cast<size_t>(outCount) * sizeof(double);
  DeviceScratch scratch(accBytes + slopes.size() * sizeof(double));
  params.acc = static_cast<double*>(scratch.Get());
  if (!slopes.empty()) {
    auto* deviceSlopes = reinterpret_cast<double*>(static_cast<char*>(scratch.Get()) + accBytes);
    CopyAsync(deviceSlopes, slopes.data(), slopes.size() * sizeof(double));
    params.alibi = deviceSlopes;
  }
  const int64_t items = params.numHeads * ((params.seqQ + kAttnRows - 1) / kAttnRows);
  const unsigned blocks = GridFor(items, 1);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    AttentionKernel<S><<<blocks, kAttnThreads, 0, Stream()>>>(params);
    NarrowKernel<S><<<GridFor(outCount), kThreads, 0, Stream()>>>(params.acc, o, outCount);
  });
  scratch.Release();
  FinishMethod(op);
}

struct SingleHeadSizes {
  int64_t qCount, kCount, vCount, oCount;
};

SingleHeadSizes ValidateSingleHead(std::string_view op, const void* q, const void* k, const void* v,
                                   const void* o, int64_t seqQ, int64_t seqK, int64_t depth,
                                   int64_t valueDim, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "seqQ", seqQ);
  CheckNonNegative(op, "seqK", seqK);
  CheckNonNegative(op, "depth", depth);
  CheckNonNegative(op, "valueDim", valueDim);
  if (depth == 0 && seqQ > 0 && seqK > 0) {
    ThrowInvalidArgument(op, "depth", "> 0 when seqQ and seqK are > 0 (the scale is 1/sqrt(depth))",
                         "0");
  }
  const SingleHeadSizes sizes{
      AttnProduct(op, "depth", seqQ, depth), AttnProduct(op, "depth", seqK, depth),
      AttnProduct(op, "valueDim", seqK, valueDim), AttnProduct(op, "valueDim", seqQ, valueDim)};
  CheckPointer(op, "q", q, sizes.qCount);
  CheckPointer(op, "k", k, sizes.kCount);
  CheckPointer(op, "v", v, sizes.vCount);
  CheckPointer(op, "o", o, sizes.oCount);
  return sizes;
}

void RunSingleHead(std::string_view op, int64_t blockSize, bool causal, const void* q,
                   const void* k, const void* v, void* o, int64_t seqQ, int64_t seqK, int64_t depth,
                   int64_t valueDim, DType dtype, const SingleHeadSizes& sizes) {
  if (sizes.oCount == 0) return;
  AttnParams p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.qStride = depth;
  p.kStride = depth;
  p.vStride = valueDim;
  p.oStride = valueDim;
  p.depth = depth;
  p.valueDim = valueDim;
  p.seqQ = seqQ;
  p.seqK = seqK;
  p.blockSize = blockSize;
  p.scale = depth > 0 ? 1.0 / std::sqrt(static_cast<double>(depth)) : 0.0;
  p.causal = causal;
  RunAttention(op, p, o, sizes.oCount, {}, dtype);
}

// O = softmax(Q K^T / sqrt(depth)) V, two passes per row over every key. BlockSize is not used.
void ScaledDotProductAttention(const FlashAttentionConfig& config, const void* q, const void* k,
                               const void* v, void* o, int64_t seqQ, int64_t seqK, int64_t depth,
                               int64_t valueDim, DType dtype) {
  constexpr std::string_view kOp = "Attention.ScaledDotProductAttention";
  const SingleHeadSizes sizes =
      ValidateSingleHead(kOp, q, k, v, o, seqQ, seqK, depth, valueDim, dtype);
  RunSingleHead(kOp, std::numeric_limits<int64_t>::max(), config.Causal, q, k, v, o, seqQ, seqK,
                depth, valueDim, dtype, sizes);
}

// The same function over tiles of BlockSize keys with the online softmax.
void FlashAttention(const FlashAttentionConfig& config, const void* q, const void* k, const void* v,
                    void* o, int64_t seqQ, int64_t seqK, int64_t depth, int64_t valueDim,
                    DType dtype) {
  constexpr std::string_view kOp = "Attention.FlashAttention";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckPositive(kOp, "BlockSize", config.BlockSize);
  const SingleHeadSizes sizes =
      ValidateSingleHead(kOp, q, k, v, o, seqQ, seqK, depth, valueDim, dtype);
  RunSingleHead(kOp, config.BlockSize, config.Causal, q, k, v, o, seqQ, seqK, depth, valueDim,
                dtype, sizes);
}

// Q and O [seqQ, NumHeads*HeadDim], K and V [seqK, kvHeads*HeadDim]; query head h attends with KV
// head h / (NumHeads / kvHeads); causal / window bottom-right aligned; ALiBi slope^(h+1).
void MultiHeadAttention(const MultiHeadAttentionConfig& config, const void* q, const void* k,
                        const void* v, void* o, int64_t seqQ, int64_t seqK, DType dtype) {
  constexpr std::string_view kOp = "Attention.MultiHeadAttention";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqQ", seqQ);
  CheckNonNegative(kOp, "seqK", seqK);
  CheckPositive(kOp, "NumHeads", config.NumHeads);
  CheckPositive(kOp, "HeadDim", config.HeadDim);
  const int64_t numHeads = config.NumHeads;
  const int64_t kvHeads = config.KVHeadCount > 0 ? config.KVHeadCount : numHeads;
  if (kvHeads > numHeads) {
    ThrowInvalidArgument(kOp, "KVHeadCount", Format("<= NumHeads ({})", numHeads),
                         std::to_string(kvHeads));
  }
  if (numHeads % kvHeads != 0) {
    ThrowInvalidArgument(kOp, "KVHeadCount", Format("a divisor of NumHeads ({})", numHeads),
                         std::to_string(kvHeads));
  }
  CheckNonNegative(kOp, "WindowSize", config.WindowSize);
  if (config.WindowRight < -1) {
    ThrowInvalidArgument(kOp, "WindowRight", ">= -1", std::to_string(config.WindowRight));
  }
  const double slope = static_cast<double>(config.ALiBiSlope);
  CheckFinite(kOp, "ALiBiSlope", slope);
  if (slope < 0.0) ThrowInvalidArgument(kOp, "ALiBiSlope", ">= 0", Format("{}", slope));
  if (slope > 1.0 && !std::isfinite(std::pow(slope, static_cast<double>(numHeads)))) {
    ThrowInvalidArgument(kOp, "ALiBiSlope",
                         Format("such that ALiBiSlope^NumHeads ({}) is finite", numHeads),
                         Format("{}", slope));
  }
  const int64_t headDim = config.HeadDim;
  const int64_t qWidth = AttnProduct(kOp, "HeadDim", numHeads, headDim);
  const int64_t kvWidth = AttnProduct(kOp, "HeadDim", kvHeads, headDim);
  const int64_t qCount = AttnProduct(kOp, "seqQ", qWidth, seqQ);
  const int64_t kvCount = AttnProduct(kOp, "seqK", kvWidth, seqK);
  CheckPointer(kOp, "q", q, qCount);
  CheckPointer(kOp, "k", k, kvCount);
  CheckPointer(kOp, "v", v, kvCount);
  CheckPointer(kOp, "o", o, qCount);
  if (qCount == 0) return;

  std::vector<double> slopes;
  if (slope != 0.0) {
    slopes.resize(static_cast<size_t>(numHeads));
    for (int64_t h = 0; h < numHeads; ++h) {
      slopes[static_cast<size_t>(h)] = std::pow(slope, static_cast<double>(h + 1));
    }
  }
  AttnParams p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.qStride = qWidth;
  p.kStride = kvWidth;
  p.vStride = kvWidth;
  p.oStride = qWidth;
  p.qHeadCols = headDim;
  p.kvHeadCols = headDim;
  p.oHeadCols = headDim;
  p.depth = headDim;
  p.valueDim = headDim;
  p.seqQ = seqQ;
  p.seqK = seqK;
  p.numHeads = numHeads;
  p.groupSize = numHeads / kvHeads;
  p.scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  p.causal = config.Causal;
  p.window = config.WindowSize;
  p.right = config.WindowRight;
  RunAttention(kOp, p, o, qCount, slopes, dtype);
}

// =================================================================================================
// Convolution
// =================================================================================================

namespace conv {

using checks::convolution::AxesDHW;
using checks::convolution::AxesHW;
using checks::convolution::Axis;
using checks::convolution::AxisL;
using checks::convolution::Plan;
using checks::convolution::Validate;

// The geometry of one call on three spatial axes (d, h, w); a rank-r call gets 3 - r leading
// axes of size 1 with a one-tap kernel, stride 1, no padding and dilation 1, which changes neither
// the offsets nor the tap order.
struct Geom {
  int64_t in[3], kernel[3], out[3], stride[3], padding[3], dilation[3];
  int64_t batch, inChannels, outChannels;
  int64_t inVolume, kernelVolume, outVolume, outCount;
};

template <size_t R>
Geom MakeGeom(const std::array<Axis, R>& axes, const Plan& p, int64_t batch, int64_t inChannels,
              int64_t outChannels) {
  Geom g{};
  for (int r = 0; r < 3; ++r) {
    g.in[r] = g.kernel[r] = g.out[r] = g.stride[r] = g.dilation[r] = 1;
    g.padding[r] = 0;
  }
  for (size_t r = 0; r < R; ++r) {
    const size_t at = 3 - R + r;
    g.in[at] = axes[r].in;
    g.kernel[at] = axes[r].kernel;
    g.out[at] = axes[r].out;
    g.stride[at] = axes[r].stride;
    g.padding[at] = axes[r].padding;
    g.dilation[at] = axes[r].dilation;
  }
  g.batch = batch;
  g.inChannels = inChannels;
  g.outChannels = outChannels;
  g.inVolume = p.inVolume;
  g.kernelVolume = p.kernelVolume;
  g.outVolume = p.outVolume;
  g.outCount = p.outCount;
  return g;
}

// out[n, co, o...] = bias[co] + sum over ci, then the kernel taps in row-major order, of
// in[n, ci, o*stride + k*dilation - padding ...] * weight[co, ci, k...], skipping the taps outside
// the input; one f64 accumulator per output.
template <class S>
__global__ void ForwardKernel(Geom g, const void* in, const void* weight, const void* bias,
                              void* out) {
  BP_CUDA_GRID_STRIDE(idx, g.outCount) {
    const int64_t o = idx % g.outVolume;
    const int64_t co = (idx / g.outVolume) % g.outChannels;
    const int64_t n = idx / g.outVolume / g.outChannels;
    const int64_t ow = o % g.out[2];
    const int64_t oh = (o / g.out[2]) % g.out[1];
    const int64_t od = o / g.out[2] / g.out[1];
    double acc = bias != nullptr ? LdD<S>(bias, co) : 0.0;
    for (int64_t ci = 0; ci < g.inChannels; ++ci) {
      const int64_t plane = (n * g.inChannels + ci) * g.inVolume;
      const int64_t filter = (co * g.inChannels + ci) * g.kernelVolume;
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
        const int64_t id = od * g.stride[0] + kd * g.dilation[0] - g.padding[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
          const int64_t ih = oh * g.stride[1] + kh * g.dilation[1] - g.padding[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            const int64_t iw = ow * g.stride[2] + kw * g.dilation[2] - g.padding[2];
            if (iw < 0 || iw >= g.in[2]) continue;
            const double x = LdD<S>(in, plane + (id * g.in[1] + ih) * g.in[2] + iw);
            const double w =
                LdD<S>(weight, filter + (kd * g.kernel[1] + kh) * g.kernel[2] + kw);
            acc = Add(acc, Mul(x, w));
          }
        }
      }
    }
    StD<S>(out, idx, acc);
  }
}

// The input position that tap k scatters onto output position o along one axis of a transposed
// convolution (o = i*stride + k*dilation - padding), or -1 when there is none.
__device__ __forceinline__ int64_t TransposedSource(int64_t in, int64_t stride, int64_t padding,
                                                    int64_t dilation, int64_t o, int64_t k) {
  const int64_t t = o + padding - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t i = t / stride;
  return i < in ? i : -1;
}

// out[n, co, oh, ow] = bias[co] + sum over ci, kh, kw (in that order) of
// in[n, ci, ih, iw] * weight[ci, co, kh, kw] with ih*sH + kh*dH - pH = oh, iw*sW + kw*dW - pW = ow.
// Uses the h and w axes of g (indices 1 and 2).
template <class S>
__global__ void TransposedKernel(Geom g, const void* in, const void* weight, const void* bias,
                                 void* out) {
  BP_CUDA_GRID_STRIDE(idx, g.outCount) {
    const int64_t outH = g.out[1], outW = g.out[2];
    const int64_t ow = idx % outW;
    const int64_t oh = (idx / outW) % outH;
    const int64_t co = (idx / outW / outH) % g.outChannels;
    const int64_t n = idx / outW / outH / g.outChannels;
    double acc = bias != nullptr ? LdD<S>(bias, co) : 0.0;
    for (int64_t ci = 0; ci < g.inChannels; ++ci) {
      const int64_t plane = (n * g.inChannels + ci) * g.in[1] * g.in[2];
      const int64_t filter = (ci * g.outChannels + co) * g.kernel[1] * g.kernel[2];
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        const int64_t ih =
            TransposedSource(g.in[1], g.stride[1], g.padding[1], g.dilation[1], oh, kh);
        if (ih < 0) continue;
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
          const int64_t iw =
              TransposedSource(g.in[2], g.stride[2], g.padding[2], g.dilation[2], ow, kw);
          if (iw < 0) continue;
          const double x = LdD<S>(in, plane + ih * g.in[2] + iw);
          const double w = LdD<S>(weight, filter + kh * g.kernel[2] + kw);
          acc = Add(acc, Mul(x, w));
        }
      }
    }
    StD<S>(out, idx, acc);
  }
}

// Launches the forward or transposed kernel into `out`, or into a staging buffer when `out`
// overlaps an input (the reference stores only after computing everything).
void Run(std::string_view op, bool transposed, const Geom& g, const Plan& p, const void* in,
         const void* weight, const void* bias, void* out, DType dtype) {
  if (p.outCount == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t outBytes = static_cast<size_t>(p.outCount) * sizeof(S);
    const bool staged =
        Overlaps(out, outBytes, in, static_cast<size_t>(p.inCount) * sizeof(S)) ||
        Overlaps(out, outBytes, weight, static_cast<size_t>(p.weightCount) * sizeof(S)) ||
        Overlaps(out, outBytes, bias, static_cast<size_t>(g.outChannels) * sizeof(S));
    OutputTarget target(out, outBytes, staged);
    if (transposed) {
      TransposedKernel<S><<<GridFor(p.outCount), kThreads, 0, Stream()>>>(g, in, weight, bias,
                                                                          target.Get());
    } else {
      ForwardKernel<S><<<GridFor(p.outCount), kThreads, 0, Stream()>>>(g, in, weight, bias,
                                                                       target.Get());
    }
    target.Commit();
  });
  FinishMethod(op);
}

}  // namespace conv

// 2-D cross-correlation, in [N, Cin, H, W], weight [Cout, Cin, kH, kW], out [N, Cout, oH, oW].
void Conv2D(const Conv2DConfig& config, const void* in, const void* weight, const void* bias,
            void* out, int64_t batch, int64_t inChannels, int64_t inH, int64_t inW,
            int64_t outChannels, int64_t kernelH, int64_t kernelW, int64_t outH, int64_t outW,
            DType dtype) {
  constexpr std::string_view kOp = "Convolution.Conv2D";
  const auto axes = conv::AxesHW(config, inH, inW, kernelH, kernelW, outH, outW);
  const conv::Plan p =
      conv::Validate(kOp, false, axes, in, weight, out, batch, inChannels, outChannels, dtype);
  conv::Run(kOp, false, conv::MakeGeom(axes, p, batch, inChannels, outChannels), p, in, weight,
            bias, out, dtype);
}

// 1-D cross-correlation, in [N, Cin, L], weight [Cout, Cin, k], out [N, Cout, oL].
void Conv1D(const Conv1DConfig& config, const void* in, const void* weight, const void* bias,
            void* out, int64_t batch, int64_t inChannels, int64_t inL, int64_t outChannels,
            int64_t kernelL, int64_t outL, DType dtype) {
  constexpr std::string_view kOp = "Convolution.Conv1D";
  const std::array<conv::Axis, 1> axes = {conv::AxisL(config, inL, kernelL, outL)};
  const conv::Plan p =
      conv::Validate(kOp, false, axes, in, weight, out, batch, inChannels, outChannels, dtype);
  conv::Run(kOp, false, conv::MakeGeom(axes, p, batch, inChannels, outChannels), p, in, weight,
            bias, out, dtype);
}

// 3-D cross-correlation, in [N, Cin, D, H, W], weight [Cout, Cin, kD, kH, kW].
void Conv3D(const Conv3DConfig& config, const void* in, const void* weight, const void* bias,
            void* out, int64_t batch, int64_t inChannels, int64_t inD, int64_t inH, int64_t inW,
            int64_t outChannels, int64_t kernelD, int64_t kernelH, int64_t kernelW, int64_t outD,
            int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Convolution.Conv3D";
  const auto axes = conv::AxesDHW(config, inD, inH, inW, kernelD, kernelH, kernelW, outD, outH, outW);
  const conv::Plan p =
      conv::Validate(kOp, false, axes, in, weight, out, batch, inChannels, outChannels, dtype);
  conv::Run(kOp, false, conv::MakeGeom(axes, p, batch, inChannels, outChannels), p, in, weight,
            bias, out, dtype);
}

// 2-D transposed convolution, in [N, Cin, H, W], weight [Cin, Cout, kH, kW], out [N, Cout, oH, oW].
void ConvTranspose2D(const Conv2DConfig& config, const void* in, const void* weight,
                     const void* bias, void* out, int64_t batch, int64_t inChannels, int64_t inH,
                     int64_t inW, int64_t outChannels, int64_t kernelH, int64_t kernelW,
                     int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Convolution.ConvTranspose2D";
  const auto axes = conv::AxesHW(config, inH, inW, kernelH, kernelW, outH, outW);
  const conv::Plan p =
      conv::Validate(kOp, true, axes, in, weight, out, batch, inChannels, outChannels, dtype);
  conv::Run(kOp, true, conv::MakeGeom(axes, p, batch, inChannels, outChannels), p, in, weight,
            bias, out, dtype);
}

// =================================================================================================
// Pool
// =================================================================================================

namespace pool {

using checks::pool::Axis;
using checks::pool::Cols;
using checks::pool::Plan;
using checks::pool::Rows;
using checks::pool::ValidateAdaptive;
using checks::pool::ValidateFixed;

// The windows of one call: fixed (kernel, stride, padding per axis) or adaptive.
struct Geom {
  int64_t inH, inW, outH, outW, outCount;
  int64_t kernelH, kernelW, strideH, strideW, paddingH, paddingW;
  bool adaptive;
};

// The in-bounds taps [begin, end) of window o along one axis: the fixed window clipped to the
// input, or PyTorch's adaptive window [floor(o*in/out), ceil((o+1)*in/out)).
__device__ __forceinline__ void Window(bool adaptive, int64_t in, int64_t out, int64_t kernel,
                                       int64_t stride, int64_t padding, int64_t o, int64_t& begin,
                                       int64_t& end) {
  if (adaptive) {
    begin = (o * in) / out;
    end = ((o + 1) * in + out - 1) / out;
  } else {
    const int64_t start = o * stride - padding;
    begin = max(start, static_cast<int64_t>(0));
    end = min(start + kernel, in);
  }
}

// Max (kMax: a NaN tap or a strictly larger one replaces the running max, from -Inf) or mean (f64
// sum of the taps in row-major order from +0.0, divided by their count) per output.
template <class S, bool kMax>
__global__ void PoolKernel(Geom g, const void* in, void* out) {
  BP_CUDA_GRID_STRIDE(idx, g.outCount) {
    const int64_t ow = idx % g.outW;
    const int64_t oh = (idx / g.outW) % g.outH;
    const int64_t plane = idx / g.outW / g.outH;
    int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
    Window(g.adaptive, g.inH, g.outH, g.kernelH, g.strideH, g.paddingH, oh, h0, h1);
    Window(g.adaptive, g.inW, g.outW, g.kernelW, g.strideW, g.paddingW, ow, w0, w1);
    const int64_t base = plane * g.inH * g.inW;
    if constexpr (kMax) {
      using T = Compute<S>;
      T best = -std::numeric_limits<T>::infinity();
      for (int64_t h = h0; h < h1; ++h) {
        for (int64_t w = w0; w < w1; ++w) {
          const T v = Ld<S>(in, base + h * g.inW + w);
          if (isnan(v) || v > best) best = v;
        }
      }
      St<S>(out, idx, best);  // an input value (or -Inf): exact in the storage format
    } else {
      double sum = 0.0;
      for (int64_t h = h0; h < h1; ++h) {
        for (int64_t w = w0; w < w1; ++w) sum = Add(sum, LdD<S>(in, base + h * g.inW + w));
      }
      StD<S>(out, idx, Div(sum, static_cast<double>((h1 - h0) * (w1 - w0))));
    }
  }
}

template <bool kMax>
void Run(std::string_view op, const Plan& p, const Geom& g, const void* in, void* out,
         DType dtype) {
  if (p.outCount == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t outBytes = static_cast<size_t>(p.outCount) * sizeof(S);
    OutputTarget target(out, outBytes,
                        Overlaps(out, outBytes, in, static_cast<size_t>(p.inCount) * sizeof(S)));
    PoolKernel<S, kMax><<<GridFor(p.outCount), kThreads, 0, Stream()>>>(g, in, target.Get());
    target.Commit();
  });
  FinishMethod(op);
}

Geom FixedGeom(const PoolConfig& c, const Plan& p) {
  return Geom{p.inH,     p.inW,     p.outH,      p.outW,      p.outCount, c.KernelH, c.KernelW,
              c.StrideH, c.StrideW, c.PaddingH, c.PaddingW, false};
}

Geom AdaptiveGeom(const Plan& p) {
  return Geom{p.inH, p.inW, p.outH, p.outW, p.outCount, 0, 0, 0, 0, 0, 0, true};
}

}  // namespace pool

void MaxPool2D(const PoolConfig& config, const void* in, void* out, int64_t batch, int64_t channels,
               int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Pool.MaxPool2D";
  const pool::Plan p =
      pool::ValidateFixed(kOp, config, in, out, batch, channels, inH, inW, outH, outW, dtype);
  pool::Run<true>(kOp, p, pool::FixedGeom(config, p), in, out, dtype);
}

void AvgPool2D(const PoolConfig& config, const void* in, void* out, int64_t batch, int64_t channels,
               int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Pool.AvgPool2D";
  const pool::Plan p =
      pool::ValidateFixed(kOp, config, in, out, batch, channels, inH, inW, outH, outW, dtype);
  pool::Run<false>(kOp, p, pool::FixedGeom(config, p), in, out, dtype);
}

void AdaptiveMaxPool2D(const void* in, void* out, int64_t batch, int64_t channels, int64_t inH,
                       int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Pool.AdaptiveMaxPool2D";
  const pool::Plan p =
      pool::ValidateAdaptive(kOp, in, out, batch, channels, inH, inW, outH, outW, dtype);
  pool::Run<true>(kOp, p, pool::AdaptiveGeom(p), in, out, dtype);
}

void AdaptiveAvgPool2D(const void* in, void* out, int64_t batch, int64_t channels, int64_t inH,
                       int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  constexpr std::string_view kOp = "Pool.AdaptiveAvgPool2D";
  const pool::Plan p =
      pool::ValidateAdaptive(kOp, in, out, batch, channels, inH, inW, outH, outW, dtype);
  pool::Run<false>(kOp, p, pool::AdaptiveGeom(p), in, out, dtype);
}

// =================================================================================================
// PoolNd
// =================================================================================================

namespace pool_nd {

// The reference's windows on the device: per axis (d, h, w) the taps of window o are
// pos[first[o] .. first[o + 1]) and padded[o] counts the taps inside the padded extent.
struct Geom {
  const int64_t* first[3];
  const int64_t* pos[3];
  const int64_t* padded[3];
  int64_t in[3], out[3];
  int64_t indexStride[3];
  int64_t planeIn, planeOut, outCount;
  bool indicesOverTensor, countIncludePad;
};

// The comparison type of a max: f32 for f16/bf16 (an exact widening), the storage type otherwise.
template <class S>
using MaxValue = std::conditional_t<std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>,
                                    float, S>;

template <class S>
__device__ __forceinline__ MaxValue<S> LdMax(const void* p, int64_t i) {
  if constexpr (std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>) {
    return Ld<S>(p, i);
  } else {
    return static_cast<const S*>(p)[i];
  }
}

// Taps in row-major tap order, the first starting the max; a later tap replaces it when strictly
// larger or NaN. The winner is copied from the input; indices get its (plane or tensor) offset.
template <class S>
__global__ void MaxKernel(Geom g, const void* in, void* out, int64_t* indices) {
  BP_CUDA_GRID_STRIDE(at, g.outCount) {
    const int64_t p = at / g.planeOut;
    const int64_t o = at % g.planeOut;
    const int64_t ow = o % g.out[2];
    const int64_t oh = (o / g.out[2]) % g.out[1];
    const int64_t od = o / g.out[2] / g.out[1];
    const int64_t base = p * g.planeIn;
    bool have = false;
    MaxValue<S> best{};
    int64_t bestIn = 0;  // flat input index of the winner
    int64_t bestAt = 0;  // its index offset
    for (int64_t a = g.first[0][od]; a < g.first[0][od + 1]; ++a) {
      const int64_t id = g.pos[0][a];
      for (int64_t b = g.first[1][oh]; b < g.first[1][oh + 1]; ++b) {
        const int64_t ih = g.pos[1][b];
        for (int64_t c = g.first[2][ow]; c < g.first[2][ow + 1]; ++c) {
          const int64_t iw = g.pos[2][c];
          const int64_t i = base + (id * g.in[1] + ih) * g.in[2] + iw;
          const MaxValue<S> v = LdMax<S>(in, i);
          bool wins = !have || v > best;
          if constexpr (std::is_floating_point_v<MaxValue<S>>) wins = wins || isnan(v);
          if (wins) {
            best = v;
            bestIn = i;
            bestAt = id * g.indexStride[0] + ih * g.indexStride[1] + iw * g.indexStride[2];
            have = true;
          }
        }
      }
    }
    static_cast<S*>(out)[at] = static_cast<const S*>(in)[bestIn];
    if (indices != nullptr) indices[at] = (g.indicesOverTensor ? base : 0) + bestAt;
  }
}

// f64 sum of the in-input taps in tap order from +0.0, divided by their count (or the count of
// taps inside the padded extent under CountIncludePad), rounded once.
template <class S>
__global__ void AvgKernel(Geom g, const void* in, void* out) {
  BP_CUDA_GRID_STRIDE(at, g.outCount) {
    const int64_t p = at / g.planeOut;
    const int64_t o = at % g.planeOut;
    const int64_t ow = o % g.out[2];
    const int64_t oh = (o / g.out[2]) % g.out[1];
    const int64_t od = o / g.out[2] / g.out[1];
    const int64_t base = p * g.planeIn;
    double sum = 0.0;
    for (int64_t a = g.first[0][od]; a < g.first[0][od + 1]; ++a) {
      for (int64_t b = g.first[1][oh]; b < g.first[1][oh + 1]; ++b) {
        const int64_t row = base + (g.pos[0][a] * g.in[1] + g.pos[1][b]) * g.in[2];
        for (int64_t c = g.first[2][ow]; c < g.first[2][ow + 1]; ++c) {
          sum = Add(sum, LdD<S>(in, row + g.pos[2][c]));
        }
      }
    }
    const int64_t count =
        g.countIncludePad
            ? g.padded[0][od] * g.padded[1][oh] * g.padded[2][ow]
            : (g.first[0][od + 1] - g.first[0][od]) * (g.first[1][oh + 1] - g.first[1][oh]) *
                  (g.first[2][ow + 1] - g.first[2][ow]);
    StOnce<S>(out, at, Div(sum, static_cast<double>(count)));
  }
}

// Calls fn(S{}) with the CUDA storage type of a MaxPoolNd dtype.
template <class Fn>
void ByMaxDType(std::string_view op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64: fn(double{}); return;
    case DType::Float32: fn(float{}); return;
    case DType::Float16: fn(__half{}); return;
    case DType::BFloat16: fn(__nv_bfloat16{}); return;
    case DType::Int64: fn(int64_t{}); return;
    case DType::Int32: fn(int32_t{}); return;
    case DType::Int16: fn(int16_t{}); return;
    case DType::Int8: fn(int8_t{}); return;
    case DType::Uint64: fn(uint64_t{}); return;
    case DType::Uint32: fn(uint32_t{}); return;
    case DType::Uint16: fn(uint16_t{}); return;
    case DType::Uint8: fn(uint8_t{}); return;
    default: ThrowUnsupportedDType(op, "dtype", dtype, kPoolNdMaxDTypes);
  }
}

// Copies the host geometry's window tables into one device buffer (kept alive by `scratch`) and
// returns the kernel's view of them.
Geom Upload(const cpu::ref::pool_nd::Geometry& host, const PoolNdConfig& config,
            std::optional<DeviceScratch>& scratch, std::vector<int64_t>& packed) {
  Geom g{};
  size_t offsets[3][3] = {};
  for (int a = 0; a < 3; ++a) {
    const auto& w = host.axes[static_cast<size_t>(a)];
    offsets[a][0] = packed.size();
    packed.insert(packed.end(), w.first.begin(), w.first.end());
    offsets[a][1] = packed.size();
    packed.insert(packed.end(), w.pos.begin(), w.pos.end());
    offsets[a][2] = packed.size();
    packed.insert(packed.end(), w.padded.begin(), w.padded.end());
    g.in[a] = w.in;
    g.out[a] = w.out;
    g.indexStride[a] = host.indexStride[static_cast<size_t>(a)];
  }
  scratch.emplace(packed.size() * sizeof(int64_t));
  auto* device = static_cast<int64_t*>(scratch->Get());
  CopyAsync(device, packed.data(), packed.size() * sizeof(int64_t));
  for (int a = 0; a < 3; ++a) {
    g.first[a] = device + offsets[a][0];
    g.pos[a] = device + offsets[a][1];
    g.padded[a] = device + offsets[a][2];
  }
  g.planeIn = host.planeIn;
  g.planeOut = host.planeOut;
  g.outCount = host.planes * host.planeOut;
  g.indicesOverTensor = config.IndicesOverTensor;
  g.countIncludePad = config.CountIncludePad;
  return g;
}

}  // namespace pool_nd

void MaxPoolNd(const PoolNdConfig& config, const void* in, void* out, int64_t* indices,
               int64_t planes, DType dtype) {
  constexpr std::string_view kOp = "PoolNd.MaxPoolNd";
  const cpu::ref::pool_nd::Geometry host = cpu::ref::pool_nd::BuildPoolNdGeometry(
      kOp, config, in, out, indices, planes, dtype, kPoolNdMaxDTypes, true);
  if (planes * host.planeOut == 0) return;
  std::optional<DeviceScratch> scratch;
  std::vector<int64_t> packed;
  const pool_nd::Geom g = pool_nd::Upload(host, config, scratch, packed);
  pool_nd::ByMaxDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    pool_nd::MaxKernel<S><<<GridFor(g.outCount), kThreads, 0, Stream()>>>(g, in, out, indices);
  });
  scratch->Release();
  FinishMethod(kOp);
}

void AvgPoolNd(const PoolNdConfig& config, const void* in, void* out, int64_t* indices,
               int64_t planes, DType dtype) {
  constexpr std::string_view kOp = "PoolNd.AvgPoolNd";
  const cpu::ref::pool_nd::Geometry host = cpu::ref::pool_nd::BuildPoolNdGeometry(
      kOp, config, in, out, indices, planes, dtype, kFloatDTypes, false);
  if (planes * host.planeOut == 0) return;
  std::optional<DeviceScratch> scratch;
  std::vector<int64_t> packed;
  const pool_nd::Geom g = pool_nd::Upload(host, config, scratch, packed);
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    pool_nd::AvgKernel<S><<<GridFor(g.outCount), kThreads, 0, Stream()>>>(g, in, out);
  });
  scratch->Release();
  FinishMethod(kOp);
}

}  // namespace

void RegisterNn(KernelTable& table) {
  table.Attention_ScaledDotProductAttention = &ScaledDotProductAttention;
  table.Attention_FlashAttention = &FlashAttention;
  table.Attention_MultiHeadAttention = &MultiHeadAttention;
  table.Convolution_Conv2D = &Conv2D;
  table.Convolution_Conv1D = &Conv1D;
  table.Convolution_Conv3D = &Conv3D;
  table.Convolution_ConvTranspose2D = &ConvTranspose2D;
  table.Pool_MaxPool2D = &MaxPool2D;
  table.Pool_AvgPool2D = &AvgPool2D;
  table.Pool_AdaptiveMaxPool2D = &AdaptiveMaxPool2D;
  table.Pool_AdaptiveAvgPool2D = &AdaptiveAvgPool2D;
  table.PoolNd_MaxPoolNd = &MaxPoolNd;
  table.PoolNd_AvgPoolNd = &AvgPoolNd;
}

}  // namespace backplane::cuda
