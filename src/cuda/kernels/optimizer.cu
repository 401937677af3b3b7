#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "backplane/backend/block_quant.hpp"
#include "backplane/backend/dequant.hpp"
#include "backplane/backend/optimizer.hpp"
#include "backplane/backend/quant.hpp"
#include "backplane/block_format.hpp"
#include "cuda/kernels/common.cuh"

namespace backplane::cuda {

void RegisterOptimizer(KernelTable& table);

namespace {

// ---- Arithmetic: one rounding per operation, never contracted --------------------------------

template <class T>
__device__ __forceinline__ T Add(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return __dadd_rn(a, b);
  } else {
    return __fadd_rn(a, b);
  }
}
template <class T>
__device__ __forceinline__ T Sub(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return __dsub_rn(a, b);
  } else {
    return __fsub_rn(a, b);
  }
}
template <class T>
__device__ __forceinline__ T Mul(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return __dmul_rn(a, b);
  } else {
    return __fmul_rn(a, b);
  }
}
template <class T>
__device__ __forceinline__ T Div(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return __ddiv_rn(a, b);
  } else {
    return __fdiv_rn(a, b);
  }
}
template <class T>
__device__ __forceinline__ T Sqrt(T a) {
  if constexpr (std::is_same_v<T, double>) {
    return __dsqrt_rn(a);
  } else {
    return __fsqrt_rn(a);
  }
}

// Element i of a float buffer widened (exactly) to double, as the reference's Load<double>.
template <class S>
__device__ __forceinline__ double LdD(const void* p, int64_t i) {
  return static_cast<double>(Ld<S>(p, i));
}

// ---- Device scratch and host transfers ---------------------------------------------------------

size_t Align16(size_t bytes) { return (bytes + 15) / 16 * 16; }

// ---- Block-wide and grid-wide double reductions ------------------------------------------------

// N double accumulators (an aggregate, so it can live in shared memory).
template <int N>
struct Sums {
  double v[N];
};

// Reduces one Sums per thread across the block with op.Combine; every thread gets the result.
// Must be reached by all threads of the block (blockDim.x == kThreads, a power of two).
template <class Op>
__device__ Sums<Op::kN> BlockReduce(Sums<Op::kN> value, const Op& op) {
  __shared__ Sums<Op::kN> buffer[kThreads];
  buffer[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) {
      Sums<Op::kN> a = buffer[threadIdx.x];
      op.Combine(a, buffer[threadIdx.x + stride]);
      buffer[threadIdx.x] = a;
    }
    __syncthreads();
  }
  const Sums<Op::kN> result = buffer[0];
  __syncthreads();  // the buffer may be reused by the next call
  return result;
}

// Sums of N double terms per element. A derived Op adds
//   __device__ void Element(int64_t i, Sums<N>& acc) const.
template <int N>
struct SumCombine {
  static constexpr int kN = N;
  __device__ Sums<N> Identity() const {
    Sums<N> s;
    for (int k = 0; k < N; ++k) s.v[k] = 0.0;
    return s;
  }
  __device__ void Combine(Sums<N>& a, const Sums<N>& b) const {
    for (int k = 0; k < N; ++k) a.v[k] = Add(a.v[k], b.v[k]);
  }
};

constexpr int64_t kMaxReduceBlocks = 1024;

template <class Op>
__global__ void ReducePartialsKernel(Op op, int64_t n, Sums<Op::kN>* partials) {
  Sums<Op::kN> acc = op.Identity();
  BP_CUDA_GRID_STRIDE(i, n) { op.Element(i, acc); }
  acc = BlockReduce(acc, op);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// One block: combines the partials and hands the total to fin (thread 0).
template <class Op, class Fin>
__global__ void ReduceFinalKernel(Op op, const Sums<Op::kN>* partials, int64_t blocks, Fin fin) {
  Sums<Op::kN> acc = op.Identity();
  for (int64_t i = threadIdx.x; i < blocks; i += blockDim.x) op.Combine(acc, partials[i]);
  acc = BlockReduce(acc, op);
  if (threadIdx.x == 0) fin(acc);
}

// Bytes of partials scratch a reduction with N accumulators needs.
template <int N>
constexpr size_t PartialBytes() {
  return static_cast<size_t>(kMaxReduceBlocks) * sizeof(Sums<N>);
}

// Launches the reduction of n > 0 elements; fin receives the total on the device.
// `partials` holds PartialBytes<Op::kN>() bytes.
template <class Op, class Fin>
void LaunchReduce(const Op& op, int64_t n, void* partials, const Fin& fin) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxReduceBlocks) blocks = kMaxReduceBlocks;
  auto* p = static_cast<Sums<Op::kN>*>(partials);
  ReducePartialsKernel<Op><<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(op, n, p);
  ReduceFinalKernel<Op, Fin><<<1, kThreads, 0, Stream()>>>(op, p, blocks, fin);
}

// fin: out[k] = total[k].
template <int N>
struct StoreSums {
  double* out;
  __device__ void operator()(const Sums<N>& total) const {
    for (int k = 0; k < N; ++k) out[k] = total.v[k];
  }
};

// The reduction of n > 0 elements, read back to the host (synchronises the stream).
template <class Op>
Sums<Op::kN> ReduceToHost(std::string_view opName, const Op& op, int64_t n) {
  constexpr int N = Op::kN;
  const size_t partialBytes = PartialBytes<N>();
  DeviceScratch scratch(partialBytes + sizeof(Sums<N>));
  auto* result = reinterpret_cast<double*>(scratch.Bytes() + partialBytes);
  LaunchReduce(op, n, scratch.Get(), StoreSums<N>{result});
  Sums<N> host{};
  CopyAsync(&host, result, sizeof(Sums<N>));
  FinishMethod(opName);
  scratch.Release();
  return host;
}

// sum x^2 over a stored float vector (the reference's StoredNorm before its sqrt), and the same
// for a second vector: v[0] over a, v[1] over b (b may be a state vector of T, see below).
template <class S>
struct StoredSquaresOp : SumCombine<2> {
  const void* a;
  const void* b;
  __device__ void Element(int64_t i, Sums<2>& acc) const {
    const double x = LdD<S>(a, i);
    const double y = LdD<S>(b, i);
    acc.v[0] = Add(acc.v[0], Mul(x, x));
    acc.v[1] = Add(acc.v[1], Mul(y, y));
  }
};

// v[0] = sum p^2 over the stored params, v[1] = sum r^2 over a T vector (LAMB).
template <class S>
struct ParamsAndStateSquaresOp : SumCombine<2> {
  const void* params;
  const Compute<S>* r;
  __device__ void Element(int64_t i, Sums<2>& acc) const {
    const double x = LdD<S>(params, i);
    const double y = static_cast<double>(r[i]);
    acc.v[0] = Add(acc.v[0], Mul(x, x));
    acc.v[1] = Add(acc.v[1], Mul(y, y));
  }
};

// ---- Optimizer validation (the reference's helpers, same messages) ------------------------------

void CheckNotNull(std::string_view op, std::string_view arg, const void* ptr) {
  if (ptr == nullptr) ThrowInvalidArgument(op, arg, "non-null", "null");
}

// Reads a counter of device, managed or host memory (synchronises the stream).
int64_t ReadCounter(std::string_view op, const int64_t* counter) {
  int64_t value = 0;
  CopyAsync(&value, counter, sizeof(value));
  FinishMethod(op);
  return value;
}

// The reference's CheckStep on a value already read.
void CheckStepValue(std::string_view op, std::string_view arg, int64_t value) {
  if (value < 0) ThrowInvalidArgument(op, arg, ">= 0 (calls so far)", std::to_string(value));
  if (value == std::numeric_limits<int64_t>::max()) {
    ThrowInvalidArgument(op, arg, "< 2^63 - 1 (it is incremented)", std::to_string(value));
  }
}

// The step counter: non-null, >= 0 (calls so far) and able to advance. Returns *step.
int64_t CheckStep(std::string_view op, std::string_view arg, const int64_t* step) {
  CheckNotNull(op, arg, step);
  const int64_t value = ReadCounter(op, step);
  CheckStepValue(op, arg, value);
  return value;
}

// A finite hyper-parameter >= 0.
void CheckNonNegativeParam(std::string_view op, std::string_view arg, double value) {
  CheckFinite(op, arg, value);
  if (!(value >= 0.0f)) ThrowInvalidArgument(op, arg, ">= 0", Format("{}", value));
}

// A hyper-parameter in [0, 1) (closed = false) or [0, 1] (closed = true).
void CheckUnitParam(std::string_view op, std::string_view arg, double value, bool closed) {
  // Also rejects NaN and infinities.
  const bool ok = value >= 0.0f && (closed ? value <= 1.0f : value < 1.0f);
  if (!ok) {
    ThrowInvalidArgument(op, arg, closed ? "in [0, 1]" : "in [0, 1)", Format("{}", value));
  }
}

// count >= 0 and params/grads non-null when count > 0.
void CheckVectors(std::string_view op, const void* params, std::string_view gradsName,
                  const void* grads, int64_t count) {
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "params", params, count);
  CheckPointer(op, gradsName, grads, count);
}

void CheckAdamConfig(std::string_view op, const AdamConfig& c) {
  CheckNonNegativeParam(op, "config.LearningRate", c.LearningRate);
  CheckUnitParam(op, "config.Beta1", c.Beta1, /*closed=*/false);
  CheckUnitParam(op, "config.Beta2", c.Beta2, /*closed=*/false);
  CheckNonNegativeParam(op, "config.Eps", c.Eps);
  CheckNonNegativeParam(op, "config.WeightDecay", c.WeightDecay);
}

