// The ONNX op table and the helpers the lowerings share (axes, reshapes, host casts).
#include "onnx/op_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "backplane/onnx/importer.hpp"

namespace backplane::onnx {
namespace {

const std::vector<OpEntry>& Table() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    AddElementwiseOps(t);
    AddNnOps(t);
    AddShapeOps(t);
    AddReduceOps(t);
    AddTensorElementwiseOps(t);
    AddTensorAxisOps(t);
    AddLossOps(t);
    AddRearrangeOps(t);
    AddResizeOps(t);
    AddControlOps(t);
    AddSequenceOps(t);
    AddIndexOps(t);
    AddQuantOps(t);
    AddSpectralOps(t);
    AddRecurrentOps(t);
    AddEinsumOps(t);
    AddMathOps(t);
    AddTextOps(t);
    AddSpatialOps(t);
    return t;
  }();
  return table;
}

}  // namespace

void LowerNode(Context& ctx) {
  const std::string& type = ctx.node().op_type();
  std::vector<std::string> ranges;
  for (const OpEntry& e : Table()) {
    if (e.op_type != type) continue;
    if (ctx.opset() >= e.since && ctx.opset() <= e.until) {
      e.lower(ctx);
      return;
    }
    ranges.push_back(fmt::format("{}-{}", e.since, e.until));
  }
  if (ranges.empty()) ctx.Unsupported("op type is not supported by the importer");
  ctx.Unsupported(fmt::format("supported for opsets {}, the model imports opset {}", fmt::join(ranges, ", "),
                              ctx.opset()));
}

std::vector<std::string> SupportedOpTypes() {
  std::set<std::string> names;
  for (const OpEntry& e : Table()) names.insert(std::string(e.op_type));
  return {names.begin(), names.end()};
}

int64_t NormalizeAxis(const Context& ctx, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    ctx.Invalid(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::string ReshapeTo(Context& ctx, const std::string& value, const std::vector<ir::Dim>& target,
                      const std::string& out) {
  const Value& in = ctx.Get(value);
  std::vector<int64_t> spec;
  bool inferred = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const ir::Dim& d = target[i];
    const bool same_in_place = i < in.dims.size() && in.dims[i] == d;
    if (d.symbol.empty() && d.size != 0) {
      spec.push_back(d.size);
    } else if (same_in_place) {
      spec.push_back(0);  // copies the input dimension (a symbol, or a literal 0)
    } else if (d.symbol.empty()) {
      ctx.Unsupported("reshape to a zero-size dimension not at the same position in the input");
    } else if (!inferred) {
      spec.push_back(-1);
      inferred = true;
    } else {
      ctx.Unsupported("reshape needs more than one dimension inferred at run time");
    }
  }
  return ctx.Op("shape.reshape", {value}, {{"shape", spec}}, out);
}

std::vector<int64_t> TensorInts(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::Int64: v[static_cast<size_t>(i)] = t.data_as<int64_t>()[i]; break;
      case DType::Uint64: v[static_cast<size_t>(i)] = static_cast<int64_t>(t.data_as<uint64_t>()[i]); break;
      default: v[static_cast<size_t>(i)] = static_cast<int64_t>(t.GetDouble(i)); break;
    }
  }
  return v;
}

Tensor IntsTensor(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::Int64, std::move(shape));
  if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Tensor BoolScalar(bool value) { return Tensor::FromDoubles(DType::Bool, {}, std::vector<double>{value ? 1.0 : 0.0}); }

std::string TakeAlong(Context& ctx, const std::string& value, int64_t axis, int64_t index) {
  std::vector<ir::Dim> dims = ctx.Get(value).dims;
  const std::string one = ctx.Op("shape.slice", {value},
                                 {{"starts", std::vector<int64_t>{index}}, {"ends", std::vector<int64_t>{index + 1}},
                                  {"axes", std::vector<int64_t>{axis}}});
  dims.erase(dims.begin() + axis);
  return ReshapeTo(ctx, one, dims);
}

std::string StackValues(Context& ctx, const std::vector<std::string>& values, int64_t axis, const std::string& out) {
  if (values.empty()) ctx.Invalid("there is nothing to stack (no elements)");
  std::vector<std::string> parts;
  for (const std::string& v : values) {
    std::vector<ir::Dim> dims = ctx.Get(v).dims;
    if (axis < 0 || axis > static_cast<int64_t>(dims.size())) {
      ctx.Invalid(fmt::format("stacking axis {} is out of range for rank {}", axis, dims.size()));
    }
    dims.insert(dims.begin() + axis, ir::Dim{1, ""});
    parts.push_back(ReshapeTo(ctx, v, dims, values.size() == 1 ? out : ""));
  }
  if (parts.size() == 1) return parts[0];
  return ctx.Op("shape.concat", parts, {{"axis", axis}}, out);
}

Tensor CastTensor(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  Tensor out(to, t.shape());
  const bool int_path = IsInteger(t.dtype()) && (to == DType::Int64 || to == DType::Uint64);
  const std::vector<int64_t> ints = IsInteger(t.dtype()) ? TensorInts(t) : std::vector<int64_t>{};
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (int_path) {
      const int64_t v = ints[static_cast<size_t>(i)];
      if (to == DType::Int64) {
        out.data_as<int64_t>()[i] = v;
      } else {
        out.data_as<uint64_t>()[i] = static_cast<uint64_t>(v);
      }
    } else if (IsInteger(t.dtype())) {
      const int64_t v = ints[static_cast<size_t>(i)];
      out.SetDouble(i, to == DType::Bool ? (v != 0 ? 1.0 : 0.0) : static_cast<double>(v));
    } else {
      double v = t.GetDouble(i);
      if (IsInteger(to) && std::isfinite(v)) v = std::trunc(v);  // C-style truncation
      out.SetDouble(i, to == DType::Bool ? (v != 0.0 ? 1.0 : 0.0) : v);
    }
  }
  return out;
}

}  // namespace backplane::onnx
