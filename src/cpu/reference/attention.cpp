// Scalar reference kernels for the Attention surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterAttention(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
