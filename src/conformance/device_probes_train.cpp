// Device conformance probes: losses, gradients, optimizers, metrics.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddTrainProbes(std::vector<DeviceProbe>& p) {
  for (const char* op : {"train.loss.cross_entropy", "train.loss.cross_entropy_grad"}) {
    p.push_back({.op = op, .inputs = {{"T", {5, 7}, -3, 3}, {"i32", {5}, 0, 6}}});
  }
  for (const char* op : {"train.optimizer.adam", "train.optimizer.adamw"}) {
    p.push_back({.op = op, .inputs = {{"T", {3, 5}}, {"T", {3, 5}}}, .attrs = R"({"lr": 0.01, "weight_decay": 0.1})",
                 .runs = 3});
  }
  p.push_back({.op = "bench.metric.accuracy", .inputs = {{"T", {6, 4}}, {"T", {6, 4}}}, .runs = 2});
}

}  // namespace backplane::conformance
