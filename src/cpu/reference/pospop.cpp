// Scalar reference kernels for the PosPop surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterPosPop(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
