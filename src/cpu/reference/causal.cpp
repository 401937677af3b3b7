// Scalar reference kernels for the Causal surface: Cholesky, Pearl's back-door and front-door
// adjustment, graph surgery for do(), per-unit treatment effects, linear-SCM counterfactuals, the
// Wald / 2SLS instrumental-variable estimate, the Bayesian-network product and Markov-blanket
// information flows. Semantics and departures from the seed reference: docs/semantics/causal.md.
//
// Inputs are widened to float64, every sum and product is formed in float64 and each result is
// rounded once to the output format. All validation happens before the first store, and each result
// is built in a temporary first, so every method is safe in place.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace causal {
namespace {

using Vec = std::vector<double>;

void StoreAll(const Vec& values, void* data, DType dtype) {
  for (size_t i = 0; i < values.size(); ++i) {
    StoreResult(data, static_cast<int64_t>(i), dtype, values[i]);
  }
}

// a * b (* c), throwing when the element count would not fit in memory.
int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b,
                       int64_t c = 1) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 8;
  int64_t product = 1;
  for (int64_t f : {a, b, c}) {
    if (f != 0 && product > kMax / f) {
      ThrowInvalidArgument(op, arg, "an element count that fits in memory",
                           "a product that overflows");
    }
    product *= f;
  }
  return product;
}

// How far a row of probabilities may sum from 1: a few units of rounding of the storage format
// (rounding every entry of an exact distribution moves the sum by at most half an ulp of 1).
double SumTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-9;
    case DType::Float32:
      return 1e-6;
    case DType::Float16:
      return 1e-3;
    default:
      return 1e-2;  // bf16
  }
}

// Relative asymmetry |a_ij - a_ji| / max(|a_ij|, |a_ji|, sqrt(|a_ii a_jj|)) accepted by Cholesky:
// rounding-level differences from assembling the two triangles in different orders.
double SymmetryTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-9;
    case DType::Float32:
      return 1e-4;
    case DType::Float16:
      return 1e-2;
    default:
      return 6e-2;  // bf16
  }
}

// Checks that values[offset, offset + length) is a probability distribution: every entry
// finite and >= 0, the sum (float64) within SumTolerance of 1. `where` describes the row.
void CheckDistribution(std::string_view op, std::string_view arg, const Vec& values, size_t offset,
                       size_t length, DType dtype, const std::string& where) {
  double sum = 0.0;
  for (size_t k = 0; k < length; ++k) {
    const double p = values[offset + k];
    if (!std::isfinite(p) || !(p >= 0.0)) {
      ThrowInvalidArgument(op, arg, "probabilities (finite and >= 0)",
                           fmt::format("{} at index {}", p, offset + k));
    }
    sum += p;
  }
  const double tol = SumTolerance(dtype);
  if (!(std::fabs(sum - 1.0) <= tol)) {
    ThrowInvalidArgument(op, arg, fmt::format("rows summing to 1 (within {})", tol),
                         fmt::format("{} summing to {}", where, sum));
  }
}

void CheckElementwise(std::string_view op, DType dtype, int64_t count,
                      std::initializer_list<std::pair<std::string_view, const void*>> buffers) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  for (const auto& [name, ptr] : buffers) CheckPointer(op, name, ptr, count);
}

}  // namespace

