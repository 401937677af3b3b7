// Graph-level lowerings of tensor.argmax/argmin, tensor.cumsum, tensor.triu/tril and
// tensor.gather_elements onto the TensorOps axis methods: the shape is split into
// [outer, axis, inner] around the (normalised) axis; a rank-0 tensor counts as [1].
#include <fmt/format.h>

#include <vector>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

// The [outer, axis, inner] split of `shape` around axis `axis` (already normalised).
struct Split3 {
  int64_t outer = 1, axis = 1, inner = 1;
};
Split3 SplitAt(const Shape& shape, int64_t axis) {
  if (shape.empty()) return {};
  const auto a = static_cast<size_t>(axis);
  return {Product(shape, 0, a), shape[a], Product(shape, a + 1, shape.size())};
}

// tensor.argmax / tensor.argmin: int64 indices; keepdims leaves the axis with size 1.
OpImpl ArgReduceOp(bool max) {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kTensorDTypes);
        const Shape& shape = in[0].shape;
        const auto rank = static_cast<int64_t>(shape.size());
        const int64_t axis = NormalizeAxis(attrs, "axis", attrs.Int("axis"), rank);
        if (rank > 0 && shape[static_cast<size_t>(axis)] == 0) {
          attrs.Fail("axis", "an axis of size > 0 (argmax/argmin of nothing)",
                     fmt::format("{} of {}", attrs.Int("axis"), ShapeToString(shape)));
        }
        Shape out;
        for (int64_t d = 0; d < rank; ++d) {
          if (d != axis) {
            out.push_back(shape[static_cast<size_t>(d)]);
          } else if (attrs.Bool("keepdims")) {
            out.push_back(1);
          }
        }
        return std::vector<TensorType>{{DType::Int64, out}};
      },
      [max](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        const Split3 s = SplitAt(x.shape(), NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), x.rank()));
        if (s.outer * s.inner == 0) return;
        const ArgReduceConfig config{max, ctx.attrs.Bool("select_last_index")};
        ctx.backend.TensorOps().ArgReduce(config, x.data(), out[0].data_as<int64_t>(), s.outer, s.axis, s.inner,
                                          x.dtype());
      }};
}

OpImpl CumSumOp() {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kTensorDTypes);
                  NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(in[0].shape.size()));
                  return std::vector<TensorType>{in[0]};
                },
                [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const Tensor& x = in[0];
                  const Split3 s =
                      SplitAt(x.shape(), NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), x.rank()));
                  const CumSumConfig config{ctx.attrs.Bool("exclusive"), ctx.attrs.Bool("reverse")};
                  ctx.backend.TensorOps().CumSum(config, x.data(), out[0].data(), s.outer, s.axis, s.inner,
                                                 x.dtype());
                }};
}

// tensor.triu / tensor.tril over the last two axes, batched over the leading ones.
OpImpl TriluOp(bool upper) {
  return OpImpl{[](std::span<const TensorType> in, const Attrs& attrs) {
                  ExpectDType(attrs, in, 0, kTensorDTypesAndBool);
                  ExpectMinRank(attrs, in, 0, 2);
                  return std::vector<TensorType>{in[0]};
                },
                [upper](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const Tensor& x = in[0];
                  const Shape& shape = x.shape();
                  const size_t r = shape.size();
                  const TriluConfig config{upper, ctx.attrs.Int("k")};
                  ctx.backend.TensorOps().Trilu(config, x.data(), out[0].data(), Product(shape, 0, r - 2),
                                                shape[r - 2], shape[r - 1], x.dtype());
                }};
}

// tensor.gather_elements: indices (int64, or int32 widened) of x's rank whose dims equal x's
// except on the axis; the output has the indices' shape.
OpImpl GatherElementsOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kTensorDTypesAndBool);
        ExpectDType(attrs, in, 1, DTypeSet{DType::Int64, DType::Int32});
        ExpectMinRank(attrs, in, 0, 1);
        const Shape& xs = in[0].shape;
        const Shape& is = in[1].shape;
        const auto rank = static_cast<int64_t>(xs.size());
        const int64_t axis = NormalizeAxis(attrs, "axis", attrs.Int("axis"), rank);
        bool ok = is.size() == xs.size();
        for (size_t d = 0; ok && d < xs.size(); ++d) ok = static_cast<int64_t>(d) == axis || is[d] == xs[d];
        if (!ok) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("indices {} must have the rank of x {} and its dims except on axis {}",
                           ShapeToString(is), ShapeToString(xs), axis));
        }
        return std::vector<TensorType>{{in[0].dtype, is}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        const int64_t axis = NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), x.rank());
        const Split3 s = SplitAt(x.shape(), axis);
        Tensor wide = in[1];
        if (wide.dtype() == DType::Int32) {
          wide = Tensor(DType::Int64, in[1].shape());
          const int32_t* src = in[1].data_as<int32_t>();
          int64_t* dst = wide.data_as<int64_t>();
          for (int64_t i = 0; i < wide.numel(); ++i) dst[i] = src[i];
        }
        ctx.backend.TensorOps().GatherElements(x.data(), wide.data_as<int64_t>(), out[0].data(), s.outer, s.axis,
                                               in[1].shape()[static_cast<size_t>(axis)], s.inner, x.dtype());
      }};
}

}  // namespace

void RegisterTensorAxisOps(OpRegistry& r) {
  r.Add("tensor.argmax", ArgReduceOp(true));
  r.Add("tensor.argmin", ArgReduceOp(false));
  r.Add("tensor.cumsum", CumSumOp());
  r.Add("tensor.triu", TriluOp(true));
  r.Add("tensor.tril", TriluOp(false));
  r.Add("tensor.gather_elements", GatherElementsOp());
}

}  // namespace backplane::runtime::ops
