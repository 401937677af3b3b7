// Helpers shared by the neural-network lowerings (lower_nn*.cpp, lower_shape.cpp): optional
// inputs, the reference's rounding on store, gathers with constant or computed indices, windows.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "xla/lowering.hpp"

namespace backplane::xla::nn {

// Input i was given (an omitted optional input is absent or has no name).
inline bool Has(std::span<const Value> in, size_t i) { return i < in.size() && !in[i].name.empty(); }

inline std::vector<int64_t> Range(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < n; ++i) v.push_back(i);
  return v;
}

// The reference's Store<double>: f64 stays, 32-bit and narrower formats round through f32
// (f16/bf16 then round the f32 to nearest even).
Value StoreAs(Builder& b, const Value& x, DType dtype);
// The reference's StoreResult: one rounding of an f64 value (f16/bf16 through f32 rounded to odd).
Value StoreResult(Builder& b, const Value& f64, DType dtype);
// x converted to f64 (exact for every float format).
inline Value F64(Builder& b, const Value& x) { return b.Convert(x, DType::Float64); }

// Scalar i1: every element of `pred` is true.
Value All(Builder& b, const Value& pred);

// x with axis `axis` replaced by the `indices` entries of it (i64 [m], in range).
Value Take(Builder& b, const Value& x, int64_t axis, const Value& indices);
Value TakeConst(Builder& b, const Value& x, int64_t axis, std::span<const int64_t> indices);
// Rows of a 2-D table [V, D] at flat i64 indices of any shape S: [S..., D].
Value TakeRows(Builder& b, const Value& table, const Value& indices);

Value Reverse(Builder& b, const Value& x, std::span<const int64_t> dims);
// pad with a scalar value: lo/hi edge padding (may be negative) and interior padding per axis.
Value Pad(Builder& b, const Value& x, const Value& scalar, std::span<const int64_t> lo, std::span<const int64_t> hi,
          std::span<const int64_t> interior = {});

struct Window {
  std::vector<int64_t> dims, strides, dilations, pad_lo, pad_hi;
};
// reduce_window of x with the identity of `kind` as the padding value.
Value ReduceWindow(Builder& b, const Value& x, ReduceKind kind, const Window& w);

// Integer elementwise helpers on i32 tensors.
Value ShiftRight(Builder& b, const Value& x, const Value& bits);
Value And(Builder& b, const Value& x, const Value& y);

// Layer norm over the last axis of an f64 x (two passes, biased variance), gamma/beta optional.
Value LayerNormF64(Builder& b, const Value& x, const Value* gamma, const Value* beta, double eps);

// Registration of the topic files (lower_nn_*.cpp).
void RegisterAttentionLowerings(LoweringTable& t);
void RegisterNormLowerings(LoweringTable& t);
void RegisterConvPoolLowerings(LoweringTable& t);
void RegisterQuantLowerings(LoweringTable& t);
void RegisterSpatialLowerings(LoweringTable& t);

}  // namespace backplane::xla::nn
