// Block-quantised tensor formats, as ggml defines them (the GGUF tensor types). The numeric values
// are ggml's `ggml_type` values, so a GGUF tensor info maps onto them directly. A format stores
// `elements` values in `bytes` bytes; a row of a block-quantised matrix is a whole number of blocks.
// Layouts (ggml-common.h): docs/semantics/block_quant.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace backplane {

enum class BlockFormat : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct BlockLayout {
  int64_t elements;  // values per block
  int64_t bytes;     // bytes per block
};

// Every format Backplane reads, in enum order.
std::span<const BlockFormat> AllBlockFormats();
BlockLayout LayoutOf(BlockFormat format);
// Lowercase ggml name: "f32", "q4_1", "q6_k".
std::string_view BlockFormatName(BlockFormat format);
std::optional<BlockFormat> BlockFormatFromName(std::string_view name);
// nullopt for a ggml type Backplane does not read (or an unknown value).
std::optional<BlockFormat> BlockFormatFromGgmlType(uint32_t ggmlType);

// Bytes of `count` values. Throws InvalidArgument naming `op` and `arg` when count is negative,
// not a multiple of the block size, or the byte count overflows int64.
int64_t BlockBytes(BlockFormat format, int64_t count, std::string_view op, std::string_view arg);

}  // namespace backplane
