#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "backplane/backend/backend.hpp"
#include "backplane/convert.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/exact_math.cuh"
#include "cuda/kernels/read_back.hpp"
#include "cuda/kernels/map.cuh"

namespace backplane::cuda {

void RegisterResearch(KernelTable& table);

namespace {

// ---- Device arithmetic (no FMA contraction) --------------------------------------------------

__device__ __forceinline__ double Floor(double x) { return floor(x); }
__device__ __forceinline__ float Floor(float x) { return floorf(x); }
__device__ __forceinline__ double Ceil(double x) { return ceil(x); }
__device__ __forceinline__ float Ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double Trunc(double x) { return trunc(x); }
__device__ __forceinline__ float Trunc(float x) { return truncf(x); }
__device__ __forceinline__ double Fabs(double x) { return fabs(x); }
__device__ __forceinline__ float Fabs(float x) { return fabsf(x); }
__device__ __forceinline__ double Fmod(double x, double y) { return fmod(x, y); }
__device__ __forceinline__ float Fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double NearbyInt(double x) { return nearbyint(x); }
__device__ __forceinline__ float NearbyInt(float x) { return nearbyintf(x); }

// std::max / std::min exactly (the first argument wins ties and unordered comparisons).
template <class T>
__device__ __forceinline__ T StdMax(T a, T b) {
  return (a < b) ? b : a;
}
template <class T>
__device__ __forceinline__ T StdMin(T a, T b) {
  return (b < a) ? b : a;
}

// ---- Host helpers ----------------------------------------------------------------------------

// The accepted set is kFloatDTypes; a switch (as the references) so that a value outside the enum
// is rejected too.
void CheckFloatDType(std::string_view op, DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return;
    default:
      ThrowUnsupportedDType(op, "dtype", dtype, kFloatDTypes);
  }
}

int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    ThrowInvalidArgument(op, arg, "small enough that the element count fits in int64",
                         Format("{} x {}", a, b));
  }
  return product;
}

// Stream-ordered copies; cudaMemcpyDefault lets either side be device, managed or host memory.
void Copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  CheckCuda(static_cast<int>(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, Stream())),
            "cudaMemcpyAsync");
}

void Fill(void* dst, int byte, size_t bytes) {
  CheckCuda(static_cast<int>(cudaMemsetAsync(dst, byte, bytes, Stream())), "cudaMemsetAsync");
}

// Element i of an integer array in device memory. Waits for the stream.
template <class I>
I ReadInteger(std::string_view op, const I* data, int64_t i) {
  I value{};
  Copy(&value, data + i, sizeof(I));
  FinishMethod(op);
  return value;
}

// The reference's Store<double>(output, 0, dtype, value) into device memory, converted on the host
// with the reference's own conversions; then the end of the method.
void StoreScalar(std::string_view op, void* output, DType dtype, double value) {
  unsigned char raw[8] = {};
  size_t bytes = 0;
  switch (dtype) {
    case DType::Float64:
      std::memcpy(raw, &value, sizeof(value));
      bytes = sizeof(double);
      break;
    case DType::Float32: {
      const float f = static_cast<float>(value);
      std::memcpy(raw, &f, sizeof(f));
      bytes = sizeof(float);
      break;
    }
    case DType::Float16:
    case DType::BFloat16: {
      const float f = static_cast<float>(value);
      const uint16_t h = dtype == DType::Float16 ? F32ToF16(f) : F32ToBF16(f);
      std::memcpy(raw, &h, sizeof(h));
      bytes = sizeof(uint16_t);
      break;
    }
    default:
      throw Error(ErrorCode::Internal, op, "not a floating storage format");
  }
  Copy(output, raw, bytes);
  FinishMethod(op);
}

// `input`, or a device copy of it (held by `copy`) when it overlaps the output that a kernel writes
// while other threads still read the input. `exactAliasSafe`: input == output (same extent) is
// fine because every element is read only by the thread that writes it.
const void* Unaliased(const void* input, size_t bytes, const void* output, size_t outBytes,
                      bool exactAliasSafe, std::optional<DeviceScratch>& copy) {
  if (!Overlaps(input, bytes, output, outBytes)) return input;
  if (exactAliasSafe && input == output && bytes == outBytes) return input;
  copy.emplace(bytes);
  Copy(copy->Get(), input, bytes);
  return copy->Get();
}

void ReleaseAll(std::initializer_list<std::optional<DeviceScratch>*> copies) {
  for (std::optional<DeviceScratch>* c : copies) {
    if (c->has_value()) (*c)->Release();
  }
}

// ---- First failing positions (device-side validation) -----------------------------------------

constexpr int kSlots = 4;
constexpr unsigned long long kNone = ~0ULL;
using Slots = std::array<int64_t, kSlots>;

// slots[k] = the smallest i whose check sets bit k (left at kNone when there is none).
template <class Check>
__global__ void FirstFailKernel(Check check, int64_t n, unsigned long long* slots) {
  BP_CUDA_GRID_STRIDE(i, n) {
    const unsigned mask = check(i);
    if (mask != 0) {
      for (int k = 0; k < kSlots; ++k) {
        if ((mask >> k) & 1u) atomicMin(&slots[k], static_cast<unsigned long long>(i));
      }
    }
  }
}

// Runs check over [0, n) on the device; per bit k the first failing i, or -1. Waits for the stream.
template <class Check>
Slots FirstFailures(std::string_view op, const Check& check, int64_t n) {
  Slots result;
  result.fill(-1);
  if (n <= 0) return result;
  unsigned long long host[kSlots];
  DeviceScratch scratch(sizeof(host));
  auto* slots = scratch.As<unsigned long long>();
  Fill(slots, 0xFF, sizeof(host));
  FirstFailKernel<Check><<<GridFor(n), kThreads, 0, Stream()>>>(check, n, slots);
  Copy(host, slots, sizeof(host));
  scratch.Release();
  FinishMethod(op);
  for (int k = 0; k < kSlots; ++k) {
    result[static_cast<size_t>(k)] = host[k] == kNone ? -1 : static_cast<int64_t>(host[k]);
  }
  return result;
}

// bit 0: not finite; bit 1: smaller than its predecessor (event times: sorted non-decreasing).
template <class S>
struct FiniteSortedCheck {
  const void* data;
  __device__ unsigned operator()(int64_t i) const {
    const double v = LdD<S>(data, i);
    unsigned mask = isfinite(v) ? 0u : 1u;
    if (i > 0 && v < LdD<S>(data, i - 1)) mask |= 2u;
    return mask;
  }
};

// bit 0: not finite; bit 1: < 0.
template <class S>
struct FiniteNonNegativeCheck {
  const void* data;
  __device__ unsigned operator()(int64_t i) const {
    const double v = LdD<S>(data, i);
    unsigned mask = isfinite(v) ? 0u : 1u;
    if (v < 0.0) mask |= 2u;
    return mask;
  }
};

// bit k: element i of array k (i < count[k]) is not finite or < 0 (probabilities, precisions).
template <class S>
struct NonNegativeCheck {
  const void* data[3];
  int64_t count[3];
  __device__ unsigned operator()(int64_t i) const {
    unsigned mask = 0;
    for (int k = 0; k < 3; ++k) {
      if (i < count[k]) {
        const double v = LdD<S>(data[k], i);
        if (!isfinite(v) || v < 0.0) mask |= 1u << k;
      }
    }
    return mask;
  }
};

// The reference's ReadFinite failure for element i of `arg`.
[[noreturn]] void ThrowNotFinite(std::string_view op, std::string_view arg, const void* data,
                                 int64_t i, DType dtype) {
  const double v = ReadFloatElement(op, data, i, dtype);
  ThrowInvalidArgument(op, arg, "finite", Format("{}[{}] = {}", arg, static_cast<size_t>(i), v));
}

// The active-inference references' ReadNonNegative failure for element i of `arg`.
[[noreturn]] void ThrowNotNonNegative(std::string_view op, std::string_view arg, const void* data,
                                      int64_t i, DType dtype) {
  const double v = ReadFloatElement(op, data, i, dtype);
  ThrowInvalidArgument(op, arg, "finite and >= 0",
                       Format("{}[{}] = {}", arg, static_cast<size_t>(i), v));
}

// ReadFinite: every element finite.
template <class S>
void CheckFiniteValues(std::string_view op, std::string_view arg, const void* data, int64_t count,
                       DType dtype) {
  const Slots bad = FirstFailures(op, FiniteSortedCheck<S>{data}, count);
  if (bad[0] >= 0) ThrowNotFinite(op, arg, data, bad[0], dtype);
}

// ReadEventTimes: every time finite, then sorted non-decreasing (ties allowed).
template <class S>
void CheckEventTimes(std::string_view op, const void* data, int64_t count, DType dtype) {
  const Slots bad = FirstFailures(op, FiniteSortedCheck<S>{data}, count);
  if (bad[0] >= 0) ThrowNotFinite(op, "eventTimes", data, bad[0], dtype);
  if (bad[1] >= 0) {
    const int64_t i = bad[1];
    const double v = ReadFloatElement(op, data, i, dtype);
    const double previous = ReadFloatElement(op, data, i - 1, dtype);
    ThrowInvalidArgument(op, "eventTimes", "sorted non-decreasing",
                         Format("eventTimes[{}] = {} < eventTimes[{}] = {}", static_cast<size_t>(i),
                                v, static_cast<size_t>(i - 1), previous));
  }
}

// ---- Block reductions ------------------------------------------------------------------------

// Op: Acc, Identity(), Element(i), Combine(x, y).
template <class Op>
__global__ void ReducePartialsKernel(Op op, int64_t n, typename Op::Acc* partials) {
  typename Op::Acc acc = op.Identity();
  BP_CUDA_GRID_STRIDE(i, n) { acc = op.Combine(acc, op.Element(i)); }
  acc = BlockReduce(acc, op);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class Op>
__global__ void ReduceFinalKernel(Op op, const typename Op::Acc* partials, int64_t n,
                                  typename Op::Acc* result) {
  typename Op::Acc acc = op.Identity();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = op.Combine(acc, partials[i]);
  acc = BlockReduce(acc, op);
  if (threadIdx.x == 0) *result = acc;
}

constexpr int64_t kMaxReduceBlocks = 1024;

// The reduction of n > 0 elements on the device (a fixed grid for n, so the result is the same on
// every run), read back to the host. Waits for the stream.
template <class Op>
typename Op::Acc Reduce(std::string_view name, const Op& op, int64_t n) {
  using Acc = typename Op::Acc;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > kMaxReduceBlocks) blocks = kMaxReduceBlocks;
  const size_t partialBytes = (static_cast<size_t>(blocks) * sizeof(Acc) + 15) / 16 * 16;
  DeviceScratch scratch(partialBytes + sizeof(Acc));
  auto* partials = scratch.As<Acc>();
  auto* result = reinterpret_cast<Acc*>(static_cast<char*>(scratch.Get()) + partialBytes);
  ReducePartialsKernel<Op>
      <<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(op, n, partials);
  ReduceFinalKernel<Op><<<1, kThreads, 0, Stream()>>>(op, partials, blocks, result);
  Acc host{};
  Copy(&host, result, sizeof(Acc));
  scratch.Release();
  FinishMethod(name);
  return host;
}

