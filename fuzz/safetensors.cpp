// io::ReadSafetensors on arbitrary bytes.
#include "backplane/io.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static backplane::fuzz::MemFile file("safetensors");
  const std::string& path = file.Write(data, size);
  backplane::fuzz::ExpectNamedErrors([&] {
    for (const auto& [name, t] : backplane::io::ReadSafetensors(path)) {
      if (t.nbytes() > 0) {
        volatile const char last = static_cast<const char*>(t.data())[t.nbytes() - 1];
        (void)last;
      }
    }
  });
  return 0;
}
