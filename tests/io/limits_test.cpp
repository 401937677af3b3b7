// Resource limits: overflow-checked sizes, the allocation ceiling (BACKPLANE_MAX_ALLOC) and sizes
// read from crafted files checked against the file's length before anything is allocated.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/ir/graph.hpp"
#include "backplane/memory_limit.hpp"
#include "backplane/runtime/executor.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Sets the ceiling for one test and restores the default afterwards.
class Ceiling {
 public:
  explicit Ceiling(uint64_t bytes) { SetMaxAllocBytes(bytes); }
  ~Ceiling() { SetMaxAllocBytes(0); }
};

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("bp_limits_{}_{}", ::getpid(), name)).string();
}

std::string WriteBytes(const std::string& name, const std::string& bytes) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

// A version 1.0 .npy file with this header dictionary (padded as NumPy pads) and data.
std::string NpyBytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string NpyWithShape(const std::string& shape, const std::string& data) {
  return NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", data);
}

// A .safetensors file with this JSON header and data section.
std::string SafetensorsBytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  return out + header + data;
}

TEST(MemoryLimit, ParsesByteSizes) {
  EXPECT_EQ(ParseByteSize("1024", "x"), 1024u);
  EXPECT_EQ(ParseByteSize("8G", "x"), uint64_t{8} << 30);
  EXPECT_EQ(ParseByteSize("512M", "x"), uint64_t{512} << 20);
  EXPECT_EQ(ParseByteSize("512m", "x"), uint64_t{512} << 20);
  EXPECT_EQ(ParseByteSize("4KiB", "x"), 4096u);
  EXPECT_EQ(ParseByteSize("2T", "x"), uint64_t{2} << 40);
  EXPECT_EQ(ParseByteSize("1.5G", "x"), uint64_t{3} << 29);
  for (const char* bad : {"", "G", "-1", "1.2.3", "12Q", "8GG", "99999999999999999999", "20000000000T"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(test::ThrowsError([&] { ParseByteSize(bad, kMaxAllocVariable); }, ErrorCode::InvalidArgument,
                                  {kMaxAllocVariable}));
  }
}

TEST(MemoryLimit, DefaultIsAtMost64GiB) {
  EXPECT_GT(DefaultMaxAllocBytes(), 0u);
  EXPECT_LE(DefaultMaxAllocBytes(), uint64_t{64} << 30);
  const Ceiling c(12345);
  EXPECT_EQ(MaxAllocBytes(), 12345u);
}

TEST(MemoryLimit, ElementAndByteCountsNeverWrap) {
  // 2^40 x 2^40 wraps a 64-bit product to 0; it must be refused, naming the shape.
  const Shape huge{int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_TRUE(test::ThrowsError([&] { NumElements(huge); }, ErrorCode::InvalidArgument,
                                {"[1099511627776, 1099511627776]", "2^63"}));
  // A zero dimension makes the count 0 whatever the others are.
  EXPECT_EQ(NumElements(Shape{int64_t{1} << 40, int64_t{1} << 40, 0}), 0);
  EXPECT_TRUE(test::ThrowsError([&] { NumElements(Shape{2, -3}); }, ErrorCode::InvalidArgument, {"shape[1]"}));
  // 2^62 f32 elements: 2^64 bytes, one past size_t.
  EXPECT_TRUE(test::ThrowsError([&] { DTypeStorageBytes(DType::Float32, int64_t{1} << 62); },
                                ErrorCode::InvalidArgument, {"f32", "overflows"}));
  EXPECT_EQ(DTypeStorageBytes(DType::Float32, int64_t{1} << 40), uint64_t{1} << 42);
  EXPECT_TRUE(test::ThrowsError([&] { Tensor(DType::Float32, Shape{int64_t{1} << 31, int64_t{1} << 31}); },
                                ErrorCode::InvalidArgument, {"f32"}));
}

TEST(MemoryLimit, TensorAboveTheCeilingIsRefused) {
  const Ceiling c(kMiB);
  EXPECT_NO_THROW(Tensor(DType::Float32, {256, 1024}));  // exactly 1 MiB
  EXPECT_TRUE(test::ThrowsError([&] { Tensor(DType::Float32, {256, 1025}); }, ErrorCode::OutOfMemory,
                                {"f32[256, 1025]", "1049600 bytes", "1048576 bytes", kMaxAllocVariable}));
}

// ---- .npy ---------------------------------------------------------------------------------------

TEST(NpyLimits, AcceptsEveryTupleSpellingNumpyWrites) {
  const std::string data(24, '\0');
  for (const char* shape : {"(6,)", "(2, 3)", "(2,3)", "( 2 , 3 , )", "(1, 2, 3)"}) {
    SCOPED_TRACE(shape);
    const std::string path = WriteBytes("ok.npy", NpyWithShape(shape, data));
    EXPECT_EQ(NumElements(io::ReadNpy(path).shape()), 6);
    std::filesystem::remove(path);
  }
  const std::string path = WriteBytes("scalar.npy", NpyWithShape("()", std::string(4, '\0')));
  EXPECT_EQ(io::ReadNpy(path).rank(), 0);
  std::filesystem::remove(path);
}

TEST(NpyLimits, RefusesHostileShapes) {
  const std::string data(64, '\0');
  struct Case {
    const char* shape;
    const char* fragment;
  };
  const Case cases[] = {
      {"(1099511627776, 1099511627776)", "more than 2^63 - 1 elements"},  // the issue's case: wraps to 0
      {"(-4, -4)", "'-'"},                                                  // the issue's case: sign dropped
      {"(4, -4)", "'-'"},
      {"(2.5,)", "'.'"},
      {"(1e3,)", "'e'"},
      {"(0x10,)", "'x'"},
      {"(99999999999999999999,)", "INT64_MAX"},
      {"(4)", "trailing comma"},
      {"(4,,)", "','"},
      {"(,)", "','"},
      {"(4 4)", "'4'"},
      {"(4, 'a')", "'''"},
      {"(16, 16)", "truncated .npy data: 1024 bytes"},  // fits int64 but not the file
      {"(4611686018427387904,)", "overflows"},         // 2^62 f32 elements: 2^64 bytes
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape);
    const std::string path = WriteBytes("bad.npy", NpyWithShape(c.shape, data));
    EXPECT_TRUE(test::ThrowsError([&] { io::ReadNpy(path); }, ErrorCode::InvalidArgument, {path, c.fragment}));
    std::filesystem::remove(path);
  }
}

TEST(NpyLimits, ScansHeaderValuesWithoutRecursion) {
  // A 60000-character dtype string (std::regex, used before, recursed once per character).
  const std::string long_descr = WriteBytes(
      "long.npy", NpyBytes("{'descr': '" + std::string(60000, 'x') + "', 'fortran_order': False, 'shape': (1,), }", ""));
  EXPECT_TRUE(test::ThrowsError([&] { io::ReadNpy(long_descr); }, ErrorCode::InvalidArgument,
                                {long_descr, "unsupported .npy dtype 'xxxx"}));
  std::filesystem::remove(long_descr);
  const std::string no_shape = WriteBytes("noshape.npy", NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape' 4}", ""));
  EXPECT_TRUE(test::ThrowsError([&] { io::ReadNpy(no_shape); }, ErrorCode::InvalidArgument,
                                {no_shape, "npy header lacks 'shape'"}));
  std::filesystem::remove(no_shape);
  // Double quotes and spacing as other writers emit them.
  const std::string spaced = WriteBytes(
      "spaced.npy", NpyBytes("{\"descr\" : \"<f4\", \"fortran_order\" :  False, \"shape\":(2,)}", std::string(8, '\0')));
  EXPECT_EQ(io::ReadNpy(spaced).shape(), (Shape{2}));
  std::filesystem::remove(spaced);
}

TEST(NpyLimits, FileLargerThanTheCeilingIsNotRead) {
  const std::string path = WriteBytes("big.npy", NpyWithShape("(1024,)", std::string(4096, '\0')));
  const Ceiling c(1024);
  EXPECT_TRUE(test::ThrowsError([&] { io::ReadNpy(path); }, ErrorCode::OutOfMemory, {path, kMaxAllocVariable}));
  std::filesystem::remove(path);
}

// ---- .safetensors -------------------------------------------------------------------------------

TEST(SafetensorsLimits, RefusesHostileHeaders) {
  struct Case {
    std::string header;
    const char* fragment;
  };
  const Case cases[] = {
      {R"({"t": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", "integers in [0, 2^63)"},
      {R"({"t": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 16]}})", "integers in [0, 2^63)"},
      {R"({"t": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})", "must be a list"},
      {R"({"t": {"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 16]}})", "[0, 2^63)"},
      {R"({"t": {"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 16]}})",
       "more than 2^63 - 1 elements"},
      {R"({"t": {"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 16]}})", "overflows"},
      {R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": ["0", "16"]}})", "two non-negative integers"},
      {R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [-16, 0]}})", "two non-negative integers"},
      {R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0]}})", "two non-negative integers"},
      {R"({"t": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})", "truncated data"},
      {R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}})", "do not match 16 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header);
    const std::string path = WriteBytes("bad.safetensors", SafetensorsBytes(c.header, std::string(16, '\0')));
    EXPECT_TRUE(test::ThrowsError([&] { io::ReadSafetensors(path); }, ErrorCode::InvalidArgument,
                                  {path, "tensor 't'", c.fragment}));
    std::filesystem::remove(path);
  }
  {  // A number beyond a double's range (found by fuzz_safetensors).
    const std::string path = WriteBytes("huge.safetensors", SafetensorsBytes(R"({"t": 1e999})", ""));
    EXPECT_TRUE(test::ThrowsError([&] { io::ReadSafetensors(path); }, ErrorCode::InvalidArgument,
                                  {path, "malformed .safetensors header", "number overflow"}));
    std::filesystem::remove(path);
  }
  // A header length beyond the file.
  std::string bytes = SafetensorsBytes("{}", "");
  const uint64_t len = uint64_t{1} << 60;
  std::memcpy(bytes.data(), &len, 8);
  const std::string path = WriteBytes("len.safetensors", bytes);
  EXPECT_TRUE(test::ThrowsError([&] { io::ReadSafetensors(path); }, ErrorCode::InvalidArgument,
                                {path, "1152921504606846976 bytes announced"}));
  std::filesystem::remove(path);
}

