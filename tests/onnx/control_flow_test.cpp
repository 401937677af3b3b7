// ONNX control flow, sequences and optionals: hand-built ModelProtos (If, Loop, Scan bodies with
// outer-scope references and shadowed names) run through ImportOnnx + the CPU executor against
// values worked out by hand, and the one-line errors of what import-time resolution cannot do.
#include <fmt/format.h>
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
using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

const ModelOptions kControl{.graph_name = "control", .save_dir = "backplane_onnx_control_tests", .ir_version = 8, .node_name = "",
                                .node_outputs_are_graph_outputs = false};

void AddInput(GraphProto& g, const std::string& name, std::vector<int64_t> dims, int elem = TensorProto::FLOAT) {
  auto* t = g.add_input();
  t->set_name(name);
  auto* tt = t->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

void AddSequenceInput(GraphProto& g, const std::string& name) {
  auto* t = g.add_input();
  t->set_name(name);
  t->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
}

NodeProto* AddNode(GraphProto& g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(out.at(0));
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

void AddInit(GraphProto& g, const std::string& name, std::vector<int64_t> dims, std::vector<double> values, int elem) {
  TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) {
    if (elem == TensorProto::FLOAT) t->add_float_data(static_cast<float>(v));
    if (elem == TensorProto::INT64) t->add_int64_data(static_cast<int64_t>(v));
    if (elem == TensorProto::BOOL) t->add_int32_data(v != 0.0 ? 1 : 0);
  }
}

Tensor F32(Shape shape, std::vector<double> v) { return Tensor::FromDoubles(DType::Float32, std::move(shape), v); }

std::map<std::string, Tensor> RunImported(const std::string& path, const std::map<std::string, Tensor>& inputs,
                                  const ImportOptions& options = {}) {
  ImportResult r = ImportOnnx(path, options);
  auto backend = cpu::CreateBackend();
  runtime::Executor ex(std::move(r.graph), *backend);
  ex.LoadParams(r.initializers);
  return ex.Run(inputs);
}

void ExpectValues(const Tensor& t, Shape shape, const std::vector<double>& want) {
  ASSERT_EQ(t.shape(), shape);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(t.GetDouble(i), want[static_cast<size_t>(i)], 1e-6) << "element " << i;
}

template <class Fn>
std::string ErrorOf(Fn fn, ErrorCode code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no error";
  return "";
}

// If with an initializer condition: only the taken branch is imported; it reads the outer x.
std::string IfModel(bool cond, bool runtime_cond) {
  ModelBuilder b(13, kControl);
  AddInput(b.g(), "x", {3});
  if (runtime_cond) {
    AddInput(b.g(), "c", {}, TensorProto::BOOL);
  } else {
    AddInit(b.g(), "c", {}, {cond ? 1.0 : 0.0}, TensorProto::BOOL);
  }
  AddInit(b.g(), "one", {}, {1}, TensorProto::FLOAT);
  auto* n = AddNode(b.g(), "If", {"c"}, {"r"});
  GraphProto* then_g = AttrGraph(n, "then_branch");
  AddNode(*then_g, "Add", {"x", "one"}, {"y"});
  then_g->add_output()->set_name("y");
  GraphProto* else_g = AttrGraph(n, "else_branch");
  AddNode(*else_g, "Neg", {"x"}, {"y"});  // the same local name in the other branch
  else_g->add_output()->set_name("y");
  b.g().add_output()->set_name("r");
  return b.Save(fmt::format("if_{}_{}.onnx", cond, runtime_cond));
}

TEST(OnnxControlFlow, IfImportsTheTakenBranch) {
  const Tensor x = F32({3}, {1, -2, 5});
  ExpectValues(RunImported(IfModel(true, false), {{"x", x}}).at("r"), {3}, {2, -1, 6});
  ExpectValues(RunImported(IfModel(false, false), {{"x", x}}).at("r"), {3}, {-1, 2, -5});
}

TEST(OnnxControlFlow, IfWithRuntimeConditionIsRefused) {
  const std::string msg = ErrorOf([] { ImportOnnx(IfModel(true, true)); }, ErrorCode::NotImplemented);
  EXPECT_NE(msg.find("node 'r' (If)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only known at run time"), std::string::npos) << msg;
}

// Loop with a trip count: y <- y * k (k an outer initializer), scan output each y. The body's
// local 't' shadows the outer 't', which must keep its own value.
std::string LoopModel(int64_t trip, bool runtime_cond) {
  ModelBuilder b(13, kControl);
  AddInput(b.g(), "y0", {2});
  AddInput(b.g(), "flag", {}, TensorProto::BOOL);
  AddInit(b.g(), "m", {}, {static_cast<double>(trip)}, TensorProto::INT64);
  AddInit(b.g(), "cond", {}, {1}, TensorProto::BOOL);
  AddInit(b.g(), "k", {}, {2}, TensorProto::FLOAT);
  AddNode(b.g(), "Neg", {"y0"}, {"t"});
  auto* n = AddNode(b.g(), "Loop", {"m", "cond", "y0"}, {"y", "ys"});
  GraphProto* body = AttrGraph(n, "body");
  AddInput(*body, "i", {}, TensorProto::INT64);
  AddInput(*body, "c_in", {}, TensorProto::BOOL);
  AddInput(*body, "y_in", {2});
  AddNode(*body, "Identity", {runtime_cond ? "flag" : "c_in"}, {"c_out"});
  AddNode(*body, "Mul", {"y_in", "k"}, {"t"});
  AddNode(*body, "Identity", {"t"}, {"scan"});
  for (const char* o : {"c_out", "t", "scan"}) body->add_output()->set_name(o);
  for (const char* o : {"y", "ys", "t"}) b.g().add_output()->set_name(o);
  return b.Save(fmt::format("loop_{}_{}.onnx", trip, runtime_cond));
}

TEST(OnnxControlFlow, LoopUnrollsCarriedAndScanOutputs) {
  const auto out = RunImported(LoopModel(3, false), {{"y0", F32({2}, {1, -3})}, {"flag", Tensor::FromDoubles(DType::Bool, {}, std::vector<double>{1})}});
  ExpectValues(out.at("y"), {2}, {8, -24});
  ExpectValues(out.at("ys"), {3, 2}, {2, -6, 4, -12, 8, -24});
  ExpectValues(out.at("t"), {2}, {-1, 3});  // the outer t, not the body's
}

TEST(OnnxControlFlow, LoopStopsWhenTheConditionFoldsFalse) {
  // No trip count; cond_out = i < 2, so iterations 0, 1, 2 run (the third yields false).
  ModelBuilder b(13, kControl);
  AddInput(b.g(), "y0", {1});
  AddInit(b.g(), "two", {}, {2}, TensorProto::INT64);
  AddInit(b.g(), "cond", {}, {1}, TensorProto::BOOL);
  auto* n = AddNode(b.g(), "Loop", {"", "cond", "y0"}, {"y"});
  GraphProto* body = AttrGraph(n, "body");
  AddInput(*body, "i", {}, TensorProto::INT64);
  AddInput(*body, "c_in", {}, TensorProto::BOOL);
  AddInput(*body, "y_in", {1});
  AddNode(*body, "Less", {"i", "two"}, {"c_out"});
  AddNode(*body, "Add", {"y_in", "y_in"}, {"y_out"});
  body->add_output()->set_name("c_out");
  body->add_output()->set_name("y_out");
  b.g().add_output()->set_name("y");
  ExpectValues(RunImported(b.Save("loop_cond.onnx"), {{"y0", F32({1}, {3})}}).at("y"), {1}, {24});
}

TEST(OnnxControlFlow, LoopErrors) {
  std::string msg = ErrorOf([] { ImportOnnx(LoopModel(5000, false)); }, ErrorCode::NotImplemented);
  EXPECT_NE(msg.find("more than 4096 iterations"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(Loop)"), std::string::npos) << msg;
  msg = ErrorOf([] { ImportOnnx(LoopModel(3, true)); }, ErrorCode::NotImplemented);
  EXPECT_NE(msg.find("condition output at iteration 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only known at run time"), std::string::npos) << msg;
}

// Scan (opset 11): running sum over x's rows in reverse, scan output stacked along axis 1.
TEST(OnnxControlFlow, ScanReverseWithOutputAxis) {
  ModelBuilder b(11, kControl);
  AddInput(b.g(), "s0", {2});
  AddInput(b.g(), "x", {3, 2});
  auto* n = AddNode(b.g(), "Scan", {"s0", "x"}, {"s", "z"});
  AttrInt(n, "num_scan_inputs", 1);
  AttrInts(n, "scan_input_directions", {1});
  AttrInts(n, "scan_output_axes", {1});
  GraphProto* body = AttrGraph(n, "body");
  AddInput(*body, "s_in", {2});
  AddInput(*body, "row", {2});
  AddNode(*body, "Add", {"s_in", "row"}, {"s_out"});
  AddNode(*body, "Identity", {"s_out"}, {"z_out"});
  body->add_output()->set_name("s_out");
  body->add_output()->set_name("z_out");
  b.g().add_output()->set_name("s");
  b.g().add_output()->set_name("z");
  const auto out = RunImported(b.Save("scan.onnx"), {{"s0", F32({2}, {100, 200})}, {"x", F32({3, 2}, {1, 2, 3, 4, 5, 6})}});
  ExpectValues(out.at("s"), {2}, {109, 212});
  // Steps see rows 2, 1, 0: sums (105, 206), (108, 210), (109, 212); column t is step t.
  ExpectValues(out.at("z"), {2, 3}, {105, 108, 109, 206, 210, 212});
}

TEST(OnnxSequences, SplitAtEraseConcat) {
  ModelBuilder b(13, kControl);
  AddInput(b.g(), "x", {3, 2});
  AddInit(b.g(), "last", {}, {-1}, TensorProto::INT64);
  AddInit(b.g(), "first", {}, {0}, TensorProto::INT64);
  auto* split = AddNode(b.g(), "SplitToSequence", {"x"}, {"seq"});
  AttrInt(split, "keepdims", 0);
  AddNode(b.g(), "SequenceAt", {"seq", "last"}, {"row"});
  AddNode(b.g(), "SequenceLength", {"seq"}, {"len"});
  auto* stack = AddNode(b.g(), "ConcatFromSequence", {"seq"}, {"stacked"});
  AttrInt(stack, "axis", 1);
  AttrInt(stack, "new_axis", 1);
  AddNode(b.g(), "SequenceErase", {"seq", "first"}, {"rest"});
  AddNode(b.g(), "Neg", {"row"}, {"neg"});
  AddNode(b.g(), "SequenceInsert", {"rest", "neg", "first"}, {"rest2"});
  auto* cat = AddNode(b.g(), "ConcatFromSequence", {"rest2"}, {"cat"});
  AttrInt(cat, "axis", 0);
  for (const char* o : {"row", "len", "stacked", "cat"}) b.g().add_output()->set_name(o);
  const auto out = RunImported(b.Save("seq.onnx"), {{"x", F32({3, 2}, {1, 2, 3, 4, 5, 6})}});
  ExpectValues(out.at("row"), {2}, {5, 6});
  ExpectValues(out.at("len"), {}, {3});
  ExpectValues(out.at("stacked"), {2, 3}, {1, 3, 5, 2, 4, 6});  // rows stacked along axis 1
  ExpectValues(out.at("cat"), {6}, {-5, -6, 3, 4, 5, 6});
}

TEST(OnnxSequences, StructuredInputsAndOutputs) {
  ModelBuilder b(16, kControl);
  AddSequenceInput(b.g(), "xs");
  AddInit(b.g(), "one", {}, {1}, TensorProto::INT64);
  AddNode(b.g(), "SequenceAt", {"xs", "one"}, {"x1"});
  AddNode(b.g(), "Neg", {"x1"}, {"n"});
  AddNode(b.g(), "SequenceConstruct", {"x1", "n"}, {"pair"});
  AddNode(b.g(), "Optional", {"pair"}, {"opt"});
  AddNode(b.g(), "OptionalHasElement", {"opt"}, {"has"});
  b.g().add_output()->set_name("opt");
  b.g().add_output()->set_name("has");
  const std::string path = b.Save("structured.onnx");

  std::string msg = ErrorOf([&] { ImportOnnx(path); }, ErrorCode::NotImplemented);
  EXPECT_NE(msg.find("graph input 'xs' is a sequence"), std::string::npos) << msg;

  ImportOptions io;
  StructuredValue seq;
  seq.kind = StructuredValue::Kind::Sequence;
  for (int i = 0; i < 2; ++i) {
    StructuredValue leaf;
    leaf.tensor = F32({2}, {0, 0});
    leaf.runtime = true;
    seq.items.push_back(leaf);
  }
  io.structured_inputs["xs"] = seq;
  EXPECT_EQ(StructuredLayout(seq), "sequence(tensor, tensor)");
  EXPECT_EQ(ImportOnnx(path, io).structured_outputs.at("opt"), "optional(sequence(tensor, tensor))");
  const auto out = RunImported(path, {{"xs[0]", F32({2}, {1, 2})}, {"xs[1]", F32({2}, {3, -4})}}, io);
  ExpectValues(out.at("opt[0][0]"), {2}, {3, -4});
  ExpectValues(out.at("opt[0][1]"), {2}, {-3, 4});
  ExpectValues(out.at("has"), {}, {1});
}

TEST(OnnxSequences, EmptyOptionalAndOutOfRangePosition) {
  ModelBuilder b(16, kControl);
  AddInput(b.g(), "x", {2});
  auto* opt = AddNode(b.g(), "Optional", {}, {"none"});
  auto* a = opt->add_attribute();
  a->set_name("type");
  a->set_type(AttributeProto::TYPE_PROTO);
  a->mutable_tp()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  AddNode(b.g(), "OptionalHasElement", {"none"}, {"has"});
  AddNode(b.g(), "OptionalGetElement", {"none"}, {"v"});
  b.g().add_output()->set_name("has");
  b.g().add_output()->set_name("v");
  std::string msg = ErrorOf([&] { ImportOnnx(b.Save("opt_none.onnx")); }, ErrorCode::InvalidArgument);
  EXPECT_NE(msg.find("(OptionalGetElement): input 0 'none' is an empty optional"), std::string::npos) << msg;

  ModelBuilder c(13, kControl);
  AddInput(c.g(), "x", {2});
  AddInit(c.g(), "p", {}, {2}, TensorProto::INT64);
  AddNode(c.g(), "SequenceConstruct", {"x", "x"}, {"s"});
  AddNode(c.g(), "SequenceAt", {"s", "p"}, {"y"});
  c.g().add_output()->set_name("y");
  msg = ErrorOf([&] { ImportOnnx(c.Save("seq_at.onnx")); }, ErrorCode::InvalidArgument);
  EXPECT_NE(msg.find("'position' 2 is out of range [-2, 1]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace backplane::onnx
