// Scalar reference kernels for the MathExt surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterMathExt(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
