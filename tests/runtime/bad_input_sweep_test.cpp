// The bad-input sweep (issue #15): every runnable catalog op, from a valid call (its first device
// probe, or the default one), with each class of bad input derived from it. Every case must
// either throw an Error naming the op, the node and the offending input or attribute, or give a
// result that kValid lists (with its reason) and that matches the scalar reference on the same
// input. A sample per (domain, class) also goes through `backplane op` with .npy files.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backplane/catalog/catalog.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/runtime/op_registry.hpp"
#include "backplane/tolerance.hpp"
#include "conformance/device_probes.hpp"
#include "conformance/probe_graph.hpp"
#include "support/cli.hpp"

namespace backplane {
namespace {

namespace fs = std::filesystem;

// ---- the classes of bad input ----------------------------------------------------------------
enum class Kind { DType, Rank, Dims, ZeroSize, IntAttr, FloatAttr, Alias };
constexpr Kind kKinds[] = {Kind::DType, Kind::Rank, Kind::Dims, Kind::ZeroSize, Kind::IntAttr, Kind::FloatAttr,
                           Kind::Alias};

const char* KindName(Kind k) {
  switch (k) {
    case Kind::DType: return "wrong dtype";
    case Kind::Rank: return "wrong rank";
    case Kind::Dims: return "inconsistent dims";
    case Kind::ZeroSize: return "zero-size";
    case Kind::IntAttr: return "int attribute out of range";
    case Kind::FloatAttr: return "NaN/Inf float attribute";
    case Kind::Alias: return "aliasing";
  }
  return "?";
}

const char* KindKey(Kind k) {
  switch (k) {
    case Kind::DType: return "dtype";
    case Kind::Rank: return "rank";
    case Kind::Dims: return "dims";
    case Kind::ZeroSize: return "zero";
    case Kind::IntAttr: return "int";
    case Kind::FloatAttr: return "float";
    case Kind::Alias: return "alias";
  }
  return "?";
}

// A huge int attribute: far beyond any dimension here, and 3 modulo 2^32 (a narrowing cast to
// int32 would silently make it a small valid value).
constexpr int64_t kHuge = (int64_t{1} << 40) + 3;

// ---- the results a bad-looking input may legitimately have -----------------------------------
// How a documented valid result is checked, beyond matching the scalar reference.
enum class Check {
  Reference,   // only the scalar reference on the same input
  SameShape,   // output 0 has the (changed) shape of input 0
  Broadcast,   // output 0 has the broadcast shape of the inputs
  Empty,       // output 0 has no elements
  AliasCopy,   // aliased param/grad give what distinct copies of the same values give
};

struct ValidRule {
  const char* op;    // fnmatch pattern on the canonical op ID
  Kind kind;
  const char* arg;   // fnmatch pattern on the case's argument ("input 1", "axis=-1", ...)
  Check check;
  const char* reason;
};

// The (op, class) pairs whose "bad" input is valid by definition, each with its reason. Every
// result they admit is checked against the scalar reference on the same input (and the Check).
const std::vector<ValidRule> kValid = {
    // 2. Rank: ops defined for any rank (elementwise, broadcasting, or batching leading axes).
    {"activation.*", Kind::Rank, "*", Check::Reference, "activations are elementwise or act on the last axis: any leading dims"},
    {"elementwise.relu", Kind::Rank, "*", Check::SameShape, "elementwise: any shape"},
    {"math.*", Kind::Rank, "*", Check::Reference, "elementwise math broadcasts (NumPy); norms, softmax and matmul batch leading dims"},
    {"tensor.*", Kind::Rank, "*", Check::Reference, "elementwise and broadcasting tensor ops; axis ops take any rank"},
    {"reduction.*", Kind::Rank, "*", Check::Reference, "reductions take any rank (the probe's axes stay in range)"},
    {"pospop.*", Kind::Rank, "*", Check::Reference, "positional popcounts count over every element, any shape"},
    {"quant.*", Kind::Rank, "*", Check::Reference, "(de)quantisation is elementwise; block ops batch x's leading dims"},
    {"vsa.*", Kind::Rank, "*", Check::Reference, "hypervector ops act on the last axis and broadcast the rest"},
    {"positional.*", Kind::Rank, "*", Check::Reference, "positional encodings batch the leading dims"},
    {"projection.*", Kind::Rank, "input 0 *", Check::Reference, "x's leading dims are batch dims"},
    {"shape.*", Kind::Rank, "*", Check::Reference, "reshape/transpose/slice/last_token take any rank the attributes fit"},
    {"sampling.*", Kind::Rank, "*", Check::Reference, "logits are [V] or [B, V]"},
    {"causal.*", Kind::Rank, "*", Check::Reference, "effect estimators batch leading dims / accept vectors"},
    {"masking.*", Kind::Rank, "*", Check::Reference, "masks broadcast over leading dims"},
    {"model.*", Kind::Rank, "*", Check::Reference, "the trigger is only an ordering dependency: any shape"},
    {"Input", Kind::Rank, "*", Check::SameShape, "an identity of its input, any shape"},
    {"Fused", Kind::Rank, "*", Check::Reference, "matmul+bias+activation batches the leading dims of a"},
    {"embedding.token", Kind::Rank, "*", Check::Reference, "token ids of any shape; the table's rank is not used past 2"},
    {"hawkes.intensity", Kind::Rank, "*", Check::Reference, "event times and query times are flattened"},
    {"physics.laplacian", Kind::Rank, "*", Check::Reference, "the stencil acts on the last axes and batches the rest"},
    {"active_inference.precision_weight", Kind::Rank, "*", Check::Broadcast, "precision broadcasts against the errors"},
    {"predictive_coding.prediction_error", Kind::Rank, "*", Check::Broadcast, "prediction broadcasts against the input"},
    // 3. Inconsistent dims: the changed dimension is free (output size, table width, index count).
    {"math.matmul", Kind::Dims, "*", Check::Reference, "b's last dim is N, free"},
    {"math.outer", Kind::Dims, "*", Check::Reference, "the second vector's length is free"},
    {"embedding.token", Kind::Dims, "*", Check::Reference, "the table's last dim is the embedding width, free"},
    {"embedding.bag", Kind::Dims, "*", Check::Reference, "the offsets' count is the bag count, free"},
    {"convolution.*", Kind::Dims, "*", Check::Reference, "the weight's last dim is a kernel extent, free while it fits"},
    {"hawkes.intensity", Kind::Dims, "*", Check::Reference, "the query times' count is free"},
    {"markov_blanket.partition", Kind::Dims, "*", Check::Reference, "the index list's length is free"},
    {"causal.do_calculus", Kind::Dims, "*", Check::Reference, "the intervention list's length is free"},
    {"tensor.gather_elements", Kind::Dims, "*", Check::Reference, "indices may be smaller than x off the axis (ONNX)"},
    // 4. Zero-size: an empty input gives an empty output, or the empty reduction's value.
    {"*", Kind::ZeroSize, "*", Check::Reference,
     "empty in, empty out (elementwise, batched), or the empty reduction's value (sum 0, counts 0, mean NaN)"},
    // 5. Int attributes whose whole range is meaningful.
    {"*", Kind::IntAttr, "seed=*", Check::Reference, "any int64 is a seed"},
    {"quant.*", Kind::IntAttr, "zero_point=-1", Check::Reference, "zero points may be negative"},
    {"Fused", Kind::IntAttr, "zero_point=*", Check::Reference, "zero_point is read only by the dequant+matmul pattern"},
    {"tensor.tri[ul]", Kind::IntAttr, "k=*", Check::Reference, "any diagonal offset (NumPy triu/tril)"},
    {"vsa.*permute", Kind::IntAttr, "k=*", Check::Reference, "a cyclic shift, taken modulo the length"},
    {"shape.slice", Kind::IntAttr, "*", Check::Reference, "starts/ends clamp to the axis and steps may be negative (ONNX Slice)"},
    {"attention.*", Kind::IntAttr, "window*", Check::Reference, "window sizes past the sequence mean no limit, -1 none"},
    {"convolution.*", Kind::IntAttr, "stride*", Check::Reference, "a stride past the extent gives one output position"},
    {"pooling.*", Kind::IntAttr, "stride*", Check::Reference, "a stride past the extent gives one output position"},
    {"sampling.top_k", Kind::IntAttr, "top_k=*", Check::Reference, "top_k above the vocabulary keeps every token"},
    {"positional.rope", Kind::IntAttr, "position_start=*", Check::Reference, "any start position is a rotation angle"},
    {"math.inv_sqrt_dim_scale", Kind::IntAttr, "dim=1099511627779", Check::Reference, "any positive dim gives 1/sqrt(dim)"},
    {"Input", Kind::IntAttr, "shape*", Check::SameShape, "with x given, Input is the identity and shape is not read"},
    // 6. Float attributes that are not read by this call.
    {"Input", Kind::FloatAttr, "values*", Check::SameShape, "with x given, Input is the identity and values are not read"},
    {"Fused", Kind::FloatAttr, "scale=*", Check::Reference, "scale is read only by the dequant+matmul pattern"},
    {"embedding.token", Kind::FloatAttr, "init_std=*", Check::Reference, "init_std is read only when the op creates its table"},
    // 7. Aliasing.
    {"*", Kind::Alias, "*", Check::AliasCopy,
     "optimizers read grads[i] before writing params[i], so a grad aliasing its param is allowed"},
};

// ---- one call of one op ----------------------------------------------------------------------
struct Case {
  const catalog::OpInfo* op = nullptr;
  Kind kind = Kind::DType;
  std::string arg;                     // what was changed: "input 1", "axis=-1", ...
  ir::Graph graph;                     // one node named kNode
  std::vector<std::string> fragments;  // the error must name one of these (the argument)
  std::map<std::string, std::pair<double, double>> ranges;  // input value ranges by name
  bool cli = true;                     // expressible as `backplane op` (no params, no omitted inputs)
};

constexpr const char* kNode = "sweep_node";

std::string Label(const Case& c) { return fmt::format("{} [{}: {}]", c.op->id, KindKey(c.kind), c.arg); }

uint64_t Mix(uint64_t h, uint64_t v) { return h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2)); }

