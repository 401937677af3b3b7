// Scalar reference kernels for the Hawkes surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterHawkes(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
