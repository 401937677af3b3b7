// ImportOnnx: parses a ModelProto, checks the opset, defines inputs and initializers, lowers every
// node through the op table and assembles the Backplane graph.
#include "backplane/onnx/importer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "backplane/error.hpp"
#include "onnx/context.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

#include <onnx/onnx-data.pb.h>

namespace backplane::onnx {
namespace {

// Protobuf cannot parse messages of 2 GiB or more.
constexpr uint64_t kMaxProtoBytes = (uint64_t{1} << 31) - 1;

[[noreturn]] void Fail(ErrorCode code, const std::string& model, const std::string& detail) {
  throw Error(code, "onnx", fmt::format("{}: {}", model, detail));
}

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }
constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

int64_t DefaultOpset(const ::onnx::ModelProto& m, const std::string& model) {
  int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (IsDefaultDomain(o.domain())) opset = o.version();
  }
  if (opset < 0) {
    // A model of training-domain nodes only (ai.onnx.preview.training) needs no default opset.
    for (const auto& o : m.opset_import()) {
      if (o.domain() == kTrainingDomain) return kMaxOpset;
    }
    Fail(ErrorCode::NotImplemented, model, "imports no opset of the default domain ('' / ai.onnx)");
  }
  if (opset < kMinOpset || opset > kMaxOpset) {
    Fail(ErrorCode::NotImplemented, model,
         fmt::format("opset {} of the default domain is not supported (supported: {} to {})", opset, kMinOpset,
                     kMaxOpset));
  }
  return opset;
}

std::string TypeKindName(const ::onnx::TypeProto& t) {
  if (t.has_sequence_type()) return "sequence";
  if (t.has_optional_type()) return "optional";
  if (t.has_map_type()) return "map";
  if (t.has_sparse_tensor_type()) return "sparse tensor";
  return "tensor";
}

// A bound sequence or optional input: its leaves become constants or runtime inputs.
std::string DefineStructured(Context& ctx, const std::string& name, const StructuredValue& v) {
  if (v.kind == StructuredValue::Kind::Tensor) {
    if (ctx.Has(name)) Fail(ErrorCode::InvalidArgument, ctx.model(), fmt::format("structured input leaf '{}' clashes with a value of that name", name));
    if (!v.runtime) {
      ctx.DefineConstant(name, v.tensor);
    } else {
      std::vector<ir::Dim> dims;
      for (int64_t d : v.tensor.shape()) dims.push_back({d, ""});
      ctx.DefineInput(name, v.tensor.dtype(), std::move(dims));
    }
    return name;
  }
  Composite c;
  c.kind = v.kind == StructuredValue::Kind::Sequence ? Composite::Kind::Sequence : Composite::Kind::Optional;
  if (c.kind == Composite::Kind::Optional && v.items.size() > 1) {
    Fail(ErrorCode::InvalidArgument, ctx.model(), fmt::format("structured input '{}' is an optional with {} values", name, v.items.size()));
  }
  for (size_t i = 0; i < v.items.size(); ++i) c.items.push_back(DefineStructured(ctx, fmt::format("{}[{}]", name, i), v.items[i]));
  ctx.DefineComposite(name, std::move(c));
  return name;
}

// Adds graph output `name` for value `value` (a constant gets a literal or parameter holder).
void AddGraphOutput(Context& ctx, const std::string& value, const std::string& name) {
  if (value != name) {
    if (ctx.Has(name)) Fail(ErrorCode::InvalidArgument, ctx.model(), fmt::format("output leaf '{}' clashes with a value of that name", name));
    ctx.Alias(value, name);
  }
  const Value& v = ctx.Get(name);
  if (v.constant && !v.materialized) {
    const std::string holder = ctx.Fresh(name);
    ctx.DefineConstant(holder, *v.constant);
    ctx.Materialize(holder);
    ctx.graph().nodes.push_back(ir::Node{name, "Input", {holder}, {name}, {}});
  }
  ctx.graph().outputs.push_back(name);
}

// A sequence or optional output: its leaves become graph outputs; returns its layout.
std::string AddStructuredOutput(Context& ctx, const std::string& value, const std::string& name) {
  if (!ctx.IsComposite(value)) {
    AddGraphOutput(ctx, value, name);
    return "tensor";
  }
  const Composite c = ctx.GetComposite(value);
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.items.size(); ++i) parts.push_back(AddStructuredOutput(ctx, c.items[i], fmt::format("{}[{}]", name, i)));
  return fmt::format("{}({})", c.KindName(), fmt::join(parts, ", "));
}

