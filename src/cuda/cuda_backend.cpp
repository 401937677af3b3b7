#include "backplane/cuda/cuda_backend.hpp"

#include <atomic>
#include <mutex>

#include "backplane/error.hpp"
#include "cuda/context.hpp"
#include "cuda/kernel_table.hpp"

namespace backplane::cuda {
namespace {

thread_local bool fallback_allowed = false;

std::mutex& CountsMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, long>& Counts() {
  static std::map<std::string, long> counts;
  return counts;
}

void CountFallback(const char* method) {
  std::lock_guard<std::mutex> lock(CountsMutex());
  ++Counts()[method];
}

// Every method selects its device first: a thread may hold backends of several GPUs.
#define BP_CUDA_OVERRIDE(S, M, F, D)                                   \
  BP_RET_##F M(BP_PARAMS_##F) override {                               \
    UseDevice(device_);                                                \
    if (const auto kernel = Table().S##_##M) return kernel(BP_ARGS_##F); \
    if (host_ == nullptr || !fallback_allowed) ThrowNotImplemented(#S "." #M, "cuda"); \
    Synchronize(#S "." #M);                                            \
    CountFallback(#S "." #M);                                          \
    return host_->S().M(BP_ARGS_##F);                                  \
  }

#define BP_CUDA_SURFACE(S, LIST)                                                  \
  class Cuda##S final : public S##Surface {                                       \
   public:                                                                        \
    Cuda##S(int device, Backend* host) : device_(device), host_(host) {}          \
    LIST(BP_CUDA_OVERRIDE)                                                        \
                                                                                  \
   private:                                                                       \
    int device_;                                                                  \
    Backend* host_;                                                               \
  };
BP_SURFACES(BP_CUDA_SURFACE)
#undef BP_CUDA_SURFACE
#undef BP_CUDA_OVERRIDE

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, Backend* host)
      :
#define BP_CUDA_MEMBER_INIT(S, LIST) S##_(device, host),
        BP_SURFACES(BP_CUDA_MEMBER_INIT)
#undef BP_CUDA_MEMBER_INIT
        device_(device) {
  }

  std::string_view device() const override { return "cuda"; }

#define BP_CUDA_ACCESSOR(S, LIST) \
  S##Surface& S() override { return S##_; }
  BP_SURFACES(BP_CUDA_ACCESSOR)
#undef BP_CUDA_ACCESSOR

 private:
#define BP_CUDA_MEMBER(S, LIST) Cuda##S S##_;
  BP_SURFACES(BP_CUDA_MEMBER)
#undef BP_CUDA_MEMBER
  int device_;
};

}  // namespace

const KernelTable& Table() {
  static const KernelTable table = [] {
    KernelTable t;
    RegisterElementwise(t);
    RegisterActivation(t);
    RegisterRows(t);
    RegisterMatmul(t);
    RegisterShape(t);
    RegisterNn(t);
    RegisterOptimizer(t);
    RegisterPhysicsCausal(t);
    RegisterResearch(t);
    RegisterTensorIndex(t);
    RegisterTraining(t);
    return t;
  }();
  return table;
}

bool Implements(catalog::MethodId id) { return Table().Has(id); }

std::unique_ptr<Backend> CreateBackend(int device, Backend* host_fallback) {
  std::string why;
  const auto gpus = ListGpus(&why);
  if (gpus.empty()) throw Error(ErrorCode::DeviceUnavailable, "cuda", "no CUDA GPU visible: " + why);
  if (device < 0 || device >= static_cast<int>(gpus.size())) {
    ThrowInvalidArgument("cuda", "device", "in [0, " + std::to_string(gpus.size()) + ")", std::to_string(device));
  }
  UseDevice(device);
  return std::make_unique<CudaBackend>(device, host_fallback);
}

HostFallbackScope::HostFallbackScope() : previous_(fallback_allowed) { fallback_allowed = true; }
HostFallbackScope::~HostFallbackScope() { fallback_allowed = previous_; }

ManagedTensorScope::ManagedTensorScope(int device) : allocator_(&AllocateManaged) { UseDevice(device); }
ManagedTensorScope::~ManagedTensorScope() = default;

std::map<std::string, long> HostFallbackCounts() {
  std::lock_guard<std::mutex> lock(CountsMutex());
  return Counts();
}

std::vector<Gpu> VisibleGpus(std::string* why) {
  std::vector<Gpu> out;
  for (const GpuInfo& g : ListGpus(why)) {
    out.push_back(Gpu{g.index, g.name, g.major, g.minor, g.total_memory, g.multiprocessors});
  }
  return out;
}

std::string Versions() { return VersionString(); }

std::string BuiltArchitectures() {
#ifdef BACKPLANE_CUDA_ARCHITECTURES
  return BACKPLANE_CUDA_ARCHITECTURES;
#else
  return "unknown";
#endif
}

}  // namespace backplane::cuda
