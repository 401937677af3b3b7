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
}

}  // namespace backplane::xla
