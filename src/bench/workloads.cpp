// The benchmark workloads of issue 7, sized to exceed the caches (f32 unless stated).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include <cblas.h>
#include <omp.h>

#include "backplane/bench.hpp"
#include "backplane/convert.hpp"
#include "backplane/cpu/conv_path.hpp"
#include "backplane/cpu/gemm_path.hpp"
#include "backplane/cpu/threads.hpp"
#include "backplane/random.hpp"
#include "bench/bench_data.hpp"

extern "C" void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);

namespace backplane::bench {
namespace {

Workload Unary(const std::string& op, const std::string& surface, void (ActivationSurface::*m)(BP_PARAMS_Unary)) {
  return {op, surface, "16M", 8.0 * k16M, 0, "triad", [m](Backend& b) {
            auto x = Random(k16M, 1);
            auto y = std::make_shared<std::vector<float>>(k16M);
            return std::function<void()>([&b, m, x, y] { (b.Activation().*m)(y->data(), x->data(), k16M, DType::Float32); });
          }};
}

Workload Binary(const std::string& op, void (ElementwiseSurface::*m)(BP_PARAMS_Binary)) {
  return {op, "Elementwise", "16M", 12.0 * k16M, 0, "triad", [m](Backend& b) {
            auto x = Random(k16M, 1), z = Random(k16M, 2);
            auto y = std::make_shared<std::vector<float>>(k16M);
            return std::function<void()>(
                [&b, m, x, z, y] { (b.Elementwise().*m)(y->data(), x->data(), z->data(), k16M, DType::Float32); });
          }};
}

Workload Matmul(int64_t n) {
  return {"math.matmul", "Matmul", fmt::format("{0}x{0}x{0}", n), 12.0 * n * n, 2.0 * n * n * n, "fma", [n](Backend& b) {
            auto a = Random(n * n, 1), c = Random(n * n, 2);
            auto y = std::make_shared<std::vector<float>>(static_cast<size_t>(n * n));
            return std::function<void()>(
                [&b, n, a, c, y] { b.Matmul().Matmul(y->data(), a->data(), c->data(), n, n, n, DType::Float32); });
          }};
}

// Matmul on OpenBLAS (BACKPLANE_GEMM=openblas), beside the default (own GEMM) path.
Workload MatmulOpenBlasPath(int64_t n) {
  Workload w = Matmul(n);
  w.shape += " OpenBLAS path";
  w.setup = [matmul = w.setup](Backend& b) {
    return std::function<void()>([call = matmul(b)] {
      const cpu::GemmPath saved = cpu::CurrentGemmPath();
      cpu::SetGemmPath(cpu::GemmPath::OpenBlas);
      call();
      cpu::SetGemmPath(saved);
    });
  };
  return w;
}

// Conv2D 3x3, 64 -> 64 channels, 56x56, batch 8: on the default path (Winograd) or the direct
// tiles (BACKPLANE_CONV=direct). FLOPs are the direct sum's, so both rows compare as time.
Workload Conv2D3x3(bool directPath) {
  Workload w{"convolution.conv2d", "Convolution", "batch 8, 64->64, 56x56, 3x3, pad 1",
             4.0 * (8.0 * 64 * 56 * 56 * 2 + 64 * 64 * 9), 2.0 * 8 * 64 * 64 * 56 * 56 * 9, "fma", [](Backend& b) {
               auto x = Random(8 * 64 * 56 * 56, 1), wt = Random(64 * 64 * 9, 2, -0.1f, 0.1f), bias = Random(64, 3);
               auto y = std::make_shared<std::vector<float>>(8 * 64 * 56 * 56);
               Conv2DConfig cfg;
               cfg.PaddingH = cfg.PaddingW = 1;
               return std::function<void()>([&b, cfg, x, wt, bias, y] {
                 b.Convolution().Conv2D(cfg, x->data(), wt->data(), bias->data(), y->data(), 8, 64, 56, 56, 64, 3, 3,
                                        56, 56, DType::Float32);
               });
             }};
  if (!directPath) return w;
  w.shape += " direct path";
  w.setup = [conv = w.setup](Backend& b) {
    return std::function<void()>([call = conv(b)] {
      const cpu::ConvPath saved = cpu::CurrentConvPath();
      cpu::SetConvPath(cpu::ConvPath::Direct);
      call();
      cpu::SetConvPath(saved);
    });
  };
  return w;
}

// v rounded to f16 or bf16 storage.
std::shared_ptr<std::vector<uint16_t>> To16(const std::vector<float>& v, DType dtype) {
  auto out = std::make_shared<std::vector<uint16_t>>(v.size());
  for (size_t i = 0; i < v.size(); ++i) (*out)[i] = dtype == DType::Float16 ? F32ToF16(v[i]) : F32ToBF16(v[i]);
  return out;
}

// Matmul with 16-bit operands (f16 or bf16 storage, f32 accumulation).
Workload Matmul16(int64_t n, DType dtype) {
  return {"math.matmul", "Matmul", fmt::format("{0}x{0}x{0} {1}", n, DTypeName(dtype)), 6.0 * n * n, 2.0 * n * n * n, "fma",
          [n, dtype](Backend& b) {
            auto a = To16(*Random(n * n, 1, -1, 1), dtype), c = To16(*Random(n * n, 2, -1, 1), dtype);
            auto y = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(n * n));
            return std::function<void()>([&b, n, dtype, a, c, y] { b.Matmul().Matmul(y->data(), a->data(), c->data(), n, n, n, dtype); });
          }};
}

// projection.linear with 16-bit operands: y [rows, n] = x [rows, n] W^T, W [n, n] (MatmulTransB).
// One row is a decode step (the weight's bytes are the limit), 256 rows a prompt (the FMA peak).
Workload Linear16(int64_t rows, int64_t n, DType dtype) {
  const bool decode = rows == 1;
  return {"projection.linear", "MathExt", fmt::format("{} x {} -> {} {}", rows, n, n, DTypeName(dtype)),
          2.0 * static_cast<double>(rows * n * 2 + n * n), 2.0 * rows * n * n, decode ? "read" : "fma",
          [rows, n, dtype](Backend& b) {
            auto x = To16(*Random(rows * n, 1, -1, 1), dtype), w = To16(*Random(n * n, 2, -1, 1), dtype);
            auto y = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(rows * n));
            return std::function<void()>(
                [&b, rows, n, dtype, x, w, y] { b.MathExt().MatmulTransB(y->data(), x->data(), w->data(), rows, n, n, dtype); });
          }};
}

