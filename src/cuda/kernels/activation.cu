// CUDA kernels for the Activation surface (55 methods) and MathExt Sin, Cos, Sign, SoftmaxRows and
// LogSoftmaxRows. Semantics: docs/semantics/activation.md, docs/semantics/math_ext.md; the oracle
// is the CPU scalar reference (src/cpu/reference/activation.cpp, math_ext.cpp), whose argument
// checks (same order, same messages) and element functions (src/math/activation_functions.hpp) are
// reproduced here.

#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "cuda/kernels/map.cuh"
#include "math/activation_functions.hpp"

namespace backplane::cuda {
namespace {
namespace math = ::backplane::math;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ---- Validation (the reference's helpers, same messages) ---------------------------------------

void CheckFloatParam(std::string_view op, std::string_view arg, float value) {
  CheckFinite(op, arg, static_cast<double>(value));
}

void CheckNonZeroParam(std::string_view op, std::string_view arg, float value) {
  if (value == 0.0f) ThrowInvalidArgument(op, arg, "non-zero", "0");
}

void CheckNonNegativeParam(std::string_view op, std::string_view arg, float value) {
  if (value < 0.0f) ThrowInvalidArgument(op, arg, ">= 0", fmt::format("{}", value));
}

// A device copy of `bytes` bytes of `src` (stream-ordered on Stream()); the returned block must be
// kept alive until the method's FinishMethod.
std::shared_ptr<std::byte[]> StageCopy(std::string_view op, const void* src, size_t bytes) {
  std::shared_ptr<std::byte[]> block = AllocateManaged(bytes);
  CheckCuda(cudaMemcpyAsync(block.get(), src, bytes, cudaMemcpyDefault, Stream()),
            std::string(op) + ": cudaMemcpyAsync");
  return block;
}

// ---- Unary (25) ---------------------------------------------------------------------------------

#define BP_CUDA_UNARY_FUNCTOR(Name, expr)               \
  template <class T>                                    \
  struct Name##F {                                      \
    __device__ T operator()(T x) const { return expr; } \
  };

BP_CUDA_UNARY_FUNCTOR(Exp, std::exp(x))
BP_CUDA_UNARY_FUNCTOR(Log, std::log(x))
BP_CUDA_UNARY_FUNCTOR(Log1p, std::log1p(x))
BP_CUDA_UNARY_FUNCTOR(Expm1, std::expm1(x))
BP_CUDA_UNARY_FUNCTOR(Sigmoid, math::Sigmoid(x))
BP_CUDA_UNARY_FUNCTOR(LogSigmoid, math::LogSigmoid(x))
BP_CUDA_UNARY_FUNCTOR(Tanh, std::tanh(x))
BP_CUDA_UNARY_FUNCTOR(Silu, math::Silu(x))
BP_CUDA_UNARY_FUNCTOR(GeluTanh, math::GeluTanh(x))
BP_CUDA_UNARY_FUNCTOR(Gelu, math::Gelu(x))
BP_CUDA_UNARY_FUNCTOR(ReLU, math::Relu(x))
BP_CUDA_UNARY_FUNCTOR(LeakyReLU, math::LeakyRelu(x, static_cast<T>(0.01)))
BP_CUDA_UNARY_FUNCTOR(ELU, math::Elu(x, static_cast<T>(1)))
BP_CUDA_UNARY_FUNCTOR(CELU, math::Celu(x, static_cast<T>(1)))
BP_CUDA_UNARY_FUNCTOR(SELU, math::Selu(x))
BP_CUDA_UNARY_FUNCTOR(Softplus, math::Softplus(x))
BP_CUDA_UNARY_FUNCTOR(Mish, math::Mish(x))
BP_CUDA_UNARY_FUNCTOR(Softsign, math::Softsign(x))
BP_CUDA_UNARY_FUNCTOR(HardSigmoid, math::HardSigmoid(x))
BP_CUDA_UNARY_FUNCTOR(HardSwish, math::HardSwish(x))
BP_CUDA_UNARY_FUNCTOR(HardTanh, math::Clamp(x, static_cast<T>(-1), static_cast<T>(1)))
BP_CUDA_UNARY_FUNCTOR(QuickGelu, math::QuickGelu(x))
BP_CUDA_UNARY_FUNCTOR(TanhShrink, math::TanhShrink(x))

#undef BP_CUDA_UNARY_FUNCTOR

#define BP_CUDA_UNARY_METHOD(Name, F)                                 \
  void Name(void* dst, const void* src, int64_t count, DType dtype) { \
    LaunchUnary<F>("Activation." #Name, dst, src, count, dtype);      \
  }

BP_CUDA_UNARY_METHOD(Exp, ExpF)
BP_CUDA_UNARY_METHOD(Log, LogF)
BP_CUDA_UNARY_METHOD(Log1p, Log1pF)
BP_CUDA_UNARY_METHOD(Expm1, Expm1F)
BP_CUDA_UNARY_METHOD(Sigmoid, SigmoidF)
BP_CUDA_UNARY_METHOD(LogSigmoid, LogSigmoidF)
BP_CUDA_UNARY_METHOD(Tanh, TanhF)
BP_CUDA_UNARY_METHOD(Silu, SiluF)
BP_CUDA_UNARY_METHOD(Swish, SiluF)
BP_CUDA_UNARY_METHOD(GeluTanh, GeluTanhF)
BP_CUDA_UNARY_METHOD(Gelu, GeluF)
BP_CUDA_UNARY_METHOD(ReLU, ReLUF)
BP_CUDA_UNARY_METHOD(LeakyReLU, LeakyReLUF)
BP_CUDA_UNARY_METHOD(ELU, ELUF)
BP_CUDA_UNARY_METHOD(CELU, CELUF)
BP_CUDA_UNARY_METHOD(SELU, SELUF)
BP_CUDA_UNARY_METHOD(Softplus, SoftplusF)
BP_CUDA_UNARY_METHOD(Mish, MishF)
BP_CUDA_UNARY_METHOD(Softsign, SoftsignF)
BP_CUDA_UNARY_METHOD(HardSigmoid, HardSigmoidF)
BP_CUDA_UNARY_METHOD(HardSwish, HardSwishF)
BP_CUDA_UNARY_METHOD(HardTanh, HardTanhF)
BP_CUDA_UNARY_METHOD(HardGelu, HardSwishF)
BP_CUDA_UNARY_METHOD(QuickGelu, QuickGeluF)
BP_CUDA_UNARY_METHOD(TanhShrink, TanhShrinkF)

#undef BP_CUDA_UNARY_METHOD

// ---- Softmax over rows (Activation.Softmax/LogSoftmax, MathExt.SoftmaxRows/LogSoftmaxRows) -----
// One block per row (rows stride over the grid). In double for every dtype, as the reference:
// m = max(x) (NaN never wins the comparison), s = sum exp(x - m), then exp(x - m) / s or
// (x - m) - log(s), rounded on store through the compute type (as the reference's Store<double>).
// A NaN or +Inf entry, or an all -Inf row, makes the whole row NaN through that arithmetic.

constexpr int kSoftmaxMaxThreads = 1024;
constexpr int kSoftmaxRowThreads = 256;
constexpr int64_t kSoftmaxMaxBlocks = 65535LL * 8;

// blockDim.x is a power of two <= kSoftmaxMaxThreads. Every thread gets the block's result; the
// shared array may be reused right after the call.
__device__ double BlockMax(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const double other = shared[threadIdx.x + stride];
      if (other > shared[threadIdx.x]) shared[threadIdx.x] = other;
    }
    __syncthreads();
  }
  const double result = shared[0];
  __syncthreads();
  return result;
}

__device__ double BlockSum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  const double result = shared[0];
  __syncthreads();
  return result;
}

