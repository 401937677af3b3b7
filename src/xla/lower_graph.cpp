// Graph-level ops: Input (identity or literal data). model.* ops edit the parameter store on the
// host and stay on the CPU.
#include <fmt/format.h>

#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterGraphLowerings(LoweringTable& t) {
  t.Add("Input", [](LowerContext& ctx, std::span<const Value> in) {
    if (!in.empty() && !in[0].type.shape.empty() && in[0].dtype() != DType::Invalid) return std::vector<Value>{in[0]};
    if (!in.empty() && in[0].dtype() != DType::Invalid) return std::vector<Value>{in[0]};
    const TensorType& out = ctx.out_type(0);
    const std::vector<double> values = ctx.attrs().Floats("values");
    if (static_cast<int64_t>(values.size()) != NumElements(out.shape)) {
      ctx.Unsupported(fmt::format("Input literal of {} values for {} elements", values.size(), NumElements(out.shape)));
    }
    return std::vector<Value>{ctx.b.Constant(out, values)};
  });
  // model.* ops read and edit the executor's parameter store (names, patterns, frozen flags)
  // while the graph runs: host-side bookkeeping, not tensor computation.
  for (const char* id : {"model.freeze", "model.graft"}) {
    t.Add(id, [](LowerContext& ctx, std::span<const Value>) -> std::vector<Value> {
      ctx.Unsupported("edits the executor's parameter store on the host (names, patterns, frozen flags)");
    });
  }
}

}  // namespace backplane::xla
