// Scalar reference kernels of the TensorOps axis half: ArgReduce, CumSum, Trilu, GatherElements.
// Semantics: docs/semantics/tensor_ops.md ("Axis").
//
// Every method sees its tensor as [outer, axis, inner] row-major (Trilu: [batch, rows, cols]).
// Floats are compared in their own values (f16/bf16 widened exactly) and summed in f64; integers
// are compared natively and summed with two's-complement wrap-around. Every argument is checked
// before anything is written.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "backplane/backend/tensor_ops.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/elem.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace tensor_axis {
namespace {

// ---- element access ----------------------------------------------------------------------------

using elem::ByElem;
using elem::CheckTensorDType;
using elem::Elem;

// ---- validation --------------------------------------------------------------------------------

// a * b * c for sizes >= 0 (names checked first); InvalidArgument naming `arg` when the element
// count, or its size in bits, overflows int64. 0 as soon as one size is 0.
int64_t CountOf(std::string_view op, std::string_view arg, int64_t a, int64_t b, int64_t c, DType dtype) {
  if (a == 0 || b == 0 || c == 0) return 0;
  int64_t ab = 0, abc = 0, bits = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) ||
      __builtin_mul_overflow(abc, int64_t{DTypeBits(dtype)}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64",
                         fmt::format("{} * {} * {}", a, b, c));
  }
  return abc;
}

void CheckSizes(std::string_view op, std::initializer_list<std::pair<std::string_view, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) CheckNonNegative(op, name, value);
}

}  // namespace

// numpy.argmax / argmin along the axis (torch.argmax for NaN): out[o * inner + j].
void ArgReduce(const ArgReduceConfig& config, const void* in, int64_t* out, int64_t outer, int64_t axis,
               int64_t inner, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.ArgReduce";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckSizes(kOp, {{"outer", outer}, {"axis", axis}, {"inner", inner}});
  CheckPositive(kOp, "axis", axis);
  const int64_t count = CountOf(kOp, "axis", outer, axis, inner, dtype);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count == 0 ? 0 : outer * inner);
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    using V = typename E::Value;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t base = o * axis * inner + j;
        V best = E::Get(in, base);
        int64_t index = 0;
        bool nan = false;
        if constexpr (std::is_floating_point_v<V>) nan = std::isnan(best);
        for (int64_t k = 1; k < axis && !nan; ++k) {
          const V x = E::Get(in, base + k * inner);
          if constexpr (std::is_floating_point_v<V>) {
            if (std::isnan(x)) {  // the first NaN is the result, for max and min alike
              index = k;
              break;
            }
          }
          const bool better = config.Max ? x > best : x < best;
          if (better || (config.SelectLast && x == best)) {
            best = x;
            index = k;
          }
        }
        out[o * inner + j] = index;
      }
    }
  });
}

// numpy.cumsum along the axis (ONNX CumSum's exclusive / reverse).
void CumSum(const CumSumConfig& config, const void* in, void* out, int64_t outer, int64_t axis, int64_t inner,
            DType dtype) {
  constexpr std::string_view kOp = "TensorOps.CumSum";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckSizes(kOp, {{"outer", outer}, {"axis", axis}, {"inner", inner}});
  const int64_t count = CountOf(kOp, "axis", outer, axis, inner, dtype);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count);
  if (count == 0) return;
  const bool floating = IsFloatingPoint(dtype);
  const int bits = DTypeBits(dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t base = o * axis * inner + j;
      // -0.0 is the identity of IEEE addition: the first inclusive sum is the element itself.
      double fsum = -0.0;
      uint64_t isum = 0;
      for (int64_t s = 0; s < axis; ++s) {
        const int64_t k = config.Reverse ? axis - 1 - s : s;
        const int64_t at = base + k * inner;
        if (floating) {
          const double x = Load<double>(in, at, dtype);
          if (config.Exclusive) {
            StoreResult(out, at, dtype, s == 0 ? 0.0 : fsum);
            fsum += x;
          } else {
            fsum += x;
            StoreResult(out, at, dtype, fsum);
          }
          continue;
        }
        // Integers: the unsigned sum modulo 2^64 truncated to the width is the wrapped sum.
        uint64_t x = 0;
        ByElem(dtype, [&](auto e) {
          using E = decltype(e);
          if constexpr (std::is_integral_v<typename E::Value>) {
            x = static_cast<uint64_t>(E::Get(in, at));
          }
        });
        const uint64_t before = isum;
        isum += x;
        const uint64_t value = config.Exclusive ? before : isum;
        std::memcpy(static_cast<uint8_t*>(out) + at * (bits / 8), &value, static_cast<size_t>(bits / 8));
      }
    }
  }
}