using conformance::RandomTensor;

std::map<std::string, Tensor> Inputs(const Case& c) {
  std::map<std::string, Tensor> in;
  uint64_t seed = std::hash<std::string>{}(c.op->id);
  for (const ir::ValueSpec& v : c.graph.inputs) {
    Shape shape;
    for (const ir::Dim& d : v.shape) shape.push_back(d.size);
    const auto r = c.ranges.find(v.name);
    const auto [lo, hi] = r != c.ranges.end() ? r->second : std::pair<double, double>{-2.0, 2.0};
    seed = Mix(seed, std::hash<std::string>{}(v.name));
    in[v.name] = RandomTensor(v.dtype, shape, lo, hi, seed);
  }
  return in;
}

Shape ShapeOf(const ir::ValueSpec& v) {
  Shape s;
  for (const ir::Dim& d : v.shape) s.push_back(d.size);
  return s;
}

void SetShape(ir::ValueSpec& v, const Shape& s) {
  v.shape.clear();
  for (int64_t d : s) v.shape.push_back({d, ""});
}

// The graph of a probe in `dtype`: inputs in<i>, node kNode, outputs out<o>.
std::string ProbeGraphJson(const conformance::DeviceProbe& probe, const catalog::OpInfo& op, DType dtype) {
  std::string inputs, names;
  for (size_t i = 0; i < probe.inputs.size(); ++i) {
    const conformance::ProbeInput& in = probe.inputs[i];
    if (in.dtype.empty()) {
      names += fmt::format("{}\"\"", i ? ", " : "");
      continue;
    }
    const std::string dt = in.dtype == "T" ? std::string(DTypeName(dtype)) : in.dtype;
    inputs += fmt::format("{}{{\"name\": \"in{}\", \"dtype\": \"{}\", \"shape\": [{}]}}", inputs.empty() ? "" : ", ", i,
                          dt, fmt::join(in.shape, ", "));
    names += fmt::format("{}\"in{}\"", i ? ", " : "", i);
  }
  const runtime::Arity arity = runtime::OpArity(op);
  const int n_out = probe.outputs > 0 ? probe.outputs : std::max(1, arity.min_outputs);
  std::string outs;
  for (int o = 0; o < n_out; ++o) outs += fmt::format("{}\"out{}\"", o ? ", " : "", o);
  return fmt::format(
      R"({{"format": "backplane.graph", "version": 1, "name": "sweep", "inputs": [{}], "params": {}, "nodes": [{{"op": "{}", "name": "{}", "inputs": [{}], "outputs": [{}], "attrs": {}}}], "outputs": [{}]}})",
      inputs, probe.params, op.id, kNode, names, outs, probe.attrs, outs);
}

