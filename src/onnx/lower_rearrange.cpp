// Lowerings of ONNX's DepthToSpace and SpaceToDepth (reshape, transpose, reshape) and of Hardmax
// and OneHot (an index compared with an iota constant along the axis, then cast or selected), and Pad.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

std::vector<ir::Dim> Dims(std::initializer_list<int64_t> sizes) {
  std::vector<ir::Dim> d;
  for (int64_t s : sizes) d.push_back({s, ""});
  return d;
}

// [N, C, H, W] static with the block size dividing what it must.
Shape Static4D(Context& ctx) {
  const Value& x = ctx.In(0);
  if (x.rank() != 4 || !x.is_static()) ctx.Unsupported("the input must be a static [N, C, H, W] tensor");
  return x.shape();
}

void DepthToSpace(Context& ctx) {
  ctx.AllowAttrs({"blocksize", "mode"});
  const int64_t b = ctx.AttrInt("blocksize", 0);
  if (b <= 0) ctx.Invalid(fmt::format("attribute 'blocksize' must be a positive integer, got {}", b));
  const std::string mode = ctx.AttrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.Invalid(fmt::format("attribute 'mode' must be DCR or CRD, got '{}'", mode));
  const Shape s = Static4D(ctx);
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c % (b * b) != 0) ctx.Invalid(fmt::format("channels {} are not a multiple of blocksize^2 {}", c, b * b));
  const int64_t c2 = c / (b * b);
  const bool dcr = mode == "DCR";
  const std::string split = ReshapeTo(ctx, ctx.Input(0), dcr ? Dims({n, b, b, c2, h, w}) : Dims({n, c2, b, b, h, w}));
  const std::vector<int64_t> perm = dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
  const std::string moved = ctx.Op("shape.transpose", {split}, {{"perm", perm}});
  ReshapeTo(ctx, moved, Dims({n, c2, h * b, w * b}), ctx.Output(0));
}

void SpaceToDepth(Context& ctx) {
  ctx.AllowAttrs({"blocksize"});
  const int64_t b = ctx.AttrInt("blocksize", 0);
  if (b <= 0) ctx.Invalid(fmt::format("attribute 'blocksize' must be a positive integer, got {}", b));
  const Shape s = Static4D(ctx);
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (h % b != 0 || w % b != 0) ctx.Invalid(fmt::format("H {} and W {} must be multiples of blocksize {}", h, w, b));
  const std::string split = ReshapeTo(ctx, ctx.Input(0), Dims({n, c, h / b, b, w / b, b}));
  const std::string moved = ctx.Op("shape.transpose", {split}, {{"perm", std::vector<int64_t>{0, 3, 5, 1, 2, 4}}});
  ReshapeTo(ctx, moved, Dims({n, c * b * b, h / b, w / b}), ctx.Output(0));
}

// An int64 constant of `rank` dims, all 1 but `extent` at `axis`, holding 0 .. extent - 1 + offset.
std::string Iota(Context& ctx, int64_t rank, int64_t axis, int64_t extent, int64_t offset) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = extent;
  Tensor t(DType::Int64, shape);
  for (int64_t i = 0; i < extent; ++i) t.data_as<int64_t>()[i] = i + offset;
  return ctx.ConstTensor(t, "iota");
}

// Hardmax: 1 at the first maximum along the axis (opset < 13: of the trailing axes from `axis`
// flattened into one, as the coerced 2-D form), 0 elsewhere.
void Hardmax(Context& ctx, bool coerce_2d) {
  ctx.AllowAttrs({"axis"});
  const Value& x = ctx.In(0);
  const int64_t r = x.rank();
  if (r == 0) ctx.Invalid("input must have rank >= 1");
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", coerce_2d ? 1 : -1), r, "attribute 'axis'");
  std::string v = ctx.Input(0);
  std::vector<ir::Dim> dims = x.dims;
  int64_t ax = axis;
  if (coerce_2d && axis != r - 1) {
    int64_t features = 1;
    for (int64_t i = axis; i < r; ++i) {
      const ir::Dim& d = x.dims[static_cast<size_t>(i)];
      if (!d.symbol.empty()) ctx.Unsupported("coerced axes need static sizes (opset < 13 hardmax)");
      features *= d.size;
    }
    dims.assign(x.dims.begin(), x.dims.begin() + axis);
    dims.push_back({features, ""});
    v = ReshapeTo(ctx, v, dims);
    ax = static_cast<int64_t>(dims.size()) - 1;
  }
  const ir::Dim& extent = dims[static_cast<size_t>(ax)];
  if (!extent.symbol.empty()) ctx.Unsupported("the hardmax axis needs a static size");
  const std::string index = ctx.Op("tensor.argmax", {v}, {{"axis", ax}, {"keepdims", true}});
  const std::string hit =
      ctx.Op("tensor.equal", {index, Iota(ctx, static_cast<int64_t>(dims.size()), ax, extent.size, 0)});
  const std::string y = ctx.Op("tensor.cast", {hit}, {{"to", std::string(DTypeName(x.dtype))}});
  ReshapeTo(ctx, y, x.dims, ctx.Output(0));
}

