// The CUDA backend. Without a GPU the build-level checks run and every GPU test skips, saying why
// in one line; on a GPU host (scripts/gpu-check.sh) the device matrix and raw-pointer calls run.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backplane/catalog/catalog.hpp"
#include "backplane/conformance.hpp"
#include "backplane/cuda/cuda_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/runtime/graph_device.hpp"

namespace backplane {
namespace {

using testing::HasSubstr;

// Empty when a GPU is visible, else the reason.
std::string NoGpuReason() {
  std::string why;
  return cuda::VisibleGpus(&why).empty() ? why : std::string();
}

#define BP_REQUIRE_GPU()                                                          \
  do {                                                                            \
    const std::string no_gpu = NoGpuReason();                                     \
    if (!no_gpu.empty()) GTEST_SKIP() << "no CUDA GPU visible: " << no_gpu;       \
  } while (0)

TEST(CudaBuild, EveryBackendMethodHasAKernel) {
  std::vector<std::string> missing;
  for (const catalog::MethodInfo& m : catalog::Methods()) {
    if (!cuda::Implements(m.id)) missing.push_back(m.QualifiedName());
  }
  EXPECT_THAT(missing, testing::IsEmpty());
  EXPECT_TRUE(runtime::BuiltGraphDevices().size() >= 2);
  EXPECT_THAT(cuda::BuiltArchitectures(), HasSubstr("90"));
}

TEST(CudaBuild, WithoutAGpuTheDeviceSaysWhy) {
  if (NoGpuReason().empty()) GTEST_SKIP() << "a GPU is visible: this checks the no-GPU message";
  try {
    (void)runtime::OpenGraphDevice("cuda");
    FAIL() << "opened a CUDA device without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceUnavailable);
    EXPECT_THAT(e.what(), HasSubstr("no CUDA GPU visible"));
  }
  EXPECT_THROW((void)cuda::CreateBackend(0), Error);
}

TEST(CudaBackend, EveryDeviceMatrixCellPassesOrFallsBack) {
  BP_REQUIRE_GPU();
  auto device = runtime::OpenGraphDevice("cuda");
  conformance::Options options;
  options.quick = true;
  const std::vector<conformance::Cell> cells = conformance::RunDeviceMatrix(*device, "cuda-test", options);
  int verified = 0;
  for (const conformance::Cell& c : cells) {
    EXPECT_NE(c.status, "failed") << c.op << " " << c.dtype << ": " << c.note;
    verified += c.status == "verified" ? 1 : 0;
  }
  EXPECT_GT(verified, 100);
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

TEST(CudaBackend, RawDevicePointersAddAndMultiply) {
  BP_REQUIRE_GPU();
  auto backend = cuda::CreateBackend(0);
  constexpr int64_t n = 100003;
  std::vector<float> a(n), b(n), sum(n), want(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i % 97) - 3.0f;
    b[i] = 0.25f * static_cast<float>(i % 13);
    want[i] = a[i] + b[i];  // exact in f32: both are multiples of 1/4 below 2^20
  }
  DeviceBuffer da(n * 4), db(n * 4), dc(n * 4);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  backend->Elementwise().Add(dc.get(), da.get(), db.get(), n, DType::Float32);
  ASSERT_EQ(cudaMemcpy(sum.data(), dc.get(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(sum, want);

  // [2, 3] x [3, 2] in f64: closed form.
  const double left[6] = {1, 2, 3, 4, 5, 6}, right[6] = {7, 8, 9, 10, 11, 12};
  const double product[4] = {58, 64, 139, 154};
  DeviceBuffer dl(48), dr(48), dp(32);
  ASSERT_EQ(cudaMemcpy(dl.get(), left, 48, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dr.get(), right, 48, cudaMemcpyHostToDevice), cudaSuccess);
  backend->Matmul().Matmul(dp.get(), dl.get(), dr.get(), 2, 3, 2, DType::Float64);
  double got[4];
  ASSERT_EQ(cudaMemcpy(got, dp.get(), 32, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], product[i]) << i;
}

TEST(CudaBackend, BadArgumentsThrowBeforeAnyLaunch) {
  BP_REQUIRE_GPU();
  auto backend = cuda::CreateBackend(0);
  DeviceBuffer d(64);
  try {
    backend->Elementwise().Add(d.get(), d.get(), d.get(), -1, DType::Float32);
    FAIL() << "count -1 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("Elementwise.Add"));
    EXPECT_THAT(e.what(), HasSubstr("count"));
  }
  EXPECT_THROW(backend->Elementwise().Add(d.get(), d.get(), d.get(), 4, DType::Int32), Error);
}

}  // namespace
}  // namespace backplane
