#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/exact_math.cuh"

namespace backplane::cuda {
namespace {

// ---- Shared helpers --------------------------------------------------------------------------

// One block per row: enough blocks for the GPU, each looping over rows r, r + gridDim.x, ...
unsigned RowGrid(int64_t rows) {
  const int64_t cap = 65535LL * 8;
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > cap ? cap : rows));
}

// ---- Reduction and Dot: two passes (per-block partials, then one block) -----------------------

constexpr int64_t kMaxReduceBlocks = 1024;

// Op: Acc, Identity(), Element(a, b, i), Combine(x, y), Result(acc) -> double.
template <class Op>
__global__ void ReducePartialsKernel(Op op, const void* a, const void* b, int64_t n,
                                     typename Op::Acc* partials) {
  typename Op::Acc acc = op.Identity();
  BP_CUDA_GRID_STRIDE(i, n) { acc = op.Combine(acc, op.Element(a, b, i)); }
  acc = BlockReduce(acc, op);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class Op>
__global__ void ReduceFinalKernel(Op op, const typename Op::Acc* partials, int64_t n,
                                  double* result) {
  typename Op::Acc acc = op.Identity();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = op.Combine(acc, partials[i]);
  acc = BlockReduce(acc, op);
  if (threadIdx.x == 0) *result = op.Result(acc);
}

// The reduction of count > 0 elements on the device; returns op.Result of the total.
template <class Op>
double ReduceOnDevice(std::string_view name, const Op& op, const void* a, const void* b,
                      int64_t count) {
  using Acc = typename Op::Acc;
  int64_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > kMaxReduceBlocks) blocks = kMaxReduceBlocks;
  const size_t partialBytes = (static_cast<size_t>(blocks) * sizeof(Acc) + 15) / 16 * 16;
  DeviceScratch scratch(partialBytes + sizeof(double));
  auto* partials = static_cast<Acc*>(scratch.Get());
  auto* result = reinterpret_cast<double*>(static_cast<char*>(scratch.Get()) + partialBytes);
  ReducePartialsKernel<Op><<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(op, a, b, count,
                                                                                     partials);
  ReduceFinalKernel<Op><<<1, kThreads, 0, Stream()>>>(op, partials, blocks, result);
  double host = 0.0;
  CopyAsync(&host, result, sizeof(double));
  scratch.Release();
  FinishMethod(name);
  return host;
}

template <class S>
struct SumOp {
  using Acc = double;
  __device__ Acc Identity() const { return 0.0; }
  __device__ Acc Element(const void* a, const void*, int64_t i) const { return LdD<S>(a, i); }
  __device__ Acc Combine(Acc x, Acc y) const { return Add(x, y); }
  __device__ double Result(Acc x) const { return x; }
};

template <class S>
struct ProdOp {
  using Acc = double;
  __device__ Acc Identity() const { return 1.0; }
  __device__ Acc Element(const void* a, const void*, int64_t i) const { return LdD<S>(a, i); }
  __device__ Acc Combine(Acc x, Acc y) const { return Mul(x, y); }
  __device__ double Result(Acc x) const { return x; }
};

template <class S>
struct L1Op {
  using Acc = double;
  __device__ Acc Identity() const { return 0.0; }
  __device__ Acc Element(const void* a, const void*, int64_t i) const { return fabs(LdD<S>(a, i)); }
  __device__ Acc Combine(Acc x, Acc y) const { return Add(x, y); }
  __device__ double Result(Acc x) const { return x; }
};

template <class S>
struct DotOp {
  using Acc = double;
  __device__ Acc Identity() const { return 0.0; }
  __device__ Acc Element(const void* a, const void* b, int64_t i) const {
    return Mul(LdD<S>(a, i), LdD<S>(b, i));
  }
  __device__ Acc Combine(Acc x, Acc y) const { return Add(x, y); }
  __device__ double Result(Acc x) const { return x; }
};

