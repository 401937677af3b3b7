// Tests of the Shape reference kernels through the CPU Backend: NumPy / PyTorch golden data
// (tests/golden/gen_shape.py -> tests/golden/data/shape_*.json) for every method over f32, f64,
// f16, bf16, i8, i32 and the packed i4 and bool; round trips over every dtype; bit-exact movement
// of special values; PyTorch's nearest-index corner cases; and every validation path.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/backend/shape.hpp"
#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::ThrowsError;
using Dims = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

ShapeSurface& Shape() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Shape();
}

const nlohmann::json& Golden(const std::string& file) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    std::ifstream in(test::GoldenPath(file));
    it = cache.emplace(file, nlohmann::json::parse(in)).first;
  }
  return it->second;
}

DType ParseDType(const nlohmann::json& c) {
  const auto d = DTypeFromName(c["dtype"].get<std::string>());
  if (!d) ADD_FAILURE() << "unknown dtype " << c["dtype"];
  return d.value_or(DType::Float32);
}

Dims ToDims(const nlohmann::json& j) { return j.get<Dims>(); }

int64_t Count(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

// ---- Element access in the golden dtypes ------------------------------------------------------

void SetValue(Buffer& b, int64_t i, double v) {
  switch (b.dtype()) {
    case DType::Int8: b.as<int8_t>()[i] = static_cast<int8_t>(v); return;
    case DType::Int32: b.as<int32_t>()[i] = static_cast<int32_t>(v); return;
    case DType::Int4: StoreInt4(b.data(), i, static_cast<int>(v)); return;
    case DType::Bool: StoreBool(b.data(), i, v != 0.0); return;
    default: b.Set(i, v); return;
  }
}

double GetValue(const Buffer& b, int64_t i) {
  switch (b.dtype()) {
    case DType::Int8: return static_cast<const int8_t*>(b.data())[i];
    case DType::Int32: return static_cast<const int32_t*>(b.data())[i];
    case DType::Int4: return LoadInt4(b.data(), i);
    case DType::Bool: return LoadBool(b.data(), i) ? 1.0 : 0.0;
    default: return b.Get(i);
  }
}

Buffer Encode(DType dtype, const nlohmann::json& values) {
  Buffer b(dtype, static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    SetValue(b, static_cast<int64_t>(i), values[i].get<double>());
  }
  return b;
}

// A poisoned output of `count` elements.
Buffer Output(DType dtype, int64_t count) {
  Buffer b(dtype, count);
  b.Poison();
  return b;
}

// Every element equals the golden value exactly (shape ops move elements) and nothing past the
// last element was written.
::testing::AssertionResult Matches(const Buffer& got, const nlohmann::json& want) {
  if (static_cast<size_t>(got.count()) != want.size()) {
    return ::testing::AssertionFailure() << "count " << got.count() << " vs " << want.size();
  }
  for (int64_t i = 0; i < got.count(); ++i) {
    const double w = want[static_cast<size_t>(i)].get<double>();
    if (GetValue(got, i) != w) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << GetValue(got, i) << ", want " << w;
    }
  }
  if (!got.GuardIntact()) return ::testing::AssertionFailure() << "wrote past the end";
  return ::testing::AssertionSuccess();
}

// ---- Golden tests -----------------------------------------------------------------------------

