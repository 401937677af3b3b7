#include "xla/xla_device.hpp"

#include <fmt/format.h>

#include <set>

#include "backplane/catalog/catalog.hpp"
#include "backplane/error.hpp"
#include "xla/lowering.hpp"
#include "xla/pjrt_client.hpp"

namespace backplane::xla {
namespace {

bool Lowerable(DType dtype) {
  switch (dtype) {
    case DType::Invalid:  // an omitted optional input
    case DType::Float64: case DType::Float32: case DType::Float16: case DType::BFloat16:
    case DType::Int64: case DType::Int32: case DType::Int16: case DType::Int8:
    case DType::Uint64: case DType::Uint32: case DType::Uint16: case DType::Uint8:
    case DType::Bool:
      return true;
    default:
      return false;
  }
}

struct Lowered {
  std::string text;
  std::vector<std::pair<DType, Shape>> output_types;
  std::vector<std::string> state_keys;  // "<node>/<key>" per state argument
  std::vector<TensorType> state_types;
  std::vector<std::string> next_state_keys;  // per state result after the segment outputs
  std::vector<std::pair<std::string, std::string>> checks;  // (where, message) per i1 check result
                                                            // after the state results
};

std::string NodeWhere(const runtime::SegmentNode& n) {
  return fmt::format("{} node '{}'", n.node->op, n.node->name);
}

// Lowers the nodes in order; throws Unlowerable / Error from the node that fails.
Lowered Lower(const runtime::Segment& segment) {
  Builder b;
  std::map<std::string, Value> values;
  for (size_t i = 0; i < segment.inputs.size(); ++i) values[segment.inputs[i]] = b.Arg(segment.input_types[i]);
  Lowered out;
  std::vector<Value> state_next;
  std::vector<std::string> state_next_keys;
  std::vector<Value> checks;
  for (const runtime::SegmentNode& n : segment.nodes) {
    const LowerFn* fn = Lowerings().Find(n.node->op);
    if (fn == nullptr) throw Unlowerable(fmt::format("no StableHLO lowering for {}", n.node->op));
    std::vector<Value> in;
    for (size_t i = 0; i < n.node->inputs.size(); ++i) {
      const std::string& name = n.node->inputs[i];
      in.push_back(name.empty() ? Value{} : values.at(name));
    }
    LowerContext ctx(b, n, [&](const TensorType& t) { return b.Arg(t); });
    std::vector<Value> results = (*fn)(ctx, in);
    if (results.size() != n.output_types.size()) {
      throw Error(ErrorCode::Internal, NodeWhere(n),
                  fmt::format("XLA lowering gave {} results for {} outputs", results.size(), n.output_types.size()));
    }
    for (size_t o = 0; o < results.size(); ++o) {
      if (results[o].type != n.output_types[o]) {
        throw Error(ErrorCode::Internal, NodeWhere(n),
                    fmt::format("XLA lowering of output {} is {}, the shape rule says {}", o,
                                MlirType(results[o].type), MlirType(n.output_types[o])));
      }
      values[n.node->outputs[o]] = results[o];
    }
    for (const LowerContext::Check& c : ctx.checks()) {
      checks.push_back(c.ok);
      out.checks.emplace_back(c.where, c.message);
    }
    for (const StateSlot& slot : ctx.state()) {
      const std::string key = n.node->name + "/" + slot.key;
      out.state_keys.push_back(key);
      out.state_types.push_back(slot.type);
      if (slot.has_next) {
        state_next.push_back(slot.next);
        state_next_keys.push_back(key);
      }
    }
  }
  std::vector<Value> results;
  for (const std::string& name : segment.outputs) {
    results.push_back(values.at(name));
    out.output_types.emplace_back(values.at(name).dtype(), values.at(name).shape());
  }
  for (size_t i = 0; i < state_next.size(); ++i) {
    results.push_back(state_next[i]);
    out.output_types.emplace_back(state_next[i].dtype(), state_next[i].shape());
  }
  for (const Value& c : checks) {
    results.push_back(c);
    out.output_types.emplace_back(DType::Bool, Shape{});
  }
  out.next_state_keys = state_next_keys;
  out.text = b.Module(results);
  return out;
}

const PjrtBuffer& BufferOf(const Tensor& t, const std::string& what) {
  const auto* buffer = dynamic_cast<const PjrtBuffer*>(t.device_storage().get());
  if (buffer == nullptr) {
    throw Error(ErrorCode::InvalidArgument, "xla",
                fmt::format("{} is on {}, not on the XLA device", what, DeviceName(t.device())));
  }
  return *buffer;
}

class XlaProgram final : public runtime::DeviceProgram {
 public:
  XlaProgram(std::shared_ptr<PjrtClient> client, std::shared_ptr<PjrtExecutable> exe, Lowered lowered,
             size_t num_outputs)
      : client_(std::move(client)), exe_(std::move(exe)), lowered_(std::move(lowered)), num_outputs_(num_outputs) {}

