// Conformance runners for the research families: VSAPermute, Similarity, FreeEnergy,
// ExpectedFreeEnergy, Prediction, PredictiveUpdate, Outer, RowReduce (MathExt.LogSumExp) and RowMap
// (MathExt.SoftmaxRows, LogSoftmaxRows), plus
// extra BinaryOut cases for the research methods (domain-valid inputs, in place, > 64K elements).
//
// Every case runs the reference and the fast kernel on the same inputs; where the reference throws,
// the fast kernel must throw the same message and leave its output untouched.
// Bounds: the tolerance table element by element, except
// - Permute / InversePermute: raw storage, bit for bit.
// - Prediction and UpdateRepresentation are GEMVs. The reference sums in f64; the fast path may sum
//   in f32 (OpenBLAS, our f16/bf16 GEMV) in another order, whose forward error is proportional to
//   sum |w| |x|, not to the (possibly cancelled) result: |fast - ref| <= tol.abs + tol.rel * cond,
//   cond = sum_k |w_k| |x_k| (+ |s_i| for the update), as the Matmul runner does.
// - Scalar results (Similarity, FreeEnergy, ExpectedFreeEnergy) of f32/f16/bf16 inputs are
//   computed in f64 by both kernels: Similarity's double is compared with the f32 bound; the free
//   energies are rounded to the storage and compared with its bound.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using PermuteFn = BP_RET_VSAPermute (*)(BP_PARAMS_VSAPermute);
using SimilarityFn = BP_RET_Similarity (*)(BP_PARAMS_Similarity);
using FreeEnergyFn = BP_RET_FreeEnergy (*)(BP_PARAMS_FreeEnergy);
using ExpectedFreeEnergyFn = BP_RET_ExpectedFreeEnergy (*)(BP_PARAMS_ExpectedFreeEnergy);
using PredictionFn = BP_RET_Prediction (*)(BP_PARAMS_Prediction);
using PredictiveUpdateFn = BP_RET_PredictiveUpdate (*)(BP_PARAMS_PredictiveUpdate);
using OuterFn = BP_RET_Outer (*)(BP_PARAMS_Outer);
using RowReduceFn = BP_RET_RowReduce (*)(BP_PARAMS_RowReduce);
using RowMapFn = BP_RET_RowMap (*)(BP_PARAMS_RowMap);
using BinaryOutFn = BP_RET_BinaryOut (*)(BP_PARAMS_BinaryOut);

// |x| of plain N(0, scale) values, with exact zeros where (i + phase) % zero_every == 0.
std::vector<uint8_t> NonNegative(DType dtype, int64_t n, uint64_t seed, int64_t zero_every = 0,
                                 int64_t phase = 0, double scale = 1.0) {
  auto s = RandomStorage(dtype, n, seed, scale, false);
  for (int64_t i = 0; i < n; ++i) {
    const bool zero = zero_every > 0 && (i + phase) % zero_every == 0;
    StoreAsDouble(s, dtype, i, zero ? 0.0 : std::fabs(LoadAsDouble(s, dtype, i)));
  }
  return s;
}

// ---- VSAPermute: raw rotation, bit for bit -----------------------------------------------------

Measure RunPermute(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const size_t elem = DTypeStorageBytes(c.dtype, 1);
  for (const int64_t n : WithLarge(c.sizes)) {
    const auto x =
        RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));  // NaN, -0 included
    const size_t bytes = static_cast<size_t>(n) * elem;
    const std::vector<int64_t> shifts =
        n == kLarge ? std::vector<int64_t>{1, -70001}
                    : std::vector<int64_t>{0,
                                           1,
                                           -1,
                                           3,
                                           -7,
                                           n,
                                           n + 2,
                                           -(n + 5),
                                           std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::max()};
    for (const int64_t shift : shifts) {
      const VSAConfig cfg{shift};
      const std::string where = fmt::format("n={} shift={}", n, shift);
      std::vector<uint8_t> want(bytes + 8, kGuard), got = want;
      if (!RunBoth([&] { Unerase<PermuteFn>(ref)(cfg, x.data(), want.data(), n, c.dtype); },
                [&] { Unerase<PermuteFn>(fast)(cfg, x.data(), got.data(), n, c.dtype); }, got,
                where, m)) {
        continue;
      }
      if (got != want) {
        m.max_error = INFINITY;
        Fail(m, where + ": output differs from the reference's (raw storage)");
      }
      std::vector<uint8_t> inplace(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(bytes));
      inplace.resize(bytes + 8, kGuard);
      Unerase<PermuteFn>(fast)(cfg, inplace.data(), inplace.data(), n, c.dtype);
      if (inplace != want) {
        m.max_error = INFINITY;
        Fail(m, where + ": in place differs from the reference");
      }
      if (n > 1) {  // output = input shifted by one element (partial overlap)
        std::vector<uint8_t> a(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(bytes));
        a.resize(bytes + elem, kGuard);
        std::vector<uint8_t> b = a;
        Unerase<PermuteFn>(ref)(cfg, a.data(), a.data() + elem, n, c.dtype);
        Unerase<PermuteFn>(fast)(cfg, b.data(), b.data() + elem, n, c.dtype);
        if (a != b) {
          m.max_error = INFINITY;
          Fail(m, where + ": overlapping output differs from the reference");
        }
      }
    }
  }
  const auto x = RandomStorage(c.dtype, 8, c.seed);
  std::vector<uint8_t> out(64, kGuard);
  auto call = [&](int64_t n, const void* in, void* o, DType dt) {
    return [&, n, in, o, dt](bool reference) {
      Unerase<PermuteFn>(reference ? ref : fast)(VSAConfig{3}, in, o, n, dt);
    };
  };
  ExpectSameError("count=-1", call(-1, x.data(), out.data(), c.dtype), m);
  ExpectSameError("null input", call(5, nullptr, out.data(), c.dtype), m);
  ExpectSameError("null output", call(5, x.data(), nullptr, c.dtype), m);
  ExpectSameError("dtype int8", call(5, x.data(), out.data(), DType::Int8), m);
  ExpectSameError("dtype int8, count 0", call(0, x.data(), out.data(), DType::Int8), m);
  return m;
}

