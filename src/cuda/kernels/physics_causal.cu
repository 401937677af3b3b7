#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "backplane/backend/causal.hpp"
#include "backplane/backend/physics.hpp"
#include "backplane/convert.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/exact_math.cuh"
#include "cuda/kernels/read_back.hpp"

namespace backplane::cuda {

void RegisterPhysicsCausal(KernelTable& table);

namespace {

// ---- Device arithmetic (no FMA contraction) --------------------------------------------------

// common.hpp's RoundToOddF32: double -> float truncated toward zero, last bit set when inexact.
__device__ __forceinline__ float RoundToOddF32(double value) {
  if (isnan(value)) return __double2float_rn(value);
  const float f = __double2float_rz(value);
  if (static_cast<double>(f) == value) return f;
  return __uint_as_float(__float_as_uint(f) | 1u);
}

// common.hpp's StoreResult: one rounding to nearest even from a double into the storage format.
template <class S>
__device__ __forceinline__ void StR(void* p, int64_t i, double v) {
  if constexpr (std::is_same_v<S, double>) {
    static_cast<double*>(p)[i] = v;
  } else if constexpr (std::is_same_v<S, float>) {
    static_cast<float*>(p)[i] = __double2float_rn(v);
  } else {
    St<S>(p, i, RoundToOddF32(v));  // then to nearest even into f16 / bf16
  }
}

// The reference's Wrap: index i + offset taken mod n into [0, n).
__device__ __forceinline__ int64_t Wrap(int64_t i, int64_t offset, int64_t n) {
  const int64_t j = (i + offset) % n;
  return j < 0 ? j + n : j;
}

constexpr unsigned long long kNone = ~0ULL;

// ---- Host helpers ----------------------------------------------------------------------------

void CopyToHost(void* host, const void* device, size_t bytes) {
  CheckCuda(static_cast<int>(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDefault, Stream())),
            "cudaMemcpyAsync");
  CheckCuda(static_cast<int>(cudaStreamSynchronize(Stream())), "cudaStreamSynchronize");
}

void CopyOnDevice(void* dst, const void* src, size_t bytes) {
  CheckCuda(static_cast<int>(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, Stream())),
            "cudaMemcpyAsync");
}

void FillBytes(void* device, int value, size_t bytes) {
  CheckCuda(static_cast<int>(cudaMemsetAsync(device, value, bytes, Stream())), "cudaMemsetAsync");
}

// `input`, or a device copy of it when its bytes overlap the output's (the kernel then reads the
// copy while it writes the output).
const void* Unaliased(const void* input, size_t inBytes, const void* output, size_t outBytes,
                      std::optional<DeviceScratch>& copy) {
  if (!Overlaps(input, inBytes, output, outBytes)) return input;
  copy.emplace(inBytes);
  CopyOnDevice(copy->Get(), input, inBytes);
  return copy->Get();
}

// For element-wise kernels (output i reads only input i): an exact alias is safe, any other
// overlap reads a copy.
const void* UnaliasedElementwise(const void* input, const void* output, size_t bytes,
                                 std::optional<DeviceScratch>& copy) {
  if (input == output) return input;
  return Unaliased(input, bytes, output, bytes, copy);
}

// Element i of a float buffer in device memory, read back and widened to double.
double ReadValue(const void* data, int64_t i, DType dtype) { return ReadFloatElement("cuda read-back", data, i, dtype); }

// Elements [offset, offset + length) of a float buffer in device memory, widened to double.
std::vector<double> ReadValues(const void* data, int64_t offset, int64_t length, DType dtype) {
  const size_t elem = DTypeStorageBytes(dtype, 1);
  std::vector<unsigned char> bytes(static_cast<size_t>(length) * elem);
  CopyToHost(bytes.data(), static_cast<const unsigned char*>(data) + static_cast<size_t>(offset) * elem,
             bytes.size());
  std::vector<double> out(static_cast<size_t>(length));
  for (size_t k = 0; k < out.size(); ++k) {
    const unsigned char* b = bytes.data() + k * elem;
    switch (dtype) {
      case DType::Float64: {
        double v;
        std::memcpy(&v, b, sizeof(v));
        out[k] = v;
        break;
      }
      case DType::Float32: {
        float v;
        std::memcpy(&v, b, sizeof(v));
        out[k] = static_cast<double>(v);
        break;
      }
      case DType::Float16: {
        uint16_t v;
        std::memcpy(&v, b, sizeof(v));
        out[k] = static_cast<double>(F16ToF32(v));
        break;
      }
      default: {
        uint16_t v;
        std::memcpy(&v, b, sizeof(v));
        out[k] = static_cast<double>(BF16ToF32(v));
        break;
      }
    }
  }
  return out;
}

int32_t ReadInt32(const int32_t* data, int64_t k) {
  int32_t v = 0;
  CopyToHost(&v, data + k, sizeof(v));
  return v;
}

// slot = the smallest i < n with pred(i).
template <class Pred>
__global__ void FirstBadKernel(Pred pred, int64_t n, unsigned long long* slot) {
  BP_CUDA_GRID_STRIDE(i, n) {
    if (pred(i)) atomicMin(slot, static_cast<unsigned long long>(i));
  }
}

// ---- Block-tree reductions (deterministic: fixed grid, fixed tree) ---------------------------

constexpr int64_t kMaxReduceBlocks = 1024;

int64_t ReduceBlocks(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  return blocks > kMaxReduceBlocks ? kMaxReduceBlocks : blocks;
}

