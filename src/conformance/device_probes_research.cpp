// Device conformance probes: research ops.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddResearchProbes(std::vector<DeviceProbe>& p) { (void)p; }

}  // namespace backplane::conformance
