// Scalar reference kernels for the PointProcess surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterPointProcess(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
