// Scalar reference kernels for the Shape surface: layout changes that move elements of any dtype
// (numpy.reshape / transpose / concatenate / split, basic slicing, PyTorch's nearest upsampling,
// the attention head layouts and the last-token gather). No arithmetic is done on the values: every
// element is copied bit for bit. Byte-sized dtypes move whole contiguous runs with memcpy; the
// packed dtypes (Int4: two per byte, low nibble first; Bool: eight per byte, LSB first) move
// element by element. Every argument is validated before anything is written; outputs must not
// overlap inputs (Reshape alone may run in place). Semantics: docs/semantics/shape.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "backplane/backend/shape.hpp"
#include "backplane/convert.hpp"
#include "backplane/error.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace shape {
namespace {

// ---- Validation helpers ------------------------------------------------------------------------

// Any valid dtype (Invalid and values outside the enum throw UnsupportedDType naming 'dtype').
// The range test comes first: DTypeSet::Contains shifts by the enum value.
void CheckAnyDType(std::string_view op, DType dtype) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kDTypeCount) ||
      !kAnyDType.Contains(dtype)) {
    ThrowUnsupportedDType(op, "dtype", dtype, kAnyDType);
  }
}

// a * b, or InvalidArgument naming `arg` when the product does not fit in int64 (a, b >= 0).
int64_t MulOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         fmt::format("{} * {}", a, b));
  }
  return result;
}

// a + b, or InvalidArgument naming `arg` when the sum does not fit in int64 (a, b >= 0).
int64_t AddOrThrow(std::string_view op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         fmt::format("{} + {}", a, b));
  }
  return result;
}

// Product of non-negative sizes; 0 as soon as one size is 0 (so [huge, huge, 0] is valid and
// empty). Throws naming `arg` when the product, or its size in bits, overflows int64.
int64_t CountOf(std::string_view op, std::string_view arg, const std::vector<int64_t>& dims,
                DType dtype) {
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  int64_t count = 1;
  for (int64_t d : dims) count = MulOrThrow(op, arg, count, d);
  MulOrThrow(op, arg, count, DTypeBits(dtype));  // the storage size in bits must fit as well
  return count;
}

// Checks rank >= 0, the shape pointer and every dimension >= 0; returns the dims.
std::vector<int64_t> ReadShape(std::string_view op, std::string_view shapeArg,
                               std::string_view rankArg, const int64_t* shape, int64_t rank) {
  CheckNonNegative(op, rankArg, rank);
  CheckPointer(op, shapeArg, shape, rank);
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      ThrowInvalidArgument(op, fmt::format("{}[{}]", shapeArg, i), ">= 0",
                           std::to_string(shape[i]));
    }
    dims[static_cast<size_t>(i)] = shape[i];
  }
  return dims;
}

void CheckAxis(std::string_view op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank) {
    ThrowInvalidArgument(op, "axis", fmt::format("in [0, {}) (the rank)", rank),
                         std::to_string(axis));
  }
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Bytes covered by `count` elements starting at element 0 (packed dtypes round up).
uint64_t ByteSpan(DType dtype, int64_t count) {
  if (count <= 0) return 0;
  return (static_cast<uint64_t>(count) * static_cast<uint64_t>(DTypeBits(dtype)) + 7) / 8;
}

// Throws InvalidArgument naming `outArg` when the output's bytes overlap the input's.
void CheckNoOverlap(std::string_view op, std::string_view outArg, const void* out,
                    int64_t outCount, std::string_view inArg, const void* in, int64_t inCount,
                    DType dtype) {
  const uint64_t outBytes = ByteSpan(dtype, outCount);
  const uint64_t inBytes = ByteSpan(dtype, inCount);
  if (outBytes == 0 || inBytes == 0) return;
  const auto o = reinterpret_cast<uintptr_t>(out);
  const auto i = reinterpret_cast<uintptr_t>(in);
  if (o < i + inBytes && i < o + outBytes) {
    ThrowInvalidArgument(op, outArg, fmt::format("a buffer that does not overlap '{}'", inArg),
                         "overlapping buffers");
  }
}

// ---- Element movement --------------------------------------------------------------------------

