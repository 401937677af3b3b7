// Lowerings of ONNX's sequence and optional ops. A sequence is an import-time list of tensor values
// and an optional holds none or one value (Context's Composite), so these ops rearrange names;
// only ConcatFromSequence and SplitToSequence emit catalog ops. Positions must be known at import.
#include <fmt/format.h>

#include <numeric>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

const Composite& SequenceIn(const Context& ctx, int i) {
  const Composite& c = ctx.CompositeIn(i);
  if (c.kind != Composite::Kind::Sequence) ctx.Invalid(fmt::format("input {} '{}' must be a sequence, got an optional", i, ctx.Input(i)));
  return c;
}

void DefineSequence(Context& ctx, const std::string& out, std::vector<std::string> items) {
  ctx.DefineComposite(out, Composite{Composite::Kind::Sequence, std::move(items)});
}

// A position input (a scalar known at import time) in [-n, n - 1], or [-n, n] when `end_ok`.
int64_t Position(Context& ctx, int i, int64_t n, bool end_ok) {
  const std::vector<int64_t> p = ctx.ConstInts(i, "position");
  if (p.size() != 1) ctx.Invalid(fmt::format("input {} 'position' must hold one element, got {}", i, p.size()));
  const int64_t hi = end_ok ? n : n - 1;
  if (p[0] < -n || p[0] > hi) ctx.Invalid(fmt::format("input {} 'position' {} is out of range [{}, {}] for a sequence of {}", i, p[0], -n, hi, n));
  return p[0] < 0 ? p[0] + n : p[0];
}

void SequenceConstruct(Context& ctx) {
  ctx.AllowAttrs({});
  std::vector<std::string> items;
  for (int i = 0; i < ctx.NumInputs(); ++i) {
    const Value& v = ctx.In(i);
    if (v.dtype != ctx.In(0).dtype) {
      ctx.Invalid(fmt::format("input {} is {}, input 0 is {} (a sequence holds one element type)", i, DTypeName(v.dtype), DTypeName(ctx.In(0).dtype)));
    }
    items.push_back(ctx.Input(i));
  }
  DefineSequence(ctx, ctx.Output(0), std::move(items));
}

void SequenceEmpty(Context& ctx) {
  ctx.AllowAttrs({"dtype"});
  DefineSequence(ctx, ctx.Output(0), {});
}

void SequenceAt(Context& ctx) {
  ctx.AllowAttrs({});
  const Composite& s = SequenceIn(ctx, 0);
  const int64_t p = Position(ctx, 1, static_cast<int64_t>(s.items.size()), false);
  ctx.Alias(s.items[static_cast<size_t>(p)], ctx.Output(0));
}

void SequenceInsert(Context& ctx) {
  ctx.AllowAttrs({});
  std::vector<std::string> items = SequenceIn(ctx, 0).items;
  (void)ctx.In(1);  // a tensor
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t p = ctx.HasInput(2) ? Position(ctx, 2, n, true) : n;
  items.insert(items.begin() + p, ctx.Input(1));
  DefineSequence(ctx, ctx.Output(0), std::move(items));
}

void SequenceErase(Context& ctx) {
  ctx.AllowAttrs({});
  std::vector<std::string> items = SequenceIn(ctx, 0).items;
  const int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) ctx.Invalid("input 0 is an empty sequence (nothing to erase)");
  const int64_t p = ctx.HasInput(1) ? Position(ctx, 1, n, false) : n - 1;
  items.erase(items.begin() + p);
  DefineSequence(ctx, ctx.Output(0), std::move(items));
}

void SequenceLength(Context& ctx) {
  ctx.AllowAttrs({});
  ctx.DefineConstant(ctx.Output(0), IntsTensor({static_cast<int64_t>(SequenceIn(ctx, 0).items.size())}, {}));
}

