#include "backplane/llm/model_bench.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "backplane/error.hpp"

namespace backplane::llm {
namespace {

struct Stats {
  double mean = 0, stddev = 0;
};

Stats Of(const std::vector<double>& v) {
  Stats s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double sq = 0;
  for (const double x : v) sq += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

}  // namespace

ModelBenchResult BenchModel(LlamaModel& model, int64_t nPrompt, int64_t nGen, int repetitions) {
  if (nPrompt < 1 || nGen < 1 || nPrompt > model.context() || nGen > model.context() || repetitions < 1) {
    ThrowInvalidArgument("llm.BenchModel", "nPrompt/nGen/repetitions",
                         "positive, and token counts within the context", "out of range");
  }
  const int64_t vocab = model.config().vocab;
  std::vector<int32_t> prompt(static_cast<size_t>(nPrompt));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int32_t& t : prompt) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  std::vector<float> logits(static_cast<size_t>(vocab));
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::vector<double> pp, tg;
  for (int r = 0; r <= repetitions; ++r) {  // run 0 warms up
    model.Reset();
    auto t0 = Clock::now();
    model.Forward(prompt, logits.data());
    const double p = seconds(t0);
    model.Reset();
    t0 = Clock::now();
    int32_t token = prompt[0];
    for (int64_t i = 0; i < nGen; ++i) {
      model.Forward(std::span<const int32_t>(&token, 1), logits.data());
      token = prompt[static_cast<size_t>((i + 1) % nPrompt)];
    }
    const double g = seconds(t0);
    if (r == 0) continue;
    pp.push_back(static_cast<double>(nPrompt) / p);
    tg.push_back(static_cast<double>(nGen) / g);
  }
  model.Reset();
  const Stats p = Of(pp), g = Of(tg);
  return {p.mean, p.stddev, g.mean, g.stddev, repetitions};
}

int64_t PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace backplane::llm
