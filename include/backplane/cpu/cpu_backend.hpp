// The CPU backend: host pointers, every catalog method dispatched through a kernel table.
#pragma once

#include <memory>

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"

namespace backplane::cpu {

// A Backend whose methods run the CPU kernels; a method without a kernel throws
// Error(NotImplemented) naming "Surface.Method".
std::unique_ptr<Backend> CreateBackend();

// Whether the CPU backend has a kernel for the method (registered, not necessarily verified).
bool Implements(catalog::MethodId id);

}  // namespace backplane::cpu
