// The activation element functions, evaluated in the compute type T (float or double). One
// definition for every backend: the CPU reference and the CUDA kernels call these.
#pragma once

#include <cmath>

#include "math/host_device.hpp"

namespace backplane::math {


// ---- Element functions, evaluated in the compute type T (float or double) -----------------------

// x * gate for the "x times a gate in [0, 1]" activations (SiLU, GELU, Mish, HardSwish...). The
// gate is exactly 0 only where the function is 0 (x -> -Inf or x <= -3 for the hard variants), so
// the result is a signed zero there; this keeps f(-Inf) = -0 instead of -Inf * 0 = NaN.
template <class T>
BP_HD T Gated(T x, T gate) {
  return gate == T(0) ? std::copysign(T(0), x) : x * gate;
}

// clamp that propagates NaN (both comparisons are false for NaN, so x is returned).
template <class T>
BP_HD T Clamp(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Numerically stable logistic function: never evaluates exp of a positive argument.
template <class T>
BP_HD T Sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);  // NaN also takes this branch and stays NaN
  return e / (T(1) + e);
}

// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)) (torch.nn.functional.logsigmoid).
template <class T>
BP_HD T LogSigmoid(T x) {
  const T lower = x < T(0) ? x : T(0);
  return lower - std::log1p(std::exp(-std::fabs(x)));
}

// torch.nn.functional.softplus with beta 1, threshold 20.
template <class T>
BP_HD T Softplus(T x) {
  return x > T(20) ? x : std::log1p(std::exp(x));
}

template <class T>
BP_HD T Silu(T x) {
  return Gated(x, Sigmoid(x));
}

// Exact GELU: x * Phi(x) with Phi(x) = erfc(-x / sqrt(2)) / 2. The erfc form equals (1 + erf(x /
// sqrt(2))) / 2 but keeps full relative accuracy for negative x.
template <class T>
BP_HD T Gelu(T x) {
  const T phi = T(0.5) * std::erfc(-x * T(0.70710678118654752440));
  return Gated(x, phi);
}

// tanh-approximated GELU: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). Evaluated as x *
// sigmoid(2u), the same function (1 + tanh(u) = 2 sigmoid(2u)) without the cancellation of 1 +
// tanh(u) for negative u.
template <class T>
BP_HD T GeluTanh(T x) {
  const T u = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
  return Gated(x, Sigmoid(T(2) * u));
}

// torch.relu: negative values become 0; NaN and -0.0 pass through.
template <class T>
BP_HD T Relu(T x) {
  return x < T(0) ? T(0) : x;
}

template <class T>
BP_HD T LeakyRelu(T x, T slope) {
  return x > T(0) ? x : x * slope;
}

template <class T>
BP_HD T Elu(T x, T alpha) {
  return x > T(0) ? x : alpha * std::expm1(x);
}

template <class T>
BP_HD T Celu(T x, T alpha) {
  return x > T(0) ? x : alpha * std::expm1(x / alpha);
}

template <class T>
BP_HD T Selu(T x) {
  const T scale = T(1.0507009873554804934193349852946);
  const T alpha = T(1.6732632423543772848170429916717);
  return scale * (x > T(0) ? x : alpha * std::expm1(x));
}

template <class T>
BP_HD T Mish(T x) {
  return Gated(x, std::tanh(Softplus(x)));
}

// x / (1 + |x|), with the limit +-1 at +-Inf (the plain formula gives Inf / Inf = NaN).
template <class T>
BP_HD T Softsign(T x) {
  if (std::isinf(x)) return std::copysign(T(1), x);
  return x / (T(1) + std::fabs(x));
}

// relu6(x + 3) / 6 (torch.nn.functional.hardsigmoid).
template <class T>
BP_HD T HardSigmoid(T x) {
  return Clamp(x + T(3), T(0), T(6)) / T(6);
}

// x * relu6(x + 3) / 6 (torch.nn.functional.hardswish); HardGelu is the same function.
template <class T>
BP_HD T HardSwish(T x) {
  return Gated(x, HardSigmoid(x));
}

template <class T>
BP_HD T QuickGelu(T x) {
  return Gated(x, Sigmoid(T(1.702) * x));
}

template <class T>
BP_HD T TanhShrink(T x) {
  return x - std::tanh(x);
}

// torch.nn.functional.threshold(x, t, 0): x <= t gives 0, everything else (NaN too) passes.
template <class T>
BP_HD T Threshold(T x, T t) {
  return x <= t ? T(0) : x;
}

// torch.nn.functional.hardshrink: values in [-lambda, lambda] become 0; NaN passes.
template <class T>
BP_HD T HardShrink(T x, T lambda) {
  return (x >= -lambda && x <= lambda) ? T(0) : x;
}

// torch.nn.functional.softshrink, with NaN propagated.
template <class T>
BP_HD T SoftShrink(T x, T lambda) {
  if (x > lambda) return x - lambda;
  if (x < -lambda) return x + lambda;
  return std::isnan(x) ? x : T(0);
}

// x + sin^2(alpha x) / beta (Snake: beta = alpha). At +-Inf the bounded periodic term is dropped
// (the limit is +-Inf; sin(Inf) would give NaN).
template <class T>
BP_HD T Snake(T x, T alpha, T beta) {
  if (std::isinf(x)) return x;
  const T s = std::sin(alpha * x);
  return x + s * s / beta;
}

}  // namespace backplane::math
