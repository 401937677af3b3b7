// Lowerings of ONNX's shape and data-movement ops. Shape-valued inputs (Reshape's shape, Slice's
// starts, Squeeze's axes...) must be known at import time; Shape, Size, Cast, ConstantOfShape and
// Range fold on the host, and catalog shape ops over constants fold through Context::Emit.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {
namespace {

std::string List(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

void Identity(Context& ctx) {
  ctx.AllowAttrs({});
  ctx.Alias(ctx.Input(0), ctx.Output(0));
}

void ReshapeOp(Context& ctx) {
  ctx.AllowAttrs({"allowzero"});
  const std::vector<int64_t> spec = ctx.ConstInts(1, "shape");
  const bool allowzero = ctx.AttrInt("allowzero", 0) != 0;
  if (allowzero && std::find(spec.begin(), spec.end(), 0) != spec.end()) {
    // A literal 0 makes the output empty, so the input must be empty too: an empty constant.
    const Value& x = ctx.In(0);
    if (!x.is_static()) ctx.Unsupported(fmt::format("allowzero=1 with a 0 in shape {} needs a static input", List(spec)));
    if (std::find(spec.begin(), spec.end(), -1) != spec.end()) {
      ctx.Invalid(fmt::format("allowzero=1 with both 0 and -1 in shape {}", List(spec)));
    }
    if (NumElements(x.shape()) != 0) {
      ctx.Invalid(fmt::format("shape {} has 0 elements, the input has {}", List(spec), NumElements(x.shape())));
    }
    for (int64_t d : spec) {
      if (d < 0) ctx.Invalid(fmt::format("shape {} has a negative entry", List(spec)));
    }
    ctx.DefineConstant(ctx.Output(0), Tensor(x.dtype, Shape(spec)));
    return;
  }
  ctx.Op("shape.reshape", {ctx.Input(0)}, {{"shape", spec}}, ctx.Output(0));
}

void Transpose(Context& ctx) {
  ctx.AllowAttrs({"perm"});
  ir::AttrMap a;
  if (const auto perm = ctx.AttrInts("perm")) a["perm"] = *perm;
  ctx.Op("shape.transpose", {ctx.Input(0)}, a, ctx.Output(0));
}

void Concat(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  if (!ctx.HasAttr("axis")) ctx.Invalid("attribute 'axis' is required");
  std::vector<std::string> inputs;
  for (int i = 0; i < ctx.NumInputs(); ++i) inputs.push_back(ctx.Input(i));
  if (inputs.size() == 1) {
    ctx.Alias(inputs[0], ctx.Output(0));
    return;
  }
  ctx.Op("shape.concat", inputs, {{"axis", ctx.AttrInt("axis", 0)}}, ctx.Output(0));
}

void SplitWith(Context& ctx, std::optional<std::vector<int64_t>> sizes) {
  std::vector<std::string> outs;
  for (int i = 0; i < ctx.NumOutputs(); ++i) outs.push_back(ctx.HasOutput(i) ? ctx.Output(i) : ctx.Fresh("unused"));
  ir::AttrMap a = {{"axis", ctx.AttrInt("axis", 0)}};
  if (sizes) {
    a["sizes"] = *sizes;
  } else {
    a["count"] = static_cast<int64_t>(outs.size());
  }
  if (outs.size() == 1) {
    ctx.Alias(ctx.Input(0), outs[0]);
    return;
  }
  ctx.Emit("shape.split", {ctx.Input(0)}, a, outs);
}

void Split2(Context& ctx) {
  ctx.AllowAttrs({"axis", "split"});
  SplitWith(ctx, ctx.AttrInts("split"));
}

void Split13(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.HasInput(1)) sizes = ctx.ConstInts(1, "split");
  SplitWith(ctx, sizes);
}

void SliceWith(Context& ctx, std::vector<int64_t> starts, std::vector<int64_t> ends,
               std::optional<std::vector<int64_t>> axes, std::optional<std::vector<int64_t>> steps) {
  ir::AttrMap a = {{"starts", starts}, {"ends", ends}};
  if (axes) a["axes"] = *axes;
  if (steps) a["steps"] = *steps;
  ctx.Op("shape.slice", {ctx.Input(0)}, a, ctx.Output(0));
}

void Slice1(Context& ctx) {
  ctx.AllowAttrs({"axes", "ends", "starts"});
  const auto starts = ctx.AttrInts("starts");
  const auto ends = ctx.AttrInts("ends");
  if (!starts || !ends) ctx.Invalid("attributes 'starts' and 'ends' are required");
  SliceWith(ctx, *starts, *ends, ctx.AttrInts("axes"), std::nullopt);
}

void Slice10(Context& ctx) {
  ctx.AllowAttrs({});
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.HasInput(3)) axes = ctx.ConstInts(3, "axes");
  if (ctx.HasInput(4)) steps = ctx.ConstInts(4, "steps");
  SliceWith(ctx, ctx.ConstInts(1, "starts"), ctx.ConstInts(2, "ends"), axes, steps);
}

