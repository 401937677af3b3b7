// Graph-only ops: Input, Fused, the running metrics (bench.metric.*) and the model-editing ops
// (model.freeze, model.graft). They have no Backend method of their own.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "runtime/ops/lowering.hpp"
#include "runtime/ops/ops.hpp"

namespace backplane::runtime::ops {
namespace {

// ---- Input ----------------------------------------------------------------------------------------
OpImpl InputOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        if (Present(in, 0)) return std::vector<TensorType>{in[0]};
        const auto dtype = DTypeFromName(attrs.String("dtype"));
        if (!dtype || !kRealDTypes.Contains(*dtype)) attrs.Fail("dtype", "a real dtype name", attrs.String("dtype"));
        const std::vector<double> values = attrs.Floats("values");
        Shape shape = attrs.Ints("shape");
        if (!attrs.Given("shape")) shape = {static_cast<int64_t>(values.size())};
        for (int64_t d : shape) {
          if (d < 0) attrs.Fail("shape", "non-negative dimensions", ShapeToString(shape));
        }
        if (NumElements(shape) != static_cast<int64_t>(values.size())) {
          attrs.Fail("values", fmt::format("{} values for shape {}", NumElements(shape), ShapeToString(shape)),
                     std::to_string(values.size()));
        }
        return std::vector<TensorType>{{*dtype, shape}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        if (!in.empty() && in[0].defined()) {
          out[0] = in[0];
          return;
        }
        const std::vector<double> values = ctx.attrs.Floats("values");
        for (size_t i = 0; i < values.size(); ++i) out[0].SetDouble(static_cast<int64_t>(i), values[i]);
      }};
}

// ---- Fused: the fusion pass's kernels (docs/graph-format.md, "Fusion") ---------------------------
// pattern matmul_bias_act: a [..., K], b [K, N], c = bias [N]? -> act(a b + c)
// pattern add_layernorm:   a, b (same shape), c = gamma [D], d = beta [D] -> layernorm(a + b), and
//                          optionally the sum a + b as the second output
// pattern dequant4_matmul: a [..., K] float, b [K, N] int4 -> a dequant(b)
void ApplyActivation(Backend& b, const std::string& act, Tensor& t) {
  if (act == "relu") b.Activation().ReLU(t.data(), t.data(), t.numel(), t.dtype());
  if (act == "gelu") b.Activation().Gelu(t.data(), t.data(), t.numel(), t.dtype());
  if (act == "gelu_tanh") b.Activation().GeluTanh(t.data(), t.data(), t.numel(), t.dtype());
}

std::vector<TensorType> FusedInfer(std::span<const TensorType> in, const Attrs& attrs) {
  const std::string& pattern = attrs.String("pattern");
  const std::string& act = attrs.String("activation");
  if (act != "none" && act != "relu" && act != "gelu" && act != "gelu_tanh") {
    attrs.Fail("activation", "one of none, relu, gelu, gelu_tanh", act);
  }
  if (pattern == "matmul_bias_act" || pattern == "dequant4_matmul") {
    ExpectDType(attrs, in, 0, kFloatDTypes);
    if (pattern == "matmul_bias_act") {
      ExpectSameDType(attrs, in, {0, 1, 2});
    } else {
      ExpectDType(attrs, in, 1, DTypeSet{DType::Int4});
    }
    ExpectMinRank(attrs, in, 0, 1);
    ExpectRank(attrs, in, 1, 2);
    const Shape& a = in[0].shape;
    const Shape& b = in[1].shape;
    if (a.back() != b[0]) {
      Fail(attrs, ErrorCode::ShapeMismatch,
           fmt::format("inner dimensions differ: {} x {}", ShapeToString(a), ShapeToString(b)));
    }
    if (Present(in, 2)) ExpectShape(attrs, in, 2, {b[1]});
    Shape out = a;
    out.back() = b[1];
    return {{in[0].dtype, out}};
  }
  if (pattern == "add_layernorm") {
    ExpectDType(attrs, in, 0, kFloatDTypes);
    ExpectSameDType(attrs, in, {0, 1, 2, 3});
    ExpectShape(attrs, in, 1, in[0].shape);
    ExpectMinRank(attrs, in, 0, 1);
    if (!Present(in, 2) || !Present(in, 3)) Fail(attrs, ErrorCode::InvalidArgument, "add_layernorm needs gamma and beta");
    ExpectShape(attrs, in, 2, {in[0].shape.back()});
    ExpectShape(attrs, in, 3, {in[0].shape.back()});
    return {in[0], in[0]};
  }
  attrs.Fail("pattern", "one of matmul_bias_act, add_layernorm, dequant4_matmul", pattern);
}

