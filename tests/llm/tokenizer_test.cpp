// The byte-level BPE tokenizer against Hugging Face's tokenizer for SmolLM2-135M-Instruct
// (golden ids from tests/golden/gen_tokenizer.py), the pre-tokenisers against `tokenizers`'
// regex splits, round trips, special tokens, chat templates and bad input.

#include "backplane/llm/tokenizer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backplane/error.hpp"
#include "backplane/gguf.hpp"
#include "llm/pretokenize.hpp"
#include "llm/unicode.hpp"
#include "support/golden.hpp"

namespace backplane::llm {
namespace {

using test::ThrowsError;

std::string ModelPath() {
  const char* cache = std::getenv("BACKPLANE_CACHE");
  const char* home = std::getenv("HOME");
  const std::string root = cache != nullptr && *cache != '\0'
                               ? std::string(cache)
                               : std::string(home != nullptr ? home : "") + "/.cache/backplane";
  return root + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// The model's tokenizer, read once; nullptr (and a test failure) when the file is missing.
const Tokenizer* ModelTokenizer() {
  static const std::optional<Tokenizer> tokenizer = []() -> std::optional<Tokenizer> {
    if (!std::filesystem::exists(ModelPath())) return std::nullopt;
    return Tokenizer::FromGguf(gguf::File::Open(ModelPath()));
  }();
  if (!tokenizer) {
    ADD_FAILURE() << "missing model file " << ModelPath() << ": run scripts/fetch-models.sh";
    return nullptr;
  }
  return &*tokenizer;
}

const nlohmann::json& Golden() {
  static const nlohmann::json golden = test::LoadGolden("tokenizer/smollm2.json");
  return golden;
}

std::vector<int32_t> Ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out += digits[static_cast<unsigned char>(c) >> 4];
    out += digits[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

std::string Shown(const std::string& text) { return "text '" + text.substr(0, 60) + "'"; }

std::vector<ChatMessage> Messages(const nlohmann::json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j) out.push_back({m.at("role"), m.at("content")});
  return out;
}

// `text` less the bytes SmolLM2's vocabulary has no token for (Encode leaves them out).
std::string WithoutTokenlessBytes(const std::string& text) {
  const std::vector<int> missing = Golden().at("bytes_without_token");
  std::string out;
  for (char c : text) {
    if (std::find(missing.begin(), missing.end(), static_cast<unsigned char>(c)) == missing.end()) {
      out += c;
    }
  }
  return out;
}

// GPT-2's byte-to-unicode alphabet, spelled out from its definition: printable Latin-1 bytes
// stand for themselves, the others for U+0100.. in byte order.
std::string ByteChar(int byte) {
  int cp = byte;
  if (!((byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE)) {
    cp = 0x100;
    for (int b = 0; b < byte; ++b) {
      if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) ++cp;
    }
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// A small vocabulary: the 256 byte tokens, <s>, </s>, <|im_end|>, <user>, and merges spelling
// "hello" and " world" ("Ġ" is the space).
Vocabulary SmallVocabulary() {
  Vocabulary v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(ByteChar(b));
  v.types.assign(256, TokenType::Normal);
  for (const char* t :
       {"he", "ll", "hell", "hello", "\xc4\xa0w", "or", "\xc4\xa0wor", "ld", "\xc4\xa0world"}) {
    v.tokens.push_back(t);
    v.types.push_back(TokenType::Normal);
  }
  v.merges = {"h e", "l l",          "he ll", "hell o",        "\xc4\xa0 w",
              "o r", "\xc4\xa0w or", "l d",   "\xc4\xa0wor ld"};
  for (const auto& [text, type] :
       std::vector<std::pair<std::string, TokenType>>{{"<s>", TokenType::Control},
                                                      {"</s>", TokenType::Control},
                                                      {"<|im_end|>", TokenType::Control},
                                                      {"<user>", TokenType::UserDefined}}) {
    v.tokens.push_back(text);
    v.types.push_back(type);
  }
  v.bos = 265;
  v.eos = 266;
  return v;
}
constexpr int32_t kHello = 259, kWorld = 264, kBos = 265, kEos = 266, kImEnd = 267, kUser = 268;

// ---- golden ids from Hugging Face --------------------------------------------------------------

TEST(Tokenizer, ReadsTheModelsMetadata) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const nlohmann::json& g = Golden();
  EXPECT_EQ(tok->vocab_size(), g.at("vocab_size").get<int32_t>());
  EXPECT_EQ(tok->bos(), g.at("bos").get<int32_t>());
  EXPECT_EQ(tok->eos(), g.at("eos").get<int32_t>());
  EXPECT_EQ(tok->vocabulary().add_bos, g.at("add_bos").get<bool>());
  EXPECT_FALSE(tok->vocabulary().add_eos);
  EXPECT_EQ(tok->vocabulary().pre, "smollm");
  EXPECT_EQ(tok->vocabulary().merges.size(), 48900u);
  EXPECT_NE(tok->vocabulary().chat_template.find("<|im_start|>"), std::string::npos);
}

TEST(Tokenizer, MatchesHuggingFaceIds) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const auto& cases = Golden().at("cases");
  ASSERT_GE(cases.size(), 40u);
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    EXPECT_EQ(tok->Encode(text), Ids(c.at("ids"))) << Shown(text);
    // Hugging Face's split_special_tokens=True: control tokens as plain text.
    EXPECT_EQ(tok->Encode(text, true, false), Ids(c.at("ids_plain"))) << Shown(text);
  }
  for (const auto& c : Golden().at("pretokenize_random")) {
    const std::string text = c.at("text");
    EXPECT_EQ(tok->Encode(text), Ids(c.at("ids"))) << Shown(text);
  }
}

TEST(Tokenizer, EncodesThePromptAndGplExcerpt) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const std::vector<int32_t> prompt = {6403, 1980, 253, 655, 28, 665, 436, 253, 1838};
  EXPECT_EQ(tok->Encode("Once upon a time, there was a little"), prompt);
  // The golden case holds the first 2000 characters of GPL-3 as Hugging Face read them.
  const auto& cases = Golden().at("cases");
  const std::string gpl = cases.back().at("text");
  ASSERT_EQ(gpl.rfind("                    GNU GENERAL PUBLIC LICENSE", 0), 0u);
  const std::vector<int32_t> want = Ids(cases.back().at("ids"));
  EXPECT_GT(want.size(), 300u);
  EXPECT_EQ(tok->Encode(gpl), want);
}

TEST(Tokenizer, AddSpecialFollowsTheVocabulary) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  // SmolLM2's GGUF says tokenizer.ggml.add_bos_token = false, and Hugging Face adds no BOS.
  ASSERT_FALSE(Golden().at("add_bos").get<bool>());
  EXPECT_EQ(tok->Encode("Hello", true), tok->Encode("Hello", false));
  Vocabulary v = SmallVocabulary();
  v.add_bos = true;
  v.add_eos = true;
  const Tokenizer small(v);
  EXPECT_EQ(small.Encode("hello", true), (std::vector<int32_t>{kBos, kHello, kEos}));
  EXPECT_EQ(small.Encode("hello", false), (std::vector<int32_t>{kHello}));
  EXPECT_EQ(small.Encode("", true), (std::vector<int32_t>{kBos, kEos}));
}

