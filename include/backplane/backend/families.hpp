// Signature families of Backend methods. Each family F defines:
//   BP_RET_F     the return type
//   BP_PARAMS_F  the parameter list (names are part of the documentation)
//   BP_ARGS_F    the argument names, for forwarding
// Surface headers list their methods as X(Surface, Method, Family, DTypes); everything else (the
// virtual declarations, the CPU dispatch table, the catalog rows) is expanded from those lists.
#pragma once

#include <cstdint>
#include <string_view>

#include "backplane/dtype.hpp"

// ---- Activation ---------------------------------------------------------------------------
#define BP_RET_Unary void
#define BP_PARAMS_Unary void *dst, const void *src, int64_t count, DType dtype
#define BP_ARGS_Unary dst, src, count, dtype

#define BP_RET_UnaryParam1 void
#define BP_PARAMS_UnaryParam1 void *dst, const void *src, int64_t count, DType dtype, float param
#define BP_ARGS_UnaryParam1 dst, src, count, dtype, param

#define BP_RET_UnaryParam2 void
#define BP_PARAMS_UnaryParam2 \
  void *dst, const void *src, int64_t count, DType dtype, float param1, float param2
#define BP_ARGS_UnaryParam2 dst, src, count, dtype, param1, param2

#define BP_RET_PReLUV void
#define BP_PARAMS_PReLUV \
  void *dst, const void *src, const float *slopes, int64_t count, DType dtype, int64_t slopeCount
#define BP_ARGS_PReLUV dst, src, slopes, count, dtype, slopeCount

#define BP_RET_GluPacked void
#define BP_PARAMS_GluPacked \
  void *dst, const void *packed, int64_t batch, int64_t halfCount, DType dtype
#define BP_ARGS_GluPacked dst, packed, batch, halfCount, dtype

#define BP_RET_GluTensors void
#define BP_PARAMS_GluTensors \
  void *dst, const void *gate, const void *up, int64_t count, DType dtype
#define BP_ARGS_GluTensors dst, gate, up, count, dtype

// ---- Elementwise, Reduction, Dot, Matmul -------------------------------------------------------
#define BP_RET_Binary void
#define BP_PARAMS_Binary \
  void *dst, const void *left, const void *right, int64_t count, DType dtype
#define BP_ARGS_Binary dst, left, right, count, dtype

#define BP_RET_Axpy void
#define BP_PARAMS_Axpy void *y, const void *x, int64_t count, float alpha, DType dtype
#define BP_ARGS_Axpy y, x, count, alpha, dtype

#define BP_RET_Reduce double
#define BP_PARAMS_Reduce const void *values, int64_t count, DType dtype
#define BP_ARGS_Reduce values, count, dtype

#define BP_RET_Dot double
#define BP_PARAMS_Dot const void *left, const void *right, int64_t count, DType dtype
#define BP_ARGS_Dot left, right, count, dtype

#define BP_RET_Matmul void
#define BP_PARAMS_Matmul                                                                 \
  void *out, const void *left, const void *right, int64_t rows, int64_t inner, int64_t cols, \
      DType dtype
#define BP_ARGS_Matmul out, left, right, rows, inner, cols, dtype

// C[rows, cols] = A[rows, inner] B^T with B [cols, inner] (torch.nn.Linear's weight layout).
#define BP_RET_MatmulTransB void
#define BP_PARAMS_MatmulTransB BP_PARAMS_Matmul
#define BP_ARGS_MatmulTransB BP_ARGS_Matmul

// ---- Pool, Convolution, Dropout -----------------------------------------------------------------
#define BP_RET_Pool2D void
#define BP_PARAMS_Pool2D                                                                        \
  const PoolConfig &config, const void *in, void *out, int64_t batch, int64_t channels,        \
      int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype
#define BP_ARGS_Pool2D config, in, out, batch, channels, inH, inW, outH, outW, dtype

#define BP_RET_AdaptivePool2D void
#define BP_PARAMS_AdaptivePool2D                                                             \
  const void *in, void *out, int64_t batch, int64_t channels, int64_t inH, int64_t inW,      \
      int64_t outH, int64_t outW, DType dtype
