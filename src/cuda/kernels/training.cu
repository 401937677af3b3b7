// CUDA kernels for training: Normalization (GroupNorm, InstanceNorm, BatchNormEval) and their
// MathExt caller-eps variants, MathExt.Outer, the Losses and Gradients surfaces, and Dropout.
// Semantics: the CPU scalar reference (src/cpu/reference/{normalization,math_ext,losses,
// gradients,dropout}.cpp) and docs/semantics/*.md: the same argument checks in the same order with
// the same messages, the same precision (f64 wherever the reference uses f64), one rounding per
// output, and everything validated before anything is written.
//
// The double arithmetic uses the explicit round-to-nearest intrinsics (__dadd_rn, __dmul_rn, ...)
// so that nvcc never contracts a multiply and an add into an FMA (the reference is compiled without
// FMA contraction). Sums are accumulated in f64 as in the reference, but in a tree (per thread,
// then across the block and the blocks) rather than in index order, so f64 results may differ
// from the reference by rounding. Data checks (a probability out of range, a class index out of
// range, a running variance) run in a device kernel that finds the first bad position; its value
// is read back and widened on the host exactly as the reference widens it, and the reference's
// message is thrown before any output is written.
//
// Aliasing: an output may equal an input element for element (out == in, grad == predictions,
// dst == src), as the reference allows; any other overlap of an input with the output is handled
// by reading that input from a device copy.
#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backplane/backend/dropout.hpp"
#include "backplane/backend/normalization.hpp"
#include "backplane/convert.hpp"
#include "backplane/random.hpp"
#include "checks/normalization.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/exact_math.cuh"
#include "cuda/kernels/read_back.hpp"

namespace backplane::cuda {

void RegisterTraining(KernelTable& table);

namespace {


constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr unsigned long long kNoPosition = ~0ULL;

// ---- Shared helpers --------------------------------------------------------------------------

// The row maximum as the reference's scan finds it: a NaN wins (the row's result is NaN), else
// the largest value. The identity is -Inf (a row of -Inf keeps -Inf, as the scan does).
struct NanMaxOp {
  __device__ double Combine(double a, double b) const {
    if (isnan(a)) return a;
    if (isnan(b) || b > a) return b;
    return a;
  }
};

// One block per row (or normalisation block): enough blocks for the GPU, each looping over
// r, r + gridDim.x, ...
unsigned RowGrid(int64_t rows) {
  const int64_t cap = 65535LL * 8;
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > cap ? cap : rows));
}

// Inputs read through device copies where they overlap an output (other than an exact alias the
// kernel allows). Release() frees the copies (checked); the destructor frees them (unchecked)
// when an exception leaves the method early.
class Staging {
 public:
  // p itself, or a device copy of its `bytes` when they overlap [out, out + outBytes); with
  // exactAliasOk, p == out is read in place.
  const void* Input(const void* p, size_t bytes, const void* out, size_t outBytes,
                    bool exactAliasOk) {
    if (exactAliasOk && p == out) return p;
    if (!Overlaps(p, bytes, out, outBytes)) return p;
    copies_.push_back(std::make_unique<DeviceScratch>(bytes));
    void* copy = copies_.back()->Get();
    CopyAsync(copy, p, bytes);
    return copy;
  }
  void Release() {
    for (auto& copy : copies_) copy->Release();
    copies_.clear();
  }

 private:
  std::vector<std::unique_ptr<DeviceScratch>> copies_;
};

// ---- Device-side data checks ---------------------------------------------------------------------

