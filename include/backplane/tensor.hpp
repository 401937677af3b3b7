// A tensor: dtype, shape and shared, dense row-major storage, either a 64-byte aligned host buffer
// or a device buffer (DeviceStorage). Copies share storage (like torch.Tensor); Clone() copies the
// bytes. Host code reads only host tensors: data() on a device tensor throws; ToHost() copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backplane/device.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for rank 0); throws InvalidArgument on a negative dim or
// when the count overflows int64.
int64_t NumElements(std::span<const int64_t> shape);
std::string ShapeToString(std::span<const int64_t> shape);  // "[2, 3]"

// Where Tensor(dtype, shape) allocates on the calling thread: host memory, unless a device that
// runs host lowerings on memory it shares with the host (CUDA managed memory) installs its
// allocator for the scope of a program run. An allocator returns zero-filled storage of at least
// `bytes` bytes, aligned to 64, or throws.
using StorageAllocator = std::shared_ptr<std::byte[]> (*)(size_t bytes);
class ScopedStorageAllocator {
 public:
  explicit ScopedStorageAllocator(StorageAllocator allocator);
  ~ScopedStorageAllocator();
  ScopedStorageAllocator(const ScopedStorageAllocator&) = delete;
  ScopedStorageAllocator& operator=(const ScopedStorageAllocator&) = delete;

 private:
  StorageAllocator previous_;
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-initialised storage. Throws Error(OutOfMemory) above the allocation ceiling
  // (backplane/memory_limit.hpp) or when the allocation fails.
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return DTypeStorageBytes(dtype_, numel_); }
  bool defined() const { return dtype_ != DType::Invalid; }

  void* data() {
    if (device_storage_) ThrowNotOnHost();
    return storage_ ? storage_.get() : nullptr;
  }
  const void* data() const {
    if (device_storage_) ThrowNotOnHost();
    return storage_ ? storage_.get() : nullptr;
  }
  template <class T>
  T* data_as() { return static_cast<T*>(data()); }
  template <class T>
  const T* data_as() const { return static_cast<const T*>(data()); }

  // Same storage, new shape with the same element count.
  Tensor Reshaped(Shape shape) const;

  // Device placement. A device tensor holds a DeviceStorage and no host bytes.
  Device device() const { return device_storage_ ? device_storage_->device() : Device{}; }
  bool on_host() const { return !device_storage_; }
  static Tensor OnDevice(DType dtype, Shape shape, std::shared_ptr<const DeviceStorage> storage);
  const std::shared_ptr<const DeviceStorage>& device_storage() const { return device_storage_; }
  // A host copy of a device tensor; a host tensor is returned as it is (shared storage).
  Tensor ToHost() const;

  // A host tensor on memory owned elsewhere (zero-copy import, e.g. a NumPy array): `storage`
  // holds nbytes() bytes, aligned to the element size, and its deleter releases the owner.
  static Tensor FromHostStorage(DType dtype, Shape shape, std::shared_ptr<std::byte[]> storage);
  const std::shared_ptr<std::byte[]>& host_storage() const { return storage_; }

  Tensor Clone() const;
  bool SharesStorageWith(const Tensor& other) const { return storage_ == other.storage_; }
  // How many tensors share this storage (for buffer reuse in the executor).
  long StorageUseCount() const { return storage_.use_count(); }
  // A tensor of `dtype`/`shape` on the storage of `donor`, which must be large enough.
  static Tensor WithStorageOf(const Tensor& donor, DType dtype, Shape shape);

  // Floating tensors only: element i as double, and the reverse (rounded to the dtype). Integer
  // dtypes convert exactly where representable. Convenience for tests, I/O and metrics.
  double GetDouble(int64_t i) const;
  void SetDouble(int64_t i, double value);
  std::vector<double> ToDoubles() const;
  static Tensor FromDoubles(DType dtype, Shape shape, std::span<const double> values);

 private:
  DType dtype_ = DType::Invalid;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> storage_;
  std::shared_ptr<const DeviceStorage> device_storage_;
  [[noreturn]] void ThrowNotOnHost() const;
};

}  // namespace backplane