void DefineGraphInput(Context& ctx, const ::onnx::ValueInfoProto& in, const ImportOptions& options) {
  const std::string& name = in.name();
  if (in.type().has_sequence_type() || in.type().has_optional_type()) {
    const auto it = options.structured_inputs.find(name);
    if (it == options.structured_inputs.end()) {
      Fail(ErrorCode::NotImplemented, ctx.model(),
           fmt::format("graph input '{}' is a {}; sequences and optionals are resolved at import time, so its "
                       "structure must be bound (ImportOptions::structured_inputs)",
                       name, TypeKindName(in.type())));
    }
    if (it->second.kind == StructuredValue::Kind::Tensor) {
      Fail(ErrorCode::InvalidArgument, ctx.model(), fmt::format("graph input '{}' is a {}, bound to a tensor", name, TypeKindName(in.type())));
    }
    DefineStructured(ctx, name, it->second);
    return;
  }
  if (!in.type().has_tensor_type()) {
    Fail(ErrorCode::NotImplemented, ctx.model(), fmt::format("graph input '{}' is a {} (map and sparse types are not supported)", name, TypeKindName(in.type())));
  }
  const auto& tt = in.type().tensor_type();
  const auto dtype = DTypeFromOnnx(tt.elem_type());
  if (!dtype) {
    Fail(ErrorCode::NotImplemented, ctx.model(),
         fmt::format("graph input '{}' has element type {}, which Backplane lacks", name, OnnxTypeName(tt.elem_type())));
  }
  if (!tt.has_shape()) Fail(ErrorCode::NotImplemented, ctx.model(), fmt::format("graph input '{}' has no shape (unknown rank)", name));
  std::vector<ir::Dim> dims;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) Fail(ErrorCode::InvalidArgument, ctx.model(), fmt::format("graph input '{}' has dim {} < 0", name, d.dim_value()));
      dims.push_back({d.dim_value(), ""});
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.push_back({0, d.dim_param()});
    } else {
      dims.push_back({0, fmt::format("{}_dim{}", name, i)});  // unnamed dynamic dim
    }
  }
  ctx.DefineInput(name, *dtype, std::move(dims));
}

// The model, parsed; errors name the file.
::onnx::ModelProto ParseModel(const std::string& path) {
  const std::string model = std::filesystem::path(path).filename().string();
  const std::string bytes = ReadFileBytes(path, "ONNX model", kMaxProtoBytes);
  ::onnx::ModelProto m;
  if (bytes.empty() || !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    Fail(ErrorCode::InvalidArgument, model, "not a valid ONNX model (the protobuf does not parse)");
  }
  if (!m.has_graph()) Fail(ErrorCode::InvalidArgument, model, "the model has no graph");
  return m;
}

StructuredValue::Kind KindOf(const std::string& path, const ::onnx::ValueInfoProto& v, const char* what) {
  if (!v.has_type() || v.type().has_tensor_type()) return StructuredValue::Kind::Tensor;
  if (v.type().has_sequence_type()) return StructuredValue::Kind::Sequence;
  if (v.type().has_optional_type()) return StructuredValue::Kind::Optional;
  Fail(ErrorCode::NotImplemented, std::filesystem::path(path).filename().string(),
       fmt::format("graph {} '{}' is a {} (map and sparse types are not supported)", what, v.name(), TypeKindName(v.type())));
}

StructuredValue FromSequenceProto(const ::onnx::SequenceProto& p, const std::string& where);
StructuredValue FromOptionalProto(const ::onnx::OptionalProto& p, const std::string& where);

StructuredValue FromTensorProto(const ::onnx::TensorProto& p, const std::string& where) {
  StructuredValue v;
  v.tensor = TensorFromProto(p, where, std::filesystem::path(where).parent_path().string());
  return v;
}

StructuredValue FromSequenceProto(const ::onnx::SequenceProto& p, const std::string& where) {
  StructuredValue v;
  v.kind = StructuredValue::Kind::Sequence;
  for (const auto& t : p.tensor_values()) v.items.push_back(FromTensorProto(t, where));
  for (const auto& s : p.sequence_values()) v.items.push_back(FromSequenceProto(s, where));
  for (const auto& o : p.optional_values()) v.items.push_back(FromOptionalProto(o, where));
  if (p.sparse_tensor_values_size() > 0 || p.map_values_size() > 0) {
    throw Error(ErrorCode::NotImplemented, "onnx", fmt::format("{}: sequences of sparse tensors or maps are not supported", where));
  }
  return v;
}

