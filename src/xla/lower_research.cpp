// Research surfaces: physics (periodic stencils, FFT), Hawkes (intensity, kernel matrix,
// log-likelihood, Ogata simulation with the CPU's Philox stream), VSA, active inference,
// predictive coding, Markov blankets, causal inference (Cholesky included) and positional popcount.
//
// Precision follows src/cpu/reference: the f64 kernels widen to f64, compute and round once
// (StoreResult: one correct rounding, emulated with round-to-odd through f32) or through f32
// (Store<double> / Narrow / Tensor::SetDouble: f64 -> f32 -> storage); the elementwise VSA /
// precision / prediction-error kernels compute in ComputeType. Every data check the CPU kernel
// makes (finite, sorted, probabilities, ids, symmetry, positive definiteness) is a ctx.Require.
#include <cmath>
#include <cstdint>
#include <numeric>

#include <fmt/format.h>

#include "backplane/random.hpp"
#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

constexpr DType kF64 = DType::Float64;
constexpr DType kF32 = DType::Float32;
constexpr DType kI64 = DType::Int64;
constexpr DType kBool = DType::Bool;

using Dims = std::vector<int64_t>;

Dims AllDims(const Value& x) {
  Dims d(static_cast<size_t>(x.rank()));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

Value AllTrue(Builder& b, const Value& p) { return p.rank() == 0 ? p : b.Reduce(p, AllDims(p), ReduceKind::And); }
Value AnyTrue(Builder& b, const Value& p) { return p.rank() == 0 ? p : b.Reduce(p, AllDims(p), ReduceKind::Or); }
Value And(Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.and", x, y); }
Value Or(Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.or", x, y); }
Value Not(Builder& b, const Value& x) { return b.Unary("stablehlo.not", x); }
Value IsFinite(Builder& b, const Value& x) {
  return b.Emit("stablehlo.is_finite", std::span(&x, 1), {kBool, x.shape()});
}
Value Abs(Builder& b, const Value& x) { return b.Unary("stablehlo.abs", x); }
Value Neg(Builder& b, const Value& x) { return b.Unary("stablehlo.negate", x); }
Value Exp(Builder& b, const Value& x) { return b.Unary("stablehlo.exponential", x); }
Value Log(Builder& b, const Value& x) { return b.Unary("stablehlo.log", x); }
Value Sqrt(Builder& b, const Value& x) { return b.Unary("stablehlo.sqrt", x); }
Value C(Builder& b, const Value& like, double v) { return b.SplatLike(like, v); }
Value Wide(Builder& b, const Value& x) { return b.Convert(x, kF64); }
Value Sum(Builder& b, const Value& x, Dims dims) { return b.Reduce(x, dims, ReduceKind::Sum); }
Value SumAll(Builder& b, const Value& x) { return x.rank() == 0 ? x : Sum(b, x, AllDims(x)); }
Value Bitcast(Builder& b, const Value& x, DType to) {
  return b.Emit("stablehlo.bitcast_convert", std::span(&x, 1), {to, x.shape()});
}
Value ShiftLeft(Builder& b, const Value& x, const Value& s) { return b.Binary("stablehlo.shift_left", x, s); }
Value ShiftRight(Builder& b, const Value& x, const Value& s) {
  return b.Binary("stablehlo.shift_right_logical", x, s);
}

// An attribute as the f32 the CPU kernels take, widened to f64.
double F32Attr(const LowerContext& ctx, const std::string& name) {
  return static_cast<double>(static_cast<float>(ctx.attrs().Float(name)));
}

// Store<double> / Narrow / SetDouble: a double stored into a 32-bit or narrower format is first
// rounded to f32.
Value Narrow(Builder& b, const Value& x, DType out) {
  if (out == kF64) return x;
  return b.Convert(b.Convert(x, kF32), out);
}

// StoreResult: one correct rounding of the double. f32 directly; f16/bf16 through f32 rounded to
// odd (truncate toward zero, set the last bit when inexact), which then rounds to nearest even
// exactly once (Boldo & Melquiond), the CPU's RoundToOddF32.
Value RoundOnce(Builder& b, const Value& x, DType out) {
  if (out == kF64 || out == kF32) return b.Convert(x, out);
  const Value f = b.Convert(x, kF32);
  const Value back = b.Convert(f, kF64);
  const Value nan = b.Compare(x, x, "NE");
  const Value inexact = And(b, b.Compare(back, x, "NE"), Not(b, nan));
  const Value away = b.Compare(Abs(b, back), Abs(b, x), "GT");
  Value bits = Bitcast(b, f, DType::Uint32);
  bits = b.Select(away, b.Sub(bits, C(b, bits, 1)), bits);
  bits = b.Binary("stablehlo.or", bits, C(b, bits, 1));
  const Value odd = b.Select(inexact, Bitcast(b, bits, kF32), f);
  return b.Convert(odd, out);
}

Value Flat(Builder& b, const Value& x) { return b.Reshape(x, {NumElements(x.shape())}); }

Value SliceAxis(Builder& b, const Value& x, int64_t axis, int64_t start, int64_t limit) {
  Dims lo(static_cast<size_t>(x.rank()), 0), hi = x.shape(), st(static_cast<size_t>(x.rank()), 1);
  lo[static_cast<size_t>(axis)] = start;
  hi[static_cast<size_t>(axis)] = limit;
  return b.Slice(x, lo, hi, st);
}

// y[i] = x[(i + offset) mod n] along `axis` (periodic neighbour).
Value Shifted(Builder& b, const Value& x, int64_t axis, int64_t offset) {
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (n == 0) return x;
  const int64_t s = ((offset % n) + n) % n;
  if (s == 0) return x;
  const Value parts[] = {SliceAxis(b, x, axis, s, n), SliceAxis(b, x, axis, 0, s)};
  return b.Concatenate(parts, axis);
}

// 2^n for i64 n, exact: normal for n in [-1022, 1023], subnormal for [-1074, -1023], 0 below.
Value Pow2(Builder& b, const Value& n) {
  const Value normal = ShiftLeft(b, b.Add(b.Max(n, C(b, n, -1022)), C(b, n, 1023)), C(b, n, 52));
  const Value sub_shift = b.Max(b.Min(b.Add(n, C(b, n, 1074)), C(b, n, 51)), C(b, n, 0));
  const Value sub = ShiftLeft(b, C(b, n, 1), sub_shift);
  Value bits = b.Select(b.Compare(n, C(b, n, -1022), "GE"), normal, sub);
  bits = b.Select(b.Compare(n, C(b, n, -1074), "LT"), C(b, n, 0), bits);
  return Bitcast(b, bits, kF64);
}

// ldexp(x, n) with one rounding: x * 2^n1 is exact (|n1| <= 1000), then one multiply.
Value Ldexp(Builder& b, const Value& x, const Value& n) {
  const Value n1 = b.Max(b.Min(n, C(b, n, 1000)), C(b, n, -1000));
  const Value n2 = b.Max(b.Min(b.Sub(n, n1), C(b, n, 1023)), C(b, n, -1100));
  return b.Mul(b.Mul(x, Pow2(b, n1)), Pow2(b, n2));
}

// frexp of finite nonzero f64 x: x = m 2^e with |m| in [0.5, 1) (subnormals too). For x = 0
// the result is unspecified (callers select it away).
struct Frexp {
  Value m;
  Value e;  // i64
};
Frexp FrexpOf(Builder& b, const Value& x) {
  const Value is_sub = b.Compare(Abs(b, x), C(b, x, 0x1.0p-1022), "LT");
  const Value xs = b.Select(is_sub, b.Mul(x, C(b, x, 0x1.0p64)), x);
  const Value bits = Bitcast(b, xs, kI64);
  const Value biased = b.Binary("stablehlo.and", ShiftRight(b, bits, C(b, bits, 52)), C(b, bits, 0x7ff));
  const Value e = b.Sub(b.Sub(biased, C(b, bits, 1022)), b.Select(is_sub, C(b, bits, 64), C(b, bits, 0)));
  // Clear the exponent field (bits 52..62) and put 1022 there.
  const Value keep = b.BroadcastTo(b.ScalarLiteral(kI64, std::to_string(~(int64_t{0x7ff} << 52))), bits.shape());
  const Value mbits = b.Binary("stablehlo.or", b.Binary("stablehlo.and", bits, keep), C(b, bits, static_cast<double>(int64_t{1022} << 52)));
  return {Bitcast(b, mbits, kF64), e};
}

// Requires every element of x finite and >= 0.
void RequireNonNegative(LowerContext& ctx, const Value& x, const std::string& arg,
                        const std::string& what = "finite and >= 0") {
  Builder& b = ctx.b;
  if (NumElements(x.shape()) == 0) return;
  const Value ok = And(b, IsFinite(b, x), b.Compare(x, C(b, x, 0.0), "GE"));
  ctx.Require(AllTrue(b, ok), fmt::format("argument '{}' must be {}", arg, what));
}

void RequireFinite(LowerContext& ctx, const Value& x, const std::string& arg, const std::string& what = "finite") {
  if (NumElements(x.shape()) == 0) return;
  ctx.Require(AllTrue(ctx.b, IsFinite(ctx.b, x)), fmt::format("argument '{}' must be {}", arg, what));
}

// Event times [E] (f64): finite and sorted non-decreasing.
void RequireEventTimes(LowerContext& ctx, const Value& t) {
  Builder& b = ctx.b;
  RequireFinite(ctx, t, "eventTimes");
  const int64_t e = t.shape()[0];
  if (e < 2) return;
  const Value later = SliceAxis(b, t, 0, 1, e), earlier = SliceAxis(b, t, 0, 0, e - 1);
  ctx.Require(AllTrue(b, b.Compare(later, earlier, "GE")), "argument 'eventTimes' must be sorted non-decreasing");
}

// How far a row of probabilities may sum from 1 (causal.cpp SumTolerance).
double SumTolerance(DType d) {
  switch (d) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-6;
    case DType::Float16: return 1e-3;
    default: return 1e-2;
  }
}

double SymmetryTolerance(DType d) {
  switch (d) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-4;
    case DType::Float16: return 1e-2;
    default: return 6e-2;
  }
}

// Rows along the last axis of p (f64) are probability distributions (causal CheckDistribution).
void RequireDistributions(LowerContext& ctx, const Value& p, DType dtype, const std::string& arg) {
  Builder& b = ctx.b;
  if (NumElements(p.shape()) == 0) return;
  RequireNonNegative(ctx, p, arg, "probabilities (finite and >= 0)");
  const Value sums = b.Reduce(p, Dims{p.rank() - 1}, ReduceKind::Sum);
  const double tol = SumTolerance(dtype);
  const Value ok = b.Compare(Abs(b, b.Sub(sums, C(b, sums, 1.0))), C(b, sums, tol), "LE");
  ctx.Require(AllTrue(b, ok), fmt::format("argument '{}' must be rows summing to 1 (within {})", arg, tol));
}

// Node ids (i32 [K]) in [0, n) and distinct.
void RequireIds(LowerContext& ctx, const Value& ids, int64_t n, const std::string& arg) {
  Builder& b = ctx.b;
  const int64_t k = ids.shape()[0];
  if (k == 0) return;
  const Value in_range = And(b, b.Compare(ids, C(b, ids, 0.0), "GE"), b.Compare(ids, C(b, ids, static_cast<double>(n)), "LT"));
  ctx.Require(AllTrue(b, in_range), fmt::format("argument '{}' must be node ids in [0, {})", arg, n));
  if (k < 2) return;
  const Shape kk{k, k};
  const Value rows = b.BroadcastInDim(ids, kk, Dims{0}), cols = b.BroadcastInDim(ids, kk, Dims{1});
  const Value off_diag = b.Compare(b.Iota({kI64, kk}, 0), b.Iota({kI64, kk}, 1), "NE");
  const Value dup = And(b, b.Compare(rows, cols, "EQ"), off_diag);
  ctx.Require(Not(b, AnyTrue(b, dup)), fmt::format("argument '{}' must be distinct node ids", arg));
}

// [n] bool: node v is among the ids.
Value Membership(Builder& b, const Value& ids, int64_t n) {
  const int64_t k = ids.shape()[0];
  if (k == 0) return b.Splat({kBool, {n}}, 0.0);
  const Shape kn{k, n};
  const Value eq = b.Compare(b.BroadcastInDim(ids, kn, Dims{0}), b.Iota({DType::Int32, kn}, 1), "EQ");
  return b.Reduce(eq, Dims{0}, ReduceKind::Or);
}

// ---- elementwise ------------------------------------------------------------------------------

using Fn2 = Value (*)(Builder&, const Value&, const Value&);

// output = f(a, b) in ComputeType, broadcast to the output shape, rounded once.
LowerFn Pointwise(Fn2 f) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    const TensorType& out = ctx.out_type(0);
    const DType ct = ComputeType(out.dtype);
    const Value a = ctx.b.Convert(Broadcast(ctx.b, in[0], out.shape), ct);
    const Value c = ctx.b.Convert(Broadcast(ctx.b, in[1], out.shape), ct);
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, a, c), out.dtype)};
  };
}

