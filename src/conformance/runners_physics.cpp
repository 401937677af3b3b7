// Conformance runners for the Physics families: Laplacian, Stencil1D, FFT, MadelungContinuity.
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterPhysicsRunners(RunnerRegistry& r) { (void)r; }

}  // namespace backplane::conformance
