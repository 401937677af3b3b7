// Scalar reference kernels for the Reduction surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterReduction(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