// *first = the smallest i < n with bad(i) (left at kNoPosition if none).
template <class Pred>
__global__ void FirstBadKernel(Pred bad, int64_t n, unsigned long long* first) {
  BP_CUDA_GRID_STRIDE(i, n) {
    if (bad(i)) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// The smallest i in [0, n) with bad(i), or kNoPosition; waits for the device. n > 0.
template <class Pred>
unsigned long long FirstBad(std::string_view op, const Pred& bad, int64_t n) {
  DeviceScratch scratch(sizeof(unsigned long long));
  auto* first = scratch.As<unsigned long long>();
  CheckCuda(static_cast<int>(cudaMemsetAsync(first, 0xFF, sizeof(unsigned long long), Stream())),
            "cudaMemsetAsync");
  FirstBadKernel<Pred><<<GridFor(n), kThreads, 0, Stream()>>>(bad, n, first);
  unsigned long long position = kNoPosition;
  CopyAsync(&position, first, sizeof(position));
  scratch.Release();
  FinishMethod(op);
  return position;
}

int32_t ReadInt32(std::string_view op, const int32_t* values, unsigned long long position) {
  int32_t value = 0;
  CopyAsync(&value, values + position, sizeof(value));
  FinishMethod(op);
  return value;
}

// A probability outside [0, 1], or NaN.
template <class S>
struct OutsideUnit {
  const void* p;
  __device__ bool operator()(int64_t i) const {
    const double v = LdD<S>(p, i);
    return !(v >= 0.0 && v <= 1.0);
  }
};

// A negative prediction or target (NaN passes).
template <class S>
struct NegativePair {
  const void* p;
  const void* t;
  __device__ bool operator()(int64_t i) const { return LdD<S>(p, i) < 0.0 || LdD<S>(t, i) < 0.0; }
};

// A class index outside [0, classes).
struct TargetOutOfRange {
  const int32_t* targets;
  int64_t classes;
  __device__ bool operator()(int64_t b) const {
    const int32_t t = targets[b];
    return t < 0 || t >= classes;
  }
};

// A running variance with !(var[c] + eps > 0) (NaN included).
template <class S>
struct BadVariance {
  const void* var;
  double eps;
  __device__ bool operator()(int64_t c) const { return !(Add(LdD<S>(var, c), eps) > 0.0); }
};

// The reference's probability check of BinaryCrossEntropy(Grad): the first prediction outside
// [0, 1] (or NaN) throws. count > 0.
template <class S>
void CheckProbabilities(std::string_view op, const void* predictions, int64_t count, DType dtype) {
  const unsigned long long bad = FirstBad(op, OutsideUnit<S>{predictions}, count);
  if (bad == kNoPosition) return;
  const double p = ReadFloatElement(op, predictions, static_cast<int64_t>(bad), dtype);
  ThrowInvalidArgument(op, "predictions", "in [0, 1]",
                       Format("{} at index {}", p, static_cast<int64_t>(bad)));
}

// The reference's check of KLDivergence(Grad): at the first index with a negative entry, the
// prediction is reported if it is negative, else the target. count > 0.
template <class S>
void CheckNonNegativePairs(std::string_view op, const void* predictions, const void* targets,
                           int64_t count, DType dtype) {
  const unsigned long long bad = FirstBad(op, NegativePair<S>{predictions, targets}, count);
  if (bad == kNoPosition) return;
  const auto i = static_cast<int64_t>(bad);
  const double p = ReadFloatElement(op, predictions, static_cast<int64_t>(bad), dtype);
  if (p < 0.0) ThrowInvalidArgument(op, "predictions", ">= 0", Format("{} at index {}", p, i));
  const double t = ReadFloatElement(op, targets, static_cast<int64_t>(bad), dtype);
  if (t < 0.0) ThrowInvalidArgument(op, "targets", ">= 0", Format("{} at index {}", t, i));
  throw Error(ErrorCode::Internal, op, "an entry failed its device check but not the host's");
}

// The class-index check of CrossEntropy(Grad): the first target outside [0, classes) throws.
void CheckTargets(std::string_view op, const int32_t* targets, int64_t batch, int64_t classes) {
  if (batch == 0) return;
  const unsigned long long bad = FirstBad(op, TargetOutOfRange{targets, classes}, batch);
  if (bad == kNoPosition) return;
  const int32_t target = ReadInt32(op, targets, bad);
  ThrowInvalidArgument(op, "targets", Format("in [0, {})", classes),
                       Format("{} at index {}", target, static_cast<int64_t>(bad)));
}

// ---- Sums on the device: per-block partials, then one block -----------------------------------

constexpr int64_t kMaxReduceBlocks = 1024;

// Term: __device__ double operator()(int64_t i).
template <class Term>
__global__ void TermPartialsKernel(Term term, int64_t n, double* partials) {
  double acc = 0.0;
  BP_CUDA_GRID_STRIDE(i, n) { acc = Add(acc, term(i)); }
  acc = BlockReduce(acc, AddOp{});
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void SumFinalKernel(const double* partials, int64_t n, double* result) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = Add(acc, partials[i]);
  acc = BlockReduce(acc, AddOp{});
  if (threadIdx.x == 0) *result = acc;
}

// sum_{i < n} term(i) in f64 on the device, read back; waits for the device. n > 0.
template <class Term>
double SumOnDevice(std::string_view op, const Term& term, int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > kMaxReduceBlocks) blocks = kMaxReduceBlocks;
  const size_t partialBytes = static_cast<size_t>(blocks) * sizeof(double);
  DeviceScratch scratch(partialBytes + sizeof(double));
  auto* partials = scratch.As<double>();
  auto* result = partials + blocks;
  TermPartialsKernel<Term><<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(term, n,
                                                                                     partials);
  SumFinalKernel<<<1, kThreads, 0, Stream()>>>(partials, blocks, result);
  double host = 0.0;
  CopyAsync(&host, result, sizeof(double));
  scratch.Release();
  FinishMethod(op);
  return host;
}

// term(p_i, t_i) on the widened elements.
template <class S, class F>
struct PairTerm {
  const void* p;
  const void* t;
  F f;
  __device__ double operator()(int64_t i) const { return f(LdD<S>(p, i), LdD<S>(t, i)); }
};

struct ArrayTerm {
  const double* values;
  __device__ double operator()(int64_t i) const { return values[i]; }
};

// ---- Normalization (and the MathExt eps variants) ------------------------------------------------

constexpr double kNormEps = 1e-5;

using checks::normalization::CheckBuffers;
using checks::normalization::CheckEps;
using checks::normalization::CheckSizes;

// y = xhat [* scale[c]] [+ bias[c]], each step skipped when its parameter is null.
template <class S>
__device__ __forceinline__ double Affine(double xhat, const void* scale, const void* bias,
                                         int64_t c) {
  double y = xhat;
  if (scale != nullptr) y = Mul(y, LdD<S>(scale, c));
  if (bias != nullptr) y = Add(y, LdD<S>(bias, c));
  return y;
}

// One CUDA block per normalisation block of blockSize consecutive elements (blockSize > 0): mean
// and biased variance in two f64 passes, then y = Affine((x - mean) * rstd), rounded once. Element
// i belongs to channel (i / spatial) % channels. Each element is read and written by one thread
// after the block's statistics are complete, so out == in is safe.
template <class S>
__global__ void NormalizeBlocksKernel(const void* in, const void* scale, const void* bias, void* out,
                                      int64_t blocks, int64_t blockSize, int64_t channels,
                                      int64_t spatial, double eps) {
  const double n = static_cast<double>(blockSize);
  for (int64_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    const int64_t start = block * blockSize;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < blockSize; j += blockDim.x) {
      sum = Add(sum, LdD<S>(in, start + j));
    }
    sum = BlockReduce(sum, AddOp{});
    const double mean = Div(sum, n);
    double squares = 0.0;
    for (int64_t j = threadIdx.x; j < blockSize; j += blockDim.x) {
      const double d = Sub(LdD<S>(in, start + j), mean);
      squares = Add(squares, Mul(d, d));
    }
    squares = BlockReduce(squares, AddOp{});
    const double variance = Div(squares, n);
    const double rstd = Div(1.0, __dsqrt_rn(Add(variance, eps)));
    for (int64_t j = threadIdx.x; j < blockSize; j += blockDim.x) {
      const int64_t i = start + j;
      const int64_t c = (i / spatial) % channels;
      StD<S>(out, i, Affine<S>(Mul(Sub(LdD<S>(in, i), mean), rstd), scale, bias, c));
    }
  }
}

