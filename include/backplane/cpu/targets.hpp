// SIMD targets of the CPU backend: which are compiled, which this CPU runs, and forcing one
// (BACKPLANE_CPU_TARGET=scalar|ssse3|sse4|avx2|avx512|neon|sve|sve2|sve_256|sve2_128, like PyTorch's ATEN_CPU_CAPABILITY).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace backplane::cpu {

// Targets compiled into this binary that this CPU can run, best first ("avx512", "avx2", ...).
std::vector<std::string> RunnableTargets();
// The target dynamic dispatch uses now.
std::string SelectedTarget();
// Restricts dispatch to `name` (one of RunnableTargets()); "" restores the default. Throws
// Error(InvalidArgument) for an unknown name and Error(DeviceUnavailable) for a target this CPU
// cannot run. Process-wide; not thread-safe with kernels running concurrently.
void ForceTarget(std::string_view name);
// Applies BACKPLANE_CPU_TARGET once per process (called by CreateBackend).
void ApplyTargetFromEnvironment();

}  // namespace backplane::cpu
