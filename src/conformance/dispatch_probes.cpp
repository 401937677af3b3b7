#include "conformance/device_probes.hpp"

namespace backplane::conformance {

std::vector<DeviceProbe> DispatchProbes() {
  std::vector<DeviceProbe> p;
  // Long query sequences: mqa and gqa run head by head on Attention.FlashAttention (Sq >= 1024),
  // causal and not, Sq < Sk and Sq > Sk (bottom-right causal rows that see no key).
  for (const char* causal : {"false", "true"}) {
    const std::string mqa = std::string(R"({"num_heads": 2, "head_dim": 8, "causal": )") + causal + "}";
    p.push_back({.op = "attention.mqa", .inputs = {{"T", {1, 2, 1024, 8}}, {"T", {1, 1, 1030, 8}}, {"T", {1, 1, 1030, 8}}},
                 .attrs = mqa});
    const std::string gqa = std::string(R"({"num_heads": 4, "num_kv_heads": 2, "head_dim": 8, "causal": )") + causal + "}";
    p.push_back({.op = "attention.gqa", .inputs = {{"T", {1, 4, 1100, 8}}, {"T", {1, 2, 1050, 8}}, {"T", {1, 2, 1050, 8}}},
                 .attrs = gqa});
  }
  return p;
}

}  // namespace backplane::conformance
