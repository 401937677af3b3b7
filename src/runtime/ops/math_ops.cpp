// Graph-level lowerings of math.*, reduction.* and elementwise.*: broadcasting binary ops,
// elementwise unary ops, NumPy matmul, products, axis reductions, dropout and the norms.
// (math.exp, math.log and math.softmax live in activation_ops.cpp.)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

using BinaryMethod = void (ElementwiseSurface::*)(BP_PARAMS_Binary);
using UnaryMethod = void (ElementwiseSurface::*)(BP_PARAMS_Unary);
using MathExtUnaryMethod = void (MathExtSurface::*)(BP_PARAMS_Unary);
using ReduceMethod = double (ReductionSurface::*)(BP_PARAMS_Reduce);

// Pointer to element `index` of a dense float tensor.
const char* At(const Tensor& t, int64_t index) {
  return static_cast<const char*>(t.data()) + DTypeStorageBytes(t.dtype(), index);
}
char* At(Tensor& t, int64_t index) {
  return static_cast<char*>(t.data()) + DTypeStorageBytes(t.dtype(), index);
}

// Data of optional input `index`, or null when it was omitted.
const void* Optional(std::span<const Tensor> in, size_t index) {
  return index < in.size() && in[index].defined() ? in[index].data() : nullptr;
}

// ---- elementwise -----------------------------------------------------------------------------------
OpImpl Binary(BinaryMethod method) {
  return BinaryOpImpl([method](Backend& b, void* dst, const void* l, const void* r, int64_t n, DType d) {
    (b.Elementwise().*method)(dst, l, r, n, d);
  });
}

OpImpl Unary(UnaryMethod method) {
  return UnaryOpImpl([method](Backend& b, void* dst, const void* src, int64_t n, DType d) {
    (b.Elementwise().*method)(dst, src, n, d);
  });
}

OpImpl MathExtUnary(MathExtUnaryMethod method) {
  return UnaryOpImpl([method](Backend& b, void* dst, const void* src, int64_t n, DType d) {
    (b.MathExt().*method)(dst, src, n, d);
  });
}

// math.axpy: y + alpha x, x broadcast to y's shape (the output has y's shape).
OpImpl Axpy() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kFloatDTypes);
                  ExpectSameDType(attrs, in, {0, 1});
                  if (BroadcastShapes(attrs, in[0].shape, in[1].shape) != in[0].shape) {
                    Fail(attrs, ErrorCode::ShapeMismatch,
                         fmt::format("x {} does not broadcast to y's shape {}", ShapeToString(in[1].shape),
                                     ShapeToString(in[0].shape)));
                  }
                  const double alpha = attrs.Float("alpha");
                  if (!std::isfinite(static_cast<float>(alpha))) {
                    attrs.Fail("alpha", "finite in f32", fmt::format("{}", alpha));
                  }
                  return std::vector<TensorType>{in[0]};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  std::memcpy(out[0].data(), in[0].data(), in[0].nbytes());
                  const Tensor x = Expand(in[1], out[0].shape());
                  ctx.backend.Elementwise().Axpy(out[0].data(), x.data(), out[0].numel(),
                                                 static_cast<float>(ctx.attrs.Float("alpha")),
                                                 out[0].dtype());
                }};
}

// ---- matmul, outer, dot ----------------------------------------------------------------------------
// numpy.matmul shapes: a [..., M, K] @ b [..., K, N], batch dimensions broadcast. A 1-D operand acts
// as [1, K] (left) or [K, 1] (right), and that dimension is dropped from the result.
struct MatmulDims {
  Shape batch_a, batch_b, batch;
  int64_t m = 1, k = 1, n = 1;
  Shape out;
};

MatmulDims MatmulShapes(const Attrs& attrs, const Shape& a, const Shape& b) {
  MatmulDims d;
  d.batch_a = a.size() > 2 ? Shape(a.begin(), a.end() - 2) : Shape{};
  d.batch_b = b.size() > 2 ? Shape(b.begin(), b.end() - 2) : Shape{};
  d.m = a.size() >= 2 ? a[a.size() - 2] : 1;
  d.k = a.back();
  const int64_t kb = b.size() >= 2 ? b[b.size() - 2] : b[0];
  d.n = b.size() >= 2 ? b.back() : 1;
  if (d.k != kb) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("inner dimensions differ: {} @ {} ({} vs {})", ShapeToString(a), ShapeToString(b), d.k,
                     kb));
  }
  d.batch = BroadcastShapes(attrs, d.batch_a, d.batch_b);
  d.out = d.batch;
  if (a.size() >= 2) d.out.push_back(d.m);
  if (b.size() >= 2) d.out.push_back(d.n);
  return d;
}

