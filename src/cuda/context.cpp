#include "cuda/context.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>

#include "backplane/error.hpp"
#include "cuda/cublas_library.hpp"
#include "cuda/cuda_check.hpp"

namespace backplane::cuda {
namespace {

// Per device: created on first use and kept for the life of the process (the CUDA runtime tears
// itself down at exit; destroying handles after that would fail).
struct DeviceState {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  std::mutex mutex;                             // the cache below
  std::multimap<size_t, std::byte*> free_blocks;  // by size class
  PoolStats stats;
};

std::mutex& StatesMutex() {
  static std::mutex m;
  return m;
}
std::map<int, DeviceState*>& States() {
  static auto* states = new std::map<int, DeviceState*>();
  return *states;
}

thread_local int current_device = 0;

DeviceState& State(int device) {
  std::lock_guard<std::mutex> lock(StatesMutex());
  DeviceState*& s = States()[device];
  if (s == nullptr) {
    CheckCuda(cudaSetDevice(device), "cudaSetDevice");
    auto* state = new DeviceState();
    CheckCuda(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    const CublasLibrary& cublas = CublasApi();
    CheckCublas(cublas.create(&state->cublas), "cublasCreate");
    CheckCublas(cublas.set_stream(state->cublas, state->stream), "cublasSetStream");
    s = state;
  }
  return *s;
}

// Size classes: powers of two up to 1 MiB, then multiples of 1 MiB (at most 1 MiB unused per block).
size_t SizeClass(size_t bytes) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (bytes <= 512) return 512;
  if (bytes <= kMiB) {
    size_t c = 512;
    while (c < bytes) c <<= 1;
    return c;
  }
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

}  // namespace

std::vector<GpuInfo> ListGpus(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
    cudaGetLastError();  // clears the sticky-free error so later calls start clean
    return {};
  }
  if (count == 0 && why) *why = "cudaGetDeviceCount: no CUDA device";
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    CheckCuda(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties");
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.major = p.major;
    g.minor = p.minor;
    g.total_memory = p.totalGlobalMem;
    g.multiprocessors = p.multiProcessorCount;
    g.concurrent_managed_access = p.concurrentManagedAccess != 0;
    gpus.push_back(g);
  }
  return gpus;
}

std::string VersionString() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  auto fmt = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  return "driver " + (driver ? fmt(driver) : std::string("none")) + ", runtime " + fmt(runtime);
}

void UseDevice(int device) {
  CheckCuda(cudaSetDevice(device), "cudaSetDevice");
  (void)State(device);
  current_device = device;
}

int CurrentDevice() { return current_device; }

cudaStream_t Stream() { return State(current_device).stream; }

cublasContext* Cublas() { return State(current_device).cublas; }

void Synchronize(const char* what) {
  CheckCuda(cudaStreamSynchronize(Stream()), std::string(what) + ": cudaStreamSynchronize");
}

std::shared_ptr<std::byte[]> AllocateManaged(size_t bytes) {
  const int device = current_device;
  DeviceState& state = State(device);
  const size_t size = SizeClass(bytes == 0 ? 1 : bytes);
  std::byte* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    const auto it = state.free_blocks.find(size);
    if (it != state.free_blocks.end()) {
      block = it->second;
      state.free_blocks.erase(it);
      state.stats.bytes_cached -= size;
      ++state.stats.cache_hits;
    }
    ++state.stats.allocations;
    state.stats.bytes_in_use += size;
  }
  if (block == nullptr) {
    void* raw = nullptr;
    const cudaError_t status = cudaMallocManaged(&raw, size, cudaMemAttachGlobal);
    if (status != cudaSuccess) {
      std::lock_guard<std::mutex> lock(state.mutex);
      state.stats.bytes_in_use -= size;
      CheckCuda(status, "cudaMallocManaged(" + std::to_string(size) + " bytes)");
    }
    block = static_cast<std::byte*>(raw);
  }
  CheckCuda(cudaMemsetAsync(block, 0, size, state.stream), "cudaMemsetAsync");
  CheckCuda(cudaStreamSynchronize(state.stream), "cudaStreamSynchronize");
  return std::shared_ptr<std::byte[]>(block, [&state, size](std::byte* p) {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.free_blocks.emplace(size, p);
    state.stats.bytes_in_use -= size;
    state.stats.bytes_cached += size;
  });
}

PoolStats ManagedPoolStats() {
  DeviceState& state = State(current_device);
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.stats;
}

}  // namespace backplane::cuda