// ---- hawkes -----------------------------------------------------------------------------------

std::vector<Value> HawkesIntensity(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double mu = F32Attr(ctx, "mu"), alpha = F32Attr(ctx, "alpha"), beta = F32Attr(ctx, "beta");
  const Value ev = Wide(b, in[0]);
  RequireEventTimes(ctx, ev);
  const Value q = Flat(b, Wide(b, in[1]));
  RequireFinite(ctx, q, "queryTimes");
  const int64_t e = ev.shape()[0], nq = q.shape()[0];
  const Shape qe{nq, e};
  const Value qb = b.BroadcastInDim(q, qe, Dims{0}), eb = b.BroadcastInDim(ev, qe, Dims{1});
  const Value term = Exp(b, b.Mul(C(b, qb, -beta), b.Sub(qb, eb)));
  const Value sum = Sum(b, b.Select(b.Compare(eb, qb, "LT"), term, C(b, term, 0.0)), Dims{1});
  const Value y = b.Add(C(b, sum, mu), b.Mul(C(b, sum, alpha), sum));
  return {b.Reshape(Narrow(b, y, ctx.out_type(0).dtype), ctx.out_type(0).shape)};
}

std::vector<Value> HawkesKernelMatrix(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double alpha = F32Attr(ctx, "alpha"), beta = F32Attr(ctx, "beta");
  const Value t = Wide(b, in[0]);
  RequireEventTimes(ctx, t);
  const int64_t e = t.shape()[0];
  const Shape ee{e, e};
  const Value ti = b.BroadcastInDim(t, ee, Dims{0}), tj = b.BroadcastInDim(t, ee, Dims{1});
  const Value lower = b.Compare(b.Iota({kI64, ee}, 1), b.Iota({kI64, ee}, 0), "LT");
  const Value k = b.Mul(C(b, ti, alpha), Exp(b, b.Mul(C(b, ti, -beta), b.Sub(ti, tj))));
  const Value y = b.Select(And(b, lower, b.Compare(tj, ti, "LT")), k, C(b, k, 0.0));
  return {Narrow(b, y, ctx.out_type(0).dtype)};
}