// Every AdamStep method: sizes, pointers, step, config. Returns *step.
int64_t CheckAdamStep(std::string_view op, const AdamConfig& config, const void* params,
                      const void* grads, const void* m, const void* v, const int64_t* step,
                      int64_t count) {
  CheckVectors(op, params, "grads", grads, count);
  CheckPointer(op, "m", m, count);
  CheckPointer(op, "v", v, count);
  const int64_t value = CheckStep(op, "step", step);
  CheckAdamConfig(op, config);
  return value;
}

// Writes the advanced counter (after every check passed). `value` must stay alive until the
// method's FinishMethod; a pageable host source is consumed by cudaMemcpyAsync itself.
void WriteCounter(int64_t* counter, const int64_t* value) { CopyAsync(counter, value, sizeof(int64_t)); }

unsigned Grid(int64_t n) { return GridFor(n); }

// ---- Element helpers ----------------------------------------------------------------------------

// sign(x) in {-1, 0, +1}; NaN stays NaN (the reference's Sign).
template <class T>
__device__ __forceinline__ T SignOf(T x) {
  if (isnan(x)) return x;
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
}

// max(a, b) that propagates NaN (the reference's NanMax; std::max on ties keeps a).
template <class T>
__device__ __forceinline__ T NanMax(T a, T b) {
  if (isnan(a) || isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return (a < b) ? b : a;
}

// ---- Adam, AdamW, Adamax ------------------------------------------------------------------------

template <class T>
struct AdamCoef {
  T beta1, beta2, oneMinusB1, oneMinusB2, weightDecay, eps, decay, negStepSize, bc2Sqrt;
};

// mode 0: no decay; 1: L2 (g += wd p); 2: decoupled (p *= 1 - lr wd).
template <class S>
__global__ void AdamKernel(void* params, const void* grads, Compute<S>* m, Compute<S>* v,
                           int64_t n, AdamCoef<Compute<S>> c, int mode) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    T p = Ld<S>(params, i);
    T g = Ld<S>(grads, i);
    if (mode == 2) {
      p = Mul(p, c.decay);
    } else if (mode == 1) {
      g = Add(g, Mul(c.weightDecay, p));
    }
    const T mi = Add(Mul(m[i], c.beta1), Mul(c.oneMinusB1, g));
    const T vi = Add(Mul(v[i], c.beta2), Mul(Mul(c.oneMinusB2, g), g));
    m[i] = mi;
    v[i] = vi;
    const T denom = Add(Div(Sqrt(vi), c.bc2Sqrt), c.eps);
    p = Add(p, Div(Mul(c.negStepSize, mi), denom));
    St<S>(params, i, p);
  }
}

void AdamLike(std::string_view op, bool decoupled, BP_PARAMS_AdamStep) {
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    const int64_t before = CheckAdamStep(op, config, params, grads, m, v, step, count);
    const int64_t t = before + 1;
    const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2;
    const double wd = config.WeightDecay;
    const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
    AdamCoef<T> c{};
    c.beta1 = T(b1);
    c.beta2 = T(b2);
    c.oneMinusB1 = T(1.0 - b1);
    c.oneMinusB2 = T(1.0 - b2);
    c.weightDecay = T(wd);
    c.eps = T(config.Eps);
    c.decay = T(1.0 - lr * wd);
    c.negStepSize = T(-(lr / bc1));
    c.bc2Sqrt = T(std::sqrt(bc2));
    const int mode = decoupled ? 2 : (wd != 0.0 ? 1 : 0);
    if (count > 0) {
      AdamKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(params, grads, static_cast<T*>(m),
                                                            static_cast<T*>(v), count, c, mode);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

void Adam(BP_PARAMS_AdamStep) { AdamLike("Optimizer.Adam", false, BP_ARGS_AdamStep); }
void AdamW(BP_PARAMS_AdamStep) { AdamLike("Optimizer.AdamW", true, BP_ARGS_AdamStep); }

template <class T>
struct AdamaxCoef {
  T beta1, beta2, oneMinusB1, weightDecay, eps, negClr;
};

template <class S>
__global__ void AdamaxKernel(void* params, const void* grads, Compute<S>* mom, Compute<S>* inf,
                             int64_t n, AdamaxCoef<Compute<S>> c, bool l2) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    T p = Ld<S>(params, i);
    T g = Ld<S>(grads, i);
    if (l2) g = Add(g, Mul(c.weightDecay, p));
    const T mi = Add(Mul(mom[i], c.beta1), Mul(c.oneMinusB1, g));
    const T ui = NanMax(Mul(inf[i], c.beta2), Add(fabs(g), c.eps));
    mom[i] = mi;
    inf[i] = ui;
    p = Add(p, Div(Mul(c.negClr, mi), ui));
    St<S>(params, i, p);
  }
}

// torch.optim.Adamax (1.13): u = max(beta2 u, |g| + eps), p -= lr / (1 - beta1^t) * m / u.
void Adamax(BP_PARAMS_AdamStep) {
  constexpr std::string_view op = "Optimizer.Adamax";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    const int64_t before = CheckAdamStep(op, config, params, grads, m, v, step, count);
    const int64_t t = before + 1;
    const double lr = config.LearningRate, b1 = config.Beta1, wd = config.WeightDecay;
    AdamaxCoef<T> c{};
    c.beta1 = T(b1);
    c.beta2 = T(config.Beta2);
    c.oneMinusB1 = T(1.0 - b1);
    c.weightDecay = T(wd);
    c.eps = T(config.Eps);
    c.negClr = T(-(lr / (1.0 - std::pow(b1, static_cast<double>(t)))));
    if (count > 0) {
      AdamaxKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
          params, grads, static_cast<T*>(m), static_cast<T*>(v), count, c, wd != 0.0);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- LAMB ---------------------------------------------------------------------------------------

template <class T>
struct LambCoef {
  T beta1, beta2, oneMinusB1, oneMinusB2, bc1, bc2, weightDecay, eps;
};

// Moments and r = m_hat / (sqrt(v_hat) + eps) [+ wd p] into r.
template <class S>
__global__ void LambMomentsKernel(const void* params, const void* grads, Compute<S>* mom,
                                  Compute<S>* sq, Compute<S>* r, int64_t n,
                                  LambCoef<Compute<S>> c, bool decay) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T g = Ld<S>(grads, i);
    const T mi = Add(Mul(mom[i], c.beta1), Mul(c.oneMinusB1, g));
    const T vi = Add(Mul(sq[i], c.beta2), Mul(Mul(c.oneMinusB2, g), g));
    mom[i] = mi;
    sq[i] = vi;
    T ri = Div(Div(mi, c.bc1), Add(Sqrt(Div(vi, c.bc2)), c.eps));
    if (decay) ri = Add(ri, Mul(c.weightDecay, Ld<S>(params, i)));
    r[i] = ri;
  }
}

template <class S>
__global__ void LambApplyKernel(void* params, const Compute<S>* r, int64_t n, Compute<S> negStep) {
  BP_CUDA_GRID_STRIDE(i, n) { St<S>(params, i, Add(Ld<S>(params, i), Mul(negStep, r[i]))); }
}

// LAMB: Adam moments with bias correction, r = m_hat / (sqrt(v_hat) + eps) + wd p,
// p -= lr * (||p|| / ||r||) * r, ratio 1 when either norm is 0; norms in double.
void LAMB(BP_PARAMS_AdamStep) {
  constexpr std::string_view op = "Optimizer.LAMB";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    const int64_t before = CheckAdamStep(op, config, params, grads, m, v, step, count);
    const int64_t t = before + 1;
    if (count == 0) {  // no elements: only the counter advances
      WriteCounter(step, &t);
      FinishMethod(op);
      return;
    }
    DeviceScratch scratch(static_cast<size_t>(count) * sizeof(T));
    T* r = static_cast<T*>(scratch.Get());
    const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2;
    const double wd = config.WeightDecay;
    LambCoef<T> c{};
    c.beta1 = T(b1);
    c.beta2 = T(b2);
    c.oneMinusB1 = T(1.0 - b1);
    c.oneMinusB2 = T(1.0 - b2);
    c.bc1 = T(1.0 - std::pow(b1, static_cast<double>(t)));
    c.bc2 = T(1.0 - std::pow(b2, static_cast<double>(t)));
    c.weightDecay = T(wd);
    c.eps = T(config.Eps);
    LambMomentsKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
        params, grads, static_cast<T*>(m), static_cast<T*>(v), r, count, c, wd != 0.0);
    ParamsAndStateSquaresOp<S> norms{};
    norms.params = params;
    norms.r = r;
    const Sums<2> squares = ReduceToHost(op, norms, count);
    const double pNorm = std::sqrt(squares.v[0]);
    const double rNorm = std::sqrt(squares.v[1]);
    const double ratio = (pNorm == 0.0 || rNorm == 0.0) ? 1.0 : pNorm / rNorm;
    const T negStep = T(-(lr * ratio));
    LambApplyKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(params, r, count, negStep);
    WriteCounter(step, &t);
    FinishMethod(op);
    scratch.Release();
  });
}

// ---- SGD ----------------------------------------------------------------------------------------

template <class T>
struct SgdCoef {
  T weightDecay, mu, oneMinusDamp, negLr;
};

