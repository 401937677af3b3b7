// Runners for the loss, gradient, sampling and dropout families: Loss, CrossEntropy, MSEGrad (every
// elementwise loss gradient, on its loss's inputs),
// CrossEntropyGrad, GreedySample, Dropout.
//
// - Loss and CrossEntropy return an f64 mean accumulated in f64 and rounded to f32 for f32/f16/bf16
//   input, so they are compared with the f32 bound (f64 bound for f64), as the Reduce runner does.
//   Inputs cover each loss's domain and its special values (BCE p = 0 and 1, soft and NaN labels;
//   KL zeros in t and p, Inf, NaN; CrossEntropy -Inf (masked) logits, +Inf/NaN rows, all -Inf
//   rows, offsets of +-1000) and invalid data, which must raise the reference's error.
// - Gradients are compared element by element with the tolerance table; nothing may be written
//   past the output or into it when the call throws.
// - GreedySample returns the reference's index exactly; Dropout's output is compared bit for bit
//   over several seeds and rates (0, tiny, 0.1, 0.5, 0.9, the largest below 1, and 1).
// The full matrix also checks that results are identical for 1 and 3 threads.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backplane/backend/backend.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using LossFn = BP_RET_Loss (*)(BP_PARAMS_Loss);
using CrossEntropyFn = BP_RET_CrossEntropy (*)(BP_PARAMS_CrossEntropy);
using MSEGradFn = BP_RET_MSEGrad (*)(BP_PARAMS_MSEGrad);
using CrossEntropyGradFn = BP_RET_CrossEntropyGrad (*)(BP_PARAMS_CrossEntropyGrad);
using GreedyFn = BP_RET_GreedySample (*)(BP_PARAMS_GreedySample);
using DropoutFn = BP_RET_Dropout (*)(BP_PARAMS_Dropout);

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs fn with a given thread count, restoring the previous one.
template <class Fn>
void WithThreads(int threads, Fn&& fn) {
  const int previous = cpu::NumThreads();
  cpu::SetNumThreads(threads);
  fn();
  cpu::SetNumThreads(previous);
}

// Storage of n values fn(i, u) with u uniform in [0, 1) from (seed, i).
template <class Fn>
std::vector<uint8_t> Make(DType dtype, int64_t n, uint64_t seed, Fn&& fn) {
  std::vector<uint8_t> s(DTypeStorageBytes(dtype, n) + 8, 0);
  for (int64_t i = 0; i < n; ++i) StoreAsDouble(s, dtype, i, fn(i, PhiloxUniformDouble(seed, 21, static_cast<uint64_t>(i))));
  return s;
}

// ---- Loss --------------------------------------------------------------------------------------

using Sets = std::vector<std::pair<std::string, std::pair<std::vector<uint8_t>, std::vector<uint8_t>>>>;

