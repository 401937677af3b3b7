// Lowerings of ONNX's indexing ops: TopK, ScatterElements/Scatter, ScatterND and GatherND onto the
// tensor.* index ops; Compress and ReverseSequence as tensor.gather_elements with constant indices
// (their condition and lengths must be import-time constants); NonZero, EyeLike and Unique as
// constants computed on the host (NonZero and Unique only of a constant input: their output shape
// depends on the data).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {
namespace {

// ---- TopK ------------------------------------------------------------------------------------------

// TopK: opset 1 takes k as an attribute, opset 10 as a constant input; opset 11 adds largest and
// sorted (the output is always sorted, which sorted = 0 allows).
void TopK(Context& ctx) {
  const int64_t opset = ctx.opset();
  if (opset >= 11) {
    ctx.AllowAttrs({"axis", "largest", "sorted"});
  } else if (opset >= 10) {
    ctx.AllowAttrs({"axis"});
  } else {
    ctx.AllowAttrs({"axis", "k"});
  }
  const Value& x = ctx.In(0);
  if (x.rank() == 0) ctx.Invalid("input 'X' must have rank >= 1");
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", -1), x.rank(), "attribute 'axis'");
  int64_t k = 0;
  if (opset >= 10) {
    const std::vector<int64_t> ks = ctx.ConstInts(1, "K");
    if (ks.size() != 1) ctx.Invalid(fmt::format("input 'K' must hold one value, got {}", ks.size()));
    k = ks[0];
  } else {
    if (!ctx.HasAttr("k")) ctx.Invalid("attribute 'k' is required (opset < 10)");
    k = ctx.AttrInt("k", 0);
  }
  const ir::Dim& n = x.dims[static_cast<size_t>(axis)];
  if (k < 0 || (n.symbol.empty() && k > n.size)) {
    ctx.Invalid(fmt::format("k must be in [0, {}] (the size of axis {}), got {}", n.size, axis, k));
  }
  ctx.Emit("tensor.topk", {ctx.Input(0)},
           {{"k", k}, {"axis", axis}, {"largest", ctx.AttrInt("largest", 1) != 0}},
           {ctx.HasOutput(0) ? ctx.Output(0) : ctx.Fresh("topk_values"),
            ctx.HasOutput(1) ? ctx.Output(1) : ctx.Fresh("topk_indices")});
}

// ---- scatters and GatherND ---------------------------------------------------------------------

std::string ReductionAttr(Context& ctx) {
  const std::string r = ctx.AttrString("reduction", "none");
  if (r != "none" && r != "add" && r != "mul") {
    ctx.Unsupported(fmt::format("attribute 'reduction' must be none, add or mul, got '{}'", r));
  }
  return r;
}

// ScatterElements (and opset 9-10 Scatter, the same op without reduction).
void ScatterElements(Context& ctx, bool reduction) {
  if (reduction) {
    ctx.AllowAttrs({"axis", "reduction"});
  } else {
    ctx.AllowAttrs({"axis"});
  }
  const int64_t rank = ctx.In(0).rank();
  if (rank == 0) ctx.Invalid("input 'data' must have rank >= 1");
  const int64_t axis = ctx.AttrInt("axis", 0);
  if (ctx.opset() < 11 && axis < 0) ctx.Invalid(fmt::format("axis {} is negative (allowed from opset 11)", axis));
  NormalizeAxis(ctx, axis, rank, "attribute 'axis'");
  ctx.Op("tensor.scatter_elements", {ctx.Input(0), ctx.Input(1), ctx.Input(2)},
         {{"axis", axis}, {"reduction", reduction ? ReductionAttr(ctx) : std::string("none")}}, ctx.Output(0));
}

void ScatterND(Context& ctx) {
  if (ctx.opset() >= 16) {
    ctx.AllowAttrs({"reduction"});
  } else {
    ctx.AllowAttrs({});
  }
  ctx.Op("tensor.scatter_nd", {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, {{"reduction", ReductionAttr(ctx)}},
         ctx.Output(0));
}

void GatherND(Context& ctx) {
  if (ctx.opset() >= 12) {
    ctx.AllowAttrs({"batch_dims"});
  } else {
    ctx.AllowAttrs({});
  }
  ctx.Op("tensor.gather_nd", {ctx.Input(0), ctx.Input(1)}, {{"batch_dims", ctx.AttrInt("batch_dims", 0)}},
         ctx.Output(0));
}

// ---- Compress and ReverseSequence: tensor.gather_elements with constant indices ---------------

Shape StaticShape(Context& ctx, const Value& v, const std::string& what) {
  if (!v.is_static()) ctx.Unsupported(fmt::format("{} must have a static shape", what));
  return v.shape();
}

// Element (o, k, j) of an [outer, picks, inner] int64 tensor = picks[k] (the same along o and j).
Tensor PickAlongAxis(const Shape& shape, int64_t axis, const std::vector<int64_t>& picks) {
  Shape out = shape;
  out[static_cast<size_t>(axis)] = static_cast<int64_t>(picks.size());
  Tensor t(DType::Int64, out);
  const auto a = static_cast<size_t>(axis);
  int64_t inner = 1;
  for (size_t d = a + 1; d < out.size(); ++d) inner *= out[d];
  const auto n = static_cast<int64_t>(picks.size());
  int64_t* p = t.data_as<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = picks[static_cast<size_t>((i / inner) % n)];
  return t;
}

// Compress: the condition (bool, 1-D) must be a constant; without an axis the input is flattened.
void Compress(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  const Value& cond = ctx.In(1);
  if (!cond.constant) {
    ctx.Unsupported("input 'condition' must be an import-time constant (the output shape depends on it)");
  }
  if (cond.rank() != 1) ctx.Invalid(fmt::format("input 'condition' must be 1-D, got rank {}", cond.rank()));
  const Value& x = ctx.In(0);
  Shape shape = StaticShape(ctx, x, "input 'input'");
  std::string data = ctx.Input(0);
  int64_t axis = 0;
  if (ctx.HasAttr("axis")) {
    if (x.rank() == 0) ctx.Invalid("input 'input' must have rank >= 1 with attribute 'axis'");
    const int64_t a = ctx.AttrInt("axis", 0);
    if (ctx.opset() < 11 && a < 0) ctx.Invalid(fmt::format("axis {} is negative (allowed from opset 11)", a));
    axis = NormalizeAxis(ctx, a, x.rank(), "attribute 'axis'");
  } else {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    shape = {n};
    if (x.rank() != 1) data = ReshapeTo(ctx, data, {{n, ""}});
  }
  const int64_t extent = shape[static_cast<size_t>(axis)];
  const Tensor& c = *cond.constant;
  if (c.numel() > extent) {
    ctx.Invalid(fmt::format("input 'condition' has {} entries, more than the {} along the axis", c.numel(), extent));
  }
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (c.GetDouble(i) != 0.0) picks.push_back(i);
  }
  if (picks.empty()) ctx.Unsupported("a condition with no true entry (a zero-size result)");
  const Tensor idx = PickAlongAxis(shape, axis, picks);
  ctx.Op("tensor.gather_elements", {data, ctx.ConstTensor(idx, "compress_indices")}, {{"axis", axis}},
         ctx.Output(0));
}

// ReverseSequence: sequence_lens must be a constant; along time_axis, the first lens[b] elements of
// batch b are reversed, the rest kept.
void ReverseSequence(Context& ctx) {
  ctx.AllowAttrs({"batch_axis", "time_axis"});
  const Value& x = ctx.In(0);
  if (x.rank() < 2) ctx.Invalid(fmt::format("input 'input' must have rank >= 2, got {}", x.rank()));
  const Shape shape = StaticShape(ctx, x, "input 'input'");
  const int64_t batchAxis = ctx.AttrInt("batch_axis", 1), timeAxis = ctx.AttrInt("time_axis", 0);
  if ((batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) || batchAxis == timeAxis) {
    ctx.Invalid(fmt::format("attributes 'batch_axis' and 'time_axis' must be 0 and 1 in some order, got {} and {}",
                            batchAxis, timeAxis));
  }
  const std::vector<int64_t> lens = ctx.ConstInts(1, "sequence_lens");
  const int64_t batch = shape[static_cast<size_t>(batchAxis)], time = shape[static_cast<size_t>(timeAxis)];
  if (static_cast<int64_t>(lens.size()) != batch) {
    ctx.Invalid(fmt::format("input 'sequence_lens' must hold {} values (the batch size), got {}", batch, lens.size()));
  }
  for (int64_t len : lens) {
    if (len < 0 || len > time) ctx.Invalid(fmt::format("sequence_lens {} is outside [0, {}]", len, time));
  }
  Tensor idx(DType::Int64, shape);
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  int64_t* p = idx.data_as<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t i0 = i / (inner * shape[1]), i1 = (i / inner) % shape[1];
    const int64_t t = timeAxis == 0 ? i0 : i1, b = timeAxis == 0 ? i1 : i0;
    const int64_t len = lens[static_cast<size_t>(b)];
    p[i] = t < len ? len - 1 - t : t;
  }
  ctx.Op("tensor.gather_elements", {ctx.Input(0), ctx.ConstTensor(idx, "reverse_indices")}, {{"axis", timeAxis}},
         ctx.Output(0));
}

