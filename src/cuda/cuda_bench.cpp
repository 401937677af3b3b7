// backplane bench --device cuda, the kernel rows: the library path on device buffers beside the
// device's own limits measured in the same run (device-to-device copy bandwidth, cuBLAS's GEMM).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cuda/cuda_backend.hpp"
#include "backplane/error.hpp"
#include "cuda/context.hpp"
#include "cuda/cublas_library.hpp"
#include "cuda/cuda_check.hpp"

namespace backplane::cuda {
namespace {

class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes) { CheckCuda(cudaMalloc(&ptr_, bytes), "cudaMalloc"); }
  ~Buffer() { cudaFree(ptr_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }

  // Deterministic values in [-1, 1) of `dtype` storage.
  void Fill(DType dtype, uint32_t seed) {
    const size_t element = DTypeStorageBytes(dtype, 1);
    const size_t n = bytes_ / element;
    std::vector<uint8_t> host(bytes_);
    uint32_t state = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      const float v = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
      if (dtype == DType::Float32) {
        std::memcpy(&host[i * 4], &v, 4);
      } else if (dtype == DType::BFloat16) {
        const uint16_t b = F32ToBF16(v);
        std::memcpy(&host[i * 2], &b, 2);
      } else if (dtype == DType::Float16) {
        const uint16_t h = F32ToF16(v);
        std::memcpy(&host[i * 2], &h, 2);
      }
    }
    CheckCuda(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy");
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

// Seconds per call: one warm-up, then runs until min_seconds (at least 3), timed with events.
double Time(const std::function<void()>& call, double min_seconds) {
  call();
  Synchronize("bench");
  cudaEvent_t start, stop;
  CheckCuda(cudaEventCreate(&start), "cudaEventCreate");
  CheckCuda(cudaEventCreate(&stop), "cudaEventCreate");
  int runs = 0;
  double total = 0.0;
  while (runs < 3 || total < min_seconds) {
    CheckCuda(cudaEventRecord(start, Stream()), "cudaEventRecord");
    call();
    CheckCuda(cudaEventRecord(stop, Stream()), "cudaEventRecord");
    CheckCuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0.0f;
    CheckCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    total += ms / 1000.0;
    ++runs;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return total / runs;
}

}  // namespace

std::string KernelBenchMarkdown(int device, double min_seconds) {
  auto backend = CreateBackend(device);
  std::ostringstream md;
  constexpr int64_t kElements = int64_t{1} << 26;  // 64M
  const size_t f32_bytes = static_cast<size_t>(kElements) * 4;

  Buffer a(f32_bytes), b(f32_bytes), c(f32_bytes);
  a.Fill(DType::Float32, 1);
  b.Fill(DType::Float32, 2);
  const double copy_s = Time([&] {
    CheckCuda(cudaMemcpyAsync(c.get(), a.get(), f32_bytes, cudaMemcpyDeviceToDevice, Stream()), "cudaMemcpyAsync");
  }, min_seconds);
  const double copy_gbs = 2.0 * static_cast<double>(f32_bytes) / copy_s / 1e9;
  md << fmt::format("Device-to-device copy of 256 MiB: {:.0f} GB/s (read + write), the memory-bound limit below.\n\n",
                    copy_gbs);
  md << "| Workload | Library time | Rate | vs limit |\n|---|---|---|---|\n";
  auto memory_row = [&](const std::string& name, double bytes, const std::function<void()>& call) {
    const double s = Time(call, min_seconds);
    const double gbs = bytes / s / 1e9;
    md << fmt::format("| {} | {:.3f} ms | {:.0f} GB/s | {:.0f}% of copy |\n", name, s * 1e3, gbs, 100.0 * gbs / copy_gbs);
  };
  memory_row("Elementwise.Add f32, 64M", 3.0 * f32_bytes,
             [&] { backend->Elementwise().Add(c.get(), a.get(), b.get(), kElements, DType::Float32); });
  constexpr int64_t kCols = 1024, kRows = kElements / kCols;
  memory_row("MathExt.SoftmaxRows f32, 65536 x 1024", 2.0 * f32_bytes,
             [&] { backend->MathExt().SoftmaxRows(c.get(), a.get(), kRows, kCols, DType::Float32); });
  Buffer scale(kCols * 4), bias(kCols * 4);
  scale.Fill(DType::Float32, 3);
  bias.Fill(DType::Float32, 4);
  memory_row("LayerNorm.LayerNorm f32, 65536 x 1024", 2.0 * f32_bytes, [&] {
    backend->LayerNorm().LayerNorm(a.get(), scale.get(), bias.get(), c.get(), kRows, kCols, DType::Float32);
  });
  memory_row("LayerNorm.RMSNorm f32, 65536 x 1024", 2.0 * f32_bytes,
             [&] { backend->LayerNorm().RMSNorm(a.get(), scale.get(), c.get(), kRows, kCols, DType::Float32); });

  // GEMM bf16 4096^3: the library path against the same cuBLAS call made directly.
  constexpr int64_t n = 4096;
  const size_t bf16_bytes = static_cast<size_t>(n * n) * 2;
  Buffer x(bf16_bytes), w(bf16_bytes), y(bf16_bytes);
  x.Fill(DType::BFloat16, 5);
  w.Fill(DType::BFloat16, 6);
  const double flops = 2.0 * n * n * n;
  const double lib_s = Time([&] { backend->Matmul().Matmul(y.get(), x.get(), w.get(), n, n, n, DType::BFloat16); },
                            min_seconds);
  const float one = 1.0f, zero = 0.0f;
  const double cublas_s = Time([&] {
    CheckCublas(CublasApi().gemm_ex_64(Cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, w.get(), CUDA_R_16BF, n,
                                       x.get(), CUDA_R_16BF, n, &zero, y.get(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
  }, min_seconds);
  md << fmt::format("| Matmul.Matmul bf16 4096^3 | {:.3f} ms | {:.0f} TFLOP/s | {:.2f}x cuBLAS direct ({:.0f} TFLOP/s) |\n",
                    lib_s * 1e3, flops / lib_s / 1e12, cublas_s / lib_s, flops / cublas_s / 1e12);

  // Attention: batch 8 x 32 heads x 4096 x 128, causal, bf16 (8 calls of the [seq, heads*dim] layout).
  constexpr int64_t seq = 4096, heads = 32, dim = 128, batch = 8;
  const size_t qkv_bytes = static_cast<size_t>(seq * heads * dim) * 2;
  Buffer q(qkv_bytes), k(qkv_bytes), v(qkv_bytes), o(qkv_bytes);
  q.Fill(DType::BFloat16, 7);
  k.Fill(DType::BFloat16, 8);
  v.Fill(DType::BFloat16, 9);
  MultiHeadAttentionConfig config;
  config.NumHeads = heads;
  config.HeadDim = dim;
  config.Causal = true;
  const double attn_flops = batch * 4.0 * seq * seq * dim * heads / 2.0;  // causal: half the score matrix
  try {
    const double attn_s = Time([&] {
      for (int64_t i = 0; i < batch; ++i) {
        backend->Attention().MultiHeadAttention(config, q.get(), k.get(), v.get(), o.get(), seq, seq, DType::BFloat16);
      }
    }, min_seconds);
    md << fmt::format("| Attention.MultiHeadAttention bf16 8x32x4096x128 causal | {:.3f} ms | {:.1f} TFLOP/s | "
                      "FlashAttention-3 publishes about 640 TFLOP/s on H100 for this shape |\n",
                      attn_s * 1e3, attn_flops / attn_s / 1e12);
  } catch (const Error& e) {
    md << fmt::format("| Attention.MultiHeadAttention bf16 8x32x4096x128 causal | — | — | {} |\n", e.what());
  }
  return md.str();
}

}  // namespace backplane::cuda