// count > 0, blockSize > 0, count % blockSize == 0.
void NormalizeBlocks(std::string_view op, const void* in, const void* scale, const void* bias,
                     void* out, int64_t count, int64_t blockSize, int64_t channels, int64_t spatial,
                     double eps, DType dtype) {
  const int64_t blocks = count / blockSize;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = static_cast<size_t>(count) * sizeof(S);
    const size_t channelBytes = static_cast<size_t>(channels) * sizeof(S);
    Staging staging;
    const void* x = staging.Input(in, bytes, out, bytes, true);
    const void* s = staging.Input(scale, channelBytes, out, bytes, false);
    const void* b = staging.Input(bias, channelBytes, out, bytes, false);
    NormalizeBlocksKernel<S><<<RowGrid(blocks), kThreads, 0, Stream()>>>(
        x, s, b, out, blocks, blockSize, channels, spatial, eps);
    staging.Release();
  });
  FinishMethod(op);
}

void GroupNormWith(std::string_view op, const GroupNormConfig& config, const void* in,
                   const void* scale, const void* bias, void* out, int64_t batch, int64_t channels,
                   int64_t spatial, double eps, DType dtype) {
  CheckSizes(op, batch, channels, spatial, dtype);
  CheckPositive(op, "config.Groups", config.Groups);
  if (channels % config.Groups != 0) {
    ThrowInvalidArgument(op, "config.Groups", Format("a divisor of channels ({})", channels),
                         std::to_string(config.Groups));
  }
  const int64_t count = CheckBuffers(op, in, out, batch, channels, spatial);
  CheckEps(op, eps);
  const int64_t blockSize = channels / config.Groups * spatial;
  if (blockSize == 0 || count == 0) return;  // nothing to normalise: `out` has no elements
  NormalizeBlocks(op, in, scale, bias, out, count, blockSize, channels, spatial, eps, dtype);
}

void GroupNorm(const GroupNormConfig& config, const void* in, const void* scale, const void* bias,
               void* out, int64_t batch, int64_t channels, int64_t spatial, DType dtype) {
  GroupNormWith("Normalization.GroupNorm", config, in, scale, bias, out, batch, channels, spatial,
                kNormEps, dtype);
}

void GroupNormEps(const GroupNormConfig& config, const void* in, const void* scale,
                  const void* bias, void* out, int64_t batch, int64_t channels, int64_t spatial,
                  double eps, DType dtype) {
  GroupNormWith("MathExt.GroupNormEps", config, in, scale, bias, out, batch, channels, spatial,
                eps, dtype);
}

