// Recurrent layers (RNN, GRU, LSTM) unrolled over the static sequence length onto catalog ops:
// projection.linear for the input and recurrent products, elementwise gates, slices and concats.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "backplane/onnx/importer.hpp"
#include "onnx/op_table.hpp"

namespace backplane::onnx {
namespace {

enum class Cell { Rnn, Gru, Lstm };

std::vector<ir::Dim> Dims(const std::vector<int64_t>& sizes) {
  std::vector<ir::Dim> d;
  for (int64_t s : sizes) d.push_back({s, ""});
  return d;
}

struct Activation {
  std::string name;  // lower case
  double alpha = 0.0, beta = 0.0;
};

// The activation list: the defaults, or the attribute with alpha/beta consumed in order by the
// functions that take them (as onnxruntime reads them).
std::vector<Activation> Activations(Context& ctx, const std::vector<std::string>& defaults, int64_t dirs) {
  std::vector<std::string> names;
  if (ctx.HasAttr("activations")) {
    for (const auto& a : ctx.node().attribute()) {
      if (a.name() == "activations") {
        for (const std::string& s : a.strings()) names.push_back(s);
      }
    }
    const size_t want = defaults.size() * static_cast<size_t>(dirs);
    if (names.size() != want && names.size() != defaults.size()) {
      ctx.Invalid(fmt::format("attribute 'activations' has {} entries, expected {}", names.size(), want));
    }
  } else {
    names = defaults;
  }
  if (names.size() == defaults.size() && dirs == 2) {
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  }
  const std::vector<double> alphas = ctx.AttrFloats("activation_alpha").value_or(std::vector<double>{});
  const std::vector<double> betas = ctx.AttrFloats("activation_beta").value_or(std::vector<double>{});
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    Activation f;
    for (char c : raw) f.name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    double def_alpha = 0.0, def_beta = 0.0;
    bool uses_alpha = false, uses_beta = false;
    if (f.name == "leakyrelu") { uses_alpha = true; def_alpha = 0.01; }
    else if (f.name == "thresholdedrelu" || f.name == "elu") { uses_alpha = true; def_alpha = 1.0; }
    else if (f.name == "hardsigmoid") { uses_alpha = uses_beta = true; def_alpha = 0.2; def_beta = 0.5; }
    else if (f.name == "affine") { uses_alpha = uses_beta = true; def_alpha = 1.0; def_beta = 0.0; }
    else if (f.name == "scaledtanh") { uses_alpha = uses_beta = true; def_alpha = 1.0; def_beta = 1.0; }
    else if (f.name != "relu" && f.name != "tanh" && f.name != "sigmoid" && f.name != "softsign" && f.name != "softplus") {
      ctx.Unsupported(fmt::format("activation '{}' is not supported (supported: Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                                  "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                                  raw));
    }
    f.alpha = uses_alpha ? (ai < alphas.size() ? alphas[ai++] : def_alpha) : 0.0;
    f.beta = uses_beta ? (bi < betas.size() ? betas[bi++] : def_beta) : 0.0;
    out.push_back(f);
  }
  return out;
}

class Unroller {
 public:
  Unroller(Context& ctx, Cell cell) : ctx_(ctx), cell_(cell) {}

  void Run() {
    ctx_.AllowAttrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout",
                     "linear_before_reset", "input_forget"});
    gates_ = cell_ == Cell::Rnn ? 1 : cell_ == Cell::Gru ? 3 : 4;
    if (cell_ != Cell::Gru && ctx_.HasAttr("linear_before_reset")) ctx_.Invalid("attribute 'linear_before_reset' is GRU's");
    if (cell_ != Cell::Lstm && ctx_.HasAttr("input_forget")) ctx_.Invalid("attribute 'input_forget' is LSTM's");
    ctx_.RequireAttrInt("input_forget", 0, "coupled input and forget gates are not supported");
    linear_before_reset_ = ctx_.AttrInt("linear_before_reset", 0) != 0;
    const std::string direction = ctx_.AttrString("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
      ctx_.Invalid(fmt::format("attribute 'direction' must be forward, reverse or bidirectional, got '{}'", direction));
    }
    dirs_ = direction == "bidirectional" ? 2 : 1;
    layout_ = ctx_.AttrInt("layout", 0);
    if (layout_ != 0 && layout_ != 1) ctx_.Invalid(fmt::format("attribute 'layout' must be 0 or 1, got {}", layout_));
    if (layout_ == 1 && ctx_.opset() < 14) ctx_.Invalid("attribute 'layout' exists from opset 14");
    if (ctx_.HasAttr("clip")) {
      clip_ = ctx_.AttrFloat("clip", 0.0);
      if (!(clip_ > 0.0)) ctx_.Invalid(fmt::format("attribute 'clip' must be positive, got {}", clip_));
    }
    const std::vector<std::string> defaults = cell_ == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
                                              : cell_ == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                   : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    acts_ = Activations(ctx_, defaults, dirs_);
    nacts_ = defaults.size();