// sum_i ln(mu + alpha B_i) - [mu T + (alpha/beta) sum_i (1 - exp(-beta (T - t_i)))], B_i the
// decayed kicks of strictly earlier events (the CPU's tie-aware recursion in closed form).
std::vector<Value> HawkesLogLikelihood(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double total = F32Attr(ctx, "total_time"), mu = F32Attr(ctx, "mu"), alpha = F32Attr(ctx, "alpha"),
               beta = F32Attr(ctx, "beta");
  const Value t = Wide(b, in[0]);
  RequireEventTimes(ctx, t);
  const int64_t e = t.shape()[0];
  if (e > 0) {
    ctx.Require(b.Reshape(b.Compare(SliceAxis(b, t, 0, 0, 1), b.Splat({kF64, {1}}, 0.0), "GE"), {}),
                "argument 'eventTimes' must be within [0, totalTime]");
    ctx.Require(b.Reshape(b.Compare(SliceAxis(b, t, 0, e - 1, e), b.Splat({kF64, {1}}, total), "LE"), {}),
                fmt::format("argument 'eventTimes' must be within [0, totalTime = {}]", total));
  }
  const Shape ee{e, e};
  const Value ti = b.BroadcastInDim(t, ee, Dims{0}), tj = b.BroadcastInDim(t, ee, Dims{1});
  const Value kick = Exp(b, b.Mul(C(b, ti, -beta), b.Sub(ti, tj)));
  const Value excitation = Sum(b, b.Select(b.Compare(tj, ti, "LT"), kick, C(b, kick, 0.0)), Dims{1});
  const Value sum_log = SumAll(b, Log(b, b.Add(C(b, excitation, mu), b.Mul(C(b, excitation, alpha), excitation))));
  const Value decay = Neg(b, b.Unary("stablehlo.exponential_minus_one", b.Mul(C(b, t, -beta), b.Sub(C(b, t, total), t))));
  const Value sum_decay = SumAll(b, decay);
  const Value compensator =
      b.Add(b.Scalar(kF64, mu * total), b.Mul(b.Scalar(kF64, alpha / beta), sum_decay));
  return {Narrow(b, b.Sub(sum_log, compensator), ctx.out_type(0).dtype)};
}

// Philox4x32-10 of counters (c0, c1, 0, 0) under a constant key, on ui32 vectors.
std::array<Value, 4> Philox(Builder& b, Value c0, Value c1, uint64_t seed) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  Value c2 = C(b, c0, 0.0), c3 = C(b, c0, 0.0);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const Value mask = b.Splat({DType::Uint64, c0.shape()}, 4294967295.0);
  const Value shift = b.Splat({DType::Uint64, c0.shape()}, 32.0);
  auto mul = [&](const Value& x, uint32_t m, Value* hi, Value* lo) {
    const Value p = b.Mul(b.Convert(x, DType::Uint64), b.Splat({DType::Uint64, x.shape()}, static_cast<double>(m)));
    *hi = b.Convert(ShiftRight(b, p, shift), DType::Uint32);
    *lo = b.Convert(b.Binary("stablehlo.and", p, mask), DType::Uint32);
  };
  for (int round = 0; round < 10; ++round) {
    Value hi0, lo0, hi1, lo1;
    mul(c0, kMul0, &hi0, &lo0);
    mul(c2, kMul1, &hi1, &lo1);
    const Value n0 = b.Binary("stablehlo.xor", b.Binary("stablehlo.xor", hi1, c1), C(b, c1, k0));
    const Value n2 = b.Binary("stablehlo.xor", b.Binary("stablehlo.xor", hi0, c3), C(b, c3, k1));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {c0, c1, c2, c3};
}

// PhiloxUniformDouble(seed, 0, index) for ui64 indices.
Value UniformDouble(Builder& b, const Value& index, uint64_t seed) {
  const Value mask = b.Splat(index.type, 4294967295.0);
  const Value lo = b.Convert(b.Binary("stablehlo.and", index, mask), DType::Uint32);
  const Value hi = b.Convert(ShiftRight(b, index, C(b, index, 32)), DType::Uint32);
  const auto r = Philox(b, lo, hi, seed);
  const Value r0 = b.Convert(r[0], DType::Uint64), r1 = b.Convert(r[1], DType::Uint64);
  Value bits = b.Binary("stablehlo.xor", ShiftLeft(b, r0, C(b, r0, 21)), ShiftRight(b, r1, C(b, r1, 11)));
  bits = b.Binary("stablehlo.and", bits, b.Splat(bits.type, 9007199254740991.0));
  return b.Mul(b.Convert(bits, kF64), b.Splat({kF64, bits.shape()}, 0x1.0p-53));
}

