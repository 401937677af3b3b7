#include "backplane/llm/perplexity.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "backplane/error.hpp"
#include "backplane/tensor.hpp"

namespace backplane::llm {

PerplexityResult Perplexity(LlamaModel& model, const Tokenizer& tokenizer, std::string_view text,
                            const PerplexityOptions& options, const std::function<void(int64_t, double)>& progress) {
  constexpr const char* op = "llm.Perplexity";
  const int64_t n_ctx = options.context;
  if (n_ctx < 4 || n_ctx > model.context()) {
    ThrowInvalidArgument(op, "context", fmt::format("in [4, {}] (the model's KV cache)", model.context()),
                         std::to_string(n_ctx));
  }
  if (options.max_chunks < 0) ThrowInvalidArgument(op, "max_chunks", ">= 0", std::to_string(options.max_chunks));
  const bool add_bos = tokenizer.vocabulary().add_bos && tokenizer.bos() >= 0;
  const std::vector<int32_t> tokens = tokenizer.Encode(text, /*add_special=*/true, /*parse_special=*/false);
  PerplexityResult r;
  r.text_tokens = static_cast<int64_t>(tokens.size());
  int64_t chunks = r.text_tokens / n_ctx;
  if (options.max_chunks > 0) chunks = std::min(chunks, options.max_chunks);
  if (chunks < 1) {
    ThrowInvalidArgument(op, "text", fmt::format("at least {} tokens (one chunk of the context)", n_ctx),
                         fmt::format("{} tokens", r.text_tokens));
  }
  const int64_t vocab = model.config().vocab;
  const int64_t first = n_ctx / 2;
  // A Tensor, so that it lives where the model's backend can write it (managed memory on CUDA).
  Tensor logits_tensor(DType::Float32, {n_ctx * vocab});
  float* logits = logits_tensor.data_as<float>();
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  double nll_sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < chunks; ++c) {
    const int32_t* begin = tokens.data() + c * n_ctx;
    chunk.assign(begin, begin + n_ctx);
    if (add_bos) chunk[0] = tokenizer.bos();
    model.Reset();
    model.Forward(chunk, logits, /*all_logits=*/true);
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const float* row = logits + j * vocab;
      double peak = row[0];
      for (int64_t v = 1; v < vocab; ++v) peak = std::max(peak, static_cast<double>(row[v]));
      double sum = 0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - peak);
      const int32_t next = begin[j + 1];
      nll_sum += std::log(sum) + peak - static_cast<double>(row[next]);
      ++r.scored;
    }
    ++r.chunks;
    r.running_ppl.push_back(std::exp(nll_sum / static_cast<double>(r.scored)));
    if (progress) progress(c, r.running_ppl.back());
  }
  model.Reset();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.nll = nll_sum / static_cast<double>(r.scored);
  r.ppl = std::exp(r.nll);
  return r;
}

}  // namespace backplane::llm
