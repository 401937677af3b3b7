#include "llm/pretokenize.hpp"

#include <cstdint>

#include "llm/unicode.hpp"

namespace backplane::llm {
namespace {

// The text decoded once: code point, class flags and byte offset of each character.
struct Chars {
  std::vector<char32_t> cp;
  std::vector<uint8_t> flags;
  std::vector<size_t> offset;  // one more than characters: offset.back() == text size

  explicit Chars(std::string_view text) {
    cp.reserve(text.size());
    flags.reserve(text.size());
    offset.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
      const unicode::Decoded d = unicode::DecodeUtf8(text, pos);
      cp.push_back(d.code_point);
      flags.push_back(unicode::Flags(d.code_point));
      offset.push_back(pos);
      pos += d.length;
    }
    offset.push_back(text.size());
  }
  size_t size() const { return cp.size(); }
  bool L(size_t i) const { return flags[i] & unicode::kLetter; }
  bool N(size_t i) const { return flags[i] & unicode::kNumber; }
  bool S(size_t i) const { return flags[i] & unicode::kWhitespace; }
  // [^\s\p{L}\p{N}]
  bool Other(size_t i) const { return flags[i] == 0; }
  bool CrLf(size_t i) const { return cp[i] == '\r' || cp[i] == '\n'; }
};

template <class Pred>
size_t RunEnd(size_t i, size_t end, Pred pred) {
  while (i < end && pred(i)) ++i;
  return i;
}

// \s+(?!\S)|\s+ at a whitespace character i: the whole run when it ends the text, else all but
// its last character (which then leads the next piece), else that one character.
size_t MatchWhitespace(const Chars& c, size_t i, size_t end) {
  const size_t k = RunEnd(i, end, [&](size_t j) { return c.S(j); });
  if (k == end || k - i == 1) return k - i;
  return k - i - 1;
}

// The length in characters of the GPT-2 regex's match at i (i < end).
size_t MatchGpt2(const Chars& c, size_t i, size_t end) {
  if (c.cp[i] == '\'' && i + 1 < end) {
    const char32_t a = c.cp[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 < end) {
      const char32_t b = c.cp[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
  }
  // ` ?X+` for X in \p{L}, \p{N}, [^\s\p{L}\p{N}]
  const size_t start = (c.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
  if (c.L(start)) return RunEnd(start, end, [&](size_t j) { return c.L(j); }) - i;
  if (c.N(start)) return RunEnd(start, end, [&](size_t j) { return c.N(j); }) - i;
  if (c.Other(start)) return RunEnd(start, end, [&](size_t j) { return c.Other(j); }) - i;
  if (c.S(i)) return MatchWhitespace(c, i, end);
  return 1;
}

bool FoldsToAsciiLetter(char32_t cp, char lower) {
  // (?i) uses Unicode case folding: only U+017F LATIN SMALL LETTER LONG S folds onto one of the
  // contraction letters besides their ASCII capitals.
  return cp == static_cast<char32_t>(lower) || cp == static_cast<char32_t>(lower - 'a' + 'A') ||
         (lower == 's' && cp == 0x17F);
}

// The length in characters of the Llama-3 regex's match at i (i < end).
size_t MatchLlama3(const Chars& c, size_t i, size_t end) {
  if (c.cp[i] == '\'' && i + 1 < end) {
    const char32_t a = c.cp[i + 1];
    if (FoldsToAsciiLetter(a, 's') || FoldsToAsciiLetter(a, 't') || FoldsToAsciiLetter(a, 'm') ||
        FoldsToAsciiLetter(a, 'd')) {
      return 2;
    }
    if (i + 2 < end) {
      const char32_t b = c.cp[i + 2];
      if ((FoldsToAsciiLetter(a, 'r') && FoldsToAsciiLetter(b, 'e')) ||
          (FoldsToAsciiLetter(a, 'v') && FoldsToAsciiLetter(b, 'e')) ||
          (FoldsToAsciiLetter(a, 'l') && FoldsToAsciiLetter(b, 'l'))) {
        return 3;
      }
    }
  }
  const auto letters = [&](size_t j) { return c.L(j); };
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.L(i)) return RunEnd(i, end, letters) - i;
  if (!c.CrLf(i) && !c.N(i) && i + 1 < end && c.L(i + 1)) return RunEnd(i + 1, end, letters) - i;
  // \p{N}{1,3}
  if (c.N(i)) {
    size_t k = i + 1;
    while (k < end && k < i + 3 && c.N(k)) ++k;
    return k - i;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  const size_t start = (c.cp[i] == ' ' && i + 1 < end) ? i + 1 : i;
  if (c.Other(start)) {
    const size_t k = RunEnd(start, end, [&](size_t j) { return c.Other(j); });
    return RunEnd(k, end, [&](size_t j) { return c.CrLf(j); }) - i;
  }
  if (c.S(i)) {
    // \s*[\r\n]+: up to and including the run's last \r or \n.
    const size_t k = RunEnd(i, end, [&](size_t j) { return c.S(j); });
    for (size_t j = k; j > i; --j) {
      if (c.CrLf(j - 1)) return j - i;
    }
    return MatchWhitespace(c, i, end);
  }
  return 1;
}

template <class Match>
void SplitRange(const Chars& c, size_t begin, size_t end, Match match, std::string_view text,
                std::vector<std::string_view>& pieces) {
  for (size_t i = begin; i < end;) {
    const size_t n = match(c, i, end);
    pieces.push_back(text.substr(c.offset[i], c.offset[i + n] - c.offset[i]));
    i += n;
  }
}

}  // namespace

std::optional<PreTokenizer> PreTokenizerFromName(std::string_view name) {
  if (name == "gpt2" || name == "gpt-2") return PreTokenizer::Gpt2;
  if (name == "smollm" || name == "starcoder") return PreTokenizer::SmolLm;
  if (name == "llama3" || name == "llama-v3" || name == "llama-bpe") return PreTokenizer::Llama3;
  return std::nullopt;
}

std::string_view PreTokenizerNames() {
  return "gpt2, gpt-2, smollm, starcoder, llama3, llama-v3, llama-bpe";
}

void PreTokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& pieces) {
  const Chars c(text);
  switch (kind) {
    case PreTokenizer::Gpt2:
      SplitRange(c, 0, c.size(), MatchGpt2, text, pieces);
      return;
    case PreTokenizer::Llama3:
      SplitRange(c, 0, c.size(), MatchLlama3, text, pieces);
      return;
    case PreTokenizer::SmolLm:
      for (size_t i = 0; i < c.size();) {
        if (c.N(i)) {
          pieces.push_back(text.substr(c.offset[i], c.offset[i + 1] - c.offset[i]));
          ++i;
          continue;
        }
        const size_t k = RunEnd(i, c.size(), [&](size_t j) { return !c.N(j); });
        SplitRange(c, i, k, MatchGpt2, text, pieces);
        i = k;
      }
      return;
  }
}

}  // namespace backplane::llm