// ---- Similarity --------------------------------------------------------------------------------

Measure RunSimilarity(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = ScalarTolerance(c.dtype);
  auto compare = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int64_t n,
                     const std::string& where) {
    double want = 0.0, got = 0.0;
    std::vector<uint8_t> dummy;
    if (RunBoth([&] { want = Unerase<SimilarityFn>(ref)(a.data(), b.data(), n, c.dtype); },
             [&] { got = Unerase<SimilarityFn>(fast)(a.data(), b.data(), n, c.dtype); }, dummy,
             where, m)) {
      CompareScalar(got, want, tol, where, m);
    }
  };
  for (const int64_t n : WithLarge(c.sizes)) {
    const uint64_t seed = c.seed + static_cast<uint64_t>(n);
    for (const bool specials : {true, false}) {
      const auto a = RandomStorage(c.dtype, n, seed, 2.0, specials);
      const auto b = RandomStorage(c.dtype, n, seed + 7919, 2.0, specials);
      compare(a, b, n, fmt::format("n={}{}", n, specials ? " specials" : ""));
    }
    const auto a = RandomStorage(c.dtype, n, seed + 1, 2.0, false);
    compare(a, a, n, fmt::format("n={} self", n));
    compare(a, std::vector<uint8_t>(a.size(), 0), n, fmt::format("n={} zero vector", n));
    if (c.dtype == DType::Float64 && n > 0 &&
        n < kLarge) {  // extreme magnitudes: the reference's prescaling
      for (const double scale : {1e300, 1e-300, 1e140, 1e-160}) {
        auto s = a;
        for (int64_t i = 0; i < n; ++i)
          StoreAsDouble(s, c.dtype, i, LoadAsDouble(a, c.dtype, i) * scale);
        compare(s, a, n, fmt::format("n={} scaled {}", n, scale));
        compare(s, s, n, fmt::format("n={} scaled {} self", n, scale));
      }
    }
  }
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [n_binding, null_binding] : {std::pair<int64_t, bool>{-1, false}, {5, true}}) {
    const auto& n = n_binding;
    const auto& null = null_binding;
    const auto a = RandomStorage(c.dtype, 8, c.seed);
    ExpectSameError(
        fmt::format("invalid n={}{}", n, null ? " null" : ""),
        [&](bool reference) {
          Unerase<SimilarityFn>(reference ? ref : fast)(null ? nullptr : a.data(), a.data(), n,
                                                        c.dtype);
        },
        m);
  }
  ExpectSameError(
      "dtype int8",
      [&](bool reference) {
        Unerase<SimilarityFn>(reference ? ref : fast)(nullptr, nullptr, 0, DType::Int8);
      },
      m);
  return m;
}

// ---- FreeEnergy, ExpectedFreeEnergy ----------------------------------------------------------

// Input sets for the probability vectors: valid ones (with zeros), and one entry made invalid.
struct ProbCase {
  std::string name;
  int poison = -1;      // which input gets a bad entry (-1: none)
  double bad = 0.0;     // the bad value
  int zero_input = -1;  // which input gets zeros where the weight is positive
};

std::vector<ProbCase> ProbCases(int inputs) {
  std::vector<ProbCase> cases = {{"valid", -1, 0.0, -1}};
  for (int k = 1; k < inputs; ++k)
    cases.push_back({fmt::format("zeros in input {}", k), -1, 0.0, k});
  for (int k = 0; k < inputs; ++k) {
    cases.push_back({fmt::format("negative in input {}", k), k, -0.5, -1});
    cases.push_back({fmt::format("NaN in input {}", k), k, NAN, -1});
    cases.push_back({fmt::format("Inf in input {}", k), k, INFINITY, -1});
  }
  return cases;
}

