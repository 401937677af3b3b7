// Scalar reference kernels for the Embedding surface: table [vocab, hidden] row-major, int32
// indices and offsets. Semantics: docs/semantics/embedding.md.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/reference/common.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::cpu::ref {
namespace embedding {
namespace {

// rows * hidden, throwing instead of overflowing.
int64_t Extent(std::string_view op, std::string_view rowsName, int64_t rows, int64_t hidden) {
  int64_t product = 0;
  if (__builtin_mul_overflow(rows, hidden, &product)) {
    ThrowInvalidArgument(
        op, "hidden",
        fmt::format("such that {}*hidden fits in int64 ({} = {})", rowsName, rowsName, rows),
        std::to_string(hidden));
  }
  return product;
}

// Every index must name a row of the table.
void CheckIndices(std::string_view op, const int32_t* indices, int64_t count, int64_t vocab) {
  for (int64_t i = 0; i < count; ++i) {
    const int32_t index = indices[i];
    if (index < 0 || index >= vocab) {
      ThrowInvalidArgument(op, "indices", fmt::format("in [0, {}) (vocab)", vocab),
                           fmt::format("indices[{}] = {}", i, index));
    }
  }
}

}  // namespace

// out[i, :] = table[indices[i], :]. Rows are copied bit for bit (f16/bf16 and NaN payloads too).
void Lookup(const void* table, const int32_t* indices, void* out, int64_t vocab, int64_t hidden,
            int64_t count, DType dtype) {
  constexpr std::string_view kOp = "Embedding.Lookup";
  CheckDType(kOp, "dtype", dtype, kFloatDTypes);
  CheckNonNegative(kOp, "vocab", vocab);
  CheckNonNegative(kOp, "hidden", hidden);
  CheckNonNegative(kOp, "count", count);
  CheckPointer(kOp, "table", table, Extent(kOp, "vocab", vocab, hidden));
  CheckPointer(kOp, "indices", indices, count);
  CheckPointer(kOp, "out", out, Extent(kOp, "count", count, hidden));
  CheckIndices(kOp, indices, count, vocab);
  if (hidden == 0) return;

  const size_t rowBytes = DTypeStorageBytes(dtype, hidden);
  const auto* src = static_cast<const uint8_t*>(table);
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < count; ++i) {
    std::memmove(dst + static_cast<size_t>(i) * rowBytes,
                 src + static_cast<size_t>(indices[i]) * rowBytes, rowBytes);
  }
}

// out[b, :] = sum of table[indices[j], :] for j in [offsets[b], end_b), end_b = offsets[b+1] for
// b < bags-1 and count for the last bag. Mode sum, f64 accumulation, one rounding on store; an
// empty bag gives zeros. out is always overwritten. Offsets follow torch.embedding_bag's rules
// (offsets[0] == 0, offsets[bags-1] <= count) and must also be non-decreasing.
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
  CheckPointer(kOp, "out", out, Extent(kOp, "bags", bags, hidden));
  CheckIndices(kOp, indices, count, vocab);
  for (int64_t b = 0; b < bags; ++b) {
    const int32_t offset = offsets[b];
    if (b == 0 && offset != 0) {
      ThrowInvalidArgument(kOp, "offsets", "0 at position 0 (the first bag starts at index 0)",
                           fmt::format("offsets[0] = {}", offset));
    }
    if (b > 0 && offset < offsets[b - 1]) {
      ThrowInvalidArgument(
          kOp, "offsets", "non-decreasing",
          fmt::format("offsets[{}] = {} < offsets[{}] = {}", b, offset, b - 1, offsets[b - 1]));
    }
    if (offset > count) {
      ThrowInvalidArgument(kOp, "offsets", fmt::format("<= count ({})", count),
                           fmt::format("offsets[{}] = {}", b, offset));
    }
  }
  if (hidden == 0) return;

  std::vector<double> sum(static_cast<size_t>(hidden));
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t begin = offsets[b];
    const int64_t end = b + 1 < bags ? offsets[b + 1] : count;
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t j = begin; j < end; ++j) {
      const int64_t row = static_cast<int64_t>(indices[j]) * hidden;
      for (int64_t d = 0; d < hidden; ++d) {
        sum[static_cast<size_t>(d)] += Load<double>(table, row + d, dtype);
      }
    }
    for (int64_t d = 0; d < hidden; ++d) {
      Store<double>(out, b * hidden + d, dtype, sum[static_cast<size_t>(d)]);
    }
  }
}

}  // namespace embedding

void RegisterEmbedding(KernelTable& table) {
  table.Embedding_Lookup = &embedding::Lookup;
  table.Embedding_Bag = &embedding::Bag;
}

}  // namespace backplane::cpu::ref