// Op: Acc, Identity(), Element(i), Combine(a, b). Reduces within the block (kThreads, a power of
// two); thread 0 gets the result.
template <class Op>
__device__ typename Op::Acc BlockReduce(const Op& op, typename Op::Acc value) {
  using Acc = typename Op::Acc;
  __shared__ Acc buffer[kThreads];
  buffer[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) {
      buffer[threadIdx.x] = op.Combine(buffer[threadIdx.x], buffer[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  return buffer[0];
}

template <class Op>
__global__ void ReducePartialsKernel(Op op, int64_t n, typename Op::Acc* partials) {
  typename Op::Acc acc = op.Identity();
  BP_CUDA_GRID_STRIDE(i, n) { acc = op.Combine(acc, op.Element(i)); }
  acc = BlockReduce(op, acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class Op>
__global__ void ReduceFinalKernel(Op op, const typename Op::Acc* partials, int64_t blocks,
                                  typename Op::Acc* result) {
  typename Op::Acc acc = op.Identity();
  for (int64_t i = threadIdx.x; i < blocks; i += blockDim.x) acc = op.Combine(acc, partials[i]);
  acc = BlockReduce(op, acc);
  if (threadIdx.x == 0) *result = acc;
}

// Launches the two-pass reduction of n > 0 elements into *result (device memory).
template <class Op>
void ReduceOnDevice(const Op& op, int64_t n, typename Op::Acc* partials,
                    typename Op::Acc* result) {
  const int64_t blocks = ReduceBlocks(n);
  ReducePartialsKernel<Op><<<static_cast<unsigned>(blocks), kThreads, 0, Stream()>>>(op, n,
                                                                                     partials);
  ReduceFinalKernel<Op><<<1, kThreads, 0, Stream()>>>(op, partials, blocks, result);
}

template <class S>
__global__ void StoreScalarKernel(void* output, double value) {
  if (blockIdx.x == 0 && threadIdx.x == 0) StR<S>(output, 0, value);
}

// =================================================================================================
// Physics
// =================================================================================================

void CheckSpacing(std::string_view op, float spacing) {
  if (!std::isfinite(spacing) || !(spacing > 0.0f)) {
    ThrowInvalidArgument(op, "spacing", "finite and > 0", Format("{}", spacing));
  }
}

void PrepareStencil1D(std::string_view op, std::string_view inputName, const void* input,
                      void* output, int64_t count, float spacing, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, inputName, input, count);
  CheckPointer(op, "output", output, count);
  CheckSpacing(op, spacing);
}

// ---- Laplacian ---------------------------------------------------------------------------------

struct LaplacianGeometry {
  int64_t rank;
  int64_t extent[3];
  int64_t stride[3];
};

template <class S>
__global__ void LaplacianKernel(const void* u, void* out, int64_t count, LaplacianGeometry g,
                                double h2) {
  BP_CUDA_GRID_STRIDE(idx, count) {
    const double centre = LdD<S>(u, idx);
    double acc = 0.0;
    for (int64_t a = 0; a < g.rank; ++a) {
      const int64_t extent = g.extent[a];
      const int64_t stride = g.stride[a];
      const int64_t coord = (idx / stride) % extent;
      const int64_t base = idx - coord * stride;
      const double left = LdD<S>(u, base + Wrap(coord, -1, extent) * stride);
      const double right = LdD<S>(u, base + Wrap(coord, 1, extent) * stride);
      acc = Add(acc, Add(Sub(left, Mul(2.0, centre)), right));
    }
    StR<S>(out, idx, Div(acc, h2));
  }
}

void Laplacian(const void* input, void* output, const int64_t* dims, int64_t rank, float spacing,
               DType dtype) {
  constexpr std::string_view op = "Physics.Laplacian";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  if (rank < 1 || rank > 3) ThrowInvalidArgument(op, "rank", "1, 2 or 3", std::to_string(rank));
  CheckPointer(op, "dims", dims, rank);
  int64_t count = 1;
  for (int64_t a = 0; a < rank; ++a) {
    const std::string name = Format("dims[{}]", a);
    CheckNonNegative(op, name, dims[a]);
    if (dims[a] != 0 && count > std::numeric_limits<int64_t>::max() / 8 / dims[a]) {
      ThrowInvalidArgument(op, "dims", "an element count that fits in memory",
                           "a product that overflows");
    }
    count *= dims[a];
  }
  CheckPointer(op, "input", input, count);
  CheckPointer(op, "output", output, count);
  CheckSpacing(op, spacing);
  if (count == 0) return;

  LaplacianGeometry g{};
  g.rank = rank;
  int64_t inner = count;
  for (int64_t a = 0; a < rank; ++a) {
    g.extent[a] = dims[a];
    inner /= dims[a];
    g.stride[a] = inner;
  }
  const double h2 = static_cast<double>(spacing) * static_cast<double>(spacing);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = DTypeStorageBytes(dtype, count);
    std::optional<DeviceScratch> copy;
    const void* u = Unaliased(input, bytes, output, bytes, copy);
    LaplacianKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(u, output, count, g, h2);
    if (copy) copy->Release();
  });
  FinishMethod(op);
}

// ---- 1-D stencils --------------------------------------------------------------------------------

template <class S>
__global__ void Laplacian4Kernel(const void* u, void* out, int64_t n, double h) {
  const double denom = Mul(Mul(12.0, h), h);
  BP_CUDA_GRID_STRIDE(i, n) {
    const double m2 = LdD<S>(u, Wrap(i, -2, n));
    const double m1 = LdD<S>(u, Wrap(i, -1, n));
    const double c = LdD<S>(u, i);
    const double p1 = LdD<S>(u, Wrap(i, 1, n));
    const double p2 = LdD<S>(u, Wrap(i, 2, n));
    const double v = Sub(Add(Sub(Add(-m2, Mul(16.0, m1)), Mul(30.0, c)), Mul(16.0, p1)), p2);
    StR<S>(out, i, Div(v, denom));
  }
}

// (u[i+1] - u[i-1]) / (2h), periodic.
template <class S>
__global__ void CentralDifferenceKernel(const void* u, void* out, int64_t n, double h) {
  const double twoH = Mul(2.0, h);
  BP_CUDA_GRID_STRIDE(i, n) {
    const double right = LdD<S>(u, Wrap(i, 1, n));
    const double left = LdD<S>(u, Wrap(i, -1, n));
    StR<S>(out, i, Div(Sub(right, left), twoH));
  }
}

// (rho[i+1] v[i+1] - rho[i-1] v[i-1]) / (2h), periodic.
template <class S>
__global__ void FluxDifferenceKernel(const void* rho, const void* v, void* out, int64_t n,
                                     double h) {
  const double twoH = Mul(2.0, h);
  BP_CUDA_GRID_STRIDE(i, n) {
    const int64_t r = Wrap(i, 1, n);
    const int64_t l = Wrap(i, -1, n);
    const double right = Mul(LdD<S>(rho, r), LdD<S>(v, r));
    const double left = Mul(LdD<S>(rho, l), LdD<S>(v, l));
    StR<S>(out, i, Div(Sub(right, left), twoH));
  }
}

// Q = -0.5 (s[i-1] - 2 s[i] + s[i+1]) / h^2 / s[i], s = sqrt(rho); 0 where s[i] = 0.
template <class S>
__global__ void QuantumPotentialKernel(const void* rho, void* out, int64_t n, double h) {
  const double h2 = Mul(h, h);
  BP_CUDA_GRID_STRIDE(i, n) {
    const double c = sqrt(LdD<S>(rho, i));
    double q = 0.0;
    if (c != 0.0) {
      const double sl = sqrt(LdD<S>(rho, Wrap(i, -1, n)));
      const double sr = sqrt(LdD<S>(rho, Wrap(i, 1, n)));
      const double second = Add(Sub(sl, Mul(2.0, c)), sr);
      q = Div(Mul(-0.5, Div(second, h2)), c);
    }
    StR<S>(out, i, q);
  }
}

template <class S>
struct BadDensity {
  const void* rho;
  __device__ bool operator()(int64_t i) const {
    const double v = LdD<S>(rho, i);
    return !(v >= 0.0) || !isfinite(v);
  }
};

enum class StencilKind { Laplacian4, Central, Quantum };

void RunStencil(std::string_view op, StencilKind kind, const void* input, void* output,
                int64_t count, float spacing, DType dtype) {
  PrepareStencil1D(op, "input", input, output, count, spacing, dtype);
  if (count == 0) return;  // (the density check has nothing to look at either)
  const double h = static_cast<double>(spacing);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    if (kind == StencilKind::Quantum) {
      DeviceScratch slot(sizeof(unsigned long long));
      FillBytes(slot.Get(), 0xFF, sizeof(unsigned long long));
      FirstBadKernel<<<GridFor(count), kThreads, 0, Stream()>>>(BadDensity<S>{input}, count,
                                                                slot.As<unsigned long long>());
      unsigned long long bad = kNone;
      CopyToHost(&bad, slot.Get(), sizeof(bad));
      slot.Release();
      FinishMethod(op);
      if (bad != kNone) {
        const double v = ReadValue(input, static_cast<int64_t>(bad), dtype);
        ThrowInvalidArgument(op, "input", "a density (finite and >= 0)",
                             Format("input[{}] = {}", static_cast<size_t>(bad), v));
      }
    }
    const size_t bytes = DTypeStorageBytes(dtype, count);
    std::optional<DeviceScratch> copy;
    const void* u = Unaliased(input, bytes, output, bytes, copy);
    switch (kind) {
      case StencilKind::Laplacian4:
        Laplacian4Kernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(u, output, count, h);
        break;
      case StencilKind::Central:
        CentralDifferenceKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(u, output, count, h);
        break;
      case StencilKind::Quantum:
        QuantumPotentialKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(u, output, count, h);
        break;
    }
    if (copy) copy->Release();
  });
  FinishMethod(op);
}

void Laplacian4(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  RunStencil("Physics.Laplacian4", StencilKind::Laplacian4, input, output, count, spacing, dtype);
}

void Grad1D(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  RunStencil("Physics.Grad1D", StencilKind::Central, input, output, count, spacing, dtype);
}

void Divergence1D(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  RunStencil("Physics.Divergence1D", StencilKind::Central, input, output, count, spacing, dtype);
}

void QuantumPotential(const void* input, void* output, int64_t count, float spacing,
                      DType dtype) {
  RunStencil("Physics.QuantumPotential", StencilKind::Quantum, input, output, count, spacing,
             dtype);
}

void BohmianVelocity(const void* input, void* output, int64_t count, float spacing, DType dtype) {
  RunStencil("Physics.BohmianVelocity", StencilKind::Central, input, output, count, spacing,
             dtype);
}

void MadelungContinuity(const void* density, const void* velocity, void* residual, int64_t count,
                        float spacing, DType dtype) {
  constexpr std::string_view op = "Physics.MadelungContinuity";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "density", density, count);
  CheckPointer(op, "velocity", velocity, count);
  CheckPointer(op, "residual", residual, count);
  CheckSpacing(op, spacing);
  if (count == 0) return;
  const double h = static_cast<double>(spacing);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = DTypeStorageBytes(dtype, count);
    std::optional<DeviceScratch> rhoCopy, vCopy;
    const void* rho = Unaliased(density, bytes, residual, bytes, rhoCopy);
    const void* v = Unaliased(velocity, bytes, residual, bytes, vCopy);
    FluxDifferenceKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(rho, v, residual, count, h);
    if (vCopy) vCopy->Release();
    if (rhoCopy) rhoCopy->Release();
  });
  FinishMethod(op);
}

// ---- FFT -------------------------------------------------------------------------------------

constexpr int64_t kFftChunk = 2048;  // elements transformed in shared memory per block

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

int Log2(int64_t n) {
  int l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}

