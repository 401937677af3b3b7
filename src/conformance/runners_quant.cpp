// Conformance runners for the quant kernel families (none yet).
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterQuantRunners(RunnerRegistry& registry) { (void)registry; }

}  // namespace backplane::conformance
