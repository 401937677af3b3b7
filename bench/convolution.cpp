// Benchmarks of the Convolution surface (workloads in src/bench/workloads.cpp).
#include "bench_support.hpp"

static const bool registered = backplane::bench::RegisterSurface("Convolution");
