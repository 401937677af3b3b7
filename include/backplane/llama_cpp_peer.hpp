// llama.cpp as the benchmark peer: runs its llama-bench (built by bench/llama_cpp/build.sh) and
// reads its JSON report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace backplane::bench {

// One llama-bench test: prompt processing (nPrompt > 0, nGen == 0), generation (nPrompt == 0,
// nGen > 0) or both at once (-pg).
struct LlamaBenchTest {
  int64_t nPrompt = 0;
  int64_t nGen = 0;
  int64_t nThreads = 0;
  int64_t repetitions = 0;  // samples behind the average
  double tokensPerSecond = 0;        // avg_ts
  double tokensPerSecondStddev = 0;  // stddev_ts
};

struct LlamaCppResult {
  std::string buildCommit;
  int64_t buildNumber = 0;
  std::string modelType;  // e.g. "llama ?B Q4_1"
  std::string cpuInfo;
  std::string backends;
  std::vector<LlamaBenchTest> tests;  // in report order
  std::optional<LlamaBenchTest> prompt;      // the one prompt-only test, if any
  std::optional<LlamaBenchTest> generation;  // the one generation-only test, if any
};

// Parses `llama-bench -o json` output (an array of test objects). Throws backplane::Error naming
// the field on malformed input, on a non-finite or non-positive rate, and on a report that mixes
// models or builds or holds two prompt-only (or two generation-only) tests.
LlamaCppResult ParseLlamaBenchJson(const std::string& json);

// The llama-bench to run: $BACKPLANE_LLAMA_BENCH if set, else the one build.sh leaves in
// ${BACKPLANE_CACHE:-$HOME/.cache/backplane}. nullopt (and *whyNot) when it is not executable.
std::optional<std::string> FindLlamaBench(std::string* whyNot);

// Runs `llama-bench -m model -t threads -p nPrompt -n nGen -r 3 -o json` (argv, no shell) and
// parses its report. nullopt with *whyNot set when llama-bench is not built, the model is
// missing, or the run or its report fails. Throws InvalidArgument for threads, nPrompt or nGen
// < 1.
std::optional<LlamaCppResult> RunLlamaBench(const std::string& model, int threads, int nPrompt,
                                            int nGen, std::string* whyNot);

}  // namespace backplane::bench
