// Runners for the elementwise families: Unary (also activations, softmax), Binary, Axpy.
#include <fmt/format.h>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

using UnaryFn = BP_RET_Unary (*)(BP_PARAMS_Unary);
using BinaryFn = BP_RET_Binary (*)(BP_PARAMS_Binary);
using AxpyFn = BP_RET_Axpy (*)(BP_PARAMS_Axpy);
using BinaryOutFn = BP_RET_BinaryOut (*)(BP_PARAMS_BinaryOut);

Measure RunUnary(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  for (int64_t n : c.sizes) {
    const size_t off = Offset(c.dtype, n);
    const auto x = Shifted(RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n)), off);
    auto want = std::vector<uint8_t>(x.size(), kGuard);
    auto got = want;
    Unerase<UnaryFn>(ref)(want.data() + off, x.data() + off, n, c.dtype);
    Unerase<UnaryFn>(fast)(got.data() + off, x.data() + off, n, c.dtype);
    CompareStorage(Unshifted(got, off), Unshifted(want, off), c.dtype, n, tol, fmt::format("n={} y", n), m);
  }
  return m;
}

Measure RunBinary(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  for (int64_t n : c.sizes) {
    const size_t off = Offset(c.dtype, n);
    const auto a = Shifted(RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n)), off);
    const auto b = Shifted(RandomStorage(c.dtype, n, c.seed + 7919 + static_cast<uint64_t>(n)), off);
    auto want = std::vector<uint8_t>(a.size(), kGuard);
    auto got = want;
    Unerase<BinaryFn>(ref)(want.data() + off, a.data() + off, b.data() + off, n, c.dtype);
    Unerase<BinaryFn>(fast)(got.data() + off, a.data() + off, b.data() + off, n, c.dtype);
    CompareStorage(Unshifted(got, off), Unshifted(want, off), c.dtype, n, tol, fmt::format("n={} y", n), m);
  }
  return m;
}

Measure RunAxpy(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  for (int64_t n : c.sizes) {
    const auto x = RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n));
    auto want = RandomStorage(c.dtype, n, c.seed + 104729 + static_cast<uint64_t>(n));
    auto got = want;
    Unerase<AxpyFn>(ref)(want.data(), x.data(), n, -0.75f, c.dtype);
    Unerase<AxpyFn>(fast)(got.data(), x.data(), n, -0.75f, c.dtype);
    CompareStorage(got, want, c.dtype, n, tol, fmt::format("n={} y", n), m);
  }
  return m;
}

// output[i] = f(left[i], right[i]) (the research surfaces' shared shape). Some methods reject
// inputs outside their domain (e.g. probabilities); then the fast kernel must throw the same error.
Measure RunBinaryOut(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  for (int64_t n : c.sizes) {
    for (bool specials : {false, true}) {
      const size_t off = Offset(c.dtype, n);
      const uint64_t seed = c.seed + static_cast<uint64_t>(n) + (specials ? 31 : 0);
      const auto a = Shifted(RandomStorage(c.dtype, n, seed, 2.0, specials), off);
      const auto b = Shifted(RandomStorage(c.dtype, n, seed + 7919, 2.0, specials), off);
      auto want = std::vector<uint8_t>(a.size(), kGuard);
      auto got = want;
      const std::string where = fmt::format("n={}{} out", n, specials ? " (specials)" : "");
      if (!RunBoth([&] { Unerase<BinaryOutFn>(ref)(a.data() + off, b.data() + off, want.data() + off, n, c.dtype); },
                   [&] { Unerase<BinaryOutFn>(fast)(a.data() + off, b.data() + off, got.data() + off, n, c.dtype); },
                   where, m)) {
        continue;
      }
      CompareStorage(Unshifted(got, off), Unshifted(want, off), c.dtype, n, tol, where, m);
    }
  }
  return m;
}

}  // namespace

void RegisterResearchBinaryRunners(RunnerRegistry& r) { r["BinaryOut"] = RunBinaryOut; }

void RegisterElementwiseRunners(RunnerRegistry& r) {
  r["Unary"] = RunUnary;
  r["Binary"] = RunBinary;
  r["Axpy"] = RunAxpy;
}

}  // namespace backplane::conformance
