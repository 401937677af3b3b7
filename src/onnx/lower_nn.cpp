// Lowerings of ONNX's network ops: MatMul, Gemm, Conv, pooling, the norms, Softmax/LogSoftmax and
// inference-mode Dropout.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

std::string List(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

void MatMul(Context& ctx) {
  ctx.AllowAttrs({});
  ctx.Op("math.matmul", {ctx.Input(0), ctx.Input(1)}, {}, ctx.Output(0));
}

// Gemm: alpha op(A) op(B) + beta C, op() a transpose when transA / transB.
void Gemm(Context& ctx) {
  ctx.AllowAttrs({"alpha", "beta", "transA", "transB"});
  const DType d = ctx.In(0).dtype;
  std::string a = ctx.Input(0), b = ctx.Input(1);
  if (ctx.AttrInt("transA", 0) != 0) a = ctx.Op("shape.transpose", {a}, {{"perm", std::vector<int64_t>{1, 0}}});
  if (ctx.AttrInt("transB", 0) != 0) b = ctx.Op("shape.transpose", {b}, {{"perm", std::vector<int64_t>{1, 0}}});
  const double alpha = ctx.AttrFloat("alpha", 1.0);
  const double beta = ctx.AttrFloat("beta", 1.0);
  const bool has_c = ctx.HasInput(2) && beta != 0.0;
  std::string y = ctx.Op("math.matmul", {a, b}, {}, alpha == 1.0 && !has_c ? ctx.Output(0) : "");
  if (alpha != 1.0) y = ctx.Op("math.mul", {y, ctx.Scalar(alpha, d)}, {}, has_c ? "" : ctx.Output(0));
  if (has_c) {
    std::string c = ctx.Input(2);
    if (beta != 1.0) c = ctx.Op("math.mul", {c, ctx.Scalar(beta, d)});
    ctx.Op("math.add", {y, c}, {}, ctx.Output(0));
  }
}

// Spatial geometry shared by Conv and the pools: kernel, strides, dilations, symmetric pads.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: one (symmetric) value per axis
  std::vector<int64_t> begin, end;                          // with allow_asymmetric
};

Window ResolveWindow(Context& ctx, const Value& x, std::vector<int64_t> kernel, bool allow_dilation,
                     bool allow_asymmetric = false) {
  const size_t s = kernel.size();
  if (x.rank() != static_cast<int64_t>(s) + 2) {
    ctx.Invalid(fmt::format("input rank {} does not match a {}-D kernel (expected rank {})", x.rank(), s, s + 2));
  }
  Window w;
  w.kernel = kernel;
  w.strides = ctx.AttrInts("strides").value_or(std::vector<int64_t>(s, 1));
  w.dilations = ctx.AttrInts("dilations").value_or(std::vector<int64_t>(s, 1));
  if (w.strides.size() != s) ctx.Invalid(fmt::format("attribute 'strides' must have {} entries, got {}", s, List(w.strides)));
  if (w.dilations.size() != s) ctx.Invalid(fmt::format("attribute 'dilations' must have {} entries, got {}", s, List(w.dilations)));
  if (!allow_dilation) {
    for (int64_t v : w.dilations) {
      if (v != 1) ctx.Unsupported(fmt::format("attribute 'dilations' must be all 1 (the catalog pools have no dilation), got {}", List(w.dilations)));
    }
  }
  const std::string auto_pad = ctx.AttrString("auto_pad", "NOTSET");
  std::vector<int64_t> begin(s, 0), end(s, 0);
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = ctx.AttrInts("pads").value_or(std::vector<int64_t>(2 * s, 0));
    if (pads.size() != 2 * s) ctx.Invalid(fmt::format("attribute 'pads' must have {} entries, got {}", 2 * s, List(pads)));
    for (const int64_t p : pads) {
      if (p < 0) ctx.Invalid(fmt::format("attribute 'pads' must be non-negative, got {}", List(pads)));
    }
    for (size_t i = 0; i < s; ++i) {
      begin[i] = pads[i];
      end[i] = pads[i + s];
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < s; ++i) {
      const ir::Dim& dim = x.dims[i + 2];
      if (!dim.symbol.empty()) ctx.Unsupported("auto_pad SAME needs static spatial dimensions");
      const int64_t in = dim.size;
      const int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
      begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  } else if (auto_pad != "VALID") {
    ctx.Invalid(fmt::format("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '{}'", auto_pad));
  }
  w.begin = begin;
  w.end = end;
  for (size_t i = 0; i < s; ++i) {
    if (begin[i] != end[i] && allow_asymmetric) {
      w.pads.push_back(-1);  // explicit padding by the caller
      continue;
    }
    if (begin[i] != end[i]) {
      ctx.Unsupported(fmt::format("asymmetric padding (begin {}, end {} on spatial axis {}); the catalog pads "
                                  "both sides equally",
                                  begin[i], end[i], i));
    }
    w.pads.push_back(begin[i]);
  }
  return w;
}

