#include "backplane/ir/passes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/runtime/executor.hpp"

namespace backplane::ir {
namespace {

const std::vector<FusionRule>& Rules() {
  // Parity bounds: the fused kernel runs the same Backend calls in one node, so results agree to
  // rounding; bf16 gets the bf16 tolerance because intermediates are stored in bf16 unfused.
  static const std::vector<FusionRule> rules = {
      {"matmul_bias_gelu", "matmul_bias_act", "gelu", {"math.matmul", "math.add", "activation.gelu"},
       {DType::Float32, DType::BFloat16}, {1e-6, 1e-6}},
      {"matmul_bias_gelu_tanh", "matmul_bias_act", "gelu_tanh",
       {"math.matmul", "math.add", "activation.gelu_tanh"}, {DType::Float32, DType::BFloat16}, {1e-6, 1e-6}},
      {"matmul_bias_relu", "matmul_bias_act", "relu", {"math.matmul", "math.add", "activation.relu"},
       {DType::Float32, DType::BFloat16}, {1e-6, 1e-6}},
      {"matmul_bias", "matmul_bias_act", "none", {"math.matmul", "math.add"},
       {DType::Float32, DType::BFloat16}, {1e-6, 1e-6}},
      {"add_layernorm", "add_layernorm", "none", {"math.add", "math.layernorm"},
       {DType::Float32, DType::BFloat16}, {1e-6, 1e-6}},
      {"dequant4_matmul", "dequant4_matmul", "none", {"quant.dequant_int4", "math.matmul"},
       {DType::Float32}, {1e-6, 1e-6}},
  };
  return rules;
}

// A float attribute as written (JSON may give an integer).
double AttrAsDouble(const AttrValue& v) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return -1.0;
}

bool HasEffect(const catalog::OpInfo& op) {
  return op.domain == "optimizer" || op.domain == "bench" || op.domain == "model";
}

std::string Canonical(const std::string& id) {
  const catalog::OpInfo* op = catalog::ResolveOp(id);
  return op == nullptr ? id : op->id;
}

struct Uses {
  std::map<std::string, int> producer;          // value -> node index
  std::map<std::string, std::vector<int>> readers;
  std::set<std::string> outputs;
};

Uses Index(const Graph& g) {
  Uses u;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs) u.producer[o] = static_cast<int>(i);
    for (const std::string& in : g.nodes[i].inputs) {
      if (!in.empty()) u.readers[in].push_back(static_cast<int>(i));
    }
  }
  u.outputs.insert(g.outputs.begin(), g.outputs.end());
  return u;
}

// The one node reading `value`, or -1 (several readers, none, or a graph output).
int OnlyReader(const Uses& u, const std::string& value) {
  const auto it = u.readers.find(value);
  if (u.outputs.contains(value) || it == u.readers.end() || it->second.size() != 1) return -1;
  return it->second[0];
}

}  // namespace

std::span<const FusionRule> FusionTable() { return Rules(); }

PassReport EliminateDeadCode(Graph& g) {
  PassReport report;
  std::set<std::string> live(g.outputs.begin(), g.outputs.end());
  std::vector<bool> keep(g.nodes.size(), false);
  // Fixed point: a node is live when an output is live or it has an effect.
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (keep[i]) continue;
      const catalog::OpInfo* op = catalog::ResolveOp(g.nodes[i].op);
      bool needed = op != nullptr && HasEffect(*op);
      for (const std::string& o : g.nodes[i].outputs) needed = needed || live.contains(o);
      if (!needed) continue;
      keep[i] = true;
      changed = true;
      for (const std::string& in : g.nodes[i].inputs) live.insert(in);
    }
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(g.nodes[i]));
    } else {
      report.removed.push_back(g.nodes[i].name);
    }
  }
  g.nodes = std::move(kept);
  return report;
}