// Each row is read completely (twice) before any of it is written, and every element is written by
// the thread that reads it last, so dst == src is safe.
template <class S, bool kLog>
__global__ void __launch_bounds__(kSoftmaxMaxThreads)
    SoftmaxRowsKernel(void* dst, const void* src, int64_t rows, int64_t cols) {
  __shared__ double shared[kSoftmaxMaxThreads];
  const int64_t step = blockDim.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * cols;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = threadIdx.x; c < cols; c += step) {
      const double x = static_cast<double>(Ld<S>(src, base + c));
      m = x > m ? x : m;
    }
    m = BlockMax(m, shared);
    double s = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += step) {
      s += std::exp(static_cast<double>(Ld<S>(src, base + c)) - m);
    }
    s = BlockSum(s, shared);
    if constexpr (kLog) {
      const double logSum = std::log(s);
      for (int64_t c = threadIdx.x; c < cols; c += step) {
        const double out = (static_cast<double>(Ld<S>(src, base + c)) - m) - logSum;
        St<S>(dst, base + c, static_cast<Compute<S>>(out));
      }
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += step) {
        const double out = std::exp(static_cast<double>(Ld<S>(src, base + c)) - m) / s;
        St<S>(dst, base + c, static_cast<Compute<S>>(out));
      }
    }
  }
}

