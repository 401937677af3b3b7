// Graph-level lowerings of the shape ops (any dtype). Every op copies through its Shape kernel and
// never returns a view, so no output aliases a parameter that an optimizer later updates in place.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 53;

std::string List(const std::vector<int64_t>& values) { return fmt::format("[{}]", fmt::join(values, ", ")); }

// ---- reshape (ONNX Reshape, allowzero = 0) ----------------------------------------------------------
// A 0 entry copies the input dimension at its position; one -1 takes the remaining elements.
Shape ReshapeTarget(const Attrs& attrs, const Shape& in) {
  const std::vector<int64_t> spec = attrs.Ints("shape");
  Shape out(spec.size());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) attrs.Fail("shape", "a list with at most one -1", List(spec));
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1) attrs.Fail("shape", "dimensions >= -1", List(spec));
    if (d == 0) {
      if (i >= in.size()) {
        attrs.Fail("shape", fmt::format("0 only at positions < the input rank {}", in.size()), List(spec));
      }
      d = in[i];
    }
    if (__builtin_mul_overflow(known, d, &known)) attrs.Fail("shape", "a shape whose size fits in int64", List(spec));
    out[i] = d;
  }
  const int64_t total = NumElements(in);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("cannot infer the -1 of {} for an input of {} elements {}", List(spec), total,
                       ShapeToString(in)));
    }
    out[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("shape {} has {} elements, the input {} has {}", ShapeToString(out), known,
                     ShapeToString(in), total));
  }
  return out;
}

OpImpl ReshapeOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        return std::vector<TensorType>{{in[0].dtype, ReshapeTarget(attrs, in[0].shape)}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        ctx.backend.Shape().Reshape(in[0].data(), out[0].data(), in[0].shape().data(), in[0].rank(),
                                    out[0].shape().data(), out[0].rank(), in[0].dtype());
      }};
}

// ---- transpose ----------------------------------------------------------------------------------
// The permutation: "perm" with negative axes normalised, or the reversed axes when it is empty.
std::vector<int64_t> Permutation(const Attrs& attrs, int64_t rank) {
  std::vector<int64_t> perm = attrs.Ints("perm");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  const std::string expected = fmt::format("a permutation of the {} axes (or [] to reverse them)", rank);
  if (static_cast<int64_t>(perm.size()) != rank) attrs.Fail("perm", expected, List(perm));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    if (p < -rank || p >= rank) attrs.Fail("perm", expected, List(attrs.Ints("perm")));
    if (p < 0) p += rank;
    if (seen[static_cast<size_t>(p)]) attrs.Fail("perm", expected, List(attrs.Ints("perm")));
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

OpImpl TransposeOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        Shape shape;
        for (int64_t p : Permutation(attrs, static_cast<int64_t>(in[0].shape.size()))) {
          shape.push_back(in[0].shape[static_cast<size_t>(p)]);
        }
        return std::vector<TensorType>{{in[0].dtype, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const std::vector<int64_t> perm = Permutation(ctx.attrs, in[0].rank());
        ctx.backend.Shape().Transpose(in[0].data(), out[0].data(), in[0].shape().data(), in[0].rank(),
                                      perm.data(), in[0].dtype());
      }};
}

// ---- concat / split -----------------------------------------------------------------------------
std::vector<TensorType> ConcatInfer(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kAnyDType);
  ExpectMinRank(attrs, in, 0, 1);
  const Shape& first = in[0].shape;
  const int64_t axis = NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(first.size()));
  Shape out = first;
  for (size_t i = 1; i < in.size(); ++i) {
    ExpectDType(attrs, in, i, kAnyDType);
    ExpectSameDType(attrs, in, {0, i});
    Shape other = in[i].shape;
    if (other.size() == first.size()) other[static_cast<size_t>(axis)] = first[static_cast<size_t>(axis)];
    if (other != first) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("input {} has shape {}, which differs from input 0 {} outside axis {}", i,
                       ShapeToString(in[i].shape), ShapeToString(first), axis));
    }
    out[static_cast<size_t>(axis)] += in[i].shape[static_cast<size_t>(axis)];
  }
  return {{in[0].dtype, out}};
}

void ConcatRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const int64_t rank = in[0].rank();
  const int64_t axis = NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), rank);
  std::vector<const void*> inputs;
  std::vector<int64_t> shapes;
  for (const Tensor& t : in) {
    inputs.push_back(t.data());
    shapes.insert(shapes.end(), t.shape().begin(), t.shape().end());
  }
  ctx.backend.Shape().Concat(inputs.data(), shapes.data(), static_cast<int64_t>(in.size()), rank, axis,
                             out[0].data(), in[0].dtype());
}

// Sizes of the parts along the axis: "sizes", or "count" equal parts, or one equal part per
// named output.
std::vector<int64_t> SplitSizes(const Attrs& attrs, int64_t dim) {
  const std::vector<int64_t> sizes = attrs.Ints("sizes");
  const int64_t count = attrs.Int("count");
  if (count < 0) attrs.Fail("count", ">= 0 (0: use sizes or the number of outputs)", std::to_string(count));
  if (!sizes.empty()) {
    if (count != 0) attrs.Fail("count", "0 when sizes is given", std::to_string(count));
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0 || __builtin_add_overflow(sum, s, &sum)) attrs.Fail("sizes", "sizes >= 0", List(sizes));
    }
    if (sum != dim) attrs.Fail("sizes", fmt::format("sizes adding up to the axis size {}", dim), List(sizes));
    return sizes;
  }
  const int64_t parts = count > 0 ? count : attrs.num_outputs();
  if (dim % parts != 0) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("the axis size {} does not split into {} equal parts", dim, parts));
  }
  return std::vector<int64_t>(static_cast<size_t>(parts), dim / parts);
}

std::vector<TensorType> SplitInfer(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kAnyDType);
  ExpectMinRank(attrs, in, 0, 1);
  const size_t axis = static_cast<size_t>(
      NormalizeAxis(attrs, "axis", attrs.Int("axis"), static_cast<int64_t>(in[0].shape.size())));
  const std::vector<int64_t> sizes = SplitSizes(attrs, in[0].shape[axis]);
  if (static_cast<int>(sizes.size()) != attrs.num_outputs()) {
    Fail(attrs, ErrorCode::InvalidArgument,
         fmt::format("splits into {} parts but names {} outputs", sizes.size(), attrs.num_outputs()));
  }
  std::vector<TensorType> out;
  for (int64_t s : sizes) {
    out.push_back(in[0]);
    out.back().shape[axis] = s;
  }
  return out;
}

void SplitRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  const int64_t rank = in[0].rank();
  const int64_t axis = NormalizeAxis(ctx.attrs, "axis", ctx.attrs.Int("axis"), rank);
  const std::vector<int64_t> sizes = SplitSizes(ctx.attrs, in[0].shape()[static_cast<size_t>(axis)]);
  std::vector<void*> outputs;
  for (Tensor& t : out) outputs.push_back(t.data());
  ctx.backend.Shape().Split(in[0].data(), in[0].shape().data(), rank, axis, sizes.data(),
                            static_cast<int64_t>(out.size()), outputs.data(), in[0].dtype());
}

// ---- upsample_nearest2d -------------------------------------------------------------------------
struct UpsampleAxis {
  double scale = 0.0;  // the kernel's config: 0 derives the scale from the sizes
  int64_t size = 0;
};