void Poison(std::vector<uint8_t>& s, DType dtype, int64_t n, double v) {
  if (n > 0) StoreAsDouble(s, dtype, n / 2, v);
}

Measure RunFreeEnergy(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  for (const int64_t n : WithLarge(c.sizes)) {
    const uint64_t seed = c.seed + static_cast<uint64_t>(n);
    for (const ProbCase& pc : ProbCases(3)) {
      if (n == kLarge && Quick(c) && pc.poison >= 0) continue;
      // Inputs 0 = likelihood, 1 = posterior (zeros every 7th), 2 = prior.
      std::vector<std::vector<uint8_t>> in = {NonNegative(c.dtype, n, seed, 11, 3),
                                              NonNegative(c.dtype, n, seed + 1, 7),
                                              NonNegative(c.dtype, n, seed + 2, 13, 5)};
      if (pc.zero_input >= 0 && n > 1)
        StoreAsDouble(in[static_cast<size_t>(pc.zero_input)], c.dtype, 1, 0.0);
      if (pc.poison >= 0) Poison(in[static_cast<size_t>(pc.poison)], c.dtype, n, pc.bad);
      const std::string where = fmt::format("n={} {}", n, pc.name);
      std::vector<uint8_t> want(16, kGuard), got = want;
      if (RunBoth(
              [&] {
                Unerase<FreeEnergyFn>(ref)(in[0].data(), in[1].data(), in[2].data(), want.data(), n,
                                           c.dtype);
              },
              [&] {
                Unerase<FreeEnergyFn>(fast)(in[0].data(), in[1].data(), in[2].data(), got.data(), n,
                                            c.dtype);
              },
              got, where, m)) {
        CompareStorage(got, want, c.dtype, 1, tol, where, m);
        CheckGuard(got, DTypeStorageBytes(c.dtype, 1), where, m);
      }
    }
  }
  const auto x = NonNegative(c.dtype, 8, c.seed);
  std::vector<uint8_t> out(16, kGuard);
  auto call = [&](int64_t n, const void* l, void* o, DType dt) {
    return [&, n, l, o, dt](bool reference) {
      Unerase<FreeEnergyFn>(reference ? ref : fast)(l, x.data(), x.data(), o, n, dt);
    };
  };
  ExpectSameError("count=-1", call(-1, x.data(), out.data(), c.dtype), m);
  ExpectSameError("null likelihood", call(5, nullptr, out.data(), c.dtype), m);
  ExpectSameError("null output", call(5, x.data(), nullptr, c.dtype), m);
  ExpectSameError("null output, count 0", call(0, x.data(), nullptr, c.dtype), m);
  ExpectSameError("dtype int8", call(0, x.data(), out.data(), DType::Int8), m);
  return m;
}

Measure RunExpectedFreeEnergy(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (const int64_t n : c.sizes) {
    shapes.emplace_back(n, n);
    shapes.emplace_back(n, 5);
    shapes.emplace_back(0, n);
    shapes.emplace_back(n, 0);
  }
  shapes.emplace_back(kLarge, 1000);
  shapes.emplace_back(17, kLarge);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [obs_binding, states_binding] : shapes) {
    const auto& obs = obs_binding;
    const auto& states = states_binding;
    const uint64_t seed = c.seed + static_cast<uint64_t>(obs * 131 + states);
    for (const ProbCase& pc : ProbCases(3)) {
      if ((obs == kLarge || states == kLarge) && Quick(c) && pc.poison >= 0) continue;
      // Inputs 0 = predicted outcomes (zeros every 5th), 1 = preferences, 2 = predicted states.
      std::vector<int64_t> len = {obs, obs, states};
      std::vector<std::vector<uint8_t>> in = {NonNegative(c.dtype, obs, seed, 5),
                                              NonNegative(c.dtype, obs, seed + 1, 17, 4),
                                              NonNegative(c.dtype, states, seed + 2, 9)};
      const auto k = static_cast<size_t>(pc.zero_input >= 0 ? pc.zero_input
                                         : pc.poison >= 0   ? pc.poison
                                                            : 0);
      if (pc.zero_input >= 0 && len[k] > 1) StoreAsDouble(in[k], c.dtype, 1, 0.0);
      if (pc.poison >= 0) Poison(in[k], c.dtype, len[k], pc.bad);
      const std::string where = fmt::format("[{}, {}] {}", obs, states, pc.name);
      std::vector<uint8_t> want(16, kGuard), got = want;
      if (RunBoth(
              [&] {
                Unerase<ExpectedFreeEnergyFn>(ref)(in[0].data(), in[1].data(), in[2].data(),
                                                   want.data(), obs, states, c.dtype);
              },
              [&] {
                Unerase<ExpectedFreeEnergyFn>(fast)(in[0].data(), in[1].data(), in[2].data(),
                                                    got.data(), obs, states, c.dtype);
              },
              got, where, m)) {
        CompareStorage(got, want, c.dtype, 1, tol, where, m);
        CheckGuard(got, DTypeStorageBytes(c.dtype, 1), where, m);
      }
    }
  }
  const auto x = NonNegative(c.dtype, 8, c.seed);
  std::vector<uint8_t> out(16, kGuard);
  auto call = [&](int64_t obs, int64_t states, const void* qs, void* o, DType dt) {
    return [&, obs, states, qs, o, dt](bool reference) {
      Unerase<ExpectedFreeEnergyFn>(reference ? ref : fast)(x.data(), x.data(), qs, o, obs, states,
                                                            dt);
    };
  };
  ExpectSameError("obsCount=-1", call(-1, 3, x.data(), out.data(), c.dtype), m);
  ExpectSameError("stateCount=-1", call(3, -1, x.data(), out.data(), c.dtype), m);
  ExpectSameError("null predictedState", call(3, 4, nullptr, out.data(), c.dtype), m);
  ExpectSameError("null output", call(3, 4, x.data(), nullptr, c.dtype), m);
  ExpectSameError("dtype int8", call(0, 0, x.data(), out.data(), DType::Int8), m);
  return m;
}

