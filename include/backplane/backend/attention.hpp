// Backend surface Attention (3 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

struct FlashAttentionConfig {
  int64_t BlockSize = 64;
  bool Causal = false;
};
struct MultiHeadAttentionConfig {
  int64_t NumHeads = 8;
  int64_t HeadDim = 64;
  bool Causal = false;
  int64_t WindowSize = 0;     // > 0: each query sees only the last WindowSize keys
  float ALiBiSlope = 0.0f;    // head h gets slope ALiBiSlope^(h+1); 0 disables ALiBi
  int64_t KVHeadCount = 0;    // <= 0 means NumHeads (MHA); 1 is MQA; otherwise GQA
  // With WindowSize > 0, keys up to WindowRight positions after the query's are visible too
  // (-1: no bound): FlashAttention's window_size = (WindowSize - 1, WindowRight). Causal still
  // cuts the future. 0 keeps the window causal.
  int64_t WindowRight = 0;
};

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_ATTENTION(X) \
  X(Attention, ScaledDotProductAttention, SingleHeadAttention, kFloatDTypes) \
  X(Attention, FlashAttention, SingleHeadAttention, kFloatDTypes) \
  X(Attention, MultiHeadAttention, MultiHeadAttention, kFloatDTypes)

class AttentionSurface {
 public:
  virtual ~AttentionSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_ATTENTION(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
