// Tests of the TensorOps axis methods (ArgReduce, CumSum, Trilu, GatherElements): the NumPy /
// PyTorch goldens of tests/golden/gen_tensor_ops_axis.py on the reference table and through the
// CPU Backend (fast kernels), bit-exact; special cases (first NaN, signed zeros, wrap-around,
// huge k); and every validation path, which must name the method and argument and write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/backend/tensor_ops.hpp"
#include "backplane/convert.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "cpu/reference/reference.hpp"
#include "support/test_support.hpp"
#include "tensor_ops_golden.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::ThrowsError;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

using namespace tensor_ops_golden;  // NOLINT(google-build-using-namespace)

const json& Golden() {
  static const json data = ReadGolden("tensor_ops_axis.json");
  return data;
}

TEST(TensorOpsAxisGolden, ArgReduce) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "ArgReduce") continue;
    const DType dt = DTypeOf(c);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const auto x = Storage(dt, c.at("x"));
    for (const json& r : c.at("runs")) {
      const ArgReduceConfig cfg{r.at("max").get<bool>(), r.at("last").get<bool>()};
      BothKernels([&](bool fast) {
        std::vector<uint8_t> out(static_cast<size_t>(shape[0] * shape[2]) * 8 + 16, 0xA5);
        auto* o = reinterpret_cast<int64_t*>(out.data());
        if (fast) {
          Fast().ArgReduce(cfg, x.data(), o, shape[0], shape[1], shape[2], dt);
        } else {
          Ref().TensorOps_ArgReduce(cfg, x.data(), o, shape[0], shape[1], shape[2], dt);
        }
        EXPECT_TRUE(SameElements(out, DType::Int64, r.at("want")))
            << c.at("dtype") << " " << c.at("shape") << " " << r.dump().substr(0, 40) << (fast ? " fast" : " ref");
      });
      ++n;
    }
  }
  EXPECT_GT(n, 100);
}

TEST(TensorOpsAxisGolden, CumSum) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "CumSum") continue;
    const DType dt = DTypeOf(c);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const auto x = Storage(dt, c.at("x"));
    const int64_t count = shape[0] * shape[1] * shape[2];
    for (const json& r : c.at("runs")) {
      const CumSumConfig cfg{r.at("exclusive").get<bool>(), r.at("reverse").get<bool>()};
      BothKernels([&](bool fast) {
        std::vector<uint8_t> out(DTypeStorageBytes(dt, count) + 16, 0xA5);
        if (fast) {
          Fast().CumSum(cfg, x.data(), out.data(), shape[0], shape[1], shape[2], dt);
        } else {
          Ref().TensorOps_CumSum(cfg, x.data(), out.data(), shape[0], shape[1], shape[2], dt);
        }
        EXPECT_TRUE(SameElements(out, dt, r.at("want")))
            << c.at("dtype") << " " << c.at("shape") << " excl " << cfg.Exclusive << " rev " << cfg.Reverse
            << (fast ? " fast" : " ref");
      });
      ++n;
    }
  }
  EXPECT_GT(n, 100);
}

TEST(TensorOpsAxisGolden, Trilu) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "Trilu") continue;
    const DType dt = DTypeOf(c);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const auto x = Storage(dt, c.at("x"));
    const int64_t count = shape[0] * shape[1] * shape[2];
    for (const json& r : c.at("runs")) {
      const TriluConfig cfg{r.at("upper").get<bool>(), r.at("k").get<int64_t>()};
      BothKernels([&](bool fast) {
        std::vector<uint8_t> out(DTypeStorageBytes(dt, count) + 16, 0xA5);
        if (fast) {
          Fast().Trilu(cfg, x.data(), out.data(), shape[0], shape[1], shape[2], dt);
        } else {
          Ref().TensorOps_Trilu(cfg, x.data(), out.data(), shape[0], shape[1], shape[2], dt);
        }
        EXPECT_TRUE(SameElements(out, dt, r.at("want")))
            << c.at("dtype") << " " << c.at("shape") << " upper " << cfg.Upper << " k " << cfg.K;
      });
      ++n;
    }
  }
  EXPECT_GT(n, 100);
}

