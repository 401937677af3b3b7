// Scalar reference kernels for the Attention surface: one sequence, no batch dimension, row-major
// buffers. Every dtype is computed in f64 (inputs widened exactly, dot products, softmax and the
// weighted sum of values in f64) and each output element is rounded once on store.
// Causal alignment is bottom-right (KV-cache convention): query i sits at absolute position
// p = i + (seqK - seqQ) and sees keys j <= p. A query that sees no key gets a zero output row.
// Semantics: docs/semantics/attention.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace attention {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// a * b, throwing instead of overflowing; `arg` is the argument blamed.
int64_t Product(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "small enough that the buffer size fits in int64",
                         std::to_string(b));
  }
  return product;
}

// max(a, b) that returns NaN when either is NaN (so a NaN score poisons its row, as in softmax).
double MaxPropagatingNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return a > b ? a : b;
}

// One attention head over f64 copies of the operands. Row i of Q starts at q + i * qStride, and
// likewise for K, V and O; a head reads `depth` columns of Q/K and `valueDim` columns of V.
struct Head {
  const double* q;
  const double* k;
  const double* v;
  double* o;
  int64_t qStride, kStride, vStride, oStride;
  int64_t depth, valueDim;
  int64_t seqQ, seqK;
  double scale;
};

// Which keys a query sees, and the additive score bias.
struct Visibility {
  bool causal = false;
  int64_t window = 0;  // > 0: only the last `window` positions up to p, and `right` after it
  int64_t right = 0;   // -1: no bound after p
  double alibi = 0.0;  // > 0: score += alibi * (j - p)

  bool Sees(int64_t p, int64_t j) const {
    if (causal && j > p) return false;
    if (window > 0 && p - j >= window) return false;
    if (window > 0 && right >= 0 && j - p > right) return false;
    return true;
  }
  double Bias(int64_t p, int64_t j) const {
    return alibi == 0.0 ? 0.0 : alibi * static_cast<double>(j - p);
  }
};

double Score(const Head& head, const Visibility& vis, int64_t i, int64_t p, int64_t j) {
  const double* qi = head.q + i * head.qStride;
  const double* kj = head.k + j * head.kStride;
  double dot = 0.0;
  for (int64_t d = 0; d < head.depth; ++d) dot += qi[d] * kj[d];
  return dot * head.scale + vis.Bias(p, j);
}

// o[i, :] = sum_j softmax_j(score) v[j, :] over the visible keys, two passes (max, then sums).
void AttendRowTwoPass(const Head& head, const Visibility& vis, int64_t i) {
  const int64_t p = i + (head.seqK - head.seqQ);
  double* oi = head.o + i * head.oStride;
  std::vector<int64_t> keys;
  std::vector<double> scores;
  double maxScore = -kInf;
  for (int64_t j = 0; j < head.seqK; ++j) {
    if (!vis.Sees(p, j)) continue;
    keys.push_back(j);
    scores.push_back(Score(head, vis, i, p, j));
    maxScore = MaxPropagatingNaN(maxScore, scores.back());
  }
  for (int64_t d = 0; d < head.valueDim; ++d) oi[d] = 0.0;
  if (keys.empty()) return;  // fully masked row: zeros

  double sum = 0.0;
  for (size_t n = 0; n < keys.size(); ++n) {
    // All visible scores -Inf (or one +Inf) gives exp(NaN): a NaN row, as torch.softmax does.
    const double w = std::exp(scores[n] - maxScore);
    sum += w;
    const double* vj = head.v + keys[n] * head.vStride;
    for (int64_t d = 0; d < head.valueDim; ++d) oi[d] += w * vj[d];
  }
  for (int64_t d = 0; d < head.valueDim; ++d) oi[d] /= sum;
}

