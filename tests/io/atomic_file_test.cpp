// Atomic writes: a file is replaced whole or not at all, also when the writer is killed by
// SIGTERM or SIGINT mid-write (the previous file stays intact, the temporary file is removed).
#include "backplane/atomic_file.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "support/test_support.hpp"

namespace backplane::io {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("bp_atomic_{}_{}", ::getpid(), counter_++);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // Names in the folder that look like temporary files.
  std::vector<std::string> Temps() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
    }
    return out;
  }
  // Polls until a temporary file shows up (a write in progress); false after 20 s.
  bool WaitForTemp() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Temps().empty()) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
  }
  // A child rewrites a 64 MiB file in a loop (generation k: a header line, then 64 MiB of one
  // letter) until the parent kills it mid-write. The file must be the previous version or a
  // complete new one, never a mix; no temporary file may remain.
  void KillMidWrite(int sig) {
    const std::string path = Path("big.bin");
    const std::string previous = "previous version\n";
    WriteFileAtomically(path, {previous});
    constexpr size_t kBytes = size_t{64} << 20;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      RemoveTempFilesOnSignal();
      for (int k = 0;; ++k) {
        const std::string fill(kBytes, static_cast<char>('a' + k % 26));
        WriteFileAtomically(path, {fmt::format("generation {}\n", k), fill});
      }
    }
    const bool seen = WaitForTemp();
    ::kill(child, sig);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(seen) << "the child never started writing";
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
    const std::string now = Read(path);
    if (now != previous) {
      const size_t eol = now.find('\n');
      ASSERT_NE(eol, std::string::npos);
      const int k = std::stoi(now.substr(11, eol - 11));
      EXPECT_EQ(now.size(), eol + 1 + kBytes) << "a partial file under the final name";
      EXPECT_EQ(now.find_first_not_of(static_cast<char>('a' + k % 26), eol + 1), std::string::npos);
    }
    EXPECT_TRUE(Temps().empty()) << Temps().front();
  }
  fs::path dir_;
  static inline int counter_ = 0;
};

TEST_F(AtomicFileTest, WritesAndReplacesWithoutLeftovers) {
  WriteFileAtomically(Path("a.txt"), {"one ", "two"});
  EXPECT_EQ(Read(Path("a.txt")), "one two");
  WriteFileAtomically(Path("a.txt"), {"three"});
  EXPECT_EQ(Read(Path("a.txt")), "three");
  WriteFileAtomically(Path("empty.txt"), {});
  EXPECT_EQ(Read(Path("empty.txt")), "");
  EXPECT_TRUE(Temps().empty());
}

TEST_F(AtomicFileTest, FailuresNameThePathAndLeaveNoTemp) {
  const std::string missing = Path("no/such/folder/a.txt");
  EXPECT_TRUE(test::ThrowsError([&] { WriteFileAtomically(missing, {"x"}); }, ErrorCode::InvalidArgument,
                                {missing, "cannot create"}));
  // A folder in the way: the rename fails, the temporary file is removed.
  fs::create_directories(Path("taken"));
  EXPECT_TRUE(test::ThrowsError([&] { WriteFileAtomically(Path("taken"), {"x"}); }, ErrorCode::InvalidArgument,
                                {Path("taken"), "cannot move the finished file into place"}));
  EXPECT_TRUE(Temps().empty());
}

TEST_F(AtomicFileTest, SigtermMidWriteKeepsAWholeFileAndRemovesTheTemp) { KillMidWrite(SIGTERM); }

TEST_F(AtomicFileTest, SigintMidWriteKeepsAWholeFileAndRemovesTheTemp) { KillMidWrite(SIGINT); }

// The CLI end to end: `backplane run --save-params` over an existing file, killed while it
// writes 128 MiB of parameters; the previous parameters stay readable and unchanged.
TEST_F(AtomicFileTest, CliKilledWhileSavingParamsKeepsThePreviousFile) {
  const std::string graph = Path("g.json");
  std::ofstream(graph) << R"({"format": "backplane.graph", "version": 1,
      "params": [{"name": "w", "dtype": "f32", "shape": [4096, 8192], "init": {"kind": "zeros"}}],
      "nodes": [{"op": "activation.relu", "inputs": ["w"], "outputs": ["y"]}], "outputs": ["y"]})";
  const std::string params = Path("params.safetensors");
  WriteSafetensors(params, {{"w", Tensor::FromDoubles(DType::Float32, {2}, std::vector<double>{1, 2})}});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execl(BACKPLANE_CLI, BACKPLANE_CLI, "run", graph.c_str(), "--quiet", "--save-params", params.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const bool seen = WaitForTemp();
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(seen) << "the CLI never started writing (status " << status << ")";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  const auto back = ReadSafetensors(params);
  ASSERT_EQ(back.count("w"), 1u);
  if (back.at("w").numel() == 2) {
    EXPECT_EQ(back.at("w").ToDoubles(), (std::vector<double>{1, 2}));
  } else {
    EXPECT_EQ(back.at("w").shape(), (Shape{4096, 8192}));  // the rename won the race: whole new file
  }
  EXPECT_TRUE(Temps().empty()) << Temps().front();
}

}  // namespace
}  // namespace backplane::io
