// BERT WordPiece as Hugging Face `tokenizers` runs it: special tokens are split out of the raw
// text; the rest is normalised (BertNormalizer: clean_text, handle_chinese_chars, NFD with
// non-spacing marks removed, lowercase), pre-tokenised (BertPreTokenizer: split on whitespace,
// each punctuation character alone) and split greedily, longest vocabulary match first.

#include "backplane/encoder/wordpiece.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <utility>

#include "backplane/error.hpp"
#include "llm/unicode.hpp"

namespace backplane::encoder {
namespace {

namespace unicode = backplane::llm::unicode;

// Code point flags (see tests/golden/gen_wordpiece_tables.py).
constexpr uint8_t kMark = 1;         // removed by strip_accents (Mn)
constexpr uint8_t kPunctuation = 2;  // a pre-token of its own
constexpr uint8_t kRemoved = 4;      // dropped by clean_text
constexpr uint8_t kWhitespace = 8;   // a space after clean_text; splits pre-tokens
constexpr uint8_t kCjk = 16;         // spaced out by handle_chinese_chars

struct FlagRange {
  char32_t first, last;
  uint8_t flags;
};
struct CccRange {
  char32_t first, last;
  uint8_t ccc;
};
struct MapEntry {
  char32_t code_point;
  uint16_t offset;
  uint8_t length;
};

#include "encoder/wordpiece_tables.inc"

template <class Range, size_t N>
constexpr bool SortedAndDisjoint(const Range (&ranges)[N]) {
  for (size_t i = 1; i < N; ++i) {
    if (ranges[i - 1].last >= ranges[i].first || ranges[i].first > ranges[i].last) return false;
  }
  return true;
}
template <size_t N>
constexpr bool SortedInPool(const MapEntry (&entries)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (i > 0 && entries[i - 1].code_point >= entries[i].code_point) return false;
    if (entries[i].offset + entries[i].length > std::size(kMapPool)) return false;
  }
  return true;
}
static_assert(SortedAndDisjoint(kFlagRanges), "kFlagRanges must be sorted and disjoint");
static_assert(SortedAndDisjoint(kCccRanges), "kCccRanges must be sorted and disjoint");
static_assert(SortedInPool(kDecompose) && SortedInPool(kLowercase),
              "kDecompose and kLowercase must be sorted and stay inside kMapPool");

// The value of the range holding cp, or 0.
template <class Range, size_t N, class Get>
uint8_t RangeValue(const Range (&ranges)[N], char32_t cp, Get get) {
  const Range* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                     [](char32_t v, const Range& r) { return v < r.first; });
  if (it == std::begin(ranges)) return 0;
  --it;
  return cp <= it->last ? get(*it) : 0;
}

uint8_t FlagsSlow(char32_t cp) {
  return RangeValue(kFlagRanges, cp, [](const FlagRange& r) { return r.flags; });
}

const std::array<uint8_t, 128> kAsciiFlags = [] {
  std::array<uint8_t, 128> t{};
  for (char32_t c = 0; c < 128; ++c) t[c] = FlagsSlow(c);
  return t;
}();

uint8_t Flags(char32_t cp) { return cp < 128 ? kAsciiFlags[cp] : FlagsSlow(cp); }

uint8_t CombiningClass(char32_t cp) {
  if (cp < 0x300) return 0;
  return RangeValue(kCccRanges, cp, [](const CccRange& r) { return r.ccc; });
}

// The mapping of cp in `table`, or nullptr.
template <size_t N>
const MapEntry* Mapped(const MapEntry (&table)[N], char32_t cp) {
  const MapEntry* it =
      std::lower_bound(std::begin(table), std::end(table), cp,
                       [](const MapEntry& e, char32_t v) { return e.code_point < v; });
  return it != std::end(table) && it->code_point == cp ? it : nullptr;
}

void AppendMapped(std::u32string& out, const MapEntry& e) {
  out.append(kMapPool + e.offset, e.length);
}

