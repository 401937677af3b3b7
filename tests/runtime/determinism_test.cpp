// Determinism (docs/reliability.md, "Determinism"): every claim of that section has a test here.
//
// Seeded ops (math.dropout, sampling.top_k, sampling.top_p, hawkes.simulate) and the seeded
// parameter initialisers (normal, uniform, xavier_uniform) run through the graph path (RunOp or an
// Executor) on inputs large enough to be split across the pool, and must give bit-identical
// outputs for two runs, for 1, 2 and 8 threads and on every SIMD target this CPU runs
// (cpu::RunnableTargets(), forced with cpu::ForceTarget); a different seed must change them, and
// the values must follow the documented key (seed, stream, element index) of backplane/random.hpp.
//
// Reductions: each case runs on 1, 2 and 8 threads on every target. AcrossThreadCounts compares
// the bytes (memcmp) on each target; AcrossSimdTargets compares every pair of targets (1 thread):
// bit for bit where the case claims so, else within its stated bound in ulp (of each element, or
// of the output's largest magnitude). The bounds are what these inputs must meet, set from the
// kernels' arithmetic (one rounding of an f64 value: 1 ulp; FMA against separate multiply and
// add in f32: a few ulp of the scale); the measured gaps are printed and recorded.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <ostream>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/targets.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/runtime/run_op.hpp"
#include "support/test_size.hpp"

namespace backplane::runtime {
namespace {

constexpr int kThreadCounts[] = {1, 2, 8};

struct Setting {
  std::string target;
  int threads = 1;
  std::string Name() const { return fmt::format("{}/{} threads", target, threads); }
};

// Every runnable target (the best first, as RunnableTargets lists them) with every thread count.
std::vector<Setting> Settings() {
  std::vector<Setting> all;
  for (const std::string& t : cpu::RunnableTargets()) {
    for (int n : kThreadCounts) all.push_back({t, n});
  }
  return all;
}

void Apply(const Setting& s) {
  cpu::ForceTarget(s.target);
  cpu::SetNumThreads(s.threads);
}

std::vector<uint8_t> BytesOf(const std::vector<Tensor>& outputs) {
  std::vector<uint8_t> bytes;
  for (const Tensor& t : outputs) {
    const Tensor h = t.ToHost();
    const auto* p = static_cast<const uint8_t*>(h.data());
    bytes.insert(bytes.end(), p, p + h.nbytes());
  }
  return bytes;
}

// Uniform values in [lo, hi) from Philox stream 7 of `seed`, rounded to the dtype.
Tensor Filled(DType dtype, Shape shape, uint64_t seed, double lo = -2.0, double hi = 2.0) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.SetDouble(i, lo + (hi - lo) * PhiloxUniformDouble(seed, 7, static_cast<uint64_t>(i)));
  }
  return t;
}

class Determinism : public ::testing::Test {
 protected:
  void TearDown() override {
    cpu::ForceTarget("");
    cpu::SetNumThreads(0);
  }
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();

  // Runs `run` under every setting (and twice under the first) and expects the same bytes each
  // time.
  void ExpectBitIdenticalEverywhere(const std::function<std::vector<Tensor>()>& run,
                                    const std::string& what) {
    const std::vector<Setting> settings = Settings();
    ASSERT_FALSE(settings.empty());
    Apply(settings[0]);
    const std::vector<uint8_t> want = BytesOf(run());
    ASSERT_FALSE(want.empty()) << what;
    EXPECT_EQ(BytesOf(run()), want) << what << ": a second run differs";
    for (const Setting& s : settings) {
      Apply(s);
      const std::vector<uint8_t> got = BytesOf(run());
      EXPECT_TRUE(got == want) << what << " differs on " << s.Name() << " from "
                               << settings[0].Name();
    }
    cpu::ForceTarget("");
    cpu::SetNumThreads(0);
  }
};

// ---- seeded ops ---------------------------------------------------------------------------------
// 600001 elements: ten 64K-element chunks of the dropout kernel, and a tail.
constexpr int64_t kDropoutCount = 600001;

OpCall DropoutCall(const Tensor& x, int64_t seed, double p = 0.3) {
  return OpCall{.op = "math.dropout", .inputs = {x}, .attrs = {{"p", p}, {"seed", seed}}};
}

