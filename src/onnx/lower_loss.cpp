// Lowerings of ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss onto catalog ops:
// the target's log-probability by tensor.gather_elements along the class axis, class weights by
// an embedding lookup, ignore_index as a mask (ignored targets gather class 0 and weigh 0), and
// the none / sum / mean reductions (mean divides by the summed weights, as ONNX and PyTorch).
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

// loss from log-probabilities `input` [N, C, d...] and integer `target` [N, d...] into `out`.
void NllFrom(Context& ctx, const std::string& input, const std::string& target, const std::string& weight,
             const std::string& reduction, std::optional<int64_t> ignore, const std::string& out) {
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    ctx.Invalid(fmt::format("attribute 'reduction' must be none, sum or mean, got '{}'", reduction));
  }
  const Value x = ctx.Get(input);
  const Value t = ctx.Get(target);
  if (x.rank() < 2) ctx.Invalid(fmt::format("input must have rank >= 2 ([N, C, ...]), got rank {}", x.rank()));
  if (t.rank() != x.rank() - 1) ctx.Invalid(fmt::format("target must have rank {}, got {}", x.rank() - 1, t.rank()));
  if (!IsInteger(t.dtype)) ctx.Invalid(fmt::format("target must be an integer tensor, got {}", DTypeName(t.dtype)));
  const DType d = x.dtype;
  const std::string dtype_name(DTypeName(d));
  std::string safe = target, mask;
  if (ignore) {
    const std::string keep = ctx.Op("tensor.not_equal", {target, ctx.Scalar(static_cast<double>(*ignore), t.dtype)});
    safe = ctx.Op("tensor.where", {keep, target, ctx.Scalar(0.0, t.dtype)});
    mask = ctx.Op("tensor.cast", {keep}, {{"to", dtype_name}});
  }
  std::vector<ir::Dim> index_dims = {t.dims[0], {1, ""}};
  for (int64_t i = 1; i < t.rank(); ++i) index_dims.push_back(t.dims[static_cast<size_t>(i)]);
  std::string index = ReshapeTo(ctx, safe, index_dims);
  if (t.dtype != DType::Int64) index = ctx.Op("tensor.cast", {index}, {{"to", std::string("i64")}});
  const std::string picked = ReshapeTo(ctx, ctx.Op("tensor.gather_elements", {input, index}, {{"axis", int64_t{1}}}), t.dims);
  const std::string loss_raw = ctx.Op("math.neg", {picked});
  std::string w;  // per-element weight (class weight times the ignore mask); "" for all ones
  if (!weight.empty()) {
    const Value& wv = ctx.Get(weight);
    if (wv.rank() != 1) ctx.Invalid("input 'weight' must be 1-D [C]");
    const std::string ids = ctx.Op("tensor.cast", {safe}, {{"to", std::string("i32")}});
    const std::string table = ReshapeTo(ctx, weight, {wv.dims[0], {1, ""}});
    w = ReshapeTo(ctx, ctx.Op("embedding.token", {ids, table}), t.dims);
    if (!mask.empty()) w = ctx.Op("math.mul", {w, mask});
  } else {
    w = mask;
  }
  const std::string loss = w.empty() ? loss_raw : ctx.Op("math.mul", {loss_raw, w});
  if (reduction == "none") {
    ctx.Alias(loss, out);
    return;
  }
  const ir::AttrMap all = {{"axis", std::vector<int64_t>{}}};
  if (reduction == "sum") {
    ctx.Op("reduction.sum", {loss}, all, out);
    return;
  }
  std::string denominator;
  if (!w.empty()) {
    denominator = ctx.Op("reduction.sum", {w}, all);
  } else {
    if (!t.is_static()) ctx.Unsupported("reduction 'mean' without weights needs a static target shape");
    denominator = ctx.Scalar(static_cast<double>(NumElements(t.shape())), d);
  }
  ctx.Op("math.div", {ctx.Op("reduction.sum", {loss}, all), denominator}, {}, out);
}

std::optional<int64_t> IgnoreIndex(const Context& ctx) {
  if (!ctx.HasAttr("ignore_index")) return std::nullopt;
  return ctx.AttrInt("ignore_index", 0);
}

void NegativeLogLikelihoodLoss(Context& ctx) {
  ctx.AllowAttrs({"ignore_index", "reduction"});
  NllFrom(ctx, ctx.Input(0), ctx.Input(1), ctx.HasInput(2) ? ctx.Input(2) : "", ctx.AttrString("reduction", "mean"),
          IgnoreIndex(ctx), ctx.Output(0));
}

void SoftmaxCrossEntropyLoss(Context& ctx) {
  ctx.AllowAttrs({"ignore_index", "reduction"});
  const std::string log_prob = ctx.Op("activation.log_softmax", {ctx.Input(0)}, {{"axis", int64_t{1}}},
                                      ctx.HasOutput(1) ? ctx.Output(1) : "");
  NllFrom(ctx, log_prob, ctx.Input(1), ctx.HasInput(2) ? ctx.Input(2) : "", ctx.AttrString("reduction", "mean"),
          IgnoreIndex(ctx), ctx.Output(0));
}

}  // namespace

void AddLossOps(std::vector<OpEntry>& t) {
  t.push_back({"NegativeLogLikelihoodLoss", 12, kMaxOpset, NegativeLogLikelihoodLoss});
  t.push_back({"SoftmaxCrossEntropyLoss", 12, kMaxOpset, SoftmaxCrossEntropyLoss});
}

}  // namespace backplane::onnx