void ConcatFromSequence(Context& ctx) {
  ctx.AllowAttrs({"axis", "new_axis"});
  if (!ctx.HasAttr("axis")) ctx.Invalid("attribute 'axis' is required");
  const std::vector<std::string>& items = SequenceIn(ctx, 0).items;
  if (items.empty()) ctx.Invalid("input 0 is an empty sequence (the result's shape is unknown)");
  const int64_t new_axis = ctx.AttrInt("new_axis", 0);
  if (new_axis != 0 && new_axis != 1) ctx.Invalid(fmt::format("attribute 'new_axis' must be 0 or 1, got {}", new_axis));
  const int64_t rank = ctx.Get(items[0]).rank();
  if (new_axis == 1) {
    StackValues(ctx, items, NormalizeAxis(ctx, ctx.AttrInt("axis", 0), rank + 1, "attribute 'axis'"), ctx.Output(0));
    return;
  }
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", 0), rank, "attribute 'axis'");
  if (items.size() == 1) {
    ctx.Alias(items[0], ctx.Output(0));
    return;
  }
  ctx.Op("shape.concat", items, {{"axis", axis}}, ctx.Output(0));
}

void SplitToSequence(Context& ctx) {
  ctx.AllowAttrs({"axis", "keepdims"});
  const Value x = ctx.In(0);
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", 0), x.rank(), "attribute 'axis'");
  const ir::Dim& d = x.dims[static_cast<size_t>(axis)];
  if (!d.symbol.empty()) ctx.Unsupported(fmt::format("the split axis {} has symbolic length '{}'; a static one is needed", axis, d.symbol));
  const int64_t len = d.size;
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (ctx.HasInput(1)) {
    const Tensor split = ctx.RequireConst(1, "split");
    const std::vector<int64_t> v = ctx.ConstInts(1, "split");
    if (split.shape().empty()) {
      if (v[0] <= 0) ctx.Invalid(fmt::format("input 1 'split' {} must be positive", v[0]));
      for (int64_t at = 0; at < len; at += v[0]) sizes.push_back(std::min(v[0], len - at));
    } else {
      if (split.shape().size() != 1) ctx.Invalid("input 1 'split' must be a scalar or 1-D");
      for (int64_t s : v) {
        if (s < 0) ctx.Invalid(fmt::format("input 1 'split' has a negative size {}", s));
      }
      if (std::accumulate(v.begin(), v.end(), int64_t{0}) != len) {
        ctx.Invalid(fmt::format("input 1 'split' sums to {}, the axis has length {}", std::accumulate(v.begin(), v.end(), int64_t{0}), len));
      }
      sizes = v;
    }
  } else {
    const int64_t keepdims = ctx.AttrInt("keepdims", 1);
    if (keepdims != 0 && keepdims != 1) ctx.Invalid(fmt::format("attribute 'keepdims' must be 0 or 1, got {}", keepdims));
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = keepdims == 0;
  }
  std::vector<std::string> parts;
  if (sizes.size() == 1) {
    parts.push_back(ctx.Input(0));
  } else if (!sizes.empty()) {
    for (size_t i = 0; i < sizes.size(); ++i) parts.push_back(ctx.Fresh(ctx.Output(0)));
    ctx.Emit("shape.split", {ctx.Input(0)}, {{"axis", axis}, {"sizes", sizes}}, parts);
  }
  if (squeeze) {
    std::vector<ir::Dim> dims = x.dims;
    dims.erase(dims.begin() + axis);
    for (std::string& p : parts) p = ReshapeTo(ctx, p, dims);
  }
  DefineSequence(ctx, ctx.Output(0), std::move(parts));
}