TEST_F(Determinism, DropoutIsBitIdenticalAcrossRunsThreadsAndTargets) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    const Tensor x = Filled(d, {kDropoutCount}, 1);
    ExpectBitIdenticalEverywhere([&] { return RunOp(DropoutCall(x, 1234), *backend_).outputs; },
                                 fmt::format("math.dropout {}", DTypeName(d)));
  }
}

TEST_F(Determinism, DropoutMaskIsKeyedBySeedAndElementIndex) {
  // Element i is dropped iff PhiloxUniformFloat(seed, 0, i) < p; kept ones are x / (1 - p).
  const Tensor x = Filled(DType::Float32, {kDropoutCount}, 2, 1.0, 2.0);  // no zeros in x
  const int64_t seed = 0x5EED;
  cpu::SetNumThreads(8);
  const Tensor y = RunOp(DropoutCall(x, seed), *backend_).outputs[0];
  int64_t mismatches = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool dropped =
        PhiloxUniformFloat(static_cast<uint64_t>(seed), 0, static_cast<uint64_t>(i)) < 0.3f;
    const float want = dropped ? 0.0f : x.data_as<float>()[i] * (1.0f / (1.0f - 0.3f));
    mismatches += std::memcmp(&want, y.data_as<float>() + i, sizeof(float)) != 0;
  }
  EXPECT_EQ(mismatches, 0);
  const Tensor other = RunOp(DropoutCall(x, seed + 1), *backend_).outputs[0];
  EXPECT_NE(std::memcmp(other.data(), y.data(), y.nbytes()), 0)
      << "another seed must draw another mask";
}

TEST_F(Determinism, DropoutCallsOfOneExecutorRepeatInAFreshExecutor) {
  // Call c of a node draws with seed + 0x9E3779B97F4A7C15 c: each call differs from the previous,
  // and a fresh executor (or a restart) repeats the sequence.
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [600001]}],
    "nodes": [{"op": "math.dropout", "inputs": ["x"], "outputs": ["y"], "attrs": {"p": 0.5, "seed": 77}}],
    "outputs": ["y"]})");
  const Tensor x = Filled(DType::Float32, {kDropoutCount}, 3);
  auto calls = [&](int threads) {
    cpu::SetNumThreads(threads);
    Executor ex(g, *backend_);
    std::vector<std::vector<uint8_t>> out;
    for (int c = 0; c < 3; ++c) out.push_back(BytesOf({ex.Run({{"x", x}}).at("y")}));
    return out;
  };
  const auto a = calls(1);
  const auto b = calls(8);
  EXPECT_TRUE(a == b);
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(a[1], a[2]);
}

// 32 rows of 50000 logits: each row one independent draw with seed + row.
// (8 rows of 20000 under BACKPLANE_TEST_SIZE=lean: the samplers are sequential per row.)
Tensor Logits() {
  return test::LeanTestSize() ? Filled(DType::Float32, {8, 20000}, 4, -4.0, 4.0)
                              : Filled(DType::Float32, {32, 50000}, 4, -4.0, 4.0);
}

OpCall SamplerCall(const std::string& op, const Tensor& logits, int64_t seed) {
  OpCall call{.op = op, .inputs = {logits}, .attrs = {{"seed", seed}, {"temperature", 1.0}}};
  if (op == "sampling.top_k") call.attrs["top_k"] = int64_t{1000};
  if (op == "sampling.top_p") call.attrs["top_p"] = 0.9;
  return call;
}

TEST_F(Determinism, SamplingIsBitIdenticalAcrossRunsThreadsAndTargets) {
  const Tensor logits = Logits();
  for (const char* op : {"sampling.top_k", "sampling.top_p"}) {
    ExpectBitIdenticalEverywhere(
        [&] { return RunOp(SamplerCall(op, logits, 99), *backend_).outputs; }, op);
  }
}

