// Scalar reference kernels for the Shape surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterShape(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
