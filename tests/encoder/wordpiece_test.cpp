// The BERT WordPiece tokenizer against Hugging Face's fast tokenizer for all-MiniLM-L6-v2 (golden
// ids from tests/golden/gen_wordpiece.py), plus a hand-built vocabulary, batching, truncation,
// decoding and bad vocabularies / input.

#include "backplane/encoder/wordpiece.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "backplane/error.hpp"
#include "support/golden.hpp"
#include "support/models.hpp"

namespace backplane::encoder {
namespace {

namespace fs = std::filesystem;
using test::ThrowsError;
using Ids = std::vector<int32_t>;

std::string VocabPath() { return test::MiniLMDir() + "/vocab.txt"; }

// The model's tokenizer, read once; nullptr (and a test failure) when the file is missing.
const WordPieceTokenizer* Model() {
  static const std::optional<WordPieceTokenizer> tokenizer =
      []() -> std::optional<WordPieceTokenizer> {
    if (!test::ModelPresent(VocabPath())) return std::nullopt;
    return WordPieceTokenizer::FromVocabFile(VocabPath());
  }();
  if (!tokenizer) {
    ADD_FAILURE() << test::FetchHint(VocabPath());
    return nullptr;
  }
  return &*tokenizer;
}

const nlohmann::json& Golden() {
  static const nlohmann::json golden = test::LoadGolden("wordpiece/minilm.json");
  return golden;
}

std::string Shown(const std::string& text) { return "text '" + text.substr(0, 60) + "'"; }

// A file in a fresh temporary directory, removed with it.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    dir_ = fs::temp_directory_path() /
           ("wordpiece_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
    std::ofstream(path(), std::ios::binary) << contents;
  }
  ~TempFile() { fs::remove_all(dir_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return (dir_ / "vocab.txt").string(); }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

constexpr const char* kSpecials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";

TEST(WordPieceGolden, EveryCaseMatchesTheFastTokenizer) {
  const WordPieceTokenizer* tok = Model();
  if (tok == nullptr) return;
  const nlohmann::json& golden = Golden();
  EXPECT_EQ(tok->vocab_size(), golden.at("vocab_size").get<size_t>());
  ASSERT_GE(golden.at("cases").size(), 50u);
  for (const auto& c : golden.at("cases")) {
    const std::string text = c.at("text");
    const Ids want = c.at("ids");
    const int max_length = c.value("max_length", 0);
    const Encoding e = tok->Encode(text, max_length);
    EXPECT_EQ(e.ids, want) << Shown(text);
    EXPECT_EQ(e.type_ids, Ids(want.size(), 0)) << Shown(text);
    EXPECT_EQ(e.attention_mask, Ids(want.size(), 1)) << Shown(text);
    EXPECT_EQ(tok->Decode(e.ids), c.at("decoded").get<std::string>()) << Shown(text);
    if (max_length == 0) {
      EXPECT_EQ(tok->Tokenize(text), Ids(want.begin() + 1, want.end() - 1)) << Shown(text);
    } else {
      EXPECT_EQ(static_cast<int>(e.ids.size()),
                std::min(max_length, c.at("untruncated_length").get<int>()))
          << Shown(text);
    }
  }
}

TEST(WordPieceModel, SpecialTokenIds) {
  const WordPieceTokenizer* tok = Model();
  if (tok == nullptr) return;
  EXPECT_EQ(tok->vocab_size(), 30522u);
  EXPECT_EQ(tok->TokenId("[PAD]"), 0);
  EXPECT_EQ(tok->TokenId("[UNK]"), 100);
  EXPECT_EQ(tok->TokenId("[CLS]"), 101);
  EXPECT_EQ(tok->TokenId("[SEP]"), 102);
  EXPECT_EQ(tok->TokenId("[MASK]"), 103);
  EXPECT_EQ(tok->TokenId("##ing"), 2075);
  EXPECT_EQ(tok->TokenId("definitely-not-a-token"), -1);
  EXPECT_EQ(tok->TokenId(""), -1);
}

TEST(WordPieceModel, BatchPadsToTheLongestOnTheRight) {
  const WordPieceTokenizer* tok = Model();
  if (tok == nullptr) return;
  // tokenizer(["a b c", "hello", ""], padding=True)
  const std::vector<Encoding> batch = tok->EncodeBatch({"a b c", "hello", ""});
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].ids, (Ids{101, 1037, 1038, 1039, 102}));
  EXPECT_EQ(batch[1].ids, (Ids{101, 7592, 102, 0, 0}));
  EXPECT_EQ(batch[2].ids, (Ids{101, 102, 0, 0, 0}));
  EXPECT_EQ(batch[0].attention_mask, (Ids{1, 1, 1, 1, 1}));
  EXPECT_EQ(batch[1].attention_mask, (Ids{1, 1, 1, 0, 0}));
  EXPECT_EQ(batch[2].attention_mask, (Ids{1, 1, 0, 0, 0}));
  for (const Encoding& e : batch) EXPECT_EQ(e.type_ids, Ids(5, 0));
  EXPECT_TRUE(tok->EncodeBatch({}).empty());
  // Truncation applies to each text before padding.
  const std::vector<Encoding> cut = tok->EncodeBatch({"a b c d e f", "a"}, 4);
  EXPECT_EQ(cut[0].ids, (Ids{101, 1037, 1038, 102}));
  EXPECT_EQ(cut[1].ids, (Ids{101, 1037, 102, 0}));
  EXPECT_EQ(cut[1].attention_mask, (Ids{1, 1, 1, 0}));
}

TEST(WordPieceModel, TruncationKeepsSep) {
  const WordPieceTokenizer* tok = Model();
  if (tok == nullptr) return;
  const std::string text = "one two three four five six seven eight nine ten";
  const Ids all = tok->Tokenize(text);
  ASSERT_EQ(all.size(), 10u);
  for (int max_length : {2, 3, 8, 11, 12, 13, 100}) {
    const Encoding e = tok->Encode(text, max_length);
    const size_t kept = std::min<size_t>(all.size(), static_cast<size_t>(max_length) - 2);
    ASSERT_EQ(e.ids.size(), kept + 2) << max_length;
    EXPECT_EQ(e.ids.front(), 101);
    EXPECT_EQ(e.ids.back(), 102);
    EXPECT_EQ(Ids(e.ids.begin() + 1, e.ids.end() - 1), Ids(all.begin(), all.begin() + kept));
    EXPECT_EQ(e.attention_mask, Ids(e.ids.size(), 1));
  }
  EXPECT_EQ(tok->Encode(text, 0).ids.size(), 12u);
  for (int bad : {-1, 1}) {
    EXPECT_TRUE(ThrowsError([&] { tok->Encode(text, bad); }, ErrorCode::InvalidArgument,
                            {"WordPiece.Encode", "max_length", std::to_string(bad)}));
  }
}

TEST(WordPieceModel, DecodeRoundTrip) {
  const WordPieceTokenizer* tok = Model();
  if (tok == nullptr) return;
  // HF's decoder glues only ". ? ! ," to the word before; "'" keeps its spaces.
  const std::pair<std::string, std::string> cases[] = {
      {"hello world", "hello world"},
      {"The quick brown fox jumps over the lazy dog.",
       "the quick brown fox jumps over the lazy dog."},
      {"Sentence embeddings are useful, aren't they?",
       "sentence embeddings are useful, aren ' t they?"},
      {"Tokenization with wordpieces!", "tokenization with wordpieces!"}};
  for (const auto& [text, want] : cases) EXPECT_EQ(tok->Decode(tok->Encode(text).ids), want);
  EXPECT_EQ(tok->Decode(Ids{}), "");
  EXPECT_EQ(tok->Decode(Ids{101, 102, 0, 100, 103}), "");
  EXPECT_TRUE(ThrowsError(
      [&] {
        tok->Decode(Ids{101, 30522});
      },
      ErrorCode::InvalidArgument, {"WordPiece.Decode", "ids[1]", "30522"}));
  EXPECT_TRUE(ThrowsError([&] { tok->Decode(Ids{-1}); }, ErrorCode::InvalidArgument,
                          {"WordPiece.Decode", "ids[0]"}));
}

TEST(WordPieceModel, InvalidUtf8Throws) {
  const WordPieceTokenizer* tok = Model();
  if (tok == nullptr) return;
  EXPECT_TRUE(ThrowsError([&] { tok->Tokenize("ok \xff bad"); }, ErrorCode::InvalidArgument,
                          {"WordPiece", "UTF-8", "byte 3"}));
  // Offsets count from the start of the text, across special tokens.
  EXPECT_TRUE(ThrowsError([&] { tok->Encode("[SEP]ab\xc3"); }, ErrorCode::InvalidArgument,
                          {"WordPiece", "UTF-8", "byte 7"}));
  EXPECT_TRUE(ThrowsError([&] { tok->Encode("\xed\xa0\x80"); }, ErrorCode::InvalidArgument,
                          {"WordPiece", "UTF-8", "byte 0"}));  // a surrogate
  EXPECT_TRUE(ThrowsError(
      [&] {
        tok->EncodeBatch({"fine", "\xc0\xaf"});
      },
      ErrorCode::InvalidArgument, {"WordPiece", "byte 0"}));  // overlong
}

// A vocabulary small enough to work the ids out by hand.
WordPieceTokenizer Small(WordPieceOptions options = {}) {
  // clang-format off
  return WordPieceTokenizer({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",  // 0-4
                             "un", "##aff", "##able", "want", "##want",     // 5-9
                             "##ed", "wa", ",", "runn", "##ing",            // 10-14
                             ".", "a", "##b", "ca", "##fe",                 // 15-19
                             "\xe4\xb8\xad", "##\xc3\xa9", "b"},            // 20-22: 中 ##é b
                            std::move(options));
  // clang-format on
}

TEST(WordPieceSmall, GreedyLongestMatchFirst) {
  const WordPieceTokenizer tok = Small();
  EXPECT_EQ(tok.vocab_size(), 23u);
  EXPECT_EQ(tok.Tokenize("unaffable"), (Ids{5, 6, 7}));
  EXPECT_EQ(tok.Tokenize("UnWanted, running."), (Ids{5, 9, 10, 12, 13, 14, 15}));
  EXPECT_EQ(tok.Tokenize("unwantedx running"), (Ids{1, 13, 14}));  // no piece for "x"
  EXPECT_EQ(tok.Tokenize("wa want"), (Ids{11, 8}));
  EXPECT_EQ(tok.Tokenize("ab a b"), (Ids{16, 17, 16, 22}));
  EXPECT_EQ(tok.Tokenize("Caf\xc3\xa9"), (Ids{18, 19}));  // accent stripped, lowercased
  EXPECT_EQ(tok.Tokenize(std::string("a\xe4\xb8\xad") + "b"), (Ids{16, 20, 22}));  // 中 alone
  EXPECT_EQ(tok.Tokenize("  \t\n"), Ids{});
  EXPECT_EQ(tok.Tokenize(std::string("a\x01\xef\xbb\xbf") + "b"), (Ids{16, 17}));  // dropped
  EXPECT_EQ(tok.Tokenize("[MASK]un[SEP][PAD]x"), (Ids{4, 5, 3, 0, 1}));
  EXPECT_EQ(tok.Tokenize("[mask]"), (Ids{1, 1, 1}));  // "[", "mask", "]": not special
  EXPECT_EQ(tok.Encode("unaffable").ids, (Ids{2, 5, 6, 7, 3}));
  EXPECT_EQ(tok.Decode(Ids{2, 5, 6, 7, 12, 13, 14, 15, 3}), "unaffable, running.");
  EXPECT_EQ(tok.Decode(Ids{6, 16, 1, 17}), "##aff ab");  // a leading "##" stays, like HF
  EXPECT_EQ(tok.TokenId("##aff"), 6);
  EXPECT_EQ(tok.TokenId("aff"), -1);
}

TEST(WordPieceSmall, Options) {
  WordPieceOptions cased;
  cased.lowercase = false;
  cased.strip_accents = false;
  EXPECT_EQ(Small(cased).Tokenize("Unaffable unaffable"), (Ids{1, 5, 6, 7}));
  EXPECT_EQ(Small(cased).Tokenize("ca\xc3\xa9"), (Ids{18, 21}));  // "ca" "##é"

  WordPieceOptions accents;
  accents.strip_accents = false;
  EXPECT_EQ(Small(accents).Tokenize("CA\xc3\x89"), (Ids{18, 21}));  // CAÉ -> ca ##é

  WordPieceOptions short_words;
  short_words.max_input_chars_per_word = 4;
  EXPECT_EQ(Small(short_words).Tokenize("unaffable runn"), (Ids{1, 13}));

  WordPieceOptions raw;
  raw.clean_text = false;
  raw.handle_chinese_chars = false;
  EXPECT_EQ(Small(raw).Tokenize(std::string("a\x01") + "b"), (Ids{1}));  // no "##\x01b"
  EXPECT_EQ(Small(raw).Tokenize("a\xe4\xb8\xad"), (Ids{1}));
  EXPECT_EQ(Small(raw).Tokenize("a\tb"), (Ids{16, 22}));  // whitespace still splits

  WordPieceOptions renamed;
  renamed.unk = "[?]";
  renamed.mask = "";  // no mask token
  EXPECT_EQ(
      WordPieceTokenizer({"[PAD]", "[?]", "[CLS]", "[SEP]", "x"}, renamed).Tokenize("x y [?]"),
      (Ids{4, 1, 1}));

  WordPieceOptions zero;
  zero.max_input_chars_per_word = 0;
  EXPECT_TRUE(ThrowsError([&] { Small(zero); }, ErrorCode::InvalidArgument,
                          {"WordPiece", "max_input_chars_per_word"}));
}

TEST(WordPieceSmall, MaskIsOptional) {
  const WordPieceTokenizer tok({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[", "]", "mask"}, {});
  EXPECT_EQ(tok.Tokenize("[MASK]"), (Ids{4, 6, 5}));
  EXPECT_EQ(tok.Decode(Ids{4, 6, 5, 1}), "[ mask ]");
}

TEST(WordPieceVocab, ReadsLinesAsIds) {
  TempFile file(std::string(kSpecials) + "hello\r\n##lo  \nworld");
  const WordPieceTokenizer tok = WordPieceTokenizer::FromVocabFile(file.path());
  EXPECT_EQ(tok.vocab_size(), 8u);
  EXPECT_EQ(tok.TokenId("hello"), 5);
  EXPECT_EQ(tok.TokenId("##lo"), 6);
  EXPECT_EQ(tok.TokenId("world"), 7);
  EXPECT_EQ(tok.Encode("Hello World").ids, (Ids{2, 5, 7, 3}));
}

TEST(WordPieceVocab, Errors) {
  EXPECT_TRUE(ThrowsError([] { WordPieceTokenizer::FromVocabFile("/nonexistent/vocab.txt"); },
                          ErrorCode::InvalidArgument,
                          {"WordPiece.FromVocabFile", "/nonexistent/vocab.txt"}));
  {
    TempFile file(std::string(kSpecials) + "a\nb\na\n");
    EXPECT_TRUE(ThrowsError([&] { WordPieceTokenizer::FromVocabFile(file.path()); },
                            ErrorCode::InvalidArgument,
                            {file.path(), "line 8", "duplicate", "'a'", "line 6"}));
  }
  {
    TempFile file(std::string(kSpecials) + "a\n\nb\n");
    EXPECT_TRUE(ThrowsError([&] { WordPieceTokenizer::FromVocabFile(file.path()); },
                            ErrorCode::InvalidArgument, {file.path(), "line 7", "empty"}));
  }
  {
    TempFile file(std::string(kSpecials) + "a\xff\n");
    EXPECT_TRUE(ThrowsError([&] { WordPieceTokenizer::FromVocabFile(file.path()); },
                            ErrorCode::InvalidArgument, {file.path(), "line 6", "UTF-8"}));
  }
  for (const char* special : {"[UNK]", "[CLS]", "[SEP]", "[PAD]"}) {
    std::string contents = kSpecials;
    contents.erase(contents.find(special), std::string(special).size() + 1);
    TempFile file(contents + "a\n");
    EXPECT_TRUE(ThrowsError([&] { WordPieceTokenizer::FromVocabFile(file.path()); },
                            ErrorCode::InvalidArgument, {file.path(), special}));
  }
  EXPECT_TRUE(ThrowsError(
      [] {
        WordPieceTokenizer({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "x", "x"}, {});
      },
      ErrorCode::InvalidArgument, {"WordPiece", "vocab[5]", "duplicate"}));
  EXPECT_TRUE(ThrowsError(
      [] {
        WordPieceTokenizer({"[PAD]", "[CLS]", "[SEP]"}, {});
      },
      ErrorCode::InvalidArgument, {"WordPiece", "[UNK]"}));
}

}  // namespace
}  // namespace backplane::encoder