// Ogata thinning exactly as point_process.cpp, one candidate per while iteration: candidate k
// draws PhiloxUniformDouble(seed, 0, 2k) (waiting time) and (seed, 0, 2k + 1) (acceptance).
std::vector<Value> HawkesSimulate(LowerContext& ctx, std::span<const Value>) {
  Builder& b = ctx.b;
  const double mu = F32Attr(ctx, "mu"), alpha = F32Attr(ctx, "alpha"), beta = F32Attr(ctx, "beta"),
               horizon = F32Attr(ctx, "horizon");
  const int64_t cap = ctx.attrs().Int("max_events");
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs().Int("seed"));
  const TensorType u64{DType::Uint64, {}}, f64{kF64, {}}, i64{kI64, {}}, i1{kBool, {}}, buf{kF64, {cap}};
  const Value init[] = {b.Splat(u64, 0.0), b.Splat(f64, 0.0), b.Splat(f64, 0.0), b.Splat(i64, 0.0),
                        b.Splat(buf, -1.0), b.Splat(i1, 0.0)};
  const std::vector<TensorType> types = {u64, f64, f64, i64, buf, i1};
  Builder::Region cond{types, [&](Builder&, std::span<const Value> s) { return std::vector<Value>{Not(b, s[5])}; }};
  Builder::Region body{types, [&](Builder&, std::span<const Value> s) {
                         const Value& k = s[0];
                         const Value& t = s[1];
                         const Value& exc = s[2];
                         const Value& count = s[3];
                         const Value& times = s[4];
                         const Value idx = b.Mul(b.BroadcastInDim(k, {2}, Dims{}), b.Splat({DType::Uint64, {2}}, 2.0));
                         const Value u = UniformDouble(b, b.Add(idx, b.Iota({DType::Uint64, {2}}, 0)), seed);
                         const Value u_wait = b.Reshape(SliceAxis(b, u, 0, 0, 1), {});
                         const Value u_accept = b.Reshape(SliceAxis(b, u, 0, 1, 2), {});
                         const Value bound = b.Add(b.Scalar(kF64, mu), exc);
                         const Value wait = b.Div(Neg(b, b.Unary("stablehlo.log_plus_one", Neg(b, u_wait))), bound);
                         const Value candidate = b.Add(t, wait);
                         const Value stop = Not(b, b.Compare(candidate, b.Scalar(kF64, horizon), "LT"));
                         const Value exc2 = b.Mul(exc, Exp(b, b.Mul(b.Scalar(kF64, -beta), wait)));
                         const Value intensity = b.Add(b.Scalar(kF64, mu), exc2);
                         const Value accept = And(b, Not(b, stop), b.Compare(b.Mul(u_accept, bound), intensity, "LT"));
                         const Value ops[] = {times, b.Reshape(candidate, {1}), count};
                         const Value written = b.Emit("stablehlo.dynamic_update_slice", ops, times.type);
                         const Value count2 = b.Select(accept, b.Add(count, b.Scalar(kI64, 1.0)), count);
                         const Value exc3 = b.Select(accept, b.Add(exc2, b.Scalar(kF64, alpha)), exc2);
                         const Value full = b.Compare(count2, b.Scalar(kI64, static_cast<double>(cap)), "EQ");
                         return std::vector<Value>{b.Add(k, b.Scalar(DType::Uint64, 1.0)),
                                                   b.Select(stop, t, candidate),
                                                   b.Select(stop, exc, exc3),
                                                   count2,
                                                   b.Select(accept, written, times),
                                                   Or(b, stop, And(b, accept, full))};
                       }};
  const Builder::Region regions[] = {cond, body};
  const std::vector<Value> r = b.EmitRegions("stablehlo.while", init, types, regions);
  return {b.Convert(r[4], ctx.out_type(0).dtype), b.Reshape(r[3], {1})};
}

// ---- vsa --------------------------------------------------------------------------------------

LowerFn VsaPermute(bool inverse) {
  return [inverse](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const int64_t n = NumElements(in[0].shape());
    if (n == 0) return std::vector<Value>{in[0]};
    const int64_t k = ctx.attrs().Int("k");
    const int64_t s = ((k % n) + n) % n;
    const int64_t offset = inverse ? (n - s) % n : s;
    // output[(i + offset) mod n] = input[i], i.e. output[j] = input[(j - offset) mod n].
    return std::vector<Value>{b.Reshape(Shifted(b, Flat(b, in[0]), 0, -offset), in[0].shape())};
  };
}

std::vector<Value> VsaSimilarity(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const DType out = ctx.out_type(0).dtype;
  if (in[0].shape()[0] == 0) return {b.Splat(ctx.out_type(0), 0.0)};
  const Value a = Wide(b, in[0]), c = Wide(b, in[1]);
  const Value finite = AllTrue(b, And(b, IsFinite(b, a), IsFinite(b, c)));
  const Value max_a = b.Reduce(Abs(b, a), Dims{0}, ReduceKind::Max), max_b = b.Reduce(Abs(b, c), Dims{0}, ReduceKind::Max);
  const Value zero = Or(b, b.Compare(max_a, C(b, max_a, 0.0), "EQ"), b.Compare(max_b, C(b, max_b, 0.0), "EQ"));
  const Value ea = FrexpOf(b, max_a).e, eb = FrexpOf(b, max_b).e;
  const Value x = Ldexp(b, a, b.BroadcastTo(Neg(b, ea), a.shape()));
  const Value y = Ldexp(b, c, b.BroadcastTo(Neg(b, eb), c.shape()));
  const Value dot = SumAll(b, b.Mul(x, y)), na = SumAll(b, b.Mul(x, x)), nb = SumAll(b, b.Mul(y, y));
  Value cosine = b.Div(dot, b.Mul(Sqrt(b, na), Sqrt(b, nb)));
  cosine = b.Select(b.Compare(cosine, C(b, cosine, -1.0), "LT"), C(b, cosine, -1.0), cosine);
  cosine = b.Select(b.Compare(cosine, C(b, cosine, 1.0), "GT"), C(b, cosine, 1.0), cosine);
  Value r = b.Select(zero, C(b, cosine, 0.0), cosine);
  r = b.Select(finite, r, C(b, r, NAN));
  return {Narrow(b, r, out)};
}

