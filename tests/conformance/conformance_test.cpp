// The conformance matrix: every fast kernel x every target this CPU runs x every accepted dtype
// matches the scalar reference within the tolerance table.
#include "backplane/conformance.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/cpu/conv_path.hpp"
#include "backplane/cpu/gemm_path.hpp"
#include "backplane/cpu/targets.hpp"
#include "backplane/error.hpp"

namespace backplane::conformance {
namespace {

// One test per runnable target, so that ctest runs targets in parallel (each test is a process).
class ConformanceOnTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(ConformanceOnTarget, EveryFastKernelMatchesTheReference) {
  Options options;
  options.quick = true;
  options.targets = {GetParam()};
  const auto cells = RunCpuMatrix(options);
  int verified = 0;
  for (const Cell& c : cells) {
    EXPECT_NE(c.status, "failed") << c.op << " " << c.target << " " << c.dtype << ": " << c.note;
    verified += c.status == "verified" ? 1 : 0;
    if (c.status == "not_run" && !c.method.empty()) {
      const auto* m = catalog::FindMethod(c.method);
      ASSERT_NE(m, nullptr);
      // A registered fast kernel must have a runner: never silently unverified.
      if (cpu::HasFastKernel(m->id) && m->dtypes.Contains(*DTypeFromName(c.dtype))) {
        ADD_FAILURE() << c.op << " has a fast kernel but was not run: " << c.note;
      }
    }
  }
  EXPECT_GT(verified, 0);
  RecordProperty("verified_cells", verified);
}

INSTANTIATE_TEST_SUITE_P(RunnableTargets, ConformanceOnTarget, ::testing::ValuesIn(cpu::RunnableTargets()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Both f32 GEMM paths (backplane/cpu/gemm_path.hpp), on every target, for A B and A B^T.
TEST(Conformance, EveryGemmPathMatchesTheReference) {
  const cpu::GemmPath saved = cpu::CurrentGemmPath();
  for (const cpu::GemmPath path : {cpu::GemmPath::Own, cpu::GemmPath::OpenBlas}) {
    cpu::SetGemmPath(path);
    for (const char* op : {"math.matmul", "projection.linear"}) {
      Options options;
      options.only_op = op;
      int verified = 0;
      for (const Cell& c : RunCpuMatrix(options)) {
        EXPECT_NE(c.status, "failed") << cpu::GemmPathName(path) << " " << c.op << " " << c.target << " " << c.dtype
                                      << ": " << c.note;
        verified += c.status == "verified" ? 1 : 0;
      }
      EXPECT_EQ(verified, 4 * static_cast<int>(cpu::RunnableTargets().size())) << cpu::GemmPathName(path) << " " << op;
    }
  }
  cpu::SetGemmPath(saved);
}

TEST(Conformance, EveryConvPathMatchesTheReference) {
  const cpu::ConvPath saved = cpu::CurrentConvPath();
  for (const cpu::ConvPath path : {cpu::ConvPath::Winograd, cpu::ConvPath::Direct}) {
    cpu::SetConvPath(path);
    Options options;
    options.only_op = "convolution.conv2d";
    int verified = 0;
    for (const Cell& c : RunCpuMatrix(options)) {
      EXPECT_NE(c.status, "failed") << cpu::ConvPathName(path) << " " << c.target << " " << c.dtype << ": " << c.note;
      verified += c.status == "verified" ? 1 : 0;
    }
    EXPECT_EQ(verified, 4 * static_cast<int>(cpu::RunnableTargets().size())) << cpu::ConvPathName(path);
  }
  cpu::SetConvPath(saved);
}

TEST(Conformance, ForcingATargetChangesDispatch) {
  const auto targets = cpu::RunnableTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& t : targets) {
    cpu::ForceTarget(t);
    EXPECT_EQ(cpu::SelectedTarget(), t);
  }
  cpu::ForceTarget("");
  EXPECT_THROW(cpu::ForceTarget("mmx"), Error);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The committed matrices are what the generator prints for the committed verification record,
// and the record covers exactly the fast kernels of this build.
TEST(MatrixDocs, AreFreshAndCoverEveryFastKernel) {
  const std::string dir = std::string(BACKPLANE_SOURCE_DIR) + "/docs/";
  ASSERT_FALSE(ReadFile(dir + "verify-cpu.json").empty()) << "docs/verify-cpu.json is missing; run `make docs`";
  const std::vector<NamedRecord> records = LoadRecords(dir);
  const Record& record = records.at(0).record;
  EXPECT_EQ(ReadFile(dir + "cpu-dispatch-matrix.md"), CpuDispatchMatrixMarkdown(records)) << "run `make docs`";
#ifdef BACKPLANE_HAVE_CUDA
  // Their CUDA column says what this build compiled: the committed ones come from a CUDA build
  // (make test, nvcc present); a build without CUDA (the sanitizer builds) cannot reproduce it.
  EXPECT_EQ(ReadFile(dir + "device-backend-matrix.md"), DeviceBackendMatrixMarkdown(records)) << "run `make docs`";
  EXPECT_EQ(ReadFile(dir + "backend-coverage.md"), BackendCoverageMarkdown(records)) << "run `make docs`";
#endif
  std::set<std::string> recorded;
  for (const Cell& c : record.cells) {
    if (c.status != "not_run") recorded.insert(c.method);
  }
  std::set<std::string> fast;
  for (const catalog::MethodInfo& m : catalog::Methods()) {
    if (cpu::HasFastKernel(m.id)) fast.insert(m.QualifiedName());
  }
  EXPECT_EQ(recorded, fast) << "the verification record is stale; run `make docs`";
}

}  // namespace
}  // namespace backplane::conformance
