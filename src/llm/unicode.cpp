#include "llm/unicode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace backplane::llm::unicode {
namespace {

struct Range {
  char32_t first, last;
  uint8_t flags;
};

constexpr Range kRanges[] = {
#include "llm/unicode_tables.inc"
};

constexpr bool SortedAndDisjoint() {
  for (size_t i = 1; i < std::size(kRanges); ++i) {
    if (kRanges[i - 1].last >= kRanges[i].first || kRanges[i].first > kRanges[i].last) return false;
  }
  return true;
}
static_assert(SortedAndDisjoint(), "unicode_tables.inc must hold sorted, disjoint ranges");

uint8_t LookUp(char32_t cp) {
  const Range* end = std::end(kRanges);
  const Range* it = std::upper_bound(std::begin(kRanges), end, cp,
                                     [](char32_t v, const Range& r) { return v < r.first; });
  if (it == std::begin(kRanges)) return 0;
  --it;
  return cp <= it->last ? it->flags : 0;
}

const std::array<uint8_t, 128> kAsciiFlags = [] {
  std::array<uint8_t, 128> t{};
  for (char32_t c = 0; c < 128; ++c) t[c] = LookUp(c);
  return t;
}();

bool IsContinuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

Decoded DecodeUtf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return {b0, 1};
  const size_t left = text.size() - pos;
  size_t length;
  char32_t cp;
  char32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {kInvalid, 1};
  }
  if (left < length) return {kInvalid, 1};
  for (size_t i = 1; i < length; ++i) {
    if (!IsContinuation(byte(i))) return {kInvalid, 1};
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalid, 1};
  return {cp, length};
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint8_t Flags(char32_t cp) {
  if (cp < 128) return kAsciiFlags[cp];
  if (cp == kInvalid) return 0;
  return LookUp(cp);
}

std::string Quote(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t k = 0; k < text.size() && k < kMaxShown; ++k) {
    const auto c = static_cast<unsigned char>(text[k]);
    if (c < 0x20 || c == 0x7f || c == '\'') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += text.size() > kMaxShown ? fmt::format("...' ({} bytes)", text.size()) : "'";
  return out;
}

}  // namespace backplane::llm::unicode
