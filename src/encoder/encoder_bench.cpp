#include "backplane/encoder/encoder_bench.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"

namespace backplane::encoder {

EncoderBenchResult BenchEncoder(SentenceEncoder& encoder, int64_t batch, int64_t seq) {
  const int64_t vocab = encoder.config().vocab;
  Tensor ids(DType::Int32, {batch, seq}), types(DType::Int32, {batch, seq}), mask(DType::Float32, {batch, seq});
  for (int64_t i = 0; i < batch * seq; ++i) {
    // Ids past the special tokens, from a fixed Philox stream.
    ids.data_as<int32_t>()[i] = static_cast<int32_t>(1000 + PhiloxUniformDouble(7, 1, static_cast<uint64_t>(i)) *
                                                                static_cast<double>(vocab - 1000 - 1));
    mask.data_as<float>()[i] = 1.0f;
  }
  using Clock = std::chrono::steady_clock;
  encoder.EmbedTokens(ids, types, mask);
  std::vector<double> times;
  const auto start = Clock::now();
  while (times.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < 1.0) {
    const auto t0 = Clock::now();
    encoder.EmbedTokens(ids, types, mask);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  return {batch, seq, cpu::NumThreads(), static_cast<double>(batch) / median, static_cast<int>(times.size())};
}

std::optional<OrtPeer> RunOnnxRuntimePeer(const std::string& python, const std::string& script,
                                          const std::string& onnx_model, int threads,
                                          const std::vector<std::pair<int64_t, int64_t>>& shapes,
                                          std::string* why_not) {
  auto fail = [&](const std::string& why) -> std::optional<OrtPeer> {
    if (why_not != nullptr) *why_not = why;
    return std::nullopt;
  };
  namespace fs = std::filesystem;
  if (!fs::exists(python)) return fail(fmt::format("no peer python {} (run bench/minilm/setup.sh)", python));
  if (!fs::exists(onnx_model)) return fail(fmt::format("no {} (run bench/minilm/setup.sh)", onnx_model));
  std::string command = fmt::format("'{}' '{}' '{}' {}", python, script, onnx_model, threads);
  for (const auto& [b, s] : shapes) command += fmt::format(" {} {}", b, s);
  command += " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return fail("popen failed");
  std::string output;
  std::array<char, 4096> buffer;
  for (size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0 && output.size() < (size_t{1} << 20);) {
    output.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail(fmt::format("peer exited with status {}", status));
  try {
    const nlohmann::json j = nlohmann::json::parse(output);
    OrtPeer peer;
    peer.version = j.at("peer").get<std::string>();
    for (const auto& r : j.at("results")) {
      const double sps = r.at("sentences_per_s").get<double>();
      if (!std::isfinite(sps) || sps <= 0) return fail("peer reported a non-positive rate");
      peer.results.push_back({r.at("batch").get<int64_t>(), r.at("seq").get<int64_t>(), r.at("threads").get<int64_t>(),
                              sps, r.at("runs").get<int>()});
    }
    if (peer.results.size() != shapes.size()) return fail("peer reported a different number of shapes");
    return peer;
  } catch (const nlohmann::json::exception& e) {
    return fail(fmt::format("peer output is not the expected JSON ({})", e.what()));
  }
}

}  // namespace backplane::encoder
