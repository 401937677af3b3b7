// Backend surface TensorOps: the dtype-general tensor ops exported graphs use for masks, indices
// and shape arithmetic (ONNX's comparison, logic, Where, Cast, ArgMax, CumSum, Trilu, Pow, Mod,
// GatherElements, rounding, TopK, the scatters and GatherND). Flat buffers; the graph lowerings broadcast and move axes.
// Semantics: docs/semantics/tensor_ops.md.
//   Compare:        out[i] = a[i] <op> b[i] as bool (bit-packed, LSB first), NaN compares false
//                   except under NotEqual.
//   Logical:        out[i] = a[i] <op> b[i] on bools (b unused by Not).
//   Where:          out[i] = cond[i] ? a[i] : b[i] (cond bool).
//   Cast:           out[i] = in[i] converted from `from` to `to` (rules in the semantics doc).
//   ArgReduce:      out[o, j] = index along the axis of the max (min) of in[o, :, j], first (or
//                   last) of ties; a NaN counts as the maximum and the minimum (first NaN wins).
//   CumSum:         out[o, k, j] = sum of in[o, m, j] for m <= k (m < k exclusive; m >= k reverse).
//   Trilu:          each [rows, cols] matrix with the elements above (upper: below) diagonal k
//                   zeroed: lower keeps j - i <= k, upper keeps j - i >= k.
//   Pow:            out[i] = pow(a[i], b[i]) (std::pow, IEEE special cases).
//   Mod:            fmod: C fmod (sign of a); otherwise the floor remainder (sign of b, Python's
//                   %); an integer division by zero is InvalidArgument.
//   GatherElements: out[o, k, j] = in[o, idx[o, k, j], j] with idx int64 in [-axis, axis).
//   Round:          floor, ceil, round-half-to-even, trunc, or erf, elementwise on floats.
//   TopK:           the k largest (smallest) of in[o, :, j] in order, ties to the lower index, NaN
//                   above every number; values [outer, k, inner] and their int64 indices.
//   ScatterElements: out = data, then out[o, idx[o, k, j], j] (op)= upd[o, k, j] in row-major order.
//   ScatterND:      out = data, then out[idx[n, :depth], ...] (op)= upd[n, ...] for n in order.
//   GatherND:       out[b, n, ...] = in[b, idx[b, n, :depth], ...].
//   Trig:           tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, elementwise on floats.
//   BitShift:       out[i] = a[i] << b[i] (or >>) on integers; a shift of the bit width or more
//                   gives 0 (an arithmetic right shift of a negative value: -1); b < 0 is invalid.
#pragma once

#include <cstdint>

#include "backplane/backend/families.hpp"
#include "backplane/dtype.hpp"

