// The CUDA backend (built with BACKPLANE_HAVE_CUDA): device pointers, every method with a CUDA
// kernel dispatched through its kernel table.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"
#include "backplane/tensor.hpp"

namespace backplane::cuda {

// Whether the CUDA backend has a kernel for the method (compiled, not necessarily verified).
bool Implements(catalog::MethodId id);

// A Backend on GPU `device`: pointers are device (or managed) memory and each method returns with
// its output written. A method without a CUDA kernel throws Error(NotImplemented) naming
// "Surface.Method", except inside a HostFallbackScope, where it runs on `host_fallback` (the
// buffers there are managed memory the host can address) and is counted.
std::unique_ptr<Backend> CreateBackend(int device = 0, Backend* host_fallback = nullptr);

// Marks the calling thread as running on managed memory (a CUDA program run).
class HostFallbackScope {
 public:
  HostFallbackScope();
  ~HostFallbackScope();
  HostFallbackScope(const HostFallbackScope&) = delete;
  HostFallbackScope& operator=(const HostFallbackScope&) = delete;

 private:
  bool previous_;
};
// While open on a thread: the Tensors it allocates live in CUDA managed memory of `device`
// (addressable by the host and by the CUDA Backend's kernels), and the host fallback is allowed.
// For host code that drives the CUDA Backend on its own Tensors (backplane generate --device cuda).
class ManagedTensorScope {
 public:
  explicit ManagedTensorScope(int device);
  ~ManagedTensorScope();
  ManagedTensorScope(const ManagedTensorScope&) = delete;
  ManagedTensorScope& operator=(const ManagedTensorScope&) = delete;

 private:
  ScopedStorageAllocator allocator_;
  HostFallbackScope fallback_;
};

// "Surface.Method" -> how often it ran on the host fallback in this process.
std::map<std::string, long> HostFallbackCounts();

struct Gpu {
  int index = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  size_t memory_bytes = 0;
  int multiprocessors = 0;
};
// The GPUs visible here; none with `why` saying why (no driver, no device).
std::vector<Gpu> VisibleGpus(std::string* why);
// "driver 13.0, runtime 13.0", and the architectures this build carries code for.
std::string Versions();
std::string BuiltArchitectures();

// The kernel rows of `backplane bench --device cuda`: memory-bound methods at 64M elements against
// the measured device-to-device copy bandwidth, bf16 GEMM 4096^3 against cuBLAS called directly,
// causal attention; Markdown. Throws Error(DeviceUnavailable) without a GPU.
std::string KernelBenchMarkdown(int device, double min_seconds);

}  // namespace backplane::cuda
