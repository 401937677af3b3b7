// The graph reader: every malformed document gets a located error.
#include "backplane/ir/graph.hpp"

#include <gtest/gtest.h>

#include "backplane/error.hpp"
#include "support/test_support.hpp"

namespace backplane::ir {
namespace {

std::string Doc(const std::string& nodes, const std::string& extra = "") {
  return R"({"format": "backplane.graph", "version": 1,
             "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch", 4]}],
             "params": [{"name": "w", "dtype": "f32", "shape": [4, 2], "init": {"kind": "normal", "std": 0.1, "seed": 3}}],
             "nodes": )" + nodes + R"(, "outputs": ["y"])" + extra + "}";
}

TEST(GraphReader, ParsesAndWritesBack) {
  const Graph g = ParseGraph(Doc(R"([{"op": "math.matmul", "inputs": ["x", "w"], "outputs": ["y"]}])"));
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].shape[0].symbol, "batch");
  EXPECT_EQ(g.inputs[0].shape[1].size, 4);
  ASSERT_EQ(g.params.size(), 1u);
  EXPECT_EQ(g.params[0].init.kind, "normal");
  EXPECT_EQ(g.params[0].init.seed, 3u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].name, "y");
  const Graph again = ParseGraph(WriteGraph(g));
  EXPECT_EQ(WriteGraph(again), WriteGraph(g));
}

TEST(GraphReader, TypesAttributesByTheCatalog) {
  const Graph g = ParseGraph(Doc(R"([{"op": "activation.leaky_relu", "inputs": ["x"], "outputs": ["y"],
                                      "attrs": {"alpha": 1}}])"));
  EXPECT_EQ(std::get<double>(g.nodes[0].attrs.at("alpha")), 1.0);
  const Graph h = ParseGraph(Doc(R"([{"op": "shape.reshape", "inputs": ["x"], "outputs": ["y"],
                                      "attrs": {"shape": [2.0, -1]}}])"));
  EXPECT_EQ(std::get<std::vector<int64_t>>(h.nodes[0].attrs.at("shape")), (std::vector<int64_t>{2, -1}));
}

TEST(GraphReader, LocatesEveryError) {
  struct Case {
    std::string doc;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"{not json", {"malformed JSON"}},
      {Doc(R"([{"op": "activation.leaky_relu", "inputs": ["x"], "outputs": ["y"], "attrs": {"alpha": 1e999}}])"),
       {"malformed JSON", "number overflow"}},  // found by fuzz_graph_json
      {R"({"format": "backplane.graph", "version": 2, "nodes": [], "outputs": []})", {"$.version", "unsupported version 2"}},
      {R"({"format": "onnx", "version": 1, "nodes": [], "outputs": []})", {"$.format"}},
      {Doc("[]", R"(, "extra": 1)"), {"$.extra", "unknown field"}},
      {Doc(R"([{"op": "no.such.op", "inputs": ["x"], "outputs": ["y"]}])"), {"$.nodes[0].op", "no.such.op"}},
      {Doc(R"([{"op": "math.matmul", "inputs": ["x", "w"], "outputs": ["y"], "colour": 1}])"), {"$.nodes[0].colour"}},
      {Doc(R"([{"op": "math.matmul", "inputs": ["x", "w"], "outputs": ["x"]}])"), {"$.nodes[0].outputs[0]", "duplicate name 'x'"}},
      {Doc(R"([{"op": "activation.leaky_relu", "inputs": ["x"], "outputs": ["y"], "attrs": {"alpha": "big"}}])"),
       {"$.nodes[0].attrs.alpha", "number"}},
      {Doc(R"([{"op": "activation.leaky_relu", "inputs": ["x"], "outputs": ["y"], "attrs": {"beta": 1}}])"),
       {"$.nodes[0].attrs.beta", "unknown attribute"}},
      {Doc(R"([{"op": "shape.reshape", "inputs": ["x"], "outputs": ["y"], "attrs": {"shape": [1.5]}}])"),
       {"$.nodes[0].attrs.shape[0]", "integer"}},
      {Doc(R"([{"name": "n", "op": "activation.relu", "inputs": ["x"], "outputs": ["y"]},
              {"name": "n", "op": "activation.relu", "inputs": ["y"], "outputs": ["z"]}])"),
       {"$.nodes[1].name", "duplicate node name"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.doc);
    std::vector<std::string> fragments = c.fragments;
    fragments.push_back("test.json");
    EXPECT_TRUE(test::ThrowsError([&] { ParseGraph(c.doc, "test.json"); }, ErrorCode::InvalidArgument,
                                  std::initializer_list<std::string>{}));
    try {
      ParseGraph(c.doc, "test.json");
    } catch (const Error& e) {
      for (const std::string& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace backplane::ir
