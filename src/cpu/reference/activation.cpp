// Scalar reference kernels for the Activation surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterActivation(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
