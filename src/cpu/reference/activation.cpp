// Scalar reference kernels for the Activation surface (55 methods).
//
// Semantics: docs/semantics/activation.md. Every kernel validates all of its arguments before it
// writes anything, computes f64 storage in double and f32/f16/bf16 storage in float (rounded once
// to nearest even on store), and uses the C++ standard library's math functions.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "cpu/reference/common.hpp"
#include "math/activation_functions.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace activation {
namespace math = ::backplane::math;

namespace {

constexpr std::string_view kDTypeArg = "dtype";

// ---- Validation ---------------------------------------------------------------------------------

void CheckFloatParam(std::string_view op, std::string_view arg, float value) {
  CheckFinite(op, arg, static_cast<double>(value));
}

void CheckNonZeroParam(std::string_view op, std::string_view arg, float value) {
  if (value == 0.0f) ThrowInvalidArgument(op, arg, "non-zero", "0");
}

void CheckNonNegativeParam(std::string_view op, std::string_view arg, float value) {
  if (value < 0.0f) ThrowInvalidArgument(op, arg, ">= 0", fmt::format("{}", value));
}

void ValidateUnary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype) {
  CheckDType(op, kDTypeArg, dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "src", src, count);
}

// ---- Drivers ------------------------------------------------------------------------------------

// dst[i] = f(src[i]) where f is a generic callable invoked with the compute type.
template <class F>
void MapUnary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype, F f) {
  WithComputeType(op, kDTypeArg, dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) Store<T>(dst, i, dtype, f(Load<T>(src, i, dtype)));
  });
}

template <class F>
void Unary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype, F f) {
  ValidateUnary(op, dst, src, count, dtype);
  MapUnary(op, dst, src, count, dtype, f);
}

// out = f(gate, up) for the gated linear units.
template <class F>
void GluPacked(std::string_view op, void* dst, const void* packed, int64_t batch, int64_t halfCount,
               DType dtype, F f) {
  CheckDType(op, kDTypeArg, dtype, kFloatDTypes);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "halfCount", halfCount);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (halfCount > kMax / 2) {
    ThrowInvalidArgument(op, "halfCount", fmt::format("<= {}", kMax / 2),
                         std::to_string(halfCount));
  }
  const int64_t rowLength = 2 * halfCount;
  if (rowLength > 0 && batch > kMax / rowLength) {
    ThrowInvalidArgument(
        op, "batch", fmt::format("<= {} (batch * 2 * halfCount overflows int64)", kMax / rowLength),
        std::to_string(batch));
  }
  CheckPointer(op, "dst", dst, batch * halfCount);
  CheckPointer(op, "packed", packed, batch * rowLength);
  WithComputeType(op, kDTypeArg, dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t row = 0; row < batch; ++row) {
      for (int64_t j = 0; j < halfCount; ++j) {
        const T gate = Load<T>(packed, row * rowLength + j, dtype);
        const T up = Load<T>(packed, row * rowLength + halfCount + j, dtype);
        Store<T>(dst, row * halfCount + j, dtype, f(gate, up));
      }
    }
  });
}

template <class F>
void GluTensors(std::string_view op, void* dst, const void* gate, const void* up, int64_t count,
                DType dtype, F f) {
  CheckDType(op, kDTypeArg, dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "gate", gate, count);
  CheckPointer(op, "up", up, count);
  WithComputeType(op, kDTypeArg, dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      Store<T>(dst, i, dtype, f(Load<T>(gate, i, dtype), Load<T>(up, i, dtype)));
    }
  });
}

// Softmax and LogSoftmax over the whole buffer. Every dtype is computed in double: the maximum is
// subtracted, the exponentials are summed in double, and each result is rounded on store. A
// NaN or +Inf input, or an all -Inf input, makes every output NaN (as torch.softmax).
void SoftmaxImpl(std::string_view op, void* dst, const void* src, int64_t count, DType dtype,
                 bool logarithm) {
  ValidateUnary(op, dst, src, count, dtype);
  if (count == 0) return;
  const std::vector<double> x = Widen<double>(src, count, dtype);
  double maximum = -std::numeric_limits<double>::infinity();
  for (double v : x) maximum = v > maximum ? v : maximum;
  std::vector<double> out(x.size());
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = std::exp(x[i] - maximum);
    sum += out[i];
  }
  if (logarithm) {
    const double logSum = std::log(sum);
    for (size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - maximum) - logSum;
  } else {
    for (double& v : out) v /= sum;
  }
  Narrow<double>(out, dst, dtype);
}

}  // namespace

// ---- Unary (25) ---------------------------------------------------------------------------------

