// The XLA device: a GraphDevice that lowers each segment to one StableHLO module, compiles it
// through a PJRT plugin and runs it on device-resident buffers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backplane/runtime/graph_device.hpp"

namespace backplane::xla {

class PjrtClient;
class PjrtExecutable;

struct XlaDeviceInfo {
  std::string plugin_path;
  std::string platform_name;
  std::string platform_version;
  int api_major = 0;
  int api_minor = 0;
  std::string stablehlo_version;  // the plugin's "stablehlo_current_version" attribute, if given
  int devices = 0;
};

class XlaDevice final : public runtime::GraphDevice {
 public:
  // Opens the plugin (DefaultPluginPath() when empty); throws Error(DeviceUnavailable) naming it.
  static std::unique_ptr<XlaDevice> Open(const std::string& plugin_path = "", int device_index = 0);
  ~XlaDevice() override;

  Device device() const override;
  std::optional<std::string> Unsupported(const runtime::SegmentNode& node) const override;
  std::shared_ptr<runtime::DeviceProgram> Compile(const runtime::Segment& segment) override;
  Tensor ToDevice(const Tensor& host) override;
  std::vector<std::pair<std::string, std::string>> Properties() const override;

  XlaDeviceInfo Info() const;
  // The module a segment lowers to (for --explain and tests).
  std::string ModuleText(const runtime::Segment& segment) const;
  int64_t compiled_programs() const { return compiled_; }

 private:
  XlaDevice() = default;
  std::shared_ptr<PjrtClient> client_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<PjrtExecutable>> cache_;  // by module text
  int64_t compiled_ = 0;
};

}  // namespace backplane::xla
