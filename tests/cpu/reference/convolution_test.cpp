// Tests of the Convolution reference kernels through the CPU Backend: PyTorch golden data
// (tests/golden/gen_convolution.py -> tests/golden/data/convolution*.json) for every method and
// dtype, known values for the edge cases, and every validation path.
#include <gtest/gtest.h>

#include <array>
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
constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

ConvolutionSurface& Conv() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return backend->Convolution();
}

nlohmann::json Load(const std::string& name) {
  std::ifstream file(test::GoldenPath(name));
  return nlohmann::json::parse(file);
}

// The cases of both golden files.
const std::vector<nlohmann::json>& GoldenCases() {
  static const std::vector<nlohmann::json> cases = [] {
    std::vector<nlohmann::json> all;
    for (const char* name : {"convolution.json", "convolution_large.json"}) {
      const nlohmann::json doc = Load(name);
      for (const auto& c : doc["cases"]) all.push_back(c);
    }
    return all;
  }();
  return cases;
}

std::vector<DType> CaseDTypes(const std::string& name) {
  static const std::map<std::string, DType> kNames = {{"f64", DType::Float64},
                                                      {"f32", DType::Float32},
                                                      {"f16", DType::Float16},
                                                      {"bf16", DType::BFloat16}};
  if (name == "all") return test::FloatDTypes();
  return {kNames.at(name)};
}

Buffer Values(const nlohmann::json& values, double grid, DType dtype) {
  Buffer b(dtype, static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    b.Set(static_cast<int64_t>(i), values[i].get<double>() / grid);
  }
  return b;
}

