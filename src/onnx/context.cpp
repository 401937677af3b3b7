// The lowering context: value table, attribute access with typed errors, node emission through
// the catalog's shape rules, and import-time folding of nodes whose inputs are all constants.
#include "onnx/context.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "backplane/catalog/catalog.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/runtime/op_registry.hpp"

namespace backplane::onnx {
namespace {

using AP = ::onnx::AttributeProto;

// Symbolic dims reach the catalog's shape rules as distinct large placeholders; a result dim equal
// to one maps back to its symbol, any other dim at least this large is a derived, unnamed one.
constexpr int64_t kPlaceholderBase = 1000003;
constexpr int64_t kPlaceholderStep = 7919;

// Constants of at most this many elements become literal Input nodes rather than parameters.
constexpr int64_t kMaxLiteral = 16;

std::string AttrTypeName(int type) {
  if (AP::AttributeType_IsValid(type)) return AP::AttributeType_Name(static_cast<AP::AttributeType>(type));
  return std::to_string(type);
}

bool ExactlyDouble(const Tensor& t) {
  if (!kRealDTypes.Contains(t.dtype()) || t.numel() > kMaxLiteral) return false;
  if (t.dtype() == DType::Int64) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t v = t.data_as<int64_t>()[i];
      if (v > (int64_t{1} << 53) || v < -(int64_t{1} << 53)) return false;
    }
  }
  if (t.dtype() == DType::Uint64) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.data_as<uint64_t>()[i] > (uint64_t{1} << 53)) return false;
    }
  }
  if (IsFloatingPoint(t.dtype())) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (!std::isfinite(t.GetDouble(i))) return false;  // the JSON form spells these as strings
    }
  }
  return true;
}

}  // namespace

bool Value::is_static() const {
  return std::all_of(dims.begin(), dims.end(), [](const ir::Dim& d) { return d.symbol.empty(); });
}

Shape Value::shape() const {
  Shape s;
  for (const ir::Dim& d : dims) {
    if (!d.symbol.empty()) {
      throw Error(ErrorCode::NotImplemented, "onnx", fmt::format("symbolic dimension '{}' where a static one is needed", d.symbol));
    }
    s.push_back(d.size);
  }
  return s;
}

Context::Context(std::string model, int64_t opset)
    : model_(std::move(model)), opset_(opset), backend_(cpu::CreateBackend()) {}
Context::~Context() = default;

const Value& Context::Get(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) {
    if (const auto c = composites_.find(name); c != composites_.end()) {
      const std::string detail = fmt::format("value '{}' is a {} where a tensor is expected", name, c->second.KindName());
      if (node_ != nullptr) Unsupported(detail);
      throw Error(ErrorCode::NotImplemented, "onnx", fmt::format("{}: {}", model_, detail));
    }
    if (node_ != nullptr) Invalid(fmt::format("input '{}' is not defined before its use", name));
    throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: value '{}' is not defined", model_, name));
  }
  return it->second;
}

const Composite& Context::GetComposite(const std::string& name) const {
  const auto it = composites_.find(name);
  if (it == composites_.end()) {
    const std::string detail = values_.contains(name)
                                   ? fmt::format("value '{}' is a tensor where a sequence or optional is expected", name)
                                   : fmt::format("input '{}' is not defined before its use", name);
    if (node_ != nullptr) Invalid(detail);
    throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: {}", model_, detail));
  }
  return it->second;
}

void Context::DefineComposite(const std::string& name, Composite value) {
  for (const std::string& item : value.items) {
    if (!Has(item)) throw Error(ErrorCode::Internal, "onnx", fmt::format("{}: composite '{}' holds undefined '{}'", model_, name, item));
  }
  values_.erase(name);
  composites_[name] = std::move(value);
}

