// A device that runs whole subgraphs (XLA, later CUDA). The executor cuts a graph into segments
// of consecutive nodes the device supports and compiles each as one program; the other nodes run
// on the CPU backend, and tensors cross between host and device only at those cuts and at the
// graph's inputs and outputs (ggml's scheduler and supports_op are the model).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backplane/device.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/op_registry.hpp"
#include "backplane/tensor.hpp"

namespace backplane::runtime {

struct SegmentNode {
  const ir::Node* node = nullptr;
  const Attrs* attrs = nullptr;
  std::vector<TensorType> input_types;  // Invalid dtype for an omitted optional input
  std::vector<TensorType> output_types;
  // Per input: a graph parameter whose training is frozen (optimizers leave it as it is).
  std::vector<bool> input_frozen;
};

struct Segment {
  std::string where;                   // "graph 'name'", for messages
  std::vector<SegmentNode> nodes;      // in execution order
  std::vector<std::string> inputs;     // values read from outside the segment, argument order
  std::vector<TensorType> input_types;
  std::vector<std::string> outputs;    // values produced here that are needed afterwards
};

class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;
  // `inputs` follow Segment::inputs (device tensors). `state` holds the persistent node state as
  // "<node>/<key>" tensors; missing entries start as zeros, and each run replaces them. Returns
  // the Segment::outputs as device tensors.
  virtual std::vector<Tensor> Run(std::span<const Tensor> inputs, std::map<std::string, Tensor>& state) = 0;
};

class GraphDevice {
 public:
  virtual ~GraphDevice() = default;
  virtual Device device() const = 0;
  // Why the device cannot run this node ("no lowering for ...", "f8 inputs"), nullopt when it can.
  virtual std::optional<std::string> Unsupported(const SegmentNode& node) const = 0;
  // Compiles (or finds in the device's cache) one program for the segment.
  virtual std::shared_ptr<DeviceProgram> Compile(const Segment& segment) = 0;
  virtual Tensor ToDevice(const Tensor& host) = 0;
  // What `backplane info` shows: plugin path, platform, API versions, ...
  virtual std::vector<std::pair<std::string, std::string>> Properties() const = 0;
};

// Opens a graph device by name ("xla", "xla:1"); nullptr for "cpu". Throws Error(DeviceUnavailable)
// when this build has no such device or it cannot be opened (the message names the plugin).
std::unique_ptr<GraphDevice> OpenGraphDevice(std::string_view name);
// The graph devices this build can open ("xla" when built with the PJRT header).
std::vector<std::string> BuiltGraphDevices();

// Optimizer ops update their first input in place when it is a graph parameter.
bool UpdatesParamInPlace(std::string_view op_id);

}  // namespace backplane::runtime
