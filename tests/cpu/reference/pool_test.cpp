// Tests of the Pool reference kernels through the CPU Backend: PyTorch golden data
// (tests/golden/gen_pool.py -> tests/golden/data/pool.json) for every method and dtype, known
// values for the edge cases, and every validation path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

PoolSurface& Pool() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Pool();
}

const nlohmann::json& Golden() {
  static const nlohmann::json doc = [] {
    std::ifstream file(test::GoldenPath("pool.json"));
    return nlohmann::json::parse(file);
  }();
  return doc;
}

// "f64" -> {Float64}; "all" (inputs exact in every format) -> every floating dtype.
std::vector<DType> CaseDTypes(const std::string& name) {
  static const std::map<std::string, DType> kNames = {{"f64", DType::Float64},
                                                      {"f32", DType::Float32},
                                                      {"f16", DType::Float16},
                                                      {"bf16", DType::BFloat16}};
  if (name == "all") return test::FloatDTypes();
  return {kNames.at(name)};
}

Buffer Input(const nlohmann::json& c, DType dtype) {
  const auto& x = c["x"];
  const double grid = c["grid"].get<double>();
  Buffer b(dtype, static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) b.Set(static_cast<int64_t>(i), x[i].get<double>() / grid);
  return b;
}

// Runs every golden case of `method` in every dtype it lists; returns the number of (case, dtype)
// runs per dtype so the caller can check that each dtype is covered.
std::map<DType, int> RunGolden(const std::string& method) {
  std::map<DType, int> runs;
  for (const auto& c : Golden()["cases"]) {
    if (c["method"] != method) continue;
    for (DType dtype : CaseDTypes(c["dtype"])) {
      SCOPED_TRACE(method + " " + std::string(DTypeName(dtype)) + " in " +
                   std::to_string(c["batch"].get<int64_t>()) + "x" +
                   std::to_string(c["channels"].get<int64_t>()) + "x" +
                   std::to_string(c["inH"].get<int64_t>()) + "x" +
                   std::to_string(c["inW"].get<int64_t>()));
      const Buffer in = Input(c, dtype);
      const std::vector<double> want = c["y"].get<std::vector<double>>();
      Buffer out(dtype, static_cast<int64_t>(want.size()));
      out.Poison();
      const int64_t n = c["batch"], ch = c["channels"], h = c["inH"], w = c["inW"];
      const int64_t oh = c["outH"], ow = c["outW"];
      if (c.contains("kernelH")) {
        const PoolConfig config{c["kernelH"], c["kernelW"],  c["strideH"],
                                c["strideW"], c["paddingH"], c["paddingW"]};
        if (method == "MaxPool2D") {
          Pool().MaxPool2D(config, in.data(), out.data(), n, ch, h, w, oh, ow, dtype);
        } else {
          Pool().AvgPool2D(config, in.data(), out.data(), n, ch, h, w, oh, ow, dtype);
        }
      } else if (method == "AdaptiveMaxPool2D") {
        Pool().AdaptiveMaxPool2D(in.data(), out.data(), n, ch, h, w, oh, ow, dtype);
      } else {
        Pool().AdaptiveAvgPool2D(in.data(), out.data(), n, ch, h, w, oh, ow, dtype);
      }
      EXPECT_TRUE(test::AllClose(out, want, test::DefaultTolerance(dtype)));
      EXPECT_TRUE(out.GuardIntact());
      ++runs[dtype];
    }
  }
  return runs;
}

void ExpectCovered(const std::map<DType, int>& runs) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_GE(runs.count(dtype) ? runs.at(dtype) : 0, 6) << DTypeName(dtype);
  }
}