// Copies `count` consecutive elements from element `srcIndex` of src to element `dstIndex` of
// dst. Byte-sized dtypes copy the whole run at once; Int4 and Bool go element by element.
void CopyRun(void* dst, int64_t dstIndex, const void* src, int64_t srcIndex, int64_t count,
             DType dtype) {
  if (count <= 0) return;
  switch (dtype) {
    case DType::Int4:
      for (int64_t k = 0; k < count; ++k) {
        StoreInt4(dst, dstIndex + k, LoadInt4(src, srcIndex + k));
      }
      return;
    case DType::Bool:
      for (int64_t k = 0; k < count; ++k) {
        StoreBool(dst, dstIndex + k, LoadBool(src, srcIndex + k));
      }
      return;
    default: {
      const auto bytes = static_cast<size_t>(DTypeBits(dtype) / 8);
      std::memcpy(static_cast<uint8_t*>(dst) + static_cast<size_t>(dstIndex) * bytes,
                  static_cast<const uint8_t*>(src) + static_cast<size_t>(srcIndex) * bytes,
                  static_cast<size_t>(count) * bytes);
      return;
    }
  }
}

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// Walks the output of a strided gather in row-major order: output element (i_0, ..., i_{r-1})
// comes from input element base + sum_a i_a * step[a]. The last `runAxes` output axes are
// contiguous in the input (their product is `run`), so they are copied as one run.
void StridedGather(void* dst, const void* src, const std::vector<int64_t>& outDims,
                   const std::vector<int64_t>& step, int64_t base, size_t outerAxes, int64_t run,
                   int64_t outCount, DType dtype) {
  std::vector<int64_t> index(outerAxes, 0);
  int64_t srcOffset = base;
  for (int64_t dstOffset = 0; dstOffset < outCount; dstOffset += run) {
    CopyRun(dst, dstOffset, src, srcOffset, run, dtype);
    // Odometer increment over the outer output axes.
    for (size_t a = outerAxes; a-- > 0;) {
      srcOffset += step[a];
      if (++index[a] < outDims[a]) break;
      srcOffset -= step[a] * outDims[a];
      index[a] = 0;
    }
  }
}

// ---- Reshape ------------------------------------------------------------------------------------

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
                       fmt::format("{} elements (as inShape {})", count, DimsToString(inDims)),
                       fmt::format("{} elements ({})", outCount, DimsToString(outDims)));
  }
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
  if (count == 0 || src == dst) return;
  // A flat copy in row-major order; memmove so that an in-place or overlapping reshape is defined.
  if (dtype == DType::Int4 || dtype == DType::Bool) {
    // Whole bytes move at once; the elements of a last partial byte move one by one (read before
    // the move, which may overwrite them when the buffers overlap) so its padding bits are kept.
    const int64_t perByte = dtype == DType::Int4 ? 2 : 8;
    const int64_t whole = count / perByte;
    std::vector<int> tail;
    for (int64_t i = whole * perByte; i < count; ++i) {
      tail.push_back(dtype == DType::Int4 ? int{LoadInt4(src, i)} : int{LoadBool(src, i)});
    }
    std::memmove(dst, src, static_cast<size_t>(whole));
    for (size_t k = 0; k < tail.size(); ++k) {
      const int64_t i = whole * perByte + static_cast<int64_t>(k);
      if (dtype == DType::Int4) {
        StoreInt4(dst, i, tail[k]);
      } else {
        StoreBool(dst, i, tail[k] != 0);
      }
    }
    return;
  }
  std::memmove(dst, src, static_cast<size_t>(count) * static_cast<size_t>(DTypeBits(dtype) / 8));
}

