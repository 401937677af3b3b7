// Chat templates: the Jinja source is not run; the two formats below are recognised by their
// markers and rendered as their templates render them.
//   ChatML (contains "<|im_start|>"): "<|im_start|>{role}\n{content}<|im_end|>\n" per message,
//     preceded by the template's default system message when the first message is not a system
//     one (a literal '<|im_start|>system\n...<|im_end|>' in the template, as in SmolLM2's and
//     Qwen2's); generation prompt "<|im_start|>assistant\n".
//   Llama 3.0 (contains "<|start_header_id|>"): the BOS text first when the template writes
//     bos_token, then "<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>" with
//     the content trimmed when the template trims it; generation prompt
//     "<|start_header_id|>assistant<|end_header_id|>\n\n". Llama 3.1's template (a dated default
//     system message, tools) is not recognised.

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "backplane/error.hpp"
#include "backplane/llm/tokenizer.hpp"
#include "llm/unicode.hpp"

namespace backplane::llm {
namespace {

constexpr std::string_view kOp = "Tokenizer.ApplyChatTemplate";

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The text of a template string literal with its backslash escapes resolved; nullopt when it
// holds an escape other than \n \t \\ \' \".
std::optional<std::string> Unescape(std::string_view literal) {
  std::string out;
  for (size_t k = 0; k < literal.size(); ++k) {
    if (literal[k] != '\\') {
      out += literal[k];
      continue;
    }
    if (++k == literal.size()) return std::nullopt;
    switch (literal[k]) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case '\\':
      case '\'':
      case '"':
        out += literal[k];
        break;
      default:
        return std::nullopt;
    }
  }
  return out;
}

// The default system message of a ChatML template: the content of a string literal that reads
// '<|im_start|>system\n<content><|im_end|>' (the newline written as is or as \n).
std::optional<std::string> DefaultSystemMessage(std::string_view tmpl) {
  constexpr std::string_view kHead = "<|im_start|>system";
  constexpr std::string_view kEnd = "<|im_end|>";
  for (size_t at = tmpl.find(kHead); at != std::string_view::npos; at = tmpl.find(kHead, at + 1)) {
    const size_t quote_at = tmpl.find_last_of("'\"", at);
    if (quote_at == std::string_view::npos) continue;
    const char quote = tmpl[quote_at];
    if (tmpl.substr(quote_at + 1, at - quote_at - 1).find_first_not_of(" ") !=
        std::string_view::npos) {
      continue;  // the literal does not start with the head
    }
    size_t begin = at + kHead.size();
    if (tmpl.substr(begin, 1) == "\n") {
      begin += 1;
    } else if (tmpl.substr(begin, 2) == "\\n") {
      begin += 2;
    } else {
      continue;
    }
    const size_t end = tmpl.find(kEnd, begin);
    if (end == std::string_view::npos) continue;
    const std::string_view raw = tmpl.substr(begin, end - begin);
    bool closed = false;  // an unescaped quote: the literal ends before <|im_end|>
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '\\')
        ++k;
      else if (raw[k] == quote)
        closed = true;
    }
    if (closed) continue;
    if (std::optional<std::string> text = Unescape(raw)) return text;
  }
  return std::nullopt;
}

// Jinja's trim (Python's str.strip), with White_Space as the whitespace.
std::string Trim(std::string_view text) {
  size_t begin = text.size(), end = 0;
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Decoded d = unicode::DecodeUtf8(text, pos);
    if (!(unicode::Flags(d.code_point) & unicode::kWhitespace)) {
      begin = std::min(begin, pos);
      end = pos + d.length;
    }
    pos += d.length;
  }
  return begin < end ? std::string(text.substr(begin, end - begin)) : std::string();
}

// The start of a template for a one-line message, control bytes escaped.
std::string Excerpt(std::string_view tmpl) {
  if (tmpl.empty()) return "an empty template";
  std::string out = "'";
  for (size_t k = 0; k < tmpl.size() && k < 60; ++k) {
    const auto c = static_cast<unsigned char>(tmpl[k]);
    out += c < 0x20 ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  }
  return out + (tmpl.size() > 60 ? "...'" : "'");
}

}  // namespace

std::string Tokenizer::ApplyChatTemplate(std::span<const ChatMessage> messages,
                                         bool add_generation_prompt) const {
  const Vocabulary& v = vocabulary();
  const std::string_view tmpl = v.chat_template;
  std::string out;
  if (Contains(tmpl, "<|im_start|>")) {
    if (!messages.empty() && messages[0].role != "system") {
      if (std::optional<std::string> system = DefaultSystemMessage(tmpl)) {
        out += "<|im_start|>system\n" + *system + "<|im_end|>\n";
      }
    }
    for (const ChatMessage& m : messages) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }
  if (Contains(tmpl, "<|start_header_id|>") && !Contains(tmpl, "Cutting Knowledge Date")) {
    const bool trim = Contains(tmpl, "trim");
    if (!messages.empty() && Contains(tmpl, "bos_token") && v.bos >= 0) out += v.tokens[v.bos];
    for (const ChatMessage& m : messages) {
      out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" +
             (trim ? Trim(m.content) : m.content) + "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
  }
  ThrowInvalidArgument(kOp, "tokenizer.chat_template",
                       "a ChatML (<|im_start|>) or Llama 3.0 (<|start_header_id|>) template",
                       Excerpt(tmpl));
}

}  // namespace backplane::llm
