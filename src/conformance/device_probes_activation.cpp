// Device conformance probes: activation ops.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddActivationProbes(std::vector<DeviceProbe>& p) { (void)p; }

}  // namespace backplane::conformance