// ---- pre-tokenisers against `tokenizers`' regex splits -----------------------------------------

TEST(PreTokenize, MatchesTokenizersRegexSplits) {
  const std::pair<const char*, PreTokenizer> kinds[] = {{"gpt2", PreTokenizer::Gpt2},
                                                        {"smollm", PreTokenizer::SmolLm},
                                                        {"llama3", PreTokenizer::Llama3}};
  std::vector<nlohmann::json> cases = Golden().at("cases");
  const auto& random = Golden().at("pretokenize_random");
  ASSERT_EQ(random.size(), 300u);
  cases.insert(cases.end(), random.begin(), random.end());
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    for (const auto& [name, kind] : kinds) {
      std::vector<std::string_view> got;
      PreTokenize(kind, text, got);
      const std::vector<std::string> want = c.at("pieces").at(name);
      EXPECT_EQ(std::vector<std::string>(got.begin(), got.end()), want)
          << name << " " << Shown(text);
    }
  }
}

TEST(PreTokenize, KnowsLlamaCppNames) {
  EXPECT_EQ(PreTokenizerFromName("smollm"), PreTokenizer::SmolLm);
  EXPECT_EQ(PreTokenizerFromName("gpt2"), PreTokenizer::Gpt2);
  EXPECT_EQ(PreTokenizerFromName("llama-bpe"), PreTokenizer::Llama3);
  EXPECT_EQ(PreTokenizerFromName("qwen2"), std::nullopt);
}