// Up to three f64 sums at once; Term(i) gives element i's three terms.
struct Sums {
  double v[3];
};

template <class Term>
struct SumsOp {
  using Acc = Sums;
  Term term;
  __device__ Acc Identity() const { return Sums{{0.0, 0.0, 0.0}}; }
  __device__ Acc Element(int64_t i) const { return term(i); }
  __device__ Acc Combine(Acc x, Acc y) const {
    return Sums{{Add(x.v[0], y.v[0]), Add(x.v[1], y.v[1]), Add(x.v[2], y.v[2])}};
  }
};

template <class Term>
Sums SumOnDevice(std::string_view name, const Term& term, int64_t n) {
  if (n <= 0) return Sums{{0.0, 0.0, 0.0}};
  return Reduce(name, SumsOp<Term>{term}, n);
}

// ==== Hawkes =====================================================================================
namespace hawkes {

// A float scalar parameter that must be finite and >= 0 (strict: > 0).
double CheckParam(std::string_view op, std::string_view arg, float value, bool strict) {
  CheckFinite(op, arg, value);
  if (strict ? !(value > 0.0f) : !(value >= 0.0f)) {
    ThrowInvalidArgument(op, arg, strict ? "> 0" : ">= 0", Format("{}", value));
  }
  return static_cast<double>(value);
}

// output[q] = m + a * sum_{t_j < query[q]} exp(-b (query[q] - t_j)), summed in j order (the events
// strictly before the query are a prefix of the sorted times).
template <class S>
__global__ void IntensityKernel(const void* events, const void* queries, void* output,
                                int64_t eventCount, int64_t queryCount, double m, double a,
                                double b) {
  BP_CUDA_GRID_STRIDE(q, queryCount) {
    const double t = LdD<S>(queries, q);
    double sum = 0.0;
    for (int64_t j = 0; j < eventCount; ++j) {
      const double tj = LdD<S>(events, j);
      if (!(tj < t)) break;
      sum = Add(sum, exp(Mul(-b, Sub(t, tj))));
    }
    StD<S>(output, q, Add(m, Mul(a, sum)));
  }
}

void HawkesIntensity(BP_PARAMS_HawkesIntensity) {
  constexpr std::string_view op = "Hawkes.HawkesIntensity";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "eventCount", eventCount);
  CheckNonNegative(op, "queryCount", queryCount);
  CheckPointer(op, "eventTimes", eventTimes, eventCount);
  CheckPointer(op, "queryTimes", queryTimes, queryCount);
  CheckPointer(op, "output", output, queryCount);
  const double m = CheckParam(op, "mu", mu, /*strict=*/false);
  const double a = CheckParam(op, "alpha", alpha, /*strict=*/false);
  const double b = CheckParam(op, "beta", beta, /*strict=*/true);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    CheckEventTimes<S>(op, eventTimes, eventCount, dtype);
    CheckFiniteValues<S>(op, "queryTimes", queryTimes, queryCount, dtype);
    if (queryCount == 0) return;
    // Query q is read and written by one thread (output may alias queryTimes); the events are read
    // by every thread, so they are copied first if the output overlaps them.
    std::optional<DeviceScratch> eventCopy, queryCopy;
    const size_t outBytes = DTypeStorageBytes(dtype, queryCount);
    const void* events = Unaliased(eventTimes, DTypeStorageBytes(dtype, eventCount), output,
                                   outBytes, false, eventCopy);
    const void* queries = Unaliased(queryTimes, outBytes, output, outBytes, true, queryCopy);
    IntensityKernel<S><<<GridFor(queryCount), kThreads, 0, Stream()>>>(
        events, queries, output, eventCount, queryCount, m, a, b);
    ReleaseAll({&eventCopy, &queryCopy});
    FinishMethod(op);
  });
}

// K[i][j] = a exp(-b (t_i - t_j)) when j < i and t_j < t_i, else 0.
template <class S>
__global__ void KernelMatrixKernel(const void* events, void* output, int64_t eventCount,
                                   int64_t cells, double a, double b) {
  BP_CUDA_GRID_STRIDE(c, cells) {
    const int64_t i = c / eventCount;
    const int64_t j = c - i * eventCount;
    const double ti = LdD<S>(events, i);
    const double tj = LdD<S>(events, j);
    const double k = (j < i && tj < ti) ? Mul(a, exp(Mul(-b, Sub(ti, tj)))) : 0.0;
    StD<S>(output, c, k);
  }
}

void HawkesKernelMatrix(BP_PARAMS_HawkesKernelMatrix) {
  constexpr std::string_view op = "Hawkes.HawkesKernelMatrix";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "eventCount", eventCount);
  const int64_t cells = CheckedProduct(op, "eventCount", eventCount, eventCount);
  CheckPointer(op, "eventTimes", eventTimes, eventCount);
  CheckPointer(op, "output", output, cells);
  const double a = CheckParam(op, "alpha", alpha, /*strict=*/false);
  const double b = CheckParam(op, "beta", beta, /*strict=*/true);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    CheckEventTimes<S>(op, eventTimes, eventCount, dtype);
    if (cells == 0) return;
    std::optional<DeviceScratch> eventCopy;
    const void* events = Unaliased(eventTimes, DTypeStorageBytes(dtype, eventCount), output,
                                   DTypeStorageBytes(dtype, cells), false, eventCopy);
    KernelMatrixKernel<S>
        <<<GridFor(cells), kThreads, 0, Stream()>>>(events, output, eventCount, cells, a, b);
    ReleaseAll({&eventCopy});
    FinishMethod(op);
  });
}

// buf[i] (i > 0) = exp(-b (t_i - t_{i-1})) where t_i starts a new group of tied times (t_{i-1} is
// then the previous group's time), -1 for a tie.
template <class S>
__global__ void GroupDecayKernel(const void* events, int64_t eventCount, double b, double* buf) {
  BP_CUDA_GRID_STRIDE(i, eventCount) {
    double decay = 0.0;
    if (i > 0) {
      const double ti = LdD<S>(events, i);
      const double previous = LdD<S>(events, i - 1);
      decay = ti > previous ? exp(Mul(-b, Sub(ti, previous))) : -1.0;
    }
    buf[i] = decay;
  }
}

// The reference's O(E) recursion (sequential by nature, one thread): buf[i] becomes B_i, the
// decayed kicks of the events strictly before t_i.
__global__ void ExcitationKernel(double* buf, int64_t eventCount) {
  double excitation = 0.0;
  double groupSize = 0.0;
  for (int64_t i = 0; i < eventCount; ++i) {
    const double decay = buf[i];
    if (i == 0) {
      groupSize = 1.0;
    } else if (decay >= 0.0) {
      excitation = Mul(decay, Add(excitation, groupSize));
      groupSize = 1.0;
    } else {
      groupSize = Add(groupSize, 1.0);
    }
    buf[i] = excitation;
  }
}

// (ln(m + a B_i), -expm1(-b (T - t_i)), 0).
template <class S>
struct LogLikelihoodTerm {
  const void* events;
  const double* excitation;
  double m, a, b, total;
  __device__ Sums operator()(int64_t i) const {
    const double t = LdD<S>(events, i);
    return Sums{{log(Add(m, Mul(a, excitation[i]))), -expm1(Mul(-b, Sub(total, t))), 0.0}};
  }
};

void HawkesLogLikelihood(BP_PARAMS_HawkesLogLikelihood) {
  constexpr std::string_view op = "Hawkes.HawkesLogLikelihood";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "eventCount", eventCount);
  CheckPointer(op, "eventTimes", eventTimes, eventCount);
  CheckPointer(op, "output", output, 1);
  const double total = CheckParam(op, "totalTime", totalTime, /*strict=*/false);
  const double m = CheckParam(op, "mu", mu, /*strict=*/true);
  const double a = CheckParam(op, "alpha", alpha, /*strict=*/false);
  const double b = CheckParam(op, "beta", beta, /*strict=*/true);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    CheckEventTimes<S>(op, eventTimes, eventCount, dtype);
    double sumLog = 0.0;
    double sumDecay = 0.0;
    if (eventCount > 0) {
      const double front = ReadFloatElement(op, eventTimes, 0, dtype);
      if (front < 0.0) {
        ThrowInvalidArgument(op, "eventTimes", "within [0, totalTime]",
                             Format("eventTimes[0] = {}", front));
      }
      const double back = ReadFloatElement(op, eventTimes, eventCount - 1, dtype);
      if (back > total) {
        ThrowInvalidArgument(
            op, "eventTimes", Format("within [0, totalTime = {}]", total),
            Format("eventTimes[{}] = {}", static_cast<size_t>(eventCount - 1), back));
      }
      DeviceScratch buf(static_cast<size_t>(eventCount) * sizeof(double));
      GroupDecayKernel<S><<<GridFor(eventCount), kThreads, 0, Stream()>>>(eventTimes, eventCount, b,
                                                                          buf.As<double>());
      ExcitationKernel<<<1, 1, 0, Stream()>>>(buf.As<double>(), eventCount);
      const Sums sums = SumOnDevice(
          op, LogLikelihoodTerm<S>{eventTimes, buf.As<double>(), m, a, b, total}, eventCount);
      buf.Release();
      sumLog = sums.v[0];
      sumDecay = sums.v[1];
    }
    const double compensator = m * total + (a / b) * sumDecay;
    StoreScalar(op, output, dtype, sumLog - compensator);
  });
}

// The largest entry of a table whose entries are finite and >= 0.
template <class S>
struct MaxOp {
  using Acc = double;
  const void* data;
  __device__ Acc Identity() const { return 0.0; }
  __device__ Acc Element(int64_t i) const { return LdD<S>(data, i); }
  __device__ Acc Combine(Acc x, Acc y) const { return y > x ? y : x; }
};

// px[x] = sum_y p[x][y] and py[y] = sum_x p[x][y] on the scaled entries, in index order.
template <class S>
__global__ void RowSumsKernel(const void* joint, double* px, int64_t xCount, int64_t yCount,
                              int exponent) {
  BP_CUDA_GRID_STRIDE(x, xCount) {
    double sum = 0.0;
    for (int64_t y = 0; y < yCount; ++y)
      sum = Add(sum, ldexp(LdD<S>(joint, x * yCount + y), -exponent));
    px[x] = sum;
  }
}

