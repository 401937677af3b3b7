// Two-sided sliding windows (MultiHeadAttentionConfig::WindowRight) without causal masking: the
// reference and the CPU kernel against softmax attention written out here in long double over the
// keys p - WindowSize < j <= p + WindowRight (bottom-right positions p = i + seqK - seqQ).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

std::vector<double> Oracle(const std::vector<double>& q, const std::vector<double>& k,
                           const std::vector<double>& v, int64_t seqQ, int64_t seqK, int64_t dim,
                           int64_t window, int64_t right, bool causal) {
  std::vector<double> o(static_cast<size_t>(seqQ * dim), 0.0);
  for (int64_t i = 0; i < seqQ; ++i) {
    const int64_t p = i + seqK - seqQ;
    std::vector<long double> w(static_cast<size_t>(seqK), 0.0L);
    long double m = -INFINITY, sum = 0.0L;
    std::vector<bool> vis(static_cast<size_t>(seqK));
    for (int64_t j = 0; j < seqK; ++j) {
      vis[j] = p - j < window && (right < 0 || j - p <= right) && !(causal && j > p);
      if (!vis[j]) continue;
      long double s = 0.0L;
      for (int64_t d = 0; d < dim; ++d) s += static_cast<long double>(q[i * dim + d]) * k[j * dim + d];
      w[j] = s / std::sqrt(static_cast<long double>(dim));
      m = std::max(m, w[j]);
    }
    for (int64_t j = 0; j < seqK; ++j) {
      if (!vis[j]) continue;
      w[j] = std::exp(w[j] - m);
      sum += w[j];
    }
    for (int64_t j = 0; j < seqK; ++j) {
      if (!vis[j]) continue;
      for (int64_t d = 0; d < dim; ++d) o[i * dim + d] += static_cast<double>(w[j] / sum * v[j * dim + d]);
    }
  }
  return o;
}

TEST(AttentionWindow, TwoSidedWindowWithoutCausalMask) {
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(cpu::CreateReferenceBackend());
  backends.push_back(cpu::CreateBackend());
  const int64_t dim = 8;
  for (auto& b : backends) {
    for (int64_t seqQ : {int64_t{5}, int64_t{19}}) {
      const int64_t seqK = 19;
      for (int64_t window : {int64_t{1}, int64_t{3}, int64_t{7}}) {
        for (int64_t right : {int64_t{-1}, int64_t{0}, int64_t{2}, int64_t{6}, int64_t{100}}) {
          for (bool causal : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "seqQ " << seqQ << " window " << window << " right " << right
                                              << " causal " << causal);
            std::vector<double> q(seqQ * dim), k(seqK * dim), v(seqK * dim);
            for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37 * static_cast<double>(i) + 0.1);
            for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.53 * static_cast<double>(i));
            for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(1.3 * static_cast<double>(i)) * 2;
            MultiHeadAttentionConfig c{.NumHeads = 1, .HeadDim = dim, .Causal = causal, .WindowSize = window};
            c.WindowRight = right;
            std::vector<double> o(q.size());
            b->Attention().MultiHeadAttention(c, q.data(), k.data(), v.data(), o.data(), seqQ, seqK, DType::Float64);
            const auto want = Oracle(q, k, v, seqQ, seqK, dim, window, right, causal);
            for (size_t i = 0; i < o.size(); ++i) EXPECT_NEAR(o[i], want[i], 1e-12) << "element " << i;
          }
        }
      }
    }
    MultiHeadAttentionConfig bad{.NumHeads = 1, .HeadDim = dim, .WindowSize = 2};
    bad.WindowRight = -2;
    std::vector<double> x(dim * 2);
    EXPECT_THROW(b->Attention().MultiHeadAttention(bad, x.data(), x.data(), x.data(), x.data(), 2, 2, DType::Float64),
                 Error);
  }
}

}  // namespace
}  // namespace backplane
