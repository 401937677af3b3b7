// The ONNX op table: (op type, opset range) -> lowering onto catalog ops, and the lowerings'
// shared helpers. Each lower_*.cpp file contributes the entries of one family.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "onnx/context.hpp"

namespace backplane::onnx {

using LowerFn = void (*)(Context&);

struct OpEntry {
  std::string_view op_type;
  int since;  // first opset of the default domain with these semantics
  int until;  // last one (kMaxOpset when still current)
  LowerFn lower;
};

// Finds the entry for the current node's op type and the context's opset and runs it; an unknown
// op or an opset outside every entry's range is Unsupported.
void LowerNode(Context& ctx);
// Every op type with at least one entry (for docs and the coverage report).
std::vector<std::string> SupportedOpTypes();

void AddElementwiseOps(std::vector<OpEntry>& table);
void AddNnOps(std::vector<OpEntry>& table);
void AddShapeOps(std::vector<OpEntry>& table);
void AddReduceOps(std::vector<OpEntry>& table);
void AddTensorElementwiseOps(std::vector<OpEntry>& table);  // lower_tensor_elementwise.cpp
void AddTensorAxisOps(std::vector<OpEntry>& table);         // lower_tensor_axis.cpp
void AddLossOps(std::vector<OpEntry>& table);               // lower_loss.cpp
void AddRearrangeOps(std::vector<OpEntry>& table);          // lower_rearrange.cpp
void AddResizeOps(std::vector<OpEntry>& table);             // lower_resize.cpp
void AddMathOps(std::vector<OpEntry>& table);               // lower_math.cpp

// ---- helpers shared by the lowerings (lower_util.cpp) ---------------------------------------------
// An axis in [-rank, rank) normalised to [0, rank); Invalid naming `what` otherwise.
int64_t NormalizeAxis(const Context& ctx, int64_t axis, int64_t rank, const std::string& what);
// Reshapes `value` to `target` (symbols kept where they stay in place, one more as -1).
std::string ReshapeTo(Context& ctx, const std::string& value, const std::vector<ir::Dim>& target,
                      const std::string& out = "");
// Host conversion of a constant to another dtype (exact for integers of int64 range).
Tensor CastTensor(const Tensor& t, DType to);
// Int64 values of an integer constant.
std::vector<int64_t> TensorInts(const Tensor& t);
Tensor IntsTensor(const std::vector<int64_t>& values, Shape shape);

}  // namespace backplane::onnx
