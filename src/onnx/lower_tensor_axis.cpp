// Lowerings of ONNX's ArgMax, ArgMin, CumSum, Trilu and GatherElements onto the tensor.* axis ops
// (tensor.argmax/argmin, tensor.cumsum, tensor.triu/tril, tensor.gather_elements).
#include <fmt/format.h>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

// ArgMax / ArgMin: axis (default 0; negative from opset 11), keepdims (default 1) and, from
// opset 12, select_last_index.
void ArgReduce(Context& ctx, const char* op) {
  if (ctx.opset() >= 12) {
    ctx.AllowAttrs({"axis", "keepdims", "select_last_index"});
  } else {
    ctx.AllowAttrs({"axis", "keepdims"});
  }
  const int64_t rank = ctx.In(0).rank();
  const int64_t axis = ctx.AttrInt("axis", 0);
  if (ctx.opset() < 11 && axis < 0) ctx.Invalid(fmt::format("axis {} is negative (allowed from opset 11)", axis));
  NormalizeAxis(ctx, axis, rank, "attribute 'axis'");
  ctx.Op(op, {ctx.Input(0)},
         {{"axis", axis},
          {"keepdims", ctx.AttrInt("keepdims", 1) != 0},
          {"select_last_index", ctx.AttrInt("select_last_index", 0) != 0}},
         ctx.Output(0));
}

// CumSum: the axis is a constant scalar input (int32 or int64).
void CumSum(Context& ctx) {
  ctx.AllowAttrs({"exclusive", "reverse"});
  const std::vector<int64_t> axis = ctx.ConstInts(1, "axis");
  if (axis.size() != 1) ctx.Invalid(fmt::format("axis must hold one value, got {}", axis.size()));
  NormalizeAxis(ctx, axis[0], ctx.In(0).rank(), "input 'axis'");
  ctx.Op("tensor.cumsum", {ctx.Input(0)},
         {{"axis", axis[0]},
          {"exclusive", ctx.AttrInt("exclusive", 0) != 0},
          {"reverse", ctx.AttrInt("reverse", 0) != 0}},
         ctx.Output(0));
}

// Trilu: attribute upper (default 1) and an optional constant scalar input k (default 0).
void Trilu(Context& ctx) {
  ctx.AllowAttrs({"upper"});
  int64_t k = 0;
  if (ctx.HasInput(1)) {
    const std::vector<int64_t> ks = ctx.ConstInts(1, "k");
    if (ks.size() != 1) ctx.Invalid(fmt::format("k must hold one value, got {}", ks.size()));
    k = ks[0];
  }
  if (ctx.In(0).rank() < 2) ctx.Invalid("input must have rank >= 2");
  const bool upper = ctx.AttrInt("upper", 1) != 0;
  ctx.Op(upper ? "tensor.triu" : "tensor.tril", {ctx.Input(0)}, {{"k", k}}, ctx.Output(0));
}

// GatherElements: indices int32 or int64 (tensor.gather_elements widens int32).
void GatherElements(Context& ctx) {
  ctx.AllowAttrs({"axis"});
  const int64_t rank = ctx.In(0).rank();
  if (rank == 0) ctx.Invalid("data must have rank >= 1");
  const int64_t axis = ctx.AttrInt("axis", 0);
  NormalizeAxis(ctx, axis, rank, "attribute 'axis'");
  ctx.Op("tensor.gather_elements", {ctx.Input(0), ctx.Input(1)}, {{"axis", axis}}, ctx.Output(0));
}

}  // namespace

void AddTensorAxisOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"ArgMax", 1, kMax, [](Context& c) { ArgReduce(c, "tensor.argmax"); }});
  t.push_back({"ArgMin", 1, kMax, [](Context& c) { ArgReduce(c, "tensor.argmin"); }});
  t.push_back({"CumSum", 11, kMax, CumSum});
  t.push_back({"Trilu", 14, kMax, Trilu});
  t.push_back({"GatherElements", 11, kMax, GatherElements});
}

}  // namespace backplane::onnx
