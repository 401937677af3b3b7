// The per-thread CPU backend and the process-wide graph devices the bindings run on.
#pragma once

#include <string>

#include "backplane/backend/backend.hpp"
#include "backplane/runtime/graph_device.hpp"

namespace backplane::python {

Backend& ThreadBackend();
// Opened once per name and kept for the process; nullptr for "cpu".
runtime::GraphDevice* SharedDevice(const std::string& name);

}  // namespace backplane::python