// `v` padded on `axis` with `before` and `after` slices of `value` (static shapes).
std::string PadAxis(Context& ctx, const std::string& v, size_t axis, int64_t before, int64_t after, double value) {
  if (before == 0 && after == 0) return v;
  const Value& x = ctx.Get(v);
  if (!x.is_static()) ctx.Unsupported("explicit padding needs a static input shape");
  std::vector<std::string> parts;
  auto slab = [&](int64_t extent) {
    Shape shape = x.shape();
    shape[axis] = extent;
    Tensor t(x.dtype, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, value);
    return ctx.ConstTensor(t, "pad");
  };
  if (before > 0) parts.push_back(slab(before));
  parts.push_back(v);
  if (after > 0) parts.push_back(slab(after));
  return ctx.Op("shape.concat", parts, {{"axis", static_cast<int64_t>(axis)}});
}

}  // namespace

void EmitConv(Context& ctx, const std::string& x_name, const std::string& w_name, const std::string& bias,
              const std::string& out) {
  const Value& x = ctx.Get(x_name);
  const Value& wv = ctx.Get(w_name);
  if (!wv.is_static()) ctx.Unsupported("the weight needs a static shape");
  const Shape wshape = wv.shape();
  if (wshape.size() < 3) ctx.Invalid("the weight must have rank >= 3");
  const std::vector<int64_t> kernel(wshape.begin() + 2, wshape.end());
  if (const auto ks = ctx.AttrInts("kernel_shape"); ks && *ks != kernel) {
    ctx.Invalid(fmt::format("attribute 'kernel_shape' {} does not match the weight {}", List(*ks), ShapeToString(wshape)));
  }
  Window w = ResolveWindow(ctx, x, kernel, true, /*allow_asymmetric=*/true);
  const int64_t group = ctx.AttrInt("group", 1);
  std::string input = x_name;
  if (std::find(w.pads.begin(), w.pads.end(), -1) != w.pads.end()) {
    // Asymmetric padding: explicit zeros, then an unpadded convolution.
    for (size_t i = 0; i < w.pads.size(); ++i) {
      input = PadAxis(ctx, input, i + 2, w.begin[i], w.end[i], 0.0);
      w.pads[i] = 0;
    }
  }
  std::vector<std::string> inputs = {input, w_name};
  if (!bias.empty()) inputs.push_back(bias);
  ir::AttrMap a;
  if (kernel.size() == 1) {
    a = {{"stride", w.strides[0]}, {"padding", w.pads[0]}, {"dilation", w.dilations[0]}, {"groups", group}};
    ctx.Op("convolution.conv1d", inputs, a, out);
  } else if (kernel.size() == 2) {
    a = {{"stride_h", w.strides[0]}, {"stride_w", w.strides[1]}, {"pad_h", w.pads[0]}, {"pad_w", w.pads[1]},
         {"dil_h", w.dilations[0]},  {"dil_w", w.dilations[1]},  {"groups", group}};
    ctx.Op("convolution.conv2d", inputs, a, out);
  } else if (kernel.size() == 3) {
    a = {{"stride_d", w.strides[0]}, {"stride_h", w.strides[1]}, {"stride_w", w.strides[2]},
         {"pad_d", w.pads[0]},       {"pad_h", w.pads[1]},       {"pad_w", w.pads[2]},
         {"dil_d", w.dilations[0]},  {"dil_h", w.dilations[1]},  {"dil_w", w.dilations[2]},
         {"groups", group}};
    ctx.Op("convolution.conv3d", inputs, a, out);
  } else {
    ctx.Unsupported(fmt::format("{}-D convolution (the catalog has 1-D, 2-D and 3-D)", kernel.size()));
  }
}

