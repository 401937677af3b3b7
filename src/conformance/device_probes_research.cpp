// Device conformance probes: research ops (physics, hawkes, vsa, active inference, predictive
// coding, markov blankets, causal, pospop).
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

namespace {

// causal.cpp SumTolerance: how far a probability row may sum from 1.
double SumTolerance(DType d) {
  switch (d) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-6;
    case DType::Float16: return 1e-3;
    default: return 1e-2;
  }
}

// Entries of a distribution row of length `len` for dtype d: uniform in a window around 1/len
// narrow enough (a quarter of the tolerance over the row, plus the storage rounding) that every row
// sums to 1 within SumTolerance. Independent uniform values cannot form exact distributions, so
// this is the closest valid random probe.
ProbeInput Row(DType d, Shape shape, int64_t len) {
  const double centre = 1.0 / static_cast<double>(len);
  const double half = SumTolerance(d) / (8.0 * static_cast<double>(len));
  return {"T", std::move(shape), centre - half, centre + half};
}

}  // namespace

void AddResearchProbes(std::vector<DeviceProbe>& p) {
  // ---- physics ----
  p.push_back({.op = "physics.laplacian", .inputs = {{"T", {9}}}});
  p.push_back({.op = "physics.laplacian", .inputs = {{"T", {5, 6}}}, .attrs = R"({"spacing": 0.5})"});
  p.push_back({.op = "physics.laplacian", .inputs = {{"T", {3, 4, 5}}}, .attrs = R"({"spacing": 0.7})"});
  for (const char* op : {"physics.laplacian4", "physics.grad1d", "physics.divergence1d", "physics.bohmian_velocity"}) {
    p.push_back({.op = op, .inputs = {{"T", {11}}}, .attrs = R"({"spacing": 0.3})"});
    p.push_back({.op = op, .inputs = {{"T", {2}}}});  // neighbours wrap onto each other
  }
  // A density: >= 0 (the kernel rejects negatives); 0 would give 0 and is covered by the select.
  p.push_back({.op = "physics.quantum_potential", .inputs = {{"T", {11}, 0.05, 2.0}}, .attrs = R"({"spacing": 0.4})"});
  p.push_back({.op = "physics.madelung_continuity", .inputs = {{"T", {11}, 0.0, 2.0}, {"T", {11}}},
               .attrs = R"({"spacing": 0.25})"});
  for (const char* op : {"physics.fft1d", "physics.ifft1d"}) {
    p.push_back({.op = op, .inputs = {{"T", {8}}, {"T", {8}}}, .outputs = 2});  // radix 2
    p.push_back({.op = op, .inputs = {{"T", {7}}, {"T", {7}}}, .outputs = 2});  // Bluestein
  }
  // With Inf inputs, which outputs come out as NaN and which as +-Inf depends on the butterfly
  // order (XLA's FFT is not the reference's): non-finite outputs need only be non-finite there.
  for (const char* op : {"physics.fft", "physics.ifft"}) {
    p.push_back({.op = op, .inputs = {{"T", {3, 8}}, {"T", {3, 8}}}, .outputs = 2, .special_values = "nonfinite"});
    // Real input: XLA's real transform keeps its structural zeros (the DC imaginary part) exactly
    // 0 even when an input is NaN, where the reference's complex sum gives NaN (docs/xla.md).
    p.push_back({.op = op, .inputs = {{"T", {2, 5}}, {""}}, .outputs = 2, .special_values = "off"});
  }

  // ---- hawkes ----
  // Event times must be sorted, which independent uniform values are not: one random event, or
  // several tied events (lo == hi, ties allowed), are the valid random probes.
  const char* hp = R"({"mu": 0.5, "alpha": 0.8, "beta": 1.5})";
  const char* hk = R"({"alpha": 0.8, "beta": 1.5})";
  p.push_back({.op = "hawkes.intensity", .inputs = {{"T", {1}, 0.0, 3.0}, {"T", {3, 5}, -1.0, 4.0}}, .attrs = hp});
  p.push_back({.op = "hawkes.intensity", .inputs = {{"T", {5}, 1.25, 1.25}, {"T", {7}, 0.0, 3.0}}, .attrs = hp});
  p.push_back({.op = "hawkes.kernel_matrix", .inputs = {{"T", {1}, 0.0, 3.0}}, .attrs = hk});
  p.push_back({.op = "hawkes.kernel_matrix", .inputs = {{"T", {4}, 0.75, 0.75}}, .attrs = hk});
  const char* hl = R"({"mu": 0.5, "alpha": 0.8, "beta": 1.5, "total_time": 5.0})";
  p.push_back({.op = "hawkes.log_likelihood", .inputs = {{"T", {1}, 0.0, 5.0}}, .attrs = hl});
  p.push_back({.op = "hawkes.log_likelihood", .inputs = {{"T", {6}, 2.0, 2.0}}, .attrs = hl});
  // No inputs: the same f32 times for every dtype; the horizon ends one run, max_events the other.
  p.push_back({.op = "hawkes.simulate",
               .attrs = R"({"mu": 1.2, "alpha": 0.6, "beta": 1.5, "horizon": 10.0, "max_events": 64, "seed": 42})",
               .outputs = 2});
  p.push_back({.op = "hawkes.simulate",
               .attrs = R"({"mu": 2.0, "alpha": 1.0, "beta": 2.5, "horizon": 50.0, "max_events": 5, "seed": -7})",
               .outputs = 2});

  // ---- vsa ----
  for (const char* op : {"vsa.bind", "vsa.bundle"}) {
    p.push_back({.op = op, .inputs = {{"T", {4, 6}}, {"T", {6}}}});
  }
  p.push_back({.op = "vsa.similarity", .inputs = {{"T", {17}}, {"T", {17}}}});
  p.push_back({.op = "vsa.similarity", .inputs = {{"T", {5}, 1e3, 3e3}, {"T", {5}, -1e-3, 1e-3}}});
  for (const char* op : {"vsa.permute", "vsa.inverse_permute"}) {
    p.push_back({.op = op, .inputs = {{"T", {4, 6}}}, .attrs = R"({"k": 5})"});
    p.push_back({.op = op, .inputs = {{"T", {7}}}, .attrs = R"({"k": -16})"});
  }

  // ---- active inference: probabilities / likelihoods / precisions are >= 0 ----
  p.push_back({.op = "active_inference.belief_update", .inputs = {{"T", {9}, 0.0, 1.0}, {"T", {9}, 0.0, 1.0}}});
  p.push_back({.op = "active_inference.expected_free_energy",
               .inputs = {{"T", {7}, 0.05, 1.0}, {"T", {7}, 0.05, 1.0}, {"T", {5}, 0.05, 1.0}}});
  p.push_back({.op = "active_inference.free_energy",
               .inputs = {{"T", {8}, 0.05, 1.0}, {"T", {8}, 0.05, 1.0}, {"T", {8}, 0.05, 1.0}}});
  p.push_back({.op = "active_inference.precision_weight", .inputs = {{"T", {4, 6}}, {"T", {4, 6}, 0.0, 3.0}}});

  // ---- predictive coding ----
  p.push_back({.op = "predictive_coding.prediction", .inputs = {{"T", {5, 7}}, {"T", {7}}}});
  p.push_back({.op = "predictive_coding.update_representation", .inputs = {{"T", {5, 7}}, {"T", {7}}, {"T", {5}}},
               .attrs = R"({"learning_rate": 0.05})"});
  p.push_back({.op = "predictive_coding.update_weights", .inputs = {{"T", {5, 7}}, {"T", {7}}, {"T", {5}}},
               .attrs = R"({"learning_rate": 0.1})"});

  // ---- markov blanket ----
  for (const char* op : {"markov_blanket.flow_active", "markov_blanket.flow_internal"}) {
    p.push_back({.op = op, .inputs = {{"T", {6, 6}, 0.0, 2.0}, {"i32", {6}, -0.49, 3.49}}});
  }
  p.push_back({.op = "markov_blanket.mutual_information", .inputs = {{"T", {4, 5}, 0.0, 1.0}}});
  // Internal ids must be distinct, which several random ids are not always: one random id. Random
  // float entries are never 0, so a random adjacency is a complete graph; the all-zero one (no
  // edges) is the other end.
  p.push_back({.op = "markov_blanket.partition", .inputs = {{"T", {7, 7}, -0.5, 1.0}, {"i32", {1}, -0.49, 6.49}}});
  p.push_back({.op = "markov_blanket.partition", .inputs = {{"T", {5, 5}, 0.0, 0.0}, {"i32", {1}, -0.49, 4.49}}});

  // ---- causal ----
  for (DType d : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    p.push_back({.op = "causal.backdoor_adjustment", .inputs = {Row(d, {3, 4, 2}, 2), Row(d, {4}, 4)}, .dtypes = {d}});
    p.push_back({.op = "causal.frontdoor_adjustment",
                 .inputs = {Row(d, {3, 4}, 4), Row(d, {3, 4, 2}, 2), Row(d, {3}, 3)},
                 .dtypes = {d}});
  }
  p.push_back({.op = "causal.cate", .inputs = {{"T", {4, 6}}, {"T", {4, 1}}}});
  p.push_back({.op = "causal.counterfactual", .inputs = {{"T", {4, 6}}, {"T", {6}}, {"T", {4, 1}}},
               .attrs = R"({"slope": 1.7})"});
  p.push_back({.op = "causal.dag_markov_factorization", .inputs = {{"T", {9}, 0.05, 1.0}}});
  // Intervened ids must be distinct: one random id (see markov_blanket.partition).
  p.push_back({.op = "causal.do_calculus", .inputs = {{"T", {5, 5}}, {"i32", {1}, -0.49, 4.49}}});
  p.push_back({.op = "causal.iv_estimate", .inputs = {{"T", {12}}, {"T", {12}}, {"T", {12}}}});
  // Symmetric positive definite matrices cannot be drawn as independent uniform entries (one range
  // for the diagonal and the rest); 1 x 1 matrices with positive entries are SPD, batched and not.
  p.push_back({.op = "causal.cholesky", .inputs = {{"T", {5, 1, 1}, 0.25, 4.0}}});
  p.push_back({.op = "causal.cholesky", .inputs = {{"T", {1, 1}, 0.25, 4.0}}});

  // ---- pospop: every bit pattern of the word width ----
  p.push_back({.op = "pospop.count8", .inputs = {{"T", {37}, 0.0, 255.0}}});
  p.push_back({.op = "pospop.count_string", .inputs = {{"T", {41}, 0.0, 255.0}}});
  p.push_back({.op = "pospop.count16", .inputs = {{"T", {29}, 0.0, 65535.0}}});
  p.push_back({.op = "pospop.count32", .inputs = {{"T", {3, 9}, 0.0, 4294967295.0}}});
  // Doubles near 2^64 have no low bits set; the small range covers those.
  p.push_back({.op = "pospop.count64", .inputs = {{"T", {19}, 0.0, 1.8e19}}});
  p.push_back({.op = "pospop.count64", .inputs = {{"T", {23}, 0.0, 1e6}}});
}

}  // namespace backplane::conformance
