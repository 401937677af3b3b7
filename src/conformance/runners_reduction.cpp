// Conformance runners for the reduction kernel families (none yet).
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterReductionRunners(RunnerRegistry& registry) { (void)registry; }

}  // namespace backplane::conformance