// Full canonical decomposition of cp, appended to out.
void Decompose(std::u32string& out, char32_t cp) {
  constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
  constexpr char32_t kVCount = 21, kTCount = 28, kSCount = 11172;
  if (cp < 0xC0) {
    out += cp;
  } else if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out += kLBase + s / (kVCount * kTCount);
    out += kVBase + (s % (kVCount * kTCount)) / kTCount;
    if (s % kTCount != 0) out += kTBase + s % kTCount;
  } else if (const MapEntry* e = Mapped(kDecompose, cp)) {
    AppendMapped(out, *e);
  } else {
    out += cp;
  }
}

// NFD, then the non-spacing marks dropped.
std::u32string StripAccents(const std::u32string& text) {
  std::u32string nfd;
  nfd.reserve(text.size());
  for (char32_t cp : text) Decompose(nfd, cp);
  // Canonical ordering: each run of non-starters, stably sorted by combining class.
  for (size_t i = 0; i < nfd.size();) {
    if (CombiningClass(nfd[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < nfd.size() && CombiningClass(nfd[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(nfd.begin() + static_cast<std::ptrdiff_t>(i),
                       nfd.begin() + static_cast<std::ptrdiff_t>(j), [](char32_t a, char32_t b) {
                         return CombiningClass(a) < CombiningClass(b);
                       });
    }
    i = j;
  }
  std::u32string out;
  out.reserve(nfd.size());
  for (char32_t cp : nfd) {
    if ((Flags(cp) & kMark) == 0) out += cp;
  }
  return out;
}

std::u32string Lowercase(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t cp : text) {
    if (cp < 128) {
      out += cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    } else if (const MapEntry* e = Mapped(kLowercase, cp)) {
      AppendMapped(out, *e);
    } else {
      out += cp;
    }
  }
  return out;
}

using unicode::Quote;

// Byte offset of the first invalid UTF-8 sequence in text, or npos.
size_t InvalidUtf8At(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Decoded d = unicode::DecodeUtf8(text, pos);
    if (d.code_point == unicode::kInvalid) return pos;
    pos += d.length;
  }
  return std::string_view::npos;
}

size_t CharCount(std::string_view utf8) {
  size_t n = 0;
  for (char c : utf8) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Hugging Face's WordPiece decoder clean-up, applied to each token with its leading space.
std::string Cleanup(std::string token) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    size_t at = 0;
    for (size_t hit; (hit = token.find(from, at)) != std::string::npos; at = hit + from.size()) {
      out.append(token, at, hit - at);
      out += to;
    }
    if (at == 0) continue;
    out.append(token, at, std::string::npos);
    token = std::move(out);
  }
  return token;
}

constexpr std::string_view kPrefix = "##";

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options)
    : WordPieceTokenizer(std::move(vocab), std::move(options), "vocab", false) {}

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options,
                                       std::string_view origin, bool lines)
    : options_(std::move(options)), tokens_(std::move(vocab)) {
  const std::string op = lines ? "WordPiece.FromVocabFile" : "WordPiece";
  const auto where = [&](size_t i) {
    return lines ? fmt::format("'{}' line {}", origin, i + 1) : fmt::format("vocab[{}]", i);
  };
  if (options_.max_input_chars_per_word <= 0) {
    ThrowInvalidArgument(op, "options.max_input_chars_per_word", "> 0",
                         std::to_string(options_.max_input_chars_per_word));
  }
  if (tokens_.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw Error(ErrorCode::InvalidArgument, op,
                fmt::format("{}: {} tokens do not fit int32 ids", origin, tokens_.size()));
  }
  ids_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    if (t.empty()) throw Error(ErrorCode::InvalidArgument, op, where(i) + ": empty token");
    if (const size_t bad = InvalidUtf8At(t); bad != std::string_view::npos) {
      throw Error(ErrorCode::InvalidArgument, op,
                  fmt::format("{}: token {} is not UTF-8 (byte {})", where(i), Quote(t), bad));
    }
    const auto [it, fresh] = ids_.emplace(t, static_cast<int32_t>(i));
    if (!fresh) {
      throw Error(ErrorCode::InvalidArgument, op,
                  fmt::format("{}: duplicate token {} (first at {})", where(i), Quote(t),
                              where(static_cast<size_t>(it->second))));
    }
  }
  const auto special = [&](const std::string& token, std::string_view name, bool required) {
    const int32_t id = token.empty() ? -1 : TokenId(token);
    if (id < 0 && required) {
      throw Error(ErrorCode::InvalidArgument, op,
                  fmt::format("{}: no {} token {}", origin, name, Quote(token)));
    }
    if (id >= 0 && std::none_of(specials_.begin(), specials_.end(),
                                [&](const auto& s) { return s.second == id; })) {
      specials_.emplace_back(token, id);
    }
    return id;
  };
  unk_id_ = special(options_.unk, "unk", true);
  cls_id_ = special(options_.cls, "cls", true);
  sep_id_ = special(options_.sep, "sep", true);
  pad_id_ = special(options_.pad, "pad", true);
  mask_id_ = special(options_.mask, "mask", false);
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

