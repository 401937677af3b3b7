// The CPU backend: host pointers, every catalog method dispatched through a kernel table.
#pragma once

#include <memory>
#include <string>

#include "backplane/backend/backend.hpp"
#include "backplane/catalog/catalog.hpp"

namespace backplane::cpu {

// A Backend whose methods run the fast (Highway SIMD) kernels where a surface has them and the
// scalar reference elsewhere; a method without any kernel throws Error(NotImplemented) naming
// "Surface.Method". Applies BACKPLANE_CPU_TARGET on first use.
std::unique_ptr<Backend> CreateBackend();

// The scalar reference only: the oracle of the conformance tests.
std::unique_ptr<Backend> CreateReferenceBackend();

// Whether the CPU backend has a kernel for the method (registered, not necessarily verified).
bool Implements(catalog::MethodId id);
// Whether a fast kernel overrides the reference for the method.
bool HasFastKernel(catalog::MethodId id);
// Why a method has no fast kernel on purpose (empty: none given, or it has one).
std::string ScalarByDesignReason(catalog::MethodId id);

}  // namespace backplane::cpu
