// Lowerings of catalog ops to StableHLO: one function per canonical op ID, registered by family
// (lower_<family>.cpp). A lowering reads its operands as Values, its attributes through the same
// Attrs the CPU path uses, and the output types the CPU shape rule inferred, and returns one
// Value per output with exactly those types.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/runtime/graph_device.hpp"
#include "xla/stablehlo_builder.hpp"

namespace backplane::xla {

// Thrown by a lowering for a node it cannot express; the node runs on the CPU with this reason.
class Unlowerable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The device's persistent state of one node: the lowering asks for a key with its type and
// gets the value at the start of the run, then gives the next value.
struct StateSlot {
  std::string key;
  TensorType type;
  Value current;
  Value next;
  bool has_next = false;
};

class LowerContext {
 public:
  LowerContext(Builder& b, const runtime::SegmentNode& node, std::function<Value(const TensorType&)> new_arg)
      : b(b), node_(node), new_arg_(std::move(new_arg)) {}
  Builder& b;
  const runtime::Attrs& attrs() const { return *node_.attrs; }
  const TensorType& out_type(size_t i) const { return node_.output_types.at(i); }
  size_t num_outputs() const { return node_.output_types.size(); }
  bool input_frozen(size_t i) const { return i < node_.input_frozen.size() && node_.input_frozen[i]; }
  const std::string& node_name() const { return node_.node->name; }
  // State: the value at the start of the run (zeros the first time).
  Value State(const std::string& key, const TensorType& type);
  void SetState(const std::string& key, const Value& next);
  std::vector<StateSlot>& state() { return state_; }
  // A data-dependent precondition the CPU kernel checks (labels in range, probabilities in
  // [0, 1]): `ok` is an i1 scalar computed on the device; when it is false after the run, the run
  // fails with InvalidArgument "<op> node '<name>': <message>" and no state is updated.
  void Require(const Value& ok, const std::string& message);
  struct Check {
    Value ok;
    std::string where;  // "<op> node '<name>'"
    std::string message;
  };
  std::vector<Check>& checks() { return checks_; }
  [[noreturn]] void Unsupported(const std::string& reason) const { throw Unlowerable(reason); }

 private:
  const runtime::SegmentNode& node_;
  std::function<Value(const TensorType&)> new_arg_;
  std::vector<StateSlot> state_;
  std::vector<Check> checks_;
};

using LowerFn = std::function<std::vector<Value>(LowerContext& ctx, std::span<const Value> in)>;

class LoweringTable {
 public:
  void Add(std::string_view id, LowerFn fn);  // canonical IDs only; throws on duplicates
  const LowerFn* Find(std::string_view id_or_alias) const;
  std::vector<std::string> Ids() const;

 private:
  std::map<std::string, LowerFn, std::less<>> fns_;
};

const LoweringTable& Lowerings();

// Family registrations (one per lower_<family>.cpp).
void RegisterElementwiseLowerings(LoweringTable& t);
void RegisterActivationLowerings(LoweringTable& t);
void RegisterReductionLowerings(LoweringTable& t);
void RegisterShapeLowerings(LoweringTable& t);
void RegisterLinalgLowerings(LoweringTable& t);
void RegisterTrainLowerings(LoweringTable& t);
void RegisterNnLowerings(LoweringTable& t);
void RegisterTensorLowerings(LoweringTable& t);
void RegisterResearchLowerings(LoweringTable& t);
void RegisterGraphLowerings(LoweringTable& t);

// Helpers shared by the lowerings.
// Computation dtype of a floating op on `dtype`: f16/bf16 compute in f32 like the CPU kernels.
DType ComputeType(DType dtype);
// Broadcasts both operands to the output shape (NumPy rules).
Value Broadcast(Builder& b, const Value& x, const Shape& shape);
// a [..., m, k] (or [k]) times b [..., k, n] (or [k]) with broadcast batch axes, in ComputeType,
// rounded to out.dtype (lower_linalg.cpp).
Value Matmul(Builder& b, const Value& a, const Value& bm, const TensorType& out);
// Stable softmax / log-softmax over `axis` in x's dtype (lower_activation.cpp).
Value Softmax(Builder& b, const Value& x, int64_t axis);
Value LogSoftmax(Builder& b, const Value& x, int64_t axis);
// Index of the first maximum along the last axis (NaN never displaces an earlier best), i64.
Value ArgMaxLast(Builder& b, const Value& x);
// Normalises a possibly negative axis of rank `rank`.
int64_t Axis(const LowerContext& ctx, const std::string& attr, int64_t axis, int64_t rank);

}  // namespace backplane::xla