#define BP_ARGS_AdaptivePool2D in, out, batch, channels, inH, inW, outH, outW, dtype

#define BP_RET_Conv1D void
#define BP_PARAMS_Conv1D                                                                       \
  const Conv1DConfig &config, const void *in, const void *weight, const void *bias, void *out, \
      int64_t batch, int64_t inChannels, int64_t inL, int64_t outChannels, int64_t kernelL,    \
      int64_t outL, DType dtype
#define BP_ARGS_Conv1D \
  config, in, weight, bias, out, batch, inChannels, inL, outChannels, kernelL, outL, dtype

#define BP_RET_Conv2D void
#define BP_PARAMS_Conv2D                                                                       \
  const Conv2DConfig &config, const void *in, const void *weight, const void *bias, void *out, \
      int64_t batch, int64_t inChannels, int64_t inH, int64_t inW, int64_t outChannels,        \
      int64_t kernelH, int64_t kernelW, int64_t outH, int64_t outW, DType dtype
#define BP_ARGS_Conv2D                                                                   \
  config, in, weight, bias, out, batch, inChannels, inH, inW, outChannels, kernelH, kernelW, \
      outH, outW, dtype

#define BP_RET_Conv3D void
#define BP_PARAMS_Conv3D                                                                        \
  const Conv3DConfig &config, const void *in, const void *weight, const void *bias, void *out,  \
      int64_t batch, int64_t inChannels, int64_t inD, int64_t inH, int64_t inW,                 \
      int64_t outChannels, int64_t kernelD, int64_t kernelH, int64_t kernelW, int64_t outD,     \
      int64_t outH, int64_t outW, DType dtype
#define BP_ARGS_Conv3D                                                                         \
  config, in, weight, bias, out, batch, inChannels, inD, inH, inW, outChannels, kernelD,       \
      kernelH, kernelW, outD, outH, outW, dtype

#define BP_RET_Dropout void
#define BP_PARAMS_Dropout \
  void *dst, const void *src, int64_t count, const DropoutConfig &config, DType dtype
#define BP_ARGS_Dropout dst, src, count, config, dtype

// ---- Losses, Sampling, Embedding ----------------------------------------------------------------
#define BP_RET_Loss double
#define BP_PARAMS_Loss const void *predictions, const void *targets, int64_t count, DType dtype
#define BP_ARGS_Loss predictions, targets, count, dtype

#define BP_RET_CrossEntropy double
#define BP_PARAMS_CrossEntropy \
  const void *logits, const int32_t *targets, int64_t batch, int64_t classes, DType dtype
#define BP_ARGS_CrossEntropy logits, targets, batch, classes, dtype

#define BP_RET_GreedySample int32_t
#define BP_PARAMS_GreedySample const void *logits, int64_t vocabSize, DType dtype
#define BP_ARGS_GreedySample logits, vocabSize, dtype

#define BP_RET_ConfiguredSample int32_t
#define BP_PARAMS_ConfiguredSample \
  const SamplingConfig &config, const void *logits, int64_t vocabSize, DType dtype
#define BP_ARGS_ConfiguredSample config, logits, vocabSize, dtype

#define BP_RET_EmbeddingLookup void
#define BP_PARAMS_EmbeddingLookup                                                         \
  const void *table, const int32_t *indices, void *out, int64_t vocab, int64_t hidden, \
      int64_t count, DType dtype
#define BP_ARGS_EmbeddingLookup table, indices, out, vocab, hidden, count, dtype

#define BP_RET_EmbeddingBag void
#define BP_PARAMS_EmbeddingBag                                                              \
  const void *table, const int32_t *indices, const int32_t *offsets, void *out, int64_t vocab, \
      int64_t hidden, int64_t bags, int64_t count, DType dtype
#define BP_ARGS_EmbeddingBag table, indices, offsets, out, vocab, hidden, bags, count, dtype

