// Scalar reference kernels of the TensorOps index half: TopK, ScatterElements, ScatterND, GatherND.
// Semantics: docs/semantics/tensor_ops.md ("Index").
//
// Floats are compared in their own values (f16/bf16 widened exactly); scatter add/mul combine in
// the compute type (f32 for f16/bf16, f64 for f64) and round once per update; integers combine
// with two's-complement wrap-around. Every argument and index is checked before anything is
// written.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "backplane/backend/tensor_ops.hpp"
#include "cpu/reference/common.hpp"
#include "cpu/reference/elem.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace tensor_index {
namespace {
using elem::ByElem;
using elem::CheckTensorDType;
using elem::Elem;

// The product of sizes >= 0 (each checked, named); InvalidArgument naming `arg` when the element
// count, or its size in bits, overflows int64.
int64_t CountOf(std::string_view op, std::string_view arg, std::initializer_list<int64_t> sizes, DType dtype) {
  int64_t n = 1;
  for (const int64_t s : sizes) {
    if (s == 0) return 0;
  }
  for (const int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n)) n = -1;
    if (n < 0) break;
  }
  int64_t bits = 0;
  if (n < 0 || __builtin_mul_overflow(n, int64_t{DTypeBits(dtype)}, &bits)) {
    ThrowInvalidArgument(op, arg, "small enough for the element count to fit in int64", "an overflowing count");
  }
  return n;
}

void CheckSizes(std::string_view op, std::initializer_list<std::pair<std::string_view, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) CheckNonNegative(op, name, value);
}

void CheckIndex(std::string_view op, int64_t value, int64_t size, int64_t at) {
  if (value < -size || value >= size) {
    ThrowInvalidArgument(op, "indices", fmt::format("in [{}, {})", -size, size),
                         fmt::format("{} at element {}", value, at));
  }
}

// One combine step of a scatter: out = out (op) upd.
template <class E>
void Combine(ScatterReduction r, void* out, int64_t at, const void* upd, int64_t from) {
  using V = typename E::Value;
  const V u = E::Get(upd, from);
  if (r == ScatterReduction::None) {
    E::Put(out, at, u);
    return;
  }
  const V o = E::Get(out, at);
  if constexpr (std::is_integral_v<V>) {
    using U = std::make_unsigned_t<V>;
    const U a = static_cast<U>(o), b = static_cast<U>(u);
    E::Put(out, at, static_cast<V>(r == ScatterReduction::Add ? static_cast<U>(a + b) : static_cast<U>(a * b)));
  } else {
    E::Put(out, at, r == ScatterReduction::Add ? static_cast<V>(o + u) : static_cast<V>(o * u));
  }
}

void CheckReduction(std::string_view op, ScatterReduction r) {
  if (r != ScatterReduction::None && r != ScatterReduction::Add && r != ScatterReduction::Mul) {
    ThrowInvalidArgument(op, "config.Reduction", "None, Add or Mul", fmt::format("{}", static_cast<int32_t>(r)));
  }
}

void CopyBytes(void* out, const void* in, int64_t count, DType dtype) {
  if (count > 0) std::memcpy(out, in, DTypeStorageBytes(dtype, count));
}

}  // namespace

// torch.topk(sorted=True): along the axis, the k largest (smallest) values in order, ties to the
// lower index, NaN above every number (first for largest, last for smallest).
void TopK(const TopKConfig& config, const void* in, void* values, int64_t* indices, int64_t outer, int64_t axis,
          int64_t inner, int64_t k, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.TopK";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckSizes(kOp, {{"outer", outer}, {"axis", axis}, {"inner", inner}, {"k", k}});
  if (k > axis) ThrowInvalidArgument(kOp, "k", fmt::format("in [0, {}] (the axis size)", axis), fmt::format("{}", k));
  const int64_t inCount = CountOf(kOp, "axis", {outer, axis, inner}, dtype);
  const int64_t outCount = CountOf(kOp, "k", {outer, k, inner}, dtype);
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "values", values, outCount);
  CheckPointer(kOp, "indices", indices, outCount);
  if (outCount == 0) return;
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    using V = typename E::Value;
    std::vector<std::pair<V, int64_t>> row(static_cast<size_t>(axis));
    // a before b: strictly better value, or an equal one (NaN equals NaN) at a lower index.
    auto before = [&](const std::pair<V, int64_t>& a, const std::pair<V, int64_t>& b) {
      if constexpr (std::is_floating_point_v<V>) {
        const bool na = std::isnan(a.first), nb = std::isnan(b.first);
        if (na || nb) {
          if (na && nb) return a.second < b.second;
          return config.Largest ? na : nb;
        }
      }
      if (a.first != b.first) return config.Largest ? a.first > b.first : a.first < b.first;
      return a.second < b.second;
    };
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        for (int64_t a = 0; a < axis; ++a) row[static_cast<size_t>(a)] = {E::Get(in, (o * axis + a) * inner + j), a};
        std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
        for (int64_t m = 0; m < k; ++m) {
          const int64_t at = (o * k + m) * inner + j;
          E::Put(values, at, row[static_cast<size_t>(m)].first);
          indices[at] = row[static_cast<size_t>(m)].second;
        }
      }
    }
  });
}