// A = L L^T, L lower triangular (Cholesky-Banachiewicz, float64), upper triangle of the output 0.
void Cholesky(const void* input, void* output, int64_t matrixOrder, DType dtype) {
  constexpr std::string_view op = "Causal.Cholesky";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "matrixOrder", matrixOrder);
  const int64_t total = CheckedProduct(op, "matrixOrder", matrixOrder, matrixOrder);
  CheckPointer(op, "input", input, total);
  CheckPointer(op, "output", output, total);
  if (total == 0) return;
  const size_t n = static_cast<size_t>(matrixOrder);
  const Vec a = Widen<double>(input, total, dtype);
  auto A = [&](size_t i, size_t j) { return a[i * n + j]; };
  for (size_t i = 0; i < n * n; ++i) {
    if (!std::isfinite(a[i])) {
      ThrowInvalidArgument(op, "input", "finite entries",
                           fmt::format("{} at ({}, {})", a[i], i / n, i % n));
    }
  }
  const double symTol = SymmetryTolerance(dtype);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      const double scale = std::max({std::fabs(A(i, j)), std::fabs(A(j, i)),
                                     std::sqrt(std::fabs(A(i, i)) * std::fabs(A(j, j)))});
      if (!(std::fabs(A(i, j) - A(j, i)) <= symTol * scale)) {
        ThrowInvalidArgument(
            op, "input", fmt::format("symmetric (relative tolerance {})", symTol),
            fmt::format("A[{}][{}] = {} but A[{}][{}] = {}", i, j, A(i, j), j, i, A(j, i)));
      }
    }
  }
  Vec L(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double s = A(i, j);  // the lower triangle is the one factorised
      for (size_t k = 0; k < j; ++k) s -= L[i * n + k] * L[j * n + k];
      if (i == j) {
        if (!(s > 0.0)) {
          ThrowInvalidArgument(op, "input", "positive definite",
                               fmt::format("pivot {} at row {}", s, i));
        }
        L[i * n + i] = std::sqrt(s);
      } else {
        L[i * n + j] = s / L[j * n + j];
      }
    }
  }
  StoreAll(L, output, dtype);
}

// out[x][y] = sum_z P(y | x, z) P(z)   (Pearl 2009, Thm 3.3.2)
void BackdoorAdjustment(const void* conditional, const void* marginalZ, void* output,
                        int64_t xCount, int64_t zCount, int64_t yCount, DType dtype) {
  constexpr std::string_view op = "Causal.BackdoorAdjustment";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "xCount", xCount);
  CheckNonNegative(op, "zCount", zCount);
  CheckNonNegative(op, "yCount", yCount);
  const int64_t condCount = CheckedProduct(op, "conditional", xCount, zCount, yCount);
  const int64_t outCount = CheckedProduct(op, "output", xCount, yCount);
  CheckPointer(op, "conditional", conditional, condCount);
  CheckPointer(op, "marginalZ", marginalZ, zCount);
  CheckPointer(op, "output", output, outCount);
  if (outCount == 0) return;
  if (zCount == 0) {
    ThrowInvalidArgument(op, "zCount", "> 0 when the output is not empty (P(z) needs a state)",
                         "0");
  }
  const size_t X = static_cast<size_t>(xCount), Z = static_cast<size_t>(zCount),
               Y = static_cast<size_t>(yCount);
  const Vec pz = Widen<double>(marginalZ, zCount, dtype);
  const Vec cond = Widen<double>(conditional, condCount, dtype);
  CheckDistribution(op, "marginalZ", pz, 0, Z, dtype, "P(z)");
  for (size_t x = 0; x < X; ++x) {
    for (size_t z = 0; z < Z; ++z) {
      CheckDistribution(op, "conditional", cond, (x * Z + z) * Y, Y, dtype,
                        fmt::format("row (x={}, z={})", x, z));
    }
  }
  Vec out(X * Y, 0.0);
  for (size_t x = 0; x < X; ++x) {
    for (size_t y = 0; y < Y; ++y) {
      double sum = 0.0;
      for (size_t z = 0; z < Z; ++z) sum += cond[(x * Z + z) * Y + y] * pz[z];
      out[x * Y + y] = sum;
    }
  }
  StoreAll(out, output, dtype);
}