template <class S>
__global__ void SgdKernel(void* params, const void* grads, Compute<S>* buf, int64_t n,
                          SgdCoef<Compute<S>> c, bool l2, bool useMomentum, bool first,
                          bool nesterov) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T p = Ld<S>(params, i);
    T d = Ld<S>(grads, i);
    if (l2) d = Add(d, Mul(c.weightDecay, p));
    if (useMomentum) {
      const T b = first ? d : Add(Mul(buf[i], c.mu), Mul(c.oneMinusDamp, d));
      buf[i] = b;
      d = nesterov ? Add(d, Mul(c.mu, b)) : b;
    }
    St<S>(params, i, Add(p, Mul(c.negLr, d)));
  }
}

void SGD(BP_PARAMS_SGDStep) {
  constexpr std::string_view op = "Optimizer.SGD";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    const bool useMomentum = config.Momentum != 0.0f;
    if (useMomentum) CheckPointer(op, "momentumBuffer", momentumBuffer, count);
    const int64_t before = CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.Momentum", config.Momentum);
    CheckUnitParam(op, "config.Dampening", config.Dampening, /*closed=*/true);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    if (config.Nesterov && !(config.Momentum > 0.0f)) {
      ThrowInvalidArgument(op, "config.Momentum", "> 0 when config.Nesterov is set",
                           Format("{}", config.Momentum));
    }
    if (config.Nesterov && config.Dampening != 0.0f) {
      ThrowInvalidArgument(op, "config.Dampening", "0 when config.Nesterov is set",
                           Format("{}", config.Dampening));
    }
    const int64_t t = before + 1;
    const double wd = config.WeightDecay;
    SgdCoef<T> c{};
    c.weightDecay = T(wd);
    c.mu = T(config.Momentum);
    c.oneMinusDamp = T(1.0 - static_cast<double>(config.Dampening));
    c.negLr = T(-static_cast<double>(config.LearningRate));
    if (count > 0) {
      SgdKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
          params, grads, static_cast<T*>(momentumBuffer), count, c, wd != 0.0, useMomentum, t == 1,
          config.Nesterov);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- Lion ---------------------------------------------------------------------------------------

template <class T>
struct LionCoef {
  T decay, beta1, beta2, oneMinusB1, oneMinusB2, negLr;
};

template <class S>
__global__ void LionKernel(void* params, const void* grads, Compute<S>* mom, int64_t n,
                           LionCoef<Compute<S>> c) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T g = Ld<S>(grads, i);
    T p = Mul(Ld<S>(params, i), c.decay);
    const T mi = mom[i];
    const T u = Add(Mul(mi, c.beta1), Mul(c.oneMinusB1, g));
    p = Add(p, Mul(c.negLr, SignOf(u)));
    mom[i] = Add(Mul(mi, c.beta2), Mul(c.oneMinusB2, g));
    St<S>(params, i, p);
  }
}

// p *= 1 - lr wd; c = b1 m + (1 - b1) g; p -= lr sign(c); m = b2 m + (1 - b2) g.
void Lion(BP_PARAMS_LionStep) {
  constexpr std::string_view op = "Optimizer.Lion";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "m", m, count);
    const int64_t before = CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckUnitParam(op, "config.Beta1", config.Beta1, /*closed=*/false);
    CheckUnitParam(op, "config.Beta2", config.Beta2, /*closed=*/false);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    const int64_t t = before + 1;
    const double lr = config.LearningRate, b1 = config.Beta1, b2 = config.Beta2;
    LionCoef<T> c{};
    c.decay = T(1.0 - lr * static_cast<double>(config.WeightDecay));
    c.beta1 = T(b1);
    c.beta2 = T(b2);
    c.oneMinusB1 = T(1.0 - b1);
    c.oneMinusB2 = T(1.0 - b2);
    c.negLr = T(-lr);
    if (count > 0) {
      LionKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(params, grads, static_cast<T*>(m),
                                                            count, c);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- RMSprop ------------------------------------------------------------------------------------

template <class T>
struct RmsCoef {
  T alpha, oneMinusAlpha, weightDecay, eps, mu, negLr;
};

template <class S>
__global__ void RmspropKernel(void* params, const void* grads, Compute<S>* sq, Compute<S>* ga,
                              Compute<S>* buf, int64_t n, RmsCoef<Compute<S>> c, bool l2,
                              bool centered, bool useMomentum) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    T p = Ld<S>(params, i);
    T g = Ld<S>(grads, i);
    if (l2) g = Add(g, Mul(c.weightDecay, p));
    const T si = Add(Mul(sq[i], c.alpha), Mul(Mul(c.oneMinusAlpha, g), g));
    sq[i] = si;
    T avg;
    if (centered) {
      const T gi = Add(Mul(ga[i], c.alpha), Mul(c.oneMinusAlpha, g));
      ga[i] = gi;
      avg = Sqrt(Sub(si, Mul(gi, gi)));
    } else {
      avg = Sqrt(si);
    }
    avg = Add(avg, c.eps);
    if (useMomentum) {
      const T b = Add(Mul(buf[i], c.mu), Div(g, avg));
      buf[i] = b;
      p = Add(p, Mul(c.negLr, b));
    } else {
      p = Add(p, Div(Mul(c.negLr, g), avg));
    }
    St<S>(params, i, p);
  }
}

void RMSprop(BP_PARAMS_RMSpropStep) {
  constexpr std::string_view op = "Optimizer.RMSprop";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "squareAvg", squareAvg, count);
    const bool useMomentum = config.Momentum > 0.0f;
    if (config.Centered) CheckPointer(op, "gradAvg", gradAvg, count);
    if (useMomentum) CheckPointer(op, "momentumBuffer", momentumBuffer, count);
    const int64_t before = CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckUnitParam(op, "config.Alpha", config.Alpha, /*closed=*/false);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    CheckNonNegativeParam(op, "config.Momentum", config.Momentum);
    const int64_t t = before + 1;
    const double a = config.Alpha, wd = config.WeightDecay;
    RmsCoef<T> c{};
    c.alpha = T(a);
    c.oneMinusAlpha = T(1.0 - a);
    c.weightDecay = T(wd);
    c.eps = T(config.Eps);
    c.mu = T(config.Momentum);
    c.negLr = T(-static_cast<double>(config.LearningRate));
    if (count > 0) {
      RmspropKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
          params, grads, static_cast<T*>(squareAvg), static_cast<T*>(gradAvg),
          static_cast<T*>(momentumBuffer), count, c, wd != 0.0, config.Centered, useMomentum);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- Hebbian ------------------------------------------------------------------------------------

// p = params + lr signal in T (recomputed identically by each kernel that needs it).
template <class S>
__device__ __forceinline__ Compute<S> HebbianValue(const void* params, const void* signal,
                                                   int64_t i, Compute<S> lr) {
  return Add(Ld<S>(params, i), Mul(lr, Ld<S>(signal, i)));
}

template <class S>
struct HebbianSquaresOp : SumCombine<1> {
  const void* params;
  const void* signal;
  Compute<S> lr;
  __device__ void Element(int64_t i, Sums<1>& acc) const {
    const double x = static_cast<double>(HebbianValue<S>(params, signal, i, lr));
    acc.v[0] = Add(acc.v[0], Mul(x, x));
  }
};

template <class S>
__global__ void HebbianKernel(void* params, const void* signal, int64_t n, Compute<S> lr,
                              bool rescale, Compute<S> scale) {
  BP_CUDA_GRID_STRIDE(i, n) {
    Compute<S> p = HebbianValue<S>(params, signal, i, lr);
    if (rescale) p = Mul(p, scale);
    St<S>(params, i, p);
  }
}

// p += lr signal; then, when MaxNorm > 0 and ||p|| > MaxNorm, p *= MaxNorm / ||p||.
void Hebbian(BP_PARAMS_HebbianStep) {
  constexpr std::string_view op = "Optimizer.Hebbian";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "signal", signal, count);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.MaxNorm", config.MaxNorm);
    if (count == 0) return;
    const T lr = T(config.LearningRate);
    const double maxNorm = config.MaxNorm;
    bool rescale = false;
    T scale = T(1);
    if (maxNorm > 0.0) {
      HebbianSquaresOp<S> squares{};
      squares.params = params;
      squares.signal = signal;
      squares.lr = lr;
      const double norm = std::sqrt(ReduceToHost(op, squares, count).v[0]);
      if (norm > maxNorm) {
        rescale = true;
        scale = T(maxNorm / norm);
      }
    }
    HebbianKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(params, signal, count, lr, rescale,
                                                             scale);
    FinishMethod(op);
  });
}

// ---- LARS ---------------------------------------------------------------------------------------

template <class S>
__global__ void LarsKernel(void* params, const void* grads, Compute<S>* buf, int64_t n,
                           Compute<S> scale, Compute<S> mu, Compute<S> weightDecay, bool l2) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T p = Ld<S>(params, i);
    T d = Ld<S>(grads, i);
    if (l2) d = Add(d, Mul(weightDecay, p));
    const T b = Add(Mul(buf[i], mu), Mul(scale, d));
    buf[i] = b;
    St<S>(params, i, Sub(p, b));
  }
}

// local_lr = eta ||p|| / (||g|| + wd ||p|| + eps), or 1 when ||p|| or ||g|| is 0;
// v = mu v + lr local_lr (g + wd p); p -= v.
void LARS(BP_PARAMS_LARSStep) {
  constexpr std::string_view op = "Optimizer.LARS";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "momentumBuffer", momentumBuffer, count);
    const int64_t before = CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.Eta", config.Eta);
    CheckNonNegativeParam(op, "config.Momentum", config.Momentum);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    const int64_t t = before + 1;
    if (count > 0) {
      const double wd = config.WeightDecay;
      StoredSquaresOp<S> norms{};
      norms.a = params;
      norms.b = grads;
      const Sums<2> squares = ReduceToHost(op, norms, count);
      const double pNorm = std::sqrt(squares.v[0]);
      const double gNorm = std::sqrt(squares.v[1]);
      const double localLr = (pNorm == 0.0 || gNorm == 0.0)
                                 ? 1.0
                                 : static_cast<double>(config.Eta) * pNorm /
                                       (gNorm + wd * pNorm + static_cast<double>(config.Eps));
      const T scale = T(static_cast<double>(config.LearningRate) * localLr);
      LarsKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
          params, grads, static_cast<T*>(momentumBuffer), count, scale, T(config.Momentum), T(wd),
          wd != 0.0);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- Adagrad ------------------------------------------------------------------------------------

