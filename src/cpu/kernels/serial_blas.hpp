// OpenBLAS runs one thread per call: our pool (backplane/cpu/threads.hpp) splits the work into
// blocks that depend only on the shape, so results do not depend on the thread count, which
// OpenBLAS's own threading would change. Not per-target.
#pragma once

#include <omp.h>

namespace backplane::cpu::simd {

// For its lifetime, OpenMP's team size (which the OpenMP build of OpenBLAS follows) is 1, unless
// already inside a parallel region.
struct SerialBlas {
  int saved = omp_get_max_threads();
  bool set = saved != 1 && !omp_in_parallel();
  SerialBlas() {
    if (set) omp_set_num_threads(1);
  }
  ~SerialBlas() {
    if (set) omp_set_num_threads(saved);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

}  // namespace backplane::cpu::simd
