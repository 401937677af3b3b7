// Graph-level lowerings of the TensorOps elementwise half: comparisons and logic (bool outputs),
// tensor.where (three-way broadcast), tensor.cast, tensor.pow, tensor.mod, the roundings,
// math.erf, the Trig functions (math.tan ... math.atanh) and tensor.bitshift_left/right. Binary ops and Where broadcast as NumPy; bool tensors are bit-packed.
#include <fmt/format.h>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

// a, b of one dtype in `allowed`, broadcast; the output has dtype `out` (Invalid: the inputs').
std::vector<TensorType> BinaryInfer(std::span<const TensorType> in, const Attrs& attrs, DTypeSet allowed,
                                    DType out) {
  const DType d = ExpectDType(attrs, in, 0, allowed);
  ExpectDType(attrs, in, 1, allowed);
  ExpectSameDType(attrs, in, {0, 1});
  return {{out == DType::Invalid ? d : out, BroadcastShapes(attrs, in[0].shape, in[1].shape)}};
}

// Runs kernel(a, b, out, count, dtype) on the inputs broadcast to the output's shape.
template <class Kernel>
OpImpl Binary(DTypeSet allowed, DType out, Kernel kernel) {
  return OpImpl{[allowed, out](std::span<const TensorType> in, const Attrs& attrs) {
                  return BinaryInfer(in, attrs, allowed, out);
                },
                [kernel](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> outs) {
                  const Tensor a = Expand(in[0], outs[0].shape());
                  const Tensor b = Expand(in[1], outs[0].shape());
                  kernel(ctx, a.data(), b.data(), outs[0].data(), outs[0].numel(), in[0].dtype());
                }};
}

OpImpl Compare(CompareOp op) {
  return Binary(kTensorDTypesAndBool, DType::Bool,
                [op](OpContext& ctx, const void* a, const void* b, void* out, int64_t n, DType d) {
                  ctx.backend.TensorOps().Compare(CompareConfig{op}, a, b, out, n, d);
                });
}

OpImpl Logical(LogicalOp op) {
  return Binary(DTypeSet{DType::Bool}, DType::Bool,
                [op](OpContext& ctx, const void* a, const void* b, void* out, int64_t n, DType d) {
                  ctx.backend.TensorOps().Logical(LogicalConfig{op}, a, b, out, n, d);
                });
}

OpImpl LogicalNot() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  return SameAsInput0(in, attrs, DTypeSet{DType::Bool});
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  ctx.backend.TensorOps().Logical(LogicalConfig{LogicalOp::Not}, in[0].data(), nullptr,
                                                  out[0].data(), in[0].numel(), DType::Bool);
                }};
}

// tensor.where: cond (bool), a, b (one dtype) broadcast together.
OpImpl Where() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, DTypeSet{DType::Bool});
                  const DType d = ExpectDType(attrs, in, 1, kTensorDTypesAndBool);
                  ExpectDType(attrs, in, 2, kTensorDTypesAndBool);
                  ExpectSameDType(attrs, in, {1, 2});
                  const Shape ab = BroadcastShapes(attrs, in[1].shape, in[2].shape);
                  return std::vector<TensorType>{{d, BroadcastShapes(attrs, in[0].shape, ab)}};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const Shape& shape = out[0].shape();
                  const Tensor c = Expand(in[0], shape), a = Expand(in[1], shape), b = Expand(in[2], shape);
                  ctx.backend.TensorOps().Where(c.data(), a.data(), b.data(), out[0].data(), out[0].numel(),
                                                out[0].dtype());
                }};
}

// Attribute "to" as a dtype of the Cast method.
DType CastTarget(const Attrs& attrs) {
  const std::string& name = attrs.String("to");
  const auto d = DTypeFromName(name);
  if (!d || !kTensorDTypesAndBool.Contains(*d)) {
    attrs.Fail("to", fmt::format("one of {}", DTypeSetToString(kTensorDTypesAndBool)), "'" + name + "'");
  }
  return *d;
}

