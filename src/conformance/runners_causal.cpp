// Conformance runners for the Causal and Hawkes families.
#include "conformance/runner.hpp"

namespace backplane::conformance {

void RegisterCausalRunners(RunnerRegistry& r) { (void)r; }

}  // namespace backplane::conformance
