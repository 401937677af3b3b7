#include "backplane/runtime/run_op.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/executor.hpp"

namespace backplane::runtime {

std::string PortName(const std::string& port) {
  std::string name = port;
  while (!name.empty() && (name.back() == '?' || name.back() == '.')) name.pop_back();
  return name;
}

OpResult RunOp(const OpCall& call, Backend& backend) {
  const catalog::OpInfo* op = catalog::ResolveOp(call.op);
  if (op == nullptr) ThrowInvalidArgument("RunOp", "op", "a catalog operation ID", "'" + call.op + "'");
  const OpImpl* impl = Registry().Find(op->id);
  if (impl == nullptr) ThrowNotImplemented(op->id, "cpu (no graph lowering)");
  const Arity arity = OpArity(*op);
  const int n_in = static_cast<int>(call.inputs.size());
  const int max_in = arity.max_inputs < 0 ? n_in : std::min(arity.max_inputs, n_in);
  const int state_in = n_in - max_in;
  if (n_in < arity.min_inputs) {
    ThrowInvalidArgument(op->id, "inputs", fmt::format("at least {} tensors ({})", arity.min_inputs, fmt::join(op->inputs, ", ")),
                         std::to_string(n_in));
  }
  if (state_in > static_cast<int>(impl->state.size())) {
    ThrowInvalidArgument(op->id, "inputs",
                         fmt::format("at most {} tensors", max_in + static_cast<int>(impl->state.size())), std::to_string(n_in));
  }
  ir::Graph graph;
  graph.name = op->id;
  ir::Node node;
  node.name = "op";
  node.op = op->id;
  std::map<std::string, Tensor> inputs;
  for (int i = 0; i < max_in; ++i) {
    const size_t port = std::min(static_cast<size_t>(i), op->inputs.size() - 1);
    const std::string name = fmt::format("{}{}", PortName(op->inputs[port]), i);
    const Tensor& t = call.inputs[static_cast<size_t>(i)];
    if (!t.defined()) {  // an omitted optional input
      const bool optional = op->inputs[port].find('?') != std::string::npos;
      if (!optional) ThrowInvalidArgument(op->id, name, "a tensor (the input is not optional)", "none");
      node.inputs.emplace_back();
      continue;
    }
    std::vector<ir::Dim> dims;
    for (int64_t d : t.shape()) dims.push_back({d, ""});
    graph.inputs.push_back({name, t.dtype(), dims});
    node.inputs.push_back(name);
    inputs[name] = t;
  }
  int outs = call.num_outputs;
  if (outs < 0) {  // the declared outputs that are not optional
    outs = 0;
    for (const std::string& o : op->outputs) outs += o.find('?') == std::string::npos && o.find("...") == std::string::npos;
    outs = std::max({outs, arity.min_outputs, 1});
    if (arity.max_outputs >= 0) outs = std::min(outs, arity.max_outputs);
  }
  if (outs < arity.min_outputs || (arity.max_outputs >= 0 && outs > arity.max_outputs)) {
    ThrowInvalidArgument(op->id, "num_outputs",
                         arity.max_outputs < 0 ? fmt::format(">= {}", arity.min_outputs)
                                               : fmt::format("in [{}, {}]", arity.min_outputs, arity.max_outputs),
                         std::to_string(outs));
  }
  for (int i = 0; i < outs; ++i) {
    const size_t port = std::min(static_cast<size_t>(i), op->outputs.size() - 1);
    node.outputs.push_back(fmt::format("{}_out{}", PortName(op->outputs[port]), i));
  }
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [key_binding, value_binding] : call.attrs) {
    const auto& key = key_binding;
    const auto& value = value_binding;
    const bool known = std::any_of(op->attrs.begin(), op->attrs.end(), [&](const catalog::AttrSpec& a) { return a.name == key; });
    if (!known) ThrowInvalidArgument(op->id, "attribute", fmt::format("an attribute of {}", op->id), "'" + key + "'");
    node.attrs[key] = value;
  }
  graph.outputs = node.outputs;
  graph.nodes.push_back(node);
  Executor executor(graph, backend, {.device = call.device});
  std::map<std::string, Tensor> state;
  for (int k = 0; k < state_in; ++k) {
    state["op/" + impl->state[static_cast<size_t>(k)]] = call.inputs[static_cast<size_t>(max_in + k)];
  }
  executor.LoadState(state);
  auto results = executor.Run(inputs);
  OpResult result;
  for (const std::string& name : node.outputs) result.outputs.push_back(results.at(name).ToHost());
  if (!impl->state.empty()) {
    const auto saved = executor.SaveParams();
    for (const std::string& key : impl->state) {
      const auto it = saved.find("op/" + key);
      if (it != saved.end()) result.state.push_back(it->second.ToHost());
    }
  }
  return result;
}

}  // namespace backplane::runtime
