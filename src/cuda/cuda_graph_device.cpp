#include "cuda/cuda_graph_device.hpp"

#include <fmt/format.h>


#include "backplane/catalog/catalog.hpp"
#include "backplane/cuda/cuda_backend.hpp"
#include "backplane/error.hpp"
#include "cuda/context.hpp"

namespace backplane::cuda {
namespace {

using Executor = std::shared_ptr<ExecutorStream>;

// A device tensor's bytes: a managed-memory tensor written on its executor's stream. Copies to
// the host go through the executor's pinned staging, after the stream's work.
class ManagedStorage final : public DeviceStorage {
 public:
  ManagedStorage(Tensor managed, Executor executor) : managed_(std::move(managed)), executor_(std::move(executor)) {}
  Device device() const override { return Device{DeviceKind::Cuda, executor_->device()}; }
  void CopyToHost(void* dst, size_t bytes) const override {
    if (bytes != managed_.nbytes()) {
      ThrowInvalidArgument("cuda.CopyToHost", "bytes", std::to_string(managed_.nbytes()), std::to_string(bytes));
    }
    executor_->CopyOut(dst, managed_.data(), bytes);
  }
  const Tensor& managed() const { return managed_; }

 private:
  Tensor managed_;
  Executor executor_;
};

Tensor Wrap(const Tensor& managed, const Executor& executor) {
  return Tensor::OnDevice(managed.dtype(), managed.shape(), std::make_shared<ManagedStorage>(managed, executor));
}

Tensor HostView(const Tensor& t, int device, std::string_view what) {
  if (!t.defined()) return t;
  const auto* storage = dynamic_cast<const ManagedStorage*>(t.device_storage().get());
  if (storage == nullptr || storage->device() != Device{DeviceKind::Cuda, device}) {
    throw Error(ErrorCode::InvalidArgument, "cuda program",
                fmt::format("{} is on {}, expected cuda:{}", what, DeviceName(t.device()), device));
  }
  return storage->managed().Reshaped(t.shape());
}

class CudaProgram final : public runtime::DeviceProgram {
 public:
  CudaProgram(runtime::Segment segment, Executor executor, Backend* backend)
      : segment_(std::move(segment)), executor_(std::move(executor)), device_(executor_->device()), backend_(backend) {}

  std::vector<Tensor> Run(std::span<const Tensor> inputs, std::map<std::string, Tensor>& state) override {
    if (inputs.size() != segment_.inputs.size()) {
      ThrowInvalidArgument("cuda program", "inputs", std::to_string(segment_.inputs.size()),
                           std::to_string(inputs.size()));
    }
    UseDevice(device_);
    StreamScope stream(*executor_);
    Synchronize("cuda program inputs");  // their copies in; host glue may read them
    ScopedStorageAllocator managed(&AllocateManaged);
    HostFallbackScope fallback;
    std::map<std::string, Tensor> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      values[segment_.inputs[i]] = HostView(inputs[i], device_, "input '" + segment_.inputs[i] + "'");
    }
    const runtime::OpRegistry& registry = runtime::Registry();
    for (const runtime::SegmentNode& n : segment_.nodes) {
      const ir::Node& node = *n.node;
      const runtime::OpImpl* impl = registry.Find(node.op);
      if (impl == nullptr) throw Error(ErrorCode::NotImplemented, node.op, "no lowering");
      std::vector<Tensor> in;
      for (const std::string& name : node.inputs) in.push_back(name.empty() ? Tensor() : values.at(name));
      std::vector<Tensor> out;
      for (const runtime::TensorType& type : n.output_types) out.emplace_back(type.dtype, type.shape);
      runtime::NodeState& node_state = states_[node.name];
      for (const std::string& key : impl->state) {
        const auto it = state.find(node.name + "/" + key);
        if (it != state.end()) node_state.tensors[key] = HostView(it->second, device_, "state '" + it->first + "'");
      }
      // Only frozen parameters are named here: an optimizer leaves them as they are. Other
      // parameters update a copy, which the executor makes the parameter's new value.
      runtime::ParameterStore params;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (!n.input_frozen[i]) continue;
        params.tensors[node.inputs[i]] = in[i];
        params.frozen[node.inputs[i]] = true;
      }
      runtime::OpContext ctx{*backend_, *n.attrs, node_state, params, node.inputs};
      runtime::RunLowering(*impl, ctx, in, out);
      for (const std::string& key : impl->state) {
        const auto it = node_state.tensors.find(key);
        if (it != node_state.tensors.end()) state[node.name + "/" + key] = Wrap(it->second, executor_);
      }
      for (size_t o = 0; o < node.outputs.size(); ++o) values[node.outputs[o]] = std::move(out[o]);
    }
    Synchronize("cuda program");
    std::vector<Tensor> result;
    for (const std::string& name : segment_.outputs) result.push_back(Wrap(values.at(name), executor_));
    return result;
  }

