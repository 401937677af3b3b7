// The lowering context: the values known while a model is imported (runtime values with their
// types, constants with their data), the node being lowered and its attributes, and emission of
// catalog nodes. Emitted nodes whose inputs are all constants are run at import time (folded).
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/error.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/tensor.hpp"

namespace backplane::onnx {

struct Value {
  DType dtype = DType::Invalid;
  std::vector<ir::Dim> dims;      // symbolic dims keep their symbol
  std::optional<Tensor> constant;  // known at import time
  bool materialized = false;       // defined in the graph (input, param or node output)
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool is_static() const;
  Shape shape() const;  // static dims; throws on a symbolic one
};

// A sequence or an optional, resolved at import time: the names of its element values (tensors,
// or other composites for nested types such as an optional sequence). An optional holds none or one.
struct Composite {
  enum class Kind { Sequence, Optional };
  Kind kind = Kind::Sequence;
  std::vector<std::string> items;
  std::string KindName() const { return kind == Kind::Sequence ? "sequence" : "optional"; }
};

class Context {
 public:
  Context(std::string model, int64_t opset);
  ~Context();

  const std::string& model() const { return model_; }
  int64_t opset() const { return opset_; }
  ir::Graph& graph() { return graph_; }
  std::map<std::string, Tensor>& initializers() { return initializers_; }

  // ---- values -----------------------------------------------------------------------------------
  bool Has(const std::string& name) const { return values_.contains(name) || composites_.contains(name); }
  const Value& Get(const std::string& name) const;  // a tensor; a composite is an error
  bool IsComposite(const std::string& name) const { return composites_.contains(name); }
  const Composite& GetComposite(const std::string& name) const;  // a tensor is an error
  void DefineComposite(const std::string& name, Composite value);
  void DefineInput(const std::string& name, DType dtype, std::vector<ir::Dim> dims);
  void DefineConstant(const std::string& name, Tensor value);
  // Makes `name` a graph value (a constant becomes a parameter or a literal Input node).
  void Materialize(const std::string& name);
  // A fresh value name derived from `hint`.
  std::string Fresh(const std::string& hint);
  // A constant built by the importer (scalars for Gemm's alpha and the like).
  std::string Scalar(double value, DType dtype);
  std::string ConstTensor(const Tensor& value, const std::string& hint);

  // ---- subgraph scopes (If branches, Loop / Scan / SequenceMap bodies) ---------------------------
  // Inside a subgraph, its own names (inputs, initializers, node outputs) map to fresh value names;
  // a name not bound in any open scope is an outer (eventually top-level) name.
  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }
  void Bind(const std::string& local, const std::string& value) { scopes_.back()[local] = value; }
  std::string Resolve(const std::string& name) const;

  // ---- the node being lowered ---------------------------------------------------------------------
  void BeginNode(const ::onnx::NodeProto& node, int index);
  // The node being lowered, saved around the import of a subgraph.
  std::pair<const ::onnx::NodeProto*, int> CurrentNode() const { return {node_, node_index_}; }
  void RestoreNode(std::pair<const ::onnx::NodeProto*, int> saved) { std::tie(node_, node_index_) = saved; }
  const ::onnx::NodeProto& node() const { return *node_; }
  std::string NodeWhere() const;  // "node 'name' (OpType)"
  [[noreturn]] void Unsupported(const std::string& detail) const;  // NotImplemented
  [[noreturn]] void Invalid(const std::string& detail) const;      // InvalidArgument

  // Attributes: only those listed are accepted; any other one present is an error.
  void AllowAttrs(std::initializer_list<const char*> names) const;
  bool HasAttr(const std::string& name) const;
  int64_t AttrInt(const std::string& name, int64_t fallback) const;
  double AttrFloat(const std::string& name, double fallback) const;
  std::string AttrString(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> AttrInts(const std::string& name) const;
  std::optional<std::vector<double>> AttrFloats(const std::string& name) const;
  const ::onnx::TensorProto* AttrTensor(const std::string& name) const;
  // Requires attribute `name` (if present) to equal `expected`.
  void RequireAttrInt(const std::string& name, int64_t expected, const std::string& why) const;

  // Inputs and outputs of the node ("" entries are omitted optional inputs).
  int NumInputs() const { return node_->input_size(); }
  bool HasInput(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }
  const std::string& Input(int i) const;  // throws when absent
  const Value& In(int i) const { return Get(Input(i)); }
  const Composite& CompositeIn(int i) const { return GetComposite(Input(i)); }
  const std::optional<Tensor>& ConstIn(int i) const { return In(i).constant; }
  // The constant input as int64 values; Unsupported when it is not known at import time.
  std::vector<int64_t> ConstInts(int i, const std::string& what) const;
  Tensor RequireConst(int i, const std::string& what) const;
  int NumOutputs() const { return node_->output_size(); }
  bool HasOutput(int i) const { return i < node_->output_size() && !node_->output(i).empty(); }
  const std::string& Output(int i) const;

  // ---- emission -------------------------------------------------------------------------------------
  // Emits catalog op `op` over value names `inputs` (an "" entry is an omitted optional input) and
  // defines `outputs`. Shapes come from the op's own shape rule; errors name the ONNX node.
  void Emit(const std::string& op, const std::vector<std::string>& inputs, const ir::AttrMap& attrs,
            const std::vector<std::string>& outputs);
  // One-output convenience: returns a fresh name (or `out` when given).
  std::string Op(const std::string& op, const std::vector<std::string>& inputs, const ir::AttrMap& attrs = {},
                 const std::string& out = "");
  // Defines `out` as an alias of `value` (a copy through an Input node, the same constant, or the
  // same composite).
  void Alias(const std::string& value, const std::string& out);

  // The CPU backend that folds all-constant nodes at import time.
  Backend& backend() { return *backend_; }

 private:
  ir::Node& AddNode(const std::string& op, std::vector<std::string> inputs, ir::AttrMap attrs,
                    std::vector<std::string> outputs);

  std::string model_;
  int64_t opset_;
  ir::Graph graph_;
  std::map<std::string, Tensor> initializers_;
  std::map<std::string, Value> values_;
  std::map<std::string, Composite> composites_;
  std::vector<std::map<std::string, std::string>> scopes_;
  std::set<std::string> node_names_;
  std::map<std::string, int64_t> placeholder_of_symbol_;
  std::map<int64_t, std::string> symbol_of_placeholder_;
  int fresh_ = 0;
  const ::onnx::NodeProto* node_ = nullptr;
  int node_index_ = -1;
  std::unique_ptr<Backend> backend_;
};

}  // namespace backplane::onnx