TEST(SafetensorsLimits, FileLargerThanTheCeilingIsNotRead) {
  const std::string path = WriteBytes(
      "big.safetensors",
      SafetensorsBytes(R"({"t": {"dtype": "U8", "shape": [4096], "data_offsets": [0, 4096]}})", std::string(4096, '\0')));
  {
    const Ceiling c(1024);
    EXPECT_TRUE(test::ThrowsError([&] { io::ReadSafetensors(path); }, ErrorCode::OutOfMemory, {path}));
  }
  EXPECT_EQ(io::ReadSafetensors(path).at("t").numel(), 4096);
  std::filesystem::remove(path);
}

// ---- graph JSON and the planner -----------------------------------------------------------------

std::string ParamGraph(const std::string& shape, const std::string& dtype = "f32") {
  return fmt::format(R"({{"format": "backplane.graph", "version": 1,
      "params": [{{"name": "w", "dtype": "{}", "shape": {}, "init": {{"kind": "ones"}}}}],
      "nodes": [{{"op": "activation.relu", "inputs": ["w"], "outputs": ["y"]}}], "outputs": ["y"]}})",
                     dtype, shape);
}

TEST(GraphLimits, ParamShapesWhoseSizeOverflowsAreRefusedByTheParser) {
  // The issue's case: [2^31, 2^31] f32 is 2^64 bytes, which wrapped to 0 and crashed the run.
  EXPECT_TRUE(test::ThrowsError([&] { ir::ParseGraph(ParamGraph("[2147483648, 2147483648]"), "g.json"); },
                                ErrorCode::InvalidArgument, {"g.json", "$.params[0].shape", "overflows"}));
  EXPECT_TRUE(test::ThrowsError(
      [&] { ir::ParseGraph(ParamGraph("[1099511627776, 1099511627776, 1099511627776]"), "g.json"); },
      ErrorCode::InvalidArgument, {"$.params[0].shape", "2^63 - 1 elements"}));
  EXPECT_NO_THROW(ir::ParseGraph(ParamGraph("[1099511627776, 1099511627776, 0]"), "g.json"));
}

