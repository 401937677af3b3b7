// Device conformance probes: losses, gradients, optimizers, metrics, dropout, sampling.
#include "conformance/device_probes.hpp"

namespace backplane::conformance {

void AddTrainProbes(std::vector<DeviceProbe>& p) {
  for (const char* op : {"train.loss.cross_entropy", "train.loss.cross_entropy_grad"}) {
    p.push_back({.op = op, .inputs = {{"T", {5, 7}, -3, 3}, {"i32", {5}, 0, 6}}});
  }

  // Elementwise losses and their gradients: odd shapes; |p - t| on both sides of Huber's delta 1.
  for (const char* op : {"train.loss.mse", "train.loss.mae", "train.loss.huber",
                         "train.loss.mse_grad", "train.loss.mae_grad", "train.loss.huber_grad"}) {
    p.push_back({.op = op, .inputs = {{"T", {5, 7}, -3, 3}, {"T", {5, 7}, -3, 3}}});
    p.push_back({.op = op, .inputs = {{"T", {3, 2, 5}, -0.8, 0.8}, {"T", {3, 2, 5}, -0.5, 0.5}}});
    p.push_back({.op = op, .inputs = {{"T", {}}, {"T", {}}}});          // rank 0
    p.push_back({.op = op, .inputs = {{"T", {0, 3}}, {"T", {0, 3}}}});  // empty: the mean is NaN
  }
  // Probabilities in [0, 1] (the kernels reject anything else), soft targets.
  for (const char* op :
       {"train.loss.binary_cross_entropy", "train.loss.binary_cross_entropy_grad"}) {
    p.push_back({.op = op, .inputs = {{"T", {5, 7}, 0, 1}, {"T", {5, 7}, 0, 1}}});
    p.push_back({.op = op, .inputs = {{"T", {13}, 0.001, 0.05}, {"T", {13}, 0.9, 1}}});
  }
  // Non-negative inputs; predictions away from 0 so that t / p stays in range.
  for (const char* op : {"train.loss.kl_divergence", "train.loss.kl_divergence_grad"}) {
    p.push_back({.op = op, .inputs = {{"T", {5, 7}, 0.05, 1}, {"T", {5, 7}, 0, 1}}});
    p.push_back({.op = op, .inputs = {{"T", {11}, 0.2, 3}, {"T", {11}, 0, 0.3}}});
  }

  // Optimizers: 3 runs each (the state carries: moments, step counters, histories).
  const std::vector<ProbeInput> pg = {{"T", {3, 5}}, {"T", {3, 5}}};
  auto opt = [&](const char* op, const char* attrs) {
    p.push_back({.op = op, .inputs = pg, .attrs = attrs, .runs = 3});
  };
  for (const char* op :
       {"train.optimizer.adamax", "train.optimizer.lamb", "train.optimizer.sgd",
        "train.optimizer.lion", "train.optimizer.rmsprop", "train.optimizer.hebbian",
        "train.optimizer.lars", "train.optimizer.adagrad", "train.optimizer.adadelta",
        "train.optimizer.lbfgs"}) {
    p.push_back({.op = op,
                 .inputs = {{"T", {0}}, {"T", {0}}},
                 .runs = 3});  // empty params: only counters move
  }
  for (const char* op : {"train.optimizer.adam", "train.optimizer.adamw"}) {
    opt(op, R"({"lr": 0.01, "weight_decay": 0.1})");
  }
  opt("train.optimizer.adamax", R"({"lr": 0.01})");
  opt("train.optimizer.adamax", R"({"lr": 0.01, "weight_decay": 0.1, "beta1": 0.8, "beta2": 0.5})");
  opt("train.optimizer.lamb", R"({"lr": 0.01})");
  opt("train.optimizer.lamb", R"({"lr": 0.01, "weight_decay": 0.1, "beta1": 0.8})");
  opt("train.optimizer.sgd", R"({"lr": 0.1})");
  opt("train.optimizer.sgd", R"({"lr": 0.1, "weight_decay": 0.1})");
  opt("train.optimizer.sgd", R"({"lr": 0.1, "momentum": 0.9})");
  opt("train.optimizer.sgd",
      R"({"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05})");
  opt("train.optimizer.sgd",
      R"({"lr": 0.1, "momentum": 0.8, "nesterov": true, "weight_decay": 0.05})");
  opt("train.optimizer.lion", R"({"lr": 0.01})");
  opt("train.optimizer.lion", R"({"lr": 0.01, "weight_decay": 0.5, "beta1": 0.5})");
  opt("train.optimizer.rmsprop", R"({"lr": 0.01})");
  opt("train.optimizer.rmsprop", R"({"lr": 0.01, "weight_decay": 0.1, "alpha": 0.9})");
  opt("train.optimizer.rmsprop", R"({"lr": 0.01, "momentum": 0.9})");
  opt("train.optimizer.rmsprop", R"({"lr": 0.01, "centered": true, "alpha": 0.8})");
  opt("train.optimizer.rmsprop",
      R"({"lr": 0.01, "centered": true, "momentum": 0.5, "weight_decay": 0.1})");
  opt("train.optimizer.hebbian", R"({"lr": 0.1})");
  opt("train.optimizer.hebbian", R"({"lr": 0.5, "max_norm": 2.5})");  // clips (||p|| is ~4.5)
  opt("train.optimizer.hebbian", R"({"lr": 0.1, "max_norm": 100})");  // does not clip
  opt("train.optimizer.lars", R"({"lr": 0.1})");
  opt("train.optimizer.lars", R"({"lr": 0.1, "weight_decay": 0.1, "momentum": 0.5, "eta": 0.02})");
  opt("train.optimizer.adagrad", R"({"lr": 0.1})");
  opt("train.optimizer.adagrad", R"({"lr": 0.1, "weight_decay": 0.1, "lr_decay": 0.5})");
  opt("train.optimizer.adadelta", R"({})");
  opt("train.optimizer.adadelta", R"({"lr": 0.5, "rho": 0.5, "weight_decay": 0.1})");
  // L-BFGS: the probe feeds the same params and grads every run, so y = g - prevGrads is 0 from
  // the second run on (the pair is skipped); with 5 runs the history path still runs (empty
  // history, H0 = 1); the second probe converges (max |g| <= 5), the third never descends.
  p.push_back({.op = "train.optimizer.lbfgs",
               .inputs = pg,
               .attrs = R"({"lr": 0.5, "history_size": 3})",
               .runs = 5});
  p.push_back({.op = "train.optimizer.lbfgs",
               .inputs = pg,
               .attrs = R"({"tolerance_grad": 5})",
               .runs = 3});
  p.push_back({.op = "train.optimizer.lbfgs",
               .inputs = {{"T", {7}}, {"T", {7}}},
               .attrs = R"({"lr": 0.2, "history_size": 1, "tolerance_change": 1e6})",
               .runs = 3});