void InstanceNormWith(std::string_view op, const void* in, const void* scale, const void* bias,
                      void* out, int64_t batch, int64_t channels, int64_t spatial, double eps,
                      DType dtype) {
  CheckSizes(op, batch, channels, spatial, dtype);
  const int64_t count = CheckBuffers(op, in, out, batch, channels, spatial);
  CheckEps(op, eps);
  if (count == 0) return;
  NormalizeBlocks(op, in, scale, bias, out, count, spatial, channels, spatial, eps, dtype);
}

void InstanceNorm(const void* in, const void* scale, const void* bias, void* out, int64_t batch,
                  int64_t channels, int64_t spatial, DType dtype) {
  InstanceNormWith("Normalization.InstanceNorm", in, scale, bias, out, batch, channels, spatial,
                   kNormEps, dtype);
}

void InstanceNormEps(const void* in, const void* scale, const void* bias, void* out,
                     int64_t batch, int64_t channels, int64_t spatial, double eps, DType dtype) {
  InstanceNormWith("MathExt.InstanceNormEps", in, scale, bias, out, batch, channels, spatial, eps,
                   dtype);
}

// y_i = Affine((x_i - mean[c]) * (1 / sqrt(var[c] + eps))), c = (i / spatial) % channels, in f64.
template <class S>
__global__ void BatchNormEvalKernel(const void* in, const void* scale, const void* bias,
                                    const void* mean, const void* var, void* out, int64_t count,
                                    int64_t channels, int64_t spatial, double eps) {
  BP_CUDA_GRID_STRIDE(i, count) {
    const int64_t c = (i / spatial) % channels;
    const double rstd = Div(1.0, __dsqrt_rn(Add(LdD<S>(var, c), eps)));
    const double xhat = Mul(Sub(LdD<S>(in, i), LdD<S>(mean, c)), rstd);
    StD<S>(out, i, Affine<S>(xhat, scale, bias, c));
  }
}

void BatchNormEvalWith(std::string_view op, const void* in, const void* scale, const void* bias,
                       const void* mean, const void* var, void* out, int64_t batch,
                       int64_t channels, int64_t spatial, double eps, DType dtype) {
  CheckSizes(op, batch, channels, spatial, dtype);
  const int64_t count = CheckBuffers(op, in, out, batch, channels, spatial);
  CheckPointer(op, "mean", mean, channels);
  CheckPointer(op, "var", var, channels);
  CheckEps(op, eps);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    // The values of var, for every channel, also when the batch is empty.
    if (channels > 0) {
      const unsigned long long bad = FirstBad(op, BadVariance<S>{var, eps}, channels);
      if (bad != kNoPosition) {
        const double v = ReadFloatElement(op, var, static_cast<int64_t>(bad), dtype);
        // The seed's message spells its constant as "1e-5".
        const std::string bound = eps == kNormEps ? "1e-5" : Format("{}", eps);
        ThrowInvalidArgument(op, "var",
                             Format("such that var[c] + {} > 0 for every channel", bound),
                             Format("var[{}] = {}", static_cast<int64_t>(bad), v));
      }
    }
    if (count == 0) return;
    const size_t bytes = static_cast<size_t>(count) * sizeof(S);
    const size_t channelBytes = static_cast<size_t>(channels) * sizeof(S);
    Staging staging;
    const void* x = staging.Input(in, bytes, out, bytes, true);
    const void* s = staging.Input(scale, channelBytes, out, bytes, false);
    const void* b = staging.Input(bias, channelBytes, out, bytes, false);
    const void* mu = staging.Input(mean, channelBytes, out, bytes, false);
    const void* sigma2 = staging.Input(var, channelBytes, out, bytes, false);
    BatchNormEvalKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(x, s, b, mu, sigma2, out,
                                                                      count, channels, spatial, eps);
    staging.Release();
    FinishMethod(op);
  });
}

void BatchNormEval(const void* in, const void* scale, const void* bias, const void* mean,
                   const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial,
                   DType dtype) {
  BatchNormEvalWith("Normalization.BatchNormEval", in, scale, bias, mean, var, out, batch,
                    channels, spatial, kNormEps, dtype);
}

void BatchNormEvalEps(const void* in, const void* scale, const void* bias, const void* mean,
                      const void* var, void* out, int64_t batch, int64_t channels, int64_t spatial,
                      double eps, DType dtype) {
  BatchNormEvalWith("MathExt.BatchNormEvalEps", in, scale, bias, mean, var, out, batch, channels,
                    spatial, eps, dtype);
}

// ---- MathExt.Outer -------------------------------------------------------------------------------

// out[i * cols + j] = left[i] * right[j] in the compute type, rounded once.
template <class S>
__global__ void OuterKernel(const void* left, const void* right, void* out, int64_t total,
                            int64_t cols) {
  BP_CUDA_GRID_STRIDE(t, total) {
    const int64_t i = t / cols;
    const int64_t j = t - i * cols;
    St<S>(out, t, Ld<S>(left, i) * Ld<S>(right, j));
  }
}