#define BP_UNARY_KERNEL(Name, expr)                                                  \
  void Name(void* dst, const void* src, int64_t count, DType dtype) {                \
    Unary("Activation." #Name, dst, src, count, dtype, [](auto x) { return expr; }); \
  }

BP_UNARY_KERNEL(Exp, std::exp(x))
BP_UNARY_KERNEL(Log, std::log(x))
BP_UNARY_KERNEL(Log1p, std::log1p(x))
BP_UNARY_KERNEL(Expm1, std::expm1(x))
BP_UNARY_KERNEL(Sigmoid, math::Sigmoid(x))
BP_UNARY_KERNEL(LogSigmoid, math::LogSigmoid(x))
BP_UNARY_KERNEL(Tanh, std::tanh(x))
BP_UNARY_KERNEL(Silu, math::Silu(x))
BP_UNARY_KERNEL(Swish, math::Silu(x))
BP_UNARY_KERNEL(GeluTanh, math::GeluTanh(x))
BP_UNARY_KERNEL(Gelu, math::Gelu(x))
BP_UNARY_KERNEL(ReLU, math::Relu(x))
BP_UNARY_KERNEL(LeakyReLU, math::LeakyRelu(x, static_cast<decltype(x)>(0.01)))
BP_UNARY_KERNEL(ELU, math::Elu(x, static_cast<decltype(x)>(1)))
BP_UNARY_KERNEL(CELU, math::Celu(x, static_cast<decltype(x)>(1)))
BP_UNARY_KERNEL(SELU, math::Selu(x))
BP_UNARY_KERNEL(Softplus, math::Softplus(x))
BP_UNARY_KERNEL(Mish, math::Mish(x))
BP_UNARY_KERNEL(Softsign, math::Softsign(x))
BP_UNARY_KERNEL(HardSigmoid, math::HardSigmoid(x))
BP_UNARY_KERNEL(HardSwish, math::HardSwish(x))
BP_UNARY_KERNEL(HardTanh, math::Clamp(x, static_cast<decltype(x)>(-1), static_cast<decltype(x)>(1)))
BP_UNARY_KERNEL(HardGelu, math::HardSwish(x))
BP_UNARY_KERNEL(QuickGelu, math::QuickGelu(x))
BP_UNARY_KERNEL(TanhShrink, math::TanhShrink(x))

#undef BP_UNARY_KERNEL

// ---- Softmax (2) --------------------------------------------------------------------------------

void Softmax(void* dst, const void* src, int64_t count, DType dtype) {
  SoftmaxImpl("Activation.Softmax", dst, src, count, dtype, false);
}

void LogSoftmax(void* dst, const void* src, int64_t count, DType dtype) {
  SoftmaxImpl("Activation.LogSoftmax", dst, src, count, dtype, true);
}

// ---- Parametric (12) ----------------------------------------------------------------------------
// Parameters are float; f64 storage widens them exactly, the other formats use them as they are.

namespace {

void LeakyWithSlope(std::string_view op, void* dst, const void* src, int64_t count, DType dtype,
                    float slope) {
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", slope);
  MapUnary(op, dst, src, count, dtype,
           [slope](auto x) { return math::LeakyRelu(x, static_cast<decltype(x)>(slope)); });
}

}  // namespace

void PReLU(void* dst, const void* src, int64_t count, DType dtype, float param) {
  LeakyWithSlope("Activation.PReLU", dst, src, count, dtype, param);
}

void LeakyReLUSlope(void* dst, const void* src, int64_t count, DType dtype, float param) {
  LeakyWithSlope("Activation.LeakyReLUSlope", dst, src, count, dtype, param);
}

void ELUAlpha(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.ELUAlpha";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  MapUnary(op, dst, src, count, dtype,
           [param](auto x) { return math::Elu(x, static_cast<decltype(x)>(param)); });
}

void CELUAlpha(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.CELUAlpha";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonZeroParam(op, "param", param);
  MapUnary(op, dst, src, count, dtype,
           [param](auto x) { return math::Celu(x, static_cast<decltype(x)>(param)); });
}

void Threshold(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.Threshold";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  MapUnary(op, dst, src, count, dtype,
           [param](auto x) { return math::Threshold(x, static_cast<decltype(x)>(param)); });
}

void Snake(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.Snake";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonZeroParam(op, "param", param);
  MapUnary(op, dst, src, count, dtype, [param](auto x) {
    const auto alpha = static_cast<decltype(x)>(param);
    return math::Snake(x, alpha, alpha);
  });
}

void HardShrink(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.HardShrink";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonNegativeParam(op, "param", param);
  MapUnary(op, dst, src, count, dtype,
           [param](auto x) { return math::HardShrink(x, static_cast<decltype(x)>(param)); });
}

void SoftShrink(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.SoftShrink";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonNegativeParam(op, "param", param);
  MapUnary(op, dst, src, count, dtype,
           [param](auto x) { return math::SoftShrink(x, static_cast<decltype(x)>(param)); });
}

