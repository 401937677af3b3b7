// backplane bench: throughput of the kernel workloads as GB/s or GFLOP/s and as a fraction of
// this machine's limits measured at the same thread count, at each of --threads (default 1 and 2).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "backplane/bench.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/cpu_info.hpp"
#include "backplane/gguf.hpp"
#include "backplane/encoder/encoder_bench.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/error.hpp"
#include "backplane/llm/model_bench.hpp"
#include "backplane/llama_cpp_peer.hpp"
#include "bench_device.hpp"
#ifdef BACKPLANE_HAVE_CUDA
#include "backplane/cuda/cuda_backend.hpp"
#endif
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct BenchOptions {
  std::string op;
  std::string format = "md";
  double min_time = 0.3;
  std::string model;  // --model: the LLM family instead of the kernel workloads
  std::string embed_model;  // --embed-model: a sentence encoder directory
  std::string onnx_model;   // --onnx-model: an ONNX graph
  std::vector<int> threads{1, 2};
  std::string device = "cpu";  // --device: graphs on a device beside the CPU backend
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

// Sentences/s of a sentence encoder at batch {1, 32} x sequence {16, 128} at each thread count,
// with onnxruntime on the same model exported to ONNX (bench/minilm/setup.sh) in the same run.
void RunEmbedBench(const BenchOptions& o) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 16}, {1, 128}, {32, 16}, {32, 128}};
  const char* cache_env = std::getenv("BACKPLANE_CACHE");
  const char* home = std::getenv("HOME");
  const std::string cache = cache_env != nullptr && *cache_env != '\0'
                                ? cache_env
                                : std::string(home != nullptr ? home : ".") + "/.cache/backplane";
  const std::string python = cache + "/peers/minilm-venv/bin/python";
  const std::string onnx_model = cache + "/peers/all-MiniLM-L6-v2.onnx";
  const std::string script = std::string(BACKPLANE_SOURCE_DIR) + "/bench/minilm/onnxruntime_peer.py";
  nlohmann::json rows = nlohmann::json::array();
  if (o.format == "md") {
    fmt::print("Encoder {}, CPU {}.\n\n", o.embed_model, QueryCpuInfo().model);
    fmt::print("| Batch x seq | Threads | Backplane sentences/s | onnxruntime sentences/s | Ratio |\n|---|---|---|---|---|\n");
  }
  for (const int threads : o.threads) {
    cpu::SetNumThreads(threads);
    auto backend = cpu::CreateBackend();
    encoder::SentenceEncoder model(o.embed_model, *backend);
    std::vector<encoder::EncoderBenchResult> ours;
    for (const auto& [b, s] : shapes) ours.push_back(encoder::BenchEncoder(model, b, s));
    std::string why;
    const auto peer = encoder::RunOnnxRuntimePeer(python, script, onnx_model, threads, shapes, &why);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const double theirs = peer ? peer->results[i].sentences_per_s : 0;
      if (o.format == "md") {
        fmt::print("| {} x {} | {} | {:.1f} | {} | {} |\n", shapes[i].first, shapes[i].second, threads,
                   ours[i].sentences_per_s, theirs > 0 ? fmt::format("{:.1f}", theirs) : "— (" + why + ")",
                   theirs > 0 ? fmt::format("{:.2f}x", ours[i].sentences_per_s / theirs) : "—");
      }
      rows.push_back({{"batch", shapes[i].first}, {"seq", shapes[i].second}, {"threads", threads},
                      {"sentences_per_s", ours[i].sentences_per_s}, {"onnxruntime_sentences_per_s", theirs},
                      {"onnxruntime", peer ? peer->version : why}});
    }
  }
  if (o.format == "json") std::cout << nlohmann::json{{"model", o.embed_model}, {"results", rows}}.dump(2) << "\n";
}

std::string CacheDir() {
  const char* cache = std::getenv("BACKPLANE_CACHE");
  const char* home = std::getenv("HOME");
  return cache != nullptr && *cache != '\0' ? cache : std::string(home != nullptr ? home : ".") + "/.cache/backplane";
}