std::map<DType, int> RunGolden(const std::string& method) {
  std::map<DType, int> runs;
  for (const auto& c : GoldenCases()) {
    if (c["method"] != method) continue;
    const auto in = c["in"].get<std::vector<int64_t>>();
    const auto k = c["kernel"].get<std::vector<int64_t>>();
    const auto o = c["out"].get<std::vector<int64_t>>();
    const auto s = c["stride"].get<std::vector<int64_t>>();
    const auto p = c["padding"].get<std::vector<int64_t>>();
    const auto d = c["dilation"].get<std::vector<int64_t>>();
    const int64_t n = c["batch"], cin = c["inChannels"], cout = c["outChannels"];
    const double grid = c["grid"].get<double>();
    for (DType dtype : CaseDTypes(c["dtype"])) {
      SCOPED_TRACE(method + " " + std::string(DTypeName(dtype)) + " " + c["in"].dump() + " k " +
                   c["kernel"].dump() + " s " + c["stride"].dump() + " p " + c["padding"].dump() +
                   " d " + c["dilation"].dump());
      const Buffer x = Values(c["x"], grid, dtype);
      const Buffer w = Values(c["w"], grid, dtype);
      const bool hasBias = !c["bias"].is_null();
      const Buffer b = hasBias ? Values(c["bias"], grid, dtype) : Buffer(dtype, 0);
      const void* bias = hasBias ? b.data() : nullptr;
      const std::vector<double> want = c["y"].get<std::vector<double>>();
      Buffer y(dtype, static_cast<int64_t>(want.size()));
      y.Poison();
      if (method == "Conv1D") {
        Conv().Conv1D({s[0], p[0], d[0]}, x.data(), w.data(), bias, y.data(), n, cin, in[0], cout,
                      k[0], o[0], dtype);
      } else if (method == "Conv2D") {
        Conv().Conv2D({s[0], s[1], p[0], p[1], d[0], d[1]}, x.data(), w.data(), bias, y.data(), n,
                      cin, in[0], in[1], cout, k[0], k[1], o[0], o[1], dtype);
      } else if (method == "Conv3D") {
        Conv().Conv3D({s[0], s[1], s[2], p[0], p[1], p[2], d[0], d[1], d[2]}, x.data(), w.data(),
                      bias, y.data(), n, cin, in[0], in[1], in[2], cout, k[0], k[1], k[2], o[0],
                      o[1], o[2], dtype);
      } else {
        Conv().ConvTranspose2D({s[0], s[1], p[0], p[1], d[0], d[1]}, x.data(), w.data(), bias,
                               y.data(), n, cin, in[0], in[1], cout, k[0], k[1], o[0], o[1], dtype);
      }
      EXPECT_TRUE(test::AllClose(y, want, test::DefaultTolerance(dtype)));
      EXPECT_TRUE(y.GuardIntact());
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

TEST(ConvolutionGolden, Conv1D) { ExpectCovered(RunGolden("Conv1D")); }
TEST(ConvolutionGolden, Conv2D) { ExpectCovered(RunGolden("Conv2D")); }
TEST(ConvolutionGolden, Conv3D) { ExpectCovered(RunGolden("Conv3D")); }
TEST(ConvolutionGolden, ConvTranspose2D) { ExpectCovered(RunGolden("ConvTranspose2D")); }

// ---- Known values ------------------------------------------------------------------------------

// Conv1D on one batch and one channel in and out; an empty `bias` vector means no bias.
std::vector<double> Conv1(const Conv1DConfig& config, const std::vector<double>& in,
                          const std::vector<double>& weight, const std::vector<double>& bias,
                          int64_t outL, DType dtype) {
  const Buffer x = FromDoubles(dtype, in), w = FromDoubles(dtype, weight);
  const Buffer b = FromDoubles(dtype, bias);
  Buffer y(dtype, outL);
  y.Poison();
  Conv().Conv1D(config, x.data(), w.data(), bias.empty() ? nullptr : b.data(), y.data(), 1, 1,
                static_cast<int64_t>(in.size()), 1, static_cast<int64_t>(weight.size()), outL,
                dtype);
  EXPECT_TRUE(y.GuardIntact());
  return y.ToDoubles();
}

TEST(ConvolutionKnown, CrossCorrelationPaddingStrideDilation) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // No kernel flip: [1, 2, 3] . [1, 0, -1] = -2 (a true convolution would give +2).
    EXPECT_EQ(Conv1({1, 0, 1}, {1, 2, 3}, {1, 0, -1}, {}, 1, dtype), (std::vector<double>{-2}));
    // Zero padding 1 and a bias of 0.5.
    EXPECT_EQ(Conv1({1, 1, 1}, {1, 2, 3}, {1, 1, 1}, {0.5}, 3, dtype),
              (std::vector<double>{3.5, 6.5, 5.5}));
    // Dilation 3: taps i and i + 3.
    EXPECT_EQ(Conv1({1, 0, 3}, {1, 2, 3, 4, 5}, {1, 1}, {}, 2, dtype), (std::vector<double>{5, 7}));
    // Stride 2 with padding 1: windows start at -1, 1, 3.
    EXPECT_EQ(Conv1({2, 1, 1}, {1, 2, 3, 4, 5}, {1, 1, 1}, {}, 3, dtype),
              (std::vector<double>{3, 9, 9}));
  }
}

TEST(ConvolutionKnown, Conv2DAndConv3DMatchConv1DOnALine) {
  // A 1 x L line through Conv2D / 1 x 1 x L through Conv3D equals Conv1D.
  const std::vector<double> in = {1, -2, 3, 0.5, 4, -1, 2};
  const std::vector<double> w = {0.25, -1, 2};
  const auto want = Conv1({2, 2, 2}, in, w, {1}, 4, DType::Float64);
  const Buffer x = FromDoubles(DType::Float64, in), k = FromDoubles(DType::Float64, w);
  const Buffer b = FromDoubles(DType::Float64, {1});
  Buffer y2(DType::Float64, 4), y3(DType::Float64, 4);
  Conv().Conv2D({1, 2, 0, 2, 1, 2}, x.data(), k.data(), b.data(), y2.data(), 1, 1, 1, 7, 1, 1, 3, 1,
                4, DType::Float64);
  Conv().Conv3D({1, 1, 2, 0, 0, 2, 1, 1, 2}, x.data(), k.data(), b.data(), y3.data(), 1, 1, 1, 1, 7,
                1, 1, 1, 3, 1, 1, 4, DType::Float64);
  EXPECT_EQ(y2.ToDoubles(), want);
  EXPECT_EQ(y3.ToDoubles(), want);
}

TEST(ConvolutionKnown, TransposedScattersAndOutputPadding) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // Stride 2, 2x2 kernel of ones: each input becomes a 2x2 block. output_padding 1 adds a row
    // and a column that receive only the bias.
    const Buffer x = FromDoubles(dtype, {1, 2, 3, 4});
    const Buffer w = FromDoubles(dtype, {1, 1, 1, 1});
    const Buffer b = FromDoubles(dtype, {0.5});
    Buffer y(dtype, 25);
    y.Poison();
    Conv().ConvTranspose2D({2, 2, 0, 0, 1, 1}, x.data(), w.data(), b.data(), y.data(), 1, 1, 2, 2,
                           1, 2, 2, 5, 5, dtype);
    const std::vector<double> want = {1.5, 1.5, 2.5, 2.5, 0.5,  //
                                      1.5, 1.5, 2.5, 2.5, 0.5,  //
                                      3.5, 3.5, 4.5, 4.5, 0.5,  //
                                      3.5, 3.5, 4.5, 4.5, 0.5,  //
                                      0.5, 0.5, 0.5, 0.5, 0.5};
    EXPECT_EQ(y.ToDoubles(), want);
    EXPECT_TRUE(y.GuardIntact());
  }
}