// int8: exact int64 accumulation, returned as double.
struct DotInt8Op {
  using Acc = long long;
  __device__ Acc Identity() const { return 0; }
  __device__ Acc Element(const void* a, const void* b, int64_t i) const {
    return static_cast<long long>(static_cast<const int8_t*>(a)[i]) *
           static_cast<long long>(static_cast<const int8_t*>(b)[i]);
  }
  __device__ Acc Combine(Acc x, Acc y) const { return x + y; }
  __device__ double Result(Acc x) const { return static_cast<double>(x); }
};

// ReduceMin/ReduceMax keep (value, index) so the result is the reference's exactly: the first NaN
// when there is one, otherwise the smallest (largest) value, the first occurrence on ties (-0 vs
// +0). index < 0 marks the identity (no element).
struct Candidate {
  double value;
  long long index;
};

template <class S, bool kMax>
struct ExtremumOp {
  using Acc = Candidate;
  __device__ Acc Identity() const { return Candidate{0.0, -1}; }
  __device__ Acc Element(const void* a, const void*, int64_t i) const {
    return Candidate{LdD<S>(a, i), static_cast<long long>(i)};
  }
  __device__ Acc Combine(Acc x, Acc y) const {
    if (x.index < 0) return y;
    if (y.index < 0) return x;
    const bool xNan = isnan(x.value);
    const bool yNan = isnan(y.value);
    if (xNan != yNan) return xNan ? x : y;
    if (!xNan && x.value != y.value) {
      if constexpr (kMax) {
        return x.value > y.value ? x : y;
      } else {
        return x.value < y.value ? x : y;
      }
    }
    return x.index < y.index ? x : y;  // equal values (or both NaN): the first occurrence
  }
  __device__ double Result(Acc x) const { return x.value; }
};

void CheckReduce(std::string_view op, const void* values, int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "values", values, count);
}

// The f64 total for f64 input; the total rounded once to f32 for the f32-class formats.
double Finish(double total, DType dtype) {
  return dtype == DType::Float64 ? total : static_cast<double>(static_cast<float>(total));
}

double Sum(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.Sum";
  CheckReduce(kOp, values, count, dtype);
  if (count == 0) return Finish(0.0, dtype);
  double total = 0.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    total = ReduceOnDevice(kOp, SumOp<S>{}, values, nullptr, count);
  });
  return Finish(total, dtype);
}

double Prod(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.Prod";
  CheckReduce(kOp, values, count, dtype);
  if (count == 0) return Finish(1.0, dtype);
  double product = 1.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    product = ReduceOnDevice(kOp, ProdOp<S>{}, values, nullptr, count);
  });
  return Finish(product, dtype);
}

double ReduceMin(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.ReduceMin";
  CheckReduce(kOp, values, count, dtype);
  CheckPositive(kOp, "count", count);
  double best = 0.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    best = ReduceOnDevice(kOp, ExtremumOp<S, false>{}, values, nullptr, count);
  });
  return best;
}

double ReduceMax(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.ReduceMax";
  CheckReduce(kOp, values, count, dtype);
  CheckPositive(kOp, "count", count);
  double best = 0.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    best = ReduceOnDevice(kOp, ExtremumOp<S, true>{}, values, nullptr, count);
  });
  return best;
}

double L1Norm(const void* values, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Reduction.L1Norm";
  CheckReduce(kOp, values, count, dtype);
  if (count == 0) return Finish(0.0, dtype);
  double total = 0.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    total = ReduceOnDevice(kOp, L1Op<S>{}, values, nullptr, count);
  });
  return Finish(total, dtype);
}

double Dot(const void* left, const void* right, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Dot.Dot";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes | DTypeSet{DType::Int8});
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "left", left, count);
  CheckPointer(kOp, "right", right, count);
  if (count == 0) return 0.0;  // the empty sum, for int8 and every float format
  if (dtype == DType::Int8) return ReduceOnDevice(kOp, DotInt8Op{}, left, right, count);
  double total = 0.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    total = ReduceOnDevice(kOp, DotOp<S>{}, left, right, count);
  });
  return dtype == DType::Float64 ? total : static_cast<double>(static_cast<float>(total));
}