namespace {

void Conv(Context& ctx) {
  ctx.AllowAttrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  EmitConv(ctx, ctx.Input(0), ctx.Input(1), ctx.HasInput(2) ? ctx.Input(2) : "", ctx.Output(0));
}

// ConvTranspose (1-D through a [N, C, 1, L] view, and 2-D; group 1) onto convolution.conv_transpose2d.
// Asymmetric pads: the unpadded result cropped (pads remove output rows and columns).
void ConvTranspose(Context& ctx) {
  ctx.AllowAttrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
  const std::string auto_pad = ctx.AttrString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    ctx.Invalid(fmt::format("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '{}'", auto_pad));
  }
  ctx.RequireAttrInt("group", 1, "grouped transposed convolution is not supported");
  const Value& x = ctx.In(0);
  const Value& wv = ctx.In(1);
  if (!wv.is_static()) ctx.Unsupported("the weight needs a static shape");
  const Shape wshape = wv.shape();
  const size_t r = wshape.size() - 2;
  if (wshape.size() < 3 || r > 2 || x.rank() != static_cast<int64_t>(r) + 2) {
    ctx.Unsupported(fmt::format("{}-D transposed convolution (1-D and 2-D are supported)", wshape.size() - 2));
  }
  auto ints = [&](const char* name, int64_t fallback, size_t n) {
    const std::vector<int64_t> v = ctx.AttrInts(name).value_or(std::vector<int64_t>(n, fallback));
    if (v.size() != n) ctx.Invalid(fmt::format("attribute '{}' must have {} entries, got {}", name, n, List(v)));
    return v;
  };
  const std::vector<int64_t> strides = ints("strides", 1, r), dils = ints("dilations", 1, r);
  std::vector<int64_t> out_pad = ints("output_padding", 0, r), pads = ints("pads", 0, 2 * r);
  const std::vector<int64_t> kernel(wshape.begin() + 2, wshape.end());
  if (const auto ks = ctx.AttrInts("kernel_shape"); ks && *ks != kernel) {
    ctx.Invalid(fmt::format("attribute 'kernel_shape' {} does not match the weight {}", List(*ks), ShapeToString(wshape)));
  }
  // output_shape (or auto_pad SAME: input * stride) sets the pads: the total is split with the odd
  // one at the end (SAME_LOWER: at the start); a negative total extends the end as output_padding.
  const auto output_shape = ctx.AttrInts("output_shape");
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!x.is_static()) ctx.Unsupported("output_shape and auto_pad SAME need a static input shape");
    std::vector<int64_t> want = output_shape.value_or(std::vector<int64_t>{});
    if (want.size() == r + 2) want.erase(want.begin(), want.begin() + 2);
    if (!output_shape) {
      for (size_t i = 0; i < r; ++i) want.push_back(x.shape()[i + 2] * strides[i]);
    }
    if (want.size() != r) ctx.Invalid(fmt::format("attribute 'output_shape' must have {} entries, got {}", r, List(want)));
    for (size_t i = 0; i < r; ++i) {
      const int64_t full = strides[i] * (x.shape()[i + 2] - 1) + out_pad[i] + (kernel[i] - 1) * dils[i] + 1;
      const int64_t total = full - want[i];
      if (total < 0) {
        pads[i] = pads[i + r] = 0;
        out_pad[i] -= total;
        if (out_pad[i] >= std::max(strides[i], dils[i])) {
          ctx.Unsupported(fmt::format("attribute 'output_shape' {} extends spatial axis {} by {} (at most max(stride, "
                                      "dilation) - 1 = {})", List(want), i, out_pad[i], std::max(strides[i], dils[i]) - 1));
        }
        continue;
      }
      const int64_t small = total / 2, large = total - total / 2;
      pads[i] = auto_pad == "SAME_LOWER" ? large : small;
      pads[i + r] = auto_pad == "SAME_LOWER" ? small : large;
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  bool symmetric = true;
  for (size_t i = 0; i < r; ++i) symmetric = symmetric && pads[i] == pads[i + r];
  // The 2-D view: 1-D gets a leading spatial axis of 1.
  auto two = [&](const std::vector<int64_t>& v, int64_t unit) {
    return r == 2 ? v : std::vector<int64_t>{unit, v[0]};
  };
  const std::vector<int64_t> s2 = two(strides, 1), d2 = two(dils, 1), o2 = two(out_pad, 0);
  std::vector<int64_t> p2 = symmetric ? two(std::vector<int64_t>(pads.begin(), pads.begin() + static_cast<ptrdiff_t>(r)), 0)
                                      : std::vector<int64_t>{0, 0};
  std::string xin = ctx.Input(0), w = ctx.Input(1);
  if (r == 1) {
    xin = ReshapeTo(ctx, xin, {x.dims[0], x.dims[1], {1, ""}, x.dims[2]});
    w = ReshapeTo(ctx, w, {{wshape[0], ""}, {wshape[1], ""}, {1, ""}, {wshape[2], ""}});
  }
  std::vector<std::string> inputs = {xin, w};
  if (ctx.HasInput(2)) inputs.push_back(ctx.Input(2));
  const bool direct = symmetric && r == 2;
  std::string y = ctx.Op("convolution.conv_transpose2d", inputs,
                         {{"stride_h", s2[0]}, {"stride_w", s2[1]}, {"pad_h", p2[0]}, {"pad_w", p2[1]},
                          {"dil_h", d2[0]}, {"dil_w", d2[1]}, {"out_pad_h", o2[0]}, {"out_pad_w", o2[1]}},
                         direct ? ctx.Output(0) : "");
  if (direct) return;
  if (!symmetric) {
    const Shape full = ctx.Get(y).shape();
    std::vector<int64_t> starts, ends, axes;
    for (size_t i = 0; i < r; ++i) {
      const int64_t axis = static_cast<int64_t>(i + (r == 1 ? 3 : 2));
      starts.push_back(pads[i]);
      ends.push_back(full[static_cast<size_t>(axis)] - pads[i + r]);
      axes.push_back(axis);
    }
    y = ctx.Op("shape.slice", {y}, {{"starts", starts}, {"ends", ends}, {"axes", axes}}, r == 2 ? ctx.Output(0) : "");
    if (r == 2) return;
  }
  const Value& yv = ctx.Get(y);
  ReshapeTo(ctx, y, {yv.dims[0], yv.dims[1], yv.dims[3]}, ctx.Output(0));
}

