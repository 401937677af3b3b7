// ONNX quantisation and spectral lowerings (lower_quant.cpp, lower_spectral.cpp): hand-built
// models against closed forms (round half to even, saturation, per-axis parameters, a 4-point
// DFT, a symmetric Hann window) and the one-line errors of unsupported cases.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "model_builder.hpp"

namespace backplane::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

const ModelOptions kQuant{.graph_name = "test", .save_dir = "backplane_onnx_quant_tests", .ir_version = 8, .node_name = "",
                              .node_outputs_are_graph_outputs = true};

std::map<std::string, Tensor> RunModel(const std::string& path, const std::map<std::string, Tensor>& inputs) {
  ImportResult r = ImportOnnx(path);
  auto backend = cpu::CreateBackend();
  runtime::Executor ex(std::move(r.graph), *backend);
  ex.LoadParams(r.initializers);
  return ex.Run(inputs);
}

void Expect(const Tensor& t, DType dtype, const Shape& shape, const std::vector<double>& want, double tol = 0.0) {
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.shape(), shape);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(t.GetDouble(i), want[static_cast<size_t>(i)], tol) << "element " << i;
}

Tensor F32(Shape shape, const std::vector<double>& v) { return Tensor::FromDoubles(DType::Float32, std::move(shape), v); }

