// The inventory: the catalog rendered as JSON (for scripts) and Markdown (docs/backend-inventory.md),
// with the seed's numbers and Backplane's own columns.
#pragma once

#include <functional>
#include <map>
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

// What the executor called for each canonical op ID ("Surface.Method" names), as recorded by the
// dispatch audit (conformance::RunDispatchAudit).
using DispatchRecord = std::map<std::string, std::vector<std::string>>;

nlohmann::json InventoryJson(const std::vector<DeviceKernels>& devices);
// With `dispatch`, the cross-link and operation tables get the recorded "Executor calls" column.
std::string InventoryMarkdown(const std::vector<DeviceKernels>& devices, const DispatchRecord* dispatch = nullptr);

// The live devices of this build (the CPU backend today).
std::vector<DeviceKernels> BuiltDevices();

}  // namespace backplane::catalog