// torch.Tensor.scatter_ / scatter_reduce_ (sum, prod) along the axis, in row-major update order.
void ScatterElements(const ScatterConfig& config, const void* data, const int64_t* indices, const void* updates,
                     void* out, int64_t outer, int64_t dataAxis, int64_t updAxis, int64_t inner, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.ScatterElements";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckReduction(kOp, config.Reduction);
  CheckSizes(kOp, {{"outer", outer}, {"dataAxis", dataAxis}, {"updAxis", updAxis}, {"inner", inner}});
  const int64_t dataCount = CountOf(kOp, "dataAxis", {outer, dataAxis, inner}, dtype);
  const int64_t updCount = CountOf(kOp, "updAxis", {outer, updAxis, inner}, dtype);
  if (updCount > 0 && dataAxis == 0) ThrowInvalidArgument(kOp, "dataAxis", "> 0 when there are updates", "0");
  CheckPointer(kOp, "data", data, dataCount);
  CheckPointer(kOp, "indices", indices, updCount);
  CheckPointer(kOp, "updates", updates, updCount);
  CheckPointer(kOp, "out", out, dataCount);
  for (int64_t i = 0; i < updCount; ++i) CheckIndex(kOp, indices[i], dataAxis, i);
  if (out != data) CopyBytes(out, data, dataCount, dtype);
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k = 0; k < updAxis; ++k) {
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t from = (o * updAxis + k) * inner + j;
          const int64_t index = indices[from] < 0 ? indices[from] + dataAxis : indices[from];
          Combine<E>(config.Reduction, out, (o * dataAxis + index) * inner + j, updates, from);
        }
      }
    }
  });
}

namespace {

// The shared shape checks of ScatterND and GatherND: dims[0..rank) >= 0, depth in [0, rank];
// returns {element count of dims, slice = product of dims[depth..rank)}.
std::pair<int64_t, int64_t> NDSizes(std::string_view op, const int64_t* dims, int64_t rank, int64_t depth,
                                    DType dtype) {
  CheckNonNegative(op, "rank", rank);
  CheckPointer(op, "dims", dims, rank);
  for (int64_t d = 0; d < rank; ++d) CheckNonNegative(op, "dims", dims[d]);
  if (depth < 0 || depth > rank) {
    ThrowInvalidArgument(op, "depth", fmt::format("in [0, {}] (the rank)", rank), fmt::format("{}", depth));
  }
  int64_t total = 1, slice = 1;
  bool zero = false;
  for (int64_t d = 0; d < rank; ++d) {
    zero = zero || dims[d] == 0;
    if (!zero && __builtin_mul_overflow(total, dims[d], &total)) {
      ThrowInvalidArgument(op, "dims", "small enough for the element count to fit in int64", "an overflowing count");
    }
  }
  if (zero) total = 0;
  for (int64_t d = depth; d < rank && slice > 0; ++d) {
    if (dims[d] == 0) {
      slice = 0;
    } else if (__builtin_mul_overflow(slice, dims[d], &slice)) {
      ThrowInvalidArgument(op, "dims", "small enough for the slice size to fit in int64", "an overflowing slice");
    }
  }
  CountOf(op, "dims", {total == 0 ? 1 : total}, dtype);
  return {total, slice};
}

// The flat element offset of index tuple n (checked) in dims, times `slice`.
int64_t TupleOffset(std::string_view op, const int64_t* tuple, const int64_t* dims, int64_t depth, int64_t slice,
                    int64_t at) {
  int64_t offset = 0;
  for (int64_t d = 0; d < depth; ++d) {
    const int64_t v = tuple[d];
    CheckIndex(op, v, dims[d], at + d);
    offset = offset * dims[d] + (v < 0 ? v + dims[d] : v);
  }
  return offset * slice;
}

}  // namespace