template <class S>
__global__ void AdagradKernel(void* params, const void* grads, Compute<S>* acc, int64_t n,
                              Compute<S> negClr, Compute<S> weightDecay, Compute<S> eps, bool l2) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T p = Ld<S>(params, i);
    T g = Ld<S>(grads, i);
    if (l2) g = Add(g, Mul(weightDecay, p));
    const T a = Add(acc[i], Mul(g, g));
    acc[i] = a;
    const T stddev = Add(Sqrt(a), eps);
    St<S>(params, i, Add(p, Div(Mul(negClr, g), stddev)));
  }
}

// g += wd p; clr = lr / (1 + (t - 1) lr_decay); G += g^2; p -= clr g / (sqrt(G) + eps).
void Adagrad(BP_PARAMS_AdagradStep) {
  constexpr std::string_view op = "Optimizer.Adagrad";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "sum", sum, count);
    const int64_t before = CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckNonNegativeParam(op, "config.LrDecay", config.LrDecay);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    const int64_t t = before + 1;
    const double wd = config.WeightDecay;
    const double clr = static_cast<double>(config.LearningRate) /
                       (1.0 + static_cast<double>(t - 1) * static_cast<double>(config.LrDecay));
    if (count > 0) {
      AdagradKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
          params, grads, static_cast<T*>(sum), count, T(-clr), T(wd), T(config.Eps), wd != 0.0);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- Adadelta -----------------------------------------------------------------------------------

template <class T>
struct AdadeltaCoef {
  T rho, oneMinusRho, eps, weightDecay, negLr;
};

template <class S>
__global__ void AdadeltaKernel(void* params, const void* grads, Compute<S>* sq, Compute<S>* acc,
                               int64_t n, AdadeltaCoef<Compute<S>> c, bool l2) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    const T p = Ld<S>(params, i);
    T g = Ld<S>(grads, i);
    if (l2) g = Add(g, Mul(c.weightDecay, p));
    const T si = Add(Mul(sq[i], c.rho), Mul(Mul(c.oneMinusRho, g), g));
    sq[i] = si;
    const T stddev = Sqrt(Add(si, c.eps));
    const T ai = acc[i];
    const T delta = Mul(Div(Sqrt(Add(ai, c.eps)), stddev), g);
    acc[i] = Add(Mul(ai, c.rho), Mul(Mul(c.oneMinusRho, delta), delta));
    St<S>(params, i, Add(p, Mul(c.negLr, delta)));
  }
}

// g += wd p; E[g2] = rho E[g2] + (1 - rho) g^2; delta = sqrt(E[dx2] + eps) / sqrt(E[g2] + eps) g;
// E[dx2] = rho E[dx2] + (1 - rho) delta^2; p -= lr delta.
void Adadelta(BP_PARAMS_AdadeltaStep) {
  constexpr std::string_view op = "Optimizer.Adadelta";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    CheckPointer(op, "squareAvg", squareAvg, count);
    CheckPointer(op, "accDelta", accDelta, count);
    const int64_t before = CheckStep(op, "step", step);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    CheckUnitParam(op, "config.Rho", config.Rho, /*closed=*/false);
    CheckNonNegativeParam(op, "config.Eps", config.Eps);
    CheckNonNegativeParam(op, "config.WeightDecay", config.WeightDecay);
    const int64_t t = before + 1;
    const double r = config.Rho, wd = config.WeightDecay;
    AdadeltaCoef<T> c{};
    c.rho = T(r);
    c.oneMinusRho = T(1.0 - r);
    c.eps = T(config.Eps);
    c.weightDecay = T(wd);
    c.negLr = T(-static_cast<double>(config.LearningRate));
    if (count > 0) {
      AdadeltaKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
          params, grads, static_cast<T*>(squareAvg), static_cast<T*>(accDelta), count, c,
          wd != 0.0);
    }
    WriteCounter(step, &t);
    FinishMethod(op);
  });
}

// ---- L-BFGS (torch.optim.LBFGS's inner iteration, no line search) -------------------------------

// v[0] = max |g| over the non-NaN elements (the reference's std::max chain ignores NaN),
// v[1] = 1 when some element is NaN.
template <class S>
struct MaxAbsNanOp {
  static constexpr int kN = 2;
  const void* grads;
  __device__ Sums<2> Identity() const { return Sums<2>{{0.0, 0.0}}; }
  __device__ void Element(int64_t i, Sums<2>& acc) const {
    const double x = LdD<S>(grads, i);
    if (isnan(x)) {
      acc.v[1] = 1.0;
    } else {
      const double a = fabs(x);
      if (acc.v[0] < a) acc.v[0] = a;
    }
  }
  __device__ void Combine(Sums<2>& a, const Sums<2>& b) const {
    if (a.v[0] < b.v[0]) a.v[0] = b.v[0];
    if (b.v[1] != 0.0) a.v[1] = 1.0;
  }
};

// sum a_i b_i over two T vectors.
template <class T>
struct DotOp : SumCombine<1> {
  const T* a;
  const T* b;
  __device__ void Element(int64_t i, Sums<1>& acc) const {
    acc.v[0] = Add(acc.v[0], Mul(static_cast<double>(a[i]), static_cast<double>(b[i])));
  }
};

// v[0] = y.s, v[1] = y.y (H_diag of the newest pair).
template <class T>
struct PairDotsOp : SumCombine<2> {
  const T* y;
  const T* s;
  __device__ void Element(int64_t i, Sums<2>& acc) const {
    const double yi = static_cast<double>(y[i]);
    acc.v[0] = Add(acc.v[0], Mul(yi, static_cast<double>(s[i])));
    acc.v[1] = Add(acc.v[1], Mul(yi, yi));
  }
};

// v[0] = g.d, v[1] = |g|_1.
template <class S>
struct GtdL1Op : SumCombine<2> {
  const void* grads;
  const Compute<S>* d;
  __device__ void Element(int64_t i, Sums<2>& acc) const {
    const double g = LdD<S>(grads, i);
    acc.v[0] = Add(acc.v[0], Mul(g, static_cast<double>(d[i])));
    acc.v[1] = Add(acc.v[1], fabs(g));
  }
};

// alpha_j = (s_j . q) rho_j.
struct AlphaFin {
  double* alpha;
  const double* rho;
  int64_t slot;
  __device__ void operator()(const Sums<1>& total) const { *alpha = Mul(total.v[0], rho[slot]); }
};

// coef_j = alpha_j - (y_j . d) rho_j (the reference's alpha - beta, rounded to T by the user).
struct CoefFin {
  double* coef;
  const double* alpha;
  const double* rho;
  int64_t slot;
  __device__ void operator()(const Sums<1>& total) const {
    *coef = Sub(*alpha, Mul(total.v[0], rho[slot]));
  }
};

// H_diag = y.s / y.y.
struct RatioFin {
  double* out;
  __device__ void operator()(const Sums<2>& total) const { *out = Div(total.v[0], total.v[1]); }
};

template <class S>
__global__ void LbfgsDiffKernel(Compute<S>* y, const void* grads, const Compute<S>* prevGrads,
                                int64_t n) {
  BP_CUDA_GRID_STRIDE(i, n) { y[i] = Sub(Ld<S>(grads, i), prevGrads[i]); }
}

template <class S>
__global__ void LbfgsNegKernel(Compute<S>* q, const void* grads, int64_t n) {
  BP_CUDA_GRID_STRIDE(i, n) { q[i] = -Ld<S>(grads, i); }
}

// q -= T(alpha) y.
template <class T>
__global__ void LbfgsSubScaledKernel(T* q, const T* y, const double* alpha, int64_t n) {
  const T a = static_cast<T>(*alpha);
  BP_CUDA_GRID_STRIDE(i, n) { q[i] = Sub(q[i], Mul(a, y[i])); }
}

// d += T(coef) s.
template <class T>
__global__ void LbfgsAddScaledKernel(T* d, const T* s, const double* coef, int64_t n) {
  const T c = static_cast<T>(*coef);
  BP_CUDA_GRID_STRIDE(i, n) { d[i] = Add(d[i], Mul(c, s[i])); }
}

// d = q T(H_diag); hDiag null: H_diag = 1.
template <class T>
__global__ void LbfgsScaleKernel(T* q, const double* hDiag, int64_t n) {
  const T h = static_cast<T>(hDiag != nullptr ? *hDiag : 1.0);
  BP_CUDA_GRID_STRIDE(i, n) { q[i] = Mul(q[i], h); }
}

// prevGrads = g; lastStep = d tt; when apply, p += lastStep (rounded once on store).
template <class S>
__global__ void LbfgsFinishKernel(void* params, const void* grads, const Compute<S>* d,
                                  Compute<S>* prevGrads, Compute<S>* lastStep, int64_t n,
                                  Compute<S> tt, bool apply) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(i, n) {
    prevGrads[i] = Ld<S>(grads, i);
    const T step = Mul(d[i], tt);
    lastStep[i] = step;
    if (apply) St<S>(params, i, Add(Ld<S>(params, i), step));
  }
}

