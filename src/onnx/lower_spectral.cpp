// Lowerings of ONNX's spectral ops (opset 17): DFT and STFT onto physics.fft / physics.ifft (the
// batched FFT over the last axis, any length), and the window generators (Hann, Hamming,
// Blackman) and MelWeightMatrix as host constants of their import-time inputs.
#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <string>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"
#include "onnx/tensor_proto.hpp"

namespace backplane::onnx {
namespace {

void RequireFloat(const Context& ctx, const Value& v, const std::string& what) {
  if (v.dtype != DType::Float32 && v.dtype != DType::Float64) {
    ctx.Unsupported(fmt::format("{} must be float32 or float64, got {}", what, DTypeName(v.dtype)));
  }
}

int64_t StaticAt(const Context& ctx, const Value& v, int64_t axis, const std::string& what) {
  const ir::Dim& d = v.dims[static_cast<size_t>(axis)];
  if (!d.symbol.empty()) ctx.Unsupported(fmt::format("{} must be static (got '{}')", what, d.symbol));
  return d.size;
}

int64_t ScalarInt(const Context& ctx, int i, const std::string& what) {
  const std::vector<int64_t> v = ctx.ConstInts(i, what);
  if (v.size() != 1) ctx.Invalid(fmt::format("{} must be a scalar, got {} values", what, v.size()));
  return v[0];
}

std::string SliceLast(Context& ctx, const std::string& x, int64_t axis, int64_t begin, int64_t end) {
  return ctx.Op("shape.slice", {x}, {{"starts", std::vector<int64_t>{begin}}, {"ends", std::vector<int64_t>{end}},
                                     {"axes", std::vector<int64_t>{axis}}});
}

// y[..., k, re/im] of x[..., n, c] (the transformed axis second to last, c = 1 real or 2 complex):
// the parts split out, truncated or zero-padded to `length`, physics.fft / physics.ifft over the
// last axis, the first length / 2 + 1 bins kept when onesided, the parts stacked again.
std::string DftLastAxes(Context& ctx, const std::string& x, int64_t length, bool onesided, bool inverse,
                        const std::string& out = "") {
  const Value& v = ctx.Get(x);
  const int64_t r = v.rank();
  const int64_t n = StaticAt(ctx, v, r - 2, "the transformed axis");
  const int64_t c = StaticAt(ctx, v, r - 1, "the last (real/imaginary) axis");
  if (c != 1 && c != 2) ctx.Invalid(fmt::format("the last axis must have 1 (real) or 2 (complex) entries, got {}", c));
  if (onesided && c == 2) ctx.Unsupported("attribute 'onesided' = 1 with a complex input (expected a real one)");
  if (length < 1) ctx.Invalid(fmt::format("the DFT length must be >= 1, got {}", length));
  std::vector<ir::Dim> rows(v.dims.begin(), v.dims.end() - 1);  // [..., n]
  auto part = [&](int64_t j) {
    std::string p = ReshapeTo(ctx, c == 1 ? x : SliceLast(ctx, x, r - 1, j, j + 1), rows);
    if (length < n) return SliceLast(ctx, p, r - 2, 0, length);
    if (length == n) return p;
    std::vector<ir::Dim> pad(rows.begin(), rows.end() - 1);
    Shape pad_shape;
    for (const ir::Dim& d : pad) {
      if (!d.symbol.empty()) ctx.Unsupported(fmt::format("zero padding to the DFT length with a symbolic dim '{}'", d.symbol));
      pad_shape.push_back(d.size);
    }
    pad_shape.push_back(length - n);
    const std::string zeros = ctx.ConstTensor(Tensor(v.dtype, pad_shape), "zeros");  // Tensor() zero-fills
    return ctx.Op("shape.concat", {p, zeros}, {{"axis", r - 2}});
  };
  const std::string re = part(0);
  const std::string im = c == 2 ? part(1) : "";
  const std::string yr = ctx.Fresh("fft_re"), yi = ctx.Fresh("fft_im");
  ctx.Emit(inverse ? "physics.ifft" : "physics.fft", {re, im}, {}, {yr, yi});
  const int64_t k_out = onesided ? length / 2 + 1 : length;
  std::vector<ir::Dim> col(v.dims.begin(), v.dims.end() - 2);
  col.push_back({k_out, ""});
  col.push_back({1, ""});
  auto stacked = [&](const std::string& y) {
    return ReshapeTo(ctx, k_out < length ? SliceLast(ctx, y, r - 2, 0, k_out) : y, col);
  };
  const std::string parts = ctx.Op("shape.concat", {stacked(yr), stacked(yi)}, {{"axis", r - 1}}, out);
  return parts;
}

std::string Transpose(Context& ctx, const std::string& x, const std::vector<int64_t>& perm, const std::string& out = "") {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) {
    if (out.empty()) return x;
    ctx.Alias(x, out);
    return out;
  }
  return ctx.Op("shape.transpose", {x}, {{"perm", perm}}, out);
}

// DFT(input, dft_length?) over `axis` (not the last), real [..., 1] or complex [..., 2] input.
void Dft(Context& ctx) {
  ctx.AllowAttrs({"axis", "inverse", "onesided"});
  const Value& x = ctx.In(0);
  RequireFloat(ctx, x, "input 'input'");
  const int64_t r = x.rank();
  if (r < 2) ctx.Invalid(fmt::format("input 'input' must have rank >= 2, got {}", r));
  const int64_t axis = NormalizeAxis(ctx, ctx.AttrInt("axis", 1), r - 1, "attribute 'axis' (the last axis holds re/im)");
  const bool inverse = ctx.AttrInt("inverse", 0) != 0;
  const bool onesided = ctx.AttrInt("onesided", 0) != 0;
  if (inverse && onesided) ctx.Unsupported("attribute 'onesided' = 1 with 'inverse' = 1 (expected onesided 0)");
  const int64_t n = StaticAt(ctx, x, axis, "the transformed axis");
  const int64_t length = ctx.HasInput(1) ? ScalarInt(ctx, 1, "input 'dft_length'") : n;
  // Move `axis` next to the last axis, transform, move it back.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r - 1; ++i) {
    if (i != axis) perm.push_back(i);
  }
  perm.push_back(axis);
  perm.push_back(r - 1);
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  const std::string y = DftLastAxes(ctx, Transpose(ctx, ctx.Input(0), perm), length, onesided, inverse);
  Transpose(ctx, y, back, ctx.Output(0));
}

