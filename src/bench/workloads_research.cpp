// Benchmark workloads of the research surfaces: VSA, active inference, predictive coding,
// MathExt, Hawkes, the point process and the stencils (f32, sized past the caches).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "bench/bench_data.hpp"

namespace backplane::bench {

void AddResearchWorkloads(std::vector<Workload>& w) {
  using Vec = std::shared_ptr<std::vector<float>>;
  auto out = [](int64_t n) { return std::make_shared<std::vector<float>>(static_cast<size_t>(n)); };
  w.push_back({"vsa.bind", "VSA", "16M", 12.0 * k16M, 0, "triad", [out](Backend& b) {
                 Vec x = Random(k16M, 1), z = Random(k16M, 2), y = out(k16M);
                 return std::function<void()>([&b, x, z, y] { b.VSA().Bind(x->data(), z->data(), y->data(), k16M, DType::Float32); });
               }});
  w.push_back({"vsa.similarity", "VSA", "16M", 8.0 * k16M, 0, "read", [](Backend& b) {
                 Vec x = Random(k16M, 1), z = Random(k16M, 2);
                 return std::function<void()>([&b, x, z] { (void)b.VSA().Similarity(x->data(), z->data(), k16M, DType::Float32); });
               }});
  // Probability vectors: likelihood, posterior and prior in (0, 1].
  w.push_back({"active_inference.free_energy", "ActiveInference", "16M", 12.0 * k16M, 0, "read", [](Backend& b) {
                 Vec l = Random(k16M, 1, 0.01f, 1), q = Random(k16M, 2, 0.01f, 1), p = Random(k16M, 3, 0.01f, 1);
                 auto f = std::make_shared<float>(0.0f);
                 return std::function<void()>(
                     [&b, l, q, p, f] { b.ActiveInference().FreeEnergy(l->data(), q->data(), p->data(), f.get(), k16M, DType::Float32); });
               }});
  static constexpr int64_t kOut = 4096, kIn = 4096;
  w.push_back({"predictive_coding.prediction", "PredictiveCoding", "4096x4096 weights", 4.0 * (kOut * kIn + kIn + kOut),
               2.0 * kOut * kIn, "read", [out](Backend& b) {
                 Vec wt = Random(kOut * kIn, 1, -0.05f, 0.05f), r = Random(kIn, 2), y = out(kOut);
                 return std::function<void()>(
                     [&b, wt, r, y] { b.PredictiveCoding().Prediction(wt->data(), r->data(), y->data(), kOut, kIn, DType::Float32); });
               }});
  w.push_back({"math.outer", "MathExt", "4096x4096", 4.0 * (4096.0 * 4096 + 2 * 4096), 0, "triad", [out](Backend& b) {
                 Vec x = Random(4096, 1), z = Random(4096, 2), y = out(4096 * 4096);
                 return std::function<void()>([&b, x, z, y] { b.MathExt().Outer(x->data(), z->data(), y->data(), 4096, 4096, DType::Float32); });
               }});
  w.push_back({"math.logsumexp", "MathExt", "4096x4096", 4.0 * (4096.0 * 4096 + 4096), 0, "read", [out](Backend& b) {
                 Vec x = Random(4096 * 4096, 1), y = out(4096);
                 return std::function<void()>([&b, x, y] { b.MathExt().LogSumExp(x->data(), y->data(), 4096, 4096, DType::Float32); });
               }});
  // Intensity at 4096 query times over 4096 past events: one exp per (query, event) pair.
  static constexpr int64_t kEvents = 4096, kQueries = 4096;
  w.push_back({"hawkes.intensity", "Hawkes", "4096 events x 4096 queries", 4.0 * (kEvents + 2 * kQueries),
               3.0 * kEvents * kQueries, "fma", [out](Backend& b) {
                 Vec events = Random(kEvents, 1, 0, 100), queries = Random(kQueries, 2, 0, 100), y = out(kQueries);
                 std::sort(events->begin(), events->end());
                 std::sort(queries->begin(), queries->end());
                 return std::function<void()>([&b, events, queries, y] {
                   b.Hawkes().HawkesIntensity(events->data(), queries->data(), y->data(), kEvents, kQueries, 0.5f, 0.8f, 1.2f,
                                              DType::Float32);
                 });
               }});
  // Ogata thinning: sequential, one exp and two uniforms per candidate event.
  w.push_back({"hawkes.simulate", "PointProcess", "horizon 20000 (~40K events)", 0, 0, "none", [](Backend& b) {
                 auto times = std::make_shared<std::vector<float>>(1 << 17);
                 auto count = std::make_shared<int64_t>(0);
                 HawkesSimulateConfig cfg;
                 cfg.Horizon = 20000.0f;
                 return std::function<void()>([&b, cfg, times, count] {
                   b.PointProcess().HawkesSimulate(cfg, times->data(), static_cast<int64_t>(times->size()), count.get(),
                                                   DType::Float32);
                 });
               }});
  w.push_back({"physics.laplacian4", "Physics", "16M", 8.0 * k16M, 0, "triad", [out](Backend& b) {
                 Vec x = Random(k16M, 1), y = out(k16M);
                 return std::function<void()>([&b, x, y] { b.Physics().Laplacian4(x->data(), y->data(), k16M, 0.01f, DType::Float32); });
               }});
}

}  // namespace backplane::bench
