// Scalar reference kernels for the Pool surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterPool(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