StructuredValue FromOptionalProto(const ::onnx::OptionalProto& p, const std::string& where) {
  StructuredValue v;
  v.kind = StructuredValue::Kind::Optional;
  if (p.has_tensor_value()) v.items.push_back(FromTensorProto(p.tensor_value(), where));
  if (p.has_sequence_value()) v.items.push_back(FromSequenceProto(p.sequence_value(), where));
  if (p.has_optional_value()) v.items.push_back(FromOptionalProto(p.optional_value(), where));
  if (p.has_sparse_tensor_value() || p.has_map_value()) {
    throw Error(ErrorCode::NotImplemented, "onnx", fmt::format("{}: optionals of sparse tensors or maps are not supported", where));
  }
  return v;
}

}  // namespace

std::vector<std::string> GraphInputNames(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  std::set<std::string> inits;
  for (const auto& init : m.graph().initializer()) inits.insert(init.name());
  std::vector<std::string> names;
  for (const auto& in : m.graph().input()) {
    if (inits.contains(in.name())) continue;
    names.push_back(in.name());
  }
  return names;
}

std::vector<std::string> GraphOutputNames(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  std::vector<std::string> names;
  for (const auto& out : m.graph().output()) names.push_back(out.name());
  return names;
}

std::map<std::string, StructuredValue::Kind> GraphValueKinds(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  std::map<std::string, StructuredValue::Kind> kinds;
  for (const auto& in : m.graph().input()) kinds[in.name()] = KindOf(path, in, "input");
  for (const auto& out : m.graph().output()) kinds[out.name()] = KindOf(path, out, "output");
  return kinds;
}

std::string StructuredLayout(const StructuredValue& v) {
  if (v.kind == StructuredValue::Kind::Tensor) return "tensor";
  std::vector<std::string> parts;
  for (const StructuredValue& item : v.items) parts.push_back(StructuredLayout(item));
  return fmt::format("{}({})", v.kind == StructuredValue::Kind::Sequence ? "sequence" : "optional", fmt::join(parts, ", "));
}

std::vector<std::pair<std::string, const Tensor*>> StructuredLeaves(const StructuredValue& v, const std::string& name) {
  if (v.kind == StructuredValue::Kind::Tensor) return {{name, &v.tensor}};
  std::vector<std::pair<std::string, const Tensor*>> leaves;
  for (size_t i = 0; i < v.items.size(); ++i) {
    for (auto& leaf : StructuredLeaves(v.items[i], fmt::format("{}[{}]", name, i))) leaves.push_back(std::move(leaf));
  }
  return leaves;
}

std::vector<std::string> ModelOpTypes(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  std::vector<std::string> types;
  for (const auto& node : m.graph().node()) {
    if (std::find(types.begin(), types.end(), node.op_type()) == types.end()) types.push_back(node.op_type());
  }
  return types;
}

std::vector<std::string> ShapeDefiningInputNames(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  const std::vector<std::string> inputs = GraphInputNames(path);
  std::vector<std::string> names;
  auto add = [&](const ::onnx::NodeProto& node, int i) {
    if (i >= node.input_size()) return;
    const std::string& n = node.input(i);
    if (std::find(inputs.begin(), inputs.end(), n) == inputs.end()) return;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& node : m.graph().node()) {
    if (!IsDefaultDomain(node.domain())) continue;
    if (node.op_type() == "Resize") {
      for (int i = 1; i <= 3; ++i) add(node, i);
    } else if (node.op_type() == "Upsample" || node.op_type() == "OneHot") {
      add(node, 1);  // scales; depth
    } else if (node.op_type() == "Range") {
      for (int i = 0; i <= 2; ++i) add(node, i);  // start, limit, delta set the length
    } else if (node.op_type() == "MelWeightMatrix") {
      for (int i = 0; i <= 4; ++i) add(node, i);  // every input shapes or defines the matrix
    } else if (node.op_type() == "Dropout") {
      add(node, 1);  // ratio: the catalog dropout's rate attribute
    }
  }
  return names;
}

