// Conformance runners for the VSA, active-inference and predictive-coding families and Outer.
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterResearchRunners(RunnerRegistry& r) { (void)r; }

}  // namespace backplane::conformance