// The peer in the same run: OpenBLAS sgemm on the same problem (not a Backplane op).
Workload OpenBlasSgemm(int64_t n) {
  return {"peer.openblas_sgemm", "peer", fmt::format("{0}x{0}x{0}", n), 12.0 * n * n, 2.0 * n * n * n, "fma", [n](Backend&) {
            auto a = Random(n * n, 1), c = Random(n * n, 2);
            auto y = std::make_shared<std::vector<float>>(static_cast<size_t>(n * n));
            return std::function<void()>([n, a, c, y] {
              const int m = static_cast<int>(n);
              WithBackplaneThreads([&] {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0f, a->data(), m, c->data(), m, 0.0f,
                            y->data(), m);
              });
            });
          }};
}

// A = M M^T + n I (SPD), in f64.
std::shared_ptr<std::vector<double>> SpdMatrix(int n) {
  auto a = std::make_shared<std::vector<double>>(static_cast<size_t>(n) * n);
  auto m = Random(static_cast<int64_t>(n) * n, 1, -1, 1);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int k = 0; k < n; k += 16) s += (*m)[i * n + k] * (*m)[j * n + k];
      (*a)[static_cast<size_t>(i) * n + j] = (*a)[static_cast<size_t>(j) * n + i] = s + (i == j ? n : 0);
    }
  }
  return a;
}

