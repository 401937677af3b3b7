// Losses reference kernels against golden data (tests/golden/gen_core_math.py: torch mse_loss,
// l1_loss, huber_loss, binary_cross_entropy, cross_entropy and scipy.special.rel_entr in float64 on
// inputs rounded to each dtype, including 4099 elements and 37 x 113 logits), special values and
// every validation path. Called through the public CPU Backend.
//
// Tolerances: f64 results use DefaultTolerance(f64); f32/f16/bf16 results are f64 computations
// rounded once to f32, so they are held to DefaultTolerance(f32) and must be f32 values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using nlohmann::json;
using test::Buffer;
using test::FromDoubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using LossMethod = double (LossesSurface::*)(const void*, const void*, int64_t, DType);
struct LossOp {
  const char* name;
  LossMethod method;
  const char* predictions;  // golden arrays: regression pair (a, b) or probability pair (p, t)
  const char* targets;
};
const std::vector<LossOp> kOps = {
    {"MSE", &LossesSurface::MSE, "a", "b"},
    {"MAE", &LossesSurface::MAE, "a", "b"},
    {"Huber", &LossesSurface::Huber, "a", "b"},
    {"BinaryCrossEntropy", &LossesSurface::BinaryCrossEntropy, "p", "t"},
    {"KLDivergence", &LossesSurface::KLDivergence, "p", "t"},
};

const json& Golden() {
  static const json data = [] {
    std::ifstream in(test::GoldenPath("losses.json"));
    EXPECT_TRUE(in.good()) << "missing golden file losses.json";
    return json::parse(in);
  }();
  return data;
}

Buffer FromGolden(DType dtype, const json& values) {
  const auto v = values.get<std::vector<double>>();
  Buffer b = FromDoubles(dtype, v);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(b.Get(static_cast<int64_t>(i)), v[i])
        << "golden input not exact in " << DTypeName(dtype);
  }
  return b;
}

Tolerance ResultTolerance(DType dtype) {
  return DefaultTolerance(dtype == DType::Float64 ? DType::Float64 : DType::Float32);
}

class LossesTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = cpu::CreateBackend();
  LossesSurface& loss() { return backend_->Losses(); }

  double Run(LossMethod m, DType dtype, const std::vector<double>& p,
             const std::vector<double>& t) {
    const Buffer pb = FromDoubles(dtype, p), tb = FromDoubles(dtype, t);
    return (loss().*m)(pb.data(), tb.data(), pb.count(), dtype);
  }
  double RunCE(DType dtype, const std::vector<double>& logits, const std::vector<int32_t>& targets,
               int64_t classes) {
    const Buffer lb = FromDoubles(dtype, logits);
    return loss().CrossEntropy(lb.data(), targets.data(), static_cast<int64_t>(targets.size()),
                               classes, dtype);
  }

  void CheckResult(DType dtype, double got, double want) {
    EXPECT_TRUE(test::Close(got, want, ResultTolerance(dtype)));
    if (dtype != DType::Float64) {
      EXPECT_EQ(got, static_cast<double>(static_cast<float>(got))) << "rounded to f32";
    }
  }

  void CheckCase(DType dtype, const json& c) {
    const int64_t n = c["n"];
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " n=" + std::to_string(n));
    for (const LossOp& op : kOps) {
      SCOPED_TRACE(op.name);
      const Buffer p = FromGolden(dtype, c[op.predictions]), t = FromGolden(dtype, c[op.targets]);
      const double got = (loss().*op.method)(p.data(), t.data(), n, dtype);
      if (n == 0) {
        EXPECT_TRUE(std::isnan(got)) << "the mean over an empty set is NaN (torch)";
      } else {
        CheckResult(dtype, got, c["results"][op.name].get<double>());
      }
    }
  }

  void CheckCrossEntropy(DType dtype, const json& c) {
    const int64_t batch = c["batch"], classes = c["classes"];
    SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(batch) + "x" +
                 std::to_string(classes));
    const Buffer logits = FromGolden(dtype, c["logits"]);
    const auto targets = c["targets"].get<std::vector<int32_t>>();
    const double got = loss().CrossEntropy(logits.data(), targets.data(), batch, classes, dtype);
    if (batch == 0) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      CheckResult(dtype, got, c["result"].get<double>());
    }
  }
};

