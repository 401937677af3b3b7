// Scalar reference kernels for the Dropout surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterDropout(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