// The reference's Radix2 twiddle table for length m: cos and sin (unsigned) of 2 pi k/m, k < m/2.
void TwiddleTable(int64_t m, std::vector<double>& cosTable, std::vector<double>& sinTable) {
  const size_t half = static_cast<size_t>(m / 2);
  cosTable.assign(half, 0.0);
  sinTable.assign(half, 0.0);
  for (size_t k = 0; k < half; ++k) {
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m);
    cosTable[k] = std::cos(angle);
    sinTable[k] = std::sin(angle);
  }
}

// One radix-2 butterfly of the reference (a = start + j, b = a + half, twiddle (wr, wi)).
__device__ __forceinline__ void Butterfly(double& ar, double& ai, double& br, double& bi,
                                          double wr, double wi) {
  const double tr = Sub(Mul(wr, br), Mul(wi, bi));
  const double ti = Add(Mul(wr, bi), Mul(wi, br));
  br = Sub(ar, tr);
  bi = Sub(ai, ti);
  ar = Add(ar, tr);
  ai = Add(ai, ti);
}

// The reference's sinTable[k] = sign * sin(angle) (an exact negation for sign -1).
__device__ __forceinline__ double SignedSin(const double* sinT, int64_t k, int sign) {
  const double s = sinT[k];
  return sign < 0 ? -s : s;
}

// Bit-reversed gather of one chunk of `chunk` elements, then the stages len = 2 .. chunk in
// shared memory. One block per chunk, blockDim.x = chunk / 2.
__global__ void Radix2ChunkKernel(const double* srcRe, const double* srcIm, double* dstRe,
                                  double* dstIm, int64_t m, int log2m, int64_t chunk,
                                  const double* cosT, const double* sinT, int sign) {
  __shared__ double sRe[kFftChunk];
  __shared__ double sIm[kFftChunk];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * chunk;
  for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) {
    const auto g = static_cast<unsigned long long>(base + t);
    const auto r = static_cast<int64_t>(__brevll(g) >> (64 - log2m));
    sRe[t] = srcRe[r];
    sIm[t] = srcIm[r];
  }
  __syncthreads();
  for (int64_t len = 2; len <= chunk; len <<= 1) {
    const int64_t half = len / 2;
    const int64_t stride = m / len;
    for (int64_t b = threadIdx.x; b < chunk / 2; b += blockDim.x) {
      const int64_t group = b / half;
      const int64_t j = b - group * half;
      const int64_t a = group * len + j;
      const double wr = cosT[j * stride];
      const double wi = SignedSin(sinT, j * stride, sign);
      Butterfly(sRe[a], sIm[a], sRe[a + half], sIm[a + half], wr, wi);
    }
    __syncthreads();
  }
  for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) {
    dstRe[base + t] = sRe[t];
    dstIm[base + t] = sIm[t];
  }
}

// One stage (butterfly span len) over the whole array in global memory.
__global__ void Radix2StageKernel(double* re, double* im, int64_t m, int64_t len,
                                  const double* cosT, const double* sinT, int sign) {
  const int64_t half = len / 2;
  const int64_t stride = m / len;
  BP_CUDA_GRID_STRIDE(b, m / 2) {
    const int64_t group = b / half;
    const int64_t j = b - group * half;
    const int64_t a = group * len + j;
    const double wr = cosT[j * stride];
    const double wi = SignedSin(sinT, j * stride, sign);
    double ar = re[a], ai = im[a], br = re[a + half], bi = im[a + half];
    Butterfly(ar, ai, br, bi, wr, wi);
    re[a] = ar;
    im[a] = ai;
    re[a + half] = br;
    im[a + half] = bi;
  }
}

// dst = the reference's Radix2(src, sign) for a power-of-two m (src is not modified).
void Radix2Device(const double* srcRe, const double* srcIm, double* dstRe, double* dstIm,
                  int64_t m, const double* cosT, const double* sinT, int sign) {
  if (m <= 1) {
    CopyOnDevice(dstRe, srcRe, static_cast<size_t>(m) * sizeof(double));
    CopyOnDevice(dstIm, srcIm, static_cast<size_t>(m) * sizeof(double));
    return;
  }
  const int log2m = Log2(m);
  const int64_t chunk = m < kFftChunk ? m : kFftChunk;
  Radix2ChunkKernel<<<static_cast<unsigned>(m / chunk), static_cast<unsigned>(chunk / 2), 0,
                      Stream()>>>(srcRe, srcIm, dstRe, dstIm, m, log2m, chunk, cosT, sinT, sign);
  for (int64_t len = 2 * chunk; len <= m; len <<= 1) {
    Radix2StageKernel<<<GridFor(m / 2), kThreads, 0, Stream()>>>(dstRe, dstIm, m, len, cosT, sinT,
                                                                 sign);
  }
}

// re, im = the input widened (a null imagIn is a zero imaginary part).
template <class S>
__global__ void FftLoadKernel(const void* realIn, const void* imagIn, double* re, double* im,
                              int64_t n) {
  BP_CUDA_GRID_STRIDE(i, n) {
    re[i] = LdD<S>(realIn, i);
    im[i] = imagIn != nullptr ? LdD<S>(imagIn, i) : 0.0;
  }
}

// The power-of-two result (scaled by 1/n for the inverse) stored once.
template <class S>
__global__ void FftStoreKernel(const double* re, const double* im, void* realOut, void* imagOut,
                               int64_t n, bool inverse) {
  const double count = static_cast<double>(n);
  BP_CUDA_GRID_STRIDE(k, n) {
    double r = re[k], i = im[k];
    if (inverse) {
      r = Div(r, count);
      i = Div(i, count);
    }
    StR<S>(realOut, k, r);
    StR<S>(imagOut, k, i);
  }
}

// Bluestein: a_k = x_k w_k (k < n, else 0); b = conj(w_|k|) circularly indexed (else 0).
template <class S>
__global__ void BluesteinPrepareKernel(const void* realIn, const void* imagIn, const double* wr,
                                       const double* wi, double* ar, double* ai, double* br,
                                       double* bi, int64_t n, int64_t m) {
  BP_CUDA_GRID_STRIDE(k, m) {
    if (k < n) {
      const double xr = LdD<S>(realIn, k);
      const double xi = imagIn != nullptr ? LdD<S>(imagIn, k) : 0.0;
      ar[k] = Sub(Mul(xr, wr[k]), Mul(xi, wi[k]));
      ai[k] = Add(Mul(xr, wi[k]), Mul(xi, wr[k]));
    } else {
      ar[k] = 0.0;
      ai[k] = 0.0;
    }
    if (k < n) {
      br[k] = wr[k];
      bi[k] = -wi[k];
    } else if (k > m - n) {
      br[k] = wr[m - k];
      bi[k] = -wi[m - k];
    } else {
      br[k] = 0.0;
      bi[k] = 0.0;
    }
  }
}

// a = a * b (complex, element-wise).
__global__ void ComplexMultiplyKernel(const double* fr, const double* fi, const double* gr,
                                      const double* gi, double* outRe, double* outIm, int64_t m) {
  BP_CUDA_GRID_STRIDE(k, m) {
    const double r = Sub(Mul(fr[k], gr[k]), Mul(fi[k], gi[k]));
    const double i = Add(Mul(fr[k], gi[k]), Mul(fi[k], gr[k]));
    outRe[k] = r;
    outIm[k] = i;
  }
}

// X_k = w_k * conv_k / m (then / n for the inverse), stored once.
template <class S>
__global__ void BluesteinStoreKernel(const double* cr, const double* ci, const double* wr,
                                     const double* wi, void* realOut, void* imagOut, int64_t n,
                                     int64_t m, bool inverse) {
  const double inv = Div(1.0, static_cast<double>(m));
  const double count = static_cast<double>(n);
  BP_CUDA_GRID_STRIDE(k, n) {
    const double r0 = Mul(cr[k], inv), i0 = Mul(ci[k], inv);
    double r = Sub(Mul(r0, wr[k]), Mul(i0, wi[k]));
    double i = Add(Mul(r0, wi[k]), Mul(i0, wr[k]));
    if (inverse) {
      r = Div(r, count);
      i = Div(i, count);
    }
    StR<S>(realOut, k, r);
    StR<S>(imagOut, k, i);
  }
}