void Context::DefineInput(const std::string& name, DType dtype, std::vector<ir::Dim> dims) {
  ir::ValueSpec spec{name, dtype, dims};
  for (const ir::Dim& d : dims) {
    if (!d.symbol.empty() && !placeholder_of_symbol_.contains(d.symbol)) {
      const int64_t p = kPlaceholderBase + kPlaceholderStep * static_cast<int64_t>(placeholder_of_symbol_.size());
      placeholder_of_symbol_[d.symbol] = p;
      symbol_of_placeholder_[p] = d.symbol;
    }
  }
  composites_.erase(name);
  values_[name] = Value{dtype, std::move(dims), std::nullopt, true};
  graph_.inputs.push_back(std::move(spec));
}

void Context::DefineConstant(const std::string& name, Tensor value) {
  Value v;
  v.dtype = value.dtype();
  for (int64_t d : value.shape()) v.dims.push_back(ir::Dim{d, ""});
  v.constant = std::move(value);
  composites_.erase(name);
  values_[name] = std::move(v);
}

void Context::Materialize(const std::string& name) {
  Value& v = values_.at(name);
  if (v.materialized) return;
  const Tensor& t = *v.constant;
  if (ExactlyDouble(t)) {
    ir::AttrMap attrs;
    attrs["values"] = t.ToDoubles();
    attrs["shape"] = t.shape();
    attrs["dtype"] = std::string(DTypeName(t.dtype()));
    AddNode("Input", {}, std::move(attrs), {name});
  } else {
    ir::ParamSpec p;
    p.name = name;
    p.dtype = t.dtype();
    p.shape = t.shape();
    p.trainable = false;
    graph_.params.push_back(p);
    initializers_[name] = t;
  }
  v.materialized = true;
}

std::string Context::Fresh(const std::string& hint) {
  std::string name;
  do {
    name = fmt::format("{}__{}", hint.empty() ? "t" : hint, fresh_++);
  } while (Has(name) || node_names_.contains(name));
  return name;
}

std::string Context::Scalar(double value, DType dtype) {
  Tensor t = Tensor::FromDoubles(dtype, {}, std::vector<double>{value});
  return ConstTensor(t, "const");
}

std::string Context::ConstTensor(const Tensor& value, const std::string& hint) {
  const std::string name = Fresh(hint);
  DefineConstant(name, value);
  return name;
}

std::string Context::Resolve(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (const auto b = it->find(name); b != it->end()) return b->second;
  }
  return name;
}

// ---- the node being lowered ---------------------------------------------------------------------
void Context::BeginNode(const ::onnx::NodeProto& node, int index) {
  node_ = &node;
  node_index_ = index;
}

std::string Context::NodeWhere() const {
  const std::string name = node_->name().empty()
                               ? (node_->output_size() > 0 ? node_->output(0) : fmt::format("#{}", node_index_))
                               : node_->name();
  return fmt::format("node '{}' ({})", name, node_->op_type());
}

void Context::Unsupported(const std::string& detail) const {
  throw Error(ErrorCode::NotImplemented, "onnx", fmt::format("{}: {}: {}", model_, NodeWhere(), detail));
}

void Context::Invalid(const std::string& detail) const {
  throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: {}: {}", model_, NodeWhere(), detail));
}