// Flat index into a batch of shape `from` (right-aligned to `to`, size-1 dimensions broadcast) of
// the batch element at flat index `i` of `to`.
int64_t BroadcastIndex(int64_t i, const Shape& to, const Shape& from) {
  const size_t offset = to.size() - from.size();
  int64_t index = 0;
  int64_t stride = 1;
  for (size_t d = to.size(); d-- > offset;) {
    const int64_t coord = i % to[d];
    i /= to[d];
    if (from[d - offset] != 1) index += coord * stride;
    stride *= from[d - offset];
  }
  return index;
}

std::vector<TensorType> MatmulInfer(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectSameDType(attrs, in, {0, 1});
  ExpectMinRank(attrs, in, 0, 1);
  ExpectMinRank(attrs, in, 1, 1);
  return {{in[0].dtype, MatmulShapes(attrs, in[0].shape, in[1].shape).out}};
}

// One Matmul call per batch element; a single call when b is one matrix shared by an unbroadcast a.
void MatmulRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const MatmulDims d = MatmulShapes(ctx.attrs, in[0].shape(), in[1].shape());
  const int64_t batch = NumElements(d.batch);
  const DType dtype = in[0].dtype();
  MatmulSurface& mm = ctx.backend.Matmul();
  if (NumElements(d.batch_b) == 1 && NumElements(d.batch_a) == batch) {
    mm.Matmul(out[0].data(), in[0].data(), in[1].data(), batch * d.m, d.k, d.n, dtype);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t ia = BroadcastIndex(i, d.batch, d.batch_a);
    const int64_t ib = BroadcastIndex(i, d.batch, d.batch_b);
    mm.Matmul(At(out[0], i * d.m * d.n), At(in[0], ia * d.m * d.k), At(in[1], ib * d.k * d.n), d.m, d.k, d.n,
              dtype);
  }
}

// math.outer: a [M], b [N] -> [M, N].
OpImpl Outer() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kFloatDTypes);
                  ExpectSameDType(attrs, in, {0, 1});
                  ExpectRank(attrs, in, 0, 1);
                  ExpectRank(attrs, in, 1, 1);
                  return std::vector<TensorType>{{in[0].dtype, {in[0].shape[0], in[1].shape[0]}}};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  ctx.backend.MathExt().Outer(in[0].data(), in[1].data(), out[0].data(), in[0].numel(),
                                              in[1].numel(), in[0].dtype());
                }};
}

// math.dot: 1-D a, b of equal length -> a scalar (shape []). Float inputs give their own dtype;
// i8 inputs give i64, which holds the kernel's exact integer total.
OpImpl Dot() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  const DType d = ExpectDType(attrs, in, 0, kFloatDTypes | DTypeSet{DType::Int8});
                  ExpectSameDType(attrs, in, {0, 1});
                  ExpectRank(attrs, in, 0, 1);
                  ExpectShape(attrs, in, 1, in[0].shape);
                  return std::vector<TensorType>{{d == DType::Int8 ? DType::Int64 : d, {}}};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  out[0].SetDouble(
                      0, ctx.backend.Dot().Dot(in[0].data(), in[1].data(), in[0].numel(), in[0].dtype()));
                }};
}

// ---- axis ops -------------------------------------------------------------------------------------
// math.logsumexp over attribute "axis": the output drops that axis (an empty axis gives -Inf).
OpImpl LogSumExp() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kFloatDTypes);
                  ExpectMinRank(attrs, in, 0, 1);
                  Shape shape = in[0].shape;
                  const int64_t axis =
                      NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(shape.size()));
                  shape.erase(shape.begin() + axis);
                  return std::vector<TensorType>{{in[0].dtype, shape}};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const int64_t axis = NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), in[0].rank());
                  const Tensor moved = MoveAxisToEnd(ctx.backend, in[0], axis);
                  ctx.backend.MathExt().LogSumExp(moved.data(), out[0].data(), out[0].numel(),
                                                  moved.shape().back(), moved.dtype());
                }};
}

// Effective dim of math.inv_sqrt_dim_scale: the attribute, or the last axis size when it is 0.
int64_t ScaleDim(const Attrs& attrs, const Shape& shape) {
  const int64_t dim = attrs.Int("dim");
  if (dim < 0) attrs.Fail("dim", ">= 0 (0: the last axis size)", std::to_string(dim));
  if (dim > 0) return dim;
  if (shape.empty() || shape.back() == 0) {
    attrs.Fail("dim",
               fmt::format("> 0 when the input's last axis is empty or absent ({})", ShapeToString(shape)),
               "0");
  }
  return shape.back();
}