// The dtypes tried for the valid call, in order.
const DType kPreferred[] = {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Uint8,
                            DType::Int8,    DType::Bool,    DType::Float16, DType::Int4, DType::Uint64,
                            DType::Uint32,  DType::Uint16,  DType::Int16, DType::BFloat16, DType::Complex64,
                            DType::Complex128, DType::Float8E4M3, DType::Float8E5M2};
// Dtypes tried as the wrong one, in order (the first outside the op's set is used).
const DType kWrong[] = {DType::Complex64, DType::Bool, DType::Uint64, DType::Int16, DType::Float8E5M2,
                        DType::Int4, DType::Float64, DType::Float32, DType::Int32};

bool IsAxisAttr(const std::string& name) {
  return name.find("axis") != std::string::npos || name.find("axes") != std::string::npos || name == "perm";
}

struct Op {
  const catalog::OpInfo* info;
  Case base;             // the valid call
  std::string rejected;  // why the valid call failed, if it did
};

std::map<std::string, Tensor> RunOn(const Case& c, Backend& backend, const std::map<std::string, Tensor>& inputs) {
  runtime::Executor ex(c.graph, backend);
  auto out = ex.Run(inputs);
  for (const auto& [name, t] : ex.SaveParams()) out["param:" + name] = t;
  return out;
}

Backend& Fast() {
  static std::unique_ptr<Backend> b = cpu::CreateBackend();
  return *b;
}
Backend& Reference() {
  static std::unique_ptr<Backend> b = cpu::CreateReferenceBackend();
  return *b;
}

// The valid call of every runnable op: its first probe with inputs of rank >= 1 and elements,
// in the first dtype it accepts.
std::vector<Op> BaseCalls() {
  std::map<std::string, std::vector<conformance::DeviceProbe>> probes;
  for (conformance::DeviceProbe& p : conformance::DeviceProbes()) {
    const catalog::OpInfo* op = catalog::ResolveOp(p.op);
    if (op != nullptr) probes[op->id].push_back(std::move(p));
  }
  std::vector<Op> ops;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.alias_of.empty() || runtime::Registry().Find(op.id) == nullptr) continue;
    std::vector<conformance::DeviceProbe> mine = probes[op.id];
    if (mine.empty()) {
      conformance::DeviceProbe p{.op = op.id};
      for (const std::string& in : op.inputs) {
        if (in.ends_with("?")) break;
        p.inputs.push_back({"T", {4, 6}});
      }
      mine.push_back(p);
    }
    const conformance::DeviceProbe* pick = &mine[0];
    for (const conformance::DeviceProbe& p : mine) {
      bool ok = true;
      for (const conformance::ProbeInput& in : p.inputs) {
        if (!in.dtype.empty() && (in.shape.empty() || NumElements(in.shape) == 0)) ok = false;
      }
      if (ok) {
        pick = &p;
        break;
      }
    }
    DType dtype = DType::Invalid;
    for (DType d : kPreferred) {
      const bool listed = pick->dtypes.empty() ? op.dtypes.Contains(d)
                                               : std::find(pick->dtypes.begin(), pick->dtypes.end(), d) != pick->dtypes.end();
      if (listed) {
        dtype = d;
        break;
      }
    }
    Op o{&op, {}, ""};
    o.base.op = &op;
    o.base.arg = "valid call";
    if (dtype == DType::Invalid) {
      o.rejected = "no dtype";
      ops.push_back(std::move(o));
      continue;
    }
    try {
      o.base.graph = ir::ParseGraph(ProbeGraphJson(*pick, op, dtype), "sweep " + op.id);
      for (size_t i = 0; i < pick->inputs.size(); ++i) {
        o.base.ranges[fmt::format("in{}", i)] = {pick->inputs[i].lo, pick->inputs[i].hi};
        if (pick->inputs[i].dtype.empty() && i + 1 < pick->inputs.size()) o.base.cli = false;
      }
      o.base.cli = o.base.cli && o.base.graph.params.empty();
      RunOn(o.base, Fast(), Inputs(o.base));
    } catch (const std::exception& e) {
      o.rejected = e.what();
    }
    ops.push_back(std::move(o));
  }
  return ops;
}

