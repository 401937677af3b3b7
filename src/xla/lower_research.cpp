// Research surfaces: physics (stencils, FFT), Hawkes, VSA, active inference, predictive coding,
// Markov blankets, causal inference, positional popcount, sampling.
#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterResearchLowerings(LoweringTable& t) { (void)t; }

}  // namespace backplane::xla
