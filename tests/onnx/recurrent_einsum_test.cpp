// ONNX RNN / GRU / LSTM unrolling, Einsum and Pad: hand-built models against hand-computed values
// (closed forms with zero weights where the gates are constants), and the refused cases.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
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

namespace backplane::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

const ModelOptions kRecurrent{.graph_name = "test", .save_dir = "backplane_onnx_recurrent_tests", .ir_version = 8, .node_name = "n",
                                  .node_outputs_are_graph_outputs = false};

Tensor F32(Shape shape, std::vector<double> v) { return Tensor::FromDoubles(DType::Float32, std::move(shape), v); }

std::map<std::string, Tensor> RunModel(const std::string& path, const std::map<std::string, Tensor>& inputs) {
  ImportResult r = ImportOnnx(path);
  auto backend = cpu::CreateBackend();
  runtime::Executor ex(std::move(r.graph), *backend);
  ex.LoadParams(r.initializers);
  return ex.Run(inputs);
}

void Expect(const Tensor& t, Shape shape, const std::vector<double>& want, double tol = 1e-5) {
  EXPECT_EQ(t.shape(), shape);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(t.GetDouble(i), want[static_cast<size_t>(i)], tol) << "element " << i;
}

std::string ErrorOf(const std::string& path) {
  try {
    ImportOnnx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// RNN, hidden 1: h_t = relu(2 x_t + 0.5 h_{t-1} + 1), x = (1, 2).
ModelBuilder RnnModel(const std::string& direction) {
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  ModelBuilder b(14, kRecurrent);
  b.Input("x", {2, 1, 1});
  std::vector<float> w(static_cast<size_t>(dirs), 2.0f), r(static_cast<size_t>(dirs), 0.5f), bias;
  for (int64_t d = 0; d < dirs; ++d) bias.insert(bias.end(), {1.0f, 0.0f});
  b.Init("w", {dirs, 1, 1}, w);
  b.Init("r", {dirs, 1, 1}, r);
  b.Init("b", {dirs, 2}, bias);
  auto* n = b.Node("RNN", {"x", "w", "r", "b"}, {"y", "y_h"});
  AttrString(n, "direction", direction);
  AttrStrings(n, "activations", std::vector<std::string>(static_cast<size_t>(dirs), "Relu"));
  AttrInt(n, "hidden_size", 1);
  b.Output("y");
  b.Output("y_h");
  return b;
}

TEST(OnnxRecurrent, RnnForwardReverseBidirectional) {
  const Tensor x = F32({2, 1, 1}, {1, 2});
  auto out = RunModel(RnnModel("forward").Save("rnn_f.onnx"), {{"x", x}});
  Expect(out.at("y"), {2, 1, 1, 1}, {3, 6.5});
  Expect(out.at("y_h"), {1, 1, 1}, {6.5});
  out = RunModel(RnnModel("reverse").Save("rnn_r.onnx"), {{"x", x}});
  Expect(out.at("y"), {2, 1, 1, 1}, {5.5, 5});
  Expect(out.at("y_h"), {1, 1, 1}, {5.5});
  out = RunModel(RnnModel("bidirectional").Save("rnn_b.onnx"), {{"x", x}});
  Expect(out.at("y"), {2, 2, 1, 1}, {3, 5.5, 6.5, 5});
  Expect(out.at("y_h"), {2, 1, 1}, {6.5, 5.5});
}

TEST(OnnxRecurrent, RnnRefusesRaggedSequenceLensAndUnknownActivations) {
  ModelBuilder b = RnnModel("forward");
  b.g().mutable_node(0)->set_input(3, "b");
  b.g().mutable_node(0)->add_input("lens");
  b.InitInts("lens", {1}, {1}, TensorProto::INT32);
  EXPECT_NE(ErrorOf(b.Save("rnn_lens.onnx")).find("sequence_lens"), std::string::npos);
  ModelBuilder c = RnnModel("forward");
  c.g().mutable_node(0)->mutable_attribute(1)->set_strings(0, "Gelu");
  EXPECT_NE(ErrorOf(c.Save("rnn_act.onnx")).find("activation 'Gelu' is not supported"), std::string::npos);
}

// GRU, hidden 1, R and B zero, W only on the candidate gate: z = r = 1/2, h~ = tanh(x_t),
// H_t = (h~ + H_{t-1}) / 2 with H_0 = 2. Batch-first layout.
TEST(OnnxRecurrent, GruClosedFormLayout1) {
  ModelBuilder b(14, kRecurrent);
  b.Input("x", {1, 2, 1});
  b.Init("w", {1, 3, 1}, {0, 0, 1});
  b.Init("r", {1, 3, 1}, {0, 0, 0});
  b.Init("h0", {1, 1, 1}, {2});
  auto* n = b.Node("GRU", {"x", "w", "r", "", "", "h0"}, {"y", "y_h"});
  AttrInt(n, "hidden_size", 1);
  AttrInt(n, "layout", 1);
  b.Output("y");
  b.Output("y_h");
  const auto out = RunModel(b.Save("gru.onnx"), {{"x", F32({1, 2, 1}, {0.5, -1})}});
  const double h1 = (std::tanh(0.5) + 2) / 2, h2 = (std::tanh(-1.0) + h1) / 2;
  Expect(out.at("y"), {1, 2, 1, 1}, {h1, h2});
  Expect(out.at("y_h"), {1, 1, 1}, {h2});
}

// LSTM, hidden 1, zero weights: i = o = 1/2, c~ = 0, a forget peephole of 1: f = sigmoid(C_{t-1}),
// C_t = f C_{t-1}, H_t = tanh(C_t) / 2, with C_0 = 2.
TEST(OnnxRecurrent, LstmPeepholeClosedForm) {
  ModelBuilder b(14, kRecurrent);
  b.Input("x", {2, 1, 1});
  b.Init("w", {1, 4, 1}, {0, 0, 0, 0});
  b.Init("r", {1, 4, 1}, {0, 0, 0, 0});
  b.Init("c0", {1, 1, 1}, {2});
  b.Init("p", {1, 3}, {0, 0, 1});
  auto* n = b.Node("LSTM", {"x", "w", "r", "", "", "", "c0", "p"}, {"y", "y_h", "y_c"});
  AttrInt(n, "hidden_size", 1);
  b.Output("y");
  b.Output("y_h");
  b.Output("y_c");
  const auto out = RunModel(b.Save("lstm.onnx"), {{"x", F32({2, 1, 1}, {3, 4})}});
  const double c1 = 2 * Sigmoid(2), c2 = c1 * Sigmoid(c1);
  Expect(out.at("y"), {2, 1, 1, 1}, {std::tanh(c1) / 2, std::tanh(c2) / 2});
  Expect(out.at("y_h"), {1, 1, 1}, {std::tanh(c2) / 2});
  Expect(out.at("y_c"), {1, 1, 1}, {c2});
}

std::map<std::string, Tensor> Einsum(const std::string& eq, const std::vector<std::pair<std::string, Tensor>>& ins) {
  ModelBuilder b(12, kRecurrent);
  std::vector<std::string> names;
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, t] : ins) {
    b.Input(name, t.shape());
    names.push_back(name);
    feeds.emplace(name, t);
  }
  auto* n = b.Node("Einsum", names, {"y"});
  AttrString(n, "equation", eq);
  b.Output("y");
  return RunModel(b.Save("einsum.onnx"), feeds);
}