void Transform(std::string_view op, int sign, const void* realIn, const void* imagIn,
               void* realOut, void* imagOut, int64_t count, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  CheckPointer(op, "realIn", realIn, count);  // imagIn may be null: zero imaginary input
  CheckPointer(op, "realOut", realOut, count);
  CheckPointer(op, "imagOut", imagOut, count);
  if (count == 0) return;
  const bool inverse = sign > 0;
  const int64_t n = count;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    if (IsPowerOfTwo(n)) {
      std::vector<double> cosTable, sinTable;
      TwiddleTable(n, cosTable, sinTable);
      const size_t half = cosTable.size();
      const size_t vec = static_cast<size_t>(n) * sizeof(double);
      DeviceScratch scratch(4 * vec + 2 * half * sizeof(double));
      double* xRe = scratch.As<double>();
      double* xIm = xRe + n;
      double* yRe = xIm + n;
      double* yIm = yRe + n;
      double* cosT = yIm + n;
      double* sinT = cosT + half;
      if (half > 0) {
        CopyAsync(cosT, cosTable.data(), half * sizeof(double));
        CopyAsync(sinT, sinTable.data(), half * sizeof(double));
      }
      FftLoadKernel<S><<<GridFor(n), kThreads, 0, Stream()>>>(realIn, imagIn, xRe, xIm, n);
      Radix2Device(xRe, xIm, yRe, yIm, n, cosT, sinT, sign);
      FftStoreKernel<S><<<GridFor(n), kThreads, 0, Stream()>>>(yRe, yIm, realOut, imagOut, n,
                                                               inverse);
      scratch.Release();
      return;
    }
    // Bluestein. Chirp w_k = exp(sign * i pi (k^2 mod 2n) / n), exactly as the reference.
    std::vector<double> wrHost(static_cast<size_t>(n)), wiHost(static_cast<size_t>(n));
    uint64_t k2 = 0;
    const uint64_t twoN = 2 * static_cast<uint64_t>(n);
    for (int64_t k = 0; k < n; ++k) {
      const double angle = std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
      wrHost[static_cast<size_t>(k)] = std::cos(angle);
      wiHost[static_cast<size_t>(k)] = sign * std::sin(angle);
      k2 = (k2 + 2 * static_cast<uint64_t>(k) + 1) % twoN;
    }
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    std::vector<double> cosTable, sinTable;
    TwiddleTable(m, cosTable, sinTable);
    const size_t half = cosTable.size();
    const size_t mVec = static_cast<size_t>(m);
    const size_t nVec = static_cast<size_t>(n);
    DeviceScratch scratch((8 * mVec + 2 * nVec + 2 * half) * sizeof(double));
    double* ar = scratch.As<double>();
    double* ai = ar + m;
    double* br = ai + m;
    double* bi = br + m;
    double* fr = bi + m;
    double* fi = fr + m;
    double* gr = fi + m;
    double* gi = gr + m;
    double* wr = gi + m;
    double* wi = wr + n;
    double* cosT = wi + n;
    double* sinT = cosT + half;
    CopyAsync(wr, wrHost.data(), nVec * sizeof(double));
    CopyAsync(wi, wiHost.data(), nVec * sizeof(double));
    CopyAsync(cosT, cosTable.data(), half * sizeof(double));
    CopyAsync(sinT, sinTable.data(), half * sizeof(double));
    BluesteinPrepareKernel<S><<<GridFor(m), kThreads, 0, Stream()>>>(realIn, imagIn, wr, wi, ar,
                                                                     ai, br, bi, n, m);
    Radix2Device(ar, ai, fr, fi, m, cosT, sinT, -1);
    Radix2Device(br, bi, gr, gi, m, cosT, sinT, -1);
    ComplexMultiplyKernel<<<GridFor(m), kThreads, 0, Stream()>>>(fr, fi, gr, gi, ar, ai, m);
    Radix2Device(ar, ai, fr, fi, m, cosT, sinT, +1);
    BluesteinStoreKernel<S><<<GridFor(n), kThreads, 0, Stream()>>>(fr, fi, wr, wi, realOut,
                                                                   imagOut, n, m, inverse);
    scratch.Release();
  });
  FinishMethod(op);
}

void FFT1D(const void* realIn, const void* imagIn, void* realOut, void* imagOut, int64_t count,
           DType dtype) {
  Transform("Physics.FFT1D", -1, realIn, imagIn, realOut, imagOut, count, dtype);
}

void IFFT1D(const void* realIn, const void* imagIn, void* realOut, void* imagOut, int64_t count,
            DType dtype) {
  Transform("Physics.IFFT1D", +1, realIn, imagIn, realOut, imagOut, count, dtype);
}

// =================================================================================================
// Causal
// =================================================================================================

// a * b (* c), throwing when the element count would not fit in memory (the reference's).
int64_t CheckedProduct(std::string_view op, std::string_view arg, int64_t a, int64_t b,
                       int64_t c = 1) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 8;
  int64_t product = 1;
  for (int64_t f : {a, b, c}) {
    if (f != 0 && product > kMax / f) {
      ThrowInvalidArgument(op, arg, "an element count that fits in memory",
                           "a product that overflows");
    }
    product *= f;
  }
  return product;
}

double SumTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-9;
    case DType::Float32:
      return 1e-6;
    case DType::Float16:
      return 1e-3;
    default:
      return 1e-2;  // bf16
  }
}

double SymmetryTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-9;
    case DType::Float32:
      return 1e-4;
    case DType::Float16:
      return 1e-2;
    default:
      return 6e-2;  // bf16
  }
}

// The reference's CheckDistribution on a row read back to the host (values = the row, offset =
// its first index in the table).
void CheckDistributionHost(std::string_view op, std::string_view arg,
                           const std::vector<double>& values, size_t offset, DType dtype,
                           const std::string& where) {
  double sum = 0.0;
  for (size_t k = 0; k < values.size(); ++k) {
    const double p = values[k];
    if (!std::isfinite(p) || !(p >= 0.0)) {
      ThrowInvalidArgument(op, arg, "probabilities (finite and >= 0)",
                           Format("{} at index {}", p, offset + k));
    }
    sum += p;
  }
  const double tol = SumTolerance(dtype);
  if (!(std::fabs(sum - 1.0) <= tol)) {
    ThrowInvalidArgument(op, arg, Format("rows summing to 1 (within {})", tol),
                         Format("{} summing to {}", where, sum));
  }
}

// slot = the first row r < rows of data [rows, length] that is not a distribution: an entry not
// finite or < 0, or a sequential f64 sum farther than tol from 1.
template <class S>
__global__ void DistributionRowsKernel(const void* data, int64_t rows, int64_t length, double tol,
                                       unsigned long long* slot) {
  BP_CUDA_GRID_STRIDE(r, rows) {
    double sum = 0.0;
    bool bad = false;
    for (int64_t k = 0; k < length; ++k) {
      const double p = LdD<S>(data, r * length + k);
      if (!isfinite(p) || !(p >= 0.0)) {
        bad = true;
        break;
      }
      sum = Add(sum, p);
    }
    if (!bad && !(fabs(Sub(sum, 1.0)) <= tol)) bad = true;
    if (bad) atomicMin(slot, static_cast<unsigned long long>(r));
  }
}

template <class S>
void LaunchDistributionCheck(const void* data, int64_t rows, int64_t length, DType dtype,
                             unsigned long long* slot) {
  if (rows == 0) return;
  DistributionRowsKernel<S><<<GridFor(rows), kThreads, 0, Stream()>>>(
      data, rows, length, SumTolerance(dtype), slot);
}

// Throws the reference's message for the failing row `row` of a table [rows, length].
[[noreturn]] void ThrowDistribution(std::string_view op, std::string_view arg, const void* data,
                                    int64_t row, int64_t length, DType dtype,
                                    const std::string& where) {
  const std::vector<double> values = ReadValues(data, row * length, length, dtype);
  CheckDistributionHost(op, arg, values, static_cast<size_t>(row * length), dtype, where);
  throw Error(ErrorCode::Internal, op,
              Format("the device found row {} of '{}' not a distribution; the host disagrees", row,
                     arg));
}

// ---- Cholesky --------------------------------------------------------------------------------

template <class S>
struct NotFinite {
  const void* data;
  __device__ bool operator()(int64_t i) const { return !isfinite(LdD<S>(data, i)); }
};

// (i, j), j < i: |a_ij - a_ji| > tol * max(|a_ij|, |a_ji|, sqrt(|a_ii| |a_jj|)) (or NaN).
template <class S>
struct NotSymmetric {
  const void* a;
  int64_t n;
  double tol;
  __device__ bool operator()(int64_t idx) const {
    const int64_t i = idx / n;
    const int64_t j = idx - i * n;
    if (j >= i) return false;
    const double aij = LdD<S>(a, i * n + j);
    const double aji = LdD<S>(a, j * n + i);
    const double aii = LdD<S>(a, i * n + i);
    const double ajj = LdD<S>(a, j * n + j);
    double scale = fabs(aij);
    const double b = fabs(aji);
    const double c = sqrt(Mul(fabs(aii), fabs(ajj)));
    if (scale < b) scale = b;
    if (scale < c) scale = c;
    return !(fabs(Sub(aij, aji)) <= Mul(tol, scale));
  }
};