// ---- LayerNorm, RMSNorm (and the MathExt eps variants) ---------------------------------------

constexpr double kLayerNormEps = 1e-5;
constexpr double kRMSNormEps = 1e-6;

// Checks dtype, sizes and the in/out pointers; returns rows * lastDim.
int64_t ValidateNorm(std::string_view op, const void* in, const void* out, int64_t rows,
                     int64_t lastDim, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "rows", rows);
  CheckNonNegative(op, "lastDim", lastDim);
  int64_t count = 0;
  if (__builtin_mul_overflow(rows, lastDim, &count)) {
    ThrowInvalidArgument(op, "rows", "small enough for rows * lastDim to fit in int64",
                         Format("{} * {}", rows, lastDim));
  }
  CheckPointer(op, "in", in, count);
  CheckPointer(op, "out", out, count);
  return count;
}

void CheckEps(std::string_view op, double eps) {
  if (!(std::isfinite(eps) && eps >= 0.0)) {
    ThrowInvalidArgument(op, "eps", "finite and >= 0", Format("{}", eps));
  }
}

// Per row (lastDim > 0): mean, biased variance (two passes, f64), y = (x - mean) * rstd
// [* scale] [+ bias], all in f64, rounded once. Every read of a row precedes its writes, and each
// element is read and written by the same thread, so out == in is safe.
template <class S>
__global__ void LayerNormKernel(const void* in, const void* scale, const void* bias, void* out,
                                int64_t rows, int64_t lastDim, double eps) {
  const double n = static_cast<double>(lastDim);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * lastDim;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < lastDim; j += blockDim.x) sum = Add(sum, LdD<S>(in, base + j));
    sum = BlockReduce(sum, AddOp{});
    const double mean = Div(sum, n);
    double squares = 0.0;
    for (int64_t j = threadIdx.x; j < lastDim; j += blockDim.x) {
      const double d = Sub(LdD<S>(in, base + j), mean);
      squares = Add(squares, Mul(d, d));
    }
    squares = BlockReduce(squares, AddOp{});
    const double rstd = Div(1.0, __dsqrt_rn(Add(Div(squares, n), eps)));
    for (int64_t j = threadIdx.x; j < lastDim; j += blockDim.x) {
      double v = Mul(Sub(LdD<S>(in, base + j), mean), rstd);
      if (scale != nullptr) v = Mul(v, LdD<S>(scale, j));
      if (bias != nullptr) v = Add(v, LdD<S>(bias, j));
      StD<S>(out, base + j, v);
    }
  }
}

// Per row (lastDim > 0): rms = sqrt(mean(x^2) + eps) in f64, y = x / rms [* scale].
template <class S>
__global__ void RMSNormKernel(const void* in, const void* scale, void* out, int64_t rows,
                              int64_t lastDim, double eps) {
  const double n = static_cast<double>(lastDim);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * lastDim;
    double squares = 0.0;
    for (int64_t j = threadIdx.x; j < lastDim; j += blockDim.x) {
      const double x = LdD<S>(in, base + j);
      squares = Add(squares, Mul(x, x));
    }
    squares = BlockReduce(squares, AddOp{});
    const double rms = __dsqrt_rn(Add(Div(squares, n), eps));
    for (int64_t j = threadIdx.x; j < lastDim; j += blockDim.x) {
      double v = Div(LdD<S>(in, base + j), rms);
      if (scale != nullptr) v = Mul(v, LdD<S>(scale, j));
      StD<S>(out, base + j, v);
    }
  }
}

void LayerNormWith(std::string_view op, const void* in, const void* scale, const void* bias,
                   void* out, int64_t rows, int64_t lastDim, double eps, DType dtype) {
  const int64_t count = ValidateNorm(op, in, out, rows, lastDim, dtype);
  CheckEps(op, eps);
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    LayerNormKernel<S><<<RowGrid(rows), kThreads, 0, Stream()>>>(in, scale, bias, out, rows,
                                                                 lastDim, eps);
  });
  FinishMethod(op);
}