template <class S>
__global__ void ColumnSumsKernel(const void* joint, double* py, int64_t xCount, int64_t yCount,
                                 int exponent) {
  BP_CUDA_GRID_STRIDE(y, yCount) {
    double sum = 0.0;
    for (int64_t x = 0; x < xCount; ++x)
      sum = Add(sum, ldexp(LdD<S>(joint, x * yCount + y), -exponent));
    py[y] = sum;
  }
}

// (scaled entry, 0, 0): the total N.
template <class S>
struct TotalTerm {
  const void* joint;
  int exponent;
  __device__ Sums operator()(int64_t i) const {
    return Sums{{ldexp(LdD<S>(joint, i), -exponent), 0.0, 0.0}};
  }
};

// ((v / N) (ln v + ln N - ln px - ln py), 0, 0) over v != 0.
template <class S>
struct InformationTerm {
  const void* joint;
  const double* px;
  const double* py;
  int64_t yCount;
  int exponent;
  double n, logN;
  __device__ Sums operator()(int64_t i) const {
    const double v = ldexp(LdD<S>(joint, i), -exponent);
    if (v == 0.0) return Sums{{0.0, 0.0, 0.0}};
    const int64_t x = i / yCount;
    const int64_t y = i - x * yCount;
    const double term = Mul(Div(v, n), Sub(Sub(Add(log(v), logN), log(px[x])), log(py[y])));
    return Sums{{term, 0.0, 0.0}};
  }
};

void MarkovMutualInformation(BP_PARAMS_MarkovMutualInformation) {
  constexpr std::string_view op = "Hawkes.MarkovMutualInformation";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "xCount", xCount);
  CheckNonNegative(op, "yCount", yCount);
  const int64_t cells = CheckedProduct(op, "yCount", xCount, yCount);
  CheckPointer(op, "joint", joint, cells);
  CheckPointer(op, "output", output, 1);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const Slots bad = FirstFailures(op, FiniteNonNegativeCheck<S>{joint}, cells);
    if (bad[0] >= 0) ThrowNotFinite(op, "joint", joint, bad[0], dtype);
    if (bad[1] >= 0) {
      const double v = ReadFloatElement(op, joint, bad[1], dtype);
      ThrowInvalidArgument(op, "joint", ">= 0 everywhere (a probability table)",
                           Format("joint[{}][{}] = {}", bad[1] / yCount, bad[1] % yCount, v));
    }
    if (cells == 0) {
      StoreScalar(op, output, dtype, 0.0);
      return;
    }
    const double largest = Reduce(op, MaxOp<S>{joint}, cells);
    if (largest == 0.0) {
      ThrowInvalidArgument(op, "joint", "a table with a positive total", "all zeros");
    }
    // Scale by a power of two (exact) so that the total cannot overflow.
    int exponent = 0;
    std::frexp(largest, &exponent);
    DeviceScratch marginals(static_cast<size_t>(xCount + yCount) * sizeof(double));
    double* px = marginals.As<double>();
    double* py = px + xCount;
    RowSumsKernel<S>
        <<<GridFor(xCount), kThreads, 0, Stream()>>>(joint, px, xCount, yCount, exponent);
    ColumnSumsKernel<S>
        <<<GridFor(yCount), kThreads, 0, Stream()>>>(joint, py, xCount, yCount, exponent);
    const double n = SumOnDevice(op, TotalTerm<S>{joint, exponent}, cells).v[0];
    const double logN = std::log(n);
    const double info =
        SumOnDevice(op, InformationTerm<S>{joint, px, py, yCount, exponent, n, logN}, cells).v[0];
    marginals.Release();
    StoreScalar(op, output, dtype, std::max(info, 0.0));
  });
}

// first[v] = the first k with internal[k] == v (ids in range); slots[0] = the first k out of range.
__global__ void InternalFirstKernel(const int32_t* internal, int64_t internalCount,
                                    int64_t nodeCount, unsigned long long* first,
                                    unsigned long long* slots) {
  BP_CUDA_GRID_STRIDE(k, internalCount) {
    const int32_t id = internal[k];
    if (id < 0 || id >= nodeCount) {
      atomicMin(&slots[0], static_cast<unsigned long long>(k));
    } else {
      atomicMin(&first[id], static_cast<unsigned long long>(k));
    }
  }
}

// slots[1] = the first k whose (in-range) id already occurred at an earlier position.
__global__ void InternalRepeatKernel(const int32_t* internal, int64_t internalCount,
                                     int64_t nodeCount, const unsigned long long* first,
                                     unsigned long long* slots) {
  BP_CUDA_GRID_STRIDE(k, internalCount) {
    const int32_t id = internal[k];
    if (id >= 0 && id < nodeCount && first[id] < static_cast<unsigned long long>(k)) {
      atomicMin(&slots[1], static_cast<unsigned long long>(k));
    }
  }
}

// child[v] / parent[v] for v not in I: some u in I has u -> v / v -> u (u != v).
template <class S>
__global__ void NeighbourKernel(const void* adjacency, const int32_t* internal,
                                int64_t internalCount, int64_t nodeCount,
                                const unsigned long long* first, unsigned char* child,
                                unsigned char* parent) {
  BP_CUDA_GRID_STRIDE(v, nodeCount) {
    unsigned char isChild = 0;
    unsigned char isParent = 0;
    if (first[v] == kNone) {
      for (int64_t k = 0; k < internalCount; ++k) {
        const int64_t u = internal[k];
        if (u == v) continue;
        if (LdD<S>(adjacency, u * nodeCount + v) != 0.0) isChild = 1;
        if (LdD<S>(adjacency, v * nodeCount + u) != 0.0) isParent = 1;
      }
    }
    child[v] = isChild;
    parent[v] = isParent;
  }
}

// 0 internal, 2 child of I, 1 parent of I or co-parent of a child of I, 3 the rest.
template <class S>
__global__ void LabelKernel(const void* adjacency, int64_t nodeCount,
                            const unsigned long long* first, const unsigned char* child,
                            const unsigned char* parent, int32_t* output) {
  BP_CUDA_GRID_STRIDE(v, nodeCount) {
    int32_t label = 3;
    if (first[v] != kNone) {
      label = 0;
    } else if (child[v] != 0) {
      label = 2;
    } else if (parent[v] != 0) {
      label = 1;
    } else {
      for (int64_t c = 0; c < nodeCount; ++c) {
        if (c != v && child[c] != 0 && LdD<S>(adjacency, v * nodeCount + c) != 0.0) {
          label = 1;
          break;
        }
      }
    }
    output[v] = label;
  }
}

template <class S>
struct FiniteCheck {
  const void* data;
  __device__ unsigned operator()(int64_t i) const { return isfinite(LdD<S>(data, i)) ? 0u : 1u; }
};

void MarkovBlanketPartition(BP_PARAMS_MarkovBlanketPartition) {
  constexpr std::string_view op = "Hawkes.MarkovBlanketPartition";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "nodeCount", nodeCount);
  CheckNonNegative(op, "internalCount", internalCount);
  const int64_t cells = CheckedProduct(op, "nodeCount", nodeCount, nodeCount);
  CheckPointer(op, "adjacency", adjacency, cells);
  CheckPointer(op, "internal", internal, internalCount);
  CheckPointer(op, "output", output, nodeCount);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t n = static_cast<size_t>(nodeCount);
    // first[n] (u64), then the two error slots, then child[n] and parent[n] (bytes).
    const size_t firstBytes = (n + 2) * sizeof(unsigned long long);
    DeviceScratch scratch(firstBytes + 2 * n);
    auto* first = scratch.As<unsigned long long>();
    unsigned long long* slots = first + n;
    auto* child = static_cast<unsigned char*>(scratch.Get()) + firstBytes;
    unsigned char* parent = child + n;
    Fill(first, 0xFF, firstBytes);
    if (internalCount > 0) {
      InternalFirstKernel<<<GridFor(internalCount), kThreads, 0, Stream()>>>(
          internal, internalCount, nodeCount, first, slots);
      InternalRepeatKernel<<<GridFor(internalCount), kThreads, 0, Stream()>>>(
          internal, internalCount, nodeCount, first, slots);
      unsigned long long host[2] = {kNone, kNone};
      Copy(host, slots, sizeof(host));
      FinishMethod(op);
      const unsigned long long badK = std::min(host[0], host[1]);
      if (badK != kNone) {
        const auto k = static_cast<int64_t>(badK);
        const int32_t id = ReadInteger(op, internal, k);
        if (id < 0 || id >= nodeCount) {
          ThrowInvalidArgument(op, "internal", Format("node ids in [0, {})", nodeCount),
                               Format("internal[{}] = {}", k, id));
        }
        const auto seen = static_cast<int64_t>(ReadInteger(op, first, id));
        ThrowInvalidArgument(op, "internal", "distinct node ids",
                             Format("internal[{}] = {} repeats internal[{}]", k, id, seen));
      }
    }
    const Slots bad = FirstFailures(op, FiniteCheck<S>{adjacency}, cells);
    if (bad[0] >= 0) {
      const double v = ReadFloatElement(op, adjacency, bad[0], dtype);
      const auto i = static_cast<size_t>(bad[0]);
      ThrowInvalidArgument(op, "adjacency", "finite",
                           Format("adjacency[{}][{}] = {}", i / n, i % n, v));
    }
    if (nodeCount > 0) {
      std::optional<DeviceScratch> adjacencyCopy;
      const void* adj = Unaliased(adjacency, DTypeStorageBytes(dtype, cells), output,
                                  n * sizeof(int32_t), false, adjacencyCopy);
      NeighbourKernel<S><<<GridFor(nodeCount), kThreads, 0, Stream()>>>(
          adj, internal, internalCount, nodeCount, first, child, parent);
      LabelKernel<S><<<GridFor(nodeCount), kThreads, 0, Stream()>>>(adj, nodeCount, first, child,
                                                                    parent, output);
      ReleaseAll({&adjacencyCopy});
    }
    scratch.Release();
    FinishMethod(op);
  });
}

}  // namespace hawkes