// STFT(signal [batch, length, 1|2], frame_step, window?, frame_length?) -> [batch, frames, k, 2].
void Stft(Context& ctx) {
  ctx.AllowAttrs({"onesided"});
  const Value& x = ctx.In(0);
  RequireFloat(ctx, x, "input 'signal'");
  if (x.rank() != 3) ctx.Invalid(fmt::format("input 'signal' must be [batch, length, 1 or 2], got rank {}", x.rank()));
  const bool onesided = ctx.AttrInt("onesided", 1) != 0;
  const int64_t step = ScalarInt(ctx, 1, "input 'frame_step'");
  const int64_t len = StaticAt(ctx, x, 1, "the signal length");
  int64_t frame = -1;
  if (ctx.HasInput(3)) frame = ScalarInt(ctx, 3, "input 'frame_length'");
  if (ctx.HasInput(2)) {
    const Value& w = ctx.In(2);
    if (w.rank() != 1) ctx.Invalid(fmt::format("input 'window' must be 1-D, got rank {}", w.rank()));
    if (w.dtype != x.dtype) ctx.Invalid(fmt::format("input 'window' is {}, the signal {}", DTypeName(w.dtype), DTypeName(x.dtype)));
    const int64_t wl = StaticAt(ctx, w, 0, "the window length");
    if (frame >= 0 && frame != wl) ctx.Invalid(fmt::format("input 'frame_length' is {}, the window has {}", frame, wl));
    frame = wl;
  }
  if (frame < 0) ctx.Invalid("one of inputs 'window' and 'frame_length' is required");
  if (step < 1) ctx.Invalid(fmt::format("input 'frame_step' must be >= 1, got {}", step));
  if (frame < 1 || frame > len) ctx.Invalid(fmt::format("the frame length must be in 1..{} (the signal length), got {}", len, frame));
  const int64_t frames = (len - frame) / step + 1;
  if (frames > 1024) ctx.Unsupported(fmt::format("{} frames (at most 1024 lower to slices)", frames));
  std::vector<std::string> parts;
  for (int64_t f = 0; f < frames; ++f) {
    parts.push_back(ctx.Op("shape.slice", {ctx.Input(0)},
                           {{"starts", std::vector<int64_t>{f * step}}, {"ends", std::vector<int64_t>{f * step + frame}},
                            {"axes", std::vector<int64_t>{1}}}));
  }
  std::string joined = parts.size() == 1 ? parts[0] : ctx.Op("shape.concat", parts, {{"axis", int64_t{1}}});
  const ir::Dim c = x.dims[2];
  joined = ReshapeTo(ctx, joined, {x.dims[0], {frames, ""}, {frame, ""}, c});
  if (ctx.HasInput(2)) joined = ctx.Op("math.mul", {joined, ReshapeTo(ctx, ctx.Input(2), {{frame, ""}, {1, ""}})});
  DftLastAxes(ctx, joined, frame, onesided, false, ctx.Output(0));
}

enum class Window { Hann, Hamming, Blackman };