std::string ErrorOf(const std::string& path) {
  try {
    ImportOnnx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Per-axis int8: halves round to even, then the zero point is added and the sum saturates.
TEST(OnnxQuant, QuantizeLinearPerAxisRoundsHalfToEvenAndSaturates) {
  ModelBuilder b(13, kQuant);
  b.Input("x", {2, 3});
  b.Init("s", {3}, TensorProto::FLOAT, {1, 1, 0.5});
  b.Init("zp", {3}, TensorProto::INT8, {0, 1, -2});
  AttrInt(b.Node("QuantizeLinear", {"x", "s", "zp"}, {"y"}), "axis", 1);
  const auto out = RunModel(b.Save("q.onnx"), {{"x", F32({2, 3}, {0.5, 1.5, 2.5, -0.5, -1.5, 1000})}});
  // col 0: round(0.5) = 0, round(-0.5) = 0; col 1: 2 + 1, -2 + 1; col 2: 5 - 2, 2000 - 2 -> 127.
  Expect(out.at("y"), DType::Int8, {2, 3}, {0, 3, 3, 0, -1, 127});
}

TEST(OnnxQuant, DequantizeLinearPerTensorWithRuntimeScale) {
  ModelBuilder b(13, kQuant);
  b.Init("x", {3}, TensorProto::UINT8, {0, 128, 255});
  b.Input("s", {});
  b.Init("zp", {}, TensorProto::UINT8, {128});
  b.Node("DequantizeLinear", {"x", "s", "zp"}, {"y"});
  const auto out = RunModel(b.Save("dq.onnx"), {{"s", F32({}, {0.5})}});
  Expect(out.at("y"), DType::Float32, {3}, {-64, 0, 63.5});
}

// y_scale = (max(0, max x) - min(0, min x)) / 255 = 2; zero point round(2 / 2) = 1.
TEST(OnnxQuant, DynamicQuantizeLinearRangeIncludesZero) {
  ModelBuilder b(11, kQuant);
  b.Input("x", {4});
  b.Node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  const auto out = RunModel(b.Save("dyn.onnx"), {{"x", F32({4}, {-2, 0, 3, 508})}});
  Expect(out.at("scale"), DType::Float32, {}, {2});
  Expect(out.at("zp"), DType::Uint8, {}, {1});
  Expect(out.at("y"), DType::Uint8, {4}, {0, 1, 3, 255});  // 3 / 2 = 1.5 -> 2, + 1
}

// (A - a_zp per row) @ (B - b_zp) in int32.
TEST(OnnxQuant, MatMulIntegerPerRowZeroPoint) {
  ModelBuilder b(10, kQuant);
  b.Init("a", {2, 2}, TensorProto::UINT8, {1, 2, 3, 4});
  b.Init("bm", {2, 2}, TensorProto::UINT8, {5, 6, 7, 8});
  b.Init("azp", {2}, TensorProto::UINT8, {1, 2});
  b.Init("bzp", {}, TensorProto::UINT8, {5});
  b.Node("MatMulInteger", {"a", "bm", "azp", "bzp"}, {"y"});
  const auto out = RunModel(b.Save("mmi.onnx"), {});
  Expect(out.at("y"), DType::Int32, {2, 2}, {2, 3, 4, 7});  // [[0,1],[1,2]] @ [[0,1],[2,3]]
}

TEST(OnnxQuant, UnsupportedZeroPointDTypeIsNamed) {
  ModelBuilder b(13, kQuant);
  b.Input("x", {2});
  b.Init("s", {}, TensorProto::FLOAT, {1});
  b.Init("zp", {}, TensorProto::INT32, {0});
  b.Node("QuantizeLinear", {"x", "s", "zp"}, {"y"});
  const std::string msg = ErrorOf(b.Save("qbad.onnx"));
  EXPECT_NE(msg.find("QuantizeLinear"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'y_zero_point' must be uint8 or int8"), std::string::npos) << msg;
}

// DFT of 1, 2, 3, 4: 10, -2 + 2i, -2, -2 - 2i; onesided keeps 3 bins.
TEST(OnnxSpectral, OnesidedDftOfARealSignal) {
  ModelBuilder b(17, kQuant);
  b.Input("x", {1, 4, 1});
  AttrInt(b.Node("DFT", {"x"}, {"y"}), "onesided", 1);
  const auto out = RunModel(b.Save("dft.onnx"), {{"x", F32({1, 4, 1}, {1, 2, 3, 4})}});
  Expect(out.at("y"), DType::Float32, {1, 3, 2}, {10, 0, -2, 2, -2, 0}, 1e-5);
}

// Inverse over axis 1 of a complex [1, 2, 2, 2] input with dft_length 4 (zero padding): the rows
// of a length-2 signal (1 + i, 1 - i) padded to 4 points.
TEST(OnnxSpectral, InverseDftZeroPadsToDftLength) {
  ModelBuilder b(17, kQuant);
  b.Input("x", {1, 2, 1, 2});
  b.Init("n", {}, TensorProto::INT64, {4});
  AttrInt(b.Node("DFT", {"x", "n"}, {"y"}), "inverse", 1);
  const auto out = RunModel(b.Save("idft.onnx"), {{"x", F32({1, 2, 1, 2}, {1, 1, 1, -1})}});
  // x[j] = (1/4) sum_k X[k] e^{+2 pi i jk/4} with X = (1 + i, 1 - i, 0, 0):
  // j=0: 2/4; j=1: ((1+i) + (1-i) i)/4 = (2 + 2i)/4; j=2: ((1+i) - (1-i))/4 = 2i/4; j=3: ((1+i) - (1-i) i)/4 = 0.
  Expect(out.at("y"), DType::Float32, {1, 4, 1, 2}, {0.5, 0, 0.5, 0.5, 0, 0.5, 0, 0}, 1e-6);
}

TEST(OnnxSpectral, SymmetricHannWindow) {
  ModelBuilder b(17, kQuant);
  b.Init("n", {}, TensorProto::INT64, {5});
  AttrInt(b.Node("HannWindow", {"n"}, {"w"}), "periodic", 0);
  const auto out = RunModel(b.Save("hann.onnx"), {});
  Expect(out.at("w"), DType::Float32, {5}, {0, 0.5, 1, 0.5, 0}, 1e-7);
}

TEST(OnnxSpectral, InverseOnesidedIsRefused) {
  ModelBuilder b(17, kQuant);
  b.Input("x", {1, 4, 1});
  auto* n = b.Node("DFT", {"x"}, {"y"});
  AttrInt(n, "onesided", 1);
  AttrInt(n, "inverse", 1);
  const std::string msg = ErrorOf(b.Save("dftbad.onnx"));
  EXPECT_NE(msg.find("'onesided' = 1 with 'inverse' = 1"), std::string::npos) << msg;
}

// MelWeightMatrix needs its inputs at import time, which the node test feeds at run time (the
// band edges are floats): here its data set becomes initializers, and the output must match.
TEST(OnnxSpectral, MelWeightMatrixWithConstantInputsMatchesTheNodeTest) {
  const fs::path dir = "/usr/share/libonnx-testdata/data/node/test_melweightmatrix";
  if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  ::onnx::ModelProto m;
  {
    std::ifstream f(dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&f));
  }
  auto* g = m.mutable_graph();
  for (int k = 0; k < g->input_size(); ++k) {
    ::onnx::TensorProto t;
    std::ifstream f(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"), std::ios::binary);
    ASSERT_TRUE(t.ParseFromIstream(&f));
    t.set_name(g->input(k).name());
    *g->add_initializer() = t;
  }
  const std::string path = (fs::temp_directory_path() / "backplane_onnx_quant_tests" / "mel.onnx").string();
  fs::create_directories(fs::path(path).parent_path());
  {
    std::ofstream f(path, std::ios::binary);
    m.SerializeToOstream(&f);
  }
  const auto out = RunModel(path, {});
  const Tensor want = ReadTensorProtoFile((dir / "test_data_set_0" / "output_0.pb").string()).tensor;
  const Tensor& got = out.at(g->output(0).name());
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(got.GetDouble(i), want.GetDouble(i), 1e-6) << "element " << i;
}

}  // namespace
}  // namespace backplane::onnx
