// Graph-level lowerings of tensor.topk, tensor.scatter_elements, tensor.scatter_nd and
// tensor.gather_nd onto the TensorOps index methods. Indices may be int64 or int32 (widened).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

constexpr DTypeSet kIndexDTypes{DType::Int64, DType::Int32};

struct Split3 {
  int64_t outer = 1, axis = 1, inner = 1;
};
Split3 SplitAt(const Shape& shape, int64_t axis) {
  const auto a = static_cast<size_t>(axis);
  return {Product(shape, 0, a), shape[a], Product(shape, a + 1, shape.size())};
}

Tensor WidenIndices(const Tensor& t) {
  if (t.dtype() == DType::Int64) return t;
  Tensor wide(DType::Int64, t.shape());
  const int32_t* src = t.data_as<int32_t>();
  int64_t* dst = wide.data_as<int64_t>();
  for (int64_t i = 0; i < wide.numel(); ++i) dst[i] = src[i];
  return wide;
}

ScatterReduction Reduction(const Attrs& attrs) {
  const std::string& r = attrs.String("reduction");
  if (r == "none") return ScatterReduction::None;
  if (r == "add") return ScatterReduction::Add;
  if (r == "mul") return ScatterReduction::Mul;
  attrs.Fail("reduction", "none, add or mul", r);
}

// tensor.topk: values (x's dtype) and int64 indices, x's shape with the axis cut to k.
OpImpl TopKOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kTensorDTypes);
        ExpectMinRank(attrs, in, 0, 1);
        Shape shape = in[0].shape;
        const int64_t axis = NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(shape.size()));
        const int64_t k = attrs.Int("k");
        const int64_t n = shape[static_cast<size_t>(axis)];
        if (k < 0 || k > n) attrs.Fail("k", fmt::format("in [0, {}] (the size of axis {})", n, axis), std::to_string(k));
        shape[static_cast<size_t>(axis)] = k;
        return std::vector<TensorType>{{in[0].dtype, shape}, {DType::Int64, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        const Split3 s = SplitAt(x.shape(), NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), x.rank()));
        const TopKConfig config{ctx.attrs.Bool("largest")};
        ctx.backend.TensorOps().TopK(config, x.data(), out[0].data(), out[1].data_as<int64_t>(), s.outer, s.axis,
                                     s.inner, ctx.attrs.Int("k"), x.dtype());
      }};
}

// tensor.scatter_elements: indices and updates of one shape, data's rank and its dims except on
// the axis; the output has data's type.
OpImpl ScatterElementsOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kTensorDTypes);
        ExpectDType(attrs, in, 1, kIndexDTypes);
        ExpectDType(attrs, in, 2, DTypeSet{in[0].dtype});
        ExpectMinRank(attrs, in, 0, 1);
        Reduction(attrs);
        const Shape& ds = in[0].shape;
        const Shape& is = in[1].shape;
        const int64_t axis = NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(ds.size()));
        bool ok = is.size() == ds.size() && in[2].shape == is;
        for (size_t d = 0; ok && d < ds.size(); ++d) ok = static_cast<int64_t>(d) == axis || is[d] == ds[d];
        if (!ok) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("indices {} and updates {} must have one shape, the rank of data {} and its dims "
                           "except on axis {}",
                           ShapeToString(is), ShapeToString(in[2].shape), ShapeToString(ds), axis));
        }
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& data = in[0];
        const int64_t axis = NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), data.rank());
        const Split3 s = SplitAt(data.shape(), axis);
        const Tensor idx = WidenIndices(in[1]);
        const ScatterConfig config{Reduction(ctx.attrs)};
        ctx.backend.TensorOps().ScatterElements(config, data.data(), idx.data_as<int64_t>(), in[2].data(),
                                                out[0].data(), s.outer, s.axis,
                                                in[1].shape()[static_cast<size_t>(axis)], s.inner, data.dtype());
      }};
}

