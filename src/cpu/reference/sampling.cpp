// Scalar reference kernels for the Sampling surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterSampling(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
