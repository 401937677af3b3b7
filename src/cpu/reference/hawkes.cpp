// Scalar reference kernels for the Hawkes surface: the univariate Hawkes process with exponential
// kernel (Hawkes 1971; Ozaki 1979; Laub, Taimre & Pollett 2015) and two discrete helpers for
// Markov-blanket analysis (mutual information of a joint table; Pearl's Markov blanket).
//
// One convention everywhere: an event excites only strictly later times,
//   lambda(t) = mu + alpha * sum_{t_j < t} exp(-beta (t - t_j)),
// so HawkesIntensity at an event time equals the lambda_i used by the log-likelihood and
// mu + sum_j K[i][j] of the kernel matrix. Everything is computed in float64 and rounded once on
// store. Semantics: docs/semantics/hawkes.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/error.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace hawkes {
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

int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "small enough that the element count fits in int64",
                         fmt::format("{} x {}", a, b));
  }
  return product;
}

// A float scalar parameter that must be finite and >= 0 (strict: > 0).
double CheckParam(std::string_view op, std::string_view arg, float value, bool strict) {
  CheckFinite(op, arg, value);
  if (strict ? !(value > 0.0f) : !(value >= 0.0f)) {
    ThrowInvalidArgument(op, arg, strict ? "> 0" : ">= 0", fmt::format("{}", value));
  }
  return static_cast<double>(value);
}

// Reads `count` values, each finite.
std::vector<double> ReadFinite(std::string_view op, std::string_view arg, const void* data,
                               int64_t count, DType dtype) {
  std::vector<double> values = Widen<double>(data, count, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      ThrowInvalidArgument(op, arg, "finite", fmt::format("{}[{}] = {}", arg, i, values[i]));
    }
  }
  return values;
}

// Reads event times: finite and sorted non-decreasing (ties allowed).
std::vector<double> ReadEventTimes(std::string_view op, const void* data, int64_t count,
                                   DType dtype) {
  std::vector<double> times = ReadFinite(op, "eventTimes", data, count, dtype);
  for (size_t i = 1; i < times.size(); ++i) {
    if (times[i] < times[i - 1]) {
      ThrowInvalidArgument(op, "eventTimes", "sorted non-decreasing",
                           fmt::format("eventTimes[{}] = {} < eventTimes[{}] = {}", i, times[i],
                                       i - 1, times[i - 1]));
    }
  }
  return times;
}

}  // namespace

// output[q] = mu + alpha * sum_{t_j < query[q]} exp(-beta (query[q] - t_j)). Queries need not be
// sorted. All inputs are read before output is written, so output may alias queryTimes.
void HawkesIntensity(BP_PARAMS_HawkesIntensity) {
  constexpr std::string_view op = "Hawkes.HawkesIntensity";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "eventCount", eventCount);
  CheckNonNegative(op, "queryCount", queryCount);
  CheckPointer(op, "eventTimes", eventTimes, eventCount);
  CheckPointer(op, "queryTimes", queryTimes, queryCount);
  CheckPointer(op, "output", output, queryCount);
  const double m = CheckParam(op, "mu", mu, /*strict=*/false);
  const double a = CheckParam(op, "alpha", alpha, /*strict=*/false);
  const double b = CheckParam(op, "beta", beta, /*strict=*/true);
  const std::vector<double> events = ReadEventTimes(op, eventTimes, eventCount, dtype);
  const std::vector<double> queries = ReadFinite(op, "queryTimes", queryTimes, queryCount, dtype);

  std::vector<double> result(queries.size());
  for (size_t q = 0; q < queries.size(); ++q) {
    const double t = queries[q];
    // Events strictly before t are the prefix [0, first event >= t).
    const auto end = std::lower_bound(events.begin(), events.end(), t);
    double sum = 0.0;
    for (auto it = events.begin(); it != end; ++it) sum += std::exp(-b * (t - *it));
    result[q] = m + a * sum;
  }
  Narrow(result, output, dtype);
}

// K[i][j] = alpha exp(-beta (t_i - t_j)) when t_j < t_i (so j < i for sorted times), else 0:
// the diagonal, the upper triangle and ties are 0. Row i is the excited event, column j the
// exciting one. Every cell is written.
void HawkesKernelMatrix(BP_PARAMS_HawkesKernelMatrix) {
  constexpr std::string_view op = "Hawkes.HawkesKernelMatrix";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "eventCount", eventCount);
  const int64_t cells = CheckedProduct(op, "eventCount", eventCount, eventCount);
  CheckPointer(op, "eventTimes", eventTimes, eventCount);
  CheckPointer(op, "output", output, cells);
  const double a = CheckParam(op, "alpha", alpha, /*strict=*/false);
  const double b = CheckParam(op, "beta", beta, /*strict=*/true);
  const std::vector<double> t = ReadEventTimes(op, eventTimes, eventCount, dtype);

  for (int64_t i = 0; i < eventCount; ++i) {
    for (int64_t j = 0; j < eventCount; ++j) {
      const double ti = t[static_cast<size_t>(i)];
      const double tj = t[static_cast<size_t>(j)];
      const double k = (j < i && tj < ti) ? a * std::exp(-b * (ti - tj)) : 0.0;
      Store<double>(output, i * eventCount + j, dtype, k);
    }
  }
}

