// backplane train GRAPH.json: mini-batch training over .npy data sets, with per-epoch evaluation.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/random.hpp"
#include "backplane/runtime/executor.hpp"
#include "cli_util.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct TrainOptions {
  std::string graph;
  std::vector<std::string> data;
  int epochs = 1;
  int batch_size = 32;
  uint64_t seed = 0;
  std::string loss = "loss";
  std::string eval_graph;
  std::vector<std::string> eval_data;
  std::string params;
  std::string save_params;
  std::string device = "cpu";
};

std::map<std::string, Tensor> LoadData(const std::string& option, const std::vector<std::string>& items,
                                       const ir::Graph& graph) {
  std::map<std::string, Tensor> data;
  int64_t rows = -1;
  for (const std::string& text : items) {
    const auto [name, file] = SplitAssignment(option, text);
    bool known = false;
    for (const ir::ValueSpec& spec : graph.inputs) known = known || spec.name == name;
    if (!known) ThrowInvalidArgument("backplane train", option, "a graph input name", "'" + name + "'");
    Tensor t = io::ReadNpy(file);
    if (t.rank() == 0) ThrowInvalidArgument("backplane train", file, "an array with a leading sample axis", "a scalar");
    if (rows >= 0 && t.shape()[0] != rows) {
      ThrowInvalidArgument("backplane train", file, fmt::format("{} samples like the other data", rows),
                           std::to_string(t.shape()[0]));
    }
    rows = t.shape()[0];
    data[name] = std::move(t);
  }
  return data;
}

// Rows `index[begin, end)` of t, in that order.
Tensor Gather(const Tensor& t, const std::vector<int64_t>& index, size_t begin, size_t end) {
  Shape shape = t.shape();
  shape[0] = static_cast<int64_t>(end - begin);
  Tensor out(t.dtype(), shape);
  const int64_t row = t.shape()[0] == 0 ? 0 : t.numel() / t.shape()[0];
  const int bits = DTypeBits(t.dtype());
  for (size_t r = begin; r < end; ++r) {
    const int64_t src = index[r] * row;
    const int64_t dst = static_cast<int64_t>(r - begin) * row;
    if (bits >= 8) {
      const size_t bytes = static_cast<size_t>(row) * static_cast<size_t>(bits / 8);
      std::memcpy(static_cast<char*>(out.data()) + static_cast<size_t>(dst) * static_cast<size_t>(bits / 8),
                  static_cast<const char*>(t.data()) + static_cast<size_t>(src) * static_cast<size_t>(bits / 8), bytes);
    } else {
      for (int64_t k = 0; k < row; ++k) out.SetDouble(dst + k, t.GetDouble(src + k));
    }
  }
  return out;
}

void ProgressBar(int epoch, int epochs, size_t done, size_t total, double loss) {
  constexpr int kWidth = 30;
  const int filled = total == 0 ? kWidth : static_cast<int>(kWidth * done / total);
  fmt::print(stderr, "\repoch {:>3}/{} [{}{}] {:>4}/{} loss {:.4f}", epoch, epochs, std::string(static_cast<size_t>(filled), '#'),
             std::string(static_cast<size_t>(kWidth - filled), '.'), done, total, loss);
  std::fflush(stderr);
}

