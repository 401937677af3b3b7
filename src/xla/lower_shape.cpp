// shape.*: layout changes as device operations (every dtype the device takes; bit-exact copies).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "xla/lower_nn_common.hpp"

namespace backplane::xla {
namespace {

std::vector<int64_t> Zeros(size_t n) { return std::vector<int64_t>(n, 0); }
std::vector<int64_t> Ones(size_t n) { return std::vector<int64_t>(n, 1); }

// Part `lo .. hi` of axis `axis`.
Value AxisSlice(Builder& b, const Value& x, int64_t axis, int64_t lo, int64_t hi) {
  std::vector<int64_t> st = Zeros(static_cast<size_t>(x.rank())), lim = x.shape();
  st[static_cast<size_t>(axis)] = lo;
  lim[static_cast<size_t>(axis)] = hi;
  return b.Slice(x, st, lim, Ones(static_cast<size_t>(x.rank())));
}

std::vector<Value> Concat(LowerContext& ctx, std::span<const Value> in) {
  const int64_t axis = Axis(ctx, "axis", ctx.attrs().Int("axis"), in[0].rank());
  std::vector<Value> parts(in.begin(), in.end());
  return {ctx.b.Concatenate(parts, axis)};
}

std::vector<Value> Split(LowerContext& ctx, std::span<const Value> in) {
  const int64_t axis = Axis(ctx, "axis", ctx.attrs().Int("axis"), in[0].rank());
  std::vector<Value> out;
  int64_t at = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const int64_t n = ctx.out_type(i).shape[static_cast<size_t>(axis)];
    out.push_back(AxisSlice(ctx.b, in[0], axis, at, at + n));
    at += n;
  }
  return out;
}

// PyTorch's nearest source index, evaluated in float as the reference does.
int64_t NearestIndex(int64_t dst, int64_t in, int64_t out, double scale) {
  const float s = scale > 0.0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
  const float real = std::floor(static_cast<float>(dst) * s);
  if (!(real < static_cast<float>(in - 1))) return in - 1;
  return std::min(static_cast<int64_t>(real), in - 1);
}

std::vector<Value> Upsample(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  Value y = in[0];
  const char* scales[] = {"scale_h", "scale_w"};
  for (int64_t axis = 2; axis < 4; ++axis) {
    const int64_t n = in[0].shape()[static_cast<size_t>(axis)], o = out.shape[static_cast<size_t>(axis)];
    const double scale = ctx.attrs().Float(scales[axis - 2]);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < o; ++i) idx.push_back(NearestIndex(i, n, o, scale));
    y = nn::TakeConst(b, y, axis, idx);
  }
  return {y};
}

std::vector<Value> ViewAsHeads(LowerContext& ctx, std::span<const Value> in) {
  const Shape& o = ctx.out_type(0).shape;  // [B, H, S, D]
  const Value x = ctx.b.Reshape(in[0], {o[0], o[2], o[1], o[3]});
  const int64_t perm[] = {0, 2, 1, 3};
  return {ctx.b.Transpose(x, perm)};
}

std::vector<Value> MergeHeads(LowerContext& ctx, std::span<const Value> in) {
  const int64_t perm[] = {0, 2, 1, 3};
  return {ctx.b.Reshape(ctx.b.Transpose(in[0], perm), ctx.out_type(0).shape)};
}

std::vector<Value> LastToken(LowerContext& ctx, std::span<const Value> in) {
  const TensorType& out = ctx.out_type(0);
  const int64_t axis = in[0].rank() - 2;
  const int64_t seq = in[0].shape()[static_cast<size_t>(axis)];
  if (NumElements(out.shape) == 0) return {ctx.b.Splat(out, 0.0)};
  return {ctx.b.Reshape(AxisSlice(ctx.b, in[0], axis, seq - 1, seq), out.shape)};
}

// CPython's slice.indices: the first index and the length of one axis.
std::pair<int64_t, int64_t> ResolveSlice(int64_t start, int64_t stop, int64_t step, int64_t n) {
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? n - 1 : n;
  auto adjust = [&](int64_t v) {
    if (v < 0) {
      v += n;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  start = adjust(start);
  stop = adjust(stop);
  int64_t length = 0;
  if (step > 0 && stop > start) {
    length = static_cast<int64_t>(static_cast<uint64_t>(stop - start - 1) / static_cast<uint64_t>(step)) + 1;
  } else if (step < 0 && start > stop) {
    const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(step);
    length = static_cast<int64_t>(static_cast<uint64_t>(start - stop - 1) / magnitude) + 1;
  }
  return {start, length};
}

std::vector<Value> SliceOp(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const runtime::Attrs& a = ctx.attrs();
  const int64_t rank = in[0].rank();
  const std::vector<int64_t> starts = a.Ints("starts"), ends = a.Ints("ends");
  std::vector<int64_t> axes = a.Ints("axes"), steps = a.Ints("steps");
  if (axes.empty()) axes = nn::Range(static_cast<int64_t>(starts.size()));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1),
      stop(static_cast<size_t>(rank), std::numeric_limits<int64_t>::max());
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t ax = static_cast<size_t>(Axis(ctx, "axes", axes[i], rank));
    first[ax] = starts[i];
    stop[ax] = ends[i];
    step[ax] = steps[i];
  }
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  Value x = in[0];
  std::vector<int64_t> reversed, st, lim, str;
  for (int64_t i = 0; i < rank; ++i) {
    const size_t ax = static_cast<size_t>(i);
    const int64_t n = x.shape()[ax];
    auto [f, len] = ResolveSlice(first[ax], stop[ax], step[ax], n);
    // A one-element axis never steps (its step may be INT64_MIN).
    const uint64_t mag = step[ax] > 0 ? static_cast<uint64_t>(step[ax]) : uint64_t{0} - static_cast<uint64_t>(step[ax]);
    const int64_t stride = len > 1 ? static_cast<int64_t>(mag) : 1;
    if (step[ax] < 0 && len > 1) {
      reversed.push_back(i);
      f = n - 1 - f;
    }
    st.push_back(f);
    lim.push_back(f + (len - 1) * stride + 1);
    str.push_back(stride);
  }
  x = nn::Reverse(b, x, reversed);
  return {b.Slice(x, st, lim, str)};
}

}  // namespace

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
  t.Add("shape.concat", Concat);
  t.Add("shape.split", Split);
  t.Add("shape.upsample_nearest2d", Upsample);
  t.Add("shape.view_as_heads", ViewAsHeads);
  t.Add("shape.merge_heads", MergeHeads);
  t.Add("shape.last_token", LastToken);
  t.Add("shape.slice", SliceOp);
}

}  // namespace backplane::xla
