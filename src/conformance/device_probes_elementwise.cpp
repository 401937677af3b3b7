// Device conformance probes: elementwise ops.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddElementwiseProbes(std::vector<DeviceProbe>& p) { (void)p; }

}  // namespace backplane::conformance
