// Scalar reference kernels for the Elementwise surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterElementwise(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
