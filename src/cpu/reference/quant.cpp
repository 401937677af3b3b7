// Scalar reference kernels for the Quant surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterQuant(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
