// The pre-tokeniser: splits text into the pieces BPE runs on, as the regex of the vocabulary's
// tokenizer.ggml.pre would (hand-written matchers, one per regex; no std::regex).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace backplane::llm {

enum class PreTokenizer {
  // GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2,
  // SmolLM / StarCoder: every \p{N} is a piece of its own, then GPT-2 on the text between.
  SmolLm,
  // Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
  //          | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
};

// The pre-tokeniser named by a tokenizer.ggml.pre value (llama.cpp's names); nullopt if unknown.
std::optional<PreTokenizer> PreTokenizerFromName(std::string_view name);
// The names PreTokenizerFromName accepts, for error messages: "gpt2, gpt-2, ...".
std::string_view PreTokenizerNames();

// Appends the pieces of `text`, in order; they cover the text exactly. Bytes that are not valid
// UTF-8 count as one character each, of no class (like punctuation).
void PreTokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& pieces);

}  // namespace backplane::llm