// size (a constant scalar) -> the window in `output_datatype`; periodic divides by N, symmetric by N - 1.
void WindowOp(Context& ctx, Window kind) {
  ctx.AllowAttrs({"output_datatype", "periodic"});
  const int64_t size = ScalarInt(ctx, 0, "input 'size'");
  if (size < 0 || size > (int64_t{1} << 24)) ctx.Invalid(fmt::format("input 'size' must be in 0..2^24, got {}", size));
  const int64_t code = ctx.AttrInt("output_datatype", 1);
  const auto dtype = DTypeFromOnnx(static_cast<int32_t>(code));
  if (!dtype || !(IsFloatingPoint(*dtype) || IsInteger(*dtype))) {
    ctx.Unsupported(fmt::format("attribute 'output_datatype' = {} (expected a numeric type)", OnnxTypeName(static_cast<int32_t>(code))));
  }
  const bool periodic = ctx.AttrInt("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  Tensor t(*dtype, {size});
  for (int64_t i = 0; i < size; ++i) {
    const double a = denom > 0 ? 2.0 * std::numbers::pi * static_cast<double>(i) / denom : 0.0;
    double v = 0.0;
    switch (kind) {
      case Window::Hann: v = 0.5 - 0.5 * std::cos(a); break;
      case Window::Hamming: v = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a); break;
      case Window::Blackman: v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2.0 * a); break;
    }
    t.SetDouble(i, IsInteger(*dtype) ? std::trunc(v) : v);
  }
  ctx.DefineConstant(ctx.Output(0), t);
}

double ConstScalar(const Context& ctx, int i, const std::string& what) {
  const std::optional<Tensor>& t = ctx.ConstIn(i);
  if (!t) ctx.Unsupported(fmt::format("{} must be known at import time (it sets the matrix's band edges)", what));
  if (t->numel() != 1) ctx.Invalid(fmt::format("{} must be a scalar, got {} values", what, t->numel()));
  return t->GetDouble(0);
}

// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz) ->
// [dft_length / 2 + 1, num_mel_bins] triangular filters, as ONNX's specification computes them
// (mel = 2595 log10(1 + f / 700); num_mel_bins + 2 band edges, spaced by the mel range over
// num_mel_bins + 2, floored to spectrogram bins). Every input must be an import-time constant.
void MelWeightMatrix(Context& ctx) {
  ctx.AllowAttrs({"output_datatype"});
  const int64_t mels = ScalarInt(ctx, 0, "input 'num_mel_bins'");
  const int64_t dft = ScalarInt(ctx, 1, "input 'dft_length'");
  const int64_t rate = ScalarInt(ctx, 2, "input 'sample_rate'");
  const double lo = ConstScalar(ctx, 3, "input 'lower_edge_hertz'");
  const double hi = ConstScalar(ctx, 4, "input 'upper_edge_hertz'");
  if (mels < 1 || mels > 65536) ctx.Invalid(fmt::format("input 'num_mel_bins' must be in 1..65536, got {}", mels));
  if (dft < 1 || dft > (int64_t{1} << 24)) ctx.Invalid(fmt::format("input 'dft_length' must be in 1..2^24, got {}", dft));
  if (rate < 1) ctx.Invalid(fmt::format("input 'sample_rate' must be >= 1, got {}", rate));
  if (!(lo >= 0 && lo < hi)) ctx.Invalid(fmt::format("the band edges must satisfy 0 <= lower < upper, got {} and {}", lo, hi));
  const int64_t code = ctx.AttrInt("output_datatype", 1);
  const auto dtype = DTypeFromOnnx(static_cast<int32_t>(code));
  if (!dtype || !(IsFloatingPoint(*dtype) || IsInteger(*dtype))) {
    ctx.Unsupported(fmt::format("attribute 'output_datatype' = {} (expected a numeric type)", OnnxTypeName(static_cast<int32_t>(code))));
  }
  const int64_t bins = dft / 2 + 1;
  const double mel_lo = 2595.0 * std::log10(1.0 + lo / 700.0);
  const double mel_hi = 2595.0 * std::log10(1.0 + hi / 700.0);
  const double step = (mel_hi - mel_lo) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + mel_lo) / 2595.0) - 1.0);
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  if (edge.back() >= bins) {
    ctx.Invalid(fmt::format("input 'upper_edge_hertz' {} maps to bin {}, beyond the {} spectrogram bins", hi, edge.back(), bins));
  }
  std::vector<double> m(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return m[static_cast<size_t>(j * mels + i)]; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = edge[static_cast<size_t>(i)], c = edge[static_cast<size_t>(i + 1)], h = edge[static_cast<size_t>(i + 2)];
    if (c == l) {
      at(c, i) = 1.0;
    } else {
      for (int64_t j = l; j <= c; ++j) at(j, i) = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    for (int64_t j = c; j < h; ++j) at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  ctx.DefineConstant(ctx.Output(0), Tensor::FromDoubles(*dtype, {bins, mels}, m));
}

}  // namespace

void AddSpectralOps(std::vector<OpEntry>& t) {
  const int kMax = kMaxOpset;
  t.push_back({"DFT", 17, kMax, Dft});
  t.push_back({"STFT", 17, kMax, Stft});
  t.push_back({"HannWindow", 17, kMax, [](Context& c) { WindowOp(c, Window::Hann); }});
  t.push_back({"HammingWindow", 17, kMax, [](Context& c) { WindowOp(c, Window::Hamming); }});
  t.push_back({"BlackmanWindow", 17, kMax, [](Context& c) { WindowOp(c, Window::Blackman); }});
  t.push_back({"MelWeightMatrix", 17, kMax, MelWeightMatrix});
}

}  // namespace backplane::onnx
