// Graphs placed on the XLA device against the same graphs on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/random.hpp"
#include "backplane/runtime/executor.hpp"
#include "xla/xla_device.hpp"

namespace backplane::xla {
namespace {

XlaDevice& Device() {
  static std::unique_ptr<XlaDevice> device = XlaDevice::Open();
  return *device;
}

Tensor Random(DType dtype, Shape shape, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor t(dtype, std::move(shape));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    t.SetDouble(i, lo + (hi - lo) * static_cast<double>(s >> 11) / 9007199254740992.0);
  }
  return t;
}

void ExpectClose(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    ASSERT_LE(std::abs(g - w), tol * (1 + std::abs(w))) << what << " element " << i << ": " << g << " vs " << w;
  }
}

TEST(XlaExecutor, DigitsTrainingStepsMatchTheCpu) {
  const ir::Graph graph = ir::ReadGraphFile(std::string(BACKPLANE_SOURCE_DIR) + "/examples/digits/train.json");
  auto backend = cpu::CreateBackend();
  runtime::Executor cpu(graph, *backend);
  runtime::Executor xla(graph, *backend, {.device = &Device()});
  for (const auto& p : xla.Placement({{"x", {16, 64}}, {"y", {16}}})) {
    EXPECT_EQ(p.device, "xla:0") << p.node << " (" << p.op << "): " << p.fallback;
  }
  for (int step = 0; step < 5; ++step) {
    Tensor x = Random(DType::Float32, {16, 64}, 100 + static_cast<uint64_t>(step), 0, 16);
    Tensor y(DType::Int32, {16});
    for (int64_t i = 0; i < 16; ++i) y.data_as<int32_t>()[i] = static_cast<int32_t>((i * 7 + step) % 10);
    const auto a = cpu.Run({{"x", x}, {"y", y}});
    const auto b = xla.Run({{"x", x}, {"y", y}});
    for (const auto& [name, t] : a) ExpectClose(b.at(name), t, 1e-4, name + " step " + std::to_string(step));
  }
  const auto pa = cpu.SaveParams();
  const auto pb = xla.SaveParams();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& [name, t] : pa) ExpectClose(pb.at(name), t, 1e-4, name);
  EXPECT_EQ(pb.at("w1_next/step").GetDouble(0), 5.0);  // Adam's counter advanced once per run
}