// A power of two in [32, maxThreads], the smallest >= cols when that is below maxThreads.
int SoftmaxThreads(int64_t cols, int maxThreads) {
  int threads = 32;
  while (threads < maxThreads && threads < cols) threads *= 2;
  return threads;
}

template <class S, bool kLog>
void LaunchSoftmaxRows(void* dst, const void* src, int64_t rows, int64_t cols, int maxThreads) {
  const unsigned grid = static_cast<unsigned>(rows < kSoftmaxMaxBlocks ? rows : kSoftmaxMaxBlocks);
  SoftmaxRowsKernel<S, kLog>
      <<<grid, SoftmaxThreads(cols, maxThreads), 0, Stream()>>>(dst, src, rows, cols);
}

// The whole buffer is one row. The reference reads all of src before it writes, so a partial
// overlap of dst and src (dst != src) is computed from a staged copy of src.
void SoftmaxImpl(std::string_view op, void* dst, const void* src, int64_t count, DType dtype,
                 bool logarithm) {
  CheckUnaryArgs(op, dst, src, count, dtype);
  if (count == 0) return;
  std::shared_ptr<std::byte[]> staged;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = static_cast<size_t>(count) * sizeof(S);
    const void* input = src;
    if (dst != src && Overlaps(dst, bytes, src, bytes)) {
      staged = StageCopy(op, src, bytes);
      input = staged.get();
    }
    if (logarithm) {
      LaunchSoftmaxRows<S, true>(dst, input, 1, count, kSoftmaxMaxThreads);
    } else {
      LaunchSoftmaxRows<S, false>(dst, input, 1, count, kSoftmaxMaxThreads);
    }
  });
  FinishMethod(op);
}

void Softmax(void* dst, const void* src, int64_t count, DType dtype) {
  SoftmaxImpl("Activation.Softmax", dst, src, count, dtype, false);
}

void LogSoftmax(void* dst, const void* src, int64_t count, DType dtype) {
  SoftmaxImpl("Activation.LogSoftmax", dst, src, count, dtype, true);
}

// ---- Parametric (12) ----------------------------------------------------------------------------
// Parameters are float; they are converted to the compute type as the reference does.

template <class T>
struct LeakySlopeF {
  T slope;
  __device__ T operator()(T x) const { return math::LeakyRelu(x, slope); }
};
template <class T>
struct EluAlphaF {
  T alpha;
  __device__ T operator()(T x) const { return math::Elu(x, alpha); }
};
template <class T>
struct CeluAlphaF {
  T alpha;
  __device__ T operator()(T x) const { return math::Celu(x, alpha); }
};
template <class T>
struct ThresholdF {
  T t;
  __device__ T operator()(T x) const { return math::Threshold(x, t); }
};
template <class T>
struct SnakeF {
  T alpha;
  __device__ T operator()(T x) const { return math::Snake(x, alpha, alpha); }
};
template <class T>
struct HardShrinkF {
  T lambda;
  __device__ T operator()(T x) const { return math::HardShrink(x, lambda); }
};
template <class T>
struct SoftShrinkF {
  T lambda;
  __device__ T operator()(T x) const { return math::SoftShrink(x, lambda); }
};
template <class T>
struct ClampRangeF {
  T lo, hi;
  __device__ T operator()(T x) const { return math::Clamp(x, lo, hi); }
};
template <class T>
struct SnakeParametricF {
  T alpha, beta;
  __device__ T operator()(T x) const { return math::Snake(x, alpha, beta); }
};

void LeakyWithSlope(std::string_view op, void* dst, const void* src, int64_t count, DType dtype,
                    float slope) {
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", slope);
  LaunchUnary<LeakySlopeF>(op, dst, src, count, dtype, slope);
}

void PReLU(void* dst, const void* src, int64_t count, DType dtype, float param) {
  LeakyWithSlope("Activation.PReLU", dst, src, count, dtype, param);
}

void LeakyReLUSlope(void* dst, const void* src, int64_t count, DType dtype, float param) {
  LeakyWithSlope("Activation.LeakyReLUSlope", dst, src, count, dtype, param);
}

