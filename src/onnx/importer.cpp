// ImportOnnx: parses a ModelProto, checks the opset, defines inputs and initializers, lowers every
// node through the op table and assembles the Backplane graph.
#include "backplane/onnx/importer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "backplane/error.hpp"
#include "onnx/context.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {
namespace {

// Protobuf cannot parse messages of 2 GiB or more.
constexpr uint64_t kMaxProtoBytes = (uint64_t{1} << 31) - 1;

[[noreturn]] void Fail(ErrorCode code, const std::string& model, const std::string& detail) {
  throw Error(code, "onnx", fmt::format("{}: {}", model, detail));
}

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

int64_t DefaultOpset(const ::onnx::ModelProto& m, const std::string& model) {
  int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (IsDefaultDomain(o.domain())) opset = o.version();
  }
  if (opset < 0) Fail(ErrorCode::NotImplemented, model, "imports no opset of the default domain ('' / ai.onnx)");
  if (opset < kMinOpset || opset > kMaxOpset) {
    Fail(ErrorCode::NotImplemented, model,
         fmt::format("opset {} of the default domain is not supported (supported: {} to {})", opset, kMinOpset,
                     kMaxOpset));
  }
  return opset;
}

void DefineGraphInput(Context& ctx, const ::onnx::ValueInfoProto& in) {
  const std::string& name = in.name();
  if (!in.type().has_tensor_type()) {
    Fail(ErrorCode::NotImplemented, ctx.model(), fmt::format("graph input '{}' is not a tensor (sequence, map and optional types are not supported)", name));
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

void RequireTensorType(const std::string& path, const ::onnx::ValueInfoProto& v, const char* what) {
  if (v.has_type() && !v.type().has_tensor_type()) {
    Fail(ErrorCode::NotImplemented, std::filesystem::path(path).filename().string(),
         fmt::format("graph {} '{}' is not a tensor (sequence, map and optional types are not supported)", what,
                     v.name()));
  }
}

}  // namespace

std::vector<std::string> GraphInputNames(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  std::set<std::string> inits;
  for (const auto& init : m.graph().initializer()) inits.insert(init.name());
  std::vector<std::string> names;
  for (const auto& in : m.graph().input()) {
    if (inits.contains(in.name())) continue;
    RequireTensorType(path, in, "input");
    names.push_back(in.name());
  }
  return names;
}

std::vector<std::string> GraphOutputNames(const std::string& path) {
  const ::onnx::ModelProto m = ParseModel(path);
  std::vector<std::string> names;
  for (const auto& out : m.graph().output()) {
    RequireTensorType(path, out, "output");
    names.push_back(out.name());
  }
  return names;
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
    } else if (node.op_type() == "Upsample") {
      add(node, 1);
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
    DefineGraphInput(ctx, in);
  }
  for (const auto& [name, t] : options.bind_inputs) {
    if (!bound.contains(name)) Fail(ErrorCode::InvalidArgument, model, fmt::format("bound input '{}' is not a graph input", name));
  }

  ImportResult result;
  result.opset = opset;
  std::set<std::string> seen_types;
  for (int i = 0; i < g.node_size(); ++i) {
    const ::onnx::NodeProto& node = g.node(i);
    ctx.BeginNode(node, i);
    if (!IsDefaultDomain(node.domain())) {
      int64_t version = -1;
      for (const auto& o : m.opset_import()) {
        if (o.domain() == node.domain()) version = o.version();
      }
      ctx.Unsupported(fmt::format("domain '{}' (opset {}) is not supported; only the default domain is", node.domain(), version));
    }
    if (seen_types.insert(node.op_type()).second) result.op_types.push_back(node.op_type());
    LowerNode(ctx);
    for (const std::string& out : node.output()) {
      if (!out.empty() && !ctx.Has(out)) ctx.Invalid(fmt::format("the lowering did not define output '{}'", out));
    }
  }
  for (const auto& out : g.output()) {
    const std::string& name = out.name();
    if (!ctx.Has(name)) Fail(ErrorCode::InvalidArgument, model, fmt::format("graph output '{}' is not defined", name));
    const Value& v = ctx.Get(name);
    if (v.constant && !v.materialized) {
      const std::string holder = ctx.Fresh(name);
      ctx.DefineConstant(holder, *v.constant);
      ctx.Materialize(holder);
      ctx.graph().nodes.push_back(ir::Node{name, "Input", {holder}, {name}, {}});
    }
    ctx.graph().outputs.push_back(name);
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

}  // namespace backplane::onnx
