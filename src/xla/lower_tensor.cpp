// tensor.*: comparisons, logic, selection, casts, integer ops, index ops. Semantics follow the
// scalar reference (src/cpu/reference/tensor_ops_*.cpp): floats are computed in f64 and rounded
// once, integers in their own type (wrapping), bools as i1.
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "xla/lowering.hpp"

namespace backplane::xla {
namespace {

bool IsUnsigned(DType d) { return d == DType::Bool || (IsInteger(d) && ElementType(d)[0] == 'u'); }

std::vector<int64_t> AllDims(int64_t rank) {
  std::vector<int64_t> d(static_cast<size_t>(rank));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

// The i1 scalar "every element of `ok` is true".
Value AllTrue(Builder& b, const Value& ok) { return b.Reduce(ok, AllDims(ok.rank()), ReduceKind::And); }

Value And(Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.and", x, y); }
Value Or(Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.or", x, y); }
Value Not(Builder& b, const Value& x) { return b.Unary("stablehlo.not", x); }

// A constant of `type` from an exact MLIR literal (integer extremes are not doubles).
Value SplatLiteral(Builder& b, const TensorType& type, const std::string& literal) {
  const Value s = b.ScalarLiteral(type.dtype, literal);
  return type.shape.empty() ? s : b.BroadcastInDim(s, type.shape, {});
}

std::string IntMaxLiteral(DType d) {
  const int bits = DTypeBits(d);
  if (IsUnsigned(d)) return std::to_string(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
  return std::to_string((uint64_t{1} << (bits - 1)) - 1);
}

std::string IntMinLiteral(DType d) {
  if (IsUnsigned(d)) return "0";
  return "-" + std::to_string(uint64_t{1} << (DTypeBits(d) - 1));
}

// Axis normalisation with the graph ops' rule for rank 0 (axis 0 or -1 of a scalar as [1]).
int64_t NormAxis(const LowerContext& ctx, const std::string& attr, int64_t rank) {
  const int64_t axis = ctx.attrs().Int(attr);
  if (rank == 0) return 0;
  return Axis(ctx, attr, axis, rank);
}

// ---- elementwise ---------------------------------------------------------------------------------

LowerFn CompareOp(const char* direction) {
  return [direction](LowerContext& ctx, std::span<const Value> in) {
    const Shape& shape = ctx.out_type(0).shape;
    const Value a = Broadcast(ctx.b, in[0], shape), b = Broadcast(ctx.b, in[1], shape);
    return std::vector<Value>{ctx.b.Compare(a, b, direction)};
  };
}

LowerFn LogicalOp(const char* op) {
  return [op](LowerContext& ctx, std::span<const Value> in) {
    const Shape& shape = ctx.out_type(0).shape;
    return std::vector<Value>{ctx.b.Binary(op, Broadcast(ctx.b, in[0], shape), Broadcast(ctx.b, in[1], shape))};
  };
}

Value Trunc(Builder& b, const Value& x) {
  const Value neg = b.Compare(x, b.SplatLike(x, 0.0), "LT");
  return b.Select(neg, b.Unary("stablehlo.ceil", x), b.Unary("stablehlo.floor", x));
}

// Float (any width) to integer `to`: truncation toward zero, NaN -> 0, saturation.
Value FloatToInt(Builder& b, const Value& x, DType to) {
  const Value v = b.Convert(x, DType::Float64);
  const Value t = Trunc(b, v);
  const int bits = DTypeBits(to);
  const double hi = IsUnsigned(to) ? std::ldexp(1.0, bits) : std::ldexp(1.0, bits - 1);
  const double lo = IsUnsigned(to) ? 0.0 : -hi;
  const Value above = b.Compare(t, b.SplatLike(t, hi), "GE");
  const Value below = b.Compare(t, b.SplatLike(t, lo), "LE");
  const Value nan = b.Compare(v, v, "NE");
  const Value out_of_range = Or(b, Or(b, above, below), nan);
  const Value safe = b.Convert(b.Select(out_of_range, b.SplatLike(t, 0.0), t), to);
  const TensorType tt{to, x.shape()};
  Value r = b.Select(above, SplatLiteral(b, tt, IntMaxLiteral(to)), safe);
  r = b.Select(below, SplatLiteral(b, tt, IntMinLiteral(to)), r);
  return b.Select(nan, b.Splat(tt, 0.0), r);
}

// Integer (or bool) to a float format, one correct rounding of the exact integer.
Value IntToFloat(Builder& b, const Value& x, DType to) {
  if (to == DType::Float64 || to == DType::Float32) return b.Convert(x, to);
  // Integers of up to 24 bits are exact in f32; for f16 anything wider overflows to Inf after
  // either rounding, so f32 first is one rounding.
  if (to == DType::Float16 || DTypeBits(x.dtype()) <= 16 || x.dtype() == DType::Bool) {
    return b.Convert(b.Convert(x, DType::Float32), to);
  }
  // bf16 from 32/64-bit integers: the magnitude rounded to 24 bits to odd (exact in f32), then
  // one rounding to nearest even into bf16.
  const TensorType ut{DType::Uint64, x.shape()};
  Value m = b.Convert(b.Convert(x, IsUnsigned(x.dtype()) ? DType::Uint64 : DType::Int64), DType::Uint64);
  Value neg = b.Splat({DType::Bool, x.shape()}, 0.0);
  if (!IsUnsigned(x.dtype())) {
    neg = b.Compare(x, b.SplatLike(x, 0.0), "LT");
    m = b.Select(neg, b.Sub(b.Splat(ut, 0.0), m), m);
  }
  const Value lz = b.Unary("stablehlo.count_leading_zeros", m);
  const Value forty = b.Splat(ut, 40.0);
  const Value shift = b.Select(b.Compare(lz, forty, "LT"), b.Sub(forty, lz), b.Splat(ut, 0.0));
  const Value one = b.Splat(ut, 1.0);
  const Value pow2 = b.Binary("stablehlo.shift_left", one, shift);
  const Value lost = b.Binary("stablehlo.and", m, b.Sub(pow2, one));
  Value kept = b.Binary("stablehlo.shift_right_logical", m, shift);
  kept = b.Binary("stablehlo.or", kept, b.Convert(b.Compare(lost, b.Splat(ut, 0.0), "NE"), DType::Uint64));
  Value f = b.Mul(b.Convert(kept, DType::Float32), b.Convert(pow2, DType::Float32));
  f = b.Select(neg, b.Unary("stablehlo.negate", f), f);
  return b.Convert(f, to);
}

Value CastValue(Builder& b, const Value& x, DType to) {
  const DType from = x.dtype();
  if (from == to) return x;
  if (to == DType::Bool) return b.Compare(x, b.SplatLike(x, 0.0), "NE");  // NaN != 0: true
  if (IsFloatingPoint(from)) {
    if (IsFloatingPoint(to)) return b.Convert(b.Convert(x, DType::Float64), to);
    return FloatToInt(b, x, to);
  }
  if (IsFloatingPoint(to)) return IntToFloat(b, x, to);
  return b.Convert(x, to);  // integers wrap modulo 2^bits; bool is 0/1
}

LowerFn BinaryF64(Value (*f)(Builder&, const Value&, const Value&)) {
  return [f](LowerContext& ctx, std::span<const Value> in) {
    const TensorType& out = ctx.out_type(0);
    const Value a = ctx.b.Convert(Broadcast(ctx.b, in[0], out.shape), DType::Float64);
    const Value b = ctx.b.Convert(Broadcast(ctx.b, in[1], out.shape), DType::Float64);
    return std::vector<Value>{ctx.b.Convert(f(ctx.b, a, b), out.dtype)};
  };
}

LowerFn Mod() {
  return [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const bool fmod = ctx.attrs().Bool("fmod");
    Value a = Broadcast(b, in[0], out.shape), d = Broadcast(b, in[1], out.shape);
    if (IsFloatingPoint(out.dtype)) {
      a = b.Convert(a, DType::Float64);
      d = b.Convert(d, DType::Float64);
      Value r = b.Binary("stablehlo.remainder", a, d);
      if (!fmod) {
        const Value zero = b.SplatLike(r, 0.0);
        const Value is_zero = b.Compare(r, zero, "EQ");
        const Value differ = b.Compare(b.Compare(r, zero, "LT"), b.Compare(d, zero, "LT"), "NE");
        const Value fixed = b.Select(differ, b.Add(r, d), r);
        // A zero result takes the sign of b (NaN stays NaN: it compares false everywhere).
        const Value signed_zero = b.Select(b.Compare(d, zero, "LT"), b.SplatLike(r, -0.0), zero);
        r = b.Select(is_zero, signed_zero, fixed);
      }
      return std::vector<Value>{b.Convert(r, out.dtype)};
    }
    const Value zero = b.SplatLike(d, 0.0);
    ctx.Require(AllTrue(b, b.Compare(in[1], b.SplatLike(in[1], 0.0), "NE")),
                "argument 'b' must be non-zero (integer division)");
    if (IsUnsigned(out.dtype)) {
      const Value safe = b.Select(b.Compare(d, zero, "EQ"), b.SplatLike(d, 1.0), d);
      return std::vector<Value>{b.Binary("stablehlo.remainder", a, safe)};
    }
    const Value minus_one = b.Compare(d, b.SplatLike(d, -1.0), "EQ");
    const Value safe = b.Select(Or(b, minus_one, b.Compare(d, zero, "EQ")), b.SplatLike(d, 1.0), d);
    Value r = b.Binary("stablehlo.remainder", a, safe);
    if (!fmod) {
      const Value differ = b.Compare(b.Compare(r, zero, "LT"), b.Compare(d, zero, "LT"), "NE");
      r = b.Select(And(b, b.Compare(r, zero, "NE"), differ), b.Add(r, safe), r);
    }
    return std::vector<Value>{b.Select(minus_one, zero, r)};
  };
}

LowerFn Rounding(const char* op) {
  return [op](LowerContext& ctx, std::span<const Value> in) {
    const Value x = ctx.b.Convert(in[0], ComputeType(in[0].dtype()));
    const Value r = op == nullptr ? Trunc(ctx.b, x) : ctx.b.Unary(op, x);
    return std::vector<Value>{ctx.b.Convert(r, ctx.out_type(0).dtype)};
  };
}

LowerFn BitShift(bool left) {
  return [left](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const Value a = Broadcast(b, in[0], out.shape), s = Broadcast(b, in[1], out.shape);
    const bool is_unsigned = IsUnsigned(out.dtype);
    if (!is_unsigned) {
      ctx.Require(AllTrue(b, b.Compare(in[1], b.SplatLike(in[1], 0.0), "GE")),
                  "argument 'b' must be non-negative shift amounts");
    }
    const int bits = DTypeBits(out.dtype);
    const Value beyond = b.Compare(s, b.SplatLike(s, static_cast<double>(bits)), "GE");
    const Value safe = b.Select(beyond, b.SplatLike(s, 0.0), s);
    const Value zero = b.SplatLike(a, 0.0);
    if (left) return std::vector<Value>{b.Select(beyond, zero, b.Binary("stablehlo.shift_left", a, safe))};
    if (is_unsigned) {
      return std::vector<Value>{b.Select(beyond, zero, b.Binary("stablehlo.shift_right_logical", a, safe))};
    }
    const Value fill = b.Select(b.Compare(a, zero, "LT"), b.SplatLike(a, -1.0), zero);
    return std::vector<Value>{b.Select(beyond, fill, b.Binary("stablehlo.shift_right_arithmetic", a, safe))};
  };
}

// ---- axis ops ------------------------------------------------------------------------------------

// numpy argmax/argmin along the axis; the first NaN wins (max and min alike); ties go to the first
// index, or the last with select_last_index.
LowerFn ArgReduce(bool max) {
  return [max](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value& x = in[0];
    const TensorType& out = ctx.out_type(0);
    if (x.rank() == 0) return std::vector<Value>{b.Splat(out, 0.0)};
    const int64_t axis = NormAxis(ctx, "axis", x.rank());
    const bool last = ctx.attrs().Bool("select_last_index");
    const int64_t n = x.shape()[static_cast<size_t>(axis)];
    const int64_t dims[] = {axis};
    const Value iota = b.Iota({DType::Int64, x.shape()}, axis);
    const Value none = b.Splat({DType::Int64, x.shape()}, last ? -1.0 : static_cast<double>(n));
    const Value best = b.BroadcastInDim(b.Reduce(x, dims, max ? ReduceKind::Max : ReduceKind::Min), x.shape(), [&] {
      std::vector<int64_t> keep;
      for (int64_t d = 0; d < x.rank(); ++d) {
        if (d != axis) keep.push_back(d);
      }
      return keep;
    }());
    Value index = b.Reduce(b.Select(b.Compare(x, best, "EQ"), iota, none), dims, last ? ReduceKind::Max : ReduceKind::Min);
    if (IsFloatingPoint(x.dtype())) {
      const Value nan = b.Compare(x, x, "NE");
      const Value no_nan = b.Splat({DType::Int64, x.shape()}, static_cast<double>(n));
      const Value first_nan = b.Reduce(b.Select(nan, iota, no_nan), dims, ReduceKind::Min);
      const Value has_nan = b.Compare(first_nan, b.SplatLike(first_nan, static_cast<double>(n)), "LT");
      index = b.Select(has_nan, first_nan, index);
    }
    return std::vector<Value>{b.Reshape(index, out.shape)};
  };
}

// x shifted by `by` along `axis` (toward higher indices), the vacated front filled with `fill`.
Value ShiftAlong(Builder& b, const Value& x, int64_t axis, int64_t by, const Value& fill_scalar) {
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  Shape fill_shape = x.shape();
  fill_shape[static_cast<size_t>(axis)] = std::min(by, n);
  const Value fill = fill_shape.empty() ? fill_scalar : b.BroadcastInDim(fill_scalar, fill_shape, {});
  if (by >= n) return fill;
  std::vector<int64_t> start(static_cast<size_t>(x.rank()), 0), limit(x.shape()), strides(static_cast<size_t>(x.rank()), 1);
  limit[static_cast<size_t>(axis)] = n - by;
  const Value parts[] = {fill, b.Slice(x, start, limit, strides)};
  return b.Concatenate(parts, axis);
}

Value Reverse(Builder& b, const Value& x, int64_t axis) {
  const int64_t dims[] = {axis};
  return b.Emit("stablehlo.reverse", std::span(&x, 1), x.type, "dimensions = " + I64Array(dims));
}

// numpy.cumsum (ONNX exclusive / reverse): floats summed in f64 (each output rounded once),
// integers with wrap-around. A log-step (Hillis-Steele) scan.
LowerFn CumSum() {
  return [](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const TensorType& out = ctx.out_type(0);
    const bool exclusive = ctx.attrs().Bool("exclusive"), reverse = ctx.attrs().Bool("reverse");
    const int64_t axis = NormAxis(ctx, "axis", in[0].rank());
    Value x = in[0].rank() == 0 ? b.Reshape(in[0], {1}) : in[0];
    const bool floating = IsFloatingPoint(x.dtype());
    if (floating) x = b.Convert(x, DType::Float64);
    const int64_t n = x.shape()[static_cast<size_t>(axis)];
    if (n > 0 && NumElements(x.shape()) > 0) {
      if (reverse) x = Reverse(b, x, axis);
      // -0.0 is the identity of IEEE addition; the exclusive front is +0.
      const Value identity = b.Scalar(x.dtype(), floating ? -0.0 : 0.0);
      for (int64_t by = 1; by < n; by *= 2) x = b.Add(x, ShiftAlong(b, x, axis, by, identity));
      if (exclusive) x = ShiftAlong(b, x, axis, 1, b.Scalar(x.dtype(), 0.0));
      if (reverse) x = Reverse(b, x, axis);
    }
    return std::vector<Value>{b.Reshape(b.Convert(x, out.dtype), out.shape)};
  };
}

LowerFn Trilu(bool upper) {
  return [upper](LowerContext& ctx, std::span<const Value> in) {
    Builder& b = ctx.b;
    const Value& x = in[0];
    const int64_t r = x.rank();
    const TensorType it{DType::Int64, x.shape()};
    const Value diff = b.Sub(b.Iota(it, r - 1), b.Iota(it, r - 2));  // j - i
    const Value k = b.Splat(it, static_cast<double>(ctx.attrs().Int("k")));
    const Value keep = b.Compare(diff, k, upper ? "GE" : "LE");
    return std::vector<Value>{b.Select(keep, x, b.SplatLike(x, 0.0))};
  };
}

// ---- gather / scatter helpers --------------------------------------------------------------------

std::string DimList(std::span<const int64_t> v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// `name = [..]` for a dimension-numbers field, or nothing for an empty list.
std::string Field(const char* name, std::span<const int64_t> v) {
  return v.empty() ? "" : fmt::format("{} = [{}], ", name, DimList(v));
}

Value Gather(Builder& b, const Value& operand, const Value& indices, std::span<const int64_t> offset_dims,
             std::span<const int64_t> collapsed, std::span<const int64_t> start_index_map, int64_t index_vector_dim,
             std::span<const int64_t> slice_sizes, const TensorType& result) {
  const Value ops[] = {operand, indices};
  return b.Emit("stablehlo.gather", ops, result,
                fmt::format("dimension_numbers = #stablehlo.gather<{}{}{}index_vector_dim = {}>, "
                            "indices_are_sorted = false, slice_sizes = {}",
                            Field("offset_dims", offset_dims), Field("collapsed_slice_dims", collapsed),
                            Field("start_index_map", start_index_map), index_vector_dim, I64Array(slice_sizes)));
}

enum class Combine { Replace, Add, Mul, Max };

Value Scatter(Builder& b, const Value& operand, const Value& indices, const Value& updates,
              std::span<const int64_t> update_window_dims, std::span<const int64_t> inserted,
              std::span<const int64_t> to_operand, int64_t index_vector_dim, Combine combine) {
  const TensorType scalar{operand.dtype(), {}};
  const TensorType args[] = {scalar, scalar};
  const Value ops[] = {operand, indices, updates};
  const TensorType result[] = {operand.type};
  return b.EmitRegion(
      "stablehlo.scatter", ops, result, args,
      [combine](Builder& r, std::span<const Value> a) {
        switch (combine) {
          case Combine::Replace: return std::vector<Value>{a[1]};
          case Combine::Add: return std::vector<Value>{r.Add(a[0], a[1])};
          case Combine::Mul: return std::vector<Value>{r.Mul(a[0], a[1])};
          case Combine::Max: return std::vector<Value>{r.Max(a[0], a[1])};
        }
        return std::vector<Value>{a[1]};
      },
      fmt::format("indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<{}{}{}"
                  "index_vector_dim = {}>, unique_indices = false",
                  Field("update_window_dims", update_window_dims), Field("inserted_window_dims", inserted),
                  Field("scatter_dims_to_operand_dims", to_operand), index_vector_dim))[0];
}

// Indices (i32 or i64) as i64, checked against [-size, size) (the CPU message) and made
// non-negative. `sizes` has the indices' shape (one bound per element).
Value CheckedIndices(LowerContext& ctx, const Value& indices, const Value& sizes, const std::string& bounds) {
  Builder& b = ctx.b;
  const Value idx = b.Convert(indices, DType::Int64);
  const Value ok = And(b, b.Compare(idx, b.Unary("stablehlo.negate", sizes), "GE"), b.Compare(idx, sizes, "LT"));
  if (NumElements(idx.shape()) > 0) ctx.Require(AllTrue(b, ok), "argument 'indices' must be " + bounds);
  return b.Select(b.Compare(idx, b.SplatLike(idx, 0.0), "LT"), b.Add(idx, sizes), idx);
}

// Full coordinate tuples [shape..., rank]: iota along every dim, `axis_index` on `axis`.
Value Coordinates(Builder& b, const Value& axis_index, int64_t axis) {
  const Shape& s = axis_index.shape();
  Shape one = s;
  one.push_back(1);
  std::vector<Value> parts;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    const Value c = d == axis ? axis_index : b.Iota({DType::Int64, s}, d);
    parts.push_back(b.Reshape(c, one));
  }
  return b.Concatenate(parts, static_cast<int64_t>(s.size()));
}

Combine ScatterCombine(const LowerContext& ctx) {
  const std::string& r = ctx.attrs().String("reduction");
  if (r == "add") return Combine::Add;
  if (r == "mul") return Combine::Mul;
  return Combine::Replace;
}

// Scatter with the CPU's sequential order: "none" lets the last update (row-major over the
// updates) win, whatever order the device applies them in: the winning update position is
// scattered with max, then gathered. add/mul combine in the data's type.
Value ScatterInOrder(Builder& b, const Value& data, const Value& indices, const Value& updates,
                     std::span<const int64_t> update_window_dims, std::span<const int64_t> inserted,
                     std::span<const int64_t> to_operand, int64_t index_vector_dim, Combine combine) {
  if (combine != Combine::Replace) {
    return Scatter(b, data, indices, updates, update_window_dims, inserted, to_operand, index_vector_dim, combine);
  }
  const int64_t count = NumElements(updates.shape());
  const Value pos = b.Reshape(b.Iota({DType::Int64, {count}}, 0), updates.shape());
  const TensorType wt{DType::Int64, data.shape()};
  const Value winner = Scatter(b, b.Splat(wt, -1.0), indices, pos, update_window_dims, inserted, to_operand,
                               index_vector_dim, Combine::Max);
  const Value has = b.Compare(winner, b.SplatLike(winner, 0.0), "GE");
  Shape at_shape = data.shape();
  at_shape.push_back(1);
  const Value at = b.Reshape(b.Select(has, winner, b.SplatLike(winner, 0.0)), at_shape);
  const int64_t zero[] = {0}, one[] = {1};
  const Value flat = b.Reshape(updates, {count});
  const Value gathered = Gather(b, flat, at, {}, zero, zero, data.rank(), one, data.type);
  return b.Select(has, gathered, data);
}

std::string Bounds(int64_t n) { return fmt::format("in [{}, {})", -n, n); }

// Per-component bounds of index tuples along the last dim of `shape`: sizes[d] for component d.
Value TupleSizes(Builder& b, const Shape& shape, std::span<const int64_t> sizes, std::string* bounds) {
  std::vector<double> v(sizes.begin(), sizes.end());
  bool same = true;
  for (int64_t s : sizes) same = same && s == sizes[0];
  *bounds = same ? Bounds(sizes[0]) : "in [-size, size) of the dimension they index";
  const Value c = b.Constant({DType::Int64, {static_cast<int64_t>(sizes.size())}}, v);
  const int64_t last[] = {static_cast<int64_t>(shape.size()) - 1};
  return b.BroadcastInDim(c, shape, last);
}

std::vector<int64_t> Range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

std::vector<Value> GatherElements(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& x = in[0];
  const TensorType& out = ctx.out_type(0);
  const int64_t r = x.rank();
  const int64_t axis = NormAxis(ctx, "axis", r);
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  const Value idx = CheckedIndices(ctx, in[1], b.Splat({DType::Int64, in[1].shape()}, static_cast<double>(n)), Bounds(n));
  const std::vector<int64_t> all = AllDims(r), ones(static_cast<size_t>(r), 1);
  return {Gather(b, x, Coordinates(b, idx, axis), {}, all, all, r, ones, out)};
}

std::vector<Value> ScatterElements(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& data = in[0];
  const int64_t r = data.rank();
  const int64_t axis = NormAxis(ctx, "axis", r);
  const Combine combine = ScatterCombine(ctx);
  if (NumElements(in[2].shape()) == 0) return {data};
  const int64_t n = data.shape()[static_cast<size_t>(axis)];
  const Value idx = CheckedIndices(ctx, in[1], b.Splat({DType::Int64, in[1].shape()}, static_cast<double>(n)), Bounds(n));
  const std::vector<int64_t> all = AllDims(r);
  return {ScatterInOrder(b, data, Coordinates(b, idx, axis), in[2], {}, all, all, r, combine)};
}

std::vector<Value> ScatterND(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& data = in[0];
  const Shape& ds = data.shape();
  const Shape& is = in[1].shape();
  const int64_t r = data.rank(), q = static_cast<int64_t>(is.size()), m = is.back();
  const Combine combine = ScatterCombine(ctx);
  if (NumElements(in[2].shape()) == 0 || NumElements(ds) == 0) return {data};
  std::string bounds;
  const Value sizes = TupleSizes(b, is, std::span(ds).subspan(0, static_cast<size_t>(m)), &bounds);
  const Value idx = CheckedIndices(ctx, in[1], sizes, bounds);
  const std::vector<int64_t> window = Range(q - 1, q - 1 + (r - m)), inserted = Range(0, m);
  return {ScatterInOrder(b, data, idx, in[2], window, inserted, inserted, q - 1, combine)};
}

std::vector<Value> GatherND(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& x = in[0];
  const TensorType& out = ctx.out_type(0);
  const Shape& xs = x.shape();
  const Shape& is = in[1].shape();
  const int64_t r = x.rank(), q = static_cast<int64_t>(is.size()), m = is.back();
  const int64_t bd = ctx.attrs().Int("batch_dims");
  if (NumElements(out.shape) == 0) return {b.Splat(out, 0.0)};
  std::string bounds;
  const Value sizes = TupleSizes(b, is, std::span(xs).subspan(static_cast<size_t>(bd), static_cast<size_t>(m)), &bounds);
  Value idx = CheckedIndices(ctx, in[1], sizes, bounds);
  if (bd > 0) {
    // Batch coordinates in front of each tuple.
    Shape tuples(is.begin(), is.end() - 1), one = tuples;
    one.push_back(1);
    std::vector<Value> parts;
    for (int64_t d = 0; d < bd; ++d) parts.push_back(b.Reshape(b.Iota({DType::Int64, tuples}, d), one));
    parts.push_back(idx);
    idx = b.Concatenate(parts, q - 1);
  }
  std::vector<int64_t> slice(static_cast<size_t>(bd + m), 1);
  slice.insert(slice.end(), xs.begin() + bd + m, xs.end());
  const std::vector<int64_t> offset = Range(q - 1, q - 1 + (r - bd - m)), collapsed = Range(0, bd + m);
  return {Gather(b, x, idx, offset, collapsed, collapsed, q - 1, slice, out)};
}

// torch.topk(sorted=True): a stable sort along the axis (NaN above every number), then the first k.
std::vector<Value> TopK(LowerContext& ctx, std::span<const Value> in) {
  Builder& b = ctx.b;
  const Value& x = in[0];
  const int64_t axis = NormAxis(ctx, "axis", x.rank());
  const int64_t k = ctx.attrs().Int("k");
  const bool largest = ctx.attrs().Bool("largest");
  const Value iota = b.Iota({DType::Int64, x.shape()}, axis);
  const TensorType xs{x.dtype(), {}}, is{DType::Int64, {}};
  const TensorType args[] = {xs, xs, is, is};
  const Value ops[] = {x, iota};
  const TensorType results[] = {x.type, iota.type};
  const bool floating = IsFloatingPoint(x.dtype());
  const std::vector<Value> sorted = b.EmitRegion(
      "stablehlo.sort", ops, results, args,
      [&](Builder& r, std::span<const Value> a) {
        Value before = r.Compare(a[0], a[1], largest ? "GT" : "LT");
        if (floating) {
          const Value na = r.Compare(a[0], a[0], "NE"), nb = r.Compare(a[1], a[1], "NE");
          const Value nan_first = largest ? And(r, na, Not(r, nb)) : And(r, Not(r, na), nb);
          before = Or(r, before, nan_first);
        }
        return std::vector<Value>{before};
      },
      fmt::format("dimension = {} : i64, is_stable = true", axis));
  std::vector<int64_t> start(static_cast<size_t>(x.rank()), 0), limit(x.shape()), strides(static_cast<size_t>(x.rank()), 1);
  limit[static_cast<size_t>(axis)] = k;
  return {b.Slice(sorted[0], start, limit, strides), b.Slice(sorted[1], start, limit, strides)};
}

}  // namespace

void RegisterTensorLowerings(LoweringTable& t) {
  t.Add("tensor.equal", CompareOp("EQ"));
  t.Add("tensor.not_equal", CompareOp("NE"));
  t.Add("tensor.less", CompareOp("LT"));
  t.Add("tensor.less_equal", CompareOp("LE"));
  t.Add("tensor.greater", CompareOp("GT"));
  t.Add("tensor.greater_equal", CompareOp("GE"));
  t.Add("tensor.logical_and", LogicalOp("stablehlo.and"));
  t.Add("tensor.logical_or", LogicalOp("stablehlo.or"));
  t.Add("tensor.logical_xor", LogicalOp("stablehlo.xor"));
  t.Add("tensor.logical_not", [](LowerContext& ctx, std::span<const Value> in) {
    return std::vector<Value>{Not(ctx.b, in[0])};
  });
  t.Add("tensor.where", [](LowerContext& ctx, std::span<const Value> in) {
    const Shape& shape = ctx.out_type(0).shape;
    Builder& b = ctx.b;
    return std::vector<Value>{b.Select(Broadcast(b, in[0], shape), Broadcast(b, in[1], shape), Broadcast(b, in[2], shape))};
  });
  t.Add("tensor.cast", [](LowerContext& ctx, std::span<const Value> in) {
    return std::vector<Value>{CastValue(ctx.b, in[0], ctx.out_type(0).dtype)};
  });
  t.Add("tensor.pow", BinaryF64([](Builder& b, const Value& x, const Value& y) { return b.Binary("stablehlo.power", x, y); }));
  t.Add("tensor.mod", Mod());
  t.Add("tensor.floor", Rounding("stablehlo.floor"));
  t.Add("tensor.ceil", Rounding("stablehlo.ceil"));
  t.Add("tensor.round", Rounding("stablehlo.round_nearest_even"));
  t.Add("tensor.trunc", Rounding(nullptr));
  t.Add("tensor.bitshift_left", BitShift(true));
  t.Add("tensor.bitshift_right", BitShift(false));
  t.Add("tensor.argmax", ArgReduce(true));
  t.Add("tensor.argmin", ArgReduce(false));
  t.Add("tensor.cumsum", CumSum());
  t.Add("tensor.triu", Trilu(true));
  t.Add("tensor.tril", Trilu(false));
  t.Add("tensor.gather_elements", GatherElements);
  t.Add("tensor.topk", TopK);
  t.Add("tensor.scatter_elements", ScatterElements);
  t.Add("tensor.scatter_nd", ScatterND);
  t.Add("tensor.gather_nd", GatherND);
}

}  // namespace backplane::xla