// ==== PointProcess ===============================================================================
namespace point_process {

constexpr std::string_view kOp = "PointProcess.HawkesSimulate";
constexpr double kMaxF16 = 65504.0;

// A device copy of include/backplane/random.hpp's Philox4x32-10 and PhiloxUniformDouble.
__device__ double PhiloxUniformDouble(uint64_t seed, uint64_t stream, uint64_t index) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  const uint64_t bits = (static_cast<uint64_t>(c0) << 21) ^ (static_cast<uint64_t>(c1) >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

// Ogata thinning, sequential by nature (one thread): events[0..n) and status = {n, overflowed}.
__global__ void SimulateKernel(uint64_t seed, double mu, double alpha, double beta, double horizon,
                               int64_t maxEvents, int64_t limit, double* events,
                               long long* status) {
  double t = 0.0;
  double excitation = 0.0;
  int64_t count = 0;
  long long overflowed = 0;
  for (uint64_t k = 0;; ++k) {
    const double bound = Add(mu, excitation);
    const double uWait = PhiloxUniformDouble(seed, 0, 2 * k);
    const double uAccept = PhiloxUniformDouble(seed, 0, 2 * k + 1);
    const double wait = Div(-log1p(-uWait), bound);
    const double candidate = Add(t, wait);
    if (!(candidate < horizon)) break;
    excitation = Mul(excitation, exp(Mul(-beta, wait)));
    t = candidate;
    const double intensity = Add(mu, excitation);
    if (Mul(uAccept, bound) < intensity) {
      if (count == limit) {
        overflowed = 1;
        break;
      }
      events[count++] = t;
      excitation = Add(excitation, alpha);
      if (maxEvents > 0 && count == maxEvents) break;
    }
  }
  status[0] = count;
  status[1] = overflowed;
}

template <class S>
__global__ void StoreTimesKernel(const double* events, void* times, int64_t count) {
  BP_CUDA_GRID_STRIDE(i, count) { StD<S>(times, i, events[i]); }
}

// *eventCount = count. The graph lowering passes host memory (a local); a device pointer is
// written with a copy.
void WriteCount(int64_t* eventCount, int64_t count) {
  cudaPointerAttributes attributes{};
  CheckCuda(static_cast<int>(cudaPointerGetAttributes(&attributes, eventCount)),
            "cudaPointerGetAttributes");
  if (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged) {
    Copy(eventCount, &count, sizeof(count));
    FinishMethod(kOp);
  } else {
    *eventCount = count;
  }
}

// A finite float parameter that must be > 0 (strict) or >= 0.
void CheckParam(std::string_view arg, float value, bool strict) {
  CheckFinite(kOp, arg, value);
  if (strict ? !(value > 0.0f) : !(value >= 0.0f)) {
    ThrowInvalidArgument(kOp, arg, strict ? "> 0" : ">= 0", Format("{}", value));
  }
}

void HawkesSimulate(BP_PARAMS_HawkesSimulate) {
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "capacity", capacity);
  CheckPointer(kOp, "times", times, capacity);
  CheckPointer(kOp, "eventCount", eventCount, 1);
  CheckParam("config.Mu", config.Mu, true);
  CheckParam("config.Alpha", config.Alpha, false);
  CheckParam("config.Beta", config.Beta, true);
  CheckParam("config.Horizon", config.Horizon, false);
  CheckNonNegative(kOp, "config.MaxEvents", config.MaxEvents);
  if (dtype == DType::Float16 && static_cast<double>(config.Horizon) > kMaxF16) {
    ThrowInvalidArgument(kOp, "config.Horizon", "<= 65504 (the largest f16) for f16 times",
                         Format("{}", config.Horizon));
  }
  if (config.MaxEvents > capacity) {
    ThrowInvalidArgument(kOp, "config.MaxEvents", Format("<= capacity ({})", capacity),
                         Format("{}", config.MaxEvents));
  }
  const double mu = config.Mu, alpha = config.Alpha, beta = config.Beta;
  const double horizon = config.Horizon;
  if (config.MaxEvents == 0 && alpha >= beta) {
    ThrowInvalidArgument(
        kOp, "config.Alpha",
        "< config.Beta (branching ratio alpha/beta < 1) when config.MaxEvents "
        "is 0 (no maximum)",
        Format("alpha {} with beta {} (alpha/beta = {})", config.Alpha, config.Beta, alpha / beta));
  }
  const int64_t limit = config.MaxEvents > 0 ? config.MaxEvents : capacity;

  // The whole simulation runs into a temporary: nothing is written when it overflows capacity.
  const size_t statusBytes = 2 * sizeof(long long);
  DeviceScratch scratch(statusBytes + static_cast<size_t>(limit) * sizeof(double));
  auto* status = scratch.As<long long>();
  auto* events = reinterpret_cast<double*>(static_cast<char*>(scratch.Get()) + statusBytes);
  SimulateKernel<<<1, 1, 0, Stream()>>>(config.Seed, mu, alpha, beta, horizon, config.MaxEvents,
                                        limit, events, status);
  long long host[2] = {0, 0};
  Copy(host, status, sizeof(host));
  FinishMethod(kOp);
  if (host[1] != 0) {
    // Only reachable without a maximum: one more event than the output can hold.
    ThrowInvalidArgument(kOp, "capacity",
                         "at least the number of simulated events (config.MaxEvents is 0)",
                         Format("{}, but the simulation produced more events", capacity));
  }
  const int64_t count = host[0];
  if (count > 0) {
    ByFloatDType(kOp, dtype, [&](auto storage) {
      using S = decltype(storage);
      StoreTimesKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(events, times, count);
    });
  }
  scratch.Release();
  FinishMethod(kOp);
  WriteCount(eventCount, count);
}

}  // namespace point_process

// ==== ActiveInference ============================================================================
namespace active_inference {

// (q (ln q - ln p - ln L), 0, 0) over q != 0.
template <class S>
struct FreeEnergyTerm {
  const void* likelihood;
  const void* posterior;
  const void* prior;
  __device__ Sums operator()(int64_t i) const {
    const double q = LdD<S>(posterior, i);
    if (q == 0.0) return Sums{{0.0, 0.0, 0.0}};
    const double p = LdD<S>(prior, i);
    const double l = LdD<S>(likelihood, i);
    return Sums{{Mul(q, Sub(Sub(log(q), log(p)), log(l))), 0.0, 0.0}};
  }
};

void FreeEnergy(BP_PARAMS_FreeEnergy) {
  constexpr std::string_view op = "ActiveInference.FreeEnergy";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "likelihood", likelihood, count);
  CheckPointer(op, "posterior", posterior, count);
  CheckPointer(op, "prior", prior, count);
  CheckPointer(op, "output", output, 1);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const Slots bad = FirstFailures(
        op, NonNegativeCheck<S>{{likelihood, posterior, prior}, {count, count, count}}, count);
    if (bad[0] >= 0) ThrowNotNonNegative(op, "likelihood", likelihood, bad[0], dtype);
    if (bad[1] >= 0) ThrowNotNonNegative(op, "posterior", posterior, bad[1], dtype);
    if (bad[2] >= 0) ThrowNotNonNegative(op, "prior", prior, bad[2], dtype);
    const double f = SumOnDevice(op, FreeEnergyTerm<S>{likelihood, posterior, prior}, count).v[0];
    StoreScalar(op, output, dtype, f);
  });
}

// (Q(o) ln C(o) over Q(o) > 0, Q(s) ln Q(s) over Q(s) > 0, 0).
template <class S>
struct ExpectedFreeEnergyTerm {
  const void* predictedObs;
  const void* preferredObs;
  const void* predictedState;
  int64_t obsCount, stateCount;
  __device__ Sums operator()(int64_t i) const {
    double cost = 0.0;
    double entropy = 0.0;
    if (i < obsCount) {
      const double qo = LdD<S>(predictedObs, i);
      if (qo > 0.0) cost = Mul(qo, log(LdD<S>(preferredObs, i)));
    }
    if (i < stateCount) {
      const double qs = LdD<S>(predictedState, i);
      if (qs > 0.0) entropy = Mul(qs, log(qs));
    }
    return Sums{{cost, entropy, 0.0}};
  }
};

void ExpectedFreeEnergy(BP_PARAMS_ExpectedFreeEnergy) {
  constexpr std::string_view op = "ActiveInference.ExpectedFreeEnergy";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "obsCount", obsCount);
  CheckNonNegative(op, "stateCount", stateCount);
  CheckPointer(op, "predictedObs", predictedObs, obsCount);
  CheckPointer(op, "preferredObs", preferredObs, obsCount);
  CheckPointer(op, "predictedState", predictedState, stateCount);
  CheckPointer(op, "output", output, 1);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const int64_t n = std::max(obsCount, stateCount);
    const Slots bad =
        FirstFailures(op,
                      NonNegativeCheck<S>{{predictedObs, preferredObs, predictedState},
                                          {obsCount, obsCount, stateCount}},
                      n);
    if (bad[0] >= 0) ThrowNotNonNegative(op, "predictedObs", predictedObs, bad[0], dtype);
    if (bad[1] >= 0) ThrowNotNonNegative(op, "preferredObs", preferredObs, bad[1], dtype);
    if (bad[2] >= 0) ThrowNotNonNegative(op, "predictedState", predictedState, bad[2], dtype);
    const Sums sums = SumOnDevice(
        op,
        ExpectedFreeEnergyTerm<S>{predictedObs, preferredObs, predictedState, obsCount, stateCount},
        n);
    const double expectedCost = -sums.v[0];
    const double stateEntropy = -sums.v[1];
    StoreScalar(op, output, dtype, expectedCost - stateEntropy);
  });
}

// frexp(L) frexp(p) as (mantissa in [0.25, 1), exponent); false when L or p is 0.
__device__ __forceinline__ bool Product(double l, double p, double* mantissa, int* exponent) {
  if (l == 0.0 || p == 0.0) return false;
  int el = 0;
  int ep = 0;
  *mantissa = Mul(frexp(l, &el), frexp(p, &ep));
  *exponent = el + ep;
  return true;
}

// The largest product exponent (INT_MIN when every product is 0).
template <class S>
struct LargestExponentOp {
  using Acc = int;
  const void* likelihood;
  const void* prior;
  __device__ Acc Identity() const { return INT_MIN; }
  __device__ Acc Element(int64_t i) const {
    double mantissa = 0.0;
    int exponent = 0;
    return Product(LdD<S>(likelihood, i), LdD<S>(prior, i), &mantissa, &exponent) ? exponent
                                                                                  : INT_MIN;
  }
  __device__ Acc Combine(Acc x, Acc y) const { return y > x ? y : x; }
};

// The rescaled product L_i p_i 2^-largest (0 for a zero product).
template <class S>
__device__ __forceinline__ double ScaledPosterior(const void* likelihood, const void* prior,
                                                  int64_t i, int largest) {
  double mantissa = 0.0;
  int exponent = 0;
  if (!Product(LdD<S>(likelihood, i), LdD<S>(prior, i), &mantissa, &exponent)) return 0.0;
  return ldexp(mantissa, exponent - largest);
}

template <class S>
struct EvidenceTerm {
  const void* likelihood;
  const void* prior;
  int largest;
  __device__ Sums operator()(int64_t i) const {
    return Sums{{ScaledPosterior<S>(likelihood, prior, i, largest), 0.0, 0.0}};
  }
};

template <class S>
__global__ void PosteriorKernel(const void* likelihood, const void* prior, void* output,
                                int64_t count, int largest, double evidence) {
  BP_CUDA_GRID_STRIDE(i, count) {
    StD<S>(output, i, Div(ScaledPosterior<S>(likelihood, prior, i, largest), evidence));
  }
}