void RMSNormWith(std::string_view op, const void* in, const void* scale, void* out, int64_t rows,
                 int64_t lastDim, double eps, DType dtype) {
  const int64_t count = ValidateNorm(op, in, out, rows, lastDim, dtype);
  CheckEps(op, eps);
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    RMSNormKernel<S><<<RowGrid(rows), kThreads, 0, Stream()>>>(in, scale, out, rows, lastDim, eps);
  });
  FinishMethod(op);
}

void LayerNorm(const void* in, const void* scale, const void* bias, void* out, int64_t rows,
               int64_t lastDim, DType dtype) {
  LayerNormWith("LayerNorm.LayerNorm", in, scale, bias, out, rows, lastDim, kLayerNormEps, dtype);
}

void LayerNormEps(const void* in, const void* scale, const void* bias, void* out, int64_t rows,
                  int64_t lastDim, double eps, DType dtype) {
  LayerNormWith("MathExt.LayerNormEps", in, scale, bias, out, rows, lastDim, eps, dtype);
}

void RMSNorm(const void* in, const void* scale, void* out, int64_t rows, int64_t lastDim,
             DType dtype) {
  RMSNormWith("LayerNorm.RMSNorm", in, scale, out, rows, lastDim, kRMSNormEps, dtype);
}

void RMSNormEps(const void* in, const void* scale, void* out, int64_t rows, int64_t lastDim,
                double eps, DType dtype) {
  RMSNormWith("MathExt.RMSNormEps", in, scale, out, rows, lastDim, eps, dtype);
}

// ---- MathExt.LogSumExp, MathExt.InvSqrtDimScale ------------------------------------------------

int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "small enough that the element count fits in int64",
                         Format("{} x {}", a, b));
  }
  return product;
}

// The row maximum over the non-NaN values (-Inf when there are none) and whether a NaN was seen.
struct MaxNan {
  double max;
  int nan;
};

struct MaxNanOp {
  __device__ MaxNan Combine(MaxNan x, MaxNan y) const {
    return MaxNan{y.max > x.max ? y.max : x.max, x.nan | y.nan};
  }
};

// Per row: NaN if the row has a NaN; m (the maximum) if m is +-Inf (also an empty row: -Inf);
// otherwise m + log(sum_j exp(x_j - m)), in f64, rounded once.
template <class S>
__global__ void LogSumExpKernel(const void* src, void* dst, int64_t rows, int64_t cols) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * cols;
    MaxNan local{-kInf, 0};
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double x = LdD<S>(src, base + c);
      if (isnan(x)) local.nan = 1;
      if (x > local.max) local.max = x;
    }
    const MaxNan stats = BlockReduce(local, MaxNanOp{});
    double result = stats.max;
    if (stats.nan != 0) {
      result = std::numeric_limits<double>::quiet_NaN();
    } else if (isfinite(stats.max)) {
      double sum = 0.0;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        sum = Add(sum, exp(Sub(LdD<S>(src, base + c), stats.max)));
      }
      sum = BlockReduce(sum, AddOp{});
      result = Add(stats.max, log(sum));
    }
    if (threadIdx.x == 0) StD<S>(dst, r, result);
  }
}

void LogSumExp(const void* src, void* dst, int64_t rows, int64_t cols, DType dtype) {
  constexpr std::string_view kOp = "MathExt.LogSumExp";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "rows", rows);
  CheckNonNegative(kOp, "cols", cols);
  const int64_t total = CheckedProduct(kOp, "rows*cols", rows, cols);
  CheckPointer(kOp, "src", src, total);
  CheckPointer(kOp, "dst", dst, rows);
  if (rows == 0) return;
  // dst overlapping src: the rows are read from a copy, so no block reads what another wrote.
  const size_t srcBytes = DTypeStorageBytes(dtype, total);
  const bool staged = Overlaps(dst, DTypeStorageBytes(dtype, rows), src, srcBytes);
  DeviceScratch copy(staged ? srcBytes : 0);
  if (staged) CopyAsync(copy.Get(), src, srcBytes);
  const void* from = staged ? copy.Get() : src;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    LogSumExpKernel<S><<<RowGrid(rows), kThreads, 0, Stream()>>>(from, dst, rows, cols);
  });
  FinishMethod(kOp);
  copy.Release();
}