TEST(OnnxEinsum, HandComputedCases) {
  const Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor m = F32({3, 2}, {1, 0, 0, 1, 1, 1});
  Expect(Einsum("ij,jk->ik", {{"a", a}, {"m", m}}).at("y"), {2, 2}, {4, 5, 10, 11});
  Expect(Einsum("ij->ji", {{"a", a}}).at("y"), {3, 2}, {1, 4, 2, 5, 3, 6});
  Expect(Einsum("ij->i", {{"a", a}}).at("y"), {2}, {6, 15});
  Expect(Einsum("ij", {{"a", a}}).at("y"), {2, 3}, {1, 2, 3, 4, 5, 6});  // implicit: sorted labels
  Expect(Einsum("ji", {{"a", a}}).at("y"), {3, 2}, {1, 4, 2, 5, 3, 6});  // implicit output "ij"
  const Tensor v = F32({3}, {1, 2, 3});
  Expect(Einsum("i,i", {{"v", v}, {"w", F32({3}, {4, 5, 6})}}).at("y"), {}, {32});
  Expect(Einsum("i,j->ij", {{"v", v}, {"w", F32({2}, {1, -1})}}).at("y"), {3, 2}, {1, -1, 2, -2, 3, -3});
  const Tensor sq = F32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Expect(Einsum("ii->i", {{"s", sq}}).at("y"), {3}, {1, 5, 9});
  Expect(Einsum("ii", {{"s", sq}}).at("y"), {}, {15});  // the trace
  const Tensor batch = F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Expect(Einsum("...ii->...i", {{"s", batch}}).at("y"), {2, 2}, {1, 4, 5, 8});
  // bij,bjk->bik with the identity and a swap as the right operands.
  const Tensor rhs = F32({2, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 0});
  Expect(Einsum("bij,bjk->bik", {{"a", batch}, {"r", rhs}}).at("y"), {2, 2, 2}, {1, 2, 3, 4, 6, 5, 8, 7});
  // A label summed within one operand and a contraction: sum_j a_ij * sum_k m_k... (ij,k->i).
  Expect(Einsum("ij,k->i", {{"a", a}, {"v", v}}).at("y"), {2}, {36, 90});
}

TEST(OnnxPad, ConstantEdgeReflect) {
  auto pad = [](const std::string& mode, std::vector<int64_t> pads) {
    ModelBuilder b(13, kRecurrent);
    b.Input("x", {1, 3});
    b.InitInts("pads", {4}, pads);
    auto* n = b.Node("Pad", {"x", "pads"}, {"y"});
    AttrString(n, "mode", mode);
    b.Output("y");
    return RunModel(b.Save("pad.onnx"), {{"x", F32({1, 3}, {1, 2, 3})}}).at("y");
  };
  Expect(pad("constant", {0, 1, 0, 2}), {1, 6}, {0, 1, 2, 3, 0, 0});
  Expect(pad("edge", {1, 2, 0, 1}), {2, 6}, {1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3});
  Expect(pad("reflect", {0, 2, 0, 2}), {1, 7}, {3, 2, 1, 2, 3, 2, 1});
  Expect(pad("constant", {0, -1, 0, 1}), {1, 3}, {2, 3, 0});
}

}  // namespace
}  // namespace backplane::onnx
