// A PJRT plugin loaded with dlopen, one client on one device, and RAII handles for its buffers and
// executables. Every PJRT error becomes a backplane::Error naming the call and the plugin path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backplane/device.hpp"
#include "backplane/dtype.hpp"
#include "backplane/tensor.hpp"

struct PJRT_Api;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Buffer;
struct PJRT_LoadedExecutable;
struct PJRT_Error;

namespace backplane::xla {

// The plugin the build fetched (scripts/fetch-models.sh), or BACKPLANE_PJRT_PLUGIN when set.
std::string DefaultPluginPath();

class PjrtClient;

// One device buffer; destroyed with its last reference.
class PjrtBuffer final : public DeviceStorage {
 public:
  // `dtype`/`numel` describe the tensor; bools are one byte per element on the device (PRED) and
  // bit-packed on the host, so copies repack them.
  PjrtBuffer(std::shared_ptr<const PjrtClient> client, PJRT_Buffer* buffer, DType dtype, int64_t numel);
  ~PjrtBuffer() override;
  Device device() const override;
  void CopyToHost(void* dst, size_t bytes) const override;
  PJRT_Buffer* get() const { return buffer_; }

 private:
  std::shared_ptr<const PjrtClient> client_;
  PJRT_Buffer* buffer_;
  DType dtype_;
  int64_t numel_;
};

class PjrtExecutable {
 public:
  PjrtExecutable(std::shared_ptr<const PjrtClient> client, PJRT_LoadedExecutable* exe, size_t num_outputs);
  ~PjrtExecutable();
  PjrtExecutable(const PjrtExecutable&) = delete;
  PjrtExecutable& operator=(const PjrtExecutable&) = delete;
  // Runs on the client's device; outputs are device buffers of the given types.
  std::vector<Tensor> Execute(const std::vector<const PjrtBuffer*>& args,
                              const std::vector<std::pair<DType, Shape>>& output_types) const;
  size_t num_outputs() const { return num_outputs_; }

 private:
  std::shared_ptr<const PjrtClient> client_;
  PJRT_LoadedExecutable* exe_;
  size_t num_outputs_;
};

class PjrtClient : public std::enable_shared_from_this<PjrtClient> {
 public:
  // Loads the plugin, checks its API version and creates a client with one device. Throws
  // Error(DeviceUnavailable) naming the path on every failure; never aborts.
  static std::shared_ptr<PjrtClient> Open(const std::string& plugin_path, int device_index = 0);
  ~PjrtClient();
  PjrtClient(const PjrtClient&) = delete;
  PjrtClient& operator=(const PjrtClient&) = delete;

  const std::string& plugin_path() const { return path_; }
  std::string platform_name() const;
  std::string platform_version() const;
  int api_major() const;
  int api_minor() const;
  // A plugin attribute as text ("1.13.3" for an int64 array), empty when the plugin lacks it.
  std::string plugin_attribute(const std::string& name) const;
  int device_count() const { return static_cast<int>(devices_.size()); }
  Device device() const { return Device{DeviceKind::Xla, device_index_}; }

  std::shared_ptr<PjrtBuffer> Upload(const Tensor& host) const;
  // Compiles a StableHLO module (MLIR text). Throws Error(InvalidArgument) with the plugin's
  // message when XLA rejects it.
  std::unique_ptr<PjrtExecutable> Compile(const std::string& mlir, const std::string& what) const;

  // Throws when `error` is set, destroying it: "<call>: <plugin message>".
  void Check(PJRT_Error* error, const char* call) const;
  const PJRT_Api* api() const { return api_; }
  PJRT_Device* pjrt_device() const { return devices_.at(static_cast<size_t>(device_index_)); }

 private:
  PjrtClient() = default;
  std::string path_;
  void* handle_ = nullptr;
  const PJRT_Api* api_ = nullptr;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
  int device_index_ = 0;
};

}  // namespace backplane::xla
