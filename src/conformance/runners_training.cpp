// Conformance runners for the optimizer, embedding and shape families.
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterTrainingRunners(RunnerRegistry& r) { (void)r; }

}  // namespace backplane::conformance