void BeliefUpdate(BP_PARAMS_BinaryOut) {
  constexpr std::string_view op = "ActiveInference.BeliefUpdate";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "likelihood", left, count);
  CheckPointer(op, "prior", right, count);
  CheckPointer(op, "output", output, count);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const Slots bad =
        FirstFailures(op, NonNegativeCheck<S>{{left, right, nullptr}, {count, count, 0}}, count);
    if (bad[0] >= 0) ThrowNotNonNegative(op, "likelihood", left, bad[0], dtype);
    if (bad[1] >= 0) ThrowNotNonNegative(op, "prior", right, bad[1], dtype);
    if (count == 0) return;
    const int largest = Reduce(op, LargestExponentOp<S>{left, right}, count);
    if (largest == INT_MIN) {
      ThrowInvalidArgument(op, "likelihood",
                           "such that the evidence sum(likelihood * prior) is > 0",
                           "likelihood[i] * prior[i] = 0 for every i");
    }
    const double evidence = SumOnDevice(op, EvidenceTerm<S>{left, right, largest}, count).v[0];
    std::optional<DeviceScratch> leftCopy, rightCopy;
    const size_t bytes = DTypeStorageBytes(dtype, count);
    const void* l = Unaliased(left, bytes, output, bytes, true, leftCopy);
    const void* p = Unaliased(right, bytes, output, bytes, true, rightCopy);
    PosteriorKernel<S>
        <<<GridFor(count), kThreads, 0, Stream()>>>(l, p, output, count, largest, evidence);
    ReleaseAll({&leftCopy, &rightCopy});
    FinishMethod(op);
  });
}

template <class T>
struct MulF {
  __device__ T operator()(T a, T b) const { return Mul(a, b); }
};

void PrecisionWeight(BP_PARAMS_BinaryOut) {
  constexpr std::string_view op = "ActiveInference.PrecisionWeight";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "errors", left, count);
  CheckPointer(op, "precision", right, count);
  CheckPointer(op, "output", output, count);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const Slots bad =
        FirstFailures(op, NonNegativeCheck<S>{{right, nullptr, nullptr}, {count, 0, 0}}, count);
    if (bad[0] >= 0) ThrowNotNonNegative(op, "precision", right, bad[0], dtype);
    if (count == 0) return;
    MapBinaryKernel<S>
        <<<GridFor(count), kThreads, 0, Stream()>>>(output, left, right, count, MulF<Compute<S>>{});
    FinishMethod(op);
  });
}

}  // namespace active_inference

// ==== PredictiveCoding ===========================================================================
namespace predictive_coding {

// Validates dtype, the two dimensions and their product; returns outDim * inDim.
int64_t CheckShape(std::string_view op, DType dtype, int64_t outDim, int64_t inDim) {
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "outDim", outDim);
  CheckNonNegative(op, "inDim", inDim);
  int64_t cells = 0;
  if (__builtin_mul_overflow(outDim, inDim, &cells)) {
    ThrowInvalidArgument(op, "inDim", "small enough that outDim * inDim fits in int64",
                         Format("{} x {}", outDim, inDim));
  }
  return cells;
}

double CheckLearningRate(std::string_view op, const PredictiveCodingConfig& config) {
  CheckFinite(op, "config.LearningRate", config.LearningRate);
  return static_cast<double>(config.LearningRate);
}

// output[o] = sum_i W[o][i] s[i], in i order, f64.
template <class S>
__global__ void PredictionKernel(const void* weights, const void* representation, void* output,
                                 int64_t outDim, int64_t inDim) {
  BP_CUDA_GRID_STRIDE(o, outDim) {
    double sum = 0.0;
    for (int64_t i = 0; i < inDim; ++i) {
      sum = Add(sum, Mul(LdD<S>(weights, o * inDim + i), LdD<S>(representation, i)));
    }
    StD<S>(output, o, sum);
  }
}

void Prediction(BP_PARAMS_Prediction) {
  constexpr std::string_view op = "PredictiveCoding.Prediction";
  const int64_t cells = CheckShape(op, dtype, outDim, inDim);
  CheckPointer(op, "weights", weights, cells);
  CheckPointer(op, "representation", representation, inDim);
  CheckPointer(op, "output", output, outDim);
  if (outDim == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    std::optional<DeviceScratch> wCopy, sCopy;
    const size_t outBytes = DTypeStorageBytes(dtype, outDim);
    const void* w =
        Unaliased(weights, DTypeStorageBytes(dtype, cells), output, outBytes, false, wCopy);
    const void* s =
        Unaliased(representation, DTypeStorageBytes(dtype, inDim), output, outBytes, false, sCopy);
    PredictionKernel<S><<<GridFor(outDim), kThreads, 0, Stream()>>>(w, s, output, outDim, inDim);
    ReleaseAll({&wCopy, &sCopy});
    FinishMethod(op);
  });
}

template <class T>
struct SubF {
  __device__ T operator()(T a, T b) const { return Sub(a, b); }
};

void PredictionError(BP_PARAMS_BinaryOut) {
  constexpr std::string_view op = "PredictiveCoding.PredictionError";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "observed", left, count);
  CheckPointer(op, "predicted", right, count);
  CheckPointer(op, "output", output, count);
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    MapBinaryKernel<S>
        <<<GridFor(count), kThreads, 0, Stream()>>>(output, left, right, count, SubF<Compute<S>>{});
  });
  FinishMethod(op);
}

// output[i] = s[i] + lr sum_o W[o][i] e[o], in o order, f64.
template <class S>
__global__ void UpdateRepresentationKernel(const void* weights, const void* representation,
                                           const void* error, void* output, int64_t outDim,
                                           int64_t inDim, double lr) {
  BP_CUDA_GRID_STRIDE(i, inDim) {
    double gradient = 0.0;
    for (int64_t o = 0; o < outDim; ++o) {
      gradient = Add(gradient, Mul(LdD<S>(weights, o * inDim + i), LdD<S>(error, o)));
    }
    StD<S>(output, i, Add(LdD<S>(representation, i), Mul(lr, gradient)));
  }
}

void UpdateRepresentation(BP_PARAMS_PredictiveUpdate) {
  constexpr std::string_view op = "PredictiveCoding.UpdateRepresentation";
  const int64_t cells = CheckShape(op, dtype, outDim, inDim);
  CheckPointer(op, "weights", weights, cells);
  CheckPointer(op, "representation", representation, inDim);
  CheckPointer(op, "predictionError", predictionError, outDim);
  CheckPointer(op, "output", output, inDim);
  const double lr = CheckLearningRate(op, config);
  if (inDim == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    std::optional<DeviceScratch> wCopy, sCopy, eCopy;
    const size_t outBytes = DTypeStorageBytes(dtype, inDim);
    const void* w =
        Unaliased(weights, DTypeStorageBytes(dtype, cells), output, outBytes, false, wCopy);
    const void* s = Unaliased(representation, outBytes, output, outBytes, true, sCopy);
    const void* e = Unaliased(predictionError, DTypeStorageBytes(dtype, outDim), output, outBytes,
                              false, eCopy);
    UpdateRepresentationKernel<S>
        <<<GridFor(inDim), kThreads, 0, Stream()>>>(w, s, e, output, outDim, inDim, lr);
    ReleaseAll({&wCopy, &sCopy, &eCopy});
    FinishMethod(op);
  });
}

// output[o][i] = W[o][i] + (lr e[o]) s[i], f64.
template <class S>
__global__ void UpdateWeightsKernel(const void* weights, const void* representation,
                                    const void* error, void* output, int64_t inDim, int64_t cells,
                                    double lr) {
  BP_CUDA_GRID_STRIDE(k, cells) {
    const int64_t o = k / inDim;
    const int64_t i = k - o * inDim;
    const double step = Mul(lr, LdD<S>(error, o));
    StD<S>(output, k, Add(LdD<S>(weights, k), Mul(step, LdD<S>(representation, i))));
  }
}

void UpdateWeights(BP_PARAMS_PredictiveUpdate) {
  constexpr std::string_view op = "PredictiveCoding.UpdateWeights";
  const int64_t cells = CheckShape(op, dtype, outDim, inDim);
  CheckPointer(op, "weights", weights, cells);
  CheckPointer(op, "representation", representation, inDim);
  CheckPointer(op, "predictionError", predictionError, outDim);
  CheckPointer(op, "output", output, cells);
  const double lr = CheckLearningRate(op, config);
  if (cells == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    std::optional<DeviceScratch> wCopy, sCopy, eCopy;
    const size_t outBytes = DTypeStorageBytes(dtype, cells);
    const void* w = Unaliased(weights, outBytes, output, outBytes, true, wCopy);
    const void* s =
        Unaliased(representation, DTypeStorageBytes(dtype, inDim), output, outBytes, false, sCopy);
    const void* e = Unaliased(predictionError, DTypeStorageBytes(dtype, outDim), output, outBytes,
                              false, eCopy);
    UpdateWeightsKernel<S>
        <<<GridFor(cells), kThreads, 0, Stream()>>>(w, s, e, output, inDim, cells, lr);
    ReleaseAll({&wCopy, &sCopy, &eCopy});
    FinishMethod(op);
  });
}

}  // namespace predictive_coding

// ==== VSA ========================================================================================
namespace vsa {

template <class T>
struct AddF {
  __device__ T operator()(T a, T b) const { return Add(a, b); }
};

// output[i] = fn(left[i], right[i]) in the compute type; output may alias left or right exactly.
template <template <class> class F>
void Elementwise(std::string_view op, const void* left, const void* right, void* output,
                 int64_t count, DType dtype) {
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "left", left, count);
  CheckPointer(op, "right", right, count);
  CheckPointer(op, "output", output, count);
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    MapBinaryKernel<S>
        <<<GridFor(count), kThreads, 0, Stream()>>>(output, left, right, count, F<Compute<S>>{});
  });
  FinishMethod(op);
}

void Bind(BP_PARAMS_BinaryOut) {
  Elementwise<active_inference::MulF>("VSA.Bind", left, right, output, count, dtype);
}

void Bundle(BP_PARAMS_BinaryOut) {
  Elementwise<AddF>("VSA.Bundle", left, right, output, count, dtype);
}

// An unsigned integer of the storage size: elements are moved bit for bit.
template <class S>
using Bits = std::conditional_t<sizeof(S) == 8, unsigned long long,
                                std::conditional_t<sizeof(S) == 4, unsigned int, unsigned short>>;

// output[(i + offset) mod count] = input[i], offset in [0, count).
template <class S>
__global__ void RotateKernel(const void* input, void* output, int64_t count, int64_t offset) {
  const auto* src = static_cast<const Bits<S>*>(input);
  auto* dst = static_cast<Bits<S>*>(output);
  BP_CUDA_GRID_STRIDE(i, count) {
    const int64_t to = i < count - offset ? i + offset : i - (count - offset);
    dst[to] = src[i];
  }
}

