// The elementwise loss gradients (MAEGrad, HuberGrad, BinaryCrossEntropyGrad, KLDivergenceGrad)
// against torch.autograd in f64 (tests/golden/gen_loss_grads.py), against closed forms at their
// edges, and their validation. Run on the reference and on the CPU (Highway) backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/golden.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

using test::Buffer;
using test::FromDoubles;
using Method = void (GradientsSurface::*)(BP_PARAMS_MSEGrad);

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Method MethodOf(const std::string& name) {
  if (name == "MAEGrad") return &GradientsSurface::MAEGrad;
  if (name == "HuberGrad") return &GradientsSurface::HuberGrad;
  if (name == "BinaryCrossEntropyGrad") return &GradientsSurface::BinaryCrossEntropyGrad;
  return &GradientsSurface::KLDivergenceGrad;
}

std::vector<std::unique_ptr<Backend>> Backends() {
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(cpu::CreateReferenceBackend());
  b.push_back(cpu::CreateBackend());
  return b;
}

std::vector<double> RunGrad(Backend& b, const std::string& method, const std::vector<double>& p,
                        const std::vector<double>& t, DType dtype) {
  const Buffer pb = FromDoubles(dtype, p), tb = FromDoubles(dtype, t);
  Buffer g(dtype, static_cast<int64_t>(p.size()));
  (b.Gradients().*MethodOf(method))(pb.data(), tb.data(), g.data(), pb.count(), dtype);
  return g.ToDoubles();
}

// f64: within 4 ulp of torch (the CPU kernel multiplies by 1/n where torch and the reference divide).
TEST(LossGrads, MatchTorchAutogradInFloat64) {
  const auto golden = test::LoadGolden("loss_grads.json");
  ASSERT_EQ(golden.at("cases").size(), 4u);
  for (auto& backend : Backends()) {
    for (const auto& c : golden.at("cases")) {
      const std::string method = c.at("method");
      SCOPED_TRACE(method);
      const auto p = c.at("p").get<std::vector<double>>(), t = c.at("t").get<std::vector<double>>();
      const auto want = c.at("grad").get<std::vector<double>>();
      const auto got = RunGrad(*backend, method, p, t, DType::Float64);
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-15 * std::abs(want[i])) << "index " << i;
      }
    }
  }
}

// Closed forms at the edges, n = 4 (so 1/n = 0.25), in every float dtype.
TEST(LossGrads, EdgesAndSpecials) {
  for (auto& backend : Backends()) {
    for (DType dt : test::FloatDTypes()) {
      SCOPED_TRACE(std::string(DTypeName(dt)));
      auto expect = [&](const std::string& m, std::vector<double> p, std::vector<double> t, std::vector<double> want) {
        const auto got = RunGrad(*backend, m, p, t, dt);
        for (size_t i = 0; i < want.size(); ++i) {
          if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << m << " index " << i;
          } else {
            EXPECT_EQ(got[i], want[i]) << m << " index " << i;
          }
        }
      };
      expect("MAEGrad", {1, 1, 0, kNaN}, {1, 0, 1, 0}, {0, 0.25, -0.25, kNaN});
      expect("HuberGrad", {3, 0.5, -3, kNaN}, {0, 0, 0, 0}, {0.25, 0.125, -0.25, kNaN});
      // p = 0 or 1: torch's EPSILON 1e-12 bounds the denominator.
      expect("BinaryCrossEntropyGrad", {0.5, 0.5, 0, 1}, {1, 0.5, 0, 1}, {-0.5, 0, 0, 0});
      expect("KLDivergenceGrad", {0.5, 0, 0.25, kNaN}, {0.5, 0, 0.5, 0}, {-0.25, 0, -0.5, kNaN});
      expect("KLDivergenceGrad", {0, 1, 1, 1}, {0.5, 0, 0, 0}, {-kInf, 0, 0, 0});
    }
  }
}

TEST(LossGrads, RejectBadInput) {
  for (auto& backend : Backends()) {
    Buffer g(DType::Float32, 2);
    auto call = [&](const std::string& m, std::vector<double> p, std::vector<double> t) {
      const Buffer pb = FromDoubles(DType::Float32, p), tb = FromDoubles(DType::Float32, t);
      (backend->Gradients().*MethodOf(m))(pb.data(), tb.data(), g.data(), 2, DType::Float32);
    };
    EXPECT_THROW(call("BinaryCrossEntropyGrad", {0.5, 1.5}, {0, 0}), Error);
    EXPECT_THROW(call("BinaryCrossEntropyGrad", {kNaN, 0.5}, {0, 0}), Error);
    EXPECT_THROW(call("KLDivergenceGrad", {0.5, -0.5}, {0, 0}), Error);
    EXPECT_THROW(call("KLDivergenceGrad", {0.5, 0.5}, {0, -1}), Error);
    EXPECT_THROW(backend->Gradients().MAEGrad(nullptr, nullptr, g.data(), 2, DType::Float32), Error);
    EXPECT_THROW(backend->Gradients().HuberGrad(g.data(), g.data(), g.data(), 2, DType::Int32), Error);
  }
}

}  // namespace
}  // namespace backplane