// out[x][y] = sum_m P(m | x) sum_x' P(y | x', m) P(x')   (Pearl 2009, Thm 3.3.4)
void FrontdoorAdjustment(const void* mediatorGivenX, const void* outcomeGivenXM,
                         const void* marginalX, void* output, int64_t xCount, int64_t mediatorCount,
                         int64_t yCount, DType dtype) {
  constexpr std::string_view op = "Causal.FrontdoorAdjustment";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "xCount", xCount);
  CheckNonNegative(op, "mediatorCount", mediatorCount);
  CheckNonNegative(op, "yCount", yCount);
  const int64_t mxCount = CheckedProduct(op, "mediatorGivenX", xCount, mediatorCount);
  const int64_t oCount = CheckedProduct(op, "outcomeGivenXM", xCount, mediatorCount, yCount);
  const int64_t outCount = CheckedProduct(op, "output", xCount, yCount);
  CheckPointer(op, "mediatorGivenX", mediatorGivenX, mxCount);
  CheckPointer(op, "outcomeGivenXM", outcomeGivenXM, oCount);
  CheckPointer(op, "marginalX", marginalX, xCount);
  CheckPointer(op, "output", output, outCount);
  if (outCount == 0) return;
  if (mediatorCount == 0) {
    ThrowInvalidArgument(op, "mediatorCount",
                         "> 0 when the output is not empty (P(m|x) needs a state)", "0");
  }
  const size_t X = static_cast<size_t>(xCount), M = static_cast<size_t>(mediatorCount),
               Y = static_cast<size_t>(yCount);
  const Vec pmx = Widen<double>(mediatorGivenX, mxCount, dtype);
  const Vec pyxm = Widen<double>(outcomeGivenXM, oCount, dtype);
  const Vec px = Widen<double>(marginalX, xCount, dtype);
  for (size_t x = 0; x < X; ++x) {
    CheckDistribution(op, "mediatorGivenX", pmx, x * M, M, dtype, fmt::format("row x={}", x));
  }
  for (size_t x = 0; x < X; ++x) {
    for (size_t m = 0; m < M; ++m) {
      CheckDistribution(op, "outcomeGivenXM", pyxm, (x * M + m) * Y, Y, dtype,
                        fmt::format("row (x={}, m={})", x, m));
    }
  }
  CheckDistribution(op, "marginalX", px, 0, X, dtype, "P(x)");
  // inner[m][y] = sum_x' P(y | x', m) P(x')
  Vec inner(M * Y, 0.0);
  for (size_t m = 0; m < M; ++m) {
    for (size_t y = 0; y < Y; ++y) {
      double sum = 0.0;
      for (size_t xp = 0; xp < X; ++xp) sum += pyxm[(xp * M + m) * Y + y] * px[xp];
      inner[m * Y + y] = sum;
    }
  }
  Vec out(X * Y, 0.0);
  for (size_t x = 0; x < X; ++x) {
    for (size_t y = 0; y < Y; ++y) {
      double sum = 0.0;
      for (size_t m = 0; m < M; ++m) sum += pmx[x * M + m] * inner[m * Y + y];
      out[x * Y + y] = sum;
    }
  }
  StoreAll(out, output, dtype);
}

// Mutilated graph: a copy of the adjacency (row = parent, column = child) with column t zeroed for
// every intervened node t. Entries are copied bit for bit.
void DoIntervene(const void* adjacency, const int32_t* intervened, void* output, int64_t nodeCount,
                 int64_t intervenedCount, DType dtype) {
  constexpr std::string_view op = "Causal.DoIntervene";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "nodeCount", nodeCount);
  CheckNonNegative(op, "intervenedCount", intervenedCount);
  const int64_t total = CheckedProduct(op, "nodeCount", nodeCount, nodeCount);
  CheckPointer(op, "adjacency", adjacency, total);
  CheckPointer(op, "intervened", intervened, intervenedCount);
  CheckPointer(op, "output", output, total);
  std::vector<int64_t> firstSeen(static_cast<size_t>(nodeCount), -1);
  for (int64_t k = 0; k < intervenedCount; ++k) {
    const int32_t t = intervened[k];
    if (t < 0 || t >= nodeCount) {
      ThrowInvalidArgument(op, "intervened", fmt::format("node ids in [0, {})", nodeCount),
                           fmt::format("intervened[{}] = {}", k, t));
    }
    int64_t& seen = firstSeen[static_cast<size_t>(t)];
    if (seen >= 0) {
      ThrowInvalidArgument(op, "intervened", "distinct node ids",
                           fmt::format("node {} at intervened[{}] and intervened[{}]", t, seen, k));
    }
    seen = k;
  }
  if (total == 0) return;
  const size_t elem = DTypeStorageBytes(dtype, 1);
  const size_t n = static_cast<size_t>(nodeCount);
  std::memmove(output, adjacency, elem * n * n);  // exact alias (in place) is allowed
  auto* out = static_cast<unsigned char*>(output);
  for (int64_t k = 0; k < intervenedCount; ++k) {
    const size_t t = static_cast<size_t>(intervened[k]);
    for (size_t row = 0; row < n; ++row) std::memset(out + (row * n + t) * elem, 0, elem);
  }
}

