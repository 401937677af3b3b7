// Scalar reference kernels for the Causal surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterCausal(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
