// Model throughput as llama-bench measures it: prompt processing (a prompt of nPrompt tokens from
// an empty cache, one forward pass) and generation (nGen single-token decode steps from an empty
// cache), each repeated and reported as tokens per second.
#pragma once

#include <cstdint>

#include "backplane/llm/llama.hpp"

namespace backplane::llm {

struct ModelBenchResult {
  double prompt_tps = 0, prompt_tps_stddev = 0;
  double generation_tps = 0, generation_tps_stddev = 0;
  int repetitions = 0;
};

// Token ids are fixed pseudo-random ids (llama-bench feeds random tokens too); one warm-up run.
ModelBenchResult BenchModel(LlamaModel& model, int64_t nPrompt, int64_t nGen, int repetitions = 3);

// Peak resident set size of this process in bytes (VmHWM), 0 when unknown.
int64_t PeakResidentBytes();

}  // namespace backplane::llm
