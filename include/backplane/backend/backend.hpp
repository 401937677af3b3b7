// The device Backend: one object per device exposing the surfaces, as in the seed
// (backend.Activation().GeluTanh(...)). Pointers are memory of the backend's device (host
// memory for the CPU backend); buffers are dense row-major.
#pragma once

#include <string_view>

#include "backplane/backend/activation.hpp"
#include "backplane/backend/physics.hpp"
#include "backplane/backend/causal.hpp"
#include "backplane/backend/elementwise.hpp"
#include "backplane/backend/pospop.hpp"
#include "backplane/backend/vsa.hpp"
#include "backplane/backend/losses.hpp"
#include "backplane/backend/hawkes.hpp"
#include "backplane/backend/pool.hpp"
#include "backplane/backend/convolution.hpp"
#include "backplane/backend/active_inference.hpp"
#include "backplane/backend/predictive_coding.hpp"
#include "backplane/backend/masking.hpp"
#include "backplane/backend/attention.hpp"
#include "backplane/backend/sampling.hpp"
#include "backplane/backend/normalization.hpp"
#include "backplane/backend/reduction.hpp"
#include "backplane/backend/layer_norm.hpp"
#include "backplane/backend/rope.hpp"
#include "backplane/backend/embedding.hpp"
#include "backplane/backend/dequant.hpp"
#include "backplane/backend/dot.hpp"
#include "backplane/backend/matmul.hpp"
#include "backplane/backend/dropout.hpp"
#include "backplane/backend/quant.hpp"
#include "backplane/backend/shape.hpp"
#include "backplane/backend/tensor_ops.hpp"
#include "backplane/backend/optimizer.hpp"
#include "backplane/backend/gradients.hpp"
#include "backplane/backend/math_ext.hpp"
#include "backplane/backend/point_process.hpp"
#include "backplane/backend/block_quant.hpp"
#include "backplane/backend/pool_nd.hpp"
#include "backplane/backend/spatial.hpp"

// X(Surface, METHOD_LIST_MACRO) for the seed's 25 surfaces, in the seed's order.
#define BP_SEED_SURFACES(X) \
  X(Activation, BP_SURFACE_ACTIVATION) \
  X(Physics, BP_SURFACE_PHYSICS) \
  X(Causal, BP_SURFACE_CAUSAL) \
  X(Elementwise, BP_SURFACE_ELEMENTWISE) \
  X(PosPop, BP_SURFACE_POSPOP) \
  X(VSA, BP_SURFACE_VSA) \
  X(Losses, BP_SURFACE_LOSSES) \
  X(Hawkes, BP_SURFACE_HAWKES) \
  X(Pool, BP_SURFACE_POOL) \
  X(Convolution, BP_SURFACE_CONVOLUTION) \
  X(ActiveInference, BP_SURFACE_ACTIVE_INFERENCE) \
  X(PredictiveCoding, BP_SURFACE_PREDICTIVE_CODING) \
  X(Masking, BP_SURFACE_MASKING) \
  X(Attention, BP_SURFACE_ATTENTION) \
  X(Sampling, BP_SURFACE_SAMPLING) \
  X(Normalization, BP_SURFACE_NORMALIZATION) \
  X(Reduction, BP_SURFACE_REDUCTION) \
  X(LayerNorm, BP_SURFACE_LAYER_NORM) \
  X(RoPE, BP_SURFACE_ROPE) \
  X(Embedding, BP_SURFACE_EMBEDDING) \
  X(Dequant, BP_SURFACE_DEQUANT) \
  X(Dot, BP_SURFACE_DOT) \
  X(Matmul, BP_SURFACE_MATMUL) \
  X(Dropout, BP_SURFACE_DROPOUT) \
  X(Quant, BP_SURFACE_QUANT)

// Surfaces Backplane adds to close the seed's "Gaps for R1".
#define BP_EXTENSION_SURFACES(X) \
  X(Shape, BP_SURFACE_SHAPE) \
  X(Optimizer, BP_SURFACE_OPTIMIZER) \
  X(Gradients, BP_SURFACE_GRADIENTS) \
  X(MathExt, BP_SURFACE_MATH_EXT) \
  X(PointProcess, BP_SURFACE_POINT_PROCESS) \
  X(BlockQuant, BP_SURFACE_BLOCK_QUANT) \
  X(TensorOps, BP_SURFACE_TENSOR_OPS) \
  X(PoolNd, BP_SURFACE_POOL_ND) \
  X(Spatial, BP_SURFACE_SPATIAL)