// ---- Normalization, LayerNorm, RoPE, Masking, Attention -----------------------------------------
#define BP_RET_GroupNorm void
#define BP_PARAMS_GroupNorm                                                                   \
  const GroupNormConfig &config, const void *in, const void *scale, const void *bias, void *out, \
      int64_t batch, int64_t channels, int64_t spatial, DType dtype
#define BP_ARGS_GroupNorm config, in, scale, bias, out, batch, channels, spatial, dtype

#define BP_RET_InstanceNorm void
#define BP_PARAMS_InstanceNorm                                                          \
  const void *in, const void *scale, const void *bias, void *out, int64_t batch,        \
      int64_t channels, int64_t spatial, DType dtype
#define BP_ARGS_InstanceNorm in, scale, bias, out, batch, channels, spatial, dtype

#define BP_RET_BatchNormEval void
#define BP_PARAMS_BatchNormEval                                                             \
  const void *in, const void *scale, const void *bias, const void *mean, const void *var,  \
      void *out, int64_t batch, int64_t channels, int64_t spatial, DType dtype
#define BP_ARGS_BatchNormEval in, scale, bias, mean, var, out, batch, channels, spatial, dtype

#define BP_RET_LayerNorm void
#define BP_PARAMS_LayerNorm                                                                    \
  const void *in, const void *scale, const void *bias, void *out, int64_t rows, int64_t lastDim, \
      DType dtype
#define BP_ARGS_LayerNorm in, scale, bias, out, rows, lastDim, dtype

#define BP_RET_RMSNorm void
#define BP_PARAMS_RMSNorm \
  const void *in, const void *scale, void *out, int64_t rows, int64_t lastDim, DType dtype
#define BP_ARGS_RMSNorm in, scale, out, rows, lastDim, dtype

#define BP_RET_RMSNormEps void
#define BP_PARAMS_RMSNormEps                                                                 \
  const void *in, const void *scale, void *out, int64_t rows, int64_t lastDim, double eps, \
      DType dtype
#define BP_ARGS_RMSNormEps in, scale, out, rows, lastDim, eps, dtype

#define BP_RET_LayerNormEps void
#define BP_PARAMS_LayerNormEps                                                          \
  const void *in, const void *scale, const void *bias, void *out, int64_t rows,         \
      int64_t lastDim, double eps, DType dtype
#define BP_ARGS_LayerNormEps in, scale, bias, out, rows, lastDim, eps, dtype

#define BP_RET_GroupNormEps void
#define BP_PARAMS_GroupNormEps                                                                \
  const GroupNormConfig &config, const void *in, const void *scale, const void *bias, void *out, \
      int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype
#define BP_ARGS_GroupNormEps config, in, scale, bias, out, batch, channels, spatial, eps, dtype

#define BP_RET_InstanceNormEps void
#define BP_PARAMS_InstanceNormEps                                                       \
  const void *in, const void *scale, const void *bias, void *out, int64_t batch,        \
      int64_t channels, int64_t spatial, double eps, DType dtype
#define BP_ARGS_InstanceNormEps in, scale, bias, out, batch, channels, spatial, eps, dtype

#define BP_RET_BatchNormEvalEps void
#define BP_PARAMS_BatchNormEvalEps                                                          \
  const void *in, const void *scale, const void *bias, const void *mean, const void *var,  \
      void *out, int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype
#define BP_ARGS_BatchNormEvalEps in, scale, bias, mean, var, out, batch, channels, spatial, eps, dtype

#define BP_RET_RoPE void
#define BP_PARAMS_RoPE                                                                     \
  const RoPEConfig &config, const void *in, void *out, int64_t seqLen, int64_t numHeads,   \
      int64_t headDim, DType dtype
#define BP_ARGS_RoPE config, in, out, seqLen, numHeads, headDim, dtype

#define BP_RET_RoPEPairs void
#define BP_PARAMS_RoPEPairs \
  void *out, const void *in, const void *cos, const void *sin, int64_t halfDim, DType dtype
#define BP_ARGS_RoPEPairs out, in, cos, sin, halfDim, dtype

