// Device conformance probes: tensor ops.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddTensorProbes(std::vector<DeviceProbe>& p) { (void)p; }

}  // namespace backplane::conformance