// Prediction/target sets for one loss and size.
Sets LossInputs(const RunContext& c, int64_t n, uint64_t seed) {
  const DType dt = c.dtype;
  Sets sets;
  auto add = [&](const std::string& name, std::vector<uint8_t> p, std::vector<uint8_t> t) {
    sets.emplace_back(name, std::make_pair(std::move(p), std::move(t)));
  };
  if (c.method == "Losses.BinaryCrossEntropy") {
    // p in [0, 1] with exact 0 and 1 and tiny values; soft, hard and (specials) odd labels.
    auto prob = [](int64_t i, double u) {
      switch (i % 23) {
        case 3: return 0.0;
        case 7: return 1.0;
        case 11: return 1e-30;
        case 13: return 1.0 - 1e-7;
        default: return u;
      }
    };
    auto label = [](int64_t i, double u) { return i % 5 == 0 ? std::floor(2 * u) : u; };
    auto odd_label = [](int64_t i, double u) {
      static constexpr double kOdd[] = {kNaN, kInf, -kInf, -3.0, 2.5, 0.0, 1.0};
      return i % 17 == 4 ? kOdd[(i / 17) % 7] : u;
    };
    add("plain", Make(dt, n, seed, [](int64_t, double u) { return u; }), Make(dt, n, seed + 1, label));
    add("edges", Make(dt, n, seed + 2, prob), Make(dt, n, seed + 3, label));
    add("odd_labels", Make(dt, n, seed + 4, prob), Make(dt, n, seed + 5, odd_label));
    if (n > 0) {
      auto bad = Make(dt, n, seed + 6, [](int64_t, double u) { return u; });
      StoreAsDouble(bad, dt, n / 2, (n % 2) ? kNaN : 1.5);
      add("invalid", std::move(bad), Make(dt, n, seed + 7, label));
    }
  } else if (c.method == "Losses.KLDivergence") {
    auto dist = [](int64_t, double u) { return u * u; };
    auto zeros = [](int64_t i, double u) { return i % 3 == 0 ? 0.0 : u; };
    auto odd = [](int64_t i, double u) {
      static constexpr double kOdd[] = {0.0, kInf, kNaN, 1e-300, 1e-40, 0.0};
      return i % 13 == 5 ? kOdd[(i / 13) % 6] : u;
    };
    add("plain", Make(dt, n, seed, dist), Make(dt, n, seed + 1, dist));
    add("zeros", Make(dt, n, seed + 2, zeros), Make(dt, n, seed + 3, zeros));
    add("specials", Make(dt, n, seed + 4, odd), Make(dt, n, seed + 5, odd));
    if (n > 0) {
      auto bad = Make(dt, n, seed + 6, dist);
      StoreAsDouble(bad, dt, n - 1, -0.25);
      add("invalid_t", Make(dt, n, seed + 7, dist), bad);
      add("invalid_p", std::move(bad), Make(dt, n, seed + 8, dist));
    }
  } else {
    add("specials", RandomStorage(dt, n, seed), RandomStorage(dt, n, seed + 1));
    add("plain", RandomStorage(dt, n, seed + 2, 2.0, false), RandomStorage(dt, n, seed + 3, 2.0, false));
    // Differences around the Huber threshold |p - t| = 1.
    add("near", RandomStorage(dt, n, seed + 4, 2.0, false),
        Make(dt, n, seed + 5, [](int64_t i, double u) { return (i % 2 ? 1.0 : -1.0) * (0.5 + u); }));
  }
  return sets;
}

