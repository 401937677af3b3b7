// Scalar reference kernels for the Losses surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterLosses(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
