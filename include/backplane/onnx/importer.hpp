// ONNX import: a ModelProto file (default domain, opsets 1-17) to a Backplane graph plus its
// initializer tensors. Every ONNX node lowers onto catalog ops through an explicit table
// (src/onnx/op_table.cpp); anything the table cannot express exactly is an error, never skipped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backplane/ir/graph.hpp"
#include "backplane/tensor.hpp"

namespace backplane::onnx {

inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 17;

// A sequence or optional value as a tree of tensors (a tensor is a leaf). The importer resolves
// sequences and optionals at import time: their structure (length, presence) must be known then.
struct StructuredValue {
  enum class Kind { Tensor, Sequence, Optional };
  Kind kind = Kind::Tensor;
  Tensor tensor;                       // Kind::Tensor
  // Kind::Tensor in ImportOptions::structured_inputs: a runtime graph input of the tensor's dtype
  // and shape (its data unused) rather than a constant.
  bool runtime = false;
  std::vector<StructuredValue> items;  // Sequence: the elements; Optional: none or one
};
// "tensor", "sequence(tensor, tensor)", "optional()", "optional(sequence(tensor))", ...
std::string StructuredLayout(const StructuredValue& v);
// The leaves of `v` under the names the importer gives them: `name` for a tensor, "name[i]" for
// item i of a sequence or optional (nested: "name[i][j]").
std::vector<std::pair<std::string, const Tensor*>> StructuredLeaves(const StructuredValue& v, const std::string& name);

struct ImportOptions {
  // Graph inputs bound to fixed values at import time: they become constants (and may be folded,
  // e.g. a Reshape's shape fed as an input). Names not among the graph inputs throw.
  std::map<std::string, Tensor> bind_inputs;
  // Sequence and optional graph inputs, by their structure: each leaf is a constant, or (runtime)
  // a graph input named as StructuredLeaves names it. Such an input left unbound is an error.
  std::map<std::string, StructuredValue> structured_inputs;
};

struct ImportResult {
  // Parameters (the initializers and folded constants a node reads) have init kind "zeros" and
  // trainable false; load `initializers` into the executor, or set the init to a file holding them.
  ir::Graph graph;
  std::map<std::string, Tensor> initializers;
  int64_t opset = 0;                   // the default domain's opset the model imports
  std::vector<std::string> op_types;   // distinct ONNX op types of the graph, in first-use order
  // Graph outputs that are sequences or optionals, by name -> StructuredLayout; the graph's outputs
  // are their leaves, named as StructuredLeaves names them.
  std::map<std::string, std::string> structured_outputs;
};

// Reads and lowers a model; throws Error naming the model and, for node problems,
// "node 'name' (OpType)" with the attribute or input and the value expected. Unsupported ops,
// attribute values and dtypes use ErrorCode::NotImplemented; malformed files InvalidArgument.
ImportResult ImportOnnx(const std::string& path, const ImportOptions& options = {});

// Names of the model's graph inputs that are not initializers, in order.
std::vector<std::string> GraphInputNames(const std::string& path);
std::vector<std::string> GraphOutputNames(const std::string& path);
// The declared kind of each graph input and output (Tensor when undeclared); maps are refused.
std::map<std::string, StructuredValue::Kind> GraphValueKinds(const std::string& path);
// Distinct op types of the model's graph, in first-use order.
std::vector<std::string> ModelOpTypes(const std::string& path);
// Graph inputs that feed a position defining a node's output shape or sampling grid (Resize's roi,
// scales and sizes, Upsample's scales, OneHot's depth, Range's and MelWeightMatrix's inputs), which the lowerings need at import time.
std::vector<std::string> ShapeDefiningInputNames(const std::string& path);

// Sets every parameter of `result.graph` to read `tensor file` (relative to the graph file), as
// `backplane import` writes them.
void PointParamsAtFile(ir::Graph& graph, const std::string& safetensors_file);

// A serialized TensorProto file (the node tests' input_*.pb / output_*.pb): its name (may be
// empty) and value. External data is read relative to the file's directory.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};
NamedTensor ReadTensorProtoFile(const std::string& path);
// A serialized TensorProto, SequenceProto or OptionalProto file (by `kind`) and its name.
struct NamedValue {
  std::string name;
  StructuredValue value;
};
NamedValue ReadValueProtoFile(const std::string& path, StructuredValue::Kind kind);

}  // namespace backplane::onnx