// ---- host-computed constants: NonZero, EyeLike, Unique ------------------------------------------

// NonZero: int64 [rank, count] coordinates of the nonzero elements in row-major order.
void NonZero(Context& ctx) {
  ctx.AllowAttrs({});
  const Value& x = ctx.In(0);
  if (!x.constant) ctx.Unsupported("a runtime input (the output shape depends on the data); only a constant folds");
  const Tensor& t = *x.constant;
  const Shape shape = t.shape().empty() ? Shape{1} : t.shape();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.GetDouble(i) != 0.0) hits.push_back(i);
  }
  const auto rank = static_cast<int64_t>(shape.size());
  const auto count = static_cast<int64_t>(hits.size());
  Tensor out(DType::Int64, {rank, count});
  for (int64_t h = 0; h < count; ++h) {
    int64_t rest = hits[static_cast<size_t>(h)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out.data_as<int64_t>()[d * count + h] = rest % shape[static_cast<size_t>(d)];
      rest /= shape[static_cast<size_t>(d)];
    }
  }
  ctx.DefineConstant(ctx.Output(0), out);
}

// EyeLike: ones on diagonal k of a 2-D static shape, in attribute dtype (default: the input's).
void EyeLike(Context& ctx) {
  ctx.AllowAttrs({"dtype", "k"});
  const Value& x = ctx.In(0);
  if (x.rank() != 2) ctx.Invalid(fmt::format("input must have rank 2, got {}", x.rank()));
  const Shape shape = StaticShape(ctx, x, "input");
  DType dtype = x.dtype;
  if (ctx.HasAttr("dtype")) {
    const auto onnx = static_cast<int32_t>(ctx.AttrInt("dtype", 0));
    const auto d = DTypeFromOnnx(onnx);
    if (!d) ctx.Unsupported(fmt::format("attribute 'dtype' = {} is not a supported dtype", OnnxTypeName(onnx)));
    dtype = *d;
  }
  const int64_t k = ctx.AttrInt("k", 0);
  Tensor out(dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.SetDouble(i, i % shape[1] - i / shape[1] == k ? 1.0 : 0.0);
  ctx.DefineConstant(ctx.Output(0), out);
}

// Unique of a constant: the distinct elements (or slices along `axis`), sorted or in order of first
// occurrence, with the first-occurrence indices, the inverse indices and the counts (numpy.unique).
void Unique(Context& ctx) {
  ctx.AllowAttrs({"axis", "sorted"});
  const Value& x = ctx.In(0);
  if (!x.constant) ctx.Unsupported("a runtime input (the output shape depends on the data); only a constant folds");
  const Tensor& t = *x.constant;
  if (t.dtype() != DType::Float64 && DTypeBits(t.dtype()) == 64) {
    ctx.Unsupported(fmt::format("a {} input (the host computation compares through double)", DTypeName(t.dtype())));
  }
  Shape shape = t.shape();
  int64_t axis = 0;
  if (ctx.HasAttr("axis")) {
    if (shape.empty()) ctx.Invalid("input must have rank >= 1 with attribute 'axis'");
    axis = NormalizeAxis(ctx, ctx.AttrInt("axis", 0), static_cast<int64_t>(shape.size()), "attribute 'axis'");
  } else {
    shape = {t.numel()};
  }
  const auto a = static_cast<size_t>(axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < a; ++d) outer *= shape[d];
  for (size_t d = a + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[a];
  // Slice i as a key: its elements in (outer, inner) order.
  std::vector<std::vector<double>> keys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) keys[static_cast<size_t>(i)].push_back(t.GetDouble((o * n + i) * inner + j));
    }
  }
  for (const auto& key : keys) {
    for (double v : key) {
      if (v != v) ctx.Unsupported("a NaN in the input (its equality is not defined here)");
    }
  }
  std::map<std::vector<double>, int64_t> first;  // key -> first index
  std::vector<int64_t> order;                    // first indices, in order of appearance
  for (int64_t i = 0; i < n; ++i) {
    if (first.emplace(keys[static_cast<size_t>(i)], i).second) order.push_back(i);
  }
  if (ctx.AttrInt("sorted", 1) != 0) {
    order.clear();
    for (const auto& [key, i] : first) order.push_back(i);
  }
  const auto u = static_cast<int64_t>(order.size());
  std::map<std::vector<double>, int64_t> slot;
  for (int64_t s = 0; s < u; ++s) slot[keys[static_cast<size_t>(order[static_cast<size_t>(s)])]] = s;
  Shape yshape = shape;
  yshape[a] = u;
  Tensor y(t.dtype(), yshape), indices(DType::Int64, {u}), inverse(DType::Int64, {n}), counts(DType::Int64, {u});
  for (int64_t s = 0; s < u; ++s) {
    const int64_t i = order[static_cast<size_t>(s)];
    indices.data_as<int64_t>()[s] = i;
    counts.data_as<int64_t>()[s] = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        y.SetDouble((o * u + s) * inner + j, t.GetDouble((o * n + i) * inner + j));
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = slot[keys[static_cast<size_t>(i)]];
    inverse.data_as<int64_t>()[i] = s;
    ++counts.data_as<int64_t>()[s];
  }
  const Tensor* outs[] = {&y, &indices, &inverse, &counts};
  for (int i = 0; i < 4; ++i) {
    if (ctx.HasOutput(i)) ctx.DefineConstant(ctx.Output(i), *outs[i]);
  }
}

}  // namespace

void AddIndexOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"TopK", 1, kMax, TopK});
  t.push_back({"ScatterElements", 11, kMax, [](Context& c) { ScatterElements(c, c.opset() >= 16); }});
  t.push_back({"Scatter", 9, 10, [](Context& c) { ScatterElements(c, false); }});
  t.push_back({"ScatterND", 11, kMax, ScatterND});
  t.push_back({"GatherND", 11, kMax, GatherND});
  t.push_back({"Compress", 9, kMax, Compress});
  t.push_back({"ReverseSequence", 10, kMax, ReverseSequence});
  t.push_back({"NonZero", 9, kMax, NonZero});
  t.push_back({"EyeLike", 9, kMax, EyeLike});
  t.push_back({"Unique", 11, kMax, Unique});
}

}  // namespace backplane::onnx