TEST_F(LossesTest, MatchesGoldenForEveryLossAndDType) {
  int cases = 0;
  for (const json& c : Golden()["cases"]) {
    CheckCase(*DTypeFromName(c["dtype"].get<std::string>()), c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 6);
}

TEST_F(LossesTest, MatchesGoldenOver4096Elements) {
  const json& large = Golden()["large"];
  ASSERT_GT(large["n"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) CheckCase(dtype, large);
}

TEST_F(LossesTest, CrossEntropyMatchesGolden) {
  int cases = 0;
  for (const json& c : Golden()["cross_entropy"]) {
    CheckCrossEntropy(*DTypeFromName(c["dtype"].get<std::string>()), c);
    ++cases;
  }
  EXPECT_EQ(cases, 4 * 7);
  const json& large = Golden()["cross_entropy_large"];
  ASSERT_GT(large["batch"].get<int>() * large["classes"].get<int>(), 4096);
  for (DType dtype : test::FloatDTypes()) CheckCrossEntropy(dtype, large);
}

// ---- Known values
// --------------------------------------------------------------------------------

TEST_F(LossesTest, EmptyInputsGiveNaN) {
  for (DType dtype : test::FloatDTypes()) {
    for (const LossOp& op : kOps) {
      EXPECT_TRUE(std::isnan((loss().*op.method)(nullptr, nullptr, 0, dtype))) << op.name;
    }
    EXPECT_TRUE(std::isnan(loss().CrossEntropy(nullptr, nullptr, 0, 5, dtype)));
    EXPECT_TRUE(std::isnan(loss().CrossEntropy(nullptr, nullptr, 0, 0, dtype)));
  }
}

TEST_F(LossesTest, RegressionLossesKnownValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // d = p - t = {0.5, -1, 2, 0}: Huber terms 0.125, 0.5 (|d| = delta), 1.5, 0.
    const std::vector<double> p = {1.5, 0.0, 3.0, -2.0}, t = {1.0, 1.0, 1.0, -2.0};
    EXPECT_EQ(Run(&LossesSurface::MSE, dtype, p, t), (0.25 + 1.0 + 4.0) / 4);
    EXPECT_EQ(Run(&LossesSurface::MAE, dtype, p, t), 3.5 / 4);
    EXPECT_EQ(Run(&LossesSurface::Huber, dtype, p, t), (0.125 + 0.5 + 1.5) / 4);
    EXPECT_EQ(Run(&LossesSurface::MSE, dtype, {kInf}, {0.0}), kInf);
    EXPECT_TRUE(std::isnan(Run(&LossesSurface::MAE, dtype, {kInf}, {kInf})));
    EXPECT_TRUE(std::isnan(Run(&LossesSurface::Huber, dtype, {kNaN, 1.0}, {0.0, 1.0})));
    EXPECT_EQ(Run(&LossesSurface::Huber, dtype, {-kInf}, {0.0}), kInf);
  }
  // Values whose squares overflow f16 are fine: the terms are computed in f64.
  EXPECT_EQ(Run(&LossesSurface::MSE, DType::Float16, {300.0}, {-300.0}), 360000.0);
}

TEST_F(LossesTest, BinaryCrossEntropyClampsEachLogTermAtMinus100LikeTorch) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    EXPECT_EQ(Run(&LossesSurface::BinaryCrossEntropy, dtype, {0.0, 1.0}, {0.0, 1.0}), 0.0);
    EXPECT_EQ(Run(&LossesSurface::BinaryCrossEntropy, dtype, {0.0}, {1.0}), 100.0);
    EXPECT_EQ(Run(&LossesSurface::BinaryCrossEntropy, dtype, {1.0}, {0.0}), 100.0);
    EXPECT_EQ(Run(&LossesSurface::BinaryCrossEntropy, dtype, {1.0}, {0.5}), 50.0);
    CheckResult(dtype, Run(&LossesSurface::BinaryCrossEntropy, dtype, {0.5}, {0.25}),
                std::log(2.0));
    EXPECT_TRUE(std::isnan(Run(&LossesSurface::BinaryCrossEntropy, dtype, {0.5}, {kNaN})));
  }
  // The reference clamped p to [1e-7, 1 - 1e-7]; torch (and we) do not: a tiny p is used as is.
  const double p = 1e-9;
  EXPECT_NEAR(Run(&LossesSurface::BinaryCrossEntropy, DType::Float64, {p}, {1.0}), -std::log(p),
              1e-12);
}