// Exact log-likelihood on [0, T] (Ozaki 1979; Laub, Taimre & Pollett 2015):
//   l = sum_i ln lambda(t_i) - [ mu T + (alpha / beta) sum_i (1 - exp(-beta (T - t_i))) ]
// with lambda(t_i) = mu + alpha B_i over strictly earlier events, B_i from the O(E) recursion
//   B_i = exp(-beta (t_i - t_prev)) (B_prev + m_prev)
// over groups of tied times (t_prev the previous distinct time, m_prev its multiplicity), which
// is Ozaki's A_i = exp(-beta (t_i - t_{i-1})) (1 + A_{i-1}) when there are no ties.
void HawkesLogLikelihood(BP_PARAMS_HawkesLogLikelihood) {
  constexpr std::string_view op = "Hawkes.HawkesLogLikelihood";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "eventCount", eventCount);
  CheckPointer(op, "eventTimes", eventTimes, eventCount);
  CheckPointer(op, "output", output, 1);
  const double total = CheckParam(op, "totalTime", totalTime, /*strict=*/false);
  const double m = CheckParam(op, "mu", mu, /*strict=*/true);
  const double a = CheckParam(op, "alpha", alpha, /*strict=*/false);
  const double b = CheckParam(op, "beta", beta, /*strict=*/true);
  const std::vector<double> t = ReadEventTimes(op, eventTimes, eventCount, dtype);
  if (!t.empty() && t.front() < 0.0) {
    ThrowInvalidArgument(op, "eventTimes", "within [0, totalTime]",
                         fmt::format("eventTimes[0] = {}", t.front()));
  }
  if (!t.empty() && t.back() > total) {
    ThrowInvalidArgument(op, "eventTimes", fmt::format("within [0, totalTime = {}]", total),
                         fmt::format("eventTimes[{}] = {}", t.size() - 1, t.back()));
  }

  double sum_log = 0.0;
  double excitation = 0.0;  // B: decayed kicks of strictly earlier events, at the current time
  double group_time = 0.0;
  double group_size = 0.0;
  double sum_decay = 0.0;  // sum_i (1 - exp(-beta (T - t_i))), via expm1 for accuracy
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 0) {
      group_time = t[0];
      group_size = 1.0;
    } else if (t[i] > group_time) {
      excitation = std::exp(-b * (t[i] - group_time)) * (excitation + group_size);
      group_time = t[i];
      group_size = 1.0;
    } else {
      group_size += 1.0;  // a tie: the earlier event at the same time does not excite this one
    }
    sum_log += std::log(m + a * excitation);
    sum_decay += -std::expm1(-b * (total - t[i]));
  }
  const double compensator = m * total + (a / b) * sum_decay;
  Store<double>(output, 0, dtype, sum_log - compensator);
}

// Shannon mutual information in nats of the table normalised by its total:
//   I = sum_{x,y: p > 0} p(x,y) ln( p(x,y) / (p(x) p(y)) ),  0 ln 0 = 0,
// evaluated as (n_xy / N) (ln n_xy + ln N - ln n_x - ln n_y) on the raw (power-of-two scaled)
// entries, in float64, clamped at 0 against rounding. An empty table gives 0.
void MarkovMutualInformation(BP_PARAMS_MarkovMutualInformation) {
  constexpr std::string_view op = "Hawkes.MarkovMutualInformation";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "xCount", xCount);
  CheckNonNegative(op, "yCount", yCount);
  const int64_t cells = CheckedProduct(op, "yCount", xCount, yCount);
  CheckPointer(op, "joint", joint, cells);
  CheckPointer(op, "output", output, 1);
  std::vector<double> p = ReadFinite(op, "joint", joint, cells, dtype);
  double largest = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] < 0.0) {
      ThrowInvalidArgument(op, "joint", ">= 0 everywhere (a probability table)",
                           fmt::format("joint[{}][{}] = {}", static_cast<int64_t>(i) / yCount,
                                       static_cast<int64_t>(i) % yCount, p[i]));
    }
    largest = std::max(largest, p[i]);
  }
  if (cells == 0) {
    Store<double>(output, 0, dtype, 0.0);
    return;
  }
  if (largest == 0.0) {
    ThrowInvalidArgument(op, "joint", "a table with a positive total", "all zeros");
  }

  // Scale by a power of two (exact) so that the total cannot overflow.
  int exponent = 0;
  std::frexp(largest, &exponent);
  for (double& v : p) v = std::ldexp(v, -exponent);
  std::vector<double> px(static_cast<size_t>(xCount), 0.0);
  std::vector<double> py(static_cast<size_t>(yCount), 0.0);
  double n = 0.0;
  for (int64_t x = 0; x < xCount; ++x) {
    for (int64_t y = 0; y < yCount; ++y) {
      const double v = p[static_cast<size_t>(x * yCount + y)];
      px[static_cast<size_t>(x)] += v;
      py[static_cast<size_t>(y)] += v;
      n += v;
    }
  }
  const double log_n = std::log(n);
  double info = 0.0;
  for (int64_t x = 0; x < xCount; ++x) {
    for (int64_t y = 0; y < yCount; ++y) {
      const double v = p[static_cast<size_t>(x * yCount + y)];
      if (v == 0.0) continue;
      info += (v / n) * (std::log(v) + log_n - std::log(px[static_cast<size_t>(x)]) -
                         std::log(py[static_cast<size_t>(y)]));
    }
  }
  Store<double>(output, 0, dtype, std::max(info, 0.0));
}

