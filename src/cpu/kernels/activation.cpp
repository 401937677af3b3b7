// Highway kernels for the Activation surface: none yet, every method runs the scalar reference
// (docs/cpu-dispatch-matrix.md shows it as "no SIMD kernel").
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {

void RegisterActivation(KernelTable& table) { (void)table; }

}  // namespace backplane::cpu::simd
