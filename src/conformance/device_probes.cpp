#include "conformance/device_probes.hpp"

namespace backplane::conformance {

namespace {

void AddGraphProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "Input", .inputs = {{"T", {3, 4}}}});
  p.push_back({.op = "Input", .attrs = R"({"values": [1, -2.5, 3, 0.25, 5, 6], "shape": [2, 3], "dtype": "f32"})",
               .dtypes = {DType::Float32}});
}

}  // namespace

std::vector<DeviceProbe> DeviceProbes() {
  std::vector<DeviceProbe> p;
  AddGraphProbes(p);
  AddElementwiseProbes(p);
  AddActivationProbes(p);
  AddNnProbes(p);
  AddTensorProbes(p);
  AddTrainProbes(p);
  AddResearchProbes(p);
  return p;
}

}  // namespace backplane::conformance