void HardTanhRange(void* dst, const void* src, int64_t count, DType dtype, float param1,
                   float param2) {
  constexpr std::string_view op = "Activation.HardTanhRange";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param1", param1);
  CheckFloatParam(op, "param2", param2);
  if (param1 > param2) {
    ThrowInvalidArgument(op, "param1", fmt::format("<= param2 (max = {})", param2),
                         fmt::format("{}", param1));
  }
  MapUnary(op, dst, src, count, dtype, [param1, param2](auto x) {
    using T = decltype(x);
    return math::Clamp(x, static_cast<T>(param1), static_cast<T>(param2));
  });
}

void SnakeParametric(void* dst, const void* src, int64_t count, DType dtype, float param1,
                     float param2) {
  constexpr std::string_view op = "Activation.SnakeParametric";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param1", param1);
  CheckFloatParam(op, "param2", param2);
  CheckNonZeroParam(op, "param1", param1);
  CheckNonZeroParam(op, "param2", param2);
  MapUnary(op, dst, src, count, dtype, [param1, param2](auto x) {
    using T = decltype(x);
    return math::Snake(x, static_cast<T>(param1), static_cast<T>(param2));
  });
}

// Inference-mode RReLU: the fixed slope (lower + upper) / 2 (torch.nn.functional.rrelu with
// training=False); there is no random stream.
void RReLU(void* dst, const void* src, int64_t count, DType dtype, float param1, float param2) {
  constexpr std::string_view op = "Activation.RReLU";
  ValidateUnary(op, dst, src, count, dtype);
  CheckFloatParam(op, "param1", param1);
  CheckFloatParam(op, "param2", param2);
  CheckNonNegativeParam(op, "param1", param1);
  if (param1 > param2) {
    ThrowInvalidArgument(op, "param1", fmt::format("<= param2 (upper = {})", param2),
                         fmt::format("{}", param1));
  }
  const double slope = (static_cast<double>(param1) + static_cast<double>(param2)) / 2.0;
  MapUnary(op, dst, src, count, dtype,
           [slope](auto x) { return math::LeakyRelu(x, static_cast<decltype(x)>(slope)); });
}

// Channels-last PReLU: element i uses slopes[i % slopeCount]; slopes are always f32.
void PReLUV(void* dst, const void* src, const float* slopes, int64_t count, DType dtype,
            int64_t slopeCount) {
  constexpr std::string_view op = "Activation.PReLUV";
  ValidateUnary(op, dst, src, count, dtype);
  CheckPositive(op, "slopeCount", slopeCount);
  CheckPointer(op, "slopes", slopes, count > 0 ? slopeCount : 0);
  if (count % slopeCount != 0) {
    ThrowShapeMismatch(op, "count", fmt::format("a multiple of slopeCount ({})", slopeCount),
                       std::to_string(count));
  }
  WithComputeType(op, kDTypeArg, dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      const T slope = static_cast<T>(slopes[i % slopeCount]);
      Store<T>(dst, i, dtype, math::LeakyRelu(Load<T>(src, i, dtype), slope));
    }
  });
}

// ---- Gated linear units (16) --------------------------------------------------------------------
// out = f(gate, up); the packed form reads gate from the first half of each row, up from the
// second.

#define BP_GLU_KERNELS(Name, expr)                                                              \
  void Name(void* dst, const void* packed, int64_t batch, int64_t halfCount, DType dtype) {     \
    GluPacked("Activation." #Name, dst, packed, batch, halfCount, dtype,                        \
              [](auto gate, auto up) { return expr; });                                         \
  }                                                                                             \
  void Name##Tensors(void* dst, const void* gate, const void* up, int64_t count, DType dtype) { \
    GluTensors("Activation." #Name "Tensors", dst, gate, up, count, dtype,                      \
               [](auto gate, auto up) { return expr; });                                        \
  }

// clang-format off
BP_GLU_KERNELS(GLU, gate * math::Sigmoid(up))
BP_GLU_KERNELS(GeGLU, gate * math::Gelu(up))
BP_GLU_KERNELS(GeGLUTanh, gate * math::GeluTanh(up))
BP_GLU_KERNELS(SwiGLU, math::Silu(gate) * up)
BP_GLU_KERNELS(ReGLU, gate * math::Relu(up))
BP_GLU_KERNELS(SiGLU, math::Sigmoid(gate) * up)
BP_GLU_KERNELS(LinGLU, gate * up)
BP_GLU_KERNELS(SeGLU, math::Sigmoid(gate) * up)
// clang-format on

#undef BP_GLU_KERNELS

}  // namespace activation

void RegisterActivation(KernelTable& table) {
#define BP_REGISTER_ACTIVATION(S, M, F, D) table.S##_##M = &activation::M;
  BP_SURFACE_ACTIVATION(BP_REGISTER_ACTIVATION)
#undef BP_REGISTER_ACTIVATION
}

}  // namespace backplane::cpu::ref
