// Sentence-encoder throughput: sentences per second at a batch x sequence shape, on fixed
// pseudo-random token ids with a full attention mask (no padding), and the same measurement of
// onnxruntime on the exported model (bench/minilm) as the peer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backplane/encoder/bert.hpp"

namespace backplane::encoder {

struct EncoderBenchResult {
  int64_t batch = 0, seq = 0, threads = 0;
  double sentences_per_s = 0;
  int runs = 0;
};

// One warm-up run, then runs until there are at least 3 and 1 s has passed; the median time.
EncoderBenchResult BenchEncoder(SentenceEncoder& encoder, int64_t batch, int64_t seq);

// Runs bench/minilm/onnxruntime_peer.py with `python` on `onnx_model` at `threads` for every
// shape and parses its JSON. nullopt (and *why_not) when the peer is not set up or fails.
struct OrtPeer {
  std::string version;
  std::vector<EncoderBenchResult> results;
};
std::optional<OrtPeer> RunOnnxRuntimePeer(const std::string& python, const std::string& script,
                                          const std::string& onnx_model, int threads,
                                          const std::vector<std::pair<int64_t, int64_t>>& shapes,
                                          std::string* why_not);

}  // namespace backplane::encoder