#define BP_RET_ApplyMask void
#define BP_PARAMS_ApplyMask const void *in, const void *mask, void *out, int64_t count, DType dtype
#define BP_ARGS_ApplyMask in, mask, out, count, dtype

#define BP_RET_CausalMask void
#define BP_PARAMS_CausalMask void *out, int64_t seqQ, int64_t seqK, DType dtype
#define BP_ARGS_CausalMask out, seqQ, seqK, dtype

#define BP_RET_ALiBiBias void
#define BP_PARAMS_ALiBiBias \
  const void *scores, const void *slope, void *out, int64_t seqQ, int64_t seqK, DType dtype
#define BP_ARGS_ALiBiBias scores, slope, out, seqQ, seqK, dtype

#define BP_RET_SingleHeadAttention void
#define BP_PARAMS_SingleHeadAttention                                                          \
  const FlashAttentionConfig &config, const void *q, const void *k, const void *v, void *o,   \
      int64_t seqQ, int64_t seqK, int64_t depth, int64_t valueDim, DType dtype
#define BP_ARGS_SingleHeadAttention config, q, k, v, o, seqQ, seqK, depth, valueDim, dtype

#define BP_RET_MultiHeadAttention void
#define BP_PARAMS_MultiHeadAttention                                                         \
  const MultiHeadAttentionConfig &config, const void *q, const void *k, const void *v, void *o, \
      int64_t seqQ, int64_t seqK, DType dtype
#define BP_ARGS_MultiHeadAttention config, q, k, v, o, seqQ, seqK, dtype

// ---- Dequant, Quant ------------------------------------------------------------------------------
#define BP_RET_Dequant void
#define BP_PARAMS_Dequant                                                                \
  void *dst, const void *src, int64_t count, const DequantConfig &config, DType dstFormat, \
      DType srcFormat
#define BP_ARGS_Dequant dst, src, count, config, dstFormat, srcFormat

#define BP_RET_Quant void
#define BP_PARAMS_Quant                                                                \
  void *dst, const void *src, int64_t count, const QuantConfig &config, DType dstFormat, \
      DType srcFormat
#define BP_ARGS_Quant dst, src, count, config, dstFormat, srcFormat

// ---- BlockQuant ---------------------------------------------------------------------------------
#define BP_RET_BlockDequant void
#define BP_PARAMS_BlockDequant \
  void *dst, const void *src, int64_t count, BlockFormat srcFormat, DType dstFormat
#define BP_ARGS_BlockDequant dst, src, count, srcFormat, dstFormat

#define BP_RET_BlockMatmul void
#define BP_PARAMS_BlockMatmul                                                           \
  void *dst, const void *x, const void *weights, int64_t rows, int64_t outFeatures,    \
      int64_t inFeatures, BlockFormat weightFormat, DType dtype
#define BP_ARGS_BlockMatmul dst, x, weights, rows, outFeatures, inFeatures, weightFormat, dtype

// ---- PosPop --------------------------------------------------------------------------------------
#define BP_RET_PosPop8 void
#define BP_PARAMS_PosPop8 int64_t *counts, const uint8_t *buf, int64_t count
#define BP_ARGS_PosPop8 counts, buf, count
#define BP_RET_PosPop16 void
#define BP_PARAMS_PosPop16 int64_t *counts, const uint16_t *buf, int64_t count
#define BP_ARGS_PosPop16 counts, buf, count
#define BP_RET_PosPop32 void
#define BP_PARAMS_PosPop32 int64_t *counts, const uint32_t *buf, int64_t count
#define BP_ARGS_PosPop32 counts, buf, count
#define BP_RET_PosPop64 void
#define BP_PARAMS_PosPop64 int64_t *counts, const uint64_t *buf, int64_t count
#define BP_ARGS_PosPop64 counts, buf, count
#define BP_RET_PosPopString void
#define BP_PARAMS_PosPopString int64_t *counts, std::string_view str
#define BP_ARGS_PosPopString counts, str

