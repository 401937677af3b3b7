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
#include "backplane/gguf.hpp"
#include "backplane/error.hpp"
#include "backplane/llm/model_bench.hpp"
#include "backplane/llama_cpp_peer.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct BenchOptions {
  std::string op;
  std::string format = "md";
  double min_time = 0.3;
  std::string model;  // --model: the LLM family instead of the kernel workloads
  std::vector<int> threads{1, 2};
};

// Prompt processing (128 tokens) and generation (64 tokens) of a GGUF model at each thread
// count, with llama.cpp's llama-bench on the same file and thread count in the same run.
void RunModelBench(const BenchOptions& o) {
  constexpr int kPrompt = 128, kGen = 64;
  const int64_t file_bytes = static_cast<int64_t>(gguf::File::Open(o.model).size());
  nlohmann::json rows = nlohmann::json::array();
  if (o.format == "md") {
    fmt::print("Model {} ({:.1f} MiB), CPU {}.\n\n", o.model, file_bytes / 1048576.0, QueryCpuInfo().model);
    fmt::print("| Test | Threads | Backplane tokens/s | llama.cpp tokens/s | Ratio |\n|---|---|---|---|---|\n");
  }
  for (const int threads : o.threads) {
    cpu::SetNumThreads(threads);
    auto backend = cpu::CreateBackend();
    llm::LlamaOptions options;
    options.context = kPrompt + kGen;
    llm::LlamaModel model(gguf::File::Open(o.model), *backend, options);
    const llm::ModelBenchResult ours = llm::BenchModel(model, kPrompt, kGen);
    std::string why;
    const auto peer = bench::RunLlamaBench(o.model, threads, kPrompt, kGen, &why);
    // llama.cpp's rates (0 when the peer did not run).
    double peer_pp = 0, peer_pp_sd = 0, peer_tg = 0, peer_tg_sd = 0;
    if (peer && peer->prompt) peer_pp = peer->prompt->tokensPerSecond, peer_pp_sd = peer->prompt->tokensPerSecondStddev;
    if (peer && peer->generation) {
      peer_tg = peer->generation->tokensPerSecond, peer_tg_sd = peer->generation->tokensPerSecondStddev;
    }
    auto cell = [&](double tps, double sd) {
      return tps > 0 ? fmt::format("{:.1f} ± {:.1f}", tps, sd) : "— (" + why + ")";
    };
    auto ratio = [](double mine, double theirs) { return theirs > 0 ? fmt::format("{:.2f}x", mine / theirs) : "—"; };
    if (o.format == "md") {
      fmt::print("| pp{} | {} | {:.1f} ± {:.1f} | {} | {} |\n", kPrompt, threads, ours.prompt_tps, ours.prompt_tps_stddev,
                 cell(peer_pp, peer_pp_sd), ratio(ours.prompt_tps, peer_pp));
      fmt::print("| tg{} | {} | {:.1f} ± {:.1f} | {} | {} |\n", kGen, threads, ours.generation_tps,
                 ours.generation_tps_stddev, cell(peer_tg, peer_tg_sd), ratio(ours.generation_tps, peer_tg));
    }
    rows.push_back({{"threads", threads},
                    {"pp_tps", ours.prompt_tps},
                    {"tg_tps", ours.generation_tps},
                    {"llama_cpp_pp_tps", peer_pp},
                    {"llama_cpp_tg_tps", peer_tg},
                    {"llama_cpp", peer ? peer->buildCommit : why}});
  }
  if (o.format == "json") {
    std::cout << nlohmann::json{{"model", o.model}, {"file_bytes", file_bytes}, {"results", rows}}.dump(2) << "\n";
  } else {
    fmt::print("\nPeak resident memory of this process: {:.1f} MiB (file {:.1f} MiB).\n",
               llm::PeakResidentBytes() / 1048576.0, file_bytes / 1048576.0);
  }
}

void RunBench(const BenchOptions& o) {
  if (!o.model.empty()) return RunModelBench(o);
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
  cmd->add_option("--model", o->model,
                  "A GGUF LM: time prompt processing (128 tokens) and generation (64 tokens) beside llama.cpp");
  cmd->add_option("--threads", o->threads, "Thread counts for --model")->delimiter(',');
  cmd->callback([o] { RunBench(*o); });
}

}  // namespace backplane::cli