// The same row computed the FlashAttention way: keys in tiles of blockSize, an online softmax
// with a running max m, a running normaliser l and an accumulator rescaled by exp(m_old - m_new).
void AttendRowTiled(const Head& head, const Visibility& vis, int64_t i, int64_t blockSize) {
  const int64_t p = i + (head.seqK - head.seqQ);
  double* oi = head.o + i * head.oStride;
  std::vector<double> acc(static_cast<size_t>(head.valueDim), 0.0);
  std::vector<int64_t> keys;
  std::vector<double> scores;
  double runningMax = -kInf;
  double normaliser = 0.0;
  bool anyVisible = false;
  for (int64_t start = 0, end = 0; start < head.seqK; start = end) {
    end = start + std::min(blockSize, head.seqK - start);
    keys.clear();
    scores.clear();
    double tileMax = -kInf;
    for (int64_t j = start; j < end; ++j) {
      if (!vis.Sees(p, j)) continue;
      keys.push_back(j);
      scores.push_back(Score(head, vis, i, p, j));
      tileMax = MaxPropagatingNaN(tileMax, scores.back());
    }
    if (keys.empty()) continue;
    anyVisible = true;
    const double newMax = MaxPropagatingNaN(runningMax, tileMax);
    // Every score so far is -Inf: nothing carries weight relative to a later finite score.
    if (newMax == -kInf) continue;
    const double rescale = std::exp(runningMax - newMax);  // 0 on the first contributing tile
    normaliser *= rescale;
    for (double& a : acc) a *= rescale;
    for (size_t n = 0; n < keys.size(); ++n) {
      const double w = std::exp(scores[n] - newMax);
      normaliser += w;
      const double* vj = head.v + keys[n] * head.vStride;
      for (int64_t d = 0; d < head.valueDim; ++d) acc[static_cast<size_t>(d)] += w * vj[d];
    }
    runningMax = newMax;
  }
  for (int64_t d = 0; d < head.valueDim; ++d) {
    if (!anyVisible) {
      oi[d] = 0.0;  // fully masked row: zeros
    } else if (runningMax == -kInf) {
      oi[d] = kNaN;  // every visible score is -Inf: softmax is undefined, as in AttendRowTwoPass
    } else {
      oi[d] = acc[static_cast<size_t>(d)] / normaliser;
    }
  }
}

// The address of element `offset` of `values`; null for an empty buffer (seqK = 0), where no
// element is ever read.
const double* ColumnStart(const std::vector<double>& values, int64_t offset) {
  return values.empty() ? nullptr : values.data() + offset;
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
  const SingleHeadSizes sizes{Product(op, "depth", seqQ, depth), Product(op, "depth", seqK, depth),
                              Product(op, "valueDim", seqK, valueDim),
                              Product(op, "valueDim", seqQ, valueDim)};
  CheckPointer(op, "q", q, sizes.qCount);
  CheckPointer(op, "k", k, sizes.kCount);
  CheckPointer(op, "v", v, sizes.vCount);
  CheckPointer(op, "o", o, sizes.oCount);
  return sizes;
}

// Runs one head over f64 copies of Q, K, V and stores O once the whole result is known (so O may
// alias an input).
template <class RowFn>
void RunSingleHead(const void* q, const void* k, const void* v, void* o, int64_t seqQ, int64_t seqK,
                   int64_t depth, int64_t valueDim, DType dtype, const SingleHeadSizes& sizes,
                   RowFn&& attendRow) {
  if (sizes.oCount == 0) return;
  const std::vector<double> qd = Widen<double>(q, sizes.qCount, dtype);
  const std::vector<double> kd = Widen<double>(k, sizes.kCount, dtype);
  const std::vector<double> vd = Widen<double>(v, sizes.vCount, dtype);
  std::vector<double> od(static_cast<size_t>(sizes.oCount));
  const Head head{.q = qd.data(),
                  .k = kd.data(),
                  .v = vd.data(),
                  .o = od.data(),
                  .qStride = depth,
                  .kStride = depth,
                  .vStride = valueDim,
                  .oStride = valueDim,
                  .depth = depth,
                  .valueDim = valueDim,
                  .seqQ = seqQ,
                  .seqK = seqK,
                  .scale = depth > 0 ? 1.0 / std::sqrt(static_cast<double>(depth)) : 0.0};
  for (int64_t i = 0; i < seqQ; ++i) attendRow(head, i);
  Narrow<double>(od, o, dtype);
}

}  // namespace

// O = softmax(Q K^T / sqrt(depth)) V; Q [seqQ, depth], K [seqK, depth], V [seqK, valueDim],
// O [seqQ, valueDim]. Causal: bottom-right aligned. BlockSize is not used.
void ScaledDotProductAttention(const FlashAttentionConfig& config, const void* q, const void* k,
                               const void* v, void* o, int64_t seqQ, int64_t seqK, int64_t depth,
                               int64_t valueDim, DType dtype) {
  constexpr std::string_view kOp = "Attention.ScaledDotProductAttention";
  const SingleHeadSizes sizes =
      ValidateSingleHead(kOp, q, k, v, o, seqQ, seqK, depth, valueDim, dtype);
  Visibility vis;
  vis.causal = config.Causal;
  RunSingleHead(q, k, v, o, seqQ, seqK, depth, valueDim, dtype, sizes,
                [&](const Head& head, int64_t i) { AttendRowTwoPass(head, vis, i); });
}

