// The ONNX backend tests' "light" model zoo (PyPI onnx==1.23.2, fetched by scripts/fetch-models.sh
// into $BACKPLANE_CACHE/models/onnx-light): each model imported and run on the CPU with the input
// ONNX's runner feeds it (arange(n) / n in f32, onnx.backend.test.runner.generate_dummy_data) and
// compared with the wheel's expected output at ONNX's per-model tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/models.hpp"

namespace backplane::onnx {
namespace {

struct ZooModel {
  const char* name;
  double rtol, atol;  // onnx/backend/test/case/model/__init__.py
};

class LightZoo : public ::testing::TestWithParam<ZooModel> {};

TEST_P(LightZoo, MatchesTheExpectedOutput) {
  const ZooModel& m = GetParam();
  const std::string dir = test::CacheDir() + "/models/onnx-light/";
  const std::string model = dir + "light_" + m.name + ".onnx";
  ASSERT_TRUE(test::ModelPresent(model)) << test::FetchHint(model);
  ImportResult imported = ImportOnnx(model);
  ASSERT_EQ(imported.graph.inputs.size(), 1u);
  const ir::ValueSpec& spec = imported.graph.inputs[0];
  Shape shape;
  for (const ir::Dim& d : spec.shape) shape.push_back(d.symbol.empty() ? d.size : 1);
  Tensor x(DType::Float32, shape);
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    x.data_as<float>()[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
  }
  const NamedTensor want = ReadTensorProtoFile(dir + "light_" + m.name + "_output_0.pb");
  ASSERT_EQ(imported.graph.outputs.size(), 1u);
  const std::string output = imported.graph.outputs[0];
  // The constant-filled weights make most of these models' logits equal (about 1e19 for ResNet-50),
  // so their expected output is the uniform softmax: for those the logits themselves are checked to
  // be equal to the model's rtol (a softmax at that magnitude only shows the GEMM's rounding noise).
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < want.tensor.numel(); ++i) {
    lo = std::min(lo, want.tensor.GetDouble(i));
    hi = std::max(hi, want.tensor.GetDouble(i));
  }
  std::string logits;
  for (const ir::Node& node : imported.graph.nodes) {
    if (node.op == "math.softmax" && node.outputs[0] == output) logits = node.inputs[0];
  }
  const bool uniform = hi - lo <= 1e-9 * hi && !logits.empty();
  if (uniform) imported.graph.outputs.push_back(logits);
  auto backend = cpu::CreateBackend();
  runtime::Executor executor(std::move(imported.graph), *backend);
  executor.LoadParams(imported.initializers);
  const auto outputs = executor.Run({{spec.name, x}});
  if (uniform) {
    const Tensor& z = outputs.at(logits);
    double zlo = INFINITY, zhi = -INFINITY;
    for (int64_t i = 0; i < z.numel(); ++i) {
      zlo = std::min(zlo, z.GetDouble(i));
      zhi = std::max(zhi, z.GetDouble(i));
    }
    EXPECT_TRUE(std::isfinite(zlo) && std::isfinite(zhi)) << m.name;
    // Equal to the model's rtol: an f32 GEMM over K terms rounds within about K u relative.
    EXPECT_LE(zhi - zlo, m.rtol * std::max(std::fabs(zlo), std::fabs(zhi))) << m.name << ": logits " << zlo << " to " << zhi;
    return;
  }
  const Tensor& got = outputs.at(output);
  ASSERT_EQ(got.shape(), want.tensor.shape());
  int64_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetDouble(i), w = want.tensor.GetDouble(i);
    const double err = std::fabs(g - w);
    worst = std::max(worst, err);
    if (!(err <= m.atol + m.rtol * std::fabs(w))) ++bad;
  }
  EXPECT_EQ(bad, 0) << m.name << ": max |error| " << worst;
}

INSTANTIATE_TEST_SUITE_P(Onnx, LightZoo,
                         ::testing::Values(ZooModel{"bvlc_alexnet", 1e-3, 1e-7}, ZooModel{"densenet121", 2e-3, 1e-7},
                                           ZooModel{"inception_v1", 1e-3, 1e-7}, ZooModel{"inception_v2", 1e-3, 1e-7},
                                           ZooModel{"resnet50", 1e-3, 1e-7}, ZooModel{"shufflenet", 1e-3, 1e-7},
                                           ZooModel{"squeezenet", 1e-3, 1e-7}, ZooModel{"vgg19", 1e-3, 1e-7},
                                           ZooModel{"zfnet512", 1e-3, 1e-7}),
                         [](const ::testing::TestParamInfo<ZooModel>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace backplane::onnx
