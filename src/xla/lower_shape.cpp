// shape.*: layout changes as device operations.
#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterShapeLowerings(LoweringTable& t) {
  t.Add("shape.transpose", [](LowerContext& ctx, std::span<const Value> in) {
    std::vector<int64_t> perm = ctx.attrs().Ints("perm");
    const int64_t rank = in[0].rank();
    if (perm.empty()) {
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    }
    for (int64_t& p : perm) p = Axis(ctx, "perm", p, rank);
    return std::vector<Value>{ctx.b.Transpose(in[0], perm)};
  });
  t.Add("shape.reshape", [](LowerContext& ctx, std::span<const Value> in) {
    return std::vector<Value>{ctx.b.Reshape(in[0], ctx.out_type(0).shape)};
  });
}

}  // namespace backplane::xla