// The same function as ScaledDotProductAttention, computed the flash way: tiles of BlockSize keys
// with the online softmax. BlockSize must be > 0.
void FlashAttention(const FlashAttentionConfig& config, const void* q, const void* k, const void* v,
                    void* o, int64_t seqQ, int64_t seqK, int64_t depth, int64_t valueDim,
                    DType dtype) {
  constexpr std::string_view kOp = "Attention.FlashAttention";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckPositive(kOp, "BlockSize", config.BlockSize);
  const SingleHeadSizes sizes =
      ValidateSingleHead(kOp, q, k, v, o, seqQ, seqK, depth, valueDim, dtype);
  Visibility vis;
  vis.causal = config.Causal;
  RunSingleHead(
      q, k, v, o, seqQ, seqK, depth, valueDim, dtype, sizes,
      [&](const Head& head, int64_t i) { AttendRowTiled(head, vis, i, config.BlockSize); });
}

// Q and O [seqQ, NumHeads*HeadDim], K and V [seqK, kvHeads*HeadDim]; query head h attends with KV
// head h / (NumHeads / kvHeads). Scale 1/sqrt(HeadDim). Causal and WindowSize are bottom-right
// aligned; ALiBi adds ALiBiSlope^(h+1) * (j - p) to visible scores.
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
    ThrowInvalidArgument(kOp, "KVHeadCount", fmt::format("<= NumHeads ({})", numHeads),
                         std::to_string(kvHeads));
  }
  if (numHeads % kvHeads != 0) {
    ThrowInvalidArgument(kOp, "KVHeadCount", fmt::format("a divisor of NumHeads ({})", numHeads),
                         std::to_string(kvHeads));
  }
  CheckNonNegative(kOp, "WindowSize", config.WindowSize);
  if (config.WindowRight < -1) {
    ThrowInvalidArgument(kOp, "WindowRight", ">= -1", std::to_string(config.WindowRight));
  }
  const double slope = static_cast<double>(config.ALiBiSlope);
  CheckFinite(kOp, "ALiBiSlope", slope);
  if (slope < 0.0) ThrowInvalidArgument(kOp, "ALiBiSlope", ">= 0", fmt::format("{}", slope));
  if (slope > 1.0 && !std::isfinite(std::pow(slope, static_cast<double>(numHeads)))) {
    ThrowInvalidArgument(kOp, "ALiBiSlope",
                         fmt::format("such that ALiBiSlope^NumHeads ({}) is finite", numHeads),
                         fmt::format("{}", slope));
  }
  const int64_t headDim = config.HeadDim;
  const int64_t qWidth = Product(kOp, "HeadDim", numHeads, headDim);
  const int64_t kvWidth = Product(kOp, "HeadDim", kvHeads, headDim);
  const int64_t qCount = Product(kOp, "seqQ", qWidth, seqQ);
  const int64_t kvCount = Product(kOp, "seqK", kvWidth, seqK);
  CheckPointer(kOp, "q", q, qCount);
  CheckPointer(kOp, "k", k, kvCount);
  CheckPointer(kOp, "v", v, kvCount);
  CheckPointer(kOp, "o", o, qCount);
  if (qCount == 0) return;

  const std::vector<double> qd = Widen<double>(q, qCount, dtype);
  const std::vector<double> kd = Widen<double>(k, kvCount, dtype);
  const std::vector<double> vd = Widen<double>(v, kvCount, dtype);
  std::vector<double> od(static_cast<size_t>(qCount));
  const int64_t groupSize = numHeads / kvHeads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  for (int64_t h = 0; h < numHeads; ++h) {
    const int64_t g = h / groupSize;
    const Head head{.q = qd.data() + h * headDim,
                    .k = ColumnStart(kd, g * headDim),
                    .v = ColumnStart(vd, g * headDim),
                    .o = od.data() + h * headDim,
                    .qStride = qWidth,
                    .kStride = kvWidth,
                    .vStride = kvWidth,
                    .oStride = qWidth,
                    .depth = headDim,
                    .valueDim = headDim,
                    .seqQ = seqQ,
                    .seqK = seqK,
                    .scale = scale};
    Visibility vis;
    vis.causal = config.Causal;
    vis.window = config.WindowSize;
    vis.right = config.WindowRight;
    vis.alibi = slope == 0.0 ? 0.0 : std::pow(slope, static_cast<double>(h + 1));
    for (int64_t i = 0; i < seqQ; ++i) AttendRowTwoPass(head, vis, i);
  }
  Narrow<double>(od, o, dtype);
}

}  // namespace attention

void RegisterAttention(KernelTable& table) {
  table.Attention_ScaledDotProductAttention = &attention::ScaledDotProductAttention;
  table.Attention_FlashAttention = &attention::FlashAttention;
  table.Attention_MultiHeadAttention = &attention::MultiHeadAttention;
}

}  // namespace backplane::cpu::ref