ir::ValueSpec* GraphInput(Case& c, size_t node_input) {
  const std::string& name = c.graph.nodes[0].inputs[node_input];
  for (ir::ValueSpec& v : c.graph.inputs) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

int64_t Rank0(const Case& base) {
  for (const ir::ValueSpec& v : base.graph.inputs) return static_cast<int64_t>(v.shape.size());
  return 1;
}

// Every bad case derived from a valid call.
std::vector<Case> Derive(const Op& op) {
  std::vector<Case> cases;
  const Case& base = op.base;
  auto derived = [&](Kind kind, std::string arg, std::vector<std::string> fragments) -> Case& {
    Case c = base;
    c.kind = kind;
    c.arg = std::move(arg);
    c.fragments = std::move(fragments);
    cases.push_back(std::move(c));
    return cases.back();
  };
  const std::vector<std::string>& node_inputs = base.graph.nodes[0].inputs;
  // 1. A dtype outside the op's set, each input in turn.
  for (size_t i = 0; i < node_inputs.size(); ++i) {
    if (node_inputs[i].empty() || GraphInput(const_cast<Case&>(base), i) == nullptr) continue;
    for (DType d : kWrong) {
      if (op.info->dtypes.Contains(d)) continue;
      Case& c = derived(Kind::DType, fmt::format("input {} {}", i, DTypeName(d)),
                        {fmt::format("input {}", i), std::string(DTypeName(d))});
      GraphInput(c, i)->dtype = d;
      break;
    }
  }
  // 2. A leading dimension added or dropped, each input in turn.
  for (size_t i = 0; i < node_inputs.size(); ++i) {
    const ir::ValueSpec* v = node_inputs[i].empty() ? nullptr : GraphInput(const_cast<Case&>(base), i);
    if (v == nullptr) continue;
    Shape up = ShapeOf(*v);
    up.insert(up.begin(), 2);
    Case& c = derived(Kind::Rank, fmt::format("input {} {}", i, ShapeToString(up)),
                      {fmt::format("input {}", i), ShapeToString(up)});
    SetShape(*GraphInput(c, i), up);
    Shape down = ShapeOf(*v);
    if (down.empty()) continue;
    down.erase(down.begin());
    Case& d = derived(Kind::Rank, fmt::format("input {} {}", i, ShapeToString(down)),
                      {fmt::format("input {}", i), ShapeToString(down)});
    SetShape(*GraphInput(d, i), down);
  }
  // 3. One dimension of the second input changed (its last, +1).
  if (node_inputs.size() >= 2 && !node_inputs[1].empty() && GraphInput(const_cast<Case&>(base), 1) != nullptr) {
    Shape s = ShapeOf(*GraphInput(const_cast<Case&>(base), 1));
    if (!s.empty()) {
      s.back() += 1;
      Case& c = derived(Kind::Dims, fmt::format("input 1 {}", ShapeToString(s)), {"input 1", ShapeToString(s)});
      SetShape(*GraphInput(c, 1), s);
    }
  }
  // 4. A 0 in the leading dimension of input 0 (and of every input sharing that dimension).
  if (!node_inputs.empty() && !node_inputs[0].empty() && GraphInput(const_cast<Case&>(base), 0) != nullptr) {
    const Shape s0 = ShapeOf(*GraphInput(const_cast<Case&>(base), 0));
    if (!s0.empty()) {
      Case& c = derived(Kind::ZeroSize, "leading dimension 0", {"input 0", "input 1", "empty"});
      for (ir::ValueSpec& v : c.graph.inputs) {
        Shape s = ShapeOf(v);
        if (!s.empty() && s[0] == s0[0]) {
          s[0] = 0;
          SetShape(v, s);
        }
      }
    }
  }
  // 5. Int attributes: -1 and huge (axes: rank, -rank - 1 and huge).
  const int64_t rank = Rank0(base);
  for (const catalog::AttrSpec& a : op.info->attrs) {
    if (a.type == catalog::AttrType::Int) {
      std::vector<int64_t> values = IsAxisAttr(a.name) ? std::vector<int64_t>{rank, -rank - 1, kHuge}
                                                       : std::vector<int64_t>{-1, kHuge};
      for (int64_t v : values) {
        Case& c = derived(Kind::IntAttr, fmt::format("{}={}", a.name, v), {a.name, std::to_string(v)});
        c.graph.nodes[0].attrs[a.name] = v;
      }
    } else if (a.type == catalog::AttrType::IntList) {
      std::vector<int64_t> values = IsAxisAttr(a.name) ? std::vector<int64_t>{rank, -rank - 1, kHuge}
                                                       : std::vector<int64_t>{-1, kHuge};
      for (int64_t v : values) {
        Case& c = derived(Kind::IntAttr, fmt::format("{}[0]={}", a.name, v), {a.name, std::to_string(v)});
        const auto it = base.graph.nodes[0].attrs.find(a.name);
        std::vector<int64_t> list;
        if (it != base.graph.nodes[0].attrs.end()) {
          if (const auto* l = std::get_if<std::vector<int64_t>>(&it->second)) list = *l;
        } else {
          runtime::Attrs defaults(*op.info, {}, kNode);
          list = defaults.Ints(a.name);
        }
        if (list.empty()) list.push_back(v);
        list[0] = v;
        c.graph.nodes[0].attrs[a.name] = list;
      }
    } else if (a.type == catalog::AttrType::Float || a.type == catalog::AttrType::FloatList) {
      for (double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
        Case& c = derived(Kind::FloatAttr, fmt::format("{}{}={}", a.name, a.type == catalog::AttrType::FloatList ? "[0]" : "", v),
                          {a.name, fmt::format("{}", v)});
        if (a.type == catalog::AttrType::Float) {
          c.graph.nodes[0].attrs[a.name] = v;
        } else {
          const auto it = base.graph.nodes[0].attrs.find(a.name);
          std::vector<double> list;
          if (it != base.graph.nodes[0].attrs.end()) {
            if (const auto* l = std::get_if<std::vector<double>>(&it->second)) list = *l;
            if (const auto* l = std::get_if<std::vector<int64_t>>(&it->second)) list.assign(l->begin(), l->end());
          } else {
            runtime::Attrs defaults(*op.info, {}, kNode);
            list = defaults.Floats(a.name);
          }
          if (list.empty()) list.push_back(v);
          list[0] = v;
          c.graph.nodes[0].attrs[a.name] = list;
        }
      }
    }
  }
  // 7. Optimizers update their first input in place: the same parameter as params and grads.
  if (op.info->domain == "optimizer" && node_inputs.size() >= 2 && GraphInput(const_cast<Case&>(base), 0) != nullptr) {
    Case& c = derived(Kind::Alias, "params = grads = parameter 'w'", {"input 1", "'w'"});
    c.cli = false;
    const ir::ValueSpec v = *GraphInput(c, 0);
    ir::ParamSpec p;
    p.name = "w";
    p.dtype = v.dtype;
    p.shape = ShapeOf(v);
    p.init.kind = "uniform";
    p.init.seed = 7;
    c.graph.params.push_back(p);
    c.graph.nodes[0].inputs[0] = "w";
    c.graph.nodes[0].inputs[1] = "w";
    std::erase_if(c.graph.inputs, [](const ir::ValueSpec& s) { return s.name == "in0" || s.name == "in1"; });
  }
  return cases;
}

// ---- evaluation ------------------------------------------------------------------------------
// `word` occurs in `text` with no identifier character on either side.
bool HasWord(const std::string& text, const std::string& word) {
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !ident(text[at - 1])) && (end >= text.size() || !ident(text[end]))) return true;
  }
  return false;
}

