// Byte-level BPE as Hugging Face `tokenizers` runs it: special tokens are split out first, the
// text between them is pre-tokenised, each piece's bytes are spelled in GPT-2's byte-to-unicode
// alphabet and merged pair by pair, lowest merge rank first (leftmost on ties).

#include "backplane/llm/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <utility>

#include "backplane/error.hpp"
#include "backplane/gguf.hpp"
#include "llm/pretokenize.hpp"
#include "llm/unicode.hpp"

namespace backplane::llm {
namespace {

constexpr std::string_view kOp = "Tokenizer";

[[noreturn]] void Fail(std::string_view field, std::string_view what) {
  throw Error(ErrorCode::InvalidArgument, kOp, fmt::format("{}: {}", field, what));
}

using unicode::Quote;

// GPT-2's byte-to-unicode alphabet: printable Latin-1 bytes stand for themselves, the other 68
// bytes for U+0100.. in byte order.
struct ByteAlphabet {
  std::array<char32_t, 256> code_point{};
  std::array<std::string, 256> utf8;
  std::array<int16_t, 0x144> byte_of{};  // code point -> byte, -1 outside the alphabet

  ByteAlphabet() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      code_point[b] = printable ? static_cast<char32_t>(b) : next++;
      unicode::AppendUtf8(utf8[b], code_point[b]);
      byte_of[code_point[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

// The bytes a token spelled in the byte alphabet stands for; characters outside the alphabet
// stand for their own UTF-8 (as in `tokenizers`' ByteLevel decoder).
std::string SpelledToBytes(std::string_view text) {
  const ByteAlphabet& a = Alphabet();
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Decoded d = unicode::DecodeUtf8(text, pos);
    if (d.code_point < a.byte_of.size() && a.byte_of[d.code_point] >= 0) {
      out += static_cast<char>(a.byte_of[d.code_point]);
    } else {
      out.append(text.substr(pos, d.length));
    }
    pos += d.length;
  }
  return out;
}

uint64_t Mix(uint64_t x) {  // a 64-bit finaliser (splitmix64's)
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t HashText(std::string_view text) {  // FNV-1a, then mixed
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return Mix(h);
}

// A power of two at least twice `count`: open addressing with linear probing stays short.
size_t TableSize(size_t count) {
  size_t size = 16;
  while (size < 2 * count) size *= 2;
  return size;
}

// Token text -> id, the texts owned by the vocabulary. Inserting a text again replaces its id
// (the last one wins, as in Hugging Face's and llama.cpp's maps).
class TokenIndex {
 public:
  void Build(const std::vector<std::string>& tokens) {
    tokens_ = &tokens;
    slots_.assign(TableSize(tokens.size()), Slot{});
    mask_ = slots_.size() - 1;
    for (size_t id = 0; id < tokens.size(); ++id) {
      const uint64_t h = HashText(tokens[id]);
      size_t k = h & mask_;
      while (slots_[k].id >= 0 && !Same(slots_[k], h, tokens[id])) k = (k + 1) & mask_;
      slots_[k] = {static_cast<int32_t>(id), static_cast<uint32_t>(h >> 32)};
    }
  }
  int32_t Find(std::string_view text) const {  // -1 when absent
    const uint64_t h = HashText(text);
    for (size_t k = h & mask_;; k = (k + 1) & mask_) {
      if (slots_[k].id < 0) return -1;
      if (Same(slots_[k], h, text)) return slots_[k].id;
    }
  }

 private:
  struct Slot {
    int32_t id = -1;
    uint32_t tag = 0;  // the hash's high half
  };
  bool Same(const Slot& s, uint64_t h, std::string_view text) const {
    return s.tag == static_cast<uint32_t>(h >> 32) && (*tokens_)[s.id] == text;
  }
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

struct Merge {
  int32_t rank = -1;  // -1: no merge
  int32_t result = -1;
};

// (left id, right id) -> merge rank and result. Inserting a pair again keeps the first (the
// higher priority), as llama.cpp does.
class MergeTable {
 public:
  void Reserve(size_t count) {
    slots_.assign(TableSize(count), Slot{});
    mask_ = slots_.size() - 1;
  }
  void Insert(int32_t left, int32_t right, Merge merge) {
    const uint64_t key = Key(left, right);
    size_t k = Mix(key) & mask_;
    while (slots_[k].key != kEmpty) {
      if (slots_[k].key == key) return;
      k = (k + 1) & mask_;
    }
    slots_[k] = {key, merge};
  }
  Merge Find(int32_t left, int32_t right) const {
    const uint64_t key = Key(left, right);
    for (size_t k = Mix(key) & mask_;; k = (k + 1) & mask_) {
      if (slots_[k].key == key) return slots_[k].merge;
      if (slots_[k].key == kEmpty) return {};
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are below 2^31: no pair has this key
  static uint64_t Key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

struct SpecialToken {
  std::string text;
  int32_t id;
  bool control;  // only matched when parse_special is set
};

// The end-of-turn token text of the chat template's format.
std::string_view EndOfTurnText(std::string_view chat_template) {
  if (chat_template.find("<|im_start|>") != std::string_view::npos) return "<|im_end|>";
  if (chat_template.find("<|start_header_id|>") != std::string_view::npos) return "<|eot_id|>";
  return {};
}

}  // namespace

struct Tokenizer::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;  // token_id points into vocab.tokens
  Impl& operator=(const Impl&) = delete;

  Vocabulary vocab;
  PreTokenizer pre = PreTokenizer::Gpt2;
  bool ignore_merges = false;  // a piece that is a whole token stays whole (Llama 3)
  TokenIndex token_id;         // spelled text -> id
  std::vector<std::string> token_bytes;
  std::array<int32_t, 256> byte_token{};  // the token of one byte, -1 when the vocabulary has none
  MergeTable merges;
  std::array<std::vector<SpecialToken>, 256> specials;  // by first byte, longest first
  int32_t end_of_turn = -1;

  // Buffers reused across the pieces of one Encode call.
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // -1 at the ends
  };
  struct Candidate {
    int32_t rank, left, right;
    int32_t left_id, right_id;
  };
  struct Scratch {
    std::vector<std::string_view> pieces;
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string spelled;
  };

  void EncodePiece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const;
  void EncodeText(std::string_view text, Scratch& scratch, std::vector<int32_t>& out) const;
};

Tokenizer::Tokenizer(Vocabulary vocabulary) {
  auto impl = std::make_shared<Impl>();
  impl->vocab = std::move(vocabulary);
  const Vocabulary& v = impl->vocab;

  if (v.tokens.empty()) Fail("tokenizer.ggml.tokens", "the vocabulary is empty");
  if (v.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    Fail("tokenizer.ggml.tokens", fmt::format("{} tokens do not fit int32 ids", v.tokens.size()));
  }
  const auto n = static_cast<int32_t>(v.tokens.size());
  if (v.types.size() != v.tokens.size()) {
    Fail("tokenizer.ggml.token_type",
         fmt::format("must have one entry per token ({}), got {}", n, v.types.size()));
  }
  for (size_t k = 0; k < v.types.size(); ++k) {
    const auto t = static_cast<int32_t>(v.types[k]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
      Fail(fmt::format("tokenizer.ggml.token_type[{}]", k),
           fmt::format("must be a token type in [0, 6], got {}", t));
    }
  }
  const std::pair<const char*, int32_t> ids[] = {{"tokenizer.ggml.bos_token_id", v.bos},
                                                 {"tokenizer.ggml.eos_token_id", v.eos},
                                                 {"tokenizer.ggml.unknown_token_id", v.unk},
                                                 {"tokenizer.ggml.padding_token_id", v.pad},
                                                 {"tokenizer.ggml.eot_token_id", v.eot}};
  for (const auto& [key, id] : ids) {
    if (id < -1 || id >= n) {
      Fail(key, fmt::format("must be -1 (none) or a token id in [0, {}), got {}", n, id));
    }
  }
  if (v.add_bos && v.bos < 0) {
    Fail("tokenizer.ggml.add_bos_token", "is set but there is no BOS token");
  }
  if (v.add_eos && v.eos < 0) {
    Fail("tokenizer.ggml.add_eos_token", "is set but there is no EOS token");
  }
  const std::optional<PreTokenizer> pre = PreTokenizerFromName(v.pre);
  if (!pre) {
    Fail("tokenizer.ggml.pre",
         fmt::format("must be one of {}, got {}", PreTokenizerNames(), Quote(v.pre)));
  }
  impl->pre = *pre;
  impl->ignore_merges = *pre == PreTokenizer::Llama3;  // as llama.cpp and Llama 3's tokenizer.json

  impl->token_id.Build(v.tokens);
  impl->token_bytes.resize(v.tokens.size());
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = v.tokens[id];
    const TokenType type = v.types[id];
    const bool special = type == TokenType::Control || type == TokenType::UserDefined;
    impl->token_bytes[id] = special ? text : SpelledToBytes(text);
    if (special && !text.empty()) {
      impl->specials[static_cast<unsigned char>(text[0])].push_back(
          {text, id, type == TokenType::Control});
    }
  }
  for (auto& bucket : impl->specials) {
    std::stable_sort(
        bucket.begin(), bucket.end(),
        [](const SpecialToken& a, const SpecialToken& b) { return a.text.size() > b.text.size(); });
  }
  const ByteAlphabet& alphabet = Alphabet();
  for (int b = 0; b < 256; ++b) {
    impl->byte_token[b] = impl->token_id.Find(alphabet.utf8[b]);
  }

  if (v.merges.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    Fail("tokenizer.ggml.merges", fmt::format("{} merges do not fit int32 ranks", v.merges.size()));
  }
  impl->merges.Reserve(v.merges.size());
  std::string joined;
  const auto lookup = [&](size_t k, std::string_view merge, std::string_view part) {
    const int32_t id = impl->token_id.Find(part);
    if (id < 0) {
      Fail(fmt::format("tokenizer.ggml.merges[{}]", k),
           fmt::format("{} names {}, which is not a token", Quote(merge), Quote(part)));
    }
    return id;
  };
  for (size_t k = 0; k < v.merges.size(); ++k) {
    const std::string& merge = v.merges[k];
    const size_t space = merge.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string::npos) {
      Fail(fmt::format("tokenizer.ggml.merges[{}]", k),
           fmt::format("must be two tokens separated by one space, got {}", Quote(merge)));
    }
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    const int32_t left_id = lookup(k, merge, left);
    const int32_t right_id = lookup(k, merge, right);
    joined.assign(left).append(right);
    const int32_t result = lookup(k, merge, joined);
    impl->merges.Insert(left_id, right_id, Merge{static_cast<int32_t>(k), result});
  }

  const std::string_view end_of_turn = EndOfTurnText(v.chat_template);
  if (!end_of_turn.empty()) {
    impl->end_of_turn = impl->token_id.Find(end_of_turn);
  }
  impl_ = std::move(impl);
}

void Tokenizer::Impl::EncodePiece(std::string_view piece, Scratch& scratch,
                                  std::vector<int32_t>& out) const {
  const ByteAlphabet& alphabet = Alphabet();
  if (ignore_merges && piece.size() > 1) {
    scratch.spelled.clear();
    for (char c : piece) scratch.spelled += alphabet.utf8[static_cast<unsigned char>(c)];
    const int32_t id = token_id.Find(scratch.spelled);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  for (char c : piece) {
    const int32_t id = byte_token[static_cast<unsigned char>(c)];
    if (id < 0) continue;  // no token for this byte: left out, as `tokenizers` does
    const auto k = static_cast<int32_t>(symbols.size());
    if (k > 0) symbols.back().next = k;
    symbols.push_back({id, k - 1, -1});
  }
  if (symbols.size() == 1) {
    out.push_back(symbols[0].id);
    return;
  }
  // Lowest rank first, leftmost on ties; an entry is stale once either side has merged since.
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  std::vector<Candidate>& heap = scratch.heap;
  heap.clear();
  const auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    const Merge m = merges.Find(symbols[left].id, symbols[right].id);
    if (m.rank < 0) return;
    heap.push_back({m.rank, left, right, symbols[left].id, symbols[right].id});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t k = 0; k + 1 < static_cast<int32_t>(symbols.size()); ++k) consider(k);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    if (left.id != c.left_id || left.next != c.right || right.id != c.right_id) continue;
    left.id = merges.Find(c.left_id, c.right_id).result;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    right.id = -1;
    consider(left.prev);
    consider(c.left);
  }
  for (int32_t k = symbols.empty() ? -1 : 0; k >= 0; k = symbols[k].next)
    out.push_back(symbols[k].id);
}

void Tokenizer::Impl::EncodeText(std::string_view text, Scratch& scratch,
                                 std::vector<int32_t>& out) const {
  scratch.pieces.clear();
  PreTokenize(pre, text, scratch.pieces);
  for (std::string_view piece : scratch.pieces) EncodePiece(piece, scratch, out);
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Impl& impl = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && impl.vocab.add_bos) out.push_back(impl.vocab.bos);
  // Special tokens are found leftmost first, the longest at a position.
  Impl::Scratch scratch;
  size_t segment = 0;
  for (size_t pos = 0; pos < text.size();) {
    const SpecialToken* match = nullptr;
    for (const SpecialToken& s : impl.specials[static_cast<unsigned char>(text[pos])]) {
      if ((parse_special || !s.control) && text.substr(pos, s.text.size()) == s.text) {
        match = &s;
        break;
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    impl.EncodeText(text.substr(segment, pos - segment), scratch, out);
    out.push_back(match->id);
    pos += match->text.size();
    segment = pos;
  }
  impl.EncodeText(text.substr(segment), scratch, out);
  if (add_special && impl.vocab.add_eos) out.push_back(impl.vocab.eos);
  return out;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  const Impl& impl = *impl_;
  std::string out;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    if (id < 0 || id >= vocab_size()) {
      ThrowInvalidArgument("Tokenizer.Decode", fmt::format("ids[{}]", k),
                           fmt::format("a token id in [0, {})", vocab_size()), std::to_string(id));
    }
    if (skip_special && impl.vocab.types[id] == TokenType::Control) continue;
    out += impl.token_bytes[id];
  }
  return out;
}

std::string Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    ThrowInvalidArgument("Tokenizer.TokenBytes", "id",
                         fmt::format("a token id in [0, {})", vocab_size()), std::to_string(id));
  }
  return impl_->token_bytes[id];
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }
int32_t Tokenizer::bos() const { return impl_->vocab.bos; }
int32_t Tokenizer::eos() const { return impl_->vocab.eos; }

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  const Impl& impl = *impl_;
  return id >= 0 && (id == impl.vocab.eos || id == impl.vocab.eot || id == impl.end_of_turn);
}

