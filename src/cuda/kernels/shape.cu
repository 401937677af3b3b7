// CUDA kernels for the Shape surface (9 methods: Reshape, Transpose, Concat, Split,
// UpsampleNearest2D, ViewAsHeads, MergeHeads, LastToken, Slice) and ten TensorOps methods
// (Compare, Logical, Where, Cast, Trilu, Pow, Mod, Round, Trig, BitShift). Semantics: the CPU
// scalar reference (src/cpu/reference/shape.cpp, tensor_ops_elementwise.cpp, tensor_ops_axis.cpp,
// tensor_ops_math.cpp) and docs/semantics/{shape,tensor_ops,math_ops}.md: the same argument checks
// in the same order with the same messages, all before anything is written.
//
// Shape: every element is moved bit for bit. A layout change is reduced to a strided gather (output
// element e, row-major over the output dims, comes from input element base + sum_a idx_a * step_a)
// whose size-1 axes are dropped and whose contiguous neighbours are merged. Byte-sized dtypes
// (1, 2, 4, 8 or 16 bytes) move as unsigned words: a flat copy goes to cudaMemcpyAsync, a
// transpose whose input-contiguous axis is not the output's last one goes through 32 x 32
// shared-memory tiles, anything else through a general strided kernel. The packed dtypes (Int4 and
// Bool) are gathered with one thread per output byte, so no two threads write the same byte; in
// the last byte of an output only the output's own bits are written (the padding keeps its bits).
// Geometry arrays (shapes, perm, starts/ends/steps, sizes, the inputs/outputs pointer lists) are
// host memory; what a kernel needs of them goes by value in its parameters or through a small
// device scratch buffer.
//
// TensorOps: floats are read exactly as f64 and results rounded once into the output format with
// the reference's bit-level conversions (ported below: f16/bf16 by integer manipulation, NaN
// payloads as x86 keeps them), so Compare, Logical, Where, Cast, Trilu, BitShift, Mod and the four
// exact roundings match the reference bit for bit. Pow, Erf and Trig use CUDA's f64 libm, which is
// within 1-2 ulp of glibc's in f64 (see the notes at those methods). Bool outputs are assembled 32
// bits at a time with a warp ballot; the bits past `count` in the last byte are kept.
// Data-dependent errors (a zero integer divisor in Mod, a negative shift in BitShift) are found on
// the device, read back and thrown with the reference's message before the output is written.

#include "cuda/kernels/convert.cuh"
#include "cuda/kernels/device_scratch.hpp"
#include "cuda/kernels/format.cuh"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backplane/backend/shape.hpp"
#include "backplane/backend/tensor_ops.hpp"
#include "cuda/kernels/common.cuh"

namespace backplane::cuda {

void RegisterShape(KernelTable& table);

namespace {

// "a, b, c" as fmt::join(first, last, ", ") writes int64 values.
std::string JoinInts(const int64_t* first, const int64_t* last) {
  std::string s;
  for (const int64_t* p = first; p != last; ++p) {
    if (p != first) s += ", ";
    s += std::to_string(*p);
  }
  return s;
}

constexpr unsigned long long kNoPosition = ~0ULL;

// ---- Packed element access on the device ---------------------------------------------------------

// Bool: element i is bit i % 8 of byte i / 8.
__device__ __forceinline__ bool LoadBit(const void* p, int64_t i) {
  return ((static_cast<const uint8_t*>(p)[i >> 3] >> (i & 7)) & 1u) != 0;
}

// The raw kBits-bit field of element i (kBits = 1: Bool; 4: Int4, element 2i in the low nibble).
template <int kBits>
__device__ __forceinline__ unsigned LoadField(const void* p, int64_t i) {
  constexpr int kPerByte = 8 / kBits;
  constexpr unsigned kMask = (1u << kBits) - 1u;
  const unsigned byte = static_cast<const uint8_t*>(p)[i / kPerByte];
  return (byte >> ((i % kPerByte) * kBits)) & kMask;
}

// common.hpp's Load<double>: element i of a float buffer, exactly as f64.
__device__ __forceinline__ double LoadF(const void* p, int64_t i, DType dtype) {
  switch (dtype) {
    case DType::Float64: return static_cast<const double*>(p)[i];
    case DType::Float32: return F32ToF64(static_cast<const float*>(p)[i]);
    case DType::Float16: return F32ToF64(F16ToF32(static_cast<const uint16_t*>(p)[i]));
    default: return F32ToF64(BF16ToF32(static_cast<const uint16_t*>(p)[i]));  // BFloat16
  }
}

// common.hpp's StoreResult: one rounding to nearest even from a double.
__device__ __forceinline__ void StoreF(void* p, int64_t i, DType dtype, double v) {
  switch (dtype) {
    case DType::Float64: static_cast<double*>(p)[i] = v; return;
    case DType::Float32: static_cast<float*>(p)[i] = F64ToF32(v); return;
    case DType::Float16: static_cast<uint16_t*>(p)[i] = F32ToF16(RoundToOddF32(v)); return;
    default: static_cast<uint16_t*>(p)[i] = F32ToBF16(RoundToOddF32(v)); return;  // BFloat16
  }
}

// ---- Storage words -------------------------------------------------------------------------------

// A 16-byte element (Complex128) moved as two 8-byte halves (8-byte alignment, as std::complex).
struct alignas(8) Word128 {
  unsigned long long lo, hi;
};

// An 8-byte element (Complex64) moved as two 4-byte halves (4-byte alignment, as std::complex).
struct alignas(4) Word64Pair {
  uint32_t lo, hi;
};

// A packed dtype of kBits bits per element (1: Bool, 4: Int4).
template <int kBits>
struct Packed {};

template <class W>
inline constexpr bool kIsPacked = false;
template <int kBits>
inline constexpr bool kIsPacked<Packed<kBits>> = true;

// Calls fn(W{}) with the storage word of dtype: an unsigned integer of its size (Word64Pair for
// Complex64, Word128 for Complex128), or Packed<bits> for Int4 and Bool.
template <class Fn>
void ByStorage(DType dtype, Fn&& fn) {
  if (dtype == DType::Complex64) {
    fn(Word64Pair{});
    return;
  }
  switch (DTypeBits(dtype)) {
    case 1: fn(Packed<1>{}); return;
    case 4: fn(Packed<4>{}); return;
    case 8: fn(uint8_t{}); return;
    case 16: fn(uint16_t{}); return;
    case 32: fn(uint32_t{}); return;
    case 64: fn(static_cast<unsigned long long>(0)); return;
    default: fn(Word128{}); return;
  }
}

// ---- Gathers -------------------------------------------------------------------------------------

// Where one output element comes from: element `index` of buffer `src`.
struct Source {
  const void* src;
  int64_t index;
};

// More axes than any reduced geometry can have: every kept axis has size >= 2 and the element
// count fits in int64, so at most 62 axes remain.
constexpr int kMaxRank = 64;

// Output element e (row-major over dims[0..rank)) comes from src element
// base + sum_a idx_a * steps[a].
struct StridedMap {
  const void* src;
  int64_t base;
  int rank;
  int64_t dims[kMaxRank];
  int64_t steps[kMaxRank];

  __device__ Source operator()(int64_t e) const {
    int64_t offset = base;
    for (int a = rank - 1; a > 0; --a) {
      const int64_t d = dims[a];
      const int64_t q = e / d;
      offset += (e - q * d) * steps[a];
      e = q;
    }
    if (rank > 0) offset += e * steps[0];
    return {src, offset};
  }
};

// Concat: output element e = (o, k) over [outer, totalRun] comes from input i with
// offsets[i] <= k < offsets[i + 1], element o * run_i + k - offsets[i]. Device arrays.
struct ConcatMap {
  const void* const* inputs;
  const int64_t* offsets;  // inputCount + 1 entries, offsets[0] = 0, offsets[inputCount] = totalRun
  int64_t inputCount;
  int64_t totalRun;

  __device__ Source operator()(int64_t e) const {
    const int64_t o = e / totalRun;
    const int64_t k = e - o * totalRun;
    int64_t lo = 0, hi = inputCount;  // offsets[lo] <= k < offsets[hi]
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (offsets[mid] <= k) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const int64_t first = offsets[lo];
    const int64_t run = offsets[lo + 1] - first;
    return {inputs[lo], o * run + (k - first)};
  }
};

// UpsampleNearest2D: output (plane, r, c) comes from (plane, rowIndex[r], colIndex[c]).
struct UpsampleMap {
  const void* src;
  const int64_t* rowIndex;  // device, outH entries
  const int64_t* colIndex;  // device, outW entries
  int64_t inH, inW, outH, outW;