  std::vector<Tensor> Run(std::span<const Tensor> inputs, std::map<std::string, Tensor>& state) override {
    std::vector<Tensor> keep(inputs.begin(), inputs.end());
    for (size_t i = 0; i < lowered_.state_keys.size(); ++i) {
      const std::string& key = lowered_.state_keys[i];
      const TensorType& type = lowered_.state_types[i];
      auto it = state.find(key);
      if (it == state.end()) it = state.emplace(key, Tensor(type.dtype, type.shape)).first;
      if (it->second.dtype() != type.dtype || it->second.shape() != type.shape) {
        throw Error(ErrorCode::ShapeMismatch, "xla",
                    fmt::format("state '{}' is {}{}, the node needs {}", key, DTypeName(it->second.dtype()),
                                ShapeToString(it->second.shape()), MlirType(type)));
      }
      if (it->second.on_host()) {
        it->second = Tensor::OnDevice(type.dtype, type.shape, client_->Upload(it->second));
      }
      keep.push_back(it->second);
    }
    std::vector<const PjrtBuffer*> args;
    for (size_t i = 0; i < keep.size(); ++i) args.push_back(&BufferOf(keep[i], fmt::format("argument {}", i)));
    std::vector<Tensor> results = exe_->Execute(args, lowered_.output_types);
    const size_t first_check = num_outputs_ + lowered_.next_state_keys.size();
    for (size_t i = 0; i < lowered_.checks.size(); ++i) {
      uint8_t ok = 0;  // a packed bool on the host
      results[first_check + i].device_storage()->CopyToHost(&ok, 1);
      if ((ok & 1) == 0) throw Error(ErrorCode::InvalidArgument, lowered_.checks[i].first, lowered_.checks[i].second);
    }
    for (size_t i = 0; i < lowered_.next_state_keys.size(); ++i) {
      state[lowered_.next_state_keys[i]] = std::move(results[num_outputs_ + i]);
    }
    results.resize(num_outputs_);
    return results;
  }