void ELUAlpha(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.ELUAlpha";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  LaunchUnary<EluAlphaF>(op, dst, src, count, dtype, param);
}

void CELUAlpha(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.CELUAlpha";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonZeroParam(op, "param", param);
  LaunchUnary<CeluAlphaF>(op, dst, src, count, dtype, param);
}

void Threshold(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.Threshold";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  LaunchUnary<ThresholdF>(op, dst, src, count, dtype, param);
}

void Snake(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.Snake";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonZeroParam(op, "param", param);
  LaunchUnary<SnakeF>(op, dst, src, count, dtype, param);
}

void HardShrink(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.HardShrink";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonNegativeParam(op, "param", param);
  LaunchUnary<HardShrinkF>(op, dst, src, count, dtype, param);
}

void SoftShrink(void* dst, const void* src, int64_t count, DType dtype, float param) {
  constexpr std::string_view op = "Activation.SoftShrink";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param", param);
  CheckNonNegativeParam(op, "param", param);
  LaunchUnary<SoftShrinkF>(op, dst, src, count, dtype, param);
}

void HardTanhRange(void* dst, const void* src, int64_t count, DType dtype, float param1,
                   float param2) {
  constexpr std::string_view op = "Activation.HardTanhRange";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param1", param1);
  CheckFloatParam(op, "param2", param2);
  if (param1 > param2) {
    ThrowInvalidArgument(op, "param1", fmt::format("<= param2 (max = {})", param2),
                         fmt::format("{}", param1));
  }
  LaunchUnary<ClampRangeF>(op, dst, src, count, dtype, param1, param2);
}

void SnakeParametric(void* dst, const void* src, int64_t count, DType dtype, float param1,
                     float param2) {
  constexpr std::string_view op = "Activation.SnakeParametric";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param1", param1);
  CheckFloatParam(op, "param2", param2);
  CheckNonZeroParam(op, "param1", param1);
  CheckNonZeroParam(op, "param2", param2);
  LaunchUnary<SnakeParametricF>(op, dst, src, count, dtype, param1, param2);
}

// Inference-mode RReLU: the fixed slope (lower + upper) / 2, formed in double and then converted
// to the compute type (as the reference).
void RReLU(void* dst, const void* src, int64_t count, DType dtype, float param1, float param2) {
  constexpr std::string_view op = "Activation.RReLU";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckFloatParam(op, "param1", param1);
  CheckFloatParam(op, "param2", param2);
  CheckNonNegativeParam(op, "param1", param1);
  if (param1 > param2) {
    ThrowInvalidArgument(op, "param1", fmt::format("<= param2 (upper = {})", param2),
                         fmt::format("{}", param1));
  }
  const double slope = (static_cast<double>(param1) + static_cast<double>(param2)) / 2.0;
  LaunchUnary<LeakySlopeF>(op, dst, src, count, dtype, slope);
}

// Channels-last PReLU: element i uses slopes[i % slopeCount]; slopes are always f32.
template <class S>
__global__ void PReLUVKernel(void* dst, const void* src, const float* slopes, int64_t n,
                             int64_t slopeCount) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T slope = static_cast<T>(slopes[i % slopeCount]);
    St<S>(dst, i, math::LeakyRelu(Ld<S>(src, i), slope));
  }
}

void PReLUV(void* dst, const void* src, const float* slopes, int64_t count, DType dtype,
            int64_t slopeCount) {
  constexpr std::string_view op = "Activation.PReLUV";
  CheckUnaryArgs(op, dst, src, count, dtype);
  CheckPositive(op, "slopeCount", slopeCount);
  CheckPointer(op, "slopes", slopes, count > 0 ? slopeCount : 0);
  if (count % slopeCount != 0) {
    ThrowShapeMismatch(op, "count", fmt::format("a multiple of slopeCount ({})", slopeCount),
                       std::to_string(count));
  }
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    PReLUVKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(dst, src, slopes, count, slopeCount);
  });
  FinishMethod(op);
}

// ---- Gated linear units (16) --------------------------------------------------------------------
// out = f(gate, up); the packed form reads gate from the first half of each row, up from the
// second.

#define BP_CUDA_GLU_FUNCTOR(Name, expr)                          \
  template <class T>                                             \
  struct Name##F {                                               \
    __device__ T operator()(T gate, T up) const { return expr; } \
  };

