// TensorOps elementwise kernels (Compare, Logical, Where, Cast, Pow, Mod, Round) against golden data
// (tests/golden/gen_tensor_ops_elementwise.py: exact rational rounding, Python integers, NumPy /
// PyTorch float64), on the reference backend and on the dispatched CPU backend. Values travel as
// raw storage (float bit patterns), so NaN, Inf and -0 compare exactly. Also the documented edge
// cases, untouched padding bits and guards, and every validation path.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::ThrowsError;

constexpr uint8_t kPoison = 0xA5;

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("tensor_ops_elementwise.json"));
    if (!in.good()) throw std::runtime_error("missing golden file tensor_ops_elementwise.json");
    return json::parse(in);
  }();
  return data;
}

DType D(const json& name) { return *DTypeFromName(name.get<std::string>()); }

// Raw storage of the golden form, followed by 16 poisoned guard bytes.
std::vector<uint8_t> FromJson(DType d, const json& v) {
  const auto n = static_cast<int64_t>(v.size());
  std::vector<uint8_t> s(DTypeStorageBytes(d, n) + 16, kPoison);
  const size_t w = d == DType::Bool ? 0 : DTypeStorageBytes(d, 1);
  for (int64_t i = 0; i < n; ++i) {
    const json& x = v[static_cast<size_t>(i)];
    if (d == DType::Bool) {
      StoreBool(s.data(), i, x.get<int>() != 0);
    } else {
      const uint64_t bits =
          x.is_number_unsigned() ? x.get<uint64_t>() : static_cast<uint64_t>(x.get<int64_t>());
      std::memcpy(s.data() + static_cast<size_t>(i) * w, &bits, w);  // little-endian
    }
  }
  return s;
}

// A poisoned output buffer for n elements.
std::vector<uint8_t> Poisoned(DType d, int64_t n) {
  return std::vector<uint8_t>(DTypeStorageBytes(d, n) + 16, kPoison);
}

// The golden form of n stored elements.
json ToJson(DType d, const std::vector<uint8_t>& s, int64_t n) {
  json out = json::array();
  const size_t w = d == DType::Bool ? 0 : DTypeStorageBytes(d, 1);
  for (int64_t i = 0; i < n; ++i) {
    if (d == DType::Bool) {
      out.push_back(LoadBool(s.data(), i) ? 1 : 0);
      continue;
    }
    uint64_t bits = 0;
    std::memcpy(&bits, s.data() + static_cast<size_t>(i) * w, w);
    const bool is_signed = d == DType::Int64 || d == DType::Int32 || d == DType::Int16 || d == DType::Int8;
    if (is_signed && w < 8 && (bits >> (8 * w - 1)) & 1) bits |= ~uint64_t{0} << (8 * w);  // sign-extend
    if (is_signed) {
      out.push_back(static_cast<int64_t>(bits));
    } else {
      out.push_back(bits);
    }
  }
  return out;
}

// The golden form with every float NaN bit pattern replaced by "nan": NaN sign and payload are not
// specified (the generator's NumPy and PyTorch NaNs differ from the C library's).
json Canon(DType d, const json& v) {
  if (!IsFloatingPoint(d)) return v;
  const int bits = DTypeBits(d);
  const int mant = d == DType::Float64 ? 52 : d == DType::Float32 ? 23 : d == DType::Float16 ? 10 : 7;
  const uint64_t exp_mask = ((uint64_t{1} << (bits - 1 - mant)) - 1) << mant;
  const uint64_t mant_mask = (uint64_t{1} << mant) - 1;
  json out = json::array();
  for (const json& x : v) {
    const auto b = x.get<uint64_t>();
    out.push_back((b & exp_mask) == exp_mask && (b & mant_mask) != 0 ? json("nan") : x);
  }
  return out;
}

// Element i of float storage as double.
double FloatAt(DType d, const std::vector<uint8_t>& s, int64_t i) {
  const auto k = static_cast<size_t>(i);
  switch (d) {
    case DType::Float64: {
      double v;
      std::memcpy(&v, s.data() + 8 * k, 8);
      return v;
    }
    case DType::Float32: {
      float v;
      std::memcpy(&v, s.data() + 4 * k, 4);
      return v;
    }
    default: {
      uint16_t h;
      std::memcpy(&h, s.data() + 2 * k, 2);
      return d == DType::Float16 ? F16ToF32(h) : BF16ToF32(h);
    }
  }
}

