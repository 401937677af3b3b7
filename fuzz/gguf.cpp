// GGUF: gguf::File::Open (header, metadata, tensor infos), every typed getter path the loaders use
// on the tensors, and the BPE tokenizer's vocabulary loader (llm::Tokenizer::FromGguf).
#include "backplane/gguf.hpp"
#include "backplane/llm/tokenizer.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static backplane::fuzz::MemFile file("gguf");
  const std::string& path = file.Write(data, size);
  backplane::fuzz::ExpectNamedErrors([&] {
    const backplane::gguf::File f = backplane::gguf::File::Open(path);
    for (const backplane::gguf::TensorInfo& t : f.tensors()) {
      if (t.bytes > 0) {  // both ends of each tensor lie inside the mapping
        const uint8_t* p = f.Data(t);
        volatile uint8_t first = p[0], last = p[t.bytes - 1];
        (void)first;
        (void)last;
      }
    }
    const backplane::llm::Tokenizer tok = backplane::llm::Tokenizer::FromGguf(f);
    const std::vector<int32_t> ids = tok.Encode("Hello, world! <|im_start|> 123");
    (void)tok.Decode(ids);
  });
  return 0;
}