  __device__ Source operator()(int64_t e) const {
    const int64_t planeSize = outH * outW;
    const int64_t plane = e / planeSize;
    const int64_t rem = e - plane * planeSize;
    const int64_t r = rem / outW;
    const int64_t c = rem - r * outW;
    return {src, (plane * inH + rowIndex[r]) * inW + colIndex[c]};
  }
};

template <class W, class Map>
__global__ void GatherKernel(W* dst, int64_t count, Map map) {
  BP_CUDA_GRID_STRIDE(e, count) {
    const Source s = map(e);
    dst[e] = static_cast<const W*>(s.src)[s.index];
  }
}

// One thread per output byte: its 8 / kBits elements are gathered field by field and the byte is
// written once; the last byte keeps its bits past `count`.
template <int kBits, class Map>
__global__ void GatherPackedKernel(uint8_t* dst, int64_t count, Map map) {
  constexpr int kPerByte = 8 / kBits;
  const int64_t bytes = (count + kPerByte - 1) / kPerByte;
  BP_CUDA_GRID_STRIDE(b, bytes) {
    const int64_t first = b * kPerByte;
    const int n = count - first < kPerByte ? static_cast<int>(count - first) : kPerByte;
    unsigned value = 0;
    for (int k = 0; k < n; ++k) {
      const Source s = map(first + k);
      value |= LoadField<kBits>(s.src, s.index) << (k * kBits);
    }
    if (n < kPerByte) {
      const unsigned keep = (0xFFu << (n * kBits)) & 0xFFu;
      value |= dst[b] & keep;
    }
    dst[b] = static_cast<uint8_t>(value);
  }
}

// Launches the gather of `count` > 0 elements of storage word W into dst.
template <class W, class Map>
void LaunchGather(void* dst, int64_t count, const Map& map) {
  if constexpr (kIsPacked<W>) {
    constexpr int kBits = std::is_same_v<W, Packed<1>> ? 1 : 4;
    const int64_t bytes = (count * kBits + 7) / 8;
    GatherPackedKernel<kBits, Map>
        <<<GridFor(bytes), kThreads, 0, Stream()>>>(static_cast<uint8_t*>(dst), count, map);
  } else {
    GatherKernel<W, Map><<<GridFor(count), kThreads, 0, Stream()>>>(static_cast<W*>(dst), count, map);
  }
}

// ---- Tiled transpose -----------------------------------------------------------------------------

constexpr int kTile = 32;
constexpr int kTileRows = 8;

// The axes of a tiled transpose other than the two tiled ones: sizes, input steps, output strides.
struct TileBatch {
  int rank;
  int64_t dims[kMaxRank];
  int64_t inSteps[kMaxRank];
  int64_t outStrides[kMaxRank];
};

// dst[outBatch + c * colStride + r] = src[base + inBatch + r * rowStep + c] for c < cols (the
// input-contiguous axis), r < rows (the output-contiguous axis), through a 32 x 33 shared tile
// so that both the reads (along c) and the writes (along r) are coalesced.
template <class W>
__global__ void TransposeTileKernel(W* dst, const W* src, int64_t base, TileBatch batch,
                                    int64_t batches, int64_t cols, int64_t rows, int64_t rowStep,
                                    int64_t colStride, int64_t tilesC, int64_t tilesR) {
  __shared__ W tile[kTile][kTile + 1];
  const int64_t perBatch = tilesC * tilesR;
  const int64_t tiles = batches * perBatch;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t b = t / perBatch;
    const int64_t rem = t - b * perBatch;
    const int64_t tr = rem / tilesC;
    const int64_t tc = rem - tr * tilesC;
    int64_t inOffset = base, outOffset = 0;
    for (int a = batch.rank - 1; a >= 0; --a) {
      const int64_t d = batch.dims[a];
      const int64_t q = b / d;
      const int64_t idx = b - q * d;
      inOffset += idx * batch.inSteps[a];
      outOffset += idx * batch.outStrides[a];
      b = q;
    }
    const int64_t r0 = tr * kTile, c0 = tc * kTile;
    for (int y = threadIdx.y; y < kTile; y += kTileRows) {
      const int64_t r = r0 + y, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[y][threadIdx.x] = src[inOffset + r * rowStep + c];
    }
    __syncthreads();
    for (int y = threadIdx.y; y < kTile; y += kTileRows) {
      const int64_t c = c0 + y, r = r0 + threadIdx.x;
      if (r < rows && c < cols) dst[outOffset + c * colStride + r] = tile[threadIdx.x][y];
    }
    __syncthreads();
  }
}

// The reduced form of a strided gather: size-1 axes dropped (they only add to base, which the
// caller already did), neighbours merged where the outer one's step is the inner one's span.
struct Geometry {
  std::vector<int64_t> dims, steps;
};

Geometry Reduce(const std::vector<int64_t>& dims, const std::vector<int64_t>& steps) {
  Geometry g;
  for (size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] == 1) continue;
    int64_t span = 0;
    if (!g.dims.empty() && !__builtin_mul_overflow(steps[a], dims[a], &span) &&
        g.steps.back() == span) {
      g.dims.back() *= dims[a];
      g.steps.back() = steps[a];
    } else {
      g.dims.push_back(dims[a]);
      g.steps.push_back(steps[a]);
    }
  }
  return g;
}

StridedMap MakeStridedMap(const void* src, int64_t base, const Geometry& g) {
  StridedMap map{};
  map.src = src;
  map.base = base;
  map.rank = static_cast<int>(g.dims.size());
  for (size_t a = 0; a < g.dims.size(); ++a) {
    map.dims[a] = g.dims[a];
    map.steps[a] = g.steps[a];
  }
  return map;
}

// Below this size on either tiled axis the general kernel is used (a tile would be mostly idle).
constexpr int64_t kMinTileExtent = 16;

// dst (count > 0 elements, row-major over outDims) = the strided gather of src: output element
// (i_0, ..., i_{r-1}) is input element base + sum_a i_a * steps[a]. Launches only; the caller
// finishes the method. Every index stays inside src (the caller validated the geometry).
void GatherStrided(DType dtype, void* dst, const void* src, int64_t count,
                   const std::vector<int64_t>& outDims, const std::vector<int64_t>& steps,
                   int64_t base) {
  const Geometry g = Reduce(outDims, steps);
  const int n = static_cast<int>(g.dims.size());
  ByStorage(dtype, [&](auto word) {
    using W = decltype(word);
    if constexpr (kIsPacked<W>) {
      LaunchGather<W>(dst, count, MakeStridedMap(src, base, g));
    } else {
      if (n == 0 || (n == 1 && g.steps[0] == 1)) {  // one contiguous run
        CopyAsync(dst, static_cast<const W*>(src) + base, static_cast<size_t>(count) * sizeof(W));
        return;
      }
      // The output axis that is contiguous in the input (step 1), if it is not the last one.
      int k = -1;
      for (int a = 0; a + 1 < n; ++a) {
        if (g.steps[a] == 1) k = a;
      }
      if (k >= 0 && g.steps[n - 1] != 1 && g.dims[k] >= kMinTileExtent &&
          g.dims[n - 1] >= kMinTileExtent) {
        std::vector<int64_t> outStrides(static_cast<size_t>(n), 1);
        for (int a = n - 1; a > 0; --a) outStrides[a - 1] = outStrides[a] * g.dims[a];
        TileBatch batch{};
        batch.rank = 0;
        int64_t batches = 1;
        for (int a = 0; a + 1 < n; ++a) {
          if (a == k) continue;
          batch.dims[batch.rank] = g.dims[a];
          batch.inSteps[batch.rank] = g.steps[a];
          batch.outStrides[batch.rank] = outStrides[a];
          ++batch.rank;
          batches *= g.dims[a];
        }
        const int64_t cols = g.dims[k], rows = g.dims[n - 1];
        const int64_t tilesC = (cols + kTile - 1) / kTile, tilesR = (rows + kTile - 1) / kTile;
        const int64_t tiles = batches * tilesC * tilesR;
        const int64_t cap = 65535LL * 8;
        const auto blocks = static_cast<unsigned>(tiles > cap ? cap : tiles);
        TransposeTileKernel<W><<<blocks, dim3(kTile, kTileRows), 0, Stream()>>>(
            static_cast<W*>(dst), static_cast<const W*>(src), base, batch, batches, cols, rows,
            g.steps[n - 1], outStrides[k], tilesC, tilesR);
        return;
      }
      LaunchGather<W>(dst, count, MakeStridedMap(src, base, g));
    }
  });
}