// ---- Research surfaces: shared shapes ------------------------------------------------------------
// output[i] = f(left[i], right[i])
#define BP_RET_BinaryOut void
#define BP_PARAMS_BinaryOut \
  const void *left, const void *right, void *output, int64_t count, DType dtype
#define BP_ARGS_BinaryOut left, right, output, count, dtype

// ---- Hawkes --------------------------------------------------------------------------------------
#define BP_RET_HawkesIntensity void
#define BP_PARAMS_HawkesIntensity                                                           \
  const void *eventTimes, const void *queryTimes, void *output, int64_t eventCount,         \
      int64_t queryCount, float mu, float alpha, float beta, DType dtype
#define BP_ARGS_HawkesIntensity \
  eventTimes, queryTimes, output, eventCount, queryCount, mu, alpha, beta, dtype

#define BP_RET_HawkesKernelMatrix void
#define BP_PARAMS_HawkesKernelMatrix \
  const void *eventTimes, void *output, int64_t eventCount, float alpha, float beta, DType dtype
#define BP_ARGS_HawkesKernelMatrix eventTimes, output, eventCount, alpha, beta, dtype

#define BP_RET_HawkesLogLikelihood void
#define BP_PARAMS_HawkesLogLikelihood                                                        \
  const void *eventTimes, int64_t eventCount, float totalTime, float mu, float alpha, float beta, \
      void *output, DType dtype
#define BP_ARGS_HawkesLogLikelihood eventTimes, eventCount, totalTime, mu, alpha, beta, output, dtype

#define BP_RET_MarkovMutualInformation void
#define BP_PARAMS_MarkovMutualInformation \
  const void *joint, void *output, int64_t xCount, int64_t yCount, DType dtype
#define BP_ARGS_MarkovMutualInformation joint, output, xCount, yCount, dtype

#define BP_RET_MarkovBlanketPartition void
#define BP_PARAMS_MarkovBlanketPartition                                                     \
  const void *adjacency, const int32_t *internal, int32_t *output, int64_t nodeCount,         \
      int64_t internalCount, DType dtype
#define BP_ARGS_MarkovBlanketPartition adjacency, internal, output, nodeCount, internalCount, dtype

// ---- Physics -------------------------------------------------------------------------------------
#define BP_RET_Laplacian void
#define BP_PARAMS_Laplacian                                                                  \
  const void *input, void *output, const int64_t *dims, int64_t rank, float spacing, DType dtype
#define BP_ARGS_Laplacian input, output, dims, rank, spacing, dtype

#define BP_RET_Stencil1D void
#define BP_PARAMS_Stencil1D \
  const void *input, void *output, int64_t count, float spacing, DType dtype
#define BP_ARGS_Stencil1D input, output, count, spacing, dtype

#define BP_RET_FFT void
#define BP_PARAMS_FFT                                                                        \
  const void *realIn, const void *imagIn, void *realOut, void *imagOut, int64_t count,       \
      DType dtype
#define BP_ARGS_FFT realIn, imagIn, realOut, imagOut, count, dtype

#define BP_RET_MadelungContinuity void
#define BP_PARAMS_MadelungContinuity                                                         \
  const void *density, const void *velocity, void *residual, int64_t count, float spacing,   \
      DType dtype
#define BP_ARGS_MadelungContinuity density, velocity, residual, count, spacing, dtype

// ---- Causal --------------------------------------------------------------------------------------
#define BP_RET_Cholesky void
#define BP_PARAMS_Cholesky const void *input, void *output, int64_t matrixOrder, DType dtype
#define BP_ARGS_Cholesky input, output, matrixOrder, dtype

#define BP_RET_BackdoorAdjustment void
#define BP_PARAMS_BackdoorAdjustment                                                         \
  const void *conditional, const void *marginalZ, void *output, int64_t xCount, int64_t zCount, \
      int64_t yCount, DType dtype
#define BP_ARGS_BackdoorAdjustment conditional, marginalZ, output, xCount, zCount, yCount, dtype

#define BP_RET_FrontdoorAdjustment void
#define BP_PARAMS_FrontdoorAdjustment                                                        \
  const void *mediatorGivenX, const void *outcomeGivenXM, const void *marginalX, void *output, \
      int64_t xCount, int64_t mediatorCount, int64_t yCount, DType dtype