// ---- Prediction, PredictiveUpdate --------------------------------------------------------------

struct Shape {
  int64_t out, in;
};

std::vector<Shape> GemvShapes(const RunContext& c) {
  std::vector<Shape> shapes = {{0, 3},    {3, 0},    {0, 0},    {1, 1},    {2, 3},     {5, 7},
                               {7, 9},    {17, 13},  {31, 33},  {1, 301},  {130, 257}, {257, 130},
                               {4, 1000}, {67, 300}, {600, 13}, {3, 2100}, {513, 65}};
  if (!Quick(c)) {
    shapes.push_back({300, 700});   // threaded row blocks
    shapes.push_back({129, 2500});  // threaded column blocks
  }
  return shapes;
}

Measure RunPrediction(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  uint64_t seed = c.seed;
  for (const Shape& s : GemvShapes(c)) {
    for (const bool specials : {true, false}) {
      const std::string where =
          fmt::format("[{} x {}]{}", s.out, s.in, specials ? " specials" : "");
      const auto w = RandomStorage(c.dtype, s.out * s.in, ++seed, 2.0, specials);
      const auto x = RandomStorage(c.dtype, s.in, ++seed, 2.0, specials);
      const size_t used = DTypeStorageBytes(c.dtype, s.out);
      std::vector<uint8_t> want(used + 16, kGuard), got = want;
      Unerase<PredictionFn>(ref)(w.data(), x.data(), want.data(), s.out, s.in, c.dtype);
      Unerase<PredictionFn>(fast)(w.data(), x.data(), got.data(), s.out, s.in, c.dtype);
      CheckGuard(got, used, where, m);
      const auto wd = Widened(w, c.dtype, s.out * s.in), xd = Widened(x, c.dtype, s.in);
      std::vector<double> cond(static_cast<size_t>(s.out), 0.0);
      for (int64_t o = 0; o < s.out; ++o) {
        for (int64_t i = 0; i < s.in; ++i) {
          cond[static_cast<size_t>(o)] +=
              std::fabs(wd[static_cast<size_t>(o * s.in + i)] * xd[static_cast<size_t>(i)]);
        }
      }
      CompareBounded(got, want, c.dtype, cond, tol, where, m);
    }
  }
  for (const int64_t n : {5, 40}) {  // output aliases the representation (square W)
    const auto w = RandomStorage(c.dtype, n * n, ++seed, 2.0, false);
    auto x = RandomStorage(c.dtype, n, ++seed, 2.0, false);
    std::vector<uint8_t> want(x.size(), kGuard);
    Unerase<PredictionFn>(ref)(w.data(), x.data(), want.data(), n, n, c.dtype);
    const auto wd = Widened(w, c.dtype, n * n), xd = Widened(x, c.dtype, n);
    Unerase<PredictionFn>(fast)(w.data(), x.data(), x.data(), n, n, c.dtype);
    std::vector<double> cond(static_cast<size_t>(n), 0.0);
    for (int64_t o = 0; o < n; ++o)
      for (int64_t i = 0; i < n; ++i)
        cond[static_cast<size_t>(o)] +=
            std::fabs(wd[static_cast<size_t>(o * n + i)] * xd[static_cast<size_t>(i)]);
    CompareBounded(x, want, c.dtype, cond, tol, fmt::format("alias out=representation n={}", n), m);
  }
  const auto a = RandomStorage(c.dtype, 12, 1, 2.0, false);
  std::vector<uint8_t> out(64, kGuard);
  auto call = [&](int64_t rows, int64_t cols, DType dtype, bool null_w) {
    return [&, rows, cols, dtype, null_w](bool reference) {
      Unerase<PredictionFn>(reference ? ref : fast)(null_w ? nullptr : a.data(), a.data(),
                                                    out.data(), rows, cols, dtype);
    };
  };
  ExpectSameError("outDim=-1", call(-1, 3, c.dtype, false), m);
  ExpectSameError("inDim=-1", call(3, -1, c.dtype, false), m);
  ExpectSameError("dtype int8", call(2, 3, DType::Int8, false), m);
  ExpectSameError("null weights", call(2, 3, c.dtype, true), m);
  ExpectSameError("outDim*inDim overflows", call(int64_t{1} << 62, 4, c.dtype, false), m);
  return m;
}