// ---- Shape validation (the reference's helpers, same messages) -----------------------------------

// Any valid dtype (Invalid and values outside the enum throw UnsupportedDType naming 'dtype').
void CheckAnyDType(std::string_view op, DType dtype) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kDTypeCount) ||
      !kAnyDType.Contains(dtype)) {
    ThrowUnsupportedDType(op, "dtype", dtype, kAnyDType);
  }
}

int64_t MulOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         Format("{} * {}", a, b));
  }
  return result;
}

int64_t AddOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         Format("{} + {}", a, b));
  }
  return result;
}

int64_t CountOf(std::string_view op, std::string_view arg, const std::vector<int64_t>& dims,
                DType dtype) {
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  int64_t count = 1;
  for (int64_t d : dims) count = MulOrThrow(op, arg, count, d);
  MulOrThrow(op, arg, count, DTypeBits(dtype));
  return count;
}

std::vector<int64_t> ReadShape(std::string_view op, std::string_view shapeArg,
                               std::string_view rankArg, const int64_t* shape, int64_t rank) {
  CheckNonNegative(op, rankArg, rank);
  CheckPointer(op, shapeArg, shape, rank);
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      ThrowInvalidArgument(op, Format("{}[{}]", shapeArg, i), ">= 0", std::to_string(shape[i]));
    }
    dims[static_cast<size_t>(i)] = shape[i];
  }
  return dims;
}

void CheckAxis(std::string_view op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank) {
    ThrowInvalidArgument(op, "axis", Format("in [0, {}) (the rank)", rank), std::to_string(axis));
  }
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  return "[" + JoinInts(dims.data(), dims.data() + dims.size()) + "]";
}

uint64_t ByteSpan(DType dtype, int64_t count) {
  if (count <= 0) return 0;
  return (static_cast<uint64_t>(count) * static_cast<uint64_t>(DTypeBits(dtype)) + 7) / 8;
}

void CheckNoOverlap(std::string_view op, std::string_view outArg, const void* out,
                    int64_t outCount, std::string_view inArg, const void* in, int64_t inCount,
                    DType dtype) {
  if (Overlaps(out, ByteSpan(dtype, outCount), in, ByteSpan(dtype, inCount))) {
    ThrowInvalidArgument(op, outArg, Format("a buffer that does not overlap '{}'", inArg),
                         "overlapping buffers");
  }
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// ---- Shape methods -------------------------------------------------------------------------------

void Reshape(const void* src, void* dst, const int64_t* inShape, int64_t inRank,
             const int64_t* outShape, int64_t outRank, DType dtype) {
  constexpr std::string_view op = "Shape.Reshape";
  CheckAnyDType(op, dtype);
  const auto inDims = ReadShape(op, "inShape", "inRank", inShape, inRank);
  const auto outDims = ReadShape(op, "outShape", "outRank", outShape, outRank);
  const int64_t count = CountOf(op, "inShape", inDims, dtype);
  const int64_t outCount = CountOf(op, "outShape", outDims, dtype);
  if (outCount != count) {
    ThrowShapeMismatch(op, "outShape",
                       Format("{} elements (as inShape {})", count, DimsToString(inDims)),
                       Format("{} elements ({})", outCount, DimsToString(outDims)));
  }
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
  if (count == 0 || src == dst) return;
  // memmove semantics: overlapping buffers go through a staging copy of the source.
  const uint64_t span = ByteSpan(dtype, count);
  std::optional<DeviceScratch> staging;
  const void* from = src;
  if (Overlaps(dst, span, src, span)) {
    staging.emplace(static_cast<size_t>(span));
    CopyAsync(staging->Get(), src, static_cast<size_t>(span));
    from = staging->Get();
  }
  if (dtype == DType::Int4 || dtype == DType::Bool) {
    // Whole bytes as they are; the last partial byte keeps dst's padding bits.
    GatherStrided(dtype, dst, from, count, {count}, {1}, 0);
  } else {
    CopyAsync(dst, from, static_cast<size_t>(span));
  }
  if (staging) staging->Release();
  FinishMethod(op);
}

// Output axis i of a transpose of `dims` is input axis perm[i] (perm validated, count > 0).
void LaunchTranspose(DType dtype, void* dst, const void* src, int64_t count,
                     const std::vector<int64_t>& dims, const int64_t* perm) {
  const auto inStrides = Strides(dims);
  std::vector<int64_t> outDims(dims.size()), step(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    outDims[i] = dims[static_cast<size_t>(perm[i])];
    step[i] = inStrides[static_cast<size_t>(perm[i])];
  }
  GatherStrided(dtype, dst, src, count, outDims, step, 0);
}

void Transpose(const void* src, void* dst, const int64_t* shape, int64_t rank, const int64_t* perm,
               DType dtype) {
  constexpr std::string_view op = "Shape.Transpose";
  CheckAnyDType(op, dtype);
  const auto dims = ReadShape(op, "shape", "rank", shape, rank);
  CheckPointer(op, "perm", perm, rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      ThrowInvalidArgument(op, "perm", Format("a permutation of 0..{}", rank - 1),
                           "[" + JoinInts(perm, perm + rank) + "]");
    }
    seen[static_cast<size_t>(p)] = true;
  }
  const int64_t count = CountOf(op, "shape", dims, dtype);
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
  CheckNoOverlap(op, "dst", dst, count, "src", src, count, dtype);
  if (count == 0) return;
  LaunchTranspose(dtype, dst, src, count, dims, perm);
  FinishMethod(op);
}

void Concat(const void* const* inputs, const int64_t* shapes, int64_t inputCount, int64_t rank,
            int64_t axis, void* dst, DType dtype) {
  constexpr std::string_view op = "Shape.Concat";
  CheckAnyDType(op, dtype);
  CheckPositive(op, "inputCount", inputCount);
  CheckNonNegative(op, "rank", rank);
  CheckAxis(op, axis, rank);
  CheckPointer(op, "inputs", inputs, inputCount);
  const auto r = static_cast<size_t>(rank);
  const auto first =
      ReadShape(op, "shapes", "rank", shapes, MulOrThrow(op, "rank", inputCount, rank));
  const std::vector<int64_t> dims0(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(r));

  std::vector<int64_t> outDims = dims0;
  std::vector<int64_t> counts(static_cast<size_t>(inputCount));
  for (int64_t i = 0; i < inputCount; ++i) {
    const std::vector<int64_t> dims(first.begin() + static_cast<std::ptrdiff_t>(i * rank),
                                    first.begin() + static_cast<std::ptrdiff_t>((i + 1) * rank));
    for (size_t d = 0; d < r; ++d) {
      if (static_cast<int64_t>(d) != axis && dims[d] != dims0[d]) {
        ThrowShapeMismatch(
            op, "shapes",
            Format("{} at input {}, axis {} (as input 0; only axis {} may differ)", dims0[d], i, d,
                   axis),
            std::to_string(dims[d]));
      }
    }
    const auto ax = static_cast<size_t>(axis);
    if (i > 0) outDims[ax] = AddOrThrow(op, "shapes", outDims[ax], dims[ax]);
    counts[static_cast<size_t>(i)] = CountOf(op, "shapes", dims, dtype);
  }
  const int64_t total = CountOf(op, "shapes", outDims, dtype);
  for (int64_t i = 0; i < inputCount; ++i) {
    CheckPointer(op, Format("inputs[{}]", i), inputs[i], counts[static_cast<size_t>(i)]);
  }
  CheckPointer(op, "dst", dst, total);
  for (int64_t i = 0; i < inputCount; ++i) {
    CheckNoOverlap(op, "dst", dst, total, Format("inputs[{}]", i), inputs[i],
                   counts[static_cast<size_t>(i)], dtype);
  }
  if (total == 0) return;

  // [outer, axis, inner]: for each outer index, input i contributes one contiguous run of
  // shapes[i][axis] * inner elements, in input order (offsets[i] is where it starts in the row).
  int64_t inner = 1;
  for (size_t d = 0; d < r; ++d) {
    if (static_cast<int64_t>(d) > axis) inner *= outDims[d];
  }
  const auto n = static_cast<size_t>(inputCount);
  std::vector<int64_t> offsets(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    offsets[i + 1] = offsets[i] + first[i * r + static_cast<size_t>(axis)] * inner;
  }
  const size_t pointerBytes = n * sizeof(const void*);
  DeviceScratch scratch(pointerBytes + (n + 1) * sizeof(int64_t));
  auto* devInputs = static_cast<const void**>(scratch.Get());
  auto* devOffsets = reinterpret_cast<int64_t*>(static_cast<char*>(scratch.Get()) + pointerBytes);
  CopyAsync(devInputs, inputs, pointerBytes);
  CopyAsync(devOffsets, offsets.data(), (n + 1) * sizeof(int64_t));
  const ConcatMap map{devInputs, devOffsets, inputCount, offsets[n]};
  ByStorage(dtype, [&](auto word) { LaunchGather<decltype(word)>(dst, total, map); });
  scratch.Release();
  FinishMethod(op);
}