void Outer(const void* left, const void* right, void* out, int64_t rows, int64_t cols,
           DType dtype) {
  constexpr std::string_view kOp = "MathExt.Outer";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "rows", rows);
  CheckNonNegative(kOp, "cols", cols);
  int64_t total = 0;
  if (__builtin_mul_overflow(rows, cols, &total)) {
    ThrowInvalidArgument(kOp, "rows*cols", "small enough that the element count fits in int64",
                         Format("{} x {}", rows, cols));
  }
  CheckPointer(kOp, "left", left, rows);
  CheckPointer(kOp, "right", right, cols);
  CheckPointer(kOp, "out", out, total);
  if (total == 0) return;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t outBytes = static_cast<size_t>(total) * sizeof(S);
    Staging staging;
    const void* a = staging.Input(left, static_cast<size_t>(rows) * sizeof(S), out, outBytes, false);
    const void* b = staging.Input(right, static_cast<size_t>(cols) * sizeof(S), out, outBytes, false);
    OuterKernel<S><<<GridFor(total), kThreads, 0, Stream()>>>(a, b, out, total, cols);
    staging.Release();
  });
  FinishMethod(kOp);
}

// ---- Losses ----------------------------------------------------------------------------------------

void CheckLoss(std::string_view op, const void* predictions, const void* targets, int64_t count,
               DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "predictions", predictions, count);
  CheckPointer(op, "targets", targets, count);
}

// The mean as returned: f64 as is, otherwise rounded once to f32.
double FinishLoss(double value, DType dtype) {
  return dtype == DType::Float64 ? value : static_cast<double>(static_cast<float>(value));
}

// mean_i F(p_i, t_i) in f64 (validation done by the caller); NaN for count 0.
template <class F>
double MeanLoss(std::string_view op, const void* predictions, const void* targets, int64_t count,
                DType dtype) {
  if (count == 0) return kNaN;
  double total = 0.0;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    total = SumOnDevice(op, PairTerm<S, F>{predictions, targets, F{}}, count);
  });
  return FinishLoss(total / static_cast<double>(count), dtype);
}

struct MseTerm {
  __device__ double operator()(double p, double t) const {
    const double d = Sub(p, t);
    return Mul(d, d);
  }
};

struct MaeTerm {
  __device__ double operator()(double p, double t) const { return fabs(Sub(p, t)); }
};

// z = |p - t|; z < 1 ? 0.5 z z : 1 (z - 0.5).
struct HuberTerm {
  __device__ double operator()(double p, double t) const {
    const double z = fabs(Sub(p, t));
    return z < 1.0 ? Mul(Mul(0.5, z), z) : Mul(1.0, Sub(z, 0.5));
  }
};

// -(t max(ln p, -100) + (1 - t) max(ln(1 - p), -100)), ln(1 - p) as log1p(-p).
struct BceTerm {
  __device__ double operator()(double p, double t) const {
    constexpr double kLogFloor = -100.0;
    const double logP = log(p);
    const double log1mP = log1p(-p);
    const double a = logP < kLogFloor ? kLogFloor : logP;  // std::max(log p, -100)
    const double b = log1mP < kLogFloor ? kLogFloor : log1mP;
    return -Add(Mul(t, a), Mul(Sub(1.0, t), b));
  }
};

// t (ln t - ln p), 0 for t = 0, NaN when either is NaN.
struct KlTerm {
  __device__ double operator()(double p, double t) const {
    if (isnan(p) || isnan(t)) return kNaN;
    if (t == 0.0) return 0.0;
    return Mul(t, Sub(log(t), log(p)));
  }
};

double MSE(const void* predictions, const void* targets, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Losses.MSE";
  CheckLoss(kOp, predictions, targets, count, dtype);
  return MeanLoss<MseTerm>(kOp, predictions, targets, count, dtype);
}

double MAE(const void* predictions, const void* targets, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Losses.MAE";
  CheckLoss(kOp, predictions, targets, count, dtype);
  return MeanLoss<MaeTerm>(kOp, predictions, targets, count, dtype);
}

double Huber(const void* predictions, const void* targets, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Losses.Huber";
  CheckLoss(kOp, predictions, targets, count, dtype);
  return MeanLoss<HuberTerm>(kOp, predictions, targets, count, dtype);
}

double BinaryCrossEntropy(const void* predictions, const void* targets, int64_t count,
                          DType dtype) {
  constexpr std::string_view kOp = "Losses.BinaryCrossEntropy";
  CheckLoss(kOp, predictions, targets, count, dtype);
  if (count > 0) {
    ByFloatDType(kOp, dtype, [&](auto storage) {
      CheckProbabilities<decltype(storage)>(kOp, predictions, count, dtype);
    });
  }
  return MeanLoss<BceTerm>(kOp, predictions, targets, count, dtype);
}