void Train(const TrainOptions& o) {
  ir::Graph graph = ir::ReadGraphFile(o.graph);
  const auto data = LoadData("--data", o.data, graph);
  if (data.empty()) ThrowInvalidArgument("backplane train", "--data", "at least one NAME=FILE.npy", "none");
  bool has_loss = false;
  for (const std::string& out : graph.outputs) has_loss = has_loss || out == o.loss;
  if (!has_loss) ThrowInvalidArgument("backplane train", "--loss", "a graph output name", "'" + o.loss + "'");
  auto backend = cpu::CreateBackend();
  const std::unique_ptr<runtime::GraphDevice> device = OpenDeviceOption(o.device);
  runtime::Executor trainer(graph, *backend, {.device = device.get()});
  if (!o.params.empty()) {
    const auto tensors = io::ReadSafetensors(o.params);
    std::map<std::string, Tensor> params;
    for (const auto& [name, t] : tensors) {
      if (name.find('/') == std::string::npos) params[name] = t;
    }
    trainer.LoadParams(params);
    trainer.LoadState(tensors);
  }
  std::unique_ptr<ir::Graph> eval_graph;
  std::map<std::string, Tensor> eval_data;
  if (!o.eval_graph.empty()) {
    eval_graph = std::make_unique<ir::Graph>(ir::ReadGraphFile(o.eval_graph));
    eval_data = LoadData("--eval-data", o.eval_data, *eval_graph);
    runtime::VerifyGraph(*eval_graph);  // fail before training, not after the first epoch
  }
  const int64_t samples = data.begin()->second.shape()[0];
  const size_t batches = static_cast<size_t>((samples + o.batch_size - 1) / o.batch_size);
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    // Deterministic shuffle: sort by Philox keys (seed, epoch, sample).
    std::vector<int64_t> order(static_cast<size_t>(samples));
    std::iota(order.begin(), order.end(), 0);
    std::vector<uint32_t> key(order.size());
    for (size_t i = 0; i < key.size(); ++i) key[i] = PhiloxBits(o.seed, static_cast<uint64_t>(epoch), i)[0];
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)];
    });
    double loss_sum = 0;
    int64_t seen = 0;
    for (size_t b = 0; b < batches; ++b) {
      const size_t begin = b * static_cast<size_t>(o.batch_size);
      const size_t end = std::min(order.size(), begin + static_cast<size_t>(o.batch_size));
      std::map<std::string, Tensor> batch;
      for (const auto& [name, t] : data) batch[name] = Gather(t, order, begin, end);
      const auto out = trainer.Run(batch);
      loss_sum += out.at(o.loss).GetDouble(0) * static_cast<double>(end - begin);
      seen += static_cast<int64_t>(end - begin);
      if (tty) ProgressBar(epoch, o.epochs, b + 1, batches, loss_sum / static_cast<double>(seen));
    }
    if (tty) fmt::print(stderr, "\n");
    std::string line = fmt::format("epoch {}/{}: train {} {:.4f}", epoch, o.epochs, o.loss,
                                   loss_sum / static_cast<double>(std::max<int64_t>(seen, 1)));
    if (eval_graph) {
      // A fresh executor per epoch, so running metrics cover this epoch's evaluation only.
      runtime::Executor evaluator(*eval_graph, *backend, {.device = device.get()});
      std::map<std::string, Tensor> params;
      for (const auto& [name, t] : trainer.params().tensors) {
        if (evaluator.params().tensors.contains(name)) params[name] = t;
      }
      evaluator.LoadParams(params);
      const auto results = evaluator.Run(eval_data);
      for (const auto& [name, t] : results) {
        line += t.numel() == 1 ? fmt::format(", eval {} {:.4f}", name, t.GetDouble(0)) : fmt::format(", eval {} {}", name, Summarize(t));
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("{} ({:.1f} s)\n", line, seconds);
    std::fflush(stdout);
  }
  if (!o.save_params.empty()) io::WriteSafetensors(o.save_params, trainer.SaveParams());
}

}  // namespace

void AddTrainCommand(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Mini-batch training of a graph over .npy data sets");
  cmd->add_option("graph", o->graph, "Training graph (JSON): forward, loss, gradients, optimizer steps")->required();
  cmd->add_option("--data", o->data, "NAME=FILE.npy: a graph input, sliced along axis 0 (repeatable)")->required();
  cmd->add_option("--epochs", o->epochs, "Passes over the data")->check(CLI::Range(1, 1000000));
  cmd->add_option("--batch-size", o->batch_size, "Samples per step")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--seed", o->seed, "Shuffle seed");
  cmd->add_option("--device", o->device, "cpu (default), xla[:N] or cuda[:N]: the device training runs on");
  cmd->add_option("--loss", o->loss, "Graph output reported as the training loss");
  cmd->add_option("--eval", o->eval_graph, "Evaluation graph sharing parameter names, run after each epoch");
  cmd->add_option("--eval-data", o->eval_data, "NAME=FILE.npy for the evaluation graph (repeatable)");
  cmd->add_option("--params", o->params, "Initial parameters from a .safetensors file");
  cmd->add_option("--save-params", o->save_params, "Write the trained parameters to a .safetensors file");
  cmd->callback([o] { Train(*o); });
}

}  // namespace backplane::cli
