// Device conformance probes: nn ops.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddNnProbes(std::vector<DeviceProbe>& p) { (void)p; }

}  // namespace backplane::conformance
