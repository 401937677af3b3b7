#include "backplane/runtime/op_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <sstream>

#include "backplane/error.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime {
namespace {

// Parses a catalog default ("0.01", "[1, 2]", "true", "") into a typed value.
ir::AttrValue ParseDefault(const catalog::AttrSpec& spec) {
  const std::string& text = spec.default_value;
  auto parse_list = [&]() {
    std::vector<std::string> items;
    std::string inner = text;
    if (!inner.empty() && inner.front() == '[') inner = inner.substr(1, inner.size() - 2);
    std::stringstream ss(inner);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item.find_first_not_of(' ') != std::string::npos) items.push_back(item);
    }
    return items;
  };
  switch (spec.type) {
    case catalog::AttrType::Int: return static_cast<int64_t>(std::stoll(text));
    case catalog::AttrType::Float: return std::stod(text);
    case catalog::AttrType::Bool: return text == "true";
    case catalog::AttrType::String: return text;
    case catalog::AttrType::IntList: {
      std::vector<int64_t> v;
      for (const std::string& s : parse_list()) v.push_back(std::stoll(s));
      return v;
    }
    case catalog::AttrType::FloatList: {
      std::vector<double> v;
      for (const std::string& s : parse_list()) v.push_back(std::stod(s));
      return v;
    }
  }
  return int64_t{0};
}

}  // namespace

std::string TypeToString(const TensorType& type) {
  return fmt::format("{}{}", DTypeName(type.dtype), ShapeToString(type.shape));
}

Attrs::Attrs(const catalog::OpInfo& op, const ir::AttrMap& given, std::string node_name,
             int num_outputs)
    : op_(op.id), node_(std::move(node_name)), num_outputs_(num_outputs) {
  for (const catalog::AttrSpec& spec : op.attrs) {
    const auto it = given.find(spec.name);
    if (it != given.end()) {
      values_[spec.name] = it->second;
      given_[spec.name] = true;
    } else if (!spec.required) {
      values_[spec.name] = ParseDefault(spec);
      given_[spec.name] = false;
    }
  }
}

void Attrs::Fail(const std::string& attr, const std::string& expected,
                 const std::string& got) const {
  throw Error(ErrorCode::InvalidArgument, fmt::format("{} node '{}'", op_, node_),
              fmt::format("attribute '{}' must be {}, got {}", attr, expected, got));
}

const ir::AttrValue& Attrs::Get(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) Fail(name, "given (it has no default)", "nothing");
  return it->second;
}

int64_t Attrs::Int(const std::string& name) const {
  const ir::AttrValue& v = Get(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  Fail(name, "an int", ir::AttrToString(v));
}

double Attrs::Float(const std::string& name) const {
  const ir::AttrValue& v = Get(name);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  Fail(name, "a float", ir::AttrToString(v));
}

bool Attrs::Bool(const std::string& name) const {
  const ir::AttrValue& v = Get(name);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  Fail(name, "a bool", ir::AttrToString(v));
}

const std::string& Attrs::String(const std::string& name) const {
  const ir::AttrValue& v = Get(name);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  Fail(name, "a string", ir::AttrToString(v));
}

std::vector<int64_t> Attrs::Ints(const std::string& name) const {
  const ir::AttrValue& v = Get(name);
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  if (const auto* d = std::get_if<std::vector<double>>(&v); d != nullptr && d->empty()) return {};
  Fail(name, "a list of ints", ir::AttrToString(v));
}

std::vector<double> Attrs::Floats(const std::string& name) const {
  const ir::AttrValue& v = Get(name);
  if (const auto* l = std::get_if<std::vector<double>>(&v)) return *l;
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    return std::vector<double>(l->begin(), l->end());
  }
  Fail(name, "a list of floats", ir::AttrToString(v));
}

bool Attrs::Given(const std::string& name) const {
  const auto it = given_.find(name);
  return it != given_.end() && it->second;
}

void OpContext::Fail(ErrorCode code, const std::string& detail) const {
  throw Error(code, fmt::format("{} node '{}'", attrs.op(), attrs.node()), detail);
}

void RunLowering(const OpImpl& impl, OpContext& ctx, std::span<const Tensor> inputs,
                 std::span<Tensor> outputs) {
  try {
    impl.run(ctx, inputs, outputs);
  } catch (const Error& e) {
    const std::string where = fmt::format("{} node '{}'", ctx.attrs.op(), ctx.attrs.node());
    if (std::string_view(e.what()).find(where) != std::string_view::npos) throw;
    throw Error(e.code(), where, e.what());
  }
}

void OpRegistry::Add(std::string_view id, OpImpl impl) {
  const catalog::OpInfo* op = catalog::FindOp(id);
  if (op == nullptr) throw Error(ErrorCode::Internal, "OpRegistry", fmt::format("unknown op '{}'", id));
  if (!op->alias_of.empty()) {
    throw Error(ErrorCode::Internal, "OpRegistry",
                fmt::format("'{}' is an alias of '{}'; register the canonical ID", id, op->alias_of));
  }
  if (!impls_.emplace(std::string(id), std::move(impl)).second) {
    throw Error(ErrorCode::Internal, "OpRegistry", fmt::format("'{}' registered twice", id));
  }
}

const OpImpl* OpRegistry::Find(std::string_view id_or_alias) const {
  const catalog::OpInfo* op = catalog::ResolveOp(id_or_alias);
  if (op == nullptr) return nullptr;
  const auto it = impls_.find(op->id);
  return it == impls_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::Ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, impl] : impls_) ids.push_back(id);
  return ids;
}

const OpRegistry& Registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    ops::RegisterGraphOps(r);
    ops::RegisterActivationOps(r);
    ops::RegisterMathOps(r);
    ops::RegisterNnOps(r);
    ops::RegisterShapeOps(r);
    ops::RegisterTrainOps(r);
    ops::RegisterResearchOps(r);
    ops::RegisterSamplingQuantOps(r);
    ops::RegisterTensorElementwiseOps(r);
    ops::RegisterTensorAxisOps(r);
    ops::RegisterTensorIndexOps(r);
    ops::RegisterPoolNdOps(r);
    ops::RegisterSpatialOps(r);
    return r;
  }();
  return registry;
}

Arity OpArity(const catalog::OpInfo& op) {
  auto count = [](const std::vector<std::string>& names, int& min, int& max) {
    min = 0;
    max = 0;
    for (const std::string& n : names) {
      if (n.ends_with("...")) {
        ++min;
        max = -1;
      } else if (n.ends_with("?")) {
        if (max >= 0) ++max;
      } else {
        ++min;
        if (max >= 0) ++max;
      }
    }
  };
  Arity a;
  count(op.inputs, a.min_inputs, a.max_inputs);
  count(op.outputs, a.min_outputs, a.max_outputs);
  return a;
}

}  // namespace backplane::runtime
