// The CUDA device: a GraphDevice whose programs run each node's lowering on the CUDA backend.
// Tensors live in CUDA managed memory, so the lowerings' host-side glue (views, small index
// tables) addresses the same bytes the kernels do; a node whose Backend methods lack a CUDA kernel
// is left to the CPU by Unsupported.
#pragma once

#include <memory>

#include "backplane/backend/backend.hpp"
#include "backplane/runtime/graph_device.hpp"

namespace backplane::cuda {

// Opens GPU `device`; throws Error(DeviceUnavailable) saying why when there is none. `host` runs
// the methods a lowering calls beyond its op's cross-link when they have no CUDA kernel.
std::unique_ptr<runtime::GraphDevice> OpenCudaDevice(int device, std::unique_ptr<Backend> host);

}  // namespace backplane::cuda