TEST(PreTokenize, CoversInvalidUtf8ByteByByte) {
  const std::string text = "ab\xff\xfe 12\xc3 \xe2\x82 x\xf0\x9f\x98";
  for (PreTokenizer kind : {PreTokenizer::Gpt2, PreTokenizer::SmolLm, PreTokenizer::Llama3}) {
    std::vector<std::string_view> pieces;
    PreTokenize(kind, text, pieces);
    std::string joined;
    for (std::string_view p : pieces) {
      EXPECT_FALSE(p.empty());
      joined += p;
    }
    EXPECT_EQ(joined, text);
  }
  // Invalid bytes group like punctuation: " \xff\xfe" is one piece, as " !?" would be.
  std::vector<std::string_view> pieces;
  PreTokenize(PreTokenizer::Gpt2, "a \xff\xfe", pieces);
  EXPECT_EQ(std::vector<std::string>(pieces.begin(), pieces.end()),
            (std::vector<std::string>{"a", " \xff\xfe"}));
}

// ---- UTF-8 and Unicode classes ----------------------------------------------------------------

TEST(Unicode, DecodesOnlyValidUtf8) {
  const auto decode = [](std::string_view s) { return unicode::DecodeUtf8(s, 0); };
  EXPECT_EQ(decode("\xe2\x82\xac").code_point, 0x20ACu);  // EURO SIGN
  EXPECT_EQ(decode("\xe2\x82\xac").length, 3u);
  EXPECT_EQ(decode("\xf0\x9f\x98\x80").code_point, 0x1F600u);
  EXPECT_EQ(decode("\xf4\x8f\xbf\xbf").code_point, 0x10FFFFu);
  for (std::string_view bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                               "\xe2\x82", "\x80", "\xff", "\xc3("}) {
    EXPECT_EQ(decode(bad).code_point, unicode::kInvalid) << Hex(bad);
    EXPECT_EQ(decode(bad).length, 1u) << Hex(bad);
  }
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    unicode::AppendUtf8(s, cp);
    const unicode::Decoded d = unicode::DecodeUtf8(s, 0);
    ASSERT_EQ(d.code_point, cp);
    ASSERT_EQ(d.length, s.size());
  }
}

TEST(Unicode, ClassesOfKnownCodePoints) {
  using unicode::Flags;
  EXPECT_EQ(Flags('A'), unicode::kLetter);
  EXPECT_EQ(Flags(0x4E2D), unicode::kLetter);  // CJK
  EXPECT_EQ(Flags(0x0645), unicode::kLetter);  // ARABIC LETTER MEEM
  EXPECT_EQ(Flags('7'), unicode::kNumber);
  EXPECT_EQ(Flags(0x0663), unicode::kNumber);  // ARABIC-INDIC DIGIT THREE (Nd)
  EXPECT_EQ(Flags(0x00BD), unicode::kNumber);  // VULGAR FRACTION ONE HALF (No)
  EXPECT_EQ(Flags(0x216B), unicode::kNumber);  // ROMAN NUMERAL TWELVE (Nl)
  EXPECT_EQ(Flags(' '), unicode::kWhitespace);
  EXPECT_EQ(Flags('\n'), unicode::kWhitespace);
  EXPECT_EQ(Flags(0x00A0), unicode::kWhitespace);
  EXPECT_EQ(Flags(0x3000), unicode::kWhitespace);
  EXPECT_EQ(Flags(0x200B), 0);  // ZERO WIDTH SPACE is Cf, not White_Space
  EXPECT_EQ(Flags('!'), 0);
  EXPECT_EQ(Flags(0x1F600), 0);
  EXPECT_EQ(Flags(unicode::kInvalid), 0);
}

