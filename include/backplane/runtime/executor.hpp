// Verification and execution of a graph on one Backend.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/graph_device.hpp"
#include "backplane/runtime/op_registry.hpp"

namespace backplane::runtime {

struct VerifiedGraph {
  std::vector<size_t> order;                  // node indices in execution order
  std::map<std::string, TensorType> types;    // every value: inputs, params, node outputs
  std::map<std::string, int64_t> symbols;     // symbolic dimension bindings used
};

// Checks names, arity, cycles, dtype and shape rules and attributes; throws Error naming the node
// (and its position "$.nodes[i]"). Symbolic input dimensions take the sizes in `input_shapes`
// when given, otherwise a placeholder size of 2.
VerifiedGraph VerifyGraph(const ir::Graph& graph,
                          const std::map<std::string, Shape>& input_shapes = {});

struct ExecutorOptions {
  bool check_finite_params = false;  // throw when a parameter holds NaN/Inf after loading
  // Places the graph on this device (not owned; must outlive the executor). Nodes it does not
  // support run on `backend` with copies at the cuts. Null: everything runs on `backend`.
  GraphDevice* device = nullptr;
};

// Where each node of a placed graph runs, from the last plan.
struct NodePlacement {
  std::string node;
  std::string op;
  std::string device;         // "xla:0", "cpu"
  std::string fallback;       // why a node of a device-placed graph runs on the CPU, else empty
  int segment = -1;           // device program index, -1 on the CPU
};

class Executor {
 public:
  Executor(ir::Graph graph, Backend& backend, ExecutorOptions options = {});

  // Runs the graph once. Inputs are matched to the graph inputs by name (dtype and shape are
  // checked, symbolic dimensions bound); returns the graph outputs by name. Parameters and node
  // state persist across runs.
  std::map<std::string, Tensor> Run(const std::map<std::string, Tensor>& inputs);

  // Replaces parameters by name (dtype and shape must match); unknown names throw.
  void LoadParams(const std::map<std::string, Tensor>& tensors);
  // Parameters by name plus node state as "<node>/<key>".
  std::map<std::string, Tensor> SaveParams() const;
  // Loads node state saved by SaveParams ("<node>/<key>" entries); other entries are ignored.
  void LoadState(const std::map<std::string, Tensor>& tensors);

  // Placement of every node for these input shapes (plans if needed); all "cpu" without a device.
  std::vector<NodePlacement> Placement(const std::map<std::string, Shape>& input_shapes);

  ParameterStore& params() { return params_; }
  const ir::Graph& graph() const { return graph_; }
  // Number of distinct buffers the last plan allocated for node outputs (reuse makes it smaller
  // than the number of values).
  int64_t planned_buffers() const { return planned_buffers_; }
  // Bytes the last plan needs on the host at its peak: parameters plus node-output buffers (with
  // reuse). Plan refuses (Error OutOfMemory) a CPU-run graph whose peak exceeds MaxAllocBytes().
  uint64_t planned_peak_bytes() const { return planned_peak_bytes_; }

 private:
  void Plan(const std::map<std::string, Shape>& input_shapes);
  void PlanPlacement();
  std::map<std::string, Tensor> RunPlaced(std::map<std::string, Tensor> values);
  // The host copy of a parameter a CPU node is about to read (it may update it in place).
  void BringParamHome(const std::string& name);

  ir::Graph graph_;
  Backend& backend_;
  ExecutorOptions options_;
  ParameterStore params_;
  std::vector<NodeState> node_state_;
  std::map<std::string, Shape> planned_shapes_;
  bool planned_ = false;
  VerifiedGraph verified_;
  std::map<std::string, TensorType> param_types_;
  std::vector<std::vector<std::string>> release_after_;  // per step: values dead afterwards
  int64_t planned_buffers_ = 0;
  uint64_t param_bytes_ = 0;
  uint64_t planned_peak_bytes_ = 0;
  // Node-output buffers released by earlier runs of the same plan, reused by size when no
  // caller still holds them (so steady-state runs do not allocate).
  std::vector<Tensor> pool_;

  // Device placement (options_.device set): per planned step, the segment it belongs to (-1: CPU).
  struct PlacedSegment {
    Segment segment;
    std::vector<size_t> steps;                 // plan steps it covers
    std::vector<std::unique_ptr<Attrs>> attrs;  // owned for segment.nodes[i].attrs
    std::shared_ptr<DeviceProgram> program;
  };
  std::vector<int> step_segment_;
  std::vector<std::string> step_fallback_;
  std::vector<PlacedSegment> segments_;
  std::map<std::string, Tensor> device_state_;  // "<node>/<key>", device-resident
};

}  // namespace backplane::runtime
