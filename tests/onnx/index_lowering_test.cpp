// ONNX importer, indexing lowerings (src/onnx/lower_index.cpp): hand-built ModelProtos with
// closed-form results (TopK, ReverseSequence, Compress, Unique and NonZero of constants), and the
// one-line refusals of data-dependent shapes (a runtime Compress condition, NonZero, Unique).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "model_builder.hpp"
#include "onnx_run.hpp"

namespace backplane::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

TEST(OnnxIndex, TopKWithAConstantK) {
  ModelBuilder b(11);
  b.Input("x", {"2", "4"});
  b.InitInts("k", {2});
  auto* n = b.Node("TopK", {"x", "k"}, {"v", "i"});
  AttrInt(n, "largest", 0);
  b.Output("v");
  b.Output("i");
  const auto out = RunModel(b.Save("index_topk.onnx"), {{"x", F32({2, 4}, {3, 1, 2, 1, 0, 5, -1, 5})}});
  ExpectNear(out.at("v"), {1, 1, -1, 0});
  ExpectNear(out.at("i"), {1, 3, 2, 0});
}

TEST(OnnxIndex, ReverseSequenceAlongTime) {
  ModelBuilder b(10);
  b.Input("x", {"3", "2"});  // [time, batch]
  b.InitInts("lens", {3, 2});
  b.Node("ReverseSequence", {"x", "lens"}, {"y"});
  b.Output("y");
  const auto out = RunModel(b.Save("index_revseq.onnx"), {{"x", F32({3, 2}, {0, 1, 2, 3, 4, 5})}});
  ExpectNear(out.at("y"), {4, 3, 2, 1, 0, 5});
}

TEST(OnnxIndex, CompressWithAConstantCondition) {
  ModelBuilder b(11);
  b.Input("x", {"3", "2"});
  TensorProto* c = b.g().add_initializer();
  c->set_name("cond");
  c->set_data_type(TensorProto::BOOL);
  c->add_dims(3);
  for (int v : {1, 0, 1}) c->add_int32_data(v);
  AttrInt(b.Node("Compress", {"x", "cond"}, {"y"}), "axis", -2);
  b.Output("y");
  const auto out = RunModel(b.Save("index_compress.onnx"), {{"x", F32({3, 2}, {0, 1, 2, 3, 4, 5})}});
  ExpectNear(out.at("y"), {0, 1, 4, 5});
}

TEST(OnnxIndex, DataDependentShapesOfRuntimeInputsAreRefused) {
  {
    ModelBuilder b(11);
    b.Input("x", {"3"});
    b.Input("cond", {"3"}, TensorProto::BOOL);
    b.Node("Compress", {"x", "cond"}, {"y"});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save("index_compress_rt.onnx")); });
    EXPECT_NE(msg.find("'condition'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("import-time constant"), std::string::npos) << msg;
  }
  for (const char* op : {"NonZero", "Unique"}) {
    ModelBuilder b(13);
    b.Input("x", {"3"});
    b.Node(op, {"x"}, {"y"});
    b.Output("y");
    const std::string msg = ErrorOf([&] { ImportOnnx(b.Save(std::string("index_") + op + "_rt.onnx")); });
    EXPECT_NE(msg.find("output shape depends on the data"), std::string::npos) << msg;
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
  }
}

TEST(OnnxIndex, UniqueAndNonZeroOfConstantsFold) {
  ModelBuilder b(13);
  b.Init("c", {6}, {2, 1, 2, 0, 1, 2});
  b.Input("x", {"1"});
  b.Node("Unique", {"c"}, {"u", "idx", "inv", "cnt"});
  b.Node("NonZero", {"c"}, {"nz"});
  b.Node("Add", {"u", "x"}, {"y"});
  b.Output("y");
  b.Output("idx");
  b.Output("inv");
  b.Output("cnt");
  b.Output("nz");
  const auto out = RunModel(b.Save("index_unique.onnx"), {{"x", F32({1}, {0})}});
  ExpectNear(out.at("y"), {0, 1, 2});
  ExpectNear(out.at("idx"), {3, 1, 0});
  ExpectNear(out.at("inv"), {2, 1, 2, 0, 1, 2});
  ExpectNear(out.at("cnt"), {1, 2, 3});
  ExpectNear(out.at("nz"), {0, 1, 2, 4, 5});
}

}  // namespace
}  // namespace backplane::onnx
