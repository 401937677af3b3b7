// Lowerings of ONNX's control flow, resolved at import time (the runtime IR has only tensors): If
// imports the branch its import-time condition takes, Loop is unrolled while its trip count and
// condition fold to constants, Scan is unrolled over its static scan length. Each iteration
// imports the body again through ImportSubgraph, with fresh value names.
#include <fmt/format.h>

#include <algorithm>
#include <deque>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {

// Loops and scans unroll at most this many iterations.
constexpr int64_t kMaxUnroll = 4096;

std::vector<std::string> ImportSubgraph(Context& ctx, const ::onnx::GraphProto& g, const std::vector<std::string>& inputs,
                                        const std::string& what) {
  if (g.input_size() != static_cast<int>(inputs.size())) {
    ctx.Invalid(fmt::format("{} declares {} inputs, {} are bound to it", what, g.input_size(), inputs.size()));
  }
  if (g.sparse_initializer_size() > 0) ctx.Unsupported(fmt::format("{} has sparse initializers", what));
  const auto saved = ctx.CurrentNode();
  const std::string outer = ctx.node().name().empty() && ctx.node().output_size() > 0 ? ctx.node().output(0)
                                                                                       : ctx.node().name();
  const std::string prefix = fmt::format("{}: {}", outer, what);
  ctx.PushScope();
  struct ScopeGuard {
    Context& c;
    ~ScopeGuard() { c.PopScope(); }
  } guard{ctx};
  for (const auto& init : g.initializer()) {
    if (init.data_location() == ::onnx::TensorProto::EXTERNAL) {
      ctx.Unsupported(fmt::format("{} initializer '{}' has external data", what, init.name()));
    }
    const std::string where = fmt::format("{}: {}: {} initializer '{}'", ctx.model(), ctx.NodeWhere(), what, init.name());
    ctx.Bind(init.name(), ctx.ConstTensor(TensorFromProto(init, where, ""), init.name()));
  }
  for (int i = 0; i < g.input_size(); ++i) ctx.Bind(g.input(i).name(), inputs[static_cast<size_t>(i)]);
  std::deque<::onnx::NodeProto> nodes;  // the renamed copies; ctx refers to the one being lowered
  for (int i = 0; i < g.node_size(); ++i) {
    const ::onnx::NodeProto& orig = g.node(i);
    ::onnx::NodeProto& n = nodes.emplace_back(orig);
    const std::string local = !orig.name().empty()       ? orig.name()
                              : orig.output_size() > 0 ? orig.output(0)
                                                       : fmt::format("#{}", i);
    n.set_name(fmt::format("{}: {}", prefix, local));
    for (int k = 0; k < n.input_size(); ++k) {
      if (!n.input(k).empty()) n.set_input(k, ctx.Resolve(n.input(k)));
    }
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;
      const std::string fresh = ctx.Fresh(orig.output(k));
      ctx.Bind(orig.output(k), fresh);
      n.set_output(k, fresh);
    }
    ctx.BeginNode(n, i);
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      ctx.Unsupported(fmt::format("domain '{}' is not supported; only the default domain is", n.domain()));
    }
    LowerNode(ctx);
    for (int k = 0; k < n.output_size(); ++k) {
      if (!n.output(k).empty() && !ctx.Has(n.output(k))) {
        ctx.Invalid(fmt::format("the lowering did not define output '{}'", orig.output(k)));
      }
    }
  }
  ctx.RestoreNode(saved);
  std::vector<std::string> outs;
  for (const auto& o : g.output()) {
    const std::string v = ctx.Resolve(o.name());
    if (!ctx.Has(v)) ctx.Invalid(fmt::format("{} output '{}' is not defined", what, o.name()));
    outs.push_back(v);
  }
  return outs;
}

