// Runners for the reduction families: Reduce (Reduction.*), Dot, LayerNorm and RMSNorm.
//
// Scalar results of f32/f16/bf16 inputs are f32 values accumulated in f64, so they are compared
// with the f32 bound whatever the storage format; ReduceMin/ReduceMax return an input element
// and must match bit for bit (the sign of a zero included). Errors must be identical: a case where
// the reference throws passes only if the fast kernel throws the same message.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using ReduceFn = BP_RET_Reduce (*)(BP_PARAMS_Reduce);
using DotFn = BP_RET_Dot (*)(BP_PARAMS_Dot);
using LayerNormFn = BP_RET_LayerNorm (*)(BP_PARAMS_LayerNorm);
using RMSNormFn = BP_RET_RMSNorm (*)(BP_PARAMS_RMSNorm);
using RMSNormEpsFn = BP_RET_RMSNormEps (*)(BP_PARAMS_RMSNormEps);
using LayerNormEpsFn = BP_RET_LayerNormEps (*)(BP_PARAMS_LayerNormEps);

void CompareExact(double got, double want, const std::string& where, Measure& m) {
  if (std::isnan(got) && std::isnan(want)) return;
  uint64_t g = 0, w = 0;
  std::memcpy(&g, &got, 8);
  std::memcpy(&w, &want, 8);
  if (g == w) return;
  const double err = std::fabs(got - want);
  m.max_error = std::max(m.max_error, std::isnan(err) || err == 0.0 ? INFINITY : err);
  Fail(m, fmt::format("{}: got {}, want {} (exactly)", where, got, want));
}

// ---- Reduce ------------------------------------------------------------------------------------

// The input sets of one size: random with specials (+-0, +-Inf, NaN, +-60, 1e-30 mixed in),
// random without them, values near 1 (Prod stays in range), and non-negative values whose
// extreme is a zero of either sign (the first one counts).
std::vector<std::pair<std::string, std::vector<uint8_t>>> ReduceInputs(const RunContext& c, DType dtype, int64_t n,
                                                                      uint64_t seed) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> sets;
  sets.emplace_back("specials", Inputs(c, dtype, n, seed));
  sets.emplace_back("plain", Inputs(c, dtype, n, seed + 1, 2.0, false));
  if (n == kLarge && Quick(c)) return sets;
  auto near_one = Inputs(c, dtype, n, seed + 2, 0.01, false);
  auto zeros = Inputs(c, dtype, n, seed + 3, 1.0, false);
  auto zeros_neg = zeros;
  for (int64_t i = 0; i < n; ++i) {
    const double u = LoadAsDouble(near_one, dtype, i);
    StoreAsDouble(near_one, dtype, i, (i % 3 == 1 ? -1.0 : 1.0) + u);
    // Zeros of alternating sign at pseudo-random places, the rest strictly positive.
    const double z = std::fabs(LoadAsDouble(zeros, dtype, i)) + 0.25;
    const bool zero = (i * 7 + static_cast<int64_t>(seed % 13)) % 11 == 5;
    const double v = zero ? ((i / 11) % 2 == 0 ? -0.0 : 0.0) : z;
    StoreAsDouble(zeros, dtype, i, v);
    StoreAsDouble(zeros_neg, dtype, i, -v);
  }
  // Prod: runs of huge and of tiny values, from lengths where the index-order product overflows
  // though lane-wise partial products would not (a Prod that reorders without checking gives a
  // finite result where the reference gives Inf).
  const int exponent = dtype == DType::Float16 ? 15 : 120;
  const int64_t run = 1100 / exponent + 2;
  if (c.method == "Reduction.Prod" && n >= run) {
    auto extremes = near_one;
    for (int64_t i = 0; i < n; ++i) {
      const double big = std::ldexp(1.0 + 0.001 * static_cast<double>(i % 7), exponent);
      StoreAsDouble(extremes, dtype, i, (i / run) % 2 == 0 ? big : 1.0 / big);
    }
    sets.emplace_back("extremes", std::move(extremes));
  }
  sets.emplace_back("near_one", std::move(near_one));
  sets.emplace_back("zeros", std::move(zeros));
  sets.emplace_back("neg_zeros", std::move(zeros_neg));
  return sets;
}

