// The inventory: the catalog rendered as JSON (for scripts) and Markdown (docs/backend-inventory.md),
// with the seed's numbers and Backplane's own columns.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/catalog/catalog.hpp"

namespace backplane::catalog {

// One device's registered kernels.
struct DeviceKernels {
  std::string device;  // "cpu", "cuda", ...
  std::function<bool(MethodId)> implements;
};

nlohmann::json InventoryJson(const std::vector<DeviceKernels>& devices);
std::string InventoryMarkdown(const std::vector<DeviceKernels>& devices);

// The live devices of this build (the CPU backend today).
std::vector<DeviceKernels> BuiltDevices();

}  // namespace backplane::catalog
