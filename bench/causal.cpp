// Benchmarks of the Causal surface (workloads in src/bench/workloads.cpp).
#include "bench_support.hpp"

static const bool registered = backplane::bench::RegisterSurface("Causal");