TEST_F(Determinism, SamplingRowsAreKeyedBySeedPlusRow) {
  const Tensor logits = Logits();
  const int64_t vocab = logits.shape()[1];
  for (const char* op : {"sampling.top_k", "sampling.top_p"}) {
    const Tensor tokens = RunOp(SamplerCall(op, logits, 99), *backend_).outputs[0];
    ASSERT_EQ(tokens.numel(), logits.shape()[0]);
    // Row 5 alone, drawn with seed 99 + 5, picks the same token as in the batch.
    Tensor row(DType::Float32, {vocab});
    std::memcpy(row.data(), logits.data_as<float>() + 5 * vocab, row.nbytes());
    const Tensor alone = RunOp(SamplerCall(op, row, 99 + 5), *backend_).outputs[0];
    EXPECT_EQ(alone.data_as<int32_t>()[0], tokens.data_as<int32_t>()[5]) << op;
    const Tensor other = RunOp(SamplerCall(op, logits, 100), *backend_).outputs[0];
    EXPECT_NE(std::memcmp(other.data(), tokens.data(), tokens.nbytes()), 0)
        << op << ": another seed, same tokens";
  }
}

OpCall HawkesCall(int64_t seed) {
  return OpCall{.op = "hawkes.simulate",
                .inputs = {},
                .attrs = {{"mu", 0.5},
                          {"alpha", 0.8},
                          {"beta", 1.2},
                          {"horizon", 20000.0},
                          {"max_events", int64_t{100000}},
                          {"seed", seed}},
                .num_outputs = 2};
}

TEST_F(Determinism, HawkesSimulationIsBitIdenticalAcrossRunsThreadsAndTargets) {
  ExpectBitIdenticalEverywhere([&] { return RunOp(HawkesCall(5), *backend_).outputs; },
                               "hawkes.simulate");
  const auto a = RunOp(HawkesCall(5), *backend_).outputs;
  const auto b = RunOp(HawkesCall(6), *backend_).outputs;
  const int64_t n = a[1].data_as<int64_t>()[0];
  EXPECT_GT(n, 10000);  // stationary rate mu / (1 - alpha / beta) = 1.5 over 20000
  EXPECT_LT(n, 100000);
  EXPECT_NE(BytesOf(a), BytesOf(b)) << "another seed must give other event times";
  // The first event: candidate 0 waits -log1p(-u) / mu with u = PhiloxUniformDouble(seed, 0, 0) and
  // is accepted (the bound is the intensity when no event has happened yet).
  const double u = PhiloxUniformDouble(5, 0, 0);
  EXPECT_EQ(a[0].data_as<float>()[0], static_cast<float>(-std::log1p(-u) / 0.5));
}

// Three seeded parameters of 512 x 384 of one dtype, used by one node so the graph is valid.
ir::Graph InitGraph(const std::string& dtype, int64_t seed) {
  return ir::ParseGraph(fmt::format(R"({{"format": "backplane.graph", "version": 1,
    "inputs": [{{"name": "x", "dtype": "{0}", "shape": [512, 384]}}],
    "params": [
      {{"name": "n", "dtype": "{0}", "shape": [512, 384], "init": {{"kind": "normal", "mean": 0.5, "std": 2, "seed": {1}}}}},
      {{"name": "u", "dtype": "{0}", "shape": [512, 384], "init": {{"kind": "uniform", "low": -3, "high": 1, "seed": {1}}}}},
      {{"name": "w", "dtype": "{0}", "shape": [512, 384], "init": {{"kind": "xavier_uniform", "seed": {1}}}}}],
    "nodes": [{{"op": "math.add", "inputs": ["x", "n"], "outputs": ["a"]}},
              {{"op": "math.add", "inputs": ["a", "u"], "outputs": ["b"]}},
              {{"op": "math.add", "inputs": ["b", "w"], "outputs": ["y"]}}],
    "outputs": ["y"]}})",
                                    dtype, seed));
}

std::vector<Tensor> Params(const ir::Graph& g, Backend& backend) {
  Executor ex(g, backend);
  std::vector<Tensor> out;
  for (const auto& [name, t] : ex.SaveParams()) out.push_back(t);
  return out;
}