void Split(const void* src, const int64_t* shape, int64_t rank, int64_t axis, const int64_t* sizes,
           int64_t outputCount, void* const* outputs, DType dtype) {
  constexpr std::string_view op = "Shape.Split";
  CheckAnyDType(op, dtype);
  const auto dims = ReadShape(op, "shape", "rank", shape, rank);
  CheckAxis(op, axis, rank);
  CheckPositive(op, "outputCount", outputCount);
  CheckPointer(op, "sizes", sizes, outputCount);
  CheckPointer(op, "outputs", outputs, outputCount);
  const int64_t axisSize = dims[static_cast<size_t>(axis)];
  int64_t sum = 0;
  bool overflow = false;
  for (int64_t i = 0; i < outputCount; ++i) {
    if (sizes[i] < 0) {
      ThrowInvalidArgument(op, Format("sizes[{}]", i), ">= 0", std::to_string(sizes[i]));
    }
    overflow = overflow || __builtin_add_overflow(sum, sizes[i], &sum);
  }
  if (overflow || sum != axisSize) {
    ThrowInvalidArgument(op, "sizes", Format("sizes adding up to shape[{}] = {}", axis, axisSize),
                         Format("[{}] (sum {})", JoinInts(sizes, sizes + outputCount),
                                overflow ? std::string("overflows") : std::to_string(sum)));
  }
  const int64_t count = CountOf(op, "shape", dims, dtype);
  std::vector<int64_t> counts(static_cast<size_t>(outputCount));
  for (int64_t i = 0; i < outputCount; ++i) {
    std::vector<int64_t> outDims = dims;
    outDims[static_cast<size_t>(axis)] = sizes[i];
    counts[static_cast<size_t>(i)] = CountOf(op, "shape", outDims, dtype);
  }
  CheckPointer(op, "src", src, count);
  for (int64_t i = 0; i < outputCount; ++i) {
    CheckPointer(op, Format("outputs[{}]", i), outputs[i], counts[static_cast<size_t>(i)]);
  }
  for (int64_t i = 0; i < outputCount; ++i) {
    CheckNoOverlap(op, Format("outputs[{}]", i), outputs[i], counts[static_cast<size_t>(i)], "src",
                   src, count, dtype);
  }
  if (count == 0) return;

  // Output i is [outer, sizes[i] * inner], row o taken from src row o at offset (sum of the
  // earlier sizes) * inner.
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) outer *= dims[d];
    if (static_cast<int64_t>(d) > axis) inner *= dims[d];
  }
  const int64_t rowSize = axisSize * inner;
  int64_t offset = 0;
  for (int64_t i = 0; i < outputCount; ++i) {
    const int64_t run = sizes[i] * inner;
    if (counts[static_cast<size_t>(i)] > 0) {
      GatherStrided(dtype, outputs[i], src, counts[static_cast<size_t>(i)], {outer, run},
                    {rowSize, 1}, offset);
    }
    offset += run;
  }
  FinishMethod(op);
}

// PyTorch's nearest source index (the reference's NearestIndex, evaluated here on the host).
int64_t NearestIndex(int64_t dst, int64_t in, int64_t out, double scale) {
  const float s = scale > 0.0 ? static_cast<float>(1.0 / scale)
                              : static_cast<float>(in) / static_cast<float>(out);
  const float real = std::floor(static_cast<float>(dst) * s);
  if (!(real < static_cast<float>(in - 1))) return in - 1;
  const auto index = static_cast<int64_t>(real);
  return index < in - 1 ? index : in - 1;
}

void CheckUpsampleAxis(std::string_view op, std::string_view scaleArg, double scale,
                       std::string_view inArg, int64_t in, std::string_view outArg, int64_t out) {
  CheckFinite(op, scaleArg, scale);
  if (scale > 0.0) {
    const double want = std::floor(static_cast<double>(in) * scale);
    if (!(want < 9.2e18) || static_cast<int64_t>(want) != out) {
      ThrowShapeMismatch(op, outArg,
                         Format("{} (floor({} * {}) from {} and {})", want, inArg, scaleArg, in,
                                scale),
                         std::to_string(out));
    }
  }
  if (in == 0 && out > 0) {
    ThrowShapeMismatch(op, inArg, Format("> 0 when {} is {}", outArg, out), "0");
  }
}

void UpsampleNearest2D(const UpsampleConfig& config, const void* src, void* dst, int64_t batch,
                       int64_t channels, int64_t inH, int64_t inW, int64_t outH, int64_t outW,
                       DType dtype) {
  constexpr std::string_view op = "Shape.UpsampleNearest2D";
  CheckAnyDType(op, dtype);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "channels", channels);
  CheckNonNegative(op, "inH", inH);
  CheckNonNegative(op, "inW", inW);
  CheckNonNegative(op, "outH", outH);
  CheckNonNegative(op, "outW", outW);
  CheckUpsampleAxis(op, "config.ScaleH", config.ScaleH, "inH", inH, "outH", outH);
  CheckUpsampleAxis(op, "config.ScaleW", config.ScaleW, "inW", inW, "outW", outW);
  const int64_t inCount = CountOf(op, "inH", {batch, channels, inH, inW}, dtype);
  const int64_t outCount = CountOf(op, "outH", {batch, channels, outH, outW}, dtype);
  CheckPointer(op, "src", src, inCount);
  CheckPointer(op, "dst", dst, outCount);
  CheckNoOverlap(op, "dst", dst, outCount, "src", src, inCount, dtype);
  if (outCount == 0) return;

  std::vector<int64_t> index(static_cast<size_t>(outH + outW));
  for (int64_t r = 0; r < outH; ++r) {
    index[static_cast<size_t>(r)] = NearestIndex(r, inH, outH, config.ScaleH);
  }
  for (int64_t c = 0; c < outW; ++c) {
    index[static_cast<size_t>(outH + c)] = NearestIndex(c, inW, outW, config.ScaleW);
  }
  const size_t bytes = index.size() * sizeof(int64_t);
  DeviceScratch scratch(bytes);
  auto* devIndex = static_cast<int64_t*>(scratch.Get());
  CopyAsync(devIndex, index.data(), bytes);
  const UpsampleMap map{src, devIndex, devIndex + outH, inH, inW, outH, outW};
  ByStorage(dtype, [&](auto word) { LaunchGather<decltype(word)>(dst, outCount, map); });
  scratch.Release();
  FinishMethod(op);
}

int64_t CheckHeads(std::string_view op, const void* src, const void* dst, int64_t batch,
                   int64_t seq, int64_t heads, int64_t headDim, DType dtype) {
  CheckAnyDType(op, dtype);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "seq", seq);
  CheckNonNegative(op, "heads", heads);
  CheckNonNegative(op, "headDim", headDim);
  const int64_t count = CountOf(op, "batch", {batch, seq, heads, headDim}, dtype);
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
  CheckNoOverlap(op, "dst", dst, count, "src", src, count, dtype);
  return count;
}

constexpr int64_t kSwapMiddle[4] = {0, 2, 1, 3};

// [B, S, H*D] -> [B, H, S, D]: the transpose (0, 2, 1, 3) of [B, S, H, D].
void ViewAsHeads(const void* src, void* dst, int64_t batch, int64_t seq, int64_t heads,
                 int64_t headDim, DType dtype) {
  constexpr std::string_view op = "Shape.ViewAsHeads";
  const int64_t count = CheckHeads(op, src, dst, batch, seq, heads, headDim, dtype);
  if (count == 0) return;
  LaunchTranspose(dtype, dst, src, count, {batch, seq, heads, headDim}, kSwapMiddle);
  FinishMethod(op);
}

