#include "conformance/device_probes.hpp"

namespace backplane::conformance {

std::vector<DeviceProbe> DeviceProbes() {
  std::vector<DeviceProbe> p;
  AddElementwiseProbes(p);
  AddActivationProbes(p);
  AddNnProbes(p);
  AddTensorProbes(p);
  AddTrainProbes(p);
  AddResearchProbes(p);
  return p;
}

}  // namespace backplane::conformance