TEST(ConvolutionKnown, NaNAndInfinity) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const auto y = Conv1({1, 0, 1}, {kNaN, 1, 2, 3}, {1, 1}, {}, 3, dtype);
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], 3.0);
    EXPECT_EQ(y[2], 5.0);
    // inf * 0 is NaN (IEEE, as torch); inf * 1 + finite is inf.
    const auto z = Conv1({1, 0, 1}, {kInf, 1, 2}, {0, 1}, {}, 2, dtype);
    EXPECT_TRUE(std::isnan(z[0]));
    EXPECT_EQ(z[1], 2.0);
    EXPECT_EQ(Conv1({1, 0, 1}, {-kInf, 1}, {1, 1}, {}, 1, dtype)[0], -kInf);
  }
}

TEST(ConvolutionKnown, AnInfinityReachesOnlyTheWindowsThatHoldIt) {
  // 3x3, stride 1, 16 channels in and out: the shape the Winograd path takes. Image 1 holds +Inf at
  // (2, 2) of channel 0; a transform over 4x4 tiles would spread it (as Inf - Inf = NaN) to outputs
  // whose window misses it. Ones everywhere else, so every finite output is exact: 16 x its taps.
  constexpr int64_t kC = 16, kH = 6, kW = 6;
  std::vector<double> in(2 * kC * kH * kW, 1.0);
  in[static_cast<size_t>((1 * kC + 0) * kH * kW + 2 * kW + 2)] = kInf;
  const std::vector<double> weight(kC * kC * 9, 1.0);
  auto taps = [](int64_t o, int64_t n) { return (o == 0 || o == n - 1) ? 2.0 : 3.0; };
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    const Buffer x = FromDoubles(dtype, in), w = FromDoubles(dtype, weight);
    Buffer y(dtype, 2 * kC * kH * kW);
    y.Poison();
    Conv().Conv2D({1, 1, 1, 1, 1, 1}, x.data(), w.data(), nullptr, y.data(), 2, kC, kH, kW, kC, 3, 3, kH, kW, dtype);
    EXPECT_TRUE(y.GuardIntact());
    const std::vector<double> out = y.ToDoubles();
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t co = 0; co < kC; ++co) {
        for (int64_t oh = 0; oh < kH; ++oh) {
          for (int64_t ow = 0; ow < kW; ++ow) {
            const bool holdsInf = n == 1 && std::abs(oh - 2) <= 1 && std::abs(ow - 2) <= 1;
            const double want = holdsInf ? kInf : 16.0 * taps(oh, kH) * taps(ow, kW);
            EXPECT_EQ(out[static_cast<size_t>(((n * kC + co) * kH + oh) * kW + ow)], want)
                << "n " << n << " co " << co << " (" << oh << ", " << ow << ")";
          }
        }
      }
    }
  }
}

