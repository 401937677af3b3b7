#include "backplane/dtype.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "backplane/error.hpp"

namespace backplane {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view seed_name;
  int bits;
};

constexpr std::array<DTypeInfo, kDTypeCount> kInfo{{
    {DType::Invalid, "invalid", "Invalid", 0},
    {DType::Float64, "f64", "Float64", 64},
    {DType::Float32, "f32", "Float32", 32},
    {DType::Float16, "f16", "Float16", 16},
    {DType::BFloat16, "bf16", "BFloat16", 16},
    {DType::Float8E4M3, "f8e4m3", "Float8E4M3", 8},
    {DType::Float8E5M2, "f8e5m2", "Float8E5M2", 8},
    {DType::Int64, "i64", "Int64", 64},
    {DType::Int32, "i32", "Int32", 32},
    {DType::Int16, "i16", "Int16", 16},
    {DType::Int8, "i8", "Int8", 8},
    {DType::Int4, "i4", "Int4", 4},
    {DType::Uint64, "u64", "Uint64", 64},
    {DType::Uint32, "u32", "Uint32", 32},
    {DType::Uint16, "u16", "Uint16", 16},
    {DType::Uint8, "u8", "Uint8", 8},
    {DType::Bool, "bool", "Bool", 1},
    {DType::Complex64, "c64", "Complex64", 64},
    {DType::Complex128, "c128", "Complex128", 128},
}};

constexpr std::array<DType, kDTypeCount - 1> kAll = [] {
  std::array<DType, kDTypeCount - 1> all{};
  for (int i = 1; i < kDTypeCount; ++i) all[i - 1] = static_cast<DType>(i);
  return all;
}();

const DTypeInfo& Info(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  return index < kInfo.size() ? kInfo[index] : kInfo[0];
}

}  // namespace

std::span<const DType> AllDTypes() { return kAll; }

std::string_view DTypeName(DType dtype) { return Info(dtype).name; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const DTypeInfo& info : kInfo) {
    if (info.dtype == DType::Invalid) continue;
    if (name == info.name || name == info.seed_name) return info.dtype;
  }
  return std::nullopt;
}

int DTypeBits(DType dtype) { return Info(dtype).bits; }

size_t DTypeStorageBytes(DType dtype, int64_t count) {
  if (count <= 0) return 0;
  const auto n = static_cast<size_t>(count);
  const auto bits = static_cast<size_t>(DTypeBits(dtype));
  if (bits != 0 && n > (std::numeric_limits<size_t>::max() - 7) / bits) {
    throw Error(ErrorCode::InvalidArgument, "DTypeStorageBytes",
                fmt::format("the byte count of {} elements of {} overflows 64 bits", count, DTypeName(dtype)));
  }
  return (n * bits + 7) / 8;
}

bool IsFloatingPoint(DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float8E4M3:
    case DType::Float8E5M2:
      return true;
    default:
      return false;
  }
}

bool IsInteger(DType dtype) {
  switch (dtype) {
    case DType::Int64:
    case DType::Int32:
    case DType::Int16:
    case DType::Int8:
    case DType::Int4:
    case DType::Uint64:
    case DType::Uint32:
    case DType::Uint16:
    case DType::Uint8:
      return true;
    default:
      return false;
  }
}

bool IsComplex(DType dtype) { return dtype == DType::Complex64 || dtype == DType::Complex128; }

}  // namespace backplane
