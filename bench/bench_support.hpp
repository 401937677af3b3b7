#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "backplane/bench.hpp"
#include "backplane/cpu/cpu_backend.hpp"

namespace backplane::bench {

// Registers a Google Benchmark for every workload of `surface`, reporting bytes and flops.
inline bool RegisterSurface(const std::string& surface) {
  static auto backend = cpu::CreateBackend();
  for (const Workload& w : Workloads()) {
    if (w.surface != surface) continue;
    benchmark::RegisterBenchmark((w.op + "/" + w.shape).c_str(), [w](benchmark::State& state) {
      const auto call = w.setup(*backend);
      for (auto _ : state) call();
      state.counters["GB/s"] = benchmark::Counter(w.bytes, benchmark::Counter::kIsIterationInvariantRate);
      if (w.flops > 0) {
        state.counters["GFLOP/s"] =
            benchmark::Counter(w.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
      }
    })->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}

}  // namespace backplane::bench