TEST(ConvolutionKnown, F16OverflowOnlyInTheResult) {
  // 60000 + 60000 - 60000 overflows a 16-bit accumulator but not the double one.
  EXPECT_EQ(Conv1({1, 0, 1}, {60000, 60000, -60000}, {1, 1, 1}, {}, 1, DType::Float16)[0], 60000.0);
  // A result beyond 65504 rounds to +inf in f16.
  EXPECT_EQ(Conv1({1, 0, 1}, {60000, 60000}, {1, 1}, {}, 1, DType::Float16)[0], kInf);
  EXPECT_EQ(Conv1({1, 0, 1}, {60000, 60000}, {-1, -1}, {}, 1, DType::Float16)[0], -kInf);
}

TEST(ConvolutionKnown, SignedZeroAndOverwrite) {
  // The output is overwritten (never accumulated into the poisoned contents), and with no bias the
  // accumulator starts at +0.0.
  const auto y = Conv1({1, 0, 1}, {-0.0, -0.0}, {1, 1}, {}, 1, DType::Float32);
  EXPECT_TRUE(y[0] == 0.0 && !std::signbit(y[0]));
}

TEST(ConvolutionKnown, OutputMayAliasInput) {
  const std::vector<double> in = {1, 2, 3, 4, 5};
  const auto want = Conv1({1, 1, 1}, in, {1, -2, 3}, {0.25}, 5, DType::Float32);
  Buffer x = FromDoubles(DType::Float32, in);
  const Buffer w = FromDoubles(DType::Float32, {1, -2, 3}), b = FromDoubles(DType::Float32, {0.25});
  Conv().Conv1D({1, 1, 1}, x.data(), w.data(), b.data(), x.data(), 1, 1, 5, 1, 3, 5,
                DType::Float32);
  EXPECT_EQ(x.ToDoubles(), want);
}

TEST(ConvolutionKnown, ZeroSizes) {
  Buffer y(DType::Float32, 8);
  y.Poison();
  const Buffer w = FromDoubles(DType::Float32, {1, 2, 3});
  // Empty batch, empty input length (outL must then be 0), no output channels.
  Conv().Conv1D({1, 0, 1}, nullptr, w.data(), nullptr, nullptr, 0, 1, 5, 1, 3, 3, DType::Float32);
  Conv().Conv1D({1, 1, 1}, nullptr, w.data(), nullptr, y.data(), 1, 1, 0, 1, 3, 0, DType::Float32);
  Conv().Conv2D({}, w.data(), nullptr, nullptr, nullptr, 1, 1, 1, 3, 0, 1, 2, 1, 2, DType::Float32);
  Conv().ConvTranspose2D({}, nullptr, w.data(), nullptr, nullptr, 1, 1, 0, 0, 1, 2, 1, 0, 0,
                         DType::BFloat16);
  EXPECT_TRUE(y.IsPoisoned());
  // No input channels: an empty sum, so the output is the bias.
  const Buffer b = FromDoubles(DType::Float32, {0.5, -2});
  Buffer z(DType::Float32, 6);
  Conv().Conv1D({1, 0, 1}, nullptr, nullptr, b.data(), z.data(), 1, 0, 5, 2, 3, 3, DType::Float32);
  EXPECT_EQ(z.ToDoubles(), (std::vector<double>{0.5, 0.5, 0.5, -2, -2, -2}));
}

// ---- Validation
// ----------------------------------------------------------------------------------

// A valid Conv2D call: [2, 3, 7, 6] * [4, 3, 3, 2], s (2, 1), p (1, 0), d (1, 2) -> [2, 4, 4, 4].
// As a ConvTranspose2D call the same sizes are used with in 4 x 5 and out 7 x 8.
struct Call {
  Conv2DConfig config{2, 1, 1, 0, 1, 2};
  int64_t batch = 2, inChannels = 3, inH = 7, inW = 6, outChannels = 4, kernelH = 3, kernelW = 2,
          outH = 4, outW = 4;
  DType dtype = DType::Float32;
  bool nullIn = false, nullWeight = false, nullOut = false;
};