// OneHot(indices, depth, values = [off, on]): a new axis of `depth` entries, `on` where the entry
// equals the index (negative indices count from the end), `off` elsewhere and for indices out of
// range.
void OneHot(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  const Value& idx = ctx.In(0);
  // depth may be any numeric type; a float one is cast to int64 (truncated), as the spec says.
  const Tensor depth_tensor = ctx.RequireConst(1, "the output's new axis size");
  if (depth_tensor.numel() != 1) ctx.Invalid(fmt::format("input 'depth' must hold one value, got {}", depth_tensor.numel()));
  const double depth_value = depth_tensor.dtype() == DType::Int64 ? static_cast<double>(depth_tensor.data_as<int64_t>()[0])
                                                                   : depth_tensor.GetDouble(0);
  if (!(depth_value >= 1 && depth_value < 9.007199254740992e15)) {
    ctx.Invalid(fmt::format("input 'depth' must be a positive value, got {}", depth_value));
  }
  const int64_t depth = static_cast<int64_t>(depth_value);
  const Value& values = ctx.In(2);
  if (values.rank() != 1 || !values.is_static() || values.shape()[0] != 2) {
    ctx.Invalid("input 'values' must have shape [2] (off, on)");
  }
  const int64_t r = idx.rank();
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", -1), r + 1, "attribute 'axis'");
  std::string index = ctx.Input(0);
  if (idx.dtype != DType::Int64) index = ctx.Op("tensor.cast", {index}, {{"to", std::string("i64")}});
  std::vector<ir::Dim> expanded = idx.dims;
  expanded.insert(expanded.begin() + axis, ir::Dim{1, ""});
  index = ReshapeTo(ctx, index, expanded);
  const std::string direct = ctx.Op("tensor.equal", {index, Iota(ctx, r + 1, axis, depth, 0)});
  const std::string from_end = ctx.Op("tensor.equal", {index, Iota(ctx, r + 1, axis, depth, -depth)});
  const std::string hit = ctx.Op("tensor.logical_or", {direct, from_end});
  std::string on, off;
  if (values.constant) {
    on = ctx.Scalar(values.constant->GetDouble(1), values.dtype);
    off = ctx.Scalar(values.constant->GetDouble(0), values.dtype);
  } else {
    on = TakeAlong(ctx, ctx.Input(2), 0, 1);
    off = TakeAlong(ctx, ctx.Input(2), 0, 0);
  }
  ctx.Op("tensor.where", {hit, on, off}, {}, ctx.Output(0));
}