// [B, H, S, D] -> [B, S, H*D]: the transpose (0, 2, 1, 3) of [B, H, S, D].
void MergeHeads(const void* src, void* dst, int64_t batch, int64_t seq, int64_t heads,
                int64_t headDim, DType dtype) {
  constexpr std::string_view op = "Shape.MergeHeads";
  const int64_t count = CheckHeads(op, src, dst, batch, seq, heads, headDim, dtype);
  if (count == 0) return;
  LaunchTranspose(dtype, dst, src, count, {batch, heads, seq, headDim}, kSwapMiddle);
  FinishMethod(op);
}

void LastToken(const void* src, void* dst, int64_t batch, int64_t seq, int64_t features,
               DType dtype) {
  constexpr std::string_view op = "Shape.LastToken";
  CheckAnyDType(op, dtype);
  CheckNonNegative(op, "batch", batch);
  CheckNonNegative(op, "seq", seq);
  CheckNonNegative(op, "features", features);
  const int64_t inCount = CountOf(op, "seq", {batch, seq, features}, dtype);
  const int64_t outCount = CountOf(op, "features", {batch, features}, dtype);
  if (seq == 0 && outCount > 0) {
    ThrowInvalidArgument(op, "seq", Format("> 0 (there is no last token for {} outputs)", outCount),
                         "0");
  }
  CheckPointer(op, "src", src, inCount);
  CheckPointer(op, "dst", dst, outCount);
  CheckNoOverlap(op, "dst", dst, outCount, "src", src, inCount, dtype);
  if (outCount == 0) return;
  GatherStrided(dtype, dst, src, outCount, {batch, features}, {seq * features, 1},
                (seq - 1) * features);
  FinishMethod(op);
}

struct SliceAxis {
  int64_t first;
  int64_t length;
};

// Python's slice(start, stop, step).indices(n) (the reference's ResolveSlice).
SliceAxis ResolveSlice(int64_t start, int64_t stop, int64_t step, int64_t n) {
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? n - 1 : n;
  auto adjust = [&](int64_t v) {
    if (v < 0) {
      v += n;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  start = adjust(start);
  stop = adjust(stop);
  int64_t length = 0;
  if (step > 0 && stop > start) {
    const auto span = static_cast<uint64_t>(stop - start - 1);
    length = static_cast<int64_t>(span / static_cast<uint64_t>(step)) + 1;
  } else if (step < 0 && start > stop) {
    const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(step);
    length = static_cast<int64_t>(static_cast<uint64_t>(start - stop - 1) / magnitude) + 1;
  }
  return {start, length};
}

void Slice(const void* src, void* dst, const int64_t* shape, int64_t rank, const int64_t* starts,
           const int64_t* ends, const int64_t* steps, DType dtype) {
  constexpr std::string_view op = "Shape.Slice";
  CheckAnyDType(op, dtype);
  const auto dims = ReadShape(op, "shape", "rank", shape, rank);
  CheckPointer(op, "starts", starts, rank);
  CheckPointer(op, "ends", ends, rank);
  CheckPointer(op, "steps", steps, rank);
  for (int64_t a = 0; a < rank; ++a) {
    if (steps[a] == 0) ThrowInvalidArgument(op, Format("steps[{}]", a), "non-zero", "0");
  }
  const int64_t inCount = CountOf(op, "shape", dims, dtype);
  const auto r = static_cast<size_t>(rank);
  std::vector<int64_t> outDims(r), step(r);
  int64_t base = 0;
  const auto inStrides = Strides(dims);
  std::vector<SliceAxis> axes(r);
  for (size_t a = 0; a < r; ++a) axes[a] = ResolveSlice(starts[a], ends[a], steps[a], dims[a]);
  for (size_t a = 0; a < r; ++a) outDims[a] = axes[a].length;
  const int64_t outCount = CountOf(op, "shape", outDims, dtype);
  CheckPointer(op, "src", src, inCount);
  CheckPointer(op, "dst", dst, outCount);
  CheckNoOverlap(op, "dst", dst, outCount, "src", src, inCount, dtype);
  if (outCount == 0) return;

  // Every axis has length >= 1 here, so first lies in [0, n) and first + i * step stays in range;
  // a one-element axis never steps (its step may be INT64_MIN, so it is not multiplied).
  for (size_t a = 0; a < r; ++a) {
    base += axes[a].first * inStrides[a];
    step[a] = axes[a].length > 1 ? steps[a] * inStrides[a] : 0;
  }
  GatherStrided(dtype, dst, src, outCount, outDims, step, base);
  FinishMethod(op);
}

// ---- TensorOps: shared pieces --------------------------------------------------------------------

constexpr std::string_view kCompare = "TensorOps.Compare";
constexpr std::string_view kLogical = "TensorOps.Logical";
constexpr std::string_view kWhere = "TensorOps.Where";
constexpr std::string_view kCast = "TensorOps.Cast";
constexpr std::string_view kTrilu = "TensorOps.Trilu";
constexpr std::string_view kPow = "TensorOps.Pow";
constexpr std::string_view kMod = "TensorOps.Mod";
constexpr std::string_view kRound = "TensorOps.Round";
constexpr std::string_view kTrig = "TensorOps.Trig";
constexpr std::string_view kBitShift = "TensorOps.BitShift";

void CheckCommon(std::string_view op, DType dtype, DTypeSet accepted, int64_t count) {
  CheckDType(op, "dtype", dtype, accepted);
  CheckNonNegative(op, "count", count);
}

template <class E>
void CheckEnum(std::string_view op, std::string_view arg, E value, E last) {
  const auto v = static_cast<int32_t>(value);
  if (v < 0 || v > static_cast<int32_t>(last)) {
    ThrowInvalidArgument(op, arg, Format("in [0, {}]", static_cast<int32_t>(last)),
                         std::to_string(v));
  }
}

// Calls fn(V{}) with the value type of dtype: double for the floats, the integer type itself,
// bool for Bool (the reference's WithValueType).
template <class Fn>
void WithValueType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: fn(double{}); return;
    case DType::Int64: fn(int64_t{}); return;
    case DType::Int32: fn(int32_t{}); return;
    case DType::Int16: fn(int16_t{}); return;
    case DType::Int8: fn(int8_t{}); return;
    case DType::Uint64: fn(uint64_t{}); return;
    case DType::Uint32: fn(uint32_t{}); return;
    case DType::Uint16: fn(uint16_t{}); return;
    case DType::Uint8: fn(uint8_t{}); return;
    default: fn(bool{}); return;
  }
}

// Calls fn(T{}) with the integer type of an integer dtype (Uint8 for anything else).
template <class Fn>
void WithIntType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Int64: fn(int64_t{}); return;
    case DType::Int32: fn(int32_t{}); return;
    case DType::Int16: fn(int16_t{}); return;
    case DType::Int8: fn(int8_t{}); return;
    case DType::Uint64: fn(uint64_t{}); return;
    case DType::Uint32: fn(uint32_t{}); return;
    case DType::Uint16: fn(uint16_t{}); return;
    default: fn(uint8_t{}); return;
  }
}

// Calls fn(W{}) with the unsigned word of a byte-sized dtype of 1, 2, 4 or 8 bytes.
template <class Fn>
void WithWord(DType dtype, Fn&& fn) {
  switch (DTypeBits(dtype)) {
    case 8: fn(uint8_t{}); return;
    case 16: fn(uint16_t{}); return;
    case 32: fn(uint32_t{}); return;
    default: fn(static_cast<unsigned long long>(0)); return;
  }
}

// Element i as its value type V: a float exactly as f64, an integer as itself, a bool bit.
template <class V>
__device__ __forceinline__ V LoadValue(const void* p, int64_t i, DType dtype) {
  if constexpr (std::is_same_v<V, double>) {
    return LoadF(p, i, dtype);
  } else if constexpr (std::is_same_v<V, bool>) {
    return LoadBit(p, i);
  } else {
    return static_cast<const V*>(p)[i];
  }
}

// Bits [0, count) of a packed bool output: bit e = f(e). One warp per 32 elements (4 bytes): each
// lane computes its bit, a ballot gathers them, lanes 0..3 write one byte each. The last byte
// keeps its bits past `count`. Each warp reads its elements before it writes, so an output that
// is exactly one of the inputs is fine.
template <class F>
__global__ void PackBitsKernel(uint8_t* out, int64_t count, F f) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t w = warp; w * 32 < count; w += warps) {
    const int64_t e = w * 32 + lane;
    const bool bit = e < count && f(e);
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, bit);
    if (lane < 4) {
      const int64_t byte = w * 4 + lane;
      const int64_t first = byte * 8;
      if (first < count) {
        unsigned value = (mask >> (8 * lane)) & 0xFFu;
        if (count - first < 8) {
          const unsigned keep = (0xFFu << static_cast<int>(count - first)) & 0xFFu;
          value = (value & ~keep) | (out[byte] & keep);
        }
        out[byte] = static_cast<uint8_t>(value);
      }
    }
  }
}