// SequenceMap: the body imported once per element, bound to element i of every sequence input and
// to the tensor inputs as they are; each body output collects into an output sequence.
void SequenceMap(Context& ctx) {
  ctx.AllowAttrs({"body"});
  const ::onnx::GraphProto& body = AttrGraph(ctx, "body");
  const size_t n = SequenceIn(ctx, 0).items.size();
  for (int i = 1; i < ctx.NumInputs(); ++i) {
    if (ctx.IsComposite(ctx.Input(i)) && SequenceIn(ctx, i).items.size() != n) {
      ctx.Invalid(fmt::format("input {} has {} elements, input 0 has {}", i, SequenceIn(ctx, i).items.size(), n));
    }
  }
  if (body.output_size() != ctx.NumOutputs()) {
    ctx.Invalid(fmt::format("the body has {} outputs, the node {}", body.output_size(), ctx.NumOutputs()));
  }
  std::vector<std::vector<std::string>> outs(static_cast<size_t>(ctx.NumOutputs()));
  for (size_t e = 0; e < n; ++e) {
    std::vector<std::string> in;
    for (int i = 0; i < ctx.NumInputs(); ++i) {
      in.push_back(ctx.IsComposite(ctx.Input(i)) ? SequenceIn(ctx, i).items[e] : ctx.Input(i));
    }
    const std::vector<std::string> got = ImportSubgraph(ctx, body, in, fmt::format("body element {}", e));
    for (size_t k = 0; k < got.size(); ++k) outs[k].push_back(got[k]);
  }
  for (int k = 0; k < ctx.NumOutputs(); ++k) {
    if (ctx.HasOutput(k)) DefineSequence(ctx, ctx.Output(k), outs[static_cast<size_t>(k)]);
  }
}

void Optional(Context& ctx) {
  ctx.AllowAttrs({"type"});
  std::vector<std::string> items;
  if (ctx.HasInput(0)) {
    if (!ctx.Has(ctx.Input(0))) ctx.Invalid(fmt::format("input '{}' is not defined before its use", ctx.Input(0)));
    items.push_back(ctx.Input(0));
  } else if (!ctx.HasAttr("type")) {
    ctx.Invalid("an empty Optional needs attribute 'type'");
  }
  ctx.DefineComposite(ctx.Output(0), Composite{Composite::Kind::Optional, std::move(items)});
}

// A tensor or a sequence counts as a present value (ONNX opset 18 semantics).
bool HasElement(const Context& ctx, int i) {
  if (!ctx.HasInput(i)) return false;
  if (!ctx.IsComposite(ctx.Input(i))) {
    (void)ctx.In(i);  // defined
    return true;
  }
  const Composite& c = ctx.CompositeIn(i);
  return c.kind == Composite::Kind::Sequence || !c.items.empty();
}

void OptionalHasElement(Context& ctx) {
  ctx.AllowAttrs({});
  ctx.DefineConstant(ctx.Output(0), BoolScalar(HasElement(ctx, 0)));
}

void OptionalGetElement(Context& ctx) {
  ctx.AllowAttrs({});
  const std::string& in = ctx.Input(0);
  if (ctx.IsComposite(in) && ctx.CompositeIn(0).kind == Composite::Kind::Optional) {
    const Composite& c = ctx.CompositeIn(0);
    if (c.items.empty()) ctx.Invalid(fmt::format("input 0 '{}' is an empty optional (none)", in));
    ctx.Alias(c.items[0], ctx.Output(0));
    return;
  }
  ctx.Alias(in, ctx.Output(0));
}

}  // namespace

void AddSequenceOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"SequenceConstruct", 11, kMax, SequenceConstruct});
  t.push_back({"SequenceEmpty", 11, kMax, SequenceEmpty});
  t.push_back({"SequenceAt", 11, kMax, SequenceAt});
  t.push_back({"SequenceInsert", 11, kMax, SequenceInsert});
  t.push_back({"SequenceErase", 11, kMax, SequenceErase});
  t.push_back({"SequenceLength", 11, kMax, SequenceLength});
  t.push_back({"ConcatFromSequence", 11, kMax, ConcatFromSequence});
  t.push_back({"SplitToSequence", 11, kMax, SplitToSequence});
  t.push_back({"SequenceMap", 17, kMax, SequenceMap});
  t.push_back({"Optional", 15, kMax, Optional});
  t.push_back({"OptionalHasElement", 15, kMax, OptionalHasElement});
  t.push_back({"OptionalGetElement", 15, kMax, OptionalGetElement});
}

}  // namespace backplane::onnx
