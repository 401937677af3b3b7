// Scalar reference kernels for the VSA surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterVSA(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