const ::onnx::GraphProto& AttrGraph(const Context& ctx, const std::string& name) {
  for (const auto& a : ctx.node().attribute()) {
    if (a.name() != name) continue;
    if (a.type() != ::onnx::AttributeProto::GRAPH) ctx.Invalid(fmt::format("attribute '{}' must be a graph", name));
    return a.g();
  }
  ctx.Invalid(fmt::format("attribute '{}' (a graph) is required", name));
}

namespace {

// The value of a scalar bool condition that must be known at import time.
bool ConstCondition(Context& ctx, const std::string& value, const std::string& what, const std::string& why) {
  const Value& v = ctx.Get(value);
  if (!v.constant) ctx.Unsupported(fmt::format("{} ('{}') is only known at run time; {}", what, value, why));
  if (v.constant->numel() != 1) ctx.Invalid(fmt::format("{} must hold one element, got shape {}", what, ShapeToString(v.constant->shape())));
  return v.constant->GetDouble(0) != 0.0;
}

void If(Context& ctx) {
  ctx.AllowAttrs({"then_branch", "else_branch"});
  const ::onnx::GraphProto& then_branch = AttrGraph(ctx, "then_branch");
  const ::onnx::GraphProto& else_branch = AttrGraph(ctx, "else_branch");
  const bool taken = ConstCondition(ctx, ctx.Input(0), "input 0 'cond'",
                                    "If needs a condition known at import time (only the taken branch is imported)");
  const ::onnx::GraphProto& g = taken ? then_branch : else_branch;
  const std::vector<std::string> outs = ImportSubgraph(ctx, g, {}, taken ? "then_branch" : "else_branch");
  if (static_cast<int>(outs.size()) != ctx.NumOutputs()) {
    ctx.Invalid(fmt::format("the {} has {} outputs, the node {}", taken ? "then_branch" : "else_branch", outs.size(),
                            ctx.NumOutputs()));
  }
  for (int k = 0; k < ctx.NumOutputs(); ++k) {
    if (ctx.HasOutput(k)) ctx.Alias(outs[static_cast<size_t>(k)], ctx.Output(k));
  }
}

// Loop: inputs (M, cond, v_initial...), body (iter_num, cond_in, v_in...) -> (cond_out, v_out...,
// scan_out...); scan outputs stack each iteration's value along a new axis 0.
void Loop(Context& ctx) {
  ctx.AllowAttrs({"body"});
  const ::onnx::GraphProto& body = AttrGraph(ctx, "body");
  std::optional<int64_t> trip;
  if (ctx.HasInput(0)) {
    const std::vector<int64_t> m = ctx.ConstInts(0, "M (trip count)");
    if (m.size() != 1) ctx.Invalid(fmt::format("input 0 'M' must hold one element, got {}", m.size()));
    trip = m[0];
  }
  const std::string why = "Loop is unrolled at import time, so its condition must fold to a constant";
  bool cond = ctx.HasInput(1) ? ConstCondition(ctx, ctx.Input(1), "input 1 'cond'", why) : true;
  std::vector<std::string> carried;
  for (int i = 2; i < ctx.NumInputs(); ++i) carried.push_back(ctx.Input(i));
  const int n = static_cast<int>(carried.size());
  if (body.input_size() != 2 + n) {
    ctx.Invalid(fmt::format("the body has {} inputs, expected 2 + {} loop-carried", body.input_size(), n));
  }
  const int k_scan = body.output_size() - 1 - n;
  if (k_scan < 0) ctx.Invalid(fmt::format("the body has {} outputs, expected at least 1 + {}", body.output_size(), n));
  if (ctx.NumOutputs() > n + k_scan) ctx.Invalid(fmt::format("the node has {} outputs, the body gives {}", ctx.NumOutputs(), n + k_scan));
  std::vector<std::vector<std::string>> scans(static_cast<size_t>(k_scan));
  for (int64_t i = 0; cond && (!trip || i < *trip); ++i) {
    if (i >= kMaxUnroll) {
      ctx.Unsupported(fmt::format("the loop runs more than {} iterations (trip count {}); Loop is unrolled at import "
                                  "time, at most {} iterations",
                                  kMaxUnroll, trip ? std::to_string(*trip) : std::string("none"), kMaxUnroll));
    }
    std::vector<std::string> in = {ctx.ConstTensor(IntsTensor({i}, {}), "iter_num"),
                                   ctx.ConstTensor(BoolScalar(cond), "cond_in")};
    in.insert(in.end(), carried.begin(), carried.end());
    const std::vector<std::string> outs = ImportSubgraph(ctx, body, in, fmt::format("body iteration {}", i));
    cond = ConstCondition(ctx, outs[0], fmt::format("the body's condition output at iteration {}", i), why);
    std::copy(outs.begin() + 1, outs.begin() + 1 + n, carried.begin());
    for (int k = 0; k < k_scan; ++k) scans[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(1 + n + k)]);
  }
  for (int j = 0; j < n; ++j) {
    if (ctx.HasOutput(j)) ctx.Alias(carried[static_cast<size_t>(j)], ctx.Output(j));
  }
  for (int k = 0; k < k_scan; ++k) {
    if (!ctx.HasOutput(n + k)) continue;
    if (scans[static_cast<size_t>(k)].empty()) {
      ctx.Unsupported(fmt::format("scan output {} of a loop that runs zero iterations (its element shape is unknown)", n + k));
    }
    StackValues(ctx, scans[static_cast<size_t>(k)], 0, ctx.Output(n + k));
  }
}