// Padding bits of the last bool byte and the 16 guard bytes still hold the poison.
::testing::AssertionResult Untouched(DType d, const std::vector<uint8_t>& s, int64_t n) {
  const size_t used = DTypeStorageBytes(d, n);
  for (size_t i = used; i < s.size(); ++i) {
    if (s[i] != kPoison) return ::testing::AssertionFailure() << "guard byte " << i << " was written";
  }
  if (d == DType::Bool && n % 8 != 0) {
    const uint8_t keep = static_cast<uint8_t>(0xFF << (n % 8));
    if ((s[used - 1] & keep) != (kPoison & keep)) {
      return ::testing::AssertionFailure() << "padding bits of the last byte were written";
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- golden data, on both backends -------------------------------------------------------------------

class TensorOpsGolden : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Backend> backend_ = GetParam() ? cpu::CreateBackend() : cpu::CreateReferenceBackend();
  TensorOpsSurface& ops() { return backend_->TensorOps(); }
};

TEST_P(TensorOpsGolden, MatchesEveryCase) {
  int checked = 0;
  for (const json& c : Golden()["cases"]) {
    const std::string method = c["method"];
    if (method == "Cast") {
      const DType from = D(c["from"]), to = D(c["to"]);
      SCOPED_TRACE("Cast " + c["from"].get<std::string>() + " -> " + c["to"].get<std::string>());
      const auto in = FromJson(from, c["in"]);
      const auto n = static_cast<int64_t>(c["in"].size());
      auto out = Poisoned(to, n);
      ops().Cast(in.data(), from, out.data(), to, n);
      EXPECT_EQ(Canon(to, ToJson(to, out, n)), Canon(to, c["out"]));
      EXPECT_TRUE(Untouched(to, out, n));
      ++checked;
      continue;
    }
    const DType d = D(c["dtype"]);
    SCOPED_TRACE(method + " " + c["dtype"].get<std::string>());
    if (method == "Compare" || method == "Logical") {
      const auto a = FromJson(d, c["a"]), b = FromJson(d, c["b"]);
      const auto n = static_cast<int64_t>(c["a"].size());
      for (size_t op = 0; op < c["out"].size(); ++op) {
        auto out = Poisoned(DType::Bool, n);
        if (method == "Compare") {
          ops().Compare(CompareConfig{static_cast<CompareOp>(op)}, a.data(), b.data(), out.data(), n, d);
        } else {
          const bool is_not = static_cast<LogicalOp>(op) == LogicalOp::Not;
          ops().Logical(LogicalConfig{static_cast<LogicalOp>(op)}, a.data(), is_not ? nullptr : b.data(),
                        out.data(), n, d);
        }
        EXPECT_EQ(ToJson(DType::Bool, out, n), c["out"][op]) << "op " << op;
        EXPECT_TRUE(Untouched(DType::Bool, out, n)) << "op " << op;
      }
    } else if (method == "Where") {
      const auto cond = FromJson(DType::Bool, c["cond"]), a = FromJson(d, c["a"]), b = FromJson(d, c["b"]);
      const auto n = static_cast<int64_t>(c["a"].size());
      auto out = Poisoned(d, n);
      ops().Where(cond.data(), a.data(), b.data(), out.data(), n, d);
      EXPECT_EQ(Canon(d, ToJson(d, out, n)), Canon(d, c["out"]));
      EXPECT_TRUE(Untouched(d, out, n));
    } else if (method == "Mod") {
      const auto a = FromJson(d, c["a"]), b = FromJson(d, c["b"]);
      const auto n = static_cast<int64_t>(c["a"].size());
      auto out = Poisoned(d, n);
      ops().Mod(ModConfig{c["fmod"].get<bool>()}, a.data(), b.data(), out.data(), n, d);
      EXPECT_EQ(Canon(d, ToJson(d, out, n)), Canon(d, c["out"])) << "fmod " << c["fmod"];
      EXPECT_TRUE(Untouched(d, out, n));
    } else if (method == "Pow" || method == "Round") {
      const bool pow = method == "Pow";
      const auto a = FromJson(d, pow ? c["a"] : c["in"]);
      const auto n = static_cast<int64_t>((pow ? c["a"] : c["in"]).size());
      const auto b = pow ? FromJson(d, c["b"]) : std::vector<uint8_t>{};
      const size_t ops_count = pow ? 1 : c["out"].size();
      for (size_t op = 0; op < ops_count; ++op) {
        auto out = Poisoned(d, n);
        if (pow) {
          ops().Pow(a.data(), b.data(), out.data(), n, d);
        } else {
          ops().Round(RoundConfig{static_cast<RoundOp>(op)}, a.data(), out.data(), n, d);
        }
        const json& want_json = pow ? c["out"] : c["out"][op];
        if (pow || static_cast<RoundOp>(op) == RoundOp::Erf) {
          // pow and erf come from libm in f64: within the dtype's tolerance of the golden.
          const auto want = FromJson(d, want_json);
          for (int64_t i = 0; i < n; ++i) {
            EXPECT_TRUE(test::Close(FloatAt(d, out, i), FloatAt(d, want, i), DefaultTolerance(d)))
                << "op " << op << " [" << i << "]";
          }
        } else {
          EXPECT_EQ(Canon(d, ToJson(d, out, n)), Canon(d, want_json)) << "op " << op;
        }
        EXPECT_TRUE(Untouched(d, out, n));
      }
    } else {
      ADD_FAILURE() << "unknown method " << method;
    }
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

INSTANTIATE_TEST_SUITE_P(Backends, TensorOpsGolden, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "cpu" : "reference";
                         });

// ---- documented edge cases ------------------------------------------------------------------------------

class TensorOpsEdges : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateReferenceBackend();
  TensorOpsSurface& ops() { return backend_->TensorOps(); }

  template <class To, class From>
  std::vector<To> Cast(const std::vector<From>& in, DType from, DType to) {
    std::vector<To> out(in.size());
    ops().Cast(in.data(), from, out.data(), to, static_cast<int64_t>(in.size()));
    return out;
  }
};

TEST_F(TensorOpsEdges, NaNComparesFalseExceptNotEqual) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> a = {nan, nan, 1.0}, b = {nan, 1.0, nan};
  for (int op = 0; op < 6; ++op) {
    uint8_t out = 0;
    ops().Compare(CompareConfig{static_cast<CompareOp>(op)}, a.data(), b.data(), &out, 3, DType::Float64);
    EXPECT_EQ(out, static_cast<CompareOp>(op) == CompareOp::NotEqual ? 0b111 : 0) << op;
  }
}

TEST_F(TensorOpsEdges, FloatToIntTruncatesSaturatesAndMapsNaNToZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {2.9f, -2.9f, 3e9f, -3e9f, nan, inf, -inf, -0.5f};
  EXPECT_EQ((Cast<int32_t>(x, DType::Float32, DType::Int32)),
            (std::vector<int32_t>{2, -2, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0}));
  EXPECT_EQ((Cast<uint8_t>(x, DType::Float32, DType::Uint8)),
            (std::vector<uint8_t>{2, 0, 255, 0, 0, 255, 0, 0}));
  const std::vector<double> big = {9.3e18, -9.3e18, 1.9e19};
  EXPECT_EQ((Cast<int64_t>(big, DType::Float64, DType::Int64)),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN, INT64_MAX}));
  EXPECT_EQ((Cast<uint64_t>(big, DType::Float64, DType::Uint64)),
            (std::vector<uint64_t>{9300000000000000000ull, 0, UINT64_MAX}));
}

