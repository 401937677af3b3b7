// Perplexity of a text under a model, measured the way llama.cpp's llama-perplexity does:
// the text is tokenised once (with BOS when the vocabulary adds one); it is cut into
// floor(tokens / context) chunks of `context` tokens; each chunk is evaluated from an empty cache,
// its first token replaced by BOS when the vocabulary adds one; only the second half of each chunk
// is scored: positions j in [context/2, context - 1) predict token j + 1, contributing
// -log softmax(logits_j)[token_{j+1}] (in double). PPL = exp(mean of those terms over all chunks).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "backplane/llm/llama.hpp"
#include "backplane/llm/tokenizer.hpp"

namespace backplane::llm {

struct PerplexityOptions {
  int64_t context = 512;  // tokens per chunk (must be <= the model's KV cache, >= 4)
  int64_t max_chunks = 0; // 0: every whole chunk of the text
};

struct PerplexityResult {
  int64_t text_tokens = 0;
  int64_t chunks = 0;
  int64_t scored = 0;                 // predictions scored
  double nll = 0;                     // mean negative log-likelihood
  double ppl = 0;                     // exp(nll)
  std::vector<double> running_ppl;    // after each chunk
  double seconds = 0;                 // evaluation time (tokenising excluded)
};

// `progress` (optional) is called after each chunk with its index and the running PPL.
PerplexityResult Perplexity(LlamaModel& model, const Tokenizer& tokenizer, std::string_view text,
                            const PerplexityOptions& options,
                            const std::function<void(int64_t, double)>& progress = {});

}  // namespace backplane::llm