Measure RunPredictiveUpdate(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  const bool weights = c.method == "PredictiveCoding.UpdateWeights";
  uint64_t seed = c.seed;
  auto run = [&](const Shape& s, float lr, bool specials, int alias) {
    const std::string where =
        fmt::format("[{} x {}] lr={}{}{}", s.out, s.in, lr, specials ? " specials" : "",
                    alias == 1   ? " out=input"
                    : alias == 2 ? " out=error"
                                 : "");
    const PredictiveCodingConfig cfg{lr};
    auto w = RandomStorage(c.dtype, s.out * s.in, ++seed, 2.0, specials);
    auto x = RandomStorage(c.dtype, s.in, ++seed, 2.0, specials);
    auto e = RandomStorage(c.dtype, s.out, ++seed, 2.0, specials);
    const int64_t count = weights ? s.out * s.in : s.in;
    const size_t used = DTypeStorageBytes(c.dtype, count);
    std::vector<uint8_t> want(used + 16, kGuard), got = want;
    const auto wd = Widened(w, c.dtype, s.out * s.in), xd = Widened(x, c.dtype, s.in),
               ed = Widened(e, c.dtype, s.out);
    Unerase<PredictiveUpdateFn>(ref)(cfg, w.data(), x.data(), e.data(), want.data(), s.out, s.in,
                                     c.dtype);
    if (alias == 0) {
      Unerase<PredictiveUpdateFn>(fast)(cfg, w.data(), x.data(), e.data(), got.data(), s.out, s.in,
                                        c.dtype);
      CheckGuard(got, used, where, m);
    } else {  // in place: over W (UpdateWeights), s or e (UpdateRepresentation)
      std::vector<uint8_t>& target = weights ? w : alias == 1 ? x : e;
      Unerase<PredictiveUpdateFn>(fast)(cfg, w.data(), x.data(), e.data(), target.data(), s.out,
                                        s.in, c.dtype);
      got = target;
    }
    std::vector<double> cond(static_cast<size_t>(count), 0.0);
    const double rate = std::fabs(static_cast<double>(lr));
    if (weights) {
      for (int64_t o = 0; o < s.out; ++o)
        for (int64_t i = 0; i < s.in; ++i) {
          const auto k = static_cast<size_t>(o * s.in + i);
          cond[k] = std::fabs(wd[k]) +
                    rate * std::fabs(ed[static_cast<size_t>(o)] * xd[static_cast<size_t>(i)]);
        }
    } else {
      for (int64_t i = 0; i < s.in; ++i)
        cond[static_cast<size_t>(i)] = std::fabs(xd[static_cast<size_t>(i)]);
      for (int64_t o = 0; o < s.out; ++o)
        for (int64_t i = 0; i < s.in; ++i)
          cond[static_cast<size_t>(i)] +=
              rate * std::fabs(wd[static_cast<size_t>(o * s.in + i)] * ed[static_cast<size_t>(o)]);
    }
    CompareBounded(got, want, c.dtype, cond, tol, where, m);
  };
  for (const Shape& s : GemvShapes(c)) {
    for (const bool specials : {true, false}) run(s, 0.05f, specials, 0);
    run(s, -0.3f, false, 0);
    run(s, 0.0f, true, 0);
  }
  for (const int64_t n : {5, 40}) {
    run({n, n}, 0.1f, false, 1);
    if (!weights) run({n, n}, 0.1f, false, 2);
  }
  run({7, 9}, 0.1f, false, 1);
  const auto a = RandomStorage(c.dtype, 12, 1, 2.0, false);
  std::vector<uint8_t> out(64, kGuard);
  auto call = [&](int64_t rows, int64_t cols, DType dtype, bool null_w, float lr) {
    return [&, rows, cols, dtype, null_w, lr](bool reference) {
      Unerase<PredictiveUpdateFn>(reference ? ref : fast)(PredictiveCodingConfig{lr},
                                                          null_w ? nullptr : a.data(), a.data(),
                                                          a.data(), out.data(), rows, cols, dtype);
    };
  };
  ExpectSameError("outDim=-1", call(-1, 3, c.dtype, false, 0.1f), m);
  ExpectSameError("inDim=-1", call(3, -1, c.dtype, false, 0.1f), m);
  ExpectSameError("dtype int8", call(2, 3, DType::Int8, false, 0.1f), m);
  ExpectSameError("null weights", call(2, 3, c.dtype, true, 0.1f), m);
  ExpectSameError("lr NaN", call(2, 3, c.dtype, false, NAN), m);
  ExpectSameError("lr Inf", call(2, 3, c.dtype, false, -INFINITY), m);
  ExpectSameError("outDim*inDim overflows", call(int64_t{1} << 62, 4, c.dtype, false, 0.1f), m);
  return m;
}