#define BP_SURFACES(X) BP_SEED_SURFACES(X) BP_EXTENSION_SURFACES(X)

// X(Surface, Method, Family, DTypes) for every method of every surface.
#define BP_ALL_METHODS(X) \
  BP_SURFACE_ACTIVATION(X) \
  BP_SURFACE_PHYSICS(X) \
  BP_SURFACE_CAUSAL(X) \
  BP_SURFACE_ELEMENTWISE(X) \
  BP_SURFACE_POSPOP(X) \
  BP_SURFACE_VSA(X) \
  BP_SURFACE_LOSSES(X) \
  BP_SURFACE_HAWKES(X) \
  BP_SURFACE_POOL(X) \
  BP_SURFACE_CONVOLUTION(X) \
  BP_SURFACE_ACTIVE_INFERENCE(X) \
  BP_SURFACE_PREDICTIVE_CODING(X) \
  BP_SURFACE_MASKING(X) \
  BP_SURFACE_ATTENTION(X) \
  BP_SURFACE_SAMPLING(X) \
  BP_SURFACE_NORMALIZATION(X) \
  BP_SURFACE_REDUCTION(X) \
  BP_SURFACE_LAYER_NORM(X) \
  BP_SURFACE_ROPE(X) \
  BP_SURFACE_EMBEDDING(X) \
  BP_SURFACE_DEQUANT(X) \
  BP_SURFACE_DOT(X) \
  BP_SURFACE_MATMUL(X) \
  BP_SURFACE_DROPOUT(X) \
  BP_SURFACE_QUANT(X) \
  BP_SURFACE_SHAPE(X) \
  BP_SURFACE_OPTIMIZER(X) \
  BP_SURFACE_GRADIENTS(X) \
  BP_SURFACE_MATH_EXT(X) \
  BP_SURFACE_POINT_PROCESS(X) \
  BP_SURFACE_BLOCK_QUANT(X) \
  BP_SURFACE_TENSOR_OPS(X) \
  BP_SURFACE_POOL_ND(X) \
  BP_SURFACE_SPATIAL(X)

namespace backplane {

class Backend {
 public:
  virtual ~Backend() = default;
  // Short device name: "cpu", "cuda", "xla".
  virtual std::string_view device() const = 0;

  virtual ActivationSurface& Activation() = 0;
  virtual PhysicsSurface& Physics() = 0;
  virtual CausalSurface& Causal() = 0;
  virtual ElementwiseSurface& Elementwise() = 0;
  virtual PosPopSurface& PosPop() = 0;
  virtual VSASurface& VSA() = 0;
  virtual LossesSurface& Losses() = 0;
  virtual HawkesSurface& Hawkes() = 0;
  virtual PoolSurface& Pool() = 0;
  virtual ConvolutionSurface& Convolution() = 0;
  virtual ActiveInferenceSurface& ActiveInference() = 0;
  virtual PredictiveCodingSurface& PredictiveCoding() = 0;
  virtual MaskingSurface& Masking() = 0;
  virtual AttentionSurface& Attention() = 0;
  virtual SamplingSurface& Sampling() = 0;
  virtual NormalizationSurface& Normalization() = 0;
  virtual ReductionSurface& Reduction() = 0;
  virtual LayerNormSurface& LayerNorm() = 0;
  virtual RoPESurface& RoPE() = 0;
  virtual EmbeddingSurface& Embedding() = 0;
  virtual DequantSurface& Dequant() = 0;
  virtual DotSurface& Dot() = 0;
  virtual MatmulSurface& Matmul() = 0;
  virtual DropoutSurface& Dropout() = 0;
  virtual QuantSurface& Quant() = 0;
  virtual ShapeSurface& Shape() = 0;
  virtual OptimizerSurface& Optimizer() = 0;
  virtual GradientsSurface& Gradients() = 0;
  virtual MathExtSurface& MathExt() = 0;
  virtual PointProcessSurface& PointProcess() = 0;
  virtual BlockQuantSurface& BlockQuant() = 0;
  virtual TensorOpsSurface& TensorOps() = 0;
  virtual PoolNdSurface& PoolNd() = 0;
  virtual SpatialSurface& Spatial() = 0;
};

}  // namespace backplane
