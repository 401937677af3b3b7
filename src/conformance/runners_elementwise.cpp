// Runners for the elementwise families: Unary (also activations, softmax), Binary, Axpy.
#include <fmt/format.h>

#include <algorithm>

#include "backplane/backend/backend.hpp"
#include "conformance/runner.hpp"

namespace backplane::conformance {
namespace {

// Kernels must not assume alignment: odd sizes run on buffers shifted by one element.
size_t Offset(DType dtype, int64_t n) { return n % 2 == 1 ? DTypeStorageBytes(dtype, 1) : 0; }

std::vector<uint8_t> Shifted(const std::vector<uint8_t>& s, size_t offset) {
  std::vector<uint8_t> out(s.size() + offset, 0xA5);
  std::copy(s.begin(), s.end(), out.begin() + static_cast<std::ptrdiff_t>(offset));
  return out;
}

using UnaryFn = BP_RET_Unary (*)(BP_PARAMS_Unary);
using BinaryFn = BP_RET_Binary (*)(BP_PARAMS_Binary);
using AxpyFn = BP_RET_Axpy (*)(BP_PARAMS_Axpy);

Measure RunUnary(ErasedKernel ref, ErasedKernel fast, const RunContext& c) {
  Measure m;
  const Tolerance tol = DefaultTolerance(c.dtype);
  for (int64_t n : c.sizes) {
    const size_t off = Offset(c.dtype, n);
    const auto x = Shifted(RandomStorage(c.dtype, n, c.seed + static_cast<uint64_t>(n)), off);
    auto want = std::vector<uint8_t>(x.size(), 0xA5);
    auto got = want;
    Unerase<UnaryFn>(ref)(want.data() + off, x.data() + off, n, c.dtype);
    Unerase<UnaryFn>(fast)(got.data() + off, x.data() + off, n, c.dtype);
    got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(off));
    want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(off));
    CompareStorage(got, want, c.dtype, n, tol, fmt::format("n={} y", n), m);
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
    auto want = std::vector<uint8_t>(a.size(), 0xA5);
    auto got = want;
    Unerase<BinaryFn>(ref)(want.data() + off, a.data() + off, b.data() + off, n, c.dtype);
    Unerase<BinaryFn>(fast)(got.data() + off, a.data() + off, b.data() + off, n, c.dtype);
    got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(off));
    want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(off));
    CompareStorage(got, want, c.dtype, n, tol, fmt::format("n={} y", n), m);
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

}  // namespace

void RegisterElementwiseRunners(RunnerRegistry& r) {
  r["Unary"] = RunUnary;
  r["Binary"] = RunBinary;
  r["Axpy"] = RunAxpy;
}

}  // namespace backplane::conformance