// ---- Outer -------------------------------------------------------------------------------------

Measure RunOuter(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  std::vector<Shape> shapes = {{0, 5}, {5, 0}, {0, 0}, {300, 301}, {257, 1031}};
  for (const int64_t n : c.sizes) {
    if (n == 0) continue;
    shapes.push_back({1, n});
    shapes.push_back({n, 1});
    if (n < 5000) {
      shapes.push_back({3, n});
      shapes.push_back({n, 7});
    }
  }
  uint64_t seed = c.seed;
  for (const Shape& s : shapes) {
    const int64_t total = s.out * s.in;
    const size_t off = Offset(c.dtype, total), used = DTypeStorageBytes(c.dtype, total);
    const auto l = RandomStorage(c.dtype, s.out, ++seed), r = RandomStorage(c.dtype, s.in, ++seed);
    const std::string where = fmt::format("[{} x {}]", s.out, s.in);
    std::vector<uint8_t> want(used + off + 16, kGuard), got = want;
    Unerase<OuterFn>(ref)(l.data(), r.data(), want.data() + off, s.out, s.in, c.dtype);
    Unerase<OuterFn>(fast)(l.data(), r.data(), got.data() + off, s.out, s.in, c.dtype);
    for (size_t k = 0; k < off; ++k) {
      if (got[k] != kGuard) Fail(m, where + ": wrote before the output");
    }
    got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(off));
    want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(off));
    CheckGuard(got, used, where, m);
    CompareStorage(got, want, c.dtype, total, tol, where, m);
  }
  const auto a = RandomStorage(c.dtype, 12, 1);
  std::vector<uint8_t> out(256, kGuard);
  auto call = [&](int64_t rows, int64_t cols, DType dtype, const void* l, void* o) {
    return [&, rows, cols, dtype, l, o](bool reference) {
      Unerase<OuterFn>(reference ? ref : fast)(l, a.data(), o, rows, cols, dtype);
    };
  };
  ExpectSameError("rows=-1", call(-1, 3, c.dtype, a.data(), out.data()), m);
  ExpectSameError("cols=-1", call(3, -1, c.dtype, a.data(), out.data()), m);
  ExpectSameError("dtype int8", call(2, 3, DType::Int8, a.data(), out.data()), m);
  ExpectSameError("null left", call(2, 3, c.dtype, nullptr, out.data()), m);
  ExpectSameError("null out", call(2, 3, c.dtype, a.data(), nullptr), m);
  ExpectSameError("rows*cols overflows",
                  call(int64_t{1} << 40, int64_t{1} << 40, c.dtype, a.data(), out.data()), m);
  return m;
}

// ---- RowReduce (LogSumExp)
// -----------------------------------------------------------------------

// Rows of special kinds: all -Inf, one +Inf, one NaN, a large offset, wide values, plain.
std::vector<uint8_t> SpecialRows(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  auto x = RandomStorage(dtype, rows * cols, seed, 2.0, false);
  const double offset = dtype == DType::Float16 ? 1000.0 : 1e4;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k = r * cols + j;
      const double v = LoadAsDouble(x, dtype, k);
      switch (r % 6) {
        case 0:
          StoreAsDouble(x, dtype, k, -INFINITY);
          break;
        case 1:
          if (j == cols / 2) StoreAsDouble(x, dtype, k, INFINITY);
          break;
        case 2:
          if (j == cols / 3) StoreAsDouble(x, dtype, k, NAN);
          break;
        case 3:
          StoreAsDouble(x, dtype, k, v + offset);
          break;
        case 4:
          StoreAsDouble(x, dtype, k, v * 20.0 - (j % 5 == 0 ? INFINITY : 0.0));
          break;
        default:
          break;
      }
    }
  }
  return x;
}

// Input set 0 (random with specials), 1 (plain random) or 2 (SpecialRows) for [s.out, s.in].
std::vector<uint8_t> RowInputs(DType dtype, const Shape& s, int set, uint64_t seed) {
  const int64_t total = s.out * s.in;
  return set == 0   ? RandomStorage(dtype, total, seed, 2.0, true)
         : set == 1 ? RandomStorage(dtype, total, seed, 2.0, false)
                    : SpecialRows(dtype, s.out, s.in, seed);
}

std::string RowInputsName(const Shape& s, int set) {
  return fmt::format("[{} x {}] {}", s.out, s.in, set == 0 ? "specials" : set == 1 ? "plain" : "special rows");
}

