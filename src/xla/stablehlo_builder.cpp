#include "xla/stablehlo_builder.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "backplane/convert.hpp"
#include "backplane/error.hpp"

namespace backplane::xla {
namespace {

std::string Join(std::span<const int64_t> v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string TypeList(std::span<const Value> values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + MlirType(values[i].type);
  return s;
}

std::string NameList(std::span<const Value> values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + values[i].name;
  return s;
}

// An element literal for dense<...>: exact hex bit patterns for floats (so NaN, Inf and the
// rounding to the dtype are explicit), decimal for integers.
std::string Literal(DType dtype, double value) {
  switch (dtype) {
    case DType::Float64: return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(value));
    case DType::Float32: return fmt::format("0x{:08X}", std::bit_cast<uint32_t>(static_cast<float>(value)));
    case DType::Float16: return fmt::format("0x{:04X}", F32ToF16(static_cast<float>(value)));
    case DType::BFloat16: return fmt::format("0x{:04X}", F32ToBF16(static_cast<float>(value)));
    case DType::Complex64: return fmt::format("({}, {})", Literal(DType::Float32, value), Literal(DType::Float32, 0.0));
    case DType::Complex128: return fmt::format("({}, {})", Literal(DType::Float64, value), Literal(DType::Float64, 0.0));
    case DType::Float8E4M3: return fmt::format("0x{:02X}", F32ToF8E4M3(static_cast<float>(value)));
    case DType::Float8E5M2: return fmt::format("0x{:02X}", F32ToF8E5M2(static_cast<float>(value)));
    case DType::Bool: return value != 0.0 ? "true" : "false";
    default: break;
  }
  if (IsInteger(dtype)) {
    if (!std::isfinite(value)) throw Error(ErrorCode::InvalidArgument, "xla", "non-finite integer constant");
    if (dtype == DType::Uint64 && value >= 9223372036854775808.0 && value < 18446744073709551616.0) {
      return std::to_string(static_cast<uint64_t>(value));
    }
    if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
      throw Error(ErrorCode::InvalidArgument, "xla", fmt::format("integer constant {} out of range", value));
    }
    return std::to_string(static_cast<int64_t>(value));
  }
  throw Error(ErrorCode::UnsupportedDType, "xla", fmt::format("no StableHLO literal for {}", DTypeName(dtype)));
}

}  // namespace

std::string ElementType(DType dtype) {
  switch (dtype) {
    case DType::Float64: return "f64";
    case DType::Float32: return "f32";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Float8E4M3: return "f8E4M3FN";
    case DType::Float8E5M2: return "f8E5M2";
    case DType::Int64: return "i64";
    case DType::Int32: return "i32";
    case DType::Int16: return "i16";
    case DType::Int8: return "i8";
    case DType::Uint64: return "ui64";
    case DType::Uint32: return "ui32";
    case DType::Uint16: return "ui16";
    case DType::Uint8: return "ui8";
    case DType::Bool: return "i1";
    case DType::Complex64: return "complex<f32>";
    case DType::Complex128: return "complex<f64>";
    default: break;
  }
  throw Error(ErrorCode::UnsupportedDType, "xla", fmt::format("dtype {} has no StableHLO element type", DTypeName(dtype)));
}

std::string MlirType(const TensorType& type) {
  std::string s = "tensor<";
  for (int64_t d : type.shape) s += std::to_string(d) + "x";
  return s + ElementType(type.dtype) + ">";
}

std::string I64Array(std::span<const int64_t> values) {
  return values.empty() ? "array<i64>" : "array<i64: " + Join(values) + ">";
}

Shape KeepDims(const Shape& shape, std::span<const int64_t> dims) {
  Shape out = shape;
  for (int64_t d : dims) out[static_cast<size_t>(d)] = 1;
  return out;
}

std::string Builder::Fresh() { return "%v" + std::to_string(next_++); }

Value Builder::Arg(const TensorType& type) {
  Value v{"%arg" + std::to_string(args_.size()), type};
  args_.push_back(v);
  return v;
}

Value Builder::Emit(std::string_view op, std::span<const Value> operands, const TensorType& result,
                    std::string_view attrs) {
  return EmitMulti(op, operands, std::span(&result, 1), attrs)[0];
}

