// attention.gqa / attention.mqa take two lowerings: one MultiHeadAttention call per batch for
// short query sequences, head-by-head FlashAttention for long ones. Both must give textbook
// attention, checked here against a float64 softmax(Q K^T / sqrt(D)) V with bottom-right causal
// masking, around the switch-over length and on each side of it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/runtime/recording_backend.hpp"
#include "backplane/runtime/run_op.hpp"

namespace backplane {
namespace {

Tensor Random(const Shape& shape, uint32_t seed) {
  Tensor t(DType::Float32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, u(rng));
  return t;
}

// q [B, H, Sq, D], k/v [B, KV, Sk, D]; query head h reads K/V head h / (H / KV).
std::vector<double> TextbookAttention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const int64_t batch = q.dim(0), h = q.dim(1), sq = q.dim(2), d = q.dim(3), kv = k.dim(1), sk = k.dim(2);
  std::vector<double> o(q.numel(), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t hh = 0; hh < h; ++hh) {
      const int64_t g = hh / (h / kv);
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t last = causal ? i + (sk - sq) : sk - 1;  // bottom-right aligned
        if (last < 0) continue;                               // sees no key: zeros
        std::vector<double> w(sk, 0.0);
        double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int64_t j = 0; j <= std::min(last, sk - 1); ++j) {
          double s = 0.0;
          for (int64_t c = 0; c < d; ++c) {
            s += q.GetDouble(((b * h + hh) * sq + i) * d + c) * k.GetDouble(((b * kv + g) * sk + j) * d + c);
          }
          w[j] = s * scale;
          m = std::max(m, w[j]);
        }
        for (int64_t j = 0; j <= std::min(last, sk - 1); ++j) sum += (w[j] = std::exp(w[j] - m));
        for (int64_t j = 0; j <= std::min(last, sk - 1); ++j) {
          for (int64_t c = 0; c < d; ++c) {
            o[((b * h + hh) * sq + i) * d + c] += w[j] / sum * v.GetDouble(((b * kv + g) * sk + j) * d + c);
          }
        }
      }
    }
  }
  return o;
}

struct Case {
  const char* op;
  int64_t heads, kv_heads, sq, sk;
  bool causal;
  const char* kernel;  // the Attention method the lowering must call
};

TEST(AttentionLowering, BothLoweringsGiveTextbookAttention) {
  const Case cases[] = {
      {"attention.gqa", 4, 2, 40, 50, true, "Attention.MultiHeadAttention"},
      {"attention.gqa", 4, 2, 1023, 1023, true, "Attention.MultiHeadAttention"},
      {"attention.gqa", 4, 2, 1024, 1024, true, "Attention.FlashAttention"},
      {"attention.gqa", 2, 1, 1100, 1040, true, "Attention.FlashAttention"},   // rows that see no key
      {"attention.gqa", 4, 1, 1030, 1090, false, "Attention.FlashAttention"},
      {"attention.mqa", 3, 1, 1024, 1031, true, "Attention.FlashAttention"},
      {"attention.mqa", 3, 1, 8, 301, false, "Attention.MultiHeadAttention"},
  };
  const auto cpu = cpu::CreateBackend();
  runtime::RecordingBackend recorder(*cpu);
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.op << " H=" << c.heads << " KV=" << c.kv_heads << " Sq=" << c.sq
                                    << " Sk=" << c.sk << " causal=" << c.causal);
    const int64_t d = 8;
    const Tensor q = Random({1, c.heads, c.sq, d}, seed++);
    const Tensor k = Random({1, c.kv_heads, c.sk, d}, seed++);
    const Tensor v = Random({1, c.kv_heads, c.sk, d}, seed++);
    ir::AttrMap attrs = {{"num_heads", c.heads}, {"head_dim", d}, {"causal", c.causal}};
    if (std::string(c.op) == "attention.gqa") attrs["num_kv_heads"] = c.kv_heads;
    recorder.Clear();
    const runtime::OpResult r = runtime::RunOp({.op = c.op, .inputs = {q, k, v}, .attrs = attrs}, recorder);
    bool reached = false;
    for (catalog::MethodId id : recorder.Called()) reached = reached || catalog::Method(id).QualifiedName() == c.kernel;
    EXPECT_TRUE(reached) << "expected a call to " << c.kernel;
    const std::vector<double> want = TextbookAttention(q, k, v, c.causal);
    ASSERT_EQ(r.outputs.at(0).numel(), static_cast<int64_t>(want.size()));
    double worst = 0.0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(r.outputs[0].GetDouble(i) - want[i]));
    EXPECT_LT(worst, 2e-6);  // f32 output of an f64-score kernel: a few f32 ulps of values below 1.5
  }
}

}  // namespace
}  // namespace backplane
