// The llama.cpp peer: parsing of a real llama-bench JSON report (captured from the build of
// bench/llama_cpp/build.sh), rejection of malformed reports, and the subprocess runner against
// stand-in llama-bench scripts (argv passed verbatim, failures reported, missing binary named).
#include "backplane/llama_cpp_peer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.hpp"

namespace backplane::bench {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string SamplePath() { return test::GoldenPath("llama_cpp/llama_bench_sample.json"); }

nlohmann::json Sample() { return nlohmann::json::parse(ReadText(SamplePath())); }

// Expected values read from the sample with Python's json module. The sample is the stdout of
// `llama-bench -m SmolLM2-135M-Instruct.Q4_1.gguf -t 2 -p 128 -n 64 -r 3 -o json` (the build of
// bench/llama_cpp/build.sh) on a 2-core machine shared with other builds (noisy rates).
TEST(LlamaBenchJson, ParsesTheCapturedReport) {
  const LlamaCppResult r = ParseLlamaBenchJson(ReadText(SamplePath()));
  EXPECT_EQ(r.buildCommit, "0c1e570");
  EXPECT_EQ(r.buildNumber, 0);
  EXPECT_EQ(r.backends, "CPU");
  EXPECT_EQ(r.modelType, "llama 256M Q4_1");
  ASSERT_EQ(r.tests.size(), 2u);
  ASSERT_TRUE(r.prompt.has_value());
  ASSERT_TRUE(r.generation.has_value());
  EXPECT_EQ(r.prompt->nPrompt, 128);
  EXPECT_EQ(r.prompt->nGen, 0);
  EXPECT_EQ(r.prompt->nThreads, 2);
  EXPECT_EQ(r.prompt->repetitions, 3);
  EXPECT_DOUBLE_EQ(r.prompt->tokensPerSecond, 129.06243);
  EXPECT_DOUBLE_EQ(r.prompt->tokensPerSecondStddev, 43.763666);
  EXPECT_EQ(r.generation->nPrompt, 0);
  EXPECT_EQ(r.generation->nGen, 64);
  EXPECT_EQ(r.generation->nThreads, 2);
  EXPECT_EQ(r.generation->repetitions, 3);
  EXPECT_DOUBLE_EQ(r.generation->tokensPerSecond, 77.465095);
  EXPECT_DOUBLE_EQ(r.generation->tokensPerSecondStddev, 6.30402);
}

TEST(LlamaBenchJson, PromptAndGenerationTakenByKindNotOrder) {
  nlohmann::json doc = Sample();
  std::swap(doc[0], doc[1]);
  const LlamaCppResult r = ParseLlamaBenchJson(doc.dump());
  ASSERT_TRUE(r.prompt && r.generation);
  EXPECT_EQ(r.prompt->nPrompt, 128);
  EXPECT_EQ(r.generation->nGen, 64);
  EXPECT_EQ(r.tests[0].nGen, 64);
}

TEST(LlamaBenchJson, TestAtDepthIsNeitherPromptNorGeneration) {
  nlohmann::json doc = Sample();
  doc[0]["n_depth"] = 512;
  const LlamaCppResult r = ParseLlamaBenchJson(doc.dump());
  EXPECT_FALSE(r.prompt.has_value());
  EXPECT_TRUE(r.generation.has_value());
  EXPECT_EQ(r.tests.size(), 2u);
}

::testing::AssertionResult Rejects(const nlohmann::json& doc,
                                   std::initializer_list<std::string> fragments) {
  return test::ThrowsError([&] { ParseLlamaBenchJson(doc.dump()); }, ErrorCode::InvalidArgument,
                           fragments);
}

TEST(LlamaBenchJson, RejectsMalformedReports) {
  EXPECT_TRUE(test::ThrowsError([] { ParseLlamaBenchJson("[{\"n_prompt\": 1,"); },
                                ErrorCode::InvalidArgument, {"llama-bench JSON", "valid JSON"}));
  EXPECT_TRUE(Rejects(nlohmann::json::array(), {"document", "empty array"}));
  EXPECT_TRUE(Rejects(nlohmann::json::object(), {"document", "object"}));
  EXPECT_TRUE(Rejects(nlohmann::json::array({1}), {"[0]", "an object"}));

  auto mutated = [](auto&& change) {
    nlohmann::json doc = Sample();
    change(doc);
    return doc;
  };
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1].erase("avg_ts"); }), {"[1].avg_ts", "missing"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["avg_ts"] = -1.0; }), {"[0].avg_ts", "positive"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["avg_ts"] = 0.0; }), {"[0].avg_ts", "positive"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["avg_ts"] = "fast"; }), {"[0].avg_ts"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["stddev_ts"] = -0.5; }), {"[0].stddev_ts"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["n_prompt"] = "128"; }), {"[0].n_prompt", "integer"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["n_prompt"] = -128; }), {"[0].n_prompt"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["n_prompt"] = 1.5; }), {"[0].n_prompt"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["n_prompt"] = 18446744073709551615u; }),
                      {"[0].n_prompt", "2^63-1"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1]["n_prompt"] = 0; d[1]["n_gen"] = 0; }),
                      {"[1].n_prompt + n_gen", "> 0"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1]["samples_ts"] = nlohmann::json::array(); }),
                      {"[1].samples_ts", "non-empty"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1]["samples_ts"][2] = 0; }), {"[1].samples_ts[2]"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1]["avg_ts"] = d[1]["avg_ts"].get<double>() * 10; }),
                      {"[1].avg_ts", "samples_ts"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1]["build_commit"] = "deadbee"; }),
                      {"[1].build_commit", "0c1e570", "deadbee"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[1]["model_filename"] = "other.gguf"; }),
                      {"[1].model_filename"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0]["build_number"] = "7"; }), {"[0].build_number"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d[0].erase("model_type"); }), {"[0].model_type"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d.push_back(d[0]); }),
                      {"[2].n_prompt", "one prompt-only test"}));
  EXPECT_TRUE(Rejects(mutated([](nlohmann::json& d) { d.push_back(d[1]); }),
                      {"[2].n_gen", "one generation-only test"}));
}