OpImpl InvSqrtDimScale() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kFloatDTypes);
                  ScaleDim(attrs, in[0].shape);
                  return std::vector<TensorType>{in[0]};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  ctx.backend.MathExt().InvSqrtDimScale(out[0].data(), in[0].data(), in[0].numel(),
                                                        ScaleDim(ctx.attrs, in[0].shape()), in[0].dtype());
                }};
}

// ---- dropout --------------------------------------------------------------------------------------
// math.dropout: training false or p == 0 copies x. Otherwise call c of this node (c = 0, 1, ...,
// counting only masked calls, kept in the node state as "calls") uses the seed
// seed + 0x9E3779B97F4A7C15 * c (mod 2^64), so successive runs draw different masks.
constexpr uint64_t kSeedStep = 0x9E3779B97F4A7C15ULL;

OpImpl Dropout() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  const double p = attrs.Float("p");
                  if (!(p >= 0.0 && p <= 1.0)) attrs.Fail("p", "in [0, 1]", fmt::format("{}", p));
                  return SameAsInput0(in, attrs, kFloatDTypes);
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const double p = ctx.attrs.Float("p");
                  if (!ctx.attrs.Bool("training") || p == 0.0) {
                    std::memcpy(out[0].data(), in[0].data(), in[0].nbytes());
                    return;
                  }
                  double& calls = ctx.state.scalars["calls"];
                  const uint64_t seed =
                      static_cast<uint64_t>(ctx.attrs.Int("seed")) + kSeedStep * static_cast<uint64_t>(calls);
                  calls += 1;
                  const DropoutConfig config{static_cast<float>(p), seed};
                  ctx.backend.Dropout().Dropout(out[0].data(), in[0].data(), in[0].numel(), config,
                                                in[0].dtype());
                }};
}

// ---- norms ----------------------------------------------------------------------------------------
// The Backend's norms have a fixed eps; the attribute must name that value (relative 1e-7, so the
// f32 spelling of the constant is accepted too).
void ExpectFixedEps(const Attrs& attrs, double fixed) {
  const double eps = attrs.Float("eps");
  if (!(std::fabs(eps - fixed) <= 1e-7 * fixed)) {
    attrs.Fail("eps", fmt::format("{} (fixed by the Backend method)", fixed), fmt::format("{}", eps));
  }
}

// Last-axis norms: x [..., d]; inputs 1.. (gamma, beta) are [d].
// eps < 0: any finite eps >= 0 (the Backend method takes it); otherwise the fixed value.
std::vector<TensorType> LastAxisNormInfer(std::span<const TensorType> in, const Attrs& attrs, double eps) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectMinRank(attrs, in, 0, 1);
  for (size_t i = 1; i < in.size(); ++i) {
    ExpectSameDType(attrs, in, {0, i});
    ExpectShape(attrs, in, i, {in[0].shape.back()});
  }
  if (eps >= 0) {
    ExpectFixedEps(attrs, eps);
  } else if (const double e = attrs.Float("eps"); !(std::isfinite(e) && e >= 0)) {
    attrs.Fail("eps", "finite and >= 0", fmt::format("{}", e));
  }
  return {in[0]};
}

int64_t Rows(const Tensor& x) {
  const int64_t d = x.shape().back();
  return d == 0 ? 0 : x.numel() / d;
}

// eps 1e-6 runs LayerNorm.RMSNorm (the seed's fixed-eps method), any other eps RMSNormEps.
OpImpl RMSNorm() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) { return LastAxisNormInfer(in, attrs, -1); },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const double eps = ctx.attrs.Float("eps");
        if (eps == 1e-6) {
          ctx.backend.LayerNorm().RMSNorm(in[0].data(), in[1].data(), out[0].data(), Rows(in[0]),
                                          in[0].shape().back(), in[0].dtype());
        } else {
          ctx.backend.MathExt().RMSNormEps(in[0].data(), in[1].data(), out[0].data(), Rows(in[0]),
                                             in[0].shape().back(), eps, in[0].dtype());
        }
      }};
}