double KLDivergence(const void* predictions, const void* targets, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Losses.KLDivergence";
  CheckLoss(kOp, predictions, targets, count, dtype);
  if (count > 0) {
    ByFloatDType(kOp, dtype, [&](auto storage) {
      CheckNonNegativePairs<decltype(storage)>(kOp, predictions, targets, count, dtype);
    });
  }
  return MeanLoss<KlTerm>(kOp, predictions, targets, count, dtype);
}

// The checks CrossEntropy and CrossEntropyGrad share, up to the logits pointer; returns
// batch * classes.
int64_t CheckCrossEntropySizes(std::string_view op, int64_t batch, int64_t classes, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "classes", classes);
  if (batch > 0 && classes == 0) ThrowInvalidArgument(op, "classes", "> 0 when batch > 0", "0");
  int64_t total = 0;
  if (__builtin_mul_overflow(batch, classes, &total)) {
    ThrowInvalidArgument(op, "batch*classes", "representable in int64",
                         Format("{} * {} overflows", batch, classes));
  }
  return total;
}

// The row maximum m (NaN if the row has one) and sum_c exp(z_c - m) of row `base`, in f64, for
// every thread of the block.
template <class S>
__device__ void RowSoftmaxStats(const void* logits, int64_t base, int64_t classes, double* max,
                                double* sum) {
  double m = -kInf;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    m = NanMaxOp{}.Combine(m, LdD<S>(logits, base + c));
  }
  m = BlockReduce(m, NanMaxOp{});
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    s = Add(s, exp(Sub(LdD<S>(logits, base + c), m)));
  }
  s = BlockReduce(s, AddOp{});
  *max = m;
  *sum = s;
}

// rowLoss[b] = m + ln(sum) - z_b[t_b] per row (classes > 0, targets validated).
template <class S>
__global__ void CrossEntropyRowsKernel(const void* logits, const int32_t* targets, int64_t batch,
                                       int64_t classes, double* rowLoss) {
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const int64_t base = b * classes;
    double m = 0.0;
    double sum = 0.0;
    RowSoftmaxStats<S>(logits, base, classes, &m, &sum);
    if (threadIdx.x == 0) {
      const double logSumExp = Add(m, log(sum));
      rowLoss[b] = Sub(logSumExp, LdD<S>(logits, base + targets[b]));
    }
  }
}

double CrossEntropy(const void* logits, const int32_t* targets, int64_t batch, int64_t classes,
                    DType dtype) {
  constexpr std::string_view kOp = "Losses.CrossEntropy";
  const int64_t total = CheckCrossEntropySizes(kOp, batch, classes, dtype);
  CheckPointer(kOp, "logits", logits, total);
  CheckPointer(kOp, "targets", targets, batch);
  CheckTargets(kOp, targets, batch, classes);
  if (batch == 0) return kNaN;
  double sum = 0.0;
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    DeviceScratch rows(static_cast<size_t>(batch) * sizeof(double));
    CrossEntropyRowsKernel<S><<<RowGrid(batch), kThreads, 0, Stream()>>>(logits, targets, batch,
                                                                         classes, rows.As<double>());
    sum = SumOnDevice(kOp, ArrayTerm{rows.As<double>()}, batch);
    rows.Release();
  });
  FinishMethod(kOp);
  return FinishLoss(sum / static_cast<double>(batch), dtype);
}

// ---- Gradients -------------------------------------------------------------------------------------

void CheckGrad(std::string_view op, const void* predictions, const void* targets, const void* grad,
               int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "predictions", predictions, count);
  CheckPointer(op, "targets", targets, count);
  CheckPointer(op, "grad", grad, count);
}

// grad_i = F(p_i, t_i) / n in f64, rounded once.
template <class S, class F>
__global__ void GradKernel(const void* predictions, const void* targets, void* grad, int64_t count,
                           double n, F f) {
  BP_CUDA_GRID_STRIDE(i, count) {
    StD<S>(grad, i, Div(f(LdD<S>(predictions, i), LdD<S>(targets, i)), n));
  }
}

// Arguments already validated. Each element is read and written by one thread, so grad may equal
// predictions or targets.
template <class F>
void LaunchGrad(std::string_view op, const void* predictions, const void* targets, void* grad,
                int64_t count, DType dtype) {
  if (count == 0) return;
  const double n = static_cast<double>(count);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = static_cast<size_t>(count) * sizeof(S);
    Staging staging;
    const void* p = staging.Input(predictions, bytes, grad, bytes, true);
    const void* t = staging.Input(targets, bytes, grad, bytes, true);
    GradKernel<S, F><<<GridFor(count), kThreads, 0, Stream()>>>(p, t, grad, count, n, F{});
    staging.Release();
  });
  FinishMethod(op);
}

