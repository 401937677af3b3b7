// Scalar reference kernels for the Matmul surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterMatmul(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