// MaxPool / AveragePool: the plain 2-D float case (symmetric pads <= kernel / 2, no dilation, ceil
// mode or counted pads) onto the seed's pooling.max_pool2d / avg_pool2d; everything else (1-D and
// 3-D, dilations, asymmetric or wide pads, ceil_mode, count_include_pad, integer inputs, MaxPool's
// Indices) onto pooling.max_pool[_with_indices] / pooling.avg_pool.
void Pool(Context& ctx, bool is_max) {
  if (is_max) {
    ctx.AllowAttrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  } else {
    ctx.AllowAttrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"});
  }
  const Value& x = ctx.In(0);
  const auto kernel = ctx.AttrInts("kernel_shape");
  if (!kernel) ctx.Invalid("attribute 'kernel_shape' is required");
  if (kernel->empty() || kernel->size() > 3) ctx.Unsupported(fmt::format("{}-D pooling (1-D to 3-D are supported)", kernel->size()));
  if (x.rank() != static_cast<int64_t>(kernel->size()) + 2) {
    ctx.Invalid(fmt::format("a {}-D pool needs a rank-{} input, got rank {}", kernel->size(), kernel->size() + 2, x.rank()));
  }
  const Window w = ResolveWindow(ctx, x, *kernel, true, /*allow_asymmetric=*/true);
  const bool ceil = ctx.AttrInt("ceil_mode", 0) != 0;
  const bool include_pad = !is_max && ctx.AttrInt("count_include_pad", 0) != 0;
  const bool indices = is_max && ctx.HasOutput(1);
  bool plain = kernel->size() == 2 && IsFloatingPoint(x.dtype) && !ceil && !include_pad && !indices;
  for (size_t i = 0; i < kernel->size(); ++i) {
    plain = plain && w.dilations[i] == 1 && w.pads[i] >= 0 && 2 * w.pads[i] <= w.kernel[i];
  }
  if (plain) {
    ctx.Op(is_max ? "pooling.max_pool2d" : "pooling.avg_pool2d", {ctx.Input(0)},
           {{"kernel_h", w.kernel[0]}, {"kernel_w", w.kernel[1]}, {"stride_h", w.strides[0]},
            {"stride_w", w.strides[1]}, {"pad_h", w.pads[0]}, {"pad_w", w.pads[1]}},
           ctx.Output(0));
    return;
  }
  std::vector<int64_t> pads = w.begin;
  pads.insert(pads.end(), w.end.begin(), w.end.end());
  ir::AttrMap attrs = {{"kernel", w.kernel}, {"strides", w.strides}, {"dilations", w.dilations}, {"pads", pads},
                       {"ceil_mode", ceil}};
  if (!is_max) {
    attrs["count_include_pad"] = include_pad;
    ctx.Op("pooling.avg_pool", {ctx.Input(0)}, attrs, ctx.Output(0));
    return;
  }
  if (!indices) {
    ctx.Op("pooling.max_pool", {ctx.Input(0)}, attrs, ctx.Output(0));
    return;
  }
  const int64_t order = ctx.AttrInt("storage_order", 0);
  if (order != 0 && order != 1) ctx.Invalid(fmt::format("attribute 'storage_order' must be 0 or 1, got {}", order));
  attrs["indices_over"] = std::string("tensor");
  attrs["storage_order"] = order;
  ctx.Emit("pooling.max_pool_with_indices", {ctx.Input(0)}, attrs,
           {ctx.HasOutput(0) ? ctx.Output(0) : ctx.Fresh("pool_values"), ctx.Output(1)});
}