// Labels every node of a directed graph relative to the internal set I (adjacency[u][v] != 0 is
// an edge u -> v; self-loops are ignored):
//   0 internal  v in I
//   2 active    v not in I and a child of some internal node
//   1 sensory   the rest of Pearl's Markov blanket of I: parents of I, and other parents of the
//               children of I (co-parents)
//   3 external  everything else
// The blanket (labels 1 and 2) is Pearl's (1988) Markov blanket of the set I.
void MarkovBlanketPartition(BP_PARAMS_MarkovBlanketPartition) {
  constexpr std::string_view op = "Hawkes.MarkovBlanketPartition";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "nodeCount", nodeCount);
  CheckNonNegative(op, "internalCount", internalCount);
  const int64_t cells = CheckedProduct(op, "nodeCount", nodeCount, nodeCount);
  CheckPointer(op, "adjacency", adjacency, cells);
  CheckPointer(op, "internal", internal, internalCount);
  CheckPointer(op, "output", output, nodeCount);

  const size_t n = static_cast<size_t>(nodeCount);
  std::vector<bool> is_internal(n, false);
  std::vector<int64_t> first_seen(n, -1);
  for (int64_t k = 0; k < internalCount; ++k) {
    const int32_t id = internal[k];
    if (id < 0 || id >= nodeCount) {
      ThrowInvalidArgument(op, "internal", fmt::format("node ids in [0, {})", nodeCount),
                           fmt::format("internal[{}] = {}", k, id));
    }
    const size_t v = static_cast<size_t>(id);
    if (is_internal[v]) {
      ThrowInvalidArgument(
          op, "internal", "distinct node ids",
          fmt::format("internal[{}] = {} repeats internal[{}]", k, id, first_seen[v]));
    }
    is_internal[v] = true;
    first_seen[v] = k;
  }
  const std::vector<double> adj = Widen<double>(adjacency, cells, dtype);
  for (size_t i = 0; i < adj.size(); ++i) {
    if (!std::isfinite(adj[i])) {
      ThrowInvalidArgument(op, "adjacency", "finite",
                           fmt::format("adjacency[{}][{}] = {}", i / n, i % n, adj[i]));
    }
  }
  const auto edge = [&](size_t u, size_t v) { return u != v && adj[u * n + v] != 0.0; };

  std::vector<bool> child(n, false);   // v not in I, u -> v for some u in I
  std::vector<bool> parent(n, false);  // v not in I, v -> u for some u in I
  for (size_t v = 0; v < n; ++v) {
    if (is_internal[v]) continue;
    for (size_t u = 0; u < n; ++u) {
      if (!is_internal[u]) continue;
      if (edge(u, v)) child[v] = true;
      if (edge(v, u)) parent[v] = true;
    }
  }
  std::vector<bool> coparent(n, false);  // v not in I, v -> c for some child c of I
  for (size_t v = 0; v < n; ++v) {
    if (is_internal[v]) continue;
    for (size_t c = 0; c < n; ++c) {
      if (child[c] && edge(v, c)) coparent[v] = true;
    }
  }
  for (size_t v = 0; v < n; ++v) {
    int32_t label = 3;
    if (is_internal[v]) {
      label = 0;
    } else if (child[v]) {
      label = 2;
    } else if (parent[v] || coparent[v]) {
      label = 1;
    }
    output[v] = label;
  }
}

}  // namespace hawkes

void RegisterHawkes(KernelTable& table) {
  table.Hawkes_HawkesIntensity = &hawkes::HawkesIntensity;
  table.Hawkes_HawkesKernelMatrix = &hawkes::HawkesKernelMatrix;
  table.Hawkes_HawkesLogLikelihood = &hawkes::HawkesLogLikelihood;
  table.Hawkes_MarkovMutualInformation = &hawkes::MarkovMutualInformation;
  table.Hawkes_MarkovBlanketPartition = &hawkes::MarkovBlanketPartition;
}

}  // namespace backplane::cpu::ref