// Runs/s of an imported ONNX model (each float input arange(n) / n, as ONNX's runner feeds the
// light zoo) at each thread count, beside onnxruntime on the same file (bench/onnx/onnxruntime_peer.py).
void RunOnnxBench(const BenchOptions& o) {
  const std::string python = CacheDir() + "/peers/minilm-venv/bin/python";
  const std::string script = std::string(BACKPLANE_SOURCE_DIR) + "/bench/onnx/onnxruntime_peer.py";
  if (o.format == "md") {
    fmt::print("Model {}, CPU {}.\n\n| Threads | Backplane runs/s | onnxruntime runs/s | Ratio |\n|---|---|---|---|\n",
               o.onnx_model, QueryCpuInfo().model);
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const int threads : o.threads) {
    cpu::SetNumThreads(threads);
    auto backend = cpu::CreateBackend();
    onnx::ImportResult imported = onnx::ImportOnnx(o.onnx_model);
    std::map<std::string, Tensor> inputs;
    for (const ir::ValueSpec& spec : imported.graph.inputs) {
      Shape shape;
      for (const ir::Dim& d : spec.shape) shape.push_back(d.symbol.empty() ? d.size : 1);
      Tensor x(spec.dtype, shape);
      for (int64_t i = 0; i < x.numel(); ++i) x.SetDouble(i, static_cast<double>(i) / static_cast<double>(x.numel()));
      inputs[spec.name] = x;
    }
    runtime::Executor executor(std::move(imported.graph), *backend);
    executor.LoadParams(imported.initializers);
    using Clock = std::chrono::steady_clock;
    executor.Run(inputs);
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < 1.0) {
      const auto t0 = Clock::now();
      executor.Run(inputs);
      times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double ours = 1.0 / times[times.size() / 2];
    double theirs = 0;
    std::string peer = "not set up (bench/minilm/setup.sh)";
    if (std::filesystem::exists(python)) {
      const std::string command = fmt::format("'{}' '{}' '{}' {} 2>/dev/null", python, script, o.onnx_model, threads);
      if (FILE* pipe = popen(command.c_str(), "r")) {
        std::string out;
        char buffer[4096];
        for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0 && out.size() < (1u << 20);) out.append(buffer, n);
        const int status = pclose(pipe);
        try {
          const nlohmann::json j = nlohmann::json::parse(out);
          theirs = j.at("runs_per_s").get<double>();
          peer = j.at("peer").get<std::string>();
        } catch (const nlohmann::json::exception&) {
          peer = fmt::format("peer failed (status {})", status);
        }
      }
    }
    if (o.format == "md") {
      fmt::print("| {} | {:.2f} | {} | {} |\n", threads, ours, theirs > 0 ? fmt::format("{:.2f}", theirs) : "— (" + peer + ")",
                 theirs > 0 ? fmt::format("{:.2f}x", ours / theirs) : "—");
    }
    rows.push_back({{"threads", threads}, {"runs_per_s", ours}, {"onnxruntime_runs_per_s", theirs}, {"onnxruntime", peer}});
  }
  if (o.format == "json") std::cout << nlohmann::json{{"model", o.onnx_model}, {"results", rows}}.dump(2) << "\n";
}

