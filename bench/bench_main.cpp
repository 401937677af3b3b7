// Google Benchmark over the shared workload list (include/backplane/bench.hpp). The per-surface
// files in this folder register the workloads of their surface.
#include <benchmark/benchmark.h>

#include "bench_support.hpp"

BENCHMARK_MAIN();