#define BP_ARGS_FrontdoorAdjustment \
  mediatorGivenX, outcomeGivenXM, marginalX, output, xCount, mediatorCount, yCount, dtype

#define BP_RET_DoIntervene void
#define BP_PARAMS_DoIntervene                                                               \
  const void *adjacency, const int32_t *intervened, void *output, int64_t nodeCount,        \
      int64_t intervenedCount, DType dtype
#define BP_ARGS_DoIntervene adjacency, intervened, output, nodeCount, intervenedCount, dtype

#define BP_RET_Counterfactual void
#define BP_PARAMS_Counterfactual                                                             \
  const void *observedY, const void *observedX, const void *counterfactualX, void *output,   \
      int64_t count, float slope, DType dtype
#define BP_ARGS_Counterfactual observedY, observedX, counterfactualX, output, count, slope, dtype

#define BP_RET_IVEstimate void
#define BP_PARAMS_IVEstimate                                                                  \
  const void *instrument, const void *treatment, const void *outcome, int64_t count,          \
      void *output, DType dtype
#define BP_ARGS_IVEstimate instrument, treatment, outcome, count, output, dtype

#define BP_RET_DAGMarkovFactorization void
#define BP_PARAMS_DAGMarkovFactorization \
  const void *conditionals, int64_t conditionalCount, void *output, DType dtype
#define BP_ARGS_DAGMarkovFactorization conditionals, conditionalCount, output, dtype

#define BP_RET_MarkovFlow void
#define BP_PARAMS_MarkovFlow                                                                  \
  const void *mutualInformation, const int32_t *partition, void *output, int64_t nodeCount,   \
      DType dtype
#define BP_ARGS_MarkovFlow mutualInformation, partition, output, nodeCount, dtype

// ---- VSA -----------------------------------------------------------------------------------------
#define BP_RET_VSAPermute void
#define BP_PARAMS_VSAPermute \
  const VSAConfig &config, const void *input, void *output, int64_t count, DType dtype
#define BP_ARGS_VSAPermute config, input, output, count, dtype

#define BP_RET_Similarity double
#define BP_PARAMS_Similarity const void *left, const void *right, int64_t count, DType dtype
#define BP_ARGS_Similarity left, right, count, dtype

// ---- ActiveInference -----------------------------------------------------------------------------
#define BP_RET_FreeEnergy void
#define BP_PARAMS_FreeEnergy                                                                 \
  const void *likelihood, const void *posterior, const void *prior, void *output,           \
      int64_t count, DType dtype
#define BP_ARGS_FreeEnergy likelihood, posterior, prior, output, count, dtype

#define BP_RET_ExpectedFreeEnergy void
#define BP_PARAMS_ExpectedFreeEnergy                                                          \
  const void *predictedObs, const void *preferredObs, const void *predictedState, void *output, \
      int64_t obsCount, int64_t stateCount, DType dtype
#define BP_ARGS_ExpectedFreeEnergy \
  predictedObs, preferredObs, predictedState, output, obsCount, stateCount, dtype

// ---- PredictiveCoding ----------------------------------------------------------------------------
#define BP_RET_Prediction void
#define BP_PARAMS_Prediction                                                                  \
  const void *weights, const void *representation, void *output, int64_t outDim, int64_t inDim, \
      DType dtype
#define BP_ARGS_Prediction weights, representation, output, outDim, inDim, dtype

#define BP_RET_PredictiveUpdate void
#define BP_PARAMS_PredictiveUpdate                                                            \
  const PredictiveCodingConfig &config, const void *weights, const void *representation,     \
      const void *predictionError, void *output, int64_t outDim, int64_t inDim, DType dtype
#define BP_ARGS_PredictiveUpdate \
  config, weights, representation, predictionError, output, outDim, inDim, dtype

// ==== Surfaces added by Backplane (closing the seed's "Gaps for R1") ==============================