template <class S>
__global__ void InvSqrtDimScaleKernel(void* dst, const void* src, int64_t n, double root) {
  BP_CUDA_GRID_STRIDE(i, n) { StD<S>(dst, i, Div(LdD<S>(src, i), root)); }
}

void InvSqrtDimScale(void* dst, const void* src, int64_t count, int64_t dim, DType dtype) {
  constexpr std::string_view kOp = "MathExt.InvSqrtDimScale";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "src", src, count);
  CheckPointer(kOp, "dst", dst, count);
  CheckPositive(kOp, "dim", dim);
  if (count == 0) return;
  const double root = std::sqrt(static_cast<double>(dim));
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    InvSqrtDimScaleKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(dst, src, count, root);
  });
  FinishMethod(kOp);
}

// ---- RoPE ----------------------------------------------------------------------------------------

// Rotates the pair (in[even], in[even+1]) by the angle with cosine c and sine s, in f64: both
// inputs are read before either output is written (in-place safe).
template <class S>
__device__ __forceinline__ void RotatePair(const void* in, void* out, int64_t even, double c,
                                           double s) {
  const double x0 = LdD<S>(in, even);
  const double x1 = LdD<S>(in, even + 1);
  StD<S>(out, even, Sub(Mul(x0, c), Mul(x1, s)));
  StD<S>(out, even + 1, Add(Mul(x0, s), Mul(x1, c)));
}

// One thread per pair t = (s * numHeads + h) * half + p of the [seqLen, numHeads, headDim] tensor;
// theta = (s + startPosition) * invFreq[p] with invFreq[p] = BaseFreq^(-2p/headDim) from the host.
template <class S>
__global__ void RoPEKernel(const void* in, void* out, const double* invFreq, int64_t pairs,
                           int64_t numHeads, int64_t half, int64_t headDim, int64_t startPosition) {
  BP_CUDA_GRID_STRIDE(t, pairs) {
    const int64_t p = t % half;
    const int64_t row = t / half;  // s * numHeads + h
    const int64_t s = row / numHeads;
    const double position = static_cast<double>(s + startPosition);
    const double theta = Mul(position, invFreq[p]);
    RotatePair<S>(in, out, row * headDim + 2 * p, cos(theta), sin(theta));
  }
}

