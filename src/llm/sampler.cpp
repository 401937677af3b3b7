#include "backplane/llm/sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backplane/error.hpp"

namespace backplane::llm {

Sampler::Sampler(Backend& backend, SamplerOptions options) : backend_(backend), options_(options) {
  constexpr const char* op = "llm.Sampler";
  if (!(std::isfinite(options.temperature) && options.temperature >= 0)) {
    ThrowInvalidArgument(op, "temperature", "finite and >= 0 (0 is greedy)", fmt::format("{}", options.temperature));
  }
  if (options.top_k < 0) ThrowInvalidArgument(op, "top_k", ">= 0 (0 is the whole vocabulary)", std::to_string(options.top_k));
  if (!(options.top_p > 0 && options.top_p <= 1)) {
    ThrowInvalidArgument(op, "top_p", "in (0, 1]", fmt::format("{}", options.top_p));
  }
  if (!(std::isfinite(options.repeat_penalty) && options.repeat_penalty > 0)) {
    ThrowInvalidArgument(op, "repeat_penalty", "finite and > 0 (1 is off)", fmt::format("{}", options.repeat_penalty));
  }
  if (options.repeat_last_n < 0) ThrowInvalidArgument(op, "repeat_last_n", ">= 0", std::to_string(options.repeat_last_n));
}

void Sampler::Remember(std::span<const int32_t> tokens) {
  for (const int32_t t : tokens) {
    recent_.push_back(t);
    while (static_cast<int64_t>(recent_.size()) > options_.repeat_last_n) recent_.pop_front();
  }
}

int32_t Sampler::Sample(float* logits, int64_t vocab) {
  // Repetition penalty as in llama.cpp and CTRL: a positive logit of a recent token is divided by
  // the penalty, a negative one multiplied (each distinct token once).
  if (options_.repeat_penalty != 1.0f && !recent_.empty()) {
    std::vector<int32_t> seen(recent_.begin(), recent_.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (const int32_t t : seen) {
      if (t < 0 || t >= vocab) continue;
      float& l = logits[t];
      l = l > 0 ? l / options_.repeat_penalty : l * options_.repeat_penalty;
    }
  }
  SamplingConfig config;
  config.Temperature = options_.temperature;
  config.Seed = options_.seed + draws_++;
  int32_t token = 0;
  SamplingSurface& s = backend_.Sampling();
  if (options_.temperature == 0.0f) {
    token = s.GreedySample(logits, vocab, DType::Float32);
  } else if (options_.top_p < 1.0f) {
    if (options_.top_k > 0 && options_.top_k < vocab) {
      // top-k first: everything below the k-th largest logit leaves the distribution.
      std::vector<float> sorted(logits, logits + vocab);
      std::nth_element(sorted.begin(), sorted.begin() + (options_.top_k - 1), sorted.end(), std::greater<float>());
      const float kth = sorted[static_cast<size_t>(options_.top_k - 1)];
      for (int64_t i = 0; i < vocab; ++i) {
        if (logits[i] < kth) logits[i] = -std::numeric_limits<float>::infinity();
      }
    }
    config.TopP = options_.top_p;
    token = s.TopPSample(config, logits, vocab, DType::Float32);
  } else {
    config.TopK = options_.top_k;
    token = s.TopKSample(config, logits, vocab, DType::Float32);
  }
  Remember(std::span<const int32_t>(&token, 1));
  return token;
}

}  // namespace backplane::llm
