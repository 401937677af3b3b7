// The WordPiece tokenizer's vocab.txt loader (encoder::WordPieceTokenizer::FromVocabFile), then
// one fixed sentence through the loaded vocabulary.
#include "backplane/encoder/wordpiece.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static backplane::fuzz::MemFile file("vocab");
  const std::string& path = file.Write(data, size);
  backplane::fuzz::ExpectNamedErrors([&] {
    const auto tok = backplane::encoder::WordPieceTokenizer::FromVocabFile(path);
    const backplane::encoder::Encoding e = tok.Encode("Hello, unaffable world! [MASK] 東京", 16);
    (void)tok.Decode(e.ids);
  });
  return 0;
}