ImportResult ImportOnnx(const std::string& path, const ImportOptions& options) {
  const std::string model = std::filesystem::path(path).filename().string();
  const ::onnx::ModelProto m = ParseModel(path);
  const int64_t opset = DefaultOpset(m, model);
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  const ::onnx::GraphProto& g = m.graph();

  Context ctx(model, opset);
  ctx.graph().name = g.name().empty() ? std::filesystem::path(path).stem().string() : g.name();
  std::set<std::string> initializer_names;
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) Fail(ErrorCode::InvalidArgument, model, "an initializer has no name");
    if (!initializer_names.insert(init.name()).second) {
      Fail(ErrorCode::InvalidArgument, model, fmt::format("initializer '{}' is defined twice", init.name()));
    }
    ctx.DefineConstant(init.name(), TensorFromProto(init, fmt::format("{}: initializer '{}'", model, init.name()), base_dir));
  }
  if (g.sparse_initializer_size() > 0) Fail(ErrorCode::NotImplemented, model, "sparse initializers are not supported");
  std::set<std::string> bound;
  for (const auto& in : g.input()) {
    if (initializer_names.contains(in.name())) continue;  // an initializer listed as an input (IR < 4)
    if (const auto it = options.bind_inputs.find(in.name()); it != options.bind_inputs.end()) {
      const auto declared = in.type().has_tensor_type() ? DTypeFromOnnx(in.type().tensor_type().elem_type())
                                                        : std::nullopt;
      if (declared && *declared != it->second.dtype()) {
        Fail(ErrorCode::InvalidArgument, model,
             fmt::format("bound input '{}' is {}, the graph declares {}", in.name(), DTypeName(it->second.dtype()),
                         DTypeName(*declared)));
      }
      ctx.DefineConstant(in.name(), it->second);
      bound.insert(in.name());
      continue;
    }
    DefineGraphInput(ctx, in, options);
    if (options.structured_inputs.contains(in.name())) bound.insert(in.name());
  }
  for (const auto& [name, t] : options.bind_inputs) {
    if (!bound.contains(name)) Fail(ErrorCode::InvalidArgument, model, fmt::format("bound input '{}' is not a graph input", name));
  }
  for (const auto& [name, t] : options.structured_inputs) {
    if (!bound.contains(name)) Fail(ErrorCode::InvalidArgument, model, fmt::format("structured input '{}' is not a sequence or optional graph input", name));
  }

  ImportResult result;
  result.opset = opset;
  std::set<std::string> seen_types;
  for (int i = 0; i < g.node_size(); ++i) {
    const ::onnx::NodeProto& node = g.node(i);
    ctx.BeginNode(node, i);
    int64_t domain_version = -1;
    if (!IsDefaultDomain(node.domain())) {
      for (const auto& o : m.opset_import()) {
        if (o.domain() == node.domain()) domain_version = o.version();
      }
      if (node.domain() != kTrainingDomain) {
        ctx.Unsupported(fmt::format("domain '{}' (opset {}) is not supported; only the default domain and {} are",
                                    node.domain(), domain_version, kTrainingDomain));
      }
    }
    if (seen_types.insert(node.op_type()).second) result.op_types.push_back(node.op_type());
    if (node.domain() == kTrainingDomain) {
      LowerTrainingNode(ctx, domain_version);
    } else {
      LowerNode(ctx);
    }
    for (const std::string& out : node.output()) {
      if (!out.empty() && !ctx.Has(out)) ctx.Invalid(fmt::format("the lowering did not define output '{}'", out));
    }
  }
  for (const auto& out : g.output()) {
    const std::string& name = out.name();
    if (!ctx.Has(name)) Fail(ErrorCode::InvalidArgument, model, fmt::format("graph output '{}' is not defined", name));
    if (ctx.IsComposite(name)) {
      result.structured_outputs[name] = AddStructuredOutput(ctx, name, name);
    } else {
      AddGraphOutput(ctx, name, name);
    }
  }
  result.graph = std::move(ctx.graph());
  result.initializers = std::move(ctx.initializers());
  return result;
}

void PointParamsAtFile(ir::Graph& graph, const std::string& safetensors_file) {
  for (ir::ParamSpec& p : graph.params) {
    p.init = ir::ParamInit{};
    p.init.kind = "file";
    p.init.file = safetensors_file;
    p.init.tensor = p.name;
  }
}

NamedTensor ReadTensorProtoFile(const std::string& path) {
  const std::string bytes = ReadFileBytes(path, "TensorProto file", kMaxProtoBytes);
  ::onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: not a valid TensorProto", path));
  }
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  return {proto.name(), TensorFromProto(proto, path, base_dir)};
}

NamedValue ReadValueProtoFile(const std::string& path, StructuredValue::Kind kind) {
  if (kind == StructuredValue::Kind::Tensor) {
    NamedTensor t = ReadTensorProtoFile(path);
    StructuredValue v;
    v.tensor = std::move(t.tensor);
    return {t.name, std::move(v)};
  }
  const std::string bytes = ReadFileBytes(path, "value proto file", kMaxProtoBytes);
  if (kind == StructuredValue::Kind::Sequence) {
    ::onnx::SequenceProto proto;
    if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: not a valid SequenceProto", path));
    }
    return {proto.name(), FromSequenceProto(proto, path)};
  }
  ::onnx::OptionalProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(ErrorCode::InvalidArgument, "onnx", fmt::format("{}: not a valid OptionalProto", path));
  }
  return {proto.name(), FromOptionalProto(proto, path)};
}

}  // namespace backplane::onnx
