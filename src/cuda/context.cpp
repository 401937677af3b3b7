#include "cuda/context.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstring>
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
thread_local ExecutorStream* scoped_executor = nullptr;

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

cudaStream_t Stream() {
  if (scoped_executor != nullptr && scoped_executor->device() == current_device) return scoped_executor->stream();
  return State(current_device).stream;
}

cublasContext* Cublas() {
  if (scoped_executor != nullptr && scoped_executor->device() == current_device) return scoped_executor->cublas();
  return State(current_device).cublas;
}

ExecutorStream::ExecutorStream(int device) : device_(device) {
  UseDevice(device);
  try {
    CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    const CublasLibrary& cublas = CublasApi();
    CheckCublas(cublas.create(&cublas_), "cublasCreate");
    CheckCublas(cublas.set_stream(cublas_, stream_), "cublasSetStream");
    for (int b = 0; b < 2; ++b) {
      CheckCuda(cudaMallocHost(&staging_[b], kChunk), "cudaMallocHost(" + std::to_string(kChunk) + " bytes)");
      CheckCuda(cudaEventCreateWithFlags(&staged_[b], cudaEventDisableTiming), "cudaEventCreateWithFlags");
    }
  } catch (...) {
    Release();
    throw;
  }
}

ExecutorStream::~ExecutorStream() { Release(); }

// Unchecked: a destructor cannot report, and the stream's work is finished or failed already.
void ExecutorStream::Release() {
  if (stream_ != nullptr) static_cast<void>(cudaStreamSynchronize(stream_));
  for (int b = 0; b < 2; ++b) {
    if (staged_[b] != nullptr) static_cast<void>(cudaEventDestroy(staged_[b]));
    if (staging_[b] != nullptr) static_cast<void>(cudaFreeHost(staging_[b]));
    staged_[b] = nullptr;
    staging_[b] = nullptr;
  }
  if (cublas_ != nullptr) static_cast<void>(CublasApi().destroy(cublas_));
  if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
  cublas_ = nullptr;
  stream_ = nullptr;
}

void ExecutorStream::CopyIn(void* device_dst, const void* host_src, size_t bytes) {
  UseDevice(device_);
  auto* dst = static_cast<std::byte*>(device_dst);
  const auto* src = static_cast<const std::byte*>(host_src);
  for (size_t done = 0, k = 0; done < bytes; done += kChunk, ++k) {
    const size_t b = k % 2;
    const size_t n = bytes - done < kChunk ? bytes - done : kChunk;
    // The buffer's previous DMA must have read it before it is refilled.
    CheckCuda(cudaEventSynchronize(staged_[b]), "cudaEventSynchronize");
    std::memcpy(staging_[b], src + done, n);
    CheckCuda(cudaMemcpyAsync(dst + done, staging_[b], n, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
    CheckCuda(cudaEventRecord(staged_[b], stream_), "cudaEventRecord");
  }
}

void ExecutorStream::CopyOut(void* host_dst, const void* device_src, size_t bytes) {
  UseDevice(device_);
  auto* dst = static_cast<std::byte*>(host_dst);
  const auto* src = static_cast<const std::byte*>(device_src);
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto queue = [&](size_t k) {
    const size_t b = k % 2;
    const size_t n = bytes - k * kChunk < kChunk ? bytes - k * kChunk : kChunk;
    CheckCuda(cudaMemcpyAsync(staging_[b], src + k * kChunk, n, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
    CheckCuda(cudaEventRecord(staged_[b], stream_), "cudaEventRecord");
  };
  if (chunks > 0) queue(0);
  for (size_t k = 0; k < chunks; ++k) {
    // Chunk k + 1 goes into the other buffer while chunk k is copied out of this one.
    if (k + 1 < chunks) queue(k + 1);
    const size_t b = k % 2;
    const size_t n = bytes - k * kChunk < kChunk ? bytes - k * kChunk : kChunk;
    CheckCuda(cudaEventSynchronize(staged_[b]), "cudaEventSynchronize");
    std::memcpy(dst + k * kChunk, staging_[b], n);
  }
}

StreamScope::StreamScope(ExecutorStream& executor) : previous_(scoped_executor) { scoped_executor = &executor; }
StreamScope::~StreamScope() { scoped_executor = previous_; }

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
