// Threads: the pool's kernels give bit-identical results for 1 and 4 threads, and several
// std::threads running their own Executors on one shared CPU backend agree with a serial run.
// These are the cases make tsan runs under ThreadSanitizer (scripts/tsan.sh).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_size.hpp"

namespace backplane::runtime {
namespace {

// Large enough that matmul (>= 2^20 multiply-adds), the activations, softmax, RMSNorm and the
// reduction all split across the pool.
ir::Graph ThreadedGraph() {
  return ir::ParseGraph(R"({"format": "backplane.graph", "version": 1, "name": "threaded",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch", 256]}],
    "params": [{"name": "w", "dtype": "f32", "shape": [256, 256], "init": {"kind": "xavier_uniform", "seed": 3}},
               {"name": "gamma", "dtype": "f32", "shape": [256], "init": {"kind": "ones"}}],
    "nodes": [{"op": "math.matmul", "inputs": ["x", "w"], "outputs": ["h"]},
              {"op": "activation.gelu", "inputs": ["h"], "outputs": ["g"]},
              {"op": "math.rmsnorm", "inputs": ["g", "gamma"], "outputs": ["n"]},
              {"op": "math.softmax", "inputs": ["n"], "outputs": ["s"]},
              {"op": "reduction.sum", "inputs": ["s"], "outputs": ["total"], "attrs": {"axis": [1]}}],
    "outputs": ["n", "s", "total"]})");
}

Tensor Input(int64_t batch, uint64_t seed) {
  Tensor x(DType::Float32, {batch, 256});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.SetDouble(i, 4.0 * PhiloxUniformDouble(seed, 1, static_cast<uint64_t>(i)) - 2.0);
  }
  return x;
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

int64_t Batch() { return test::LeanTestSize() ? 64 : 256; }

class ThreadCount : public ::testing::Test {
 protected:
  void TearDown() override { cpu::SetNumThreads(0); }
};

TEST_F(ThreadCount, PoolKernelsAreBitIdenticalForOneAndFourThreads) {
  auto backend = cpu::CreateBackend();
  const Tensor x = Input(Batch(), 11);
  cpu::SetNumThreads(1);
  Executor serial(ThreadedGraph(), *backend);
  const auto want = serial.Run({{"x", x}});
  cpu::SetNumThreads(4);
  Executor threaded(ThreadedGraph(), *backend);
  const auto got = threaded.Run({{"x", x}});
  for (const char* name : {"n", "s", "total"}) EXPECT_TRUE(BitEqual(got.at(name), want.at(name))) << name;
}

TEST_F(ThreadCount, ConcurrentExecutorsShareOneBackend) {
  auto backend = cpu::CreateBackend();
  constexpr int kThreads = 4;
  constexpr int kRuns = 3;
  std::vector<Tensor> inputs;
  std::vector<std::map<std::string, Tensor>> want;
  cpu::SetNumThreads(2);  // each executor's kernels also use the pool
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(Input(Batch() / 4 + t, 100 + static_cast<uint64_t>(t)));
    Executor ex(ThreadedGraph(), *backend);
    want.push_back(ex.Run({{"x", inputs.back()}}));
  }
  std::vector<std::map<std::string, Tensor>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Executor ex(ThreadedGraph(), *backend);
        for (int r = 0; r < kRuns; ++r) got[static_cast<size_t>(t)] = ex.Run({{"x", inputs[static_cast<size_t>(t)]}});
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < kThreads; ++t) {
    ASSERT_EQ(errors[t], "") << "thread " << t;
    for (const char* name : {"n", "s", "total"}) EXPECT_TRUE(BitEqual(got[t].at(name), want[t].at(name))) << name << " thread " << t;
  }
}

}  // namespace
}  // namespace backplane::runtime