TEST(GraphLimits, ParametersAboveTheCeilingAreRefusedBeforeAllocating) {
  auto backend = cpu::CreateBackend();
  // 2^20 x 2^20 f32: 4 TiB, below the overflow bound, far above any default ceiling.
  ir::Graph g = ir::ParseGraph(ParamGraph("[1048576, 1048576]"), "g.json");
  EXPECT_TRUE(test::ThrowsError([&] { runtime::Executor(g, *backend); }, ErrorCode::OutOfMemory,
                                {"parameter storage", "4.00 TiB", kMaxAllocVariable}));
}

TEST(GraphLimits, PlannerRefusesAPeakAboveTheCeiling) {
  // x -> relu -> a -> relu -> b -> relu -> c: a and b are alive together, c reuses a's buffer,
  // so the plan needs two 256 KiB buffers plus the 4 KiB parameter.
  const std::string text = R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": [256, 256]}],
      "params": [{"name": "w", "dtype": "f32", "shape": [1024], "init": {"kind": "zeros"}}],
      "nodes": [{"op": "activation.relu", "inputs": ["x"], "outputs": ["a"]},
                {"op": "activation.relu", "inputs": ["a"], "outputs": ["b"]},
                {"op": "activation.relu", "inputs": ["b"], "outputs": ["c"]}],
      "outputs": ["c"]})";
  auto backend = cpu::CreateBackend();
  const Tensor x(DType::Float32, {256, 256});
  const uint64_t expected = 4096 + 2 * 262144;
  {
    runtime::Executor e(ir::ParseGraph(text, "g.json"), *backend);
    e.Run({{"x", x}});
    EXPECT_EQ(e.planned_peak_bytes(), expected);
    EXPECT_EQ(e.planned_buffers(), 2);  // the executor's own count agrees
  }
  const Ceiling c(expected - 1);
  runtime::Executor e(ir::ParseGraph(text, "g.json"), *backend);
  EXPECT_TRUE(test::ThrowsError([&] { e.Run({{"x", x}}); }, ErrorCode::OutOfMemory,
                                {"planned peak", "528384 bytes", "528383 bytes", kMaxAllocVariable}));
  // Still refused on a second try (a refused plan is not kept).
  EXPECT_TRUE(test::ThrowsError([&] { e.Run({{"x", x}}); }, ErrorCode::OutOfMemory, {"planned peak"}));
}

}  // namespace
}  // namespace backplane