TEST_F(LossesTest, KLDivergenceKnownValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    EXPECT_EQ(Run(&LossesSurface::KLDivergence, dtype, {0.0, 0.5}, {0.0, 0.5}), 0.0)
        << "0 * ln(0 / 0) = 0 (xlogy)";
    EXPECT_EQ(Run(&LossesSurface::KLDivergence, dtype, {0.25}, {0.0}), 0.0);
    EXPECT_EQ(Run(&LossesSurface::KLDivergence, dtype, {0.0, 0.5}, {0.5, 0.5}), kInf);
    CheckResult(dtype, Run(&LossesSurface::KLDivergence, dtype, {0.25, 0.75}, {0.5, 0.5}),
                (0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75)) / 2);
    EXPECT_TRUE(std::isnan(Run(&LossesSurface::KLDivergence, dtype, {kNaN}, {0.5})));
    EXPECT_TRUE(std::isnan(Run(&LossesSurface::KLDivergence, dtype, {0.5}, {kNaN})));
    EXPECT_TRUE(std::isnan(Run(&LossesSurface::KLDivergence, dtype, {kNaN}, {0.0})));
  }
}

TEST_F(LossesTest, CrossEntropyKnownValues) {
  for (DType dtype : test::FloatDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    // Uniform logits: ln(classes).
    CheckResult(dtype, RunCE(dtype, {3.0, 3.0, 3.0, 3.0}, {2}, 4), std::log(4.0));
    // One class: the loss is 0 whatever the logit.
    EXPECT_EQ(RunCE(dtype, {7.5, -2.0}, {0, 0}, 1), 0.0);
    // Stable for large logits (exp(1000) overflows without the max shift).
    EXPECT_EQ(RunCE(dtype, {1000.0, 0.0}, {0}, 2), 0.0);
    CheckResult(dtype, RunCE(dtype, {1000.0, 0.0}, {1}, 2), 1000.0);
    // A masked (-Inf) class: 0 loss elsewhere is unaffected, and targeting it gives +Inf.
    CheckResult(dtype, RunCE(dtype, {0.0, -kInf, 0.0}, {0}, 3), std::log(2.0));
    EXPECT_EQ(RunCE(dtype, {0.0, -kInf, 0.0}, {1}, 3), kInf);
    EXPECT_TRUE(std::isnan(RunCE(dtype, {0.0, kNaN, 0.0}, {0}, 3)));
    EXPECT_TRUE(std::isnan(RunCE(dtype, {kInf, 0.0}, {1}, 2))) << "as torch.cross_entropy";
  }
}

// ---- Validation
// ----------------------------------------------------------------------------------

TEST_F(LossesTest, RejectsBadArguments) {
  const Buffer v = test::RandomBuffer(DType::Float32, 4, 9, 0.1, 0.9);
  for (const LossOp& op : kOps) {
    const std::string name = std::string("Losses.") + op.name;
    SCOPED_TRACE(name);
    auto m = op.method;
    auto call = [&](const void* p, const void* t, int64_t n, DType d) {
      return [=, this] { (loss().*m)(p, t, n, d); };
    };
    EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), -1, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'count'", "-1"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, v.data(), 4, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'predictions'"}));
    EXPECT_TRUE(test::ThrowsError(call(v.data(), nullptr, 4, DType::Float32),
                                  ErrorCode::InvalidArgument, {name, "'targets'"}));
    for (DType bad : {DType::Int8, DType::Int32, DType::Float8E4M3, DType::Invalid,
                      static_cast<DType>(kDTypeCount)}) {
      EXPECT_TRUE(test::ThrowsError(call(v.data(), v.data(), 4, bad), ErrorCode::UnsupportedDType,
                                    {name, "'dtype'"}));
      EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, 0, bad), ErrorCode::UnsupportedDType,
                                    {name, "'dtype'"}));
    }
  }
}