// ---- Transpose ----------------------------------------------------------------------------------

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
      ThrowInvalidArgument(op, "perm", fmt::format("a permutation of 0..{}", rank - 1),
                           fmt::format("[{}]", fmt::join(perm, perm + rank, ", ")));
    }
    seen[static_cast<size_t>(p)] = true;
  }
  const int64_t count = CountOf(op, "shape", dims, dtype);
  CheckPointer(op, "src", src, count);
  CheckPointer(op, "dst", dst, count);
  CheckNoOverlap(op, "dst", dst, count, "src", src, count, dtype);
  if (count == 0) return;

  // Output axis i is input axis perm[i]: outDims[i] = dims[perm[i]], and stepping output axis i
  // by one steps the input by its stride along perm[i].
  const auto inStrides = Strides(dims);
  std::vector<int64_t> outDims(dims.size()), step(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    outDims[i] = dims[static_cast<size_t>(perm[i])];
    step[i] = inStrides[static_cast<size_t>(perm[i])];
  }
  // Trailing axes left in place (perm[i] == i for every i >= k) are contiguous in both layouts.
  size_t outer = dims.size();
  int64_t run = 1;
  while (outer > 0 && perm[outer - 1] == static_cast<int64_t>(outer - 1)) {
    run *= dims[outer - 1];
    --outer;
  }
  StridedGather(dst, src, outDims, step, 0, outer, run, count, dtype);
}

// ---- Concat / Split -----------------------------------------------------------------------------

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
            fmt::format("{} at input {}, axis {} (as input 0; only axis {} may differ)", dims0[d],
                        i, d, axis),
            std::to_string(dims[d]));
      }
    }
    const auto ax = static_cast<size_t>(axis);
    if (i > 0) outDims[ax] = AddOrThrow(op, "shapes", outDims[ax], dims[ax]);
    counts[static_cast<size_t>(i)] = CountOf(op, "shapes", dims, dtype);
  }
  const int64_t total = CountOf(op, "shapes", outDims, dtype);
  for (int64_t i = 0; i < inputCount; ++i) {
    CheckPointer(op, fmt::format("inputs[{}]", i), inputs[i], counts[static_cast<size_t>(i)]);
  }
  CheckPointer(op, "dst", dst, total);
  for (int64_t i = 0; i < inputCount; ++i) {
    CheckNoOverlap(op, "dst", dst, total, fmt::format("inputs[{}]", i), inputs[i],
                   counts[static_cast<size_t>(i)], dtype);
  }
  if (total == 0) return;

  // [outer, axis, inner]: for each outer index, input i contributes one contiguous run of
  // shapes[i][axis] * inner elements, in input order.
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < r; ++d) {
    if (static_cast<int64_t>(d) < axis) outer *= outDims[d];
    if (static_cast<int64_t>(d) > axis) inner *= outDims[d];
  }
  int64_t dstOffset = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inputCount; ++i) {
      const int64_t run = first[static_cast<size_t>(i * rank + axis)] * inner;
      CopyRun(dst, dstOffset, inputs[i], o * run, run, dtype);
      dstOffset += run;
    }
  }
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
      ThrowInvalidArgument(op, fmt::format("sizes[{}]", i), ">= 0", std::to_string(sizes[i]));
    }
    overflow = overflow || __builtin_add_overflow(sum, sizes[i], &sum);
  }
  if (overflow || sum != axisSize) {
    ThrowInvalidArgument(op, "sizes",
                         fmt::format("sizes adding up to shape[{}] = {}", axis, axisSize),
                         fmt::format("[{}] (sum {})", fmt::join(sizes, sizes + outputCount, ", "),
                                     overflow ? std::string("overflows") : std::to_string(sum)));
  }
  const int64_t count = CountOf(op, "shape", dims, dtype);
  // Every output has the input's shape with `sizes[i]` along axis: count_i <= count, no overflow.
  std::vector<int64_t> counts(static_cast<size_t>(outputCount));
  for (int64_t i = 0; i < outputCount; ++i) {
    std::vector<int64_t> outDims = dims;
    outDims[static_cast<size_t>(axis)] = sizes[i];
    counts[static_cast<size_t>(i)] = CountOf(op, "shape", outDims, dtype);
  }
  CheckPointer(op, "src", src, count);
  for (int64_t i = 0; i < outputCount; ++i) {
    CheckPointer(op, fmt::format("outputs[{}]", i), outputs[i], counts[static_cast<size_t>(i)]);
  }
  for (int64_t i = 0; i < outputCount; ++i) {
    CheckNoOverlap(op, fmt::format("outputs[{}]", i), outputs[i], counts[static_cast<size_t>(i)],
                   "src", src, count, dtype);
  }
  if (count == 0) return;

  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) outer *= dims[d];
    if (static_cast<int64_t>(d) > axis) inner *= dims[d];
  }
  int64_t srcOffset = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < outputCount; ++i) {
      const int64_t run = sizes[i] * inner;
      CopyRun(outputs[i], o * run, src, srcOffset, run, dtype);
      srcOffset += run;
    }
  }
}

