// Device scratch memory for the kernels' host code, and the overlap test that decides when an
// output must be staged.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/context.hpp"
#include "cuda/cuda_check.hpp"

namespace backplane::cuda {

// Stream-ordered device memory (at least 16 bytes). Release() frees it, checked, on the normal
// path; the destructor frees it unchecked when an exception leaves the method early.
class DeviceScratch {
 public:
  explicit DeviceScratch(size_t bytes) {
    CheckCuda(static_cast<int>(cudaMallocAsync(&ptr_, bytes < 16 ? 16 : bytes, Stream())), "cudaMallocAsync");
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() {
    if (ptr_ != nullptr) static_cast<void>(cudaFreeAsync(ptr_, Stream()));
  }
  void* Get() const { return ptr_; }
  char* Bytes() const { return static_cast<char*>(ptr_); }
  template <class T>
  T* As() const {
    return static_cast<T*>(ptr_);
  }
  // The piece at byte `offset`, as laid out by ScratchLayout.
  template <class T>
  T* At(size_t offset) const {
    return reinterpret_cast<T*>(Bytes() + offset);
  }
  void Release() {
    if (ptr_ == nullptr) return;
    void* p = ptr_;
    ptr_ = nullptr;
    CheckCuda(static_cast<int>(cudaFreeAsync(p, Stream())), "cudaFreeAsync");
  }

 private:
  void* ptr_ = nullptr;
};

// Offsets of the pieces of one scratch allocation, each 256-byte aligned.
class ScratchLayout {
 public:
  size_t Add(size_t bytes) {
    const size_t offset = size_;
    size_ += (bytes + 255) / 256 * 256;
    return offset;
  }
  size_t Size() const { return size_; }

 private:
  size_t size_ = 0;
};

// Stream-ordered copy between any two of host, device and managed memory.
inline void CopyAsync(void* dst, const void* src, size_t bytes) {
  CheckCuda(static_cast<int>(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, Stream())),
            "cudaMemcpyAsync");
}

inline void MemsetAsync(void* dst, int value, size_t bytes) {
  CheckCuda(static_cast<int>(cudaMemsetAsync(dst, value, bytes, Stream())), "cudaMemsetAsync");
}

// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte; addresses only,
// nothing is dereferenced. Empty or null ranges overlap nothing.
inline bool Overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a);
  const auto pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

}  // namespace backplane::cuda