// The static length of `value` along `axis`.
int64_t StaticDim(Context& ctx, const std::string& value, int64_t axis, const std::string& what) {
  const Value& v = ctx.Get(value);
  const ir::Dim& d = v.dims[static_cast<size_t>(axis)];
  if (!d.symbol.empty()) ctx.Unsupported(fmt::format("{} ('{}') has symbolic length '{}' along axis {}; Scan is unrolled over a static length", what, value, d.symbol, axis));
  return d.size;
}

struct ScanResult {
  std::vector<std::string> states;
  std::vector<std::string> scan_outputs;
};

// Scan over `scans` (each along its axis, forward or reverse) with the body (states..., elements...)
// -> (states..., scan elements...); scan outputs stacked along their axis, forward or reverse.
ScanResult RunScan(Context& ctx, const ::onnx::GraphProto& body, std::vector<std::string> states,
                   const std::vector<std::string>& scans, const std::vector<int64_t>& in_axes,
                   const std::vector<int64_t>& in_reverse, const std::vector<int64_t>& out_axes,
                   const std::vector<int64_t>& out_reverse, const std::string& what) {
  const size_t n = states.size();
  if (scans.empty()) ctx.Invalid("attribute 'num_scan_inputs' must be at least 1");
  if (body.input_size() != static_cast<int>(n + scans.size())) {
    ctx.Invalid(fmt::format("the body has {} inputs, expected {} states + {} scan inputs", body.input_size(), n, scans.size()));
  }
  const int k_scan = body.output_size() - static_cast<int>(n);
  if (k_scan < 0) ctx.Invalid(fmt::format("the body has {} outputs, expected at least {} states", body.output_size(), n));
  int64_t length = -1;
  for (size_t j = 0; j < scans.size(); ++j) {
    const int64_t len = StaticDim(ctx, scans[j], in_axes[j], fmt::format("scan input {}", j));
    if (length >= 0 && len != length) ctx.Invalid(fmt::format("scan input {} has length {}, scan input 0 has {}", j, len, length));
    length = len;
  }
  if (length > kMaxUnroll) {
    ctx.Unsupported(fmt::format("the scan length {} exceeds {}; Scan is unrolled at import time", length, kMaxUnroll));
  }
  if (length == 0 && k_scan > 0) ctx.Unsupported("a scan of length 0 with scan outputs (their element shape is unknown)");
  std::vector<std::vector<std::string>> outs_k(static_cast<size_t>(k_scan));
  for (int64_t t = 0; t < length; ++t) {
    std::vector<std::string> in = states;
    for (size_t j = 0; j < scans.size(); ++j) {
      in.push_back(TakeAlong(ctx, scans[j], in_axes[j], in_reverse[j] != 0 ? length - 1 - t : t));
    }
    const std::vector<std::string> outs = ImportSubgraph(ctx, body, in, fmt::format("{} step {}", what, t));
    std::copy(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n), states.begin());
    for (int k = 0; k < k_scan; ++k) outs_k[static_cast<size_t>(k)].push_back(outs[n + static_cast<size_t>(k)]);
  }
  ScanResult r{states, {}};
  for (int k = 0; k < k_scan; ++k) {
    std::vector<std::string>& parts = outs_k[static_cast<size_t>(k)];
    if (out_reverse[static_cast<size_t>(k)] != 0) std::reverse(parts.begin(), parts.end());
    const int64_t rank = ctx.Get(parts.front()).rank() + 1;
    const int64_t axis = NormalizeAxis(ctx, out_axes[static_cast<size_t>(k)], rank, "scan output axis");
    r.scan_outputs.push_back(StackValues(ctx, parts, axis, ""));
  }
  return r;
}

