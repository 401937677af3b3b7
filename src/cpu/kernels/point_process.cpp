// Kernels for the PointProcess surface: none. HawkesSimulate is Ogata thinning, a sequential
// accept/reject loop where each candidate depends on the previous event (and on one Philox draw per
// step), so it stays on the scalar reference by design.
#include "cpu/kernels/simd.hpp"

namespace backplane::cpu::simd {

void RegisterPointProcess(KernelTable& t) {
  t.ScalarByDesign(catalog::MethodId::PointProcess_HawkesSimulate,
                   "Ogata thinning: a sequential accept/reject recurrence on one Philox stream");
}

}  // namespace backplane::cpu::simd
