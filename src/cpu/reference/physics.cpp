// Scalar reference kernels for the Physics surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterPhysics(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