struct CholeskyStatus {
  unsigned long long failed;  // 0 while every pivot so far was > 0
  long long row;
  double pivot;
};

// Column j of L (column-major scratch: lc[k * n + i] = L[i][k]). Every block recomputes the pivot
// a_jj - sum_k L[j][k]^2 in the reference's order; rows i > j: (a_ij - sum_k L[i][k] L[j][k]) /
// L[j][j].
template <class S>
__global__ void CholeskyColumnKernel(const void* a, int64_t n, int64_t j, double* lc,
                                     CholeskyStatus* status) {
  __shared__ double diag;
  __shared__ int ok;
  if (threadIdx.x == 0) {
    // A failure of an earlier column (an earlier launch) ends the factorisation. Block 0 of this
    // launch may set the flag while other blocks read it; they then stop, as they would anyway.
    ok = status->failed == 0 ? 1 : 0;
    if (ok) {
      double s = LdD<S>(a, j * n + j);
      for (int64_t k = 0; k < j; ++k) {
        const double l = lc[k * n + j];
        s = Sub(s, Mul(l, l));
      }
      if (s > 0.0) {
        diag = sqrt(s);
        if (blockIdx.x == 0) lc[j * n + j] = diag;
      } else {
        ok = 0;
        if (blockIdx.x == 0) {
          status->failed = 1;
          status->row = j;
          status->pivot = s;
        }
      }
    }
  }
  __syncthreads();
  if (!ok) return;
  const double d = diag;
  for (int64_t i = j + 1 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    double s = LdD<S>(a, i * n + j);
    for (int64_t k = 0; k < j; ++k) s = Sub(s, Mul(lc[k * n + i], lc[k * n + j]));
    lc[j * n + i] = Div(s, d);
  }
}

// output[i][j] = L[i][j] for j <= i, +0 above the diagonal.
template <class S>
__global__ void CholeskyStoreKernel(const double* lc, void* output, int64_t n) {
  BP_CUDA_GRID_STRIDE(idx, n * n) {
    const int64_t i = idx / n;
    const int64_t j = idx - i * n;
    StR<S>(output, idx, j <= i ? lc[j * n + i] : 0.0);
  }
}

void Cholesky(const void* input, void* output, int64_t matrixOrder, DType dtype) {
  constexpr std::string_view op = "Causal.Cholesky";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "matrixOrder", matrixOrder);
  const int64_t total = CheckedProduct(op, "matrixOrder", matrixOrder, matrixOrder);
  CheckPointer(op, "input", input, total);
  CheckPointer(op, "output", output, total);
  if (total == 0) return;
  const int64_t n = matrixOrder;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    // Checks: slots[0] the first non-finite entry, slots[1] the first asymmetric pair (i, j < i).
    {
      DeviceScratch slots(2 * sizeof(unsigned long long));
      auto* slot = slots.As<unsigned long long>();
      FillBytes(slot, 0xFF, 2 * sizeof(unsigned long long));
      FirstBadKernel<<<GridFor(total), kThreads, 0, Stream()>>>(NotFinite<S>{input}, total, slot);
      FirstBadKernel<<<GridFor(total), kThreads, 0, Stream()>>>(
          NotSymmetric<S>{input, n, SymmetryTolerance(dtype)}, total, slot + 1);
      unsigned long long host[2] = {kNone, kNone};
      CopyToHost(host, slot, sizeof(host));
      slots.Release();
      FinishMethod(op);
      if (host[0] != kNone) {
        const auto idx = static_cast<int64_t>(host[0]);
        const double v = ReadValue(input, idx, dtype);
        ThrowInvalidArgument(op, "input", "finite entries",
                             Format("{} at ({}, {})", v, static_cast<size_t>(idx / n),
                                    static_cast<size_t>(idx % n)));
      }
      if (host[1] != kNone) {
        const auto idx = static_cast<int64_t>(host[1]);
        const int64_t i = idx / n, j = idx % n;
        const double aij = ReadValue(input, i * n + j, dtype);
        const double aji = ReadValue(input, j * n + i, dtype);
        const double symTol = SymmetryTolerance(dtype);
        ThrowInvalidArgument(op, "input", Format("symmetric (relative tolerance {})", symTol),
                             Format("A[{}][{}] = {} but A[{}][{}] = {}", static_cast<size_t>(i),
                                    static_cast<size_t>(j), aij, static_cast<size_t>(j),
                                    static_cast<size_t>(i), aji));
      }
    }
    // Factorisation into scratch; the output is written only when every pivot is > 0.
    const size_t lBytes = static_cast<size_t>(total) * sizeof(double);
    DeviceScratch scratch(lBytes + sizeof(CholeskyStatus));
    double* lc = scratch.As<double>();
    auto* status = reinterpret_cast<CholeskyStatus*>(static_cast<char*>(scratch.Get()) + lBytes);
    FillBytes(status, 0, sizeof(CholeskyStatus));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t below = n - 1 - j;
      CholeskyColumnKernel<S><<<GridFor(below > 0 ? below : 1), kThreads, 0, Stream()>>>(
          input, n, j, lc, status);
    }
    CholeskyStatus host{};
    CopyToHost(&host, status, sizeof(host));
    FinishMethod(op);
    if (host.failed != 0) {
      ThrowInvalidArgument(op, "input", "positive definite",
                           Format("pivot {} at row {}", host.pivot, static_cast<size_t>(host.row)));
    }
    CholeskyStoreKernel<S><<<GridFor(total), kThreads, 0, Stream()>>>(lc, output, n);
    scratch.Release();
  });
  FinishMethod(op);
}

// ---- Back-door and front-door adjustment -------------------------------------------------------

// out[x][y] = sum_z cond[(x Z + z) Y + y] pz[z]
template <class S>
__global__ void BackdoorKernel(const void* cond, const void* pz, void* out, int64_t X, int64_t Z,
                               int64_t Y) {
  BP_CUDA_GRID_STRIDE(idx, X * Y) {
    const int64_t x = idx / Y;
    const int64_t y = idx - x * Y;
    double sum = 0.0;
    for (int64_t z = 0; z < Z; ++z) {
      sum = Add(sum, Mul(LdD<S>(cond, (x * Z + z) * Y + y), LdD<S>(pz, z)));
    }
    StR<S>(out, idx, sum);
  }
}

void BackdoorAdjustment(const void* conditional, const void* marginalZ, void* output,
                        int64_t xCount, int64_t zCount, int64_t yCount, DType dtype) {
  constexpr std::string_view op = "Causal.BackdoorAdjustment";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "xCount", xCount);
  CheckNonNegative(op, "zCount", zCount);
  CheckNonNegative(op, "yCount", yCount);
  const int64_t condCount = CheckedProduct(op, "conditional", xCount, zCount, yCount);
  const int64_t outCount = CheckedProduct(op, "output", xCount, yCount);
  CheckPointer(op, "conditional", conditional, condCount);
  CheckPointer(op, "marginalZ", marginalZ, zCount);
  CheckPointer(op, "output", output, outCount);
  if (outCount == 0) return;
  if (zCount == 0) {
    ThrowInvalidArgument(op, "zCount", "> 0 when the output is not empty (P(z) needs a state)",
                         "0");
  }
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    {
      DeviceScratch slots(2 * sizeof(unsigned long long));
      auto* slot = slots.As<unsigned long long>();
      FillBytes(slot, 0xFF, 2 * sizeof(unsigned long long));
      LaunchDistributionCheck<S>(marginalZ, 1, zCount, dtype, slot);
      LaunchDistributionCheck<S>(conditional, xCount * zCount, yCount, dtype, slot + 1);
      unsigned long long host[2] = {kNone, kNone};
      CopyToHost(host, slot, sizeof(host));
      slots.Release();
      FinishMethod(op);
      if (host[0] != kNone) ThrowDistribution(op, "marginalZ", marginalZ, 0, zCount, dtype, "P(z)");
      if (host[1] != kNone) {
        const auto r = static_cast<int64_t>(host[1]);
        ThrowDistribution(op, "conditional", conditional, r, yCount, dtype,
                          Format("row (x={}, z={})", static_cast<size_t>(r / zCount),
                                 static_cast<size_t>(r % zCount)));
      }
    }
    const size_t outBytes = DTypeStorageBytes(dtype, outCount);
    std::optional<DeviceScratch> condCopy, pzCopy;
    const void* cond =
        Unaliased(conditional, DTypeStorageBytes(dtype, condCount), output, outBytes, condCopy);
    const void* pz = Unaliased(marginalZ, DTypeStorageBytes(dtype, zCount), output, outBytes, pzCopy);
    BackdoorKernel<S><<<GridFor(outCount), kThreads, 0, Stream()>>>(cond, pz, output, xCount,
                                                                    zCount, yCount);
    if (pzCopy) pzCopy->Release();
    if (condCopy) condCopy->Release();
  });
  FinishMethod(op);
}

