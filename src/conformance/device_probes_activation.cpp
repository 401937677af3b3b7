// Device conformance probes: activation ops, gated linear units, softmax family, masking,
// logsumexp. Odd sizes, both signs, ranges that cross each branch point of the reference
// (softplus threshold 20, the hard_* clamps at +-3 / +-1, the erfc switch at |x| = 1 and 8 for
// gelu, the shrink lambdas).
#include <string>

#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddActivationProbes(std::vector<DeviceProbe>& p) {
  // Unary activations: two ranges each, a moderate one and one that reaches the tails.
  struct Range {
    const char* op;
    double lo1, hi1, lo2, hi2;
  };
  const Range unary[] = {
      {"activation.relu", -3, 3, -1, 1},
      {"activation.tanh", -3, 3, -12, 12},
      {"activation.sigmoid", -6, 6, -40, 40},
      {"activation.log1p", -0.999, 4, -1e-3, 1e-3},
      {"activation.expm1", -4, 4, -1e-3, 1e-3},
      {"activation.log_sigmoid", -6, 6, -40, 40},
      {"activation.silu", -6, 6, -40, 40},
      {"activation.swish", -6, 6, -40, 40},
      {"activation.gelu", -3, 3, -12, 12},
      {"activation.gelu_tanh", -3, 3, -12, 12},
      {"activation.elu", -6, 3, -20, 20},
      {"activation.celu", -6, 3, -20, 20},
      {"activation.selu", -6, 3, -20, 20},
      {"activation.softplus", -6, 6, -30, 30},  // crosses the threshold 20
      {"activation.mish", -6, 6, -30, 30},
      {"activation.softsign", -3, 3, -100, 100},
      {"activation.hard_sigmoid", -5, 5, -3.5, 3.5},  // clamps at -3 and 3
      {"activation.hard_swish", -5, 5, -3.5, 3.5},
      {"activation.hard_gelu", -5, 5, -3.5, 3.5},
      {"activation.hard_tanh", -3, 3, -1.5, 1.5},
      {"activation.quick_gelu", -6, 6, -30, 30},
      {"activation.tanh_shrink", -3, 3, -0.5, 0.5},
  };
  for (const Range& r : unary) {
    p.push_back({.op = r.op, .inputs = {{"T", {3, 7}, r.lo1, r.hi1}}});
    p.push_back({.op = r.op, .inputs = {{"T", {2, 5, 9}, r.lo2, r.hi2}}});
  }

  // Parametric activations: the default attributes and a non-trivial choice.
  struct Param {
    const char* op;
    const char* attrs;
    double lo, hi;
  };
  const Param param[] = {
      {"activation.leaky_relu", "{}", -3, 3},
      {"activation.leaky_relu", R"({"alpha": 0.3})", -3, 3},
      {"activation.leaky_relu_slope", "{}", -3, 3},
      {"activation.leaky_relu_slope", R"({"slope": -0.7})", -3, 3},
      {"activation.prelu", "{}", -3, 3},
      {"activation.prelu", R"({"slope": 1.3})", -3, 3},
      {"activation.elu_alpha", "{}", -6, 3},
      {"activation.elu_alpha", R"({"alpha": 0.37})", -6, 3},
      {"activation.celu_alpha", "{}", -6, 3},
      {"activation.celu_alpha", R"({"alpha": 2.5})", -8, 3},
      {"activation.celu_alpha", R"({"alpha": -0.6})", -3, 3},
      {"activation.threshold", R"({"threshold": 0.5})", -2, 2},
      {"activation.threshold", R"({"threshold": -1.25})", -3, 3},
      {"activation.snake", "{}", -6, 6},
      {"activation.snake", R"({"alpha": 1.7})", -6, 6},
      {"activation.snake", R"({"alpha": -0.45})", -10, 10},
      {"activation.hard_shrink", "{}", -2, 2},
      {"activation.hard_shrink", R"({"lambda": 0.7})", -2, 2},
      {"activation.soft_shrink", "{}", -2, 2},
      {"activation.soft_shrink", R"({"lambda": 0.35})", -2, 2},
      {"activation.hard_tanh_range", "{}", -3, 3},
      {"activation.hard_tanh_range", R"({"min": -0.6, "max": 1.3})", -3, 3},
      {"activation.snake_beta", "{}", -6, 6},
      {"activation.snake_beta", R"({"alpha": 0.8, "beta": 1.9})", -6, 6},
      {"activation.snake_beta", R"({"alpha": 2.2, "beta": -0.3})", -4, 4},
      {"activation.rrelu", "{}", -3, 3},
      {"activation.rrelu", R"({"lower": 0.05, "upper": 0.9})", -3, 3},
  };
  for (const Param& q : param) {
    p.push_back({.op = q.op, .inputs = {{"T", {3, 7}, q.lo, q.hi}}, .attrs = q.attrs});
  }

  // prelu_channels: slopes (f32) along axis 1, [C] or [1]; rank 1 takes one slope.
  p.push_back({.op = "activation.prelu_channels", .inputs = {{"T", {2, 5, 3}, -3, 3}, {"f32", {5}, -1, 1}}});
  p.push_back({.op = "activation.prelu_channels", .inputs = {{"T", {3, 7}, -3, 3}, {"f32", {7}, -1.5, 1.5}}});
  p.push_back({.op = "activation.prelu_channels", .inputs = {{"T", {2, 3, 2, 3}, -3, 3}, {"f32", {1}, 0.1, 0.6}}});
  p.push_back({.op = "activation.prelu_channels", .inputs = {{"T", {9}, -3, 3}, {"f32", {1}, -0.5, 0.5}}});

  // Gated linear units. Packed: the last axis is even (gate half, up half; odd half 5).
  // Tensors: same shapes, and a broadcast pair.
  const char* glus[] = {"glu", "geglu", "geglu_tanh", "swiglu", "reglu", "siglu", "linglu", "seglu"};
  for (const char* g : glus) {
    const std::string packed = std::string("activation.") + g;
    const std::string tensors = packed + "_tensors";
    p.push_back({.op = packed, .inputs = {{"T", {3, 10}, -4, 4}}});
    p.push_back({.op = packed, .inputs = {{"T", {2, 3, 6}, -10, 10}}});
    p.push_back({.op = tensors, .inputs = {{"T", {3, 7}, -4, 4}, {"T", {3, 7}, -4, 4}}});
    p.push_back({.op = tensors, .inputs = {{"T", {3, 1, 5}, -10, 10}, {"T", {4, 5}, -10, 10}}});
  }

  // Softmax family and logsumexp over different axes (f64 in the reference for every dtype).
  for (const char* op : {"math.softmax", "activation.log_softmax", "math.logsumexp"}) {
    p.push_back({.op = op, .inputs = {{"T", {5, 9}, -4, 4}}});
    p.push_back({.op = op, .inputs = {{"T", {4, 6, 3}, -30, 30}}, .attrs = R"({"axis": 1})"});
    p.push_back({.op = op, .inputs = {{"T", {7, 3}, -2, 2}}, .attrs = R"({"axis": 0})"});
    p.push_back({.op = op, .inputs = {{"T", {11}, -8, 8}}});
  }

  p.push_back({.op = "math.inv_sqrt_dim_scale", .inputs = {{"T", {3, 7}, -10, 10}}});
  p.push_back({.op = "math.inv_sqrt_dim_scale", .inputs = {{"T", {2, 3, 5}, -10, 10}}, .attrs = R"({"dim": 64})"});
  p.push_back({.op = "math.inv_sqrt_dim_scale", .inputs = {{"T", {5}, -10, 10}}, .attrs = R"({"dim": 3})"});

  // masking.apply: the mask broadcasts to the logits' shape.
  p.push_back({.op = "masking.apply", .inputs = {{"T", {3, 7}, -4, 4}, {"T", {3, 7}, -4, 4}}});
  p.push_back({.op = "masking.apply", .inputs = {{"T", {2, 3, 7}, -4, 4}, {"T", {1, 7}, -4, 4}}});
  // masking.causal: Sk > Sq, Sq > Sk (offset negative), square, batched input.
  p.push_back({.op = "masking.causal", .inputs = {{"T", {5, 7}}}});
  p.push_back({.op = "masking.causal", .inputs = {{"T", {2, 7, 4}}}});
  p.push_back({.op = "masking.causal", .inputs = {{"T", {3, 3}}}});
}

}  // namespace backplane::conformance
