// Where a tensor's bytes live: the host ("cpu") or a device ("xla:0", "cuda:0").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace backplane {

enum class DeviceKind { Cpu, Xla, Cuda };

struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  bool is_host() const { return kind == DeviceKind::Cpu; }
};

std::string DeviceName(Device device);  // "cpu", "xla:0"
// "cpu", "xla", "xla:1", "cuda", "cuda:0"; throws InvalidArgument naming `arg` otherwise.
Device ParseDevice(std::string_view text, std::string_view arg = "--device");

// Device-resident bytes of one tensor, owned by the device's allocator. Copies to the host are
// explicit (Tensor::ToHost); host code never dereferences device memory.
class DeviceStorage {
 public:
  virtual ~DeviceStorage() = default;
  virtual Device device() const = 0;
  // Copies the whole buffer (`bytes` must equal its size) into host memory at `dst`.
  virtual void CopyToHost(void* dst, size_t bytes) const = 0;
};

}  // namespace backplane