// ---- UpsampleNearest2D --------------------------------------------------------------------------

// PyTorch's nearest source index for an NCHW float32 tensor (the generic CPU kernel,
// HelperInterpNearest in aten/src/ATen/native/cpu/UpSampleKernel.cpp):
// min(floorf(float(dst) * s), in - 1) with s = float(1 / scale) when a scale is given and
// float(in) / float(out) otherwise, evaluated in float. The same index is used for every dtype
// (PyTorch's own index arithmetic follows the tensor dtype; see docs/semantics/shape.md).
int64_t NearestIndex(int64_t dst, int64_t in, int64_t out, double scale) {
  const float s = scale > 0.0 ? static_cast<float>(1.0 / scale)
                              : static_cast<float>(in) / static_cast<float>(out);
  const float real = std::floor(static_cast<float>(dst) * s);
  if (!(real < static_cast<float>(in - 1))) return in - 1;  // also keeps the cast in range
  return std::min(static_cast<int64_t>(real), in - 1);
}

// Checks one spatial axis: a given scale must be finite, and then fixes the output size.
void CheckUpsampleAxis(std::string_view op, std::string_view scaleArg, double scale,
                       std::string_view inArg, int64_t in, std::string_view outArg, int64_t out) {
  CheckFinite(op, scaleArg, scale);
  if (scale > 0.0) {
    const double want = std::floor(static_cast<double>(in) * scale);
    if (!(want < 9.2e18) || static_cast<int64_t>(want) != out) {
      ThrowShapeMismatch(op, outArg,
                         fmt::format("{} (floor({} * {}) from {} and {})", want, inArg, scaleArg,
                                     in, scale),
                         std::to_string(out));
    }
  }
  if (in == 0 && out > 0) {
    ThrowShapeMismatch(op, inArg, fmt::format("> 0 when {} is {}", outArg, out), "0");
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

  std::vector<int64_t> rowIndex(static_cast<size_t>(outH)), colIndex(static_cast<size_t>(outW));
  for (int64_t r = 0; r < outH; ++r) {
    rowIndex[static_cast<size_t>(r)] = NearestIndex(r, inH, outH, config.ScaleH);
  }
  for (int64_t c = 0; c < outW; ++c) {
    colIndex[static_cast<size_t>(c)] = NearestIndex(c, inW, outW, config.ScaleW);
  }
  int64_t dstOffset = 0;
  for (int64_t plane = 0; plane < batch * channels; ++plane) {
    const int64_t srcPlane = plane * inH * inW;
    for (int64_t r = 0; r < outH; ++r) {
      const int64_t srcRow = srcPlane + rowIndex[static_cast<size_t>(r)] * inW;
      for (int64_t c = 0; c < outW; ++c) {
        CopyRun(dst, dstOffset++, src, srcRow + colIndex[static_cast<size_t>(c)], 1, dtype);
      }
    }
  }
}

// ---- Heads layouts and LastToken ----------------------------------------------------------------

// Validates a heads-layout call and returns its element count.
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

// [B, S, H*D] -> [B, H, S, D]: dst[b, h, s, :] = src[b, s, h*D : (h+1)*D].
void ViewAsHeads(const void* src, void* dst, int64_t batch, int64_t seq, int64_t heads,
                 int64_t headDim, DType dtype) {
  if (CheckHeads("Shape.ViewAsHeads", src, dst, batch, seq, heads, headDim, dtype) == 0) return;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t from = ((b * seq + s) * heads + h) * headDim;
        const int64_t to = ((b * heads + h) * seq + s) * headDim;
        CopyRun(dst, to, src, from, headDim, dtype);
      }
    }
  }
}

