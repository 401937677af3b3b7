// Benchmark workloads of the training and transformer surfaces: normalization, RoPE, masking,
// losses, gradients, sampling, dropout, optimizer, embedding, shape (f32, sized past the caches).
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "bench/bench_data.hpp"

namespace backplane::bench {

void AddTrainingWorkloads(std::vector<Workload>& w) {
  using Vec = std::shared_ptr<std::vector<float>>;
  auto out = [](int64_t n) { return std::make_shared<std::vector<float>>(static_cast<size_t>(n)); };
  static constexpr int64_t kAct = 8 * 64 * 112 * 112;  // [8, 64, 112, 112]: 2 x 25.7 MB, past the L3
  w.push_back({"math.groupnorm", "Normalization", "[8, 64, 112, 112], 32 groups", 8.0 * kAct, 0, "triad", [out](Backend& b) {
                 Vec x = Random(kAct, 1), g = Random(64, 2, 0.5f, 1.5f), beta = Random(64, 3), y = out(kAct);
                 return std::function<void()>([&b, x, g, beta, y] {
                   b.Normalization().GroupNorm(GroupNormConfig{32}, x->data(), g->data(), beta->data(), y->data(), 8, 64,
                                               112 * 112, DType::Float32);
                 });
               }});
  static constexpr int64_t kSeq = 4096, kHeads = 32, kDim = 128;
  w.push_back({"positional.rope", "RoPE", "[4096, 32 heads, 128]", 8.0 * kSeq * kHeads * kDim, 0, "triad", [out](Backend& b) {
                 Vec x = Random(kSeq * kHeads * kDim, 1), y = out(kSeq * kHeads * kDim);
                 return std::function<void()>(
                     [&b, x, y] { b.RoPE().RoPE(RoPEConfig{}, x->data(), y->data(), kSeq, kHeads, kDim, DType::Float32); });
               }});
  w.push_back({"masking.apply", "Masking", "16M", 12.0 * k16M, 0, "triad", [out](Backend& b) {
                 Vec x = Random(k16M, 1), m = Random(k16M, 2, 0, 1), y = out(k16M);
                 for (float& v : *m) v = v < 0.5f ? 0.0f : 1.0f;
                 return std::function<void()>(
                     [&b, x, m, y] { b.Masking().ApplyMask(x->data(), m->data(), y->data(), k16M, DType::Float32); });
               }});
  w.push_back({"train.loss.mse", "Losses", "16M", 8.0 * k16M, 0, "read", [](Backend& b) {
                 Vec p = Random(k16M, 1), t = Random(k16M, 2);
                 return std::function<void()>([&b, p, t] { (void)b.Losses().MSE(p->data(), t->data(), k16M, DType::Float32); });
               }});
  static constexpr int64_t kBatch = 512, kVocab = 32000;
  w.push_back({"train.loss.cross_entropy", "Losses", "512 rows x 32000 logits", 4.0 * kBatch * kVocab, 0, "read",
               [](Backend& b) {
                 Vec logits = Random(kBatch * kVocab, 1);
                 auto targets = std::make_shared<std::vector<int32_t>>(kBatch);
                 for (int64_t i = 0; i < kBatch; ++i) (*targets)[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % kVocab);
                 return std::function<void()>([&b, logits, targets] {
                   (void)b.Losses().CrossEntropy(logits->data(), targets->data(), kBatch, kVocab, DType::Float32);
                 });
               }});
  w.push_back({"train.loss.mse_grad", "Gradients", "16M", 12.0 * k16M, 0, "triad", [out](Backend& b) {
                 Vec p = Random(k16M, 1), t = Random(k16M, 2), g = out(k16M);
                 return std::function<void()>(
                     [&b, p, t, g] { b.Gradients().MSEGrad(p->data(), t->data(), g->data(), k16M, DType::Float32); });
               }});
  w.push_back({"sampling.greedy", "Sampling", "vocab 256K", 4.0 * (256 << 10), 0, "read", [](Backend& b) {
                 Vec logits = Random(256 << 10, 1);
                 return std::function<void()>([&b, logits] { (void)b.Sampling().GreedySample(logits->data(), 256 << 10, DType::Float32); });
               }});
  w.push_back({"math.dropout", "Dropout", "16M, rate 0.1", 8.0 * k16M, 0, "triad", [out](Backend& b) {
                 Vec x = Random(k16M, 1), y = out(k16M);
                 return std::function<void()>(
                     [&b, x, y] { b.Dropout().Dropout(y->data(), x->data(), k16M, DropoutConfig{}, DType::Float32); });
               }});
  // Adam reads params, grads, m, v and writes params, m, v: 28 bytes per f32 parameter.
  w.push_back({"train.optimizer.adam", "Optimizer", "16M params", 28.0 * k16M, 0, "triad", [](Backend& b) {
                 Vec p = Random(k16M, 1), g = Random(k16M, 2), m = Random(k16M, 3, 0, 0), v = Random(k16M, 4, 0, 0);
                 auto step = std::make_shared<int64_t>(0);
                 return std::function<void()>([&b, p, g, m, v, step] {
                   b.Optimizer().Adam(AdamConfig{}, p->data(), g->data(), m->data(), v->data(), step.get(), k16M, DType::Float32);
                 });
               }});
  static constexpr int64_t kTable = 32000, kHidden = 4096, kTokens = 2048;
  w.push_back({"embedding.token", "Embedding", "2048 tokens x 4096 from 32000 rows", 8.0 * kTokens * kHidden, 0, "triad",
               [out](Backend& b) {
                 Vec table = Random(kTable * kHidden, 1), y = out(kTokens * kHidden);
                 auto idx = std::make_shared<std::vector<int32_t>>(kTokens);
                 for (int64_t i = 0; i < kTokens; ++i) (*idx)[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % kTable);
                 return std::function<void()>([&b, table, idx, y] {
                   b.Embedding().Lookup(table->data(), idx->data(), y->data(), kTable, kHidden, kTokens, DType::Float32);
                 });
               }});
  w.push_back({"shape.transpose", "Shape", "4096x4096", 8.0 * 4096 * 4096, 0, "triad", [out](Backend& b) {
                 Vec x = Random(4096 * 4096, 1), y = out(4096 * 4096);
                 return std::function<void()>([&b, x, y] {
                   const int64_t shape[2] = {4096, 4096}, perm[2] = {1, 0};
                   b.Shape().Transpose(x->data(), y->data(), shape, 2, perm, DType::Float32);
                 });
               }});
}

}  // namespace backplane::bench