// Flatten: [prod(d < axis), prod(d >= axis)].
void Flatten(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  const Value& x = ctx.In(0);
  const int64_t r = x.rank();
  int64_t axis = ctx.AttrInt("axis", 1);
  if (axis < -r || axis > r) ctx.Invalid(fmt::format("attribute 'axis' {} is out of range for rank {}", axis, r));
  if (axis < 0) axis += r;
  auto product = [&](int64_t from, int64_t to) -> ir::Dim {
    if (to - from == 1) return x.dims[static_cast<size_t>(from)];
    int64_t p = 1;
    for (int64_t i = from; i < to; ++i) {
      const ir::Dim& d = x.dims[static_cast<size_t>(i)];
      if (!d.symbol.empty()) return {0, "flat"};
      p *= d.size;
    }
    return {p, ""};
  };
  std::vector<ir::Dim> target = {product(0, axis), product(axis, r)};
  if (!target[0].symbol.empty() && !target[1].symbol.empty()) ctx.Unsupported("both flattened sizes are symbolic");
  if (target[0].symbol == "flat") target[0].symbol = ctx.Fresh("flat");
  if (target[1].symbol == "flat") target[1].symbol = ctx.Fresh("flat");
  ReshapeTo(ctx, ctx.Input(0), target, ctx.Output(0));
}

std::vector<int64_t> NormalizedAxes(const Context& ctx, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = NormalizeAxis(ctx, a, rank, "axis");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) ctx.Invalid("axes must be distinct");
  return axes;
}

void SqueezeWith(Context& ctx, std::optional<std::vector<int64_t>> axes_in) {
  const Value& x = ctx.In(0);
  std::vector<ir::Dim> target;
  if (!axes_in) {
    for (const ir::Dim& d : x.dims) {
      if (!d.symbol.empty()) ctx.Unsupported("squeeze without axes needs static dimensions");
      if (d.size != 1) target.push_back(d);
    }
  } else {
    const auto axes = NormalizedAxes(ctx, *axes_in, x.rank());
    for (int64_t i = 0; i < x.rank(); ++i) {
      const ir::Dim& d = x.dims[static_cast<size_t>(i)];
      if (std::binary_search(axes.begin(), axes.end(), i)) {
        if (d.symbol.empty() && d.size != 1) ctx.Invalid(fmt::format("cannot squeeze axis {} of size {}", i, d.size));
      } else {
        target.push_back(d);
      }
    }
  }
  ReshapeTo(ctx, ctx.Input(0), target, ctx.Output(0));
}

void UnsqueezeWith(Context& ctx, const std::vector<int64_t>& axes_in) {
  const Value& x = ctx.In(0);
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes_in.size());
  const auto axes = NormalizedAxes(ctx, axes_in, out_rank);
  std::vector<ir::Dim> target;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) {
      target.push_back({1, ""});
    } else {
      target.push_back(x.dims[k++]);
    }
  }
  ReshapeTo(ctx, ctx.Input(0), target, ctx.Output(0));
}

void Squeeze1(Context& ctx) {
  ctx.AllowAttrs({"axes"});
  SqueezeWith(ctx, ctx.AttrInts("axes"));
}
void Squeeze13(Context& ctx) {
  ctx.AllowAttrs({});
  std::optional<std::vector<int64_t>> axes;
  if (ctx.HasInput(1)) axes = ctx.ConstInts(1, "axes");
  SqueezeWith(ctx, axes);
}
void Unsqueeze1(Context& ctx) {
  ctx.AllowAttrs({"axes"});
  const auto axes = ctx.AttrInts("axes");
  if (!axes) ctx.Invalid("attribute 'axes' is required");
  UnsqueezeWith(ctx, *axes);
}
void Unsqueeze13(Context& ctx) {
  ctx.AllowAttrs({});
  UnsqueezeWith(ctx, ctx.ConstInts(1, "axes"));
}