TEST_F(TensorOpsEdges, IntToIntWrapsAndToBoolIsNonZero) {
  const std::vector<int32_t> x = {300, -1, 128, 0};
  EXPECT_EQ((Cast<uint8_t>(x, DType::Int32, DType::Uint8)), (std::vector<uint8_t>{44, 255, 128, 0}));
  EXPECT_EQ((Cast<int8_t>(x, DType::Int32, DType::Int8)), (std::vector<int8_t>{44, -1, -128, 0}));
  const std::vector<float> f = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 0.25f};
  uint8_t bits = 0;
  ops().Cast(f.data(), DType::Float32, &bits, DType::Bool, 4);
  EXPECT_EQ(bits, 0b1100);
}

TEST_F(TensorOpsEdges, NarrowingRoundsOnce) {
  // 1 + 2^-8 + 2^-30: through f32 it would be a tie rounded down to 1; once, it rounds up.
  const std::vector<double> x = {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)};
  EXPECT_EQ((Cast<uint16_t>(x, DType::Float64, DType::BFloat16))[0], F32ToBF16(1.0078125f));
  // 2^24 + 2^16 + 1: through f32 it would tie to 2^24 in bf16; once, it rounds up to 2^24 + 2^17.
  const std::vector<int64_t> i = {(int64_t{1} << 24) + (1 << 16) + 1};
  EXPECT_EQ((Cast<uint16_t>(i, DType::Int64, DType::BFloat16))[0], F32ToBF16(16908288.0f));
  const std::vector<int64_t> big = {INT64_MAX};
  EXPECT_EQ((Cast<float>(big, DType::Int64, DType::Float32))[0], 9223372036854775808.0f);
}

TEST_F(TensorOpsEdges, ModSignsAndZeroDivisors) {
  const std::vector<double> a = {-7, 7, 5, -0.0}, b = {3, -3, 0, 2};
  std::vector<double> out(4);
  ops().Mod(ModConfig{false}, a.data(), b.data(), out.data(), 4, DType::Float64);
  EXPECT_EQ(out[0], 2.0);
  EXPECT_EQ(out[1], -2.0);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_FALSE(std::signbit(out[3]));  // a zero result takes the sign of b
  ops().Mod(ModConfig{true}, a.data(), b.data(), out.data(), 4, DType::Float64);
  EXPECT_EQ(out[0], -1.0);
  EXPECT_EQ(out[1], 1.0);
  EXPECT_TRUE(std::signbit(out[3]));
  const std::vector<int32_t> ia = {INT32_MIN, -7}, ib = {-1, 3};
  std::vector<int32_t> iout(2);
  ops().Mod(ModConfig{false}, ia.data(), ib.data(), iout.data(), 2, DType::Int32);
  EXPECT_EQ(iout, (std::vector<int32_t>{0, 2}));
}