// MaxUnpool with import-time indices (flat over the whole unpooled tensor, as MaxPool's Indices): every
// output position takes the input element whose index names it (the last one, if several), else
// 0; lowered as a constant gather over the flattened input and a select on a constant mask.
void MaxUnpool(Context& ctx) {
  ctx.AllowAttrs({"kernel_shape", "pads", "strides"});
  const Value& x = ctx.In(0);
  if (!x.is_static()) ctx.Unsupported("MaxUnpool needs a static input shape");
  const Shape in = x.shape();
  const auto kernel = ctx.AttrInts("kernel_shape");
  if (!kernel) ctx.Invalid("attribute 'kernel_shape' is required");
  const size_t r = kernel->size();
  if (in.size() != r + 2) ctx.Invalid(fmt::format("a {}-D unpool needs a rank-{} input", r, r + 2));
  const std::vector<int64_t> strides = ctx.AttrInts("strides").value_or(std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = ctx.AttrInts("pads").value_or(std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r) ctx.Invalid(fmt::format("attribute 'strides' must have {} entries, got {}", r, List(strides)));
  if (pads.size() != 2 * r) ctx.Invalid(fmt::format("attribute 'pads' must have {} entries, got {}", 2 * r, List(pads)));
  // The indices are flat over the pooled-from shape `inferred`; output_shape may be larger on the
  // spatial axes (as the export of a pool whose ceil or padding dropped rows), holding it at its start.
  Shape inferred = in;
  for (size_t i = 0; i < r; ++i) inferred[i + 2] = (in[i + 2] - 1) * strides[i] - pads[i] - pads[i + r] + (*kernel)[i];
  for (size_t i = 2; i < in.size(); ++i) {
    if (inferred[i] <= 0) ctx.Invalid(fmt::format("the unpooled shape {} has an empty axis", ShapeToString(inferred)));
  }
  Shape out = inferred;
  if (ctx.HasInput(2)) {
    const std::vector<int64_t> given = ctx.ConstInts(2, "output_shape");
    if (given.size() != in.size()) ctx.Invalid(fmt::format("input 'output_shape' must have {} entries, got {}", in.size(), List(given)));
    out = given;
  }
  bool fits = out[0] == in[0] && out[1] == in[1];
  for (size_t i = 2; i < in.size(); ++i) fits = fits && out[i] >= inferred[i];
  if (!fits) {
    ctx.Invalid(fmt::format("input 'output_shape' {} must keep the batch and channels and hold the unpooled shape {}",
                            ShapeToString(out), ShapeToString(inferred)));
  }
  if (!ctx.ConstIn(1)) ctx.Unsupported("input 1 'I' (indices) must be known at import time");
  const std::vector<int64_t> index = ctx.ConstInts(1, "I");
  int64_t total_in = 1;
  for (int64_t d : in) total_in *= d;
  int64_t total_out = 1;
  for (int64_t d : out) {
    if (d <= 0) ctx.Invalid(fmt::format("the output shape {} has an empty axis", ShapeToString(out)));
    total_out *= d;
  }
  if (static_cast<int64_t>(index.size()) != total_in) ctx.Invalid(fmt::format("input 'I' must have the shape of 'X' {}", ShapeToString(in)));
  int64_t total_inferred = 1;
  for (int64_t d : inferred) total_inferred *= d;
  // A flat index over `inferred` to the same position over `out`.
  auto place = [&](int64_t f) {
    int64_t j = 0, stride = 1;
    for (size_t a = inferred.size(); a-- > 0;) {
      j += (f % inferred[a]) * stride;
      f /= inferred[a];
      stride *= out[a];
    }
    return j;
  };
  Tensor src(DType::Int64, {1, total_out}), mask(DType::Bool, {1, total_out});
  for (int64_t j = 0; j < total_out; ++j) {
    src.data_as<int64_t>()[j] = 0;
    mask.SetDouble(j, 0.0);
  }
  for (int64_t i = 0; i < total_in; ++i) {
    const int64_t f = index[static_cast<size_t>(i)];
    if (f < 0 || f >= total_inferred) {
      ctx.Invalid(fmt::format("input 'I' holds {} at {}; expected an index in [0, {})", f, i, total_inferred));
    }
    const int64_t j = place(f);
    src.data_as<int64_t>()[j] = i;
    mask.SetDouble(j, 1.0);
  }
  const std::string flat = ReshapeTo(ctx, ctx.Input(0), {{1, ""}, {total_in, ""}});
  const std::string gathered = ctx.Op("tensor.gather_elements", {flat, ctx.ConstTensor(src, "unpool_index")}, {{"axis", int64_t{1}}});
  const std::string y = ctx.Op("tensor.where", {ctx.ConstTensor(mask, "unpool_mask"), gathered, ctx.Scalar(0.0, x.dtype)});
  std::vector<ir::Dim> dims;
  for (int64_t d : out) dims.push_back({d, ""});
  ReshapeTo(ctx, y, dims, ctx.Output(0));
}

// Global pools: reduce the spatial axes, keeping them as size 1.
void GlobalPool(Context& ctx, bool is_max) {
  ctx.AllowAttrs({});
  const Value& x = ctx.In(0);
  if (x.rank() < 3) ctx.Invalid("input must have rank >= 3");
  if (x.rank() == 4 && !is_max) {
    ctx.Op("pooling.adaptive_avg_pool2d", {ctx.Input(0)}, {{"out_h", int64_t{1}}, {"out_w", int64_t{1}}}, ctx.Output(0));
    return;
  }
  std::vector<int64_t> axes;
  int64_t count = 1;
  for (int64_t i = 2; i < x.rank(); ++i) {
    axes.push_back(i);
    if (!x.dims[static_cast<size_t>(i)].symbol.empty()) ctx.Unsupported("global pooling needs static spatial dims");
    count *= x.dims[static_cast<size_t>(i)].size;
  }
  std::string y = ctx.Op(is_max ? "reduction.max" : "reduction.sum", {ctx.Input(0)}, {{"axis", axes}});
  if (!is_max) y = ctx.Op("math.div", {y, ctx.Scalar(static_cast<double>(count), x.dtype)});
  std::vector<ir::Dim> keep = {x.dims[0], x.dims[1]};
  for (int64_t i = 2; i < x.rank(); ++i) keep.push_back({1, ""});
  ReshapeTo(ctx, y, keep, ctx.Output(0));
}

bool IsDefaultEps(double eps) { return std::fabs(eps - 1e-5) <= 1e-7 * 1e-5; }


// Mean of `v` over `axes` (static sizes): dropped axes, or kept as size-1 dimensions.
std::string StaticMean(Context& ctx, const std::string& v, const std::vector<int64_t>& axes, bool keep) {
  const Value x = ctx.Get(v);
  int64_t count = 1;
  std::vector<ir::Dim> kept = x.dims;
  for (int64_t a : axes) {
    const ir::Dim& d = x.dims[static_cast<size_t>(a)];
    if (!d.symbol.empty()) ctx.Unsupported("statistics over a symbolic axis (the count must be static)");
    count *= d.size;
    kept[static_cast<size_t>(a)] = {1, ""};
  }
  std::string y = ctx.Op("reduction.sum", {v}, {{"axis", axes}});
  y = ctx.Op("math.div", {y, ctx.Scalar(static_cast<double>(count), x.dtype)});
  return keep ? ReshapeTo(ctx, y, kept) : y;
}

// Training mode (opset 14+): batch statistics over every axis but 1 (population variance), the
// running statistics blended as input * momentum + batch * (1 - momentum).
void BatchNormTraining(Context& ctx, double eps) {
  const Value& x = ctx.In(0);
  if (x.rank() < 2) ctx.Invalid("input 'X' needs rank >= 2");
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != 1) axes.push_back(i);
  }
  const DType d = x.dtype;
  const std::string mean_keep = StaticMean(ctx, ctx.Input(0), axes, true);
  const std::string centered = ctx.Op("math.sub", {ctx.Input(0), mean_keep});
  const std::string var = StaticMean(ctx, ctx.Op("math.mul", {centered, centered}), axes, false);
  const std::string mean = StaticMean(ctx, ctx.Input(0), axes, false);
  ctx.Op("math.batchnorm", {ctx.Input(0), ctx.Input(1), ctx.Input(2), mean, var}, {{"eps", IsDefaultEps(eps) ? 1e-5 : eps}},
         ctx.Output(0));
  const double momentum = ctx.AttrFloat("momentum", 0.9);
  auto blend = [&](int input, const std::string& batch, int output) {
    if (!ctx.HasOutput(output)) return;
    const std::string old_part = ctx.Op("math.mul", {ctx.Input(input), ctx.Scalar(momentum, d)});
    const std::string new_part = ctx.Op("math.mul", {batch, ctx.Scalar(1.0 - momentum, d)});
    ctx.Op("math.add", {old_part, new_part}, {}, ctx.Output(output));
  };
  blend(3, mean, 1);
  blend(4, var, 2);
}