Call TransposedCall() {
  Call c;
  c.inH = 4;
  c.inW = 5;
  c.outH = 7;  // (4-1)*2 - 2 + 1*(3-1) + 1 = 7, output_padding 0 or 1
  c.outW = 8;  // (5-1)*1 - 0 + 2*(2-1) + 1 = 7, output_padding 1 (< max(1, 2))
  return c;
}

struct BadCase {
  std::string name;
  std::function<void(Call&)> mutate;
  ErrorCode code;
  std::string arg;
};

void ExpectRejected(bool transposed, const std::vector<BadCase>& cases) {
  const std::string op = transposed ? "Convolution.ConvTranspose2D" : "Convolution.Conv2D";
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(op + ": " + bad.name);
    Call c = transposed ? TransposedCall() : Call{};
    bad.mutate(c);
    const Buffer in = test::RandomBuffer(DType::Float64, 512, 3);
    const Buffer weight = test::RandomBuffer(DType::Float64, 128, 4);
    const Buffer bias = test::RandomBuffer(DType::Float64, 8, 5);
    Buffer out(DType::Float64, 512);
    out.Poison();
    const void* x = c.nullIn ? nullptr : in.data();
    const void* w = c.nullWeight ? nullptr : weight.data();
    void* y = c.nullOut ? nullptr : out.data();
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          if (transposed) {
            Conv().ConvTranspose2D(c.config, x, w, bias.data(), y, c.batch, c.inChannels, c.inH,
                                   c.inW, c.outChannels, c.kernelH, c.kernelW, c.outH, c.outW,
                                   c.dtype);
          } else {
            Conv().Conv2D(c.config, x, w, bias.data(), y, c.batch, c.inChannels, c.inH, c.inW,
                          c.outChannels, c.kernelH, c.kernelW, c.outH, c.outW, c.dtype);
          }
        },
        bad.code, {op, "'" + bad.arg + "'"}));
    EXPECT_TRUE(out.IsPoisoned());
  }
}

std::vector<BadCase> CommonBadCases() {
  using E = ErrorCode;
  return {
      {"int8 dtype", [](Call& c) { c.dtype = DType::Int8; }, E::UnsupportedDType, "dtype"},
      {"bool dtype at zero size",
       [](Call& c) {
         c.dtype = DType::Bool;
         c.batch = 0;
       },
       E::UnsupportedDType, "dtype"},
      {"negative batch", [](Call& c) { c.batch = -1; }, E::InvalidArgument, "batch"},
      {"negative inChannels", [](Call& c) { c.inChannels = -1; }, E::InvalidArgument, "inChannels"},
      {"negative inH", [](Call& c) { c.inH = -7; }, E::InvalidArgument, "inH"},
      {"negative inW", [](Call& c) { c.inW = -1; }, E::InvalidArgument, "inW"},
      {"negative outChannels", [](Call& c) { c.outChannels = -4; }, E::InvalidArgument,
       "outChannels"},
      {"negative kernelH", [](Call& c) { c.kernelH = -3; }, E::InvalidArgument, "kernelH"},
      {"negative kernelW", [](Call& c) { c.kernelW = -2; }, E::InvalidArgument, "kernelW"},
      {"negative outH", [](Call& c) { c.outH = -4; }, E::InvalidArgument, "outH"},
      {"negative outW", [](Call& c) { c.outW = -4; }, E::InvalidArgument, "outW"},
      {"zero StrideH", [](Call& c) { c.config.StrideH = 0; }, E::InvalidArgument, "config.StrideH"},
      {"negative StrideW", [](Call& c) { c.config.StrideW = -1; }, E::InvalidArgument,
       "config.StrideW"},
      {"negative PaddingH", [](Call& c) { c.config.PaddingH = -1; }, E::InvalidArgument,
       "config.PaddingH"},
      {"negative PaddingW", [](Call& c) { c.config.PaddingW = -2; }, E::InvalidArgument,
       "config.PaddingW"},
      {"zero DilationH", [](Call& c) { c.config.DilationH = 0; }, E::InvalidArgument,
       "config.DilationH"},
      {"zero DilationW", [](Call& c) { c.config.DilationW = 0; }, E::InvalidArgument,
       "config.DilationW"},
      {"zero kernelH", [](Call& c) { c.kernelH = 0; }, E::InvalidArgument, "kernelH"},
      {"zero kernelW", [](Call& c) { c.kernelW = 0; }, E::InvalidArgument, "kernelW"},
      {"outH off by one", [](Call& c) { c.outH += 2; }, E::ShapeMismatch, "outH"},
      {"outW too small", [](Call& c) { c.outW -= 2; }, E::ShapeMismatch, "outW"},
      {"outH nonzero for an empty input", [](Call& c) { c.inH = 0; }, E::ShapeMismatch, "outH"},
      {"null in", [](Call& c) { c.nullIn = true; }, E::InvalidArgument, "in"},
      {"null weight", [](Call& c) { c.nullWeight = true; }, E::InvalidArgument, "weight"},
      {"null out", [](Call& c) { c.nullOut = true; }, E::InvalidArgument, "out"},
      {"dilated kernel span overflows",
       [](Call& c) {
         c.config.DilationH = kHuge / 2;
         c.kernelH = 4;
       },
       E::InvalidArgument, "kernelH"},
      {"element count overflows",
       [](Call& c) {
         c.batch = kHuge / 3;
         c.inChannels = 5;
       },
       E::InvalidArgument, "in"},
  };
}

