// Peak FMA throughput and memory bandwidth of the cores in use (cpu::NumThreads() threads, each
// timing its share at once), measured with Highway on the selected target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/limits.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace backplane::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 independent accumulator chains hide the FMA latency (two pipes of latency 4 need 8). Each
// chain starts from a different value: identical chains are one chain to the compiler, which
// then issues one FMA per iteration (GCC did, doubling the figure on one-FMA-per-cycle cores).
// Returns the flops performed.
double FmaLoop(size_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  auto a0 = hn::Set(d, 1.0f), a1 = hn::Set(d, 1.1f), a2 = hn::Set(d, 1.2f), a3 = hn::Set(d, 1.3f);
  auto a4 = hn::Set(d, 1.4f), a5 = hn::Set(d, 1.5f), a6 = hn::Set(d, 1.6f), a7 = hn::Set(d, 1.7f);
  auto a8 = hn::Set(d, 1.8f), a9 = hn::Set(d, 1.9f), a10 = hn::Set(d, 2.0f), a11 = hn::Set(d, 2.1f);
  const auto m = hn::Set(d, 0.999999f), c = hn::Set(d, 1e-7f);
  for (size_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, m, c);
    a1 = hn::MulAdd(a1, m, c);
    a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c);
    a4 = hn::MulAdd(a4, m, c);
    a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c);
    a7 = hn::MulAdd(a7, m, c);
    a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c);
    a10 = hn::MulAdd(a10, m, c);
    a11 = hn::MulAdd(a11, m, c);
  }
  const auto s = hn::Add(hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
                         hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  *sink = hn::GetLane(s);
  return static_cast<double>(iterations) * 12.0 * 2.0 * static_cast<double>(hn::Lanes(d));
}

void Triad(float* a, const float* b, const float* c, size_t n) {
  const hn::ScalableTag<float> d;
  const auto s = hn::Set(d, 3.0f);
  for (size_t i = 0; i + hn::Lanes(d) <= n; i += hn::Lanes(d)) {
    hn::StoreU(hn::MulAdd(s, hn::LoadU(d, c + i), hn::LoadU(d, b + i)), d, a + i);
  }
}

float ReadSum(const float* b, size_t n) {
  const hn::ScalableTag<float> d;
  auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = hn::Add(s0, hn::LoadU(d, b + i));
    s1 = hn::Add(s1, hn::LoadU(d, b + i + L));
    s2 = hn::Add(s2, hn::LoadU(d, b + i + 2 * L));
    s3 = hn::Add(s3, hn::LoadU(d, b + i + 3 * L));
  }
  return hn::GetLane(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
}

}  // namespace backplane::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "backplane/bench.hpp"
#include "backplane/cpu/targets.hpp"
#include "backplane/cpu/threads.hpp"

namespace backplane::bench {
HWY_EXPORT(FmaLoop);
HWY_EXPORT(Triad);
HWY_EXPORT(ReadSum);

namespace {
double Seconds(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Limits MeasureLimits() {
  Limits l;
  l.target = cpu::SelectedTarget();
  l.threads = cpu::NumThreads();
  const auto threads = static_cast<int64_t>(l.threads);
  // Runs part(t) for t < threads on the pool, one per thread.
  auto all = [threads](const std::function<void(int64_t)>& part) {
    cpu::ParallelFor(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) part(t);
    });
  };
  std::vector<float> sinks(static_cast<size_t>(threads), 0.0f);
  double best = 1e30, flops_each = 0;
  for (int r = 0; r < 5; ++r) {
    best = std::min(best, Seconds([&] {
      all([&](int64_t t) {
        const double f = HWY_DYNAMIC_DISPATCH(FmaLoop)(20'000'000, &sinks[static_cast<size_t>(t)]);
        if (t == 0) flops_each = f;
      });
    }));
  }
  l.peak_gflops = flops_each * static_cast<double>(threads) / best * 1e-9;
  const size_t n = 16u << 20;  // 64 MiB per array
  const size_t share = n / static_cast<size_t>(threads);
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  best = 1e30;
  for (int r = 0; r < 5; ++r) {
    best = std::min(best, Seconds([&] {
      all([&](int64_t t) {
        const size_t o = static_cast<size_t>(t) * share;
        HWY_DYNAMIC_DISPATCH(Triad)(a.data() + o, b.data() + o, c.data() + o, share);
      });
    }));
  }
  l.triad_gbps = 3.0 * 4.0 * static_cast<double>(share * static_cast<size_t>(threads)) / best * 1e-9;
  best = 1e30;
  for (int r = 0; r < 5; ++r) {
    best = std::min(best, Seconds([&] {
      all([&](int64_t t) { sinks[static_cast<size_t>(t)] += HWY_DYNAMIC_DISPATCH(ReadSum)(b.data() + static_cast<size_t>(t) * share, share); });
    }));
  }
  l.read_gbps = 4.0 * static_cast<double>(share * static_cast<size_t>(threads)) / best * 1e-9;
  float sink = 0;
  for (float v : sinks) sink += v;
  if (sink == 12345.0f) l.target += " ";  // keep the work observable
  return l;
}

}  // namespace backplane::bench
#endif  // HWY_ONCE