 private:
  runtime::Segment segment_;
  Executor executor_;
  int device_;
  Backend* backend_;
  std::map<std::string, runtime::NodeState> states_;  // scalars persist here; tensors in `state`
};

class CudaDevice final : public runtime::GraphDevice {
 public:
  CudaDevice(int device, std::unique_ptr<Backend> host)
      : device_(device),
        host_(std::move(host)),
        backend_(CreateBackend(device, host_.get())),
        executor_(std::make_shared<ExecutorStream>(device)) {
    std::string why;
    gpu_ = VisibleGpus(&why).at(static_cast<size_t>(device));
  }

  Device device() const override { return Device{DeviceKind::Cuda, device_}; }

  std::optional<std::string> Unsupported(const runtime::SegmentNode& node) const override {
    const catalog::OpInfo* op = catalog::ResolveOp(node.node->op);
    if (op == nullptr || runtime::Registry().Find(node.node->op) == nullptr) {
      return fmt::format("no lowering for {}", node.node->op);
    }
    if (op->methods.empty()) return fmt::format("{} calls no Backend method (host code)", op->id);
    for (const catalog::MethodId m : op->methods) {
      if (!Implements(m)) return fmt::format("no CUDA kernel for {}", catalog::Method(m).QualifiedName());
    }
    return std::nullopt;
  }

  std::shared_ptr<runtime::DeviceProgram> Compile(const runtime::Segment& segment) override {
    return std::make_shared<CudaProgram>(segment, executor_, backend_.get());
  }

  Tensor ToDevice(const Tensor& host) override {
    if (!host.on_host()) return host;
    UseDevice(device_);
    Tensor managed;
    {
      ScopedStorageAllocator scope(&AllocateManaged);
      managed = Tensor(host.dtype(), host.shape());
    }
    executor_->CopyIn(managed.data(), host.data(), host.nbytes());
    return Wrap(managed, executor_);
  }

  std::vector<std::pair<std::string, std::string>> Properties() const override {
    return {{"platform", fmt::format("sm_{}{} ({})", gpu_.compute_major, gpu_.compute_minor, gpu_.name)},
            {"gpu", fmt::format("cuda:{} {}", device_, gpu_.name)},
            {"compute capability", fmt::format("{}.{}", gpu_.compute_major, gpu_.compute_minor)},
            {"memory", fmt::format("{:.1f} GiB", gpu_.memory_bytes / 1073741824.0)},
            {"multiprocessors", std::to_string(gpu_.multiprocessors)},
            {"versions", Versions()},
            {"built for", BuiltArchitectures()},
            {"memory model", "managed (cudaMallocManaged), one stream per executor, pinned staged copies, synchronous methods"}};
  }

 private:
  int device_;
  std::unique_ptr<Backend> host_;
  std::unique_ptr<Backend> backend_;
  Executor executor_;
  Gpu gpu_;
};

}  // namespace

std::unique_ptr<runtime::GraphDevice> OpenCudaDevice(int device, std::unique_ptr<Backend> host) {
  return std::make_unique<CudaDevice>(device, std::move(host));
}

}  // namespace backplane::cuda