// clang-format off
BP_CUDA_GLU_FUNCTOR(GLU, gate * math::Sigmoid(up))
BP_CUDA_GLU_FUNCTOR(GeGLU, gate * math::Gelu(up))
BP_CUDA_GLU_FUNCTOR(GeGLUTanh, gate * math::GeluTanh(up))
BP_CUDA_GLU_FUNCTOR(SwiGLU, math::Silu(gate) * up)
BP_CUDA_GLU_FUNCTOR(ReGLU, gate * math::Relu(up))
BP_CUDA_GLU_FUNCTOR(SiGLU, math::Sigmoid(gate) * up)
BP_CUDA_GLU_FUNCTOR(LinGLU, gate * up)
BP_CUDA_GLU_FUNCTOR(SeGLU, math::Sigmoid(gate) * up)
// clang-format on

#undef BP_CUDA_GLU_FUNCTOR

// n = batch * halfCount outputs; output i = (row, j) reads packed[row * 2h + j] and
// packed[row * 2h + h + j].
template <class S, class F>
__global__ void GluPackedKernel(void* dst, const void* packed, int64_t n, int64_t halfCount, F f) {
  BP_CUDA_GRID_STRIDE(i, n) {
    const int64_t row = i / halfCount;
    const int64_t j = i - row * halfCount;
    const int64_t base = row * 2 * halfCount;
    St<S>(dst, i, f(Ld<S>(packed, base + j), Ld<S>(packed, base + halfCount + j)));
  }
}

// The reference's sequential loop never reads an element it has already written when dst ==
// packed (output i is written at index i, its inputs are at indices >= i), i.e. it computes from
// the original input. Parallel threads could overwrite another row's inputs, so when dst overlaps
// packed the input is staged into a copy first.
template <template <class> class F>
void GluPackedMethod(std::string_view op, void* dst, const void* packed, int64_t batch,
                     int64_t halfCount, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "halfCount", halfCount);
  if (halfCount > kInt64Max / 2) {
    ThrowInvalidArgument(op, "halfCount", fmt::format("<= {}", kInt64Max / 2),
                         std::to_string(halfCount));
  }
  const int64_t rowLength = 2 * halfCount;
  if (rowLength > 0 && batch > kInt64Max / rowLength) {
    ThrowInvalidArgument(
        op, "batch",
        fmt::format("<= {} (batch * 2 * halfCount overflows int64)", kInt64Max / rowLength),
        std::to_string(batch));
  }
  const int64_t n = batch * halfCount;
  CheckPointer(op, "dst", dst, n);
  CheckPointer(op, "packed", packed, batch * rowLength);
  if (n == 0) return;
  std::shared_ptr<std::byte[]> staged;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    const size_t dstBytes = static_cast<size_t>(n) * sizeof(S);
    const size_t packedBytes = static_cast<size_t>(batch * rowLength) * sizeof(S);
    const void* input = packed;
    if (Overlaps(dst, dstBytes, packed, packedBytes)) {
      staged = StageCopy(op, packed, packedBytes);
      input = staged.get();
    }
    GluPackedKernel<S><<<GridFor(n), kThreads, 0, Stream()>>>(dst, input, n, halfCount, F<T>{});
  });
  FinishMethod(op);
}

#define BP_CUDA_GLU_METHODS(Name)                                                               \
  void Name(void* dst, const void* packed, int64_t batch, int64_t halfCount, DType dtype) {     \
    GluPackedMethod<Name##F>("Activation." #Name, dst, packed, batch, halfCount, dtype);        \
  }                                                                                             \
  void Name##Tensors(void* dst, const void* gate, const void* up, int64_t count, DType dtype) { \
    LaunchBinary<Name##F>("Activation." #Name "Tensors", dst, gate, up, count, dtype, "gate",   \
                          "up");                                                                \
  }

BP_CUDA_GLU_METHODS(GLU)
BP_CUDA_GLU_METHODS(GeGLU)
BP_CUDA_GLU_METHODS(GeGLUTanh)
BP_CUDA_GLU_METHODS(SwiGLU)
BP_CUDA_GLU_METHODS(ReGLU)
BP_CUDA_GLU_METHODS(SiGLU)
BP_CUDA_GLU_METHODS(LinGLU)
BP_CUDA_GLU_METHODS(SeGLU)

#undef BP_CUDA_GLU_METHODS

