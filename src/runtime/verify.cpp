#include <fmt/format.h>

#include <queue>
#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/executor.hpp"

namespace backplane::runtime {
namespace {

constexpr int64_t kPlaceholderDim = 2;

std::string Where(const ir::Graph& g, size_t i) {
  return fmt::format("node '{}' ({}, $.nodes[{}])", g.nodes[i].name, g.nodes[i].op, i);
}

[[noreturn]] void Fail(ErrorCode code, const ir::Graph& g, size_t i, const std::string& detail) {
  throw Error(code, fmt::format("graph{}", g.name.empty() ? "" : " '" + g.name + "'"),
              fmt::format("{}: {}", Where(g, i), detail));
}

// Optimizer nodes update their first input (a parameter) in place, so every other reader of that
// parameter must run first.
bool WritesFirstInput(const catalog::OpInfo& op) { return op.domain == "optimizer"; }

}  // namespace

VerifiedGraph VerifyGraph(const ir::Graph& g, const std::map<std::string, Shape>& input_shapes) {
  const std::string where = fmt::format("graph{}", g.name.empty() ? "" : " '" + g.name + "'");
  VerifiedGraph v;
  std::map<std::string, int> producer;  // value -> node index, -1 for inputs/params
  auto define = [&](const std::string& name, int node, const std::string& path) {
    if (!producer.emplace(name, node).second) {
      throw Error(ErrorCode::InvalidArgument, where, fmt::format("{}: duplicate name '{}'", path, name));
    }
  };
  // Graph inputs: bind symbols.
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::ValueSpec& in = g.inputs[i];
    define(in.name, -1, fmt::format("$.inputs[{}]", i));
    TensorType t{in.dtype, {}};
    const auto given = input_shapes.find(in.name);
    if (given != input_shapes.end() && given->second.size() != in.shape.size()) {
      throw Error(ErrorCode::ShapeMismatch, where,
                  fmt::format("input '{}' must have rank {}, got shape {}", in.name, in.shape.size(),
                              ShapeToString(given->second)));
    }
    for (size_t d = 0; d < in.shape.size(); ++d) {
      const ir::Dim& dim = in.shape[d];
      const int64_t actual = given != input_shapes.end() ? given->second[d] : -1;
      if (dim.symbol.empty()) {
        if (actual >= 0 && actual != dim.size) {
          throw Error(ErrorCode::ShapeMismatch, where,
                      fmt::format("input '{}' dimension {} must be {}, got {}", in.name, d, dim.size, actual));
        }
        t.shape.push_back(dim.size);
        continue;
      }
      const auto bound = v.symbols.find(dim.symbol);
      const int64_t size = actual >= 0 ? actual : (bound != v.symbols.end() ? bound->second : kPlaceholderDim);
      if (bound != v.symbols.end() && bound->second != size) {
        throw Error(ErrorCode::ShapeMismatch, where,
                    fmt::format("input '{}' dimension {} ('{}') is {}, but '{}' is already {}", in.name, d,
                                dim.symbol, size, dim.symbol, bound->second));
      }
      v.symbols[dim.symbol] = size;
      t.shape.push_back(size);
    }
    v.types[in.name] = t;
  }
  for (size_t i = 0; i < g.params.size(); ++i) {
    define(g.params[i].name, -1, fmt::format("$.params[{}]", i));
    v.types[g.params[i].name] = {g.params[i].dtype, g.params[i].shape};
  }
  // Structure: ops, arity, outputs.
  std::vector<const catalog::OpInfo*> ops(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    ops[i] = catalog::ResolveOp(n.op);
    if (ops[i] == nullptr) Fail(ErrorCode::InvalidArgument, g, i, fmt::format("unknown operation '{}'", n.op));
    const Arity a = OpArity(*ops[i]);
    const int nin = static_cast<int>(n.inputs.size());
    if (nin < a.min_inputs || (a.max_inputs >= 0 && nin > a.max_inputs)) {
      Fail(ErrorCode::InvalidArgument, g, i,
           fmt::format("takes {} inputs ({}), got {}",
                       a.max_inputs < 0 ? fmt::format("at least {}", a.min_inputs)
                       : a.min_inputs == a.max_inputs ? std::to_string(a.min_inputs)
                                                      : fmt::format("{} to {}", a.min_inputs, a.max_inputs),
                       fmt::join(ops[i]->inputs, ", "), nin));
    }
    const int nout = static_cast<int>(n.outputs.size());
    if (nout < a.min_outputs || (a.max_outputs >= 0 && nout > a.max_outputs)) {
      Fail(ErrorCode::InvalidArgument, g, i,
           fmt::format("produces {} outputs ({}), got {}", a.max_outputs < 0 ? "one or more" : std::to_string(a.min_outputs),
                       fmt::join(ops[i]->outputs, ", "), nout));
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      define(n.outputs[o], static_cast<int>(i), fmt::format("$.nodes[{}].outputs[{}]", i, o));
    }
  }
  // Undefined names and dependencies.
  std::vector<std::set<size_t>> deps(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k) {
      const std::string& name = g.nodes[i].inputs[k];
      if (name.empty()) {
        const std::string& port = k < ops[i]->inputs.size() ? ops[i]->inputs[k] : "";
        if (!port.ends_with("?")) Fail(ErrorCode::InvalidArgument, g, i, fmt::format("input {} must not be empty", k));
        continue;
      }
      const auto it = producer.find(name);
      if (it == producer.end()) Fail(ErrorCode::InvalidArgument, g, i, fmt::format("input {} '{}' is not defined", k, name));
      if (it->second >= 0) deps[i].insert(static_cast<size_t>(it->second));
    }
  }
  // In-place parameter updates run after every other reader of the parameter.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!WritesFirstInput(*ops[i]) || g.nodes[i].inputs.empty()) continue;
    const std::string& target = g.nodes[i].inputs[0];
    for (size_t j = 0; j < g.nodes.size(); ++j) {
      if (j == i) continue;
      for (const std::string& name : g.nodes[j].inputs) {
        if (name == target) deps[i].insert(j);
      }
    }
  }
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    if (!producer.contains(g.outputs[o])) {
      throw Error(ErrorCode::InvalidArgument, where,
                  fmt::format("$.outputs[{}]: '{}' is not defined", o, g.outputs[o]));
    }
  }
  // Topological order (Kahn), stable in file order.
  std::vector<int> indegree(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> users(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (size_t d : deps[i]) {
      ++indegree[i];
      users[d].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (indegree[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    v.order.push_back(i);
    for (size_t u : users[i]) {
      if (--indegree[u] == 0) ready.push(u);
    }
  }
  if (v.order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (indegree[i] > 0) Fail(ErrorCode::InvalidArgument, g, i, "is part of a cycle");
    }
  }
  // Types, node by node.
  std::map<std::string, TensorType> param_types;
  for (const ir::ParamSpec& p : g.params) param_types[p.name] = {p.dtype, p.shape};
  const OpRegistry& registry = Registry();
  for (size_t i : v.order) {
    const ir::Node& n = g.nodes[i];
    const OpImpl* impl = registry.Find(n.op);
    if (impl == nullptr) Fail(ErrorCode::NotImplemented, g, i, "has no CPU lowering in this build");
    std::vector<TensorType> in;
    for (const std::string& name : n.inputs) in.push_back(name.empty() ? TensorType{} : v.types.at(name));
    Attrs attrs(*ops[i], n.attrs, n.name, static_cast<int>(n.outputs.size()));
    attrs.set_param_types(&param_types);
    std::vector<TensorType> out;
    try {
      out = impl->infer(in, attrs);
    } catch (const Error& e) {
      Fail(e.code(), g, i, e.what());
    }
    if (out.size() < n.outputs.size()) {
      Fail(ErrorCode::Internal, g, i, fmt::format("shape rule gave {} outputs for {} names", out.size(), n.outputs.size()));
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) v.types[n.outputs[o]] = out[o];
  }
  return v;
}

}  // namespace backplane::runtime
