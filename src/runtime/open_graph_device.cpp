// The graph devices of this build, by name. The runtime sits above the device backends; the
// backends themselves never include each other.
#include <fmt/format.h>

#include "backplane/error.hpp"
#include "backplane/runtime/graph_device.hpp"
#ifdef BACKPLANE_HAVE_XLA
#include "xla/xla_device.hpp"
#endif
#ifdef BACKPLANE_HAVE_CUDA
#include "backplane/cpu/cpu_backend.hpp"
#include "cuda/cuda_graph_device.hpp"
#endif

namespace backplane::runtime {

std::vector<std::string> BuiltGraphDevices() {
  std::vector<std::string> built;
#ifdef BACKPLANE_HAVE_XLA
  built.push_back("xla");
#endif
#ifdef BACKPLANE_HAVE_CUDA
  built.push_back("cuda");
#endif
  return built;
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
#ifdef BACKPLANE_HAVE_CUDA
      return cuda::OpenCudaDevice(device.index, cpu::CreateBackend());
#else
      throw Error(ErrorCode::DeviceUnavailable, "device",
                  "this build has no CUDA device (configured without the CUDA toolkit or with BACKPLANE_CUDA=OFF)");
#endif
  }
  throw Error(ErrorCode::InvalidArgument, "device", fmt::format("unknown device '{}'", name));
}

}  // namespace backplane::runtime
