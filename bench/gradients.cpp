// Benchmarks of the Gradients surface (workloads in src/bench/).
#include "bench_support.hpp"

static const bool registered = backplane::bench::RegisterSurface("Gradients");