TEST(PoolGolden, MaxPool2D) { ExpectCovered(RunGolden("MaxPool2D")); }
TEST(PoolGolden, AvgPool2D) { ExpectCovered(RunGolden("AvgPool2D")); }
TEST(PoolGolden, AdaptiveMaxPool2D) { ExpectCovered(RunGolden("AdaptiveMaxPool2D")); }
TEST(PoolGolden, AdaptiveAvgPool2D) { ExpectCovered(RunGolden("AdaptiveAvgPool2D")); }

// ---- Known values ------------------------------------------------------------------------------

// Runs a fixed-window pool on a [1, 1, inH, inW] input; returns the output as doubles.
std::vector<double> Fixed(bool max, const PoolConfig& config, const std::vector<double>& in,
                          int64_t inH, int64_t inW, int64_t outH, int64_t outW, DType dtype) {
  const Buffer x = FromDoubles(dtype, in);
  Buffer y(dtype, outH * outW);
  y.Poison();
  if (max) {
    Pool().MaxPool2D(config, x.data(), y.data(), 1, 1, inH, inW, outH, outW, dtype);
  } else {
    Pool().AvgPool2D(config, x.data(), y.data(), 1, 1, inH, inW, outH, outW, dtype);
  }
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

std::vector<double> Adaptive(bool max, const std::vector<double>& in, int64_t inH, int64_t inW,
                             int64_t outH, int64_t outW, DType dtype) {
  const Buffer x = FromDoubles(dtype, in);
  Buffer y(dtype, outH * outW);
  y.Poison();
  if (max) {
    Pool().AdaptiveMaxPool2D(x.data(), y.data(), 1, 1, inH, inW, outH, outW, dtype);
  } else {
    Pool().AdaptiveAvgPool2D(x.data(), y.data(), 1, 1, inH, inW, outH, outW, dtype);
  }
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

TEST(PoolKnown, MaxPoolPaddingNeverWins) {
  for (DType dtype : test::FloatDTypes()) {
    // k 2, s 2, p 1 on a 2x2 plane of -5: every window holds one real tap and padded ones.
    const auto y = Fixed(true, {2, 2, 2, 2, 1, 1}, {-5, -5, -5, -5}, 2, 2, 2, 2, dtype);
    EXPECT_EQ(y, std::vector<double>(4, -5.0)) << DTypeName(dtype);
  }
}

TEST(PoolKnown, AvgPoolCountsInBoundsTapsOnly) {
  for (DType dtype : test::FloatDTypes()) {
    // k 2, s 1, p 1 on [[1, 2], [3, 4]]: torch avg_pool2d(count_include_pad=False).
    const auto y = Fixed(false, {2, 2, 1, 1, 1, 1}, {1, 2, 3, 4}, 2, 2, 3, 3, dtype);
    EXPECT_EQ(y, (std::vector<double>{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4})) << DTypeName(dtype);
  }
}

TEST(PoolKnown, MaxPropagatesNaN) {
  for (DType dtype : test::FloatDTypes()) {
    const auto y = Fixed(true, {1, 2, 1, 2, 0, 0}, {1, kNaN, 3, 2, kNaN, kNaN}, 1, 6, 1, 3, dtype);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[2])) << DTypeName(dtype);
    EXPECT_EQ(y[1], 3.0);
    const auto a = Adaptive(true, {1, kNaN, 3, 2}, 1, 4, 1, 2, dtype);
    EXPECT_TRUE(std::isnan(a[0])) << DTypeName(dtype);
    EXPECT_EQ(a[1], 3.0);
    const auto m = Fixed(false, {1, 2, 1, 2, 0, 0}, {1, kNaN, 3, 2}, 1, 4, 1, 2, dtype);
    EXPECT_TRUE(std::isnan(m[0])) << DTypeName(dtype);
    EXPECT_EQ(m[1], 2.5);
  }
}