// Shape (start/end since opset 15) and Size fold from static shapes.
void ShapeOp(Context& ctx) {
  ctx.AllowAttrs({"start", "end"});
  const Value& x = ctx.In(0);
  const int64_t r = x.rank();
  auto clampi = [&](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const int64_t start = clampi(ctx.AttrInt("start", 0));
  const int64_t end = clampi(ctx.AttrInt("end", r));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    const ir::Dim& d = x.dims[static_cast<size_t>(i)];
    if (!d.symbol.empty()) ctx.Unsupported(fmt::format("Shape of a symbolic dimension '{}' (no runtime shape op)", d.symbol));
    dims.push_back(d.size);
  }
  ctx.DefineConstant(ctx.Output(0), IntsTensor(dims, {static_cast<int64_t>(dims.size())}));
}

void Size(Context& ctx) {
  ctx.AllowAttrs({});
  const Value& x = ctx.In(0);
  if (!x.is_static()) ctx.Unsupported("Size of a symbolic shape");
  ctx.DefineConstant(ctx.Output(0), IntsTensor({NumElements(x.shape())}, {}));
}

void Constant(Context& ctx) {
  ctx.AllowAttrs({"value", "value_float", "value_floats", "value_int", "value_ints"});
  if (ctx.node().attribute_size() != 1) ctx.Invalid("exactly one value attribute is required");
  const std::string where = fmt::format("{}: {}: attribute 'value'", ctx.model(), ctx.NodeWhere());
  Tensor t;
  if (const auto* proto = ctx.AttrTensor("value")) {
    t = TensorFromProto(*proto, where, "");
  } else if (ctx.HasAttr("value_float")) {
    t = Tensor::FromDoubles(DType::Float32, {}, std::vector<double>{ctx.AttrFloat("value_float", 0)});
  } else if (const auto fs = ctx.AttrFloats("value_floats")) {
    t = Tensor::FromDoubles(DType::Float32, {static_cast<int64_t>(fs->size())}, *fs);
  } else if (ctx.HasAttr("value_int")) {
    t = IntsTensor({ctx.AttrInt("value_int", 0)}, {});
  } else {
    const auto is = ctx.AttrInts("value_ints");
    t = IntsTensor(*is, {static_cast<int64_t>(is->size())});
  }
  ctx.DefineConstant(ctx.Output(0), t);
}

void CastTo(Context& ctx, DType to) {
  const Value& x = ctx.In(0);
  if (x.constant) {
    ctx.DefineConstant(ctx.Output(0), CastTensor(*x.constant, to));
  } else if (x.dtype == to) {
    ctx.Alias(ctx.Input(0), ctx.Output(0));
  } else {
    ctx.Unsupported(fmt::format("cast of a runtime value from {} to {} (the catalog has no dtype conversion op)",
                                DTypeName(x.dtype), DTypeName(to)));
  }
}

void Cast(Context& ctx) {
  ctx.AllowAttrs({"to", "saturate"});
  const int64_t to = ctx.AttrInt("to", 0);
  const auto dtype = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype) ctx.Unsupported(fmt::format("attribute 'to' = {} is not a supported dtype", OnnxTypeName(static_cast<int32_t>(to))));
  CastTo(ctx, *dtype);
}

void CastLike(Context& ctx) {
  ctx.AllowAttrs({});
  CastTo(ctx, ctx.In(1).dtype);
}