WordPieceTokenizer WordPieceTokenizer::FromVocabFile(const std::string& vocab_txt_path,
                                                     WordPieceOptions options) {
  constexpr std::string_view kOp = "WordPiece.FromVocabFile";
  std::ifstream in(vocab_txt_path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::InvalidArgument, kOp,
                fmt::format("cannot open vocabulary file '{}'", vocab_txt_path));
  }
  std::vector<std::string> vocab;
  for (std::string line; std::getline(in, line);) {
    // Trailing whitespace ("\r" of CRLF files included) is not part of the token.
    const size_t end = line.find_last_not_of(" \t\r\v\f");
    line.resize(end == std::string::npos ? 0 : end + 1);
    vocab.push_back(std::move(line));
  }
  if (in.bad()) {
    throw Error(ErrorCode::InvalidArgument, kOp,
                fmt::format("cannot read vocabulary file '{}'", vocab_txt_path));
  }
  return WordPieceTokenizer(std::move(vocab), std::move(options), vocab_txt_path, true);
}

int32_t WordPieceTokenizer::TokenId(std::string_view token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

bool WordPieceTokenizer::IsSpecial(int32_t id) const {
  return id == unk_id_ || id == cls_id_ || id == sep_id_ || id == pad_id_ ||
         (mask_id_ >= 0 && id == mask_id_);
}

std::vector<int32_t> WordPieceTokenizer::Tokenize(std::string_view text) const {
  std::vector<int32_t> out;
  size_t plain = 0;  // start of the text not yet tokenised
  for (size_t pos = 0; pos < text.size();) {
    // The special tokens are sorted longest first: the first that matches here wins.
    const auto hit = std::find_if(specials_.begin(), specials_.end(), [&](const auto& s) {
      return text.compare(pos, s.first.size(), s.first) == 0;
    });
    if (hit == specials_.end()) {
      ++pos;
      continue;
    }
    TokenizePlain(text.substr(plain, pos - plain), plain, out);
    out.push_back(hit->second);
    pos += hit->first.size();
    plain = pos;
  }
  TokenizePlain(text.substr(plain), plain, out);
  return out;
}

void WordPieceTokenizer::TokenizePlain(std::string_view text, size_t offset,
                                       std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::u32string chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Decoded d = unicode::DecodeUtf8(text, pos);
    if (d.code_point == unicode::kInvalid) {
      throw Error(ErrorCode::InvalidArgument, "WordPiece.Tokenize",
                  fmt::format("argument 'text' is not valid UTF-8 at byte {} (0x{:02x})",
                              offset + pos, static_cast<unsigned char>(text[pos])));
    }
    pos += d.length;
    const char32_t cp = d.code_point;
    const uint8_t f = Flags(cp);
    if (options_.clean_text && (f & kRemoved) != 0) continue;
    if (options_.clean_text && (f & kWhitespace) != 0) {
      chars += U' ';
    } else if (options_.handle_chinese_chars && (f & kCjk) != 0) {
      chars += U' ';
      chars += cp;
      chars += U' ';
    } else {
      chars += cp;
    }
  }
  if (options_.strip_accents) chars = StripAccents(chars);
  if (options_.lowercase) chars = Lowercase(chars);

  // Pre-tokenise: whitespace ends a word and is dropped; punctuation is a word of its own.
  std::string word;
  const auto flush = [&] {
    if (!word.empty()) TokenizeWord(word, out);
    word.clear();
  };
  for (char32_t cp : chars) {
    const uint8_t f = Flags(cp);
    if ((f & kWhitespace) != 0) {
      flush();
    } else if ((f & kPunctuation) != 0) {
      flush();
      unicode::AppendUtf8(word, cp);
      flush();
    } else {
      unicode::AppendUtf8(word, cp);
    }
  }
  flush();
}

