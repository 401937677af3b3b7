// backplane generate / backplane perplexity: a GGUF Llama-architecture model on the CPU backend.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "backplane/atomic_file.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/threads.hpp"
#ifdef BACKPLANE_HAVE_CUDA
#include "backplane/cuda/cuda_backend.hpp"
#endif
#include "backplane/device.hpp"
#include "backplane/error.hpp"
#include "backplane/gguf.hpp"
#include "backplane/llm/llama.hpp"
#include "backplane/llm/perplexity.hpp"
#include "backplane/llm/sampler.hpp"
#include "backplane/llm/tokenizer.hpp"
#include "backplane/tensor.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct ModelOptions {
  std::string model;
  int threads = 0;
  int64_t ctx = 2048;
  bool exact = false;
  std::string device = "cpu";
};

void AddModelOptions(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--model,-m", o.model, "GGUF file (Llama architecture)")->required();
  cmd->add_option("--threads,-t", o.threads, "Threads (default: BACKPLANE_NUM_THREADS or all)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--ctx,-c", o.ctx, "KV cache length in tokens (0: the model's training context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--device", o.device, "cpu (default) or cuda[:N]: the device the forward pass runs on");
  cmd->add_flag("--exact", o.exact,
                "Dequantise every weight to f32 at load and compute in f32 (the reference path); "
                "default: products on the file's quantised blocks");
}

struct Loaded {
  std::unique_ptr<Backend> host;  // the CPU backend (the CUDA backend's fallback)
  std::unique_ptr<Backend> backend;
#ifdef BACKPLANE_HAVE_CUDA
  std::unique_ptr<cuda::ManagedTensorScope> managed;  // --device cuda: the model's Tensors in managed memory
#endif
  std::unique_ptr<llm::LlamaModel> model;
  std::unique_ptr<llm::Tokenizer> tokenizer;
  double seconds = 0;
};

Loaded Load(const ModelOptions& o) {
  const Device device = ParseDevice(o.device);
  if (o.threads > 0) cpu::SetNumThreads(o.threads);
  const auto start = Clock::now();
  Loaded l;
  l.host = cpu::CreateBackend();
  llm::LlamaOptions options;
  if (device.kind == DeviceKind::Cuda) {
#ifdef BACKPLANE_HAVE_CUDA
    l.backend = cuda::CreateBackend(device.index, l.host.get());
    l.managed = std::make_unique<cuda::ManagedTensorScope>(device.index);
    options.copy_weights = true;  // the GPU cannot read the file mapping
#else
    throw Error(ErrorCode::DeviceUnavailable, "backplane generate/perplexity", "--device cuda: this build has no CUDA backend");
#endif
  } else if (device.kind == DeviceKind::Cpu) {
    l.backend = cpu::CreateBackend();
  } else {
    ThrowInvalidArgument("backplane generate/perplexity", "--device", "cpu or cuda[:N]", DeviceName(device));
  }
  gguf::File file = gguf::File::Open(o.model);
  l.tokenizer = std::make_unique<llm::Tokenizer>(llm::Tokenizer::FromGguf(file));
  options.context = o.ctx;
  options.path = o.exact ? llm::WeightPath::Exact : llm::WeightPath::Quantized;
  const int64_t train = llm::LlamaConfig::FromGguf(file).train_context;
  if (o.ctx > train) {
    ThrowInvalidArgument("backplane generate", "--ctx", fmt::format("<= the model's training context {}", train),
                         std::to_string(o.ctx));
  }
  l.model = std::make_unique<llm::LlamaModel>(std::move(file), *l.backend, options);
  l.seconds = Seconds(start);
  return l;
}

struct GenerateOptions {
  ModelOptions model;
  std::string prompt;
  std::string chat;
  std::string system;
  int64_t n = 64;
  llm::SamplerOptions sampler;
  bool ignore_eos = false;
  std::string ids_json;  // write prompt/generated ids here
  bool quiet = false;
};

