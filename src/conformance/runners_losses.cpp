// Conformance runners for the loss, gradient, sampling and dropout families.
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterLossRunners(RunnerRegistry& r) { (void)r; }

}  // namespace backplane::conformance