TEST_F(Determinism, ParameterInitialisersAreBitIdenticalAcrossRunsThreadsAndTargets) {
  for (const char* d : {"f32", "f64", "f16", "bf16"}) {
    const ir::Graph g = InitGraph(d, 42);
    ExpectBitIdenticalEverywhere([&] { return Params(g, *backend_); },
                                 fmt::format("initialisers {}", d));
    EXPECT_NE(BytesOf(Params(g, *backend_)), BytesOf(Params(InitGraph(d, 43), *backend_)))
        << d << ": another seed must give other values";
  }
}

TEST_F(Determinism, ParameterInitialisersAreKeyedBySeedStreamAndIndex) {
  // f64 storage: the formulas of docs/graph-format.md exactly (normal: Box-Muller on streams 1, 2;
  // uniform and xavier_uniform: stream 1), element i from index i.
  Executor ex(InitGraph("f64", 42), *backend_);
  const auto params = ex.SaveParams();
  const double bound = std::sqrt(6.0 / (512 + 384));
  for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{100000}, uint64_t{512 * 384 - 1}}) {
    const double u1 = 1.0 - PhiloxUniformDouble(42, 1, i), u2 = PhiloxUniformDouble(42, 2, i);
    const double normal =
        0.5 + 2.0 * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    EXPECT_EQ(params.at("n").data_as<double>()[i], normal) << i;
    EXPECT_EQ(params.at("u").data_as<double>()[i], -3.0 + 4.0 * PhiloxUniformDouble(42, 1, i)) << i;
    EXPECT_EQ(params.at("w").data_as<double>()[i],
              bound * (2.0 * PhiloxUniformDouble(42, 1, i) - 1.0))
        << i;
  }
}

// ---- reductions ---------------------------------------------------------------------------------
// How far apart two results of one floating dtype are: `ulp`, the largest distance of an element
// in units in the last place (consecutive representable values; +0 and -0 are one apart), and
// `scaled`, the largest absolute difference in units in the last place of the output's largest
// magnitude (what an error bound relative to the output's scale measures: near-zero outputs of a
// norm or an attention row can be many of their own ulp apart and still 1 ulp of the scale).
// Equal bits and two NaNs agree; a NaN against a number, or integers that differ, are infinitely
// apart.
struct Gap {
  double ulp = 0;
  double scaled = 0;
};

// Representable values from y to x (bit patterns of `width` bits, neither NaN).
double UlpsApart(uint64_t x, uint64_t y, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const uint64_t mx = x & (sign - 1), my = y & (sign - 1);
  if ((x & sign) == (y & sign)) return static_cast<double>(mx > my ? mx - my : my - mx);
  return static_cast<double>(mx) + static_cast<double>(my) + 1.0;  // across zero
}

// The spacing of the dtype's values at magnitude v (v > 0, normal).
double UlpAt(double v, DType d) {
  const int mantissa = d == DType::Float64   ? 52
                       : d == DType::Float32 ? 23
                       : d == DType::Float16 ? 10
                                             : 7;
  int e = 0;
  std::frexp(v, &e);  // v = f 2^e, f in [0.5, 1)
  return std::ldexp(1.0, e - 1 - mantissa);
}

Gap Compare(const Tensor& a, const Tensor& b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return {kInf, kInf};
  const auto bytes = static_cast<size_t>(DTypeStorageBytes(a.dtype(), 1));
  const int width = static_cast<int>(bytes * 8);
  double ulp = 0, diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    uint64_t x = 0, y = 0;
    std::memcpy(&x, static_cast<const uint8_t*>(a.data()) + static_cast<size_t>(i) * bytes, bytes);
    std::memcpy(&y, static_cast<const uint8_t*>(b.data()) + static_cast<size_t>(i) * bytes, bytes);
    if (IsFloatingPoint(a.dtype()) && std::isfinite(b.GetDouble(i)))
      scale = std::max(scale, std::fabs(b.GetDouble(i)));
    if (x == y) continue;
    if (!IsFloatingPoint(a.dtype())) return {kInf, kInf};
    const double va = a.GetDouble(i), vb = b.GetDouble(i);
    if (std::isnan(va) && std::isnan(vb)) continue;
    if (std::isnan(va) || std::isnan(vb)) return {kInf, kInf};
    ulp = std::max(ulp, UlpsApart(x, y, width));
    diff = std::max(diff, std::fabs(va - vb));
  }
  return {ulp, diff == 0 ? 0 : scale == 0 ? kInf : diff / UlpAt(scale, a.dtype())};
}

