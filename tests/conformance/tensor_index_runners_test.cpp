// The TensorOps index runners (src/conformance/runners_tensor_index.cpp) with the reference as both
// kernels: ScatterElements, ScatterND and GatherND are scalar by design, so the matrix never runs
// their runners; this keeps them working (every invalid call they expect to fail must fail, every
// valid case must agree) for the day a fast kernel arrives. TopK also runs in the matrix.
#include <gtest/gtest.h>

#include <string>

#include "backplane/conformance.hpp"
#include "conformance/runner.hpp"
#include "cpu/reference/reference.hpp"

namespace backplane::conformance {
namespace {

TEST(TensorIndexRunners, PassWithTheReferenceAsTheFastKernel) {
  RunnerRegistry registry;
  RegisterTensorIndexRunners(registry);
  const cpu::KernelTable& ref = cpu::ref::Table();
  const std::map<std::string, ErasedKernel> kernels = {
      {"TopK", reinterpret_cast<ErasedKernel>(ref.TensorOps_TopK)},
      {"ScatterElements", reinterpret_cast<ErasedKernel>(ref.TensorOps_ScatterElements)},
      {"ScatterND", reinterpret_cast<ErasedKernel>(ref.TensorOps_ScatterND)},
      {"GatherND", reinterpret_cast<ErasedKernel>(ref.TensorOps_GatherND)}};
  ASSERT_EQ(registry.size(), kernels.size());
  for (const auto& [family, kernel] : kernels) {
    ASSERT_NE(kernel, nullptr) << family;
    for (const DType dt : {DType::Float32, DType::Float16, DType::Int64, DType::Uint8}) {
      const RunContext c{"TensorOps." + family, dt, ConformanceSizes(true), 0x5EEDull};
      const Measure m = registry.at(family)(kernel, kernel, c);
      EXPECT_TRUE(m.ok) << family << " " << DTypeName(dt) << ": " << m.note;
    }
  }
}

}  // namespace
}  // namespace backplane::conformance
