// backplane bench: throughput of the issue-7 workloads as GB/s or GFLOP/s and as a fraction of
// this machine's measured limits.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "backplane/bench.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/cpu_info.hpp"
#include "backplane/error.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct BenchOptions {
  std::string op;
  std::string format = "md";
  double min_time = 0.3;
};

void RunBench(const BenchOptions& o) {
  auto backend = cpu::CreateBackend();
  const bench::Limits limits = bench::MeasureLimits();
  std::vector<bench::Result> results;
  for (const bench::Workload& w : bench::Workloads()) {
    if (!o.op.empty() && w.op != o.op) continue;
    results.push_back(bench::Run(w, *backend, limits, o.min_time));
  }
  if (!o.op.empty() && results.empty()) ThrowInvalidArgument("backplane bench", "--op", "an op with a workload", o.op);
  if (o.format == "json") {
    nlohmann::json j;
    j["machine"] = {{"cpu", QueryCpuInfo().model}, {"target", limits.target}, {"threads", cpu::NumThreads()},
                    {"peak_gflops", limits.peak_gflops}, {"triad_gbps", limits.triad_gbps}, {"read_gbps", limits.read_gbps}};
    j["results"] = nlohmann::json::array();
    for (const auto& r : results) {
      j["results"].push_back({{"op", r.workload.op}, {"shape", r.workload.shape}, {"seconds", r.seconds},
                              {"gbps", r.gbps}, {"gflops", r.gflops}, {"limit", r.workload.limit}, {"fraction", r.fraction}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  fmt::print("Machine: {}, target {}, {} thread(s). Limits (one thread): peak {:.1f} GFLOP/s f32 FMA, "
             "STREAM triad {:.1f} GB/s, read {:.1f} GB/s.\n\n",
             QueryCpuInfo().model, limits.target, cpu::NumThreads(), limits.peak_gflops, limits.triad_gbps,
             limits.read_gbps);
  fmt::print("| Op | Size | Time | GB/s | GFLOP/s | Fraction of limit |\n|---|---|---|---|---|---|\n");
  for (const auto& r : results) {
    const std::string& limit = r.workload.limit;
    const std::string fraction =
        limit == "none" ? "— (sequential: time only)"
                        : fmt::format("{:.0f}% of {}", 100 * r.fraction,
                                      limit == "fma" ? "peak FMA" : limit == "triad" ? "triad" : "read bandwidth");
    fmt::print("| `{}` | {} | {:.3f} ms | {} | {} | {} |\n", r.workload.op, r.workload.shape, r.seconds * 1e3,
               r.workload.bytes > 0 ? fmt::format("{:.2f}", r.gbps) : "—",
               r.workload.flops > 0 ? fmt::format("{:.1f}", r.gflops) : "—", fraction);
  }
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Throughput of the benchmark workloads against this machine's limits");
  cmd->add_option("--op", o->op, "Only this operation ID");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--min-time", o->min_time, "Seconds to spend per workload")->check(CLI::Range(0.0, 60.0));
  cmd->callback([o] { RunBench(*o); });
}

}  // namespace backplane::cli