// ---- round trips -------------------------------------------------------------------------------

TEST(Tokenizer, RoundTripsGoldenStrings) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  for (const auto& c : Golden().at("cases")) {
    const std::string text = c.at("text");
    EXPECT_EQ(tok->Decode(tok->Encode(text)), WithoutTokenlessBytes(text)) << Shown(text);
    EXPECT_EQ(tok->Decode(tok->Encode(text, false, false)), WithoutTokenlessBytes(text))
        << Shown(text);
  }
}

TEST(Tokenizer, RoundTripsRandomBytes) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  std::mt19937 rng(1234);
  for (int n = 0; n < 300; ++n) {
    std::string text(rng() % 80, '\0');
    // Half the strings from all bytes, half mostly ASCII with some high bytes.
    for (char& c : text) {
      c = static_cast<char>(n % 2 == 0 ? rng() % 256
                                       : (rng() % 8 == 0 ? 0x80 + rng() % 128 : rng() % 128));
    }
    EXPECT_EQ(Hex(tok->Decode(tok->Encode(text))), Hex(WithoutTokenlessBytes(text)))
        << "case " << n;
  }
  // Invalid UTF-8 is spelled with byte tokens; 0xFF has none and is left out.
  const std::string bad = "\xff\xc3(\xe2\x82";
  const std::vector<int32_t> ids = tok->Encode(bad);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(Hex(tok->Decode(ids)), "c328e282");
  EXPECT_EQ(Hex(tok->TokenBytes(ids[0])), "c3");
}

TEST(Tokenizer, LeavesOutBytesWithoutTokens) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const std::vector<int> missing = Golden().at("bytes_without_token");
  EXPECT_EQ(missing.size(), 21u);
  for (int b = 0; b < 256; ++b) {
    const bool has_token = std::find(missing.begin(), missing.end(), b) == missing.end();
    EXPECT_EQ(tok->Encode(std::string(1, static_cast<char>(b))).size(), has_token ? 1u : 0u)
        << "byte " << b;
  }
  // Dropped before merging, so its neighbours merge as if it were not there.
  Vocabulary v = SmallVocabulary();
  v.tokens['z'] = "zz";  // 'z' has no token now
  EXPECT_EQ(Tokenizer(v).Encode("hezllo"), (std::vector<int32_t>{kHello}));
  EXPECT_EQ(Tokenizer(v).Encode("z"), (std::vector<int32_t>{}));
}

TEST(Tokenizer, RoundTripsTheWholeGpl) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  std::ifstream in("/usr/share/common-licenses/GPL-3");
  if (!in) GTEST_SKIP() << "/usr/share/common-licenses/GPL-3 is not on this machine";
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  ASSERT_GT(text.size(), 30000u);
  double best_ms = 1e9;
  std::vector<int32_t> ids;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    ids = tok->Encode(text);
    const auto t1 = std::chrono::steady_clock::now();
    best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::printf("encode GPL-3 (%zu bytes -> %zu tokens): %.2f ms (best of 5)\n", text.size(),
              ids.size(), best_ms);
  EXPECT_LT(best_ms, 100.0);
  EXPECT_EQ(tok->Decode(ids), text);
  // The first 2000 characters (all ASCII here) tokenise as the golden excerpt does, up to the
  // last piece, which the cut may split.
  const std::vector<int32_t> head = Ids(Golden().at("cases").back().at("ids"));
  ASSERT_GT(ids.size(), head.size());
  EXPECT_TRUE(std::equal(head.begin(), head.end() - 2, ids.begin()));
}

