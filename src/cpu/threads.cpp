#include "backplane/cpu/threads.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

namespace backplane::cpu {
namespace {

std::atomic<int> g_override{0};

int DefaultThreads() {
  static const int threads = [] {
    if (const char* env = std::getenv("BACKPLANE_NUM_THREADS")) {
      const int n = std::atoi(env);
      if (n >= 1) return n;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }();
  return threads;
}

}  // namespace

int NumThreads() {
  const int o = g_override.load();
  return o > 0 ? o : DefaultThreads();
}

void SetNumThreads(int threads) { g_override.store(threads > 0 ? threads : 0); }

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t chunks = (n + grain - 1) / grain;
  const int threads = NumThreads();
  if (chunks < 2 || threads < 2) {
    for (int64_t c = 0; c < chunks; ++c) fn(c * grain, std::min(n, (c + 1) * grain));
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) fn(c * grain, std::min(n, (c + 1) * grain));
}

}  // namespace backplane::cpu