void FusedRun(OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
  Backend& b = ctx.backend;
  const std::string& pattern = ctx.attrs.String("pattern");
  const DType d = in[0].dtype();
  if (pattern == "add_layernorm") {
    Tensor sum = out.size() > 1 ? out[1] : Tensor(d, in[0].shape());
    b.Elementwise().Add(sum.data(), in[0].data(), in[1].data(), sum.numel(), d);
    const int64_t dim = in[0].shape().back();
    const int64_t rows = dim == 0 ? 0 : sum.numel() / dim;
    b.LayerNorm().LayerNorm(sum.data(), in[2].data(), in[3].data(), out[0].data(), rows, dim, d);
    return;
  }
  const int64_t k = in[1].shape()[0];
  const int64_t n = in[1].shape()[1];
  const int64_t m = n == 0 ? 0 : out[0].numel() / n;
  Tensor weight = in[1];
  if (pattern == "dequant4_matmul") {
    weight = Tensor(d, in[1].shape());
    const DequantConfig config{static_cast<float>(ctx.attrs.Float("scale")),
                               static_cast<int8_t>(ctx.attrs.Int("zero_point"))};
    b.Dequant().Dequant4(weight.data(), in[1].data(), weight.numel(), config, d, DType::Int4);
  }
  b.Matmul().Matmul(out[0].data(), in[0].data(), weight.data(), m, k, n, d);
  if (in.size() > 2 && in[2].defined()) {
    const Tensor bias = Expand(in[2], out[0].shape());
    b.Elementwise().Add(out[0].data(), out[0].data(), bias.data(), out[0].numel(), d);
  }
  ApplyActivation(b, ctx.attrs.String("activation"), out[0]);
}

OpImpl FusedOp() { return OpImpl{FusedInfer, FusedRun}; }

// ---- running metrics --------------------------------------------------------------------------------
std::vector<TensorType> MetricInfer(std::span<const TensorType> in, const Attrs& attrs) {
  ExpectDType(attrs, in, 0, kFloatDTypes);
  ExpectDType(attrs, in, 1, kFloatDTypes);
  if (in[0].shape != in[1].shape) {
    Fail(attrs, ErrorCode::ShapeMismatch,
         fmt::format("predictions {} and targets {} must have the same shape", ShapeToString(in[0].shape),
                     ShapeToString(in[1].shape)));
  }
  if (in[0].shape.empty() || in[0].shape.back() == 0) {
    Fail(attrs, ErrorCode::ShapeMismatch, "needs a non-empty last dimension (the classes)");
  }
  return {{in[0].dtype, {1}}};
}

// First index of the maximum; NaN never displaces an earlier best (a leading NaN stays).
int64_t ArgMax(const Tensor& t, int64_t offset, int64_t n) {
  int64_t best = 0;
  double best_value = t.GetDouble(offset);
  for (int64_t i = 1; i < n; ++i) {
    const double v = t.GetDouble(offset + i);
    if (v > best_value) {
      best_value = v;
      best = i;
    }
  }
  return best;
}

OpImpl AccuracyOp() {
  return OpImpl{MetricInfer, [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const int64_t n = in[0].shape().back();
                  const int64_t rows = in[0].numel() / n;
                  double& correct = ctx.state.scalars["correct"];
                  double& total = ctx.state.scalars["total"];
                  for (int64_t r = 0; r < rows; ++r) {
                    correct += ArgMax(in[0], r * n, n) == ArgMax(in[1], r * n, n) ? 1 : 0;
                    total += 1;
                  }
                  out[0].SetDouble(0, total > 0 ? correct / total : 0.0);
                }};
}

OpImpl PerplexityOp() {
  return OpImpl{MetricInfer, [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  const int64_t n = in[0].shape().back();
                  const int64_t rows = in[0].numel() / n;
                  double& sum = ctx.state.scalars["cross_entropy_sum"];
                  double& total = ctx.state.scalars["total"];
                  for (int64_t r = 0; r < rows; ++r) {
                    double ce = 0.0;
                    for (int64_t i = 0; i < n; ++i) {  // 0 ln 0 = 0; p = 0 under t > 0 gives +inf
                      const double t = in[1].GetDouble(r * n + i);
                      if (t != 0.0) ce -= t * std::log(in[0].GetDouble(r * n + i));
                    }
                    sum += ce;
                    total += 1;
                  }
                  out[0].SetDouble(0, std::exp(sum / total));
                }};
}

OpImpl F1Op() {
  return OpImpl{MetricInfer, [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
                  double& tp = ctx.state.scalars["true_positives"];
                  double& fp = ctx.state.scalars["false_positives"];
                  double& fn = ctx.state.scalars["false_negatives"];
                  for (int64_t i = 0; i < in[0].numel(); ++i) {
                    const bool predicted = in[0].GetDouble(i) >= 0.5;
                    const bool actual = in[1].GetDouble(i) >= 0.5;
                    tp += predicted && actual ? 1 : 0;
                    fp += predicted && !actual ? 1 : 0;
                    fn += !predicted && actual ? 1 : 0;
                  }
                  // 0/0 counts as 0 (scikit-learn's zero_division=0).
                  const double p = tp + fp > 0 ? tp / (tp + fp) : 0.0;
                  const double r = tp + fn > 0 ? tp / (tp + fn) : 0.0;
                  out[0].SetDouble(0, p + r > 0 ? 2 * p * r / (p + r) : 0.0);
                }};
}

