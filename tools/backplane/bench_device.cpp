// backplane bench --device xla: graphs on a graph device beside the CPU backend in one run (the
// transformer block example, a digits training step, optionally an ONNX model), with the device's
// compile time (its first run minus a steady run) kept apart from its run time.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu_info.hpp"
#include "backplane/error.hpp"
#include "backplane/onnx/importer.hpp"
#include "backplane/runtime/executor.hpp"
#include "bench_device.hpp"

namespace backplane::cli {
namespace {

struct Workload {
  std::string name;
  ir::Graph graph;
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> params;  // loaded into both executors (ONNX initializers)
};

Tensor Filled(DType dtype, const Shape& shape, double scale, int64_t modulo) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.SetDouble(i, modulo > 0 ? static_cast<double>((i * 7 + 3) % modulo) : scale * static_cast<double>((i * 37) % 101) / 101.0);
  }
  return t;
}

std::vector<Workload> Workloads(const std::string& onnx_model) {
  const std::string src = BACKPLANE_SOURCE_DIR;
  std::vector<Workload> w;
  w.push_back({"transformer block, ids [4, 64]", ir::ReadGraphFile(src + "/examples/transformer/block.json"),
               {{"ids", Filled(DType::Int32, {4, 64}, 0, 32)}}, {}});
  w.push_back({"digits training step, batch 32", ir::ReadGraphFile(src + "/examples/digits/train.json"),
               {{"x", Filled(DType::Float32, {32, 64}, 16, 0)}, {"y", Filled(DType::Int32, {32}, 0, 10)}}, {}});
  if (!onnx_model.empty()) {
    onnx::ImportResult imported = onnx::ImportOnnx(onnx_model);
    std::map<std::string, Tensor> inputs;
    for (const ir::ValueSpec& spec : imported.graph.inputs) {
      Shape shape;
      for (const ir::Dim& d : spec.shape) shape.push_back(d.symbol.empty() ? d.size : 1);
      inputs[spec.name] = Filled(spec.dtype, shape, 1, 0);
    }
    w.push_back({onnx_model, std::move(imported.graph), std::move(inputs), std::move(imported.initializers)});
  }
  return w;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Steady runs/s: at least 3 runs and `min_time` seconds, after `first` (timed separately).
struct Timing {
  double first_s = 0;
  double runs_per_s = 0;
};
Timing Time(runtime::Executor& ex, const std::map<std::string, Tensor>& inputs, double min_time) {
  Timing t;
  auto start = std::chrono::steady_clock::now();
  (void)ex.Run(inputs);
  t.first_s = Seconds(start);
  int runs = 0;
  start = std::chrono::steady_clock::now();
  while (runs < 3 || Seconds(start) < min_time) {
    (void)ex.Run(inputs);
    ++runs;
  }
  t.runs_per_s = runs / Seconds(start);
  return t;
}

}  // namespace

void RunDeviceBench(const std::string& device_name, const std::string& onnx_model, double min_time,
                    const std::string& format) {
  const std::unique_ptr<runtime::GraphDevice> device = runtime::OpenGraphDevice(device_name);
  if (!device) ThrowInvalidArgument("backplane bench", "--device", "a device other than cpu", device_name);
  auto backend = cpu::CreateBackend();
  nlohmann::json rows = nlohmann::json::array();
  if (format == "md") {
    fmt::print("Device {} beside the CPU backend, CPU {}.\n\n", DeviceName(device->device()), QueryCpuInfo().model);
    fmt::print("| Graph | CPU runs/s | {0} runs/s | {0} / CPU | {0} compile s | Nodes on {0} |\n|---|---|---|---|---|---|\n",
               device_name);
  }
  for (Workload& w : Workloads(onnx_model)) {
    runtime::Executor cpu(w.graph, *backend);
    runtime::Executor dev(w.graph, *backend, {.device = device.get()});
    if (!w.params.empty()) {
      cpu.LoadParams(w.params);
      dev.LoadParams(w.params);
    }
    std::map<std::string, Shape> shapes;
    for (const auto& [name, t] : w.inputs) shapes[name] = t.shape();
    int on_device = 0;
    const auto placement = dev.Placement(shapes);
    for (const auto& p : placement) on_device += p.segment >= 0 ? 1 : 0;
    const Timing c = Time(cpu, w.inputs, min_time);
    const Timing d = Time(dev, w.inputs, min_time);
    const double compile_s = std::max(0.0, d.first_s - 1.0 / d.runs_per_s);
    if (format == "md") {
      fmt::print("| {} | {:.1f} | {:.1f} | {:.2f}x | {:.3f} | {} of {} |\n", w.name, c.runs_per_s, d.runs_per_s,
                 d.runs_per_s / c.runs_per_s, compile_s, on_device, placement.size());
    }
    rows.push_back({{"graph", w.name}, {"cpu_runs_per_s", c.runs_per_s}, {"device_runs_per_s", d.runs_per_s},
                    {"ratio", d.runs_per_s / c.runs_per_s}, {"device_compile_s", compile_s},
                    {"nodes_on_device", on_device}, {"nodes", placement.size()}});
  }
  if (format == "json") {
    std::cout << nlohmann::json{{"device", device_name}, {"cpu", QueryCpuInfo().model}, {"results", rows}}.dump(2) << "\n";
  }
}

}  // namespace backplane::cli
