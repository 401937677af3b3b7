// Random ops: math.dropout (Philox4x32-10 on the device, bit for bit the CPU's masks) and the
// samplers sampling.greedy / top_k / top_p (stable sort by probability, sequential cumulative
// sums in sorted order like the reference, the per-row uniform draw from Philox).
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>

#include "backplane/random.hpp"
#include "xla/lowering.hpp"

namespace backplane::xla {

void RegisterRandomLowerings(LoweringTable& t);

namespace {

std::vector<int64_t> AllAxes(int64_t rank) {
  std::vector<int64_t> all;
  for (int64_t i = 0; i < rank; ++i) all.push_back(i);
  return all;
}

Value AllTrue(Builder& b, const Value& ok) {
  return b.Reduce(ok, AllAxes(ok.rank()), ReduceKind::And);
}

// ---- Philox4x32-10 (backplane/random.hpp)
// ---------------------------------------------------------- Words and keys are ui32 (adds wrap mod
// 2^32); each 32 x 32 -> 64 product is taken in ui64, its high half by a logical shift by 32 and
// its low half by a mask, both converted back exactly.
Value Unsigned(Builder& b, DType dtype, const Shape& shape, uint64_t v) {
  const Value s = b.ScalarLiteral(dtype, std::to_string(v));
  return shape.empty() ? s : b.BroadcastInDim(s, shape, {});
}
Value U64(Builder& b, const Shape& shape, uint64_t v) {
  return Unsigned(b, DType::Uint64, shape, v);
}
Value U32(Builder& b, const Shape& shape, uint32_t v) {
  return Unsigned(b, DType::Uint32, shape, v);
}

using Words = std::array<Value, 4>;

// (high, low) 32-bit halves of the ui32 word `x` times the constant `mul`.
std::pair<Value, Value> MulHiLo(Builder& b, const Value& x, uint32_t mul) {
  const Shape& shape = x.shape();
  const Value p = b.Mul(b.Convert(x, DType::Uint64), U64(b, shape, mul));
  const Value hi =
      b.Convert(b.Binary("stablehlo.shift_right_logical", p, U64(b, shape, 32)), DType::Uint32);
  const Value lo =
      b.Convert(b.Binary("stablehlo.and", p, U64(b, shape, 0xFFFFFFFFull)), DType::Uint32);
  return {hi, lo};
}

// Philox4x32(ctr, key): ctr words ui32 of one shape, key words ui32 scalars.
Words Philox4x32(Builder& b, Words c, Value k0, Value k1) {
  const Shape& shape = c[0].shape();
  auto x = [&](const Value& a, const Value& v) { return b.Binary("stablehlo.xor", a, v); };
  for (int round = 0; round < 10; ++round) {
    const auto [hi0, lo0] = MulHiLo(b, c[0], 0xD2511F53u);
    const auto [hi1, lo1] = MulHiLo(b, c[2], 0xCD9E8D57u);
    const Value key0 = b.BroadcastInDim(k0, shape, {}), key1 = b.BroadcastInDim(k1, shape, {});
    c = {x(x(hi1, c[1]), key0), lo1, x(x(hi0, c[3]), key1), lo0};
    k0 = b.Add(k0, U32(b, {}, 0x9E3779B9u));
    k1 = b.Add(k1, U32(b, {}, 0xBB67AE85u));
  }
  return c;
}

// PhiloxUniformFloat(seed, 0, i) for i = 0 .. n-1 (seed a ui64 scalar): counter = (i lo, i hi,
// 0, 0), key = (seed lo, seed hi); f32 [n] in [0, 1) from the top 24 bits of word 0.
Value PhiloxUniformFloats(Builder& b, const Value& seed, int64_t n) {
  const Shape shape{n};
  const Value index = b.Iota({DType::Uint64, shape}, 0);
  auto low = [&](const Value& v) {
    return b.Convert(b.Binary("stablehlo.and", v, U64(b, v.shape(), 0xFFFFFFFFull)), DType::Uint32);
  };
  auto high = [&](const Value& v) {
    return b.Convert(b.Binary("stablehlo.shift_right_logical", v, U64(b, v.shape(), 32)),
                     DType::Uint32);
  };
  const Value zero = U32(b, shape, 0);
  const Words r = Philox4x32(b, {low(index), high(index), zero, zero}, low(seed), high(seed));
  const Value bits24 =
      b.Convert(b.Binary("stablehlo.shift_right_logical", r[0], U32(b, shape, 8)), DType::Float32);
  return b.Mul(bits24, b.Splat({DType::Float32, shape}, 0x1.0p-24));  // exact in f32
}

// ---- dropout
// -------------------------------------------------------------------------------------
// math.dropout (math_ops.cpp): training false or p == 0 copies x; otherwise call c (the node's
// "calls" counter, f64 rank-0 state like the CPU's scalar) draws with seed + 0x9E3779B97F4A7C15 c
// (mod 2^64); keep = u_i >= rate (f32), y = keep ? x s : +0 with s = 1 / (1 - rate) in the compute
// type (Dropout.Dropout).
std::vector<Value> Dropout(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double p = ctx.attrs().Float("p");
  if (!ctx.attrs().Bool("training") || p == 0.0) return {in[0]};
  const Value calls = ctx.State("calls", {DType::Float64, {}});
  ctx.SetState("calls", b.Add(calls, b.Scalar(DType::Float64, 1.0)));
  const float rate = static_cast<float>(p);
  if (rate == 0.0f) return {in[0]};  // the kernel copies at Rate 0
  const Shape& shape = in[0].shape();
  const int64_t n = NumElements(shape);
  const DType T = ComputeType(in[0].dtype());
  if (n == 0) return {in[0]};
  if (!(rate < 1.0f)) return {b.Splat(in[0].type, 0.0)};  // Rate 1 keeps nothing
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs().Int("seed"));
  const Value step = b.Mul(U64(b, {}, 0x9E3779B97F4A7C15ull), b.Convert(calls, DType::Uint64));
  const Value key = b.Add(U64(b, {}, seed), step);
  const Value u = PhiloxUniformFloats(b, key, n);
  const Value keep = b.Reshape(b.Compare(u, b.Splat({DType::Float32, {n}}, rate), "GE"), shape);
  const double scale = T == DType::Float64 ? 1.0 / (1.0 - static_cast<double>(rate))
                                           : static_cast<double>(1.0f / (1.0f - rate));
  const Value x = b.Convert(in[0], T);
  const Value y = b.Select(keep, b.Mul(x, b.SplatLike(x, scale)), b.SplatLike(x, 0.0));
  return {b.Convert(y, in[0].dtype())};
}

// ---- sampling
// ------------------------------------------------------------------------------------
enum class Method { Greedy, TopK, TopP };

// stablehlo.while over `init`; cond and body see the carried values.
std::vector<Value> While(Builder& b, std::span<const Value> init,
                         std::function<Value(std::span<const Value>)> cond,
                         std::function<std::vector<Value>(std::span<const Value>)> body) {
  std::vector<TensorType> types;
  for (const Value& v : init) types.push_back(v.type);
  const Builder::Region regions[] = {
      {types, [&](Builder&, std::span<const Value> a) { return std::vector<Value>{cond(a)}; }},
      {types, [&](Builder&, std::span<const Value> a) { return body(a); }},
  };
  return b.EmitRegions("stablehlo.while", init, types, regions);
}

// Column r of [rows, v] as [rows].
Value Column(Builder& b, const Value& x, const Value& r) {
  const int64_t rows = x.shape()[0];
  const Value zero = b.Scalar(DType::Int64, 0.0);
  const Value ops[] = {x, zero, r};
  return b.Reshape(b.Emit("stablehlo.dynamic_slice", ops, {x.dtype(), {rows, 1}},
                          "slice_sizes = array<i64: " + std::to_string(rows) + ", 1>"),
                   {rows});
}

Value Any(Builder& b, const Value& x) { return b.Reduce(x, AllAxes(x.rank()), ReduceKind::Or); }

LowerFn Sampler(Method method) {
  return [method](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const runtime::Attrs& a = ctx.attrs();
    const Shape& s = in[0].shape();
    const int64_t v = s.back();
    const int64_t rows = s.size() == 2 ? s[0] : 1;
    const Value x = b.Reshape(b.Convert(in[0], DType::Float64), {rows, v});
    ctx.Require(AllTrue(b, b.Compare(x, x, "EQ")), "argument 'logits' must be free of NaN");
    const Shape out_shape = ctx.out_type(0).shape;
    const float temperature =
        method == Method::Greedy ? 0.0f : static_cast<float>(a.Float("temperature"));
    if (temperature == 0.0f) {  // greedy: the first maximum
      return std::vector<Value>{b.Reshape(b.Convert(ArgMaxLast(b, x), DType::Int32), out_shape)};
    }
    const int64_t last[] = {1};
    const Shape rv{rows, v};
    const Value mx = b.Reduce(x, last, ReduceKind::Max);
    ctx.Require(AllTrue(b, b.Compare(mx, b.SplatLike(mx, -INFINITY), "NE")),
                "argument 'logits' must be not all -Inf when Temperature > 0");
    // softmax(x / T) in f64, max subtracted; rows with +Inf share the mass among the +Inf entries.
    const Value mxb = b.BroadcastInDim(mx, rv, std::vector<int64_t>{0});
    const Value inf_row = b.BroadcastInDim(b.Compare(mx, b.SplatLike(mx, INFINITY), "EQ"), rv,
                                           std::vector<int64_t>{0});
    const Value scaled =
        b.Div(b.Sub(x, mxb), b.Splat({DType::Float64, rv}, static_cast<double>(temperature)));
    const Value e = b.Select(inf_row, b.Convert(b.Compare(x, mxb, "EQ"), DType::Float64),
                             b.Unary("stablehlo.exponential", scaled));
    const Value sum =
        b.BroadcastInDim(b.Reduce(e, last, ReduceKind::Sum), rv, std::vector<int64_t>{0});
    const Value prob = b.Div(e, sum);
    // Stable sort by p descending (equal p keep ascending index).
    const Value iota = b.Iota({DType::Int32, rv}, 1);
    const Value sort_in[] = {prob, iota};
    const TensorType sort_types[] = {prob.type, iota.type};
    const TensorType f64s{DType::Float64, {}}, i32s{DType::Int32, {}};
    const Builder::Region cmp[] = {{{f64s, f64s, i32s, i32s}, [&](Builder&, std::span<const Value> r) {
                                      return std::vector<Value>{b.Compare(r[0], r[1], "GT")};
                                    }}};
    const std::vector<Value> sorted = b.EmitRegions("stablehlo.sort", sort_in, sort_types, cmp,
                                                    "dimension = 1 : i64, is_stable = true");
    const Value sp = sorted[0], order = sorted[1];

    const TensorType rows_f64{DType::Float64, {rows}}, rows_i64{DType::Int64, {rows}};
    const Value vi = b.Scalar(DType::Int64, static_cast<double>(v));
    auto i64 = [&](double d) { return b.Scalar(DType::Int64, d); };
    // Loop 1: the kept count per row and the sum of the kept p, summed in sorted order.
    //   TopK: the first K (0 or > V: V); TopP: the shortest prefix with cumulative >= TopP, else V.
    int64_t k = 0;
    double top_p = 1.0;
    if (method == Method::TopK) {
      k = a.Int("top_k");
      if (k == 0 || k > v) k = v;
    } else {
      top_p = static_cast<double>(static_cast<float>(a.Float("top_p")));
    }
    const Value init1[] = {i64(0.0),
                           b.Splat(rows_f64, 0.0),
                           b.Splat(rows_i64, static_cast<double>(v)),
                           b.Splat(rows_f64, 0.0),
                           b.Splat({DType::Bool, {rows}}, 0.0),
                           sp};
    const std::vector<Value> loop1 = While(
        b, init1,
        [&](std::span<const Value> c) {
          return b.Binary("stablehlo.and", b.Compare(c[0], vi, "LT"),
                          Any(b, b.Unary("stablehlo.not", c[4])));
        },
        [&](std::span<const Value> c) {
          const Value r = c[0];
          const Value cum = b.Add(c[1], Column(b, c[5], r));
          Value reached;
          if (method == Method::TopK) {
            reached = b.BroadcastTo(
                b.Compare(b.Add(r, i64(1.0)), i64(static_cast<double>(k)), "GE"), {rows});
          } else {
            reached = b.Compare(cum, b.Splat(rows_f64, top_p), "GE");
          }
          const Value at_end =
              b.BroadcastTo(b.Compare(r, i64(static_cast<double>(v - 1)), "EQ"), {rows});
          const Value hit = b.Binary("stablehlo.and", b.Unary("stablehlo.not", c[4]),
                                     b.Binary("stablehlo.or", reached, at_end));
          const Value kept = b.Select(hit, b.BroadcastTo(b.Add(r, i64(1.0)), {rows}), c[2]);
          const Value total = b.Select(hit, cum, c[3]);
          return std::vector<Value>{
              b.Add(r, i64(1.0)), cum, kept, total, b.Binary("stablehlo.or", c[4], hit), c[5]};
        });
    const Value kept = loop1[2], total = loop1[3];
    // u = PhiloxUniformDouble(seed + row, 0, 0), fixed by the attributes: computed here.
    std::vector<double> u(static_cast<size_t>(rows));
    const uint64_t seed = static_cast<uint64_t>(a.Int("seed"));
    for (int64_t row = 0; row < rows; ++row) {
      u[static_cast<size_t>(row)] = PhiloxUniformDouble(seed + static_cast<uint64_t>(row), 0, 0);
    }
    const Value target = b.Mul(b.Constant(rows_f64, u), total);
    // Loop 2: the first kept index whose running sum is > target, else the last kept.
    const Value init2[] = {i64(0.0),
                           b.Splat(rows_f64, 0.0),
                           b.Splat({DType::Int32, {rows}}, 0.0),
                           b.Splat({DType::Bool, {rows}}, 0.0),
                           sp,
                           order,
                           kept,
                           target};
    const std::vector<Value> loop2 = While(
        b, init2,
        [&](std::span<const Value> c) {
          return b.Binary("stablehlo.and", b.Compare(c[0], vi, "LT"),
                          Any(b, b.Unary("stablehlo.not", c[3])));
        },
        [&](std::span<const Value> c) {
          const Value r = c[0];
          const Value cum = b.Add(c[1], Column(b, c[4], r));
          const Value last_kept = b.Compare(b.BroadcastTo(b.Add(r, i64(1.0)), {rows}), c[6], "EQ");
          const Value hit =
              b.Binary("stablehlo.and", b.Unary("stablehlo.not", c[3]),
                       b.Binary("stablehlo.or", b.Compare(cum, c[7], "GT"), last_kept));
          const Value result = b.Select(hit, Column(b, c[5], r), c[2]);
          return std::vector<Value>{b.Add(r, i64(1.0)),
                                    cum,
                                    result,
                                    b.Binary("stablehlo.or", c[3], hit),
                                    c[4],
                                    c[5],
                                    c[6],
                                    c[7]};
        });
    return std::vector<Value>{b.Reshape(loop2[2], out_shape)};
  };
}

}  // namespace

void RegisterRandomLowerings(LoweringTable& t) {
  t.Add("math.dropout", Dropout);
  t.Add("sampling.greedy", Sampler(Method::Greedy));
  t.Add("sampling.top_k", Sampler(Method::TopK));
  t.Add("sampling.top_p", Sampler(Method::TopP));
}

}  // namespace backplane::xla