void RunGenerate(const GenerateOptions& o) {
  if (o.prompt.empty() == o.chat.empty()) {
    ThrowInvalidArgument("backplane generate", "--prompt/--chat", "exactly one of them", "both or neither");
  }
  Loaded l = Load(o.model);
  llm::LlamaModel& model = *l.model;
  const llm::Tokenizer& tok = *l.tokenizer;
  std::vector<int32_t> prompt;
  if (!o.chat.empty()) {
    std::vector<llm::ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", o.chat});
    prompt = tok.Encode(tok.ApplyChatTemplate(messages, true), /*add_special=*/false, /*parse_special=*/true);
  } else {
    prompt = tok.Encode(o.prompt, /*add_special=*/true, /*parse_special=*/false);
  }
  if (prompt.empty()) ThrowInvalidArgument("backplane generate", "--prompt", "text that has tokens", "no tokens");
  if (static_cast<int64_t>(prompt.size()) >= model.context()) {
    ThrowInvalidArgument("backplane generate", "--prompt",
                         fmt::format("fewer than --ctx {} tokens", model.context()),
                         fmt::format("{} tokens", prompt.size()));
  }
  llm::Sampler sampler(*l.backend, o.sampler);
  sampler.Remember(prompt);
  const int64_t vocab = model.config().vocab;
  Tensor logits_tensor(DType::Float32, {vocab});  // where the backend can write it (managed memory on CUDA)
  float* logits = logits_tensor.data_as<float>();

  if (!o.quiet) {
    const std::string text = tok.Decode(prompt);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  auto start = Clock::now();
  model.Forward(prompt, logits);
  const double prompt_seconds = Seconds(start);

  std::vector<int32_t> generated;
  start = Clock::now();
  const int64_t budget = std::min(o.n, model.context() - model.position());
  for (int64_t i = 0; i < budget; ++i) {
    const int32_t token = sampler.Sample(logits, vocab);
    generated.push_back(token);
    if (!o.ignore_eos && tok.IsEndOfGeneration(token)) break;
    if (!o.quiet) {
      const std::string piece = tok.Decode(std::span<const int32_t>(&token, 1), /*skip_special=*/false);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    if (i + 1 < budget) model.Forward(std::span<const int32_t>(&token, 1), logits);
  }
  const double gen_seconds = Seconds(start);
  if (!o.quiet) std::fputc('\n', stdout);
  // Decode steps: every generated token but the last was fed back.
  const auto steps = static_cast<double>(generated.size());
  std::fprintf(stderr,
               "\nload %.2f s | prompt %zu tokens, %.1f tokens/s | generation %zu tokens, %.1f tokens/s | "
               "%s path, %s, %d thread(s), ctx %lld\n",
               l.seconds, prompt.size(), static_cast<double>(prompt.size()) / prompt_seconds, generated.size(),
               steps / gen_seconds, o.model.exact ? "exact f32" : "quantised", DeviceName(ParseDevice(o.model.device)).c_str(), cpu::NumThreads(),
               static_cast<long long>(model.context()));
  if (!o.ids_json.empty()) {
    nlohmann::json j{{"prompt", prompt}, {"generated", generated}};
    io::WriteFileAtomically(o.ids_json, {j.dump(), "\n"});
  }
}

struct PerplexityCliOptions {
  ModelOptions model;
  std::string file;
  int64_t chunk = 512;
  int64_t max_chunks = 0;
};

void RunPerplexity(PerplexityCliOptions o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) ThrowInvalidArgument("backplane perplexity", "--file", "a readable text file", o.file);
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  if (!body.empty() && body.back() == '\n') body.pop_back();  // llama.cpp's -f drops one final newline
  o.model.ctx = o.chunk;  // each chunk starts from an empty cache
  Loaded l = Load(o.model);
  llm::PerplexityOptions options;
  options.context = o.chunk;
  options.max_chunks = o.max_chunks;
  const llm::PerplexityResult r =
      llm::Perplexity(*l.model, *l.tokenizer, body, options, [](int64_t chunk, double ppl) {
        std::fprintf(stderr, "[%lld]%.4f ", static_cast<long long>(chunk + 1), ppl);
        std::fflush(stderr);
      });
  std::fprintf(stderr, "\n");
  std::printf("PPL = %.4f (%lld chunks of %lld tokens, %lld predictions scored, %lld text tokens; %.1f s, %.1f tokens/s)\n",
              r.ppl, static_cast<long long>(r.chunks), static_cast<long long>(o.chunk),
              static_cast<long long>(r.scored), static_cast<long long>(r.text_tokens), r.seconds,
              static_cast<double>(r.chunks * o.chunk) / r.seconds);
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text with a GGUF language model (Llama architecture)");
  AddModelOptions(cmd, o->model);
  cmd->add_option("--prompt,-p", o->prompt, "Text to continue");
  cmd->add_option("--chat", o->chat, "A user message, rendered with the model's chat template");
  cmd->add_option("--system", o->system, "System message for --chat (default: the template's)");
  cmd->add_option("-n,--n-predict", o->n, "Tokens to generate")->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--temp", o->sampler.temperature, "Temperature (0: greedy)");
  cmd->add_option("--top-k", o->sampler.top_k, "Top-k (0: off)");
  cmd->add_option("--top-p", o->sampler.top_p, "Top-p (1: off)");
  cmd->add_option("--repeat-penalty", o->sampler.repeat_penalty, "Repetition penalty (1: off)");
  cmd->add_option("--repeat-last-n", o->sampler.repeat_last_n, "Tokens the repetition penalty looks back on");
  cmd->add_option("--seed", o->sampler.seed, "Sampling seed");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_option("--ids-json", o->ids_json, "Write the prompt and generated token ids to this JSON file");
  cmd->add_flag("--quiet,-q", o->quiet, "Do not print the text (timings only)");
  cmd->callback([o] { RunGenerate(*o); });

  auto p = std::make_shared<PerplexityCliOptions>();
  CLI::App* ppl = app.add_subcommand("perplexity", "Perplexity of a text file under a GGUF model (llama.cpp's method)");
  AddModelOptions(ppl, p->model);
  ppl->add_option("--file,-f", p->file, "Text file")->required();
  ppl->add_option("--chunk", p->chunk, "Tokens per chunk (llama-perplexity's -c)")->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  ppl->add_option("--chunks", p->max_chunks, "At most this many chunks (0: all)")->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  ppl->callback([p] { RunPerplexity(*p); });
}

}  // namespace backplane::cli
