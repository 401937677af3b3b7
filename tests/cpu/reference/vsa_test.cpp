// VSA reference kernels, called through the CPU backend. Oracles: numpy.roll and
// torch.nn.functional.cosine_similarity golden data (tests/golden/gen_vsa.py) and closed-form
// float64 math written here.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;
using test::RandomBuffer;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

VSASurface& Vsa() {
  static auto backend = cpu::CreateBackend();
  return backend->VSA();
}

nlohmann::json Golden() {
  std::ifstream in(test::GoldenPath("vsa.json"));
  EXPECT_TRUE(in.good()) << "missing golden file; run tests/golden/gen_vsa.py";
  return nlohmann::json::parse(in);
}

DType DTypeOf(const nlohmann::json& c) { return *DTypeFromName(c["dtype"].get<std::string>()); }

std::vector<double> Doubles(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

// Bytes of a buffer's elements (no guard bytes), for bit-exact comparisons.
std::vector<uint8_t> Bytes(const Buffer& b) {
  const auto* p = static_cast<const uint8_t*>(b.data());
  return std::vector<uint8_t>(p, p + DTypeStorageBytes(b.dtype(), b.count()));
}

// Every dtype outside the accepted set, plus two values outside the enum.
std::vector<DType> RejectedDTypes() {
  std::vector<DType> out = {DType::Invalid, static_cast<DType>(25), static_cast<DType>(99)};
  for (DType d : AllDTypes()) {
    if (!kFloatDTypes.Contains(d)) out.push_back(d);
  }
  return out;
}

// ---- Bind and Bundle
// -----------------------------------------------------------------------------

TEST(VSAReference, BindAndBundleMatchFloat64Oracle) {
  for (DType dtype : test::FloatDTypes()) {
    for (int64_t n : {0, 1, 2, 7, 33, 4099}) {
      const Buffer a = RandomBuffer(dtype, n, 100 + static_cast<uint64_t>(n));
      const Buffer b = RandomBuffer(dtype, n, 200 + static_cast<uint64_t>(n));
      std::vector<double> product(static_cast<size_t>(n));
      std::vector<double> sum(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        product[static_cast<size_t>(i)] = a.Get(i) * b.Get(i);
        sum[static_cast<size_t>(i)] = a.Get(i) + b.Get(i);
      }
      Buffer out(dtype, n);
      out.Poison();
      Vsa().Bind(a.data(), b.data(), out.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, product, test::DefaultTolerance(dtype)));
      EXPECT_TRUE(out.GuardIntact());
      out.Poison();
      Vsa().Bundle(a.data(), b.data(), out.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, sum, test::DefaultTolerance(dtype)));
      EXPECT_TRUE(out.GuardIntact());
      // In place: output aliases left.
      Buffer inplace = a;
      Vsa().Bind(inplace.data(), b.data(), inplace.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(inplace, product, test::DefaultTolerance(dtype)));
      inplace = b;
      Vsa().Bundle(a.data(), inplace.data(), inplace.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(inplace, sum, test::DefaultTolerance(dtype)));
    }
  }
}

TEST(VSAReference, BipolarBindIsSelfInverseAndUnbindRecoversTheOperand) {
  for (DType dtype : test::FloatDTypes()) {
    const int64_t n = 1024;
    Buffer role = RandomBuffer(dtype, n, 1, -1.0, 1.0);
    Buffer filler = RandomBuffer(dtype, n, 2, -1.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      role.Set(i, role.Get(i) < 0 ? -1.0 : 1.0);
      filler.Set(i, filler.Get(i) < 0 ? -1.0 : 1.0);
    }
    Buffer bound(dtype, n);
    Vsa().Bind(role.data(), filler.data(), bound.data(), n, dtype);
    Buffer recovered(dtype, n);
    Vsa().Bind(role.data(), bound.data(), recovered.data(), n, dtype);
    EXPECT_EQ(Bytes(recovered), Bytes(filler)) << DTypeName(dtype);
    EXPECT_EQ(Vsa().Similarity(recovered.data(), filler.data(), n, dtype), 1.0);
    // A bundle stays similar to its bipolar component (cos = 1/sqrt(1 + 1/3) ~ 0.87 against a
    // uniform [-1, 1) one, up to crosstalk) and dissimilar to an unrelated vector.
    Buffer other = RandomBuffer(dtype, n, 3, -1.0, 1.0);
    Buffer bundle(dtype, n);
    Vsa().Bundle(bound.data(), other.data(), bundle.data(), n, dtype);
    EXPECT_GT(Vsa().Similarity(bundle.data(), bound.data(), n, dtype), 0.6);
    const Buffer unrelated = RandomBuffer(dtype, n, 4, -1.0, 1.0);
    EXPECT_LT(std::fabs(Vsa().Similarity(bundle.data(), unrelated.data(), n, dtype)), 0.15);
  }
}