void RoPE(const RoPEConfig& config, const void* in, void* out, int64_t seqLen, int64_t numHeads,
          int64_t headDim, DType dtype) {
  constexpr std::string_view kOp = "RoPE.RoPE";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "seqLen", seqLen);
  CheckNonNegative(kOp, "numHeads", numHeads);
  CheckNonNegative(kOp, "headDim", headDim);
  if (headDim % 2 != 0) {
    ThrowInvalidArgument(kOp, "headDim", "even (pairs (2p, 2p+1) are rotated)",
                         std::to_string(headDim));
  }
  CheckFinite(kOp, "BaseFreq", config.BaseFreq);
  if (!(config.BaseFreq > 0.0)) {
    ThrowInvalidArgument(kOp, "BaseFreq", "> 0", Format("{}", config.BaseFreq));
  }
  CheckNonNegative(kOp, "StartPosition", config.StartPosition);
  int64_t lastPosition = 0;
  if (__builtin_add_overflow(config.StartPosition, seqLen, &lastPosition)) {
    ThrowInvalidArgument(kOp, "StartPosition", "such that StartPosition + seqLen fits in int64",
                         std::to_string(config.StartPosition));
  }
  int64_t rowCount = 0;
  int64_t count = 0;
  if (__builtin_mul_overflow(seqLen, numHeads, &rowCount) ||
      __builtin_mul_overflow(rowCount, headDim, &count)) {
    ThrowInvalidArgument(kOp, "headDim", "such that seqLen*numHeads*headDim fits in int64",
                         std::to_string(headDim));
  }
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;

  // The inverse frequencies with the reference's own std::pow, so the angles match it exactly.
  const int64_t half = headDim / 2;
  std::vector<double> invFreq(static_cast<size_t>(half));
  for (int64_t p = 0; p < half; ++p) {
    const double exponent = -2.0 * static_cast<double>(p) / static_cast<double>(headDim);
    invFreq[static_cast<size_t>(p)] = std::pow(config.BaseFreq, exponent);
  }
  const size_t bytes = static_cast<size_t>(half) * sizeof(double);
  DeviceScratch scratch(bytes);
  CheckCuda(static_cast<int>(cudaMemcpyAsync(scratch.Get(), invFreq.data(), bytes,
                                             cudaMemcpyHostToDevice, Stream())),
            "cudaMemcpyAsync");
  const int64_t pairs = count / 2;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    RoPEKernel<S><<<GridFor(pairs), kThreads, 0, Stream()>>>(
        in, out, static_cast<const double*>(scratch.Get()), pairs, numHeads, half, headDim,
        config.StartPosition);
  });
  scratch.Release();
  FinishMethod(kOp);
}

template <class S>
__global__ void RoPEPairsKernel(void* out, const void* in, const void* cos, const void* sin,
                                int64_t halfDim) {
  BP_CUDA_GRID_STRIDE(p, halfDim) { RotatePair<S>(in, out, 2 * p, LdD<S>(cos, p), LdD<S>(sin, p)); }
}

void RoPEPairs(void* out, const void* in, const void* cos, const void* sin, int64_t halfDim,
               DType dtype) {
  constexpr std::string_view kOp = "RoPE.RoPEPairs";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "halfDim", halfDim);
  if (halfDim > INT64_MAX / 2) {
    ThrowInvalidArgument(kOp, "halfDim", Format("<= {}", INT64_MAX / 2),
                         std::to_string(halfDim));
  }
  CheckPointer(kOp, "out", out, 2 * halfDim);
  CheckPointer(kOp, "in", in, 2 * halfDim);
  CheckPointer(kOp, "cos", cos, halfDim);
  CheckPointer(kOp, "sin", sin, halfDim);
  if (halfDim == 0) return;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    RoPEPairsKernel<S><<<GridFor(halfDim), kThreads, 0, Stream()>>>(out, in, cos, sin, halfDim);
  });
  FinishMethod(kOp);
}

// ---- Embedding -----------------------------------------------------------------------------------

// rows * hidden, throwing instead of overflowing.
int64_t Extent(std::string_view op, std::string_view rowsName, int64_t rows, int64_t hidden) {
  int64_t product = 0;
  if (__builtin_mul_overflow(rows, hidden, &product)) {
    ThrowInvalidArgument(
        op, "hidden",
        Format("such that {}*hidden fits in int64 ({} = {})", rowsName, rowsName, rows),
        std::to_string(hidden));
  }
  return product;
}

constexpr unsigned long long kNoPosition = ~0ULL;

// *firstBad = the smallest i with indices[i] outside [0, vocab) (left at kNoPosition if none).
__global__ void FirstBadIndexKernel(const int32_t* indices, int64_t count, int64_t vocab,
                                    unsigned long long* firstBad) {
  BP_CUDA_GRID_STRIDE(i, count) {
    const int32_t index = indices[i];
    if (index < 0 || index >= vocab) atomicMin(firstBad, static_cast<unsigned long long>(i));
  }
}