 private:
  std::shared_ptr<PjrtClient> client_;
  std::shared_ptr<PjrtExecutable> exe_;
  Lowered lowered_;
  size_t num_outputs_;
};

}  // namespace

std::unique_ptr<XlaDevice> XlaDevice::Open(const std::string& plugin_path, int device_index) {
  std::unique_ptr<XlaDevice> d(new XlaDevice());
  d->client_ = PjrtClient::Open(plugin_path.empty() ? DefaultPluginPath() : plugin_path, device_index);
  return d;
}

XlaDevice::~XlaDevice() = default;

Device XlaDevice::device() const { return client_->device(); }

namespace {

// fp8 and complex tensors only move: layout ops carry them (XLA has the element types), arithmetic
// on them stays on the CPU.
bool MovesOnly(std::string_view op) {
  const catalog::OpInfo* info = catalog::ResolveOp(op);
  return info != nullptr && (info->id.starts_with("shape.") || info->id == "Input");
}

bool Movable(DType dtype) {
  return dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2 || dtype == DType::Complex64 ||
         dtype == DType::Complex128;
}

}  // namespace

std::optional<std::string> XlaDevice::Unsupported(const runtime::SegmentNode& node) const {
  for (const auto* types : {&node.input_types, &node.output_types}) {
    for (const TensorType& t : *types) {
      if (Lowerable(t.dtype) || (Movable(t.dtype) && MovesOnly(node.node->op))) continue;
      return fmt::format("{} tensors are not lowered to StableHLO{}", DTypeName(t.dtype),
                         Movable(t.dtype) ? " except by layout ops" : "");
    }
  }
  if (Lowerings().Find(node.node->op) == nullptr) return fmt::format("no StableHLO lowering for {}", node.node->op);
  runtime::Segment probe;
  probe.nodes.push_back(node);
  std::set<std::string> seen;
  for (size_t i = 0; i < node.node->inputs.size(); ++i) {
    const std::string& name = node.node->inputs[i];
    if (name.empty() || !seen.insert(name).second) continue;
    probe.inputs.push_back(name);
    probe.input_types.push_back(node.input_types[i]);
  }
  probe.outputs = node.node->outputs;
  try {
    (void)Lower(probe);
  } catch (const Unlowerable& e) {
    return std::string(e.what());
  } catch (const Error& e) {
    return fmt::format("lowering failed: {}", e.what());
  }
  return std::nullopt;
}

std::string XlaDevice::ModuleText(const runtime::Segment& segment) const { return Lower(segment).text; }

std::shared_ptr<runtime::DeviceProgram> XlaDevice::Compile(const runtime::Segment& segment) {
  Lowered lowered = Lower(segment);
  std::shared_ptr<PjrtExecutable> exe;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(lowered.text);
    if (it == cache_.end()) {
      std::string what = fmt::format("the XLA program of {}", segment.where);
      if (!segment.nodes.empty()) {
        what += fmt::format(" (nodes '{}' to '{}')", segment.nodes.front().node->name, segment.nodes.back().node->name);
      }
      it = cache_.emplace(lowered.text, std::shared_ptr<PjrtExecutable>(client_->Compile(lowered.text, what))).first;
      ++compiled_;
    }
    exe = it->second;
  }
  return std::make_shared<XlaProgram>(client_, exe, std::move(lowered), segment.outputs.size());
}

Tensor XlaDevice::ToDevice(const Tensor& host) {
  if (!host.on_host()) {
    if (host.device() == device()) return host;
    return ToDevice(host.ToHost());
  }
  return Tensor::OnDevice(host.dtype(), host.shape(), client_->Upload(host));
}

std::vector<std::pair<std::string, std::string>> XlaDevice::Properties() const {
  const XlaDeviceInfo i = Info();
  return {{"plugin", i.plugin_path},
          {"platform", i.platform_name + " " + i.platform_version},
          {"PJRT C API", fmt::format("{}.{}", i.api_major, i.api_minor)},
          {"StableHLO", i.stablehlo_version.empty() ? "(not reported)" : i.stablehlo_version},
          {"devices", std::to_string(i.devices)},
          {"lowered ops", std::to_string(Lowerings().Ids().size())}};
}

XlaDeviceInfo XlaDevice::Info() const {
  XlaDeviceInfo info;
  info.plugin_path = client_->plugin_path();
  info.platform_name = client_->platform_name();
  info.platform_version = client_->platform_version();
  info.api_major = client_->api_major();
  info.api_minor = client_->api_minor();
  info.stablehlo_version = client_->plugin_attribute("stablehlo_current_version");
  info.devices = client_->device_count();
  return info;
}

}  // namespace backplane::xla
