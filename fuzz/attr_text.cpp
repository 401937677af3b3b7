// The CLI's --attr K=V values (tools/backplane/cli_util.cpp ParseAttrText): the first byte picks
// the attribute type, the rest is the text.
#include "backplane/catalog/catalog.hpp"
#include "backplane/ir/graph.hpp"
#include "../tools/backplane/cli_util.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using backplane::catalog::AttrType;
  constexpr AttrType kTypes[] = {AttrType::Int,    AttrType::Float,   AttrType::Bool,
                                 AttrType::String, AttrType::IntList, AttrType::FloatList};
  backplane::catalog::AttrSpec spec;
  spec.name = "fuzzed";
  spec.type = kTypes[data[0] % 6];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  backplane::fuzz::ExpectNamedErrors([&] {
    const backplane::ir::AttrValue v = backplane::cli::ParseAttrText(spec, text);
    (void)backplane::ir::AttrToString(v);
  });
  return 0;
}