void PermuteImpl(std::string_view op, const VSAConfig& config, const void* input, void* output,
                 int64_t count, DType dtype, bool inverse) {
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "input", input, count);
  CheckPointer(op, "output", output, count);
  if (count == 0) return;
  const int64_t s = ((config.Shift % count) + count) % count;
  const int64_t offset = inverse ? (count - s) % count : s;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    // The input is copied first when the output overlaps it (in-place rotation included).
    std::optional<DeviceScratch> copy;
    const size_t bytes = DTypeStorageBytes(dtype, count);
    const void* src = Unaliased(input, bytes, output, bytes, false, copy);
    RotateKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(src, output, count, offset);
    ReleaseAll({&copy});
  });
  FinishMethod(op);
}

void Permute(BP_PARAMS_VSAPermute) {
  PermuteImpl("VSA.Permute", config, input, output, count, dtype, /*inverse=*/false);
}

void InversePermute(BP_PARAMS_VSAPermute) {
  PermuteImpl("VSA.InversePermute", config, input, output, count, dtype, /*inverse=*/true);
}

// max |left|, max |right| and whether any element of either is Inf or NaN.
struct Extremes {
  double maxA, maxB;
  int nonFinite;
};

template <class S>
struct ExtremesOp {
  using Acc = Extremes;
  const void* left;
  const void* right;
  __device__ Acc Identity() const { return Extremes{0.0, 0.0, 0}; }
  __device__ Acc Element(int64_t i) const {
    const double a = LdD<S>(left, i);
    const double b = LdD<S>(right, i);
    return Extremes{fabs(a), fabs(b), (isfinite(a) && isfinite(b)) ? 0 : 1};
  }
  __device__ Acc Combine(Acc x, Acc y) const {
    return Extremes{y.maxA > x.maxA ? y.maxA : x.maxA, y.maxB > x.maxB ? y.maxB : x.maxB,
                    x.nonFinite | y.nonFinite};
  }
};

// (x y, x x, y y) of the power-of-two scaled elements.
template <class S>
struct CosineTerm {
  const void* left;
  const void* right;
  int expA, expB;
  __device__ Sums operator()(int64_t i) const {
    const double x = ldexp(LdD<S>(left, i), -expA);
    const double y = ldexp(LdD<S>(right, i), -expB);
    return Sums{{Mul(x, y), Mul(x, x), Mul(y, y)}};
  }
};

double Similarity(BP_PARAMS_Similarity) {
  constexpr std::string_view op = "VSA.Similarity";
  CheckFloatDType(op, dtype);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "left", left, count);
  CheckPointer(op, "right", right, count);
  if (count == 0) return 0.0;
  double result = 0.0;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const Extremes extremes = Reduce(op, ExtremesOp<S>{left, right}, count);
    if (extremes.nonFinite != 0) {
      result = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    if (extremes.maxA == 0.0 || extremes.maxB == 0.0) {
      result = 0.0;
      return;
    }
    int expA = 0;
    int expB = 0;
    std::frexp(extremes.maxA, &expA);
    std::frexp(extremes.maxB, &expB);
    const Sums sums = SumOnDevice(op, CosineTerm<S>{left, right, expA, expB}, count);
    const double cosine = sums.v[0] / (std::sqrt(sums.v[1]) * std::sqrt(sums.v[2]));
    result = std::clamp(cosine, -1.0, 1.0);
  });
  return result;
}

}  // namespace vsa

// ==== PosPop =====================================================================================
namespace pospop {

constexpr int64_t kMaxPosPopBlocks = 2048;

// totals[b] += the number of words with bit b set. Each warp takes 32 consecutive words at a time
// (the loop bound is warp-uniform, so every ballot has all lanes); lane l keeps bits l and l + 32.
template <class Word>
__global__ void PosPopKernel(const Word* buf, int64_t count, unsigned long long* totals) {
  constexpr int kBits = std::numeric_limits<Word>::digits;
  __shared__ unsigned long long block[kBits];
  for (int b = threadIdx.x; b < kBits; b += blockDim.x) block[b] = 0;
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  unsigned long long low = 0;
  unsigned long long high = 0;
  for (int64_t base = warp * 32; base < count; base += warps * 32) {
    const int64_t i = base + lane;
    const Word w = i < count ? buf[i] : Word{0};
#pragma unroll
    for (int b = 0; b < kBits; ++b) {
      const unsigned votes = __ballot_sync(0xFFFFFFFFu, ((w >> b) & 1u) != 0);
      if (lane == (b & 31)) {
        if (b < 32) {
          low += static_cast<unsigned long long>(__popc(votes));
        } else {
          high += static_cast<unsigned long long>(__popc(votes));
        }
      }
    }
  }
  if (lane < kBits && low != 0) atomicAdd(&block[lane], low);
  if (lane + 32 < kBits && high != 0) atomicAdd(&block[lane + 32], high);
  __syncthreads();
  for (int b = threadIdx.x; b < kBits; b += blockDim.x) {
    if (block[b] != 0) atomicAdd(&totals[b], block[b]);
  }
}

// Counts count > 0 device words into a temporary, checks that adding it cannot overflow any
// counter, and only then adds it to the caller's counts: on any error the counts are untouched.
template <class Word>
void CountOnDevice(std::string_view op, int64_t* counts, const Word* buf, int64_t count) {
  constexpr int kBits = std::numeric_limits<Word>::digits;
  unsigned long long local[kBits];
  int64_t current[kBits];
  DeviceScratch scratch(sizeof(local));
  Fill(scratch.Get(), 0, sizeof(local));
  int64_t blocks = GridFor(count);
  if (blocks > kMaxPosPopBlocks) blocks = kMaxPosPopBlocks;
  PosPopKernel<Word><<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(
      buf, count, scratch.As<unsigned long long>());
  Copy(local, scratch.Get(), sizeof(local));
  Copy(current, counts, sizeof(current));
  scratch.Release();
  FinishMethod(op);
  for (int b = 0; b < kBits; ++b) {
    int64_t sum = 0;
    const auto add = static_cast<int64_t>(local[b]);
    if (__builtin_add_overflow(current[b], add, &sum)) {
      ThrowInvalidArgument(op, "counts",
                           Format("small enough that counts[{}] + {} fits in int64", b, add),
                           Format("counts[{}] = {}", b, current[b]));
    }
  }
  for (int b = 0; b < kBits; ++b) current[b] += static_cast<int64_t>(local[b]);
  Copy(counts, current, sizeof(current));
  FinishMethod(op);
}

// The reference's checks; true when there is something to count.
template <class Word>
bool CheckCount(std::string_view op, const int64_t* counts, const Word* buf, int64_t count) {
  constexpr int kBits = std::numeric_limits<Word>::digits;
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "buf", buf, count);
  if (counts == nullptr && count > 0) {
    ThrowInvalidArgument(op, "counts", Format("non-null ({} counters) when count > 0", kBits),
                         "null");
  }
  return count > 0;
}

template <class Word>
void Count(std::string_view op, int64_t* counts, const Word* buf, int64_t count) {
  if (CheckCount(op, counts, buf, count)) CountOnDevice(op, counts, buf, count);
}

void Count8(BP_PARAMS_PosPop8) { Count<uint8_t>("PosPop.Count8", counts, buf, count); }
void Count16(BP_PARAMS_PosPop16) { Count<uint16_t>("PosPop.Count16", counts, buf, count); }
void Count32(BP_PARAMS_PosPop32) { Count<uint32_t>("PosPop.Count32", counts, buf, count); }
void Count64(BP_PARAMS_PosPop64) { Count<uint64_t>("PosPop.Count64", counts, buf, count); }

// The raw bytes of the string, exactly as Count8. The bytes are copied to the device first, so the
// string may live in host or device memory.
void CountString(BP_PARAMS_PosPopString) {
  constexpr std::string_view op = "PosPop.CountString";
  const auto* bytes = reinterpret_cast<const uint8_t*>(str.data());
  const auto count = static_cast<int64_t>(str.size());
  if (!CheckCount(op, counts, bytes, count)) return;
  DeviceScratch copy(str.size());
  Copy(copy.Get(), bytes, str.size());
  CountOnDevice(op, counts, copy.As<const uint8_t>(), count);
  copy.Release();
  FinishMethod(op);
}

}  // namespace pospop

// ==== Spatial ====================================================================================
namespace spatial {

// The product of sizes >= 0; InvalidArgument naming `arg` when it (or its size in bits) overflows.
int64_t CountOf(std::string_view op, std::string_view arg, std::initializer_list<int64_t> sizes) {
  for (const int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t n = 1;
  for (const int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n)) {
      n = -1;
      break;
    }
  }
  int64_t bits = 0;
  if (n < 0 || __builtin_mul_overflow(n, int64_t{64}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         "an overflowing count");
  }
  return n;
}

void CheckSizes(std::string_view op,
                std::initializer_list<std::pair<std::string_view, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) CheckNonNegative(op, name, value);
}

// ---- GridSample (the reference's operations in its order) ----

struct GridParams {
  GridSampleMode mode;
  GridSamplePadding padding;
  bool align;
};

template <class T>
__device__ T Unnormalize(T coord, int64_t size, bool alignCorners) {
  const T s = static_cast<T>(size);
  if (alignCorners) return Mul(Div(Add(coord, T(1)), T(2)), Sub(s, T(1)));
  return Div(Sub(Mul(Add(coord, T(1)), s), T(1)), T(2));
}

template <class T>
__device__ T Reflect(T in, T twiceLow, T twiceHigh) {
  if (twiceLow == twiceHigh) return T(0);
  const T low = Div(twiceLow, T(2));
  const T span = Div(Sub(twiceHigh, twiceLow), T(2));
  in = Fabs(Sub(in, low));
  const T flips = Floor(Div(in, span));
  const T extra = Sub(in, Mul(flips, span));
  const bool even = Fmod(flips, T(2)) == T(0);
  return even ? Add(extra, low) : Add(Sub(span, extra), low);
}

template <class T>
__device__ T Pad(T coord, int64_t size, GridSamplePadding padding, bool alignCorners) {
  const T hi = static_cast<T>(size - 1);
  if (padding == GridSamplePadding::Border) return StdMin(StdMax(coord, T(0)), hi);
  if (padding == GridSamplePadding::Reflection) {
    const T s = static_cast<T>(size);
    coord = alignCorners ? Reflect(coord, T(0), Mul(T(2), hi))
                         : Reflect(coord, T(-1), Sub(Mul(T(2), s), T(1)));
    return StdMin(StdMax(coord, T(0)), hi);
  }
  return coord;
}

// Tap (x, y) of a plane (integral coordinates as T), 0 outside it.
template <class S, class T = Compute<S>>
__device__ T Tap(const void* in, int64_t base, int64_t h, int64_t w, T x, T y) {
  if (!(x >= T(0) && x <= static_cast<T>(w - 1) && y >= T(0) && y <= static_cast<T>(h - 1))) {
    return T(0);
  }
  return Ld<S>(in, base + static_cast<int64_t>(y) * w + static_cast<int64_t>(x));
}