// Gather of runtime (or many) indices: tensor.gather_nd of one-element index tuples along the
// leading axis. x is transposed so that `axis` leads, the indices get a trailing axis of 1, and the
// gathered [indices..., other axes...] is transposed to data.shape[:axis] + indices.shape +
// data.shape[axis+1:].
void GatherByTuples(Context& ctx, int64_t axis) {
  const Value& data = ctx.In(0);
  const Value& idx = ctx.In(1);
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32) {
    ctx.Invalid(fmt::format("input 'indices' must be int32 or int64, got {}", DTypeName(idx.dtype)));
  }
  const int64_t r = data.rank(), q = idx.rank();
  std::string x = ctx.Input(0);
  if (axis != 0) {
    std::vector<int64_t> perm = {axis};
    for (int64_t i = 0; i < r; ++i) {
      if (i != axis) perm.push_back(i);
    }
    x = ctx.Op("shape.transpose", {x}, {{"perm", perm}});
  }
  std::vector<ir::Dim> tuple_dims = idx.dims;
  tuple_dims.push_back({1, ""});
  const std::string tuples = ReshapeTo(ctx, ctx.Input(1), tuple_dims);
  if (axis == 0) {
    ctx.Op("tensor.gather_nd", {x, tuples}, {{"batch_dims", int64_t{0}}}, ctx.Output(0));
    return;
  }
  const std::string g = ctx.Op("tensor.gather_nd", {x, tuples}, {{"batch_dims", int64_t{0}}});
  std::vector<int64_t> back;
  for (int64_t i = 0; i < axis; ++i) back.push_back(q + i);
  for (int64_t i = 0; i < q; ++i) back.push_back(i);
  for (int64_t i = axis + 1; i < r; ++i) back.push_back(q + i - 1);
  ctx.Op("shape.transpose", {g}, {{"perm", back}}, ctx.Output(0));
}

// Gather: constant data and indices fold; a few constant indices become one slice per index along
// `axis`, concatenated and reshaped to data.shape[:axis] + indices.shape + data.shape[axis+1:];
// runtime or many indices go through GatherByTuples.
void Gather(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  const Value& data = ctx.In(0);
  const Value& idx = ctx.In(1);
  const int64_t r = data.rank();
  if (r == 0) ctx.Invalid("data must have rank >= 1");
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", 0), r, "attribute 'axis'");
  if (!idx.constant) return GatherByTuples(ctx, axis);
  const ir::Dim& n = data.dims[static_cast<size_t>(axis)];
  if (!n.symbol.empty()) return GatherByTuples(ctx, axis);
  std::vector<int64_t> indices = TensorInts(*idx.constant);
  if (indices.size() > 256 && !data.constant) {
    for (int64_t i : indices) {
      if (i < -n.size || i >= n.size) ctx.Invalid(fmt::format("index {} is out of range for axis size {}", i, n.size));
    }
    return GatherByTuples(ctx, axis);
  }
  std::vector<std::string> parts;
  for (int64_t& i : indices) {
    if (i < -n.size || i >= n.size) ctx.Invalid(fmt::format("index {} is out of range for axis size {}", i, n.size));
    if (i < 0) i += n.size;
    parts.push_back(ctx.Op("shape.slice", {ctx.Input(0)},
                           {{"starts", std::vector<int64_t>{i}}, {"ends", std::vector<int64_t>{i + 1}},
                            {"axes", std::vector<int64_t>{axis}}}));
  }
  std::vector<ir::Dim> target(data.dims.begin(), data.dims.begin() + axis);
  for (int64_t d : idx.constant->shape()) target.push_back({d, ""});
  target.insert(target.end(), data.dims.begin() + axis + 1, data.dims.end());
  if (parts.empty()) ctx.Unsupported("gather with no indices (a zero-size result)");
  const std::string joined = parts.size() == 1 ? parts[0] : ctx.Op("shape.concat", parts, {{"axis", axis}});
  ReshapeTo(ctx, joined, target, ctx.Output(0));
}

// Expand: x * ones(shape) broadcasts x (float dtypes).
void Expand(Context& ctx) {
  ctx.AllowAttrs({});
  const std::vector<int64_t> shape = ctx.ConstInts(1, "shape");
  for (int64_t d : shape) {
    if (d < 0) ctx.Invalid(fmt::format("shape {} has a negative dimension", List(shape)));
  }
  const Value& x = ctx.In(0);
  if (!IsFloatingPoint(x.dtype) && !x.constant) ctx.Unsupported(fmt::format("Expand of a {} runtime value", DTypeName(x.dtype)));
  Tensor ones(x.dtype, shape);
  for (int64_t i = 0; i < ones.numel(); ++i) ones.SetDouble(i, 1.0);
  ctx.Op("math.mul", {ctx.Input(0), ctx.ConstTensor(ones, "ones")}, {}, ctx.Output(0));
}

