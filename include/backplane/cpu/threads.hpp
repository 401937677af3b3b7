// The process-wide CPU thread pool (OpenMP), sized by BACKPLANE_NUM_THREADS (default: the
// hardware threads). Kernels split work into chunks whose boundaries depend only on the problem
// size, never on the thread count, and combine partial results in chunk order, so results are
// identical for any number of threads.
#pragma once

#include <cstdint>
#include <functional>

namespace backplane::cpu {

int NumThreads();
// Overrides the pool size (>= 1); 0 restores BACKPLANE_NUM_THREADS / the hardware default.
void SetNumThreads(int threads);

// Calls fn(chunk_begin, chunk_end) for consecutive chunks of `grain` items covering [0, n),
// in parallel when there are at least two chunks. Chunk boundaries depend only on n and grain.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace backplane::cpu