namespace backplane {

// Byte-addressable real dtypes: the floats (fp8 excluded), the signed and unsigned integers
// (i4 excluded); Bool where a method says so.
inline constexpr DTypeSet kTensorDTypes{DType::Float64, DType::Float32, DType::Float16,
                                        DType::BFloat16, DType::Int64,   DType::Int32,
                                        DType::Int16,   DType::Int8,    DType::Uint64,
                                        DType::Uint32,  DType::Uint16,  DType::Uint8};
inline constexpr DTypeSet kTensorDTypesAndBool = kTensorDTypes | DTypeSet{DType::Bool};

enum class CompareOp : int32_t { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };
struct CompareConfig {
  CompareOp Op = CompareOp::Equal;
};
enum class LogicalOp : int32_t { And, Or, Xor, Not };
struct LogicalConfig {
  LogicalOp Op = LogicalOp::And;
};
struct ArgReduceConfig {
  bool Max = true;          // false: argmin
  bool SelectLast = false;  // the last index of equal extremes
};
struct CumSumConfig {
  bool Exclusive = false;
  bool Reverse = false;
};
struct TriluConfig {
  bool Upper = true;
  int64_t K = 0;  // diagonal offset
};
struct ModConfig {
  bool Fmod = false;
};
enum class RoundOp : int32_t { Floor, Ceil, HalfToEven, Trunc, Erf };
struct RoundConfig {
  RoundOp Op = RoundOp::Floor;
};
struct TopKConfig {
  bool Largest = true;  // false: the k smallest
};
enum class ScatterReduction : int32_t { None, Add, Mul };
struct ScatterConfig {
  ScatterReduction Reduction = ScatterReduction::None;
};
enum class TrigOp : int32_t { Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh };
struct TrigConfig {
  TrigOp Op = TrigOp::Tan;
};
struct BitShiftConfig {
  bool Left = true;  // false: right (logical for unsigned, arithmetic for signed)
};

// The integer dtypes (BitShift).
inline constexpr DTypeSet kIntegerDTypes{DType::Int64,  DType::Int32,  DType::Int16,  DType::Int8,
                                         DType::Uint64, DType::Uint32, DType::Uint16, DType::Uint8};

#define BP_RET_Compare void
#define BP_PARAMS_Compare \
  const CompareConfig &config, const void *a, const void *b, void *out, int64_t count, DType dtype
#define BP_ARGS_Compare config, a, b, out, count, dtype

#define BP_RET_Logical void
#define BP_PARAMS_Logical \
  const LogicalConfig &config, const void *a, const void *b, void *out, int64_t count, DType dtype
#define BP_ARGS_Logical config, a, b, out, count, dtype

#define BP_RET_Where void
#define BP_PARAMS_Where \
  const void *cond, const void *a, const void *b, void *out, int64_t count, DType dtype
#define BP_ARGS_Where cond, a, b, out, count, dtype

#define BP_RET_Cast void
#define BP_PARAMS_Cast const void *in, DType from, void *out, DType to, int64_t count
#define BP_ARGS_Cast in, from, out, to, count

#define BP_RET_ArgReduce void
#define BP_PARAMS_ArgReduce                                                                    \
  const ArgReduceConfig &config, const void *in, int64_t *out, int64_t outer, int64_t axis, \
      int64_t inner, DType dtype
#define BP_ARGS_ArgReduce config, in, out, outer, axis, inner, dtype

#define BP_RET_CumSum void
#define BP_PARAMS_CumSum                                                                    \
  const CumSumConfig &config, const void *in, void *out, int64_t outer, int64_t axis,     \
      int64_t inner, DType dtype
#define BP_ARGS_CumSum config, in, out, outer, axis, inner, dtype

#define BP_RET_Trilu void
#define BP_PARAMS_Trilu \
  const TriluConfig &config, const void *in, void *out, int64_t batch, int64_t rows, int64_t cols, DType dtype
#define BP_ARGS_Trilu config, in, out, batch, rows, cols, dtype

#define BP_RET_Pow void
#define BP_PARAMS_Pow const void *a, const void *b, void *out, int64_t count, DType dtype
#define BP_ARGS_Pow a, b, out, count, dtype

#define BP_RET_Mod void
#define BP_PARAMS_Mod \
  const ModConfig &config, const void *a, const void *b, void *out, int64_t count, DType dtype
#define BP_ARGS_Mod config, a, b, out, count, dtype

#define BP_RET_GatherElements void
#define BP_PARAMS_GatherElements                                                                 \
  const void *in, const int64_t *indices, void *out, int64_t outer, int64_t inAxis,           \
      int64_t outAxis, int64_t inner, DType dtype
#define BP_ARGS_GatherElements in, indices, out, outer, inAxis, outAxis, inner, dtype

#define BP_RET_Round void
#define BP_PARAMS_Round const RoundConfig &config, const void *in, void *out, int64_t count, DType dtype
#define BP_ARGS_Round config, in, out, count, dtype

#define BP_RET_TopK void
#define BP_PARAMS_TopK                                                                            \
  const TopKConfig &config, const void *in, void *values, int64_t *indices, int64_t outer,      \
      int64_t axis, int64_t inner, int64_t k, DType dtype
#define BP_ARGS_TopK config, in, values, indices, outer, axis, inner, k, dtype

#define BP_RET_ScatterElements void
#define BP_PARAMS_ScatterElements                                                                 \
  const ScatterConfig &config, const void *data, const int64_t *indices, const void *updates,   \
      void *out, int64_t outer, int64_t dataAxis, int64_t updAxis, int64_t inner, DType dtype
#define BP_ARGS_ScatterElements config, data, indices, updates, out, outer, dataAxis, updAxis, inner, dtype

// data/out have shape dims[0..rank); indices [count, depth]; updates [count, dims[depth..rank)].
#define BP_RET_ScatterND void
#define BP_PARAMS_ScatterND                                                                       \
  const ScatterConfig &config, const void *data, const int64_t *indices, const void *updates,   \
      void *out, const int64_t *dims, int64_t rank, int64_t count, int64_t depth, DType dtype
#define BP_ARGS_ScatterND config, data, indices, updates, out, dims, rank, count, depth, dtype

// in [batch, dims[0..rank)]; indices [batch, count, depth]; out [batch, count, dims[depth..rank)].
#define BP_RET_GatherND void
#define BP_PARAMS_GatherND                                                                        \
  const void *in, const int64_t *indices, void *out, const int64_t *dims, int64_t rank,         \
      int64_t batch, int64_t count, int64_t depth, DType dtype
#define BP_ARGS_GatherND in, indices, out, dims, rank, batch, count, depth, dtype

#define BP_RET_Trig void
#define BP_PARAMS_Trig const TrigConfig &config, const void *in, void *out, int64_t count, DType dtype
#define BP_ARGS_Trig config, in, out, count, dtype

#define BP_RET_BitShift void
#define BP_PARAMS_BitShift \
  const BitShiftConfig &config, const void *a, const void *b, void *out, int64_t count, DType dtype
#define BP_ARGS_BitShift config, a, b, out, count, dtype

// X(Surface, Method, Family, accepted DTypes)
#define BP_SURFACE_TENSOR_OPS(X)                                        \
  X(TensorOps, Compare, Compare, kTensorDTypesAndBool)                  \
  X(TensorOps, Logical, Logical, DTypeSet{DType::Bool})                 \
  X(TensorOps, Where, Where, kTensorDTypesAndBool)                      \
  X(TensorOps, Cast, Cast, kTensorDTypesAndBool)                        \
  X(TensorOps, ArgReduce, ArgReduce, kTensorDTypes)                     \
  X(TensorOps, CumSum, CumSum, kTensorDTypes)                           \
  X(TensorOps, Trilu, Trilu, kTensorDTypesAndBool)                      \
  X(TensorOps, Pow, Pow, kFloatDTypes)                                  \
  X(TensorOps, Mod, Mod, kTensorDTypes)                                 \
  X(TensorOps, GatherElements, GatherElements, kTensorDTypesAndBool)    \
  X(TensorOps, Round, Round, kFloatDTypes)                              \
  X(TensorOps, TopK, TopK, kTensorDTypes)                               \
  X(TensorOps, ScatterElements, ScatterElements, kTensorDTypes)         \
  X(TensorOps, ScatterND, ScatterND, kTensorDTypes)                     \
  X(TensorOps, GatherND, GatherND, kTensorDTypesAndBool)    \
  X(TensorOps, Trig, Trig, kFloatDTypes)                                \
  X(TensorOps, BitShift, BitShift, kIntegerDTypes)

class TensorOpsSurface {
 public:
  virtual ~TensorOpsSurface() = default;
#define BP_DECLARE_PURE(S, M, F, D) virtual BP_RET_##F M(BP_PARAMS_##F) = 0;
  BP_SURFACE_TENSOR_OPS(BP_DECLARE_PURE)
#undef BP_DECLARE_PURE
};

}  // namespace backplane