// Sets an environment variable for the scope, restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class LlamaBenchRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("bp_llama_peer_{}_{}", ::getpid(), counter_++);
    fs::create_directories(dir_);
    // A model path that a shell would split, expand and run.
    model_ = (dir_ / "my model $(touch pwned) `touch pwned2`; 'q\".gguf").string();
    std::ofstream(model_) << "not a real model";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes an executable stand-in for llama-bench with the given sh body.
  std::string FakeBench(const std::string& body) {
    const std::string path = (dir_ / "llama-bench").string();
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  fs::path dir_;
  std::string model_;
  static inline int counter_ = 0;
};

TEST_F(LlamaBenchRunner, MissingBinaryIsReportedWithTheBuildScript) {
  ScopedEnv env("BACKPLANE_LLAMA_BENCH", (dir_ / "no-such-llama-bench").string());
  std::string why;
  EXPECT_FALSE(RunLlamaBench(model_, 1, 128, 64, &why).has_value());
  EXPECT_NE(why.find("peer not built: run bench/llama_cpp/build.sh"), std::string::npos) << why;
  EXPECT_NE(why.find("no-such-llama-bench"), std::string::npos) << why;
}

TEST_F(LlamaBenchRunner, DefaultPathIsUnderTheCache) {
  ScopedEnv bench("BACKPLANE_LLAMA_BENCH", "");
  ScopedEnv cache("BACKPLANE_CACHE", dir_.string());
  std::string why;
  EXPECT_FALSE(FindLlamaBench(&why).has_value());
  EXPECT_NE(why.find(dir_.string() + "/llama.cpp-0.3.36/build/bin/llama-bench"), std::string::npos)
      << why;
  const fs::path bin = dir_ / "llama.cpp-0.3.36/build/bin";
  fs::create_directories(bin);
  std::ofstream(bin / "llama-bench") << "#!/bin/sh\n";
  ::chmod((bin / "llama-bench").c_str(), 0755);
  const std::optional<std::string> found = FindLlamaBench(&why);
  ASSERT_TRUE(found.has_value()) << why;
  EXPECT_EQ(*found, (bin / "llama-bench").string());
}

TEST_F(LlamaBenchRunner, NonExecutableBinaryIsNotRun) {
  const std::string path = FakeBench("exit 0");
  ::chmod(path.c_str(), 0644);
  ScopedEnv env("BACKPLANE_LLAMA_BENCH", path);
  std::string why;
  EXPECT_FALSE(RunLlamaBench(model_, 1, 128, 64, &why).has_value());
  EXPECT_NE(why.find("not an executable file"), std::string::npos) << why;
}

TEST_F(LlamaBenchRunner, PassesArgvVerbatimAndParsesTheReport) {
  const std::string args = (dir_ / "args.txt").string();
  ScopedEnv env("BACKPLANE_LLAMA_BENCH",
                FakeBench(fmt::format("printf '%s\\n' \"$@\" > '{}'\ncat '{}'", args, SamplePath())));
  std::string why;
  const std::optional<LlamaCppResult> r = RunLlamaBench(model_, 2, 128, 64, &why);
  ASSERT_TRUE(r.has_value()) << why;
  EXPECT_EQ(r->buildCommit, "0c1e570");
  ASSERT_TRUE(r->prompt && r->generation);
  EXPECT_DOUBLE_EQ(r->prompt->tokensPerSecond, 129.06243);
  EXPECT_DOUBLE_EQ(r->generation->tokensPerSecond, 77.465095);
  EXPECT_EQ(ReadText(args),
            "-m\n" + model_ + "\n-t\n2\n-p\n128\n-n\n64\n-r\n3\n-o\njson\n");
  EXPECT_FALSE(fs::exists(dir_ / "pwned"));
  EXPECT_FALSE(fs::exists(dir_ / "pwned2"));
  EXPECT_FALSE(fs::exists("pwned"));
  EXPECT_FALSE(fs::exists("pwned2"));
}

