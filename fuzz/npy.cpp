// io::ReadNpy on arbitrary bytes.
#include "backplane/io.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static backplane::fuzz::MemFile file("npy");
  const std::string& path = file.Write(data, size);
  backplane::fuzz::ExpectNamedErrors([&] {
    const backplane::Tensor t = backplane::io::ReadNpy(path);
    if (t.numel() > 0 && t.nbytes() > 0) {  // touch both ends of the storage
      volatile const char first = static_cast<const char*>(t.data())[0];
      volatile const char last = static_cast<const char*>(t.data())[t.nbytes() - 1];
      (void)first;
      (void)last;
    }
  });
  return 0;
}