void Context::AllowAttrs(std::initializer_list<const char*> names) const {
  for (const AP& a : node_->attribute()) {
    if (std::none_of(names.begin(), names.end(), [&](const char* n) { return a.name() == n; })) {
      Unsupported(fmt::format("attribute '{}' is not supported (supported: {})", a.name(),
                              names.size() == 0 ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
  }
}

namespace {
const AP* FindAttr(const ::onnx::NodeProto& node, const std::string& name) {
  for (const AP& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
}  // namespace

bool Context::HasAttr(const std::string& name) const { return FindAttr(*node_, name) != nullptr; }

#define BP_ONNX_ATTR_TYPE(attr, want)                                                                   \
  do {                                                                                                   \
    if ((attr)->type() != (want)) {                                                                      \
      Invalid(fmt::format("attribute '{}' must be of type {}, got {}", name, AttrTypeName(want),         \
                          AttrTypeName((attr)->type())));                                                \
    }                                                                                                    \
  } while (false)

int64_t Context::AttrInt(const std::string& name, int64_t fallback) const {
  const AP* a = FindAttr(*node_, name);
  if (a == nullptr) return fallback;
  BP_ONNX_ATTR_TYPE(a, AP::INT);
  return a->i();
}

double Context::AttrFloat(const std::string& name, double fallback) const {
  const AP* a = FindAttr(*node_, name);
  if (a == nullptr) return fallback;
  BP_ONNX_ATTR_TYPE(a, AP::FLOAT);
  return a->f();
}

std::string Context::AttrString(const std::string& name, const std::string& fallback) const {
  const AP* a = FindAttr(*node_, name);
  if (a == nullptr) return fallback;
  BP_ONNX_ATTR_TYPE(a, AP::STRING);
  return a->s();
}

std::optional<std::vector<int64_t>> Context::AttrInts(const std::string& name) const {
  const AP* a = FindAttr(*node_, name);
  if (a == nullptr) return std::nullopt;
  BP_ONNX_ATTR_TYPE(a, AP::INTS);
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<double>> Context::AttrFloats(const std::string& name) const {
  const AP* a = FindAttr(*node_, name);
  if (a == nullptr) return std::nullopt;
  BP_ONNX_ATTR_TYPE(a, AP::FLOATS);
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

const ::onnx::TensorProto* Context::AttrTensor(const std::string& name) const {
  const AP* a = FindAttr(*node_, name);
  if (a == nullptr) return nullptr;
  BP_ONNX_ATTR_TYPE(a, AP::TENSOR);
  return &a->t();
}

#undef BP_ONNX_ATTR_TYPE

void Context::RequireAttrInt(const std::string& name, int64_t expected, const std::string& why) const {
  if (!HasAttr(name)) return;
  const int64_t got = AttrInt(name, expected);
  if (got != expected) {
    Unsupported(fmt::format("attribute '{}' must be {} ({}), got {}", name, expected, why, got));
  }
}

const std::string& Context::Input(int i) const {
  if (!HasInput(i)) Invalid(fmt::format("input {} is required", i));
  return node_->input(i);
}

const std::string& Context::Output(int i) const {
  if (!HasOutput(i)) Invalid(fmt::format("output {} is required", i));
  return node_->output(i);
}

std::vector<int64_t> Context::ConstInts(int i, const std::string& what) const {
  const Tensor t = RequireConst(i, what);
  if (!IsInteger(t.dtype())) Invalid(fmt::format("input {} '{}' must be an integer tensor, got {}", i, what, DTypeName(t.dtype())));
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) {
    out[static_cast<size_t>(k)] = t.dtype() == DType::Int64 ? t.data_as<int64_t>()[k]
                                                            : static_cast<int64_t>(t.GetDouble(k));
  }
  return out;
}

Tensor Context::RequireConst(int i, const std::string& what) const {
  const Value& v = In(i);
  if (!v.constant) {
    Unsupported(fmt::format("input {} '{}' ({}) must be known at import time (an initializer, a Constant or "
                            "foldable from them)",
                            i, what, Input(i)));
  }
  return *v.constant;
}

// ---- emission -------------------------------------------------------------------------------------
ir::Node& Context::AddNode(const std::string& op, std::vector<std::string> inputs, ir::AttrMap attrs,
                           std::vector<std::string> outputs) {
  ir::Node n;
  n.name = outputs.front();
  while (node_names_.contains(n.name)) n.name = Fresh(outputs.front());
  node_names_.insert(n.name);
  n.op = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back();
}

void Context::Emit(const std::string& op, const std::vector<std::string>& inputs, const ir::AttrMap& attrs,
                   const std::vector<std::string>& outputs) {
  const catalog::OpInfo* info = catalog::ResolveOp(op);
  const runtime::OpImpl* impl = runtime::Registry().Find(op);
  if (info == nullptr || impl == nullptr) Unsupported(fmt::format("catalog op '{}' has no lowering", op));
  std::vector<runtime::TensorType> types;
  bool all_constant = true;
  bool symbolic = false;
  for (const std::string& name : inputs) {
    if (name.empty()) {
      types.emplace_back();
      continue;
    }
    const Value& v = Get(name);
    runtime::TensorType t{v.dtype, {}};
    for (const ir::Dim& d : v.dims) {
      if (d.symbol.empty()) {
        t.shape.push_back(d.size);
      } else {
        symbolic = true;
        t.shape.push_back(placeholder_of_symbol_.at(d.symbol));
      }
    }
    types.push_back(std::move(t));
    all_constant = all_constant && v.constant.has_value();
  }
  const std::string node_name = outputs.empty() ? op : outputs.front();
  runtime::Attrs a(*info, attrs, node_name, static_cast<int>(outputs.size()));
  std::vector<runtime::TensorType> out_types;
  try {
    out_types = impl->infer(types, a);
  } catch (const Error& e) {
    throw Error(e.code(), "onnx", fmt::format("{}: {}: as {}: {}", model_, NodeWhere(), op, e.what()));
  }
  if (out_types.size() < outputs.size()) Invalid(fmt::format("{} gives {} outputs, {} needed", op, out_types.size(), outputs.size()));
  // Fold: every input known (a literal Input with no inputs counts), the op keeps no state.
  if (all_constant && impl->state.empty() && info->link != catalog::LinkKind::GraphOnly) {
    std::vector<Tensor> in;
    for (const std::string& name : inputs) in.push_back(name.empty() ? Tensor() : *Get(name).constant);
    std::vector<Tensor> out;
    for (size_t o = 0; o < outputs.size(); ++o) out.emplace_back(out_types[o].dtype, out_types[o].shape);
    runtime::NodeState state;
    runtime::ParameterStore params;
    runtime::OpContext ctx{*backend_, a, state, params, inputs};
    try {
      impl->run(ctx, in, out);
    } catch (const Error& e) {
      throw Error(e.code(), "onnx", fmt::format("{}: {}: folding {}: {}", model_, NodeWhere(), op, e.what()));
    }
    for (size_t o = 0; o < outputs.size(); ++o) DefineConstant(outputs[o], out[o]);
    return;
  }
  for (const std::string& name : inputs) {
    if (!name.empty()) Materialize(name);
  }
  AddNode(op, inputs, attrs, outputs);
  for (size_t o = 0; o < outputs.size(); ++o) {
    Value v;
    v.dtype = out_types[o].dtype;
    for (int64_t d : out_types[o].shape) {
      const auto it = symbol_of_placeholder_.find(d);
      if (symbolic && it != symbol_of_placeholder_.end()) {
        v.dims.push_back({0, it->second});
      } else if (symbolic && d >= kPlaceholderBase) {
        v.dims.push_back({0, Fresh("dim")});  // derived from symbols (a product, say): unnamed
      } else {
        v.dims.push_back({d, ""});
      }
    }
    v.materialized = true;
    composites_.erase(outputs[o]);
    values_[outputs[o]] = std::move(v);
  }
}

std::string Context::Op(const std::string& op, const std::vector<std::string>& inputs, const ir::AttrMap& attrs,
                        const std::string& out) {
  const std::string name = out.empty() ? Fresh(node_ != nullptr && node_->output_size() > 0 ? node_->output(0) : op) : out;
  Emit(op, inputs, attrs, {name});
  return name;
}

void Context::Alias(const std::string& value, const std::string& out) {
  if (IsComposite(value)) {
    Composite c = GetComposite(value);
    DefineComposite(out, std::move(c));
    return;
  }
  const Value& v = Get(value);
  if (v.constant) {
    DefineConstant(out, *v.constant);
    return;
  }
  Emit("Input", {value}, {}, {out});
}

}  // namespace backplane::onnx
