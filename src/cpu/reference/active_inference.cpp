// Scalar reference kernels for the ActiveInference surface: free-energy computations on
// categorical beliefs (Friston 2010; Da Costa et al. 2020, "Active inference on discrete
// state-spaces: a synthesis"). Logarithms use 0 ln 0 = 0 and no epsilon clamp; sums are float64
// for every storage format. Semantics: docs/semantics/active_inference.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "backplane/error.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace active_inference {
namespace {

// The accepted set is kFloatDTypes. A switch rather than DTypeSet::Contains, so that a value
// outside the enum is rejected too.
void CheckFloatDType(std::string_view op, DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return;
    default:
      ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
}

// Reads `count` entries that must be finite and >= 0 (probabilities, likelihoods, precisions).
std::vector<double> ReadNonNegative(std::string_view op, std::string_view arg, const void* data,
                                    int64_t count, DType dtype) {
  std::vector<double> values = Widen<double>(data, count, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || values[i] < 0.0) {
      ThrowInvalidArgument(op, arg, "finite and >= 0",
                           fmt::format("{}[{}] = {}", arg, i, values[i]));
    }
  }
  return values;
}

// sum_i w_i ln v_i over w_i > 0 (0 ln 0 = 0); +/-Inf where some w_i > 0 has v_i = 0.
double WeightedLogSum(const std::vector<double>& w, const std::vector<double>& v) {
  double sum = 0.0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] > 0.0) sum += w[i] * std::log(v[i]);
  }
  return sum;
}

}  // namespace

// F = sum_i q_i (ln q_i - ln p_i) - sum_i q_i ln L_i = KL(q || p) - E_q[ln L], with 0 ln 0 = 0.
// +Inf where some q_i > 0 has p_i = 0 or L_i = 0. q and p are used as given (not renormalised).
// count 0 writes 0 (the empty sum).
void FreeEnergy(BP_PARAMS_FreeEnergy) {
  constexpr std::string_view op = "ActiveInference.FreeEnergy";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "likelihood", likelihood, count);
  CheckPointer(op, "posterior", posterior, count);
  CheckPointer(op, "prior", prior, count);
  CheckPointer(op, "output", output, 1);
  const std::vector<double> l = ReadNonNegative(op, "likelihood", likelihood, count, dtype);
  const std::vector<double> q = ReadNonNegative(op, "posterior", posterior, count, dtype);
  const std::vector<double> p = ReadNonNegative(op, "prior", prior, count, dtype);

  double f = 0.0;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == 0.0) continue;
    f += q[i] * (std::log(q[i]) - std::log(p[i]) - std::log(l[i]));
  }
  Store<double>(output, 0, dtype, f);
}

// Expected free energy of a policy as risk + ambiguity, with the ambiguity of an outcome that
// determines the hidden state (H[s | o] = 0), which is H[Q(o)] - H[Q(s)]:
//   G = KL(Q(o) || C(o)) + H[Q(o)] - H[Q(s)] = -sum_o Q(o) ln C(o) - H[Q(s)]
// i.e. expected cost minus expected information gain about states. +Inf where some Q(o) > 0 has
// C(o) = 0. Empty sums are 0 (obsCount 0 gives -H[Q(s)]).
void ExpectedFreeEnergy(BP_PARAMS_ExpectedFreeEnergy) {
  constexpr std::string_view op = "ActiveInference.ExpectedFreeEnergy";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "obsCount", obsCount);
  CheckNonNegative(op, "stateCount", stateCount);
  CheckPointer(op, "predictedObs", predictedObs, obsCount);
  CheckPointer(op, "preferredObs", preferredObs, obsCount);
  CheckPointer(op, "predictedState", predictedState, stateCount);
  CheckPointer(op, "output", output, 1);
  const std::vector<double> qo = ReadNonNegative(op, "predictedObs", predictedObs, obsCount, dtype);
  const std::vector<double> c = ReadNonNegative(op, "preferredObs", preferredObs, obsCount, dtype);
  const std::vector<double> qs =
      ReadNonNegative(op, "predictedState", predictedState, stateCount, dtype);

  const double expected_cost = -WeightedLogSum(qo, c);
  const double state_entropy = -WeightedLogSum(qs, qs);
  Store<double>(output, 0, dtype, expected_cost - state_entropy);
}

// Bayes' rule: output[i] = L_i p_i / sum_j L_j p_j. Each product is formed as mantissa product
// times a power of two and rescaled by the largest exponent before summing, so long or extreme
// products neither underflow nor overflow. A zero evidence sum throws. All inputs are read before
// output is written (in-place safe).
void BeliefUpdate(BP_PARAMS_BinaryOut) {
  constexpr std::string_view op = "ActiveInference.BeliefUpdate";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "likelihood", left, count);
  CheckPointer(op, "prior", right, count);
  CheckPointer(op, "output", output, count);
  const std::vector<double> l = ReadNonNegative(op, "likelihood", left, count, dtype);
  const std::vector<double> p = ReadNonNegative(op, "prior", right, count, dtype);
  if (count == 0) return;

  std::vector<double> mantissa(l.size(), 0.0);
  std::vector<int> exponent(l.size(), 0);
  int largest = std::numeric_limits<int>::min();
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i] == 0.0 || p[i] == 0.0) continue;
    int el = 0;
    int ep = 0;
    mantissa[i] = std::frexp(l[i], &el) * std::frexp(p[i], &ep);  // in [0.25, 1)
    exponent[i] = el + ep;
    largest = std::max(largest, exponent[i]);
  }
  if (largest == std::numeric_limits<int>::min()) {
    ThrowInvalidArgument(op, "likelihood", "such that the evidence sum(likelihood * prior) is > 0",
                         "likelihood[i] * prior[i] = 0 for every i");
  }
  std::vector<double> posterior(l.size(), 0.0);
  double evidence = 0.0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (mantissa[i] == 0.0) continue;
    posterior[i] = std::ldexp(mantissa[i], exponent[i] - largest);
    evidence += posterior[i];
  }
  for (double& v : posterior) v /= evidence;
  Narrow(posterior, output, dtype);
}

// output[i] = errors[i] * precision[i]; precision must be finite and >= 0. Errors propagate
// IEEE-style (Inf, NaN). Computed in the compute type of dtype; in-place safe.
void PrecisionWeight(BP_PARAMS_BinaryOut) {
  constexpr std::string_view op = "ActiveInference.PrecisionWeight";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "errors", left, count);
  CheckPointer(op, "precision", right, count);
  CheckPointer(op, "output", output, count);
  ReadNonNegative(op, "precision", right, count, dtype);
  WithComputeType(op, "dtype", dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < count; ++i) {
      const T e = Load<T>(left, i, dtype);
      const T w = Load<T>(right, i, dtype);
      Store<T>(output, i, dtype, e * w);
    }
  });
}

}  // namespace active_inference

void RegisterActiveInference(KernelTable& table) {
  table.ActiveInference_FreeEnergy = &active_inference::FreeEnergy;
  table.ActiveInference_ExpectedFreeEnergy = &active_inference::ExpectedFreeEnergy;
  table.ActiveInference_BeliefUpdate = &active_inference::BeliefUpdate;
  table.ActiveInference_PrecisionWeight = &active_inference::PrecisionWeight;
}

}  // namespace backplane::cpu::ref
