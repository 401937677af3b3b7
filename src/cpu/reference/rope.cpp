// Scalar reference kernels for the RoPE surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterRoPE(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