// One spatial axis: exactly one of scale (> 0, size floor(in * scale)) and size (> 0).
UpsampleAxis ResolveUpsample(const Attrs& attrs, const std::string& scale_attr, const std::string& size_attr,
                             int64_t in) {
  const double scale = attrs.Float(scale_attr);
  const int64_t size = attrs.Int(size_attr);
  if (!std::isfinite(scale) || scale < 0) attrs.Fail(scale_attr, "finite and >= 0", fmt::format("{}", scale));
  if (size < 0) attrs.Fail(size_attr, ">= 0", std::to_string(size));
  if ((scale > 0) == (size > 0)) {
    attrs.Fail(scale_attr, fmt::format("> 0 exactly when {} is 0 (one way per axis)", size_attr),
               fmt::format("{} with {} = {}", scale, size_attr, size));
  }
  if (in == 0 && (size > 0 || scale > 0)) {
    Fail(attrs, ErrorCode::ShapeMismatch, "cannot upsample an empty spatial axis to a non-empty one");
  }
  if (size > 0) return {0.0, size};
  const double scaled = std::floor(static_cast<double>(in) * scale);
  if (scaled > static_cast<double>(kMaxDim)) {
    attrs.Fail(scale_attr, "a scale giving a size below 2^53", fmt::format("{}", scale));
  }
  return {scale, static_cast<int64_t>(scaled)};
}

OpImpl UpsampleOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        ExpectRank(attrs, in, 0, 4);
        Shape shape = in[0].shape;
        shape[2] = ResolveUpsample(attrs, "scale_h", "out_h", shape[2]).size;
        shape[3] = ResolveUpsample(attrs, "scale_w", "out_w", shape[3]).size;
        return std::vector<TensorType>{{in[0].dtype, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& s = in[0].shape();
        const UpsampleConfig config{ResolveUpsample(ctx.attrs, "scale_h", "out_h", s[2]).scale,
                                    ResolveUpsample(ctx.attrs, "scale_w", "out_w", s[3]).scale};
        ctx.backend.Shape().UpsampleNearest2D(config, in[0].data(), out[0].data(), s[0], s[1], s[2], s[3],
                                              out[0].shape()[2], out[0].shape()[3], in[0].dtype());
      }};
}

// ---- heads ----------------------------------------------------------------------------------------
int64_t NumHeads(const Attrs& attrs, int64_t features) {
  const int64_t heads = attrs.Int("num_heads");
  if (heads <= 0) attrs.Fail("num_heads", "> 0", std::to_string(heads));
  if (features % heads != 0) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("the last dimension {} is not divisible by num_heads {}", features, heads));
  }
  return heads;
}

// [B, S, H*D] -> [B, H, S, D]
OpImpl ViewAsHeadsOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        ExpectRank(attrs, in, 0, 3);
        const Shape& s = in[0].shape;
        const int64_t heads = NumHeads(attrs, s[2]);
        return std::vector<TensorType>{{in[0].dtype, {s[0], heads, s[1], s[2] / heads}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& o = out[0].shape();
        ctx.backend.Shape().ViewAsHeads(in[0].data(), out[0].data(), o[0], o[2], o[1], o[3], in[0].dtype());
      }};
}

// [B, H, S, D] -> [B, S, H*D]
OpImpl MergeHeadsOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        ExpectRank(attrs, in, 0, 4);
        const Shape& s = in[0].shape;
        return std::vector<TensorType>{{in[0].dtype, {s[0], s[2], s[1] * s[3]}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& s = in[0].shape();
        ctx.backend.Shape().MergeHeads(in[0].data(), out[0].data(), s[0], s[2], s[1], s[3], in[0].dtype());
      }};
}

// ---- last_token: [..., S, F] -> [..., F], the leading dimensions flattened into the batch ---------
OpImpl LastTokenOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        ExpectMinRank(attrs, in, 0, 2);
        Shape shape = in[0].shape;
        const int64_t seq = shape[shape.size() - 2];
        shape.erase(shape.end() - 2);
        if (seq == 0 && NumElements(shape) > 0) {
          Fail(attrs, ErrorCode::ShapeMismatch,
               fmt::format("input {} has an empty sequence (no last token)", ShapeToString(in[0].shape)));
        }
        return std::vector<TensorType>{{in[0].dtype, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const Shape& s = in[0].shape();
        const size_t r = s.size();
        ctx.backend.Shape().LastToken(in[0].data(), out[0].data(), Product(s, 0, r - 2), s[r - 2], s[r - 1],
                                      in[0].dtype());
      }};
}

