// Scalar reference kernels for the Sampling surface: one row of `vocabSize` logits in, one int32
// token id out.
//
// TopKSample / TopPSample (Temperature T > 0):
//   p_i = softmax(logits / T)_i in f64 (max subtracted first; if some logits are +Inf, the +Inf
//         entries share the mass equally, the limit of the softmax);
//   order = indices stably sorted by p descending (equal p keep ascending index);
//   kept  = the first K of `order` (TopK) or the shortest prefix whose cumulative p >= TopP (TopP);
//   u = PhiloxUniformDouble(Seed, 0, 0); target = u * (sum of kept p, summed in `order`);
//   result = the first kept index whose running sum (same order) is > target, else the last kept.
// T == 0 means greedy. All validation happens before any work.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backplane/random.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace sampling {

namespace {

constexpr int64_t kMaxVocab = std::numeric_limits<int32_t>::max();

// Checks dtype, vocabSize and pointer, and widens the row to f64 (exact for every float format).
// A NaN logit throws: no token can be chosen consistently from it.
std::vector<double> LoadLogits(std::string_view op, const void* logits, int64_t vocabSize,
                               DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckPositive(op, "vocabSize", vocabSize);
  if (vocabSize > kMaxVocab) {
    ThrowInvalidArgument(op, "vocabSize", fmt::format("<= {} (token ids are int32)", kMaxVocab),
                         std::to_string(vocabSize));
  }
  CheckPointer(op, "logits", logits, vocabSize);
  std::vector<double> x = Widen<double>(logits, vocabSize, dtype);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      ThrowInvalidArgument(op, "logits", "free of NaN", fmt::format("NaN at index {}", i));
    }
  }
  return x;
}

// Index of the first maximum (the row has no NaN).
int32_t ArgMax(const std::vector<double>& x) {
  size_t best = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

void CheckTemperature(std::string_view op, float t) {
  if (!(std::isfinite(t) && t >= 0.0f)) {
    ThrowInvalidArgument(op, "config.Temperature", "finite and >= 0 (0 means greedy)",
                         fmt::format("{}", t));
  }
}

// softmax(x / T) in f64, T > 0. Throws when every logit is -Inf (no distribution exists).
std::vector<double> Softmax(std::string_view op, const std::vector<double>& x, double t) {
  const double mx = *std::max_element(x.begin(), x.end());
  if (mx == -std::numeric_limits<double>::infinity()) {
    ThrowInvalidArgument(op, "logits", "not all -Inf when Temperature > 0", "all -Inf");
  }
  std::vector<double> p(x.size());
  if (std::isinf(mx)) {  // +Inf present: uniform over the +Inf entries
    for (size_t i = 0; i < x.size(); ++i) p[i] = x[i] == mx ? 1.0 : 0.0;
  } else {
    for (size_t i = 0; i < x.size(); ++i) p[i] = std::exp((x[i] - mx) / t);
  }
  double sum = 0.0;
  for (double v : p) sum += v;
  for (double& v : p) v /= sum;
  return p;
}

std::vector<size_t> SortedByProbability(const std::vector<double>& p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  return order;
}

// Inverse-CDF draw over order[0, kept).
int32_t Draw(const std::vector<double>& p, const std::vector<size_t>& order, size_t kept,
             uint64_t seed) {
  double total = 0.0;
  for (size_t r = 0; r < kept; ++r) total += p[order[r]];
  const double target = PhiloxUniformDouble(seed, 0, 0) * total;
  double cumulative = 0.0;
  for (size_t r = 0; r < kept; ++r) {
    cumulative += p[order[r]];
    if (cumulative > target) return static_cast<int32_t>(order[r]);
  }
  return static_cast<int32_t>(order[kept - 1]);
}

}  // namespace

int32_t GreedySample(const void* logits, int64_t vocabSize, DType dtype) {
  return ArgMax(LoadLogits("Sampling.GreedySample", logits, vocabSize, dtype));
}

int32_t TopKSample(const SamplingConfig& config, const void* logits, int64_t vocabSize,
                   DType dtype) {
  constexpr std::string_view kOp = "Sampling.TopKSample";
  const std::vector<double> x = LoadLogits(kOp, logits, vocabSize, dtype);
  CheckTemperature(kOp, config.Temperature);
  if (config.TopK < 0) {
    ThrowInvalidArgument(kOp, "config.TopK", ">= 0 (0 means the whole vocabulary)",
                         std::to_string(config.TopK));
  }
  if (config.Temperature == 0.0f) return ArgMax(x);
  const std::vector<double> p = Softmax(kOp, x, static_cast<double>(config.Temperature));
  const std::vector<size_t> order = SortedByProbability(p);
  const size_t k = config.TopK == 0 || config.TopK > vocabSize ? static_cast<size_t>(vocabSize)
                                                               : static_cast<size_t>(config.TopK);
  return Draw(p, order, k, config.Seed);
}

int32_t TopPSample(const SamplingConfig& config, const void* logits, int64_t vocabSize,
                   DType dtype) {
  constexpr std::string_view kOp = "Sampling.TopPSample";
  const std::vector<double> x = LoadLogits(kOp, logits, vocabSize, dtype);
  CheckTemperature(kOp, config.Temperature);
  if (!(config.TopP > 0.0f && config.TopP <= 1.0f)) {
    ThrowInvalidArgument(kOp, "config.TopP", "in (0, 1]", fmt::format("{}", config.TopP));
  }
  if (config.Temperature == 0.0f) return ArgMax(x);
  const std::vector<double> p = Softmax(kOp, x, static_cast<double>(config.Temperature));
  const std::vector<size_t> order = SortedByProbability(p);
  const double top_p = static_cast<double>(config.TopP);
  size_t kept = order.size();  // if rounding keeps the total below TopP: everything
  double cumulative = 0.0;
  for (size_t r = 0; r < order.size(); ++r) {
    cumulative += p[order[r]];
    if (cumulative >= top_p) {
      kept = r + 1;
      break;
    }
  }
  return Draw(p, order, kept, config.Seed);
}

}  // namespace sampling

void RegisterSampling(KernelTable& table) {
  table.Sampling_GreedySample = &sampling::GreedySample;
  table.Sampling_TopKSample = &sampling::TopKSample;
  table.Sampling_TopPSample = &sampling::TopPSample;
}

}  // namespace backplane::cpu::ref