TEST(VSAReference, BindAndBundleSpecialValues) {
  for (DType dtype : test::FloatDTypes()) {
    const Buffer a = FromDoubles(dtype, {-0.0, -0.0, kInf, kInf, kNaN, 2.0, -kInf});
    const Buffer b = FromDoubles(dtype, {1.0, -0.0, 0.0, -kInf, 1.0, kNaN, -3.0});
    Buffer out(dtype, 7);
    Vsa().Bind(a.data(), b.data(), out.data(), 7, dtype);
    EXPECT_TRUE(out.Get(0) == 0.0 && std::signbit(out.Get(0))) << "-0 * 1 = -0";
    EXPECT_TRUE(out.Get(1) == 0.0 && !std::signbit(out.Get(1))) << "-0 * -0 = +0";
    EXPECT_TRUE(std::isnan(out.Get(2))) << "Inf * 0 = NaN";
    EXPECT_EQ(out.Get(3), -kInf);
    EXPECT_TRUE(std::isnan(out.Get(4)));
    EXPECT_TRUE(std::isnan(out.Get(5)));
    EXPECT_EQ(out.Get(6), kInf);
    Vsa().Bundle(a.data(), b.data(), out.data(), 7, dtype);
    EXPECT_EQ(out.Get(0), 1.0);
    EXPECT_TRUE(out.Get(1) == 0.0 && std::signbit(out.Get(1))) << "-0 + -0 = -0";
    EXPECT_EQ(out.Get(2), kInf);
    EXPECT_TRUE(std::isnan(out.Get(3))) << "Inf + -Inf = NaN";
    EXPECT_TRUE(std::isnan(out.Get(4)));
    EXPECT_TRUE(std::isnan(out.Get(5)));
    EXPECT_EQ(out.Get(6), -kInf);
  }
  // Results beyond float16's range (max 65504) round to Inf on store; bf16 holds them.
  const Buffer a16 = FromDoubles(DType::Float16, {300.0, 60000.0, -60000.0});
  const Buffer b16 = FromDoubles(DType::Float16, {300.0, 60000.0, -60000.0});
  Buffer out16(DType::Float16, 3);
  Vsa().Bind(a16.data(), b16.data(), out16.data(), 3, DType::Float16);
  EXPECT_EQ(out16.Get(0), kInf);
  Vsa().Bundle(a16.data(), b16.data(), out16.data(), 3, DType::Float16);
  EXPECT_EQ(out16.Get(1), kInf);
  EXPECT_EQ(out16.Get(2), -kInf);
  const Buffer abf = FromDoubles(DType::BFloat16, {300.0});
  Buffer outbf(DType::BFloat16, 1);
  Vsa().Bind(abf.data(), abf.data(), outbf.data(), 1, DType::BFloat16);
  EXPECT_EQ(outbf.Get(0), 90112.0);  // 90000 rounded to bf16's 8-bit significand
}

// ---- Permute and InversePermute ---------------------------------------------------------------

