// The Llama forward pass: SmolLM2-135M against Hugging Face transformers (the committed reference
// of tests/golden/gen_smollm2_reference.py), the quantised path against the exact one, the KV
// cache against a full recompute, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/gguf.hpp"
#include "backplane/llm/llama.hpp"
#include "support/golden.hpp"
#include "support/gguf_writer.hpp"
#include "support/models.hpp"

namespace backplane::llm {
namespace {

using test::GgufWriter;

nlohmann::json Reference() { return test::LoadGolden("smollm2/reference.json"); }

std::vector<int32_t> Ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Exact-path logits against transformers' f32 run: both are f32 computations of the same
// dequantised weights and differ only by summation order (30 layers); the reference's own
// cached-vs-uncached runs differ by 5e-5. Bound: 2e-3 absolute on logits of magnitude <= 30.
constexpr double kExactLogitTolerance = 2e-3;

class SmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::ModelPresent(test::SmolLM2Path())) return;
    backend_ = cpu::CreateBackend().release();
    LlamaOptions exact;
    exact.context = 64;
    exact.path = WeightPath::Exact;
    exact_ = new LlamaModel(gguf::File::Open(test::SmolLM2Path()), *backend_, exact);
    LlamaOptions fast = exact;
    fast.path = WeightPath::Quantized;
    fast_ = new LlamaModel(gguf::File::Open(test::SmolLM2Path()), *backend_, fast);
  }
  static void TearDownTestSuite() {
    delete exact_;
    delete fast_;
    delete backend_;
    exact_ = fast_ = nullptr;
    backend_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(test::ModelPresent(test::SmolLM2Path())) << test::FetchHint(test::SmolLM2Path());
    exact_->Reset();
    fast_->Reset();
  }

  // Greedy decoding of `steps` tokens after `prompt`; logits of every step in `step_logits`.
  static std::vector<int32_t> Greedy(LlamaModel& m, const std::vector<int32_t>& prompt, int steps,
                                     std::vector<std::vector<float>>* step_logits = nullptr) {
    const int64_t vocab = m.config().vocab;
    std::vector<float> logits(static_cast<size_t>(vocab));
    m.Reset();
    m.Forward(prompt, logits.data());
    std::vector<int32_t> out;
    for (int i = 0; i < steps; ++i) {
      if (step_logits) step_logits->push_back(logits);
      const int32_t t = Argmax(logits);
      out.push_back(t);
      if (i + 1 < steps) m.Forward(std::span<const int32_t>(&t, 1), logits.data());
    }
    return out;
  }

  static Backend* backend_;
  static LlamaModel* exact_;
  static LlamaModel* fast_;
};

Backend* SmolLM2::backend_ = nullptr;
LlamaModel* SmolLM2::exact_ = nullptr;
LlamaModel* SmolLM2::fast_ = nullptr;