TEST(ConvolutionErrors, Conv2D) {
  using E = ErrorCode;
  std::vector<BadCase> cases = CommonBadCases();
  const std::vector<BadCase> forward = {
      {"input smaller than the dilated kernel",
       [](Call& c) {
         c.config.DilationH = 5;  // span 10 > 7 + 2
       },
       E::ShapeMismatch, "inH"},
      {"inW + 2 * PaddingW overflows", [](Call& c) { c.config.PaddingW = kHuge / 2; },
       E::InvalidArgument, "config.PaddingW"},
  };
  cases.insert(cases.end(), forward.begin(), forward.end());
  ExpectRejected(false, cases);
}

TEST(ConvolutionErrors, ConvTranspose2D) {
  using E = ErrorCode;
  std::vector<BadCase> cases = CommonBadCases();
  const std::vector<BadCase> transposed = {
      {"output_padding equal to max(stride, dilation)", [](Call& c) { c.outH = 9; },
       E::ShapeMismatch, "outH"},
      {"output_padding above max(stride, dilation)", [](Call& c) { c.outW = 9; }, E::ShapeMismatch,
       "outW"},
      {"below the natural size", [](Call& c) { c.outH = 6; }, E::ShapeMismatch, "outH"},
      {"padding leaves no valid size",
       [](Call& c) {
         c.config.PaddingH = 10;
         c.outH = 1;
       },
       E::ShapeMismatch, "outH"},
      {"(inH - 1) * StrideH overflows", [](Call& c) { c.config.StrideH = kHuge / 2; },
       E::InvalidArgument, "config.StrideH"},
  };
  cases.insert(cases.end(), transposed.begin(), transposed.end());
  ExpectRejected(true, cases);
}