void BatchNorm(Context& ctx) {
  ctx.AllowAttrs({"epsilon", "momentum", "spatial", "training_mode"});
  ctx.RequireAttrInt("spatial", 1, "per-channel statistics");
  const double eps = ctx.AttrFloat("epsilon", 1e-5);
  if (ctx.AttrInt("training_mode", 0) != 0) {
    if (ctx.opset() < 14) ctx.Invalid("attribute 'training_mode' exists from opset 14");
    BatchNormTraining(ctx, eps);
    return;
  }
  for (int o = 1; o < ctx.NumOutputs(); ++o) {
    if (ctx.HasOutput(o)) ctx.Unsupported("training outputs (running mean/var) need training_mode=1");
  }
  ctx.Op("math.batchnorm", {ctx.Input(0), ctx.Input(1), ctx.Input(2), ctx.Input(3), ctx.Input(4)},
         {{"eps", IsDefaultEps(eps) ? 1e-5 : eps}}, ctx.Output(0));
}

// MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (ONNX's function).
void Mvn(Context& ctx) {
  ctx.AllowAttrs({"axes"});
  const Value& x = ctx.In(0);
  std::vector<int64_t> axes;
  for (int64_t a : ctx.AttrInts("axes").value_or(std::vector<int64_t>{0, 2, 3})) {
    axes.push_back(NormalizeAxis(ctx, a, x.rank(), "attribute 'axes' entry"));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) ctx.Invalid("attribute 'axes' repeats an axis");
  const DType d = x.dtype;
  const std::string in = ctx.Input(0);
  const std::string mean = StaticMean(ctx, in, axes, true);
  const std::string ex2 = StaticMean(ctx, ctx.Op("math.mul", {in, in}), axes, true);
  const std::string var = ctx.Op("math.sub", {ex2, ctx.Op("math.mul", {mean, mean})});
  const std::string denom = ctx.Op("math.add", {ctx.Op("math.sqrt", {var}), ctx.Scalar(1e-9, d)});
  ctx.Op("math.div", {ctx.Op("math.sub", {in, mean}), denom}, {}, ctx.Output(0));
}

