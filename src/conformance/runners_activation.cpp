// Conformance runners for the activation kernel families (none yet).
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterActivationRunners(RunnerRegistry& registry) { (void)registry; }

}  // namespace backplane::conformance