// ---- model editing -----------------------------------------------------------------------------------
std::vector<std::string> Segments(const std::string& dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    parts.push_back(dotted.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

// Dot-segment glob: a literal matches itself, "*" one segment, "**" any number (zero included);
// a pattern that ends before the name matches everything under it.
bool GlobMatch(const std::vector<std::string>& pat, size_t p, const std::vector<std::string>& name,
               size_t n) {
  if (p == pat.size()) return true;
  if (pat[p] == "**") {
    for (size_t k = n; k <= name.size(); ++k) {
      if (GlobMatch(pat, p + 1, name, k)) return true;
    }
    return false;
  }
  if (n == name.size()) return false;
  if (pat[p] != "*" && pat[p] != name[n]) return false;
  return GlobMatch(pat, p + 1, name, n + 1);
}

bool Matches(const std::string& pattern, const std::string& name) {
  if (pattern.empty()) return false;
  return GlobMatch(Segments(pattern), 0, Segments(name), 0);
}

// The parameter set a model op addresses: this build has one, the executor's parameters.
void CheckSource(const Attrs& attrs) {
  if (attrs.String("source") != "params") {
    attrs.Fail("source", "\"params\" (the graph's parameter set)", "\"" + attrs.String("source") + "\"");
  }
}

// Parameters selected by `pattern`, in sorted name order (the documented stable order).
std::vector<std::string> Select(const std::map<std::string, TensorType>& params, const std::string& pattern,
                                const std::string& except) {
  std::vector<std::string> names;
  for (const auto& [name, type] : params) {
    if (Matches(pattern, name) && !Matches(except, name)) names.push_back(name);
  }
  return names;
}

OpImpl FreezeOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);  // the trigger (an ordering dependency)
        CheckSource(attrs);
        return std::vector<TensorType>{{DType::Float32, {1}}};
      },
      [](OpContext& ctx, std::span<const Tensor>, std::span<Tensor> out) {
        const auto names = Select(ctx.attrs.param_types(), ctx.attrs.String("pattern"), ctx.attrs.String("except"));
        for (const std::string& name : names) ctx.params.frozen[name] = ctx.attrs.Bool("frozen");
        out[0].SetDouble(0, static_cast<double>(names.size()));
      }};
}

OpImpl GraftOp() {
  return OpImpl{
      [](std::span<const TensorType> in, const Attrs& attrs) {
        ExpectDType(attrs, in, 0, kFloatDTypes);  // the trigger (an ordering dependency)
        CheckSource(attrs);
        const std::string& mode = attrs.String("mode");
        if (mode != "read" && mode != "read_write") attrs.Fail("mode", "read or read_write", mode);
        const auto names = Select(attrs.param_types(), attrs.String("at"), "");
        if (names.empty()) attrs.Fail("at", "a pattern matching at least one parameter", attrs.String("at"));
        const DType dtype = attrs.param_types().at(names[0]).dtype;
        int64_t total = 0;
        for (const std::string& name : names) {
          const TensorType& t = attrs.param_types().at(name);
          if (t.dtype != dtype) {
            Fail(attrs, ErrorCode::UnsupportedDType,
                 fmt::format("selected parameters mix dtypes ({} is {}, {} is {})", names[0], DTypeName(dtype), name,
                             DTypeName(t.dtype)));
          }
          total += NumElements(t.shape);
        }
        if (Present(in, 1)) {
          if (mode != "read_write") Fail(attrs, ErrorCode::InvalidArgument, "an injection needs mode read_write");
          ExpectDType(attrs, in, 1, DTypeSet{dtype});
        }
        return std::vector<TensorType>{{dtype, {total}}};
      },
      [](OpContext& ctx, std::span<const Tensor> in, std::span<Tensor> out) {
        const auto names = Select(ctx.attrs.param_types(), ctx.attrs.String("at"), "");
        const bool inject = in.size() > 1 && in[1].defined() && ctx.attrs.String("mode") == "read_write";
        int64_t offset = 0;
        for (const std::string& name : names) {
          Tensor& p = ctx.params.tensors.at(name);
          for (int64_t i = 0; i < p.numel(); ++i, ++offset) {
            double v = p.GetDouble(i);
            if (inject && offset < in[1].numel()) {
              v += in[1].GetDouble(offset);
              p.SetDouble(i, v);
              v = p.GetDouble(i);
            }
            out[0].SetDouble(offset, v);
          }
        }
      }};
}

}  // namespace

void RegisterGraphOps(OpRegistry& r) {
  r.Add("Input", InputOp());
  r.Add("Fused", FusedOp());
  r.Add("bench.metric.accuracy", AccuracyOp());
  r.Add("bench.metric.perplexity", PerplexityOp());
  r.Add("bench.metric.f1", F1Op());
  r.Add("model.freeze", FreezeOp());
  r.Add("model.graft", GraftOp());
}

}  // namespace backplane::runtime::ops