// ---- single tokens and special tokens ----------------------------------------------------------

TEST(Tokenizer, TokenBytesMatchTheByteAlphabet) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const auto& samples = Golden().at("token_bytes");
  ASSERT_GT(samples.size(), 50u);
  for (const auto& s : samples) {
    const int32_t id = s.at("id");
    EXPECT_EQ(Hex(tok->TokenBytes(id)), s.at("hex").get<std::string>()) << "id " << id;
  }
  EXPECT_EQ(tok->TokenBytes(1), "<|im_start|>");
  EXPECT_EQ(tok->TokenBytes(198), "\n");
}

TEST(Tokenizer, SpecialTokensBothWays) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const int32_t im_end = Golden().at("im_end");
  const std::vector<int32_t> ids = tok->Encode("<|im_start|>user\nHi<|im_end|>");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), im_end);
  EXPECT_EQ(tok->Decode(ids), "<|im_start|>user\nHi<|im_end|>");
  EXPECT_EQ(tok->Decode(ids, true), "user\nHi");
  // Not parsed: the marker is plain text, several tokens, none of them special.
  const std::vector<int32_t> plain = tok->Encode("<|im_start|>", true, false);
  EXPECT_GT(plain.size(), 1u);
  for (int32_t id : plain) EXPECT_NE(id, 1);
  EXPECT_EQ(tok->Decode(plain, true), "<|im_start|>");
}

TEST(Tokenizer, SpecialTokensInASmallVocabulary) {
  const Tokenizer tok(SmallVocabulary());
  EXPECT_EQ(tok.Encode("hello world"), (std::vector<int32_t>{kHello, kWorld}));
  // Leftmost, longest; user-defined tokens are matched even when parse_special is off.
  EXPECT_EQ(tok.Encode("hello<s></s><user>"), (std::vector<int32_t>{kHello, kBos, kEos, kUser}));
  const std::vector<int32_t> plain = tok.Encode("<s><user>", false, false);
  EXPECT_EQ(plain.back(), kUser);
  EXPECT_EQ(plain.size(), 4u);  // '<', 's', '>' as byte tokens, then <user>
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{kBos, kHello, kUser, kEos}), "<s>hello<user></s>");
  EXPECT_EQ(tok.Decode(std::vector<int32_t>{kBos, kHello, kUser, kEos}, true), "hello<user>");
}

TEST(Tokenizer, EndOfGeneration) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  const int32_t im_end = Golden().at("im_end");
  EXPECT_TRUE(tok->IsEndOfGeneration(im_end));
  EXPECT_TRUE(tok->IsEndOfGeneration(tok->eos()));
  EXPECT_FALSE(tok->IsEndOfGeneration(1));     // <|im_start|>
  EXPECT_FALSE(tok->IsEndOfGeneration(6403));  // "Once"
  EXPECT_FALSE(tok->IsEndOfGeneration(-1));
  // <|im_end|> ends a turn by the ChatML template even when it is not the EOS; so does EOT.
  Vocabulary v = SmallVocabulary();
  EXPECT_FALSE(Tokenizer(v).IsEndOfGeneration(kImEnd));
  v.chat_template = "{{ '<|im_start|>' + message['role'] }}";
  EXPECT_TRUE(Tokenizer(v).IsEndOfGeneration(kImEnd));
  EXPECT_TRUE(Tokenizer(v).IsEndOfGeneration(kEos));
  v.eot = kUser;
  EXPECT_TRUE(Tokenizer(v).IsEndOfGeneration(kUser));
  EXPECT_FALSE(Tokenizer(v).IsEndOfGeneration(kHello));
}

