// The graph devices of this build, by name. The runtime sits above the device backends; the
// backends themselves never include each other.
#include <fmt/format.h>

#include "backplane/error.hpp"
#include "backplane/runtime/graph_device.hpp"
#ifdef BACKPLANE_HAVE_XLA
#include "xla/xla_device.hpp"
#endif

namespace backplane::runtime {

std::vector<std::string> BuiltGraphDevices() {
#ifdef BACKPLANE_HAVE_XLA
  return {"xla"};
#else
  return {};
#endif
}

std::unique_ptr<GraphDevice> OpenGraphDevice(std::string_view name) {
  const Device device = ParseDevice(name);
  switch (device.kind) {
    case DeviceKind::Cpu: return nullptr;
    case DeviceKind::Xla:
#ifdef BACKPLANE_HAVE_XLA
      return xla::XlaDevice::Open("", device.index);
#else
      throw Error(ErrorCode::DeviceUnavailable, "device",
                  "this build has no XLA device (pjrt_c_api.h was not found at configure time; run "
                  "scripts/fetch-models.sh and reconfigure)");
#endif
    case DeviceKind::Cuda:
      throw Error(ErrorCode::DeviceUnavailable, "device", "this build has no CUDA device");
  }
  throw Error(ErrorCode::InvalidArgument, "device", fmt::format("unknown device '{}'", name));
}

}  // namespace backplane::runtime
