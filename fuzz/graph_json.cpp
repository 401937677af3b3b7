// Graph JSON: ir::ParseGraph, runtime::VerifyGraph, then an Executor's plan for small input shapes
// (symbolic dimensions bound to 2). Graphs whose parameters would need more than 16 Mi elements
// (or whose element count overflows: the readers' size checks own that) and graphs that read
// parameter files are not planned: this target is about the graph format, not allocation.
#include <map>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/runtime/executor.hpp"
#include "fuzz_support.hpp"

namespace {

bool SmallParams(const backplane::ir::Graph& g) {
  int64_t total = 0;
  for (const backplane::ir::ParamSpec& p : g.params) {
    if (p.init.kind == "file") return false;
    int64_t n = 1;
    for (const int64_t d : p.shape) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
    }
    if (__builtin_add_overflow(total, n, &total) || total > (int64_t{1} << 24)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<backplane::Backend> backend = backplane::cpu::CreateBackend();
  const std::string text(reinterpret_cast<const char*>(data), size);
  backplane::fuzz::ExpectNamedErrors([&] {
    backplane::ir::Graph graph = backplane::ir::ParseGraph(text, "fuzz.json");
    (void)backplane::ir::WriteGraph(graph);
    std::map<std::string, backplane::Shape> shapes;
    for (const backplane::ir::ValueSpec& in : graph.inputs) {
      backplane::Shape s;
      for (const backplane::ir::Dim& d : in.shape) s.push_back(d.symbol.empty() ? d.size : 2);
      shapes[in.name] = s;
    }
    (void)backplane::runtime::VerifyGraph(graph, shapes);
    if (!SmallParams(graph)) return;
    backplane::runtime::Executor executor(std::move(graph), *backend);
    (void)executor.Placement(shapes);
  });
  return 0;
}