// The argument errors of a [rows, cols] method: call(rows, cols, dtype, src, dst) makes the case.
template <class MakeCase>
void ExpectRowArgumentErrors(const RunContext& c, const MakeCase& call, Measure& m) {
  const auto a = RandomStorage(c.dtype, 12, 1);
  std::vector<uint8_t> out(64, kGuard);
  ExpectSameError("rows=-1", call(-1, 3, c.dtype, a.data(), out.data()), m);
  ExpectSameError("cols=-1", call(3, -1, c.dtype, a.data(), out.data()), m);
  ExpectSameError("dtype int8", call(2, 3, DType::Int8, a.data(), out.data()), m);
  ExpectSameError("null src", call(2, 3, c.dtype, nullptr, out.data()), m);
  ExpectSameError("null dst", call(2, 3, c.dtype, a.data(), nullptr), m);
  ExpectSameError("rows*cols overflows",
                  call(int64_t{1} << 40, int64_t{1} << 40, c.dtype, a.data(), out.data()), m);
}

Measure RunRowReduce(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  std::vector<Shape> shapes = {{0, 7}, {5, 0}, {12, 3}, {70, 1025}, {1, kLarge}};
  for (const int64_t n : c.sizes) {
    shapes.push_back({1, n});
    if (n > 0 && n < 2000) shapes.push_back({6, n});
  }
  uint64_t seed = c.seed;
  for (const Shape& s : shapes) {
    for (int set = 0; set < 3; ++set) {
      const auto x = RowInputs(c.dtype, s, set, ++seed);
      const std::string where = RowInputsName(s, set);
      const size_t used = DTypeStorageBytes(c.dtype, s.out);
      std::vector<uint8_t> want(used + 16, kGuard), got = want;
      Unerase<RowReduceFn>(ref)(x.data(), want.data(), s.out, s.in, c.dtype);
      Unerase<RowReduceFn>(fast)(x.data(), got.data(), s.out, s.in, c.dtype);
      CheckGuard(got, used, where, m);
      CompareStorage(got, want, c.dtype, s.out, tol, where, m);
    }
  }
  ExpectRowArgumentErrors(c, [&](int64_t rows, int64_t cols, DType dtype, const void* src, void* dst) {
    return [&, rows, cols, dtype, src, dst](bool reference) {
      Unerase<RowReduceFn>(reference ? ref : fast)(src, dst, rows, cols, dtype);
    };
  }, m);
  return m;
}

// ---- RowMap (SoftmaxRows, LogSoftmaxRows)
// -----------------------------------------------------------------------

// Row counts that leave some threads a single row, rows long enough to be threaded on their own,
// the special rows of RowReduce, in place (dst == src) and a partial overlap (dst = src + 1 row).
Measure RunRowMap(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  std::vector<Shape> shapes = {{0, 7}, {5, 0}, {12, 3}, {70, 1025}, {33, 4096}, {3, kLarge}};
  for (const int64_t n : c.sizes) {
    shapes.push_back({1, n});
    if (n > 0 && n < 2000) shapes.push_back({6, n});
  }
  uint64_t seed = c.seed;
  for (const Shape& s : shapes) {
    const int64_t total = s.out * s.in;
    const size_t used = DTypeStorageBytes(c.dtype, total);
    for (int set = 0; set < 3; ++set) {
      const auto x = RowInputs(c.dtype, s, set, ++seed);
      const std::string where = RowInputsName(s, set);
      std::vector<uint8_t> want(used + 16, kGuard), got = want;
      Unerase<RowMapFn>(ref)(want.data(), x.data(), s.out, s.in, c.dtype);
      Unerase<RowMapFn>(fast)(got.data(), x.data(), s.out, s.in, c.dtype);
      CheckGuard(got, used, where, m);
      CompareStorage(got, want, c.dtype, total, tol, where, m);
      if (set == 1 && total > 0) {
        std::vector<uint8_t> inplace(used + 16, kGuard);
        std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(used), inplace.begin());
        Unerase<RowMapFn>(fast)(inplace.data(), inplace.data(), s.out, s.in, c.dtype);
        CheckGuard(inplace, used, where + " in place", m);
        CompareStorage(inplace, want, c.dtype, total, tol, where + " in place", m);
      }
      if (set == 1 && s.out > 1 && s.in > 0) {  // dst one row past src: the reference's row order
        const size_t row = DTypeStorageBytes(c.dtype, s.in);
        std::vector<uint8_t> a(used + row + 16, kGuard), b = a;
        std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(used), a.begin());
        std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(used), b.begin());
        Unerase<RowMapFn>(ref)(a.data() + row, a.data(), s.out, s.in, c.dtype);
        Unerase<RowMapFn>(fast)(b.data() + row, b.data(), s.out, s.in, c.dtype);
        CompareStorage(b, a, c.dtype, total + s.in, tol, where + " overlapping", m);
      }
    }
  }
  ExpectRowArgumentErrors(c, [&](int64_t rows, int64_t cols, DType dtype, const void* src, void* dst) {
    return [&, rows, cols, dtype, src, dst](bool reference) {
      Unerase<RowMapFn>(reference ? ref : fast)(dst, src, rows, cols, dtype);
    };
  }, m);
  return m;
}