// On each call, with g the gradient at the current p:
//   if max|g| <= ToleranceGrad: return (nothing changes, step included);
//   k = ++step; k == 1: empty the history, d = -g;
//   else: y = g - prevGrads, s = lastStep; if y's > 1e-10 the pair goes into the ring (oldest
//   evicted, rho = 1 / y's); d = -H g by the two-loop recursion; prevGrads = g;
//   t = k == 1 ? min(1, 1 / |g|_1) lr : lr; lastStep = t d;
//   if g'd > -ToleranceChange: return (no update); p += lastStep.
// The host drives the recursion (head, stored and the loop bounds are host values); the dot
// products, alpha_j and alpha_j - beta_j stay on the device, read by the following kernels. Three
// scalars come back to the host: max|g| (convergence), y's (whether the pair is kept) and g.d with
// |g|_1 (whether the step is applied, and t).
void LBFGS(BP_PARAMS_LBFGSStep) {
  constexpr std::string_view op = "Optimizer.LBFGS";
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    CheckVectors(op, params, "grads", grads, count);
    CheckNonNegativeParam(op, "config.LearningRate", config.LearningRate);
    if (std::isnan(config.ToleranceGrad)) {
      ThrowInvalidArgument(op, "config.ToleranceGrad", "not NaN", "nan");
    }
    if (std::isnan(config.ToleranceChange)) {
      ThrowInvalidArgument(op, "config.ToleranceChange", "not NaN", "nan");
    }
    const int64_t m = config.HistorySize;
    CheckPositive(op, "config.HistorySize", m);
    int64_t historyCount = 0;
    if (__builtin_mul_overflow(m, count, &historyCount)) {
      ThrowInvalidArgument(op, "config.HistorySize",
                           "small enough that HistorySize * count fits in int64",
                           Format("{} x {}", m, count));
    }
    CheckPointer(op, "state.lastStep", state.lastStep, count);
    CheckPointer(op, "state.prevGrads", state.prevGrads, count);
    CheckPointer(op, "state.sHistory", state.sHistory, historyCount);
    CheckPointer(op, "state.yHistory", state.yHistory, historyCount);
    CheckNotNull(op, "state.rhoHistory", state.rhoHistory);
    CheckNotNull(op, "state.head", state.head);
    CheckNotNull(op, "state.stored", state.stored);
    CheckNotNull(op, "state.step", state.step);
    // The three counters, read together (one synchronisation).
    int64_t head = 0, stored = 0, stepValue = 0;
    CopyAsync(&head, state.head, sizeof(int64_t));
    CopyAsync(&stored, state.stored, sizeof(int64_t));
    CopyAsync(&stepValue, state.step, sizeof(int64_t));
    FinishMethod(op);
    CheckStepValue(op, "state.step", stepValue);
    if (head < 0 || head >= m) {
      ThrowInvalidArgument(op, "state.head", Format("in [0, {}) (config.HistorySize)", m),
                           std::to_string(head));
    }
    if (stored < 0 || stored > m) {
      ThrowInvalidArgument(op, "state.stored", Format("in [0, {}] (config.HistorySize)", m),
                           std::to_string(stored));
    }
    if (stepValue == 0 && stored != 0) {
      ThrowInvalidArgument(op, "state.stored", "0 before the first step (state.step = 0)",
                           std::to_string(stored));
    }

    const int64_t k = stepValue + 1;
    if (count == 0) {
      // No elements: max|g| = 0 does not stop an empty call (n > 0 fails), every dot is 0 (so
      // y's = 0 keeps no pair) and nothing is applied; only the counters change.
      if (k == 1) {
        head = 0;
        stored = 0;
      }
      WriteCounter(state.head, &head);
      WriteCounter(state.stored, &stored);
      WriteCounter(state.step, &k);
      FinishMethod(op);
      return;
    }

    // Scratch: q (= d), y, reduction partials, scalars, alpha_j and coef_j per stored pair.
    const size_t vecBytes = Align16(static_cast<size_t>(count) * sizeof(T));
    const size_t partialBytes = Align16(PartialBytes<2>());
    const int64_t maxPairs = std::min(stored + 1, m);  // stored after this call is <= this
    constexpr int kScalars = 8;
    const size_t scalarBytes = Align16((kScalars + 2 * static_cast<size_t>(maxPairs)) * sizeof(double));
    DeviceScratch scratch(2 * vecBytes + partialBytes + scalarBytes);
    T* q = reinterpret_cast<T*>(scratch.Bytes());
    T* y = reinterpret_cast<T*>(scratch.Bytes() + vecBytes);
    void* partials = scratch.Bytes() + 2 * vecBytes;
    auto* scalars = reinterpret_cast<double*>(scratch.Bytes() + 2 * vecBytes + partialBytes);
    double* alpha = scalars + kScalars;
    double* coef = alpha + maxPairs;
    double* sMaxAbs = scalars + 0;  // [0] max|g|, [1] NaN seen
    double* sYs = scalars + 2;
    double* sHDiag = scalars + 3;
    double* sGtdL1 = scalars + 4;  // [4] g.d, [5] |g|_1

    // Convergence: max|g| <= ToleranceGrad (a NaN never converges) leaves everything as it is.
    double maxAbs[2] = {0.0, 0.0};
    LaunchReduce(MaxAbsNanOp<S>{grads}, count, partials, StoreSums<2>{sMaxAbs});
    CopyAsync(maxAbs, sMaxAbs, sizeof(maxAbs));
    FinishMethod(op);
    if (maxAbs[1] == 0.0 && maxAbs[0] <= config.ToleranceGrad) {
      scratch.Release();
      return;
    }

    T* lastStep = static_cast<T*>(state.lastStep);
    T* prevGrads = static_cast<T*>(state.prevGrads);
    T* sHistory = static_cast<T*>(state.sHistory);
    T* yHistory = static_cast<T*>(state.yHistory);
    auto slotS = [&](int64_t slot) { return sHistory + slot * count; };
    auto slotY = [&](int64_t slot) { return yHistory + slot * count; };
    const unsigned grid = Grid(count);
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);

    double rhoNew = 0.0;  // source of the rho copy: alive until FinishMethod
    if (k == 1) {
      head = 0;
      stored = 0;
    } else {
      LbfgsDiffKernel<S><<<grid, kThreads, 0, Stream()>>>(y, grads, prevGrads, count);
      DotOp<T> ysOp{};
      ysOp.a = y;
      ysOp.b = lastStep;
      LaunchReduce(ysOp, count, partials, StoreSums<1>{sYs});
      double ys = 0.0;
      CopyAsync(&ys, sYs, sizeof(ys));
      FinishMethod(op);
      if (ys > 1e-10) {  // curvature condition; otherwise the pair is skipped
        const int64_t slot = head;
        CopyAsync(slotS(slot), lastStep, bytes);
        CopyAsync(slotY(slot), y, bytes);
        rhoNew = 1.0 / ys;
        CopyAsync(state.rhoHistory + slot, &rhoNew, sizeof(double));
        head = (slot + 1) % m;
        stored = std::min(stored + 1, m);
      }
    }

    // Two-loop recursion on q = -g; j = 0 is the newest pair.
    LbfgsNegKernel<S><<<grid, kThreads, 0, Stream()>>>(q, grads, count);
    auto slotOf = [&](int64_t j) { return (head - 1 - j + m) % m; };
    for (int64_t j = 0; j < stored; ++j) {
      const int64_t slot = slotOf(j);
      DotOp<T> sq{};
      sq.a = slotS(slot);
      sq.b = q;
      LaunchReduce(sq, count, partials, AlphaFin{alpha + j, state.rhoHistory, slot});
      LbfgsSubScaledKernel<T><<<grid, kThreads, 0, Stream()>>>(q, slotY(slot), alpha + j, count);
    }
    const double* hDiag = nullptr;  // 1 when no pair is stored
    if (stored > 0) {
      const int64_t newest = slotOf(0);
      PairDotsOp<T> pair{};
      pair.y = slotY(newest);
      pair.s = slotS(newest);
      LaunchReduce(pair, count, partials, RatioFin{sHDiag});
      hDiag = sHDiag;
    }
    T* d = q;
    LbfgsScaleKernel<T><<<grid, kThreads, 0, Stream()>>>(d, hDiag, count);
    for (int64_t j = stored - 1; j >= 0; --j) {
      const int64_t slot = slotOf(j);
      DotOp<T> yd{};
      yd.a = slotY(slot);
      yd.b = d;
      LaunchReduce(yd, count, partials, CoefFin{coef + j, alpha + j, state.rhoHistory, slot});
      LbfgsAddScaledKernel<T><<<grid, kThreads, 0, Stream()>>>(d, slotS(slot), coef + j, count);
    }

    GtdL1Op<S> gd{};
    gd.grads = grads;
    gd.d = d;
    LaunchReduce(gd, count, partials, StoreSums<2>{sGtdL1});
    double gtdL1[2] = {0.0, 0.0};
    CopyAsync(gtdL1, sGtdL1, sizeof(gtdL1));
    FinishMethod(op);
    const double gtd = gtdL1[0];
    double t = config.LearningRate;
    if (k == 1) t = std::min(1.0, 1.0 / gtdL1[1]) * config.LearningRate;
    const T tt = T(t);
    const bool apply = !(gtd > -config.ToleranceChange);  // not a descent direction: no update
    LbfgsFinishKernel<S><<<grid, kThreads, 0, Stream()>>>(params, grads, d, prevGrads, lastStep,
                                                          count, tt, apply);
    WriteCounter(state.head, &head);
    WriteCounter(state.stored, &stored);
    WriteCounter(state.step, &k);
    FinishMethod(op);
    scratch.Release();
  });
}