template <class F>
void LaunchBits(void* out, int64_t count, const F& f) {
  PackBitsKernel<F><<<GridFor(count), kThreads, 0, Stream()>>>(static_cast<uint8_t*>(out), count, f);
}

// ---- Compare, Logical, Where ---------------------------------------------------------------------

template <class V>
struct CompareBit {
  CompareOp op;
  const void* a;
  const void* b;
  DType dtype;
  __device__ bool operator()(int64_t i) const {
    const V x = LoadValue<V>(a, i, dtype), y = LoadValue<V>(b, i, dtype);
    switch (op) {
      case CompareOp::Equal: return x == y;
      case CompareOp::NotEqual: return x != y;
      case CompareOp::Less: return x < y;
      case CompareOp::LessEqual: return x <= y;
      case CompareOp::Greater: return x > y;
      case CompareOp::GreaterEqual: return x >= y;
    }
    return false;
  }
};

void Compare(const CompareConfig& config, const void* a, const void* b, void* out, int64_t count,
             DType dtype) {
  CheckCommon(kCompare, dtype, kTensorDTypesAndBool, count);
  CheckEnum(kCompare, "config.Op", config.Op, CompareOp::GreaterEqual);
  CheckPointer(kCompare, "a", a, count);
  CheckPointer(kCompare, "b", b, count);
  CheckPointer(kCompare, "out", out, count);
  if (count == 0) return;
  WithValueType(dtype, [&](auto zero) {
    using V = decltype(zero);
    LaunchBits(out, count, CompareBit<V>{config.Op, a, b, dtype});
  });
  FinishMethod(kCompare);
}

struct LogicalBit {
  LogicalOp op;
  const void* a;
  const void* b;
  __device__ bool operator()(int64_t i) const {
    const bool x = LoadBit(a, i);
    switch (op) {
      case LogicalOp::And: return x && LoadBit(b, i);
      case LogicalOp::Or: return x || LoadBit(b, i);
      case LogicalOp::Xor: return x != LoadBit(b, i);
      case LogicalOp::Not: return !x;
    }
    return false;
  }
};

void Logical(const LogicalConfig& config, const void* a, const void* b, void* out, int64_t count,
             DType dtype) {
  CheckCommon(kLogical, dtype, DTypeSet{DType::Bool}, count);
  CheckEnum(kLogical, "config.Op", config.Op, LogicalOp::Not);
  CheckPointer(kLogical, "a", a, count);
  if (config.Op != LogicalOp::Not) CheckPointer(kLogical, "b", b, count);
  CheckPointer(kLogical, "out", out, count);
  if (count == 0) return;
  LaunchBits(out, count, LogicalBit{config.Op, a, b});
  FinishMethod(kLogical);
}

struct WhereBit {
  const void* cond;
  const void* a;
  const void* b;
  __device__ bool operator()(int64_t i) const { return LoadBit(LoadBit(cond, i) ? a : b, i); }
};

template <class W>
__global__ void WhereKernel(const void* cond, const W* a, const W* b, W* out, int64_t count) {
  BP_CUDA_GRID_STRIDE(i, count) { out[i] = LoadBit(cond, i) ? a[i] : b[i]; }
}

void Where(const void* cond, const void* a, const void* b, void* out, int64_t count, DType dtype) {
  CheckCommon(kWhere, dtype, kTensorDTypesAndBool, count);
  CheckPointer(kWhere, "cond", cond, count);
  CheckPointer(kWhere, "a", a, count);
  CheckPointer(kWhere, "b", b, count);
  CheckPointer(kWhere, "out", out, count);
  if (count == 0) return;
  if (dtype == DType::Bool) {
    LaunchBits(out, count, WhereBit{cond, a, b});
  } else {
    WithWord(dtype, [&](auto word) {
      using W = decltype(word);
      WhereKernel<W><<<GridFor(count), kThreads, 0, Stream()>>>(
          cond, static_cast<const W*>(a), static_cast<const W*>(b), static_cast<W*>(out), count);
    });
  }
  FinishMethod(kWhere);
}

// ---- Cast ----------------------------------------------------------------------------------------

// One element as the reference sees it: a float exactly as f64, or an integer (bool included) as
// sign + 64-bit two's-complement pattern.
struct CastValue {
  bool isFloat;
  double f;
  bool negative;
  uint64_t bits;
};

__device__ __forceinline__ CastValue LoadCast(const void* p, int64_t i, DType from) {
  switch (from) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: return {true, LoadF(p, i, from), false, 0};
    case DType::Int64: {
      const int64_t v = static_cast<const int64_t*>(p)[i];
      return {false, 0.0, v < 0, static_cast<uint64_t>(v)};
    }
    case DType::Int32: {
      const int64_t v = static_cast<const int32_t*>(p)[i];
      return {false, 0.0, v < 0, static_cast<uint64_t>(v)};
    }
    case DType::Int16: {
      const int64_t v = static_cast<const int16_t*>(p)[i];
      return {false, 0.0, v < 0, static_cast<uint64_t>(v)};
    }
    case DType::Int8: {
      const int64_t v = static_cast<const int8_t*>(p)[i];
      return {false, 0.0, v < 0, static_cast<uint64_t>(v)};
    }
    case DType::Uint64: return {false, 0.0, false, static_cast<const uint64_t*>(p)[i]};
    case DType::Uint32: return {false, 0.0, false, static_cast<const uint32_t*>(p)[i]};
    case DType::Uint16: return {false, 0.0, false, static_cast<const uint16_t*>(p)[i]};
    case DType::Uint8: return {false, 0.0, false, static_cast<const uint8_t*>(p)[i]};
    default: return {false, 0.0, false, LoadBit(p, i) ? 1ULL : 0ULL};  // Bool
  }
}

// The reference's RoundToOddF64: a 64-bit magnitude rounded to 53 bits to odd.
__device__ __forceinline__ double RoundToOddF64(uint64_t m) {
  if (m < (1ULL << 53)) return static_cast<double>(m);
  const int shift = 64 - __clzll(static_cast<long long>(m)) - 53;
  uint64_t kept = m >> shift;
  if ((m & ((1ULL << shift) - 1)) != 0) kept |= 1;
  return ldexp(static_cast<double>(kept), shift);
}

// The reference's FloatToInt: truncation toward zero, NaN -> 0, saturation.
template <class I>
__device__ __forceinline__ I FloatToInt(double v) {
  if (isnan(v)) return 0;
  constexpr double kHi = 2.0 * static_cast<double>(std::numeric_limits<I>::max() / 2 + 1);
  constexpr double kLo = std::is_signed_v<I> ? -kHi : 0.0;
  const double t = trunc(v);
  if (t >= kHi) return std::numeric_limits<I>::max();
  if (t <= kLo) return std::numeric_limits<I>::min();
  return static_cast<I>(t);
}

// Element i of `to` (not Bool) from a cast value (the reference's StoreFromFloat / StoreFromInt).
__device__ __forceinline__ void StoreCast(void* p, int64_t i, DType to, const CastValue& v) {
  if (v.isFloat) {
    switch (to) {
      case DType::Float64:
      case DType::Float32:
      case DType::Float16:
      case DType::BFloat16: StoreF(p, i, to, v.f); return;
      case DType::Int64: static_cast<int64_t*>(p)[i] = FloatToInt<int64_t>(v.f); return;
      case DType::Int32: static_cast<int32_t*>(p)[i] = FloatToInt<int32_t>(v.f); return;
      case DType::Int16: static_cast<int16_t*>(p)[i] = FloatToInt<int16_t>(v.f); return;
      case DType::Int8: static_cast<int8_t*>(p)[i] = FloatToInt<int8_t>(v.f); return;
      case DType::Uint64: static_cast<uint64_t*>(p)[i] = FloatToInt<uint64_t>(v.f); return;
      case DType::Uint32: static_cast<uint32_t*>(p)[i] = FloatToInt<uint32_t>(v.f); return;
      case DType::Uint16: static_cast<uint16_t*>(p)[i] = FloatToInt<uint16_t>(v.f); return;
      default: static_cast<uint8_t*>(p)[i] = FloatToInt<uint8_t>(v.f); return;  // Uint8
    }
  }
  switch (to) {
    case DType::Float64: {
      const uint64_t magnitude = v.negative ? 0ULL - v.bits : v.bits;
      const double d = static_cast<double>(magnitude);  // one rounding, nearest even
      static_cast<double*>(p)[i] = v.negative ? -d : d;
      return;
    }
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: {
      const double odd = RoundToOddF64(v.negative ? 0ULL - v.bits : v.bits);
      StoreF(p, i, to, v.negative ? -odd : odd);
      return;
    }
    case DType::Int64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v.bits); return;
    case DType::Int32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v.bits); return;
    case DType::Int16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v.bits); return;
    case DType::Int8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v.bits); return;
    case DType::Uint64: static_cast<uint64_t*>(p)[i] = v.bits; return;
    case DType::Uint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v.bits); return;
    case DType::Uint16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v.bits); return;
    default: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v.bits); return;  // Uint8
  }
}