// ---- BinaryOut: extra cases for the research methods ------------------------------------------

// The base runner feeds N(0, 2) values with specials, which the active-inference methods reject
// (negative probabilities and precisions): these cases feed valid inputs, f64 extremes, zero
// evidence, in-place calls and a size over 64K elements.
void ExtraBinaryOut(ErasedKernel ref, ErasedKernel fast, const RunContext& c, Measure& m) {
  const QuickThreads threads(c);
  const Tolerance tol = DefaultTolerance(c.dtype);
  const bool belief = c.method == "ActiveInference.BeliefUpdate";
  const bool domain = belief || c.method == "ActiveInference.PrecisionWeight";
  auto check = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int64_t n,
                   const std::string& where) {
    std::vector<uint8_t> want(DTypeStorageBytes(c.dtype, n) + 16, kGuard), got = want;
    if (!RunBoth([&] { Unerase<BinaryOutFn>(ref)(a.data(), b.data(), want.data(), n, c.dtype); },
              [&] { Unerase<BinaryOutFn>(fast)(a.data(), b.data(), got.data(), n, c.dtype); }, got,
              where, m)) {
      return;
    }
    CheckGuard(got, DTypeStorageBytes(c.dtype, n), where, m);
    CompareStorage(got, want, c.dtype, n, tol, where, m);
    auto inplace = a;  // output == left
    Unerase<BinaryOutFn>(fast)(inplace.data(), b.data(), inplace.data(), n, c.dtype);
    CompareStorage(inplace, want, c.dtype, n, tol, where + " in place", m);
  };
  for (const int64_t n : WithLarge(c.sizes)) {
    const uint64_t seed = c.seed + 977 + static_cast<uint64_t>(n);
    if (!domain) {
      if (n == kLarge) {
        check(RandomStorage(c.dtype, n, seed), RandomStorage(c.dtype, n, seed + 1), n,
              fmt::format("n={}", n));
      } else {
        const auto a = RandomStorage(c.dtype, n, seed);
        check(a, RandomStorage(c.dtype, n, seed + 1), n, fmt::format("n={}", n));
      }
      continue;
    }
    const auto a = belief ? NonNegative(c.dtype, n, seed, 5) : RandomStorage(c.dtype, n, seed);
    const auto b = NonNegative(c.dtype, n, seed + 1, 7, 2);
    check(a, b, n, fmt::format("n={} valid", n));
    if (n == 0) continue;
    auto bad = b;
    Poison(bad, c.dtype, n, -1.0);
    check(a, bad, n, fmt::format("n={} negative", n));
    Poison(bad, c.dtype, n, INFINITY);
    check(a, bad, n, fmt::format("n={} Inf", n));
    if (belief) {
      check(std::vector<uint8_t>(a.size(), 0), b, n, fmt::format("n={} zero evidence", n));
      if (c.dtype == DType::Float64 && n < kLarge) {  // products outside the f64 range: rescaled
        for (const double scale : {1e-250, 1e200, 1e-160}) {
          auto l = a, p = b;
          for (int64_t i = 0; i < n; ++i) {
            StoreAsDouble(l, c.dtype, i, LoadAsDouble(a, c.dtype, i) * scale);
            StoreAsDouble(p, c.dtype, i, LoadAsDouble(b, c.dtype, i) * (i % 3 == 0 ? scale : 1.0));
          }
          check(l, p, n, fmt::format("n={} scaled {}", n, scale));
        }
      }
    }
  }
}

bool ResearchMethod(const std::string& method) {
  return method.rfind("VSA.", 0) == 0 || method.rfind("ActiveInference.", 0) == 0 ||
         method.rfind("PredictiveCoding.", 0) == 0;
}

}  // namespace

void RegisterResearchRunners(RunnerRegistry& r) {
  r["VSAPermute"] = RunPermute;
  r["Similarity"] = RunSimilarity;
  r["FreeEnergy"] = RunFreeEnergy;
  r["ExpectedFreeEnergy"] = RunExpectedFreeEnergy;
  r["Prediction"] = RunPrediction;
  r["PredictiveUpdate"] = RunPredictiveUpdate;
  r["Outer"] = RunOuter;
  r["RowReduce"] = RunRowReduce;
  r["RowMap"] = RunRowMap;
  // Extends the BinaryOut runner (runners_elementwise.cpp, registered before this one) for the
  // research methods; other BinaryOut methods (e.g. Causal.CATE) keep the base runner only.
  const auto it = r.find("BinaryOut");
  const Runner base = it != r.end() ? it->second : Runner();
  r["BinaryOut"] = [base](ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
    Measure m = base ? base(ref, fast, c) : Measure{};
    if (ResearchMethod(c.method)) ExtraBinaryOut(ref, fast, c, m);
    return m;
  };
}

}  // namespace backplane::conformance
