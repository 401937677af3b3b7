// Element formats. Numeric values are stable (part of the ABI and of the graph format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace backplane {

enum class DType : uint8_t {
  Invalid = 0,
  Float64,
  Float32,
  Float16,
  BFloat16,
  Float8E4M3,
  Float8E5M2,
  Int64,
  Int32,
  Int16,
  Int8,
  Int4,
  Uint64,
  Uint32,
  Uint16,
  Uint8,
  Bool,
  Complex64,
  Complex128,
};

inline constexpr int kDTypeCount = 19;

// Every valid dtype (Invalid excluded), in enum order.
std::span<const DType> AllDTypes();

// Short lowercase name used in docs, JSON and error messages ("f32", "bf16", "i4", ...).
std::string_view DTypeName(DType dtype);
// Accepts the short name and the seed's enum spelling ("Float32"); nullopt when unknown.
std::optional<DType> DTypeFromName(std::string_view name);

// Storage bits per element: 4 for Int4, 1 for Bool (packed), otherwise 8 * bytes.
int DTypeBits(DType dtype);
// Bytes needed to store `count` elements (Int4: ceil(count/2), Bool: ceil(count/8)); throws
// InvalidArgument when that does not fit size_t.
size_t DTypeStorageBytes(DType dtype, int64_t count);
bool IsFloatingPoint(DType dtype);  // f64, f32, f16, bf16, fp8
bool IsInteger(DType dtype);        // signed and unsigned integers, Int4 included
bool IsComplex(DType dtype);

// A set of dtypes as a bit mask over the enum values.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> dtypes) {
    for (DType d : dtypes) bits_ |= Bit(d);
  }
  constexpr bool Contains(DType d) const { return (bits_ & Bit(d)) != 0; }
  constexpr bool Empty() const { return bits_ == 0; }
  constexpr DTypeSet operator|(DTypeSet other) const { return FromBits(bits_ | other.bits_); }
  constexpr bool operator==(const DTypeSet&) const = default;
  constexpr uint32_t bits() const { return bits_; }
  static constexpr DTypeSet FromBits(uint32_t bits) {
    DTypeSet s;
    s.bits_ = bits;
    return s;
  }

 private:
  static constexpr uint32_t Bit(DType d) {
    const auto v = static_cast<unsigned>(d);
    return v < 32 ? 1u << v : 0u;
  }
  uint32_t bits_ = 0;
};

inline constexpr DTypeSet kFloatDTypes{DType::Float32, DType::Float64, DType::Float16,
                                       DType::BFloat16};
// Every valid dtype.
inline constexpr DTypeSet kAnyDType = DTypeSet::FromBits(((1u << kDTypeCount) - 1u) & ~1u);
// Every dtype whose elements are real numbers (complex excluded).
inline constexpr DTypeSet kRealDTypes = DTypeSet::FromBits(
    kAnyDType.bits() & ~(1u << static_cast<unsigned>(DType::Complex64)) &
    ~(1u << static_cast<unsigned>(DType::Complex128)));

}  // namespace backplane
