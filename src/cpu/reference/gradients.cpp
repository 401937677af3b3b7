// Scalar reference kernels for the Gradients surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterGradients(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
