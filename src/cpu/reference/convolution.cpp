// Scalar reference kernels for the Convolution surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterConvolution(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
