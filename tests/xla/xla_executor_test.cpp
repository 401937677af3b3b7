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