TEST(TensorOpsAxisGolden, GatherElements) {
  int n = 0;
  for (const json& c : Golden().at("cases")) {
    if (c.at("method") != "GatherElements") continue;
    const DType dt = DTypeOf(c);
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const int64_t outAxis = c.at("out_axis").get<int64_t>();
    const auto x = Storage(dt, c.at("x"));
    const auto idx = c.at("indices").get<std::vector<int64_t>>();
    BothKernels([&](bool fast) {
      std::vector<uint8_t> out(DTypeStorageBytes(dt, shape[0] * outAxis * shape[2]) + 16, 0xA5);
      if (fast) {
        Fast().GatherElements(x.data(), idx.data(), out.data(), shape[0], shape[1], outAxis, shape[2], dt);
      } else {
        Ref().TensorOps_GatherElements(x.data(), idx.data(), out.data(), shape[0], shape[1], outAxis, shape[2], dt);
      }
      EXPECT_TRUE(SameElements(out, dt, c.at("want"))) << c.at("dtype") << " " << c.at("shape");
    });
    ++n;
  }
  EXPECT_GE(n, 20);
}

// ---- special cases ---------------------------------------------------------------------------------

TEST(TensorOpsAxis, ArgReduceFirstNaNWinsForMaxAndMin) {
  const std::vector<float> x = {1.0f, NAN, 5.0f, NAN, -7.0f};
  for (const bool max : {true, false}) {
    for (const bool last : {false, true}) {
      int64_t out = -1;
      Fast().ArgReduce({max, last}, x.data(), &out, 1, 5, 1, DType::Float32);
      EXPECT_EQ(out, 1);
    }
  }
}

TEST(TensorOpsAxis, ArgReduceSignedZerosTie) {
  const std::vector<double> x = {-0.0, 0.0, -0.0};
  int64_t out = -1;
  Fast().ArgReduce({true, false}, x.data(), &out, 1, 3, 1, DType::Float64);
  EXPECT_EQ(out, 0);
  Fast().ArgReduce({true, true}, x.data(), &out, 1, 3, 1, DType::Float64);
  EXPECT_EQ(out, 2);
}

TEST(TensorOpsAxis, ArgReduceLongAxisMatchesReference) {
  // Lanes over the axis (inner 1) and over inner, with ties everywhere and a late NaN.
  for (const int64_t inner : {int64_t{1}, int64_t{19}}) {
    std::vector<float> x(static_cast<size_t>(1001 * inner));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 13);
    for (const bool nan : {false, true}) {
      if (nan) x[x.size() - 3] = NAN;
      for (int f = 0; f < 4; ++f) {
        const ArgReduceConfig cfg{f % 2 == 0, f >= 2};
        std::vector<int64_t> want(static_cast<size_t>(inner)), got(want.size());
        Ref().TensorOps_ArgReduce(cfg, x.data(), want.data(), 1, 1001, inner, DType::Float32);
        Fast().ArgReduce(cfg, x.data(), got.data(), 1, 1001, inner, DType::Float32);
        EXPECT_EQ(got, want) << "inner " << inner << " nan " << nan << " flags " << f;
      }
    }
  }
}

TEST(TensorOpsAxis, CumSumWrapsIntegersAndKeepsLeadingNegativeZero) {
  const std::vector<int8_t> x = {100, 100, -128, 1};
  std::vector<int8_t> out(4);
  Fast().CumSum({}, x.data(), out.data(), 1, 4, 1, DType::Int8);
  EXPECT_EQ(out, (std::vector<int8_t>{100, -56, 72, 73}));
  const std::vector<int64_t> big = {kMax, 1};
  std::vector<int64_t> wrapped(2);
  Fast().CumSum({}, big.data(), wrapped.data(), 1, 2, 1, DType::Int64);
  EXPECT_EQ(wrapped[1], std::numeric_limits<int64_t>::min());
  const std::vector<double> z = {-0.0, -0.0};
  std::vector<double> zs(2);
  Fast().CumSum({}, z.data(), zs.data(), 1, 2, 1, DType::Float64);
  EXPECT_TRUE(std::signbit(zs[0]) && std::signbit(zs[1]));
  Fast().CumSum({true, false}, z.data(), zs.data(), 1, 2, 1, DType::Float64);
  EXPECT_FALSE(std::signbit(zs[0]));  // the exclusive first element is +0
  EXPECT_TRUE(std::signbit(zs[1]));
}

