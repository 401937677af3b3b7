// MathExt.MatmulTransB through the CPU Backend: torch goldens (tests/golden/gen_matmul_trans_b.py
// -> tests/golden/data/matmul_trans_b.json) for every dtype, agreement with Matmul.Matmul on the
// transposed operand, and the validation errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
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

Backend& B() {
  static const std::unique_ptr<Backend> backend = cpu::CreateBackend();
  return *backend;
}

DType DTypeOf(const std::string& name) {
  if (name == "f64") return DType::Float64;
  if (name == "f32") return DType::Float32;
  if (name == "f16") return DType::Float16;
  return DType::BFloat16;
}

TEST(MatmulTransBGolden, MatchesTorch) {
  std::ifstream file(test::GoldenPath("matmul_trans_b.json"));
  const nlohmann::json doc = nlohmann::json::parse(file);
  int runs = 0;
  for (const auto& c : doc["cases"]) {
    const DType dtype = DTypeOf(c["dtype"]);
    const int64_t rows = c["rows"], inner = c["inner"], cols = c["cols"];
    SCOPED_TRACE(fmt::format("{} {}x{}x{}", DTypeName(dtype), rows, inner, cols));
    const Buffer a = FromDoubles(dtype, c["a"].get<std::vector<double>>());
    const Buffer b = FromDoubles(dtype, c["b"].get<std::vector<double>>());
    const std::vector<double> want = c["y"].get<std::vector<double>>();
    Buffer y(dtype, static_cast<int64_t>(want.size()));
    y.Poison();
    B().MathExt().MatmulTransB(y.data(), a.data(), b.data(), rows, inner, cols, dtype);
    EXPECT_TRUE(test::AllClose(y, want, test::DefaultTolerance(dtype)));
    EXPECT_TRUE(y.GuardIntact());
    ++runs;
  }
  EXPECT_EQ(runs, 32);
}

// Bit for bit the reference's Matmul on the explicitly transposed operand (both round an f64
// dot product once).
TEST(MatmulTransBKnown, EqualsMatmulOfTheTranspose) {
  for (DType dtype : test::FloatDTypes()) {
    const int64_t rows = 7, inner = 9, cols = 5;
    const Buffer a = test::RandomBuffer(dtype, rows * inner, 1), b = test::RandomBuffer(dtype, cols * inner, 2);
    std::vector<double> bt(static_cast<size_t>(inner * cols));
    const std::vector<double> bd = b.ToDoubles();
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t k = 0; k < inner; ++k) bt[static_cast<size_t>(k * cols + j)] = bd[static_cast<size_t>(j * inner + k)];
    const Buffer btb = FromDoubles(dtype, bt);
    Buffer want(dtype, rows * cols), got(dtype, rows * cols);
    B().Matmul().Matmul(want.data(), a.data(), btb.data(), rows, inner, cols, dtype);
    B().MathExt().MatmulTransB(got.data(), a.data(), b.data(), rows, inner, cols, dtype);
    EXPECT_EQ(got.ToDoubles(), want.ToDoubles()) << DTypeName(dtype);
  }
}

TEST(MatmulTransBErrors, NameTheMethodAndArgument) {
  const Buffer a = FromDoubles(DType::Float32, {1, 2, 3, 4});
  Buffer y(DType::Float32, 4);
  EXPECT_TRUE(test::ThrowsError([&] { B().MathExt().MatmulTransB(y.data(), a.data(), a.data(), -1, 2, 2, DType::Float32); },
                                ErrorCode::InvalidArgument, {"MathExt.MatmulTransB", "rows"}));
  EXPECT_TRUE(test::ThrowsError([&] { B().MathExt().MatmulTransB(y.data(), a.data(), a.data(), 2, 2, 2, DType::Int8); },
                                ErrorCode::UnsupportedDType, {"MathExt.MatmulTransB", "dtype"}));
  EXPECT_TRUE(test::ThrowsError([&] { B().MathExt().MatmulTransB(y.data(), a.data(), nullptr, 2, 2, 2, DType::Float32); },
                                ErrorCode::InvalidArgument, {"MathExt.MatmulTransB", "right"}));
}

}  // namespace
}  // namespace backplane