TEST(PoolKnown, InfinitiesAndSignedZero) {
  for (DType dtype : test::FloatDTypes()) {
    const PoolConfig pairs{1, 2, 1, 2, 0, 0};
    const auto mx = Fixed(true, pairs, {kInf, 1, -kInf, -kInf, -0.0, -0.0}, 1, 6, 1, 3, dtype);
    EXPECT_EQ(mx[0], kInf);
    EXPECT_EQ(mx[1], -kInf);
    EXPECT_TRUE(mx[2] == 0.0 && std::signbit(mx[2])) << "max of -0.0 is -0.0";
    const auto av = Fixed(false, pairs, {kInf, 1, kInf, -kInf, -0.0, -0.0}, 1, 6, 1, 3, dtype);
    EXPECT_EQ(av[0], kInf);
    EXPECT_TRUE(std::isnan(av[1]));
    EXPECT_TRUE(av[2] == 0.0 && !std::signbit(av[2])) << "the sum starts at +0.0, as torch";
  }
}

TEST(PoolKnown, AverageOfLargeF16DoesNotOverflow) {
  // 4 x 65504 overflows a 16-bit accumulator; the mean is 65504 exactly.
  const auto y =
      Fixed(false, {2, 2, 2, 2, 0, 0}, {65504, 65504, 65504, 65504}, 2, 2, 1, 1, DType::Float16);
  EXPECT_EQ(y[0], 65504.0);
  const auto a = Adaptive(false, {65504, 65504, 65504}, 1, 3, 1, 1, DType::Float16);
  EXPECT_EQ(a[0], 65504.0);
}

TEST(PoolKnown, AdaptiveWindowsUseCeilEnd) {
  for (DType dtype : test::FloatDTypes()) {
    // in 3 -> out 2: windows [0, 2) and [1, 3) (the reference's floor end gave [0, 1), [1, 3)).
    EXPECT_EQ(Adaptive(true, {1, 5, 2}, 1, 3, 1, 2, dtype), (std::vector<double>{5, 5}));
    EXPECT_EQ(Adaptive(false, {1, 5, 2}, 1, 3, 1, 2, dtype), (std::vector<double>{3, 3.5}));
    // in 2 -> out 3 (out > in): windows [0, 1), [0, 2), [1, 2); none is empty.
    EXPECT_EQ(Adaptive(true, {1, 2}, 2, 1, 3, 1, dtype), (std::vector<double>{1, 2, 2}));
    EXPECT_EQ(Adaptive(false, {1, 2}, 1, 2, 1, 3, dtype), (std::vector<double>{1, 1.5, 2}));
  }
}

TEST(PoolKnown, OutputMayAliasInput) {
  const std::vector<double> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const PoolConfig same{3, 3, 1, 1, 1, 1};
  const auto want = Fixed(false, same, in, 3, 3, 3, 3, DType::Float64);
  Buffer x = FromDoubles(DType::Float64, in);
  Pool().AvgPool2D(same, x.data(), x.data(), 1, 1, 3, 3, 3, 3, DType::Float64);
  EXPECT_EQ(x.ToDoubles(), want);
}

TEST(PoolKnown, ZeroSizesWriteNothing) {
  Buffer out(DType::Float32, 4);
  out.Poison();
  const float in[1] = {1.0f};
  // An empty plane has an empty output (outH = 0), with or without padding.
  Pool().MaxPool2D({2, 2, 2, 2, 1, 1}, in, out.data(), 1, 1, 0, 3, 0, 2, DType::Float32);
  Pool().AvgPool2D({2, 2, 2, 2, 0, 0}, nullptr, nullptr, 0, 3, 4, 4, 2, 2, DType::Float32);
  Pool().AdaptiveMaxPool2D(nullptr, nullptr, 2, 0, 0, 0, 0, 0, DType::BFloat16);
  Pool().AdaptiveAvgPool2D(nullptr, nullptr, 0, 2, 5, 5, 3, 3, DType::Float16);
  EXPECT_TRUE(out.IsPoisoned());
}

// ---- Validation
// ----------------------------------------------------------------------------------

