// Backend surface Activation (55 methods). Semantics: docs/semantics.md and ../shared/spec.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_ACTIVATION(X) \
  X(Activation, Exp, Unary, kFloatDTypes) \
  X(Activation, Log, Unary, kFloatDTypes) \
  X(Activation, Log1p, Unary, kFloatDTypes) \
  X(Activation, Expm1, Unary, kFloatDTypes) \
  X(Activation, Sigmoid, Unary, kFloatDTypes) \
  X(Activation, LogSigmoid, Unary, kFloatDTypes) \
  X(Activation, Tanh, Unary, kFloatDTypes) \
  X(Activation, Silu, Unary, kFloatDTypes) \
  X(Activation, Swish, Unary, kFloatDTypes) \
  X(Activation, GeluTanh, Unary, kFloatDTypes) \
  X(Activation, Gelu, Unary, kFloatDTypes) \
  X(Activation, ReLU, Unary, kFloatDTypes) \
  X(Activation, LeakyReLU, Unary, kFloatDTypes) \
  X(Activation, ELU, Unary, kFloatDTypes) \
  X(Activation, CELU, Unary, kFloatDTypes) \
  X(Activation, SELU, Unary, kFloatDTypes) \
  X(Activation, Softplus, Unary, kFloatDTypes) \
  X(Activation, Mish, Unary, kFloatDTypes) \
  X(Activation, Softsign, Unary, kFloatDTypes) \
  X(Activation, HardSigmoid, Unary, kFloatDTypes) \
  X(Activation, HardSwish, Unary, kFloatDTypes) \
  X(Activation, HardTanh, Unary, kFloatDTypes) \
  X(Activation, HardGelu, Unary, kFloatDTypes) \
  X(Activation, QuickGelu, Unary, kFloatDTypes) \
  X(Activation, TanhShrink, Unary, kFloatDTypes) \
  X(Activation, Softmax, Unary, kFloatDTypes) \
  X(Activation, LogSoftmax, Unary, kFloatDTypes) \
  X(Activation, PReLU, UnaryParam1, kFloatDTypes) \
  X(Activation, LeakyReLUSlope, UnaryParam1, kFloatDTypes) \
  X(Activation, ELUAlpha, UnaryParam1, kFloatDTypes) \
  X(Activation, CELUAlpha, UnaryParam1, kFloatDTypes) \
  X(Activation, Threshold, UnaryParam1, kFloatDTypes) \
  X(Activation, Snake, UnaryParam1, kFloatDTypes) \
  X(Activation, HardShrink, UnaryParam1, kFloatDTypes) \
  X(Activation, SoftShrink, UnaryParam1, kFloatDTypes) \
  X(Activation, HardTanhRange, UnaryParam2, kFloatDTypes) \
  X(Activation, SnakeParametric, UnaryParam2, kFloatDTypes) \
  X(Activation, RReLU, UnaryParam2, kFloatDTypes) \
  X(Activation, PReLUV, PReLUV, kFloatDTypes) \
  X(Activation, GLU, GluPacked, kFloatDTypes) \
  X(Activation, GeGLU, GluPacked, kFloatDTypes) \
  X(Activation, GeGLUTanh, GluPacked, kFloatDTypes) \
  X(Activation, SwiGLU, GluPacked, kFloatDTypes) \
  X(Activation, ReGLU, GluPacked, kFloatDTypes) \
  X(Activation, SiGLU, GluPacked, kFloatDTypes) \
  X(Activation, LinGLU, GluPacked, kFloatDTypes) \
  X(Activation, SeGLU, GluPacked, kFloatDTypes) \
  X(Activation, GLUTensors, GluTensors, kFloatDTypes) \
  X(Activation, GeGLUTensors, GluTensors, kFloatDTypes) \
  X(Activation, GeGLUTanhTensors, GluTensors, kFloatDTypes) \
  X(Activation, SwiGLUTensors, GluTensors, kFloatDTypes) \
  X(Activation, ReGLUTensors, GluTensors, kFloatDTypes) \
  X(Activation, SiGLUTensors, GluTensors, kFloatDTypes) \
  X(Activation, LinGLUTensors, GluTensors, kFloatDTypes) \
  X(Activation, SeGLUTensors, GluTensors, kFloatDTypes)

class ActivationSurface {
 public:
  virtual ~ActivationSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_ACTIVATION(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
