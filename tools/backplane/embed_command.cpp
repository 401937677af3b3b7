// backplane embed: sentence embeddings from a BERT sentence encoder directory (sentence-transformers
// layout) on the CPU backend.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/encoder/bert.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct EmbedOptions {
  std::string model;
  std::vector<std::string> texts;
  std::string file;
  std::string output;
  int threads = 0;
  int64_t batch = 32;
  bool quiet = false;
  bool similarity = false;
};

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::InvalidArgument, "embed", fmt::format("--file {}: cannot open", path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

void RunEmbed(const EmbedOptions& o) {
  if (o.threads > 0) cpu::SetNumThreads(o.threads);
  std::vector<std::string> texts = o.texts;
  if (!o.file.empty()) {
    for (std::string& line : ReadLines(o.file)) texts.push_back(std::move(line));
  }
  if (texts.empty()) throw Error(ErrorCode::InvalidArgument, "embed", "no text: give --text or --file");
  const auto start = std::chrono::steady_clock::now();
  auto backend = cpu::CreateBackend();
  encoder::SentenceEncoder model(o.model, *backend);
  const int64_t hidden = model.config().hidden;
  const auto loaded = std::chrono::steady_clock::now();
  Tensor all(DType::Float32, {static_cast<int64_t>(texts.size()), hidden});
  for (size_t first = 0; first < texts.size(); first += static_cast<size_t>(o.batch)) {
    const size_t last = std::min(texts.size(), first + static_cast<size_t>(o.batch));
    const Tensor e = model.Embed(std::vector<std::string>(texts.begin() + static_cast<ptrdiff_t>(first),
                                                          texts.begin() + static_cast<ptrdiff_t>(last)));
    std::copy_n(e.data_as<float>(), e.numel(), all.data_as<float>() + static_cast<int64_t>(first) * hidden);
  }
  const auto done = std::chrono::steady_clock::now();
  if (!o.output.empty()) io::WriteNpy(o.output, all);
  if (!o.quiet) {
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string line = fmt::format("embedding {}:", i);
      for (int64_t j = 0; j < hidden; ++j) {
        line += fmt::format(" {:.6f}", all.data_as<float>()[static_cast<int64_t>(i) * hidden + j]);
      }
      std::puts(line.c_str());
    }
  }
  if (o.similarity) {
    // Cosine similarities, each row normalised here (the model may not normalise).
    std::vector<double> norms(texts.size());
    const float* e = all.data_as<float>();
    for (size_t i = 0; i < texts.size(); ++i) {
      double sq = 0;
      for (int64_t j = 0; j < hidden; ++j) sq += static_cast<double>(e[i * hidden + j]) * e[i * hidden + j];
      norms[i] = std::sqrt(sq);
    }
    std::puts("cosine similarity:");
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string line = fmt::format("  [{}]", i);
      for (size_t k = 0; k < texts.size(); ++k) {
        double dot = 0;
        for (int64_t j = 0; j < hidden; ++j) dot += static_cast<double>(e[i * hidden + j]) * e[k * hidden + j];
        line += fmt::format(" {:7.4f}", dot / (norms[i] * norms[k]));
      }
      std::puts((line + "  " + texts[i]).c_str());
    }
  }
  std::fflush(stdout);  // the embeddings before the timing line on a shared terminal
  const double load_s = std::chrono::duration<double>(loaded - start).count();
  const double run_s = std::chrono::duration<double>(done - loaded).count();
  std::fprintf(stderr, "embed: %zu texts, dim %lld, load %.2f s, %.1f ms (%.1f sentences/s)%s\n", texts.size(),
               static_cast<long long>(hidden), load_s, run_s * 1e3, static_cast<double>(texts.size()) / run_s,
               o.output.empty() ? "" : fmt::format(", saved {}", o.output).c_str());
}

}  // namespace

void AddEmbedCommand(CLI::App& app) {
  auto o = std::make_shared<EmbedOptions>();
  CLI::App* cmd = app.add_subcommand(
      "embed", "Sentence embeddings from a BERT sentence encoder directory (config.json, vocab.txt, model.safetensors)");
  cmd->add_option("--model,-m", o->model, "Model directory (sentence-transformers layout)")->required();
  cmd->add_option("--text,-t", o->texts, "Texts to embed (one or more)");
  cmd->add_option("--file,-f", o->file, "A file with one text per line");
  cmd->add_option("--output,-o", o->output, "Write the embeddings [n, dim] f32 to this .npy file");
  cmd->add_option("--batch", o->batch, "Texts per forward pass")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--threads", o->threads, "Threads (default: BACKPLANE_NUM_THREADS or all)")->check(CLI::Range(1, 1024));
  cmd->add_flag("--quiet,-q", o->quiet, "Do not print the embeddings");
  cmd->add_flag("--similarity", o->similarity, "Print the cosine similarity of every pair of texts");
  cmd->callback([o] { RunEmbed(*o); });
}

}  // namespace backplane::cli