Measure RunReduce(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const bool exact = c.method == "Reduction.ReduceMin" || c.method == "Reduction.ReduceMax";
  const Tolerance tol = ScalarTolerance(c.dtype);
  for (int64_t n : WithLarge(c.sizes)) {
    for (const auto& set : ReduceInputs(c, c.dtype, n, c.seed + static_cast<uint64_t>(n))) {
      const std::string& name = set.first;
      const std::vector<uint8_t>& x = set.second;
      const std::string where = fmt::format("n={} {}", n, name);
      double want = 0.0, got = 0.0;
      const std::string want_error = ErrorOf([&] { want = Unerase<ReduceFn>(ref)(x.data(), n, c.dtype); });
      const std::string got_error = ErrorOf([&] { got = Unerase<ReduceFn>(fast)(x.data(), n, c.dtype); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      if (exact) {
        CompareExact(got, want, where, m);
      } else {
        CompareScalar(got, want, tol, where, m);
      }
    }
  }
  // Invalid arguments reach the reference's errors.
  for (const int64_t n : {int64_t{-1}, int64_t{5}}) {
    const std::string where = fmt::format("invalid n={}", n);
    const std::string want = ErrorOf([&] { Unerase<ReduceFn>(ref)(nullptr, n, c.dtype); });
    const std::string got = ErrorOf([&] { Unerase<ReduceFn>(fast)(nullptr, n, c.dtype); });
    SameErrors(got, want, where, m);
  }
  return m;
}

// ---- Dot ---------------------------------------------------------------------------------------

Measure RunDot(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = ScalarTolerance(c.dtype);
  for (int64_t n : WithLarge(c.sizes)) {
    for (const bool specials : {true, false}) {
      if (n == kLarge && !specials && Quick(c)) continue;
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) + (specials ? 0 : 101);
      const auto& a = Inputs(c, c.dtype, n, seed, 2.0, specials);
      const auto& b = Inputs(c, c.dtype, n, seed + 7919, 2.0, specials);
      const std::string where = fmt::format("n={}{}", n, specials ? " specials" : "");
      double want = 0.0, got = 0.0;
      const std::string want_error = ErrorOf([&] { want = Unerase<DotFn>(ref)(a.data(), b.data(), n, c.dtype); });
      const std::string got_error = ErrorOf([&] { got = Unerase<DotFn>(fast)(a.data(), b.data(), n, c.dtype); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      CompareScalar(got, want, tol, where, m);
    }
  }
  if (c.dtype == DType::Int8) {  // extreme products: -128 * -128 everywhere
    const int64_t n = !Quick(c) ? kLarge : 70001;
    const std::vector<int8_t> a(static_cast<size_t>(n), -128);
    const double want = Unerase<DotFn>(ref)(a.data(), a.data(), n, c.dtype);
    const double got = Unerase<DotFn>(fast)(a.data(), a.data(), n, c.dtype);
    CompareScalar(got, want, tol, "int8 -128 * -128", m);
  }
  for (const int64_t n : {int64_t{-1}, int64_t{5}}) {
    const std::string where = fmt::format("invalid n={}", n);
    const std::string want = ErrorOf([&] { Unerase<DotFn>(ref)(nullptr, nullptr, n, c.dtype); });
    const std::string got = ErrorOf([&] { Unerase<DotFn>(fast)(nullptr, nullptr, n, c.dtype); });
    SameErrors(got, want, where, m);
  }
  return m;
}

// ---- LayerNorm, RMSNorm ------------------------------------------------------------------------

// [rows, lastDim] shapes from the length list: single rows of every length, a few rows of the
// odd lengths, and one shape over 64K elements (parallel rows).
std::vector<std::pair<int64_t, int64_t>> RowShapes(const std::vector<int64_t>& sizes) {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t n : sizes) {
    shapes.emplace_back(1, n);
    if (n > 0 && n < 2000) shapes.emplace_back(3, n);
  }
  shapes.emplace_back(0, 7);
  shapes.emplace_back(70, 1025);
  return shapes;
}

enum class NormKind { LayerNorm, RMSNorm, RMSNormEps, LayerNormEps };

// The eps variants run with eps 1e-5 except where a case picks another.
template <NormKind kKind>
Measure RunNorm(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  constexpr bool kLayerNorm = kKind == NormKind::LayerNorm || kKind == NormKind::LayerNormEps;
  constexpr bool kEps = kKind == NormKind::RMSNormEps || kKind == NormKind::LayerNormEps;
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  double eps = 1e-5;
  auto call = [&](ErasedKernel k, const void* in, const void* scale, const void* bias, void* out, int64_t rows,
                  int64_t dim) {
    if constexpr (kKind == NormKind::LayerNorm) {
      Unerase<LayerNormFn>(k)(in, scale, bias, out, rows, dim, c.dtype);
    } else if constexpr (kKind == NormKind::LayerNormEps) {
      Unerase<LayerNormEpsFn>(k)(in, scale, bias, out, rows, dim, eps, c.dtype);
    } else if constexpr (kKind == NormKind::RMSNorm) {
      Unerase<RMSNormFn>(k)(in, scale, out, rows, dim, c.dtype);
    } else {
      Unerase<RMSNormEpsFn>(k)(in, scale, out, rows, dim, eps, c.dtype);
    }
  };
  if constexpr (kEps) {
    // eps 0, a large eps and invalid ones (same errors from both kernels).
    const auto& x = Inputs(c, c.dtype, 3 * 65, c.seed + 11, 2.0, false);
    const auto& scale = Inputs(c, c.dtype, 65, c.seed + 12, 1.5, false);
    for (const double e : {0.0, 0.25, 1e-12, -1.0, std::nan(""), HUGE_VAL}) {
      eps = e;
      const std::string where = fmt::format("[3, 65] eps={}", e);
      const size_t bytes = DTypeStorageBytes(c.dtype, 3 * 65) + 8;
      std::vector<uint8_t> want(bytes, kGuard), got(bytes, kGuard);
      const std::string want_error = ErrorOf([&] { call(ref, x.data(), scale.data(), nullptr, want.data(), 3, 65); });
      const std::string got_error = ErrorOf([&] { call(fast, x.data(), scale.data(), nullptr, got.data(), 3, 65); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      CompareElements(got, want, c.dtype, 3 * 65, tol, where + " y", m);
      CheckGuard(got, DTypeStorageBytes(c.dtype, 3 * 65), where, m);
    }
    eps = 1e-5;
  }
  for (const auto& shape : RowShapes(c.sizes)) {
    const int64_t rows = shape.first, dim = shape.second;
    const int64_t count = rows * dim;
    const uint64_t seed = c.seed + static_cast<uint64_t>(count * 31 + dim);
    // Rows with specials, plain rows, and rows offset far from zero (mean >> deviation).
    const auto& x = Inputs(c, c.dtype, count, seed);
    const auto& plain = Inputs(c, c.dtype, count, seed + 1, 2.0, false);
    const std::vector<uint8_t> offset = [&] {
      auto o = Inputs(c, c.dtype, count, seed + 2, 1.0, false);
      for (int64_t i = 0; i < count; ++i) StoreAsDouble(o, c.dtype, i, 40.0 + LoadAsDouble(o, c.dtype, i));
      return o;
    }();
    const auto& scale = Inputs(c, c.dtype, dim, seed + 3, 1.5, false);
    const auto& bias = Inputs(c, c.dtype, dim, seed + 4, 1.0, false);
    const size_t bytes = DTypeStorageBytes(c.dtype, count) + 8;
    const bool large = count > 20000;  // the parallel shape: fewer variants
    int variant = 0;
    for (const auto* in : {&x, &plain, &offset}) {
      for (const bool with_scale : {true, false}) {
        for (const bool with_bias : {true, false}) {
          if (!kLayerNorm && with_bias) continue;
          if (large && (in == &plain || with_scale != with_bias)) continue;
          if (large && Quick(c) && (in != &x || !with_scale)) continue;
          const void* s = with_scale ? scale.data() : nullptr;
          const void* b = with_bias ? bias.data() : nullptr;
          const std::string where = fmt::format("[{}, {}] input {} scale={} bias={}", rows, dim, variant, with_scale,
                                                with_bias);
          std::vector<uint8_t> want(bytes, kGuard), got(bytes, kGuard);
          const std::string want_error = ErrorOf([&] { call(ref, in->data(), s, b, want.data(), rows, dim); });
          const std::string got_error = ErrorOf([&] { call(fast, in->data(), s, b, got.data(), rows, dim); });
          if (SameErrors(got_error, want_error, where, m)) continue;
          CompareElements(got, want, c.dtype, count, tol, where + " y", m);
          CheckGuard(got, DTypeStorageBytes(c.dtype, count), where, m);
          // In place (out == in) gives the same result.
          std::vector<uint8_t> inplace = *in;
          const std::string inplace_error =
              ErrorOf([&] { call(fast, inplace.data(), s, b, inplace.data(), rows, dim); });
          if (SameErrors(inplace_error, want_error, where + " in place", m)) continue;
          CompareElements(inplace, want, c.dtype, count, tol, where + " in place y", m);
        }
      }
      ++variant;
    }
  }
  // An output over 8 MiB (f32/f64), written with non-temporal stores from unaligned rows (full
  // matrix only).
  if ((c.dtype == DType::Float32 || c.dtype == DType::Float64) && !Quick(c)) {
    const int64_t rows = 1031, dim = c.dtype == DType::Float32 ? 2053 : 1031, count = rows * dim;
    const auto& x = Inputs(c, c.dtype, count, c.seed + 9, 2.0, false);
    const auto& scale = Inputs(c, c.dtype, dim, c.seed + 10, 1.5, false);
    const auto& bias = Inputs(c, c.dtype, dim, c.seed + 11, 1.0, false);
    const size_t bytes = DTypeStorageBytes(c.dtype, count);
    std::vector<uint8_t> want(bytes + 8, kGuard), got(bytes + 8, kGuard);
    call(ref, x.data(), scale.data(), bias.data(), want.data(), rows, dim);
    call(fast, x.data(), scale.data(), bias.data(), got.data() + 4, rows, dim);  // misaligned output
    std::memmove(got.data(), got.data() + 4, bytes);
    CompareElements(got, want, c.dtype, count, tol, fmt::format("[{}, {}] streamed y", rows, dim), m);
  }
  // Scales near the top of the dtype's range: some outputs overflow to +-Inf (as in the reference),
  // never saturate at the largest finite value.
  for (const int64_t dim : {int64_t{17}, int64_t{1000}}) {
    const int64_t rows = 3, count = rows * dim;
    const double big = c.dtype == DType::Float64 ? 1e300 : c.dtype == DType::Float16 ? 3e4 : 1e38;
    const auto& x = Inputs(c, c.dtype, count, c.seed + 12, 2.0, false);
    std::vector<uint8_t> scale = Inputs(c, c.dtype, dim, c.seed + 13, 1.5, false);
    for (int64_t i = 0; i < dim; ++i) StoreAsDouble(scale, c.dtype, i, big * LoadAsDouble(scale, c.dtype, i));
    const auto& bias = Inputs(c, c.dtype, dim, c.seed + 14, 1.0, false);
    const size_t bytes = DTypeStorageBytes(c.dtype, count) + 8;
    std::vector<uint8_t> want(bytes, kGuard), got(bytes, kGuard);
    const std::string where = fmt::format("[{}, {}] scale near the dtype's maximum", rows, dim);
    const std::string want_error = ErrorOf([&] { call(ref, x.data(), scale.data(), bias.data(), want.data(), rows, dim); });
    const std::string got_error = ErrorOf([&] { call(fast, x.data(), scale.data(), bias.data(), got.data(), rows, dim); });
    if (!SameErrors(got_error, want_error, where, m)) CompareElements(got, want, c.dtype, count, tol, where + " y", m);
  }
  // Invalid arguments: errors as the reference, nothing written.
  for (const auto& shape : {std::pair<int64_t, int64_t>{-1, 4}, {2, -3}, {int64_t{1} << 40, int64_t{1} << 40}}) {
    const int64_t rows = shape.first, dim = shape.second;
    const std::string where = fmt::format("invalid [{}, {}]", rows, dim);
    const std::string want = ErrorOf([&] { call(ref, nullptr, nullptr, nullptr, nullptr, rows, dim); });
    const std::string got = ErrorOf([&] { call(fast, nullptr, nullptr, nullptr, nullptr, rows, dim); });
    SameErrors(got, want, where, m);
  }
  {
    std::vector<uint8_t> in = RandomStorage(c.dtype, 6, c.seed);
    const std::string want = ErrorOf([&] { call(ref, in.data(), nullptr, nullptr, nullptr, 2, 3); });
    const std::string got = ErrorOf([&] { call(fast, in.data(), nullptr, nullptr, nullptr, 2, 3); });
    SameErrors(got, want, "null out", m);
  }
  return m;
}

}  // namespace

void RegisterReductionRunners(RunnerRegistry& r) {
  r["Reduce"] = RunReduce;
  r["Dot"] = RunDot;
  r["LayerNorm"] = RunNorm<NormKind::LayerNorm>;
  r["RMSNorm"] = RunNorm<NormKind::RMSNorm>;
  r["RMSNormEps"] = RunNorm<NormKind::RMSNormEps>;
  r["LayerNormEps"] = RunNorm<NormKind::LayerNormEps>;
}

}  // namespace backplane::conformance