// ---- active inference -------------------------------------------------------------------------

std::vector<Value> BeliefUpdate(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value l = Wide(b, in[0]), p = Wide(b, in[1]);
  RequireNonNegative(ctx, l, "likelihood");
  RequireNonNegative(ctx, p, "prior");
  if (l.shape()[0] == 0) return {in[0]};
  // Each product as mantissa product times a power of two, rescaled by the largest exponent.
  const Value used = And(b, b.Compare(l, C(b, l, 0.0), "NE"), b.Compare(p, C(b, p, 0.0), "NE"));
  ctx.Require(AnyTrue(b, used),
              "argument 'likelihood' must be such that the evidence sum(likelihood * prior) is > 0");
  const Frexp fl = FrexpOf(b, l), fp = FrexpOf(b, p);
  const Value mant = b.Mul(fl.m, fp.m);
  const Value expo = b.Add(fl.e, fp.e);
  const Value masked = b.Select(used, expo, C(b, expo, -1e18));
  const Value largest = b.BroadcastTo(b.Reduce(masked, Dims{0}, ReduceKind::Max), expo.shape());
  const Value post = b.Select(used, Ldexp(b, mant, b.Sub(expo, largest)), C(b, mant, 0.0));
  const Value evidence = b.BroadcastTo(SumAll(b, post), post.shape());
  return {Narrow(b, b.Div(post, evidence), ctx.out_type(0).dtype)};
}

// sum_i w_i ln v_i over w_i > 0 (0 ln 0 = 0).
Value WeightedLogSum(Builder& b, const Value& w, const Value& v) {
  const Value t = b.Mul(w, Log(b, v));
  return SumAll(b, b.Select(b.Compare(w, C(b, w, 0.0), "GT"), t, C(b, t, 0.0)));
}

std::vector<Value> FreeEnergy(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value l = Wide(b, in[0]), q = Wide(b, in[1]), p = Wide(b, in[2]);
  RequireNonNegative(ctx, l, "likelihood");
  RequireNonNegative(ctx, q, "posterior");
  RequireNonNegative(ctx, p, "prior");
  const Value t = b.Mul(q, b.Sub(b.Sub(Log(b, q), Log(b, p)), Log(b, l)));
  const Value f = SumAll(b, b.Select(b.Compare(q, C(b, q, 0.0), "EQ"), C(b, t, 0.0), t));
  return {Narrow(b, f, ctx.out_type(0).dtype)};
}

std::vector<Value> ExpectedFreeEnergy(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value qo = Wide(b, in[0]), c = Wide(b, in[1]), qs = Wide(b, in[2]);
  RequireNonNegative(ctx, qo, "predictedObs");
  RequireNonNegative(ctx, c, "preferredObs");
  RequireNonNegative(ctx, qs, "predictedState");
  const Value cost = Neg(b, WeightedLogSum(b, qo, c));
  const Value entropy = Neg(b, WeightedLogSum(b, qs, qs));
  return {Narrow(b, b.Sub(cost, entropy), ctx.out_type(0).dtype)};
}

std::vector<Value> PrecisionWeight(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  const Value w = Broadcast(b, in[1], out.shape);
  RequireNonNegative(ctx, Wide(b, w), "precision");
  const DType ct = ComputeType(out.dtype);
  return {b.Convert(b.Mul(b.Convert(Broadcast(b, in[0], out.shape), ct), b.Convert(w, ct)), out.dtype)};
}

// ---- predictive coding ------------------------------------------------------------------------

std::vector<Value> Prediction(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value w = Wide(b, in[0]), s = Wide(b, in[1]);
  const Value y = b.DotGeneral(w, s, {}, {}, Dims{1}, Dims{0}, kF64);
  return {Narrow(b, y, ctx.out_type(0).dtype)};
}

std::vector<Value> UpdateRepresentation(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double lr = F32Attr(ctx, "learning_rate");
  const Value w = Wide(b, in[0]), s = Wide(b, in[1]), e = Wide(b, in[2]);
  const Value g = b.DotGeneral(w, e, {}, {}, Dims{0}, Dims{0}, kF64);
  return {Narrow(b, b.Add(s, b.Mul(C(b, g, lr), g)), ctx.out_type(0).dtype)};
}

std::vector<Value> UpdateWeights(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double lr = F32Attr(ctx, "learning_rate");
  const Value w = Wide(b, in[0]), s = Wide(b, in[1]), e = Wide(b, in[2]);
  const Value step = b.BroadcastInDim(b.Mul(C(b, e, lr), e), w.shape(), Dims{0});
  const Value sb = b.BroadcastInDim(s, w.shape(), Dims{1});
  return {Narrow(b, b.Add(w, b.Mul(step, sb)), ctx.out_type(0).dtype)};
}

// ---- markov blanket ---------------------------------------------------------------------------

LowerFn MarkovFlow(int32_t source) {
  return [source](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value& part = in[1];
    const int64_t n = part.shape()[0];
    if (n > 0) {
      const Value ok = And(b, b.Compare(part, C(b, part, 0.0), "GE"), b.Compare(part, C(b, part, 3.0), "LE"));
      ctx.Require(AllTrue(b, ok),
                  "argument 'partition' must be labels 0 (internal), 1 (sensory), 2 (active) or 3 (external)");
    }
    const Value mi = Wide(b, in[0]);
    RequireNonNegative(ctx, mi, "mutualInformation");
    if (n == 0) return std::vector<Value>{b.Splat(ctx.out_type(0), 0.0)};
    const Shape nn{n, n};
    const Value internal_j = b.BroadcastInDim(b.Compare(part, C(b, part, 0.0), "EQ"), nn, Dims{1});
    const Value off_diag = b.Compare(b.Iota({kI64, nn}, 0), b.Iota({kI64, nn}, 1), "NE");
    const Value sum = Sum(b, b.Select(And(b, internal_j, off_diag), mi, C(b, mi, 0.0)), Dims{1});
    const Value src = b.Compare(part, C(b, part, static_cast<double>(source)), "EQ");
    return std::vector<Value>{RoundOnce(b, b.Select(src, sum, C(b, sum, 0.0)), ctx.out_type(0).dtype)};
  };
}