// tau_i = treated_i - control_i (left = treated, right = control); the ATE is the caller's mean.
void CATE(const void* left, const void* right, void* output, int64_t count, DType dtype) {
  constexpr std::string_view op = "Causal.CATE";
  CheckElementwise(op, dtype, count, {{"left", left}, {"right", right}, {"output", output}});
  if (count == 0) return;
  const Vec treated = Widen<double>(left, count, dtype);
  const Vec control = Widen<double>(right, count, dtype);
  Vec out(treated.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = treated[i] - control[i];
  StoreAll(out, output, dtype);
}

// y' = y + slope (x' - x): abduction-action-prediction in the linear SCM Y = slope X + U.
void Counterfactual(const void* observedY, const void* observedX, const void* counterfactualX,
                    void* output, int64_t count, float slope, DType dtype) {
  constexpr std::string_view op = "Causal.Counterfactual";
  CheckElementwise(op, dtype, count,
                   {{"observedY", observedY},
                    {"observedX", observedX},
                    {"counterfactualX", counterfactualX},
                    {"output", output}});
  CheckFinite(op, "slope", static_cast<double>(slope));
  if (count == 0) return;
  const Vec y = Widen<double>(observedY, count, dtype);
  const Vec x = Widen<double>(observedX, count, dtype);
  const Vec xp = Widen<double>(counterfactualX, count, dtype);
  const double b = static_cast<double>(slope);
  Vec out(y.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = y[i] + b * (xp[i] - x[i]);
  StoreAll(out, output, dtype);
}

// beta = Cov(Z, Y) / Cov(Z, X), two-pass in float64 (Wald 1940; 2SLS with one instrument).
void IVEstimate(const void* instrument, const void* treatment, const void* outcome, int64_t count,
                void* output, DType dtype) {
  constexpr std::string_view op = "Causal.IVEstimate";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  if (count < 2) ThrowInvalidArgument(op, "count", ">= 2", std::to_string(count));
  CheckPointer(op, "instrument", instrument, count);
  CheckPointer(op, "treatment", treatment, count);
  CheckPointer(op, "outcome", outcome, count);
  CheckPointer(op, "output", output, 1);
  const Vec z = Widen<double>(instrument, count, dtype);
  const Vec x = Widen<double>(treatment, count, dtype);
  const Vec y = Widen<double>(outcome, count, dtype);
  const double n = static_cast<double>(count);
  double zMean = 0.0, xMean = 0.0, yMean = 0.0;
  for (size_t i = 0; i < z.size(); ++i) {
    zMean += z[i];
    xMean += x[i];
    yMean += y[i];
  }
  zMean /= n;
  xMean /= n;
  yMean /= n;
  double szy = 0.0, szx = 0.0, szz = 0.0, sxx = 0.0;
  for (size_t i = 0; i < z.size(); ++i) {
    const double dz = z[i] - zMean, dx = x[i] - xMean, dy = y[i] - yMean;
    szy += dz * dy;
    szx += dz * dx;
    szz += dz * dz;
    sxx += dx * dx;
  }
  // Weak (or constant) instrument: |corr(Z, X)| < 1e-12. Skipped when the sums are not finite
  // (NaN or Inf inputs), which then propagate to the result.
  const double scale = std::sqrt(szz) * std::sqrt(sxx);
  if (std::isfinite(szx) && std::isfinite(scale) && std::fabs(szx) <= 1e-12 * scale) {
    ThrowInvalidArgument(op, "instrument", "correlated with the treatment (|corr(Z, X)| >= 1e-12)",
                         fmt::format("Cov(Z, X) sum {} against scale {}", szx, scale));
  }
  StoreResult(output, 0, dtype, szy / szx);
}

// prod_i c_i: each c_i = P(x_i | pa(x_i)) in [0, 1]; float64 significand with a separate binary
// exponent, so the product only underflows when its true value does.
void DAGMarkovFactorization(const void* conditionals, int64_t conditionalCount, void* output,
                            DType dtype) {
  constexpr std::string_view op = "Causal.DAGMarkovFactorization";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "conditionalCount", conditionalCount);
  CheckPointer(op, "conditionals", conditionals, conditionalCount);
  CheckPointer(op, "output", output, 1);
  const Vec c = Widen<double>(conditionals, conditionalCount, dtype);
  for (size_t i = 0; i < c.size(); ++i) {
    if (!(c[i] >= 0.0 && c[i] <= 1.0)) {
      ThrowInvalidArgument(op, "conditionals", "probabilities in [0, 1]",
                           fmt::format("conditionals[{}] = {}", i, c[i]));
    }
  }
  double mantissa = 1.0;  // in [0.5, 1) after every step
  int64_t exponent = 0;
  for (double p : c) {
    if (p == 0.0) {
      mantissa = 0.0;
      break;
    }
    int pe = 0, e = 0;
    const double pm = std::frexp(p, &pe);  // exact; also normalises subnormal factors
    mantissa = std::frexp(mantissa * pm, &e);
    exponent += pe + e;
  }
  double result = 0.0;
  if (mantissa != 0.0) {
    // ldexp rounds once into the subnormal range; exponents below -2000 underflow to 0 anyway.
    result = std::ldexp(mantissa, static_cast<int>(std::max<int64_t>(exponent, -2000)));
  }
  StoreResult(output, 0, dtype, result);
}

namespace {

// Shared body of the two Markov flows: out[i] = sum_{j != i, label j == 0} MI[i][j] for nodes with
// label `sourceLabel`, 0 for every other node.
void MarkovFlow(std::string_view op, int32_t sourceLabel, const void* mutualInformation,
                const int32_t* partition, void* output, int64_t nodeCount, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "nodeCount", nodeCount);
  const int64_t total = CheckedProduct(op, "nodeCount", nodeCount, nodeCount);
  CheckPointer(op, "mutualInformation", mutualInformation, total);
  CheckPointer(op, "partition", partition, nodeCount);
  CheckPointer(op, "output", output, nodeCount);
  for (int64_t i = 0; i < nodeCount; ++i) {
    if (partition[i] < 0 || partition[i] > 3) {
      ThrowInvalidArgument(op, "partition",
                           "labels 0 (internal), 1 (sensory), 2 (active) or 3 (external)",
                           fmt::format("partition[{}] = {}", i, partition[i]));
    }
  }
  const Vec mi = Widen<double>(mutualInformation, total, dtype);
  for (size_t i = 0; i < mi.size(); ++i) {
    if (!std::isfinite(mi[i]) || !(mi[i] >= 0.0)) {
      ThrowInvalidArgument(op, "mutualInformation", "finite and >= 0",
                           fmt::format("{} at index {}", mi[i], i));
    }
  }
  if (nodeCount == 0) return;
  const size_t n = static_cast<size_t>(nodeCount);
  Vec out(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (partition[i] != sourceLabel) continue;
    double sum = 0.0;
    for (size_t j = 0; j < n; ++j) {
      if (j != i && partition[j] == 0) sum += mi[i * n + j];
    }
    out[i] = sum;
  }
  StoreAll(out, output, dtype);
}

}  // namespace