// *firstBad = the smallest b violating offsets[0] == 0, offsets[b] >= offsets[b-1] or
// offsets[b] <= count.
__global__ void FirstBadOffsetKernel(const int32_t* offsets, int64_t bags, int64_t count,
                                     unsigned long long* firstBad) {
  BP_CUDA_GRID_STRIDE(b, bags) {
    const int32_t offset = offsets[b];
    const bool bad = (b == 0 && offset != 0) || (b > 0 && offset < offsets[b - 1]) || offset > count;
    if (bad) atomicMin(firstBad, static_cast<unsigned long long>(b));
  }
}

// Reads element `position` of an int32 device array on the host (after the stream's work).
int32_t ReadInt32(std::string_view op, const int32_t* values, unsigned long long position) {
  int32_t value = 0;
  CopyAsync(&value, values + position, sizeof(int32_t));
  FinishMethod(op);
  return value;
}

// The reference's CheckIndices, on the device: throws for the first index outside [0, vocab)
// before anything is written. count > 0.
void CheckIndicesOnDevice(std::string_view op, const int32_t* indices, int64_t count,
                          int64_t vocab) {
  DeviceScratch scratch(sizeof(unsigned long long));
  auto* firstBad = static_cast<unsigned long long*>(scratch.Get());
  CheckCuda(static_cast<int>(cudaMemsetAsync(firstBad, 0xFF, sizeof(unsigned long long), Stream())),
            "cudaMemsetAsync");
  FirstBadIndexKernel<<<GridFor(count), kThreads, 0, Stream()>>>(indices, count, vocab, firstBad);
  unsigned long long bad = kNoPosition;
  CopyAsync(&bad, firstBad, sizeof(bad));
  scratch.Release();
  FinishMethod(op);
  if (bad != kNoPosition) {
    const int32_t index = ReadInt32(op, indices, bad);
    ThrowInvalidArgument(op, "indices", Format("in [0, {}) (vocab)", vocab),
                         Format("indices[{}] = {}", bad, index));
  }
}

// An unsigned integer of the storage type's size: rows are copied bit for bit.
template <class S>
using Bits = std::conditional_t<sizeof(S) == 8, unsigned long long,
                                std::conditional_t<sizeof(S) == 4, unsigned int, unsigned short>>;

template <class S>
__global__ void LookupKernel(const void* table, const int32_t* indices, void* out, int64_t hidden,
                             int64_t total) {
  const auto* src = static_cast<const Bits<S>*>(table);
  auto* dst = static_cast<Bits<S>*>(out);
  BP_CUDA_GRID_STRIDE(t, total) {
    const int64_t i = t / hidden;
    const int64_t d = t - i * hidden;
    dst[t] = src[static_cast<int64_t>(indices[i]) * hidden + d];
  }
}

void Lookup(const void* table, const int32_t* indices, void* out, int64_t vocab, int64_t hidden,
            int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Embedding.Lookup";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "vocab", vocab);
  CheckNonNegative(kOp, "hidden", hidden);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "table", table, Extent(kOp, "vocab", vocab, hidden));
  CheckPointer(kOp, "indices", indices, count);
  const int64_t total = Extent(kOp, "count", count, hidden);
  CheckPointer(kOp, "out", out, total);
  if (count == 0) return;
  CheckIndicesOnDevice(kOp, indices, count, vocab);
  if (hidden == 0) return;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    LookupKernel<S><<<GridFor(total), kThreads, 0, Stream()>>>(table, indices, out, hidden, total);
  });
  FinishMethod(kOp);
}

// One thread per output element (b, d): the bag's rows summed in index order in f64 from +0,
// rounded once (an empty bag gives +0).
template <class S>
__global__ void BagKernel(const void* table, const int32_t* indices, const int32_t* offsets,
                          void* out, int64_t hidden, int64_t bags, int64_t count, int64_t total) {
  BP_CUDA_GRID_STRIDE(t, total) {
    const int64_t b = t / hidden;
    const int64_t d = t - b * hidden;
    const int64_t begin = offsets[b];
    const int64_t end = b + 1 < bags ? static_cast<int64_t>(offsets[b + 1]) : count;
    double sum = 0.0;
    for (int64_t j = begin; j < end; ++j) {
      sum = Add(sum, LdD<S>(table, static_cast<int64_t>(indices[j]) * hidden + d));
    }
    StD<S>(out, t, sum);
  }
}

