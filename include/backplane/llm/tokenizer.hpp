// Byte-level BPE tokenizer (GPT-2 style, as Hugging Face `tokenizers` and llama.cpp run it), built
// from a GGUF file's tokenizer.ggml.* metadata: tokens, merges, token types, the pre-tokeniser
// name (tokenizer.ggml.pre), special token ids and the chat template.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace backplane::gguf {
class File;
}

namespace backplane::llm {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6
};

struct Vocabulary {
  std::vector<std::string> tokens;  // token text in GPT-2's byte-to-unicode alphabet
  std::vector<TokenType> types;     // same length as tokens
  std::vector<std::string> merges;  // "left right", highest priority first
  std::string pre = "gpt2";         // pre-tokeniser: "gpt2", "smollm", "llama3", ...
  int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1;
  bool add_bos = false, add_eos = false;
  std::string chat_template;  // tokenizer.chat_template (Jinja source), may be empty
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class Tokenizer {
 public:
  explicit Tokenizer(Vocabulary vocabulary);
  // Reads tokenizer.ggml.model (must be "gpt2"), tokens, merges, token_type, pre and the special
  // token ids; throws InvalidArgument naming the file and the key on missing or bad metadata.
  static Tokenizer FromGguf(const gguf::File& file);

  // `add_special`: prepend BOS / append EOS where the vocabulary asks for it.
  // `parse_special`: control tokens written in the text ("<|im_start|>") become their ids;
  // otherwise they are tokenised as plain text. User-defined tokens always become their ids (as
  // in llama.cpp and Hugging Face). Matching is leftmost first, the longest at a position.
  // A byte the vocabulary has no token for is left out before merging, as Hugging Face's BPE
  // does without an unknown token (SmolLM2's vocabulary lacks 21 of the 256 bytes, e.g. 0xFF).
  std::vector<int32_t> Encode(std::string_view text, bool add_special = true,
                              bool parse_special = true) const;
  // The UTF-8 bytes of the tokens (control tokens included unless skip_special).
  std::string Decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // The bytes one token stands for (a piece of UTF-8, possibly incomplete); throws on a bad id.
  std::string TokenBytes(int32_t id) const;

  // The conversation rendered with the vocabulary's chat template (ChatML and Llama-3 are
  // recognised, with the template's default system message when it has one); throws
  // InvalidArgument naming the template when it is not recognised.
  std::string ApplyChatTemplate(std::span<const ChatMessage> messages,
                                bool add_generation_prompt = true) const;

  int32_t vocab_size() const;
  int32_t bos() const;
  int32_t eos() const;
  // EOS, EOT and the chat template's end-of-turn token (e.g. <|im_end|>).
  bool IsEndOfGeneration(int32_t id) const;
  const Vocabulary& vocabulary() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace backplane::llm