Workload Rows(const std::string& op, const std::string& surface, int which) {
  constexpr int64_t kRows = 4096, kCols = 4096;
  return {op, surface, "4096x4096", 8.0 * kRows * kCols, 0, "triad", [which](Backend& b) {
            auto x = Random(kRows * kCols, 1);
            auto g = Random(kCols, 2, 0.5f, 1.5f), beta = Random(kCols, 3);
            auto y = std::make_shared<std::vector<float>>(static_cast<size_t>(kRows * kCols));
            return std::function<void()>([&b, which, x, g, beta, y] {
              if (which == 0) {  // the methods math.softmax and activation.log_softmax call
                b.MathExt().SoftmaxRows(y->data(), x->data(), kRows, kCols, DType::Float32);
              } else if (which == 3) {
                b.MathExt().LogSoftmaxRows(y->data(), x->data(), kRows, kCols, DType::Float32);
              } else if (which == 1) {
                b.LayerNorm().LayerNorm(x->data(), g->data(), beta->data(), y->data(), kRows, kCols, DType::Float32);
              } else {
                b.LayerNorm().RMSNorm(x->data(), g->data(), y->data(), kRows, kCols, DType::Float32);
              }
            });
          }};
}

Workload Attention(bool causal) {
  constexpr int64_t kSeq = 1024, kHeads = 8, kDim = 64;
  const double flops = 4.0 * kHeads * kSeq * kSeq * kDim * (causal ? 0.5 : 1.0);
  return {"attention.gqa", "Attention", fmt::format("8 heads, seq 1024, dim 64{}", causal ? ", causal" : ""),
          4.0 * 4 * kSeq * kHeads * kDim, flops, "fma", [causal](Backend& b) {
            auto q = Random(kSeq * kHeads * kDim, 1, -1, 1), k = Random(kSeq * kHeads * kDim, 2, -1, 1);
            auto v = Random(kSeq * kHeads * kDim, 3, -1, 1);
            auto o = std::make_shared<std::vector<float>>(static_cast<size_t>(kSeq * kHeads * kDim));
            MultiHeadAttentionConfig cfg;
            cfg.NumHeads = kHeads;
            cfg.HeadDim = kDim;
            cfg.Causal = causal;
            return std::function<void()>([&b, cfg, q, k, v, o] {
              b.Attention().MultiHeadAttention(cfg, q->data(), k->data(), v->data(), o->data(), kSeq, kSeq, DType::Float32);
            });
          }};
}

// One decode step of grouped-query attention: 1 query, 32 heads over 8 KV heads of 4096 cached
// positions, head size 128 (Llama-3-8B's shape). K and V are the bytes that must be read.
Workload AttentionDecode() {
  constexpr int64_t kKv = 4096, kHeads = 32, kKvHeads = 8, kDim = 128;
  return {"attention.gqa", "Attention", "decode: 1 query, 32/8 heads, 4096 cached, dim 128",
          4.0 * (2.0 * kKv * kKvHeads * kDim + 2.0 * kHeads * kDim), 4.0 * kHeads * kKv * kDim, "read", [](Backend& b) {
            auto q = Random(kHeads * kDim, 1, -1, 1), k = Random(kKv * kKvHeads * kDim, 2, -1, 1);
            auto v = Random(kKv * kKvHeads * kDim, 3, -1, 1);
            auto o = std::make_shared<std::vector<float>>(static_cast<size_t>(kHeads * kDim));
            MultiHeadAttentionConfig cfg;
            cfg.NumHeads = kHeads;
            cfg.HeadDim = kDim;
            cfg.KVHeadCount = kKvHeads;
            cfg.Causal = true;
            return std::function<void()>([&b, cfg, q, k, v, o] {
              b.Attention().MultiHeadAttention(cfg, q->data(), k->data(), v->data(), o->data(), 1, kKv, DType::Float32);
            });
          }};
}

