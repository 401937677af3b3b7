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

// Selects the device for the calling thread (cudaSetDevice).
void UseDevice(int device);
int CurrentDevice();
// The stream and cuBLAS handle kernels launch on: the calling thread's ExecutorStream while a
// StreamScope for the current device is open, else the device's default pair.
cudaStream_t Stream();
cublasContext* Cublas();
// Waits for the current device's stream; `what` names the method in an error.
void Synchronize(const char* what);

// One executor's own stream and cuBLAS handle, with two pinned host buffers through which its
// host <-> device copies are staged: a copy of any size is split into chunks, and filling one
// buffer overlaps the DMA of the other.
class ExecutorStream {
 public:
  explicit ExecutorStream(int device);
  ~ExecutorStream();
  ExecutorStream(const ExecutorStream&) = delete;
  ExecutorStream& operator=(const ExecutorStream&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }

  // Host -> device memory (device or managed), ordered on the stream. Returns once `src` has been
  // read into staging: the caller may reuse it; the device side completes on the stream.
  void CopyIn(void* device_dst, const void* host_src, size_t bytes);
  // Device memory -> host, after the stream's earlier work; returns with `host_dst` written.
  void CopyOut(void* host_dst, const void* device_src, size_t bytes);

 private:
  void Release();

  static constexpr size_t kChunk = size_t{4} << 20;
  int device_;
  cudaStream_t stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  void* staging_[2] = {nullptr, nullptr};
  cudaEvent_t staged_[2] = {nullptr, nullptr};  // recorded when a buffer's DMA was queued
};

// Makes `executor` the calling thread's stream until the scope closes (scopes nest).
class StreamScope {
 public:
  explicit StreamScope(ExecutorStream& executor);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  ExecutorStream* previous_;
};

// Zero-filled managed memory (addressable by the host and the GPU) from a per-device cache:
// released blocks are kept for reuse by size class.
std::shared_ptr<std::byte[]> AllocateManaged(size_t bytes);
struct PoolStats {
  size_t bytes_in_use = 0, bytes_cached = 0;
  int64_t allocations = 0, cache_hits = 0;
};
PoolStats ManagedPoolStats();

}  // namespace backplane::cuda