// ---- Quant.Quant --------------------------------------------------------------------------------

constexpr unsigned long long kNoPosition = ~0ULL;

// *first = the smallest i with src[i] NaN (left at kNoPosition if none).
template <class S>
__global__ void FirstNanKernel(const void* src, int64_t n, unsigned long long* first) {
  BP_CUDA_GRID_STRIDE(i, n) {
    if (isnan(Ld<S>(src, i))) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// q = clamp(round_half_even(x / scale) + zp, -128, 127); x is not NaN. rint rounds to nearest
// even, as the reference's RoundHalfEven (which keeps the sign of zero and leaves +-Inf).
template <class S>
__global__ void QuantKernel(int8_t* dst, const void* src, int64_t n, Compute<S> scale, double zp) {
  BP_CUDA_GRID_STRIDE(i, n) {
    const Compute<S> r = rint(Div(Ld<S>(src, i), scale));
    const double q = Add(static_cast<double>(r), zp);
    dst[i] = static_cast<int8_t>(fmin(fmax(q, -128.0), 127.0));
  }
}

void Quant(void* dst, const void* src, int64_t count, const QuantConfig& config, DType dstFormat,
           DType srcFormat) {
  constexpr std::string_view kOp = "Quant.Quant";
  CheckDType(kOp, "dstFormat", dstFormat, DTypeSet{DType::Int8});
  CheckDType(kOp, "srcFormat", srcFormat, kFloatDTypes);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "dst", dst, count);
  CheckPointer(kOp, "src", src, count);
  if (!(std::isfinite(config.Scale) && config.Scale > 0.0f)) {
    ThrowInvalidArgument(kOp, "config.Scale", "finite and > 0", Format("{}", config.Scale));
  }
  if (count == 0) return;
  ByFloatDType(kOp, srcFormat, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    // The NaN check first: nothing is written when the source has a NaN.
    DeviceScratch scratch(sizeof(unsigned long long));
    auto* first = static_cast<unsigned long long*>(scratch.Get());
    CheckCuda(static_cast<int>(cudaMemsetAsync(first, 0xFF, sizeof(unsigned long long), Stream())),
              "cudaMemsetAsync");
    FirstNanKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(src, count, first);
    unsigned long long bad = kNoPosition;
    CopyAsync(&bad, first, sizeof(bad));
    FinishMethod(kOp);
    scratch.Release();
    if (bad != kNoPosition) {
      ThrowInvalidArgument(kOp, "src", "free of NaN", Format("NaN at index {}", bad));
    }
    QuantKernel<S><<<Grid(count), kThreads, 0, Stream()>>>(
        static_cast<int8_t*>(dst), src, count, static_cast<T>(config.Scale),
        static_cast<double>(config.ZeroPoint));
    FinishMethod(kOp);
  });
}

// ---- Dequant.Dequant, Dequant.Dequant4 ----------------------------------------------------------

// dst = T(q - zp) * scale, one rounding in T, then the store's. kInt4: two per byte, low nibble
// first, sign-extended (LoadInt4).
template <class S, bool kInt4>
__global__ void DequantKernel(void* dst, const void* src, int64_t n, Compute<S> scale, int zp) {
  using T = Compute<S>;
  const auto* bytes = static_cast<const uint8_t*>(src);
  BP_CUDA_GRID_STRIDE(i, n) {
    int32_t q = 0;
    if constexpr (kInt4) {
      const uint8_t byte = bytes[i >> 1];
      const uint8_t nibble = (i & 1) ? static_cast<uint8_t>(byte >> 4) : static_cast<uint8_t>(byte & 0x0F);
      q = static_cast<int8_t>(static_cast<int8_t>(nibble << 4) >> 4);
    } else {
      q = static_cast<int8_t>(bytes[i]);
    }
    const int32_t centred = q - zp;
    St<S>(dst, i, Mul(static_cast<T>(centred), scale));
  }
}

template <bool kInt4>
void DequantRun(std::string_view op, void* dst, const void* src, int64_t count,
                const DequantConfig& config, DType dstFormat, DType srcFormat, DType expectedSrc,
                int zpMin, int zpMax) {
  CheckDType(op, "srcFormat", srcFormat, DTypeSet{expectedSrc});
  CheckDType(op, "dstFormat", dstFormat, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "dst", dst, count);
  CheckPointer(op, "src", src, count);
  if (!(std::isfinite(config.Scale) && config.Scale > 0.0f)) {
    ThrowInvalidArgument(op, "config.Scale", "finite and > 0", Format("{}", config.Scale));
  }
  const int zp = config.ZeroPoint;
  if (zp < zpMin || zp > zpMax) {
    ThrowInvalidArgument(op, "config.ZeroPoint", Format("in [{}, {}]", zpMin, zpMax),
                         std::to_string(zp));
  }
  if (count == 0) return;
  ByFloatDType(op, dstFormat, [&](auto storage) {
    using S = decltype(storage);
    using T = Compute<S>;
    DequantKernel<S, kInt4><<<Grid(count), kThreads, 0, Stream()>>>(
        dst, src, count, static_cast<T>(config.Scale), zp);
  });
  FinishMethod(op);
}

void Dequant(void* dst, const void* src, int64_t count, const DequantConfig& config,
             DType dstFormat, DType srcFormat) {
  DequantRun<false>("Dequant.Dequant", dst, src, count, config, dstFormat, srcFormat, DType::Int8,
                    -128, 127);
}

void Dequant4(void* dst, const void* src, int64_t count, const DequantConfig& config,
              DType dstFormat, DType srcFormat) {
  DequantRun<true>("Dequant.Dequant4", dst, src, count, config, dstFormat, srcFormat, DType::Int4,
                   -8, 7);
}

// ---- BlockQuant: ggml block decoding ------------------------------------------------------------
// Element k of one block, exactly as the reference's DecodeBlock computes it (every f32
// operation one rounding, in its order). Blocks may sit at any byte offset: fields are read a
// byte at a time, little-endian.

__device__ __forceinline__ uint32_t LoadU16(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
}
__device__ __forceinline__ uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// F16ToF32: exact for every non-NaN encoding (subnormals kept); a NaN keeps its sign and payload
// with the quiet bit set, as the reference's bit conversion.
__device__ __forceinline__ float HalfBitsToFloat(uint32_t h) {
  const uint32_t man = h & 0x03FFu;
  if ((h & 0x7C00u) == 0x7C00u && man != 0) {
    return __uint_as_float(((h >> 15) << 31) | 0x7F800000u | 0x00400000u | (man << 13));
  }
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
}
__device__ __forceinline__ float LoadF16(const uint8_t* p) { return HalfBitsToFloat(LoadU16(p)); }

// BF16ToF32: h << 16, a NaN made quiet.
__device__ __forceinline__ float BF16BitsToFloat(uint32_t h) {
  uint32_t x = h << 16;
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) x |= 0x00400000u;
  return __uint_as_float(x);
}

// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block.
__device__ __forceinline__ void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q3_K's 6-bit scale s (0..15), unpacked from the twelve scale bytes as ggml does (kmask1/2).
__device__ __forceinline__ int Q3KScale(const uint8_t* scales, int s) {
  constexpr uint32_t kmask1 = 0x03030303u;
  constexpr uint32_t kmask2 = 0x0f0f0f0fu;
  const uint32_t a0 = LoadU32(scales);
  const uint32_t a1 = LoadU32(scales + 4);
  const uint32_t tmp = LoadU32(scales + 8);
  uint32_t aux = 0;
  switch (s / 4) {
    case 0: aux = (a0 & kmask2) | (((tmp >> 0) & kmask1) << 4); break;
    case 1: aux = (a1 & kmask2) | (((tmp >> 2) & kmask1) << 4); break;
    case 2: aux = ((a0 >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4); break;
    default: aux = ((a1 >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4); break;
  }
  return static_cast<int>((aux >> (8 * (s % 4))) & 0xFFu);
}

template <BlockFormat F>
struct Layout;
#define BP_BLOCK_LAYOUT(F, E, B)                   \
  template <>                                      \
  struct Layout<BlockFormat::F> {                  \
    static constexpr int64_t kElements = E;        \
    static constexpr int64_t kBytes = B;           \
  };
BP_BLOCK_LAYOUT(F32, 1, 4)
BP_BLOCK_LAYOUT(F16, 1, 2)
BP_BLOCK_LAYOUT(BF16, 1, 2)
BP_BLOCK_LAYOUT(Q4_0, 32, 18)
BP_BLOCK_LAYOUT(Q4_1, 32, 20)
BP_BLOCK_LAYOUT(Q5_0, 32, 22)
BP_BLOCK_LAYOUT(Q5_1, 32, 24)
BP_BLOCK_LAYOUT(Q8_0, 32, 34)
BP_BLOCK_LAYOUT(Q8_1, 32, 36)
BP_BLOCK_LAYOUT(Q2_K, 256, 84)
BP_BLOCK_LAYOUT(Q3_K, 256, 110)
BP_BLOCK_LAYOUT(Q4_K, 256, 144)
BP_BLOCK_LAYOUT(Q5_K, 256, 176)
BP_BLOCK_LAYOUT(Q6_K, 256, 210)
BP_BLOCK_LAYOUT(Q8_K, 256, 292)
#undef BP_BLOCK_LAYOUT

// Value k (0 <= k < Layout<F>::kElements) of the block at b.
template <BlockFormat F>
__device__ __forceinline__ float DecodeElement(const uint8_t* b, int k) {
  using BF = BlockFormat;
  if constexpr (F == BF::F32) {
    return __uint_as_float(LoadU32(b));
  } else if constexpr (F == BF::F16) {
    return LoadF16(b);
  } else if constexpr (F == BF::BF16) {
    return BF16BitsToFloat(LoadU16(b));
  } else if constexpr (F == BF::Q4_0 || F == BF::Q4_1) {
    const float d = LoadF16(b);
    const uint8_t* qs = b + (F == BF::Q4_0 ? 2 : 4);
    const int q = k < 16 ? (qs[k] & 0x0F) : (qs[k - 16] >> 4);
    if constexpr (F == BF::Q4_0) {
      return __fmul_rn(static_cast<float>(q - 8), d);
    } else {
      return __fadd_rn(__fmul_rn(static_cast<float>(q), d), LoadF16(b + 2));
    }
  } else if constexpr (F == BF::Q5_0 || F == BF::Q5_1) {
    const float d = LoadF16(b);
    const uint32_t qh = LoadU32(b + (F == BF::Q5_0 ? 2 : 4));
    const uint8_t* qs = b + (F == BF::Q5_0 ? 6 : 8);
    const int nibble = k < 16 ? (qs[k] & 0x0F) : (qs[k - 16] >> 4);
    const int q = nibble | static_cast<int>(((qh >> k) & 1u) << 4);
    if constexpr (F == BF::Q5_0) {
      return __fmul_rn(static_cast<float>(q - 16), d);
    } else {
      return __fadd_rn(__fmul_rn(static_cast<float>(q), d), LoadF16(b + 2));
    }
  } else if constexpr (F == BF::Q8_0 || F == BF::Q8_1) {
    const float d = LoadF16(b);
    const uint8_t* qs = b + (F == BF::Q8_0 ? 2 : 4);
    return __fmul_rn(static_cast<float>(static_cast<int8_t>(qs[k])), d);
  } else if constexpr (F == BF::Q2_K) {
    const int s = k / 16, l = k % 16, h = k / 128, j = (k % 128) / 32, half = s % 2;
    const uint8_t sc = b[s];
    const float d = LoadF16(b + 80);
    const float min = LoadF16(b + 82);
    const float dl = __fmul_rn(d, static_cast<float>(sc & 0x0F));
    const float ml = __fmul_rn(min, static_cast<float>(sc >> 4));
    const int v = (b[16 + 32 * h + 16 * half + l] >> (2 * j)) & 3;
    return __fsub_rn(__fmul_rn(dl, static_cast<float>(v)), ml);
  } else if constexpr (F == BF::Q3_K) {
    const int s = k / 16, l = k % 16, h = k / 128, j = (k % 128) / 32, half = s % 2;
    const float dAll = LoadF16(b + 108);
    const float dl = __fmul_rn(dAll, static_cast<float>(Q3KScale(b + 96, s) - 32));
    const int low = (b[32 + 32 * h + 16 * half + l] >> (2 * j)) & 3;
    const int mask = 1 << (4 * h + j);
    const int value = low - ((b[16 * half + l] & mask) ? 0 : 4);
    return __fmul_rn(dl, static_cast<float>(value));
  } else if constexpr (F == BF::Q4_K || F == BF::Q5_K) {
    const float d = LoadF16(b);
    const float min = LoadF16(b + 2);
    const int c = k / 64, second = (k % 64) / 32, l = k % 32;
    int sc = 0, m = 0;
    ScaleMinK4(2 * c + second, b + 4, &sc, &m);
    const float dj = __fmul_rn(d, static_cast<float>(sc));
    const float mj = __fmul_rn(min, static_cast<float>(m));
    const uint8_t* ql = b + (F == BF::Q4_K ? 16 : 48);
    const uint8_t byte = ql[32 * c + l];
    int q = second ? (byte >> 4) : (byte & 0x0F);
    if constexpr (F == BF::Q5_K) {
      if (b[16 + l] & (1 << (2 * c + second))) q += 16;
    }
    return __fsub_rn(__fmul_rn(dj, static_cast<float>(q)), mj);
  } else if constexpr (F == BF::Q6_K) {
    const int h = k / 128, r = k % 128, t = r / 32, l = r % 32;
    const uint8_t qlb = b[64 * h + l + 32 * (t % 2)];
    const int nibble = (t >= 2) ? (qlb >> 4) : (qlb & 0x0F);
    const int hb = (b[128 + 32 * h + l] >> (2 * t)) & 3;
    const int q = (nibble | (hb << 4)) - 32;
    const int scale = static_cast<int8_t>(b[192 + 8 * h + l / 16 + 2 * t]);
    const float d = LoadF16(b + 208);
    return __fmul_rn(__fmul_rn(d, static_cast<float>(scale)), static_cast<float>(q));
  } else {
    static_assert(F == BF::Q8_K, "unhandled block format");
    const float d = __uint_as_float(LoadU32(b));
    return __fmul_rn(d, static_cast<float>(static_cast<int8_t>(b[4 + k])));
  }
}

// Value i of a row of blocks.
template <BlockFormat F>
__device__ __forceinline__ float DecodeAt(const uint8_t* row, int64_t i) {
  constexpr int64_t E = Layout<F>::kElements;
  return DecodeElement<F>(row + (i / E) * Layout<F>::kBytes, static_cast<int>(i % E));
}

template <BlockFormat F>
using FormatTag = std::integral_constant<BlockFormat, F>;

// Calls fn(FormatTag<F>{}) for a validated format, after checking that the device layout table
// agrees with block_format.cpp's.
template <class Fn>
void ByBlockFormat(std::string_view op, BlockFormat format, Fn&& fn) {
  const BlockLayout layout = LayoutOf(format);
  auto call = [&](auto tag) {
    constexpr BlockFormat F = decltype(tag)::value;
    if (layout.elements != Layout<F>::kElements || layout.bytes != Layout<F>::kBytes) {
      throw Error(ErrorCode::Internal, op, "device block layout disagrees with LayoutOf");
    }
    fn(tag);
  };
  switch (format) {
    case BlockFormat::F32: call(FormatTag<BlockFormat::F32>{}); return;
    case BlockFormat::F16: call(FormatTag<BlockFormat::F16>{}); return;
    case BlockFormat::BF16: call(FormatTag<BlockFormat::BF16>{}); return;
    case BlockFormat::Q4_0: call(FormatTag<BlockFormat::Q4_0>{}); return;
    case BlockFormat::Q4_1: call(FormatTag<BlockFormat::Q4_1>{}); return;
    case BlockFormat::Q5_0: call(FormatTag<BlockFormat::Q5_0>{}); return;
    case BlockFormat::Q5_1: call(FormatTag<BlockFormat::Q5_1>{}); return;
    case BlockFormat::Q8_0: call(FormatTag<BlockFormat::Q8_0>{}); return;
    case BlockFormat::Q8_1: call(FormatTag<BlockFormat::Q8_1>{}); return;
    case BlockFormat::Q2_K: call(FormatTag<BlockFormat::Q2_K>{}); return;
    case BlockFormat::Q3_K: call(FormatTag<BlockFormat::Q3_K>{}); return;
    case BlockFormat::Q4_K: call(FormatTag<BlockFormat::Q4_K>{}); return;
    case BlockFormat::Q5_K: call(FormatTag<BlockFormat::Q5_K>{}); return;
    case BlockFormat::Q6_K: call(FormatTag<BlockFormat::Q6_K>{}); return;
    case BlockFormat::Q8_K: call(FormatTag<BlockFormat::Q8_K>{}); return;
  }
  throw Error(ErrorCode::Internal, op, "unvalidated block format");
}

// The layout of `format`; InvalidArgument naming op and arg for a value outside AllBlockFormats().
BlockLayout CheckedLayout(std::string_view op, std::string_view arg, BlockFormat format) {
  const uint32_t value = static_cast<uint32_t>(format);
  if (!BlockFormatFromGgmlType(value)) {
    ThrowInvalidArgument(op, arg, "a ggml type Backplane reads (block_format.hpp)",
                         std::to_string(value));
  }
  return LayoutOf(format);
}

// ---- BlockQuant.Dequantize ----------------------------------------------------------------------

template <BlockFormat F>
__global__ void BlockDequantKernel(float* dst, const uint8_t* src, int64_t n) {
  BP_CUDA_GRID_STRIDE(i, n) { dst[i] = DecodeAt<F>(src, i); }
}

// Writes dst[0, count); dst must not overlap src.
void Dequantize(void* dst, const void* src, int64_t count, BlockFormat srcFormat, DType dstFormat) {
  constexpr std::string_view kOp = "BlockQuant.Dequantize";
  CheckDType(kOp, "dstFormat", dstFormat, DTypeSet{DType::Float32});
  static_cast<void>(CheckedLayout(kOp, "srcFormat", srcFormat));
  const int64_t bytes = BlockBytes(srcFormat, count, kOp, "count");
  CheckPointer(kOp, "dst", dst, count);
  CheckPointer(kOp, "src", src, bytes);
  if (count == 0) return;
  ByBlockFormat(kOp, srcFormat, [&](auto tag) {
    constexpr BlockFormat F = decltype(tag)::value;
    BlockDequantKernel<F><<<Grid(count), kThreads, 0, Stream()>>>(
        static_cast<float*>(dst), static_cast<const uint8_t*>(src), count);
  });
  FinishMethod(kOp);
}

// ---- BlockQuant.MatmulT -------------------------------------------------------------------------
// dst[r, o] = f32(sum_i f64(x[r, i]) * f64(W[o, i])). Every product is exact in f64, so an FMA
// equals the reference's multiply-then-add.
//  * rows <= kWarpRows (the LLM's matrix-vector case): one warp per output o; lane l decodes
//    elements l, l + 32, ... of W's row o and keeps one f64 partial per row r; the 32 partials
//    are summed by a shuffle tree. The f64 summation order differs from the reference's, so the
//    result can differ from it in the final rounding (within the conformance bound).
//  * more rows: 64 x 64 output tiles; each K-step decodes a 64 x 32 slab of W into shared memory
//    (each weight decoded once per row tile) and every thread accumulates its 4 x 4 outputs over
//    i in increasing order from 0: the reference's summation order, so the result is its exact
//    bits.

constexpr int kWarpRows = 8;
constexpr int kWarpsPerBlock = kThreads / 32;

template <BlockFormat F>
__global__ void BlockMatvecKernel(float* dst, const float* x, const uint8_t* w, int64_t rows,
                                  int64_t outFeatures, int64_t inFeatures, int64_t rowBytes) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t o = warp; o < outFeatures; o += warps) {  // the same o for the whole warp
    const uint8_t* row = w + o * rowBytes;
    double acc[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) acc[r] = 0.0;
    for (int64_t i = lane; i < inFeatures; i += 32) {
      const double wi = static_cast<double>(DecodeAt<F>(row, i));
#pragma unroll
      for (int r = 0; r < kWarpRows; ++r) {
        if (r < rows) acc[r] = fma(static_cast<double>(x[r * inFeatures + i]), wi, acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
      double v = acc[r];
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
      if (lane == 0 && r < rows) dst[r * outFeatures + o] = static_cast<float>(v);
    }
  }
}

constexpr int kTileRows = 64;
constexpr int kTileOuts = 64;
constexpr int kTileK = 32;
static_assert(kTileRows == kTileOuts, "one staging loop fills both tiles");
static_assert(kThreads == 256, "the tiled kernel maps 16 x 16 threads onto 4 x 4 outputs each");

template <BlockFormat F>
__global__ void __launch_bounds__(kThreads)
    BlockMatmulTiledKernel(float* dst, const float* x, const uint8_t* w, int64_t rows,
                           int64_t outFeatures, int64_t inFeatures, int64_t rowBytes) {
  __shared__ float sx[kTileK][kTileRows + 1];
  __shared__ float sw[kTileK][kTileOuts + 1];
  const int tid = static_cast<int>(threadIdx.x);
  const int tr = tid / 16;  // rows tr + 16 a
  const int to = tid % 16;  // outputs to + 16 b
  const int64_t rowTiles = (rows + kTileRows - 1) / kTileRows;
  const int64_t outTiles = (outFeatures + kTileOuts - 1) / kTileOuts;
  for (int64_t rt = blockIdx.y; rt < rowTiles; rt += gridDim.y) {
    for (int64_t ot = blockIdx.x; ot < outTiles; ot += gridDim.x) {
      const int64_t r0 = rt * kTileRows;
      const int64_t o0 = ot * kTileOuts;
      double acc[4][4];
#pragma unroll
      for (int a = 0; a < 4; ++a) {
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] = 0.0;
      }
      for (int64_t i0 = 0; i0 < inFeatures; i0 += kTileK) {
        // Stage x[r0.., i0..] and the decoded W[o0.., i0..] (zeros outside the matrices).
        for (int e = tid; e < kTileK * kTileRows; e += kThreads) {
          const int local = e / kTileK;
          const int kk = e % kTileK;
          const int64_t i = i0 + kk;
          const int64_t r = r0 + local;
          sx[kk][local] = (r < rows && i < inFeatures) ? x[r * inFeatures + i] : 0.0f;
          const int64_t o = o0 + local;
          sw[kk][local] = (o < outFeatures && i < inFeatures) ? DecodeAt<F>(w + o * rowBytes, i) : 0.0f;
        }
        __syncthreads();
        const int64_t remaining = inFeatures - i0;
        const int kMax = remaining < kTileK ? static_cast<int>(remaining) : kTileK;
        for (int kk = 0; kk < kMax; ++kk) {
          double xv[4], wv[4];
#pragma unroll
          for (int a = 0; a < 4; ++a) xv[a] = static_cast<double>(sx[kk][tr + 16 * a]);
#pragma unroll
          for (int b = 0; b < 4; ++b) wv[b] = static_cast<double>(sw[kk][to + 16 * b]);
#pragma unroll
          for (int a = 0; a < 4; ++a) {
#pragma unroll
            for (int b = 0; b < 4; ++b) acc[a][b] = fma(xv[a], wv[b], acc[a][b]);
          }
        }
        __syncthreads();
      }
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        const int64_t r = r0 + tr + 16 * a;
        if (r >= rows) continue;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const int64_t o = o0 + to + 16 * b;
          if (o < outFeatures) dst[r * outFeatures + o] = static_cast<float>(acc[a][b]);
        }
      }
    }
  }
}