void ConstantOfShape(Context& ctx) {
  ctx.AllowAttrs({"value"});
  const std::vector<int64_t> shape = ctx.ConstInts(0, "shape");
  Tensor fill = Tensor::FromDoubles(DType::Float32, {1}, std::vector<double>{0.0});
  if (const auto* proto = ctx.AttrTensor("value")) fill = TensorFromProto(*proto, ctx.model() + ": " + ctx.NodeWhere(), "");
  if (fill.numel() != 1) ctx.Invalid("attribute 'value' must hold one element");
  for (int64_t d : shape) {
    if (d < 0) ctx.Invalid(fmt::format("shape {} has a negative dimension", List(shape)));
  }
  Tensor t(fill.dtype(), shape);
  const size_t width = DTypeStorageBytes(fill.dtype(), 1);
  if (fill.dtype() == DType::Bool) {
    for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, fill.GetDouble(0));
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) std::memcpy(t.data_as<char>() + i * static_cast<int64_t>(width), fill.data(), width);
  }
  ctx.DefineConstant(ctx.Output(0), t);
}

void Range(Context& ctx) {
  ctx.AllowAttrs({});
  const Tensor s = ctx.RequireConst(0, "start"), l = ctx.RequireConst(1, "limit"), d = ctx.RequireConst(2, "delta");
  const double start = s.GetDouble(0), limit = l.GetDouble(0), delta = d.GetDouble(0);
  if (delta == 0) ctx.Invalid("delta must be non-zero");
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (count > 1e8) ctx.Invalid("range is too long");
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i) * delta;
  ctx.DefineConstant(ctx.Output(0), CastTensor(Tensor::FromDoubles(DType::Float64, {static_cast<int64_t>(v.size())}, v), s.dtype()));
}

// Tile with constant repeats: the input concatenated with itself along each axis.
void Tile(Context& ctx) {
  ctx.AllowAttrs({});
  const std::vector<int64_t> repeats = ctx.ConstInts(1, "repeats");
  const Value& x = ctx.In(0);
  if (static_cast<int64_t>(repeats.size()) != x.rank()) ctx.Invalid("repeats must have one entry per axis");
  std::string y = ctx.Input(0);
  for (size_t a = 0; a < repeats.size(); ++a) {
    if (repeats[a] < 1) ctx.Unsupported(fmt::format("repeat {} (zero-size tiles)", repeats[a]));
    if (repeats[a] == 1) continue;
    if (repeats[a] > 64) ctx.Unsupported(fmt::format("repeat {} (at most 64 lower to concat)", repeats[a]));
    y = ctx.Op("shape.concat", std::vector<std::string>(static_cast<size_t>(repeats[a]), y),
               {{"axis", static_cast<int64_t>(a)}});
  }
  ctx.Alias(y, ctx.Output(0));
}

}  // namespace

void AddShapeOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"Identity", 1, kMax, Identity});
  t.push_back({"Reshape", 5, kMax, ReshapeOp});
  t.push_back({"Transpose", 1, kMax, Transpose});
  t.push_back({"Concat", 4, kMax, Concat});
  t.push_back({"Split", 2, 12, Split2});
  t.push_back({"Split", 13, kMax, Split13});
  t.push_back({"Slice", 1, 9, Slice1});
  t.push_back({"Slice", 10, kMax, Slice10});
  t.push_back({"Flatten", 1, kMax, Flatten});
  t.push_back({"Squeeze", 1, 12, Squeeze1});
  t.push_back({"Squeeze", 13, kMax, Squeeze13});
  t.push_back({"Unsqueeze", 1, 12, Unsqueeze1});
  t.push_back({"Unsqueeze", 13, kMax, Unsqueeze13});
  t.push_back({"Shape", 1, kMax, ShapeOp});
  t.push_back({"Size", 1, kMax, Size});
  t.push_back({"Constant", 1, kMax, Constant});
  t.push_back({"Cast", 6, kMax, Cast});
  t.push_back({"CastLike", 15, kMax, CastLike});
  t.push_back({"Gather", 1, kMax, Gather});
  t.push_back({"Expand", 8, kMax, Expand});
  t.push_back({"ConstantOfShape", 9, kMax, ConstantOfShape});
  t.push_back({"Range", 11, kMax, Range});
  t.push_back({"Tile", 6, kMax, Tile});
}

}  // namespace backplane::onnx
