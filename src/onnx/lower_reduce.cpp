// Lowerings of ONNX's Reduce* ops onto reduction.* (which drops the reduced axes; keepdims is a
// reshape). ReduceMean divides the sum by the static element count.
#include <fmt/format.h>

#include <algorithm>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

void Reduce(Context& ctx, Kind kind, bool axes_input) {
  std::optional<std::vector<int64_t>> axes_given;
  bool noop_if_empty = false;
  if (axes_input) {
    ctx.AllowAttrs({"keepdims", "noop_with_empty_axes"});
    noop_if_empty = ctx.AttrInt("noop_with_empty_axes", 0) != 0;
    if (ctx.HasInput(1)) axes_given = ctx.ConstInts(1, "axes");
  } else {
    ctx.AllowAttrs({"axes", "keepdims"});
    axes_given = ctx.AttrInts("axes");
  }
  const bool keepdims = ctx.AttrInt("keepdims", 1) != 0;
  const Value& x = ctx.In(0);
  const int64_t r = x.rank();
  if (noop_if_empty && (!axes_given || axes_given->empty())) {
    ctx.Alias(ctx.Input(0), ctx.Output(0));
    return;
  }
  std::vector<int64_t> axes;
  if (axes_given && !axes_given->empty()) {
    for (int64_t a : *axes_given) axes.push_back(NormalizeAxis(ctx, a, r, "axis"));
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  int64_t count = 1;
  bool static_count = true;
  for (int64_t a : axes) {
    const ir::Dim& d = x.dims[static_cast<size_t>(a)];
    if (d.symbol.empty()) count *= d.size;
    else static_count = false;
  }
  const DType dt = x.dtype;
  std::string in = ctx.Input(0);
  if (kind == Kind::L2 || kind == Kind::SumSquare) in = ctx.Op("math.mul", {in, in});
  std::string y;
  const ir::AttrMap axis_attr = {{"axis", axes}};
  switch (kind) {
    case Kind::Max: y = ctx.Op("reduction.max", {in}, axis_attr); break;
    case Kind::Min: y = ctx.Op("reduction.min", {in}, axis_attr); break;
    case Kind::Prod: y = ctx.Op("reduction.prod", {in}, axis_attr); break;
    case Kind::L1: y = ctx.Op("reduction.l1_norm", {in}, axis_attr); break;
    case Kind::LogSumExp: {
      // math.logsumexp takes one axis: move the reduced axes to the end and flatten them.
      std::vector<int64_t> perm;
      for (int64_t i = 0; i < r; ++i) {
        if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i);
      }
      const size_t kept = perm.size();
      perm.insert(perm.end(), axes.begin(), axes.end());
      std::string moved = in;
      if (!std::is_sorted(perm.begin(), perm.end())) moved = ctx.Op("shape.transpose", {in}, {{"perm", perm}});
      std::vector<ir::Dim> flat;
      for (size_t i = 0; i < kept; ++i) flat.push_back(x.dims[static_cast<size_t>(perm[i])]);
      if (!static_count) ctx.Unsupported("ReduceLogSumExp over symbolic axes");
      flat.push_back({count, ""});
      y = ctx.Op("math.logsumexp", {ReshapeTo(ctx, moved, flat)}, {{"axis", int64_t{-1}}});
      break;
    }
    default: y = ctx.Op("reduction.sum", {in}, axis_attr); break;
  }
  if (kind == Kind::Mean) {
    if (!static_count) ctx.Unsupported("ReduceMean over symbolic axes (the count must be static)");
    y = ctx.Op("math.div", {y, ctx.Scalar(static_cast<double>(count), dt)});
  } else if (kind == Kind::L2) {
    y = ctx.Op("math.sqrt", {y});
  } else if (kind == Kind::LogSum) {
    y = ctx.Op("math.log", {y});
  }
  if (keepdims) {
    std::vector<ir::Dim> target = x.dims;
    for (int64_t a : axes) target[static_cast<size_t>(a)] = {1, ""};
    ReshapeTo(ctx, y, target, ctx.Output(0));
  } else {
    ctx.Alias(y, ctx.Output(0));
  }
}

}  // namespace

void AddReduceOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"ReduceSum", 1, 12, [](Context& c) { Reduce(c, Kind::Sum, false); }});
  t.push_back({"ReduceSum", 13, kMax, [](Context& c) { Reduce(c, Kind::Sum, true); }});
  t.push_back({"ReduceMean", 1, kMax, [](Context& c) { Reduce(c, Kind::Mean, false); }});
  t.push_back({"ReduceMax", 1, kMax, [](Context& c) { Reduce(c, Kind::Max, false); }});
  t.push_back({"ReduceMin", 1, kMax, [](Context& c) { Reduce(c, Kind::Min, false); }});
  t.push_back({"ReduceProd", 1, kMax, [](Context& c) { Reduce(c, Kind::Prod, false); }});
  t.push_back({"ReduceL1", 1, kMax, [](Context& c) { Reduce(c, Kind::L1, false); }});
  t.push_back({"ReduceL2", 1, kMax, [](Context& c) { Reduce(c, Kind::L2, false); }});
  t.push_back({"ReduceSumSquare", 1, kMax, [](Context& c) { Reduce(c, Kind::SumSquare, false); }});
  t.push_back({"ReduceLogSum", 1, kMax, [](Context& c) { Reduce(c, Kind::LogSum, false); }});
  t.push_back({"ReduceLogSumExp", 1, kMax, [](Context& c) { Reduce(c, Kind::LogSumExp, false); }});
}

}  // namespace backplane::onnx
