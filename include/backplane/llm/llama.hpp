// Llama-architecture decoder LMs from GGUF files (llama, and GGUFs of the same structure such as
// SmolLM2): the hyper-parameters from the metadata, the weights from the file's mapping, and a
// forward pass on a Backend with a preallocated KV cache, so a decode step costs O(context).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backplane/backend/backend.hpp"
#include "backplane/gguf.hpp"

namespace backplane::llm {

struct LlamaConfig {
  std::string architecture;  // general.architecture, e.g. "llama"
  int64_t vocab = 0;
  int64_t hidden = 0;         // <arch>.embedding_length
  int64_t layers = 0;         // <arch>.block_count
  int64_t heads = 0;          // <arch>.attention.head_count
  int64_t kv_heads = 0;       // <arch>.attention.head_count_kv (default: heads)
  int64_t head_dim = 0;       // hidden / heads
  int64_t ffn = 0;            // <arch>.feed_forward_length
  int64_t train_context = 0;  // <arch>.context_length
  double rms_eps = 1e-5;      // <arch>.attention.layer_norm_rms_epsilon
  double rope_theta = 10000;  // <arch>.rope.freq_base
  bool tied_output = false;   // no output.weight: the token embedding is the output head

  // Reads and checks the hyper-parameters; errors name the file and the key.
  static LlamaConfig FromGguf(const gguf::File& file);
};

enum class WeightPath {
  // Matrix products on the file's blocks (BlockQuant.MatmulT, 8-bit activations, integer dots).
  Quantized,
  // Every weight dequantised to f32 once at load; f32 products (Matmul.Matmul).
  Exact,
};

struct LlamaOptions {
  int64_t context = 2048;  // KV cache length; 0 means the model's training context
  WeightPath path = WeightPath::Quantized;
  int64_t batch = 512;     // prompt tokens per forward call (bounds the scratch buffers)
  // Copy the weights out of the file mapping into Tensors at load, so that they live where the
  // thread's Tensors are allocated (a device whose Backend cannot read the mapping).
  bool copy_weights = false;
};

class LlamaModel {
 public:
  // The backend must outlive the model. Errors name the file and the tensor or key.
  LlamaModel(gguf::File file, Backend& backend, LlamaOptions options);
  ~LlamaModel();
  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  const LlamaConfig& config() const;
  const LlamaOptions& options() const;
  const gguf::File& file() const;
  int64_t context() const;   // KV cache length
  int64_t position() const;  // tokens in the cache

  // Appends `tokens` at positions [position(), position() + n) and writes logits: of the last
  // token into logits[vocab] when !all_logits, of every token into logits[n * vocab] otherwise.
  // Throws (before changing the cache) when the tokens do not fit the context or an id is out of
  // range.
  void Forward(std::span<const int32_t> tokens, float* logits, bool all_logits = false);
  // Forgets the cache (the next Forward starts at position 0).
  void Reset();
  // Bytes held by the model beyond the file mapping: KV cache, scratch, f32 weights (Exact).
  int64_t allocated_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace backplane::llm