// Cubic convolution weights with A = -0.75: A + 2 = 1.25, A + 3 = 2.25, 5A = -3.75, 8A = -6,
// 4A = -3 (all exact).
template <class T>
__device__ T CubicNear(T t) {
  return Add(Mul(Mul(Sub(Mul(T(1.25), t), T(2.25)), t), t), T(1));
}
template <class T>
__device__ T CubicFar(T t) {
  constexpr T A = T(-0.75);
  return Sub(Mul(Add(Mul(Sub(Mul(A, t), T(-3.75)), t), T(-6)), t), T(-3));
}
template <class T>
__device__ T CubicCoefficient(T x, int tap) {
  switch (tap) {
    case 0:
      return CubicFar(Add(x, T(1)));
    case 1:
      return CubicNear(x);
    case 2:
      return CubicNear(Sub(T(1), x));
    default:
      return CubicFar(Add(Sub(T(1), x), T(1)));
  }
}

template <class S, class T = Compute<S>>
__device__ T Bicubic(const GridParams& cfg, const void* in, int64_t base, int64_t h, int64_t w,
                     T ix, T iy) {
  const T x0 = Floor(ix), y0 = Floor(iy);
  const T tx = Sub(ix, x0), ty = Sub(iy, y0);
  T rows[4];
  for (int i = 0; i < 4; ++i) {
    T acc = T(0);
    for (int j = 0; j < 4; ++j) {
      const T px = Pad(Add(Sub(x0, T(1)), static_cast<T>(j)), w, cfg.padding, cfg.align);
      const T py = Pad(Add(Sub(y0, T(1)), static_cast<T>(i)), h, cfg.padding, cfg.align);
      acc = Add(acc, Mul(Tap<S>(in, base, h, w, Trunc(px), Trunc(py)), CubicCoefficient(tx, j)));
    }
    rows[i] = acc;
  }
  T acc = T(0);
  for (int i = 0; i < 4; ++i) acc = Add(acc, Mul(rows[i], CubicCoefficient(ty, i)));
  return acc;
}

// One thread per output element t = (n * channels + c) * outH * outW + p.
template <class S>
__global__ void GridSampleKernel(GridParams cfg, const void* in, const void* grid, void* out,
                                 int64_t channels, int64_t inH, int64_t inW, int64_t plane,
                                 int64_t outCount) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(t, outCount) {
    const int64_t p = t % plane;
    const int64_t nc = t / plane;
    const int64_t n = nc / channels;
    const int64_t g = (n * plane + p) * 2;
    const T gx = Ld<S>(grid, g), gy = Ld<S>(grid, g + 1);
    const T ux = Unnormalize(gx, inW, cfg.align), uy = Unnormalize(gy, inH, cfg.align);
    const bool finite = isfinite(ux) && isfinite(uy);
    const T ix = Pad(ux, inW, cfg.padding, cfg.align), iy = Pad(uy, inH, cfg.padding, cfg.align);
    const int64_t base = nc * inH * inW;
    T value = std::numeric_limits<T>::quiet_NaN();
    if (finite && cfg.mode == GridSampleMode::Nearest) {
      value = Tap<S>(in, base, inH, inW, NearbyInt(ix), NearbyInt(iy));
    } else if (finite && cfg.mode == GridSampleMode::Bilinear) {
      const T x0 = Floor(ix), y0 = Floor(iy);
      const T x1 = Add(x0, T(1)), y1 = Add(y0, T(1));
      const T wx1 = Sub(ix, x0), wx0 = Sub(x1, ix), wy1 = Sub(iy, y0), wy0 = Sub(y1, iy);
      value = T(0);
      value = Add(value, Mul(Tap<S>(in, base, inH, inW, x0, y0), Mul(wx0, wy0)));
      value = Add(value, Mul(Tap<S>(in, base, inH, inW, x1, y0), Mul(wx1, wy0)));
      value = Add(value, Mul(Tap<S>(in, base, inH, inW, x0, y1), Mul(wx0, wy1)));
      value = Add(value, Mul(Tap<S>(in, base, inH, inW, x1, y1), Mul(wx1, wy1)));
    } else if (finite) {
      value = Bicubic<S>(cfg, in, base, inH, inW, ux, uy);
    }
    St<S>(out, t, value);
  }
}

void GridSample(BP_PARAMS_GridSample) {
  constexpr std::string_view kOp = "Spatial.GridSample";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  if (config.Mode != GridSampleMode::Bilinear && config.Mode != GridSampleMode::Nearest &&
      config.Mode != GridSampleMode::Bicubic) {
    ThrowInvalidArgument(kOp, "config.Mode", "Bilinear, Nearest or Bicubic",
                         Format("{}", static_cast<int32_t>(config.Mode)));
  }
  if (config.Padding != GridSamplePadding::Zeros && config.Padding != GridSamplePadding::Border &&
      config.Padding != GridSamplePadding::Reflection) {
    ThrowInvalidArgument(kOp, "config.Padding", "Zeros, Border or Reflection",
                         Format("{}", static_cast<int32_t>(config.Padding)));
  }
  CheckSizes(kOp, {{"batch", batch},
                   {"channels", channels},
                   {"inH", inH},
                   {"inW", inW},
                   {"outH", outH},
                   {"outW", outW}});
  const int64_t inCount = CountOf(kOp, "inW", {batch, channels, inH, inW});
  const int64_t gridCount = CountOf(kOp, "outW", {batch, outH, outW, 2});
  const int64_t outCount = CountOf(kOp, "outW", {batch, channels, outH, outW});
  if (outCount > 0 && (inH == 0 || inW == 0)) {
    ThrowInvalidArgument(kOp, "inH, inW", "> 0 when there is output", "0");
  }
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "grid", grid, gridCount);
  CheckPointer(kOp, "out", out, outCount);
  if (outCount == 0) return;
  const GridParams cfg{config.Mode, config.Padding, config.AlignCorners};
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    std::optional<DeviceScratch> inCopy, gridCopy;
    const size_t outBytes = DTypeStorageBytes(dtype, outCount);
    const void* src =
        Unaliased(in, DTypeStorageBytes(dtype, inCount), out, outBytes, false, inCopy);
    const void* g =
        Unaliased(grid, DTypeStorageBytes(dtype, gridCount), out, outBytes, false, gridCopy);
    GridSampleKernel<S><<<GridFor(outCount), kThreads, 0, Stream()>>>(
        cfg, src, g, out, channels, inH, inW, outH * outW, outCount);
    ReleaseAll({&inCopy, &gridCopy});
  });
  FinishMethod(kOp);
}

// ---- RoiAlign ----

// Adaptive grids: ceil(roi / out) samples per bin, bounded so one bin's grid stays countable.
constexpr int64_t kMaxGrid = int64_t{1} << 20;
constexpr int64_t kMaxRoiSamples = int64_t{1} << 26;

struct RoiParams {
  RoiAlignMode mode;
  int64_t oh, ow, ratio;
  double scale;  // config.SpatialScale; rounded to the compute type in the kernels
  bool halfPixel;
};

// One roi's geometry, as the reference computes it.
template <class T>
struct RoiGeometry {
  T x1, y1, binH, binW, roiH, roiW;
};

template <class S, class T = Compute<S>>
__device__ RoiGeometry<T> GeometryOf(const RoiParams& cfg, const void* rois, int64_t r) {
  const T scale = static_cast<T>(cfg.scale);
  const T offset = cfg.halfPixel ? T(0.5) : T(0);
  const T x1 = Sub(Mul(Ld<S>(rois, r * 4), scale), offset);
  const T y1 = Sub(Mul(Ld<S>(rois, r * 4 + 1), scale), offset);
  const T x2 = Sub(Mul(Ld<S>(rois, r * 4 + 2), scale), offset);
  const T y2 = Sub(Mul(Ld<S>(rois, r * 4 + 3), scale), offset);
  T roiW = Sub(x2, x1), roiH = Sub(y2, y1);
  if (!cfg.halfPixel) {
    roiW = StdMax(roiW, T(1));
    roiH = StdMax(roiH, T(1));
  }
  const T binH = Div(roiH, static_cast<T>(cfg.oh)), binW = Div(roiW, static_cast<T>(cfg.ow));
  return RoiGeometry<T>{x1, y1, binH, binW, roiH, roiW};
}

// Samples per bin: the ratio, or ceil(size / bins) for an adaptive grid (0 when not > 0);
// *tooLarge when an adaptive grid exceeds kMaxGrid (the reference throws).
template <class T>
__device__ int64_t GridOf(T size, int64_t bins, int64_t ratio, bool* tooLarge) {
  if (ratio > 0) return ratio;
  const T g = Ceil(Div(size, static_cast<T>(bins)));
  if (!(g > T(0))) return 0;
  if (!(g <= static_cast<T>(kMaxGrid))) {
    *tooLarge = true;
    return 0;
  }
  return static_cast<int64_t>(g);
}

// firstBad = min over bad rois r of 2r + code: code 0 an adaptive grid over kMaxGrid, code 1 more
// than 2^26 samples for the roi.
template <class S>
__global__ void RoiGridCheckKernel(RoiParams cfg, const void* rois, int64_t numRois,
                                   unsigned long long* firstBad) {
  using T = Compute<S>;
  BP_CUDA_GRID_STRIDE(r, numRois) {
    const RoiGeometry<T> g = GeometryOf<S>(cfg, rois, r);
    bool tooLarge = false;
    const int64_t gh = GridOf(g.roiH, cfg.oh, cfg.ratio, &tooLarge);
    const int64_t gw = GridOf(g.roiW, cfg.ow, cfg.ratio, &tooLarge);
    int code = -1;
    if (tooLarge) {
      code = 0;
    } else {
      const int64_t perBin = gh * gw;  // each <= 2^20: no overflow
      const int64_t bins = cfg.oh * cfg.ow;
      if (perBin != 0 && (bins > INT64_MAX / perBin || bins * perBin > kMaxRoiSamples)) code = 1;
    }
    if (code >= 0) atomicMin(firstBad, static_cast<unsigned long long>(2 * r + code));
  }
}

// One bilinear sample point of the ONNX reference: four flat positions and weights (all zero
// outside [-1, height] x [-1, width]). A NaN coordinate (undefined in the reference) gives NaN
// weights at position 0.
template <class T>
struct Sample {
  int64_t pos[4];
  T w[4];
};