void Bag(const void* table, const int32_t* indices, const int32_t* offsets, void* out,
         int64_t vocab, int64_t hidden, int64_t bags, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Embedding.Bag";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "vocab", vocab);
  CheckNonNegative(kOp, "hidden", hidden);
  CheckNonNegative(kOp, "bags", bags);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "table", table, Extent(kOp, "vocab", vocab, hidden));
  CheckPointer(kOp, "indices", indices, count);
  CheckPointer(kOp, "offsets", offsets, bags);
  const int64_t total = Extent(kOp, "bags", bags, hidden);
  CheckPointer(kOp, "out", out, total);
  if (count > 0) CheckIndicesOnDevice(kOp, indices, count, vocab);
  if (bags > 0) {
    DeviceScratch scratch(sizeof(unsigned long long));
    auto* firstBad = static_cast<unsigned long long*>(scratch.Get());
    CheckCuda(static_cast<int>(cudaMemsetAsync(firstBad, 0xFF, sizeof(unsigned long long), Stream())),
              "cudaMemsetAsync");
    FirstBadOffsetKernel<<<GridFor(bags), kThreads, 0, Stream()>>>(offsets, bags, count, firstBad);
    unsigned long long bad = kNoPosition;
    CopyAsync(&bad, firstBad, sizeof(bad));
    scratch.Release();
    FinishMethod(kOp);
    if (bad != kNoPosition) {
      // The reference's checks for position b, in its order.
      const auto b = static_cast<int64_t>(bad);
      const int32_t offset = ReadInt32(kOp, offsets, bad);
      if (b == 0 && offset != 0) {
        ThrowInvalidArgument(kOp, "offsets", "0 at position 0 (the first bag starts at index 0)",
                             Format("offsets[0] = {}", offset));
      }
      if (b > 0) {
        const int32_t previous = ReadInt32(kOp, offsets, bad - 1);
        if (offset < previous) {
          ThrowInvalidArgument(
              kOp, "offsets", "non-decreasing",
              Format("offsets[{}] = {} < offsets[{}] = {}", b, offset, b - 1, previous));
        }
      }
      if (offset > count) {
        ThrowInvalidArgument(kOp, "offsets", Format("<= count ({})", count),
                             Format("offsets[{}] = {}", b, offset));
      }
      throw Error(ErrorCode::Internal, kOp, "an offset failed its device check but not the host's");
    }
  }
  if (hidden == 0 || total == 0) return;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    BagKernel<S><<<GridFor(total), kThreads, 0, Stream()>>>(table, indices, offsets, out, hidden,
                                                            bags, count, total);
  });
  FinishMethod(kOp);
}

}  // namespace

void RegisterRows(KernelTable& table) {
  table.Reduction_Sum = &Sum;
  table.Reduction_Prod = &Prod;
  table.Reduction_ReduceMin = &ReduceMin;
  table.Reduction_ReduceMax = &ReduceMax;
  table.Reduction_L1Norm = &L1Norm;
  table.Dot_Dot = &Dot;
  table.LayerNorm_LayerNorm = &LayerNorm;
  table.LayerNorm_RMSNorm = &RMSNorm;
  table.MathExt_RMSNormEps = &RMSNormEps;
  table.MathExt_LayerNormEps = &LayerNormEps;
  table.MathExt_LogSumExp = &LogSumExp;
  table.MathExt_InvSqrtDimScale = &InvSqrtDimScale;
  table.RoPE_RoPE = &RoPE;
  table.RoPE_RoPEPairs = &RoPEPairs;
  table.Embedding_Lookup = &Lookup;
  table.Embedding_Bag = &Bag;
}

}  // namespace backplane::cuda