TEST(XlaExecutor, OutOfRangeTargetsFailLikeTheCpu) {
  const ir::Graph graph = ir::ReadGraphFile(std::string(BACKPLANE_SOURCE_DIR) + "/examples/digits/train.json");
  auto backend = cpu::CreateBackend();
  runtime::Executor xla(graph, *backend, {.device = &Device()});
  Tensor x = Random(DType::Float32, {4, 64}, 1);
  Tensor y(DType::Int32, {4});
  y.data_as<int32_t>()[2] = 10;
  try {
    (void)xla.Run({{"x", x}, {"y", y}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("targets"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace backplane::xla

namespace backplane::xla {
namespace {

// x -> exp (device); q (int4, which the device does not lower) -> dequant (CPU); exp + dequant
// (device again, reading exp's result where it stayed).
const char* kSplitGraph = R"({"format": "backplane.graph", "version": 1, "name": "split",
  "inputs": [{"name": "x", "dtype": "f32", "shape": ["n", 4]}, {"name": "q", "dtype": "i4", "shape": ["n", 4]}],
  "nodes": [
    {"op": "math.exp", "name": "e", "inputs": ["x"], "outputs": ["e"]},
    {"op": "quant.dequant_int4", "name": "dq", "inputs": ["q"], "outputs": ["d"], "attrs": {"scale": 0.5}},
    {"op": "math.add", "name": "sum", "inputs": ["e", "d"], "outputs": ["y"]}],
  "outputs": ["y"]})";

Tensor Int4(Shape shape, uint64_t seed) {
  Tensor t(DType::Int4, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, static_cast<double>(static_cast<int64_t>((i * 5 + seed) % 16) - 8));
  return t;
}

TEST(XlaExecutor, UnsupportedNodesRunOnTheCpuBetweenDevicePrograms) {
  const ir::Graph graph = ir::ParseGraph(kSplitGraph);
  auto backend = cpu::CreateBackend();
  runtime::Executor cpu(graph, *backend);
  runtime::Executor xla(graph, *backend, {.device = &Device()});
  const auto placement = xla.Placement({{"x", {2, 4}}, {"q", {2, 4}}});
  ASSERT_EQ(placement.size(), 3u);
  EXPECT_EQ(placement[0].device, "xla:0");
  EXPECT_EQ(placement[1].device, "cpu");
  EXPECT_NE(placement[1].fallback.find("i4"), std::string::npos) << placement[1].fallback;
  EXPECT_EQ(placement[2].device, "xla:0");
  EXPECT_NE(placement[0].segment, placement[2].segment);
  const std::map<std::string, Tensor> in = {{"x", Random(DType::Float32, {2, 4}, 7)}, {"q", Int4({2, 4}, 3)}};
  ExpectClose(xla.Run(in).at("y"), cpu.Run(in).at("y"), 0, "y");
}

TEST(XlaExecutor, NewShapesCompileOnceAndReuseTheCache) {
  const ir::Graph graph = ir::ParseGraph(kSplitGraph);
  auto backend = cpu::CreateBackend();
  auto device = XlaDevice::Open();
  runtime::Executor xla(graph, *backend, {.device = device.get()});
  (void)xla.Run({{"x", Random(DType::Float32, {2, 4}, 1)}, {"q", Int4({2, 4}, 1)}});
  EXPECT_EQ(device->compiled_programs(), 2);  // two device segments
  (void)xla.Run({{"x", Random(DType::Float32, {5, 4}, 2)}, {"q", Int4({5, 4}, 2)}});
  EXPECT_EQ(device->compiled_programs(), 4);
  // Back to the first shapes: the executables are found in the device's cache.
  (void)xla.Run({{"x", Random(DType::Float32, {2, 4}, 3)}, {"q", Int4({2, 4}, 3)}});
  EXPECT_EQ(device->compiled_programs(), 4);
}

TEST(XlaExecutor, SavedStateResumesTrainingOnTheDevice) {
  const ir::Graph graph = ir::ReadGraphFile(std::string(BACKPLANE_SOURCE_DIR) + "/examples/digits/train.json");
  auto backend = cpu::CreateBackend();
  Tensor x = Random(DType::Float32, {8, 64}, 5, 0, 16);
  Tensor y(DType::Int32, {8});
  for (int64_t i = 0; i < 8; ++i) y.data_as<int32_t>()[i] = static_cast<int32_t>(i % 10);
  runtime::Executor a(graph, *backend, {.device = &Device()});
  for (int i = 0; i < 3; ++i) (void)a.Run({{"x", x}, {"y", y}});
  const auto saved = a.SaveParams();
  runtime::Executor b(graph, *backend, {.device = &Device()});
  std::map<std::string, Tensor> params;
  for (const auto& [name, t] : saved) {
    if (name.find('/') == std::string::npos) params[name] = t;
  }
  b.LoadParams(params);
  b.LoadState(saved);
  const auto next_a = a.Run({{"x", x}, {"y", y}});
  const auto next_b = b.Run({{"x", x}, {"y", y}});
  for (const auto& [name, t] : next_a) ExpectClose(next_b.at(name), t, 0, name);
  EXPECT_EQ(b.SaveParams().at("w1_next/step").GetDouble(0), 4.0);
}

TEST(XlaExecutor, WrongInputDTypeIsRefusedBeforeAnyDeviceWork) {
  const ir::Graph graph = ir::ParseGraph(kSplitGraph);
  auto backend = cpu::CreateBackend();
  runtime::Executor xla(graph, *backend, {.device = &Device()});
  EXPECT_THROW((void)xla.Run({{"x", Tensor(DType::Float64, {2, 4})}, {"q", Int4({2, 4}, 0)}}), Error);
}

}  // namespace
}  // namespace backplane::xla

namespace backplane::xla {
namespace {

// model.freeze runs on the CPU before the optimizers' device program: the program must see the flag.
TEST(XlaExecutor, ParametersFrozenInTheGraphAreNotUpdated) {
  auto backend = cpu::CreateBackend();
  const ir::Graph g = ir::ParseGraph(R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "t", "dtype": "f32", "shape": [2]}],
      "params": [{"name": "enc.w", "dtype": "f32", "shape": [2], "init": {"kind": "ones"}},
                 {"name": "dec.w", "dtype": "f32", "shape": [2], "init": {"kind": "ones"}}],
      "nodes": [{"op": "model.freeze", "inputs": ["t"], "outputs": ["n"], "attrs": {"pattern": "enc"}},
                {"op": "train.grad.mse", "inputs": ["enc.w", "t"], "outputs": ["ge"]},
                {"op": "train.grad.mse", "inputs": ["dec.w", "t"], "outputs": ["gd"]},
                {"name": "opt_enc", "op": "train.optimizer.adam", "inputs": ["enc.w", "ge"], "outputs": ["enc_next"]},
                {"name": "opt_dec", "op": "train.optimizer.adam", "inputs": ["dec.w", "gd"], "outputs": ["dec_next"]}],
      "outputs": ["n", "enc_next", "dec_next"]})");
  runtime::Executor cpu(g, *backend);
  runtime::Executor xla(g, *backend, {.device = &Device()});
  const Tensor t = Tensor::FromDoubles(DType::Float32, {2}, std::vector<double>{3, -3});
  for (int run = 0; run < 2; ++run) {
    const auto want = cpu.Run({{"t", t}});
    const auto got = xla.Run({{"t", t}});
    EXPECT_EQ(got.at("enc_next").ToDoubles(), (std::vector<double>{1, 1}));
    for (const auto& [name, w] : want) ExpectClose(got.at(name), w, 1e-6, name);
  }
  const auto saved = xla.SaveParams();
  EXPECT_EQ(saved.at("enc.w").ToDoubles(), (std::vector<double>{1, 1}));
  EXPECT_EQ(saved.at("opt_enc/step").GetDouble(0), 0.0);
  EXPECT_EQ(saved.at("opt_dec/step").GetDouble(0), 2.0);
}

}  // namespace
}  // namespace backplane::xla
