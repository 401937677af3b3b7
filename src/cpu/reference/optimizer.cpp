// Scalar reference kernels for the Optimizer surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterOptimizer(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