// 2 (p - t); divided by n: the reference's 2.0 * diff / n.
struct MseGradTerm {
  __device__ double operator()(double p, double t) const { return Mul(2.0, Sub(p, t)); }
};

// sign(p - t), sign(0) = 0, NaN propagates.
struct MaeGradTerm {
  __device__ double operator()(double p, double t) const {
    const double d = Sub(p, t);
    return d > 0.0 ? 1.0 : d < 0.0 ? -1.0 : (isnan(d) ? d : 0.0);
  }
};

// clamp(p - t, -1, 1), NaN propagates.
struct HuberGradTerm {
  __device__ double operator()(double p, double t) const {
    const double d = Sub(p, t);
    return d > 1.0 ? 1.0 : d < -1.0 ? -1.0 : d;
  }
};

// (p - t) / max((1 - p) p, float(1e-12)).
struct BceGradTerm {
  __device__ double operator()(double p, double t) const {
    constexpr double kEpsilon = static_cast<double>(1e-12f);
    const double q = Mul(Sub(1.0, p), p);
    return Div(Sub(p, t), q < kEpsilon ? kEpsilon : q);  // std::max(q, eps)
  }
};

// -t / p, 0 for t = 0, NaN when either is NaN.
struct KlGradTerm {
  __device__ double operator()(double p, double t) const {
    if (isnan(p) || isnan(t)) return kNaN;
    if (t == 0.0) return 0.0;
    return Div(-t, p);
  }
};

void MSEGrad(const void* predictions, const void* targets, void* grad, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Gradients.MSEGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  LaunchGrad<MseGradTerm>(kOp, predictions, targets, grad, count, dtype);
}

void MAEGrad(const void* predictions, const void* targets, void* grad, int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Gradients.MAEGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  LaunchGrad<MaeGradTerm>(kOp, predictions, targets, grad, count, dtype);
}

void HuberGrad(const void* predictions, const void* targets, void* grad, int64_t count,
               DType dtype) {
  constexpr std::string_view kOp = "Gradients.HuberGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  LaunchGrad<HuberGradTerm>(kOp, predictions, targets, grad, count, dtype);
}

void BinaryCrossEntropyGrad(const void* predictions, const void* targets, void* grad,
                            int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Gradients.BinaryCrossEntropyGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  if (count > 0) {
    ByFloatDType(kOp, dtype, [&](auto storage) {
      CheckProbabilities<decltype(storage)>(kOp, predictions, count, dtype);
    });
  }
  LaunchGrad<BceGradTerm>(kOp, predictions, targets, grad, count, dtype);
}

void KLDivergenceGrad(const void* predictions, const void* targets, void* grad, int64_t count,
                      DType dtype) {
  constexpr std::string_view kOp = "Gradients.KLDivergenceGrad";
  CheckGrad(kOp, predictions, targets, grad, count, dtype);
  if (count > 0) {
    ByFloatDType(kOp, dtype, [&](auto storage) {
      CheckNonNegativePairs<decltype(storage)>(kOp, predictions, targets, count, dtype);
    });
  }
  LaunchGrad<KlGradTerm>(kOp, predictions, targets, grad, count, dtype);
}

// grad_{b,c} = (exp(z_c - m) / sum - [c == t_b]) * invBatch, one block per row. The row's reads
// for its statistics complete before any write, and each element is then read and written by one
// thread, so grad may equal logits.
template <class S>
__global__ void CrossEntropyGradKernel(const void* logits, const int32_t* targets, void* grad,
                                       int64_t batch, int64_t classes, double invBatch) {
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const int64_t base = b * classes;
    double m = 0.0;
    double sum = 0.0;
    RowSoftmaxStats<S>(logits, base, classes, &m, &sum);
    const int64_t target = targets[b];
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const double p = Div(exp(Sub(LdD<S>(logits, base + c), m)), sum);
      const double onehot = c == target ? 1.0 : 0.0;
      StD<S>(grad, base + c, Mul(Sub(p, onehot), invBatch));
    }
  }
}

void CrossEntropyGrad(const void* logits, const int32_t* targets, void* grad, int64_t batch,
                      int64_t classes, DType dtype) {
  constexpr std::string_view kOp = "Gradients.CrossEntropyGrad";
  const int64_t total = CheckCrossEntropySizes(kOp, batch, classes, dtype);
  CheckPointer(kOp, "logits", logits, total);
  CheckPointer(kOp, "targets", targets, batch);
  CheckPointer(kOp, "grad", grad, total);
  CheckTargets(kOp, targets, batch, classes);
  if (total == 0) return;
  const double invBatch = 1.0 / static_cast<double>(batch);
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = static_cast<size_t>(total) * sizeof(S);
    Staging staging;
    const void* z = staging.Input(logits, bytes, grad, bytes, true);
    const auto* t = static_cast<const int32_t*>(
        staging.Input(targets, static_cast<size_t>(batch) * sizeof(int32_t), grad, bytes, false));
    CrossEntropyGradKernel<S><<<RowGrid(batch), kThreads, 0, Stream()>>>(z, t, grad, batch,
                                                                         classes, invBatch);
    staging.Release();
  });
  FinishMethod(kOp);
}

