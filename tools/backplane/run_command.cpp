// backplane run GRAPH.json | MODEL.onnx: run a graph (optionally several steps, e.g. training) from
// files; an .onnx model is imported first (backplane/onnx/importer.hpp).
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "cli_util.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct RunOptions {
  std::string graph;
  std::vector<std::string> inputs;
  std::string params;
  std::vector<std::string> outputs;
  std::string output_dir;
  int steps = 1;
  std::string save_params;
  bool check_finite = false;
  bool quiet = false;
  std::string device = "cpu";
  bool explain = false;
};

void Run(const RunOptions& o) {
  const bool is_onnx = std::filesystem::path(o.graph).extension() == ".onnx";
  onnx::ImportResult imported;
  if (is_onnx) imported = onnx::ImportOnnx(o.graph);
  ir::Graph graph = is_onnx ? std::move(imported.graph) : ir::ReadGraphFile(o.graph);
  std::map<std::string, Tensor> inputs;
  for (const std::string& text : o.inputs) {
    const auto [name, file] = SplitAssignment("--input", text);
    bool known = false;
    for (const ir::ValueSpec& spec : graph.inputs) known = known || spec.name == name;
    if (!known) ThrowInvalidArgument("backplane run", "--input", "a graph input name", "'" + name + "'");
    inputs[name] = io::ReadNpy(file);
  }
  std::map<std::string, std::string> output_files;
  for (const std::string& text : o.outputs) {
    const auto [name, file] = SplitAssignment("--output", text);
    bool known = false;
    for (const std::string& out : graph.outputs) known = known || out == name;
    if (!known) ThrowInvalidArgument("backplane run", "--output", "a graph output name", "'" + name + "'");
    output_files[name] = file;
  }
  auto backend = cpu::CreateBackend();
  const std::unique_ptr<runtime::GraphDevice> device = OpenDeviceOption(o.device);
  runtime::Executor executor(std::move(graph), *backend, {.check_finite_params = o.check_finite, .device = device.get()});
  if (is_onnx) executor.LoadParams(imported.initializers);
  if (!o.params.empty()) {
    const auto tensors = io::ReadSafetensors(o.params);
    std::map<std::string, Tensor> params;
    for (const auto& [name, t] : tensors) {
      if (name.find('/') == std::string::npos) params[name] = t;
    }
    executor.LoadParams(params);
    executor.LoadState(tensors);
  }
  if (o.explain) {
    std::map<std::string, Shape> shapes;
    for (const auto& [name, t] : inputs) shapes[name] = t.shape();
    fmt::print("placement on {}:\n{}", o.device, ExplainPlacement(executor.Placement(shapes)));
  }
  std::map<std::string, Tensor> results;
  for (int step = 1; step <= o.steps; ++step) {
    results = executor.Run(inputs);
    if (o.quiet) continue;
    std::string line = o.steps > 1 ? fmt::format("step {}:", step) : "";
    for (const auto& [name, t] : results) {
      line += fmt::format("{}{} {}", line.empty() ? "" : " ", name, Summarize(t));
    }
    fmt::print("{}\n", line);
  }
  for (const auto& [name, file] : output_files) io::WriteNpy(file, results.at(name));
  if (!o.output_dir.empty()) {
    std::filesystem::create_directories(o.output_dir);
    for (const auto& [name, t] : results) {
      std::string file = name;
      for (char& c : file) {
        if (c == '/' || c == '\\') c = '_';
      }
      io::WriteNpy((std::filesystem::path(o.output_dir) / (file + ".npy")).string(), t);
    }
  }
  if (!o.save_params.empty()) io::WriteSafetensors(o.save_params, executor.SaveParams());
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a graph file on the CPU or a device");
  cmd->add_option("graph", o->graph, "Graph file (JSON) or ONNX model (.onnx)")->required();
  cmd->add_option("--input", o->inputs, "NAME=FILE.npy for a graph input (repeatable)");
  cmd->add_option("--params", o->params, "Parameters (and optimizer state) from a .safetensors file");
  cmd->add_option("--output", o->outputs, "NAME=FILE.npy for a graph output (repeatable)");
  cmd->add_option("--output-dir", o->output_dir, "Write every graph output to DIR/NAME.npy");
  cmd->add_option("--steps", o->steps, "Run the graph this many times (training steps)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--save-params", o->save_params, "Write parameters and state to a .safetensors file");
  cmd->add_flag("--check-finite", o->check_finite, "Reject parameters holding NaN or Inf");
  cmd->add_flag("--quiet", o->quiet, "Print nothing per step");
  cmd->add_option("--device", o->device, "cpu (default), xla[:N] or cuda[:N]: the device the graph is placed on");
  cmd->add_flag("--explain", o->explain, "Print where each node runs (device or CPU fallback, with the reason)");
  cmd->callback([o] { Run(*o); });
}

}  // namespace backplane::cli