// torch.triu / torch.tril(diagonal=k) on each [rows, cols] matrix; bools are bit-packed.
void Trilu(const TriluConfig& config, const void* in, void* out, int64_t batch, int64_t rows, int64_t cols,
           DType dtype) {
  constexpr std::string_view kOp = "TensorOps.Trilu";
  CheckTensorDType(kOp, dtype, kTensorDTypesAndBool);
  CheckSizes(kOp, {{"batch", batch}, {"rows", rows}, {"cols", cols}});
  const int64_t count = CountOf(kOp, "rows", batch, rows, cols, dtype);
  CheckPointer(kOp, "in", in, count);
  CheckPointer(kOp, "out", out, count);
  const bool packed = dtype == DType::Bool;
  const size_t bytes = packed ? 0 : static_cast<size_t>(DTypeBits(dtype) / 8);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t at = (b * rows + i) * cols + j;
        const bool keep = config.Upper ? j - i >= config.K : j - i <= config.K;
        if (packed) {
          StoreBool(out, at, keep && LoadBool(in, at));
        } else if (keep) {
          std::memcpy(static_cast<uint8_t*>(out) + static_cast<size_t>(at) * bytes,
                      static_cast<const uint8_t*>(in) + static_cast<size_t>(at) * bytes, bytes);
        } else {
          std::memset(static_cast<uint8_t*>(out) + static_cast<size_t>(at) * bytes, 0, bytes);
        }
      }
    }
  }
}

// torch.gather / ONNX GatherElements along the axis; negative indices count from the end.
void GatherElements(const void* in, const int64_t* indices, void* out, int64_t outer, int64_t inAxis,
                    int64_t outAxis, int64_t inner, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.GatherElements";
  CheckTensorDType(kOp, dtype, kTensorDTypesAndBool);
  CheckSizes(kOp, {{"outer", outer}, {"inAxis", inAxis}, {"outAxis", outAxis}, {"inner", inner}});
  const int64_t inCount = CountOf(kOp, "inAxis", outer, inAxis, inner, dtype);
  const int64_t outCount = CountOf(kOp, "outAxis", outer, outAxis, inner, dtype);
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "indices", indices, outCount);
  CheckPointer(kOp, "out", out, outCount);
  for (int64_t i = 0; i < outCount; ++i) {
    if (indices[i] < -inAxis || indices[i] >= inAxis) {
      ThrowInvalidArgument(kOp, "indices", fmt::format("in [{}, {})", -inAxis, inAxis),
                           fmt::format("{} at element {}", indices[i], i));
    }
  }
  const bool packed = dtype == DType::Bool;
  const size_t bytes = packed ? 0 : static_cast<size_t>(DTypeBits(dtype) / 8);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < outAxis; ++k) {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t at = (o * outAxis + k) * inner + j;
        const int64_t index = indices[at] < 0 ? indices[at] + inAxis : indices[at];
        const int64_t from = (o * inAxis + index) * inner + j;
        if (packed) {
          StoreBool(out, at, LoadBool(in, from));
        } else {
          std::memcpy(static_cast<uint8_t*>(out) + static_cast<size_t>(at) * bytes,
                      static_cast<const uint8_t*>(in) + static_cast<size_t>(from) * bytes, bytes);
        }
      }
    }
  }
}

}  // namespace tensor_axis

void RegisterTensorOpsAxis(KernelTable& table) {
  table.TensorOps_ArgReduce = &tensor_axis::ArgReduce;
  table.TensorOps_CumSum = &tensor_axis::CumSum;
  table.TensorOps_Trilu = &tensor_axis::Trilu;
  table.TensorOps_GatherElements = &tensor_axis::GatherElements;
}

}  // namespace backplane::cpu::ref