__global__ void CastKernel(const void* in, DType from, void* out, DType to, int64_t count) {
  BP_CUDA_GRID_STRIDE(i, count) { StoreCast(out, i, to, LoadCast(in, i, from)); }
}

// Any -> Bool: x != 0 (a NaN is true, -0 false).
struct CastBit {
  const void* in;
  DType from;
  __device__ bool operator()(int64_t i) const {
    const CastValue v = LoadCast(in, i, from);
    return v.isFloat ? v.f != 0.0 : v.bits != 0;
  }
};

// Bool -> Bool: the bits as they are.
struct CopyBit {
  const void* in;
  __device__ bool operator()(int64_t i) const { return LoadBit(in, i); }
};

template <class W>
__global__ void CopyKernel(const W* in, W* out, int64_t count) {
  BP_CUDA_GRID_STRIDE(i, count) { out[i] = in[i]; }
}

void Cast(const void* in, DType from, void* out, DType to, int64_t count) {
  CheckDType(kCast, "from", from, kTensorDTypesAndBool);
  CheckDType(kCast, "to", to, kTensorDTypesAndBool);
  CheckNonNegative(kCast, "count", count);
  CheckPointer(kCast, "in", in, count);
  CheckPointer(kCast, "out", out, count);
  if (count == 0) return;
  if (from == to) {
    if (from == DType::Bool) {
      LaunchBits(out, count, CopyBit{in});
    } else {
      WithWord(from, [&](auto word) {
        using W = decltype(word);
        CopyKernel<W><<<GridFor(count), kThreads, 0, Stream()>>>(static_cast<const W*>(in),
                                                                 static_cast<W*>(out), count);
      });
    }
  } else if (to == DType::Bool) {
    LaunchBits(out, count, CastBit{in, from});
  } else {
    CastKernel<<<GridFor(count), kThreads, 0, Stream()>>>(in, from, out, to, count);
  }
  FinishMethod(kCast);
}

// ---- Trilu ---------------------------------------------------------------------------------------

void CheckTensorDType(std::string_view op, DType dtype, DTypeSet accepted) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kDTypeCount) ||
      !accepted.Contains(dtype)) {
    ThrowUnsupportedDType(op, "dtype", dtype, accepted);
  }
}

// The reference's CountOf for [a, b, c] (tensor_ops_axis.cpp).
int64_t CountOf3(std::string_view op, std::string_view arg, int64_t a, int64_t b, int64_t c,
                 DType dtype) {
  if (a == 0 || b == 0 || c == 0) return 0;
  int64_t ab = 0, abc = 0, bits = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) ||
      __builtin_mul_overflow(abc, int64_t{DTypeBits(dtype)}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         Format("{} * {} * {}", a, b, c));
  }
  return abc;
}

__device__ __forceinline__ bool TriluKeeps(int64_t at, int64_t rows, int64_t cols, bool upper,
                                           int64_t k) {
  const int64_t row = at / cols;
  const int64_t j = at - row * cols;
  const int64_t i = row % rows;
  return upper ? j - i >= k : j - i <= k;
}

template <class W>
__global__ void TriluKernel(const W* in, W* out, int64_t count, int64_t rows, int64_t cols,
                            bool upper, int64_t k) {
  BP_CUDA_GRID_STRIDE(at, count) { out[at] = TriluKeeps(at, rows, cols, upper, k) ? in[at] : W{0}; }
}

struct TriluBit {
  const void* in;
  int64_t rows, cols;
  bool upper;
  int64_t k;
  __device__ bool operator()(int64_t at) const {
    return TriluKeeps(at, rows, cols, upper, k) && LoadBit(in, at);
  }
};

void Trilu(const TriluConfig& config, const void* in, void* out, int64_t batch, int64_t rows,
           int64_t cols, DType dtype) {
  CheckTensorDType(kTrilu, dtype, kTensorDTypesAndBool);
  CheckNonNegative(kTrilu, "batch", batch);
  CheckNonNegative(kTrilu, "rows", rows);
  CheckNonNegative(kTrilu, "cols", cols);
  const int64_t count = CountOf3(kTrilu, "rows", batch, rows, cols, dtype);
  CheckPointer(kTrilu, "in", in, count);
  CheckPointer(kTrilu, "out", out, count);
  if (count == 0) return;
  if (dtype == DType::Bool) {
    LaunchBits(out, count, TriluBit{in, rows, cols, config.Upper, config.K});
  } else {
    WithWord(dtype, [&](auto word) {
      using W = decltype(word);
      TriluKernel<W><<<GridFor(count), kThreads, 0, Stream()>>>(
          static_cast<const W*>(in), static_cast<W*>(out), count, rows, cols, config.Upper,
          config.K);
    });
  }
  FinishMethod(kTrilu);
}

// ---- Pow, Round, Trig (f64 on the device) ----------------------------------------------------------

// std::pow in f64 (CUDA's pow: the C99 special cases, at most 2 ulp from the correctly rounded
// value in f64; f32/f16/bf16 outputs are rounded from it once).
__global__ void PowKernel(const void* a, const void* b, void* out, int64_t count, DType dtype) {
  BP_CUDA_GRID_STRIDE(i, count) { StoreF(out, i, dtype, pow(LoadF(a, i, dtype), LoadF(b, i, dtype))); }
}

void Pow(const void* a, const void* b, void* out, int64_t count, DType dtype) {
  CheckCommon(kPow, dtype, kFloatDTypes, count);
  CheckPointer(kPow, "a", a, count);
  CheckPointer(kPow, "b", b, count);
  CheckPointer(kPow, "out", out, count);
  if (count == 0) return;
  PowKernel<<<GridFor(count), kThreads, 0, Stream()>>>(a, b, out, count, dtype);
  FinishMethod(kPow);
}

// Round half to even as the reference computes it (every step exact).
__device__ __forceinline__ double RoundHalfEven(double x) {
  const double r = round(x);  // half away from zero
  if (fabs(__dsub_rn(r, x)) == 0.5) return __dmul_rn(2.0, round(__ddiv_rn(x, 2.0)));
  return r;
}

__global__ void RoundKernel(RoundOp op, const void* in, void* out, int64_t count, DType dtype) {
  BP_CUDA_GRID_STRIDE(i, count) {
    const double x = LoadF(in, i, dtype);
    double r = x;
    switch (op) {
      case RoundOp::Floor: r = floor(x); break;
      case RoundOp::Ceil: r = ceil(x); break;
      case RoundOp::HalfToEven: r = RoundHalfEven(x); break;
      case RoundOp::Trunc: r = trunc(x); break;
      case RoundOp::Erf: r = erf(x); break;  // CUDA's erf: within 2 ulp of f64
    }
    StoreF(out, i, dtype, r);
  }
}

void Round(const RoundConfig& config, const void* in, void* out, int64_t count, DType dtype) {
  CheckCommon(kRound, dtype, kFloatDTypes, count);
  CheckEnum(kRound, "config.Op", config.Op, RoundOp::Erf);
  CheckPointer(kRound, "in", in, count);
  CheckPointer(kRound, "out", out, count);
  if (count == 0) return;
  RoundKernel<<<GridFor(count), kThreads, 0, Stream()>>>(config.Op, in, out, count, dtype);
  FinishMethod(kRound);
}