std::vector<Value> MutualInformation(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const DType out = ctx.out_type(0).dtype;
  const Value p0 = Wide(b, in[0]);
  if (NumElements(p0.shape()) == 0) return {b.Splat(ctx.out_type(0), 0.0)};
  RequireFinite(ctx, p0, "joint");
  ctx.Require(AllTrue(b, b.Compare(p0, C(b, p0, 0.0), "GE")),
              "argument 'joint' must be >= 0 everywhere (a probability table)");
  const Value largest = b.Reduce(p0, Dims{0, 1}, ReduceKind::Max);
  ctx.Require(b.Compare(largest, C(b, largest, 0.0), "GT"), "argument 'joint' must be a table with a positive total");
  const Value p = Ldexp(b, p0, b.BroadcastTo(Neg(b, FrexpOf(b, largest).e), p0.shape()));
  const Value px = b.BroadcastInDim(Sum(b, p, Dims{1}), p.shape(), Dims{0});
  const Value py = b.BroadcastInDim(Sum(b, p, Dims{0}), p.shape(), Dims{1});
  const Value n = b.BroadcastTo(SumAll(b, p), p.shape());
  const Value t = b.Mul(b.Div(p, n), b.Sub(b.Sub(b.Add(Log(b, p), Log(b, n)), Log(b, px)), Log(b, py)));
  Value info = SumAll(b, b.Select(b.Compare(p, C(b, p, 0.0), "EQ"), C(b, t, 0.0), t));
  info = b.Select(b.Compare(info, C(b, info, 0.0), "LT"), C(b, info, 0.0), info);
  return {Narrow(b, info, out)};
}

std::vector<Value> BlanketPartition(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const int64_t n = in[0].shape()[0];
  RequireIds(ctx, in[1], n, "internal");
  const Value adj = Wide(b, in[0]);
  RequireFinite(ctx, adj, "adjacency");
  if (n == 0) return {b.Splat(ctx.out_type(0), 0.0)};
  const Shape nn{n, n};
  const Value off_diag = b.Compare(b.Iota({kI64, nn}, 0), b.Iota({kI64, nn}, 1), "NE");
  const Value edge = And(b, off_diag, b.Compare(adj, C(b, adj, 0.0), "NE"));  // edge[u][v]: u -> v
  const Value internal = Membership(b, in[1], n);
  const Value external = Not(b, internal);
  const Value int_rows = b.BroadcastInDim(internal, nn, Dims{0});
  // child[v]: some internal u with u -> v; parent[v]: some internal u with v -> u.
  const Value child = And(b, external, b.Reduce(And(b, int_rows, edge), Dims{0}, ReduceKind::Or));
  const Value int_cols = b.BroadcastInDim(internal, nn, Dims{1});
  const Value parent = And(b, external, b.Reduce(And(b, int_cols, edge), Dims{1}, ReduceKind::Or));
  // coparent[v]: v -> c for some child c.
  const Value child_cols = b.BroadcastInDim(child, nn, Dims{1});
  const Value coparent = And(b, external, b.Reduce(And(b, child_cols, edge), Dims{1}, ReduceKind::Or));
  const TensorType lt{DType::Int32, {n}};
  Value label = b.Splat(lt, 3.0);
  label = b.Select(Or(b, parent, coparent), b.Splat(lt, 1.0), label);
  label = b.Select(child, b.Splat(lt, 2.0), label);
  label = b.Select(internal, b.Splat(lt, 0.0), label);
  return {label};
}

// ---- causal -----------------------------------------------------------------------------------

std::vector<Value> Backdoor(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const Value cond = Wide(b, in[0]), pz = Wide(b, in[1]);
  if (pz.shape()[0] == 0) ctx.Unsupported("zCount 0 with a non-empty output (the CPU kernel rejects it)");
  RequireDistributions(ctx, pz, out.dtype, "marginalZ");
  RequireDistributions(ctx, cond, out.dtype, "conditional");
  const Value y = b.DotGeneral(cond, pz, {}, {}, Dims{1}, Dims{0}, kF64);  // [X, Y]
  return {RoundOnce(b, y, out.dtype)};
}

std::vector<Value> Frontdoor(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const Value pmx = Wide(b, in[0]), pyxm = Wide(b, in[1]), px = Wide(b, in[2]);
  if (pmx.shape()[1] == 0) ctx.Unsupported("mediatorCount 0 with a non-empty output (the CPU kernel rejects it)");
  RequireDistributions(ctx, pmx, out.dtype, "mediatorGivenX");
  RequireDistributions(ctx, pyxm, out.dtype, "outcomeGivenXM");
  RequireDistributions(ctx, px, out.dtype, "marginalX");
  const Value inner = b.DotGeneral(pyxm, px, {}, {}, Dims{0}, Dims{0}, kF64);  // [M, Y]
  const Value y = b.DotGeneral(pmx, inner, {}, {}, Dims{1}, Dims{0}, kF64);    // [X, Y]
  return {RoundOnce(b, y, out.dtype)};
}

std::vector<Value> DoIntervene(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const int64_t n = in[0].shape()[0];
  RequireIds(ctx, in[1], n, "intervened");
  if (n == 0) return {in[0]};
  const Value cut = b.BroadcastInDim(Membership(b, in[1], n), in[0].shape(), Dims{1});
  return {b.Select(cut, C(b, in[0], 0.0), in[0])};
}

std::vector<Value> Cate(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  const Value t = Wide(b, Broadcast(b, in[0], out.shape)), c = Wide(b, Broadcast(b, in[1], out.shape));
  return {RoundOnce(b, b.Sub(t, c), out.dtype)};
}

std::vector<Value> Counterfactual(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  const double slope = F32Attr(ctx, "slope");
  const Value y = Wide(b, Broadcast(b, in[0], out.shape)), x = Wide(b, Broadcast(b, in[1], out.shape)),
              xp = Wide(b, Broadcast(b, in[2], out.shape));
  return {RoundOnce(b, b.Add(y, b.Mul(C(b, y, slope), b.Sub(xp, x))), out.dtype)};
}

std::vector<Value> IvEstimate(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value z = Wide(b, in[0]), x = Wide(b, in[1]), y = Wide(b, in[2]);
  const double n = static_cast<double>(z.shape()[0]);
  auto dev = [&](const Value& v) {
    const Value mean = b.Div(SumAll(b, v), b.Scalar(kF64, n));
    return b.Sub(v, b.BroadcastTo(mean, v.shape()));
  };
  const Value dz = dev(z), dx = dev(x), dy = dev(y);
  const Value szy = SumAll(b, b.Mul(dz, dy)), szx = SumAll(b, b.Mul(dz, dx));
  const Value szz = SumAll(b, b.Mul(dz, dz)), sxx = SumAll(b, b.Mul(dx, dx));
  const Value scale = b.Mul(Sqrt(b, szz), Sqrt(b, sxx));
  const Value weak = And(b, And(b, IsFinite(b, szx), IsFinite(b, scale)),
                         b.Compare(Abs(b, szx), b.Mul(b.Scalar(kF64, 1e-12), scale), "LE"));
  ctx.Require(Not(b, weak), "argument 'instrument' must be correlated with the treatment (|corr(Z, X)| >= 1e-12)");
  return {RoundOnce(b, b.Div(szy, szx), ctx.out_type(0).dtype)};
}

