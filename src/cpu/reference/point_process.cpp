// Scalar reference kernel for the PointProcess surface: simulation of the univariate Hawkes
// process with exponential kernel,
//   lambda(t) = mu + alpha * sum_{t_i < t} exp(-beta (t - t_i)),
// on [0, Horizon) by Ogata's thinning algorithm (Ogata 1981, "On Lewis' simulation method for
// point processes", IEEE Trans. Inf. Theory 27(1)).
//
// Randomness: Philox4x32-10 keyed by config.Seed, stream 0. Candidate k (k = 0, 1, 2, ... counting
// accepted and rejected candidates) uses PhiloxUniformDouble(seed, 0, 2k) for its exponential
// waiting time and PhiloxUniformDouble(seed, 0, 2k + 1) for its acceptance test.
//
// Semantics: docs/semantics/point_process.md. Everything is computed in f64; the event times are
// rounded once to the storage format on store. All arguments are validated and the whole
// simulation runs into a temporary before anything is written.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "backplane/random.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace point_process {
namespace {

constexpr std::string_view kOp = "PointProcess.HawkesSimulate";
constexpr double kMaxF16 = 65504.0;

// A finite float parameter that must be > 0 (strict) or >= 0.
void CheckParam(std::string_view arg, float value, bool strict) {
  CheckFinite(kOp, arg, value);
  if (strict ? !(value > 0.0f) : !(value >= 0.0f)) {
    ThrowInvalidArgument(kOp, arg, strict ? "> 0" : ">= 0", fmt::format("{}", value));
  }
}

}  // namespace

void HawkesSimulate(const HawkesSimulateConfig& config, void* times, int64_t capacity,
                    int64_t* eventCount, DType dtype) {
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "capacity", capacity);
  CheckPointer(kOp, "times", times, capacity);
  CheckPointer(kOp, "eventCount", eventCount, 1);
  CheckParam("config.Mu", config.Mu, true);
  CheckParam("config.Alpha", config.Alpha, false);
  CheckParam("config.Beta", config.Beta, true);
  CheckParam("config.Horizon", config.Horizon, false);
  CheckNonNegative(kOp, "config.MaxEvents", config.MaxEvents);
  if (dtype == DType::Float16 && static_cast<double>(config.Horizon) > kMaxF16) {
    ThrowInvalidArgument(kOp, "config.Horizon", "<= 65504 (the largest f16) for f16 times",
                         fmt::format("{}", config.Horizon));
  }
  if (config.MaxEvents > capacity) {
    ThrowInvalidArgument(kOp, "config.MaxEvents", fmt::format("<= capacity ({})", capacity),
                         fmt::format("{}", config.MaxEvents));
  }
  const double mu = config.Mu, alpha = config.Alpha, beta = config.Beta;
  const double horizon = config.Horizon;
  if (config.MaxEvents == 0 && alpha >= beta) {
    ThrowInvalidArgument(kOp, "config.Alpha",
                         "< config.Beta (branching ratio alpha/beta < 1) when config.MaxEvents "
                         "is 0 (no maximum)",
                         fmt::format("alpha {} with beta {} (alpha/beta = {})", config.Alpha,
                                     config.Beta, alpha / beta));
  }
  const int64_t limit = config.MaxEvents > 0 ? config.MaxEvents : capacity;

  // Ogata thinning. `excitation` is alpha * sum_{t_i <= t} exp(-beta (t - t_i)) at the current
  // time t, events at t included (the right limit), so mu + excitation bounds lambda on (t, next
  // event]: the kernel only decays between events.
  std::vector<double> events;
  double t = 0.0;
  double excitation = 0.0;
  for (uint64_t k = 0;; ++k) {
    const double bound = mu + excitation;
    const double u_wait = PhiloxUniformDouble(config.Seed, 0, 2 * k);        // in [0, 1)
    const double u_accept = PhiloxUniformDouble(config.Seed, 0, 2 * k + 1);  // in [0, 1)
    const double wait = -std::log1p(-u_wait) / bound;                        // Exp(bound), finite
    const double candidate = t + wait;
    if (!(candidate < horizon)) break;
    excitation *= std::exp(-beta * wait);
    t = candidate;
    const double intensity = mu + excitation;  // lambda(candidate), <= bound
    if (u_accept * bound < intensity) {        // probability intensity / bound
      if (static_cast<int64_t>(events.size()) == limit) {
        // Only reachable without a maximum: one more event than the output can hold.
        ThrowInvalidArgument(kOp, "capacity",
                             "at least the number of simulated events (config.MaxEvents is 0)",
                             fmt::format("{}, but the simulation produced more events", capacity));
      }
      events.push_back(t);
      excitation += alpha;
      if (config.MaxEvents > 0 && static_cast<int64_t>(events.size()) == config.MaxEvents) break;
    }
  }

  for (size_t i = 0; i < events.size(); ++i) {
    Store<double>(times, static_cast<int64_t>(i), dtype, events[i]);
  }
  *eventCount = static_cast<int64_t>(events.size());
}

}  // namespace point_process

void RegisterPointProcess(KernelTable& table) {
  table.PointProcess_HawkesSimulate = &point_process::HawkesSimulate;
}

}  // namespace backplane::cpu::ref