// inner[m][y] = sum_x' pyxm[(x' M + m) Y + y] px[x']
template <class S>
__global__ void FrontdoorInnerKernel(const void* pyxm, const void* px, double* inner, int64_t X,
                                     int64_t M, int64_t Y) {
  BP_CUDA_GRID_STRIDE(idx, M * Y) {
    const int64_t m = idx / Y;
    const int64_t y = idx - m * Y;
    double sum = 0.0;
    for (int64_t xp = 0; xp < X; ++xp) {
      sum = Add(sum, Mul(LdD<S>(pyxm, (xp * M + m) * Y + y), LdD<S>(px, xp)));
    }
    inner[idx] = sum;
  }
}

// out[x][y] = sum_m pmx[x M + m] inner[m][y]
template <class S>
__global__ void FrontdoorOuterKernel(const void* pmx, const double* inner, void* out, int64_t X,
                                     int64_t M, int64_t Y) {
  BP_CUDA_GRID_STRIDE(idx, X * Y) {
    const int64_t x = idx / Y;
    const int64_t y = idx - x * Y;
    double sum = 0.0;
    for (int64_t m = 0; m < M; ++m) sum = Add(sum, Mul(LdD<S>(pmx, x * M + m), inner[m * Y + y]));
    StR<S>(out, idx, sum);
  }
}

void FrontdoorAdjustment(const void* mediatorGivenX, const void* outcomeGivenXM,
                         const void* marginalX, void* output, int64_t xCount, int64_t mediatorCount,
                         int64_t yCount, DType dtype) {
  constexpr std::string_view op = "Causal.FrontdoorAdjustment";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "xCount", xCount);
  CheckNonNegative(op, "mediatorCount", mediatorCount);
  CheckNonNegative(op, "yCount", yCount);
  const int64_t mxCount = CheckedProduct(op, "mediatorGivenX", xCount, mediatorCount);
  const int64_t oCount = CheckedProduct(op, "outcomeGivenXM", xCount, mediatorCount, yCount);
  const int64_t outCount = CheckedProduct(op, "output", xCount, yCount);
  CheckPointer(op, "mediatorGivenX", mediatorGivenX, mxCount);
  CheckPointer(op, "outcomeGivenXM", outcomeGivenXM, oCount);
  CheckPointer(op, "marginalX", marginalX, xCount);
  CheckPointer(op, "output", output, outCount);
  if (outCount == 0) return;
  if (mediatorCount == 0) {
    ThrowInvalidArgument(op, "mediatorCount",
                         "> 0 when the output is not empty (P(m|x) needs a state)", "0");
  }
  const int64_t X = xCount, M = mediatorCount, Y = yCount;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    {
      DeviceScratch slots(3 * sizeof(unsigned long long));
      auto* slot = slots.As<unsigned long long>();
      FillBytes(slot, 0xFF, 3 * sizeof(unsigned long long));
      LaunchDistributionCheck<S>(mediatorGivenX, X, M, dtype, slot);
      LaunchDistributionCheck<S>(outcomeGivenXM, X * M, Y, dtype, slot + 1);
      LaunchDistributionCheck<S>(marginalX, 1, X, dtype, slot + 2);
      unsigned long long host[3] = {kNone, kNone, kNone};
      CopyToHost(host, slot, sizeof(host));
      slots.Release();
      FinishMethod(op);
      if (host[0] != kNone) {
        const auto r = static_cast<int64_t>(host[0]);
        ThrowDistribution(op, "mediatorGivenX", mediatorGivenX, r, M, dtype,
                          Format("row x={}", static_cast<size_t>(r)));
      }
      if (host[1] != kNone) {
        const auto r = static_cast<int64_t>(host[1]);
        ThrowDistribution(op, "outcomeGivenXM", outcomeGivenXM, r, Y, dtype,
                          Format("row (x={}, m={})", static_cast<size_t>(r / M),
                                 static_cast<size_t>(r % M)));
      }
      if (host[2] != kNone) ThrowDistribution(op, "marginalX", marginalX, 0, X, dtype, "P(x)");
    }
    DeviceScratch inner(static_cast<size_t>(M * Y) * sizeof(double));
    FrontdoorInnerKernel<S><<<GridFor(M * Y), kThreads, 0, Stream()>>>(
        outcomeGivenXM, marginalX, inner.As<double>(), X, M, Y);
    // The inner sums are complete (stream order) before the output is written; only P(m|x) is
    // still read while it is.
    std::optional<DeviceScratch> pmxCopy;
    const void* pmx = Unaliased(mediatorGivenX, DTypeStorageBytes(dtype, mxCount), output,
                                DTypeStorageBytes(dtype, outCount), pmxCopy);
    FrontdoorOuterKernel<S><<<GridFor(outCount), kThreads, 0, Stream()>>>(
        pmx, inner.As<double>(), output, X, M, Y);
    if (pmxCopy) pmxCopy->Release();
    inner.Release();
  });
  FinishMethod(op);
}

// ---- DoIntervene -------------------------------------------------------------------------------

// first[t] = the first k with intervened[k] == t (ids in range); slots[0] = the first k out of range.
__global__ void InterveneFirstKernel(const int32_t* intervened, int64_t count, int64_t nodeCount,
                                     unsigned long long* first, unsigned long long* slots) {
  BP_CUDA_GRID_STRIDE(k, count) {
    const int32_t t = intervened[k];
    if (t < 0 || t >= nodeCount) {
      atomicMin(&slots[0], static_cast<unsigned long long>(k));
    } else {
      atomicMin(&first[t], static_cast<unsigned long long>(k));
    }
  }
}

// slots[1] = the first k whose (in-range) id already occurred at an earlier position.
__global__ void InterveneRepeatKernel(const int32_t* intervened, int64_t count, int64_t nodeCount,
                                      const unsigned long long* first, unsigned long long* slots) {
  BP_CUDA_GRID_STRIDE(k, count) {
    const int32_t t = intervened[k];
    if (t >= 0 && t < nodeCount && first[t] < static_cast<unsigned long long>(k)) {
      atomicMin(&slots[1], static_cast<unsigned long long>(k));
    }
  }
}

// Column intervened[k] of every row set to +0 (all-zero bits), for every k.
template <class Word>
__global__ void ZeroColumnsKernel(void* output, const int32_t* intervened, int64_t count,
                                  int64_t n) {
  BP_CUDA_GRID_STRIDE(idx, count * n) {
    const int64_t k = idx / n;
    const int64_t row = idx - k * n;
    static_cast<Word*>(output)[row * n + intervened[k]] = Word{0};
  }
}

void DoIntervene(const void* adjacency, const int32_t* intervened, void* output, int64_t nodeCount,
                 int64_t intervenedCount, DType dtype) {
  constexpr std::string_view op = "Causal.DoIntervene";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "nodeCount", nodeCount);
  CheckNonNegative(op, "intervenedCount", intervenedCount);
  const int64_t total = CheckedProduct(op, "nodeCount", nodeCount, nodeCount);
  CheckPointer(op, "adjacency", adjacency, total);
  CheckPointer(op, "intervened", intervened, intervenedCount);
  CheckPointer(op, "output", output, total);
  if (intervenedCount > 0) {
    const size_t n = static_cast<size_t>(nodeCount);
    DeviceScratch scratch((n + 2) * sizeof(unsigned long long));
    auto* first = scratch.As<unsigned long long>();
    unsigned long long* slots = first + n;
    FillBytes(first, 0xFF, (n + 2) * sizeof(unsigned long long));
    InterveneFirstKernel<<<GridFor(intervenedCount), kThreads, 0, Stream()>>>(
        intervened, intervenedCount, nodeCount, first, slots);
    InterveneRepeatKernel<<<GridFor(intervenedCount), kThreads, 0, Stream()>>>(
        intervened, intervenedCount, nodeCount, first, slots);
    unsigned long long host[2] = {kNone, kNone};
    CopyToHost(host, slots, sizeof(host));
    FinishMethod(op);
    const unsigned long long badK = std::min(host[0], host[1]);
    if (badK != kNone) {
      const auto k = static_cast<int64_t>(badK);
      const int32_t t = ReadInt32(intervened, k);
      if (t < 0 || t >= nodeCount) {
        ThrowInvalidArgument(op, "intervened", Format("node ids in [0, {})", nodeCount),
                             Format("intervened[{}] = {}", k, t));
      }
      unsigned long long seen = kNone;
      CopyToHost(&seen, first + t, sizeof(seen));
      ThrowInvalidArgument(op, "intervened", "distinct node ids",
                           Format("node {} at intervened[{}] and intervened[{}]", t,
                                  static_cast<int64_t>(seen), k));
    }
    scratch.Release();
  }
  if (total == 0) return;
  const size_t elem = DTypeStorageBytes(dtype, 1);
  const size_t bytes = DTypeStorageBytes(dtype, total);
  if (output != adjacency) {
    if (Overlaps(adjacency, bytes, output, bytes)) {  // memmove semantics through a copy
      DeviceScratch copy(bytes);
      CopyOnDevice(copy.Get(), adjacency, bytes);
      CopyOnDevice(output, copy.Get(), bytes);
      copy.Release();
    } else {
      CopyOnDevice(output, adjacency, bytes);
    }
  }
  if (intervenedCount > 0) {
    const int64_t work = intervenedCount * nodeCount;
    switch (elem) {
      case 8:
        ZeroColumnsKernel<unsigned long long><<<GridFor(work), kThreads, 0, Stream()>>>(
            output, intervened, intervenedCount, nodeCount);
        break;
      case 4:
        ZeroColumnsKernel<uint32_t><<<GridFor(work), kThreads, 0, Stream()>>>(
            output, intervened, intervenedCount, nodeCount);
        break;
      default:
        ZeroColumnsKernel<uint16_t><<<GridFor(work), kThreads, 0, Stream()>>>(
            output, intervened, intervenedCount, nodeCount);
        break;
    }
  }
  FinishMethod(op);
}