Measure RunLoss(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = ScalarTolerance(c.dtype);
  std::vector<int64_t> sizes = c.sizes;
  sizes.push_back(kLarge);
  for (const int64_t n : sizes) {
    for (const auto& set : LossInputs(c, n, c.seed + static_cast<uint64_t>(n) * 7)) {
      const size_t off = Offset(c.dtype, n);
      const auto p = Shifted(set.second.first, off), t = Shifted(set.second.second, off);
      const std::string where = fmt::format("n={} {}", n, set.first);
      double want = 0.0, got = 0.0;
      const std::string want_error = ErrorOf([&] { want = Unerase<LossFn>(ref)(p.data() + off, t.data() + off, n, c.dtype); });
      const std::string got_error = ErrorOf([&] { got = Unerase<LossFn>(fast)(p.data() + off, t.data() + off, n, c.dtype); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      CompareScalar(got, want, tol, where, m);
      if (n == kLarge && !Quick(c)) {  // independent of the thread count, bit for bit
        double one = 0.0, three = 0.0;
        WithThreads(1, [&] { one = Unerase<LossFn>(fast)(p.data() + off, t.data() + off, n, c.dtype); });
        WithThreads(3, [&] { three = Unerase<LossFn>(fast)(p.data() + off, t.data() + off, n, c.dtype); });
        if (std::memcmp(&one, &three, sizeof(one)) != 0 && !(std::isnan(one) && std::isnan(three))) {
          Fail(m, fmt::format("{}: 1 thread {} != 3 threads {}", where, one, three));
        }
      }
    }
  }
  for (const int64_t n : {int64_t{-1}, int64_t{5}}) {
    const std::string where = fmt::format("invalid n={}", n);
    const std::string want = ErrorOf([&] { Unerase<LossFn>(ref)(nullptr, nullptr, n, c.dtype); });
    const std::string got = ErrorOf([&] { Unerase<LossFn>(fast)(nullptr, nullptr, n, c.dtype); });
    SameErrors(got, want, where, m);
  }
  {
    const auto x = RandomStorage(c.dtype, 4, c.seed);
    const std::string want = ErrorOf([&] { Unerase<LossFn>(ref)(x.data(), x.data(), 4, DType::Int8); });
    const std::string got = ErrorOf([&] { Unerase<LossFn>(fast)(x.data(), x.data(), 4, DType::Int8); });
    SameErrors(got, want, "dtype int8", m);
  }
  return m;
}

// ---- CrossEntropy, CrossEntropyGrad ------------------------------------------------------------

std::vector<std::pair<int64_t, int64_t>> RowShapes(const RunContext& c) {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (const int64_t n : c.sizes) {
    if (n == 0) continue;
    shapes.emplace_back(1, n);
    if (n < 2000) shapes.emplace_back(3, n);
  }
  shapes.emplace_back(0, 7);
  shapes.emplace_back(70, 1025);  // > 64K logits: several row chunks
  if (!Quick(c)) shapes.emplace_back(5, 32000);
  return shapes;
}

struct LogitSet {
  std::string name;
  std::vector<uint8_t> logits;
  std::vector<int32_t> targets;
};

// Logit sets for a [rows, classes] shape: plain, specials (NaN/Inf rows), masked (-Inf logits,
// one row targeting a masked class, one row all -Inf) and far from zero (+-1000 row offsets).
std::vector<LogitSet> LogitSets(const RunContext& c, int64_t rows, int64_t classes, uint64_t seed) {
  const DType dt = c.dtype;
  const int64_t n = rows * classes;
  std::vector<int32_t> targets(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    targets[static_cast<size_t>(r)] =
        static_cast<int32_t>(PhiloxBits(seed, 22, static_cast<uint64_t>(r))[0] % static_cast<uint64_t>(classes));
  }
  std::vector<LogitSet> sets;
  sets.push_back({"plain", RandomStorage(dt, n, seed, 2.0, false), targets});
  sets.push_back({"specials", RandomStorage(dt, n, seed + 1), targets});
  {
    auto masked = Make(dt, n, seed + 2, [](int64_t i, double u) { return i % 7 == 3 ? -kInf : 6.0 * u - 3.0; });
    auto t = targets;
    if (rows > 0 && classes > 3) t[0] = 3;  // targets a masked class: +Inf loss
    if (rows > 1) {
      for (int64_t k = 0; k < classes; ++k) StoreAsDouble(masked, dt, classes + k, -kInf);
    }
    sets.push_back({"masked", std::move(masked), t});
  }
  sets.push_back({"offset", Make(dt, n, seed + 3, [classes](int64_t i, double u) {
                    return ((i / classes) % 2 ? 1000.0 : -1000.0) + 8.0 * u;
                  }), targets});
  return sets;
}

Measure RunCrossEntropy(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = ScalarTolerance(c.dtype);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [rows_binding, classes_binding] : RowShapes(c)) {
    const auto& rows = rows_binding;
    const auto& classes = classes_binding;
    const uint64_t seed = c.seed + static_cast<uint64_t>(rows * 1009 + classes);
    for (const LogitSet& set : LogitSets(c, rows, classes, seed)) {
      const size_t off = Offset(c.dtype, classes);
      const auto z = Shifted(set.logits, off);
      const std::string where = fmt::format("[{}, {}] {}", rows, classes, set.name);
      double want = 0.0, got = 0.0;
      auto call = [&](ErasedKernel k) {
        return Unerase<CrossEntropyFn>(k)(z.data() + off, set.targets.data(), rows, classes, c.dtype);
      };
      const std::string want_error = ErrorOf([&] { want = call(ref); });
      const std::string got_error = ErrorOf([&] { got = call(fast); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      CompareScalar(got, want, tol, where, m);
      if (rows * classes > 65536 && !Quick(c)) {
        double one = 0.0, three = 0.0;
        WithThreads(1, [&] { one = call(fast); });
        WithThreads(3, [&] { three = call(fast); });
        if (std::memcmp(&one, &three, sizeof(one)) != 0 && !(std::isnan(one) && std::isnan(three))) {
          Fail(m, fmt::format("{}: 1 thread {} != 3 threads {}", where, one, three));
        }
      }
    }
  }
  // Invalid arguments: targets out of range, classes 0, negative sizes, overflow, null pointers.
  const auto z = RandomStorage(c.dtype, 12, c.seed);
  const std::vector<int32_t> bad_hi = {0, 4, 1}, bad_lo = {0, -1, 1}, ok = {0, 1, 2};
  const std::tuple<const char*, const void*, const int32_t*, int64_t, int64_t> cases[] = {
      {"target = classes", z.data(), bad_hi.data(), 3, 4},
      {"target -1", z.data(), bad_lo.data(), 3, 4},
      {"classes 0", z.data(), ok.data(), 2, 0},
      {"batch -1", z.data(), ok.data(), -1, 4},
      {"classes -2", z.data(), ok.data(), 2, -2},
      {"overflow", nullptr, nullptr, int64_t{1} << 40, int64_t{1} << 40},
      {"null logits", nullptr, ok.data(), 3, 4},
      {"null targets", z.data(), nullptr, 3, 4},
  };
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [name_binding, logits_binding, targets_binding, rows_binding, classes_binding] : cases) {
    const auto& name = name_binding;
    const auto& logits = logits_binding;
    const auto& targets = targets_binding;
    const auto& rows = rows_binding;
    const auto& classes = classes_binding;
    const std::string want =
        ErrorOf([&] { Unerase<CrossEntropyFn>(ref)(logits, targets, rows, classes, c.dtype); });
    const std::string got =
        ErrorOf([&] { Unerase<CrossEntropyFn>(fast)(logits, targets, rows, classes, c.dtype); });
    if (want.empty()) Fail(m, fmt::format("invalid {}: the reference did not throw", name));
    SameErrors(got, want, fmt::format("invalid {}", name), m);
  }
  return m;
}

Measure RunCrossEntropyGrad(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [rows_binding, classes_binding] : RowShapes(c)) {
    const auto& rows = rows_binding;
    const auto& classes = classes_binding;
    const uint64_t seed = c.seed + static_cast<uint64_t>(rows * 1009 + classes);
    const int64_t n = rows * classes;
    for (const LogitSet& set : LogitSets(c, rows, classes, seed)) {
      const size_t off = Offset(c.dtype, classes);
      const auto z = Shifted(set.logits, off);
      const std::string where = fmt::format("[{}, {}] {}", rows, classes, set.name);
      std::vector<uint8_t> want(z.size(), kGuard), got(z.size(), kGuard);
      auto call = [&](ErasedKernel k, std::vector<uint8_t>& out) {
        Unerase<CrossEntropyGradFn>(k)(z.data() + off, set.targets.data(), out.data() + off, rows, classes, c.dtype);
      };
      const std::string want_error = ErrorOf([&] { call(ref, want); });
      const std::string got_error = ErrorOf([&] { call(fast, got); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      CheckGuard(got, off + DTypeStorageBytes(c.dtype, n), where, m);
      for (size_t k = 0; k < off; ++k) {
        if (got[k] != kGuard) Fail(m, where + ": wrote before the output");
      }
      got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(off));
      want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(off));
      CompareElements(got, want, c.dtype, n, tol, where + " grad", m);
    }
  }
  const auto z = RandomStorage(c.dtype, 12, c.seed);
  const std::vector<int32_t> bad = {0, 4, 1}, ok = {0, 1, 2};
  const std::tuple<const char*, const int32_t*, int64_t, int64_t, bool> cases[] = {
      {"target = classes", bad.data(), 3, 4, true}, {"classes 0", ok.data(), 2, 0, true},
      {"batch -1", ok.data(), -1, 4, true},         {"null grad", ok.data(), 3, 4, false},
      {"null targets", nullptr, 3, 4, true},
  };
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [name_binding, targets_binding, rows_binding, classes_binding, with_out_binding] : cases) {
    const auto& name = name_binding;
    const auto& targets = targets_binding;
    const auto& rows = rows_binding;
    const auto& classes = classes_binding;
    const auto& with_out = with_out_binding;
    std::vector<uint8_t> want(64, kGuard), got(64, kGuard);
    const std::string want_error = ErrorOf([&] {
      Unerase<CrossEntropyGradFn>(ref)(z.data(), targets, with_out ? want.data() : nullptr, rows, classes, c.dtype);
    });
    const std::string got_error = ErrorOf([&] {
      Unerase<CrossEntropyGradFn>(fast)(z.data(), targets, with_out ? got.data() : nullptr, rows, classes, c.dtype);
    });
    if (want_error.empty()) Fail(m, fmt::format("invalid {}: the reference did not throw", name));
    SameErrors(got_error, want_error, fmt::format("invalid {}", name), m);
    CheckGuard(got, 0, fmt::format("invalid {}", name), m);
  }
  return m;
}

