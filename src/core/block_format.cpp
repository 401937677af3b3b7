#include "backplane/block_format.hpp"

#include <array>
#include <limits>
#include <string>

#include "backplane/error.hpp"

namespace backplane {
namespace {

struct FormatRow {
  BlockFormat format;
  std::string_view name;
  BlockLayout layout;
};

// ggml-common.h: QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 = QK8_1 = 32, QK_K = 256.
constexpr std::array<FormatRow, 15> kFormats{{
    {BlockFormat::F32, "f32", {1, 4}},
    {BlockFormat::F16, "f16", {1, 2}},
    {BlockFormat::Q4_0, "q4_0", {32, 2 + 16}},
    {BlockFormat::Q4_1, "q4_1", {32, 2 + 2 + 16}},
    {BlockFormat::Q5_0, "q5_0", {32, 2 + 4 + 16}},
    {BlockFormat::Q5_1, "q5_1", {32, 2 + 2 + 4 + 16}},
    {BlockFormat::Q8_0, "q8_0", {32, 2 + 32}},
    {BlockFormat::Q8_1, "q8_1", {32, 2 + 2 + 32}},
    {BlockFormat::Q2_K, "q2_k", {256, 256 / 16 + 256 / 4 + 2 + 2}},
    {BlockFormat::Q3_K, "q3_k", {256, 256 / 8 + 256 / 4 + 12 + 2}},
    {BlockFormat::Q4_K, "q4_k", {256, 2 + 2 + 12 + 256 / 2}},
    {BlockFormat::Q5_K, "q5_k", {256, 2 + 2 + 12 + 256 / 8 + 256 / 2}},
    {BlockFormat::Q6_K, "q6_k", {256, 256 / 2 + 256 / 4 + 256 / 16 + 2}},
    {BlockFormat::Q8_K, "q8_k", {256, 4 + 256 + 256 / 16 * 2}},
    {BlockFormat::BF16, "bf16", {1, 2}},
}};

constexpr std::array<BlockFormat, kFormats.size()> kAll = [] {
  std::array<BlockFormat, kFormats.size()> all{};
  for (size_t i = 0; i < kFormats.size(); ++i) all[i] = kFormats[i].format;
  return all;
}();

const FormatRow* Find(BlockFormat format) {
  for (const FormatRow& row : kFormats) {
    if (row.format == format) return &row;
  }
  return nullptr;
}

const FormatRow& Row(BlockFormat format) {
  const FormatRow* row = Find(format);
  if (row == nullptr) {
    ThrowInvalidArgument("BlockFormat", "format", "a ggml type Backplane reads",
                         std::to_string(static_cast<uint32_t>(format)));
  }
  return *row;
}

}  // namespace

std::span<const BlockFormat> AllBlockFormats() { return kAll; }

BlockLayout LayoutOf(BlockFormat format) { return Row(format).layout; }

std::string_view BlockFormatName(BlockFormat format) { return Row(format).name; }

std::optional<BlockFormat> BlockFormatFromName(std::string_view name) {
  for (const FormatRow& row : kFormats) {
    if (row.name == name) return row.format;
  }
  return std::nullopt;
}

std::optional<BlockFormat> BlockFormatFromGgmlType(uint32_t ggmlType) {
  const FormatRow* row = Find(static_cast<BlockFormat>(ggmlType));
  if (row == nullptr) return std::nullopt;
  return row->format;
}

int64_t BlockBytes(BlockFormat format, int64_t count, std::string_view op, std::string_view arg) {
  const BlockLayout layout = LayoutOf(format);
  if (count < 0 || count % layout.elements != 0) {
    ThrowInvalidArgument(op, arg,
                         "a non-negative multiple of " + std::to_string(layout.elements) + " (the " +
                             std::string(BlockFormatName(format)) + " block size)",
                         std::to_string(count));
  }
  const int64_t blocks = count / layout.elements;
  if (blocks > std::numeric_limits<int64_t>::max() / layout.bytes) {
    ThrowInvalidArgument(op, arg, "a byte count that fits in int64", std::to_string(count));
  }
  return blocks * layout.bytes;
}

}  // namespace backplane