// eps 1e-5 runs LayerNorm.LayerNorm (the seed's fixed-eps method), any other eps LayerNormEps.
OpImpl LayerNorm() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) { return LastAxisNormInfer(in, attrs, -1); },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const double eps = ctx.attrs.Float("eps");
        if (eps == 1e-5) {
          ctx.backend.LayerNorm().LayerNorm(in[0].data(), in[1].data(), in[2].data(), out[0].data(),
                                            Rows(in[0]), in[0].shape().back(), in[0].dtype());
        } else {
          ctx.backend.MathExt().LayerNormEps(in[0].data(), in[1].data(), in[2].data(), out[0].data(),
                                             Rows(in[0]), in[0].shape().back(), eps, in[0].dtype());
        }
      }};
}

// Channel norms: x [B, C, spatial...]; every other given input is a per-channel vector [C]; any
// finite eps >= 0 (the MathExt *Eps methods take it).
std::vector<TensorType> ChannelNormInfer(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectMinRank(attrs, in, 0, 2);
  for (size_t i = 1; i < in.size(); ++i) {
    if (!Present(in, i)) continue;
    ExpectSameDType(attrs, in, {0, i});
    ExpectShape(attrs, in, i, {in[0].shape[1]});
  }
  if (const double e = attrs.Float("eps"); !(std::isfinite(e) && e >= 0)) {
    attrs.Fail("eps", "finite and >= 0", fmt::format("{}", e));
  }
  return {in[0]};
}

struct ChannelDims {
  int64_t batch, channels, spatial;
};
ChannelDims Channels(const Tensor& x) {
  return {x.shape()[0], x.shape()[1], Product(x.shape(), 2, x.shape().size())};
}

// eps 1e-5 runs Normalization.GroupNorm (the seed's fixed-eps method), any other eps GroupNormEps.
OpImpl GroupNorm() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  auto out = ChannelNormInfer(in, attrs);
                  const int64_t groups = attrs.Int("groups");
                  const int64_t channels = in[0].shape[1];
                  if (groups <= 0 || channels % groups != 0) {
                    attrs.Fail("groups", fmt::format("a positive divisor of the channel count {}", channels),
                               std::to_string(groups));
                  }
                  return out;
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const ChannelDims c = Channels(in[0]);
                  const GroupNormConfig config{ctx.attrs.Int("groups")};
                  const double eps = ctx.attrs.Float("eps");
                  if (eps == 1e-5) {
                    ctx.backend.Normalization().GroupNorm(config, in[0].data(), in[1].data(), in[2].data(),
                                                          out[0].data(), c.batch, c.channels, c.spatial,
                                                          in[0].dtype());
                  } else {
                    ctx.backend.MathExt().GroupNormEps(config, in[0].data(), in[1].data(), in[2].data(),
                                                       out[0].data(), c.batch, c.channels, c.spatial, eps,
                                                       in[0].dtype());
                  }
                }};
}

// eps 1e-5 runs Normalization.InstanceNorm (the seed's fixed-eps method), any other eps InstanceNormEps.
OpImpl InstanceNorm() {
  return OpImpl{ChannelNormInfer, [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const ChannelDims c = Channels(in[0]);
                  const double eps = ctx.attrs.Float("eps");
                  if (eps == 1e-5) {
                    ctx.backend.Normalization().InstanceNorm(in[0].data(), Optional(in, 1), Optional(in, 2),
                                                             out[0].data(), c.batch, c.channels, c.spatial,
                                                             in[0].dtype());
                  } else {
                    ctx.backend.MathExt().InstanceNormEps(in[0].data(), Optional(in, 1), Optional(in, 2),
                                                          out[0].data(), c.batch, c.channels, c.spatial, eps,
                                                          in[0].dtype());
                  }
                }};
}

// eps 1e-5 runs Normalization.BatchNormEval (the seed's fixed-eps method), any other eps
// BatchNormEvalEps.
OpImpl BatchNorm() {
  return OpImpl{ChannelNormInfer, [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const ChannelDims c = Channels(in[0]);
                  const double eps = ctx.attrs.Float("eps");
                  if (eps == 1e-5) {
                    ctx.backend.Normalization().BatchNormEval(in[0].data(), Optional(in, 1), Optional(in, 2),
                                                              in[3].data(), in[4].data(), out[0].data(),
                                                              c.batch, c.channels, c.spatial, in[0].dtype());
                  } else {
                    ctx.backend.MathExt().BatchNormEvalEps(in[0].data(), Optional(in, 1), Optional(in, 2),
                                                           in[3].data(), in[4].data(), out[0].data(), c.batch,
                                                           c.channels, c.spatial, eps, in[0].dtype());
                  }
                }};
}