// ---- Dropout -------------------------------------------------------------------------------------

// An unsigned integer of the storage type's size, and the quiet bit of its NaNs.
template <class S>
using Bits = std::conditional_t<sizeof(S) == 8, unsigned long long,
                                std::conditional_t<sizeof(S) == 4, unsigned int, unsigned short>>;

template <class S>
__device__ __forceinline__ Bits<S> QuietBit() {
  if constexpr (std::is_same_v<S, double>) {
    return 0x0008000000000000ULL;
  } else if constexpr (std::is_same_v<S, float>) {
    return 0x00400000u;
  } else if constexpr (std::is_same_v<S, __half>) {
    return static_cast<unsigned short>(0x0200u);
  } else {
    return static_cast<unsigned short>(0x0040u);  // bfloat16
  }
}

// keep_i = PhiloxUniformFloat(seed, 0, i) >= rate (in f32); dst_i = keep ? src_i * scale : +0,
// the product in the compute type, rounded once to the storage format. A kept NaN is the source
// NaN quieted, sign and payload kept, as the reference's x86 multiply and its f16/bf16
// conversions give (the GPU's multiply would return its canonical NaN). Each element is read and
// written by one thread, so dst == src is safe.
template <class S>
__global__ void DropoutKernel(void* dst, const void* src, int64_t count, uint64_t seed, float rate,
                              Compute<S> scale) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, count) {
    const bool keep = backplane::PhiloxUniformFloat(seed, 0, static_cast<uint64_t>(i)) >= rate;
    if (!keep) {
      St<S>(dst, i, T{0});
      continue;
    }
    const T x = Ld<S>(src, i);
    if (isnan(x)) {
      static_cast<Bits<S>*>(dst)[i] =
          static_cast<Bits<S>>(static_cast<const Bits<S>*>(src)[i] | QuietBit<S>());
    } else {
      St<S>(dst, i, x * scale);
    }
  }
}

void Dropout(void* dst, const void* src, int64_t count, const DropoutConfig& config, DType dtype) {
  constexpr std::string_view kOp = "Dropout.Dropout";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "dst", dst, count);
  CheckPointer(kOp, "src", src, count);
  const float rate = config.Rate;
  if (!(rate >= 0.0f && rate <= 1.0f)) {  // also rejects NaN
    ThrowInvalidArgument(kOp, "config.Rate", "in [0, 1]", Format("{}", rate));
  }
  if (count == 0) return;
  const size_t bytes = DTypeStorageBytes(dtype, count);

  if (rate == 0.0f) {  // exact copy (memmove), NaN payloads and signed zeros included
    if (dst != src) {
      Staging staging;
      const void* from = staging.Input(src, bytes, dst, bytes, false);
      CopyAsync(dst, from, bytes);
      staging.Release();
    }
    FinishMethod(kOp);
    return;
  }
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    // Rate 1 keeps nothing (u < 1 always), so the scale is never used and never divides by 0.
    const T scale = rate < 1.0f ? T{1} / (T{1} - static_cast<T>(rate)) : T{0};
    Staging staging;
    const void* from = staging.Input(src, bytes, dst, bytes, true);
    DropoutKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(dst, from, count, config.Seed, rate,
                                                                scale);
    staging.Release();
  });
  FinishMethod(kOp);
}

}  // namespace

void RegisterTraining(KernelTable& table) {
  table.Normalization_GroupNorm = &GroupNorm;
  table.Normalization_InstanceNorm = &InstanceNorm;
  table.Normalization_BatchNormEval = &BatchNormEval;
  table.MathExt_GroupNormEps = &GroupNormEps;
  table.MathExt_InstanceNormEps = &InstanceNormEps;
  table.MathExt_BatchNormEvalEps = &BatchNormEvalEps;
  table.MathExt_Outer = &Outer;
  table.Losses_MSE = &MSE;
  table.Losses_MAE = &MAE;
  table.Losses_Huber = &Huber;
  table.Losses_BinaryCrossEntropy = &BinaryCrossEntropy;
  table.Losses_KLDivergence = &KLDivergence;
  table.Losses_CrossEntropy = &CrossEntropy;
  table.Gradients_MSEGrad = &MSEGrad;
  table.Gradients_MAEGrad = &MAEGrad;
  table.Gradients_HuberGrad = &HuberGrad;
  table.Gradients_BinaryCrossEntropyGrad = &BinaryCrossEntropyGrad;
  table.Gradients_KLDivergenceGrad = &KLDivergenceGrad;
  table.Gradients_CrossEntropyGrad = &CrossEntropyGrad;
  table.Dropout_Dropout = &Dropout;
}

}  // namespace backplane::cuda
