// The BERT sentence encoder (all-MiniLM-L6-v2 from scripts/fetch-models.sh) against the package's
// own sentence-transformers pipeline (tests/golden/gen_minilm_reference.py ->
// tests/golden/data/minilm/reference.json): token ids, embeddings batched and one at a time,
// the graph it builds, `backplane embed`, and config errors.
#include "backplane/encoder/bert.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/encoder/wordpiece.hpp"
#include "backplane/io.hpp"
#include "backplane/ir/graph.hpp"
#include "support/cli.hpp"
#include "support/models.hpp"
#include "support/test_support.hpp"

namespace backplane::encoder {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<double> embedding;
};

const std::vector<Case>& Reference() {
  static const std::vector<Case> cases = [] {
    std::ifstream file(test::GoldenPath("minilm/reference.json"));
    const nlohmann::json doc = nlohmann::json::parse(file);
    std::vector<Case> all;
    for (const auto& c : doc["cases"]) {
      all.push_back({c["text"], c["ids"].get<std::vector<int32_t>>(), c["embedding"].get<std::vector<double>>()});
    }
    return all;
  }();
  return cases;
}

std::vector<std::string> Texts() {
  std::vector<std::string> texts;
  for (const Case& c : Reference()) texts.push_back(c.text);
  return texts;
}

double Cosine(const float* a, const std::vector<double>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    dot += a[i] * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += b[i] * b[i];
  }
  return dot / std::sqrt(na * nb);
}

class MiniLM : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(test::ModelPresent(test::MiniLMDir() + "/model.safetensors")) << test::FetchHint(test::MiniLMDir());
    backend_ = cpu::CreateBackend();
    encoder_ = std::make_unique<SentenceEncoder>(test::MiniLMDir(), *backend_);
  }
  static void TearDownTestSuite() {
    encoder_.reset();
    backend_.reset();
  }
  // Cosine >= 0.99999 and max |difference| <= 2e-5 against the reference, per sentence.
  static void ExpectMatches(const Tensor& got, size_t first, size_t count) {
    ASSERT_EQ(got.shape(), (Shape{static_cast<int64_t>(count), 384}));
    for (size_t i = 0; i < count; ++i) {
      const Case& c = Reference()[first + i];
      const float* row = got.data_as<float>() + i * 384;
      double worst = 0;
      for (size_t j = 0; j < 384; ++j) worst = std::max(worst, std::fabs(row[j] - c.embedding[j]));
      EXPECT_GE(Cosine(row, c.embedding), 0.99999) << c.text;
      EXPECT_LE(worst, 2e-5) << c.text;
    }
  }
  static inline std::unique_ptr<Backend> backend_;
  static inline std::unique_ptr<SentenceEncoder> encoder_;
};

TEST_F(MiniLM, ConfigFromTheModelFiles) {
  const BertConfig& c = encoder_->config();
  EXPECT_EQ(c.vocab, 30522);
  EXPECT_EQ(c.hidden, 384);
  EXPECT_EQ(c.layers, 6);
  EXPECT_EQ(c.heads, 12);
  EXPECT_EQ(c.intermediate, 1536);
  EXPECT_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.pooling, Pooling::Mean);
  EXPECT_TRUE(c.normalize);
  EXPECT_EQ(c.max_seq_length, 256);
}

TEST_F(MiniLM, GraphCarriesTheModelsEpsilonAndRoundTrips) {
  const ir::Graph& g = encoder_->graph();
  int norms = 0;
  for (const ir::Node& n : g.nodes) {
    if (n.op != "math.layernorm") continue;
    ++norms;
    EXPECT_EQ(std::get<double>(n.attrs.at("eps")), 1e-12) << n.name;
  }
  EXPECT_EQ(norms, 1 + 2 * 6);
  EXPECT_EQ(g.params.size(), 3u + 2u + 16u * 6u);
  const ir::Graph again = ir::ParseGraph(ir::WriteGraph(g), "bert");
  EXPECT_EQ(ir::WriteGraph(again), ir::WriteGraph(g));
}

TEST_F(MiniLM, TokenIdsMatchTheFastTokenizer) {
  WordPieceTokenizer tokenizer = WordPieceTokenizer::FromVocabFile(test::MiniLMDir() + "/vocab.txt");
  for (const Case& c : Reference()) EXPECT_EQ(tokenizer.Encode(c.text, 256).ids, c.ids) << c.text;
}