const Vocabulary& Tokenizer::vocabulary() const { return impl_->vocab; }

Tokenizer Tokenizer::FromGguf(const gguf::File& file) {
  const std::string& path = file.path();
  const auto fail = [&](std::string_view key, std::string_view what) {
    throw Error(ErrorCode::InvalidArgument, path, fmt::format("{}: {}", key, what));
  };
  const std::string model = file.GetString("tokenizer.ggml.model");
  if (model != "gpt2") {
    fail("tokenizer.ggml.model",
         fmt::format("must be 'gpt2' (byte-level BPE), got {}", Quote(model)));
  }
  Vocabulary v;
  v.tokens = file.GetStringArray("tokenizer.ggml.tokens");
  if (file.Find("tokenizer.ggml.token_type") != nullptr) {
    const std::vector<int64_t> types = file.GetIntArray("tokenizer.ggml.token_type");
    if (types.size() != v.tokens.size()) {
      fail("tokenizer.ggml.token_type", fmt::format("must have one entry per token ({}), got {}",
                                                    v.tokens.size(), types.size()));
    }
    v.types.reserve(types.size());
    for (size_t k = 0; k < types.size(); ++k) {
      if (types[k] < 0 || types[k] > static_cast<int64_t>(TokenType::Byte)) {
        fail(fmt::format("tokenizer.ggml.token_type[{}]", k),
             fmt::format("must be a token type in [0, 6], got {}", types[k]));
      }
      v.types.push_back(static_cast<TokenType>(types[k]));
    }
  } else {
    v.types.assign(v.tokens.size(), TokenType::Normal);  // llama.cpp's default
  }
  v.merges = file.GetStringArray("tokenizer.ggml.merges");
  if (file.Find("tokenizer.ggml.pre") != nullptr) v.pre = file.GetString("tokenizer.ggml.pre");
  const std::pair<const char*, int32_t*> ids[] = {{"tokenizer.ggml.bos_token_id", &v.bos},
                                                  {"tokenizer.ggml.eos_token_id", &v.eos},
                                                  {"tokenizer.ggml.unknown_token_id", &v.unk},
                                                  {"tokenizer.ggml.padding_token_id", &v.pad},
                                                  {"tokenizer.ggml.eot_token_id", &v.eot}};
  for (const auto& [key, id] : ids) {
    if (file.Find(key) == nullptr) continue;
    const int64_t value = file.GetInt(key);
    if (value < 0 || value >= static_cast<int64_t>(v.tokens.size())) {
      fail(key, fmt::format("must be a token id in [0, {}), got {}", v.tokens.size(), value));
    }
    *id = static_cast<int32_t>(value);
  }
  if (file.Find("tokenizer.ggml.add_bos_token") != nullptr) {
    v.add_bos = file.GetBool("tokenizer.ggml.add_bos_token");
  }
  if (file.Find("tokenizer.ggml.add_eos_token") != nullptr) {
    v.add_eos = file.GetBool("tokenizer.ggml.add_eos_token");
  }
  if (file.Find("tokenizer.chat_template") != nullptr) {
    v.chat_template = file.GetString("tokenizer.chat_template");
  }
  try {
    return Tokenizer(std::move(v));
  } catch (const Error& e) {
    throw Error(e.code(), path, e.what());
  }
}

}  // namespace backplane::llm