Gap Compare(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size())
    return {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  Gap worst;
  for (size_t i = 0; i < a.size(); ++i) {
    const Gap g = Compare(a[i].ToHost(), b[i].ToHost());
    worst = {std::max(worst.ulp, g.ulp), std::max(worst.scaled, g.scaled)};
  }
  return worst;
}

std::string Describe(const Gap& g) {
  return fmt::format("{} ulp, {:.3g} ulp of the scale", g.ulp, g.scaled);
}

// What a case claims across SIMD targets, between any two targets' results.
struct TargetClaim {
  int ulp = 0;     // > 0: every element within this many ulp
  int scaled = 0;  // > 0: every element within this many ulp of the output's largest magnitude
};
constexpr TargetClaim kBitIdentical{};
constexpr TargetClaim Ulp(int n) { return {n, 0}; }
constexpr TargetClaim ScaledUlp(int n) { return {0, n}; }

struct ReductionCase {
  std::string name;  // the test name suffix, as the docs table cites it
  std::function<OpCall()> call;
  TargetClaim across_targets;
};

std::ostream& operator<<(std::ostream& os, const ReductionCase& c) { return os << c.name; }

OpCall Call(std::string op, std::vector<Tensor> inputs, ir::AttrMap attrs = {}) {
  return OpCall{.op = std::move(op), .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

// A symmetric positive definite f64 matrix: B B^T / n + I for B uniform in [-1, 1].
Tensor SpdMatrix(int64_t n) {
  const Tensor b = Filled(DType::Float64, {n, n}, 49, -1.0, 1.0);
  Tensor a(DType::Float64, {n, n});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < n; ++k) dot += b.GetDouble(i * n + k) * b.GetDouble(j * n + k);
      const double v = dot / static_cast<double>(n) + (i == j ? 1.0 : 0.0);
      a.SetDouble(i * n + j, v);
      a.SetDouble(j * n + i, v);
    }
  }
  return a;
}

Tensor SortedTimes(int64_t n) {
  Tensor t(DType::Float32, {n});
  double time = 0;
  for (int64_t i = 0; i < n; ++i) {
    time += 0.05 + PhiloxUniformDouble(9, 7, static_cast<uint64_t>(i));
    t.SetDouble(i, time);
  }
  return t;
}

Tensor Targets(int64_t batch, int64_t classes) {
  Tensor t(DType::Int32, {batch});
  for (int64_t i = 0; i < batch; ++i) {
    t.data_as<int32_t>()[i] =
        static_cast<int32_t>(PhiloxBits(10, 0, static_cast<uint64_t>(i))[0] % classes);
  }
  return t;
}

