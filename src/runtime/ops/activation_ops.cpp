// Graph-level lowerings of the activation ops: elementwise over any shape, softmax-like ops over
// an axis, gated units over the last axis.
#include <fmt/format.h>

#include <cstring>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

using ActivationMethod = void (ActivationSurface::*)(BP_PARAMS_Unary);
using Param1Method = void (ActivationSurface::*)(BP_PARAMS_UnaryParam1);
using Param2Method = void (ActivationSurface::*)(BP_PARAMS_UnaryParam2);
using PackedMethod = void (ActivationSurface::*)(BP_PARAMS_GluPacked);
using TensorsMethod = void (ActivationSurface::*)(BP_PARAMS_GluTensors);

OpImpl Unary(ActivationMethod method) {
  return UnaryOpImpl([method](Backend& b, void* dst, const void* src, int64_t n, DType d) {
    (b.Activation().*method)(dst, src, n, d);
  });
}

OpImpl Param1(Param1Method method, std::string attr) {
  OpImpl impl = UnaryOpImpl(nullptr);
  impl.run = [method, attr](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
    (ctx.backend.Activation().*method)(out[0].data(), in[0].data(), in[0].numel(), in[0].dtype(),
                                       static_cast<float>(ctx.attrs.Float(attr)));
  };
  return impl;
}

// The default alpha (0.01) is the seed's fixed-slope Activation.LeakyReLU, which holds 0.01 in the
// compute type (f64 stays exact); any other alpha is Activation.LeakyReLUSlope's float slope.
OpImpl LeakyReLU() {
  OpImpl impl = UnaryOpImpl(nullptr);
  impl.run = [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
    const double alpha = ctx.attrs.Float("alpha");
    if (alpha == 0.01) {
      ctx.backend.Activation().LeakyReLU(out[0].data(), in[0].data(), in[0].numel(), in[0].dtype());
    } else {
      ctx.backend.Activation().LeakyReLUSlope(out[0].data(), in[0].data(), in[0].numel(), in[0].dtype(),
                                              static_cast<float>(alpha));
    }
  };
  return impl;
}

OpImpl Param2(Param2Method method, std::string attr1, std::string attr2) {
  OpImpl impl = UnaryOpImpl(nullptr);
  impl.run = [method, attr1, attr2](OpContext& ctx, std::span<const Tensor> in,
                                    std::span<Tensor> out) {
    (ctx.backend.Activation().*method)(out[0].data(), in[0].data(), in[0].numel(), in[0].dtype(),
                                       static_cast<float>(ctx.attrs.Float(attr1)),
                                       static_cast<float>(ctx.attrs.Float(attr2)));
  };
  return impl;
}

// Softmax-like over an axis: one vector goes to the whole-buffer method (threaded over chunks when
// long), more rows to the rows method (threaded over rows).
using RowMapMethod = void (MathExtSurface::*)(BP_PARAMS_RowMap);
OpImpl RowWise(RowMapMethod rows_method, ActivationMethod vector_method) {
  return AxisRowOpImpl(
      [rows_method, vector_method](Backend& b, void* dst, const void* src, int64_t rows, int64_t row, DType d) {
        if (rows == 1) return (b.Activation().*vector_method)(dst, src, row, d);
        (b.MathExt().*rows_method)(dst, src, rows, row, d);
      });
}

// Packed gated unit over the last axis: [..., 2h] -> [..., h].
OpImpl Packed(PackedMethod method) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectMinRank(attrs, in, 0, 1);
        Shape shape = in[0].shape;
        if (shape.back() % 2 != 0) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("the last dimension must be even (gate and up halves), got {}", shape.back()));
        }
        shape.back() /= 2;
        return std::vector<TensorType>{{in[0].dtype, shape}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t half = in[0].shape().back() / 2;
        const int64_t batch = half == 0 ? 0 : out[0].numel() / half;
        (ctx.backend.Activation().*method)(out[0].data(), in[0].data(), batch, half, in[0].dtype());
      }};
}

OpImpl Tensors(TensorsMethod method) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectSameDType(attrs, in, {0, 1});
        return std::vector<TensorType>{{in[0].dtype, BroadcastShapes(attrs, in[0].shape, in[1].shape)}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor gate = Expand(in[0], out[0].shape());
        const Tensor up = Expand(in[1], out[0].shape());
        (ctx.backend.Activation().*method)(out[0].data(), gate.data(), up.data(), out[0].numel(),
                                           out[0].dtype());
      }};
}

