// Inputs and workload groups shared by the benchmark workload files.
#pragma once

#include <omp.h>

#include <memory>
#include <optional>
#include <vector>

#include "backplane/bench.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"

namespace backplane::bench {

constexpr int64_t k16M = 16 << 20;

// n seeded uniform values in [lo, hi).
inline std::shared_ptr<std::vector<float>> Random(int64_t n, uint64_t seed, float lo = -4, float hi = 4) {
  auto v = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    (*v)[static_cast<size_t>(i)] = lo + (hi - lo) * PhiloxUniformFloat(seed, 0, static_cast<uint64_t>(i));
  }
  return v;
}

// Runs a peer library call with as many OpenMP threads as Backplane uses (OpenBLAS's OpenMP build
// and oneDNN follow omp_set_num_threads), so `BACKPLANE_NUM_THREADS=1` times them on one core.
template <class F>
void WithBackplaneThreads(F&& call) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(cpu::NumThreads());
  call();
  omp_set_num_threads(saved);
}

// oneDNN's dnnl_sgemm on n x n x n (onednn_peer.cpp), when libdnnl.so.2 can be loaded.
std::optional<Workload> OneDnnSgemm(int64_t n);

// Normalization, RoPE, masking, losses, gradients, sampling, dropout, optimizer, embedding, shape.
void AddTrainingWorkloads(std::vector<Workload>& w);
// VSA, active inference, predictive coding, MathExt, Hawkes, point process, stencils.
void AddResearchWorkloads(std::vector<Workload>& w);
// BlockQuant.MatmulT on the shapes and formats of a small LLM (workloads_llm.cpp).
void AddLlmWorkloads(std::vector<Workload>& w);

}  // namespace backplane::bench
