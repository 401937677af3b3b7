#include "conformance/device_probes.hpp"

namespace backplane::conformance {

namespace {

void AddGraphProbes(std::vector<DeviceProbe>& p) {
  p.push_back({.op = "Input", .inputs = {{"T", {3, 4}}}});
  p.push_back({.op = "Input", .attrs = R"({"values": [1, -2.5, 3, 0.25, 5, 6], "shape": [2, 3], "dtype": "f32"})",
               .dtypes = {DType::Float32}});
  const char* w = R"([{"name": "w", "dtype": "f32", "shape": [2, 3], "init": {"kind": "ones"}}])";
  p.push_back({.op = "model.freeze", .inputs = {{"T", {2}}}, .attrs = R"({"pattern": "w"})", .params = w});
  p.push_back({.op = "model.graft", .inputs = {{"T", {2}}}, .attrs = R"({"at": "w"})", .params = w});
  // Matrix products: plain, batched with a broadcast batch axis, vector operands.
  p.push_back({.op = "math.matmul", .inputs = {{"T", {5, 7}}, {"T", {7, 3}}}});
  p.push_back({.op = "math.matmul", .inputs = {{"T", {2, 1, 4, 6}}, {"T", {3, 6, 5}}}});
  p.push_back({.op = "math.matmul", .inputs = {{"T", {6}}, {"T", {2, 6, 3}}}});
  p.push_back({.op = "math.matmul", .inputs = {{"T", {4, 6}}, {"T", {6}}}});
  p.push_back({.op = "shape.reshape", .inputs = {{"T", {4, 6}}}, .attrs = R"({"shape": [3, -1, 2]})"});
  p.push_back({.op = "shape.reshape", .inputs = {{"T", {2, 3, 4}}}, .attrs = R"({"shape": [24]})"});
  p.push_back({.op = "shape.transpose", .inputs = {{"T", {2, 3, 5}}}});
  p.push_back({.op = "shape.transpose", .inputs = {{"T", {2, 3, 5}}}, .attrs = R"({"perm": [1, -1, 0]})"});
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