// activation.prelu_channels: x [N, C, ...] (channels first, as torch PReLU) with slopes [C]
// (f32); lowered by moving the channel axis last, where the kernel broadcasts slopes.
OpImpl PReLUChannels() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        ExpectDType(attrs, in, 1, DTypeSet{DType::Float32});
        ExpectRank(attrs, in, 1, 1);
        const int64_t c = in[0].shape.size() >= 2 ? in[0].shape[1] : 1;
        if (in[1].shape[0] != 1 && in[1].shape[0] != c) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("slopes must have 1 or {} (channels) entries, got {}", c, in[1].shape[0]));
        }
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const int64_t slopes = in[1].numel();
        if (slopes == 1 || in[0].rank() < 2) {
          ctx.backend.Activation().PReLUV(out[0].data(), in[0].data(), in[1].data_as<float>(),
                                          in[0].numel(), in[0].dtype(), slopes);
          return;
        }
        const Tensor moved = MoveAxisToEnd(ctx.backend, in[0], 1);
        Tensor tmp(moved.dtype(), moved.shape());
        ctx.backend.Activation().PReLUV(tmp.data(), moved.data(), in[1].data_as<float>(),
                                        moved.numel(), moved.dtype(), slopes);
        const Tensor back = MoveAxisFromEnd(ctx.backend, tmp, 1);
        std::memcpy(out[0].data(), back.data(), back.nbytes());
      }};
}

}  // namespace

void RegisterActivationOps(OpRegistry& r) {
  using S = ActivationSurface;
  r.Add("activation.relu", Unary(&S::ReLU));
  r.Add("activation.gelu", Unary(&S::Gelu));
  r.Add("activation.tanh", Unary(&S::Tanh));
  r.Add("activation.sigmoid", Unary(&S::Sigmoid));
  r.Add("activation.swish", Unary(&S::Swish));
  r.Add("activation.selu", Unary(&S::SELU));
  r.Add("activation.swiglu", Packed(&S::SwiGLU));
  r.Add("math.exp", Unary(&S::Exp));
  r.Add("math.log", Unary(&S::Log));
  r.Add("math.softmax", RowWise(&MathExtSurface::SoftmaxRows, &S::Softmax));
  r.Add("activation.leaky_relu", LeakyReLU());

  r.Add("activation.log1p", Unary(&S::Log1p));
  r.Add("activation.expm1", Unary(&S::Expm1));
  r.Add("activation.log_sigmoid", Unary(&S::LogSigmoid));
  r.Add("activation.silu", Unary(&S::Silu));
  r.Add("activation.gelu_tanh", Unary(&S::GeluTanh));
  r.Add("activation.elu", Unary(&S::ELU));
  r.Add("activation.celu", Unary(&S::CELU));
  r.Add("activation.softplus", Unary(&S::Softplus));
  r.Add("activation.mish", Unary(&S::Mish));
  r.Add("activation.softsign", Unary(&S::Softsign));
  r.Add("activation.hard_sigmoid", Unary(&S::HardSigmoid));
  r.Add("activation.hard_swish", Unary(&S::HardSwish));
  r.Add("activation.hard_tanh", Unary(&S::HardTanh));
  r.Add("activation.hard_gelu", Unary(&S::HardGelu));
  r.Add("activation.quick_gelu", Unary(&S::QuickGelu));
  r.Add("activation.tanh_shrink", Unary(&S::TanhShrink));
  r.Add("activation.log_softmax", RowWise(&MathExtSurface::LogSoftmaxRows, &S::LogSoftmax));

  r.Add("activation.prelu", Param1(&S::PReLU, "slope"));
  r.Add("activation.leaky_relu_slope", Param1(&S::LeakyReLUSlope, "slope"));
  r.Add("activation.elu_alpha", Param1(&S::ELUAlpha, "alpha"));
  r.Add("activation.celu_alpha", Param1(&S::CELUAlpha, "alpha"));
  r.Add("activation.threshold", Param1(&S::Threshold, "threshold"));
  r.Add("activation.snake", Param1(&S::Snake, "alpha"));
  r.Add("activation.hard_shrink", Param1(&S::HardShrink, "lambda"));
  r.Add("activation.soft_shrink", Param1(&S::SoftShrink, "lambda"));
  r.Add("activation.hard_tanh_range", Param2(&S::HardTanhRange, "min", "max"));
  r.Add("activation.snake_beta", Param2(&S::SnakeParametric, "alpha", "beta"));
  r.Add("activation.rrelu", Param2(&S::RReLU, "lower", "upper"));
  r.Add("activation.prelu_channels", PReLUChannels());

  r.Add("activation.glu", Packed(&S::GLU));
  r.Add("activation.geglu", Packed(&S::GeGLU));
  r.Add("activation.geglu_tanh", Packed(&S::GeGLUTanh));
  r.Add("activation.reglu", Packed(&S::ReGLU));
  r.Add("activation.siglu", Packed(&S::SiGLU));
  r.Add("activation.linglu", Packed(&S::LinGLU));
  r.Add("activation.seglu", Packed(&S::SeGLU));
  r.Add("activation.glu_tensors", Tensors(&S::GLUTensors));
  r.Add("activation.geglu_tensors", Tensors(&S::GeGLUTensors));
  r.Add("activation.geglu_tanh_tensors", Tensors(&S::GeGLUTanhTensors));
  r.Add("activation.swiglu_tensors", Tensors(&S::SwiGLUTensors));
  r.Add("activation.reglu_tensors", Tensors(&S::ReGLUTensors));
  r.Add("activation.siglu_tensors", Tensors(&S::SiGLUTensors));
  r.Add("activation.linglu_tensors", Tensors(&S::LinGLUTensors));
  r.Add("activation.seglu_tensors", Tensors(&S::SeGLUTensors));
}

}  // namespace backplane::runtime::ops
