// Benchmarks of the BlockQuant surface (workloads in src/bench/workloads_llm.cpp).
#include "bench_support.hpp"

static const bool registered = backplane::bench::RegisterSurface("BlockQuant");