OpImpl Cast() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kTensorDTypesAndBool);
                  return std::vector<TensorType>{{CastTarget(attrs), in[0].shape}};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  ctx.backend.TensorOps().Cast(in[0].data(), in[0].dtype(), out[0].data(), out[0].dtype(),
                                               in[0].numel());
                }};
}

OpImpl Pow() {
  return Binary(kFloatDTypes, DType::Invalid,
                [](OpContext& ctx, const void* a, const void* b, void* out, int64_t n, DType d) {
                  ctx.backend.TensorOps().Pow(a, b, out, n, d);
                });
}

OpImpl Mod() {
  return Binary(kTensorDTypes, DType::Invalid,
                [](OpContext& ctx, const void* a, const void* b, void* out, int64_t n, DType d) {
                  ctx.backend.TensorOps().Mod(ModConfig{ctx.attrs.Bool("fmod")}, a, b, out, n, d);
                });
}

OpImpl Round(RoundOp op) {
  return UnaryOpImpl([op](Backend& b, void* dst, const void* src, int64_t n,
                          DType d) { b.TensorOps().Round(RoundConfig{op}, src, dst, n, d); },
                     kFloatDTypes);
}

OpImpl Trig(TrigOp op) {
  return UnaryOpImpl([op](Backend& b, void* dst, const void* src, int64_t n,
                          DType d) { b.TensorOps().Trig(TrigConfig{op}, src, dst, n, d); },
                     kFloatDTypes);
}

OpImpl BitShift(bool left) {
  return Binary(kIntegerDTypes, DType::Invalid,
                [left](OpContext& ctx, const void* a, const void* b, void* out, int64_t n, DType d) {
                  ctx.backend.TensorOps().BitShift(BitShiftConfig{left}, a, b, out, n, d);
                });
}

}  // namespace

void RegisterTensorElementwiseOps(OpRegistry& r) {
  r.Add("tensor.equal", Compare(CompareOp::Equal));
  r.Add("tensor.not_equal", Compare(CompareOp::NotEqual));
  r.Add("tensor.less", Compare(CompareOp::Less));
  r.Add("tensor.less_equal", Compare(CompareOp::LessEqual));
  r.Add("tensor.greater", Compare(CompareOp::Greater));
  r.Add("tensor.greater_equal", Compare(CompareOp::GreaterEqual));
  r.Add("tensor.logical_and", Logical(LogicalOp::And));
  r.Add("tensor.logical_or", Logical(LogicalOp::Or));
  r.Add("tensor.logical_xor", Logical(LogicalOp::Xor));
  r.Add("tensor.logical_not", LogicalNot());
  r.Add("tensor.where", Where());
  r.Add("tensor.cast", Cast());
  r.Add("tensor.pow", Pow());
  r.Add("tensor.mod", Mod());
  r.Add("tensor.floor", Round(RoundOp::Floor));
  r.Add("tensor.ceil", Round(RoundOp::Ceil));
  r.Add("tensor.round", Round(RoundOp::HalfToEven));
  r.Add("tensor.trunc", Round(RoundOp::Trunc));
  r.Add("math.erf", Round(RoundOp::Erf));
  r.Add("math.tan", Trig(TrigOp::Tan));
  r.Add("math.asin", Trig(TrigOp::Asin));
  r.Add("math.acos", Trig(TrigOp::Acos));
  r.Add("math.atan", Trig(TrigOp::Atan));
  r.Add("math.sinh", Trig(TrigOp::Sinh));
  r.Add("math.cosh", Trig(TrigOp::Cosh));
  r.Add("math.asinh", Trig(TrigOp::Asinh));
  r.Add("math.acosh", Trig(TrigOp::Acosh));
  r.Add("math.atanh", Trig(TrigOp::Atanh));
  r.Add("tensor.bitshift_left", BitShift(true));
  r.Add("tensor.bitshift_right", BitShift(false));
}

}  // namespace backplane::runtime::ops