template <class T>
__device__ Sample<T> SampleAt(T y, T x, int64_t height, int64_t width) {
  Sample<T> s{{0, 0, 0, 0}, {T(0), T(0), T(0), T(0)}};
  if (y < T(-1) || y > static_cast<T>(height) || x < T(-1) || x > static_cast<T>(width)) return s;
  if (isnan(y) || isnan(x)) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    s.w[0] = s.w[1] = s.w[2] = s.w[3] = nan;
    return s;
  }
  y = StdMax(y, T(0));
  x = StdMax(x, T(0));
  auto yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x);
  int64_t yHigh = yLow + 1, xHigh = xLow + 1;
  if (yLow >= height - 1) {
    yHigh = yLow = height - 1;
    y = static_cast<T>(yLow);
  }
  if (xLow >= width - 1) {
    xHigh = xLow = width - 1;
    x = static_cast<T>(xLow);
  }
  const T ly = Sub(y, static_cast<T>(yLow)), lx = Sub(x, static_cast<T>(xLow));
  const T hy = Sub(T(1), ly), hx = Sub(T(1), lx);
  s.pos[0] = yLow * width + xLow;
  s.pos[1] = yLow * width + xHigh;
  s.pos[2] = yHigh * width + xLow;
  s.pos[3] = yHigh * width + xHigh;
  s.w[0] = Mul(hy, hx);
  s.w[1] = Mul(hy, lx);
  s.w[2] = Mul(ly, hx);
  s.w[3] = Mul(ly, lx);
  return s;
}

// One thread per output element t = (r * channels + c) * oh * ow + bin; the bin's sample points
// in the reference's order (iy, then ix).
template <class S>
__global__ void RoiAlignKernel(RoiParams cfg, const void* in, const void* rois,
                               const int64_t* batchIndices, void* out, int64_t channels,
                               int64_t height, int64_t width, int64_t outCount) {
  using T = Compute<S>;
  const int64_t bins = cfg.oh * cfg.ow;
  BP_CUDA_GRID_STRIDE(t, outCount) {
    const int64_t bin = t % bins;
    const int64_t rc = t / bins;
    const int64_t c = rc % channels;
    const int64_t r = rc / channels;
    const RoiGeometry<T> g = GeometryOf<S>(cfg, rois, r);
    bool tooLarge = false;
    const int64_t gh = GridOf(g.roiH, cfg.oh, cfg.ratio, &tooLarge);
    const int64_t gw = GridOf(g.roiW, cfg.ow, cfg.ratio, &tooLarge);
    const int64_t count = gh * gw > 1 ? gh * gw : 1;
    const int64_t ph = bin / cfg.ow;
    const int64_t pw = bin - ph * cfg.ow;
    const int64_t base = (batchIndices[r] * channels + c) * height * width;
    T value = T(0);
    int64_t s = 0;
    for (int64_t iy = 0; iy < gh; ++iy) {
      const T y = Add(Add(g.y1, Mul(static_cast<T>(ph), g.binH)),
                      Div(Mul(Add(static_cast<T>(iy), T(0.5)), g.binH), static_cast<T>(gh)));
      for (int64_t ix = 0; ix < gw; ++ix, ++s) {
        const T x = Add(Add(g.x1, Mul(static_cast<T>(pw), g.binW)),
                        Div(Mul(Add(static_cast<T>(ix), T(0.5)), g.binW), static_cast<T>(gw)));
        const Sample<T> p = SampleAt<T>(y, x, height, width);
        T v[4];
        for (int q = 0; q < 4; ++q) v[q] = Mul(p.w[q], Ld<S>(in, base + p.pos[q]));
        if (cfg.mode == RoiAlignMode::Avg) {
          value = Add(value, Add(Add(Add(v[0], v[1]), v[2]), v[3]));
        } else {
          // ONNX's max: the largest weighted corner term over all sample points.
          const T m = StdMax(StdMax(v[0], v[1]), StdMax(v[2], v[3]));
          value = s == 0 ? m : StdMax(value, m);
        }
      }
    }
    if (cfg.mode == RoiAlignMode::Avg) value = Div(value, static_cast<T>(count));
    St<S>(out, t, value);
  }
}

// *firstBad = the smallest r with batchIndices[r] outside [0, batch).
__global__ void FirstBadBatchKernel(const int64_t* batchIndices, int64_t numRois, int64_t batch,
                                    unsigned long long* firstBad) {
  BP_CUDA_GRID_STRIDE(r, numRois) {
    const int64_t b = batchIndices[r];
    if (b < 0 || b >= batch) atomicMin(firstBad, static_cast<unsigned long long>(r));
  }
}

// Runs a one-slot check kernel and returns its first failing key (kNone if none).
template <class Launch>
unsigned long long FirstKey(std::string_view op, const Launch& launch) {
  DeviceScratch scratch(sizeof(unsigned long long));
  auto* slot = scratch.As<unsigned long long>();
  Fill(slot, 0xFF, sizeof(unsigned long long));
  launch(slot);
  unsigned long long host = kNone;
  Copy(&host, slot, sizeof(host));
  scratch.Release();
  FinishMethod(op);
  return host;
}

void RoiAlign(BP_PARAMS_RoiAlign) {
  constexpr std::string_view kOp = "Spatial.RoiAlign";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  if (config.Mode != RoiAlignMode::Avg && config.Mode != RoiAlignMode::Max) {
    ThrowInvalidArgument(kOp, "config.Mode", "Avg or Max",
                         Format("{}", static_cast<int32_t>(config.Mode)));
  }
  CheckPositive(kOp, "config.OutputHeight", config.OutputHeight);
  CheckPositive(kOp, "config.OutputWidth", config.OutputWidth);
  CheckNonNegative(kOp, "config.SamplingRatio", config.SamplingRatio);
  if (config.SamplingRatio > kMaxGrid) {
    ThrowInvalidArgument(kOp, "config.SamplingRatio", Format("at most {}", kMaxGrid),
                         Format("{}", config.SamplingRatio));
  }
  CheckFinite(kOp, "config.SpatialScale", config.SpatialScale);
  CheckSizes(kOp, {{"batch", batch},
                   {"channels", channels},
                   {"height", height},
                   {"width", width},
                   {"numRois", numRois}});
  const int64_t inCount = CountOf(kOp, "width", {batch, channels, height, width});
  const int64_t roiCount = CountOf(kOp, "numRois", {numRois, 4});
  const int64_t outCount = CountOf(kOp, "config.OutputWidth",
                                   {numRois, channels, config.OutputHeight, config.OutputWidth});
  if (outCount > 0 && (height == 0 || width == 0)) {
    ThrowInvalidArgument(kOp, "height, width", "> 0 when there is output", "0");
  }
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "rois", rois, roiCount);
  CheckPointer(kOp, "batchIndices", batchIndices, numRois);
  CheckPointer(kOp, "out", out, outCount);
  if (numRois > 0) {
    const unsigned long long badRoi = FirstKey(kOp, [&](unsigned long long* slot) {
      FirstBadBatchKernel<<<GridFor(numRois), kThreads, 0, Stream()>>>(batchIndices, numRois, batch,
                                                                       slot);
    });
    if (badRoi != kNone) {
      const auto r = static_cast<int64_t>(badRoi);
      ThrowInvalidArgument(kOp, "batchIndices", Format("in [0, {})", batch),
                           Format("{} at element {}", ReadInteger(kOp, batchIndices, r), r));
    }
  }
  if (outCount == 0) return;
  const RoiParams cfg{config.Mode,          config.OutputHeight, config.OutputWidth,
                      config.SamplingRatio, config.SpatialScale, config.HalfPixel};
  ByFloatDType(kOp, dtype, [&](auto storage) {
    using S = decltype(storage);
    // The reference's per-roi sample-count limits, checked for every roi before anything is
    // written.
    const unsigned long long badGrid = FirstKey(kOp, [&](unsigned long long* slot) {
      RoiGridCheckKernel<S><<<GridFor(numRois), kThreads, 0, Stream()>>>(cfg, rois, numRois, slot);
    });
    if (badGrid != kNone) {
      if (badGrid % 2 == 0) {
        ThrowInvalidArgument(
            kOp, "rois", Format("small enough for at most {} adaptive samples per bin", kMaxGrid),
            "a larger roi");
      }
      ThrowInvalidArgument(kOp, "rois", "small enough for at most 2^26 samples per roi",
                           "a larger roi");
    }
    std::optional<DeviceScratch> inCopy, roiCopy, indexCopy;
    const size_t outBytes = DTypeStorageBytes(dtype, outCount);
    const void* src =
        Unaliased(in, DTypeStorageBytes(dtype, inCount), out, outBytes, false, inCopy);
    const void* boxes =
        Unaliased(rois, DTypeStorageBytes(dtype, roiCount), out, outBytes, false, roiCopy);
    const auto* indices = static_cast<const int64_t*>(
        Unaliased(batchIndices, static_cast<size_t>(numRois) * sizeof(int64_t), out, outBytes,
                  false, indexCopy));
    RoiAlignKernel<S><<<GridFor(outCount), kThreads, 0, Stream()>>>(
        cfg, src, boxes, indices, out, channels, height, width, outCount);
    ReleaseAll({&inCopy, &roiCopy, &indexCopy});
  });
  FinishMethod(kOp);
}

}  // namespace spatial

}  // namespace

void RegisterResearch(KernelTable& table) {
  table.Hawkes_HawkesIntensity = &hawkes::HawkesIntensity;
  table.Hawkes_HawkesKernelMatrix = &hawkes::HawkesKernelMatrix;
  table.Hawkes_HawkesLogLikelihood = &hawkes::HawkesLogLikelihood;
  table.Hawkes_MarkovMutualInformation = &hawkes::MarkovMutualInformation;
  table.Hawkes_MarkovBlanketPartition = &hawkes::MarkovBlanketPartition;
  table.PointProcess_HawkesSimulate = &point_process::HawkesSimulate;
  table.ActiveInference_FreeEnergy = &active_inference::FreeEnergy;
  table.ActiveInference_ExpectedFreeEnergy = &active_inference::ExpectedFreeEnergy;
  table.ActiveInference_BeliefUpdate = &active_inference::BeliefUpdate;
  table.ActiveInference_PrecisionWeight = &active_inference::PrecisionWeight;
  table.PredictiveCoding_Prediction = &predictive_coding::Prediction;
  table.PredictiveCoding_PredictionError = &predictive_coding::PredictionError;
  table.PredictiveCoding_UpdateRepresentation = &predictive_coding::UpdateRepresentation;
  table.PredictiveCoding_UpdateWeights = &predictive_coding::UpdateWeights;
  table.VSA_Bind = &vsa::Bind;
  table.VSA_Bundle = &vsa::Bundle;
  table.VSA_Permute = &vsa::Permute;
  table.VSA_InversePermute = &vsa::InversePermute;
  table.VSA_Similarity = &vsa::Similarity;
  table.PosPop_Count8 = &pospop::Count8;
  table.PosPop_Count16 = &pospop::Count16;
  table.PosPop_Count32 = &pospop::Count32;
  table.PosPop_Count64 = &pospop::Count64;
  table.PosPop_CountString = &pospop::CountString;
  table.Spatial_GridSample = &spatial::GridSample;
  table.Spatial_RoiAlign = &spatial::RoiAlign;
}

}  // namespace backplane::cuda