// prod_i c_i with the mantissas multiplied in chunks (>= 2^-512 each) and the binary exponents
// summed in i64, so that the product only underflows when its true value does.
std::vector<Value> DagFactorization(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const DType out = ctx.out_type(0).dtype;
  const Value c = Wide(b, in[0]);
  int64_t len = c.shape()[0];
  if (len == 0) return {b.Splat(ctx.out_type(0), 1.0)};
  ctx.Require(AllTrue(b, And(b, b.Compare(c, C(b, c, 0.0), "GE"), b.Compare(c, C(b, c, 1.0), "LE"))),
              "argument 'conditionals' must be probabilities in [0, 1]");
  const Value any_zero = AnyTrue(b, b.Compare(c, C(b, c, 0.0), "EQ"));
  const Value safe = b.Select(b.Compare(c, C(b, c, 0.0), "EQ"), C(b, c, 1.0), c);
  Frexp f = FrexpOf(b, safe);
  Value m = f.m, e = f.e;
  constexpr int64_t kChunk = 512;
  while (len > 1) {
    const int64_t chunks = (len + kChunk - 1) / kChunk;
    const int64_t width = std::min(len, kChunk);
    if (chunks * width != len) {
      const Value mp[] = {m, b.Splat({kF64, {chunks * width - len}}, 1.0)};
      const Value ep[] = {e, b.Splat({kI64, {chunks * width - len}}, 0.0)};
      m = b.Concatenate(mp, 0);
      e = b.Concatenate(ep, 0);
    }
    const Value pm = b.Reduce(b.Reshape(m, {chunks, width}), Dims{1}, ReduceKind::Prod);
    const Value pe = Sum(b, b.Reshape(e, {chunks, width}), Dims{1});
    const Frexp g = FrexpOf(b, pm);
    m = g.m;
    e = b.Add(pe, g.e);
    len = chunks;
  }
  const Value ms = b.Reshape(m, {}), es = b.Reshape(e, {});
  const Value r = Ldexp(b, ms, b.Max(es, C(b, es, -2000)));
  return {RoundOnce(b, b.Select(any_zero, C(b, r, 0.0), r), out)};
}

std::vector<Value> Cholesky(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const TensorType& out = ctx.out_type(0);
  const int64_t n = in[0].shape().back();
  if (NumElements(out.shape) == 0) return {in[0]};
  const Value a = Wide(b, in[0]);
  const int64_t r = a.rank();
  RequireFinite(ctx, a, "input", "finite entries");
  Dims perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
  const Value at = b.Transpose(a, perm);
  const Value rows = b.Iota({kI64, a.shape()}, r - 2), cols = b.Iota({kI64, a.shape()}, r - 1);
  const Value strict_lower = b.Compare(cols, rows, "LT");
  const Value lower = b.Compare(cols, rows, "LE");
  const Value eye = b.Compare(cols, rows, "EQ");
  // Symmetry: |a_ij - a_ji| <= tol max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)) below the diagonal.
  const Value diag = Sum(b, b.Select(eye, Abs(b, a), C(b, a, 0.0)), Dims{r - 1});  // [..., N]
  Dims keep_i, keep_j;
  for (int64_t d = 0; d < r - 1; ++d) keep_i.push_back(d);
  for (int64_t d = 0; d < r - 2; ++d) keep_j.push_back(d);
  keep_j.push_back(r - 1);
  const Value dii = b.BroadcastInDim(diag, a.shape(), keep_i), djj = b.BroadcastInDim(diag, a.shape(), keep_j);
  const Value scale = b.Max(b.Max(Abs(b, a), Abs(b, at)), Sqrt(b, b.Mul(dii, djj)));
  const double tol = SymmetryTolerance(out.dtype);
  const Value sym = b.Compare(Abs(b, b.Sub(a, at)), b.Mul(C(b, scale, tol), scale), "LE");
  if (n > 1) {
    ctx.Require(AllTrue(b, Or(b, Not(b, strict_lower), sym)),
                fmt::format("argument 'input' must be symmetric (relative tolerance {})", tol));
  }
  // The lower triangle is the one factorised.
  const Value s = b.Select(lower, a, at);
  const Value l = b.Emit("stablehlo.cholesky", std::span(&s, 1), s.type, "lower = true");
  const Value ldiag = b.Select(eye, l, C(b, l, 1.0));
  ctx.Require(AllTrue(b, b.Compare(ldiag, C(b, l, 0.0), "GT")), "argument 'input' must be positive definite");
  return {RoundOnce(b, b.Select(lower, l, C(b, l, 0.0)), out.dtype)};
}

// ---- physics ----------------------------------------------------------------------------------

std::vector<Value> Laplacian(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const double h = F32Attr(ctx, "spacing");
  if (NumElements(in[0].shape()) == 0) return {in[0]};
  const Value u = Wide(b, in[0]);
  Value out = C(b, u, 0.0);
  for (int64_t a = 0; a < u.rank(); ++a) {
    const Value left = Shifted(b, u, a, -1), right = Shifted(b, u, a, 1);
    out = b.Add(out, b.Add(b.Sub(left, b.Mul(C(b, u, 2.0), u)), right));
  }
  return {RoundOnce(b, b.Div(out, C(b, out, h * h)), ctx.out_type(0).dtype)};
}

Value Central(Builder& b, const Value& u, double h) {
  return b.Div(b.Sub(Shifted(b, u, 0, 1), Shifted(b, u, 0, -1)), C(b, u, 2.0 * h));
}

std::vector<Value> FirstDerivative(LowerContext& ctx, std::span<const Value> in) {
  if (in[0].shape()[0] == 0) return {in[0]};
  const Value u = Wide(ctx.b, in[0]);
  return {RoundOnce(ctx.b, Central(ctx.b, u, F32Attr(ctx, "spacing")), ctx.out_type(0).dtype)};
}