TEST(Tokenizer, MergesLowestRankFirst) {
  // "aaaa" with merges "a a" (rank 0) then "aa aa" gives one token; with "aa a" first instead
  // the leftmost pairs merge first: "aa" "aa".
  Vocabulary v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(ByteChar(b));
  v.tokens.insert(v.tokens.end(), {"aa", "aaa", "aaaa"});
  v.types.assign(v.tokens.size(), TokenType::Normal);
  v.merges = {"a a", "aa aa", "aa a"};
  EXPECT_EQ(Tokenizer(v).Encode("aaaa"), (std::vector<int32_t>{258}));
  EXPECT_EQ(Tokenizer(v).Encode("aaa"), (std::vector<int32_t>{257}));
  v.merges = {"a a", "aa a"};
  EXPECT_EQ(Tokenizer(v).Encode("aaaa"), (std::vector<int32_t>{256, 256}));
  EXPECT_EQ(Tokenizer(v).Encode("aaaaa"), (std::vector<int32_t>{256, 257}));
}

// ---- chat templates ----------------------------------------------------------------------------

TEST(ChatTemplate, MatchesHuggingFaceRendering) {
  const Tokenizer* tok = ModelTokenizer();
  if (tok == nullptr) return;
  for (const auto& c : Golden().at("chats")) {
    const std::vector<ChatMessage> messages = Messages(c.at("messages"));
    const std::string text = tok->ApplyChatTemplate(messages, c.at("add_generation_prompt"));
    EXPECT_EQ(text, c.at("text").get<std::string>());
    EXPECT_EQ(tok->Encode(text, false), Ids(c.at("ids")));
  }
  const std::vector<ChatMessage> one = {{"user", "Hi"}};
  EXPECT_NE(tok->ApplyChatTemplate(one).find("You are a helpful AI assistant named SmolLM, trained "
                                             "by Hugging Face"),
            std::string::npos);
}

TEST(ChatTemplate, Llama3MatchesJinja) {
  Vocabulary v = SmallVocabulary();
  v.tokens[kBos] = "<|begin_of_text|>";
  v.chat_template = Golden().at("llama3_template");
  const Tokenizer tok(v);
  for (const auto& c : Golden().at("llama3_chats")) {
    EXPECT_EQ(tok.ApplyChatTemplate(Messages(c.at("messages")), c.at("add_generation_prompt")),
              c.at("text").get<std::string>());
  }
}

