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
