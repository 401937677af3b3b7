// BERT WordPiece tokenizer, as Hugging Face's fast tokenizer runs it (tokenizers' BertNormalizer,
// BertPreTokenizer, WordPiece model and [CLS] ... [SEP] template), e.g. for all-MiniLM-L6-v2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace backplane::encoder {

struct WordPieceOptions {
  bool lowercase = true;
  bool strip_accents = true;  // Hugging Face's strip_accents=None means "as lowercase"
  bool handle_chinese_chars = true;
  bool clean_text = true;
  int max_input_chars_per_word = 100;  // longer words become unk
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", pad = "[PAD]", mask = "[MASK]";
};

struct Encoding {
  std::vector<int32_t> ids, type_ids, attention_mask;
};

class WordPieceTokenizer {
 public:
  // One token per line, id = line index (a trailing '\r' or other trailing whitespace is
  // dropped, as Hugging Face does). Throws InvalidArgument naming the file (and the line) when
  // it cannot be read, a line is empty, not UTF-8 or repeats a token, or unk/cls/sep/pad is
  // missing.
  static WordPieceTokenizer FromVocabFile(const std::string& vocab_txt_path,
                                          WordPieceOptions options = {});
  // The same checks, naming the vector index instead of a line.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options);

  // The tokens of `text`, without [CLS] / [SEP]. The special tokens (unk, cls, sep, pad and mask
  // when the vocabulary has it) written literally in the raw text become their ids, matched
  // before normalisation, leftmost and longest first. Throws InvalidArgument on invalid UTF-8,
  // naming the byte offset.
  std::vector<int32_t> Tokenize(std::string_view text) const;
  // [CLS] tokens [SEP], type ids 0, mask 1. max_length > 0 truncates the tokens so that the
  // whole encoding (with [CLS] and [SEP]) has at most max_length ids; it must be 0 or >= 2.
  Encoding Encode(std::string_view text, int max_length = 0) const;
  // Each text encoded, then right-padded with pad (type id 0, mask 0) to the longest.
  std::vector<Encoding> EncodeBatch(const std::vector<std::string>& texts,
                                    int max_length = 0) const;
  // The tokens joined by spaces, "##" pieces glued to the one before, special tokens skipped,
  // then Hugging Face's clean-up (" ." -> ".", " n't" -> "n't", ...), as
  // tokenizer.decode(ids, skip_special_tokens=True). Throws InvalidArgument on an id out of range.
  std::string Decode(std::span<const int32_t> ids) const;

  int32_t TokenId(std::string_view token) const;  // -1 if absent
  size_t vocab_size() const { return tokens_.size(); }
  const WordPieceOptions& options() const { return options_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options,
                     std::string_view origin, bool lines);
  // Normalises, pre-tokenises and WordPiece-splits text holding no special token; `offset` is
  // its byte offset in the caller's text (for error messages).
  void TokenizePlain(std::string_view text, size_t offset, std::vector<int32_t>& out) const;
  void TokenizeWord(std::string_view word, std::vector<int32_t>& out) const;
  bool IsSpecial(int32_t id) const;

  WordPieceOptions options_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  int32_t unk_id_ = -1, cls_id_ = -1, sep_id_ = -1, pad_id_ = -1, mask_id_ = -1;
  std::vector<std::pair<std::string, int32_t>> specials_;  // longest first
};

}  // namespace backplane::encoder
