// Emits one StableHLO module as MLIR text (generic op syntax), value by value.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/dtype.hpp"
#include "backplane/runtime/op_registry.hpp"

namespace backplane::xla {

using runtime::TensorType;

struct Value {
  std::string name;  // "%3", "%arg0"
  TensorType type;
  DType dtype() const { return type.dtype; }
  const Shape& shape() const { return type.shape; }
  int64_t rank() const { return static_cast<int64_t>(type.shape.size()); }
};

std::string ElementType(DType dtype);        // "f32", "i64", "ui8", "i1"
std::string MlirType(const TensorType& type);  // "tensor<2x3xf32>"
std::string I64Array(std::span<const int64_t> values);  // "array<i64: 1, 2>"

enum class ReduceKind { Sum, Max, Min, Prod, And, Or };

class Builder {
 public:
  Value Arg(const TensorType& type);
  // `"<op>"(operands) {attrs} : (types) -> result`; attrs without braces.
  Value Emit(std::string_view op, std::span<const Value> operands, const TensorType& result,
             std::string_view attrs = {});
  std::vector<Value> EmitMulti(std::string_view op, std::span<const Value> operands,
                               std::span<const TensorType> results, std::string_view attrs = {});

  // Elementwise on operands of one type (broadcast first).
  Value Unary(std::string_view op, const Value& x);
  Value Binary(std::string_view op, const Value& a, const Value& b);
  Value Add(const Value& a, const Value& b) { return Binary("stablehlo.add", a, b); }
  Value Sub(const Value& a, const Value& b) { return Binary("stablehlo.subtract", a, b); }
  Value Mul(const Value& a, const Value& b) { return Binary("stablehlo.multiply", a, b); }
  Value Div(const Value& a, const Value& b) { return Binary("stablehlo.divide", a, b); }
  Value Max(const Value& a, const Value& b) { return Binary("stablehlo.maximum", a, b); }
  Value Min(const Value& a, const Value& b) { return Binary("stablehlo.minimum", a, b); }
  // `direction`: EQ NE LT LE GT GE. Result i1 of the operands' shape.
  Value Compare(const Value& a, const Value& b, std::string_view direction);
  Value Select(const Value& pred, const Value& on_true, const Value& on_false);

  // A constant of `type` filled with `value` (rounded to the dtype).
  Value Splat(const TensorType& type, double value);
  Value Scalar(DType dtype, double value) { return Splat({dtype, {}}, value); }
  // A scalar constant from an exact MLIR literal ("-9223372036854775808", "0x7FC00000").
  Value ScalarLiteral(DType dtype, const std::string& literal);
  Value SplatLike(const Value& like, double value) { return Splat(like.type, value); }
  // Dense constant from values (row-major).
  Value Constant(const TensorType& type, std::span<const double> values);
  Value Convert(const Value& x, DType to);
  Value Reshape(const Value& x, const Shape& shape);
  Value Transpose(const Value& x, std::span<const int64_t> perm);
  // broadcast_in_dim: operand axis i goes to result axis dims[i].
  Value BroadcastInDim(const Value& x, const Shape& shape, std::span<const int64_t> dims);
  // NumPy broadcasting (right-aligned) to `shape`.
  Value BroadcastTo(const Value& x, const Shape& shape);
  Value Iota(const TensorType& type, int64_t axis);
  Value Slice(const Value& x, std::span<const int64_t> start, std::span<const int64_t> limit,
              std::span<const int64_t> strides);
  Value Concatenate(std::span<const Value> parts, int64_t axis);
  // Reduces `dims` away. Sum/Prod/Max/Min on numbers, And/Or on i1.
  Value Reduce(const Value& x, std::span<const int64_t> dims, ReduceKind kind);
  // Like Reduce but keeps the reduced axes as size 1.
  Value ReduceKeep(const Value& x, std::span<const int64_t> dims, ReduceKind kind);
  Value DotGeneral(const Value& a, const Value& b, std::span<const int64_t> batch_a,
                   std::span<const int64_t> batch_b, std::span<const int64_t> contract_a,
                   std::span<const int64_t> contract_b, DType result_dtype);

  // A region op (reduce_window, select_and_scatter, sort, while, ...): one block with scalar (or any)
  // arguments of `block_args`; `body` emits the block's ops on this builder and returns the values
  // the block returns. `attrs` without braces.
  std::vector<Value> EmitRegion(std::string_view op, std::span<const Value> operands,
                                std::span<const TensorType> results, std::span<const TensorType> block_args,
                                const std::function<std::vector<Value>(Builder&, std::span<const Value>)>& body,
                                std::string_view attrs = {});

  // Returns the module text with `results` as the function's results.
  std::string Module(std::span<const Value> results) const;

  int num_args() const { return static_cast<int>(args_.size()); }

 private:
  std::string Fresh();
  std::vector<Value> args_;
  std::string body_;
  int next_ = 0;
};

// Inserted size-1 axes (rank-preserving) are sometimes wanted after a reduction.
Shape KeepDims(const Shape& shape, std::span<const int64_t> dims);

}  // namespace backplane::xla