// ONNX ScatterND / tf.tensor_scatter_nd_update (add, mul): updates applied in index order.
void ScatterND(const ScatterConfig& config, const void* data, const int64_t* indices, const void* updates,
               void* out, const int64_t* dims, int64_t rank, int64_t count, int64_t depth, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.ScatterND";
  CheckTensorDType(kOp, dtype, kTensorDTypes);
  CheckReduction(kOp, config.Reduction);
  CheckNonNegative(kOp, "count", count);
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  const auto [total_binding, slice_binding] = NDSizes(kOp, dims, rank, depth, dtype);
  const auto& total = total_binding;
  const auto& slice = slice_binding;
  const int64_t idxCount = CountOf(kOp, "count", {count, depth == 0 ? 1 : depth}, DType::Int64);
  const int64_t updCount = CountOf(kOp, "count", {count, slice}, dtype);
  CheckPointer(kOp, "data", data, total);
  CheckPointer(kOp, "indices", indices, depth == 0 ? 0 : idxCount);
  CheckPointer(kOp, "updates", updates, updCount);
  CheckPointer(kOp, "out", out, total);
  if (total == 0 && count > 0 && slice > 0) ThrowInvalidArgument(kOp, "dims", "no zero dim when there are updates", "a zero dim");
  for (int64_t n = 0; n < count && total > 0; ++n) TupleOffset(kOp, indices + n * depth, dims, depth, slice, n * depth);
  if (out != data) CopyBytes(out, data, total, dtype);
  if (total == 0 || slice == 0) return;
  ByElem(dtype, [&](auto e) {
    using E = decltype(e);
    for (int64_t n = 0; n < count; ++n) {
      const int64_t base = TupleOffset(kOp, indices + n * depth, dims, depth, slice, n * depth);
      for (int64_t s = 0; s < slice; ++s) Combine<E>(config.Reduction, out, base + s, updates, n * slice + s);
    }
  });
}

// ONNX GatherND / tf.gather_nd with batch dims folded into `batch`.
void GatherND(const void* in, const int64_t* indices, void* out, const int64_t* dims, int64_t rank, int64_t batch,
              int64_t count, int64_t depth, DType dtype) {
  constexpr std::string_view kOp = "TensorOps.GatherND";
  CheckTensorDType(kOp, dtype, kTensorDTypesAndBool);
  CheckSizes(kOp, {{"batch", batch}, {"count", count}});
  // clang 14 cannot capture structured bindings in lambdas (P1091): plain references to them.
  const auto [total_binding, slice_binding] = NDSizes(kOp, dims, rank, depth, dtype);
  const auto& total = total_binding;
  const auto& slice = slice_binding;
  const int64_t inCount = CountOf(kOp, "batch", {batch, total}, dtype);
  const int64_t idxCount = CountOf(kOp, "count", {batch, count, depth == 0 ? 1 : depth}, DType::Int64);
  const int64_t outCount = CountOf(kOp, "count", {batch, count, slice}, dtype);
  CheckPointer(kOp, "in", in, inCount);
  CheckPointer(kOp, "indices", indices, depth == 0 ? 0 : idxCount);
  CheckPointer(kOp, "out", out, outCount);
  if (outCount == 0) return;
  if (total == 0) ThrowInvalidArgument(kOp, "dims", "no zero dim when there is something to gather", "a zero dim");
  for (int64_t t = 0; t < batch * count; ++t) TupleOffset(kOp, indices + t * depth, dims, depth, slice, t * depth);
  const bool packed = dtype == DType::Bool;
  const size_t bytes = packed ? 0 : static_cast<size_t>(DTypeBits(dtype) / 8);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t n = 0; n < count; ++n) {
      const int64_t t = b * count + n;
      const int64_t from = b * total + TupleOffset(kOp, indices + t * depth, dims, depth, slice, t * depth);
      const int64_t at = t * slice;
      if (packed) {
        for (int64_t s = 0; s < slice; ++s) StoreBool(out, at + s, LoadBool(in, from + s));
      } else {
        std::memcpy(static_cast<uint8_t*>(out) + static_cast<size_t>(at) * bytes,
                    static_cast<const uint8_t*>(in) + static_cast<size_t>(from) * bytes,
                    static_cast<size_t>(slice) * bytes);
      }
    }
  }
}

}  // namespace tensor_index

void RegisterTensorOpsIndex(KernelTable& table) {
  table.TensorOps_TopK = &tensor_index::TopK;
  table.TensorOps_ScatterElements = &tensor_index::ScatterElements;
  table.TensorOps_ScatterND = &tensor_index::ScatterND;
  table.TensorOps_GatherND = &tensor_index::GatherND;
}

}  // namespace backplane::cpu::ref
