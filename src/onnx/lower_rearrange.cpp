// Lowerings of ONNX's DepthToSpace and SpaceToDepth (reshape, transpose, reshape) and of Hardmax
// and OneHot (an index compared with an iota constant along the axis, then cast or selected).
#include <fmt/format.h>

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
  const std::vector<int64_t> depth_values = ctx.ConstInts(1, "the output's new axis size");
  if (depth_values.size() != 1 || depth_values[0] <= 0) ctx.Invalid("input 'depth' must be one positive value");
  const int64_t depth = depth_values[0];
  const Tensor values = ctx.RequireConst(2, "the off and on values");
  if (values.numel() != 2) ctx.Invalid(fmt::format("input 'values' must hold 2 values (off, on), got {}", values.numel()));
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
  ctx.Op("tensor.where", {hit, ctx.Scalar(values.GetDouble(1), values.dtype()), ctx.Scalar(values.GetDouble(0), values.dtype())},
         {}, ctx.Output(0));
}

}  // namespace

void AddRearrangeOps(std::vector<OpEntry>& t) {
  t.push_back({"DepthToSpace", 1, kMaxOpset, DepthToSpace});
  t.push_back({"SpaceToDepth", 1, kMaxOpset, SpaceToDepth});
  t.push_back({"Hardmax", 1, 12, [](Context& c) { Hardmax(c, true); }});
  t.push_back({"Hardmax", 13, kMaxOpset, [](Context& c) { Hardmax(c, false); }});
  t.push_back({"OneHot", 9, kMaxOpset, OneHot});
}

}  // namespace backplane::onnx
