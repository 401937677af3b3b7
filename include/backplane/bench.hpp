// Benchmark workloads (one list, used by `backplane bench` and by the Google Benchmark binaries
// in bench/) and this machine's measured limits (peak FMA throughput, STREAM triad bandwidth).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"

namespace backplane::bench {

struct Limits {
  int threads = 1;            // the thread count the limits were measured with (all threads busy)
  double peak_gflops = 0;     // f32 FMA, the selected SIMD target
  double triad_gbps = 0;      // a[i] = b[i] + s * c[i] over 3 x 64 MiB of f32
  double read_gbps = 0;       // sum over 64 MiB of f32
  std::string target;
};
// Measures the limits on cpu::NumThreads() threads at once (about one second).
Limits MeasureLimits();

struct Workload {
  std::string op;       // catalog operation ID
  std::string surface;  // Backend surface of the method it calls
  std::string shape;    // human-readable problem size
  double bytes = 0;     // compulsory memory traffic per call (reads + writes)
  double flops = 0;     // floating-point operations per call (0 for bandwidth-bound ops)
  std::string limit;    // "triad", "read" or "fma": the limit to compare with; "none": time only
  // Allocates inputs and returns the call to time.
  std::function<std::function<void()>(Backend&)> setup;
};
std::vector<Workload> Workloads();

struct Result {
  Workload workload;
  double seconds = 0;  // best time per call
  double gbps = 0;
  double gflops = 0;
  double fraction = 0;  // of the relevant limit
};
// Times one workload (best of repeated runs for at least `min_seconds`).
Result Run(const Workload& w, Backend& backend, const Limits& limits, double min_seconds = 0.3);

}  // namespace backplane::bench
