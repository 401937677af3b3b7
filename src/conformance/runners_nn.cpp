// Conformance runners for the nn kernel families (none yet).
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterNnRunners(RunnerRegistry& registry) { (void)registry; }

}  // namespace backplane::conformance