// The message names the offending argument. Attributes: the attribute or its bad value. Inputs:
// an input ("input 1", a port name such as "w" or "logits"), an attribute the changed shape no
// longer fits, or a shape of the call (the bad shape often breaks a relation between arguments,
// and the message names the other side of it).
bool NamesArgument(const Case& c, const std::string& msg) {
  for (const std::string& f : c.fragments) {
    if (HasWord(msg, f)) return true;
  }
  if (c.kind == Kind::IntAttr || c.kind == Kind::FloatAttr) return false;
  // "input 1", "empty", or a Backend method's "argument '<name>'" (its view of the bad input).
  for (const char* f : {"input ", "empty", "argument '"}) {
    if (msg.find(f) != std::string::npos) return true;
  }
  for (const std::string& port : c.op->inputs) {
    std::string name = port;
    while (!name.empty() && (name.back() == '?' || name.back() == '.')) name.pop_back();
    if (HasWord(msg, name)) return true;
  }
  for (const catalog::AttrSpec& a : c.op->attrs) {
    if (HasWord(msg, a.name)) return true;
  }
  for (const ir::ValueSpec& v : c.graph.inputs) {
    if (msg.find(ShapeToString(ShapeOf(v))) != std::string::npos) return true;
  }
  return false;
}
enum class Verdict { NamedError, Valid, Failure };

struct Outcome {
  Verdict verdict = Verdict::Failure;
  std::string detail;  // the error message, or why it failed
  int rule = -1;       // kValid index for Valid
};