TEST_F(TensorOpsEdges, RoundKeepsTheSignAndTiesToEven) {
  const std::vector<float> x = {-0.5f, 0.5f, 1.5f, 2.5f, -2.5f, -0.0f};
  std::vector<float> out(x.size());
  ops().Round(RoundConfig{RoundOp::HalfToEven}, x.data(), out.data(), 6, DType::Float32);
  EXPECT_EQ(out, (std::vector<float>{-0.0f, 0.0f, 2.0f, 2.0f, -2.0f, -0.0f}));
  EXPECT_TRUE(std::signbit(out[0]));
  ops().Round(RoundConfig{RoundOp::Ceil}, x.data(), out.data(), 1, DType::Float32);
  EXPECT_TRUE(std::signbit(out[0]));
}

// ---- validation -----------------------------------------------------------------------------------------

TEST_F(TensorOpsEdges, ErrorsNameTheMethodAndArgument) {
  std::vector<uint8_t> buf(64, 0), out(64, kPoison);
  const void* p = buf.data();
  void* o = out.data();
  auto& t = ops();
  EXPECT_TRUE(ThrowsError([&] { t.Compare({}, p, p, o, 4, DType::Int4); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Compare", "'dtype'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Compare({}, p, nullptr, o, 4, DType::Float32); },
                          ErrorCode::InvalidArgument, {"TensorOps.Compare", "'b'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Compare({}, p, p, o, -1, DType::Float32); }, ErrorCode::InvalidArgument,
                          {"TensorOps.Compare", "'count'"}));
  EXPECT_TRUE(
      ThrowsError([&] { t.Compare(CompareConfig{static_cast<CompareOp>(6)}, p, p, o, 4, DType::Float32); },
                  ErrorCode::InvalidArgument, {"TensorOps.Compare", "'config.Op'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Logical({}, p, nullptr, o, 4, DType::Bool); }, ErrorCode::InvalidArgument,
                          {"TensorOps.Logical", "'b'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Logical({}, p, p, o, 4, DType::Uint8); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Logical", "'dtype'"}));
  EXPECT_NO_THROW(t.Logical(LogicalConfig{LogicalOp::Not}, p, nullptr, o, 4, DType::Bool));
  EXPECT_TRUE(ThrowsError([&] { t.Where(nullptr, p, p, o, 4, DType::Float32); }, ErrorCode::InvalidArgument,
                          {"TensorOps.Where", "'cond'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Where(p, p, p, nullptr, 4, DType::Bool); }, ErrorCode::InvalidArgument,
                          {"TensorOps.Where", "'out'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Cast(p, DType::Complex64, o, DType::Float32, 4); },
                          ErrorCode::UnsupportedDType, {"TensorOps.Cast", "'from'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Cast(p, DType::Float32, o, DType::Int4, 4); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Cast", "'to'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Cast(nullptr, DType::Float32, o, DType::Int32, 4); },
                          ErrorCode::InvalidArgument, {"TensorOps.Cast", "'in'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Pow(p, p, o, 4, DType::Int32); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Pow", "'dtype'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Mod({}, p, p, o, 4, DType::Bool); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Mod", "'dtype'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Round({}, p, o, 4, DType::Int64); }, ErrorCode::UnsupportedDType,
                          {"TensorOps.Round", "'dtype'"}));
  EXPECT_TRUE(ThrowsError([&] { t.Round(RoundConfig{static_cast<RoundOp>(-1)}, p, o, 4, DType::Float32); },
                          ErrorCode::InvalidArgument, {"TensorOps.Round", "'config.Op'"}));
  // An integer zero divisor anywhere is rejected before anything is written.
  std::fill(out.begin(), out.end(), kPoison);
  const std::vector<int16_t> a = {5, 6, 7, 8}, b = {1, 2, 0, 4};
  EXPECT_TRUE(ThrowsError([&] { t.Mod({}, a.data(), b.data(), o, 4, DType::Int16); },
                          ErrorCode::InvalidArgument, {"TensorOps.Mod", "'b'"}));
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t v) { return v == kPoison; }));
  // Count 0 accepts null pointers and writes nothing.
  EXPECT_NO_THROW(t.Compare({}, nullptr, nullptr, nullptr, 0, DType::Float32));
  EXPECT_NO_THROW(t.Cast(nullptr, DType::Bool, nullptr, DType::Int8, 0));
}

}  // namespace
}  // namespace backplane