void InstanceNorm(Context& ctx) {
  ctx.AllowAttrs({"epsilon"});
  const double eps = ctx.AttrFloat("epsilon", 1e-5);
  ctx.Op("math.instancenorm", {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, {{"eps", IsDefaultEps(eps) ? 1e-5 : eps}},
         ctx.Output(0));
}

// LayerNormalization (opset 17) over axes [axis, rank): trailing axes flattened into the last.
void LayerNorm(Context& ctx) {
  ctx.AllowAttrs({"axis", "epsilon", "stash_type"});
  ctx.RequireAttrInt("stash_type", 1, "statistics in f32");
  const Value& x = ctx.In(0);
  const int64_t r = x.rank();
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", -1), r, "attribute 'axis'");
  int64_t features = 1;
  for (int64_t i = axis; i < r; ++i) {
    const ir::Dim& d = x.dims[static_cast<size_t>(i)];
    if (!d.symbol.empty()) ctx.Unsupported("normalised axes need static sizes");
    features *= d.size;
  }
  auto flat_param = [&](int input) -> std::string {
    const Value& p = ctx.In(input);
    if (!p.is_static() || NumElements(p.shape()) != features) {
      ctx.Unsupported(fmt::format("input {} must have the normalised shape ({} elements; broadcasting scale/bias "
                                  "is not supported)",
                                  input, features));
    }
    return p.rank() == 1 ? ctx.Input(input) : ReshapeTo(ctx, ctx.Input(input), {{features, ""}});
  };
  const std::string gamma = flat_param(1);
  const std::string beta =
      ctx.HasInput(2) ? flat_param(2) : ctx.ConstTensor(Tensor(x.dtype, {features}), "zero_bias");
  const double eps = ctx.AttrFloat("epsilon", 1e-5);
  const ir::AttrMap a = {{"eps", IsDefaultEps(eps) ? 1e-5 : eps}};
  std::vector<ir::Dim> flat(x.dims.begin(), x.dims.begin() + axis);
  flat.push_back({features, ""});
  const std::string x2 = axis == r - 1 ? ctx.Input(0) : ReshapeTo(ctx, ctx.Input(0), flat);
  if (axis == r - 1) {
    ctx.Op("math.layernorm", {x2, gamma, beta}, a, ctx.Output(0));
  } else {
    ReshapeTo(ctx, ctx.Op("math.layernorm", {x2, gamma, beta}, a), x.dims, ctx.Output(0));
  }
  if (!ctx.HasOutput(1) && !ctx.HasOutput(2)) return;
  // Mean and InvStdDev = 1 / sqrt(var + eps), shaped [d0 .. d(axis-1), 1, ...].
  const std::vector<int64_t> last = {-1};
  const std::string count = ctx.Scalar(static_cast<double>(features), x.dtype);
  const std::string mean = ctx.Op("math.div", {ctx.Op("reduction.sum", {x2}, {{"axis", last}}), count});
  std::vector<ir::Dim> col(x.dims.begin(), x.dims.begin() + axis);
  col.push_back({1, ""});
  const std::string centered = ctx.Op("math.sub", {x2, ReshapeTo(ctx, mean, col)});
  const std::string sq = ctx.Op("math.mul", {centered, centered});
  const std::string var = ctx.Op("math.div", {ctx.Op("reduction.sum", {sq}, {{"axis", last}}), count});
  std::vector<ir::Dim> stat(x.dims.begin(), x.dims.begin() + axis);
  for (int64_t i = axis; i < r; ++i) stat.push_back({1, ""});
  if (ctx.HasOutput(1)) ReshapeTo(ctx, mean, stat, ctx.Output(1));
  if (ctx.HasOutput(2)) {
    const std::string std_dev = ctx.Op("math.sqrt", {ctx.Op("math.add", {var, ctx.Scalar(eps, x.dtype)})});
    ReshapeTo(ctx, ctx.Op("math.div", {ctx.Scalar(1.0, x.dtype), std_dev}), stat, ctx.Output(2));
  }
}

// Softmax / LogSoftmax. Opsets < 13 coerce the input to 2-D at `axis` (default 1): one softmax
// over all of axes [axis, rank) jointly. Opset 13 takes one axis (default -1).
void Softmax(Context& ctx, const char* op, bool coerce_2d) {
  ctx.AllowAttrs({"axis"});
  const Value& x = ctx.In(0);
  const int64_t r = x.rank();
  if (r == 0) ctx.Invalid("input must have rank >= 1");
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", coerce_2d ? 1 : -1), r, "attribute 'axis'");
  if (!coerce_2d || axis == r - 1) {
    ctx.Op(op, {ctx.Input(0)}, {{"axis", coerce_2d ? int64_t{-1} : axis}}, ctx.Output(0));
    return;
  }
  int64_t features = 1;
  for (int64_t i = axis; i < r; ++i) {
    const ir::Dim& d = x.dims[static_cast<size_t>(i)];
    if (!d.symbol.empty()) ctx.Unsupported("coerced axes need static sizes (opset < 13 softmax)");
    features *= d.size;
  }
  std::vector<ir::Dim> flat(x.dims.begin(), x.dims.begin() + axis);
  flat.push_back({features, ""});
  const std::string y = ctx.Op(op, {ReshapeTo(ctx, ctx.Input(0), flat)}, {{"axis", int64_t{-1}}});
  ReshapeTo(ctx, y, x.dims, ctx.Output(0));
}

// Dropout: the identity in inference (or training with ratio 0), with an all-true mask when asked
// for; training with an import-time ratio > 0 onto math.dropout (its own counter-based mask, so
// not numpy's draws; no mask output).
void Dropout(Context& ctx) {
  ctx.AllowAttrs({"ratio", "seed", "is_test"});
  bool training = false;
  double ratio = ctx.AttrFloat("ratio", 0.5);
  if (ctx.HasInput(2)) {
    const Tensor t = ctx.RequireConst(2, "training_mode");
    if (t.numel() != 1) ctx.Invalid("input 'training_mode' must be a scalar");
    training = t.GetDouble(0) != 0.0;
  }
  if (training && ctx.HasInput(1)) {
    const Tensor r = ctx.RequireConst(1, "ratio");
    if (r.numel() != 1) ctx.Invalid("input 'ratio' must be a scalar");
    ratio = r.GetDouble(0);
  } else if (training) {
    ratio = 0.5;  // the default of input 'ratio'
  }
  if (training && !(ratio >= 0.0 && ratio < 1.0)) ctx.Invalid(fmt::format("input 'ratio' must be in [0, 1), got {}", ratio));
  if (training && ratio > 0.0) {
    if (ctx.HasOutput(1)) ctx.Unsupported("output 'mask' of a training Dropout with ratio > 0 (math.dropout returns no mask)");
    ir::AttrMap attrs = {{"p", ratio}, {"training", true}};
    if (ctx.HasAttr("seed")) attrs["seed"] = ctx.AttrInt("seed", 0);
    ctx.Op("math.dropout", {ctx.Input(0)}, attrs, ctx.Output(0));
    return;
  }
  ctx.Alias(ctx.Input(0), ctx.Output(0));
  if (ctx.HasOutput(1)) {
    const Value& x = ctx.In(0);
    if (!x.is_static()) ctx.Unsupported("output 'mask' needs a static shape");
    Tensor mask(DType::Bool, x.shape());
    for (int64_t i = 0; i < mask.numel(); ++i) mask.SetDouble(i, 1.0);
    ctx.DefineConstant(ctx.Output(1), mask);
  }
}

}  // namespace

