// ONNX importer: hand-built ModelProtos run through ImportOnnx + the CPU executor against closed
// forms, every bad-input path's one-line error, and a floor of ONNX backend node tests.
#include "backplane/onnx/importer.hpp"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/node_test.hpp"
#include "backplane/runtime/executor.hpp"
#include "model_builder.hpp"
#include "onnx_run.hpp"

namespace backplane::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

TEST(OnnxImport, AddBroadcasts) {
  ModelBuilder b(13);
  b.Input("a", {"2", "3"});
  b.Input("b", {"3"});
  b.Node("Add", {"a", "b"}, {"y"});
  b.Output("y");
  const auto out = RunModel(b.Save("add.onnx"), {{"a", F32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", F32({3}, {10, 20, 30})}});
  ExpectNear(out.at("y"), {11, 22, 33, 14, 25, 36});
}

TEST(OnnxImport, GemmWithTransBAlphaBeta) {
  ModelBuilder b(13);
  b.Input("a", {"2", "3"});
  b.Init("w", {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  b.Init("c", {4}, {1, 2, 3, 4});
  auto* n = b.Node("Gemm", {"a", "w", "c"}, {"y"});
  AttrInt(n, "transB", 1);
  AttrFloat(n, "alpha", 2.0f);
  AttrFloat(n, "beta", 0.5f);
  b.Output("y");
  const auto out = RunModel(b.Save("gemm.onnx"), {{"a", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  // y = 2 a w^T + 0.5 c: rows of a . (e1, e2, e3, 1 1 1).
  ExpectNear(out.at("y"), {2 + 0.5, 4 + 1, 6 + 1.5, 12 + 2, 8 + 0.5, 10 + 1, 12 + 1.5, 30 + 2});
}

TEST(OnnxImport, ReshapeWithConstantShape) {
  ModelBuilder b(14);
  b.Input("x", {"2", "3"});
  b.InitInts("shape", {3, -1});
  b.Node("Reshape", {"x", "shape"}, {"y"});
  b.Output("y");
  const auto out = RunModel(b.Save("reshape.onnx"), {{"x", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(out.at("y").shape(), (Shape{3, 2}));
  ExpectNear(out.at("y"), {1, 2, 3, 4, 5, 6});
}

TEST(OnnxImport, SymbolicBatchDimension) {
  ModelBuilder b(13);
  b.Input("x", {"batch", "3"});
  b.Input("z", {"", "3"});  // unnamed dynamic dim: gets a generated symbol
  b.Init("w", {3, 1}, {1, 1, 1});
  b.Node("MatMul", {"x", "w"}, {"h"});
  b.Node("Relu", {"h"}, {"y"});
  b.Node("Neg", {"z"}, {"nz"});
  b.Output("y");
  b.Output("nz");
  ImportResult r = ImportOnnx(b.Save("symbolic.onnx"));
  ASSERT_EQ(r.graph.inputs.size(), 2u);
  EXPECT_EQ(r.graph.inputs[0].shape[0].symbol, "batch");
  EXPECT_FALSE(r.graph.inputs[1].shape[0].symbol.empty());
  auto backend = cpu::CreateBackend();
  runtime::Executor ex(std::move(r.graph), *backend);
  ex.LoadParams(r.initializers);
  for (int64_t n : {2, 5}) {
    std::vector<double> x(static_cast<size_t>(3 * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i) - 4.0;
    const auto out = ex.Run({{"x", F32({n, 3}, x)}, {"z", F32({1, 3}, {1, 2, 3})}});
    ASSERT_EQ(out.at("y").shape(), (Shape{n, 1}));
    for (int64_t i = 0; i < n; ++i) {
      const double s = x[static_cast<size_t>(3 * i)] + x[static_cast<size_t>(3 * i + 1)] + x[static_cast<size_t>(3 * i + 2)];
      EXPECT_NEAR(out.at("y").GetDouble(i), std::max(0.0, s), 1e-6);
    }
  }
}

// Softmax at axis 1 of [2, 2, 2]: opset 11 normalises over axes 1 and 2 jointly (coerced to 2-D),
// opset 13 over axis 1 alone.
TEST(OnnxImport, SoftmaxOpset11CoercesTo2DOpset13TakesOneAxis) {
  const std::vector<double> x = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int opset : {11, 13}) {
    ModelBuilder b(opset);
    b.Input("x", {"2", "2", "2"});
    AttrInt(b.Node("Softmax", {"x"}, {"y"}), "axis", 1);
    b.Output("y");
    const auto out = RunModel(b.Save("softmax" + std::to_string(opset) + ".onnx"), {{"x", F32({2, 2, 2}, x)}});
    std::vector<double> want(8);
    for (int n = 0; n < 2; ++n) {
      if (opset == 11) {
        double z = 0;
        for (int k = 0; k < 4; ++k) z += std::exp(x[static_cast<size_t>(4 * n + k)]);
        for (int k = 0; k < 4; ++k) want[static_cast<size_t>(4 * n + k)] = std::exp(x[static_cast<size_t>(4 * n + k)]) / z;
      } else {
        for (int j = 0; j < 2; ++j) {
          const double a = x[static_cast<size_t>(4 * n + j)], c = x[static_cast<size_t>(4 * n + 2 + j)];
          want[static_cast<size_t>(4 * n + j)] = std::exp(a) / (std::exp(a) + std::exp(c));
          want[static_cast<size_t>(4 * n + 2 + j)] = std::exp(c) / (std::exp(a) + std::exp(c));
        }
      }
    }
    ExpectNear(out.at("y"), want, 1e-6);
  }
}

TEST(OnnxImport, ConstantShapeSubgraphFolds) {
  ModelBuilder b(13);
  b.Input("x", {"2", "3", "4"});
  b.Node("Shape", {"x"}, {"s"});
  b.InitInts("idx", {0});
  b.Node("Gather", {"s", "idx"}, {"n"});
  b.InitInts("rest", {-1});
  AttrInt(b.Node("Concat", {"n", "rest"}, {"target"}), "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"y"});
  b.Output("y");
  std::vector<double> x(24, 1.0);
  const auto out = RunModel(b.Save("fold.onnx"), {{"x", F32({2, 3, 4}, x)}});
  EXPECT_EQ(out.at("y").shape(), (Shape{2, 12}));
}

// backplane import writes the graph and GRAPH.safetensors; the graph file runs like the model.
TEST(OnnxImport, CliImportWritesGraphAndWeights) {
  ModelBuilder b(13);
  b.Input("x", {"2", "4"});
  std::vector<float> w(20);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f;
  b.Init("w", {4, 5}, w);
  b.Node("MatMul", {"x", "w"}, {"y"});
  b.Output("y");
  const std::string model = b.Save("cli_import.onnx");
  const fs::path graph = fs::path(model).replace_extension(".json");
  const std::string cmd = std::string(BACKPLANE_CLI) + " import " + model + " -o " + graph.string() + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ASSERT_TRUE(fs::exists(fs::path(graph).replace_extension(".safetensors")));
  auto backend = cpu::CreateBackend();
  runtime::Executor ex(ir::ReadGraphFile(graph.string()), *backend);
  const auto out = ex.Run({{"x", F32({2, 4}, {1, 0, 0, 0, 0, 0, 0, 1})}});
  ExpectNear(out.at("y"), {0, 0.5, 1, 1.5, 2, 7.5, 8, 8.5, 9, 9.5});
}

// ---- errors ----------------------------------------------------------------------------------------
std::string WriteBytes(const std::string& file, const std::string& bytes) {
  const fs::path dir = fs::temp_directory_path() / "backplane_onnx_tests";
  fs::create_directories(dir);
  const std::string path = (dir / file).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(OnnxImportErrors, GarbageAndTruncatedFiles) {
  const std::string garbage = WriteBytes("garbage.onnx", std::string("\xff\xff\xff\xff not a protobuf", 20));
  EXPECT_NE(ErrorOf([&] { ImportOnnx(garbage); }).find("garbage.onnx: not a valid ONNX model"), std::string::npos);
  ModelBuilder b(13);
  b.Input("a", {"2"});
  b.Init("w", {2}, {1, 2});
  b.Node("Add", {"a", "w"}, {"y"});
  b.Output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  const std::string truncated = WriteBytes("truncated.onnx", bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(ErrorOf([&] { ImportOnnx(truncated); }).find("truncated.onnx"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { ImportOnnx("/nonexistent/model.onnx"); }).find("cannot be read"), std::string::npos);
}

TEST(OnnxImportErrors, UnknownOpNamesTheNode) {
  ModelBuilder b(13);
  b.Input("x", {"2"});
  b.Node("FancyOp", {"x"}, {"y"}, "my_node");
  b.Output("y");
  const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("unknown.onnx")); });
  EXPECT_NE(msg.find("node 'my_node' (FancyOp)"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, OpsetOutOfRange) {
  for (int opset : {0, 99}) {
    ModelBuilder b(opset);
    b.Input("x", {"2"});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("opset.onnx")); });
    EXPECT_NE(msg.find("opset.onnx: opset " + std::to_string(opset)), std::string::npos) << msg;
  }
  // Opsets below 7 import where each op's lowering covers them (Relu has not changed since opset
  // 1); an op whose lowering starts later is refused naming the node and the ranges.
  ModelBuilder old(4);
  old.Input("x", {"2"});
  old.Node("Dropout", {"x"}, {"y"}, "drop");
  old.Output("y");
  const std::string msg = ErrorOf([&] { ImportOnnx(old.Save("old.onnx")); });
  EXPECT_NE(msg.find("node 'drop' (Dropout): supported for opsets 7-17, the model imports opset 4"), std::string::npos)
      << msg;
  ModelBuilder other(13);
  other.m.mutable_opset_import(0)->set_domain("com.example");
  other.Input("x", {"2"});
  other.Output("x");
  EXPECT_NE(ErrorOf([&] { ImportOnnx(other.Save("domain.onnx")); }).find("no opset of the default domain"),
            std::string::npos);
}

TEST(OnnxImportErrors, WrongAttributeType) {
  ModelBuilder b(13);
  b.Input("a", {"2", "2"});
  b.Input("c", {"2", "2"});
  AttrInt(b.Node("Gemm", {"a", "c"}, {"y"}, "g"), "alpha", 2);  // must be FLOAT
  b.Output("y");
  std::string msg = ErrorOf([&] { ImportOnnx(b.Save("attr.onnx")); });
  EXPECT_NE(msg.find("node 'g' (Gemm): attribute 'alpha' must be of type FLOAT, got INT"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, FloatModNeedsFmod) {
  ModelBuilder b(13);
  b.Input("a", {"3"});
  b.Input("b", {"3"});
  b.Node("Mod", {"a", "b"}, {"y"}, "m");
  b.Output("y");
  const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("mod.onnx")); });
  EXPECT_NE(msg.find("node 'm' (Mod): attribute 'fmod' must be 1 for floating-point inputs"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, RawDataLengthMismatch) {
  ModelBuilder b(13);
  b.Input("x", {"4"});
  TensorProto* t = b.g().add_initializer();
  t->set_name("w");
  t->set_data_type(TensorProto::FLOAT);
  t->add_dims(4);
  t->set_raw_data(std::string(10, '\0'));  // 4 floats need 16 bytes
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("raw.onnx")); });
  EXPECT_NE(msg.find("initializer 'w': raw_data has 10 bytes"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, ExternalData) {
  ModelBuilder b(13);
  b.Input("x", {"2"});
  TensorProto* t = b.g().add_initializer();
  t->set_name("w");
  t->set_data_type(TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(TensorProto::EXTERNAL);
  auto* loc = t->add_external_data();
  loc->set_key("location");
  loc->set_value("weights_missing.bin");
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  std::string msg = ErrorOf([&] { ImportOnnx(b.Save("external_missing.onnx")); });
  EXPECT_NE(msg.find("initializer 'w': external data file"), std::string::npos) << msg;

  // Present file: 8 bytes at offset 4, then a length past the end.
  const float values[2] = {1.5f, -2.0f};
  WriteBytes("weights.bin", std::string(4, '\0') + std::string(reinterpret_cast<const char*>(values), 8));
  loc->set_value("weights.bin");
  auto* off = t->add_external_data();
  off->set_key("offset");
  off->set_value("4");
  auto* len = t->add_external_data();
  len->set_key("length");
  len->set_value("8");
  const auto out = RunModel(b.Save("external.onnx"), {{"x", F32({2}, {1, 1})}});
  ExpectNear(out.at("y"), {2.5, -1.0});
  len->set_value("16");
  msg = ErrorOf([&] { ImportOnnx(b.Save("external_long.onnx")); });
  EXPECT_NE(msg.find("exceeds the 12 bytes"), std::string::npos) << msg;
}

// Sizes in initializers are checked before anything is allocated: dims whose product overflows,
// negative dims, and an external length that claims more than the file holds.
TEST(OnnxImportErrors, InitializerSizesAreChecked) {
  auto model = [](std::vector<int64_t> dims, const std::string& raw) {
    ModelBuilder b(13);
    b.Input("x", {"4"});
    TensorProto* t = b.g().add_initializer();
    t->set_name("w");
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(raw);
    b.Node("Add", {"x", "w"}, {"y"});
    b.Output("y");
    return b;
  };
  std::string msg = ErrorOf([&] { ImportOnnx(model({int64_t{1} << 40, int64_t{1} << 40}, std::string(16, '\0')).Save("ovf.onnx")); });
  EXPECT_NE(msg.find("initializer 'w': element count overflows int64"), std::string::npos) << msg;
  msg = ErrorOf([&] { ImportOnnx(model({int64_t{1} << 62}, std::string(16, '\0')).Save("bytes.onnx")); });
  EXPECT_NE(msg.find("initializer 'w': byte size overflows"), std::string::npos) << msg;
  msg = ErrorOf([&] { ImportOnnx(model({-4}, std::string(16, '\0')).Save("neg.onnx")); });
  EXPECT_NE(msg.find("initializer 'w': negative dimension -4"), std::string::npos) << msg;
  // 2^20 x 2^20 floats (4 TiB) over 16 bytes of raw_data: refused by the length, not allocated.
  msg = ErrorOf([&] { ImportOnnx(model({int64_t{1} << 20, int64_t{1} << 20}, std::string(16, '\0')).Save("big.onnx")); });
  EXPECT_NE(msg.find("raw_data has 16 bytes, shape [1048576, 1048576] of f32 needs 4398046511104"), std::string::npos)
      << msg;
}

void AttrInts(::onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// A 1-D MaxPool with dilation 2 (strided slices): y[i] = max(x[i], x[i + 2]).
TEST(OnnxImport, DilatedMaxPool1D) {
  ModelBuilder b(12);
  b.Input("x", {"1", "1", "6"});
  b.Output("y");
  auto* n = b.Node("MaxPool", {"x"}, {"y"});
  AttrInts(n, "kernel_shape", {2});
  AttrInts(n, "dilations", {2});
  auto out = RunModel(b.Save("dilated_maxpool.onnx"), {{"x", F32({1, 1, 6}, {1, 5, 2, 0, 7, 3})}});
  EXPECT_EQ(out.at("y").shape(), (Shape{1, 1, 4}));
  ExpectNear(out.at("y"), {2, 5, 7, 3});
}

// MaxPool's Indices are flat over the whole input (the second image's plane starts at 8), first
// of equal values; storage_order 1 counts h fastest (h + 2 w).
TEST(OnnxImport, MaxPoolIndices) {
  for (const int64_t order : {0, 1}) {
    ModelBuilder b(12);
    b.Input("x", {"2", "1", "2", "4"});
    b.Output("y");
    b.Output("i");
    auto* n = b.Node("MaxPool", {"x"}, {"y", "i"});
    AttrInts(n, "kernel_shape", {2, 2});
    AttrInts(n, "strides", {2, 2});
    AttrInt(n, "storage_order", order);
    auto out = RunModel(b.Save("maxpool_indices.onnx"),
                        {{"x", F32({2, 1, 2, 4}, {1, 5, 2, 0, 7, 3, 3, 9, 4, 4, 8, 1, 0, 6, 2, 8})}});
    ExpectNear(out.at("y"), {7, 9, 6, 8});
    const Tensor& i = out.at("i");
    ASSERT_EQ(i.dtype(), DType::Int64);
    const std::vector<int64_t> want = order == 0 ? std::vector<int64_t>{4, 7, 13, 10} : std::vector<int64_t>{1, 7, 11, 12};
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(i.data_as<int64_t>()[k], want[static_cast<size_t>(k)]) << k;
  }
}

// AveragePool with ceil_mode: the last window holds only x[4]; count_include_pad does not count the
// ceil overhang (torch, onnxruntime).
TEST(OnnxImport, AveragePoolCeilMode) {
  for (const int64_t include : {0, 1}) {
    ModelBuilder b(11);
    b.Input("x", {"1", "1", "5"});
    b.Output("y");
    auto* n = b.Node("AveragePool", {"x"}, {"y"});
    AttrInts(n, "kernel_shape", {2});
    AttrInts(n, "strides", {2});
    AttrInt(n, "ceil_mode", 1);
    AttrInt(n, "count_include_pad", include);
    auto out = RunModel(b.Save("avgpool_ceil.onnx"), {{"x", F32({1, 1, 5}, {1, 2, 3, 4, 5})}});
    EXPECT_EQ(out.at("y").shape(), (Shape{1, 1, 3}));
    ExpectNear(out.at("y"), {1.5, 3.5, 5});
  }
}

// Gather with runtime int64 indices (an embedding lookup, negative indices from the end) on axis
// 0 and on a middle axis: y = data.take(indices, axis).
TEST(OnnxImport, GatherRuntimeIndices) {
  {
    ModelBuilder b(13);
    b.Input("table", {"3", "2"});
    b.Input("ids", {"batch", "2"}, ::onnx::TensorProto::INT64);
    b.Output("y");
    b.Node("Gather", {"table", "ids"}, {"y"});
    auto out = RunModel(b.Save("gather_rows.onnx"),
                        {{"table", F32({3, 2}, {1, 2, 3, 4, 5, 6})},
                         {"ids", Tensor::FromDoubles(DType::Int64, {2, 2}, std::vector<double>{2, 0, 1, -1})}});
    EXPECT_EQ(out.at("y").shape(), (Shape{2, 2, 2}));
    ExpectNear(out.at("y"), {5, 6, 1, 2, 3, 4, 5, 6});
  }
  {
    ModelBuilder b(13);
    b.Input("x", {"2", "3", "2"});
    b.Input("i", {"2"}, ::onnx::TensorProto::INT64);
    b.Output("y");
    AttrInt(b.Node("Gather", {"x", "i"}, {"y"}), "axis", 1);
    std::vector<double> x(12);
    for (int k = 0; k < 12; ++k) x[static_cast<size_t>(k)] = k;
    auto out = RunModel(b.Save("gather_axis1.onnx"),
                        {{"x", F32({2, 3, 2}, x)}, {"i", Tensor::FromDoubles(DType::Int64, {2}, std::vector<double>{2, 0})}});
    EXPECT_EQ(out.at("y").shape(), (Shape{2, 2, 2}));
    ExpectNear(out.at("y"), {4, 5, 0, 1, 10, 11, 6, 7});
  }
}

// MaxUnpool puts each value at its flat index over the unpooled [1, 1, 2, 4] and zeros elsewhere.
TEST(OnnxImport, MaxUnpoolScattersToIndices) {
  ModelBuilder b(11);
  b.Input("x", {"1", "1", "1", "2"});
  b.InitInts("i", {7, 0});
  b.g().mutable_initializer()->rbegin()->clear_dims();
  for (int64_t d : {1, 1, 1, 2}) b.g().mutable_initializer()->rbegin()->add_dims(d);
  b.Output("y");
  auto* n = b.Node("MaxUnpool", {"x", "i"}, {"y"});
  AttrInts(n, "kernel_shape", {2, 2});
  AttrInts(n, "strides", {2, 2});
  auto out = RunModel(b.Save("maxunpool.onnx"), {{"x", F32({1, 1, 1, 2}, {3, 4})}});
  EXPECT_EQ(out.at("y").shape(), (Shape{1, 1, 2, 4}));
  ExpectNear(out.at("y"), {4, 0, 0, 0, 0, 0, 0, 3});
}

// Cubic Resize at scale 1 on the width and 2 on nothing else is the identity; asymmetric 2x keeps
// the even outputs equal to the input (integer source coordinates take one tap).
TEST(OnnxImport, CubicResizeAsymmetricKeepsSamples) {
  ModelBuilder b(13);
  b.Input("x", {"1", "1", "1", "4"});
  b.Init("roi", {0}, {});
  b.Init("scales", {4}, {1, 1, 1, 2});
  b.Output("y");
  auto* n = b.Node("Resize", {"x", "roi", "scales"}, {"y"});
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(::onnx::AttributeProto::STRING);
  mode->set_s("cubic");
  auto* ct = n->add_attribute();
  ct->set_name("coordinate_transformation_mode");
  ct->set_type(::onnx::AttributeProto::STRING);
  ct->set_s("asymmetric");
  auto out = RunModel(b.Save("resize_cubic.onnx"), {{"x", F32({1, 1, 1, 4}, {1, 2, 4, 8})}});
  ASSERT_EQ(out.at("y").shape(), (Shape{1, 1, 1, 8}));
  for (int64_t k = 0; k < 4; ++k) EXPECT_NEAR(out.at("y").GetDouble(2 * k), std::pow(2.0, k), 1e-6);
  // Keys' weights at t = 1/2 with A = -0.75: (-0.09375, 0.59375, 0.59375, -0.09375), edge-clamped.
  EXPECT_NEAR(out.at("y").GetDouble(1), -0.09375 * 1 + 0.59375 * 1 + 0.59375 * 2 - 0.09375 * 4, 1e-6);
}

// ---- the ONNX backend node tests: a floor through the C++ path ------------------------------------
TEST(OnnxNodeTests, FixedListPasses) {
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const char* tests[] = {
      "test_add", "test_add_bcast", "test_sub", "test_mul", "test_div", "test_max_example", "test_min_example",
      "test_abs", "test_neg", "test_sqrt", "test_exp", "test_log", "test_tanh", "test_sigmoid", "test_relu",
      "test_leakyrelu", "test_celu", "test_prelu_broadcast", "test_softmax_axis_1", "test_logsoftmax_axis_1",
      "test_matmul_2d", "test_gemm_transposeB", "test_reshape_reordered_all_dims", "test_transpose_default",
      "test_concat_2d_axis_0", "test_slice", "test_flatten_axis1", "test_unsqueeze_axis_0",
      "test_conv_with_strides_padding", "test_maxpool_2d_default", "test_averagepool_2d_default",
      "test_batchnorm_example", "test_reduce_mean_default_axes_keepdims_example", "test_gather_0",
      "test_layer_normalization_2d_axis0", "test_clip"};
  for (const char* name : tests) {
    const NodeTestResult r = RunNodeTest((root / name).string());
    EXPECT_EQ(r.status, NodeTestResult::Status::Passed) << name << ": " << r.reason;
  }
}

}  // namespace
}  // namespace backplane::onnx