const ValidRule* FindRule(const Case& c, int* index) {
  for (size_t i = 0; i < kValid.size(); ++i) {
    const ValidRule& r = kValid[i];
    if (r.kind == c.kind && fnmatch(r.op, c.op->id.c_str(), 0) == 0 && fnmatch(r.arg, c.arg.c_str(), 0) == 0) {
      *index = static_cast<int>(i);
      return &r;
    }
  }
  return nullptr;
}

// Empty when `got` matches `want` (same types; values within the dtype's tolerance, NaN == NaN).
std::string Compare(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want) {
  for (const auto& [name, w] : want) {
    const auto it = got.find(name);
    if (it == got.end()) return fmt::format("{} missing", name);
    const Tensor& g = it->second;
    if (g.dtype() != w.dtype() || g.shape() != w.shape()) {
      return fmt::format("{}: {}{} vs the reference's {}{}", name, DTypeName(g.dtype()), ShapeToString(g.shape()),
                         DTypeName(w.dtype()), ShapeToString(w.shape()));
    }
    if (IsComplex(w.dtype())) continue;
    const Tolerance tol = DefaultTolerance(w.dtype());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double a = g.GetDouble(i), b = w.GetDouble(i);
      if (a == b || (std::isnan(a) && std::isnan(b))) continue;
      if (!(std::abs(a - b) <= tol.abs + tol.rel * std::abs(b))) {
        return fmt::format("{} element {}: {} vs the reference's {}", name, i, a, b);
      }
    }
  }
  return "";
}

Shape Broadcast(const Case& c) {
  Shape out;
  for (const ir::ValueSpec& v : c.graph.inputs) {
    const Shape s = ShapeOf(v);
    const size_t rank = std::max(out.size(), s.size());
    Shape r(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = i < rank - out.size() ? 1 : out[i - (rank - out.size())];
      const int64_t b = i < rank - s.size() ? 1 : s[i - (rank - s.size())];
      r[i] = a == 1 ? b : a;
    }
    out = r;
  }
  return out;
}

std::string CheckValid(const Case& c, const ValidRule& rule, const std::map<std::string, Tensor>& inputs,
                       const std::map<std::string, Tensor>& got) {
  const Tensor& out0 = got.at("out0");
  switch (rule.check) {
    case Check::SameShape:
      if (out0.shape() != ShapeOf(c.graph.inputs.at(0))) {
        return fmt::format("output shape {} is not input 0's {}", ShapeToString(out0.shape()),
                           ShapeToString(ShapeOf(c.graph.inputs.at(0))));
      }
      break;
    case Check::Broadcast:
      if (out0.shape() != Broadcast(c)) {
        return fmt::format("output shape {} is not the broadcast {}", ShapeToString(out0.shape()), ShapeToString(Broadcast(c)));
      }
      break;
    case Check::Empty:
      if (out0.numel() != 0) return fmt::format("output {} is not empty", ShapeToString(out0.shape()));
      break;
    case Check::AliasCopy: {
      // The same step with the grads a distinct graph input holding the parameter's values.
      Case copy = c;
      ir::ValueSpec g{"g", c.graph.params[0].dtype, {}};
      SetShape(g, c.graph.params[0].shape);
      copy.graph.inputs.push_back(g);
      copy.graph.nodes[0].inputs[1] = "g";
      runtime::Executor ex(copy.graph, Fast());
      std::map<std::string, Tensor> in = inputs;
      in["g"] = ex.SaveParams().at("w").Clone();
      auto want = ex.Run(in);
      for (const auto& [name, t] : ex.SaveParams()) want["param:" + name] = t;
      if (const std::string d = Compare(got, want); !d.empty()) return "aliased vs distinct grads: " + d;
      break;
    }
    case Check::Reference: break;
  }
  if (rule.check != Check::AliasCopy) {
    const auto want = RunOn(c, Reference(), inputs);
    if (const std::string d = Compare(got, want); !d.empty()) return d;
  }
  return "";
}

Outcome Evaluate(const Case& c) {
  Outcome o;
  const std::map<std::string, Tensor> inputs = Inputs(c);
  std::map<std::string, Tensor> got;
  try {
    got = RunOn(c, Fast(), inputs);
  } catch (const Error& e) {
    o.detail = e.what();
    const bool names_op = o.detail.find(c.op->id) != std::string::npos;
    const bool names_node = o.detail.find(kNode) != std::string::npos;
    // An output too large to allocate (a huge size attribute) is an OutOfMemory naming the node and
    // the byte count; the attribute is the only change in the case.
    const bool names_arg = NamesArgument(c, o.detail) || e.code() == ErrorCode::OutOfMemory;
    if (names_op && names_node && names_arg) {
      o.verdict = Verdict::NamedError;
    } else {
      o.detail = fmt::format("error does not name the {}: {}",
                             !names_op ? "op" : !names_node ? "node" : "argument", o.detail);
    }
    return o;
  } catch (const std::exception& e) {
    o.detail = fmt::format("non-Error exception: {}", e.what());
    return o;
  }
  const ValidRule* rule = FindRule(c, &o.rule);
  if (rule == nullptr) {
    std::string shapes;
    for (const auto& [name, t] : got) shapes += fmt::format(" {}={}{}", name, DTypeName(t.dtype()), ShapeToString(t.shape()));
    o.detail = "returned a result that kValid does not list:" + shapes;
    return o;
  }
  try {
    o.detail = CheckValid(c, *rule, inputs, got);
  } catch (const std::exception& e) {
    o.detail = fmt::format("the check threw: {}", e.what());
  }
  o.verdict = o.detail.empty() ? Verdict::Valid : Verdict::Failure;
  return o;
}

