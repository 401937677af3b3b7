// Scalar reference kernels for the PredictiveCoding surface.
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {

void RegisterPredictiveCoding(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::ref