std::vector<Value> Builder::EmitMulti(std::string_view op, std::span<const Value> operands,
                                      std::span<const TensorType> results, std::string_view attrs) {
  const std::string base = Fresh();
  std::vector<Value> out;
  std::string result_types;
  for (size_t i = 0; i < results.size(); ++i) {
    out.push_back(Value{results.size() == 1 ? base : base + "#" + std::to_string(i), results[i]});
    result_types += (i ? ", " : "") + MlirType(results[i]);
  }
  const std::string lhs = results.size() == 1 ? base : fmt::format("{}:{}", base, results.size());
  body_ += fmt::format("    {} = \"{}\"({}){} : ({}) -> {}\n", lhs, op, NameList(operands),
                       attrs.empty() ? "" : fmt::format(" {{{}}}", attrs), TypeList(operands),
                       results.size() == 1 ? result_types : "(" + result_types + ")");
  return out;
}

Value Builder::Unary(std::string_view op, const Value& x) { return Emit(op, std::span(&x, 1), x.type); }

Value Builder::Binary(std::string_view op, const Value& a, const Value& b) {
  if (a.type != b.type) {
    throw Error(ErrorCode::Internal, "xla", fmt::format("{} on {} and {}", op, MlirType(a.type), MlirType(b.type)));
  }
  const Value ops[] = {a, b};
  return Emit(op, ops, a.type);
}

Value Builder::Compare(const Value& a, const Value& b, std::string_view direction) {
  const Value ops[] = {a, b};
  const char* kind = IsFloatingPoint(a.dtype()) ? "FLOAT"
                     : (a.dtype() == DType::Bool || (IsInteger(a.dtype()) && ElementType(a.dtype())[0] == 'u'))
                         ? "UNSIGNED"
                         : "SIGNED";
  return Emit("stablehlo.compare", ops, {DType::Bool, a.shape()},
              fmt::format("comparison_direction = #stablehlo<comparison_direction {}>, compare_type = "
                          "#stablehlo<comparison_type {}>",
                          direction, kind));
}

Value Builder::Select(const Value& pred, const Value& on_true, const Value& on_false) {
  const Value ops[] = {pred, on_true, on_false};
  return Emit("stablehlo.select", ops, on_true.type);
}

Value Builder::Splat(const TensorType& type, double value) {
  const TensorType scalar{type.dtype, {}};
  const std::string name = Fresh();
  body_ += fmt::format("    {} = \"stablehlo.constant\"() {{value = dense<{}> : {}}} : () -> {}\n", name,
                       Literal(type.dtype, value), MlirType(scalar), MlirType(scalar));
  const Value s{name, scalar};
  if (type.shape.empty()) return s;
  return BroadcastInDim(s, type.shape, {});
}

Value Builder::Constant(const TensorType& type, std::span<const double> values) {
  if (static_cast<int64_t>(values.size()) != NumElements(type.shape)) {
    throw Error(ErrorCode::Internal, "xla", "constant size mismatch");
  }
  std::string elems;
  for (size_t i = 0; i < values.size(); ++i) elems += (i ? ", " : "") + Literal(type.dtype, values[i]);
  // A flat list with the shape reshaped in the type: dense<[..]> needs nesting, so go via rank 1.
  const TensorType flat{type.dtype, {static_cast<int64_t>(values.size())}};
  const std::string name = Fresh();
  body_ += fmt::format("    {} = \"stablehlo.constant\"() {{value = dense<[{}]> : {}}} : () -> {}\n", name, elems,
                       MlirType(flat), MlirType(flat));
  return Reshape(Value{name, flat}, type.shape);
}

Value Builder::Convert(const Value& x, DType to) {
  if (x.dtype() == to) return x;
  return Emit("stablehlo.convert", std::span(&x, 1), {to, x.shape()});
}

Value Builder::Reshape(const Value& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return Emit("stablehlo.reshape", std::span(&x, 1), {x.dtype(), shape});
}

Value Builder::Transpose(const Value& x, std::span<const int64_t> perm) {
  Shape shape;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    shape.push_back(x.shape()[static_cast<size_t>(perm[i])]);
    identity = identity && perm[i] == static_cast<int64_t>(i);
  }
  if (identity) return x;
  return Emit("stablehlo.transpose", std::span(&x, 1), {x.dtype(), shape},
              "permutation = " + I64Array(perm));
}

Value Builder::BroadcastInDim(const Value& x, const Shape& shape, std::span<const int64_t> dims) {
  return Emit("stablehlo.broadcast_in_dim", std::span(&x, 1), {x.dtype(), shape},
              "broadcast_dimensions = " + I64Array(dims));
}

Value Builder::BroadcastTo(const Value& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t offset = static_cast<int64_t>(shape.size()) - x.rank();
  if (offset < 0) throw Error(ErrorCode::Internal, "xla", "broadcast to a lower rank");
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.rank(); ++i) dims.push_back(i + offset);
  return BroadcastInDim(x, shape, dims);
}