// With BACKPLANE_SWEEP_ISOLATE=1 each case runs in a child process (5 s, 4 GiB), so that a crash
// or a hang is reported as a case instead of ending the sweep.
Outcome EvaluateIsolated(const Case& c) {
  int fd[2];
  if (pipe(fd) != 0) return {Verdict::Failure, "pipe failed", -1};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    alarm(5);
    const rlimit limit{rlim_t{4} << 30, rlim_t{4} << 30};
    setrlimit(RLIMIT_AS, &limit);
    const Outcome o = Evaluate(c);
    const std::string msg = fmt::format("{} {} {}", static_cast<int>(o.verdict), o.rule, o.detail);
    (void)!write(fd[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fd[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    return {Verdict::Failure, WTERMSIG(status) == SIGALRM ? "hang (over 5 s)" : fmt::format("crash (signal {})", WTERMSIG(status)), -1};
  }
  std::istringstream in(msg);
  int verdict = 2, rule = -1;
  in >> verdict >> rule;
  std::string detail;
  std::getline(in, detail);
  return {static_cast<Verdict>(verdict), detail.empty() ? detail : detail.substr(1), rule};
}

struct Sweep {
  std::vector<Op> ops;
  std::vector<Case> cases;
};

// The valid calls and every case derived from them (not yet run).
const Sweep& Cases() {
  static const Sweep sweep = [] {
    Sweep s;
    s.ops = BaseCalls();
    for (const Op& op : s.ops) {
      if (!op.rejected.empty()) continue;
      for (Case& c : Derive(op)) s.cases.push_back(std::move(c));
    }
    return s;
  }();
  return sweep;
}

Outcome RunCase(const Case& c) {
  return std::getenv("BACKPLANE_SWEEP_ISOLATE") != nullptr ? EvaluateIsolated(c) : Evaluate(c);
}

TEST(BadInputSweep, EveryRunnableOpHasAValidCall) {
  const Sweep& s = Cases();
  int runnable = 0;
  for (const Op& op : s.ops) {
    ++runnable;
    EXPECT_TRUE(op.rejected.empty()) << op.info->id << ": the valid call failed: " << op.rejected;
  }
  EXPECT_GT(runnable, 200);
}

TEST(BadInputSweep, EveryCaseIsANamedErrorOrADocumentedResult) {
  const Sweep& s = Cases();
  std::map<Kind, std::array<int, 3>> counts;  // cases, named errors, documented valid results
  std::set<int> used;
  for (size_t i = 0; i < s.cases.size(); ++i) {
    const Outcome o = RunCase(s.cases[i]);
    auto& n = counts[s.cases[i].kind];
    ++n[0];
    if (o.verdict == Verdict::NamedError) ++n[1];
    if (o.verdict == Verdict::Valid) {
      ++n[2];
      used.insert(o.rule);
    }
    if (std::getenv("BACKPLANE_SWEEP_LOG") != nullptr) {
      fmt::print("SWEEP {} | {} | {}\n", Label(s.cases[i]),
                 o.verdict == Verdict::NamedError ? "error" : o.verdict == Verdict::Valid ? "valid" : "FAIL", o.detail);
    }
    EXPECT_NE(o.verdict, Verdict::Failure) << Label(s.cases[i]) << ": " << o.detail;
  }
  for (size_t r = 0; r < kValid.size(); ++r) {
    EXPECT_TRUE(used.contains(static_cast<int>(r))) << "kValid entry " << kValid[r].op << " / " << KindKey(kValid[r].kind)
                                                    << " / " << kValid[r].arg << " matches no valid result";
  }
  std::string table = "| Class | Cases | Named errors | Documented valid results |\n|---|---:|---:|---:|\n";
  std::array<int, 3> total{};
  for (Kind k : kKinds) {
    const auto& n = counts[k];
    table += fmt::format("| {} | {} | {} | {} |\n", KindName(k), n[0], n[1], n[2]);
    for (int j = 0; j < 3; ++j) total[j] += n[j];
  }
  table += fmt::format("| all | {} | {} | {} |\n", total[0], total[1], total[2]);
  fmt::print("Bad input sweep: {} ops\n{}", s.ops.size(), table);
}

// Bugs the sweep found, each pinned on its own.
TEST(BadInputSweep, ModelOpsCheckTheTriggerDtype) {
  for (const auto& [op, attrs] : {std::pair<std::string, std::string>{"model.freeze", R"({"pattern": "w"})"},
                                  {"model.graft", R"({"at": "w"})"}}) {
    const std::string json = fmt::format(
        R"({{"format": "backplane.graph", "version": 1, "inputs": [{{"name": "t", "dtype": "c64", "shape": [2]}}],
            "params": [{{"name": "w", "dtype": "f32", "shape": [2], "init": {{"kind": "ones"}}}}],
            "nodes": [{{"op": "{}", "name": "edit", "inputs": ["t"], "outputs": ["y"], "attrs": {}}}],
            "outputs": ["y"]}})",
        op, attrs);
    try {
      runtime::Executor ex(ir::ParseGraph(json), Fast());
      ADD_FAILURE() << op << " accepted a c64 trigger";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::UnsupportedDType) << e.what();
      EXPECT_NE(std::string(e.what()).find("input 0 has dtype c64"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("node 'edit'"), std::string::npos) << e.what();
    }
  }
}

