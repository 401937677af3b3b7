// Scalar reference kernels for the Dot surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterDot(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