TEST(ChatTemplate, ChatMlWithoutDefaultSystemMessage) {
  Vocabulary v = SmallVocabulary();
  v.chat_template =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
  const std::vector<ChatMessage> messages = {{"user", "Hi"}};
  EXPECT_EQ(Tokenizer(v).ApplyChatTemplate(messages, false), "<|im_start|>user\nHi<|im_end|>\n");
  // A default system message written with escapes, as Qwen2's template does.
  v.chat_template = "{{ '<|im_start|>system\\nYou are \\'Q\\'.<|im_end|>\\n' }}" + v.chat_template;
  EXPECT_EQ(Tokenizer(v).ApplyChatTemplate(messages, true),
            "<|im_start|>system\nYou are 'Q'.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, RejectsUnknownTemplates) {
  Vocabulary v = SmallVocabulary();
  const std::vector<ChatMessage> messages = {{"user", "Hi"}};
  EXPECT_TRUE(ThrowsError([&] { Tokenizer(v).ApplyChatTemplate(messages); },
                          ErrorCode::InvalidArgument,
                          {"Tokenizer.ApplyChatTemplate", "tokenizer.chat_template", "empty"}));
  v.chat_template = "{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}";
  EXPECT_TRUE(ThrowsError([&] { Tokenizer(v).ApplyChatTemplate(messages); },
                          ErrorCode::InvalidArgument, {"tokenizer.chat_template", "[INST]"}));
}

// ---- bad input ---------------------------------------------------------------------------------

TEST(Tokenizer, RejectsBadIds) {
  const Tokenizer tok(SmallVocabulary());
  const std::vector<int32_t> ids = {kHello, 5000};
  EXPECT_TRUE(ThrowsError([&] { tok.Decode(ids); }, ErrorCode::InvalidArgument,
                          {"Tokenizer.Decode", "ids[1]", "[0, 269)", "5000"}));
  EXPECT_TRUE(ThrowsError([&] { tok.TokenBytes(-1); }, ErrorCode::InvalidArgument,
                          {"Tokenizer.TokenBytes", "'id'", "-1"}));
}

TEST(Tokenizer, RejectsBadVocabularies) {
  Vocabulary v = SmallVocabulary();
  v.merges.push_back("he nosuch");
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.merges[9]", "'nosuch'", "not a token"}));
  v = SmallVocabulary();
  v.merges.push_back("h o");  // "ho" is no token
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.merges[9]", "'ho'"}));
  v = SmallVocabulary();
  v.merges.push_back("hello");
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.merges[9]", "one space"}));
  v = SmallVocabulary();
  v.types.pop_back();
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.token_type", "269", "268"}));
  v = SmallVocabulary();
  v.eos = 269;
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.eos_token_id", "269"}));
  v = SmallVocabulary();
  v.pre = "qwen2";
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.pre", "'qwen2'", "smollm"}));
  v = SmallVocabulary();
  v.bos = -1;
  v.add_bos = true;
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{v}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.add_bos_token"}));
  EXPECT_TRUE(ThrowsError([&] { Tokenizer{Vocabulary{}}; }, ErrorCode::InvalidArgument,
                          {"tokenizer.ggml.tokens", "empty"}));
}

// A GGUF v3 file with metadata only (no tensors), written for the FromGguf error tests.
class GgufWriter {
 public:
  void String(const std::string& key, const std::string& value) {
    Key(key, 8);
    Str(value);
  }
  void Bool(const std::string& key, bool value) {
    Key(key, 7);
    bytes_ += static_cast<char>(value ? 1 : 0);
  }
  void U32(const std::string& key, uint32_t value) {
    Key(key, 4);
    Pod(value);
  }
  void Strings(const std::string& key, const std::vector<std::string>& values) {
    Key(key, 9);
    Pod(uint32_t{8});
    Pod(static_cast<uint64_t>(values.size()));
    for (const auto& v : values) Str(v);
  }
  void I32s(const std::string& key, const std::vector<int32_t>& values) {
    Key(key, 9);
    Pod(uint32_t{5});
    Pod(static_cast<uint64_t>(values.size()));
    for (int32_t v : values) Pod(v);
  }
  std::string Write(const std::string& name) const {
    std::string out = "GGUF";
    const auto pod = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    pod(uint32_t{3});
    pod(uint64_t{0});
    pod(count_);
    out += bytes_;
    out.resize((out.size() + 31) / 32 * 32, '\0');
    // The process id keeps concurrent runs of this binary apart; the name stays in messages.
    const std::string path =
        (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name))
            .string();
    std::ofstream(path, std::ios::binary) << out;
    return path;
  }

 private:
  template <class T>
  void Pod(T v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void Str(const std::string& s) {
    Pod(static_cast<uint64_t>(s.size()));
    bytes_ += s;
  }
  void Key(const std::string& key, uint32_t type) {
    Str(key);
    Pod(type);
    ++count_;
  }
  std::string bytes_;
  uint64_t count_ = 0;
};

GgufWriter SmallGguf(const std::string& model, const std::vector<std::string>& merges,
                     size_t type_count) {
  const Vocabulary v = SmallVocabulary();
  GgufWriter w;
  w.String("general.architecture", "llama");
  w.String("tokenizer.ggml.model", model);
  w.String("tokenizer.ggml.pre", "smollm");
  w.Strings("tokenizer.ggml.tokens", v.tokens);
  std::vector<int32_t> types;
  for (size_t k = 0; k < type_count; ++k)
    types.push_back(static_cast<int32_t>(v.types[k % v.types.size()]));
  w.I32s("tokenizer.ggml.token_type", types);
  w.Strings("tokenizer.ggml.merges", merges);
  w.U32("tokenizer.ggml.bos_token_id", kBos);
  w.U32("tokenizer.ggml.eos_token_id", kEos);
  w.Bool("tokenizer.ggml.add_bos_token", true);
  return w;
}

TEST(Tokenizer, FromGgufReadsASmallFile) {
  const Vocabulary v = SmallVocabulary();
  const std::string path = SmallGguf("gpt2", v.merges, v.tokens.size()).Write("tok_small.gguf");
  const Tokenizer tok = Tokenizer::FromGguf(gguf::File::Open(path));
  EXPECT_EQ(tok.vocab_size(), 269);
  EXPECT_EQ(tok.vocabulary().types[kUser], TokenType::UserDefined);
  EXPECT_EQ(tok.Encode("hello world"), (std::vector<int32_t>{kBos, kHello, kWorld}));
  std::filesystem::remove(path);
}

TEST(Tokenizer, FromGgufRejectsBadMetadata) {
  const Vocabulary v = SmallVocabulary();
  std::string path = SmallGguf("llama", v.merges, v.tokens.size()).Write("tok_bad_model.gguf");
  EXPECT_TRUE(ThrowsError([&] { Tokenizer::FromGguf(gguf::File::Open(path)); },
                          ErrorCode::InvalidArgument,
                          {"tok_bad_model.gguf", "tokenizer.ggml.model", "'gpt2'", "'llama'"}));
  std::filesystem::remove(path);
  path = SmallGguf("gpt2", {"h e", "x nosuch"}, v.tokens.size()).Write("tok_bad_merge.gguf");
  EXPECT_TRUE(ThrowsError([&] { Tokenizer::FromGguf(gguf::File::Open(path)); },
                          ErrorCode::InvalidArgument,
                          {"tok_bad_merge.gguf", "tokenizer.ggml.merges[1]", "'nosuch'"}));
  std::filesystem::remove(path);
  path = SmallGguf("gpt2", v.merges, 10).Write("tok_bad_types.gguf");
  EXPECT_TRUE(ThrowsError([&] { Tokenizer::FromGguf(gguf::File::Open(path)); },
                          ErrorCode::InvalidArgument,
                          {"tok_bad_types.gguf", "tokenizer.ggml.token_type", "269", "10"}));
  std::filesystem::remove(path);
  GgufWriter w;
  w.String("general.architecture", "llama");
  w.String("tokenizer.ggml.model", "gpt2");
  path = w.Write("tok_no_tokens.gguf");
  EXPECT_TRUE(ThrowsError([&] { Tokenizer::FromGguf(gguf::File::Open(path)); },
                          ErrorCode::InvalidArgument,
                          {"tok_no_tokens.gguf", "tokenizer.ggml.tokens"}));
  std::filesystem::remove(path);
}

// A vocabulary whose token count claims more strings than the file holds is refused by the
// reader before anything is allocated for it.
TEST(Tokenizer, FromGgufRejectsAVocabularyLargerThanTheFile) {
  GgufWriter w;
  w.String("general.architecture", "llama");
  w.String("tokenizer.ggml.model", "gpt2");
  w.Strings("tokenizer.ggml.tokens", {"a", "b"});
  std::string path = w.Write("tok_huge_vocab.gguf");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The array count follows the key, the value type (9) and the element type (8).
  const std::string key = "tokenizer.ggml.tokens";
  const size_t at = bytes.find(key) + key.size() + 4 + 4;
  const uint64_t claimed = uint64_t{1} << 40;
  std::memcpy(bytes.data() + at, &claimed, 8);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_TRUE(ThrowsError([&] { Tokenizer::FromGguf(gguf::File::Open(path)); }, ErrorCode::InvalidArgument,
                          {"tok_huge_vocab.gguf", "tokenizer.ggml.tokens", "1099511627776"}));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace backplane::llm