// ---- Shape: byte movers, any dtype (packed Int4/Bool handled element by element) ---------------
#define BP_RET_Reshape void
#define BP_PARAMS_Reshape                                                                      \
  const void *src, void *dst, const int64_t *inShape, int64_t inRank, const int64_t *outShape, \
      int64_t outRank, DType dtype
#define BP_ARGS_Reshape src, dst, inShape, inRank, outShape, outRank, dtype

#define BP_RET_Transpose void
#define BP_PARAMS_Transpose                                                             \
  const void *src, void *dst, const int64_t *shape, int64_t rank, const int64_t *perm, \
      DType dtype
#define BP_ARGS_Transpose src, dst, shape, rank, perm, dtype

// inputs[i] has shape shapes[i*rank .. (i+1)*rank); all agree except along axis.
#define BP_RET_Concat void
#define BP_PARAMS_Concat                                                                      \
  const void *const *inputs, const int64_t *shapes, int64_t inputCount, int64_t rank,        \
      int64_t axis, void *dst, DType dtype
#define BP_ARGS_Concat inputs, shapes, inputCount, rank, axis, dst, dtype

// outputs[i] receives sizes[i] entries along axis; the sizes add up to shape[axis].
#define BP_RET_Split void
#define BP_PARAMS_Split                                                                      \
  const void *src, const int64_t *shape, int64_t rank, int64_t axis, const int64_t *sizes,  \
      int64_t outputCount, void *const *outputs, DType dtype
#define BP_ARGS_Split src, shape, rank, axis, sizes, outputCount, outputs, dtype

#define BP_RET_UpsampleNearest2D void
#define BP_PARAMS_UpsampleNearest2D                                                           \
  const UpsampleConfig &config, const void *src, void *dst, int64_t batch, int64_t channels, \
      int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype
#define BP_ARGS_UpsampleNearest2D config, src, dst, batch, channels, inH, inW, outH, outW, dtype

#define BP_RET_HeadsLayout void
#define BP_PARAMS_HeadsLayout                                                                \
  const void *src, void *dst, int64_t batch, int64_t seq, int64_t heads, int64_t headDim,   \
      DType dtype
#define BP_ARGS_HeadsLayout src, dst, batch, seq, heads, headDim, dtype

#define BP_RET_LastToken void
#define BP_PARAMS_LastToken \
  const void *src, void *dst, int64_t batch, int64_t seq, int64_t features, DType dtype
#define BP_ARGS_LastToken src, dst, batch, seq, features, dtype

// NumPy basic slicing per axis: starts/ends/steps have `rank` entries (negative indices count
// from the end, out-of-range bounds clamp, steps may be negative, never 0).
#define BP_RET_Slice void
#define BP_PARAMS_Slice                                                                      \
  const void *src, void *dst, const int64_t *shape, int64_t rank, const int64_t *starts,    \
      const int64_t *ends, const int64_t *steps, DType dtype
#define BP_ARGS_Slice src, dst, shape, rank, starts, ends, steps, dtype

// ---- Optimizer: params/grads in `dtype`; state in f32 (f64 when dtype is f64); the step
// counter is incremented by every call before use (the first call sees step 1). -------------------
#define BP_RET_AdamStep void
#define BP_PARAMS_AdamStep                                                                   \
  const AdamConfig &config, void *params, const void *grads, void *m, void *v, int64_t *step, \
      int64_t count, DType dtype
#define BP_ARGS_AdamStep config, params, grads, m, v, step, count, dtype

#define BP_RET_SGDStep void
#define BP_PARAMS_SGDStep                                                                   \
  const SGDConfig &config, void *params, const void *grads, void *momentumBuffer,          \
      int64_t *step, int64_t count, DType dtype
#define BP_ARGS_SGDStep config, params, grads, momentumBuffer, step, count, dtype

#define BP_RET_LionStep void
#define BP_PARAMS_LionStep                                                                   \
  const LionConfig &config, void *params, const void *grads, void *m, int64_t *step,        \
      int64_t count, DType dtype
#define BP_ARGS_LionStep config, params, grads, m, step, count, dtype

