// The PJRT plugin: loading, version checks, compile, run, copies, and the errors of bad plugins.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "backplane/error.hpp"
#include "xla/pjrt_client.hpp"
#include "xla/stablehlo_builder.hpp"

namespace backplane::xla {
namespace {

std::shared_ptr<PjrtClient> Client() {
  static std::shared_ptr<PjrtClient> client = PjrtClient::Open(DefaultPluginPath());
  return client;
}

TEST(PjrtClient, LoadsTheCpuPluginWithOneDevice) {
  auto c = Client();
  EXPECT_EQ(c->api_major(), 0);
  EXPECT_GE(c->api_minor(), 40);
  EXPECT_EQ(c->device_count(), 1);
  EXPECT_EQ(c->platform_name(), "cpu");
}

TEST(PjrtClient, CompilesAndRunsAnAdd) {
  auto c = Client();
  Builder b;
  const Value x = b.Arg({DType::Float32, {2, 3}});
  const Value y = b.Arg({DType::Float32, {2, 3}});
  const Value s = b.Add(x, b.Mul(y, b.Splat(y.type, 2.0)));
  const Value r = b.Reduce(s, std::vector<int64_t>{1}, ReduceKind::Sum);
  const Value outs[] = {s, r};
  auto exe = c->Compile(b.Module(outs), "test module");
  Tensor hx = Tensor::FromDoubles(DType::Float32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  Tensor hy = Tensor::FromDoubles(DType::Float32, {2, 3}, std::vector<double>{0.5, 0, -1, 1, 2, 3});
  auto bx = c->Upload(hx);
  auto by = c->Upload(hy);
  auto out = exe->Execute({bx.get(), by.get()}, {{DType::Float32, {2, 3}}, {DType::Float32, {2}}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].on_host());
  EXPECT_EQ(out[0].device(), (Device{DeviceKind::Xla, 0}));
  EXPECT_THROW((void)out[0].data(), Error);
  const Tensor h = out[0].ToHost();
  EXPECT_EQ(h.ToDoubles(), (std::vector<double>{2, 2, 1, 6, 9, 12}));
  EXPECT_EQ(out[1].ToHost().ToDoubles(), (std::vector<double>{5, 27}));
}

TEST(PjrtClient, RejectedModuleIsAnErrorNotAnAbort) {
  auto c = Client();
  try {
    (void)c->Compile("module { func.func @main() { \"stablehlo.nonsense\"() : () -> () } }", "node 'bad'");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'bad'"), std::string::npos) << e.what();
  }
}

TEST(PjrtClient, MissingPluginNamesThePath) {
  try {
    (void)PjrtClient::Open("/nonexistent/plugin.so");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceUnavailable);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/plugin.so"), std::string::npos) << e.what();
  }
}

TEST(PjrtClient, NonPluginLibraryIsRefused) {
  try {
    (void)PjrtClient::Open("libm.so.6");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GetPjrtApi"), std::string::npos) << e.what();
  }
}

TEST(PjrtClient, GarbageFileIsRefused) {
  const std::string path = testing::TempDir() + "/not_a_plugin.so";
  std::ofstream(path) << "not an ELF file";
  EXPECT_THROW((void)PjrtClient::Open(path), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace backplane::xla

namespace backplane::xla {
namespace {

std::string OpenFakeError(const char* mode) {
  setenv("FAKE_PJRT_MODE", mode, 1);
  try {
    (void)PjrtClient::Open(FAKE_PJRT_PLUGIN);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceUnavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find(FAKE_PJRT_PLUGIN), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "mode " << mode << " opened";
  return "";
}

TEST(PjrtClient, IncompatibleMajorVersionIsRefused) {
  EXPECT_NE(OpenFakeError("major").find("PJRT C API 1.81 is incompatible"), std::string::npos);
}

TEST(PjrtClient, TooOldMinorVersionIsRefused) {
  EXPECT_NE(OpenFakeError("old").find("PJRT C API 0.1 is incompatible"), std::string::npos);
}

TEST(PjrtClient, TruncatedApiTableIsRefused) {
  EXPECT_NE(OpenFakeError("small").find("struct_size 64"), std::string::npos);
}

TEST(PjrtClient, ClientCreationFailureCarriesThePluginMessage) {
  EXPECT_NE(OpenFakeError("noclient").find("fake plugin: no devices can be created"), std::string::npos);
}

}  // namespace
}  // namespace backplane::xla