// Information flowing from internal nodes into each active node (label 2).
void MarkovFlowActive(const void* mutualInformation, const int32_t* partition, void* output,
                      int64_t nodeCount, DType dtype) {
  MarkovFlow("Causal.MarkovFlowActive", 2, mutualInformation, partition, output, nodeCount, dtype);
}

// Information shared by each internal node (label 0) with the other internal nodes (no self term).
void MarkovFlowInternal(const void* mutualInformation, const int32_t* partition, void* output,
                        int64_t nodeCount, DType dtype) {
  MarkovFlow("Causal.MarkovFlowInternal", 0, mutualInformation, partition, output, nodeCount,
             dtype);
}

}  // namespace causal

void RegisterCausal(KernelTable& table) {
  table.Causal_Cholesky = &causal::Cholesky;
  table.Causal_BackdoorAdjustment = &causal::BackdoorAdjustment;
  table.Causal_FrontdoorAdjustment = &causal::FrontdoorAdjustment;
  table.Causal_DoIntervene = &causal::DoIntervene;
  table.Causal_CATE = &causal::CATE;
  table.Causal_Counterfactual = &causal::Counterfactual;
  table.Causal_IVEstimate = &causal::IVEstimate;
  table.Causal_DAGMarkovFactorization = &causal::DAGMarkovFactorization;
  table.Causal_MarkovFlowActive = &causal::MarkovFlowActive;
  table.Causal_MarkovFlowInternal = &causal::MarkovFlowInternal;
}

}  // namespace backplane::cpu::ref