// LRN: y = x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels)^beta, the sum
// a [size, 1] convolution of ones over an [N, 1, C, spatial] view, the power exp(beta log(.)).
void Lrn(Context& ctx) {
  ctx.AllowAttrs({"alpha", "beta", "bias", "size"});
  const Value& x = ctx.In(0);
  if (!x.is_static() || x.rank() < 3) ctx.Unsupported("LRN needs a static input of rank >= 3");
  const int64_t size = ctx.AttrInt("size", 0);
  if (size <= 0) ctx.Invalid(fmt::format("attribute 'size' must be a positive integer, got {}", size));
  if (size % 2 == 0) ctx.Unsupported(fmt::format("attribute 'size' {} is even (an asymmetric window)", size));
  const double alpha = ctx.AttrFloat("alpha", 1e-4), beta = ctx.AttrFloat("beta", 0.75), bias = ctx.AttrFloat("bias", 1.0);
  const Shape shape = x.shape();
  const int64_t spatial = NumElements(std::span(shape).subspan(2));
  const DType d = x.dtype;
  const std::string squares = ctx.Op("math.mul", {ctx.Input(0), ctx.Input(0)});
  const std::string view = ReshapeTo(ctx, squares, {{shape[0], ""}, {1, ""}, {shape[1], ""}, {spatial, ""}});
  Tensor ones(d, {1, 1, size, 1});
  for (int64_t i = 0; i < size; ++i) ones.SetDouble(i, 1.0);
  const std::string sums = ctx.Op("convolution.conv2d", {view, ctx.ConstTensor(ones, "lrn_window")},
                                  {{"pad_h", (size - 1) / 2}, {"pad_w", int64_t{0}}});
  std::vector<ir::Dim> dims;
  for (int64_t v : shape) dims.push_back({v, ""});
  const std::string sum = ReshapeTo(ctx, sums, dims);
  const std::string base = ctx.Op("math.add", {ctx.Op("math.mul", {sum, ctx.Scalar(alpha / static_cast<double>(size), d)}),
                                              ctx.Scalar(bias, d)});
  const std::string denom = ctx.Op("math.exp", {ctx.Op("math.mul", {ctx.Op("math.log", {base}), ctx.Scalar(beta, d)})});
  ctx.Op("math.div", {ctx.Input(0), denom}, {}, ctx.Output(0));
}

void AddNnOps(std::vector<OpEntry>& t) {
  t.push_back({"LRN", 1, kMaxOpset, Lrn});
  t.push_back({"ConvTranspose", 1, kMaxOpset, ConvTranspose});
  const int kMax = kMaxOpset;
  t.push_back({"MatMul", 1, kMax, MatMul});
  t.push_back({"Gemm", 7, kMax, Gemm});
  t.push_back({"Conv", 1, kMax, Conv});
  t.push_back({"MaxPool", 1, kMax, [](Context& c) { Pool(c, true); }});
  t.push_back({"AveragePool", 1, kMax, [](Context& c) { Pool(c, false); }});
  t.push_back({"MaxUnpool", 9, kMax, MaxUnpool});
  t.push_back({"GlobalAveragePool", 1, kMax, [](Context& c) { GlobalPool(c, false); }});
  t.push_back({"GlobalMaxPool", 1, kMax, [](Context& c) { GlobalPool(c, true); }});
  t.push_back({"BatchNormalization", 7, kMax, BatchNorm});
  t.push_back({"InstanceNormalization", 6, kMax, InstanceNorm});
  t.push_back({"MeanVarianceNormalization", 9, kMax, Mvn});
  t.push_back({"LayerNormalization", 17, kMax, LayerNorm});
  t.push_back({"Softmax", 1, 12, [](Context& c) { Softmax(c, "math.softmax", true); }});
  t.push_back({"Softmax", 13, kMax, [](Context& c) { Softmax(c, "math.softmax", false); }});
  t.push_back({"LogSoftmax", 1, 12, [](Context& c) { Softmax(c, "activation.log_softmax", true); }});
  t.push_back({"LogSoftmax", 13, kMax, [](Context& c) { Softmax(c, "activation.log_softmax", false); }});
  t.push_back({"Dropout", 7, kMax, Dropout});
}

}  // namespace backplane::onnx
