// Scalar reference kernels for the LayerNorm surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterLayerNorm(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