// ---- MSEGrad -----------------------------------------------------------------------------------

// The loss whose derivative a Gradients method is ("Gradients.MAEGrad" -> "Losses.MAE").
std::string LossOf(const std::string& method) {
  std::string loss = "Losses." + method.substr(method.find('.') + 1);
  return loss.substr(0, loss.size() - 4);
}

Measure RunMSEGrad(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  std::vector<int64_t> sizes = c.sizes;
  sizes.push_back(kLarge);
  RunContext lossContext = c;
  lossContext.method = LossOf(c.method);
  for (const int64_t n : sizes) {
    Sets sets = LossInputs(lossContext, n, c.seed + static_cast<uint64_t>(n) * 3);
    for (const bool specials : {true, false}) {
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) * 3 + (specials ? 0 : 1);
      sets.emplace_back(specials ? "specials" : "plain",
                        std::make_pair(RandomStorage(c.dtype, n, seed, 2.0, specials),
                                       RandomStorage(c.dtype, n, seed + 7919, 2.0, specials)));
    }
    for (const auto& [name, inputs] : sets) {
      const size_t off = Offset(c.dtype, n);
      const auto p = Shifted(inputs.first, off);
      const auto t = Shifted(inputs.second, off);
      std::vector<uint8_t> want(p.size(), kGuard), got(p.size(), kGuard);
      const std::string where = fmt::format("n={} {}", n, name);
      const std::string want_error = ErrorOf(
          [&] { Unerase<MSEGradFn>(ref)(p.data() + off, t.data() + off, want.data() + off, n, c.dtype); });
      const std::string got_error = ErrorOf(
          [&] { Unerase<MSEGradFn>(fast)(p.data() + off, t.data() + off, got.data() + off, n, c.dtype); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      CheckGuard(got, off + DTypeStorageBytes(c.dtype, n), where, m);
      got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(off));
      want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(off));
      CompareElements(got, want, c.dtype, n, tol, where + " grad", m);
    }
  }
  // Overflow in storage precision: f32/bf16 values near the top of the range (some round to
  // +-Inf in storage), whose differences the reference computes in f64.
  const bool unbounded = c.method != "Gradients.BinaryCrossEntropyGrad" && c.method != "Gradients.KLDivergenceGrad";
  if (unbounded && (c.dtype == DType::Float32 || c.dtype == DType::BFloat16)) {
    const int64_t n = 37;
    const auto p = Make(c.dtype, n, c.seed, [](int64_t i, double u) { return (i % 2 ? 3e38 : -3e38) * (0.5 + u); });
    const auto t = Make(c.dtype, n, c.seed + 1, [](int64_t i, double u) { return (i % 2 ? -3e38 : 3e38) * (0.5 + u); });
    std::vector<uint8_t> want(p.size(), kGuard), got(p.size(), kGuard);
    Unerase<MSEGradFn>(ref)(p.data(), t.data(), want.data(), n, c.dtype);
    Unerase<MSEGradFn>(fast)(p.data(), t.data(), got.data(), n, c.dtype);
    CompareElements(got, want, c.dtype, n, tol, "huge grad", m);
  }
  for (const int64_t n : {int64_t{-1}, int64_t{5}}) {
    std::vector<uint8_t> got(64, kGuard);
    const auto x = RandomStorage(c.dtype, 5, c.seed);
    const std::string where = fmt::format("invalid n={}", n);
    const std::string want = ErrorOf([&] { Unerase<MSEGradFn>(ref)(x.data(), nullptr, got.data(), n, c.dtype); });
    const std::string gotten = ErrorOf([&] { Unerase<MSEGradFn>(fast)(x.data(), nullptr, got.data(), n, c.dtype); });
    SameErrors(gotten, want, where, m);
    CheckGuard(got, 0, where, m);
  }
  return m;
}