// [B, H, S, D] -> [B, S, H*D]: the inverse of ViewAsHeads.
void MergeHeads(const void* src, void* dst, int64_t batch, int64_t seq, int64_t heads,
                int64_t headDim, DType dtype) {
  if (CheckHeads("Shape.MergeHeads", src, dst, batch, seq, heads, headDim, dtype) == 0) return;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t from = ((b * heads + h) * seq + s) * headDim;
        const int64_t to = ((b * seq + s) * heads + h) * headDim;
        CopyRun(dst, to, src, from, headDim, dtype);
      }
    }
  }
}

// [B, S, F] -> [B, F]: dst[b, :] = src[b, S - 1, :].
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
    ThrowInvalidArgument(op, "seq",
                         fmt::format("> 0 (there is no last token for {} outputs)", outCount), "0");
  }
  CheckPointer(op, "src", src, inCount);
  CheckPointer(op, "dst", dst, outCount);
  CheckNoOverlap(op, "dst", dst, outCount, "src", src, inCount, dtype);
  if (outCount == 0) return;
  for (int64_t b = 0; b < batch; ++b) {
    CopyRun(dst, b * features, src, (b * seq + seq - 1) * features, features, dtype);
  }
}

// ---- Slice --------------------------------------------------------------------------------------

// One axis of a basic slice after Python's slice(start, stop, step).indices(n): the first source
// index and the number of elements taken.
struct SliceAxis {
  int64_t first;
  int64_t length;
};

SliceAxis ResolveSlice(int64_t start, int64_t stop, int64_t step, int64_t n) {
  // CPython's PySlice_AdjustIndices: clamp to [0, n] for positive steps, [-1, n - 1] otherwise.
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? n - 1 : n;
  auto adjust = [&](int64_t v) {
    if (v < 0) {
      v += n;  // v >= INT64_MIN and n >= 0: no overflow
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  start = adjust(start);
  stop = adjust(stop);
  // Both lie in [-1, n], so the difference fits; |step| is taken unsigned (step may be INT64_MIN).
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
    if (steps[a] == 0) ThrowInvalidArgument(op, fmt::format("steps[{}]", a), "non-zero", "0");
  }
  const int64_t inCount = CountOf(op, "shape", dims, dtype);
  const auto r = static_cast<size_t>(rank);
  std::vector<int64_t> outDims(r), step(r);
  int64_t base = 0;
  const auto inStrides = Strides(dims);
  std::vector<SliceAxis> axes(r);
  for (size_t a = 0; a < r; ++a) axes[a] = ResolveSlice(starts[a], ends[a], steps[a], dims[a]);
  for (size_t a = 0; a < r; ++a) outDims[a] = axes[a].length;
  const int64_t outCount = CountOf(op, "shape", outDims, dtype);  // <= inCount, no overflow
  CheckPointer(op, "src", src, inCount);
  CheckPointer(op, "dst", dst, outCount);
  CheckNoOverlap(op, "dst", dst, outCount, "src", src, inCount, dtype);
  if (outCount == 0) return;

  // Every axis has length >= 1 here, so first lies in [0, n) and first + i * step stays in range.
  for (size_t a = 0; a < r; ++a) {
    base += axes[a].first * inStrides[a];
    // A one-element axis never steps; its step may be INT64_MIN, so do not multiply it.
    step[a] = axes[a].length > 1 ? steps[a] * inStrides[a] : 0;
  }
  // The last axis is one contiguous run when it is taken with step 1.
  size_t outer = r;
  int64_t run = 1;
  if (r > 0 && (steps[r - 1] == 1 || outDims[r - 1] == 1)) {
    run = outDims[r - 1];
    outer = r - 1;
  }
  StridedGather(dst, src, outDims, step, base, outer, run, outCount, dtype);
}

}  // namespace
}  // namespace shape

void RegisterShape(KernelTable& table) {
  table.Shape_Reshape = &shape::Reshape;
  table.Shape_Transpose = &shape::Transpose;
  table.Shape_Concat = &shape::Concat;
  table.Shape_Split = &shape::Split;
  table.Shape_UpsampleNearest2D = &shape::UpsampleNearest2D;
  table.Shape_ViewAsHeads = &shape::ViewAsHeads;
  table.Shape_MergeHeads = &shape::MergeHeads;
  table.Shape_LastToken = &shape::LastToken;
  table.Shape_Slice = &shape::Slice;
}

}  // namespace backplane::cpu::ref