TEST_F(LlamaBenchRunner, ReportOfOtherTestsIsRejected) {
  ScopedEnv env("BACKPLANE_LLAMA_BENCH", FakeBench(fmt::format("cat '{}'", SamplePath())));
  std::string why;
  EXPECT_FALSE(RunLlamaBench(model_, 2, 512, 64, &why).has_value());
  EXPECT_NE(why.find("expected a pp512 and a tg64 test at 2 threads"), std::string::npos) << why;
  EXPECT_FALSE(RunLlamaBench(model_, 2, 128, 32, &why).has_value());
  EXPECT_NE(why.find("expected a pp128 and a tg32 test"), std::string::npos) << why;
  EXPECT_FALSE(RunLlamaBench(model_, 1, 128, 64, &why).has_value());
  EXPECT_NE(why.find("at 1 threads"), std::string::npos) << why;
}

TEST_F(LlamaBenchRunner, FailedRunReportsStatusAndStderr) {
  ScopedEnv env("BACKPLANE_LLAMA_BENCH",
                FakeBench("echo 'loading...' >&2\necho 'error: failed to load model' >&2\nexit 3"));
  std::string why;
  EXPECT_FALSE(RunLlamaBench(model_, 1, 128, 64, &why).has_value());
  EXPECT_NE(why.find("exit status 3"), std::string::npos) << why;
  EXPECT_NE(why.find("error: failed to load model"), std::string::npos) << why;
  EXPECT_EQ(why.find("loading..."), std::string::npos) << why;
}

TEST_F(LlamaBenchRunner, GarbageReportIsRejected) {
  ScopedEnv env("BACKPLANE_LLAMA_BENCH", FakeBench("echo 'main: not json'"));
  std::string why;
  EXPECT_FALSE(RunLlamaBench(model_, 1, 128, 64, &why).has_value());
  EXPECT_NE(why.find("valid JSON"), std::string::npos) << why;
}

TEST_F(LlamaBenchRunner, MissingModelIsReported) {
  ScopedEnv env("BACKPLANE_LLAMA_BENCH", FakeBench("exit 0"));
  std::string why;
  EXPECT_FALSE(RunLlamaBench((dir_ / "absent.gguf").string(), 1, 128, 64, &why).has_value());
  EXPECT_NE(why.find("absent.gguf"), std::string::npos) << why;
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
}

TEST_F(LlamaBenchRunner, RejectsNonPositiveArguments) {
  EXPECT_TRUE(test::ThrowsError([&] { RunLlamaBench(model_, 0, 128, 64, nullptr); },
                                ErrorCode::InvalidArgument, {"RunLlamaBench", "threads"}));
  EXPECT_TRUE(test::ThrowsError([&] { RunLlamaBench(model_, 1, 0, 64, nullptr); },
                                ErrorCode::InvalidArgument, {"RunLlamaBench", "nPrompt"}));
  EXPECT_TRUE(test::ThrowsError([&] { RunLlamaBench(model_, 1, 128, -1, nullptr); },
                                ErrorCode::InvalidArgument, {"RunLlamaBench", "nGen"}));
}

// The real llama-bench on the packaged model; opt-in (BACKPLANE_LLAMA_PEER_LIVE=1) because it
// needs bench/llama_cpp/build.sh and the model, and takes seconds.
TEST(LlamaBenchLive, RunsTheBuiltPeer) {
  if (std::getenv("BACKPLANE_LLAMA_PEER_LIVE") == nullptr) {
    GTEST_SKIP() << "set BACKPLANE_LLAMA_PEER_LIVE=1 to run the built llama-bench";
  }
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  const std::string model =
      std::string(home) + "/.cache/backplane/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::string why;
  const std::optional<LlamaCppResult> r = RunLlamaBench(model, 1, 16, 8, &why);
  ASSERT_TRUE(r.has_value()) << why;
  EXPECT_EQ(r->buildCommit, "0c1e570");
  ASSERT_TRUE(r->prompt && r->generation);
  EXPECT_EQ(r->prompt->repetitions, 3);
  EXPECT_EQ(r->prompt->nThreads, 1);
  EXPECT_GT(r->prompt->tokensPerSecond, 0);
  EXPECT_GT(r->generation->tokensPerSecond, 0);
  std::printf("llama.cpp %s: pp16 %.2f +- %.2f t/s, tg8 %.2f +- %.2f t/s\n",
              r->buildCommit.c_str(), r->prompt->tokensPerSecond,
              r->prompt->tokensPerSecondStddev, r->generation->tokensPerSecond,
              r->generation->tokensPerSecondStddev);
}

}  // namespace
}  // namespace backplane::bench
