// Graph-level lowerings of pooling.max_pool, pooling.max_pool_with_indices and pooling.avg_pool
// onto the PoolNd methods: x [N, C, spatial...] with 1 to 3 spatial axes; attribute lists per
// spatial axis (strides and dilations default to 1, pads [begin..., end...] to 0).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "backplane/backend/pool_nd.hpp"
#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

enum class PoolKind { Max, MaxWithIndices, Avg };

std::vector<int64_t> PerAxis(const Attrs& attrs, const std::string& name, size_t rank, size_t per, int64_t fill) {
  std::vector<int64_t> v = attrs.Ints(name);
  if (v.empty()) return std::vector<int64_t>(rank * per, fill);
  if (v.size() != rank * per) {
    attrs.Fail(name, fmt::format("{} values ({} per spatial axis of the rank-{} input)", rank * per, per, rank + 2),
               fmt::format("{} values", v.size()));
  }
  return v;
}

// The config for input shape `shape` (sizes of its spatial axes), output sizes filled in.
PoolNdConfig ConfigFor(const Attrs& attrs, const Shape& shape, PoolKind kind) {
  if (shape.size() < 3 || shape.size() > 5) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("input x must have rank 3 to 5 ([N, C, 1 to 3 spatial axes]), got {}", ShapeToString(shape)));
  }
  const size_t r = shape.size() - 2;
  const std::vector<int64_t> kernel = attrs.Ints("kernel");
  if (kernel.size() != r) {
    attrs.Fail("kernel", fmt::format("{} values (one per spatial axis)", r), fmt::format("{} values", kernel.size()));
  }
  const std::vector<int64_t> strides = PerAxis(attrs, "strides", r, 1, 1);
  const std::vector<int64_t> dilations = PerAxis(attrs, "dilations", r, 1, 1);
  const std::vector<int64_t> pads = PerAxis(attrs, "pads", r, 2, 0);
  PoolNdConfig c;
  c.Rank = static_cast<int32_t>(r);
  c.CeilMode = attrs.Bool("ceil_mode");
  for (size_t i = 0; i < r; ++i) {
    auto check = [&](const char* name, int64_t v, int64_t min) {
      constexpr int64_t kMax = int64_t{1} << 20;  // far beyond any real window; keeps the extents exact
      if (v < min || v > kMax) attrs.Fail(name, fmt::format("in [{}, {}] on every axis", min, kMax), std::to_string(v));
      return v;
    };
    c.In[i] = shape[i + 2];
    c.Kernel[i] = check("kernel", kernel[i], 1);
    c.Stride[i] = check("strides", strides[i], 1);
    c.Dilation[i] = check("dilations", dilations[i], 1);
    c.PadBegin[i] = check("pads", pads[i], 0);
    c.PadEnd[i] = check("pads", pads[i + r], 0);
    const int64_t out = PoolNdExtent(c.In[i], c.Kernel[i], c.Stride[i], c.Dilation[i],
                                                        c.PadBegin[i], c.PadEnd[i], c.CeilMode);
    if (out < 0) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("spatial axis {} of size {} with pads {} + {} is shorter than the dilated window {}", i, c.In[i],
                       c.PadBegin[i], c.PadEnd[i], c.Dilation[i] * (c.Kernel[i] - 1) + 1));
    }
    c.Out[i] = out;
  }
  if (kind == PoolKind::Avg) c.CountIncludePad = attrs.Bool("count_include_pad");
  if (kind == PoolKind::MaxWithIndices) {
    const std::string& over = attrs.String("indices_over");
    if (over != "plane" && over != "tensor") attrs.Fail("indices_over", "plane or tensor", over);
    c.IndicesOverTensor = over == "tensor";
    const int64_t order = attrs.Int("storage_order");
    if (order != 0 && order != 1) attrs.Fail("storage_order", "0 (row-major) or 1 (column-major)", std::to_string(order));
    c.ColumnMajorIndices = order == 1;
  }
  return c;
}

OpImpl PoolNdOp(PoolKind kind) {
  return OpImpl{
      [kind](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kind == PoolKind::Avg ? kFloatDTypes : kPoolNdMaxDTypes);
        const PoolNdConfig c = ConfigFor(attrs, in[0].shape, kind);
        Shape shape = in[0].shape;
        for (int i = 0; i < c.Rank; ++i) shape[static_cast<size_t>(i) + 2] = c.Out[i];
        std::vector<TensorType> out{{in[0].dtype, shape}};
        if (kind == PoolKind::MaxWithIndices) out.push_back({DType::Int64, shape});
        return out;
      },
      [kind](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Tensor& x = in[0];
        const PoolNdConfig c = ConfigFor(ctx.attrs, x.shape(), kind);
        const int64_t planes = x.dim(0) * x.dim(1);
        if (kind == PoolKind::Avg) {
          ctx.backend.PoolNd().AvgPoolNd(c, x.data(), out[0].data(), nullptr, planes, x.dtype());
        } else {
          int64_t* indices = kind == PoolKind::MaxWithIndices ? out[1].data_as<int64_t>() : nullptr;
          ctx.backend.PoolNd().MaxPoolNd(c, x.data(), out[0].data(), indices, planes, x.dtype());
        }
      }};
}

}  // namespace

void RegisterPoolNdOps(OpRegistry& r) {
  r.Add("pooling.max_pool", PoolNdOp(PoolKind::Max));
  r.Add("pooling.max_pool_with_indices", PoolNdOp(PoolKind::MaxWithIndices));
  r.Add("pooling.avg_pool", PoolNdOp(PoolKind::Avg));
}

}  // namespace backplane::runtime::ops