void RunBench(const BenchOptions& o) {
#ifdef BACKPLANE_HAVE_CUDA
  if (o.device.starts_with("cuda") && o.format != "json") {
    const Device cuda_device = ParseDevice(o.device);
    std::cout << "## CUDA kernels\n\n" << cuda::KernelBenchMarkdown(cuda_device.index, o.min_time) << "\n## Graphs\n\n";
  }
#endif
  if (o.device != "cpu") return RunDeviceBench(o.device, o.onnx_model, o.min_time, o.format);
  if (!o.model.empty()) return RunModelBench(o);
  if (!o.onnx_model.empty()) return RunOnnxBench(o);
  if (!o.embed_model.empty()) return RunEmbedBench(o);
  // Every workload at every thread count; the limits are measured at each count with all threads busy.
  struct Row {
    bench::Result result;
    int threads;
    double speedup;  // time on one thread / time here; 0 when one thread was not run
    size_t index;    // position in bench::Workloads()
  };
  std::vector<Row> rows;
  std::vector<bench::Limits> limits;
  std::map<std::pair<std::string, std::string>, double> one_thread;  // (op, shape) -> seconds
  for (const int threads : o.threads) {
    cpu::SetNumThreads(threads);
    auto backend = cpu::CreateBackend();
    limits.push_back(bench::MeasureLimits());
    const std::vector<bench::Workload> workloads = bench::Workloads();
    for (size_t i = 0; i < workloads.size(); ++i) {
      const bench::Workload& w = workloads[i];
      if (!o.op.empty() && w.op != o.op) continue;
      Row row{bench::Run(w, *backend, limits.back(), o.min_time), threads, 0.0, i};
      const auto key = std::make_pair(w.op, w.shape);
      if (threads == 1) one_thread[key] = row.result.seconds;
      if (one_thread.count(key) != 0) row.speedup = one_thread[key] / row.result.seconds;
      rows.push_back(row);
    }
    if (!o.op.empty() && rows.empty()) ThrowInvalidArgument("backplane bench", "--op", "an op with a workload", o.op);
  }
  // Rows of one workload together, thread counts in the order given.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return x.index < y.index;
  });
  if (o.format == "json") {
    nlohmann::json j;
    j["machine"] = {{"cpu", QueryCpuInfo().model}, {"target", limits.front().target}};
    j["limits"] = nlohmann::json::array();
    for (const auto& l : limits) {
      j["limits"].push_back({{"threads", l.threads}, {"peak_gflops", l.peak_gflops}, {"triad_gbps", l.triad_gbps},
                             {"read_gbps", l.read_gbps}});
    }
    j["results"] = nlohmann::json::array();
    for (const Row& row : rows) {
      const bench::Result& r = row.result;
      const int threads = row.threads;
      const double speedup = row.speedup;
      j["results"].push_back({{"op", r.workload.op}, {"shape", r.workload.shape}, {"threads", threads},
                              {"seconds", r.seconds}, {"gbps", r.gbps}, {"gflops", r.gflops}, {"limit", r.workload.limit},
                              {"fraction", r.fraction}, {"speedup_vs_1_thread", speedup}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  fmt::print("Machine: {}, target {}.\n", QueryCpuInfo().model, limits.front().target);
  for (const auto& l : limits) {
    fmt::print("Limits on {} thread(s), all busy: peak {:.1f} GFLOP/s f32 FMA, STREAM triad {:.1f} GB/s, read {:.1f} GB/s.\n",
               l.threads, l.peak_gflops, l.triad_gbps, l.read_gbps);
  }
  fmt::print("\n| Op | Size | Threads | Time | GB/s | GFLOP/s | Fraction of limit | vs 1 thread |\n"
             "|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    const bench::Result& r = row.result;
    const int threads = row.threads;
    const double speedup = row.speedup;
    const std::string& limit = r.workload.limit;
    const std::string fraction =
        limit == "none" ? "— (sequential: time only)"
                        : fmt::format("{:.0f}% of {}", 100 * r.fraction,
                                      limit == "fma" ? "peak FMA" : limit == "triad" ? "triad" : "read bandwidth");
    fmt::print("| `{}` | {} | {} | {:.3f} ms | {} | {} | {} | {} |\n", r.workload.op, r.workload.shape, threads,
               r.seconds * 1e3, r.workload.bytes > 0 ? fmt::format("{:.2f}", r.gbps) : "—",
               r.workload.flops > 0 ? fmt::format("{:.1f}", r.gflops) : "—", fraction,
               speedup > 0 && threads != 1 ? fmt::format("{:.2f}x", speedup) : "—");
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
  cmd->add_option("--embed-model", o->embed_model,
                  "A sentence encoder directory: time batch {1, 32} x seq {16, 128} beside onnxruntime");
  cmd->add_option("--onnx-model", o->onnx_model, "An ONNX model: runs/s on ONNX's dummy input beside onnxruntime");
  cmd->add_option("--threads", o->threads, "Thread counts to run at (default 1,2)")->delimiter(',')->check(CLI::Range(1, 1024));
  cmd->add_option("--device", o->device,
                  "xla[:N] or cuda[:N]: the transformer block, a digits training step (and --onnx-model) on the device beside "
                  "the CPU backend, compile time apart");
  cmd->callback([o] { RunBench(*o); });
}

}  // namespace backplane::cli