TEST(ConvolutionErrors, Conv1DAndConv3D) {
  using E = ErrorCode;
  const Buffer in = test::RandomBuffer(DType::Float32, 64, 1);
  const Buffer w = test::RandomBuffer(DType::Float32, 64, 2);
  Buffer out(DType::Float32, 64);
  out.Poison();
  const auto conv1 = [&](Conv1DConfig cfg, int64_t inL, int64_t k, int64_t outL, DType dtype) {
    return [&, cfg, inL, k, outL, dtype] {
      Conv().Conv1D(cfg, in.data(), w.data(), nullptr, out.data(), 1, 2, inL, 3, k, outL, dtype);
    };
  };
  const std::string op1 = "Convolution.Conv1D";
  EXPECT_TRUE(test::ThrowsError(conv1({1, 0, 1}, 9, 3, 7, DType::Int32), E::UnsupportedDType,
                                {op1, "'dtype'"}));
  EXPECT_TRUE(test::ThrowsError(conv1({0, 0, 1}, 9, 3, 7, DType::Float32), E::InvalidArgument,
                                {op1, "'config.Stride'"}));
  EXPECT_TRUE(test::ThrowsError(conv1({1, -1, 1}, 9, 3, 7, DType::Float32), E::InvalidArgument,
                                {op1, "'config.Padding'"}));
  EXPECT_TRUE(test::ThrowsError(conv1({1, 0, 0}, 9, 3, 7, DType::Float32), E::InvalidArgument,
                                {op1, "'config.Dilation'"}));
  EXPECT_TRUE(test::ThrowsError(conv1({1, 0, 1}, 9, 0, 7, DType::Float32), E::InvalidArgument,
                                {op1, "'kernelL'"}));
  EXPECT_TRUE(test::ThrowsError(conv1({1, 0, 1}, -9, 3, 7, DType::Float32), E::InvalidArgument,
                                {op1, "'inL'"}));
  EXPECT_TRUE(test::ThrowsError(conv1({1, 0, 1}, 9, 3, 8, DType::Float32), E::ShapeMismatch,
                                {op1, "'outL'", "must be 7"}));
  EXPECT_TRUE(test::ThrowsError(conv1({1, 0, 1}, 2, 3, 0, DType::Float32), E::ShapeMismatch,
                                {op1, "'inL'"}));
  const auto conv3 = [&](Conv3DConfig cfg, std::array<int64_t, 3> k, std::array<int64_t, 3> o,
                         DType dtype) {
    return [&, cfg, k, o, dtype] {
      Conv().Conv3D(cfg, in.data(), w.data(), nullptr, out.data(), 1, 1, 3, 4, 5, 1, k[0], k[1],
                    k[2], o[0], o[1], o[2], dtype);
    };
  };
  const std::string op3 = "Convolution.Conv3D";
  const Conv3DConfig unit{1, 1, 1, 0, 0, 0, 1, 1, 1};
  EXPECT_TRUE(test::ThrowsError(conv3(unit, {2, 2, 2}, {2, 3, 4}, DType::Complex64),
                                E::UnsupportedDType, {op3, "'dtype'"}));
  EXPECT_TRUE(
      test::ThrowsError(conv3({0, 1, 1, 0, 0, 0, 1, 1, 1}, {2, 2, 2}, {2, 3, 4}, DType::Float32),
                        E::InvalidArgument, {op3, "'config.StrideD'"}));
  EXPECT_TRUE(
      test::ThrowsError(conv3({1, 1, 1, 0, -1, 0, 1, 1, 1}, {2, 2, 2}, {2, 3, 4}, DType::Float32),
                        E::InvalidArgument, {op3, "'config.PaddingH'"}));
  EXPECT_TRUE(
      test::ThrowsError(conv3({1, 1, 1, 0, 0, 0, 1, 1, 0}, {2, 2, 2}, {2, 3, 4}, DType::Float32),
                        E::InvalidArgument, {op3, "'config.DilationW'"}));
  EXPECT_TRUE(test::ThrowsError(conv3(unit, {0, 2, 2}, {2, 3, 4}, DType::Float32),
                                E::InvalidArgument, {op3, "'kernelD'"}));
  EXPECT_TRUE(test::ThrowsError(conv3(unit, {2, 2, 2}, {3, 3, 4}, DType::Float32), E::ShapeMismatch,
                                {op3, "'outD'", "must be 2"}));
  EXPECT_TRUE(test::ThrowsError(conv3(unit, {2, 2, 6}, {2, 3, 0}, DType::Float32), E::ShapeMismatch,
                                {op3, "'inW'"}));
  EXPECT_TRUE(out.IsPoisoned());
}

TEST(ConvolutionErrors, MessageShape) {
  Buffer in(DType::Float32, 84), w(DType::Float32, 72), out(DType::Float32, 128);
  try {
    Conv().Conv2D({2, 1, 1, 0, 1, 2}, in.data(), w.data(), nullptr, out.data(), 2, 3, 7, 6, 4, 3, 2,
                  5, 4, DType::Float32);
    ADD_FAILURE() << "did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "Convolution.Conv2D: argument 'outH' must be 4 (from inH, kernelH and the "
                 "config), got 5");
  }
}

}  // namespace
}  // namespace backplane
