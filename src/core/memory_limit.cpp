#include "backplane/memory_limit.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "backplane/error.hpp"

namespace backplane {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
std::atomic<uint64_t> g_override{0};

uint64_t FromEnvironment() {
  const char* text = std::getenv(kMaxAllocVariable);
  if (text == nullptr || *text == '\0') return DefaultMaxAllocBytes();
  const uint64_t bytes = ParseByteSize(text, kMaxAllocVariable);
  if (bytes == 0) ThrowInvalidArgument(kMaxAllocVariable, "value", "a positive byte count", fmt::format("'{}'", text));
  return bytes;
}

}  // namespace

uint64_t DefaultMaxAllocBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 64 * kGiB;
  return std::min<uint64_t>(64 * kGiB, static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size));
}

uint64_t ParseByteSize(std::string_view text, std::string_view what) {
  auto bad = [&] {
    ThrowInvalidArgument(what, "value", "a byte count such as 1073741824, 512M or 8G",
                         fmt::format("'{}'", text));
  };
  size_t end = 0;
  while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || text[end] == '.')) ++end;
  const std::string_view number = text.substr(0, end);
  std::string_view suffix = text.substr(end);
  if (number.empty() || number.find('.') != number.rfind('.') || number == ".") bad();
  uint64_t scale = 1;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k': case 'K': scale = uint64_t{1} << 10; break;
      case 'm': case 'M': scale = uint64_t{1} << 20; break;
      case 'g': case 'G': scale = uint64_t{1} << 30; break;
      case 't': case 'T': scale = uint64_t{1} << 40; break;
      case 'b': case 'B': break;
      default: bad();
    }
    suffix.remove_prefix(1);
    if (scale > 1 && (suffix == "iB" || suffix == "ib" || suffix == "B" || suffix == "b")) suffix = {};
    if (!suffix.empty()) bad();
  }
  if (number.find('.') == std::string_view::npos) {
    uint64_t v = 0;
    for (char c : number) {
      if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v)) bad();
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(v, scale, &bytes)) bad();
    return bytes;
  }
  const double v = std::strtod(std::string(number).c_str(), nullptr) * static_cast<double>(scale);
  if (!std::isfinite(v) || v >= 18446744073709551615.0) bad();
  return static_cast<uint64_t>(v);
}

uint64_t MaxAllocBytes() {
  const uint64_t set = g_override.load(std::memory_order_relaxed);
  if (set != 0) return set;
  static const uint64_t from_env = FromEnvironment();
  return from_env;
}

void SetMaxAllocBytes(uint64_t bytes) { g_override.store(bytes, std::memory_order_relaxed); }

std::string FormatBytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 40)) return fmt::format("{:.2f} TiB ({} bytes)", b / 1099511627776.0, bytes);
  if (bytes >= kGiB) return fmt::format("{:.2f} GiB ({} bytes)", b / 1073741824.0, bytes);
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB ({} bytes)", b / 1048576.0, bytes);
  return fmt::format("{} bytes", bytes);
}

void CheckAllocation(std::string_view op, uint64_t bytes, std::string_view what) {
  const uint64_t ceiling = MaxAllocBytes();
  if (bytes <= ceiling) return;
  throw Error(ErrorCode::OutOfMemory, op,
              fmt::format("{} needs {}, more than the allocation ceiling of {} (set {} to raise it)", what,
                          FormatBytes(bytes), FormatBytes(ceiling), kMaxAllocVariable));
}

uint64_t CheckedMul(uint64_t a, uint64_t b, std::string_view op, std::string_view what) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw Error(ErrorCode::InvalidArgument, op, fmt::format("{}: size {} x {} overflows 64 bits", what, a, b));
  }
  return r;
}

uint64_t CheckedAdd(uint64_t a, uint64_t b, std::string_view op, std::string_view what) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw Error(ErrorCode::InvalidArgument, op, fmt::format("{}: size {} + {} overflows 64 bits", what, a, b));
  }
  return r;
}

}  // namespace backplane
