// The process's CUDA state: the GPUs the driver shows, and per device a stream, a cuBLAS handle
// and a caching allocator of managed memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct cublasContext;

namespace backplane::cuda {

struct GpuInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  size_t total_memory = 0;
  int multiprocessors = 0;
  bool concurrent_managed_access = false;
};

// The GPUs visible to this process; empty with `why` saying why when there are none (no driver,
// no device, CUDA_VISIBLE_DEVICES hiding them).
std::vector<GpuInfo> ListGpus(std::string* why);
// "driver 13.0, runtime 13.0"
std::string VersionString();

// Selects the device for the calling thread (cudaSetDevice) and returns its stream and handle.
void UseDevice(int device);
int CurrentDevice();
cudaStream_t Stream();
cublasContext* Cublas();
// Waits for the current device's stream; `what` names the method in an error.
void Synchronize(const char* what);

// Zero-filled managed memory (addressable by the host and the GPU) from a per-device cache:
// released blocks are kept for reuse by size class.
std::shared_ptr<std::byte[]> AllocateManaged(size_t bytes);
struct PoolStats {
  size_t bytes_in_use = 0, bytes_cached = 0;
  int64_t allocations = 0, cache_hits = 0;
};
PoolStats ManagedPoolStats();

}  // namespace backplane::cuda