std::vector<Value> Laplacian4(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  if (in[0].shape()[0] == 0) return {in[0]};
  const double h = F32Attr(ctx, "spacing");
  const Value u = Wide(b, in[0]);
  auto at = [&](int64_t o) { return Shifted(b, u, 0, o); };
  Value s = b.Add(Neg(b, at(-2)), b.Mul(C(b, u, 16.0), at(-1)));
  s = b.Sub(s, b.Mul(C(b, u, 30.0), u));
  s = b.Add(s, b.Mul(C(b, u, 16.0), at(1)));
  s = b.Sub(s, at(2));
  return {RoundOnce(b, b.Div(s, C(b, s, 12.0 * h * h)), ctx.out_type(0).dtype)};
}

std::vector<Value> QuantumPotential(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value rho = Wide(b, in[0]);
  RequireNonNegative(ctx, rho, "input", "a density (finite and >= 0)");
  if (rho.shape()[0] == 0) return {in[0]};
  const double h = F32Attr(ctx, "spacing");
  const Value s = Sqrt(b, rho);
  const Value second = b.Add(b.Sub(Shifted(b, s, 0, -1), b.Mul(C(b, s, 2.0), s)), Shifted(b, s, 0, 1));
  const Value q = b.Div(b.Mul(C(b, s, -0.5), b.Div(second, C(b, s, h * h))), s);
  const Value y = b.Select(b.Compare(s, C(b, s, 0.0), "EQ"), C(b, q, 0.0), q);
  return {RoundOnce(b, y, ctx.out_type(0).dtype)};
}

std::vector<Value> MadelungContinuity(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  if (in[0].shape()[0] == 0) return {in[0]};
  const Value flux = b.Mul(Wide(b, in[0]), Wide(b, in[1]));
  return {RoundOnce(b, Central(b, flux, F32Attr(ctx, "spacing")), ctx.out_type(0).dtype)};
}

// DFT of each row of the last axis in complex<f64> (XLA's IFFT scales by 1/n like the CPU).
LowerFn Fft(bool inverse) {
  return [inverse](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const int64_t n = out.shape.empty() ? 1 : out.shape.back();
    if (NumElements(out.shape) == 0) return std::vector<Value>{in[0], in[0]};
    const Value re = Wide(b, in[0]);
    const Value im = in.size() > 1 && !in[1].name.empty() ? Wide(b, in[1]) : C(b, re, 0.0);
    const Value parts[] = {re, im};
    const Value z = b.Emit("stablehlo.complex", parts, {DType::Complex128, re.shape()});
    const Value f = b.Emit("stablehlo.fft", std::span(&z, 1), z.type,
                           fmt::format("fft_type = #stablehlo<fft_type {}>, fft_length = array<i64: {}>",
                                       inverse ? "IFFT" : "FFT", n));
    const Value fr = b.Emit("stablehlo.real", std::span(&f, 1), re.type);
    const Value fi = b.Emit("stablehlo.imag", std::span(&f, 1), re.type);
    return std::vector<Value>{RoundOnce(b, fr, out.dtype), RoundOnce(b, fi, out.dtype)};
  };
}

// ---- pospop -----------------------------------------------------------------------------------

std::vector<Value> PosPop(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const int64_t bits = ctx.out_type(0).shape[0];
  const Value w = Flat(b, in[0]);
  const int64_t n = w.shape()[0];
  if (n == 0) return {b.Splat(ctx.out_type(0), 0.0)};
  const Shape nb{n, bits};
  const Value wb = b.BroadcastInDim(w, nb, Dims{0});
  const Value bit = b.Binary("stablehlo.and", ShiftRight(b, wb, b.Iota({w.dtype(), nb}, 1)), b.Splat({w.dtype(), nb}, 1.0));
  return {Sum(b, b.Convert(bit, kI64), Dims{0})};
}

}  // namespace

void RegisterResearchLowerings(LoweringTable& t) {
  t.Add("hawkes.intensity", HawkesIntensity);
  t.Add("hawkes.kernel_matrix", HawkesKernelMatrix);
  t.Add("hawkes.log_likelihood", HawkesLogLikelihood);
  t.Add("hawkes.simulate", HawkesSimulate);

  t.Add("vsa.bind", Pointwise([](Builder& b, const Value& x, const Value& y) { return b.Mul(x, y); }));
  t.Add("vsa.bundle", Pointwise([](Builder& b, const Value& x, const Value& y) { return b.Add(x, y); }));
  t.Add("vsa.similarity", VsaSimilarity);
  t.Add("vsa.permute", VsaPermute(false));
  t.Add("vsa.inverse_permute", VsaPermute(true));

  t.Add("active_inference.belief_update", BeliefUpdate);
  t.Add("active_inference.expected_free_energy", ExpectedFreeEnergy);
  t.Add("active_inference.free_energy", FreeEnergy);
  t.Add("active_inference.precision_weight", PrecisionWeight);

  t.Add("predictive_coding.prediction", Prediction);
  t.Add("predictive_coding.prediction_error",
        Pointwise([](Builder& b, const Value& x, const Value& y) { return b.Sub(x, y); }));
  t.Add("predictive_coding.update_representation", UpdateRepresentation);
  t.Add("predictive_coding.update_weights", UpdateWeights);

  t.Add("markov_blanket.flow_active", MarkovFlow(2));
  t.Add("markov_blanket.flow_internal", MarkovFlow(0));
  t.Add("markov_blanket.mutual_information", MutualInformation);
  t.Add("markov_blanket.partition", BlanketPartition);

  t.Add("causal.backdoor_adjustment", Backdoor);
  t.Add("causal.cate", Cate);
  t.Add("causal.counterfactual", Counterfactual);
  t.Add("causal.dag_markov_factorization", DagFactorization);
  t.Add("causal.do_calculus", DoIntervene);
  t.Add("causal.frontdoor_adjustment", Frontdoor);
  t.Add("causal.iv_estimate", IvEstimate);
  t.Add("causal.cholesky", Cholesky);

  t.Add("physics.laplacian", Laplacian);
  t.Add("physics.laplacian4", Laplacian4);
  t.Add("physics.grad1d", FirstDerivative);
  t.Add("physics.divergence1d", FirstDerivative);
  t.Add("physics.fft1d", Fft(false));
  t.Add("physics.ifft1d", Fft(true));
  t.Add("physics.fft", Fft(false));
  t.Add("physics.ifft", Fft(true));
  t.Add("physics.quantum_potential", QuantumPotential);
  t.Add("physics.bohmian_velocity", FirstDerivative);
  t.Add("physics.madelung_continuity", MadelungContinuity);

  for (const char* op : {"pospop.count8", "pospop.count16", "pospop.count32", "pospop.count64", "pospop.count_string"}) {
    t.Add(op, PosPop);
  }
}

}  // namespace backplane::xla
