#include "xla/lowering.hpp"

#include <fmt/format.h>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"

namespace backplane::xla {

Value LowerContext::State(const std::string& key, const TensorType& type) {
  for (const StateSlot& s : state_) {
    if (s.key == key) return s.has_next ? s.next : s.current;
  }
  StateSlot slot{key, type, new_arg_(type), {}, false};
  state_.push_back(slot);
  return slot.current;
}

void LowerContext::SetState(const std::string& key, const Value& next) {
  for (StateSlot& s : state_) {
    if (s.key != key) continue;
    if (next.type != s.type) {
      throw Error(ErrorCode::Internal, node_name(),
                  fmt::format("state '{}' is {}, lowering gave {}", key, MlirType(s.type), MlirType(next.type)));
    }
    s.next = next;
    s.has_next = true;
    return;
  }
  throw Error(ErrorCode::Internal, node_name(), fmt::format("state '{}' set before it was read", key));
}

void LowerContext::Require(const Value& ok, const std::string& message) {
  if (ok.dtype() != DType::Bool || !ok.shape().empty()) {
    throw Error(ErrorCode::Internal, node_name(), "Require needs an i1 scalar");
  }
  checks_.push_back({ok, fmt::format("{} node '{}'", node_.node->op, node_.node->name), message});
}

void LoweringTable::Add(std::string_view id, LowerFn fn) {
  const catalog::OpInfo* op = catalog::FindOp(id);
  if (op == nullptr || !op->alias_of.empty()) {
    throw Error(ErrorCode::Internal, "xla", fmt::format("lowering for unknown or alias op '{}'", id));
  }
  if (!fns_.emplace(std::string(id), std::move(fn)).second) {
    throw Error(ErrorCode::Internal, "xla", fmt::format("op '{}' lowered twice", id));
  }
}

const LowerFn* LoweringTable::Find(std::string_view id_or_alias) const {
  const catalog::OpInfo* op = catalog::ResolveOp(id_or_alias);
  if (op == nullptr) return nullptr;
  const auto it = fns_.find(op->id);
  return it == fns_.end() ? nullptr : &it->second;
}

std::vector<std::string> LoweringTable::Ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, fn] : fns_) ids.push_back(id);
  return ids;
}

const LoweringTable& Lowerings() {
  static const LoweringTable table = [] {
    LoweringTable t;
    RegisterElementwiseLowerings(t);
    RegisterActivationLowerings(t);
    RegisterReductionLowerings(t);
    RegisterShapeLowerings(t);
    RegisterLinalgLowerings(t);
    RegisterTrainLowerings(t);
    RegisterNnLowerings(t);
    RegisterTensorLowerings(t);
    RegisterResearchLowerings(t);
    RegisterGraphLowerings(t);
    return t;
  }();
  return table;
}

DType ComputeType(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype;
}

Value Broadcast(Builder& b, const Value& x, const Shape& shape) { return b.BroadcastTo(x, shape); }

int64_t Axis(const LowerContext& ctx, const std::string& attr, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    ctx.attrs().Fail(attr, fmt::format("in [{}, {})", -rank, rank), std::to_string(axis));
  }
  return a;
}

}  // namespace backplane::xla