// ---- GreedySample ------------------------------------------------------------------------------

Measure RunGreedySample(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const DType dt = c.dtype;
  std::vector<int64_t> sizes = c.sizes;
  sizes.push_back(kLarge);
  for (const int64_t n : sizes) {
    const uint64_t seed = c.seed + static_cast<uint64_t>(n) * 5;
    std::vector<std::pair<std::string, std::vector<uint8_t>>> sets;
    sets.emplace_back("plain", RandomStorage(dt, n, seed, 2.0, false));
    // Specials without NaN: +Inf (wins, first one), -Inf, +-0, +-60.
    sets.emplace_back("specials", RandomStorage(dt, n, seed + 1));
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(LoadAsDouble(sets.back().second, dt, i))) StoreAsDouble(sets.back().second, dt, i, -kInf);
    }
    sets.emplace_back("ties", Make(dt, n, seed + 2, [](int64_t, double u) { return std::floor(4 * u) - 1.0; }));
    sets.emplace_back("zeros", Make(dt, n, seed + 3, [](int64_t i, double u) {
                        return i < 3 ? -1.0 - u : (u < 0.5 ? -0.0 : (u < 0.9 ? 0.0 : -2.0));
                      }));
    sets.emplace_back("all -Inf", Make(dt, n, seed, [](int64_t, double) { return -kInf; }));
    sets.emplace_back("last", Make(dt, n, seed + 4, [n](int64_t i, double u) { return i == n - 1 ? 7.0 : u; }));
    if (n > 0) {
      auto nan = RandomStorage(dt, n, seed + 5, 2.0, false);
      StoreAsDouble(nan, dt, (n * 2) / 3, kNaN);
      sets.emplace_back("NaN", std::move(nan));
    }
    for (const auto& [name, x] : sets) {
      const size_t off = Offset(dt, n);
      const auto xs = Shifted(x, off);
      const std::string where = fmt::format("n={} {}", n, name);
      int32_t want = 0, got = 0;
      const std::string want_error = ErrorOf([&] { want = Unerase<GreedyFn>(ref)(xs.data() + off, n, dt); });
      const std::string got_error = ErrorOf([&] { got = Unerase<GreedyFn>(fast)(xs.data() + off, n, dt); });
      if (SameErrors(got_error, want_error, where, m)) continue;
      if (got != want) {
        m.max_error = std::max(m.max_error, std::fabs(static_cast<double>(got) - want));
        Fail(m, fmt::format("{}: got index {}, want {}", where, got, want));
      }
    }
  }
  for (const int64_t n : {int64_t{-1}, int64_t{0}, int64_t{5}, int64_t{1} << 32}) {
    const std::string where = fmt::format("invalid n={}", n);
    const auto x = RandomStorage(dt, 4, c.seed);
    const void* p = n == 5 ? nullptr : x.data();
    const std::string want = ErrorOf([&] { Unerase<GreedyFn>(ref)(p, n, dt); });
    const std::string got = ErrorOf([&] { Unerase<GreedyFn>(fast)(p, n, dt); });
    SameErrors(got, want, where, m);
  }
  return m;
}

