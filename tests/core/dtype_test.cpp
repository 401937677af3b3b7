// Tests for dtype names, stable numeric values, storage sizes and the packed int4/bool layout.

#include "backplane/dtype.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>

#include "backplane/convert.hpp"

namespace backplane {
namespace {

struct Expected {
  DType dtype;
  int value;
  const char* seed_name;
  int bits;
};

// Written out independently of src/core/dtype.cpp: these values are part of the ABI.
constexpr std::array<Expected, 18> kExpected{{
    {DType::Float64, 1, "Float64", 64},
    {DType::Float32, 2, "Float32", 32},
    {DType::Float16, 3, "Float16", 16},
    {DType::BFloat16, 4, "BFloat16", 16},
    {DType::Float8E4M3, 5, "Float8E4M3", 8},
    {DType::Float8E5M2, 6, "Float8E5M2", 8},
    {DType::Int64, 7, "Int64", 64},
    {DType::Int32, 8, "Int32", 32},
    {DType::Int16, 9, "Int16", 16},
    {DType::Int8, 10, "Int8", 8},
    {DType::Int4, 11, "Int4", 4},
    {DType::Uint64, 12, "Uint64", 64},
    {DType::Uint32, 13, "Uint32", 32},
    {DType::Uint16, 14, "Uint16", 16},
    {DType::Uint8, 15, "Uint8", 8},
    {DType::Bool, 16, "Bool", 1},
    {DType::Complex64, 17, "Complex64", 64},
    {DType::Complex128, 18, "Complex128", 128},
}};

TEST(DTypeTest, NumericValuesAreStable) {
  EXPECT_EQ(static_cast<int>(DType::Invalid), 0);
  for (const Expected& e : kExpected) {
    EXPECT_EQ(static_cast<int>(e.dtype), e.value) << e.seed_name;
  }
  EXPECT_EQ(kDTypeCount, 19);
}

TEST(DTypeTest, AllDTypesListsEveryValidDTypeInOrder) {
  const auto all = AllDTypes();
  ASSERT_EQ(all.size(), kExpected.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], kExpected[i].dtype);
}

TEST(DTypeTest, NamesRoundTrip) {
  for (const Expected& e : kExpected) {
    const std::string_view name = DTypeName(e.dtype);
    EXPECT_FALSE(name.empty()) << e.seed_name;
    EXPECT_EQ(DTypeFromName(name), e.dtype) << name;
    EXPECT_EQ(DTypeFromName(e.seed_name), e.dtype) << e.seed_name;
  }
}

TEST(DTypeTest, ShortNamesAreDistinct) {
  for (size_t i = 0; i < kExpected.size(); ++i) {
    for (size_t j = i + 1; j < kExpected.size(); ++j) {
      EXPECT_NE(DTypeName(kExpected[i].dtype), DTypeName(kExpected[j].dtype));
    }
  }
}

TEST(DTypeTest, KnownShortNames) {
  EXPECT_EQ(DTypeName(DType::Float32), "f32");
  EXPECT_EQ(DTypeName(DType::Float16), "f16");
  EXPECT_EQ(DTypeName(DType::BFloat16), "bf16");
  EXPECT_EQ(DTypeFromName("f32"), DType::Float32);
  EXPECT_EQ(DTypeFromName("bf16"), DType::BFloat16);
}

TEST(DTypeTest, UnknownNamesAreRejected) {
  EXPECT_EQ(DTypeFromName(""), std::nullopt);
  EXPECT_EQ(DTypeFromName("float"), std::nullopt);
  EXPECT_EQ(DTypeFromName("F32"), std::nullopt);  // names are case-sensitive
  EXPECT_EQ(DTypeFromName("Float32 "), std::nullopt);
  EXPECT_EQ(DTypeFromName("Invalid"), std::nullopt);
  EXPECT_EQ(DTypeFromName(DTypeName(DType::Invalid)), std::nullopt);
}

TEST(DTypeTest, Bits) {
  for (const Expected& e : kExpected) EXPECT_EQ(DTypeBits(e.dtype), e.bits) << e.seed_name;
}

TEST(DTypeTest, StorageBytes) {
  for (const Expected& e : kExpected) {
    EXPECT_EQ(DTypeStorageBytes(e.dtype, 0), 0u) << e.seed_name;
    EXPECT_EQ(DTypeStorageBytes(e.dtype, -1), 0u) << e.seed_name;
    if (e.bits >= 8) {
      EXPECT_EQ(DTypeStorageBytes(e.dtype, 5), 5u * static_cast<size_t>(e.bits / 8)) << e.seed_name;
    }
  }
  // Int4: ceil(n / 2). Bool: ceil(n / 8).
  for (int64_t n = 1; n <= 40; ++n) {
    EXPECT_EQ(DTypeStorageBytes(DType::Int4, n), static_cast<size_t>((n + 1) / 2)) << n;
    EXPECT_EQ(DTypeStorageBytes(DType::Bool, n), static_cast<size_t>((n + 7) / 8)) << n;
  }
  EXPECT_EQ(DTypeStorageBytes(DType::Int4, int64_t{1} << 40), size_t{1} << 39);
  EXPECT_EQ(DTypeStorageBytes(DType::Bool, (int64_t{1} << 40) + 1), (size_t{1} << 37) + 1);
}

TEST(DTypeTest, Categories) {
  for (const Expected& e : kExpected) {
    const int v = e.value;
    EXPECT_EQ(IsFloatingPoint(e.dtype), v >= 1 && v <= 6) << e.seed_name;
    EXPECT_EQ(IsInteger(e.dtype), v >= 7 && v <= 15) << e.seed_name;
    EXPECT_EQ(IsComplex(e.dtype), v >= 17) << e.seed_name;
  }
  EXPECT_FALSE(IsFloatingPoint(DType::Invalid));
  EXPECT_FALSE(IsInteger(DType::Invalid));
  EXPECT_FALSE(IsComplex(DType::Invalid));
}

TEST(DTypeTest, DTypeSet) {
  constexpr DTypeSet s{DType::Int4, DType::Bool};
  static_assert(s.Contains(DType::Int4) && !s.Contains(DType::Int8));
  EXPECT_EQ(s.bits(), (1u << 11) | (1u << 16));
  EXPECT_TRUE(DTypeSet{}.Empty());
  EXPECT_EQ(s | DTypeSet{DType::Int8}, (DTypeSet{DType::Int4, DType::Bool, DType::Int8}));
}

// Int4: element 2i is the low nibble of byte i, 2i+1 the high nibble; two's complement.
TEST(PackedTest, LoadInt4AllBytes) {
  for (int b = 0; b < 256; ++b) {
    const uint8_t byte = static_cast<uint8_t>(b);
    const int lo = b & 0x0F;
    const int hi = b >> 4;
    EXPECT_EQ(LoadInt4(&byte, 0), lo >= 8 ? lo - 16 : lo) << b;
    EXPECT_EQ(LoadInt4(&byte, 1), hi >= 8 ? hi - 16 : hi) << b;
  }
}

TEST(PackedTest, StoreInt4Layout) {
  std::array<uint8_t, 3> buf{};
  StoreInt4(buf.data(), 0, 3);
  StoreInt4(buf.data(), 1, -2);
  StoreInt4(buf.data(), 2, -8);
  StoreInt4(buf.data(), 3, 7);
  StoreInt4(buf.data(), 4, -1);
  EXPECT_EQ(buf[0], 0xE3);
  EXPECT_EQ(buf[1], 0x78);
  EXPECT_EQ(buf[2], 0x0F);  // element 5 untouched
  // Overwriting one nibble keeps the other.
  StoreInt4(buf.data(), 1, 0);
  EXPECT_EQ(buf[0], 0x03);
  StoreInt4(buf.data(), 0, -5);
  EXPECT_EQ(buf[0], 0x0B);
  for (int64_t i = 0; i < 6; ++i) {
    StoreInt4(buf.data(), i, static_cast<int>(i) - 3);
    EXPECT_EQ(LoadInt4(buf.data(), i), i - 3);
  }
}

TEST(PackedTest, StoreInt4Clamps) {
  uint8_t byte = 0;
  for (int v = -100; v <= 100; ++v) {
    StoreInt4(&byte, 1, v);
    EXPECT_EQ(LoadInt4(&byte, 1), v < -8 ? -8 : (v > 7 ? 7 : v)) << v;
    EXPECT_EQ(byte & 0x0F, 0) << v;
  }
  StoreInt4(&byte, 0, 1000);
  EXPECT_EQ(byte & 0x0F, 0x07);
  StoreInt4(&byte, 0, -1000);
  EXPECT_EQ(byte & 0x0F, 0x08);
}

// Bool: element i is bit (i % 8) of byte i / 8, least significant bit first.
TEST(PackedTest, LoadBoolAllBytes) {
  for (int b = 0; b < 256; ++b) {
    const std::array<uint8_t, 2> buf{0, static_cast<uint8_t>(b)};
    for (int bit = 0; bit < 8; ++bit) {
      EXPECT_EQ(LoadBool(buf.data(), 8 + bit), ((b >> bit) & 1) != 0) << b << " " << bit;
    }
  }
}

TEST(PackedTest, StoreBoolLayout) {
  std::array<uint8_t, 2> buf{};
  StoreBool(buf.data(), 0, true);
  StoreBool(buf.data(), 3, true);
  StoreBool(buf.data(), 7, true);
  StoreBool(buf.data(), 9, true);
  EXPECT_EQ(buf[0], 0x89);
  EXPECT_EQ(buf[1], 0x02);
  StoreBool(buf.data(), 3, false);
  StoreBool(buf.data(), 9, false);
  StoreBool(buf.data(), 10, false);
  EXPECT_EQ(buf[0], 0x81);
  EXPECT_EQ(buf[1], 0x00);
}

}  // namespace
}  // namespace backplane