  // Metrics: running state over 3 runs (f1 also with predictions below 0).
  p.push_back({.op = "bench.metric.accuracy", .inputs = {{"T", {6, 4}}, {"T", {6, 4}}}, .runs = 3});
  p.push_back({.op = "bench.metric.perplexity",
               .inputs = {{"T", {6, 5}, 0, 1}, {"T", {6, 5}, 0, 1}},
               .runs = 3});
  p.push_back({.op = "bench.metric.perplexity",
               .inputs = {{"T", {9}, 0.1, 1}, {"T", {9}, 0, 0.5}},
               .runs = 3});
  p.push_back(
      {.op = "bench.metric.f1", .inputs = {{"T", {7, 5}, 0, 1}, {"T", {7, 5}, 0, 1}}, .runs = 3});
  p.push_back({.op = "bench.metric.f1",
               .inputs = {{"T", {2, 3, 4}, -1, 1}, {"T", {2, 3, 4}, 0, 1}},
               .runs = 3});

  // Dropout: the masks must match the CPU's Philox draws bit for bit; 3 runs so the per-call
  // seed advances.
  for (const char* attrs : {R"({"p": 0.1})", R"({"p": 0.5, "seed": 7})",
                            R"({"p": 0.9, "seed": -3})", R"({"p": 0.3, "seed": 123456789012345})",
                            R"({"p": 0})", R"({"p": 1})", R"({"p": 0.5, "training": false})"}) {
    p.push_back({.op = "math.dropout", .inputs = {{"T", {7, 9}}}, .attrs = attrs, .runs = 3});
  }
  p.push_back({.op = "math.dropout",
               .inputs = {{"T", {2, 3, 5}}},
               .attrs = R"({"p": 0.25, "seed": 99})",
               .runs = 3});
  p.push_back({.op = "math.dropout",
               .inputs = {{"T", {}}},
               .attrs = R"({"p": 0.5, "seed": 4})",
               .runs = 4});
  p.push_back(
      {.op = "math.dropout", .inputs = {{"T", {0, 4}}}, .attrs = R"({"p": 0.5})", .runs = 3});

  // Samplers: [B, V] and [V] logits; greedy, temperatures, top_k below / at / above V, top_p.
  p.push_back({.op = "sampling.greedy", .inputs = {{"T", {5, 11}, -3, 3}}});
  p.push_back({.op = "sampling.greedy", .inputs = {{"T", {17}, -3, 3}}});
  for (const char* attrs :
       {R"({})", R"({"top_k": 3, "seed": 5})", R"({"top_k": 1})", R"({"top_k": 50, "seed": 9})",
        R"({"temperature": 0.5, "top_k": 4, "seed": 11})", R"({"temperature": 3, "seed": 12})",
        R"({"temperature": 0, "top_k": 3})"}) {
    p.push_back({.op = "sampling.top_k", .inputs = {{"T", {6, 13}, -3, 3}}, .attrs = attrs});
  }
  p.push_back({.op = "sampling.top_k",
               .inputs = {{"T", {29}, -2, 2}},
               .attrs = R"({"top_k": 7, "seed": 77})"});
  for (const char* attrs :
       {R"({})", R"({"top_p": 0.9, "seed": 5})", R"({"top_p": 0.5, "seed": 6})",
        R"({"top_p": 0.01})", R"({"temperature": 0.7, "top_p": 0.8, "seed": 13})",
        R"({"temperature": 2.5, "top_p": 0.95, "seed": -1})",
        R"({"temperature": 0, "top_p": 0.3})"}) {
    p.push_back({.op = "sampling.top_p", .inputs = {{"T", {6, 13}, -3, 3}}, .attrs = attrs});
  }
  p.push_back({.op = "sampling.top_p",
               .inputs = {{"T", {29}, -2, 2}},
               .attrs = R"({"top_p": 0.6, "seed": 78})"});
}

}  // namespace backplane::conformance