TEST(VSAReference, PermuteMatchesNumpyRollGolden) {
  const nlohmann::json golden = Golden();
  int checked = 0;
  for (const auto& c : golden["permute"]) {
    const DType dtype = DTypeOf(c);
    const int64_t n = c["n"].get<int64_t>();
    const VSAConfig config{c["shift"].get<int64_t>()};
    const Buffer in = FromDoubles(dtype, Doubles(c["input"]));
    Buffer out(dtype, n);
    out.Poison();
    Vsa().Permute(config, in.data(), out.data(), n, dtype);
    // Exact: a permutation moves values without arithmetic.
    EXPECT_TRUE(test::AllClose(out, Doubles(c["roll"]), {0.0, 0.0}))
        << "Permute n=" << n << " shift=" << config.Shift;
    EXPECT_TRUE(out.GuardIntact());
    out.Poison();
    Vsa().InversePermute(config, in.data(), out.data(), n, dtype);
    EXPECT_TRUE(test::AllClose(out, Doubles(c["unroll"]), {0.0, 0.0}))
        << "InversePermute n=" << n << " shift=" << config.Shift;
    if (n == 0) {
      EXPECT_TRUE(out.IsPoisoned());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 40);
}

TEST(VSAReference, PermuteClosedFormRoundTripAndInPlace) {
  for (DType dtype : test::FloatDTypes()) {
    const int64_t n = 4099;
    const Buffer in = RandomBuffer(dtype, n, 77);
    for (int64_t shift :
         {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{12345}, n, -n,
          std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
      const VSAConfig config{shift};
      // numpy.roll(x, shift): output[(i + s) mod n] = input[i], s = shift mod n in [0, n).
      int64_t s = shift % n;
      if (s < 0) s += n;
      std::vector<double> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>((i + s) % n)] = in.Get(i);
      Buffer out(dtype, n);
      Vsa().Permute(config, in.data(), out.data(), n, dtype);
      EXPECT_TRUE(test::AllClose(out, want, {0.0, 0.0})) << "shift " << shift;
      Buffer back(dtype, n);
      Vsa().InversePermute(config, out.data(), back.data(), n, dtype);
      EXPECT_EQ(Bytes(back), Bytes(in)) << "round trip, shift " << shift;
      // In place (output == input) gives the same result as out of place.
      Buffer inplace = in;
      Vsa().Permute(config, inplace.data(), inplace.data(), n, dtype);
      EXPECT_EQ(Bytes(inplace), Bytes(out)) << "in place, shift " << shift;
      Vsa().InversePermute(config, inplace.data(), inplace.data(), n, dtype);
      EXPECT_EQ(Bytes(inplace), Bytes(in)) << "in-place inverse, shift " << shift;
    }
  }
}

TEST(VSAReference, PermuteSupportsPartialOverlapAndIsBitExact) {
  // -0.0, Inf and a NaN with a payload are moved bit for bit.
  const int64_t n = 6;
  Buffer wide(DType::Float32, n + 2);
  auto* f = wide.as<float>();
  uint32_t nan_bits = 0x7FC01234u;
  float payload_nan = 0.0f;
  std::memcpy(&payload_nan, &nan_bits, 4);
  const float values[] = {-0.0f,       1.5f,  std::numeric_limits<float>::infinity(),
                          payload_nan, -2.0f, 3.0f};
  for (int i = 0; i < n; ++i) f[i] = values[i];
  // Output starts two elements into the input: partial overlap.
  Vsa().Permute(VSAConfig{1}, f, f + 2, n, DType::Float32);
  for (int i = 0; i < n; ++i) {
    float got = f[2 + (i + 1) % n];
    EXPECT_EQ(std::memcmp(&got, &values[i], 4), 0) << i;
  }
}

// ---- Similarity
// -----------------------------------------------------------------------------------

TEST(VSAReference, SimilarityMatchesTorchCosineGolden) {
  const nlohmann::json golden = Golden();
  int checked = 0;
  for (const auto& c : golden["similarity"]) {
    const DType dtype = DTypeOf(c);
    const int64_t n = c["n"].get<int64_t>();
    const Buffer a = FromDoubles(dtype, Doubles(c["left"]));
    const Buffer b = FromDoubles(dtype, Doubles(c["right"]));
    // Computed in float64 for every storage format: the f64 bound applies to all.
    EXPECT_TRUE(test::Close(Vsa().Similarity(a.data(), b.data(), n, dtype),
                            c["cosine"].get<double>(), test::DefaultTolerance(DType::Float64)))
        << DTypeName(dtype) << " n=" << n;
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

TEST(VSAReference, SimilarityClosedForms) {
  for (DType dtype : test::FloatDTypes()) {
    for (int64_t n : {1, 2, 7, 5001}) {
      const Buffer a = RandomBuffer(dtype, n, 11 + static_cast<uint64_t>(n));
      const Buffer b = RandomBuffer(dtype, n, 12 + static_cast<uint64_t>(n));
      double dot = 0;
      double na = 0;
      double nb = 0;
      std::vector<double> neg(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        dot += a.Get(i) * b.Get(i);
        na += a.Get(i) * a.Get(i);
        nb += b.Get(i) * b.Get(i);
        neg[static_cast<size_t>(i)] = -a.Get(i);
      }
      const auto tol = test::DefaultTolerance(DType::Float64);
      EXPECT_TRUE(test::Close(Vsa().Similarity(a.data(), b.data(), n, dtype),
                              dot / std::sqrt(na * nb), tol));
      EXPECT_TRUE(test::Close(Vsa().Similarity(a.data(), a.data(), n, dtype), 1.0, tol));
      const Buffer minus = FromDoubles(dtype, neg);
      EXPECT_TRUE(test::Close(Vsa().Similarity(a.data(), minus.data(), n, dtype), -1.0, tol));
    }
    // Orthogonal, zero vector, count 0.
    const Buffer x = FromDoubles(dtype, {1, 0, 2, 0});
    const Buffer y = FromDoubles(dtype, {0, 3, 0, -1});
    const Buffer zero = FromDoubles(dtype, {0, -0.0, 0, 0});
    EXPECT_EQ(Vsa().Similarity(x.data(), y.data(), 4, dtype), 0.0);
    EXPECT_EQ(Vsa().Similarity(x.data(), zero.data(), 4, dtype), 0.0);
    EXPECT_EQ(Vsa().Similarity(zero.data(), zero.data(), 4, dtype), 0.0);
    EXPECT_EQ(Vsa().Similarity(nullptr, nullptr, 0, dtype), 0.0);
    // Inf or NaN anywhere gives NaN.
    const Buffer inf = FromDoubles(dtype, {1, kInf, 0, 0});
    const Buffer nan = FromDoubles(dtype, {1, 0, kNaN, 0});
    EXPECT_TRUE(std::isnan(Vsa().Similarity(x.data(), inf.data(), 4, dtype)));
    EXPECT_TRUE(std::isnan(Vsa().Similarity(nan.data(), x.data(), 4, dtype)));
  }
  // Scale invariance where a naive float64 sum of squares would overflow or underflow, and f16
  // values whose squares are below f16's range.
  const auto tol = test::DefaultTolerance(DType::Float64);
  const Buffer huge = FromDoubles(DType::Float64, {3e300, 4e300});
  const Buffer tiny = FromDoubles(DType::Float64, {3e-310, 4e-310});
  const Buffer unit = FromDoubles(DType::Float64, {1.0, 0.0});
  EXPECT_TRUE(test::Close(Vsa().Similarity(huge.data(), unit.data(), 2, DType::Float64), 0.6, tol));
  EXPECT_TRUE(test::Close(Vsa().Similarity(tiny.data(), unit.data(), 2, DType::Float64), 0.6, tol));
  EXPECT_TRUE(test::Close(Vsa().Similarity(huge.data(), tiny.data(), 2, DType::Float64), 1.0, tol));
  const Buffer small16 = FromDoubles(DType::Float16, {3e-5, 4e-5});
  const Buffer unit16 = FromDoubles(DType::Float16, {0.0, 1.0});
  const double want = small16.Get(1) / std::hypot(small16.Get(0), small16.Get(1));
  EXPECT_TRUE(
      test::Close(Vsa().Similarity(small16.data(), unit16.data(), 2, DType::Float16), want, tol));
}

// ---- Bad input
// ------------------------------------------------------------------------------------

TEST(VSAReference, BadInputThrowsAndLeavesOutputUntouched) {
  const DType f32 = DType::Float32;
  const Buffer a = RandomBuffer(f32, 8, 1);
  const Buffer b = RandomBuffer(f32, 8, 2);
  Buffer out(f32, 8);
  out.Poison();
  using BinaryFn = void (VSASurface::*)(const void*, const void*, void*, int64_t, DType);
  const std::pair<const char*, BinaryFn> binaries[] = {{"VSA.Bind", &VSASurface::Bind},
                                                       {"VSA.Bundle", &VSASurface::Bundle}};
  for (const auto& [op, fn] : binaries) {
    auto call = [&, fn = fn](const void* l, const void* r, void* o, int64_t n, DType d) {
      (Vsa().*fn)(l, r, o, n, d);
    };
    for (DType bad : RejectedDTypes()) {
      EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), b.data(), out.data(), 8, bad); },
                                    ErrorCode::UnsupportedDType, {op, "'dtype'"}));
      EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), b.data(), out.data(), 0, bad); },
                                    ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    }
    EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), b.data(), out.data(), -1, f32); },
                                  ErrorCode::InvalidArgument, {op, "'count'", ">= 0"}));
    EXPECT_TRUE(test::ThrowsError([&] { call(nullptr, b.data(), out.data(), 8, f32); },
                                  ErrorCode::InvalidArgument, {op, "'left'", "null"}));
    EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), nullptr, out.data(), 8, f32); },
                                  ErrorCode::InvalidArgument, {op, "'right'", "null"}));
    EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), b.data(), nullptr, 8, f32); },
                                  ErrorCode::InvalidArgument, {op, "'output'", "null"}));
    EXPECT_NO_THROW(call(nullptr, nullptr, nullptr, 0, f32));
    EXPECT_TRUE(out.IsPoisoned()) << op;
  }

  using PermuteFn = void (VSASurface::*)(const VSAConfig&, const void*, void*, int64_t, DType);
  const std::pair<const char*, PermuteFn> permutes[] = {
      {"VSA.Permute", &VSASurface::Permute}, {"VSA.InversePermute", &VSASurface::InversePermute}};
  for (const auto& [op, fn] : permutes) {
    auto call = [&, fn = fn](const void* in, void* o, int64_t n, DType d) {
      (Vsa().*fn)(VSAConfig{3}, in, o, n, d);
    };
    for (DType bad : RejectedDTypes()) {
      EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), out.data(), 8, bad); },
                                    ErrorCode::UnsupportedDType, {op, "'dtype'"}));
      EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), out.data(), 0, bad); },
                                    ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    }
    EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), out.data(), -5, f32); },
                                  ErrorCode::InvalidArgument, {op, "'count'", "-5"}));
    EXPECT_TRUE(test::ThrowsError([&] { call(nullptr, out.data(), 8, f32); },
                                  ErrorCode::InvalidArgument, {op, "'input'", "null"}));
    EXPECT_TRUE(test::ThrowsError([&] { call(a.data(), nullptr, 8, f32); },
                                  ErrorCode::InvalidArgument, {op, "'output'", "null"}));
    EXPECT_NO_THROW(call(nullptr, nullptr, 0, f32));
    EXPECT_TRUE(out.IsPoisoned()) << op;
  }

  const std::string op = "VSA.Similarity";
  for (DType bad : RejectedDTypes()) {
    EXPECT_TRUE(test::ThrowsError([&] { Vsa().Similarity(a.data(), b.data(), 8, bad); },
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError([&] { Vsa().Similarity(a.data(), b.data(), 0, bad); },
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
  }
  EXPECT_TRUE(test::ThrowsError([&] { Vsa().Similarity(a.data(), b.data(), -2, f32); },
                                ErrorCode::InvalidArgument, {op, "'count'"}));
  EXPECT_TRUE(test::ThrowsError([&] { Vsa().Similarity(nullptr, b.data(), 8, f32); },
                                ErrorCode::InvalidArgument, {op, "'left'"}));
  EXPECT_TRUE(test::ThrowsError([&] { Vsa().Similarity(a.data(), nullptr, 8, f32); },
                                ErrorCode::InvalidArgument, {op, "'right'"}));
}

}  // namespace
}  // namespace backplane