// ---- CATE and Counterfactual -------------------------------------------------------------------

void CheckElementwise(std::string_view op, DType dtype, int64_t count,
                      std::initializer_list<std::pair<std::string_view, const void*>> buffers) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "count", count);
  for (const auto& [name, ptr] : buffers) CheckPointer(op, name, ptr, count);
}

template <class S>
__global__ void CateKernel(const void* treated, const void* control, void* out, int64_t n) {
  BP_CUDA_GRID_STRIDE(i, n) { StR<S>(out, i, Sub(LdD<S>(treated, i), LdD<S>(control, i))); }
}

void CATE(const void* left, const void* right, void* output, int64_t count, DType dtype) {
  constexpr std::string_view op = "Causal.CATE";
  CheckElementwise(op, dtype, count, {{"left", left}, {"right", right}, {"output", output}});
  if (count == 0) return;
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = DTypeStorageBytes(dtype, count);
    std::optional<DeviceScratch> leftCopy, rightCopy;
    const void* treated = UnaliasedElementwise(left, output, bytes, leftCopy);
    const void* control = UnaliasedElementwise(right, output, bytes, rightCopy);
    CateKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(treated, control, output, count);
    if (rightCopy) rightCopy->Release();
    if (leftCopy) leftCopy->Release();
  });
  FinishMethod(op);
}

// y' = y + slope (x' - x)
template <class S>
__global__ void CounterfactualKernel(const void* y, const void* x, const void* xp, void* out,
                                     int64_t n, double b) {
  BP_CUDA_GRID_STRIDE(i, n) {
    StR<S>(out, i, Add(LdD<S>(y, i), Mul(b, Sub(LdD<S>(xp, i), LdD<S>(x, i)))));
  }
}

void Counterfactual(const void* observedY, const void* observedX, const void* counterfactualX,
                    void* output, int64_t count, float slope, DType dtype) {
  constexpr std::string_view op = "Causal.Counterfactual";
  CheckElementwise(op, dtype, count,
                   {{"observedY", observedY},
                    {"observedX", observedX},
                    {"counterfactualX", counterfactualX},
                    {"output", output}});
  CheckFinite(op, "slope", static_cast<double>(slope));
  if (count == 0) return;
  const double b = static_cast<double>(slope);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const size_t bytes = DTypeStorageBytes(dtype, count);
    std::optional<DeviceScratch> yCopy, xCopy, xpCopy;
    const void* y = UnaliasedElementwise(observedY, output, bytes, yCopy);
    const void* x = UnaliasedElementwise(observedX, output, bytes, xCopy);
    const void* xp = UnaliasedElementwise(counterfactualX, output, bytes, xpCopy);
    CounterfactualKernel<S><<<GridFor(count), kThreads, 0, Stream()>>>(y, x, xp, output, count, b);
    if (xpCopy) xpCopy->Release();
    if (xCopy) xCopy->Release();
    if (yCopy) yCopy->Release();
  });
  FinishMethod(op);
}

// ---- IVEstimate --------------------------------------------------------------------------------

struct Sum4 {
  double v[4];
};

template <class S>
struct IvMeansOp {
  using Acc = Sum4;
  const void* z;
  const void* x;
  const void* y;
  __device__ Acc Identity() const { return Acc{{0.0, 0.0, 0.0, 0.0}}; }
  __device__ Acc Element(int64_t i) const {
    return Acc{{LdD<S>(z, i), LdD<S>(x, i), LdD<S>(y, i), 0.0}};
  }
  __device__ Acc Combine(const Acc& a, const Acc& b) const {
    return Acc{{Add(a.v[0], b.v[0]), Add(a.v[1], b.v[1]), Add(a.v[2], b.v[2]),
                Add(a.v[3], b.v[3])}};
  }
};

// (szy, szx, szz, sxx) terms: centred products.
template <class S>
struct IvCentredOp {
  using Acc = Sum4;
  const void* z;
  const void* x;
  const void* y;
  double zMean, xMean, yMean;
  __device__ Acc Identity() const { return Acc{{0.0, 0.0, 0.0, 0.0}}; }
  __device__ Acc Element(int64_t i) const {
    const double dz = Sub(LdD<S>(z, i), zMean);
    const double dx = Sub(LdD<S>(x, i), xMean);
    const double dy = Sub(LdD<S>(y, i), yMean);
    return Acc{{Mul(dz, dy), Mul(dz, dx), Mul(dz, dz), Mul(dx, dx)}};
  }
  __device__ Acc Combine(const Acc& a, const Acc& b) const {
    return Acc{{Add(a.v[0], b.v[0]), Add(a.v[1], b.v[1]), Add(a.v[2], b.v[2]),
                Add(a.v[3], b.v[3])}};
  }
};

void IVEstimate(const void* instrument, const void* treatment, const void* outcome, int64_t count,
                void* output, DType dtype) {
  constexpr std::string_view op = "Causal.IVEstimate";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  if (count < 2) ThrowInvalidArgument(op, "count", ">= 2", std::to_string(count));
  CheckPointer(op, "instrument", instrument, count);
  CheckPointer(op, "treatment", treatment, count);
  CheckPointer(op, "outcome", outcome, count);
  CheckPointer(op, "output", output, 1);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    const int64_t blocks = ReduceBlocks(count);
    DeviceScratch scratch(static_cast<size_t>(blocks + 1) * sizeof(Sum4));
    Sum4* partials = scratch.As<Sum4>();
    Sum4* result = partials + blocks;
    ReduceOnDevice(IvMeansOp<S>{instrument, treatment, outcome}, count, partials, result);
    Sum4 sums{};
    CopyToHost(&sums, result, sizeof(sums));
    FinishMethod(op);
    const double n = static_cast<double>(count);
    const double zMean = sums.v[0] / n, xMean = sums.v[1] / n, yMean = sums.v[2] / n;
    ReduceOnDevice(IvCentredOp<S>{instrument, treatment, outcome, zMean, xMean, yMean}, count,
                   partials, result);
    CopyToHost(&sums, result, sizeof(sums));
    FinishMethod(op);
    scratch.Release();
    const double szy = sums.v[0], szx = sums.v[1], szz = sums.v[2], sxx = sums.v[3];
    const double scale = std::sqrt(szz) * std::sqrt(sxx);
    if (std::isfinite(szx) && std::isfinite(scale) && std::fabs(szx) <= 1e-12 * scale) {
      ThrowInvalidArgument(op, "instrument",
                           "correlated with the treatment (|corr(Z, X)| >= 1e-12)",
                           Format("Cov(Z, X) sum {} against scale {}", szx, scale));
    }
    StoreScalarKernel<S><<<1, 1, 0, Stream()>>>(output, szy / szx);
  });
  FinishMethod(op);
}

// ---- DAGMarkovFactorization ----------------------------------------------------------------

template <class S>
struct NotProbability {
  const void* c;
  __device__ bool operator()(int64_t i) const {
    const double p = LdD<S>(c, i);
    return !(p >= 0.0 && p <= 1.0);
  }
};

// A product kept as a significand (in [0.5, 1), or the identity 1, or 0) and a binary exponent.
struct Scaled {
  double m;
  long long e;
};

