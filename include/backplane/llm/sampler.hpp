// Next-token sampling through the catalog's Sampling methods: greedy (temperature 0),
// temperature, top-k, top-p and a repetition penalty, seeded and reproducible (draw i of a run
// uses seed + i).
#pragma once

#include <cstdint>
#include <deque>
#include <span>

#include "backplane/backend/backend.hpp"

namespace backplane::llm {

struct SamplerOptions {
  float temperature = 0.0f;     // 0: greedy
  int64_t top_k = 0;            // 0: the whole vocabulary
  float top_p = 1.0f;           // 1: no nucleus cut
  float repeat_penalty = 1.0f;  // 1: off; > 1 discourages the last `repeat_last_n` tokens
  int64_t repeat_last_n = 64;
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws InvalidArgument naming the option when out of range.
  Sampler(Backend& backend, SamplerOptions options);
  // Picks the next token from logits[vocab] (modified in place by the penalty and the top-k cut)
  // and remembers it for the repetition penalty.
  int32_t Sample(float* logits, int64_t vocab);
  // Tokens the penalty should see before the first sample (e.g. the prompt).
  void Remember(std::span<const int32_t> tokens);

 private:
  Backend& backend_;
  SamplerOptions options_;
  std::deque<int32_t> recent_;
  uint64_t draws_ = 0;
};

}  // namespace backplane::llm
