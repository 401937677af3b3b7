// The run / op / train subcommands end to end, through the real binary.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "backplane/catalog/catalog.hpp"
#include "backplane/io.hpp"
#include "backplane/memory_limit.hpp"
#include "support/cli.hpp"

namespace backplane {
namespace {

using test::CommandResult;
const auto Cli = &test::RunCli;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("bp_cli_{}_{}", ::getpid(), counter_++);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& text) const { std::ofstream(Path(name)) << text; }
  std::filesystem::path dir_;
  static inline int counter_ = 0;
};

TEST_F(CliTest, DescribesEveryOperation) {
  for (const catalog::OpInfo& op : catalog::Ops()) {
    const CommandResult r = Cli("op " + op.id + " --describe");
    EXPECT_EQ(r.exit_code, 0) << op.id << ": " << r.output;
    EXPECT_NE(r.output.find("dtypes:"), std::string::npos) << op.id;
  }
  EXPECT_EQ(Cli("op no.such.op --describe").exit_code, 1);
}

TEST_F(CliTest, RunsOneOperationOnNpyFiles) {
  io::WriteNpy(Path("x.npy"), Tensor::FromDoubles(DType::Float32, {2, 3}, std::vector<double>{-2, -1, 0, 1, 2, 3}));
  const CommandResult r = Cli(fmt::format("op activation.leaky_relu --attr alpha=0.5 --in {} --out {}", Path("x.npy"), Path("y.npy")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Tensor y = io::ReadNpy(Path("y.npy"));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.ToDoubles(), (std::vector<double>{-1, -0.5, 0, 1, 2, 3}));
  // Bad attribute value: a one-line error, no output written.
  const CommandResult bad = Cli(fmt::format("op activation.leaky_relu --attr alpha=abc --in {} --out {}", Path("x.npy"), Path("z.npy")));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("alpha"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(Path("z.npy")));
  // A string attribute that is not UTF-8 (found by the attr_text fuzz replay): a named error.
  const CommandResult bytes = Cli(fmt::format("op quant.block_dequantize --attr \"format=$(printf 'Q\\276\\377')\" --in {} --out {}",
                                              Path("x.npy"), Path("z.npy")));
  EXPECT_EQ(bytes.exit_code, 1) << bytes.output;
  EXPECT_NE(bytes.output.find("argument '--attr format' must be UTF-8 text"), std::string::npos) << bytes.output;
  EXPECT_FALSE(std::filesystem::exists(Path("z.npy")));
}

TEST_F(CliTest, OptimizerStateTravelsThroughFiles) {
  io::WriteNpy(Path("p.npy"), Tensor::FromDoubles(DType::Float32, {2}, std::vector<double>{1, -1}));
  io::WriteNpy(Path("g.npy"), Tensor::FromDoubles(DType::Float32, {2}, std::vector<double>{0.5, 0.5}));
  const std::string step1 = fmt::format("op train.optimizer.sgd --attr lr=0.1 --attr momentum=0.9 --in {} --in {} --out {} --out {} --out {}",
                                        Path("p.npy"), Path("g.npy"), Path("p1.npy"), Path("b1.npy"), Path("s1.npy"));
  ASSERT_EQ(Cli(step1).exit_code, 0) << Cli(step1).output;
  const std::string step2 = fmt::format("op train.optimizer.sgd --attr lr=0.1 --attr momentum=0.9 --in {} --in {} --in {} --in {} --out {}",
                                        Path("p1.npy"), Path("g.npy"), Path("b1.npy"), Path("s1.npy"), Path("p2.npy"));
  const CommandResult r = Cli(step2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // torch.optim.SGD: b1 = g, p1 = p - lr g; b2 = 0.9 b1 + g, p2 = p1 - lr b2.
  const std::vector<double> p2 = io::ReadNpy(Path("p2.npy")).ToDoubles();
  EXPECT_NEAR(p2[0], 1 - 0.05 - 0.1 * 0.95, 1e-6);
  EXPECT_NEAR(p2[1], -1 - 0.05 - 0.1 * 0.95, 1e-6);
}

TEST_F(CliTest, RunRejectsBadInputWithoutWritingOutputs) {
  Write("bad.json", "{ not json");
  CommandResult r = Cli(fmt::format("run {}", Path("bad.json")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bad.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("malformed JSON"), std::string::npos) << r.output;

  Write("g.json", R"({"format": "backplane.graph", "version": 1,
      "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}],
      "nodes": [{"op": "activation.relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})");
  r = Cli(fmt::format("run {} --input x={} --output y={}", Path("g.json"), Path("missing.npy"), Path("y.npy")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("missing.npy"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Path("y.npy")));

  io::WriteNpy(Path("x4.npy"), Tensor(DType::Float32, {4}));
  r = Cli(fmt::format("run {} --input x={} --output y={}", Path("g.json"), Path("x4.npy"), Path("y.npy")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("input 'x'"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Path("y.npy")));

  io::WriteNpy(Path("x3.npy"), Tensor::FromDoubles(DType::Float32, {3}, std::vector<double>{-1, 0, 2}));
  r = Cli(fmt::format("run {} --input x={} --output y={}", Path("g.json"), Path("x3.npy"), Path("y.npy")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(io::ReadNpy(Path("y.npy")).ToDoubles(), (std::vector<double>{0, 0, 2}));
}

// The crafted files of issue #15: each is refused with a named error and no output is written.
std::string CraftedNpy(const std::string& shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(64, '\0');
}

TEST_F(CliTest, NpyShapeThatOverflowsIsRefused) {
  Write("x.npy", CraftedNpy("(1099511627776, 1099511627776)"));  // 2^80 elements over 64 bytes
  const CommandResult r = Cli(fmt::format("op activation.relu --in {} --out {}", Path("x.npy"), Path("y.npy")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(Path("x.npy")), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("more than 2^63 - 1 elements"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Path("y.npy")));
}

TEST_F(CliTest, NpyNegativeDimensionIsRefused) {
  Write("x.npy", CraftedNpy("(-4, -4)"));  // once read as (4, 4)
  const CommandResult r = Cli(fmt::format("op activation.relu --in {} --out {}", Path("x.npy"), Path("y.npy")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("'shape' must be a tuple of non-negative integers"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Path("y.npy")));
}

TEST_F(CliTest, GraphParamWhoseBytesOverflowIsRefused) {
  // [2^31, 2^31] f32 = 2^64 bytes: it wrapped to 0, allocated nothing and crashed filling it.
  Write("g.json", R"({"format": "backplane.graph", "version": 1,
      "params": [{"name": "w", "dtype": "f32", "shape": [2147483648, 2147483648], "init": {"kind": "ones"}}],
      "nodes": [{"op": "activation.relu", "inputs": ["w"], "outputs": ["y"]}], "outputs": ["y"]})");
  const CommandResult r = Cli(fmt::format("run {} --output y={}", Path("g.json"), Path("y.npy")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("$.params[0].shape"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("overflows 64 bits"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(Path("y.npy")));
}

TEST_F(CliTest, MaxAllocVariableBoundsARun) {
  (void)MaxAllocBytes();  // this process keeps its own ceiling; the variable is for the child
  Write("g.json", R"({"format": "backplane.graph", "version": 1,
      "params": [{"name": "w", "dtype": "f32", "shape": [1024, 1024], "init": {"kind": "ones"}}],
      "nodes": [{"op": "activation.relu", "inputs": ["w"], "outputs": ["y"]}], "outputs": ["y"]})");
  const std::string run = fmt::format("run {} --output y={}", Path("g.json"), Path("y.npy"));
  ::setenv(kMaxAllocVariable, "1M", 1);
  const CommandResult small = Cli(run);
  ::setenv(kMaxAllocVariable, "lots", 1);
  const CommandResult bad = Cli(run);
  ::setenv(kMaxAllocVariable, "64M", 1);
  const CommandResult enough = Cli(run);
  ::unsetenv(kMaxAllocVariable);
  EXPECT_EQ(small.exit_code, 1) << small.output;
  EXPECT_NE(small.output.find("parameter storage needs 4.00 MiB (4194304 bytes), more than the allocation ceiling "
                              "of 1.00 MiB (1048576 bytes) (set BACKPLANE_MAX_ALLOC to raise it)"),
            std::string::npos) << small.output;
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("BACKPLANE_MAX_ALLOC"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'lots'"), std::string::npos) << bad.output;
  EXPECT_EQ(enough.exit_code, 0) << enough.output;
  EXPECT_TRUE(std::filesystem::exists(Path("y.npy")));
}

TEST_F(CliTest, GemmPathVariableChoosesThePathOrNamesTheBadValue) {  // the default is own; openblas is chosen here
  // 64 x 64 x 64 is above the exact small-product path, so the variable is read.
  std::vector<double> values(64 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 7) - 3.0;
  io::WriteNpy(Path("a.npy"), Tensor::FromDoubles(DType::Float32, {64, 64}, values));
  const std::string op = fmt::format("op math.matmul --in {0} --in {0} --out {1}", Path("a.npy"), Path("c.npy"));
  ::setenv("BACKPLANE_GEMM", "fast", 1);
  const CommandResult bad = Cli(op);
  ::setenv("BACKPLANE_GEMM", "openblas", 1);
  const CommandResult chosen = Cli(op);
  ::unsetenv("BACKPLANE_GEMM");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("BACKPLANE_GEMM"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'openblas' or 'own'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'fast'"), std::string::npos) << bad.output;
  ASSERT_EQ(chosen.exit_code, 0) << chosen.output;
  const Tensor c = io::ReadNpy(Path("c.npy"));
  // Small integers: every product and sum is exact in f32, whatever the order.
  double want = 0;
  for (int k = 0; k < 64; ++k) want += values[static_cast<size_t>(5 * 64 + k)] * values[static_cast<size_t>(k * 64 + 9)];
  EXPECT_EQ(c.GetDouble(5 * 64 + 9), want);
}

TEST_F(CliTest, ConvPathVariableNamesTheBadValue) {
  const std::vector<double> values = {1, 2, 3, 4};
  io::WriteNpy(Path("a.npy"), Tensor::FromDoubles(DType::Float32, {2, 2}, values));
  const std::string op = fmt::format("op math.matmul --in {0} --in {0} --out {1}", Path("a.npy"), Path("c.npy"));
  ::setenv("BACKPLANE_CONV", "fast", 1);
  const CommandResult bad = Cli(op);
  ::setenv("BACKPLANE_CONV", "direct", 1);
  const CommandResult chosen = Cli(op);
  ::unsetenv("BACKPLANE_CONV");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("BACKPLANE_CONV"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'winograd' or 'direct'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'fast'"), std::string::npos) << bad.output;
  EXPECT_EQ(chosen.exit_code, 0) << chosen.output;
}

TEST_F(CliTest, TrainsTheDigitsGraphOnASmallSet) {
  // 64 samples of two separable classes; a few epochs must drive the loss down.
  Tensor x(DType::Float32, {64, 64});
  Tensor y(DType::Int32, {64});
  for (int64_t i = 0; i < 64; ++i) {
    y.SetDouble(i, i % 2);
    for (int64_t k = 0; k < 64; ++k) x.SetDouble(i * 64 + k, (k < 32) == (i % 2 == 0) ? 1.0 : 0.0);
  }
  io::WriteNpy(Path("x.npy"), x);
  io::WriteNpy(Path("y.npy"), y);
  const CommandResult r = Cli(fmt::format("train {}/examples/digits/train.json --data x={} --data y={} --epochs 5 --batch-size 16",
                                          BACKPLANE_SOURCE_DIR, Path("x.npy"), Path("y.npy")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t first = r.output.find("train loss ");
  const size_t last = r.output.rfind("train loss ");
  ASSERT_NE(first, std::string::npos) << r.output;
  const double first_loss = std::stod(r.output.substr(first + 11));
  const double last_loss = std::stod(r.output.substr(last + 11));
  EXPECT_LT(last_loss, 0.2 * first_loss) << r.output;
}

}  // namespace
}  // namespace backplane