template <class S>
struct ProductOp {
  using Acc = Scaled;
  const void* c;
  __device__ Acc Identity() const { return Acc{1.0, 0}; }
  __device__ Acc Element(int64_t i) const {
    const double p = LdD<S>(c, i);
    if (p == 0.0) return Acc{0.0, 0};
    int pe = 0;
    const double pm = frexp(p, &pe);  // exact; normalises subnormal factors
    return Acc{pm, pe};
  }
  __device__ Acc Combine(const Acc& a, const Acc& b) const {
    if (a.m == 0.0 || b.m == 0.0) return Acc{0.0, 0};
    int e = 0;
    const double m = frexp(Mul(a.m, b.m), &e);
    return Acc{m, a.e + b.e + e};
  }
};

// The reference's final step: ldexp(mantissa, max(exponent, -2000)), 0 for a zero product.
template <class S>
__global__ void StoreScaledKernel(const Scaled* product, void* output) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const Scaled p = *product;
  double result = 0.0;
  if (p.m != 0.0) {
    const long long e = p.e < -2000 ? -2000 : p.e;
    result = ldexp(p.m, static_cast<int>(e));
  }
  StR<S>(output, 0, result);
}

void DAGMarkovFactorization(const void* conditionals, int64_t conditionalCount, void* output,
                            DType dtype) {
  constexpr std::string_view op = "Causal.DAGMarkovFactorization";
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "conditionalCount", conditionalCount);
  CheckPointer(op, "conditionals", conditionals, conditionalCount);
  CheckPointer(op, "output", output, 1);
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    if (conditionalCount == 0) {  // the empty product
      StoreScalarKernel<S><<<1, 1, 0, Stream()>>>(output, 1.0);
      return;
    }
    const int64_t blocks = ReduceBlocks(conditionalCount);
    DeviceScratch scratch(static_cast<size_t>(blocks + 1) * sizeof(Scaled) +
                          sizeof(unsigned long long));
    Scaled* partials = scratch.As<Scaled>();
    Scaled* result = partials + blocks;
    auto* slot = reinterpret_cast<unsigned long long*>(result + 1);
    FillBytes(slot, 0xFF, sizeof(unsigned long long));
    FirstBadKernel<<<GridFor(conditionalCount), kThreads, 0, Stream()>>>(
        NotProbability<S>{conditionals}, conditionalCount, slot);
    unsigned long long bad = kNone;
    CopyToHost(&bad, slot, sizeof(bad));
    FinishMethod(op);
    if (bad != kNone) {
      const double v = ReadValue(conditionals, static_cast<int64_t>(bad), dtype);
      ThrowInvalidArgument(op, "conditionals", "probabilities in [0, 1]",
                           Format("conditionals[{}] = {}", static_cast<size_t>(bad), v));
    }
    ReduceOnDevice(ProductOp<S>{conditionals}, conditionalCount, partials, result);
    StoreScaledKernel<S><<<1, 1, 0, Stream()>>>(result, output);
    scratch.Release();
  });
  FinishMethod(op);
}

// ---- Markov flows ------------------------------------------------------------------------------

struct BadLabel {
  const int32_t* partition;
  __device__ bool operator()(int64_t i) const { return partition[i] < 0 || partition[i] > 3; }
};

template <class S>
struct BadInformation {
  const void* mi;
  __device__ bool operator()(int64_t i) const {
    const double v = LdD<S>(mi, i);
    return !isfinite(v) || !(v >= 0.0);
  }
};

// out[i] = sum_{j != i, label j == 0} MI[i][j] for label i == source, 0 otherwise.
template <class S>
__global__ void MarkovFlowKernel(const void* mi, const int32_t* partition, void* out, int64_t n,
                                 int32_t source) {
  BP_CUDA_GRID_STRIDE(i, n) {
    double sum = 0.0;
    if (partition[i] == source) {
      for (int64_t j = 0; j < n; ++j) {
        if (j != i && partition[j] == 0) sum = Add(sum, LdD<S>(mi, i * n + j));
      }
    }
    StR<S>(out, i, sum);
  }
}

void MarkovFlow(std::string_view op, int32_t sourceLabel, const void* mutualInformation,
                const int32_t* partition, void* output, int64_t nodeCount, DType dtype) {
  CheckDType(op, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(op, "nodeCount", nodeCount);
  const int64_t total = CheckedProduct(op, "nodeCount", nodeCount, nodeCount);
  CheckPointer(op, "mutualInformation", mutualInformation, total);
  CheckPointer(op, "partition", partition, nodeCount);
  CheckPointer(op, "output", output, nodeCount);
  if (nodeCount == 0) return;  // nothing to check or write (total = 0 too)
  ByFloatDType(op, dtype, [&](auto storage) {
    using S = decltype(storage);
    {
      DeviceScratch slots(2 * sizeof(unsigned long long));
      auto* slot = slots.As<unsigned long long>();
      FillBytes(slot, 0xFF, 2 * sizeof(unsigned long long));
      FirstBadKernel<<<GridFor(nodeCount), kThreads, 0, Stream()>>>(BadLabel{partition},
                                                                    nodeCount, slot);
      FirstBadKernel<<<GridFor(total), kThreads, 0, Stream()>>>(
          BadInformation<S>{mutualInformation}, total, slot + 1);
      unsigned long long host[2] = {kNone, kNone};
      CopyToHost(host, slot, sizeof(host));
      slots.Release();
      FinishMethod(op);
      if (host[0] != kNone) {
        const auto i = static_cast<int64_t>(host[0]);
        ThrowInvalidArgument(op, "partition",
                             "labels 0 (internal), 1 (sensory), 2 (active) or 3 (external)",
                             Format("partition[{}] = {}", i, ReadInt32(partition, i)));
      }
      if (host[1] != kNone) {
        const auto i = static_cast<int64_t>(host[1]);
        const double v = ReadValue(mutualInformation, i, dtype);
        ThrowInvalidArgument(op, "mutualInformation", "finite and >= 0",
                             Format("{} at index {}", v, static_cast<size_t>(i)));
      }
    }
    const size_t outBytes = DTypeStorageBytes(dtype, nodeCount);
    std::optional<DeviceScratch> miCopy, labelCopy;
    const void* mi = Unaliased(mutualInformation, DTypeStorageBytes(dtype, total), output, outBytes,
                               miCopy);
    const auto* labels = static_cast<const int32_t*>(
        Unaliased(partition, static_cast<size_t>(nodeCount) * sizeof(int32_t), output, outBytes,
                  labelCopy));
    MarkovFlowKernel<S><<<GridFor(nodeCount), kThreads, 0, Stream()>>>(mi, labels, output,
                                                                       nodeCount, sourceLabel);
    if (labelCopy) labelCopy->Release();
    if (miCopy) miCopy->Release();
  });
  FinishMethod(op);
}

void MarkovFlowActive(const void* mutualInformation, const int32_t* partition, void* output,
                      int64_t nodeCount, DType dtype) {
  MarkovFlow("Causal.MarkovFlowActive", 2, mutualInformation, partition, output, nodeCount, dtype);
}

void MarkovFlowInternal(const void* mutualInformation, const int32_t* partition, void* output,
                        int64_t nodeCount, DType dtype) {
  MarkovFlow("Causal.MarkovFlowInternal", 0, mutualInformation, partition, output, nodeCount,
             dtype);
}

}  // namespace

void RegisterPhysicsCausal(KernelTable& table) {
  table.Physics_Laplacian = &Laplacian;
  table.Physics_Laplacian4 = &Laplacian4;
  table.Physics_Grad1D = &Grad1D;
  table.Physics_Divergence1D = &Divergence1D;
  table.Physics_FFT1D = &FFT1D;
  table.Physics_IFFT1D = &IFFT1D;
  table.Physics_QuantumPotential = &QuantumPotential;
  table.Physics_BohmianVelocity = &BohmianVelocity;
  table.Physics_MadelungContinuity = &MadelungContinuity;

  table.Causal_Cholesky = &Cholesky;
  table.Causal_BackdoorAdjustment = &BackdoorAdjustment;
  table.Causal_FrontdoorAdjustment = &FrontdoorAdjustment;
  table.Causal_DoIntervene = &DoIntervene;
  table.Causal_CATE = &CATE;
  table.Causal_Counterfactual = &Counterfactual;
  table.Causal_IVEstimate = &IVEstimate;
  table.Causal_DAGMarkovFactorization = &DAGMarkovFactorization;
  table.Causal_MarkovFlowActive = &MarkovFlowActive;
  table.Causal_MarkovFlowInternal = &MarkovFlowInternal;
}

}  // namespace backplane::cuda