// tensor.scatter_nd: indices [..., m] with m <= rank(data); updates indices.shape[:-1] + data.shape[m:].
OpImpl ScatterNDOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kTensorDTypes);
        ExpectDType(attrs, in, 1, kIndexDTypes);
        ExpectDType(attrs, in, 2, DTypeSet{in[0].dtype});
        ExpectMinRank(attrs, in, 0, 1);
        ExpectMinRank(attrs, in, 1, 1);
        Reduction(attrs);
        const Shape& ds = in[0].shape;
        const Shape& is = in[1].shape;
        const int64_t m = is.back();
        if (m < 1 || m > static_cast<int64_t>(ds.size())) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("the last dim of indices {} must be in [1, {}] (the rank of data {})", ShapeToString(is),
                           ds.size(), ShapeToString(ds)));
        }
        Shape want(is.begin(), is.end() - 1);
        want.insert(want.end(), ds.begin() + m, ds.end());
        if (in[2].shape != want) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("updates {} must have shape {} (indices {} over data {})", ShapeToString(in[2].shape),
                           ShapeToString(want), ShapeToString(is), ShapeToString(ds)));
        }
        return std::vector<TensorType>{in[0]};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& data = in[0];
        const Shape& is = in[1].shape();
        const Tensor idx = WidenIndices(in[1]);
        const ScatterConfig config{Reduction(ctx.attrs)};
        ctx.backend.TensorOps().ScatterND(config, data.data(), idx.data_as<int64_t>(), in[2].data(), out[0].data(),
                                          data.shape().data(), data.rank(), Product(is, 0, is.size() - 1),
                                          is.back(), data.dtype());
      }};
}

// tensor.gather_nd: x.shape[:b] == indices.shape[:b]; indices [..., m] with m <= rank(x) - b; the
// output is indices.shape[:-1] + x.shape[b + m:].
OpImpl GatherNDOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kTensorDTypesAndBool);
        ExpectDType(attrs, in, 1, kIndexDTypes);
        ExpectMinRank(attrs, in, 0, 1);
        ExpectMinRank(attrs, in, 1, 1);
        const Shape& xs = in[0].shape;
        const Shape& is = in[1].shape;
        const int64_t b = attrs.Int("batch_dims");
        const auto r = static_cast<int64_t>(xs.size()), q = static_cast<int64_t>(is.size());
        if (b < 0 || b >= std::min(r, q)) {
          attrs.Fail("batch_dims", fmt::format("in [0, {}) (the smaller rank of x and indices)", std::min(r, q)),
                     std::to_string(b));
        }
        bool ok = true;
        for (int64_t d = 0; d < b; ++d) ok = ok && xs[static_cast<size_t>(d)] == is[static_cast<size_t>(d)];
        const int64_t m = is.back();
        if (!ok || m < 1 || m > r - b) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("indices {} must share the first {} dims of x {} and end in a dim in [1, {}]",
                           ShapeToString(is), b, ShapeToString(xs), r - b));
        }
        Shape out(is.begin(), is.end() - 1);
        out.insert(out.end(), xs.begin() + b + m, xs.end());
        return std::vector<TensorType>{{in[0].dtype, out}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        const Shape& xs = x.shape();
        const Shape& is = in[1].shape();
        const auto b = static_cast<size_t>(ctx.attrs.Int("batch_dims"));
        const Tensor idx = WidenIndices(in[1]);
        ctx.backend.TensorOps().GatherND(x.data(), idx.data_as<int64_t>(), out[0].data(), xs.data() + b,
                                         static_cast<int64_t>(xs.size() - b), Product(xs, 0, b),
                                         Product(is, b, is.size() - 1), is.back(), x.dtype());
      }};
}

}  // namespace

void RegisterTensorIndexOps(OpRegistry& r) {
  r.Add("tensor.topk", TopKOp());
  r.Add("tensor.scatter_elements", ScatterElementsOp());
  r.Add("tensor.scatter_nd", ScatterNDOp());
  r.Add("tensor.gather_nd", GatherNDOp());
}

}  // namespace backplane::runtime::ops
