// Registration of the graph-level lowerings, one function per domain file in this folder.
#pragma once

#include "backplane/runtime/op_registry.hpp"

namespace backplane::runtime::ops {

void RegisterGraphOps(OpRegistry& registry);        // Input, Fused, bench.*, model.*
void RegisterActivationOps(OpRegistry& registry);   // activation.*
void RegisterMathOps(OpRegistry& registry);         // math.*, reduction.*, elementwise.*
void RegisterNnOps(OpRegistry& registry);           // attention, masking, positional, embedding,
                                                    // convolution, pooling, projection
void RegisterShapeOps(OpRegistry& registry);        // shape.*
void RegisterTrainOps(OpRegistry& registry);        // train.loss.*, train.optimizer.*
void RegisterResearchOps(OpRegistry& registry);     // hawkes, vsa, active_inference,
                                                    // predictive_coding, markov_blanket, causal,
                                                    // physics, pospop
void RegisterSamplingQuantOps(OpRegistry& registry);  // sampling.*, quant.*
void RegisterTensorElementwiseOps(OpRegistry& registry);  // tensor.compare..., tensor.where, cast, pow, mod, round
void RegisterTensorAxisOps(OpRegistry& registry);         // tensor.argmax/argmin, cumsum, trilu, gather_elements
void RegisterTensorIndexOps(OpRegistry& registry);        // tensor.topk, scatter_elements, scatter_nd, gather_nd
void RegisterPoolNdOps(OpRegistry& registry);             // pooling.max_pool, max_pool_with_indices, avg_pool
void RegisterSpatialOps(OpRegistry& registry);            // spatial.grid_sample, spatial.roi_align

}  // namespace backplane::runtime::ops
