// Benchmarks of the Optimizer surface (workloads in src/bench/).
#include "bench_support.hpp"

static const bool registered = backplane::bench::RegisterSurface("Optimizer");
