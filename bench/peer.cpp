// The peers timed in the same run: OpenBLAS sgemm, LAPACK dpotrf (workloads in src/bench/).
#include "bench_support.hpp"

static const bool registered = backplane::bench::RegisterSurface("peer");