// The C library functions in f64 (CUDA's: within 1-3 ulp of f64, as glibc's are within 1).
__device__ __forceinline__ double ApplyTrig(TrigOp op, double x) {
  switch (op) {
    case TrigOp::Tan: return tan(x);
    case TrigOp::Asin: return asin(x);
    case TrigOp::Acos: return acos(x);
    case TrigOp::Atan: return atan(x);
    case TrigOp::Sinh: return sinh(x);
    case TrigOp::Cosh: return cosh(x);
    case TrigOp::Asinh: return asinh(x);
    case TrigOp::Acosh: return acosh(x);
    case TrigOp::Atanh: return atanh(x);
  }
  return x;
}

__global__ void TrigKernel(TrigOp op, const void* in, void* out, int64_t count, DType dtype) {
  BP_CUDA_GRID_STRIDE(i, count) { StoreF(out, i, dtype, ApplyTrig(op, LoadF(in, i, dtype))); }
}

void Trig(const TrigConfig& config, const void* in, void* out, int64_t count, DType dtype) {
  CheckDType(kTrig, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kTrig, "count", count);
  const auto op = static_cast<int32_t>(config.Op);
  if (op < 0 || op > static_cast<int32_t>(TrigOp::Atanh)) {
    ThrowInvalidArgument(kTrig, "config.Op",
                         Format("in [0, {}]", static_cast<int32_t>(TrigOp::Atanh)),
                         std::to_string(op));
  }
  CheckPointer(kTrig, "in", in, count);
  CheckPointer(kTrig, "out", out, count);
  if (count == 0) return;
  TrigKernel<<<GridFor(count), kThreads, 0, Stream()>>>(config.Op, in, out, count, dtype);
  FinishMethod(kTrig);
}

// ---- Mod -----------------------------------------------------------------------------------------

// Python's % or C fmod in f64 (the reference's FloatMod; fmod is exact, the rest one rounding).
__device__ __forceinline__ double FloatMod(double a, double b, bool isFmod) {
  double r = fmod(a, b);
  if (isFmod || isnan(r)) return r;
  if (r == 0.0) return copysign(0.0, b);
  if ((r < 0) != (b < 0)) r = __dadd_rn(r, b);
  return r;
}

__global__ void FloatModKernel(const void* a, const void* b, void* out, int64_t count, DType dtype,
                               bool isFmod) {
  BP_CUDA_GRID_STRIDE(i, count) {
    StoreF(out, i, dtype, FloatMod(LoadF(a, i, dtype), LoadF(b, i, dtype), isFmod));
  }
}

template <class T>
__device__ __forceinline__ T IntMod(T a, T b, bool isFmod) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;  // also INT_MIN % -1
    T r = static_cast<T>(a % b);
    if (!isFmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

template <class T>
__global__ void AnyZeroKernel(const T* b, int64_t count, unsigned* found) {
  BP_CUDA_GRID_STRIDE(i, count) {
    if (b[i] == 0) atomicOr(found, 1u);
  }
}

template <class T>
__global__ void IntModKernel(const T* a, const T* b, T* out, int64_t count, bool isFmod) {
  BP_CUDA_GRID_STRIDE(i, count) { out[i] = IntMod<T>(a[i], b[i], isFmod); }
}

void Mod(const ModConfig& config, const void* a, const void* b, void* out, int64_t count,
         DType dtype) {
  CheckCommon(kMod, dtype, kTensorDTypes, count);
  CheckPointer(kMod, "a", a, count);
  CheckPointer(kMod, "b", b, count);
  CheckPointer(kMod, "out", out, count);
  if (count == 0) return;
  if (IsFloatingPoint(dtype)) {
    FloatModKernel<<<GridFor(count), kThreads, 0, Stream()>>>(a, b, out, count, dtype, config.Fmod);
    FinishMethod(kMod);
    return;
  }
  WithIntType(dtype, [&](auto zero) {
    using T = decltype(zero);
    // Every divisor is checked on the device before anything is written.
    DeviceScratch scratch(sizeof(unsigned));
    auto* found = static_cast<unsigned*>(scratch.Get());
    MemsetAsync(found, 0, sizeof(unsigned));
    AnyZeroKernel<T><<<GridFor(count), kThreads, 0, Stream()>>>(static_cast<const T*>(b), count,
                                                                found);
    unsigned host = 0;
    CopyAsync(&host, found, sizeof(unsigned));
    scratch.Release();
    FinishMethod(kMod);
    if (host != 0) ThrowInvalidArgument(kMod, "b", "non-zero (integer division)", "a zero element");
    IntModKernel<T><<<GridFor(count), kThreads, 0, Stream()>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), count, config.Fmod);
  });
  FinishMethod(kMod);
}

// ---- BitShift ------------------------------------------------------------------------------------

template <class T>
__device__ __forceinline__ T Shift(T a, T b, bool left) {
  using U = std::make_unsigned_t<T>;
  constexpr uint64_t kBits = sizeof(T) * 8;
  const auto s = static_cast<uint64_t>(b);  // b >= 0 checked
  if (left) return s >= kBits ? T{0} : static_cast<T>(static_cast<U>(static_cast<U>(a) << s));
  if (s >= kBits) {
    if constexpr (std::is_signed_v<T>) {
      return a < T{0} ? static_cast<T>(-1) : T{0};
    } else {
      return T{0};
    }
  }
  return static_cast<T>(a >> s);  // arithmetic for signed, logical for unsigned
}

template <class T>
__global__ void FirstNegativeKernel(const T* b, int64_t count, unsigned long long* first) {
  BP_CUDA_GRID_STRIDE(i, count) {
    if (b[i] < T{0}) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

template <class T>
__global__ void ShiftKernel(const T* a, const T* b, T* out, int64_t count, bool left) {
  BP_CUDA_GRID_STRIDE(i, count) { out[i] = Shift<T>(a[i], b[i], left); }
}

void BitShift(const BitShiftConfig& config, const void* a, const void* b, void* out, int64_t count,
              DType dtype) {
  CheckDType(kBitShift, "dtype", dtype, kIntegerDTypes);
  CheckNonNegative(kBitShift, "count", count);
  CheckPointer(kBitShift, "a", a, count);
  CheckPointer(kBitShift, "b", b, count);
  CheckPointer(kBitShift, "out", out, count);
  if (count == 0) return;
  WithIntType(dtype, [&](auto zero) {
    using T = decltype(zero);
    const auto* tb = static_cast<const T*>(b);
    if constexpr (std::is_signed_v<T>) {
      // The first negative shift amount, found on the device before anything is written.
      DeviceScratch scratch(sizeof(unsigned long long));
      auto* first = static_cast<unsigned long long*>(scratch.Get());
      MemsetAsync(first, 0xFF, sizeof(unsigned long long));
      FirstNegativeKernel<T><<<GridFor(count), kThreads, 0, Stream()>>>(tb, count, first);
      unsigned long long bad = kNoPosition;
      CopyAsync(&bad, first, sizeof(bad));
      scratch.Release();
      FinishMethod(kBitShift);
      if (bad != kNoPosition) {
        T value{};
        CopyAsync(&value, tb + bad, sizeof(T));
        FinishMethod(kBitShift);
        ThrowInvalidArgument(kBitShift, "b", "non-negative shift amounts",
                             Format("{} at element {}", static_cast<int64_t>(value), bad));
      }
    }
    ShiftKernel<T><<<GridFor(count), kThreads, 0, Stream()>>>(static_cast<const T*>(a), tb,
                                                              static_cast<T*>(out), count,
                                                              config.Left);
  });
  FinishMethod(kBitShift);
}

}  // namespace

void RegisterShape(KernelTable& table) {
  table.Shape_Reshape = &Reshape;
  table.Shape_Transpose = &Transpose;
  table.Shape_Concat = &Concat;
  table.Shape_Split = &Split;
  table.Shape_UpsampleNearest2D = &UpsampleNearest2D;
  table.Shape_ViewAsHeads = &ViewAsHeads;
  table.Shape_MergeHeads = &MergeHeads;
  table.Shape_LastToken = &LastToken;
  table.Shape_Slice = &Slice;

  table.TensorOps_Compare = &Compare;
  table.TensorOps_Logical = &Logical;
  table.TensorOps_Where = &Where;
  table.TensorOps_Cast = &Cast;
  table.TensorOps_Trilu = &Trilu;
  table.TensorOps_Pow = &Pow;
  table.TensorOps_Mod = &Mod;
  table.TensorOps_Round = &Round;
  table.TensorOps_Trig = &Trig;
  table.TensorOps_BitShift = &BitShift;
}

}  // namespace backplane::cuda