// ---- MathExt: Sin, Cos, Sign, SoftmaxRows, LogSoftmaxRows ---------------------------------------
namespace math_ext {

template <class T>
struct SinF {
  __device__ T operator()(T x) const { return std::sin(x); }
};
template <class T>
struct CosF {
  __device__ T operator()(T x) const { return std::cos(x); }
};
// numpy.sign: +1 for x > 0, -1 for x < 0, +0 for either zero, NaN for NaN.
template <class T>
struct SignF {
  __device__ T operator()(T x) const {
    if (x > T(0)) return T(1);
    if (x < T(0)) return T(-1);
    if (x == T(0)) return T(0);
    return x;
  }
};

// The reference's order: dtype, count, src, then dst (LaunchUnary's own checks then pass).
template <template <class> class F>
void MathExtUnary(std::string_view op, void* dst, const void* src, int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
  LaunchUnary<F>(op, dst, src, count, dtype);
}

void Sin(void* dst, const void* src, int64_t count, DType dtype) {
  MathExtUnary<SinF>("MathExt.Sin", dst, src, count, dtype);
}

void Cos(void* dst, const void* src, int64_t count, DType dtype) {
  MathExtUnary<CosF>("MathExt.Cos", dst, src, count, dtype);
}

void Sign(void* dst, const void* src, int64_t count, DType dtype) {
  MathExtUnary<SignF>("MathExt.Sign", dst, src, count, dtype);
}

// Each row is Activation.Softmax / LogSoftmax of its cols values. dst == src is allowed; any other
// overlap is processed as the reference does, row by row in order, each row computed from a copy
// of its input taken after the previous rows were written.
void SoftmaxRowsImpl(std::string_view op, void* dst, const void* src, int64_t rows, int64_t cols,
                     DType dtype, bool logarithm) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "rows", rows);
  CheckNonNegative(op, "cols", cols);
  if (cols != 0 && rows > kInt64Max / cols) {
    ThrowInvalidArgument(op, "rows*cols", "small enough that the element count fits in int64",
                         fmt::format("{} x {}", rows, cols));
  }
  const int64_t total = rows * cols;
  CheckPointer(op, "src", src, total);
  CheckPointer(op, "dst", dst, total);
  if (total == 0) return;
  std::shared_ptr<std::byte[]> staged;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const auto launch = [&](void* out, const void* in, int64_t rowCount) {
      if (logarithm) {
        LaunchSoftmaxRows<S, true>(out, in, rowCount, cols, kSoftmaxRowThreads);
      } else {
        LaunchSoftmaxRows<S, false>(out, in, rowCount, cols, kSoftmaxRowThreads);
      }
    };
    const size_t rowBytes = static_cast<size_t>(cols) * sizeof(S);
    const size_t totalBytes = static_cast<size_t>(total) * sizeof(S);
    if (dst == src || !Overlaps(dst, totalBytes, src, totalBytes)) {
      launch(dst, src, rows);
      return;
    }
    staged = AllocateManaged(rowBytes);
    for (int64_t r = 0; r < rows; ++r) {
      const size_t offset = static_cast<size_t>(r) * rowBytes;
      CheckCuda(cudaMemcpyAsync(staged.get(), static_cast<const char*>(src) + offset, rowBytes,
                                cudaMemcpyDefault, Stream()),
                std::string(op) + ": cudaMemcpyAsync");
      launch(static_cast<char*>(dst) + offset, staged.get(), 1);
    }
  });
  FinishMethod(op);
}

void SoftmaxRows(void* dst, const void* src, int64_t rows, int64_t cols, DType dtype) {
  SoftmaxRowsImpl("MathExt.SoftmaxRows", dst, src, rows, cols, dtype, false);
}

void LogSoftmaxRows(void* dst, const void* src, int64_t rows, int64_t cols, DType dtype) {
  SoftmaxRowsImpl("MathExt.LogSoftmaxRows", dst, src, rows, cols, dtype, true);
}

}  // namespace math_ext
}  // namespace

void RegisterActivation(KernelTable& table) {
#define BP_CUDA_REGISTER(S, M, F, D) table.S##_##M = &M;
  BP_SURFACE_ACTIVATION(BP_CUDA_REGISTER)
#undef BP_CUDA_REGISTER
  table.MathExt_Sin = &math_ext::Sin;
  table.MathExt_Cos = &math_ext::Cos;
  table.MathExt_Sign = &math_ext::Sign;
  table.MathExt_SoftmaxRows = &math_ext::SoftmaxRows;
  table.MathExt_LogSoftmaxRows = &math_ext::LogSoftmaxRows;
}

}  // namespace backplane::cuda