TEST_F(LossesTest, BinaryCrossEntropyRejectsPredictionsOutsideZeroOne) {
  for (DType dtype : test::FloatDTypes()) {
    for (double bad : {1.5, -0.25, kNaN, kInf, -kInf}) {
      EXPECT_TRUE(test::ThrowsError(
          [&] {
            Run(&LossesSurface::BinaryCrossEntropy, dtype, {0.5, bad}, {1.0, 0.0});
          },
          ErrorCode::InvalidArgument,
          {"Losses.BinaryCrossEntropy", "'predictions'", "[0, 1]", "index 1"}))
          << DTypeName(dtype) << " " << bad;
    }
  }
}

TEST_F(LossesTest, KLDivergenceRejectsNegativeEntries) {
  for (DType dtype : test::FloatDTypes()) {
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          Run(&LossesSurface::KLDivergence, dtype, {0.5, -0.25}, {0.5, 0.5});
        },
        ErrorCode::InvalidArgument, {"Losses.KLDivergence", "'predictions'", ">= 0", "index 1"}));
    EXPECT_TRUE(test::ThrowsError(
        [&] {
          Run(&LossesSurface::KLDivergence, dtype, {0.5, 0.5, 0.5}, {0.5, 0.5, -kInf});
        },
        ErrorCode::InvalidArgument, {"Losses.KLDivergence", "'targets'", ">= 0", "index 2"}));
  }
}

TEST_F(LossesTest, CrossEntropyRejectsBadArguments) {
  const std::string op = "Losses.CrossEntropy";
  const Buffer logits = test::RandomBuffer(DType::Float32, 6, 10);
  const std::vector<int32_t> ok = {0, 2};
  auto call = [&](const void* z, const int32_t* t, int64_t b, int64_t c, DType d) {
    return [=, this] { loss().CrossEntropy(z, t, b, c, d); };
  };
  const DType f = DType::Float32;
  for (int32_t bad : {3, 4, -1, -100}) {  // -100 is torch's default ignore_index: not supported
    const std::vector<int32_t> targets = {0, bad};
    EXPECT_TRUE(test::ThrowsError(call(logits.data(), targets.data(), 2, 3, f),
                                  ErrorCode::InvalidArgument,
                                  {op, "'targets'", "[0, 3)", std::to_string(bad), "index 1"}));
  }
  EXPECT_TRUE(test::ThrowsError(call(logits.data(), ok.data(), -1, 3, f),
                                ErrorCode::InvalidArgument, {op, "'batch'", "-1"}));
  EXPECT_TRUE(test::ThrowsError(call(logits.data(), ok.data(), 2, -3, f),
                                ErrorCode::InvalidArgument, {op, "'classes'", "-3"}));
  EXPECT_TRUE(test::ThrowsError(call(logits.data(), ok.data(), 2, 0, f), ErrorCode::InvalidArgument,
                                {op, "'classes'", "> 0"}));
  EXPECT_TRUE(test::ThrowsError(call(nullptr, ok.data(), 2, 3, f), ErrorCode::InvalidArgument,
                                {op, "'logits'"}));
  EXPECT_TRUE(test::ThrowsError(call(logits.data(), nullptr, 2, 3, f), ErrorCode::InvalidArgument,
                                {op, "'targets'"}));
  const int64_t huge = int64_t{1} << 62;
  EXPECT_TRUE(test::ThrowsError(call(logits.data(), ok.data(), huge, 4, f),
                                ErrorCode::InvalidArgument, {op, "'batch*classes'", "overflows"}));
  for (DType bad : {DType::Int32, DType::Int8, DType::Complex64, static_cast<DType>(kDTypeCount)}) {
    EXPECT_TRUE(test::ThrowsError(call(logits.data(), ok.data(), 2, 3, bad),
                                  ErrorCode::UnsupportedDType, {op, "'dtype'"}));
    EXPECT_TRUE(test::ThrowsError(call(nullptr, nullptr, 0, 0, bad), ErrorCode::UnsupportedDType,
                                  {op, "'dtype'"}));
  }
}

}  // namespace
}  // namespace backplane