// Pad (constant, edge, reflect) one axis at a time: slices of the input (negative pads crop) and
// concatenation with the pad blocks: a constant filled with the value, or copies of edge slices.
void Pad(Context& ctx, bool attr_form) {
  if (attr_form) {
    ctx.AllowAttrs({"mode", "pads", "value"});
  } else {
    ctx.AllowAttrs({"mode"});
  }
  const Value x = ctx.In(0);
  if (!x.is_static()) ctx.Unsupported("Pad needs a static input shape");
  const int64_t r = x.rank();
  std::vector<int64_t> pads;
  if (attr_form) {
    pads = ctx.AttrInts("pads").value_or(std::vector<int64_t>{});
  } else {
    pads = ctx.ConstInts(1, "pads");
  }
  if (static_cast<int64_t>(pads.size()) != 2 * r) {
    ctx.Invalid(fmt::format("'pads' has {} entries, expected 2 x rank = {}", pads.size(), 2 * r));
  }
  const std::string mode = ctx.AttrString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") {
    ctx.Invalid(fmt::format("attribute 'mode' must be constant, edge or reflect, got '{}'", mode));
  }
  const DType d = x.dtype;
  std::string value;  // a scalar value name (constant mode)
  if (mode == "constant") {
    if (attr_form) {
      value = ctx.Scalar(ctx.AttrFloat("value", 0.0), d);
    } else if (ctx.HasInput(2)) {
      if (ctx.In(2).rank() != 0 && !(ctx.In(2).rank() == 1 && ctx.In(2).is_static() && ctx.In(2).shape()[0] == 1)) {
        ctx.Invalid("input 'constant_value' must be a scalar");
      }
      value = ReshapeTo(ctx, ctx.Input(2), {});
    } else {
      value = ctx.Scalar(0.0, d);
    }
  }
  std::string v = ctx.Input(0);
  Shape shape = x.shape();
  auto slice = [&](const std::string& in, int64_t axis, int64_t start, int64_t end) {
    return ctx.Op("shape.slice", {in}, {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                                        {"axes", std::vector<int64_t>{axis}}});
  };
  for (int64_t axis = 0; axis < r; ++axis) {
    int64_t before = pads[static_cast<size_t>(axis)], after = pads[static_cast<size_t>(axis + r)];
    int64_t n = shape[static_cast<size_t>(axis)];
    if (before < 0 || after < 0) {  // crop first
      const int64_t start = std::max<int64_t>(0, -before), end = n - std::max<int64_t>(0, -after);
      if (end < start) ctx.Invalid(fmt::format("negative pads crop axis {} of size {} below zero", axis, n));
      v = slice(v, axis, start, end);
      n = end - start;
      shape[static_cast<size_t>(axis)] = n;
      before = std::max<int64_t>(0, before);
      after = std::max<int64_t>(0, after);
    }
    if (before == 0 && after == 0) continue;
    if (mode != "constant" && n == 0) ctx.Invalid(fmt::format("{} padding of the empty axis {}", mode, axis));
    if (mode == "reflect" && (before >= n || after >= n)) {
      ctx.Unsupported(fmt::format("reflect pads {} and {} must be below axis {}'s size {}", before, after, axis, n));
    }
    auto block = [&](int64_t count, bool left) -> std::vector<std::string> {
      std::vector<std::string> parts;
      if (count == 0) return parts;
      if (mode == "constant") {
        Shape bs = shape;
        bs[static_cast<size_t>(axis)] = count;
        Tensor zeros(d, bs);
        for (int64_t i = 0; i < zeros.numel(); ++i) zeros.SetDouble(i, 0.0);
        parts.push_back(ctx.Op("math.add", {ctx.ConstTensor(zeros, "pad_block"), value}));
      } else if (mode == "edge") {
        const std::string e = left ? slice(v, axis, 0, 1) : slice(v, axis, n - 1, n);
        for (int64_t i = 0; i < count; ++i) parts.push_back(e);
      } else {  // reflect: x[count] ... x[1] on the left, x[n-2] ... x[n-1-count] on the right
        for (int64_t i = 0; i < count; ++i) {
          const int64_t src = left ? count - i : n - 2 - i;
          parts.push_back(slice(v, axis, src, src + 1));
        }
      }
      return parts;
    };
    std::vector<std::string> parts = block(before, true);
    parts.push_back(v);
    const std::vector<std::string> tail = block(after, false);
    parts.insert(parts.end(), tail.begin(), tail.end());
    v = ctx.Op("shape.concat", parts, {{"axis", axis}});
    shape[static_cast<size_t>(axis)] = n + before + after;
  }
  ctx.Alias(v, ctx.Output(0));
}

}  // namespace

void AddRearrangeOps(std::vector<OpEntry>& t) {
  t.push_back({"DepthToSpace", 1, kMaxOpset, DepthToSpace});
  t.push_back({"SpaceToDepth", 1, kMaxOpset, SpaceToDepth});
  t.push_back({"Hardmax", 1, 12, [](Context& c) { Hardmax(c, true); }});
  t.push_back({"Hardmax", 13, kMaxOpset, [](Context& c) { Hardmax(c, false); }});
  t.push_back({"OneHot", 9, kMaxOpset, OneHot});
  t.push_back({"Pad", 2, 10, [](Context& c) { Pad(c, true); }});
  t.push_back({"Pad", 11, kMaxOpset, [](Context& c) { Pad(c, false); }});
}

}  // namespace backplane::onnx
