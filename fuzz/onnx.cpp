// ONNX: onnx::ImportOnnx (ModelProto parse, initializers, lowering of every node).
#include "backplane/onnx/importer.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static backplane::fuzz::MemFile file("onnx");
  const std::string& path = file.Write(data, size);
  backplane::fuzz::ExpectNamedErrors([&] { (void)backplane::onnx::ImportOnnx(path); });
  return 0;
}
