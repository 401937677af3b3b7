// Matrix products on dot_general: math.matmul (batched, broadcast batch axes).
#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

// Broadcast batch shape of two batch prefixes (right-aligned).
Shape BatchShape(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace

// a [..., m, k] (or [k]) times b [..., k, n] (or [k]), computed in ComputeType.
Value Matmul(Builder& b, const Value& a_in, const Value& b_in, const TensorType& out) {
  const DType ct = ComputeType(out.dtype);
  const Shape& sa = a_in.shape();
  const Shape& sb = b_in.shape();
  const Shape batch_a = sa.size() > 2 ? Shape(sa.begin(), sa.end() - 2) : Shape{};
  const Shape batch_b = sb.size() > 2 ? Shape(sb.begin(), sb.end() - 2) : Shape{};
  const int64_t m = sa.size() >= 2 ? sa[sa.size() - 2] : 1;
  const int64_t k = sa.back();
  const int64_t n = sb.size() >= 2 ? sb.back() : 1;
  const Shape batch = BatchShape(batch_a, batch_b);
  Shape full_a = batch, full_b = batch;
  full_a.insert(full_a.end(), {m, k});
  full_b.insert(full_b.end(), {k, n});
  Shape ra = batch_a, rb = batch_b;
  ra.insert(ra.end(), {m, k});
  rb.insert(rb.end(), {k, n});
  const Value a = b.BroadcastTo(b.Reshape(b.Convert(a_in, ct), ra), full_a);
  const Value bb = b.BroadcastTo(b.Reshape(b.Convert(b_in, ct), rb), full_b);
  std::vector<int64_t> bd;
  for (size_t i = 0; i < batch.size(); ++i) bd.push_back(static_cast<int64_t>(i));
  const int64_t r = static_cast<int64_t>(batch.size());
  const int64_t ca[] = {r + 1};
  const int64_t cb[] = {r};
  const Value y = b.DotGeneral(a, bb, bd, bd, ca, cb, ct);
  return b.Convert(b.Reshape(y, out.shape), out.dtype);
}

void RegisterLinalgLowerings(LoweringTable& t) {
  t.Add("math.matmul", [](LowerContext& ctx, std::span<const Value> in) {
    return std::vector<Value>{Matmul(ctx.b, in[0], in[1], ctx.out_type(0))};
  });
}

}  // namespace backplane::xla
