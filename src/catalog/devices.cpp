#include "backplane/catalog/inventory.hpp"
#include "backplane/cpu/cpu_backend.hpp"

namespace backplane::catalog {

std::vector<DeviceKernels> BuiltDevices() {
  return {DeviceKernels{"cpu", [](MethodId id) { return cpu::Implements(id); }}};
}

}  // namespace backplane::catalog