// A valid call on [2, 3, 7, 6] with k 3, s 2, p 1 (out 4 x 3) that each error case breaks once.
struct Call {
  PoolConfig config{3, 3, 2, 2, 1, 1};
  int64_t batch = 2, channels = 3, inH = 7, inW = 6, outH = 4, outW = 3;
  DType dtype = DType::Float32;
  bool nullIn = false, nullOut = false;
};

struct BadCase {
  std::string name;
  std::function<void(Call&)> mutate;
  ErrorCode code;
  std::string arg;
};

enum class Method { kMax, kAvg, kAdaptiveMax, kAdaptiveAvg };

const char* OpName(Method m) {
  switch (m) {
    case Method::kMax:
      return "Pool.MaxPool2D";
    case Method::kAvg:
      return "Pool.AvgPool2D";
    case Method::kAdaptiveMax:
      return "Pool.AdaptiveMaxPool2D";
    case Method::kAdaptiveAvg:
      return "Pool.AdaptiveAvgPool2D";
  }
  return "";
}

void ExpectRejected(Method method, const std::vector<BadCase>& cases) {
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(std::string(OpName(method)) + ": " + bad.name);
    Call c;
    bad.mutate(c);
    const Buffer in = test::RandomBuffer(DType::Float64, 512, 7);  // large enough for any dtype
    Buffer out(DType::Float64, 512);
    out.Poison();
    const void* x = c.nullIn ? nullptr : in.data();
    void* y = c.nullOut ? nullptr : out.data();
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          switch (method) {
            case Method::kMax:
              Pool().MaxPool2D(c.config, x, y, c.batch, c.channels, c.inH, c.inW, c.outH, c.outW,
                               c.dtype);
              break;
            case Method::kAvg:
              Pool().AvgPool2D(c.config, x, y, c.batch, c.channels, c.inH, c.inW, c.outH, c.outW,
                               c.dtype);
              break;
            case Method::kAdaptiveMax:
              Pool().AdaptiveMaxPool2D(x, y, c.batch, c.channels, c.inH, c.inW, c.outH, c.outW,
                                       c.dtype);
              break;
            case Method::kAdaptiveAvg:
              Pool().AdaptiveAvgPool2D(x, y, c.batch, c.channels, c.inH, c.inW, c.outH, c.outW,
                                       c.dtype);
              break;
          }
        },
        bad.code, {OpName(method), "'" + bad.arg + "'"}));
    EXPECT_TRUE(out.IsPoisoned());
  }
}

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

std::vector<BadCase> CommonBadCases() {
  using E = ErrorCode;
  return {
      {"int32 dtype", [](Call& c) { c.dtype = DType::Int32; }, E::UnsupportedDType, "dtype"},
      {"invalid dtype at zero size",
       [](Call& c) {
         c.dtype = DType::Invalid;
         c.batch = 0;
       },
       E::UnsupportedDType, "dtype"},
      {"fp8 dtype", [](Call& c) { c.dtype = DType::Float8E4M3; }, E::UnsupportedDType, "dtype"},
      {"negative batch", [](Call& c) { c.batch = -1; }, E::InvalidArgument, "batch"},
      {"negative channels", [](Call& c) { c.channels = -2; }, E::InvalidArgument, "channels"},
      {"negative inH", [](Call& c) { c.inH = -1; }, E::InvalidArgument, "inH"},
      {"negative inW", [](Call& c) { c.inW = -1; }, E::InvalidArgument, "inW"},
      {"negative outH", [](Call& c) { c.outH = -4; }, E::InvalidArgument, "outH"},
      {"negative outW", [](Call& c) { c.outW = -3; }, E::InvalidArgument, "outW"},
      {"null in", [](Call& c) { c.nullIn = true; }, E::InvalidArgument, "in"},
      {"null out", [](Call& c) { c.nullOut = true; }, E::InvalidArgument, "out"},
      {"batch * channels overflows",
       [](Call& c) {
         c.batch = kHuge / 2;
         c.channels = 3;
       },
       E::InvalidArgument, "channels"},
  };
}