// Sizes: every case has at least two chunks of its kernel's fixed partition (64K elements for the
// flat reductions and losses, 32K for the chunked softmax, about 64K elements of rows for the
// row-wise ops, 256-row blocks for an f32/f64 GEMM, 96-row blocks for the 16-bit GEMM, one image
// of a convolution), so 2 and 8 threads really split it; hawkes.log_likelihood is not threaded (a
// sequential recurrence), its case checks that the result still does not depend on the setting.
std::vector<ReductionCase> ReductionCases() {
  using D = DType;
  const int64_t flat = 600000;
  return {
      {"sum_f32", [=] { return Call("reduction.sum", {Filled(D::Float32, {flat}, 11)}); }, Ulp(1)},
      {"sum_f64", [=] { return Call("reduction.sum", {Filled(D::Float64, {flat}, 12)}); }, Ulp(64)},
      {"sum_axis_f32",
       [] {
         return Call("reduction.sum", {Filled(D::Float32, {6, 200000}, 13)},
                     {{"axis", std::vector<int64_t>{1}}});
       },
       Ulp(1)},
      {"prod_f32",
       [=] { return Call("reduction.prod", {Filled(D::Float32, {flat}, 14, 0.999, 1.001)}); },
       Ulp(1)},
      {"min_f32", [=] { return Call("reduction.min", {Filled(D::Float32, {flat}, 15)}); },
       kBitIdentical},
      {"max_f32", [=] { return Call("reduction.max", {Filled(D::Float32, {flat}, 16)}); },
       kBitIdentical},
      {"l1_norm_f32", [=] { return Call("reduction.l1_norm", {Filled(D::Float32, {flat}, 17)}); },
       Ulp(1)},
      {"dot_f32",
       [=] {
         return Call("math.dot", {Filled(D::Float32, {flat}, 18), Filled(D::Float32, {flat}, 19)});
       },
       Ulp(1)},
      {"dot_f64",
       [=] {
         return Call("math.dot", {Filled(D::Float64, {flat}, 20), Filled(D::Float64, {flat}, 21)});
       },
       Ulp(64)},
      {"logsumexp_f32",
       [] {
         return Call("math.logsumexp", {Filled(D::Float32, {64, 8192}, 22, -8, 8)});
       },
       Ulp(1)},
      {"softmax_long_rows_f32",
       [] {
         return Call("math.softmax", {Filled(D::Float32, {2, 300000}, 23, -8, 8)});
       },
       Ulp(4)},
      {"log_softmax_long_rows_f32",
       [] {
         return Call("activation.log_softmax", {Filled(D::Float32, {2, 300000}, 24, -8, 8)});
       },
       ScaledUlp(1)},
      {"layernorm_f32",
       [] {
         return Call("math.layernorm",
                     {Filled(D::Float32, {512, 1024}, 25), Filled(D::Float32, {1024}, 26),
                      Filled(D::Float32, {1024}, 27)});
       },
       ScaledUlp(2)},
      {"rmsnorm_f32",
       [] {
         return Call("math.rmsnorm",
                     {Filled(D::Float32, {512, 1024}, 28), Filled(D::Float32, {1024}, 29)});
       },
       Ulp(2)},
      {"groupnorm_f32",
       [] {
         return Call("math.groupnorm",
                     {Filled(D::Float32, {8, 64, 32, 32}, 30), Filled(D::Float32, {64}, 31),
                      Filled(D::Float32, {64}, 32)});
       },
       ScaledUlp(2)},
      {"matmul_f32",
       [] {
         return Call("math.matmul",
                     {Filled(D::Float32, {768, 256}, 33), Filled(D::Float32, {256, 256}, 34)});
       },
       // The own GEMM sums each output in k order on every target: bit-identical where MulAdd is
       // an FMA (AVX2, AVX-512); SSE4, SSSE3 and scalar round the product and the sum apart.
       ScaledUlp(8)},
      {"matmul_f64",
       [] {
         return Call("math.matmul",
                     {Filled(D::Float64, {768, 256}, 35), Filled(D::Float64, {256, 256}, 36)});
       },
       kBitIdentical},
      {"cholesky_f64",
       [] { return Call("causal.cholesky", {SpdMatrix(520)}); },
       kBitIdentical},  // OpenBLAS on fixed tiles: it does not follow the Highway target
      {"matmul_bf16",
       [] {
         return Call("math.matmul",
                     {Filled(D::BFloat16, {384, 256}, 37), Filled(D::BFloat16, {256, 256}, 38)});
       },
       ScaledUlp(1)},
      {"conv2d_f32",
       [] {
         return Call("convolution.conv2d",
                     {Filled(D::Float32, {4, 32, 64, 64}, 39),
                      Filled(D::Float32, {64, 32, 3, 3}, 40), Filled(D::Float32, {64}, 41)});
       },
       ScaledUlp(8)},  // the own GEMM, as matmul_f32
      {"mse_f32",
       [=] {
         return Call("train.loss.mse",
                     {Filled(D::Float32, {flat}, 42), Filled(D::Float32, {flat}, 43)});
       },
       Ulp(1)},
      {"cross_entropy_f32",
       [] {
         return Call("train.loss.cross_entropy",
                     {Filled(D::Float32, {512, 1000}, 44, -6, 6), Targets(512, 1000)});
       },
       Ulp(1)},
      {"cumsum_f32",
       [] {
         return Call("tensor.cumsum",
                     {Filled(D::Float32, {test::LeanTestSize() ? 4 : 16, 512, 1024}, 45)},
                     {{"axis", int64_t{1}}});
       },
       kBitIdentical},
      {"sdpa_f32",
       [] {
         return Call("attention.sdpa",
                     {Filled(D::Float32, {8, 256, 64}, 46), Filled(D::Float32, {8, 256, 64}, 47),
                      Filled(D::Float32, {8, 256, 64}, 48)});
       },
       ScaledUlp(16)},  // f32 scores: 64-term dot products, FMA against a separate multiply and add
      {"hawkes_intensity_f32",
       [] {
         return Call("hawkes.intensity", {SortedTimes(4096), SortedTimes(4096)},
                     {{"mu", 0.5}, {"alpha", 0.8}, {"beta", 1.2}});
       },
       Ulp(1)},
      {"hawkes_log_likelihood_f32",
       [] {
         return Call("hawkes.log_likelihood", {SortedTimes(200000)},
                     {{"total_time", 130000.0}, {"mu", 0.5}, {"alpha", 0.8}, {"beta", 1.2}});
       },
       Ulp(1)},
  };
}