Value Builder::Iota(const TensorType& type, int64_t axis) {
  return Emit("stablehlo.iota", {}, type, fmt::format("iota_dimension = {} : i64", axis));
}

Value Builder::Slice(const Value& x, std::span<const int64_t> start, std::span<const int64_t> limit,
                     std::span<const int64_t> strides) {
  Shape shape;
  for (size_t i = 0; i < start.size(); ++i) {
    shape.push_back(limit[i] <= start[i] ? 0 : (limit[i] - start[i] + strides[i] - 1) / strides[i]);
  }
  return Emit("stablehlo.slice", std::span(&x, 1), {x.dtype(), shape},
              fmt::format("start_indices = {}, limit_indices = {}, strides = {}", I64Array(start),
                          I64Array(limit), I64Array(strides)));
}

Value Builder::Concatenate(std::span<const Value> parts, int64_t axis) {
  if (parts.size() == 1) return parts[0];
  Shape shape = parts[0].shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const Value& p : parts) shape[static_cast<size_t>(axis)] += p.shape()[static_cast<size_t>(axis)];
  return Emit("stablehlo.concatenate", parts, {parts[0].dtype(), shape}, fmt::format("dimension = {} : i64", axis));
}

namespace {

// The identity of a reduction as an exact literal (integer extremes are not doubles).
std::string ReduceInit(DType dt, ReduceKind kind) {
  const bool is_unsigned = IsInteger(dt) && ElementType(dt)[0] == 'u';
  const int bits = DTypeBits(dt);
  switch (kind) {
    case ReduceKind::Sum: case ReduceKind::Or: return dt == DType::Bool ? "false" : Literal(dt, 0.0);
    case ReduceKind::Prod: case ReduceKind::And: return dt == DType::Bool ? "true" : Literal(dt, 1.0);
    case ReduceKind::Max:
      if (IsFloatingPoint(dt)) return Literal(dt, -INFINITY);
      if (dt == DType::Bool) return "false";
      return is_unsigned ? "0" : "-" + std::to_string(uint64_t{1} << (bits - 1));
    case ReduceKind::Min:
      if (IsFloatingPoint(dt)) return Literal(dt, INFINITY);
      if (dt == DType::Bool) return "true";
      return is_unsigned ? std::to_string(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1)
                         : std::to_string((uint64_t{1} << (bits - 1)) - 1);
  }
  return "0";
}

const char* ReduceOp(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum: return "stablehlo.add";
    case ReduceKind::Prod: return "stablehlo.multiply";
    case ReduceKind::Max: return "stablehlo.maximum";
    case ReduceKind::Min: return "stablehlo.minimum";
    case ReduceKind::And: return "stablehlo.and";
    case ReduceKind::Or: return "stablehlo.or";
  }
  return "stablehlo.add";
}

}  // namespace

Value Builder::ScalarLiteral(DType dtype, const std::string& literal) {
  const TensorType scalar{dtype, {}};
  const std::string name = Fresh();
  body_ += fmt::format("    {} = \"stablehlo.constant\"() {{value = dense<{}> : {}}} : () -> {}\n", name, literal,
                       MlirType(scalar), MlirType(scalar));
  return Value{name, scalar};
}

Value Builder::Reduce(const Value& x, std::span<const int64_t> dims, ReduceKind kind) {
  const DType dt = x.dtype();
  if ((kind == ReduceKind::Max || kind == ReduceKind::Min) && IsFloatingPoint(dt)) {
    // XLA's CPU reductions do not propagate NaN through maximum/minimum; the reference does.
    const Value reduced = ReduceNumbers(x, dims, kind);
    const Value any_nan = ReduceNumbers(Compare(x, x, "NE"), dims, ReduceKind::Or);
    return Select(any_nan, Splat(reduced.type, NAN), reduced);
  }
  return ReduceNumbers(x, dims, kind);
}

Value Builder::ReduceNumbers(const Value& x, std::span<const int64_t> dims, ReduceKind kind) {
  const DType dt = x.dtype();
  const char* op = ReduceOp(kind);
  const Value init_v = ScalarLiteral(dt, ReduceInit(dt, kind));
  Shape shape;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = false;
    for (int64_t d : dims) reduced = reduced || d == i;
    if (!reduced) shape.push_back(x.shape()[static_cast<size_t>(i)]);
  }
  const TensorType scalar{dt, {}};
  const std::string st = MlirType(scalar);
  const std::string a = Fresh(), b = Fresh(), s = Fresh(), r = Fresh();
  body_ += fmt::format(
      "    {r} = \"stablehlo.reduce\"({x}, {init}) ({{\n    ^bb0({a}: {st}, {b}: {st}):\n"
      "      {s} = \"{op}\"({a}, {b}) : ({st}, {st}) -> {st}\n      \"stablehlo.return\"({s}) : ({st}) -> ()\n"
      "    }}) {{dimensions = {dims}}} : ({xt}, {st}) -> {rt}\n",
      fmt::arg("r", r), fmt::arg("x", x.name), fmt::arg("init", init_v.name), fmt::arg("a", a), fmt::arg("b", b),
      fmt::arg("st", st), fmt::arg("s", s), fmt::arg("op", op), fmt::arg("dims", I64Array(dims)),
      fmt::arg("xt", MlirType(x.type)), fmt::arg("rt", MlirType({dt, shape})));
  return Value{r, {dt, shape}};
}