TEST(PoolErrors, FixedWindowMethods) {
  using E = ErrorCode;
  std::vector<BadCase> cases = CommonBadCases();
  const std::vector<BadCase> fixed = {
      {"zero KernelH", [](Call& c) { c.config.KernelH = 0; }, E::InvalidArgument, "config.KernelH"},
      {"negative KernelW", [](Call& c) { c.config.KernelW = -3; }, E::InvalidArgument,
       "config.KernelW"},
      {"zero StrideH", [](Call& c) { c.config.StrideH = 0; }, E::InvalidArgument, "config.StrideH"},
      {"zero StrideW", [](Call& c) { c.config.StrideW = 0; }, E::InvalidArgument, "config.StrideW"},
      {"negative PaddingH", [](Call& c) { c.config.PaddingH = -1; }, E::InvalidArgument,
       "config.PaddingH"},
      {"PaddingW above half the kernel", [](Call& c) { c.config.PaddingW = 2; }, E::InvalidArgument,
       "config.PaddingW"},
      {"outH off by one", [](Call& c) { c.outH = 5; }, E::ShapeMismatch, "outH"},
      {"outW off by one", [](Call& c) { c.outW = 2; }, E::ShapeMismatch, "outW"},
      {"outH nonzero for an empty input", [](Call& c) { c.inH = 0; }, E::ShapeMismatch, "outH"},
      {"input smaller than the window",
       [](Call& c) {
         c.config.KernelH = 6;
         c.config.PaddingH = 0;
         c.inH = 5;
       },
       E::ShapeMismatch, "inH"},
      {"inH + 2 * PaddingH overflows",
       [](Call& c) {
         c.inH = kHuge;
         c.batch = 0;
       },
       E::InvalidArgument, "inH"},
      {"element count overflows",
       [](Call& c) {
         c.config = {1, 1, 1, 1, 0, 0};
         c.inH = c.outH = kHuge / 4;
         c.inW = c.outW = 1;
         c.batch = 1;
         c.channels = 5;
       },
       E::InvalidArgument, "in"},
  };
  cases.insert(cases.end(), fixed.begin(), fixed.end());
  ExpectRejected(Method::kMax, cases);
  ExpectRejected(Method::kAvg, cases);
}

TEST(PoolErrors, AdaptiveMethods) {
  using E = ErrorCode;
  std::vector<BadCase> cases = CommonBadCases();
  const std::vector<BadCase> adaptive = {
      {"zero outH", [](Call& c) { c.outH = 0; }, E::InvalidArgument, "outH"},
      {"zero outW", [](Call& c) { c.outW = 0; }, E::InvalidArgument, "outW"},
      {"zero inH", [](Call& c) { c.inH = 0; }, E::InvalidArgument, "inH"},
      {"zero inW", [](Call& c) { c.inW = 0; }, E::InvalidArgument, "inW"},
      {"window bounds overflow",
       [](Call& c) {
         c.inW = kHuge / 2;
         c.outW = 3;
       },
       E::InvalidArgument, "outW"},
  };
  cases.insert(cases.end(), adaptive.begin(), adaptive.end());
  ExpectRejected(Method::kAdaptiveMax, cases);
  ExpectRejected(Method::kAdaptiveAvg, cases);
}

TEST(PoolErrors, MessageShape) {
  Buffer in(DType::Float32, 84), out(DType::Float32, 84);
  try {
    Pool().MaxPool2D({3, 3, 2, 2, 1, 1}, in.data(), out.data(), 2, 3, 7, 6, 5, 3, DType::Float32);
    ADD_FAILURE() << "did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "Pool.MaxPool2D: argument 'outH' must be 4 (from inH and the config), got 5");
  }
}

}  // namespace
}  // namespace backplane