#define BP_RET_RMSpropStep void
#define BP_PARAMS_RMSpropStep                                                                \
  const RMSpropConfig &config, void *params, const void *grads, void *squareAvg, void *gradAvg, \
      void *momentumBuffer, int64_t *step, int64_t count, DType dtype
#define BP_ARGS_RMSpropStep \
  config, params, grads, squareAvg, gradAvg, momentumBuffer, step, count, dtype

#define BP_RET_HebbianStep void
#define BP_PARAMS_HebbianStep \
  const HebbianConfig &config, void *params, const void *signal, int64_t count, DType dtype
#define BP_ARGS_HebbianStep config, params, signal, count, dtype

#define BP_RET_LARSStep void
#define BP_PARAMS_LARSStep                                                                  \
  const LARSConfig &config, void *params, const void *grads, void *momentumBuffer,         \
      int64_t *step, int64_t count, DType dtype
#define BP_ARGS_LARSStep config, params, grads, momentumBuffer, step, count, dtype

#define BP_RET_AdagradStep void
#define BP_PARAMS_AdagradStep                                                                \
  const AdagradConfig &config, void *params, const void *grads, void *sum, int64_t *step,   \
      int64_t count, DType dtype
#define BP_ARGS_AdagradStep config, params, grads, sum, step, count, dtype

#define BP_RET_AdadeltaStep void
#define BP_PARAMS_AdadeltaStep                                                               \
  const AdadeltaConfig &config, void *params, const void *grads, void *squareAvg,           \
      void *accDelta, int64_t *step, int64_t count, DType dtype
#define BP_ARGS_AdadeltaStep config, params, grads, squareAvg, accDelta, step, count, dtype

#define BP_RET_LBFGSStep void
#define BP_PARAMS_LBFGSStep                                                                  \
  const LBFGSConfig &config, void *params, const void *grads, const LBFGSState &state,      \
      int64_t count, DType dtype
#define BP_ARGS_LBFGSStep config, params, grads, state, count, dtype

// ---- Gradients -----------------------------------------------------------------------------------
#define BP_RET_MSEGrad void
#define BP_PARAMS_MSEGrad \
  const void *predictions, const void *targets, void *grad, int64_t count, DType dtype
#define BP_ARGS_MSEGrad predictions, targets, grad, count, dtype

#define BP_RET_CrossEntropyGrad void
#define BP_PARAMS_CrossEntropyGrad                                                           \
  const void *logits, const int32_t *targets, void *grad, int64_t batch, int64_t classes,   \
      DType dtype
#define BP_ARGS_CrossEntropyGrad logits, targets, grad, batch, classes, dtype

// ---- MathExt -------------------------------------------------------------------------------------
#define BP_RET_Outer void
#define BP_PARAMS_Outer \
  const void *left, const void *right, void *out, int64_t rows, int64_t cols, DType dtype
#define BP_ARGS_Outer left, right, out, rows, cols, dtype

#define BP_RET_RowReduce void
#define BP_PARAMS_RowReduce const void *src, void *dst, int64_t rows, int64_t cols, DType dtype
#define BP_ARGS_RowReduce src, dst, rows, cols, dtype

#define BP_RET_RowMap void
#define BP_PARAMS_RowMap void *dst, const void *src, int64_t rows, int64_t cols, DType dtype
#define BP_ARGS_RowMap dst, src, rows, cols, dtype

#define BP_RET_InvSqrtDimScale void
#define BP_PARAMS_InvSqrtDimScale \
  void *dst, const void *src, int64_t count, int64_t dim, DType dtype
#define BP_ARGS_InvSqrtDimScale dst, src, count, dim, dtype

// ---- PointProcess --------------------------------------------------------------------------------
#define BP_RET_HawkesSimulate void
#define BP_PARAMS_HawkesSimulate                                                             \
  const HawkesSimulateConfig &config, void *times, int64_t capacity, int64_t *eventCount,   \
      DType dtype
#define BP_ARGS_HawkesSimulate config, times, capacity, eventCount, dtype