// ---- reductions -----------------------------------------------------------------------------------
// Attribute "axis" ([] = every axis), normalised and sorted; out-of-range and repeated axes throw.
std::vector<int64_t> ReducedAxes(const Attrs& attrs, int64_t rank) {
  std::vector<int64_t> axes = attrs.Ints("axis");
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    return axes;
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank)
      attrs.Fail("axis", fmt::format("axes in [{}, {})", -rank, rank), std::to_string(a));
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    attrs.Fail("axis", "distinct axes", ir::AttrToString(attrs.Ints("axis")));
  }
  return axes;
}

// Axes kept (in order) followed by the reduced ones (in order).
std::vector<int64_t> KeptThenReduced(int64_t rank, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) {
    if (!std::binary_search(reduced.begin(), reduced.end(), i)) perm.push_back(i);
  }
  perm.insert(perm.end(), reduced.begin(), reduced.end());
  return perm;
}

// Reductions over attribute "axis"; `needs_elements`: an empty reduction has no value (min, max).
OpImpl Reduce(ReduceMethod method, bool needs_elements) {
  return OpImpl{
      [needs_elements](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);
        const Shape& shape = in[0].shape;
        const auto reduced = ReducedAxes(attrs, static_cast<int64_t>(shape.size()));
        Shape out;
        int64_t count = 1;
        for (size_t i = 0; i < shape.size(); ++i) {
          if (std::binary_search(reduced.begin(), reduced.end(), static_cast<int64_t>(i))) {
            count *= shape[i];
          } else {
            out.push_back(shape[i]);
          }
        }
        if (needs_elements && count == 0 && NumElements(out) > 0) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("reduces {} over empty axes; the result is undefined", ShapeToString(shape)));
        }
        return std::vector<TensorType>{{in[0].dtype, out}};
      },
      [method](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        const auto perm = KeptThenReduced(x.rank(), ReducedAxes(ctx.attrs, x.rank()));
        Tensor moved = x;
        if (!std::is_sorted(perm.begin(), perm.end())) {
          Shape shape;
          for (int64_t p : perm) shape.push_back(x.shape()[static_cast<size_t>(p)]);
          moved = Tensor(x.dtype(), shape);
          ctx.backend.Shape().Transpose(x.data(), moved.data(), x.shape().data(), x.rank(), perm.data(),
                                        x.dtype());
        }
        const int64_t outputs = out[0].numel();
        const int64_t count = outputs == 0 ? 0 : x.numel() / outputs;
        for (int64_t o = 0; o < outputs; ++o) {
          out[0].SetDouble(o, (ctx.backend.Reduction().*method)(At(moved, o * count), count, x.dtype()));
        }
      }};
}

}  // namespace

void RegisterMathOps(OpRegistry& r) {
  using E = ElementwiseSurface;
  using M = MathExtSurface;
  using R = ReductionSurface;
  r.Add("math.add", Binary(&E::Add));
  r.Add("math.sub", Binary(&E::Sub));
  r.Add("math.mul", Binary(&E::Mul));
  r.Add("math.div", Binary(&E::Div));
  r.Add("math.maximum", Binary(&E::Max));
  r.Add("math.minimum", Binary(&E::Min));
  r.Add("math.abs", Unary(&E::Abs));
  r.Add("math.neg", Unary(&E::Neg));
  r.Add("math.sqrt", Unary(&E::Sqrt));
  r.Add("elementwise.relu", Unary(&E::ReLU));
  r.Add("math.axpy", Axpy());
  r.Add("math.sin", MathExtUnary(&M::Sin));
  r.Add("math.cos", MathExtUnary(&M::Cos));
  r.Add("math.sign", MathExtUnary(&M::Sign));

  r.Add("math.matmul", OpImpl{MatmulInfer, MatmulRun});
  r.Add("math.outer", Outer());
  r.Add("math.dot", Dot());
  r.Add("math.logsumexp", LogSumExp());
  r.Add("math.inv_sqrt_dim_scale", InvSqrtDimScale());
  r.Add("math.dropout", Dropout());

  r.Add("math.rmsnorm", RMSNorm());
  r.Add("math.layernorm", LayerNorm());
  r.Add("math.groupnorm", GroupNorm());
  r.Add("math.instancenorm", InstanceNorm());
  r.Add("math.batchnorm", BatchNorm());

  r.Add("reduction.sum", Reduce(&R::Sum, false));
  r.Add("reduction.prod", Reduce(&R::Prod, false));
  r.Add("reduction.min", Reduce(&R::ReduceMin, true));
  r.Add("reduction.max", Reduce(&R::ReduceMax, true));
  r.Add("reduction.l1_norm", Reduce(&R::L1Norm, false));
}

}  // namespace backplane::runtime::ops