TEST(TensorOpsAxis, CumSumAccumulatesFloatsInF64) {
  // 2^24 + 1 + 1 in f32 steps would stay 2^24; in f64 the running sum reaches 2^24 + 2.
  const std::vector<float> x = {16777216.0f, 1.0f, 1.0f};
  std::vector<float> out(3);
  Ref().TensorOps_CumSum({}, x.data(), out.data(), 1, 3, 1, DType::Float32);
  EXPECT_EQ(out[2], 16777218.0f);
}

TEST(TensorOpsAxis, TriluHugeDiagonalOffsets) {
  const std::vector<int32_t> x = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> out(6, 9);
  Fast().Trilu({true, kMax}, x.data(), out.data(), 1, 2, 3, DType::Int32);
  EXPECT_EQ(out, (std::vector<int32_t>(6, 0)));
  Fast().Trilu({true, std::numeric_limits<int64_t>::min()}, x.data(), out.data(), 1, 2, 3, DType::Int32);
  EXPECT_EQ(out, x);
  Fast().Trilu({false, -1}, x.data(), out.data(), 1, 2, 3, DType::Int32);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 0, 0, 4, 0, 0}));
}

// ---- validation ------------------------------------------------------------------------------------

TEST(TensorOpsAxisErrors, ArgReduce) {
  std::vector<float> x(8, 1.0f);
  std::vector<int64_t> out(4, 7);
  for (const bool fast : {false, true}) {
    auto call = [&](int64_t a, int64_t b, int64_t c, const void* in, DType dt) {
      return [=, &out] {
        if (fast) {
          Fast().ArgReduce({}, in, out.data(), a, b, c, dt);
        } else {
          Ref().TensorOps_ArgReduce({}, in, out.data(), a, b, c, dt);
        }
      };
    };
    EXPECT_TRUE(ThrowsError(call(1, 0, 2, x.data(), DType::Float32), ErrorCode::InvalidArgument,
                            {"TensorOps.ArgReduce", "'axis'"}));
    EXPECT_TRUE(ThrowsError(call(2, 0, 0, x.data(), DType::Float32), ErrorCode::InvalidArgument, {"'axis'"}));
    EXPECT_TRUE(ThrowsError(call(-1, 2, 2, x.data(), DType::Float32), ErrorCode::InvalidArgument,
                            {"TensorOps.ArgReduce", "'outer'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, -2, x.data(), DType::Float32), ErrorCode::InvalidArgument, {"'inner'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, nullptr, DType::Float32), ErrorCode::InvalidArgument, {"'in'"}));
    EXPECT_TRUE(ThrowsError(call(kMax / 2, 3, 1, x.data(), DType::Float32), ErrorCode::InvalidArgument,
                            {"'axis'", "int64"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, x.data(), DType::Bool), ErrorCode::UnsupportedDType,
                            {"TensorOps.ArgReduce", "'dtype'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, x.data(), DType::Complex64), ErrorCode::UnsupportedDType, {"'dtype'"}));
    EXPECT_EQ(out, std::vector<int64_t>(4, 7));
  }
  EXPECT_TRUE(ThrowsError([&] { Ref().TensorOps_ArgReduce({}, x.data(), nullptr, 1, 2, 2, DType::Float32); },
                          ErrorCode::InvalidArgument, {"'out'"}));
}

TEST(TensorOpsAxisErrors, CumSum) {
  std::vector<float> x(8, 1.0f), out(8, 7.0f);
  for (const bool fast : {false, true}) {
    auto call = [&](int64_t a, int64_t b, int64_t c, const void* in, void* o, DType dt) {
      return [=] {
        if (fast) {
          Fast().CumSum({}, in, o, a, b, c, dt);
        } else {
          Ref().TensorOps_CumSum({}, in, o, a, b, c, dt);
        }
      };
    };
    EXPECT_TRUE(ThrowsError(call(1, -1, 2, x.data(), out.data(), DType::Float32), ErrorCode::InvalidArgument,
                            {"TensorOps.CumSum", "'axis'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, x.data(), nullptr, DType::Float32), ErrorCode::InvalidArgument,
                            {"TensorOps.CumSum", "'out'"}));
    EXPECT_TRUE(ThrowsError(call(3, kMax / 2, 1, x.data(), out.data(), DType::Float32), ErrorCode::InvalidArgument,
                            {"'axis'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, x.data(), out.data(), DType::Bool), ErrorCode::UnsupportedDType,
                            {"TensorOps.CumSum", "'dtype'"}));
    EXPECT_EQ(out, std::vector<float>(8, 7.0f));
  }
  // Empty tensors need no buffers.
  EXPECT_NO_THROW(Fast().CumSum({}, nullptr, nullptr, 0, 3, 5, DType::Float32));
}

TEST(TensorOpsAxisErrors, Trilu) {
  std::vector<uint8_t> x(8, 1), out(8, 7);
  for (const bool fast : {false, true}) {
    auto call = [&](int64_t a, int64_t b, int64_t c, const void* in, DType dt) {
      return [=, &out] {
        if (fast) {
          Fast().Trilu({}, in, out.data(), a, b, c, dt);
        } else {
          Ref().TensorOps_Trilu({}, in, out.data(), a, b, c, dt);
        }
      };
    };
    EXPECT_TRUE(ThrowsError(call(1, -1, 2, x.data(), DType::Uint8), ErrorCode::InvalidArgument,
                            {"TensorOps.Trilu", "'rows'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, nullptr, DType::Uint8), ErrorCode::InvalidArgument, {"'in'"}));
    EXPECT_TRUE(ThrowsError(call(1, 2, 2, x.data(), DType::Int4), ErrorCode::UnsupportedDType,
                            {"TensorOps.Trilu", "'dtype'"}));
    EXPECT_EQ(out, std::vector<uint8_t>(8, 7));
  }
}

TEST(TensorOpsAxisErrors, GatherElementsChecksEveryIndexFirst) {
  const std::vector<float> x = {1, 2, 3};
  std::vector<float> out(4, 7.0f);
  for (const bool fast : {false, true}) {
    for (const int64_t bad : {int64_t{3}, int64_t{-4}}) {
      const std::vector<int64_t> idx = {0, -1, 2, bad};
      auto call = [&] {
        if (fast) {
          Fast().GatherElements(x.data(), idx.data(), out.data(), 1, 3, 4, 1, DType::Float32);
        } else {
          Ref().TensorOps_GatherElements(x.data(), idx.data(), out.data(), 1, 3, 4, 1, DType::Float32);
        }
      };
      EXPECT_TRUE(ThrowsError(call, ErrorCode::InvalidArgument,
                              {"TensorOps.GatherElements", "'indices'", std::to_string(bad), "[-3, 3)"}));
      EXPECT_EQ(out, std::vector<float>(4, 7.0f));
    }
  }
  const std::vector<int64_t> idx = {0, 0};
  auto gather = [&](const int64_t* indices, int64_t inAxis, DType dt) {
    return [&, indices, inAxis, dt] { Fast().GatherElements(x.data(), indices, out.data(), 1, inAxis, 2, 1, dt); };
  };
  EXPECT_TRUE(ThrowsError(gather(idx.data(), -3, DType::Float32), ErrorCode::InvalidArgument,
                          {"TensorOps.GatherElements", "'inAxis'"}));
  EXPECT_TRUE(ThrowsError(gather(nullptr, 3, DType::Float32), ErrorCode::InvalidArgument, {"'indices'"}));
  EXPECT_TRUE(ThrowsError(gather(idx.data(), 3, DType::Complex128), ErrorCode::UnsupportedDType,
                          {"TensorOps.GatherElements", "'dtype'"}));
}

}  // namespace
}  // namespace backplane
