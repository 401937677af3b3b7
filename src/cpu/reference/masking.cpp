// Scalar reference kernels for the Masking surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterMasking(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