void WordPieceTokenizer::TokenizeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (CharCount(word) > static_cast<size_t>(options_.max_input_chars_per_word)) {
    out.push_back(unk_id_);
    return;
  }
  const size_t first = out.size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    int32_t id = -1;
    size_t end = word.size();
    for (; end > start; --end) {
      if (end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) {
        continue;  // not a character boundary
      }
      const std::string_view piece = word.substr(start, end - start);
      if (start == 0) {
        id = TokenId(piece);
      } else {
        candidate.assign(kPrefix);
        candidate += piece;
        id = TokenId(candidate);
      }
      if (id >= 0) break;
    }
    if (id < 0) {  // no piece matches: the whole word is unknown
      out.resize(first);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(id);
    start = end;
  }
}

Encoding WordPieceTokenizer::Encode(std::string_view text, int max_length) const {
  if (max_length < 0 || max_length == 1) {
    ThrowInvalidArgument("WordPiece.Encode", "max_length", "0 (no limit) or >= 2",
                         std::to_string(max_length));
  }
  std::vector<int32_t> tokens = Tokenize(text);
  if (max_length > 0 && tokens.size() + 2 > static_cast<size_t>(max_length)) {
    tokens.resize(static_cast<size_t>(max_length) - 2);
  }
  Encoding e;
  e.ids.reserve(tokens.size() + 2);
  e.ids.push_back(cls_id_);
  e.ids.insert(e.ids.end(), tokens.begin(), tokens.end());
  e.ids.push_back(sep_id_);
  e.type_ids.assign(e.ids.size(), 0);
  e.attention_mask.assign(e.ids.size(), 1);
  return e;
}

std::vector<Encoding> WordPieceTokenizer::EncodeBatch(const std::vector<std::string>& texts,
                                                      int max_length) const {
  std::vector<Encoding> out;
  out.reserve(texts.size());
  size_t longest = 0;
  for (const std::string& text : texts) {
    out.push_back(Encode(text, max_length));
    longest = std::max(longest, out.back().ids.size());
  }
  for (Encoding& e : out) {
    e.ids.resize(longest, pad_id_);
    e.type_ids.resize(longest, 0);
    e.attention_mask.resize(longest, 0);
  }
  return out;
}

std::string WordPieceTokenizer::Decode(std::span<const int32_t> ids) const {
  std::string out;
  bool first = true;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) {
      ThrowInvalidArgument("WordPiece.Decode", fmt::format("ids[{}]", k),
                           fmt::format("a token id in [0, {})", tokens_.size()),
                           std::to_string(id));
    }
    if (IsSpecial(id)) continue;
    const std::string& token = tokens_[static_cast<size_t>(id)];
    std::string piece;
    if (first) {
      piece = token;
    } else if (token.starts_with(kPrefix)) {
      piece = token.substr(kPrefix.size());
    } else {
      piece = " " + token;
    }
    first = false;
    out += Cleanup(std::move(piece));
  }
  return out;
}

}  // namespace backplane::encoder
