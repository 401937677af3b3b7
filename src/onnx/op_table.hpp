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
void AddControlOps(std::vector<OpEntry>& table);            // lower_control.cpp
void AddSequenceOps(std::vector<OpEntry>& table);           // lower_sequence.cpp
void AddIndexOps(std::vector<OpEntry>& table);              // lower_index.cpp
void AddQuantOps(std::vector<OpEntry>& table);              // lower_quant.cpp
void AddSpectralOps(std::vector<OpEntry>& table);           // lower_spectral.cpp
void AddRecurrentOps(std::vector<OpEntry>& table);          // lower_recurrent.cpp
void AddEinsumOps(std::vector<OpEntry>& table);             // lower_einsum.cpp
void AddMathOps(std::vector<OpEntry>& table);               // lower_math.cpp
void AddTextOps(std::vector<OpEntry>& table);               // lower_text.cpp
void AddSpatialOps(std::vector<OpEntry>& table);            // lower_spatial.cpp
// Lowers the current node of domain ai.onnx.preview.training at `version` (lower_training.cpp).
void LowerTrainingNode(Context& ctx, int64_t version);

// Imports subgraph `g` (a branch or a body) with its inputs bound to `inputs` (value names, tensors
// or composites; the count must match) and returns the value names of its outputs. The subgraph's
// own names get fresh value names, so importing it again (an unrolled iteration) cannot clash;
// other names resolve to the enclosing scopes. `what` names the subgraph in errors. The current
// node is restored afterwards.
std::vector<std::string> ImportSubgraph(Context& ctx, const ::onnx::GraphProto& g, const std::vector<std::string>& inputs,
                                        const std::string& what);
// The GRAPH attribute `name` of the current node; Invalid when absent.
const ::onnx::GraphProto& AttrGraph(const Context& ctx, const std::string& name);

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
Tensor BoolScalar(bool value);
// Element `index` of `value` along `axis`, with that axis removed (a slice and a reshape).
std::string TakeAlong(Context& ctx, const std::string& value, int64_t axis, int64_t index);
// The tensors `values` (equal shapes) stacked along a new axis `axis` of the result (in [0, rank]).
std::string StackValues(Context& ctx, const std::vector<std::string>& values, int64_t axis, const std::string& out);
// Conv's lowering over the current node's conv attributes (auto_pad, dilations, group,
// kernel_shape, pads, strides; the caller allows them) with the given x, w, bias ("" for none).
void EmitConv(Context& ctx, const std::string& x, const std::string& w, const std::string& bias,
              const std::string& out);

}  // namespace backplane::onnx