// The two lowerings of attention.gqa (src/runtime/ops/nn_ops.cpp) on [B=1, H=8, S, 64] q and
// [1, 2, S, 64] k/v, causal: heads merged for one MultiHeadAttention call and split back, or one
// FlashAttention call per head on the slices in place. They set the lowering's switch-over length.
Workload AttentionLowering(int64_t seq, int64_t kKv, bool flash) {
  constexpr int64_t kHeads = 8, kDim = 64;
  const double flops = 4.0 * kHeads * seq * seq * kDim * 0.5;
  return {"attention.gqa", "Attention",
          fmt::format("lowering: {}, 8/{} heads, seq {}, dim 64, causal", flash ? "FlashAttention per head" : "merged MultiHeadAttention", kKv, seq),
          4.0 * kDim * seq * (2 * kHeads + 2 * kKv), flops, "fma", [seq, kKv, flash](Backend& b) {
            const int64_t nq = kHeads * seq * kDim, nkv = kKv * seq * kDim;
            auto q = Random(nq, 1, -1, 1), k = Random(nkv, 2, -1, 1), v = Random(nkv, 3, -1, 1);
            auto o = std::make_shared<std::vector<float>>(static_cast<size_t>(nq));
            auto scratch = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * nq + 2 * nkv));
            return std::function<void()>([&b, seq, kKv, flash, q, k, v, o, scratch] {
              if (flash) {
                const FlashAttentionConfig cfg{.Causal = true};
                for (int64_t h = 0; h < kHeads; ++h) {
                  const int64_t kv = h / (kHeads / kKv);
                  b.Attention().FlashAttention(cfg, q->data() + h * seq * kDim, k->data() + kv * seq * kDim,
                                               v->data() + kv * seq * kDim, o->data() + h * seq * kDim, seq, seq, kDim,
                                               kDim, DType::Float32);
                }
                return;
              }
              float* mq = scratch->data();
              float* mk = mq + kHeads * seq * kDim;
              float* mv = mk + kKv * seq * kDim;
              float* mo = mv + kKv * seq * kDim;
              b.Shape().MergeHeads(q->data(), mq, 1, seq, kHeads, kDim, DType::Float32);
              b.Shape().MergeHeads(k->data(), mk, 1, seq, kKv, kDim, DType::Float32);
              b.Shape().MergeHeads(v->data(), mv, 1, seq, kKv, kDim, DType::Float32);
              const MultiHeadAttentionConfig cfg{.NumHeads = kHeads, .HeadDim = kDim, .Causal = true, .KVHeadCount = kKv};
              b.Attention().MultiHeadAttention(cfg, mq, mk, mv, mo, seq, seq, DType::Float32);
              b.Shape().ViewAsHeads(mo, o->data(), 1, seq, kHeads, kDim, DType::Float32);
            });
          }};
}

}  // namespace