TEST(BadInputSweep, ConvExtentErrorsNameTheAttribute) {
  const std::string json = R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": [1, 1, 5]}, {"name": "w", "dtype": "f32", "shape": [1, 1, 3]}],
      "nodes": [{"op": "convolution.conv1d", "name": "c", "inputs": ["x", "w"], "outputs": ["y"], "attrs": {"dilation": 4}}],
      "outputs": ["y"]})";
  try {
    runtime::Executor ex(ir::ParseGraph(json), Fast());
    ADD_FAILURE() << "a dilated kernel of 9 over 5 elements was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dilated kernel 9 (dilation 4)"), std::string::npos) << e.what();
  }
}

// A Backend method's error from inside a lowering names the op and the node too.
TEST(BadInputSweep, RunTimeErrorsNameTheNode) {
  // JSON has no Inf: the attribute is set on the parsed graph.
  ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}],
      "nodes": [{"op": "activation.leaky_relu", "name": "act", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})");
  g.nodes[0].attrs["alpha"] = std::numeric_limits<double>::infinity();
  try {
    runtime::Executor ex(g, Fast());
    ex.Run({{"x", Tensor(DType::Float32, {3})}});
    ADD_FAILURE() << "alpha = inf was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(std::string(e.what()).rfind("activation.leaky_relu node 'act': ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("got inf"), std::string::npos) << e.what();
  }
}

// ---- the same cases through `backplane op` ----------------------------------------------------
std::string AttrText(const ir::AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) return fmt::format("[{}]", fmt::join(*l, ", "));
  return fmt::format("[{}]", fmt::join(std::get<std::vector<double>>(v), ", "));
}

bool NpyWritable(DType d) { return d != DType::Int4 && d != DType::Float8E4M3 && d != DType::Float8E5M2; }

TEST(BadInputSweep, CliSamplePerClassAndDomain) {
  const Sweep& s = Cases();
  const fs::path dir = fs::temp_directory_path() / fmt::format("bp_sweep_{}", ::getpid());
  fs::create_directories(dir);
  std::set<std::pair<std::string, Kind>> done;
  int samples = 0;
  for (size_t i = 0; i < s.cases.size(); ++i) {
    const Case& c = s.cases[i];
    if (!c.cli || done.contains({c.op->domain, c.kind})) continue;
    bool writable = true;
    for (const ir::ValueSpec& v : c.graph.inputs) writable = writable && NpyWritable(v.dtype);
    if (!writable) continue;
    const Outcome o = RunCase(c);
    if (o.verdict == Verdict::Failure) continue;  // reported by EveryCaseIsANamedErrorOrADocumentedResult
    done.insert({c.op->domain, c.kind});
    ++samples;
    const std::map<std::string, Tensor> inputs = Inputs(c);
    std::string args = fmt::format("op {}", c.op->id);
    for (const std::string& name : c.graph.nodes[0].inputs) {
      if (name.empty()) continue;
      const fs::path file = dir / (name + ".npy");
      io::WriteNpy(file.string(), inputs.at(name));
      args += fmt::format(" --in '{}'", file.string());
    }
    for (const auto& [key, value] : c.graph.nodes[0].attrs) args += fmt::format(" --attr '{}={}'", key, AttrText(value));
    // out0 exists beforehand (it must be left as it is on an error); the others must not appear.
    const fs::path out0 = dir / "out0.npy";
    const std::string sentinel = "sentinel";
    std::ofstream(out0) << sentinel;
    std::vector<fs::path> outs = {out0};
    for (size_t k = 1; k < c.graph.outputs.size(); ++k) outs.push_back(dir / fmt::format("out{}.npy", k));
    for (size_t k = 1; k < outs.size(); ++k) fs::remove(outs[k]);
    for (const fs::path& p : outs) args += fmt::format(" --out '{}'", p.string());
    const test::CommandResult r = test::RunCli(args);
    SCOPED_TRACE(Label(c) + ": backplane " + args + "\n" + r.output);
    if (o.verdict == Verdict::NamedError) {
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_NE(r.output.find(c.op->id), std::string::npos);
      EXPECT_NE(r.output.find("node 'op'"), std::string::npos);
      EXPECT_TRUE(NamesArgument(c, r.output) || r.output.find("cannot allocate") != std::string::npos) << "the message names none of " << fmt::format("{}", fmt::join(c.fragments, ", "));
      std::ifstream in(out0);
      EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), sentinel) << "out0 was overwritten";
      for (size_t k = 1; k < outs.size(); ++k) EXPECT_FALSE(fs::exists(outs[k])) << outs[k] << " was created";
    } else {
      ASSERT_EQ(r.exit_code, 0);
      const auto want = RunOn(c, Fast(), inputs);
      std::map<std::string, Tensor> got = {{"out0", io::ReadNpy(out0.string())}};
      EXPECT_EQ(Compare(got, {{"out0", want.at("out0")}}), "");
    }
  }
  fs::remove_all(dir);
  fmt::print("Bad input sweep: {} CLI samples (one per domain and class)\n", samples);
  EXPECT_GT(samples, 50);
}

}  // namespace
}  // namespace backplane
