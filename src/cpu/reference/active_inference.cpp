// Scalar reference kernels for the ActiveInference surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterActiveInference(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
