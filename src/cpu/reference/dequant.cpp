// Scalar reference kernels for the Dequant surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterDequant(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
