// Perplexity on GPL-3 (llama.cpp's method) against the transformers f32 reference of
// tests/golden/gen_smollm2_perplexity.py, and the quantised path against the exact path.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/gguf.hpp"
#include "backplane/llm/perplexity.hpp"
#include "support/golden.hpp"
#include "support/models.hpp"
#include "support/test_size.hpp"

namespace backplane::llm {
namespace {

std::string Gpl3() {
  std::ifstream in("/usr/share/common-licenses/GPL-3", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp reads -f
  return text;
}

// Two chunks of 512 (the whole file is 14; the full run is in docs/performance.md).
constexpr int64_t kChunks = 2;

PerplexityResult RunPerplexity(WeightPath path, int64_t chunks = kChunks) {
  auto backend = cpu::CreateBackend();
  gguf::File file = gguf::File::Open(test::SmolLM2Path());
  const Tokenizer tokenizer = Tokenizer::FromGguf(file);
  LlamaModel model(std::move(file), *backend, LlamaOptions{512, path, 512});
  return Perplexity(model, tokenizer, Gpl3(), PerplexityOptions{512, chunks});
}

TEST(Perplexity, ExactPathMatchesTransformersAndTheQuantisedPathIsWithinHalfAPercent) {
  ASSERT_TRUE(test::ModelPresent(test::SmolLM2Path())) << test::FetchHint(test::SmolLM2Path());
  const nlohmann::json ref = test::LoadGolden("smollm2/perplexity.json");
  const nlohmann::json& r512 = ref["results"][0];
  ASSERT_EQ(r512["n_ctx"].get<int64_t>(), 512);
  const PerplexityResult exact = RunPerplexity(WeightPath::Exact);
  EXPECT_EQ(exact.text_tokens, ref["n_tokens"].get<int64_t>());
  EXPECT_EQ(exact.chunks, kChunks);
  EXPECT_EQ(exact.scored, kChunks * r512["scored_tokens_per_chunk"].get<int64_t>());
  for (int64_t c = 0; c < kChunks; ++c) {
    const double want = r512["chunks"][c]["running_ppl"].get<double>();
    // f32 logits agree with transformers to ~1e-4, so the mean NLL to ~1e-5: 1e-4 relative.
    EXPECT_NEAR(exact.running_ppl[c], want, 1e-4 * want) << "chunk " << c + 1;
  }
  std::printf("perplexity, %lld chunks of 512: exact %.4f, transformers %.4f\n", static_cast<long long>(kChunks),
              exact.ppl, r512["chunks"][kChunks - 1]["running_ppl"].get<double>());
  if (test::LeanTestSize()) {
    // Lean (sanitizer runs): the quantised path over the same two chunks, within 1% of the exact
    // path's value checked above. Two chunks average less than the whole file: measured +0.76%
    // here (17.822 vs 17.687); the 0.5% bound is the whole file's, checked by the plain suite.
    const PerplexityResult fast = RunPerplexity(WeightPath::Quantized, kChunks);
    EXPECT_EQ(fast.chunks, kChunks);
    EXPECT_NEAR(fast.ppl, exact.ppl, 0.01 * exact.ppl);
    return;
  }
  // The quantised path over the whole file (14 chunks) within 0.5% of the exact value, which the
  // check above ties to transformers' f32 run (the reference's full-file PPL).
  const PerplexityResult fast = RunPerplexity(WeightPath::Quantized, 0);
  const double want = r512["ppl"].get<double>();
  EXPECT_EQ(fast.chunks, r512["n_chunk"].get<int64_t>());
  EXPECT_NEAR(fast.ppl, want, 0.005 * want);
  std::printf("perplexity, whole file: quantised %.4f, exact (transformers) %.4f: %+.3f%%\n", fast.ppl, want,
              100 * (fast.ppl / want - 1));
}

TEST(Perplexity, TooShortTextIsRefused) {
  ASSERT_TRUE(test::ModelPresent(test::SmolLM2Path())) << test::FetchHint(test::SmolLM2Path());
  auto backend = cpu::CreateBackend();
  gguf::File file = gguf::File::Open(test::SmolLM2Path());
  const Tokenizer tokenizer = Tokenizer::FromGguf(file);
  LlamaModel model(std::move(file), *backend, LlamaOptions{64, WeightPath::Quantized, 64});
  EXPECT_THROW(Perplexity(model, tokenizer, "too short", PerplexityOptions{64, 0}), Error);
  EXPECT_THROW(Perplexity(model, tokenizer, Gpl3(), PerplexityOptions{128, 0}), Error);  // > the cache
}

}  // namespace
}  // namespace backplane::llm