Value Builder::ReduceKeep(const Value& x, std::span<const int64_t> dims, ReduceKind kind) {
  return Reshape(Reduce(x, dims, kind), KeepDims(x.shape(), dims));
}

Value Builder::DotGeneral(const Value& a, const Value& b, std::span<const int64_t> batch_a,
                          std::span<const int64_t> batch_b, std::span<const int64_t> contract_a,
                          std::span<const int64_t> contract_b, DType result_dtype) {
  auto contains = [](std::span<const int64_t> v, int64_t x) {
    for (int64_t y : v) {
      if (y == x) return true;
    }
    return false;
  };
  Shape shape;
  for (int64_t d : batch_a) shape.push_back(a.shape()[static_cast<size_t>(d)]);
  for (int64_t i = 0; i < a.rank(); ++i) {
    if (!contains(batch_a, i) && !contains(contract_a, i)) shape.push_back(a.shape()[static_cast<size_t>(i)]);
  }
  for (int64_t i = 0; i < b.rank(); ++i) {
    if (!contains(batch_b, i) && !contains(contract_b, i)) shape.push_back(b.shape()[static_cast<size_t>(i)]);
  }
  const Value ops[] = {a, b};
  return Emit("stablehlo.dot_general", ops, {result_dtype, shape},
              fmt::format("dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [{}], "
                          "rhs_batching_dimensions = [{}], lhs_contracting_dimensions = [{}], "
                          "rhs_contracting_dimensions = [{}]>, precision_config = "
                          "[#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]",
                          Join(batch_a), Join(batch_b), Join(contract_a), Join(contract_b)));
}

std::vector<Value> Builder::EmitRegions(std::string_view op, std::span<const Value> operands,
                                       std::span<const TensorType> results, std::span<const Region> regions,
                                       std::string_view attrs) {
  std::string region_text;
  for (const Region& region : regions) {
    std::vector<Value> args;
    std::string header;
    for (const TensorType& t : region.args) {
      args.push_back(Value{Fresh(), t});
      header += (header.empty() ? "" : ", ") + args.back().name + ": " + MlirType(t);
    }
    std::string outer;
    outer.swap(body_);  // the block is emitted on an empty body_, then swapped out
    const std::vector<Value> ret = region.body(*this, args);
    std::string inner;
    inner.swap(body_);
    body_.swap(outer);
    region_text += fmt::format("{}{{\n{}{}      \"stablehlo.return\"({}) : ({}) -> ()\n    }}",
                               region_text.empty() ? "" : ", ", header.empty() ? "" : "    ^bb0(" + header + "):\n",
                               inner, NameList(ret), TypeList(ret));
  }
  const std::string base = Fresh();
  std::vector<Value> out;
  std::string result_types;
  for (size_t i = 0; i < results.size(); ++i) {
    out.push_back(Value{results.size() == 1 ? base : base + "#" + std::to_string(i), results[i]});
    result_types += (i ? ", " : "") + MlirType(results[i]);
  }
  const std::string lhs = results.size() == 1 ? base : fmt::format("{}:{}", base, results.size());
  body_ += fmt::format("    {} = \"{}\"({}) ({}){} : ({}) -> {}\n", lhs, op, NameList(operands), region_text,
                       attrs.empty() ? "" : fmt::format(" {{{}}}", attrs), TypeList(operands),
                       results.size() == 1 ? result_types : "(" + result_types + ")");
  return out;
}

std::string Builder::Module(std::span<const Value> results) const {
  std::string args;
  for (size_t i = 0; i < args_.size(); ++i) args += (i ? ", " : "") + args_[i].name + ": " + MlirType(args_[i].type);
  std::string types = TypeList(results);
  return fmt::format(
      "module @backplane attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{\n"
      "  func.func public @main({}) -> ({}) {{\n{}    \"func.return\"({}) : ({}) -> ()\n  }}\n}}\n",
      args, types, body_, NameList(results), types);
}

}  // namespace backplane::xla
