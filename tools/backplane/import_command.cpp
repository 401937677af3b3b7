// backplane import MODEL.onnx -o GRAPH.json: an ONNX model to a graph file plus GRAPH.safetensors
// with its initializers; backplane onnx-test DIR...: ONNX backend test directories, one JSON line
// each (what scripts/onnx-node-tests.py runs).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/atomic_file.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/onnx/node_test.hpp"
#include "cli_util.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

namespace fs = std::filesystem;

struct ImportCmdOptions {
  std::string model;
  std::string output;
  std::vector<std::string> binds;
};

void Import(const ImportCmdOptions& o) {
  onnx::ImportOptions options;
  for (const std::string& text : o.binds) {
    const auto [name, file] = SplitAssignment("--bind", text);
    options.bind_inputs[name] = io::ReadNpy(file);
  }
  onnx::ImportResult r = onnx::ImportOnnx(o.model, options);
  const fs::path out(o.output);
  if (!r.initializers.empty()) {
    const fs::path weights = fs::path(out).replace_extension(".safetensors");
    io::WriteSafetensors(weights.string(), r.initializers, {{"source", fs::path(o.model).filename().string()}});
    onnx::PointParamsAtFile(r.graph, weights.filename().string());
  }
  const std::string json = ir::WriteGraph(r.graph);
  io::WriteFileAtomically(out.string(), {json});
  fmt::print("{}: opset {}, {} ONNX op types -> {} catalog nodes, {} parameters\n", o.model, r.opset, r.op_types.size(),
             r.graph.nodes.size(), r.graph.params.size());
}

struct NodeTestCmdOptions {
  std::vector<std::string> dirs;
  double rtol = 1e-3;
  double atol = 1e-5;
  bool no_bind = false;
};

void NodeTests(const NodeTestCmdOptions& o) {
  onnx::NodeTestOptions options{o.rtol, o.atol, !o.no_bind};
  for (const std::string& dir : o.dirs) {
    const onnx::NodeTestResult r = onnx::RunNodeTest(dir, options);
    nlohmann::json line = {{"test", fs::path(dir).filename().string()},
                           {"status", std::string(onnx::StatusName(r.status))},
                           {"reason", r.reason},
                           {"op_types", r.op_types},
                           {"data_sets", r.data_sets},
                           {"max_abs_error", r.max_abs_error}};
    fmt::print("{}\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

}  // namespace

void AddImportCommand(CLI::App& app) {
  auto o = std::make_shared<ImportCmdOptions>();
  CLI::App* cmd = app.add_subcommand("import", "Import an ONNX model into a graph file (+ .safetensors)");
  cmd->add_option("model", o->model, "ONNX model (.onnx)")->required();
  cmd->add_option("-o,--output", o->output, "Graph file to write (JSON)")->required();
  cmd->add_option("--bind", o->binds, "NAME=FILE.npy: bind a graph input to a constant (repeatable)");
  cmd->callback([o] { Import(*o); });

  auto t = std::make_shared<NodeTestCmdOptions>();
  CLI::App* test = app.add_subcommand("onnx-test", "Run ONNX backend test directories; one JSON line each");
  test->add_option("dirs", t->dirs, "Test directories (model.onnx, test_data_set_*)")->required();
  test->add_option("--rtol", t->rtol, "Relative tolerance (ONNX backend tests: 1e-3)");
  test->add_option("--atol", t->atol, "Absolute tolerance (ONNX backend tests: 1e-5)");
  test->add_flag("--no-bind", t->no_bind, "Keep integer inputs as runtime inputs (default: bind as constants)");
  test->callback([t] { NodeTests(*t); });
}

}  // namespace backplane::cli
