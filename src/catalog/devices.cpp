#include "backplane/catalog/inventory.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#ifdef BACKPLANE_HAVE_CUDA
#include "backplane/cuda/cuda_backend.hpp"
#endif

namespace backplane::catalog {

std::vector<DeviceKernels> BuiltDevices() {
  std::vector<DeviceKernels> devices{DeviceKernels{"cpu", [](MethodId id) { return cpu::Implements(id); }}};
#ifdef BACKPLANE_HAVE_CUDA
  devices.push_back(DeviceKernels{"cuda", [](MethodId id) { return cuda::Implements(id); }});
#endif
  return devices;
}

}  // namespace backplane::catalog