// a * b for non-negative sizes; throws instead of overflowing int64.
int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "representable in int64",
                         std::to_string(a) + " * " + std::to_string(b) + " overflows");
  }
  return product;
}

unsigned CappedGrid(int64_t n, int64_t cap) {
  return static_cast<unsigned>(n < 1 ? 1 : (n > cap ? cap : n));
}

// The whole [rows, outFeatures] result is computed before dst is written, so dst may alias x
// (then the kernels write a scratch result, copied to dst afterwards).
void MatmulT(void* dst, const void* x, const void* weights, int64_t rows, int64_t outFeatures,
             int64_t inFeatures, BlockFormat weightFormat, DType dtype) {
  constexpr std::string_view kOp = "BlockQuant.MatmulT";
  constexpr int64_t kMaxBlockElements = 256;  // QK_K, the largest block
  CheckDType(kOp, "dtype", dtype, DTypeSet{DType::Float32});
  const BlockLayout layout = CheckedLayout(kOp, "weightFormat", weightFormat);
  CheckNonNegative(kOp, "rows", rows);
  CheckNonNegative(kOp, "outFeatures", outFeatures);
  CheckNonNegative(kOp, "inFeatures", inFeatures);
  const int64_t rowBytes = BlockBytes(weightFormat, inFeatures, kOp, "inFeatures");
  const int64_t xCount = CheckedProduct(kOp, "rows*inFeatures", rows, inFeatures);
  const int64_t dstCount = CheckedProduct(kOp, "rows*outFeatures", rows, outFeatures);
  const int64_t weightBytes = CheckedProduct(kOp, "outFeatures*rowBytes", outFeatures, rowBytes);
  CheckPointer(kOp, "dst", dst, dstCount);
  CheckPointer(kOp, "x", x, xCount);
  CheckPointer(kOp, "weights", weights, weightBytes);
  if (layout.elements > kMaxBlockElements) {
    throw Error(ErrorCode::Internal, kOp, "block larger than QK_K");
  }
  if (dstCount == 0) return;  // no rows or no outputs: the weights are not read

  const size_t dstBytes = static_cast<size_t>(dstCount) * sizeof(float);
  const bool aliased = Overlaps(dst, dstBytes, x, static_cast<size_t>(xCount) * sizeof(float));
  std::optional<DeviceScratch> scratch;
  if (aliased) scratch.emplace(dstBytes);
  float* out = aliased ? static_cast<float*>(scratch->Get()) : static_cast<float*>(dst);
  const auto* xs = static_cast<const float*>(x);
  const auto* w = static_cast<const uint8_t*>(weights);
  ByBlockFormat(kOp, weightFormat, [&](auto tag) {
    constexpr BlockFormat F = decltype(tag)::value;
    if (rows <= kWarpRows) {
      const int64_t blocks = (outFeatures + kWarpsPerBlock - 1) / kWarpsPerBlock;
      BlockMatvecKernel<F><<<CappedGrid(blocks, 65535LL * 8), kThreads, 0, Stream()>>>(
          out, xs, w, rows, outFeatures, inFeatures, rowBytes);
    } else {
      const int64_t outTiles = (outFeatures + kTileOuts - 1) / kTileOuts;
      const int64_t rowTiles = (rows + kTileRows - 1) / kTileRows;
      const dim3 grid(CappedGrid(outTiles, 65535LL * 8), CappedGrid(rowTiles, 65535));
      BlockMatmulTiledKernel<F><<<grid, kThreads, 0, Stream()>>>(out, xs, w, rows, outFeatures,
                                                                 inFeatures, rowBytes);
    }
  });
  if (aliased) CopyAsync(dst, out, dstBytes);
  FinishMethod(kOp);
  if (aliased) scratch->Release();
}

}  // namespace

void RegisterOptimizer(KernelTable& table) {
  table.Optimizer_Adam = &Adam;
  table.Optimizer_AdamW = &AdamW;
  table.Optimizer_Adamax = &Adamax;
  table.Optimizer_SGD = &SGD;
  table.Optimizer_Lion = &Lion;
  table.Optimizer_RMSprop = &RMSprop;
  table.Optimizer_Hebbian = &Hebbian;
  table.Optimizer_LARS = &LARS;
  table.Optimizer_LAMB = &LAMB;
  table.Optimizer_Adagrad = &Adagrad;
  table.Optimizer_Adadelta = &Adadelta;
  table.Optimizer_LBFGS = &LBFGS;
  table.Quant_Quant = &Quant;
  table.Dequant_Dequant = &Dequant;
  table.Dequant_Dequant4 = &Dequant4;
  table.BlockQuant_Dequantize = &Dequantize;
  table.BlockQuant_MatmulT = &MatmulT;
}

}  // namespace backplane::cuda