TEST(ShapeGolden, Reshape) {
  const auto& cases = Golden("shape_layout.json")["reshape"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("reshape case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims in = ToDims(c["inShape"]), out = ToDims(c["outShape"]);
    const Buffer x = Encode(dtype, c["x"]);
    Buffer y = Output(dtype, Count(out));
    Shape().Reshape(x.data(), y.data(), in.data(), static_cast<int64_t>(in.size()), out.data(),
                    static_cast<int64_t>(out.size()), dtype);
    EXPECT_TRUE(Matches(y, c["y"]));
  }
}

TEST(ShapeGolden, Transpose) {
  const auto& cases = Golden("shape_layout.json")["transpose"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("transpose case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims shape = ToDims(c["shape"]), perm = ToDims(c["perm"]);
    const Buffer x = Encode(dtype, c["x"]);
    Buffer y = Output(dtype, Count(shape));
    Shape().Transpose(x.data(), y.data(), shape.data(), static_cast<int64_t>(shape.size()),
                      perm.data(), dtype);
    EXPECT_TRUE(Matches(y, c["y"]));
  }
}

TEST(ShapeGolden, Concat) {
  const auto& cases = Golden("shape_concat_split.json")["concat"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("concat case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    std::vector<Buffer> xs;
    std::vector<const void*> ptrs;
    Dims shapes;
    int64_t rank = 0;
    for (size_t i = 0; i < c["shapes"].size(); ++i) {
      const Dims s = ToDims(c["shapes"][i]);
      rank = static_cast<int64_t>(s.size());
      shapes.insert(shapes.end(), s.begin(), s.end());
      xs.push_back(Encode(dtype, c["xs"][i]));
    }
    for (const Buffer& x : xs) ptrs.push_back(x.data());
    Buffer y = Output(dtype, static_cast<int64_t>(c["y"].size()));
    Shape().Concat(ptrs.data(), shapes.data(), static_cast<int64_t>(xs.size()), rank,
                   c["axis"].get<int64_t>(), y.data(), dtype);
    EXPECT_TRUE(Matches(y, c["y"]));
  }
}

TEST(ShapeGolden, Split) {
  const auto& cases = Golden("shape_concat_split.json")["split"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("split case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims shape = ToDims(c["shape"]), sizes = ToDims(c["sizes"]);
    const Buffer x = Encode(dtype, c["x"]);
    std::vector<Buffer> ys;
    std::vector<void*> ptrs;
    for (const auto& want : c["ys"]) ys.push_back(Output(dtype, static_cast<int64_t>(want.size())));
    for (Buffer& y : ys) ptrs.push_back(y.data());
    Shape().Split(x.data(), shape.data(), static_cast<int64_t>(shape.size()),
                  c["axis"].get<int64_t>(), sizes.data(), static_cast<int64_t>(sizes.size()),
                  ptrs.data(), dtype);
    for (size_t i = 0; i < ys.size(); ++i) {
      EXPECT_TRUE(Matches(ys[i], c["ys"][i])) << "output " << i;
    }
  }
}

TEST(ShapeGolden, UpsampleNearest2D) {
  const auto& cases = Golden("shape_upsample.json")["upsample"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("upsample case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims d = ToDims(c["dims"]);  // B, C, inH, inW, outH, outW
    const UpsampleConfig config{c["scaleH"].get<double>(), c["scaleW"].get<double>()};
    const Buffer x = Encode(dtype, c["x"]);
    Buffer y = Output(dtype, d[0] * d[1] * d[4] * d[5]);
    Shape().UpsampleNearest2D(config, x.data(), y.data(), d[0], d[1], d[2], d[3], d[4], d[5],
                              dtype);
    EXPECT_TRUE(Matches(y, c["y"]));
  }
}

TEST(ShapeGolden, ViewAsHeadsAndMergeHeads) {
  const auto& cases = Golden("shape_heads.json")["heads"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("heads case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims d = ToDims(c["dims"]);  // B, S, H, D
    const Buffer x = Encode(dtype, c["x"]);
    const Buffer heads = Encode(dtype, c["y"]);
    Buffer y = Output(dtype, Count(d));
    Shape().ViewAsHeads(x.data(), y.data(), d[0], d[1], d[2], d[3], dtype);
    EXPECT_TRUE(Matches(y, c["y"])) << "ViewAsHeads";
    Buffer merged = Output(dtype, Count(d));
    Shape().MergeHeads(heads.data(), merged.data(), d[0], d[1], d[2], d[3], dtype);
    EXPECT_TRUE(Matches(merged, c["x"])) << "MergeHeads";
  }
}

TEST(ShapeGolden, LastToken) {
  const auto& cases = Golden("shape_heads.json")["last_token"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("last_token case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims d = ToDims(c["dims"]);  // B, S, F
    const Buffer x = Encode(dtype, c["x"]);
    Buffer y = Output(dtype, d[0] * d[2]);
    Shape().LastToken(x.data(), y.data(), d[0], d[1], d[2], dtype);
    EXPECT_TRUE(Matches(y, c["y"]));
  }
}

TEST(ShapeGolden, Slice) {
  const auto& cases = Golden("shape_slice.json")["slice"];
  ASSERT_FALSE(cases.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE("slice case " + std::to_string(k) + " " + c["dtype"].get<std::string>());
    const DType dtype = ParseDType(c);
    const Dims shape = ToDims(c["shape"]), starts = ToDims(c["starts"]), ends = ToDims(c["ends"]),
               steps = ToDims(c["steps"]);
    const Buffer x = Encode(dtype, c["x"]);
    Buffer y = Output(dtype, static_cast<int64_t>(c["y"].size()));
    Shape().Slice(x.data(), y.data(), shape.data(), static_cast<int64_t>(shape.size()),
                  starts.data(), ends.data(), steps.data(), dtype);
    EXPECT_TRUE(Matches(y, c["y"]));
  }
}

// The golden files exercise each method over all the dtypes named in the issue.
TEST(ShapeGolden, CoversTheDTypes) {
  const std::vector<std::pair<std::string, std::string>> sections = {
      {"shape_layout.json", "reshape"},       {"shape_layout.json", "transpose"},
      {"shape_concat_split.json", "concat"},  {"shape_concat_split.json", "split"},
      {"shape_upsample.json", "upsample"},    {"shape_heads.json", "heads"},
      {"shape_heads.json", "last_token"},     {"shape_slice.json", "slice"}};
  for (const auto& [file, section] : sections) {
    std::map<std::string, int64_t> largest;
    for (const auto& c : Golden(file)[section]) {
      const std::string dtype = c["dtype"];
      // concat cases have "xs" and split cases "ys": operator[] of a missing key on a const json is UB.
      auto size_of = [&c](const char* key) { return c.contains(key) ? c[key].size() : size_t{0}; };
      const auto size = std::max(size_of("x"), size_of("y"));
      largest[dtype] = std::max(largest[dtype], static_cast<int64_t>(size));
    }
    for (const char* d : {"f32", "f64", "f16", "bf16", "i8", "i32", "i4", "bool"}) {
      EXPECT_TRUE(largest.count(d)) << section << " lacks " << d;
    }
    int64_t biggest = 0;
    for (const auto& [d, n] : largest) biggest = std::max(biggest, n);
    EXPECT_GT(biggest, 4096) << section;
  }
}

// ---- Round trips over every dtype -------------------------------------------------------------

// `count` elements of random bits (any byte pattern, NaNs included, is a valid element).
Buffer RandomBits(DType dtype, int64_t count, uint32_t seed) {
  Buffer b(dtype, count);
  std::mt19937 gen(seed);
  auto* bytes = b.as<uint8_t>();
  for (size_t i = 0; i < DTypeStorageBytes(dtype, count); ++i) {
    bytes[i] = static_cast<uint8_t>(gen());
  }
  return b;
}

// Element i of a and b have the same bits.
::testing::AssertionResult SameElements(const Buffer& a, const Buffer& b) {
  if (a.count() != b.count()) return ::testing::AssertionFailure() << "counts differ";
  for (int64_t i = 0; i < a.count(); ++i) {
    bool same = true;
    if (a.dtype() == DType::Int4) {
      same = LoadInt4(a.data(), i) == LoadInt4(b.data(), i);
    } else if (a.dtype() == DType::Bool) {
      same = LoadBool(a.data(), i) == LoadBool(b.data(), i);
    } else {
      const size_t bytes = static_cast<size_t>(DTypeBits(a.dtype()) / 8);
      same = std::memcmp(static_cast<const uint8_t*>(a.data()) + static_cast<size_t>(i) * bytes,
                         static_cast<const uint8_t*>(b.data()) + static_cast<size_t>(i) * bytes,
                         bytes) == 0;
    }
    if (!same) return ::testing::AssertionFailure() << "element " << i << " differs";
  }
  return ::testing::AssertionSuccess();
}

TEST(ShapeRoundTrip, TransposeThenInversePermutation) {
  std::mt19937 gen(7);
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    for (int trial = 0; trial < 6; ++trial) {
      const int64_t rank = trial % 6;
      Dims shape(static_cast<size_t>(rank)), perm(static_cast<size_t>(rank)),
          inverse(static_cast<size_t>(rank)), permuted(static_cast<size_t>(rank));
      for (auto& d : shape) d = 1 + static_cast<int64_t>(gen() % 4);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), gen);
      for (int64_t i = 0; i < rank; ++i) {
        inverse[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
        permuted[static_cast<size_t>(i)] = shape[static_cast<size_t>(perm[static_cast<size_t>(i)])];
      }
      const int64_t n = Count(shape);
      const Buffer x = RandomBits(dtype, n, static_cast<uint32_t>(trial));
      Buffer t = Output(dtype, n), back = Output(dtype, n);
      Shape().Transpose(x.data(), t.data(), shape.data(), rank, perm.data(), dtype);
      Shape().Transpose(t.data(), back.data(), permuted.data(), rank, inverse.data(), dtype);
      EXPECT_TRUE(SameElements(back, x)) << "rank " << rank;
      EXPECT_TRUE(back.GuardIntact());
    }
  }
}

TEST(ShapeRoundTrip, SplitThenConcat) {
  std::mt19937 gen(11);
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    for (int trial = 0; trial < 4; ++trial) {
      const int64_t rank = 1 + trial % 3;
      Dims shape(static_cast<size_t>(rank));
      for (auto& d : shape) d = 1 + static_cast<int64_t>(gen() % 5);
      const int64_t axis = static_cast<int64_t>(gen() % static_cast<uint32_t>(rank));
      Dims sizes(3, 0);
      for (int64_t k = 0; k < shape[static_cast<size_t>(axis)]; ++k) ++sizes[gen() % 3];
      const int64_t n = Count(shape);
      const Buffer x = RandomBits(dtype, n, static_cast<uint32_t>(100 + trial));
      std::vector<Buffer> parts;
      Dims shapes;
      for (int64_t s : sizes) {
        Dims part = shape;
        part[static_cast<size_t>(axis)] = s;
        shapes.insert(shapes.end(), part.begin(), part.end());
        parts.push_back(Output(dtype, Count(part)));
      }
      std::vector<void*> outs;
      std::vector<const void*> ins;
      for (Buffer& p : parts) {
        outs.push_back(p.data());
        ins.push_back(p.data());
      }
      Shape().Split(x.data(), shape.data(), rank, axis, sizes.data(), 3, outs.data(), dtype);
      Buffer back = Output(dtype, n);
      Shape().Concat(ins.data(), shapes.data(), 3, rank, axis, back.data(), dtype);
      EXPECT_TRUE(SameElements(back, x));
      EXPECT_TRUE(back.GuardIntact());
    }
  }
}

TEST(ShapeRoundTrip, ViewAsHeadsThenMergeHeads) {
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const int64_t b = 2, s = 3, h = 4, d = 5, n = b * s * h * d;
    const Buffer x = RandomBits(dtype, n, 5);
    Buffer heads = Output(dtype, n), back = Output(dtype, n);
    Shape().ViewAsHeads(x.data(), heads.data(), b, s, h, d, dtype);
    Shape().MergeHeads(heads.data(), back.data(), b, s, h, d, dtype);
    EXPECT_TRUE(SameElements(back, x));
  }
}

TEST(ShapeRoundTrip, SliceReversedTwiceAndReshapeBack) {
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const Dims shape = {3, 5, 7}, flat = {105};
    const Dims starts = {kMax, kMax, kMax}, ends = {kMin, kMin, kMin}, steps = {-1, -1, -1};
    const Buffer x = RandomBits(dtype, 105, 9);
    Buffer reversed = Output(dtype, 105), back = Output(dtype, 105), flatOut = Output(dtype, 105);
    Shape().Slice(x.data(), reversed.data(), shape.data(), 3, starts.data(), ends.data(),
                  steps.data(), dtype);
    Shape().Slice(reversed.data(), back.data(), shape.data(), 3, starts.data(), ends.data(),
                  steps.data(), dtype);
    EXPECT_TRUE(SameElements(back, x));
    Shape().Reshape(back.data(), flatOut.data(), shape.data(), 3, flat.data(), 1, dtype);
    EXPECT_TRUE(SameElements(flatOut, x));
  }
}

// ---- Known values -------------------------------------------------------------------------------

template <class Bits>
Buffer FromBits(DType dtype, const std::vector<Bits>& bits) {
  Buffer b(dtype, static_cast<int64_t>(bits.size()));
  std::memcpy(b.data(), bits.data(), bits.size() * sizeof(Bits));
  return b;
}

template <class Bits>
std::vector<Bits> ToBits(const Buffer& b) {
  std::vector<Bits> bits(static_cast<size_t>(b.count()));
  std::memcpy(bits.data(), b.data(), bits.size() * sizeof(Bits));
  return bits;
}

// NaN payloads (signalling included), -0.0, +-Inf, the f16 maximum and subnormals move bit for
// bit: no method converts through a floating register.
template <class Bits>
void CheckSpecialValuesMove(DType dtype, const std::vector<Bits>& v) {
  SCOPED_TRACE(std::string(DTypeName(dtype)));
  ASSERT_EQ(v.size(), 8u);
  const Buffer x = FromBits(dtype, v);
  auto pick = [&](std::initializer_list<int> idx) {
    std::vector<Bits> out;
    for (int i : idx) out.push_back(v[static_cast<size_t>(i)]);
    return out;
  };
  {  // [2, 4] -> [4, 2]
    const Dims shape = {2, 4}, perm = {1, 0};
    Buffer y = Output(dtype, 8);
    Shape().Transpose(x.data(), y.data(), shape.data(), 2, perm.data(), dtype);
    EXPECT_EQ(ToBits<Bits>(y), pick({0, 4, 1, 5, 2, 6, 3, 7}));
  }
  {  // x[::-3]
    const Dims shape = {8}, starts = {kMax}, ends = {kMin}, steps = {-3};
    Buffer y = Output(dtype, 3);
    Shape().Slice(x.data(), y.data(), shape.data(), 1, starts.data(), ends.data(), steps.data(),
                  dtype);
    EXPECT_EQ(ToBits<Bits>(y), pick({7, 4, 1}));
  }
  {  // [1, 1, 2, 4] upsampled x2 in W only
    Buffer y = Output(dtype, 16);
    Shape().UpsampleNearest2D(UpsampleConfig{1.0, 2.0}, x.data(), y.data(), 1, 1, 2, 4, 2, 8,
                              dtype);
    EXPECT_EQ(ToBits<Bits>(y), pick({0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}));
  }
  {  // [B=1, S=2, F=4] -> row 1
    Buffer y = Output(dtype, 4);
    Shape().LastToken(x.data(), y.data(), 1, 2, 4, dtype);
    EXPECT_EQ(ToBits<Bits>(y), pick({4, 5, 6, 7}));
  }
  {  // [B=1, S=2, H=2, D=2] -> [1, 2, 2, 2]
    Buffer y = Output(dtype, 8);
    Shape().ViewAsHeads(x.data(), y.data(), 1, 2, 2, 2, dtype);
    EXPECT_EQ(ToBits<Bits>(y), pick({0, 1, 4, 5, 2, 3, 6, 7}));
  }
  {  // concat([x, x]) along axis 0 of [8], then split [3, 5]
    const void* ins[] = {x.data(), x.data()};
    const Dims shapes = {8, 8};
    Buffer y = Output(dtype, 16);
    Shape().Concat(ins, shapes.data(), 2, 1, 0, y.data(), dtype);
    EXPECT_EQ(ToBits<Bits>(y), pick({0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7}));
    const Dims shape = {8}, sizes = {3, 5};
    Buffer a = Output(dtype, 3), b = Output(dtype, 5);
    void* outs[] = {a.data(), b.data()};
    Shape().Split(x.data(), shape.data(), 1, 0, sizes.data(), 2, outs, dtype);
    EXPECT_EQ(ToBits<Bits>(a), pick({0, 1, 2}));
    EXPECT_EQ(ToBits<Bits>(b), pick({3, 4, 5, 6, 7}));
  }
}

TEST(ShapeKnownValues, SpecialFloatValuesMoveBitForBit) {
  // f32: quiet NaN with payload, signalling NaN, -0, +Inf, -Inf, largest f16 (65504),
  // 65520 (overflows f16), smallest subnormal.
  CheckSpecialValuesMove<uint32_t>(DType::Float32, {0x7fc12345u, 0x7f800001u, 0x80000000u,
                                                    0x7f800000u, 0xff800000u, 0x477fe000u,
                                                    0x477ff000u, 0x00000001u});
  CheckSpecialValuesMove<uint64_t>(
      DType::Float64, {0x7ff8000000abcdefull, 0x7ff0000000000001ull, 0x8000000000000000ull,
                       0x7ff0000000000000ull, 0xfff0000000000000ull, 0x40effc0000000000ull,
                       0x7fefffffffffffffull, 0x0000000000000001ull});
  // f16: NaN payloads, -0, +-Inf, 65504, -65504, smallest subnormal.
  CheckSpecialValuesMove<uint16_t>(DType::Float16, {0x7e01, 0x7c01, 0x8000, 0x7c00, 0xfc00,
                                                    0x7bff, 0xfbff, 0x0001});
  CheckSpecialValuesMove<uint16_t>(DType::BFloat16, {0x7fc1, 0x7f81, 0x8000, 0x7f80, 0xff80,
                                                     0x7f7f, 0xff7f, 0x0001});
}

// PyTorch's nearest rule per axis: a given scale on H with the size-derived rule on W. H: out ==
// 2 * in, so src = dst >> 1; W: 3 -> 5 from sizes, src = floor(dst * float(3/5)) = 0 0 1 1 2.
TEST(ShapeKnownValues, UpsampleMixedScaleAndSize) {
  Buffer x(DType::Int8, 6);
  for (int i = 0; i < 6; ++i) x.as<int8_t>()[i] = static_cast<int8_t>(10 * (i / 3) + i % 3);
  Buffer y = Output(DType::Int8, 20);
  Shape().UpsampleNearest2D(UpsampleConfig{2.0, 0.0}, x.data(), y.data(), 1, 1, 2, 3, 4, 5,
                            DType::Int8);
  const std::vector<int8_t> want = {0,  0,  1,  1,  2,  0,  0,  1,  1,  2,
                                    10, 10, 11, 11, 12, 10, 10, 11, 11, 12};
  EXPECT_EQ(std::vector<int8_t>(y.as<int8_t>(), y.as<int8_t>() + 20), want);
}

// A given scale is used even when out == in: floor(d * float(1 / 1.05)) = 0 0 1 2 ... 8, as
// PyTorch's NCHW kernel computes it (its channels-last kernel would copy instead).
TEST(ShapeKnownValues, UpsampleScaleWithEqualSizesStillScales) {
  Buffer x(DType::Int8, 10);
  for (int i = 0; i < 10; ++i) x.as<int8_t>()[i] = static_cast<int8_t>(i);
  Buffer y = Output(DType::Int8, 10);
  Shape().UpsampleNearest2D(UpsampleConfig{1.0, 1.05}, x.data(), y.data(), 1, 1, 1, 10, 1, 10,
                            DType::Int8);
  const std::vector<int8_t> want = {0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(std::vector<int8_t>(y.as<int8_t>(), y.as<int8_t>() + 10), want);
}

// Packed outputs: only the elements' own nibbles / bits are written; the rest of the last byte
// keeps what it held.
TEST(ShapeKnownValues, PackedTailBitsAreLeftAlone) {
  const Dims shape = {3}, perm = {0};
  Buffer x4(DType::Int4, 3);
  StoreInt4(x4.data(), 0, -8);
  StoreInt4(x4.data(), 1, 7);
  StoreInt4(x4.data(), 2, -1);
  Buffer y4 = Output(DType::Int4, 3);
  Shape().Transpose(x4.data(), y4.data(), shape.data(), 1, perm.data(), DType::Int4);
  EXPECT_EQ(LoadInt4(y4.data(), 0), -8);
  EXPECT_EQ(LoadInt4(y4.data(), 1), 7);
  EXPECT_EQ(LoadInt4(y4.data(), 2), -1);
  EXPECT_EQ(y4.as<uint8_t>()[1] & 0xF0, 0xA0);
  EXPECT_TRUE(y4.GuardIntact());

  Buffer xb(DType::Bool, 3);
  StoreBool(xb.data(), 0, false);
  StoreBool(xb.data(), 1, true);
  StoreBool(xb.data(), 2, false);
  Buffer yb = Output(DType::Bool, 3);
  Shape().Reshape(xb.data(), yb.data(), shape.data(), 1, shape.data(), 1, DType::Bool);
  EXPECT_EQ(yb.as<uint8_t>()[0], (0xA5 & 0xF8) | 0x02);
  EXPECT_TRUE(yb.GuardIntact());
}

// Reshape is a flat copy and may run in place or on overlapping buffers (memmove semantics).
TEST(ShapeKnownValues, ReshapeInPlaceAndOverlapping) {
  Buffer b(DType::Int16, 10);
  for (int i = 0; i < 10; ++i) b.as<int16_t>()[i] = static_cast<int16_t>(i);
  const Dims in = {2, 5}, out = {10}, eight = {8};
  Shape().Reshape(b.data(), b.data(), in.data(), 2, out.data(), 1, DType::Int16);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.as<int16_t>()[i], i);
  Shape().Reshape(b.as<int16_t>() + 2, b.data(), eight.data(), 1, eight.data(), 1, DType::Int16);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b.as<int16_t>()[i], i + 2);

  // Int4: elements 2..6 (bytes 1..3) onto elements 0..4; the odd tail element is read first.
  Buffer p(DType::Int4, 8);
  for (int i = 0; i < 8; ++i) StoreInt4(p.data(), i, i - 4);
  const Dims five = {5};
  Shape().Reshape(p.as<uint8_t>() + 1, p.data(), five.data(), 1, five.data(), 1, DType::Int4);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(LoadInt4(p.data(), i), i + 2 - 4) << i;
  EXPECT_EQ(LoadInt4(p.data(), 5), 1);  // untouched: the high nibble of byte 2 still holds 5 - 4
}

// Every dtype is accepted (kAnyDType); Invalid and values outside the enum are not.
TEST(ShapeKnownValues, AcceptsEveryDTypeAndNothingElse) {
  const Dims one = {1};
  for (DType dtype : AllDTypes()) {
    const Buffer x = RandomBits(dtype, 1, 3);
    Buffer y = Output(dtype, 1);
    Shape().Reshape(x.data(), y.data(), one.data(), 1, one.data(), 1, dtype);
    EXPECT_TRUE(SameElements(y, x)) << DTypeName(dtype);
  }
  for (DType bad : {DType::Invalid, static_cast<DType>(kDTypeCount), static_cast<DType>(200)}) {
    Buffer x(DType::Int8, 1), y = Output(DType::Int8, 1);
    EXPECT_TRUE(ThrowsError(
        [&] { Shape().Reshape(x.data(), y.data(), one.data(), 1, one.data(), 1, bad); },
        ErrorCode::UnsupportedDType, {"Shape.Reshape", "'dtype'"}));
    EXPECT_TRUE(y.IsPoisoned());
  }
}

// Zero sizes are valid and write nothing; null pointers are fine where they cover no elements,
// but the dtype is still checked.
TEST(ShapeKnownValues, ZeroSizesDoNothing) {
  const DType f = DType::Float32, bad = DType::Invalid;
  const Dims zero = {0, 3}, zeroFlat = {0}, perm = {1, 0}, starts = {0, 0}, ends = {5, 5},
             steps = {1, 1}, sizes = {0, 0};
  EXPECT_NO_THROW(Shape().Reshape(nullptr, nullptr, zero.data(), 2, zeroFlat.data(), 1, f));
  EXPECT_NO_THROW(Shape().Transpose(nullptr, nullptr, zero.data(), 2, perm.data(), f));
  const void* ins[] = {nullptr, nullptr};
  const Dims shapes = {0, 3, 0, 3};
  EXPECT_NO_THROW(Shape().Concat(ins, shapes.data(), 2, 2, 0, nullptr, f));
  void* outs[] = {nullptr, nullptr};
  EXPECT_NO_THROW(Shape().Split(nullptr, zero.data(), 2, 0, sizes.data(), 2, outs, f));
  EXPECT_NO_THROW(Shape().UpsampleNearest2D({}, nullptr, nullptr, 0, 3, 4, 4, 8, 8, f));
  EXPECT_NO_THROW(Shape().UpsampleNearest2D({}, nullptr, nullptr, 2, 3, 0, 0, 0, 0, f));
  EXPECT_NO_THROW(Shape().ViewAsHeads(nullptr, nullptr, 2, 0, 4, 8, f));
  EXPECT_NO_THROW(Shape().MergeHeads(nullptr, nullptr, 2, 3, 4, 0, f));
  EXPECT_NO_THROW(Shape().LastToken(nullptr, nullptr, 0, 0, 7, f));
  EXPECT_NO_THROW(Shape().Slice(nullptr, nullptr, zero.data(), 2, starts.data(), ends.data(),
                                steps.data(), f));
  const Dims huge = {kMax, kMax, 0};  // empty, though the other sizes are huge
  EXPECT_NO_THROW(Shape().Reshape(nullptr, nullptr, huge.data(), 3, zeroFlat.data(), 1, f));

  auto rejects = [](auto fn, const char* op) {
    EXPECT_TRUE(ThrowsError(fn, ErrorCode::UnsupportedDType, {op, "'dtype'"})) << op;
  };
  rejects([&] { Shape().Reshape(nullptr, nullptr, zero.data(), 2, zeroFlat.data(), 1, bad); },
          "Shape.Reshape");
  rejects([&] { Shape().Transpose(nullptr, nullptr, zero.data(), 2, perm.data(), bad); },
          "Shape.Transpose");
  rejects([&] { Shape().Concat(ins, shapes.data(), 2, 2, 0, nullptr, bad); }, "Shape.Concat");
  rejects([&] { Shape().Split(nullptr, zero.data(), 2, 0, sizes.data(), 2, outs, bad); },
          "Shape.Split");
  rejects([&] { Shape().UpsampleNearest2D({}, nullptr, nullptr, 0, 3, 4, 4, 8, 8, bad); },
          "Shape.UpsampleNearest2D");
  rejects([&] { Shape().ViewAsHeads(nullptr, nullptr, 2, 0, 4, 8, bad); }, "Shape.ViewAsHeads");
  rejects([&] { Shape().MergeHeads(nullptr, nullptr, 2, 3, 4, 0, bad); }, "Shape.MergeHeads");
  rejects([&] { Shape().LastToken(nullptr, nullptr, 0, 0, 7, bad); }, "Shape.LastToken");
  rejects([&] {
    Shape().Slice(nullptr, nullptr, zero.data(), 2, starts.data(), ends.data(), steps.data(), bad);
  }, "Shape.Slice");
}

// ---- Bad input ----------------------------------------------------------------------------------

// fn must throw `code` naming the method and the argument, and leave `out` fully poisoned.
template <class Fn>
void ExpectRejected(Fn&& fn, ErrorCode code, std::initializer_list<std::string> fragments,
                    Buffer& out) {
  out.Poison();
  EXPECT_TRUE(ThrowsError(fn, code, fragments));
  EXPECT_TRUE(out.IsPoisoned()) << "output written before the error";
}

TEST(ShapeBadInput, Reshape) {
  const DType f = DType::Float32;
  Buffer x(f, 6), y(f, 6);
  const Dims in = {2, 3}, out = {3, 2}, wrong = {4, 2}, negative = {-6}, bigger = {7};
  const auto call = [&](const void* s, void* d, const int64_t* is, int64_t ir, const int64_t* os,
                        int64_t orank) {
    return [=] { Shape().Reshape(s, d, is, ir, os, orank, f); };
  };
  const auto bad = ErrorCode::InvalidArgument;
  ExpectRejected(call(x.data(), y.data(), in.data(), -1, out.data(), 2), bad,
                 {"Shape.Reshape", "'inRank'", ">= 0"}, y);
  ExpectRejected(call(x.data(), y.data(), in.data(), 2, out.data(), -2), bad,
                 {"Shape.Reshape", "'outRank'"}, y);
  ExpectRejected(call(x.data(), y.data(), nullptr, 2, out.data(), 2), bad,
                 {"Shape.Reshape", "'inShape'", "null"}, y);
  ExpectRejected(call(x.data(), y.data(), in.data(), 2, nullptr, 2), bad,
                 {"Shape.Reshape", "'outShape'", "null"}, y);
  ExpectRejected(call(x.data(), y.data(), negative.data(), 1, out.data(), 2), bad,
                 {"Shape.Reshape", "'inShape[0]'", ">= 0", "-6"}, y);
  ExpectRejected(call(x.data(), y.data(), in.data(), 2, wrong.data(), 2),
                 ErrorCode::ShapeMismatch, {"Shape.Reshape", "'outShape'", "6 elements", "8"}, y);
  ExpectRejected(call(x.data(), y.data(), in.data(), 2, bigger.data(), 1),
                 ErrorCode::ShapeMismatch, {"Shape.Reshape", "'outShape'"}, y);
  ExpectRejected(call(nullptr, y.data(), in.data(), 2, out.data(), 2), bad,
                 {"Shape.Reshape", "'src'", "null"}, y);
  ExpectRejected(call(x.data(), nullptr, in.data(), 2, out.data(), 2), bad,
                 {"Shape.Reshape", "'dst'", "null"}, y);
  const Dims overflow = {int64_t{1} << 40, int64_t{1} << 40};
  ExpectRejected(call(x.data(), y.data(), overflow.data(), 2, out.data(), 2), bad,
                 {"Shape.Reshape", "'inShape'", "fit in int64"}, y);
}

TEST(ShapeBadInput, Transpose) {
  const DType f = DType::Int8;
  Buffer x(f, 24), y(f, 24);
  const Dims shape = {2, 3, 4};
  const auto call = [&](const void* s, void* d, const int64_t* sh, int64_t rank, Dims perm) {
    return [=] { Shape().Transpose(s, d, sh, rank, perm.data(), f); };
  };
  const auto bad = ErrorCode::InvalidArgument;
  for (const Dims& perm : {Dims{0, 0, 1}, Dims{0, 1, 3}, Dims{-1, 0, 1}, Dims{2, 1, 1}}) {
    ExpectRejected(call(x.data(), y.data(), shape.data(), 3, perm), bad,
                   {"Shape.Transpose", "'perm'", "a permutation of 0..2"}, y);
  }
  ExpectRejected([&] { Shape().Transpose(x.data(), y.data(), shape.data(), 3, nullptr, f); }, bad,
                 {"Shape.Transpose", "'perm'", "null"}, y);
  ExpectRejected(call(x.data(), y.data(), shape.data(), -1, {}), bad,
                 {"Shape.Transpose", "'rank'"}, y);
  const Dims negative = {2, -3, 4};
  ExpectRejected(call(x.data(), y.data(), negative.data(), 3, {0, 1, 2}), bad,
                 {"Shape.Transpose", "'shape[1]'"}, y);
  ExpectRejected(call(nullptr, y.data(), shape.data(), 3, {0, 1, 2}), bad,
                 {"Shape.Transpose", "'src'"}, y);
  ExpectRejected(call(x.data(), nullptr, shape.data(), 3, {0, 1, 2}), bad,
                 {"Shape.Transpose", "'dst'"}, y);
  // The output may not overlap the input (an in-place transpose would read overwritten data).
  ExpectRejected(call(y.data(), y.as<int8_t>() + 4, shape.data(), 3, {2, 1, 0}), bad,
                 {"Shape.Transpose", "'dst'", "overlap"}, y);
}

TEST(ShapeBadInput, Concat) {
  const DType f = DType::Float16;
  Buffer a(f, 6), b(f, 8), y(f, 14);
  const void* ins[] = {a.data(), b.data()};
  const Dims good = {2, 3, 2, 4};      // [2,3] ++ [2,4] along axis 1
  const Dims mismatch = {2, 3, 3, 4};  // axis 0 differs
  const auto call = [&](const void* const* in, const int64_t* shapes, int64_t count, int64_t rank,
                        int64_t axis, void* dst) {
    return [=] { Shape().Concat(in, shapes, count, rank, axis, dst, f); };
  };
  const auto bad = ErrorCode::InvalidArgument;
  ExpectRejected(call(ins, good.data(), 0, 2, 1, y.data()), bad,
                 {"Shape.Concat", "'inputCount'", "> 0"}, y);
  ExpectRejected(call(ins, good.data(), 2, 2, 2, y.data()), bad,
                 {"Shape.Concat", "'axis'", "in [0, 2)", "2"}, y);
  ExpectRejected(call(ins, good.data(), 2, 2, -1, y.data()), bad, {"Shape.Concat", "'axis'"}, y);
  ExpectRejected(call(ins, good.data(), 2, 0, 0, y.data()), bad, {"Shape.Concat", "'axis'"}, y);
  ExpectRejected(call(ins, good.data(), 2, -1, 0, y.data()), bad, {"Shape.Concat", "'rank'"}, y);
  ExpectRejected(call(nullptr, good.data(), 2, 2, 1, y.data()), bad,
                 {"Shape.Concat", "'inputs'"}, y);
  ExpectRejected(call(ins, nullptr, 2, 2, 1, y.data()), bad, {"Shape.Concat", "'shapes'"}, y);
  ExpectRejected(call(ins, mismatch.data(), 2, 2, 1, y.data()), ErrorCode::ShapeMismatch,
                 {"Shape.Concat", "'shapes'", "input 1", "axis 0"}, y);
  const Dims negative = {2, 3, 2, -4};
  ExpectRejected(call(ins, negative.data(), 2, 2, 1, y.data()), bad,
                 {"Shape.Concat", "'shapes[3]'"}, y);
  const void* withNull[] = {a.data(), nullptr};
  ExpectRejected(call(withNull, good.data(), 2, 2, 1, y.data()), bad,
                 {"Shape.Concat", "'inputs[1]'", "null"}, y);
  ExpectRejected(call(ins, good.data(), 2, 2, 1, nullptr), bad, {"Shape.Concat", "'dst'"}, y);
  const void* overlapping[] = {a.data(), y.data()};
  ExpectRejected(call(overlapping, good.data(), 2, 2, 1, y.data()), bad,
                 {"Shape.Concat", "'dst'", "'inputs[1]'"}, y);
}

TEST(ShapeBadInput, Split) {
  const DType f = DType::Bool;
  Buffer x(f, 12), a(f, 4), b(f, 8);
  const Dims shape = {2, 6};
  const auto call = [&](const int64_t* sh, int64_t rank, int64_t axis, Dims sizes, int64_t count,
                        std::vector<void*> outs, const void* src) {
    return [=] { Shape().Split(src, sh, rank, axis, sizes.data(), count, outs.data(), f); };
  };
  const std::vector<void*> outs = {a.data(), b.data()};
  const auto bad = ErrorCode::InvalidArgument;
  for (Buffer* out : {&a, &b}) {
    ExpectRejected(call(shape.data(), 2, 1, {2, 3}, 2, outs, x.data()), bad,
                   {"Shape.Split", "'sizes'", "adding up to shape[1] = 6", "sum 5"}, *out);
    ExpectRejected(call(shape.data(), 2, 1, {8, -2}, 2, outs, x.data()), bad,
                   {"Shape.Split", "'sizes[1]'", ">= 0"}, *out);
    ExpectRejected(call(shape.data(), 2, 1, {kMax, kMax}, 2, outs, x.data()), bad,
                   {"Shape.Split", "'sizes'", "overflows"}, *out);
    ExpectRejected(call(shape.data(), 2, 2, {2, 4}, 2, outs, x.data()), bad,
                   {"Shape.Split", "'axis'"}, *out);
    ExpectRejected(call(shape.data(), 2, 1, {2, 4}, 0, outs, x.data()), bad,
                   {"Shape.Split", "'outputCount'"}, *out);
    ExpectRejected(call(shape.data(), 2, 1, {2, 4}, 2, {a.data(), nullptr}, x.data()), bad,
                   {"Shape.Split", "'outputs[1]'", "null"}, *out);
    ExpectRejected(call(shape.data(), 2, 1, {2, 4}, 2, outs, nullptr), bad,
                   {"Shape.Split", "'src'"}, *out);
    ExpectRejected(call(nullptr, 2, 1, {2, 4}, 2, outs, x.data()), bad,
                   {"Shape.Split", "'shape'"}, *out);
    ExpectRejected(
        [&] { Shape().Split(x.data(), shape.data(), 2, 1, nullptr, 2, outs.data(), f); }, bad,
        {"Shape.Split", "'sizes'", "null"}, *out);
    ExpectRejected(
        [&] { Shape().Split(x.data(), shape.data(), 2, 1, shape.data(), 2, nullptr, f); }, bad,
        {"Shape.Split", "'outputs'", "null"}, *out);
  }
  ExpectRejected(call(shape.data(), 2, 1, {2, 4}, 2, {a.data(), x.data()}, x.data()), bad,
                 {"Shape.Split", "'outputs[1]'", "overlap"}, a);
}

TEST(ShapeBadInput, UpsampleNearest2D) {
  const DType f = DType::Float64;
  Buffer x(f, 2 * 3 * 4), y(f, 2 * 6 * 8);
  const auto call = [&](UpsampleConfig c, int64_t b, int64_t ch, int64_t ih, int64_t iw,
                        int64_t oh, int64_t ow, const void* src, void* dst) {
    return [=] { Shape().UpsampleNearest2D(c, src, dst, b, ch, ih, iw, oh, ow, f); };
  };
  const auto bad = ErrorCode::InvalidArgument;
  const UpsampleConfig none{};
  for (const auto& [args, name] : std::vector<std::pair<std::array<int64_t, 6>, std::string>>{
           {{-1, 2, 3, 4, 6, 8}, "'batch'"},
           {{1, -2, 3, 4, 6, 8}, "'channels'"},
           {{1, 2, -3, 4, 6, 8}, "'inH'"},
           {{1, 2, 3, -4, 6, 8}, "'inW'"},
           {{1, 2, 3, 4, -6, 8}, "'outH'"},
           {{1, 2, 3, 4, 6, -8}, "'outW'"}}) {
    ExpectRejected(call(none, args[0], args[1], args[2], args[3], args[4], args[5], x.data(),
                        y.data()),
                   bad, {"Shape.UpsampleNearest2D", name}, y);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  ExpectRejected(call({nan, 2.0}, 1, 2, 3, 4, 6, 8, x.data(), y.data()), bad,
                 {"Shape.UpsampleNearest2D", "'config.ScaleH'", "finite"}, y);
  ExpectRejected(call({2.0, inf}, 1, 2, 3, 4, 6, 8, x.data(), y.data()), bad,
                 {"Shape.UpsampleNearest2D", "'config.ScaleW'", "finite"}, y);
  ExpectRejected(call({2.0, 2.0}, 1, 2, 3, 4, 7, 8, x.data(), y.data()),
                 ErrorCode::ShapeMismatch, {"Shape.UpsampleNearest2D", "'outH'", "6", "got 7"}, y);
  ExpectRejected(call({0.0, 1.5}, 1, 2, 3, 4, 6, 8, x.data(), y.data()),
                 ErrorCode::ShapeMismatch, {"Shape.UpsampleNearest2D", "'outW'", "6", "got 8"}, y);
  ExpectRejected(call({1e300, 0.0}, 1, 2, 3, 4, 6, 8, x.data(), y.data()),
                 ErrorCode::ShapeMismatch, {"Shape.UpsampleNearest2D", "'outH'"}, y);
  ExpectRejected(call(none, 1, 2, 0, 4, 6, 8, x.data(), y.data()), ErrorCode::ShapeMismatch,
                 {"Shape.UpsampleNearest2D", "'inH'", "> 0 when outH is 6"}, y);
  ExpectRejected(call(none, 1, 2, 3, 4, 6, 8, nullptr, y.data()), bad,
                 {"Shape.UpsampleNearest2D", "'src'"}, y);
  ExpectRejected(call(none, 1, 2, 3, 4, 6, 8, x.data(), nullptr), bad,
                 {"Shape.UpsampleNearest2D", "'dst'"}, y);
  ExpectRejected(call(none, 1, 2, 3, 4, 6, 8, y.data(), y.data()), bad,
                 {"Shape.UpsampleNearest2D", "'dst'", "overlap"}, y);
}

TEST(ShapeBadInput, HeadsLayouts) {
  const DType f = DType::BFloat16;
  Buffer x(f, 24), y(f, 24);
  const auto bad = ErrorCode::InvalidArgument;
  for (const bool merge : {false, true}) {
    const std::string op = merge ? "Shape.MergeHeads" : "Shape.ViewAsHeads";
    const auto call = [&](const void* s, void* d, int64_t b, int64_t sq, int64_t h, int64_t hd) {
      return [=] {
        if (merge) {
          Shape().MergeHeads(s, d, b, sq, h, hd, f);
        } else {
          Shape().ViewAsHeads(s, d, b, sq, h, hd, f);
        }
      };
    };
    ExpectRejected(call(x.data(), y.data(), -1, 3, 2, 4), bad, {op, "'batch'"}, y);
    ExpectRejected(call(x.data(), y.data(), 1, -3, 2, 4), bad, {op, "'seq'"}, y);
    ExpectRejected(call(x.data(), y.data(), 1, 3, -2, 4), bad, {op, "'heads'"}, y);
    ExpectRejected(call(x.data(), y.data(), 1, 3, 2, -4), bad, {op, "'headDim'"}, y);
    ExpectRejected(call(nullptr, y.data(), 1, 3, 2, 4), bad, {op, "'src'", "null"}, y);
    ExpectRejected(call(x.data(), nullptr, 1, 3, 2, 4), bad, {op, "'dst'", "null"}, y);
    ExpectRejected(call(y.data(), y.data(), 1, 3, 2, 4), bad, {op, "'dst'", "overlap"}, y);
    ExpectRejected(call(x.data(), y.data(), kMax, kMax, 2, 4), bad, {op, "fit in int64"}, y);
  }
}

TEST(ShapeBadInput, LastToken) {
  const DType f = DType::Int4;
  Buffer x(f, 24), y(f, 8);
  const auto call = [&](const void* s, void* d, int64_t b, int64_t sq, int64_t fe) {
    return [=] { Shape().LastToken(s, d, b, sq, fe, f); };
  };
  const auto bad = ErrorCode::InvalidArgument;
  ExpectRejected(call(x.data(), y.data(), -2, 3, 4), bad, {"Shape.LastToken", "'batch'"}, y);
  ExpectRejected(call(x.data(), y.data(), 2, -3, 4), bad, {"Shape.LastToken", "'seq'"}, y);
  ExpectRejected(call(x.data(), y.data(), 2, 3, -4), bad, {"Shape.LastToken", "'features'"}, y);
  ExpectRejected(call(x.data(), y.data(), 2, 0, 4), bad,
                 {"Shape.LastToken", "'seq'", "> 0", "got 0"}, y);
  ExpectRejected(call(nullptr, y.data(), 2, 3, 4), bad, {"Shape.LastToken", "'src'"}, y);
  ExpectRejected(call(x.data(), nullptr, 2, 3, 4), bad, {"Shape.LastToken", "'dst'"}, y);
  ExpectRejected(call(y.data(), y.data(), 1, 1, 4), bad, {"Shape.LastToken", "'dst'", "overlap"},
                 y);
}

TEST(ShapeBadInput, Slice) {
  const DType f = DType::Float32;
  Buffer x(f, 12), y(f, 12);
  const Dims shape = {3, 4}, starts = {0, 0}, ends = {3, 4}, steps = {1, 1};
  const auto call = [&](const int64_t* sh, int64_t rank, const int64_t* st, const int64_t* en,
                        Dims sp, const void* src, void* dst) {
    return [=] { Shape().Slice(src, dst, sh, rank, st, en, sp.data(), f); };
  };
  const auto bad = ErrorCode::InvalidArgument;
  ExpectRejected(call(shape.data(), 2, starts.data(), ends.data(), {1, 0}, x.data(), y.data()),
                 bad, {"Shape.Slice", "'steps[1]'", "non-zero", "got 0"}, y);
  ExpectRejected(call(shape.data(), 2, starts.data(), ends.data(), {0, 1}, x.data(), y.data()),
                 bad, {"Shape.Slice", "'steps[0]'"}, y);
  ExpectRejected(call(shape.data(), -1, starts.data(), ends.data(), {1, 1}, x.data(), y.data()),
                 bad, {"Shape.Slice", "'rank'"}, y);
  const Dims negative = {3, -4};
  ExpectRejected(call(negative.data(), 2, starts.data(), ends.data(), {1, 1}, x.data(), y.data()),
                 bad, {"Shape.Slice", "'shape[1]'"}, y);
  ExpectRejected(call(shape.data(), 2, nullptr, ends.data(), {1, 1}, x.data(), y.data()), bad,
                 {"Shape.Slice", "'starts'"}, y);
  ExpectRejected(call(shape.data(), 2, starts.data(), nullptr, {1, 1}, x.data(), y.data()), bad,
                 {"Shape.Slice", "'ends'"}, y);
  ExpectRejected([&] {
    Shape().Slice(x.data(), y.data(), shape.data(), 2, starts.data(), ends.data(), nullptr, f);
  }, bad, {"Shape.Slice", "'steps'"}, y);
  ExpectRejected(call(shape.data(), 2, starts.data(), ends.data(), steps, nullptr, y.data()), bad,
                 {"Shape.Slice", "'src'"}, y);
  ExpectRejected(call(shape.data(), 2, starts.data(), ends.data(), steps, x.data(), nullptr), bad,
                 {"Shape.Slice", "'dst'"}, y);
  ExpectRejected(call(shape.data(), 2, starts.data(), ends.data(), steps, y.data(), y.data()), bad,
                 {"Shape.Slice", "'dst'", "overlap"}, y);
}

}  // namespace
}  // namespace backplane
