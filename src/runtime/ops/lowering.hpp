// Helpers shared by the graph-level lowerings: dtype and shape checks that name the node,
// NumPy broadcasting, axis handling, and adapters from flat Backend kernels to tensors.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/runtime/op_registry.hpp"

namespace backplane::runtime::ops {

// "<op> node '<name>': <detail>"
[[noreturn]] void Fail(const Attrs& attrs, ErrorCode code, const std::string& detail);

// Input `index` must have a dtype in `allowed`; returns it.
DType ExpectDType(const Attrs& attrs, std::span<const TensorType> in, size_t index,
                  DTypeSet allowed);
// All listed inputs share the dtype of input `first`.
void ExpectSameDType(const Attrs& attrs, std::span<const TensorType> in,
                     std::initializer_list<size_t> indices);
void ExpectRank(const Attrs& attrs, std::span<const TensorType> in, size_t index, int64_t rank);
void ExpectMinRank(const Attrs& attrs, std::span<const TensorType> in, size_t index, int64_t rank);
void ExpectShape(const Attrs& attrs, std::span<const TensorType> in, size_t index,
                 const Shape& shape);
bool Present(std::span<const TensorType> in, size_t index);  // an optional input was given

// Axis in [-rank, rank) normalised to [0, rank).
int64_t NormalizeAxis(const Attrs& attrs, const std::string& attr, int64_t axis, int64_t rank);
// NumPy broadcasting of two shapes.
Shape BroadcastShapes(const Attrs& attrs, const Shape& a, const Shape& b);

// A contiguous copy of `t` broadcast to `shape` (t's shape must broadcast to it).
Tensor Expand(const Tensor& t, const Shape& shape);
// A contiguous copy of `t` with axis `axis` moved to the end (and its inverse).
Tensor MoveAxisToEnd(Backend& backend, const Tensor& t, int64_t axis);
Tensor MoveAxisFromEnd(Backend& backend, const Tensor& t, int64_t axis);
// Product of shape[begin, end).
int64_t Product(const Shape& shape, size_t begin, size_t end);

// Shape rule for ops whose single output has the type of input 0.
std::vector<TensorType> SameAsInput0(std::span<const TensorType> in, const Attrs& attrs,
                                     DTypeSet allowed);

// Flat kernel signatures the adapters below accept.
using UnaryKernel = std::function<void(Backend&, void* dst, const void* src, int64_t count, DType)>;
using BinaryKernel =
    std::function<void(Backend&, void* dst, const void* a, const void* b, int64_t count, DType)>;
// Applies a kernel to every row of length `row` (the last dimension after moving `axis` last).
using RowKernel =
    std::function<void(Backend&, void* dst, const void* src, int64_t rows, int64_t row, DType)>;

// out = f(x), any shape.
OpImpl UnaryOpImpl(UnaryKernel kernel, DTypeSet allowed = kFloatDTypes);
// out = f(a, b) with NumPy broadcasting.
OpImpl BinaryOpImpl(BinaryKernel kernel, DTypeSet allowed = kFloatDTypes);
// Row-wise op over attribute "axis" (default last): output has the input's shape.
OpImpl AxisRowOpImpl(RowKernel kernel, DTypeSet allowed = kFloatDTypes);

}  // namespace backplane::runtime::ops