// A per-input (or per-output) attribute list: `count` entries, each in [lo, hi] unless no range.
std::vector<int64_t> ListAttr(Context& ctx, const std::string& name, size_t count, int64_t fallback) {
  const auto v = ctx.AttrInts(name);
  if (!v) return std::vector<int64_t>(count, fallback);
  if (v->size() != count) ctx.Invalid(fmt::format("attribute '{}' has {} entries, expected {}", name, v->size(), count));
  return *v;
}

void CheckDirections(Context& ctx, const std::string& name, const std::vector<int64_t>& dirs) {
  for (int64_t d : dirs) {
    if (d != 0 && d != 1) ctx.Invalid(fmt::format("attribute '{}' entries must be 0 (forward) or 1 (reverse), got {}", name, d));
  }
}

void DefineOutputs(Context& ctx, const std::vector<std::string>& values) {
  if (ctx.NumOutputs() > static_cast<int>(values.size())) {
    ctx.Invalid(fmt::format("the node has {} outputs, the body gives {}", ctx.NumOutputs(), values.size()));
  }
  for (int k = 0; k < ctx.NumOutputs(); ++k) {
    if (ctx.HasOutput(k)) ctx.Alias(values[static_cast<size_t>(k)], ctx.Output(k));
  }
}

// Scan (opset 9+): inputs (states..., scan inputs...), no batch axis.
void Scan9(Context& ctx) {
  ctx.AllowAttrs({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
                  "scan_output_directions"});
  const ::onnx::GraphProto& body = AttrGraph(ctx, "body");
  const int64_t m = ctx.AttrInt("num_scan_inputs", -1);
  if (m < 1 || m > ctx.NumInputs()) ctx.Invalid(fmt::format("attribute 'num_scan_inputs' must be in [1, {}], got {}", ctx.NumInputs(), m));
  const size_t n = static_cast<size_t>(ctx.NumInputs() - m);
  std::vector<std::string> states, scans;
  for (int i = 0; i < ctx.NumInputs(); ++i) (static_cast<size_t>(i) < n ? states : scans).push_back(ctx.Input(i));
  std::vector<int64_t> in_axes = ListAttr(ctx, "scan_input_axes", scans.size(), 0);
  for (size_t j = 0; j < scans.size(); ++j) in_axes[j] = NormalizeAxis(ctx, in_axes[j], ctx.Get(scans[j]).rank(), "scan input axis");
  const std::vector<int64_t> in_dirs = ListAttr(ctx, "scan_input_directions", scans.size(), 0);
  CheckDirections(ctx, "scan_input_directions", in_dirs);
  const size_t k = static_cast<size_t>(std::max(0, body.output_size() - static_cast<int>(n)));
  const std::vector<int64_t> out_axes = ListAttr(ctx, "scan_output_axes", k, 0);
  const std::vector<int64_t> out_dirs = ListAttr(ctx, "scan_output_directions", k, 0);
  CheckDirections(ctx, "scan_output_directions", out_dirs);
  ScanResult r = RunScan(ctx, body, states, scans, in_axes, in_dirs, out_axes, out_dirs, "body");
  r.states.insert(r.states.end(), r.scan_outputs.begin(), r.scan_outputs.end());
  DefineOutputs(ctx, r.states);
}

