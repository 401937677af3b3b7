// Graph-level operations: for every catalog op, a shape rule and a lowering onto the Backend.
// The Backend's kernels are flat; graph ops broadcast, take axes and batch over leading
// dimensions, and the lowerings here bridge the two.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/tensor.hpp"

namespace backplane::runtime {

struct TensorType {
  DType dtype = DType::Invalid;
  Shape shape;
  bool operator==(const TensorType&) const = default;
};
std::string TypeToString(const TensorType& type);  // "f32[2, 3]"

// Attributes of one node with the catalog's defaults applied; typed getters throw
// InvalidArgument naming the node and attribute when a value is missing or out of range.
class Attrs {
 public:
  Attrs(const catalog::OpInfo& op, const ir::AttrMap& given, std::string node_name,
        int num_outputs = 1);
  // How many outputs the node names (variadic ops such as shape.split use it).
  int num_outputs() const { return num_outputs_; }
  // Types of the graph's parameters, for ops that address parameters by name (model.*).
  const std::map<std::string, TensorType>& param_types() const { return *param_types_; }
  void set_param_types(const std::map<std::string, TensorType>* types) { param_types_ = types; }
  int64_t Int(const std::string& name) const;
  double Float(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;
  std::vector<int64_t> Ints(const std::string& name) const;
  std::vector<double> Floats(const std::string& name) const;
  bool Given(const std::string& name) const;  // set in the graph, not defaulted
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }
  // "<op> node '<name>': attribute '<attr>' must be <expected>, got <got>"
  [[noreturn]] void Fail(const std::string& attr, const std::string& expected,
                         const std::string& got) const;

 private:
  const ir::AttrValue& Get(const std::string& name) const;
  std::string op_;
  std::string node_;
  ir::AttrMap values_;
  std::map<std::string, bool> given_;
  int num_outputs_ = 1;
  const std::map<std::string, TensorType>* param_types_ = &kNoParams;
  static inline const std::map<std::string, TensorType> kNoParams{};
};

// Persistent per-node state across runs of one executor (optimizer moments and step, metric
// accumulators, RNG counters). Saved with the parameters under "<node>/<key>".
struct NodeState {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> scalars;
};

// Parameters of a running graph, by name, with the frozen flags model.freeze sets.
struct ParameterStore {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, bool> trainable;
  std::map<std::string, bool> frozen;
};

struct OpContext {
  Backend& backend;
  const Attrs& attrs;
  NodeState& state;
  ParameterStore& params;
  std::span<const std::string> input_names;  // as written in the node
  // "<op> node '<name>': <detail>" with the given code.
  [[noreturn]] void Fail(ErrorCode code, const std::string& detail) const;
};

using InferFn = std::function<std::vector<TensorType>(std::span<const TensorType> inputs,
                                                      const Attrs& attrs)>;
// Outputs arrive allocated with the inferred types; a lowering may replace an output with a
// tensor sharing an input's storage (a view, or an in-place update).
using RunFn =
    std::function<void(OpContext& ctx, std::span<const Tensor> inputs, std::span<Tensor> outputs)>;

struct OpImpl {
  InferFn infer;
  RunFn run;
  // Keys of the persistent NodeState tensors, in order (e.g. {"m", "v", "step"} for Adam).
  // `backplane op` exposes them as extra inputs and outputs after the catalog's own, so a script
  // can carry optimizer state across calls. Every listed key must exist in state.tensors after
  // the first run.
  std::vector<std::string> state = {};
};

// Runs `impl` on one node. An Error from below (a Backend method, an allocation) that does not
// name the node is rethrown as "<op> node '<name>': <message>" with its code.
void RunLowering(const OpImpl& impl, OpContext& ctx, std::span<const Tensor> inputs,
                 std::span<Tensor> outputs);

class OpRegistry {
 public:
  // Registers the lowering of a canonical (non-alias) catalog ID; throws if the ID is unknown,
  // an alias, or already registered.
  void Add(std::string_view id, OpImpl impl);
  // Resolves aliases; nullptr when the op has no lowering.
  const OpImpl* Find(std::string_view id_or_alias) const;
  std::vector<std::string> Ids() const;

 private:
  std::map<std::string, OpImpl, std::less<>> impls_;
};

// Every lowering of this build, registered once.
const OpRegistry& Registry();

// Arity from the catalog's input list: "x?" is optional, "x..." variadic (one or more).
struct Arity {
  int min_inputs = 0;
  int max_inputs = 0;  // -1: unbounded
  int min_outputs = 0;
  int max_outputs = 0;  // -1: unbounded
};
Arity OpArity(const catalog::OpInfo& op);

}  // namespace backplane::runtime
