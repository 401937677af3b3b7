// Runs one catalog operation on tensors, as a one-node graph through the Executor (so it
// broadcasts, takes axes and places on a device exactly as a graph node does).
#pragma once

#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/graph_device.hpp"
#include "backplane/tensor.hpp"

namespace backplane::runtime {

struct OpCall {
  std::string op;              // catalog ID or alias
  // The op's inputs in order (an undefined Tensor omits an optional one), then its state
  // tensors (OpImpl::state).
  std::vector<Tensor> inputs;
  ir::AttrMap attrs;           // unknown names throw; missing ones take the catalog defaults
  int num_outputs = -1;        // main outputs to produce; -1: the declared non-optional ones
  GraphDevice* device = nullptr;  // null: the CPU
};

struct OpResult {
  std::vector<Tensor> outputs;  // the main outputs, in the catalog's order
  std::vector<Tensor> state;    // the op's state after the call, in OpImpl::state order
};

// Throws Error naming the op and the argument for an unknown op, a wrong input count or an
// attribute the op does not have.
OpResult RunOp(const OpCall& call, Backend& backend);

// The port name of a catalog input or output ("x?" -> "x").
std::string PortName(const std::string& port);

}  // namespace backplane::runtime