PassReport FuseOps(Graph& g) {
  PassReport report;
  const runtime::VerifiedGraph types = runtime::VerifyGraph(g);
  bool changed = true;
  while (changed) {
    changed = false;
    const Uses u = Index(g);
    for (const FusionRule& rule : Rules()) {
      for (size_t start = 0; start < g.nodes.size() && !changed; ++start) {
        if (Canonical(g.nodes[start].op) != rule.ops[0]) continue;
        // Follow the single-reader chain through the rule's ops.
        std::vector<int> chain = {static_cast<int>(start)};
        bool ok = true;
        for (size_t k = 1; k < rule.ops.size() && ok; ++k) {
          const Node& prev = g.nodes[static_cast<size_t>(chain.back())];
          const int next = prev.outputs.size() == 1 ? OnlyReader(u, prev.outputs[0]) : -1;
          ok = next >= 0 && Canonical(g.nodes[static_cast<size_t>(next)].op) == rule.ops[k];
          if (ok) chain.push_back(next);
        }
        if (!ok) continue;
        const Node& first = g.nodes[static_cast<size_t>(chain[0])];
        const Node& last = g.nodes[static_cast<size_t>(chain.back())];
        const DType dtype = types.types.at(last.outputs[0]).dtype;
        if (std::find(rule.dtypes.begin(), rule.dtypes.end(), dtype) == rule.dtypes.end()) continue;
        Node fused;
        fused.op = "Fused";
        fused.attrs["pattern"] = rule.pattern;
        fused.attrs["activation"] = rule.activation;
        if (rule.pattern == "matmul_bias_act") {
          const Node& add = g.nodes[static_cast<size_t>(chain[1])];
          const std::string& mm = first.outputs[0];
          const std::string bias = add.inputs[0] == mm ? add.inputs[1] : add.inputs[0];
          const runtime::TensorType& b = types.types.at(first.inputs[1]);
          const runtime::TensorType& bt = types.types.at(bias);
          // A 2-D weight and a bias along the output features only.
          if (b.shape.size() != 2 || bt.shape != Shape{b.shape[1]}) continue;
          if (types.types.at(first.inputs[0]).shape.empty()) continue;
          fused.inputs = {first.inputs[0], first.inputs[1], bias};
        } else if (rule.pattern == "add_layernorm") {
          const Node& ln = last;
          if (types.types.at(first.inputs[0]).shape != types.types.at(first.inputs[1]).shape) continue;
          if (ln.inputs.size() < 3) continue;
          // The fused kernel is the seed's fixed-eps LayerNorm.
          if (const auto eps = ln.attrs.find("eps");
              eps != ln.attrs.end() && AttrAsDouble(eps->second) != 1e-5) {
            continue;
          }
          fused.inputs = {first.inputs[0], first.inputs[1], ln.inputs[1], ln.inputs[2]};
        } else if (rule.pattern == "dequant4_matmul") {
          const Node& mm = last;
          if (mm.inputs[1] != first.outputs[0] || mm.inputs[0] == first.outputs[0]) continue;
          if (types.types.at(first.inputs[0]).shape.size() != 2) continue;
          if (types.types.at(first.outputs[0]).dtype != types.types.at(mm.inputs[0]).dtype) continue;
          fused.inputs = {mm.inputs[0], first.inputs[0]};
          fused.attrs["scale"] = first.attrs.contains("scale") ? first.attrs.at("scale") : AttrValue(1.0);
          fused.attrs["zero_point"] =
              first.attrs.contains("zero_point") ? first.attrs.at("zero_point") : AttrValue(int64_t{0});
        }
        fused.outputs = {last.outputs[0]};
        fused.name = last.name;
        std::string names;
        for (int idx : chain) names += (names.empty() ? "" : ", ") + g.nodes[static_cast<size_t>(idx)].name;
        report.fused.push_back(fmt::format("{}: {} -> {}", rule.name, names, fused.name));
        // Replace the last node with the fused one, drop the others.
        std::set<int> drop(chain.begin(), chain.end() - 1);
        g.nodes[static_cast<size_t>(chain.back())] = std::move(fused);
        std::vector<Node> rest;
        for (size_t i = 0; i < g.nodes.size(); ++i) {
          if (!drop.contains(static_cast<int>(i))) rest.push_back(std::move(g.nodes[i]));
        }
        g.nodes = std::move(rest);
        changed = true;
      }
      if (changed) break;
    }
  }
  return report;
}

}  // namespace backplane::ir