// Every setting's outputs for one case, computed once per process.
const std::map<std::string, std::vector<Tensor>>& RunEverywhere(const ReductionCase& c) {
  static std::map<std::string, std::map<std::string, std::vector<Tensor>>> cache;
  auto it = cache.find(c.name);
  if (it != cache.end()) return it->second;
  auto backend = cpu::CreateBackend();
  const OpCall call = c.call();
  std::map<std::string, std::vector<Tensor>> runs;
  for (const Setting& s : Settings()) {
    Apply(s);
    runs[s.Name()] = RunOp(call, *backend).outputs;
  }
  cpu::ForceTarget("");
  cpu::SetNumThreads(0);
  return cache.emplace(c.name, std::move(runs)).first->second;
}

class Reduction : public ::testing::TestWithParam<ReductionCase> {
 protected:
  void TearDown() override {
    cpu::ForceTarget("");
    cpu::SetNumThreads(0);
  }
};

TEST_P(Reduction, AcrossThreadCounts) {
  const auto& runs = RunEverywhere(GetParam());
  for (const std::string& t : cpu::RunnableTargets()) {
    const auto& one = runs.at(Setting{t, 1}.Name());
    for (int n : kThreadCounts) {
      const auto& got = runs.at(Setting{t, n}.Name());
      EXPECT_TRUE(BytesOf(got) == BytesOf(one))
          << GetParam().name << " on " << t << ": " << n << " threads differ from 1 thread by "
          << Describe(Compare(got, one));
    }
  }
}

TEST_P(Reduction, AcrossSimdTargets) {
  const ReductionCase& c = GetParam();
  const auto& runs = RunEverywhere(c);
  const auto targets = cpu::RunnableTargets();
  Gap worst;
  // Every pair of targets (a bound between each target and the first would allow twice it).
  for (size_t i = 0; i < targets.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const auto& a = runs.at(Setting{targets[i], 1}.Name());
      const auto& b = runs.at(Setting{targets[j], 1}.Name());
      const Gap g = Compare(a, b);
      worst = {std::max(worst.ulp, g.ulp), std::max(worst.scaled, g.scaled)};
      const std::string where =
          fmt::format("{}: {} against {}: {}", c.name, targets[i], targets[j], Describe(g));
      if (c.across_targets.ulp > 0) {
        EXPECT_LE(g.ulp, c.across_targets.ulp) << where;
      } else if (c.across_targets.scaled > 0) {
        EXPECT_LE(g.scaled, c.across_targets.scaled) << where;
      } else {
        EXPECT_TRUE(BytesOf(a) == BytesOf(b)) << where;
      }
    }
  }
  RecordProperty("largest_gap_across_targets", Describe(worst));
  std::printf("%s: %s across %zu targets\n", c.name.c_str(), Describe(worst).c_str(),
              targets.size());
}

INSTANTIATE_TEST_SUITE_P(Determinism, Reduction, ::testing::ValuesIn(ReductionCases()),
                         [](const ::testing::TestParamInfo<ReductionCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace backplane::runtime