TEST_F(SmolLM2, ConfigFromMetadata) {
  const nlohmann::json c = Reference()["config"];
  const LlamaConfig& got = exact_->config();
  EXPECT_EQ(got.architecture, "llama");
  EXPECT_EQ(got.layers, c["num_hidden_layers"].get<int64_t>());
  EXPECT_EQ(got.hidden, c["hidden_size"].get<int64_t>());
  EXPECT_EQ(got.heads, c["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(got.kv_heads, c["num_key_value_heads"].get<int64_t>());
  EXPECT_EQ(got.head_dim, c["head_dim"].get<int64_t>());
  EXPECT_EQ(got.ffn, c["intermediate_size"].get<int64_t>());
  EXPECT_EQ(got.vocab, c["vocab_size"].get<int64_t>());
  EXPECT_EQ(got.tied_output, c["tie_word_embeddings"].get<bool>());
  EXPECT_FLOAT_EQ(static_cast<float>(got.rms_eps), c["rms_norm_eps"].get<float>());
  EXPECT_DOUBLE_EQ(got.rope_theta, c["rope_theta"].get<double>());
}

TEST_F(SmolLM2, ExactPathPromptLogitsMatchTransformers) {
  const nlohmann::json p = Reference()["prompt"];
  const std::vector<int32_t> ids = Ids(p["ids_fed"]);
  ASSERT_EQ(ids, (std::vector<int32_t>{6403, 1980, 253, 655, 28, 665, 436, 253, 1838}));
  const int64_t vocab = exact_->config().vocab;
  std::vector<float> logits(ids.size() * static_cast<size_t>(vocab));
  exact_->Forward(ids, logits.data(), /*all_logits=*/true);
  const std::vector<int32_t> probes = Ids(p["probe_ids"]);
  double worst = 0;
  for (const auto& pos : p["positions"]) {
    const int64_t at = pos["pos"].get<int64_t>();
    const float* row = logits.data() + at * vocab;
    for (const auto& pair : pos["top10"]) {
      const double want = pair[1].get<double>();
      const double got = row[pair[0].get<int64_t>()];
      worst = std::max(worst, std::fabs(got - want));
      EXPECT_NEAR(got, want, kExactLogitTolerance) << "position " << at << " token " << pair[0];
    }
    for (size_t i = 0; i < probes.size(); ++i) {
      const double want = pos["probe_logits"][i].get<double>();
      EXPECT_NEAR(row[probes[i]], want, kExactLogitTolerance) << "position " << at << " probe " << probes[i];
    }
    EXPECT_EQ(std::max_element(row, row + vocab) - row, pos["top10"][0][0].get<int64_t>()) << "position " << at;
  }
  std::printf("exact path: max |logit - transformers| over the prompt's top-10 = %.3g\n", worst);
}

TEST_F(SmolLM2, ExactPathGreedyTokensAndDecodeStepsMatchTransformers) {
  const nlohmann::json p = Reference()["prompt"];
  std::vector<std::vector<float>> steps;
  const std::vector<int32_t> got = Greedy(*exact_, Ids(p["ids_fed"]), 20, &steps);
  EXPECT_EQ(got, Ids(p["greedy"]["generate_ids"]));
  // The decode steps read the KV cache: their top-5 logits match transformers' cached run.
  for (const auto& s : p["greedy"]["steps"]) {
    const auto step = s["step"].get<size_t>();
    for (const auto& pair : s["top5"]) {
      EXPECT_NEAR(steps[step][pair[0].get<size_t>()], pair[1].get<double>(), kExactLogitTolerance)
          << "decode step " << step << " token " << pair[0];
    }
  }
}

TEST_F(SmolLM2, ExactPathChatAnswerMatchesTransformers) {
  const nlohmann::json c = Reference()["chat"];
  const std::vector<int32_t> want = Ids(c["generate_ids"]);
  EXPECT_EQ(Greedy(*exact_, Ids(c["ids"]), static_cast<int>(want.size())), want);
}

// The quantised path (8-bit activations, integer dots) follows the exact path's tokens until the
// first near tie: a step where the exact path's two best logits are closer than the quantised
// path's measured error on those two logits (|gap| < |d1| + |d2|, the most their order can move).
// Both paths are teacher-forced on the exact tokens so they see the same context.
TEST_F(SmolLM2, QuantizedPathAgreesWithExactUpToTheNearTie) {
  const std::vector<int32_t> prompt = Ids(Reference()["prompt"]["ids_fed"]);
  std::vector<std::vector<float>> exact_steps;
  const std::vector<int32_t> exact_tokens = Greedy(*exact_, prompt, 20, &exact_steps);
  const int64_t vocab = fast_->config().vocab;
  std::vector<float> logits(static_cast<size_t>(vocab));
  fast_->Forward(prompt, logits.data());
  int first_tie = -1;
  double max_top_error = 0, max_error = 0, tie_gap = 0, tie_error = 0;
  std::vector<int32_t> fast_tokens;
  for (size_t step = 0; step < exact_steps.size(); ++step) {
    const std::vector<float>& e = exact_steps[step];
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    for (int32_t v = 0; v < vocab; ++v) order[static_cast<size_t>(v)] = v;
    std::partial_sort(order.begin(), order.begin() + 10, order.end(), [&](int32_t a, int32_t b) { return e[a] > e[b]; });
    for (int64_t v = 0; v < vocab; ++v) max_error = std::max(max_error, std::fabs(double{logits[v]} - e[v]));
    for (int i = 0; i < 10; ++i) {
      max_top_error = std::max(max_top_error, std::fabs(double{logits[order[i]]} - e[order[i]]));
    }
    const double gap = double{e[order[0]]} - e[order[1]];
    const double err = std::fabs(double{logits[order[0]]} - e[order[0]]) + std::fabs(double{logits[order[1]]} - e[order[1]]);
    if (first_tie < 0 && gap < err) first_tie = static_cast<int>(step), tie_gap = gap, tie_error = err;
    fast_tokens.push_back(Argmax(logits));
    if (step + 1 < exact_steps.size()) fast_->Forward(std::span<const int32_t>(&exact_tokens[step], 1), logits.data());
  }
  const size_t agree_until = first_tie < 0 ? fast_tokens.size() : static_cast<size_t>(first_tie);
  for (size_t s = 0; s < agree_until; ++s) EXPECT_EQ(fast_tokens[s], exact_tokens[s]) << "step " << s;
  std::printf("quantised path: max |logit - exact| on each step's top 10 = %.4f (whole vocabulary %.4f); first near tie "
              "at step %d (0-based): gap %.4f < error %.4f\n",
              max_top_error, max_error, first_tie, tie_gap, tie_error);
  // The error stays a small fraction of the logit scale (logits here reach ~30).
  EXPECT_LT(max_top_error, 1.0);
  // Free-running greedy on the quantised path agrees up to the near tie too.
  const std::vector<int32_t> free_running = Greedy(*fast_, prompt, 20);
  for (size_t s = 0; s < agree_until; ++s) EXPECT_EQ(free_running[s], exact_tokens[s]) << "free-running step " << s;
  size_t departs = 0;
  while (departs < free_running.size() && free_running[departs] == exact_tokens[departs]) ++departs;
  std::printf("quantised path, free-running greedy: equal to the exact path's tokens for %zu steps\n", departs);
}

TEST_F(SmolLM2, PromptLongerThanTheContextIsRefused) {
  std::vector<int32_t> tokens(65, 100);
  std::vector<float> logits(static_cast<size_t>(fast_->config().vocab));
  try {
    fast_->Forward(tokens, logits.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("context 64"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fast_->position(), 0);
}

// ---- a small random model written as a GGUF, for the cache and the error paths ---------------------
struct TinyModel {
  static constexpr int kVocab = 40, kHidden = 32, kHeads = 4, kKvHeads = 2, kFfn = 48, kLayers = 2;

  static GgufWriter Writer(bool with_eps = true, uint64_t q_out = kHidden) {
    GgufWriter w;
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 0.3f);
    auto random = [&](size_t count) {
      std::vector<float> v(count);
      for (float& x : v) x = n(rng);
      return v;
    };
    auto ones = [&](size_t count) {
      std::vector<float> v(count);
      for (float& x : v) x = 1.0f + n(rng) * 0.1f;
      return v;
    };
    w.String("general.architecture", "llama");
    w.U32("llama.embedding_length", kHidden);
    w.U32("llama.block_count", kLayers);
    w.U32("llama.attention.head_count", kHeads);
    w.U32("llama.attention.head_count_kv", kKvHeads);
    w.U32("llama.feed_forward_length", kFfn);
    w.U32("llama.context_length", 128);
    if (with_eps) w.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.F32("llama.rope.freq_base", 10000.0f);
    const uint64_t kv = kKvHeads * (kHidden / kHeads);
    w.TensorF32("token_embd.weight", {kHidden, kVocab}, random(kHidden * kVocab));
    w.TensorF32("output_norm.weight", {kHidden}, ones(kHidden));
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      w.TensorF32(p + "attn_norm.weight", {kHidden}, ones(kHidden));
      w.TensorF32(p + "attn_q.weight", {kHidden, q_out}, random(kHidden * q_out));
      w.TensorF32(p + "attn_k.weight", {kHidden, kv}, random(kHidden * kv));
      w.TensorF32(p + "attn_v.weight", {kHidden, kv}, random(kHidden * kv));
      w.TensorF32(p + "attn_output.weight", {kHidden, kHidden}, random(kHidden * kHidden));
      w.TensorF32(p + "ffn_norm.weight", {kHidden}, ones(kHidden));
      w.TensorF32(p + "ffn_gate.weight", {kHidden, kFfn}, random(kHidden * kFfn));
      w.TensorF32(p + "ffn_up.weight", {kHidden, kFfn}, random(kHidden * kFfn));
      w.TensorF32(p + "ffn_down.weight", {kFfn, kHidden}, random(kHidden * kFfn));
    }
    return w;
  }

  static std::string Write(const std::string& name, const GgufWriter& w) {
    const std::string path = (std::filesystem::temp_directory_path() / name).string();
    w.Write(path);
    return path;
  }
};

TEST(LlamaTiny, DecodeWithTheCacheEqualsAFullRecompute) {
  const std::string path = TinyModel::Write("backplane_tiny_llama.gguf", TinyModel::Writer());
  auto backend = cpu::CreateBackend();
  for (const WeightPath weights : {WeightPath::Exact, WeightPath::Quantized}) {
    LlamaOptions o;
    o.context = 32;
    o.path = weights;
    o.batch = 4;  // the 11-token prompt runs as 3 batches
    LlamaModel m(gguf::File::Open(path), *backend, o);
    const std::vector<int32_t> tokens{3, 17, 5, 39, 0, 22, 8, 8, 31, 12, 1, 7, 26, 19};
    const int64_t vocab = m.config().vocab;
    std::vector<float> all(tokens.size() * vocab);
    m.Forward(tokens, all.data(), /*all_logits=*/true);
    m.Reset();
    std::vector<float> step(static_cast<size_t>(vocab));
    m.Forward(std::span<const int32_t>(tokens.data(), 11), step.data());
    for (int64_t v = 0; v < vocab; ++v) EXPECT_NEAR(step[v], all[10 * vocab + v], 1e-4) << "prompt end, " << v;
    for (size_t t = 11; t < tokens.size(); ++t) {
      m.Forward(std::span<const int32_t>(&tokens[t], 1), step.data());
      for (int64_t v = 0; v < vocab; ++v) EXPECT_NEAR(step[v], all[t * vocab + v], 1e-4) << "token " << t << ", " << v;
    }
    EXPECT_EQ(m.position(), static_cast<int64_t>(tokens.size()));
  }
}

// copy_weights (used where the backend cannot read the file mapping) changes where the weight
// bytes live, not the result: the logits are bit for bit those of the mapped weights.
TEST(LlamaTiny, CopiedWeightsGiveTheMappedWeightsLogits) {
  const std::string path = TinyModel::Write("backplane_tiny_llama_copy.gguf", TinyModel::Writer());
  auto backend = cpu::CreateBackend();
  const std::vector<int32_t> tokens{3, 17, 5, 39, 0, 22, 8};
  for (const WeightPath weights : {WeightPath::Exact, WeightPath::Quantized}) {
    std::vector<std::vector<float>> logits;
    for (const bool copy : {false, true}) {
      LlamaOptions o;
      o.context = 16;
      o.path = weights;
      o.copy_weights = copy;
      LlamaModel m(gguf::File::Open(path), *backend, o);
      logits.emplace_back(tokens.size() * static_cast<size_t>(m.config().vocab));
      m.Forward(tokens, logits.back().data(), /*all_logits=*/true);
    }
    EXPECT_EQ(logits[0], logits[1]) << (weights == WeightPath::Exact ? "exact" : "quantised");
  }
}

TEST(LlamaTiny, BadTokenIdAndEmptyInputAreRefused) {
  const std::string path = TinyModel::Write("backplane_tiny_llama_ids.gguf", TinyModel::Writer());
  auto backend = cpu::CreateBackend();
  LlamaModel m(gguf::File::Open(path), *backend, LlamaOptions{16, WeightPath::Quantized, 8});
  std::vector<float> logits(TinyModel::kVocab);
  const std::vector<int32_t> bad{1, 40};
  EXPECT_THROW(m.Forward(bad, logits.data()), Error);
  EXPECT_THROW(m.Forward(std::span<const int32_t>(), logits.data()), Error);
  EXPECT_EQ(m.position(), 0);
}

TEST(LlamaTiny, MissingMetadataKeyNamesTheFileAndTheKey) {
  const std::string path = TinyModel::Write("backplane_tiny_llama_noeps.gguf", TinyModel::Writer(false));
  auto backend = cpu::CreateBackend();
  try {
    LlamaModel m(gguf::File::Open(path), *backend, LlamaOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("llama.attention.layer_norm_rms_epsilon"), std::string::npos) << what;
  }
}

TEST(LlamaTiny, WrongTensorShapeNamesTheTensor) {
  const std::string path = TinyModel::Write("backplane_tiny_llama_shape.gguf", TinyModel::Writer(true, 8));
  auto backend = cpu::CreateBackend();
  try {
    LlamaModel m(gguf::File::Open(path), *backend, LlamaOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("blk.0.attn_q.weight"), std::string::npos) << what;
    EXPECT_NE(what.find("[32, 32]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace backplane::llm