// ---- Dropout -----------------------------------------------------------------------------------

// The reference's output for one case, memoised: it does not depend on the SIMD target, and its
// scalar Philox dominates the run time of the matrix.
const std::vector<uint8_t>& DropoutWant(ErasedKernel ref, DType dt, const std::vector<uint8_t>& x, size_t off,
                                        int64_t n, const DropoutConfig& config, const std::string& key) {
  static std::mutex mu;
  static std::map<std::tuple<DType, std::string, float, uint64_t>, std::vector<uint8_t>> cache;
  const std::lock_guard<std::mutex> lock(mu);
  const auto k = std::make_tuple(dt, key, config.Rate, config.Seed);
  auto it = cache.find(k);
  if (it == cache.end()) {
    if (cache.size() > 512) cache.clear();
    std::vector<uint8_t> out(x.size(), kGuard);
    Unerase<DropoutFn>(ref)(out.data() + off, x.data() + off, n, config, dt);
    it = cache.emplace(k, std::move(out)).first;
  }
  return it->second;
}

Measure RunDropout(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  const QuickThreads threads(c);
  Measure m;
  const DType dt = c.dtype;
  const float kRates[] = {0.0f, 1e-6f, 0.1f, 0.5f, 0.9f, std::nextafter(1.0f, 0.0f), 1.0f};
  const uint64_t kSeeds[] = {1, 0x123456789ABCDEF0ull, 0xFFFFFFFF00000000ull, uint64_t{1} << 32};
  std::vector<int64_t> sizes = c.sizes;
  sizes.push_back(kLarge);
  for (const int64_t n : sizes) {
    const size_t off = Offset(dt, n);
    const auto x = Shifted(RandomStorage(dt, n, c.seed + static_cast<uint64_t>(n)), off);
    const bool all = n == 17 || n == 1000 || n == kLarge;  // every rate and seed; others a sample
    for (const float rate : kRates) {
      for (const uint64_t seed : kSeeds) {
        if (!all && !(rate == 0.5f || rate == 0.1f) ) continue;
        if (!all && seed != kSeeds[n % 4]) continue;
        if (n == kLarge && Quick(c) && seed != kSeeds[1] && rate != 0.5f) continue;
        const DropoutConfig config{rate, seed};
        const std::string where = fmt::format("n={} rate={} seed={:#x}", n, rate, seed);
        const auto& want = DropoutWant(ref, dt, x, off, n, config, fmt::format("{}:{}", c.method, n));
        std::vector<uint8_t> got(x.size(), kGuard);
        Unerase<DropoutFn>(fast)(got.data() + off, x.data() + off, n, config, dt);
        if (got != want) {
          size_t at = 0;
          while (at < got.size() && got[at] == want[at]) ++at;
          m.max_error = INFINITY;
          Fail(m, fmt::format("{}: output differs from the reference at byte {}", where, at));
        }
        if (n == kLarge && rate == 0.5f && seed == kSeeds[1]) {
          std::vector<uint8_t> inplace = x;  // in place (dst == src)
          Unerase<DropoutFn>(fast)(inplace.data() + off, inplace.data() + off, n, config, dt);
          if (!std::equal(inplace.begin() + static_cast<std::ptrdiff_t>(off),
                          inplace.begin() + static_cast<std::ptrdiff_t>(off + DTypeStorageBytes(dt, n)),
                          want.begin() + static_cast<std::ptrdiff_t>(off))) {
            Fail(m, where + ": in place differs");
          }
          if (!Quick(c)) {
            std::vector<uint8_t> three(x.size(), kGuard);
            WithThreads(3, [&] { Unerase<DropoutFn>(fast)(three.data() + off, x.data() + off, n, config, dt); });
            if (three != want) Fail(m, where + ": 3 threads differ");
          }
        }
      }
    }
  }
  // Invalid rates and sizes: the same errors, nothing written.
  const auto x = RandomStorage(dt, 5, c.seed);
  const std::tuple<float, int64_t, bool> cases[] = {
      {std::nanf(""), 5, true}, {std::nanf(""), 0, true}, {-0.1f, 5, true}, {1.5f, 0, true},
      {INFINITY, 5, true},      {0.5f, -1, true},          {0.5f, 5, false}, {0.0f, 5, false},
  };
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  for (const auto& [rate_binding, n_binding, with_src_binding] : cases) {
    const auto& rate = rate_binding;
    const auto& n = n_binding;
    const auto& with_src = with_src_binding;
    const DropoutConfig config{rate, 7};
    const std::string where = fmt::format("invalid rate={} n={} src={}", rate, n, with_src);
    std::vector<uint8_t> want(64, kGuard), got(64, kGuard);
    const void* src = with_src ? x.data() : nullptr;
    const std::string want_error = ErrorOf([&] { Unerase<DropoutFn>(ref)(want.data(), src, n, config, dt); });
    const std::string got_error = ErrorOf([&] { Unerase<DropoutFn>(fast)(got.data(), src, n, config, dt); });
    SameErrors(got_error, want_error, where, m);
    if (got != want) Fail(m, where + ": output differs");
  }
  {
    const std::string want = ErrorOf([&] { Unerase<DropoutFn>(ref)(nullptr, nullptr, 3, DropoutConfig{}, DType::Int8); });
    const std::string got = ErrorOf([&] { Unerase<DropoutFn>(fast)(nullptr, nullptr, 3, DropoutConfig{}, DType::Int8); });
    SameErrors(got, want, "dtype int8", m);
  }
  return m;
}

}  // namespace

void RegisterLossRunners(RunnerRegistry& r) {
  r["Loss"] = RunLoss;
  r["CrossEntropy"] = RunCrossEntropy;
  r["MSEGrad"] = RunMSEGrad;
  r["CrossEntropyGrad"] = RunCrossEntropyGrad;
  r["GreedySample"] = RunGreedySample;
  r["Dropout"] = RunDropout;
}

}  // namespace backplane::conformance