std::vector<Workload> Workloads() {
  std::vector<Workload> w;
  w.push_back(Binary("math.add", &ElementwiseSurface::Add));
  w.push_back(Binary("math.mul", &ElementwiseSurface::Mul));
  w.push_back(Unary("activation.relu", "Activation", &ActivationSurface::ReLU));
  w.push_back(Unary("math.exp", "Activation", &ActivationSurface::Exp));
  w.push_back(Unary("activation.tanh", "Activation", &ActivationSurface::Tanh));
  w.push_back(Unary("activation.sigmoid", "Activation", &ActivationSurface::Sigmoid));
  w.push_back(Unary("activation.silu", "Activation", &ActivationSurface::Silu));
  w.push_back(Unary("activation.gelu", "Activation", &ActivationSurface::Gelu));
  w.push_back(Unary("activation.gelu_tanh", "Activation", &ActivationSurface::GeluTanh));
  w.push_back(Rows("math.softmax", "Activation", 0));
  w.push_back(Rows("activation.log_softmax", "Activation", 3));
  w.push_back(Rows("math.layernorm", "LayerNorm", 1));
  w.push_back(Rows("math.rmsnorm", "LayerNorm", 2));
  w.push_back({"reduction.sum", "Reduction", "16M", 4.0 * k16M, 0, "read", [](Backend& b) {
                 auto x = Random(k16M, 1);
                 return std::function<void()>([&b, x] { (void)b.Reduction().Sum(x->data(), k16M, DType::Float32); });
               }});
  w.push_back({"math.dot", "Dot", "16M", 8.0 * k16M, 0, "read", [](Backend& b) {
                 auto x = Random(k16M, 1), y = Random(k16M, 2);
                 return std::function<void()>([&b, x, y] { (void)b.Dot().Dot(x->data(), y->data(), k16M, DType::Float32); });
               }});
  w.push_back({"quant.quantize_int8", "Quant", "16M", 5.0 * k16M, 0, "triad", [](Backend& b) {
                 auto x = Random(k16M, 1);
                 auto q = std::make_shared<std::vector<int8_t>>(k16M);
                 return std::function<void()>([&b, x, q] {
                   b.Quant().Quant(q->data(), x->data(), k16M, QuantConfig{0.05f, 0}, DType::Int8, DType::Float32);
                 });
               }});
  w.push_back({"quant.dequant_int8", "Dequant", "16M", 5.0 * k16M, 0, "triad", [](Backend& b) {
                 auto q = std::make_shared<std::vector<int8_t>>(k16M, 7);
                 auto y = std::make_shared<std::vector<float>>(k16M);
                 return std::function<void()>([&b, q, y] {
                   b.Dequant().Dequant(y->data(), q->data(), k16M, DequantConfig{0.05f, 0}, DType::Float32, DType::Int8);
                 });
               }});
  w.push_back({"pospop.count8", "PosPop", "4 MiB", 4.0 * (1 << 20), 0, "read", [](Backend& b) {
                 auto buf = std::make_shared<std::vector<uint8_t>>(4u << 20, 0x5A);
                 return std::function<void()>([&b, buf] {
                   int64_t counts[8] = {};
                   b.PosPop().Count8(counts, buf->data(), static_cast<int64_t>(buf->size()));
                 });
               }});
  w.push_back({"pospop.count8", "PosPop", "64 MiB", 64.0 * (1 << 20), 0, "read", [](Backend& b) {
                 auto buf = std::make_shared<std::vector<uint8_t>>(64u << 20, 0x5A);
                 return std::function<void()>([&b, buf] {
                   int64_t counts[8] = {};
                   b.PosPop().Count8(counts, buf->data(), static_cast<int64_t>(buf->size()));
                 });
               }});
  w.push_back({"pospop.count64", "PosPop", "4 MiB", 4.0 * (1 << 20), 0, "read", [](Backend& b) {
                 auto buf = std::make_shared<std::vector<uint64_t>>(512u << 10, 0x5A5A5A5A5A5A5A5Aull);
                 return std::function<void()>([&b, buf] {
                   int64_t counts[64] = {};
                   b.PosPop().Count64(counts, buf->data(), static_cast<int64_t>(buf->size()));
                 });
               }});
  for (int64_t n : {512, 1024, 2048}) {
    w.push_back(Matmul(n));
    w.push_back(MatmulOpenBlasPath(n));
    w.push_back(OpenBlasSgemm(n));
    if (auto peer = OneDnnSgemm(n)) w.push_back(*peer);
  }
  w.push_back(Matmul16(1024, DType::BFloat16));
  w.push_back(Matmul16(1024, DType::Float16));
  w.push_back(Linear16(1, 4096, DType::BFloat16));
  w.push_back(Linear16(256, 4096, DType::BFloat16));
  w.push_back({"math.matmul", "Matmul", "1x4096x4096 (matrix-vector)", 4.0 * (4096.0 * 4096 + 2 * 4096), 2.0 * 4096 * 4096,
               "read", [](Backend& b) {
                 auto x = Random(4096, 1), wt = Random(4096 * 4096, 2);
                 auto y = std::make_shared<std::vector<float>>(4096);
                 return std::function<void()>(
                     [&b, x, wt, y] { b.Matmul().Matmul(y->data(), x->data(), wt->data(), 1, 4096, 4096, DType::Float32); });
               }});
  w.push_back(Attention(false));
  w.push_back(Attention(true));
  w.push_back(AttentionDecode());
  for (int64_t kv : {2, 8}) {
    for (int64_t seq : {128, 1024, 4096}) {
      for (bool flash : {false, true}) w.push_back(AttentionLowering(seq, kv, flash));
    }
  }
  w.push_back(Conv2D3x3(false));
  w.push_back(Conv2D3x3(true));
  w.push_back({"pooling.max_pool2d", "Pool", "batch 8, 64 ch, 112x112, 3x3/2",
               4.0 * (8.0 * 64 * 112 * 112 + 8.0 * 64 * 55 * 55), 0, "triad", [](Backend& b) {
                 auto x = Random(8 * 64 * 112 * 112, 1);
                 auto y = std::make_shared<std::vector<float>>(8 * 64 * 55 * 55);
                 PoolConfig cfg{3, 3, 2, 2, 0, 0};
                 return std::function<void()>([&b, cfg, x, y] {
                   b.Pool().MaxPool2D(cfg, x->data(), y->data(), 8, 64, 112, 112, 55, 55, DType::Float32);
                 });
               }});
  w.push_back({"physics.fft1d", "Physics", "complex 65536", 16.0 * 65536, 5.0 * 65536 * 16, "fma", [](Backend& b) {
                 auto re = Random(65536, 1), im = Random(65536, 2);
                 auto ore = std::make_shared<std::vector<float>>(65536), oim = std::make_shared<std::vector<float>>(65536);
                 return std::function<void()>([&b, re, im, ore, oim] {
                   b.Physics().FFT1D(re->data(), im->data(), ore->data(), oim->data(), 65536, DType::Float32);
                 });
               }});
  w.push_back({"causal.cholesky", "Causal", "1024x1024 f64", 16.0 * 1024 * 1024, 1024.0 * 1024 * 1024 / 3.0, "fma",
               [](Backend& b) {
                 constexpr int n = 1024;
                 auto a = SpdMatrix(n);
                 auto l = std::make_shared<std::vector<double>>(static_cast<size_t>(n) * n);
                 return std::function<void()>([&b, a, l] { b.Causal().Cholesky(a->data(), l->data(), n, DType::Float64); });
               }});
  w.push_back({"peer.lapack_dpotrf", "peer", "1024x1024 f64", 16.0 * 1024 * 1024, 1024.0 * 1024 * 1024 / 3.0, "fma",
               [](Backend&) {
                 constexpr int n = 1024;
                 auto a = SpdMatrix(n);
                 auto work = std::make_shared<std::vector<double>>(a->size());
                 return std::function<void()>([a, work] {
                   *work = *a;  // dpotrf factors in place
                   const char uplo = 'U';  // row-major lower = column-major upper
                   int order = n, info = 0;
                   WithBackplaneThreads([&] { dpotrf_(&uplo, &order, work->data(), &order, &info); });
                 });
               }});
  AddTrainingWorkloads(w);
  AddResearchWorkloads(w);
  AddLlmWorkloads(w);
  return w;
}

Result Run(const Workload& w, Backend& backend, const Limits& limits, double min_seconds) {
  const auto call = w.setup(backend);
  call();  // warm-up (page faults, lazy initialisation)
  double best = 1e30, total = 0;
  int runs = 0;
  while (total < min_seconds || runs < 3) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
    ++runs;
  }
  Result r;
  r.workload = w;
  r.seconds = best;
  r.gbps = w.bytes / best * 1e-9;
  r.gflops = w.flops / best * 1e-9;
  if (w.limit == "fma") r.fraction = r.gflops / limits.peak_gflops;
  if (w.limit == "triad") r.fraction = r.gbps / limits.triad_gbps;
  if (w.limit == "read") r.fraction = r.gbps / limits.read_gbps;
  return r;
}

}  // namespace backplane::bench
