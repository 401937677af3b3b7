// examples/transformer/block.json against a NumPy implementation of the same block
// (tests/golden/gen_transformer.py: float64 from the float32 weights).
#include <gtest/gtest.h>

#include <cmath>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/io.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane::runtime {
namespace {

TEST(TransformerExample, MatchesNumPy) {
  auto backend = cpu::CreateBackend();
  Executor ex(ir::ReadGraphFile(std::string(BACKPLANE_SOURCE_DIR) + "/examples/transformer/block.json"), *backend);
  ex.LoadParams(io::ReadSafetensors(test::GoldenPath("transformer/weights.safetensors")));
  const Tensor ids = io::ReadNpy(test::GoldenPath("transformer/ids.npy"));
  const Tensor want = io::ReadNpy(test::GoldenPath("transformer/logits.npy"));
  const Tensor got = ex.Run({{"ids", ids}}).at("logits");
  ASSERT_EQ(got.shape(), want.shape());
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    worst = std::max(worst, std::fabs(got.GetDouble(i) - want.GetDouble(i)));
    scale = std::max(scale, std::fabs(want.GetDouble(i)));
  }
  // f32 end to end through 20 ops: bounded relative to the logit scale.
  EXPECT_LE(worst, 1e-5 * std::max(1.0, scale)) << "max abs error " << worst;
}

}  // namespace
}  // namespace backplane::runtime
