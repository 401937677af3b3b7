// Scalar reference kernels for the Normalization surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterNormalization(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