TEST_F(MiniLM, BatchedEmbeddingsMatchSentenceTransformers) {
  // One padded batch of every sentence (lengths 3 to 256).
  ExpectMatches(encoder_->Embed(Texts()), 0, Reference().size());
}

TEST_F(MiniLM, OneAtATimeEqualsBatched) {
  const Tensor batched = encoder_->Embed(Texts());
  for (size_t i = 0; i < Reference().size(); ++i) {
    const Tensor one = encoder_->Embed({Reference()[i].text});
    ExpectMatches(one, i, 1);
    for (int64_t j = 0; j < 384; ++j) {
      EXPECT_NEAR(one.data_as<float>()[j], batched.data_as<float>()[static_cast<int64_t>(i) * 384 + j], 2e-6)
          << Reference()[i].text;
    }
  }
}

TEST_F(MiniLM, EmbeddingsAreUnitLength) {
  const Tensor e = encoder_->Embed({"unit length", "another sentence"});
  for (int64_t i = 0; i < 2; ++i) {
    double sq = 0;
    for (int64_t j = 0; j < 384; ++j) sq += std::pow(e.data_as<float>()[i * 384 + j], 2);
    EXPECT_NEAR(sq, 1.0, 1e-5);
  }
}

TEST_F(MiniLM, EmbedCommandSavesTheSameEmbeddings) {
  const fs::path out = fs::temp_directory_path() / fmt::format("bp_embed_{}.npy", ::getpid());
  const auto r = test::RunCli(fmt::format("embed --model {} --text \"{}\" --text \"{}\" --output {}", test::MiniLMDir(),
                                          Reference()[3].text, Reference()[4].text, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("embedding 0:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("embedding 1:"), std::string::npos) << r.output;
  ExpectMatches(io::ReadNpy(out.string()), 3, 2);
  fs::remove(out);
}

TEST(BertConfigErrors, NameTheFileAndKey) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("bp_bert_cfg_{}", ::getpid());
  fs::create_directories(dir);
  auto write = [&](const std::string& text) { std::ofstream(dir / "config.json") << text; };
  write(R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 6, "num_hidden_layers": 1,
            "num_attention_heads": 4, "intermediate_size": 8, "max_position_embeddings": 16})");
  EXPECT_TRUE(test::ThrowsError([&] { BertConfig::FromDirectory(dir.string()); }, ErrorCode::InvalidArgument,
                                {"config.json", "hidden_size 6", "num_attention_heads 4"}));
  write(R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 4, "intermediate_size": 8})");
  EXPECT_TRUE(test::ThrowsError([&] { BertConfig::FromDirectory(dir.string()); }, ErrorCode::InvalidArgument,
                                {"config.json", "max_position_embeddings"}));
  write(R"({"model_type": "roberta"})");
  EXPECT_TRUE(test::ThrowsError([&] { BertConfig::FromDirectory(dir.string()); }, ErrorCode::InvalidArgument,
                                {"config.json", "model_type", "roberta"}));
  write("{not json");
  EXPECT_TRUE(test::ThrowsError([&] { BertConfig::FromDirectory(dir.string()); }, ErrorCode::InvalidArgument,
                                {"config.json", "not valid JSON"}));
  fs::remove_all(dir);
  EXPECT_TRUE(test::ThrowsError([&] { BertConfig::FromDirectory(dir.string()); }, ErrorCode::InvalidArgument,
                                {"config.json", "cannot open"}));
}

TEST(SentenceEncoderErrors, HostileWeightsFile) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("bp_bert_bad_{}", ::getpid());
  fs::create_directories(dir);
  for (const char* f : {"config.json", "vocab.txt"}) fs::copy_file(test::MiniLMDir() + "/" + f, dir / f);
  // A header length far past the end of the file.
  std::ofstream(dir / "model.safetensors", std::ios::binary) << std::string("\xff\xff\xff\xff\x00\x00\x00\x00{}", 10);
  auto backend = cpu::CreateBackend();
  EXPECT_TRUE(test::ThrowsError([&] { SentenceEncoder(dir.string(), *backend); }, ErrorCode::InvalidArgument,
                                {"model.safetensors", "header length"}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace backplane::encoder