    const Value x = ctx_.In(0), w = ctx_.In(1), r = ctx_.In(2);
    if (!x.is_static() || !w.is_static() || !r.is_static()) ctx_.Unsupported("inputs X, W and R need static shapes");
    if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) ctx_.Invalid("inputs X, W and R must have rank 3");
    dtype_ = x.dtype;
    const Shape xs = x.shape(), ws = w.shape(), rs = r.shape();
    seq_ = layout_ == 0 ? xs[0] : xs[1];
    batch_ = layout_ == 0 ? xs[1] : xs[0];
    input_ = xs[2];
    hidden_ = rs[2];
    if (ctx_.HasAttr("hidden_size") && ctx_.AttrInt("hidden_size", 0) != hidden_) {
      ctx_.Invalid(fmt::format("attribute 'hidden_size' {} does not match R's {}", ctx_.AttrInt("hidden_size", 0), hidden_));
    }
    const int64_t gh = gates_ * hidden_;
    if (ws != Shape{dirs_, gh, input_}) ctx_.Invalid(fmt::format("input 'W' must have shape [{}, {}, {}]", dirs_, gh, input_));
    if (rs != Shape{dirs_, gh, hidden_}) ctx_.Invalid(fmt::format("input 'R' must have shape [{}, {}, {}]", dirs_, gh, hidden_));
    if (seq_ <= 0) ctx_.Unsupported("an empty sequence");
    if (ctx_.HasInput(4)) {
      const std::vector<int64_t> lens = ctx_.ConstInts(4, "sequence_lens");
      if (static_cast<int64_t>(lens.size()) != batch_) ctx_.Invalid(fmt::format("input 'sequence_lens' must have {} entries", batch_));
      for (int64_t l : lens) {
        if (l != seq_) ctx_.Unsupported(fmt::format("input 'sequence_lens' entries must all equal the sequence length {}", seq_));
      }
    }
    const int outputs = cell_ == Cell::Lstm ? 3 : 2;
    for (int o = outputs; o < ctx_.NumOutputs(); ++o) {
      if (ctx_.HasOutput(o)) ctx_.Invalid(fmt::format("output {} does not exist", o));
    }

    std::string xt = ctx_.Input(0);
    if (layout_ == 1) xt = ctx_.Op("shape.transpose", {xt}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
    xflat_ = ReshapeTo(ctx_, xt, Dims({seq_ * batch_, input_}));

    std::vector<std::string> ys, hs, cs;
    for (int64_t d = 0; d < dirs_; ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      Direction(d, reverse, ys, hs, cs);
    }
    // Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]); Y_h, Y_c [dirs, batch, H] ([batch, dirs, H]).
    if (ctx_.HasOutput(0)) {
      if (layout_ == 0) {
        Concat(ys, 1, ctx_.Output(0));
      } else {
        ctx_.Op("shape.transpose", {Concat(ys, 1, "")}, {{"perm", std::vector<int64_t>{2, 0, 1, 3}}}, ctx_.Output(0));
      }
    }
    auto state_out = [&](const std::vector<std::string>& parts, int o) {
      if (!ctx_.HasOutput(o)) return;
      if (layout_ == 0) {
        Concat(parts, 0, ctx_.Output(o));
      } else {
        ctx_.Op("shape.transpose", {Concat(parts, 0, "")}, {{"perm", std::vector<int64_t>{1, 0, 2}}}, ctx_.Output(o));
      }
    };
    state_out(hs, 1);
    if (cell_ == Cell::Lstm) state_out(cs, 2);
  }

 private:
  std::string Concat(const std::vector<std::string>& parts, int64_t axis, const std::string& out) {
    if (parts.size() == 1) {
      if (out.empty()) return parts[0];
      ctx_.Alias(parts[0], out);
      return out;
    }
    return ctx_.Op("shape.concat", parts, {{"axis", axis}}, out);
  }

  std::string Slice(const std::string& v, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes) {
    return ctx_.Op("shape.slice", {v}, {{"starts", starts}, {"ends", ends}, {"axes", axes}});
  }

  // Columns [g * H, (g + n) * H) of a [batch, G * H] value.
  std::string Gate(const std::string& v, int64_t g, int64_t n = 1) {
    if (gates_ == n) return v;
    return Slice(v, {g * hidden_}, {(g + n) * hidden_}, {1});
  }

  // Rows [g * H, (g + n) * H) of direction d of a [dirs, G * H, K] weight, as [n * H, K].
  std::string WeightRows(int input, int64_t d, int64_t g, int64_t n, int64_t k) {
    const std::string s = Slice(ctx_.Input(input), {d, g * hidden_}, {d + 1, (g + n) * hidden_}, {0, 1});
    return ReshapeTo(ctx_, s, Dims({n * hidden_, k}));
  }

  // Entries [off, off + len) of direction d of a [dirs, N] vector, as [len].
  std::string VectorPart(int input, int64_t d, int64_t off, int64_t len) {
    const std::string s = Slice(ctx_.Input(input), {d, off}, {d + 1, off + len}, {0, 1});
    return ReshapeTo(ctx_, s, Dims({len}));
  }

  std::string InitialState(int input, int64_t d) {
    if (!ctx_.HasInput(input)) {
      Tensor zeros(dtype_, {batch_, hidden_});
      for (int64_t i = 0; i < zeros.numel(); ++i) zeros.SetDouble(i, 0.0);
      return ctx_.ConstTensor(zeros, "rnn_zero_state");
    }
    const Value v = ctx_.In(input);
    const Shape want = layout_ == 0 ? Shape{dirs_, batch_, hidden_} : Shape{batch_, dirs_, hidden_};
    if (!v.is_static() || v.shape() != want) {
      ctx_.Invalid(fmt::format("input {} must have shape [{}, {}, {}]", input, want[0], want[1], want[2]));
    }
    const int64_t axis = layout_ == 0 ? 0 : 1;
    return ReshapeTo(ctx_, Slice(ctx_.Input(input), {d}, {d + 1}, {axis}), Dims({batch_, hidden_}));
  }

  std::string Apply(const Activation& f, std::string v) {
    if (clip_ > 0.0) v = ctx_.Op("activation.hard_tanh_range", {v}, {{"min", -clip_}, {"max", clip_}});
    auto scalar = [&](double s) { return ctx_.Scalar(s, dtype_); };
    if (f.name == "relu") return ctx_.Op("activation.relu", {v});
    if (f.name == "tanh") return ctx_.Op("activation.tanh", {v});
    if (f.name == "sigmoid") return ctx_.Op("activation.sigmoid", {v});
    if (f.name == "softsign") return ctx_.Op("activation.softsign", {v});
    if (f.name == "softplus") return ctx_.Op("activation.softplus", {v});
    if (f.name == "leakyrelu") return ctx_.Op("activation.leaky_relu", {v}, {{"alpha", f.alpha}});
    if (f.name == "elu") return ctx_.Op("activation.elu_alpha", {v}, {{"alpha", f.alpha}});
    if (f.name == "thresholdedrelu") return ctx_.Op("activation.threshold", {v}, {{"threshold", f.alpha}});
    if (f.name == "affine") return ctx_.Op("math.add", {ctx_.Op("math.mul", {v, scalar(f.alpha)}), scalar(f.beta)});
    if (f.name == "scaledtanh") {
      return ctx_.Op("math.mul", {ctx_.Op("activation.tanh", {ctx_.Op("math.mul", {v, scalar(f.beta)})}), scalar(f.alpha)});
    }
    // hardsigmoid
    const std::string a = ctx_.Op("math.add", {ctx_.Op("math.mul", {v, scalar(f.alpha)}), scalar(f.beta)});
    return ctx_.Op("activation.hard_tanh_range", {a}, {{"min", 0.0}, {"max", 1.0}});
  }

  std::string Add(const std::string& a, const std::string& b) { return ctx_.Op("math.add", {a, b}); }
  std::string Mul(const std::string& a, const std::string& b) { return ctx_.Op("math.mul", {a, b}); }

  void Direction(int64_t d, bool reverse, std::vector<std::string>& ys, std::vector<std::string>& hs,
                 std::vector<std::string>& cs) {
    const int64_t gh = gates_ * hidden_;
    const Activation* f = &acts_[static_cast<size_t>(d) * nacts_];
    const bool has_b = ctx_.HasInput(3);
    if (has_b) {
      const Value b = ctx_.In(3);
      if (!b.is_static() || b.shape() != Shape{dirs_, 2 * gh}) ctx_.Invalid(fmt::format("input 'B' must have shape [{}, {}]", dirs_, 2 * gh));
    }
    // The input products of every step at once: [seq * batch, G * H], with W's bias.
    std::vector<std::string> xin = {xflat_, WeightRows(1, d, 0, gates_, input_)};
    if (has_b) xin.push_back(VectorPart(3, d, 0, gh));
    const std::string xw = ctx_.Op("projection.linear", xin);
    // GRU's candidate gate multiplies R_h separately (after or before the reset).
    const int64_t joint = cell_ == Cell::Gru ? 2 : gates_;
    std::vector<std::string> rin = {"", WeightRows(2, d, 0, joint, hidden_)};
    if (has_b) rin.push_back(VectorPart(3, d, gh, joint * hidden_));
    std::string rh_w, rh_b;
    if (cell_ == Cell::Gru) {
      rh_w = WeightRows(2, d, 2, 1, hidden_);
      if (has_b) rh_b = VectorPart(3, d, gh + 2 * hidden_, hidden_);
    }
    std::string p_i, p_o, p_f;
    if (cell_ == Cell::Lstm && ctx_.HasInput(7)) {
      const Value p = ctx_.In(7);
      if (!p.is_static() || p.shape() != Shape{dirs_, 3 * hidden_}) ctx_.Invalid(fmt::format("input 'P' must have shape [{}, {}]", dirs_, 3 * hidden_));
      p_i = VectorPart(7, d, 0, hidden_);
      p_o = VectorPart(7, d, hidden_, hidden_);
      p_f = VectorPart(7, d, 2 * hidden_, hidden_);
    }
    std::string h = InitialState(5, d);
    std::string c = cell_ == Cell::Lstm ? InitialState(6, d) : "";
    std::vector<std::string> steps(static_cast<size_t>(seq_));
    for (int64_t i = 0; i < seq_; ++i) {
      const int64_t t = reverse ? seq_ - 1 - i : i;
      const std::string xt = Slice(xw, {t * batch_}, {(t + 1) * batch_}, {0});
      rin[0] = h;
      const std::string hr = ctx_.Op("projection.linear", rin);
      if (cell_ == Cell::Rnn) {
        h = Apply(f[0], Add(xt, hr));
      } else if (cell_ == Cell::Gru) {
        const std::string zr = Add(Gate(xt, 0, 2), hr);
        const std::string z = Apply(f[0], Slice(zr, {0}, {hidden_}, {1}));
        const std::string rg = Apply(f[0], Slice(zr, {hidden_}, {2 * hidden_}, {1}));
        std::string cand;
        if (linear_before_reset_) {
          std::vector<std::string> in = {h, rh_w};
          if (has_b) in.push_back(rh_b);
          cand = Mul(rg, ctx_.Op("projection.linear", in));
        } else {
          std::vector<std::string> in = {Mul(rg, h), rh_w};
          if (has_b) in.push_back(rh_b);
          cand = ctx_.Op("projection.linear", in);
        }
        const std::string hh = Apply(f[1], Add(Gate(xt, 2), cand));
        // H = (1 - z) hh + z H = hh + z (H - hh)
        h = Add(hh, Mul(z, ctx_.Op("math.sub", {h, hh})));
      } else {
        const std::string g = Add(xt, hr);
        std::string pi = Gate(g, 0), po = Gate(g, 1), pf = Gate(g, 2);
        if (!p_i.empty()) {
          pi = Add(pi, Mul(p_i, c));
          pf = Add(pf, Mul(p_f, c));
        }
        const std::string ig = Apply(f[0], pi), fg = Apply(f[0], pf), cg = Apply(f[1], Gate(g, 3));
        c = Add(Mul(fg, c), Mul(ig, cg));
        if (!p_o.empty()) po = Add(po, Mul(p_o, c));
        h = Mul(Apply(f[0], po), Apply(f[2], c));
      }
      if (ctx_.HasOutput(0)) steps[static_cast<size_t>(t)] = ReshapeTo(ctx_, h, Dims({1, 1, batch_, hidden_}));
    }
    if (ctx_.HasOutput(0)) ys.push_back(Concat(steps, 0, ""));
    hs.push_back(ReshapeTo(ctx_, h, Dims({1, batch_, hidden_})));
    if (cell_ == Cell::Lstm) cs.push_back(ReshapeTo(ctx_, c, Dims({1, batch_, hidden_})));
  }

  Context& ctx_;
  Cell cell_;
  int64_t gates_ = 1, dirs_ = 1, layout_ = 0, seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0;
  bool linear_before_reset_ = false;
  double clip_ = 0.0;
  std::vector<Activation> acts_;
  size_t nacts_ = 1;
  DType dtype_ = DType::Invalid;
  std::string xflat_;
};

}  // namespace

void AddRecurrentOps(std::vector<OpEntry>& t) {
  constexpr int kMax = kMaxOpset;
  t.push_back({"RNN", 7, kMax, [](Context& c) { Unroller(c, Cell::Rnn).Run(); }});
  t.push_back({"GRU", 7, kMax, [](Context& c) { Unroller(c, Cell::Gru).Run(); }});
  t.push_back({"LSTM", 7, kMax, [](Context& c) { Unroller(c, Cell::Lstm).Run(); }});
}

}  // namespace backplane::onnx