// Scan (opset 8): input 0 sequence_lens (omitted, or the full length), then states [B, ...] and scan
// inputs [B, T, ...]; each batch entry is scanned on its own and the results stacked along axis 0.
void Scan8(Context& ctx) {
  ctx.AllowAttrs({"body", "num_scan_inputs", "directions"});
  const ::onnx::GraphProto& body = AttrGraph(ctx, "body");
  const int64_t m = ctx.AttrInt("num_scan_inputs", -1);
  if (m < 1 || m > ctx.NumInputs() - 1) ctx.Invalid(fmt::format("attribute 'num_scan_inputs' must be in [1, {}], got {}", ctx.NumInputs() - 1, m));
  const size_t n = static_cast<size_t>(ctx.NumInputs() - 1 - m);
  std::vector<std::string> states, scans;
  for (int i = 1; i < ctx.NumInputs(); ++i) (static_cast<size_t>(i - 1) < n ? states : scans).push_back(ctx.Input(i));
  const std::vector<int64_t> dirs = ListAttr(ctx, "directions", scans.size(), 0);
  CheckDirections(ctx, "directions", dirs);
  for (const std::string& s : scans) {
    if (ctx.Get(s).rank() < 2) ctx.Invalid(fmt::format("scan input '{}' must have rank >= 2 ([batch, sequence, ...])", s));
  }
  const int64_t batch = StaticDim(ctx, scans[0], 0, "scan input 0");
  const int64_t length = StaticDim(ctx, scans[0], 1, "scan input 0");
  if (ctx.HasInput(0)) {
    for (int64_t len : ctx.ConstInts(0, "sequence_lens")) {
      if (len != length) ctx.Unsupported(fmt::format("input 0 'sequence_lens' entry {} differs from the full length {} (only full-length scans are supported)", len, length));
    }
  }
  if (batch > kMaxUnroll) ctx.Unsupported(fmt::format("the batch size {} exceeds {}; Scan is unrolled at import time", batch, kMaxUnroll));
  const size_t k = static_cast<size_t>(std::max(0, body.output_size() - static_cast<int>(n)));
  std::vector<std::vector<std::string>> per_output(n + k);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<std::string> st, sc;
    for (const std::string& s : states) st.push_back(TakeAlong(ctx, s, 0, b));
    for (const std::string& s : scans) sc.push_back(TakeAlong(ctx, s, 0, b));
    ScanResult r = RunScan(ctx, body, st, sc, std::vector<int64_t>(sc.size(), 0), dirs, std::vector<int64_t>(k, 0),
                           std::vector<int64_t>(k, 0), fmt::format("body batch {}", b));
    r.states.insert(r.states.end(), r.scan_outputs.begin(), r.scan_outputs.end());
    for (size_t o = 0; o < r.states.size(); ++o) per_output[o].push_back(r.states[o]);
  }
  if (batch == 0) ctx.Unsupported("a Scan over batch size 0 (the output shapes are unknown)");
  std::vector<std::string> outs;
  for (const auto& parts : per_output) outs.push_back(StackValues(ctx, parts, 0, ""));
  DefineOutputs(ctx, outs);
}

}  // namespace

void AddControlOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"If", 1, kMax, If});
  t.push_back({"Loop", 1, kMax, Loop});
  t.push_back({"Scan", 8, 8, Scan8});
  t.push_back({"Scan", 9, kMax, Scan9});
}

}  // namespace backplane::onnx