// ---- slice ----------------------------------------------------------------------------------------
// Per-axis bounds for the kernel: every axis, untouched ones covering the whole dimension.
struct SliceBounds {
  std::vector<int64_t> starts, ends, steps;
};

SliceBounds ResolveSlice(const Attrs& attrs, int64_t rank) {
  const std::vector<int64_t> starts = attrs.Ints("starts");
  const std::vector<int64_t> ends = attrs.Ints("ends");
  std::vector<int64_t> axes = attrs.Ints("axes");
  std::vector<int64_t> steps = attrs.Ints("steps");
  const size_t n = starts.size();
  if (ends.size() != n) attrs.Fail("ends", fmt::format("{} entries (as starts)", n), List(ends));
  if (axes.empty()) {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n) attrs.Fail("axes", fmt::format("{} entries (as starts) or []", n), List(axes));
  if (steps.size() != n) attrs.Fail("steps", fmt::format("{} entries (as starts) or []", n), List(steps));
  SliceBounds b{std::vector<int64_t>(static_cast<size_t>(rank), 0),
                std::vector<int64_t>(static_cast<size_t>(rank), std::numeric_limits<int64_t>::max()),
                std::vector<int64_t>(static_cast<size_t>(rank), 1)};
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    if (rank == 0) attrs.Fail("axes", "empty for a rank-0 input", List(axes));
    const size_t axis = static_cast<size_t>(NormalizeAxis(attrs, "axes", axes[i], rank));
    if (seen[axis]) attrs.Fail("axes", "distinct axes", List(axes));
    if (steps[i] == 0) attrs.Fail("steps", "non-zero steps", List(steps));
    seen[axis] = true;
    b.starts[axis] = starts[i];
    b.ends[axis] = ends[i];
    b.steps[axis] = steps[i];
  }
  return b;
}

// len(range(*slice(start, end, step).indices(n))), as Python.
int64_t SliceLength(int64_t start, int64_t end, int64_t step, int64_t n) {
  const int64_t lo = step > 0 ? 0 : -1;
  const int64_t hi = step > 0 ? n : n - 1;
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
  const int64_t a = clamp(start);
  const int64_t b = clamp(end);
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  const int64_t span = step > 0 ? b - a : a - b;
  return span <= 0 ? 0 : static_cast<int64_t>((static_cast<uint64_t>(span) - 1) / stride + 1);
}

OpImpl SliceOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kAnyDType);
        Shape shape = in[0].shape;
        const SliceBounds b = ResolveSlice(attrs, static_cast<int64_t>(shape.size()));
        for (size_t i = 0; i < shape.size(); ++i) shape[i] = SliceLength(b.starts[i], b.ends[i], b.steps[i], shape[i]);
        return std::vector<TensorType>{{in[0].dtype, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const SliceBounds b = ResolveSlice(ctx.attrs, in[0].rank());
        ctx.backend.Shape().Slice(in[0].data(), out[0].data(), in[0].shape().data(), in[0].rank(), b.starts.data(),
                                  b.ends.data(), b.steps.data(), in[0].dtype());
      }};
}

}  // namespace

void RegisterShapeOps(OpRegistry& r) {
  r.Add("shape.reshape", ReshapeOp());
  r.Add("shape.transpose", TransposeOp());
  r.Add("shape.concat", OpImpl{ConcatInfer, ConcatRun});
  r.Add("shape.split", OpImpl{SplitInfer, SplitRun});
  r.Add("shape.upsample_nearest2d", UpsampleOp());
  r.Add("shape.view_as_heads", ViewAsHeadsOp());
  r.Add("shape.merge_heads", MergeHeadsOp());
  r.Add("shape.last_token", LastTokenOp());
  r.Add("shape.slice", SliceOp());
}

}  // namespace backplane::runtime::ops
